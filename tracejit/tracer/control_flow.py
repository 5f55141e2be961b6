"""``cond``, ``switch``, ``while_loop``, ``fori_loop`` and ``scan``: control flow that depends on
traced values, as one IR op whose bodies are regions (ir/control_ops.py), with
``jax.lax``'s argument order and semantics.

Under a trace each body is traced once into a Function, on tracers standing for its
arguments; values it closes over are captured by the body's trace (trace_state.py) and become
explicit operands of the op (the ``consts`` of a loop). So a loop of 100 steps is one body in
the IR, compiled as a real loop, and its trace costs one step's.

An operation in a loop body whose operands are all captured values (``y.sum()`` of a
closed-over ``y``) is recorded in the trace that owns them, outside the op, as every traced
operation goes to the innermost trace of its operands: it runs once, before the loop, and the
body captures its result. A ``cond``/``switch`` branch keeps such operations itself
(``Trace.holds_ops``, trace_state.recording), and so does the body of a scan or fori_loop of
length 0, which never runs: run before the op, they ran where the body did not, and their
derivative there made gradients NaN (``cond(y > 0, lambda: np.log(y), ...)`` at ``y = 0``: a
zero cotangent times ``1 / y``), where JAX's are finite.

Outside any trace they run eagerly on NumPy with the same results: a Python ``if``, ``while``
or ``for``. ``cond`` and ``switch`` with a concrete predicate run only the chosen branch under
a trace too (the result is the same; JAX traces both). Loops under a trace are always ops,
even when every operand is concrete, so that their bodies are traced once, not unrolled.

Types: a loop's carries keep their types, and branches return the same types, as in JAX; a
Python number among the initial carries (a *weak* type) takes the dtype the body gives it,
again as JAX does. A mismatch names the position and the user's line:
``carry[1] changed from f32[8] to f64[8]``.
"""
from __future__ import annotations

import numpy as np

from ..ir import Function, Op, TensorType, Value, dtypes, ops
from .body_calls import ControlFlowTypeError
from .body_calls import branch_type_error, called_as, control_error, user_names
from .numpy.lifting import convert, lift
from .pytree import flatten, node_of, state_leaves, unflatten
from .trace_function import trace
from .trace_state import current_trace
from .tracer import DeferredOperand, Tracer

__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan", "ControlFlowTypeError"]


_OPERANDS = ("pass the values the branches need after the functions, as jax.lax does: "
             "cond(pred, true_fun, false_fun, *operands); each branch takes all the operands "
             "(or none, using values it closes over); to choose between two arrays, "
             "np.where(pred, a, b)")


def _traced(*xs) -> bool:
    return any(isinstance(x, Tracer) for x in flatten(xs)[0])


def _stand_in(t: TensorType):
    """An argument that traces as type ``t`` (trace() reads only its dtype and shape)."""
    return np.broadcast_to(np.zeros((), t.dtype.np), t.shape)


def _types(values) -> list[TensorType]:
    return [v._value.type for v in values]


class _Body:
    """One traced body: its Function with parameters ``[captured..., own params...]``, the
    outer tracers captured, and its results' tree and weak flags."""

    def __init__(self, fn, args: tuple, name: str, arg_names: list[str] | None = None,
                 role: str | None = None):
        """``arg_names``: the user's name of each of ``args`` (_user_names), and ``role``:
        which of the user's functions this is (scan's f), for errors."""
        where = role or f"a body of cond, switch, while_loop, fori_loop or scan ({name})"
        traced = trace(fn, args, {}, name, arg_names, context=f"in {where}, whose arguments "
                       "are traced values, not the caller's arrays")
        f = traced.function
        n_own = len(f.params) - len(traced.captured)
        self.own = f.params[:n_own]
        self.captured = list(traced.captured)
        self.captured_params = f.params[n_own:]
        self.function = f
        self.out_tree = traced.out_tree
        self.out_weak = traced.out_weak

    def region(self, consts: list, lead: list[Value] | None = None) -> Function:
        """The body as a region taking ``[lead..., consts..., own params...]``: a parameter
        for every captured tracer of any body of the op (unused ones are fresh Values)."""
        mine = {id(t): p for t, p in zip(self.captured, self.captured_params)}
        params = list(lead or []) + [mine.get(id(t)) or Value(t._value.type) for t in consts]
        f = self.function
        return Function(f.name, params + list(self.own), f.ops, f.results)


