"""Per-op code generation rules, one table keyed by OpDef: ``RULES[opdef] = (kind, rule)``.

``@emit(op)`` registers a scalar rule: given the op and the names of its operands' scalar
values, it returns a Python expression (Numba-compilable) of exactly the result's dtype. Other
kinds of rule live beside their users and register here too (``register(kind, op)(rule)``),
so that one table says how every op is generated; tests/test_op_coverage.py imports the whole
code generator and checks that every op has a rule that is a real callable:

- ``index``: layout ops, folded into index arithmetic (codegen/kernel.py)
- ``reduce``: reductions, as accumulators inside a loop nest (codegen/reduction.py)
- ``kernel``: ops with their own loop structure (codegen/templates.py)
- ``matmul``: the BLAS call of a matmul group (codegen/matmul.py)
- ``movement``: ops that only move data, done by NumPy in the program (codegen/movement.py),
  and sort/argsort, which NumPy's vectorized sorts do several times faster than a kernel
- ``plan``: ops the executable plan handles itself (constants, barriers, debug_print, and
  ``call``, which passes.inline_calls removes first) (codegen/plan.py)
- ``control``: cond, while_loop, scan as if/for/while statements around their regions' code,
  in the entry or inside one native loop module (codegen/control.py, codegen/loops.py)
"""
from __future__ import annotations

from ..ir import ops

RULES: dict = {}   # OpDef -> (kind, rule)
KINDS = ("scalar", "index", "reduce", "kernel", "matmul", "movement", "plan", "control")


def register(kind: str, *opdefs):
    assert kind in KINDS, kind

    def deco(fn):
        assert fn is not None, "a rule, not a placeholder"
        for od in opdefs:
            if od in RULES:
                raise ValueError(f"op {od.name} has two code generation rules")
            RULES[od] = (kind, fn)
        return fn
    return deco


def kind_of(opdef) -> str | None:
    rule = RULES.get(opdef)
    return rule[0] if rule else None


def emit(*opdefs):
    return register("scalar", *opdefs)


def np_name(dtype) -> str:
    return "np.bool_" if dtype.is_bool else f"np.{dtype.name}"


def lit(dtype, value) -> str:
    """A typed literal, so float32 code stays float32 and int32 code int32."""
    if dtype.is_bool:
        return "True" if value else "False"
    if dtype.is_float:
        return f"{np_name(dtype)}({float(value)!r})"
    return f"{np_name(dtype)}({int(value)})"


def _wrap(op, expr):
    """int32 arithmetic in Numba widens to int64: cast back, which wraps like NumPy."""
    dt = op.results[0].dtype
    return f"{np_name(dt)}({expr})" if dt.is_int and dt.name != "int64" else f"({expr})"


def _t(op):
    return op.results[0].dtype


def _operand_dtype(op):
    return op.operands[0].dtype


# -- arithmetic ------------------------------------------------------------------------------
@emit(ops.add)
def _(op, a, b):
    return _wrap(op, f"{a} + {b}")


@emit(ops.sub)
def _(op, a, b):
    return _wrap(op, f"{a} - {b}")


@emit(ops.mul)
def _(op, a, b):
    return _wrap(op, f"{a} * {b}")


@emit(ops.div)
def _(op, a, b):
    return f"({a} / {b})"


@emit(ops.floor_divide)
def _(op, a, b):
    return f"({a} // {b})" if _t(op).is_float else _wrap(op, f"ifloordiv({a}, {b})")


@emit(ops.remainder)
def _(op, a, b):
    return f"({a} % {b})" if _t(op).is_float else _wrap(op, f"iremainder({a}, {b})")


@emit(ops.power)
def _(op, a, b):
    if _t(op).is_float:
        return f"{np_name(_t(op))}({a} ** {b})"
    return _wrap(op, f"ipow({a}, {b})")


@emit(ops.neg)
def _(op, a):
    return _wrap(op, f"-{a}")


@emit(ops.abs)
def _(op, a):
    return _wrap(op, f"abs({a})")


@emit(ops.sign)
def _(op, a):
    t = _t(op)
    if t.is_float:
        return f"({a} if {a} == 0 or {a} != {a} else ({lit(t, 1)} if {a} > 0 else {lit(t, -1)}))"
    return _wrap(op, f"({a} > 0) - ({a} < 0)")


@emit(ops.maximum)
def _(op, a, b):
    nan = f" or {a} != {a}" if _t(op).is_float else ""
    return f"({a} if ({a} >= {b}{nan}) else {b})"


@emit(ops.minimum)
def _(op, a, b):
    nan = f" or {a} != {a}" if _t(op).is_float else ""
    return f"({a} if ({a} <= {b}{nan}) else {b})"


# -- transcendentals: vectorizable float32 versions from mathlib, libm for float64 -----------
_FAST32 = {ops.exp: "exp32", ops.tanh: "tanh32", ops.logistic: "logistic32", ops.sin: "sin32",
           ops.cos: "cos32", ops.log: "log32", ops.log1p: "log1p32", ops.arctan: "arctan32"}
