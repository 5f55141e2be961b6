"""Elementwise arithmetic on Tracers: the operators (+ - * / // % ** and unary - ~ abs),
comparisons, logical and bitwise ops, and the selections built on them (where, clip, select, diff).

Each promotes its operands as NumPy would (lifting.promote) and emits one IR op. The float
functions (exp, log, sin, ...) are in math_functions.py, which builds on these.
"""
from __future__ import annotations

import numpy as np

from ...ir import dtypes, ops
from ..errors import numpy_error, unsupported
from ..tracer import Tracer
from .lifting import (astype, broadcast_to, constant, convert, emit, lift, lift_all, promote,
                      trace_of)
from .rules import (abstract, broadcast_shapes, dt, float_result, normalize_axis,
                    python_int_beyond, result_dtype)
from .shapes import slice_


def binary_op(opdef, a, b, dtype=None, out_bool=False):
    """Promote ``a`` and ``b`` (to ``dtype`` if given) and emit ``opdef`` on them."""
    a, b = promote(a, b, dtype=dtype)
    return emit(a._trace, opdef, [a, b], weak=(a._weak and b._weak and not out_bool))


def python_int(x: Tracer) -> Tracer:
    """A traced Python bool as Python's arithmetic takes it (True + True is 2): the int 0 or
    1, still weak (tracer.py's operators, where every operand is a Python number)."""
    return convert(x, dtypes.int64, weak=True)


def unary_op(opdef, x, weak_ok=True):
    x = lift(x)
    return emit(x._trace, opdef, [x], weak=x._weak and weak_ok)


def add(a, b):
    if result_dtype(a, b).is_bool:
        return binary_op(ops.logical_or, a, b)
    return binary_op(ops.add, a, b)


def subtract(a, b):
    if result_dtype(a, b).is_bool:
        raise numpy_error(TypeError, "numpy boolean subtract, the `-` operator, is not "
                          "supported", "use np.logical_xor or ^ instead")
    return binary_op(ops.sub, a, b)


def multiply(a, b):
    if result_dtype(a, b).is_bool:
        return binary_op(ops.logical_and, a, b)
    return binary_op(ops.mul, a, b)


def true_divide(a, b):
    return binary_op(ops.div, a, b, dtype=float_result(a, b))


def numeric_dtype(name, a, b):
    """The result dtype of np.<name> (floor_divide, remainder, power, fmod, fmax, ...): on
    bools NumPy's own (its loops for these start at int8, 'bb->b': bool // bool is int8;
    fmax and fmin have bool loops)."""
    d = result_dtype(a, b)
    if d.is_bool:
        empty = np.zeros(0, np.bool_)
        try:
            return dtypes.as_dtype(getattr(np, name)(empty, empty).dtype)
        except TypeError:       # a NumPy without a loop for them
            raise unsupported(f"{name} on bool arrays",
                              "convert to an integer dtype first") from None
    return d


def floor_divide(a, b):
    return binary_op(ops.floor_divide, a, b, dtype=numeric_dtype("floor_divide", a, b))


def remainder(a, b):
    return binary_op(ops.remainder, a, b, dtype=numeric_dtype("remainder", a, b))


def divmod_(a, b):
    return floor_divide(a, b), remainder(a, b)