def _consts(bodies: list[_Body]) -> list[Tracer]:
    """Every outer tracer any body captured, once, as tracers of the current trace."""
    seen, out = set(), []
    for b in bodies:
        for t in b.captured:
            if id(t) not in seen:
                seen.add(id(t))
                out.append(t)
    return out


def _retype_results(fn: Function, want: list[TensorType]) -> Function:
    """``fn`` with each result converted to ``want``'s dtype where only the dtype differs (a
    weak result, checked by the caller)."""
    new_ops, results = list(fn.ops), []
    for r, t in zip(fn.results, want):
        if r.type != t:
            op = _op(ops.convert, [r], t, dtype=t.dtype)
            new_ops.append(op)
            r = op.result
        results.append(r)
    return Function(fn.name, fn.params, new_ops, results)


def _op(opdef, operands: list, t: TensorType, **attrs) -> Op:
    """An op appended to a region after its trace (a convert, a comparison)."""
    return Op(opdef, operands, opdef.normalize_attrs(attrs), [t], None)


# -- cond and switch -------------------------------------------------------------------------

def cond(pred, true_fun, false_fun, *operands):
    """``true_fun(*operands) if pred else false_fun(*operands)``, with ``pred`` traced."""
    n = len(operands)
    true_fun = called_as(true_fun, f"cond calls true_fun with its {n} operands", _OPERANDS)
    false_fun = called_as(false_fun, f"cond calls false_fun with its {n} operands", _OPERANDS)
    if not isinstance(pred, Tracer):
        return _fresh((true_fun if pred else false_fun)(*operands), operands)
    p = lift(pred)
    if p._value.type.shape != ():
        raise control_error(f"cond's predicate must be a scalar, got {p._value.type}",
                            "reduce it first, e.g. cond(np.all(x > 0), ...), or use np.where for "
                            "an elementwise choice")
    p = p != 0 if not p._value.type.dtype.is_bool else p
    return _switch(convert(p, dtypes.as_dtype("int32")), [false_fun, true_fun], operands,
                   "cond")


def switch(index, branches, *operands):
    """``branches[index](*operands)``, ``index`` clamped into range as in ``jax.lax.switch``."""
    branches = [called_as(b, f"switch calls branches[{k}] with its {len(operands)} operands",
                           _OPERANDS.replace("cond(pred, true_fun, false_fun",
                                             "switch(index, branches"))
                for k, b in enumerate(branches)]
    if not branches:
        raise control_error("switch needs at least one branch", "pass a list of functions")
    if not isinstance(index, Tracer):
        i = int(np.clip(int(index), 0, len(branches) - 1))
        return _fresh(branches[i](*operands), operands)
    i = lift(index)
    t = i._value.type
    if t.shape != () or not (t.dtype.is_int or t.dtype.is_bool):
        raise control_error(f"switch's index must be an integer scalar, got {t}",
                            "pass an integer scalar (x.astype(np.int32) for a float)")
    if t.dtype.is_int:
        info = np.iinfo(t.dtype.np)
        if info.max > 2**31 - 1 or info.min < -2**31:
            # clamp before narrowing to int32, which would wrap 2**40 to 0 (the eager path
            # and a concrete index clamp the value itself)
            from .numpy.arithmetic import maximum, minimum
            i = maximum(minimum(i, len(branches) - 1), 0)
    return _switch(convert(i, dtypes.as_dtype("int32")), branches, operands, "switch")


