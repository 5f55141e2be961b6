"""The statements of the kernel language, lowered to LLVM IR: a mixin of lower.py's
FunctionLowerer (which holds the builder, the frames and the variables)."""
from __future__ import annotations

import ast

from numba import types

from .expressions import BINOPS
from .values import I64, ArrayVal, Global, Unsupported, Val, cast, constant, is_int, truth


class Statements:
    def statements(self, body):
        for st in body:
            if self.b.block.is_terminated:
                return                           # code after return / break / raise
            self.statement(st)

    def statement(self, st):
        f, b = self.frame, self.b
        if isinstance(st, ast.Assign):
            v = self.expr(st.value)
            for target in st.targets:
                self.store_to(target, v)
        elif isinstance(st, ast.AugAssign):
            op = BINOPS.get(type(st.op))
            if op is None:
                raise Unsupported("augmented assignment")
            if isinstance(st.target, ast.Name):
                cur = self.read(f, st.target.id)
            elif isinstance(st.target, ast.Subscript):
                cur = self.expr(st.target)
            else:
                raise Unsupported("augmented assignment target")
            self.store_to(st.target, self.binop(op, cur, self.expr(st.value)))
        elif isinstance(st, ast.Expr):
            if isinstance(st.value, ast.Constant):
                return                           # a docstring
            self.expr(st.value)
        elif isinstance(st, ast.If):
            self.if_statement(st)
        elif isinstance(st, ast.For):
            self.for_range(st)
        elif isinstance(st, ast.While):
            self.while_loop(st)
        elif isinstance(st, ast.Return):
            self.return_statement(st)
        elif isinstance(st, ast.Raise):
            self.raise_statement(st)
        elif isinstance(st, ast.Pass):
            pass
        elif isinstance(st, ast.Break):
            if not f.loops:
                raise Unsupported("break outside a loop")
            b.branch(f.loops[-1][1])
        elif isinstance(st, ast.Continue):
            if not f.loops:
                raise Unsupported("continue outside a loop")
            b.branch(f.loops[-1][0])
        else:
            raise Unsupported(type(st).__name__)

    def store_to(self, target, v):
        if isinstance(target, ast.Name):
            self.assign(self.frame, target.id, v)
        elif isinstance(target, ast.Tuple):
            items = self.unpack(v, len(target.elts))
            for t, item in zip(target.elts, items):
                self.store_to(t, item)
        elif isinstance(target, ast.Subscript):
            base = self.expr(target.value)
            if not isinstance(base, ArrayVal):
                raise Unsupported("item assignment to a non-array")
            self.setitem(base, target.slice, v)
        else:
            raise Unsupported("assignment target")

    def unpack(self, v, n: int) -> list:
        if not (isinstance(v, Val) and isinstance(v.type, types.BaseTuple)
                and len(v.type.types) == n):
            raise Unsupported("unpacking")
        return [self.item(v, k) for k in range(n)]

    def item(self, v: Val, k: int):
        """Item ``k`` of a tuple: a scalar, or an array from its struct."""
        t, x = v.type.types[k], self.b.extract_value(v.value, k)
        if isinstance(t, types.Array):
            return ArrayVal(t, self.b.extract_value(x, 4),
                            [self.b.extract_value(x, (5, d)) for d in range(t.ndim)],
                            [self.b.extract_value(x, (6, d)) for d in range(t.ndim)])
        return Val(t, x)

    def if_statement(self, st: ast.If):
        cond = truth(self.b, self.scalar(self.expr(st.test)))
        then = self.fn.append_basic_block("then")
        other = self.fn.append_basic_block("else")
        after = self.fn.append_basic_block("endif")
        self.b.cbranch(cond, then, other)
        for block, body in ((then, st.body), (other, st.orelse)):
            self.b.position_at_end(block)
            self.statements(body)
            if not self.b.block.is_terminated:
                self.b.branch(after)
        self.b.position_at_end(after)

    def for_range(self, st: ast.For):
        it = st.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                and it.func.id == "range" and not it.keywords and 1 <= len(it.args) <= 3
                and isinstance(st.target, ast.Name) and not st.orelse
                and self.read(self.frame, "range").obj is range):
            raise Unsupported("a for loop other than over range()")
        args = [self.scalar(self.expr(a)) for a in it.args]
        if not all(is_int(a.type) for a in args):
            raise Unsupported("range of non-integers")
        step = 1
        if len(args) == 3:
            step = _constant_int(it.args[2])
            if not step:
                raise Unsupported("range with a step that is not a nonzero constant")
        start, stop = (args[0], args[1]) if len(args) >= 2 else (constant(types.int64, 0),
                                                                  args[0])
        start, stop = cast(self.b, start, types.int64), cast(self.b, stop, types.int64)
        counter = self.alloca_builder.alloca(I64, name="range")
        self.b.store(start.value, counter)
        cond_bb = self.fn.append_basic_block("for.cond")
        body_bb = self.fn.append_basic_block("for.body")
        next_bb = self.fn.append_basic_block("for.next")
        end_bb = self.fn.append_basic_block("for.end")
        self.b.branch(cond_bb)
        self.b.position_at_end(cond_bb)
        i = self.b.load(counter)
        self.b.cbranch(self.b.icmp_signed("<" if step > 0 else ">", i, stop.value),
                       body_bb, end_bb)
        self.b.position_at_end(body_bb)
        self.assign(self.frame, st.target.id, Val(types.int64, i))
        self.loop_body(st.body, next_bb, end_bb)
        self.b.position_at_end(next_bb)
        # as Numba's range: the counter stays within [start, stop], so it cannot overflow
        self.b.store(self.b.add(self.b.load(counter), I64(step), flags=("nsw",)), counter)
        self.b.branch(cond_bb)
        self.b.position_at_end(end_bb)

    def while_loop(self, st: ast.While):
        if st.orelse:
            raise Unsupported("while ... else")
        cond_bb = self.fn.append_basic_block("while.cond")
        body_bb = self.fn.append_basic_block("while.body")
        end_bb = self.fn.append_basic_block("while.end")
        self.b.branch(cond_bb)
        self.b.position_at_end(cond_bb)
        self.b.cbranch(truth(self.b, self.scalar(self.expr(st.test))), body_bb, end_bb)
        self.b.position_at_end(body_bb)
        self.loop_body(st.body, cond_bb, end_bb)
        self.b.position_at_end(end_bb)

    def loop_body(self, body, next_bb, end_bb):
        """A loop's statements: ``continue`` goes to ``next_bb``, ``break`` to ``end_bb``."""
        self.frame.loops.append((next_bb, end_bb))
        self.loop_depth += 1
        self.loops += 1
        self.statements(body)
        self.loop_depth -= 1
        self.frame.loops.pop()
        if not self.b.block.is_terminated:
            self.b.branch(next_bb)

    def return_statement(self, st: ast.Return):
        f = self.frame
        if f.ret_block is None:
            # The kernel itself returns an int64: 0 from generated kernels, whose nonzero
            # returns are the codes of the exceptions they raise; any value from one that
            # raises nothing (the hand-off's runtime, handoff.py)
            v = (self.scalar(self.expr(st.value)) if st.value is not None
                 else constant(types.int64, 0))
            if not (isinstance(v, Val) and (is_int(v.type) or v.type == types.boolean)):
                raise Unsupported("a kernel that returns no integer")
            if not (st.value is None or isinstance(st.value, ast.Constant)
                    and st.value.value == 0):
                self.returns_values = True
            self.finish(cast(self.b, v, types.int64).value)
            return
        if st.value is not None:
            v = self.expr(st.value)
            if isinstance(v, Global):
                raise Unsupported("returning an object from a helper")
            self.assign(f, "$ret", v)
            f.ret_var = True
        self.b.branch(f.ret_block)

    def raise_statement(self, st: ast.Raise):
        exc = st.exc
        if not (isinstance(exc, ast.Call) and len(exc.args) == 1 and not exc.keywords
                and isinstance(exc.args[0], ast.Constant)
                and isinstance(exc.args[0].value, str)):
            raise Unsupported("raise other than Exception('message')")
        cls = self.expr(exc.func)
        if not (isinstance(cls, Global) and isinstance(cls.obj, type)
                and issubclass(cls.obj, Exception)):
            raise Unsupported("raise of a non-exception")
        self.errors.append((cls.obj, exc.args[0].value))
        self.finish(I64(len(self.errors)))


def _constant_int(node) -> int | None:
    """The value of an integer literal, ``-1`` included (a unary minus of a literal)."""
    sign = 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        sign, node = -1, node.operand
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return sign * node.value
    return None