def power(a, b, as_operator=False):
    """np.power, or ``a ** b`` (``as_operator``), with NumPy's shortcuts for a scalar exponent
    where they change the result: sqrt is -0.0 at -0.0 and NaN at -inf, where pow gives 0.0
    and inf. ``a ** b`` takes np.square for the Python int 2 (a bool array gives int8), and,
    on float arrays, np.reciprocal for -1 and np.sqrt for the Python float 0.5; np.power's
    float32 and float64 loops take sqrt for an exponent of 0.5 that they broadcast."""
    python = as_operator and isinstance(a, Tracer) and a._weak     # a Python number's **
    if python and dt(a).is_int and type(b) is int and b < 0:
        a = convert(a, dtypes.float64, weak=True)       # Python's s ** -1 is a float, 0.5
    if as_operator and isinstance(a, Tracer) and not python:
        if type(b) is int and b == 2:
            return square(a)
        if type(b) is int and b == -1 and dt(a).is_float:
            return reciprocal(a)
        if type(b) is float and b == 0.5 and dt(a).is_float and dt(a) != dtypes.bfloat16:
            return unary_op(ops.sqrt, a)        # (ml_dtypes' bfloat16 ** takes pow)
    d = numeric_dtype("power", a, b)
    e = _scalar_exponent(a, b, d)
    if e not in (0.5, 2, 1, 0):
        return binary_op(ops.power, a, b, dtype=d)
    shape = broadcast_shapes(a.shape, np.shape(b))
    broadcast = np.ndim(b) == 0 or np.shape(b) != shape     # the loop's stride for b is 0
    if e == 0.5 and not (d in (dtypes.float32, dtypes.float64) and broadcast and not python):
        return binary_op(ops.power, a, b, dtype=d)
    x = broadcast_to(convert(a, d, weak=a._weak and abstract(b)[1]), shape)
    if e == 0.5:
        return unary_op(ops.sqrt, x)
    if e == 2:
        return multiply(x, x)
    if e == 1:
        return x
    # ones (pow(x, 0) is 1 even for NaN), as NumPy's fast path: not a pow per element
    # (x ** 0 of 5e5 float64: 3.8 ms against NumPy's 0.27 ms)
    return broadcast_to(constant(np.ones((), d.np), trace=a._trace, weak=x._weak), shape)


def _scalar_exponent(a, b, d):
    """For a traced base and a one-element exponent known while tracing, the exponent as
    power's loop in dtype ``d`` sees it (0.50000001 is 0.5 in float32); else None."""
    if not isinstance(a, Tracer) or not isinstance(b, (int, float, np.generic, np.ndarray)):
        return None
    if np.size(b) != 1 or python_int_beyond(b, d):
        return None         # (an int beyond d: binary_op raises NumPy's OverflowError)
    with np.errstate(over="ignore"):
        return np.asarray(b, d.np).item()


def float_power(a, b):
    a, b = promote(a, b, dtype=dtypes.float64)
    return power(a, b)


def maximum(a, b):
    if result_dtype(a, b).is_bool:      # NumPy's bool loops: or and and
        return logical_or(a, b)
    return binary_op(ops.maximum, a, b, dtype=numeric_dtype("maximum", a, b))


def minimum(a, b):
    if result_dtype(a, b).is_bool:
        return logical_and(a, b)
    return binary_op(ops.minimum, a, b, dtype=numeric_dtype("minimum", a, b))


def negative(x):
    x = lift(x)
    if dt(x).is_bool:
        raise numpy_error(TypeError, "the numpy boolean negative, the `-` operator, is not "
                          "supported", "use the `~` operator or np.logical_not instead")
    return unary_op(ops.neg, x)


def positive(x):
    x = lift(x)
    if dt(x).is_bool:
        raise numpy_error(TypeError, "ufunc 'positive' did not contain a loop with signature "
                          "matching types bool", "convert first, e.g. x.astype(np.int8)")
    return x


def conjugate(x):
    """Real values are their own conjugate; a bool's is an int8, as NumPy's loop gives."""
    x = lift(x)
    return convert(x, dtypes.int8) if dt(x).is_bool else x


def absolute(x):
    x = lift(x)
    return x if dt(x).is_bool or dt(x).is_unsigned else unary_op(ops.abs, x)


def sign(x):
    x = lift(x)
    if dt(x).is_bool:
        raise unsupported("np.sign of a bool array")
    return unary_op(ops.sign, x)


def square(x):
    x = lift(x)
    if dt(x).is_bool:
        x = convert(x, dtypes.int8)     # np.square has no bool loop: NumPy's first is int8's
    return multiply(x, x)


def reciprocal(x):
    x = lift(x)
    if not dt(x).is_float:
        raise unsupported("np.reciprocal of an integer array", "divide: 1.0 / x")
    return true_divide(np.ones((), dt(x).np), x)


# ---------------------------------------------------------------------------------------------
# Comparisons, logical and bitwise ops


# x OP c for a Python int c above x's integer range; below it, the ordered ones flip.
_TRUE_IF_ABOVE = {ops.eq: False, ops.ne: True, ops.lt: True, ops.le: True, ops.gt: False,
                  ops.ge: False}