def _switch(index: Tracer, branches, operands, what: str):
    # in the innermost trace (as the loops): a predicate from an enclosing jit trace inside
    # grad put the op in the outer trace, where grad's operands are not defined
    tr = current_trace()
    index = lift(index, tr)
    leaves, tree = flatten(operands)
    args = [lift(x, tr) for x in leaves]
    def branch(f):
        def run(*a):
            # ops of closed-over values stay in the branch (trace_state.recording): run
            # before the cond, they ran when the branch was not taken too, and a derivative
            # there (1/y of a log(y) whose branch needs y > 0) made a NaN gradient
            current_trace().holds_ops = True
            return f(*unflatten(tree, list(a)))
        return run
    names = (["false_fun", "true_fun"] if what == "cond"
             else [f"branches[{k}]" for k in range(len(branches))])
    bodies = [_Body(branch(f), tuple(args), f"{what}_branch{k}", user_names(f, operands),
                    f"{what}'s {names[k]}") for k, f in enumerate(branches)]
    first = bodies[0]
    for k, b in enumerate(bodies[1:], 1):
        if b.out_tree != first.out_tree:
            raise control_error(f"{what}: {names[k]} returns {b.out_tree}, {names[0]} "
                                f"{first.out_tree}",
                                "make every branch return the same structure of arrays")
    # the result types: where branches differ only in the dtype of a weak (Python number)
    # result, NumPy's promotion of them all, which must be every strong result's dtype (a
    # Python float beside an int32 result is an error, as in JAX, not truncated to int32)
    n_out = len(first.function.result_types)
    weak = [all(b.out_weak[i] for b in bodies) for i in range(n_out)]
    want = [first.function.result_types[i] if all(
                b.function.result_types[i] == first.function.result_types[i] for b in bodies)
            else TensorType(dtypes.promote(*[(b.function.result_types[i].dtype, b.out_weak[i])
                                             for b in bodies]),
                            first.function.result_types[i].shape) for i in range(n_out)]
    consts = _consts(bodies)
    regions = []
    for k, b in enumerate(bodies):
        region = b.region(consts)
        for i, (got, w) in enumerate(zip(region.result_types, want)):
            if got != w and not (b.out_weak[i] and got.shape == w.shape):
                raise branch_type_error(what, names, bodies, k, i)
        regions.append(_retype_results(region, want))
    # the op takes the captured values first, then the operands: reorder each region's params
    regions = [Function(r.name, r.params[len(consts):] + r.params[:len(consts)], r.ops,
                        r.results) for r in regions]
    operands_v = [a._value for a in args] + [lift(c, tr)._value for c in consts]
    op = tr.emit(ops.cond, [index._value] + operands_v, regions=regions)
    outs = [Tracer(r, tr, w) for r, w in zip(op.results, weak)]
    return unflatten(first.out_tree, outs)


# -- loops -----------------------------------------------------------------------------------

def _carry_bodies(make, init_leaves: list, tr, what: str, max_tries: int = 3, skip: int = 0):
    """Trace the body (``make(carry_tracers) -> (bodies, carry_out_types, carry_out_weak)``)
    and give weak initial carries the dtype the body returns for them (JAX's rule), staying
    weak only if the body's result is weak too (a weak 0.0 plus a float64 array is a strong
    float64 after one step, as in NumPy); retraces if that changed a carry's type. ``skip``:
    how many leading carries are the caller's own (fori_loop's index), not the user's."""
    carries = [lift(x, tr) for x in init_leaves]
    for _ in range(max_tries):
        bodies, got, got_weak = make(carries)
        want = _types(carries)
        changed = False
        for i, (w, g) in enumerate(zip(want, got)):
            weak = carries[i]._weak and got_weak[i]
            if w == g and weak == carries[i]._weak:
                continue
            # a weak value takes the other's dtype only where NumPy's promotion of the two
            # gives it: a Python float returned for an int carry (or an int body result for
            # a Python float initial value) is an error, as in JAX, not truncated
            cw, gw = carries[i]._weak, got_weak[i]
            to = dtypes.promote((w.dtype, cw), (g.dtype, gw)) if w.shape == g.shape else None
            if cw and to == g.dtype:
                carries[i] = convert(carries[i], g.dtype, weak=weak)
                changed = True
            elif not (gw and to == w.dtype):       # else the body's weak result is converted
                def named(t, is_weak):
                    py = {"b": "bool", "i": "int", "u": "int"}.get(t.dtype.kind, "float")
                    return f"a Python {py} ({t})" if is_weak else str(t)
                raise control_error(f"{what}: carry[{i - skip}] changed from "
                                    f"{named(w, carries[i]._weak)} to {named(g, got_weak[i])}",
                                    "return the carry with the type it came in with "
                                    "(x.astype(...)); a loop's carries keep their types")
        if not changed:
            return carries, bodies
    raise control_error(f"{what}: the carries' types do not settle",
                        "give the initial values the dtypes the body returns")