_FAST32_BINARY = {ops.arctan2: "arctan2_32"}
_LIBM = {ops.exp: "exp", ops.expm1: "expm1", ops.log: "log", ops.log1p: "log1p",
         ops.sin: "sin", ops.cos: "cos", ops.tan: "tan", ops.tanh: "tanh", ops.sinh: "sinh",
         ops.cosh: "cosh", ops.arcsin: "asin", ops.arccos: "acos", ops.arctan: "atan",
         ops.arcsinh: "asinh", ops.arctanh: "atanh", ops.erf: "erf"}


@emit(*_LIBM, ops.logistic)
def _(op, a):
    t = _t(op)
    if t.name == "float32" and op.opdef in _FAST32:
        return f"{_FAST32[op.opdef]}({a})"
    if op.opdef is ops.logistic:
        return f"({lit(t, 1)} / ({lit(t, 1)} + {np_name(t)}(math.exp(-{a}))))"
    return f"{np_name(t)}(math.{_LIBM[op.opdef]}({a}))"


@emit(ops.sqrt, ops.floor, ops.ceil, ops.round)
def _(op, a):
    fn = {ops.sqrt: "sqrt", ops.floor: "floor", ops.ceil: "ceil", ops.round: "rint"}[op.opdef]
    return f"{np_name(_t(op))}(np.{fn}({a}))"


@emit(ops.arctan2, ops.hypot, ops.copysign)
def _(op, a, b):
    if _t(op).name == "float32" and op.opdef in _FAST32_BINARY:
        return f"{_FAST32_BINARY[op.opdef]}({a}, {b})"
    fn = {ops.arctan2: "atan2", ops.hypot: "hypot", ops.copysign: "copysign"}[op.opdef]
    return f"{np_name(_t(op))}(math.{fn}({a}, {b}))"


@emit(ops.gammaln, ops.digamma)
def _(op, a):
    """SciPy's algorithms in float64 (mathlib.py); float32 rounds the result, as SciPy does."""
    fn = "gammaln64" if op.opdef is ops.gammaln else "digamma64"
    t = _t(op)
    return f"{fn}({a})" if t.name == "float64" else f"{np_name(t)}({fn}(np.float64({a})))"


@emit(ops.logaddexp)
def _(op, a, b):
    return f"logaddexp{'32' if _t(op).name == 'float32' else '64'}({a}, {b})"


@emit(ops.fmod)
def _(op, a, b):
    return f"{np_name(_t(op))}(np.fmod({a}, {b}))" if _t(op).is_float else _wrap(
        op, f"ifmod({a}, {b})")


# -- predicates and logic --------------------------------------------------------------------
@emit(ops.isnan)
def _(op, a):
    return f"({a} != {a})"


@emit(ops.isinf)
def _(op, a):
    return f"(({a} == np.inf) | ({a} == -np.inf))"


@emit(ops.isfinite)
def _(op, a):
    return f"(({a} - {a}) == 0)"


_CMP = {ops.eq: "==", ops.ne: "!=", ops.lt: "<", ops.le: "<=", ops.gt: ">", ops.ge: ">="}


@emit(*_CMP)
def _(op, a, b):
    return f"({a} {_CMP[op.opdef]} {b})"


_BIT = {ops.logical_and: "&", ops.logical_or: "|", ops.logical_xor: "^",
        ops.bitwise_and: "&", ops.bitwise_or: "|", ops.bitwise_xor: "^"}


@emit(*_BIT)
def _(op, a, b):
    expr = f"{a} {_BIT[op.opdef]} {b}"
    return f"bool({expr})" if _t(op).is_bool else _wrap(op, expr)


@emit(ops.logical_not)
def _(op, a):
    return f"(not {a})"


@emit(ops.where)
def _(op, c, a, b):
    return f"({a} if {c} else {b})"


@emit(ops.convert)
def _(op, a):
    src, dst = _operand_dtype(op), _t(op)
    if dst.is_bool:
        return f"({a} != 0)"
    if src.is_float and dst.is_int:
        return _FLOAT_TO_INT[dst.name].format(a)
    return f"{np_name(dst)}({a})"


# float -> int as NumPy on x86 (see runtime.py): the narrow ones through int32, as C does;
# out-of-range values are undefined in NumPy, but never LLVM's poison here
_FLOAT_TO_INT = {"int64": "f2i64({})", "int32": "f2i32({})", "int16": "np.int16(f2i32({}))",
                 "int8": "np.int8(f2i32({}))", "uint8": "np.uint8(f2i32({}))",
                 "uint16": "np.uint16(f2i32({}))", "uint32": "np.uint32(f2i64({}))",
                 "uint64": "f2u64({})"}


def iota_expr(op, idx: tuple) -> str:
    return f"{np_name(_t(op))}({idx[op.attrs['dim']]})"


register("scalar", ops.iota)(iota_expr)