_MIRROR = {ops.eq: ops.eq, ops.ne: ops.ne, ops.lt: ops.gt, ops.le: ops.ge, ops.gt: ops.lt,
           ops.ge: ops.le}


def _compare_beyond(opdef, a, b):
    """NumPy 2 compares an integer array with a Python int beyond its dtype's range exactly
    (``labels == 300`` is all False for uint8 labels) where arithmetic would overflow: the
    result is a constant. None when neither operand is such an int."""
    for c, x, op in ((b, a, opdef), (a, b, _MIRROR[opdef])):
        if isinstance(x, (bool, int, float)):
            continue
        side = python_int_beyond(c, abstract(x)[0])      # bool arrays: NumPy overflows
        if side:
            x = lift(x)
            value = _TRUE_IF_ABOVE[op] if side > 0 else _true_if_below(op)
            return broadcast_to(constant(np.bool_(value), trace=x._trace), x.shape)
    return None


def _true_if_below(op) -> bool:
    return _TRUE_IF_ABOVE[op] if op in (ops.eq, ops.ne) else not _TRUE_IF_ABOVE[op]


def _compare_ints_exactly(opdef, a, b):
    """Integer comparisons NumPy 2 makes exactly where promotion would not: uint64 with a
    signed int (promotion gives float64; NumPy has exact loops) and an integer array with a
    traced Python int (promotion gives the array's dtype, which could wrap the int's unknown
    value; NumPy compares its value). None for every other comparison."""
    (da, wa), (db, wb) = abstract(a), abstract(b)
    if not (da.is_int and db.is_int) or da == db or (wa and wb):
        return None
    if (wa and not isinstance(a, Tracer)) or (wb and not isinstance(b, Tracer)):
        return None         # a Python int constant: promotion is exact (or _compare_beyond)
    if dtypes.uint64 in (da, db) and "i" in (da.kind, db.kind):
        u, s, op = (a, b, opdef) if da == dtypes.uint64 else (b, a, _MIRROR[opdef])
        s = lift(s, trace_of(a, b))
        return where(less(s, 0), np.bool_(_true_if_below(op)),
                     binary_op(op, u, convert(s, dtypes.uint64), out_bool=True))
    if wa or wb:
        return binary_op(opdef, a, b, dtype=dtypes.int64, out_bool=True)
    return None


def _compare(opdef):
    def f(a, b):
        exact = _compare_beyond(opdef, a, b)
        if exact is None:
            exact = _compare_ints_exactly(opdef, a, b)
        if exact is not None:
            return exact
        return binary_op(opdef, a, b, out_bool=True)
    return f


equal = _compare(ops.eq)
not_equal = _compare(ops.ne)
less = _compare(ops.lt)
less_equal = _compare(ops.le)
greater = _compare(ops.gt)
greater_equal = _compare(ops.ge)


def to_bool(x) -> Tracer:
    x = lift(x)
    if dt(x).is_bool:
        return x
    return not_equal(x, np.zeros((), dt(x).np))


def _logical(opdef):
    def f(a, b):
        return binary_op(opdef, to_bool(a), to_bool(b), dtype=dtypes.bool_, out_bool=True)
    return f


logical_and = _logical(ops.logical_and)
logical_or = _logical(ops.logical_or)
logical_xor = _logical(ops.logical_xor)


def logical_not(x):
    return unary_op(ops.logical_not, to_bool(x), weak_ok=False)


def _bitwise(opdef, name):
    def f(a, b):
        d = result_dtype(a, b)
        if d.is_float and abstract(a)[0].is_int and abstract(b)[0].is_int:
            raise numpy_error(TypeError, f"ufunc '{name}' not supported for the input types "
                              f"{abstract(a)[0].name} and {abstract(b)[0].name} (they promote to "
                              "float64)", "convert one operand, e.g. to the other's dtype")
        if d.is_float:
            raise numpy_error(TypeError, f"ufunc '{name}' not supported for floating-point "
                              "inputs", "use integer or bool arrays")
        return binary_op(opdef, a, b, dtype=d)
    return f


bitwise_and = _bitwise(ops.bitwise_and, "bitwise_and")
bitwise_or = _bitwise(ops.bitwise_or, "bitwise_or")
bitwise_xor = _bitwise(ops.bitwise_xor, "bitwise_xor")