def while_loop(cond_fun, body_fun, init_val):
    """``while cond_fun(val): val = body_fun(val)``; returns ``val``."""
    hint = ("define cond_fun(val) -> bool and body_fun(val) -> val, val being init_val's "
            "structure (a tuple of several values is one argument: unpack it inside)")
    return _while_loop(called_as(cond_fun, "while_loop calls cond_fun(val)", hint),
                       called_as(body_fun, "while_loop calls body_fun(val)", hint), init_val,
                       names=(user_names(cond_fun, (init_val,)),
                              user_names(body_fun, (init_val,))))


def _while_loop(cond_fun, body_fun, init_val, what="while_loop", skip=0, names=(None, None)):
    """while_loop; ``what`` and ``skip`` name the loop and its carries in errors as
    _carry_bodies does (fori_loop's carry is ``(i, val)``); ``names``: the user's names of
    the carries' leaves in cond_fun and body_fun (_user_names)."""
    tr = current_trace()
    if tr is None:
        val, ran = init_val, False
        while cond_fun(val):
            val, ran = body_fun(val), True
        if not ran:
            val = _settle_unrun(val, lambda v: _while_loop(cond_fun, body_fun, v), what)
        return _fresh(val, init_val)
    leaves, tree = flatten(init_val)

    def make(carries):
        def as_tree(f):
            return lambda *a: f(unflatten(tree, list(a)))
        c = _Body(as_tree(cond_fun), tuple(carries), "while_cond", names[0],
                  f"{what}'s cond_fun" if what == "while_loop" else None)
        b = _Body(as_tree(body_fun), tuple(carries), "while_body", names[1],
                  f"{what}'s body_fun")
        if b.out_tree != tree:
            got_tree, tree_ = ((b.out_tree.children[1], tree.children[1]) if skip
                               else (b.out_tree, tree))
            raise control_error(f"{what}: body_fun returns {got_tree}, but the carry is {tree_}",
                                "return a value of the same structure as init_val")
        if len(c.function.results) != 1 or c.function.result_types[0].shape != ():
            raise control_error("while_loop: cond_fun must return one scalar (a bool), got "
                                f"{[str(t) for t in c.function.result_types]}",
                                "reduce it, e.g. np.all(...), or return a comparison of scalars")
        return (c, b), b.function.result_types, b.out_weak

    carries, (c, b) = _carry_bodies(make, leaves, tr, what, skip=skip)
    consts = _consts([c, b])
    cond_region = c.region(consts)
    if not cond_region.result_types[0].dtype.is_bool:
        cond_region = _truthy(cond_region)
    body_region = _retype_results(b.region(consts), _types(carries))
    operands = [lift(x, tr)._value for x in consts] + [x._value for x in carries]
    op = tr.emit(ops.while_loop, operands, regions=[cond_region, body_region],
                 consts=len(consts))
    return unflatten(tree, [Tracer(r, tr, x._weak) for r, x in zip(op.results, carries)])


def _truthy(fn: Function) -> Function:
    """``fn`` whose one scalar result is replaced by ``result != 0`` (a bool)."""
    (r,) = fn.results
    zero = _op(ops.constant, [], r.type, value=np.zeros((), r.type.dtype.np))
    ne = _op(ops.ne, [r, zero.result], TensorType(dtypes.as_dtype("bool"), ()))
    return Function(fn.name, fn.params, fn.ops + [zero, ne], [ne.result])


def fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
    """``for i in range(lower, upper): val = body_fun(i, val)``. Static bounds make a scan
    (reverse-mode differentiable); traced bounds a while_loop (forward mode only).
    ``unroll``: accepted as in jax.lax (a hint there), and ignored: the compiled loop is a
    native loop whose trip count the kernels read at run time."""
    _check_unroll(unroll)
    body_fun = called_as(body_fun, "fori_loop calls body_fun(i, val)",
                          "define body_fun(i, val) returning the new val (i is the loop index; "
                          "val has init_val's structure)")
    tr = current_trace()
    if tr is None:
        val = init_val
        for i in range(int(lower), int(upper)):
            val = body_fun(i, val)
        if int(upper) <= int(lower):
            val = _settle_unrun(val, lambda v: fori_loop(lower, upper, body_fun, v),
                                "fori_loop")
        return _fresh(val, init_val)
    if not _traced(lower, upper):
        lo, hi = int(lower), int(upper)

        def step(carry, _):
            i, val = carry
            return (i + 1, body_fun(i, val)), None
        (_, val), _ = _scan(step, (lo, init_val), None, max(hi - lo, 0), False, "fori_loop",
                            1, user_names(body_fun, (lo, init_val)))
        return val

    def cond_fun(carry):
        return carry[0] < upper

    def body(carry):
        i, val = carry
        return i + 1, body_fun(i, val)
    lo = lift(lower, tr)
    lo = convert(lo, dtypes.as_dtype("int64")) if not lo._value.type.dtype.is_int else lo
    if isinstance(upper, Tracer) and not upper._value.type.dtype.is_int:
        # a float bound counts as int(upper), as the eager range() does (not i < 2.5)
        upper = convert(upper, dtypes.as_dtype("int64"))
    return _while_loop(cond_fun, body, (lo, init_val), "fori_loop", 1,
                       (None, user_names(body_fun, (lo, init_val))))[1]


def _check_unroll(unroll):
    """jax.lax's ``unroll`` (an int >= 0, a bool, or None): code written for JAX passes it.
    0 is JAX's "unroll the entire loop" (jax.lax.scan's docs), refused here once."""
    if unroll is None or isinstance(unroll, (bool, np.bool_)):
        return
    if not isinstance(unroll, (int, np.integer)) or unroll < 0:
        raise control_error(f"unroll must be a non-negative int or a bool, got {unroll!r}",
                            "pass unroll=1 (or leave it out: tracejit compiles the loop as a "
                            "loop)")


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """``carry, y = f(carry, x)`` over the leading axis of ``xs`` (a pytree); returns the last
    carry and the ``y`` stacked, ``ys[i]`` from ``xs[i]`` (also when ``reverse``).
    ``unroll``: accepted as in jax.lax, where it changes no result, and ignored."""
    _check_unroll(unroll)
    f = called_as(f, "scan calls f(carry, x)",
                   "define f(carry, x) returning (new_carry, y), x being one row of xs "
                   "(None when xs is None)")
    return _scan(f, init, xs, length, reverse)


def _scan(f, init, xs, length, reverse, what="scan", skip=0, names=None):
    """scan; ``what`` and ``skip`` name the loop and its carries in errors as _carry_bodies
    does (fori_loop's carry is ``(i, val)``); ``names``: the user's names of the carries' and
    xs' leaves (_user_names), by default f's parameters'."""
    x_leaves, x_tree = flatten(xs)
    lengths = {int(np.shape(x)[0]) for x in x_leaves if np.ndim(x) > 0}
    if any(np.ndim(x) == 0 for x in x_leaves):
        raise control_error("scan: every leaf of xs needs a leading axis to scan over",
                            "pass arrays of shape (length, ...)")
    if length is not None:
        lengths.add(int(length))
    if len(lengths) != 1:
        raise control_error(f"scan: the lengths of xs' leading axes and length= differ: "
                            f"{sorted(lengths)}" if lengths else "scan: no xs and no length",
                            "pass xs whose leading axes agree, or length= when xs is None")
    (n,) = lengths
    if n < 0:
        raise control_error(f"scan: length={n} is negative", "pass a length >= 0")
    tr = current_trace()
    if tr is None:
        return _scan_eagerly(f, init, x_leaves, x_tree, n, reverse)
    init_leaves, carry_tree = flatten(init)
    if names is None:
        names = user_names(f, (init, xs))
    xs_t = [lift(x, tr) for x in x_leaves]
    slices = [_stand_in(TensorType(x._value.type.dtype, x._value.type.shape[1:])) for x in xs_t]
    y_info = {}

    # a model in the carry: its buffers are model state, as in an argument (trace_function's
    # refusal of a write into one then says what to do: a BatchNorm in training mode)
    carry_state = state_leaves(init)

    def make(carries):
        m = len(carries)

        def body(*a):
            current_trace().state.update(id(a[i]) for i in carry_state)
            if n == 0:
                # a body that never runs keeps the ops of closed-over values (as cond's
                # branches, trace_state.recording): hoisted before the loop they ran anyway,
                # and their derivative made gradients NaN (a zero cotangent times the 1/y
                # of a log(y) at y = 0), where JAX's are 0. A body that runs at least once
                # hoists them: the same values, and its derivative sums to the same.
                current_trace().holds_ops = True
            out = _pair(f(unflatten(carry_tree, list(a[:m])), unflatten(x_tree, list(a[m:]))))
            _check_ys(out[1], what)
            return out
        b = _Body(body, tuple(carries) + tuple(slices), "scan_body", names,
                  "scan's f" if what == "scan" else f"{what}'s body_fun")
        out_leaves_tree = b.out_tree
        carry_out, y_tree = _split_pair_tree(out_leaves_tree)
        if carry_out != carry_tree:
            if skip:
                raise control_error(f"{what}: body_fun returns {carry_out.children[1]}, but the "
                                    f"carry is {carry_tree.children[1]}",
                                    "return a value of the same structure as init_val")
            raise control_error(f"scan: f returns the carry as {carry_out}, but init is "
                                f"{carry_tree}", "return a carry of the same structure as init")
        y_info["tree"] = y_tree
        return (b,), b.function.result_types[:m], b.out_weak[:m]

    carries, (b,) = _carry_bodies(make, init_leaves, tr, what, skip=skip)
    m = len(carries)
    consts = _consts([b])
    region = b.region(consts)
    want = _types(carries) + list(region.result_types[m:])
    region = _retype_results(region, want)
    operands = ([lift(c, tr)._value for c in consts] + [x._value for x in carries]
                + [x._value for x in xs_t])
    op = tr.emit(ops.scan, operands, regions=[region], consts=len(consts), carries=m,
                 length=n, reverse=bool(reverse))
    weak = [x._weak for x in carries] + [False] * (len(op.results) - m)
    outs = [Tracer(r, tr, w) for r, w in zip(op.results, weak)]
    return (unflatten(carry_tree, outs[:m]), unflatten(y_info["tree"], outs[m:]))