def invert(x):
    x = lift(x)
    if dt(x).is_bool:
        return logical_not(x)
    if dt(x).is_float:
        raise numpy_error(TypeError, "ufunc 'invert' not supported for floating-point "
                          "inputs", "use integer or bool arrays")
    out = bitwise_xor(x, np.asarray(-1).astype(dt(x).np))     # all ones, unsigned too
    return Tracer(out._value, out._trace, True) if x._weak else out   # ~s of a Python int


def _shift_operands(name, a, b):
    """Shifts promote as the bitwise ops, bools to int8 (NumPy has no bool shift loop); the
    powers of two 2**k of the dtype (2**(bits-1) wrapped, for signed ones) as a constant."""
    d = result_dtype(a, b)
    if d.is_float:
        if abstract(a)[0].is_int and abstract(b)[0].is_int:
            raise numpy_error(TypeError, f"ufunc '{name}' not supported for the input types "
                              f"{abstract(a)[0].name} and {abstract(b)[0].name} (they promote "
                              "to float64)", "convert one operand, e.g. to the other's dtype")
        raise numpy_error(TypeError, f"ufunc '{name}' not supported for floating-point "
                          "inputs", "use integer or bool arrays")
    if d.is_bool:
        d = dtypes.int8
    x, k = promote(a, b, dtype=d)
    powers = np.array([1 << i for i in range(d.bits)], dtype=np.uint64).astype(d.np)
    return x, k, d, constant(powers, d, x._trace)


def _power_of_two(powers, k, inside):
    """2**k (k in range where ``inside``) taken from the table."""
    return emit(powers._trace, ops.take, [powers, convert(where(inside, k, 0), dtypes.int64)],
                axis=0)


def left_shift(a, b):
    """x << k as x * 2**k (wrapping as the shift does); 0 for k outside [0, bits), as NumPy's
    npy_lshift gives."""
    x, k, d, powers = _shift_operands("left_shift", a, b)
    inside = logical_and(greater_equal(k, 0), less(k, d.bits))
    return where(inside, multiply(x, _power_of_two(powers, k, inside)), 0)


def right_shift(a, b):
    """x >> k as floor(x / 2**k) (the arithmetic shift); outside [0, bits - 1) (signed) or
    [0, bits) (unsigned) NumPy's npy_rshift gives -1 for negative x, else 0."""
    x, k, d, powers = _shift_operands("right_shift", a, b)
    signed = not d.is_unsigned
    inside = logical_and(greater_equal(k, 0), less(k, d.bits - 1 if signed else d.bits))
    shifted = floor_divide(x, _power_of_two(powers, k, inside))
    outside = where(less(x, 0), np.asarray(-1, d.np), np.asarray(0, d.np)) if signed else 0
    return where(inside, shifted, outside)


# ---------------------------------------------------------------------------------------------
# Selections


def where(cond, a, b):
    # all three in the innermost trace among them: a condition from an enclosing jit trace
    # and operands of a grad (or loop body) trace made the op in the outer trace, where the
    # operands were not defined, or where grad did not see them (a zero derivative)
    c, ta, tb = lift_all(cond, a, b)
    c = to_bool(c)
    target = result_dtype(ta, tb)
    shape = broadcast_shapes(c.shape, ta.shape, tb.shape)
    c = broadcast_to(c, shape)
    ta = broadcast_to(convert(ta, target), shape)
    tb = broadcast_to(convert(tb, target), shape)
    return emit(c._trace, ops.where, [c, ta, tb], weak=ta._weak and tb._weak)


def where_function(condition, x=None, y=None):
    """np.where: only its three-argument form has a shape known before the data."""
    if x is None and y is None:
        raise unsupported("np.where(condition) with one argument (its result size depends "
                          "on the data)", "use np.where(condition, x, y)")
    return where(condition, x, y)