def _fresh(result, inputs):
    """``result`` with a copy of each array that shares memory with one of ``inputs`` (a
    branch returning its operand or a view of it, a loop that did not run): under jit every
    result is a fresh array, so eagerly too, and writing into one never changes the other."""
    leaves, tree = flatten(result)
    ins = [x for x in flatten(inputs)[0] if isinstance(x, np.ndarray)]
    if not ins or not any(isinstance(x, np.ndarray) for x in leaves):
        return result
    out = [x.copy() if isinstance(x, np.ndarray) and any(np.may_share_memory(x, i)
                                                           for i in ins) else x
           for x in leaves]
    return unflatten(tree, out)


_PY_NUMBERS = (bool, int, float, complex)


def _settle_unrun(val, loop, what: str):
    """The carry ``val`` of an eager loop that ran no step, its Python-number leaves (weak)
    given the type the loop settles them to, as under jit and in JAX: a trace of
    ``loop(val)`` says which (``fori_loop(0, 0, lambda i, c: c + 1.5, 0)`` gave the Python
    int 0 eagerly, 0.0 under jit). Best effort: if the body cannot be traced, ``val``."""
    leaves, tree = flatten(val)
    if not any(type(x) in _PY_NUMBERS for x in leaves):
        return val
    try:
        traced = trace(loop, (val,), {}, what, context=f"in a body of {what}",
                       external_arrays=True)      # the closed-over arrays body_fun indexes
    except Exception:       # the body never ran eagerly: it need not be traceable
        return val
    types = traced.function.result_types[:traced.n_results]
    if traced.out_tree != tree or len(types) != len(leaves):
        return val
    out = []
    for x, t, weak in zip(leaves, types, traced.out_weak):
        if type(x) in _PY_NUMBERS and t.shape == ():
            py = {"b": bool, "i": int, "u": int, "f": float, "c": complex}[t.dtype.np.kind]
            try:
                x = py(x) if weak else t.dtype.np.type(x)
            except (OverflowError, TypeError, ValueError):   # 2**40 settling to int32
                return val
        out.append(x)
    return unflatten(tree, out)


def _pair(out) -> tuple:
    """scan's ``f(carry, x)`` result as the tuple ``(carry, y)``: a list of two is one too, as
    in JAX and the eager loop (``carry, y = f(carry, x)``)."""
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise control_error("scan: f must return a pair (carry, y)",
                            "return (new_carry, y), with y None if there is nothing to stack")
    return tuple(out)


_Y_LEAVES = (Tracer, np.ndarray, np.generic, bool, int, float, complex, DeferredOperand)


def _check_ys(y, what: str) -> None:
    """scan stacks every leaf of its ys into an array, so, as in JAX (a TypeError there too),
    a y holding a string, bytes, an enum member or another object that is not an array or a
    number is refused, eagerly and under jit alike (eagerly a string came back once, the first
    step's, and an object as an object array; under jit the string unstacked and the object
    refused as a result of "scan_body")."""
    def walk(v, path: str) -> None:
        node = node_of(v)
        if node is None and isinstance(v, _Y_LEAVES):
            return
        if node is None or node[0] == "static":
            raise control_error(f"{what}: f returns {v!r:.40} (of type {type(v).__name__}) in "
                                f"y{path}, not an array: scan stacks the ys into arrays",
                                "return only arrays and numbers as y (None where there is nothing "
                                "to stack); keep other values out of the scan, or in the carry")
        for child, key in zip(node[2], node[3]):
            walk(child, path + key)
    walk(y, "")


def _split_pair_tree(tree):
    """The trees of the two halves of a pair's tree (a 2-tuple's TreeDef)."""
    return tree.children[0], tree.children[1]


def _scan_eagerly(f, init, x_leaves, x_tree, n, reverse):
    carry, ys = init, [None] * n
    for i in (reversed(range(n)) if reverse else range(n)):
        carry, ys[i] = _pair(f(carry, unflatten(x_tree, [x[i] for x in x_leaves])))
        _check_ys(ys[i], "scan")
    carry = _fresh(carry, (init, x_leaves))
    if n == 0:
        xs = unflatten(x_tree, [np.asarray(x) for x in x_leaves])
        carry = _settle_unrun(carry, lambda c: _scan(f, c, xs, 0, False)[0], "scan")
        return carry, _empty_ys(f, init, x_leaves, x_tree)
    flat = [flatten(y) for y in ys]
    for i, (_, t) in enumerate(flat):
        # the ys were stacked by the first step's structure: a step returning {'b': y} after
        # {'a': y} came back as 'a', one returning more leaves lost them, silently (jit and
        # JAX trace f once, so every step's y has one structure)
        if t != flat[0][1]:
            raise control_error(f"scan: f returns y as {t} for ys[{i}], but as {flat[0][1]} "
                                "for ys[0]", "return y with the same structure at every step")
    y_leaves = [ls for ls, _ in flat]
    stacked = [np.stack([np.asarray(ls[j]) for ls in y_leaves], dtype=_stacked_dtype(
        [ls[j] for ls in y_leaves])) for j in range(len(y_leaves[0]))]
    return carry, unflatten(flatten(ys[0])[1], stacked)


def _stacked_dtype(values: list):
    """The dtype of the ys ``values`` stacked: NumPy's promotion with Python numbers weak, as
    under jit, where a weak initial carry has the body's dtype (a first y that is the Python
    0.0 beside float32 ones is float32, not float64 as np.stack would make it)."""
    kinds = {}
    for v in values:
        if type(v) in (bool, int, float, complex):      # not np.float64, a float too
            kinds.setdefault(type(v), type(v)(0))
        else:
            kinds.setdefault(np.asarray(v).dtype, np.asarray(v).dtype)
    return np.result_type(*kinds.values())


def _empty_ys(f, init, x_leaves, x_tree):
    """The ys of a scan of length 0 run eagerly: f never runs, so its ys' structure and types
    come from a trace of the scan, as under jit (arrays of leading axis 0, not None, and of
    the dtypes the carries settle to: a Python 0 initial carry that f adds float32 xs to
    gives float32 ys)."""
    def whole(init, xs):
        return _scan(f, init, unflatten(x_tree, list(xs)), 0, False)[1]
    # external_arrays: arrays f closes over are traced as jit's are, so that f may index one
    # with the carry (table[c]); as constants, that trace raised a ConcretizationError where
    # the eager scan of length 1 ran
    traced = trace(whole, (init, [np.asarray(x) for x in x_leaves]), {}, "scan",
                   context="in a body of scan", external_arrays=True)
    ys = [np.empty(tuple(t.shape), t.dtype.np)
          for t in traced.function.result_types[:traced.n_results]]
    return unflatten(traced.out_tree, ys)