def clip(x, lo=None, hi=None):
    # NumPy 2 clips an integer array with a Python int bound beyond its range on the side that
    # changes nothing (np.clip(u8, -1, 300)), where np.minimum(u8, 300) overflows: such a bound
    # is dropped. Beyond the other side (np.clip(u8, 300, None)) it overflows, as in NumPy.
    # np.clip is one ufunc of three operands: its dtype is their promotion taken at once
    # (int8 with 3.0 and a float32 bound: float32; one max then one min would say float64).
    d = result_dtype(x)
    if python_int_beyond(lo, d) < 0:
        lo = None
    if python_int_beyond(hi, d) > 0:
        hi = None
    out = result_dtype(*(v for v in (x, lo, hi) if v is not None))
    if out != result_dtype(x):
        x = astype(lift(x), out)
    if lo is not None:
        x = maximum(x, lo)
    if hi is not None:
        x = minimum(x, hi)
    return x


def select(condlist, choicelist, default=0):
    if len(condlist) != len(choicelist):
        raise numpy_error(ValueError, "list of cases must be same length as list of "
                          "conditions", "give one choice per condition")
    if not condlist:
        raise numpy_error(ValueError, "select with an empty condition list is not possible",
                          "give at least one condition")
    dtype = result_dtype(*choicelist, default)     # Python scalars weak, as in NumPy 2
    out = astype(lift(default, trace_of(*condlist, *choicelist)), dtype)
    for cond, choice in reversed(list(zip(condlist, choicelist))):
        out = where(cond, astype(lift(choice, out._trace), dtype), out)
    return out


def diff(a, n=1, axis=-1, prepend=None, append=None):
    x = lift(a)
    axis = normalize_axis(axis, x.ndim)
    if n < 0:                               # (range(n) made it x itself)
        raise numpy_error(ValueError, f"order must be non-negative but got {n}",
                          "pass n >= 0")
    if n == 0:
        return x
    if prepend is not None or append is not None:
        # NumPy's: each an array (a Python scalar too: not weak), a 0-d one broadcast to x's
        # shape with one element along the axis, then concatenated
        from .lifting import concatenate, lift_arrays
        parts = []
        for part, where_ in ((prepend, 0), (x, None), (append, 1)):
            if part is None:
                continue
            if where_ is not None:
                part = lift_arrays(part, x)[0]
                if part.ndim == 0:
                    part = broadcast_to(part, x.shape[:axis] + (1,) + x.shape[axis + 1:])
            parts.append(part)
        x = concatenate(parts, axis)
    for _ in range(n):
        m = x.shape[axis]
        lo, hi = [0] * x.ndim, list(x.shape)
        hi[axis] = max(m - 1, 0)
        first = slice_(x, lo, hi, [1] * x.ndim)
        lo[axis], hi[axis] = min(1, m), m
        rest = slice_(x, lo, hi, [1] * x.ndim)
        x = logical_xor(rest, first) if x.dtype == np.bool_ else subtract(rest, first)
    return x


def piecewise(x, condlist, funclist, *args, **kw):
    """np.piecewise: each function (or constant) where its condition holds, the extra
    function (if one more than the conditions) where none does, else 0; later conditions win,
    as in NumPy. Each function runs on the whole array (elementwise ones give the values
    NumPy computes on the selection)."""
    x = lift(x)
    if isinstance(condlist, (list, tuple)) and not any(
            hasattr(c, "_trace") or np.ndim(c) for c in condlist):
        condlist = [condlist]       # NumPy: one scalar condition list
    elif not isinstance(condlist, (list, tuple)):
        c = lift(condlist, x._trace)
        condlist = [condlist] if c.shape == x.shape or c.ndim == 0 else list(c)
    n = len(condlist)
    if len(funclist) not in (n, n + 1):
        raise numpy_error(ValueError, f"with {n} condition(s), either {n} or {n + 1} "
                          f"functions are expected", "give one function per condition")
    conds = [broadcast_to(to_bool(lift(c, x._trace)), x.shape) for c in condlist]
    if len(funclist) == n + 1:
        none = conds[0]
        for c in conds[1:]:
            none = logical_or(none, c)
        conds.append(logical_not(none))
    out = broadcast_to(lift(np.zeros((), x.dtype), x._trace), x.shape)
    for c, f in zip(conds, funclist):
        v = f(x, *args, **kw) if callable(f) else f
        v = astype(lift(v, x._trace), x.dtype)     # NumPy writes into an array of x's dtype
        out = where(c, v, out)
    return out
