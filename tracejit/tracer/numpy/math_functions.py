"""NumPy's float functions on Tracers: exp, log, the trigonometric and hyperbolic functions,
rounding, the NaN/inf tests, and the functions NumPy composes from them (fmax, logaddexp,
hypot, isclose, nan_to_num, round, ...). Also erf and sigmoid (the IR's logistic), which NumPy
lacks; tracejit.lax is their public face.

Integer inputs compute in NumPy's float for them (float_function_dtype: bool, int8, uint8 ->
float16, int16 -> float32, int32 -> float64). SciPy's erf and expit compute everything but
float32 in float64 (their first loop is float64: float16 and integers give float64).
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ...ir import dtypes, ops
from ..errors import numpy_error, unsupported
from .arithmetic import (absolute, add, binary_op, equal, greater, greater_equal, less,
                         less_equal, logical_and, logical_or, maximum, minimum, multiply,
                         numeric_dtype, power, subtract, true_divide, unary_op, where)
from .lifting import broadcast_to, constant, convert, lift, lift_all, promote
from .rules import dt, float_function_dtype


def _float_unary(opdef, name, scipy=False):
    ufunc = None if scipy else getattr(np, name)

    def f(x):
        x = lift(x)
        if scipy and dt(x) != dtypes.float32:
            x = convert(x, dtypes.float64)
        elif not dt(x).is_float:
            x = convert(x, float_function_dtype(ufunc, x))
        return unary_op(opdef, x)
    return f


def relu(x):
    """max(x, 0) with relu'(0) = 0 (ops.relu), in x's dtype."""
    return unary_op(ops.relu, lift(x))


exp = _float_unary(ops.exp, "exp")
expm1 = _float_unary(ops.expm1, "expm1")
log = _float_unary(ops.log, "log")
log1p = _float_unary(ops.log1p, "log1p")
sqrt = _float_unary(ops.sqrt, "sqrt")
sin = _float_unary(ops.sin, "sin")
cos = _float_unary(ops.cos, "cos")
tan = _float_unary(ops.tan, "tan")
tanh = _float_unary(ops.tanh, "tanh")
sinh = _float_unary(ops.sinh, "sinh")
cosh = _float_unary(ops.cosh, "cosh")
arcsin = _float_unary(ops.arcsin, "arcsin")
arccos = _float_unary(ops.arccos, "arccos")
arctan = _float_unary(ops.arctan, "arctan")
arcsinh = _float_unary(ops.arcsinh, "arcsinh")
arctanh = _float_unary(ops.arctanh, "arctanh")
rint = _float_unary(ops.round, "rint")
erf = _float_unary(ops.erf, "erf", scipy=True)
sigmoid = _float_unary(ops.logistic, "sigmoid", scipy=True)


def logit(p):
    """scipy.special.logit, by SciPy's formulas: log(p / (1 - p)), except on [0.3, 0.65],
    where that loses digits (3e-9 relative at 0.5 - 3e-9) and SciPy takes log1p(s) -
    log1p(-s), s = 2 (p - 0.5); in float32 for float32, else float64 (SciPy's loops: float16
    too). Each formula gets a safe input where the other is chosen, so neither's derivative
    is NaN there (a where passes a zero cotangent, and zero times inf is NaN). At 0 and 1,
    log(p) - log1p(-p) (the same +-inf) gives JAX's derivative 1 / (p (1 - p)) = inf, where the
    quotient's was NaN (zero times inf in the denominator's partial)."""
    p = lift(p)
    d = dtypes.float32 if dt(p) == dtypes.float32 else dtypes.float64
    p = convert(p, d)
    one, half = np.asarray(1, d.np), np.asarray(0.5, d.np)
    mid = logical_and(greater_equal(p, np.asarray(0.3, d.np)),
                      less_equal(p, np.asarray(0.65, d.np)))
    ends = logical_or(equal(p, np.asarray(0, d.np)), equal(p, one))
    outer = where(logical_or(mid, ends), np.asarray(0.25, d.np), p)
    edge = where(ends, p, half)
    s = where(mid, multiply(np.asarray(2, d.np), subtract(p, half)), np.asarray(0, d.np))
    return where(mid, subtract(log1p(s), log1p(unary_op(ops.neg, s))),
                 where(ends, subtract(log(edge), log1p(unary_op(ops.neg, edge))),
                       log(true_divide(outer, subtract(one, outer)))))


def _log_scaled(x, base, exponents):
    """log(x) / log(base), exactly n where x is the float nearest base**n, as NumPy's (libm's)
    log2 and log10 are: log(x) * (1 / log(base)) alone gave log10(1000.0) = 2.9999999999999996
    (np.floor(np.log10(x)) one digit short) and log2(2.0**-1020) 1 ulp off.

    float16 and bfloat16 in float32, float32 in float64, rounded once (as NumPy's float16
    loops compute them; a 16-bit log rounded before the multiplication rounds twice): the
    wider result is within far less than half an ulp of the narrow one's. float64 as
    n + log(x / base**n) * scale, n the nearest integer to the estimate log(x) * scale
    (``exponents``: the n whose power is a normal float64): at x = base**n the log is of 1,
    so exactly 0, and elsewhere the last rounding is the add's."""
    x = lift(x)
    low = dt(x) if dt(x).is_float else float_function_dtype(np.log, x)
    scale = 1 / math.log(base)
    if low.bits < 64:
        wide = dtypes.float32 if low.bits == 16 else dtypes.float64
        y = multiply(log(convert(x, wide)), np.asarray(scale, wide.np))
        return convert(y, low)
    from .arithmetic import clip
    x = convert(x, low)
    estimate = multiply(log(x), scale)
    n = rint(where(isfinite(estimate), estimate, 0.0))    # 0 at 0, inf, NaN: log(x) itself
    n = clip(n, float(exponents[0]), float(exponents[1]))
    power = _integer_power(base, absolute(n), max(-exponents[0], exponents[1]))
    reduced = where(less(n, 0.0), multiply(x, power), true_divide(x, power))
    return add(n, multiply(log(reduced), scale))


def _integer_power(base, k, k_max):
    """base ** k (base 2 or 10) for float64 integers 0 <= k <= k_max, as the product of the
    binary powers base ** 2**j that k's bits select (selects and products, which vectorize;
    a pow call per element made log10 7x slower): exact for base 2, and for base 10 up to
    10.0**22, within a few ulps beyond."""
    from .arithmetic import not_equal
    out = None
    for j in range(k_max.bit_length()):
        factor = float(f"1e{2 ** j}") if base == 10.0 else math.ldexp(1.0, 2 ** j)
        half = floor(multiply(k, 0.5))              # bit j is k's last: k odd (float ops:
        used = not_equal(k, multiply(half, 2.0))    # an int conversion kept the loop scalar)
        term = where(used, factor, 1.0)
        out = term if out is None else multiply(out, term)
        k = half
    return out


def log2(x):
    return _log_scaled(x, 2.0, (-1022, 1023))


def log10(x):
    return _log_scaled(x, 10.0, (-307, 308))


def exp2(x):
    x = lift(x)
    return power(np.asarray(2, float_function_dtype(np.exp2, x).np), x)


def arctan2(a, b):
    return binary_op(ops.arctan2, a, b, dtype=float_function_dtype(np.arctan2, a, b))


def deg2rad(x):
    return _times_constant(x, np.deg2rad, np.pi, 180.0)


def rad2deg(x):
    return _times_constant(x, np.rad2deg, 180.0, np.pi)


def _times_constant(x, numpy_function, num, den):
    """``x * (num / den)`` as npy_math's deg2rad and rad2deg: the constant divided in the
    loop's type (float32's 180.0f / NPY_PIf is 57.295776, not float32(180 / pi) = 57.29578:
    most float32 results were an ulp off), float16 in float32 rounded once, as NumPy's half
    loop (a float16 constant and product were an ulp off for a third of them). bfloat16
    multiplies by its own constant, as JAX."""
    d = float_function_dtype(numpy_function, x)
    if d == dtypes.bfloat16:
        return multiply(convert(lift(x), d), num / den)
    w = dtypes.float32 if d == dtypes.float16 else d
    c = w.np.type(num) / w.np.type(den)
    out = multiply(convert(lift(x), w), np.asarray(c, w.np))
    return convert(out, d)


def fabs(x):
    """np.fabs: a float ufunc, so integers and bools give NumPy's float for them (int8 ->
    float16, int32 -> float64; INT64_MIN's is 9.2e18), where np.abs keeps the integer dtype."""
    x = lift(x)
    if not dt(x).is_float:
        x = convert(x, float_function_dtype(np.fabs, x))
    return absolute(x)


# ---------------------------------------------------------------------------------------------
# Rounding


def _int_preserving(opdef, name):
    def f(x):
        x = lift(x)
        if not dt(x).is_float:
            if dt(x).is_bool:       # NumPy's own dtype: bool (its '?->?' loop) or float16
                return _bool_rounded(name, x)
            return x
        return unary_op(opdef, x)
    return f


def _bool_rounded(name, x):
    """np.floor, np.ceil, np.trunc of a bool array: the bools themselves in NumPy 2.4 (a bool
    loop), float16 in NumPys without one."""
    try:
        d = dtypes.as_dtype(getattr(np, name)(np.zeros(0, np.bool_)).dtype)
    except TypeError:
        raise unsupported(f"np.{name} of a bool array") from None
    return x if d.is_bool else convert(x, d)


floor = _int_preserving(ops.floor, "floor")
ceil = _int_preserving(ops.ceil, "ceil")


def trunc(x):
    x = lift(x)
    if dt(x).is_bool:
        return _bool_rounded("trunc", x)
    if not dt(x).is_float:
        return x
    return where(less(x, 0), ceil(x), floor(x))


def round_(a, decimals=0):
    """np.round as NumPy computes it (PyArray_Round): x * 10**d, rint, / 10**d for d > 0, and
    x / 10**-d, rint, * 10**-d for d < 0 (dividing by the exact power of ten: 0.001 is not).
    Integer arrays keep their dtype: unchanged for d >= 0, else rounded in float64 and cast
    back."""
    x = lift(a)
    decimals = operator.index(decimals)
    d = dt(x)
    if d.is_int and decimals >= 0:
        return x
    if d.is_bool and decimals != 0:
        name = "multiply" if decimals > 0 else "divide"
        raise numpy_error(TypeError, f"Cannot cast ufunc '{name}' output from "
                          "dtype('float64') to dtype('bool') with casting rule 'same_kind' "
                          f"(np.round of a bool array with decimals={decimals})",
                          "convert the array first, e.g. x.astype(np.float64)")
    if decimals == 0:
        return rint(x)
    scale = np.asarray(_power_of_ten(abs(decimals)), np.float64 if d.is_int else d.np)
    if decimals > 0:
        return true_divide(rint(multiply(x, scale)), scale)
    rounded = multiply(rint(true_divide(x, scale)), scale)     # integers: in float64
    return _cast_back(rounded, d) if d.is_int else rounded


def _power_of_ten(n: int) -> float:
    """10.0**n as NumPy's power_of_ten makes it: exact through 1e22, then multiplied by 10."""
    p = 1.0
    for _ in range(n):
        p *= 10.0
    return p


def _cast_back(r, d):
    """float64 integers ``r`` cast to the integer dtype ``d`` as NumPy's unsafe cast does on
    x86: narrower types wrap; int32 and int64 give their minimum out of range, uint64 gives 0.
    Converted through int64 (uint64 directly), so no value is out of the convert's range."""
    if d in (dtypes.int32, dtypes.int64):
        info = np.iinfo(d.np)
        inside = logical_and(greater_equal(r, float(info.min)), less(r, -float(info.min)))
        r = where(inside, r, float(info.min))
    elif d == dtypes.uint64:
        r = where(less(r, 2.0 ** 64), r, 0.0)
        return convert(r, d)
    return convert(convert(r, dtypes.int64), d)


# ---------------------------------------------------------------------------------------------
# NaN and infinity


def _float_test(opdef, int_value):
    def f(x):
        x = lift(x)
        if not dt(x).is_float:
            return broadcast_to(constant(int_value, dtypes.bool_, x._trace), x.shape)
        return unary_op(opdef, x, weak_ok=False)
    return f


isnan = _float_test(ops.isnan, False)
isinf = _float_test(ops.isinf, False)
isfinite = _float_test(ops.isfinite, True)


def fmax(a, b):
    """maximum that ignores NaN: the other operand wins."""
    a, b = promote(a, b, dtype=numeric_dtype("fmax", a, b))
    if not dt(a).is_float:
        return maximum(a, b)
    return where(isnan(b), a, where(isnan(a), b, maximum(a, b)))


def fmin(a, b):
    a, b = promote(a, b, dtype=numeric_dtype("fmin", a, b))
    if not dt(a).is_float:
        return minimum(a, b)
    return where(isnan(b), a, where(isnan(a), b, minimum(a, b)))


def logaddexp(a, b):
    return binary_op(ops.logaddexp, a, b, dtype=float_function_dtype(np.logaddexp, a, b))


def hypot(a, b):
    return binary_op(ops.hypot, a, b, dtype=float_function_dtype(np.hypot, a, b))


def copysign(a, b):
    return binary_op(ops.copysign, a, b, dtype=float_function_dtype(np.copysign, a, b))


def fmod(a, b):
    return binary_op(ops.fmod, a, b, dtype=numeric_dtype("fmod", a, b))


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """As NumPy computes it: ``b`` as a float first (int64 differences would wrap), the
    tolerance only where ``b`` is finite (else an infinite bound admits anything), equal
    values (infinities) always."""
    a, b = lift_all(a, b)
    if not dtypes.is_float_dtype(dt(b)):
        b = convert(b, dtypes.float64)          # NumPy: result_type(b, 1.0)
    close = less_equal(absolute(subtract(a, b)), add(atol, multiply(rtol, absolute(b))))
    close = logical_or(logical_and(close, isfinite(b)), equal(a, b))
    if equal_nan:
        close = logical_or(close, logical_and(isnan(a), isnan(b)))
    return close


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    x = lift(x)
    if not dtypes.is_float_dtype(x.dtype):
        return x
    info = dtypes.finfo(x.dtype)
    x = where(isnan(x), np.asarray(nan, x.dtype), x)
    x = where(logical_and(isinf(x), greater(x, 0)),
              np.asarray(info.max if posinf is None else posinf, x.dtype), x)
    return where(logical_and(isinf(x), less(x, 0)),
                 np.asarray(info.min if neginf is None else neginf, x.dtype), x)


# ---------------------------------------------------------------------------------------------
# Float functions composed from the IR's ops: heaviside, signbit, cbrt, modf, fix, ldexp, frexp


def heaviside(x1, x2):
    """0 below zero, ``x2`` at zero, 1 above, NaN at NaN."""
    d = float_function_dtype(np.heaviside, x1, x2)
    a, h = convert(lift(x1), d), convert(lift(x2, lift(x1)._trace), d)
    zero, one = np.asarray(0, d.np), np.asarray(1, d.np)
    out = where(less(a, zero), zero, where(greater(a, zero), one, h))
    return where(isnan(a), a, out)


def signbit(x):
    """The sign bit: -0.0 and a NaN with its sign bit set count (copysign reads the bit)."""
    x = lift(x)
    if not dt(x).is_float:
        return less(x, 0)
    return less(copysign(np.asarray(1, dt(x).np), x), np.asarray(0, dt(x).np))


def cbrt(x):
    """The real cube root: |x| ** (1/3) in float64, corrected by one Newton step (the power
    alone is tens of ulps off for large and small x); zeros, infinities and NaN are
    themselves. Narrower floats are rounded once from float64. At +-0 the value is x and the
    derivative +inf (as JAX), from s * (s * x) ** (1/3) with s = copysign(1, x)."""
    x = lift(x)
    d = dt(x) if dt(x).is_float else float_function_dtype(np.cbrt, x)
    f = convert(x, dtypes.float64)
    zero = equal(f, 0.0)
    special = logical_or(zero, logical_not_finite(f))
    a = absolute(where(special, 1.0, f))            # a safe input where x is special
    y = power(a, 1.0 / 3.0)
    y = subtract(y, true_divide(subtract(y, true_divide(a, multiply(y, y))), 3.0))
    s = copysign(np.float64(1.0), f)
    at_zero = multiply(power(multiply(where(zero, f, s), s), 1.0 / 3.0), s)  # 1 ** (1/3) off 0
    out = where(isinf(f), copysign(np.float64(np.inf), f), where(special, f, copysign(y, f)))
    return convert(where(zero, at_zero, out), d)          # (derivative 0 at +-inf, as JAX)


def logical_not_finite(x):
    from .arithmetic import logical_not
    return logical_not(isfinite(x))


def modf(x):
    """(fractional part, integral part), both with x's sign: modf(-0.0) is (-0.0, -0.0),
    modf(inf) (0.0, inf)."""
    x = lift(x)
    if not dt(x).is_float:
        x = convert(x, dtypes.as_dtype(np.modf(np.zeros(1, x.dtype))[0].dtype))
    integral = trunc(x)
    frac = where(isinf(x), np.asarray(0, dt(x).np), subtract(x, integral))
    return copysign(frac, x), integral


def fix(x, out=None):
    """np.fix: rounds toward zero (integers unchanged), as trunc."""
    return trunc(x)


_POW2_MIN, _POW2_MAX = -1022, 1023


def _powers_of_two(trace):
    """The float64 powers of two 2**-1022 ... 2**1023, exact, as a constant to take from."""
    e = np.arange(_POW2_MIN, _POW2_MAX + 1)
    return constant(np.ldexp(1.0, e), dtypes.float64, trace)


def _exact_power_of_two(n):
    """2.0 ** n for int64 n in [-1022, 1023] (a take: pow need not be exact)."""
    from .gather import take
    from .arithmetic import clip
    n = clip(n, np.int64(_POW2_MIN), np.int64(_POW2_MAX))
    return take(_powers_of_two(n._trace), subtract(n, np.int64(_POW2_MIN)))


def _scalbn(y, n):
    """y * 2**n in float64 rounded once, as musl's scalbn: large |n| in steps of 2**1023 or
    2**-969 (a step that would round makes a result that rounds to the same value)."""
    from .arithmetic import clip
    n = clip(convert(n, dtypes.int64), np.int64(-4000), np.int64(4000))
    for _ in range(2):
        big = greater(n, np.int64(_POW2_MAX))
        y = where(big, multiply(y, 2.0 ** 1023), y)
        n = where(big, subtract(n, np.int64(1023)), n)
        small = less(n, np.int64(_POW2_MIN))
        y = where(small, multiply(y, 2.0 ** -969), y)
        n = where(small, add(n, np.int64(969)), n)
    return multiply(y, _exact_power_of_two(n))


def ldexp(x1, x2):
    """x1 * 2**x2, rounded once (computed in float64, which holds float32's and float16's
    results exactly before their one rounding)."""
    n = lift(x2, lift(x1)._trace)
    if not (dt(n).is_int or dt(n).is_bool):
        raise numpy_error(TypeError, "ufunc 'ldexp' not supported for the input types (the "
                          "exponent must be an integer)", "convert the exponent to integers")
    x = lift(x1)
    d = float_function_dtype(np.ldexp, x, n)
    f, n = promote(convert(x, dtypes.float64), convert(n, dtypes.int64))
    return convert(_scalbn(f, n), d)


def frexp(x):
    """(mantissa in [0.5, 1) with x's sign, int32 exponent): the exponent from log2 |x|,
    corrected by one (log2 is not exact next to powers of two); (x, 0) for zeros,
    infinities and NaN."""
    x = lift(x)
    d = dt(x) if dt(x).is_float else dtypes.as_dtype(np.frexp(np.zeros(1, x.dtype))[0].dtype)
    f = convert(x, dtypes.float64)
    special = logical_or(equal(f, 0.0), logical_not_finite(f))
    a = absolute(where(special, 1.0, f))
    e = add(convert(floor(log2(a)), dtypes.int64), np.int64(1))
    m = _scalbn(a, subtract(np.int64(0), e))
    high = greater_equal(m, 1.0)
    e = where(high, add(e, np.int64(1)), e)
    m = where(high, multiply(m, 0.5), m)
    low = less(m, 0.5)
    e = where(low, subtract(e, np.int64(1)), e)
    m = where(low, multiply(m, 2.0), m)
    mantissa = convert(where(special, f, copysign(m, f)), d)
    exponent = convert(where(special, np.int64(0), e), dtypes.int32)
    return mantissa, exponent


# ---------------------------------------------------------------------------------------------
# More float functions composed from the IR's ops: arccosh, logaddexp2, sinc, isposinf,
# isneginf; and the complex-number views of real arrays (tracejit has no complex dtypes)


def arccosh(x):
    """log1p(t + sqrt(t (t + 2))), t = x - 1 (exact near 1, where log(x + sqrt(x*x - 1))
    loses the small result's digits); log(x) + log(2) for large x, where t*t overflows.
    16- and 32-bit floats in float64, rounded once."""
    x = lift(x)
    d = dt(x) if dt(x).is_float else float_function_dtype(np.arccosh, x)
    w = convert(x, dtypes.float64)
    big = greater(w, 1e8)
    t = subtract(where(big, 2.0, w), 1.0)
    small = log1p(add(t, sqrt(multiply(t, add(t, 2.0)))))
    out = where(big, add(log(where(big, w, 2.0)), math.log(2.0)), small)
    return convert(out, d)


def logaddexp2(a, b):
    """log2(2**a + 2**b) as NumPy's: a + 1 where a == b (infinities too), else the larger plus
    log2(1 + 2**-|a - b|). float16 in float32, rounded once, as NumPy's half loop (rounding
    each step to float16, with 1/log(2) a float16, put one result in ten an ulp or more off)."""
    d = float_function_dtype(np.logaddexp2, a, b)
    w = dtypes.float32 if d == dtypes.float16 else d
    a, b = convert(lift(a), w), convert(lift(b, lift(a)._trace), w)
    same = equal(a, b)
    gap = where(same, np.asarray(0, w.np), unary_op(ops.neg, absolute(subtract(a, b))))
    out = add(maximum(a, b), multiply(log1p(exp2(gap)), np.asarray(1 / math.log(2), w.np)))
    # A finite tie is (a + b) / 2 + 1 + ln2/8 (a - b)**2: a + 1 as NumPy's, with the
    # derivatives of log2(2**a + 2**b) there to the second (a + 1 alone gave d/da 1, d/db 0
    # and a Hessian of 0). Infinite ones stay a + 1; elsewhere the tie's formula sees 0s
    # (an infinity in it, unused, made the gradient NaN).
    infinite = logical_and(same, isinf(a))
    finite_tie = logical_and(same, isfinite(a))
    sa, sb = (where(finite_tie, v, np.asarray(0, w.np)) for v in (a, b))
    half = np.asarray(0.5, w.np)
    tie = add(add(add(multiply(sa, half), multiply(sb, half)), np.asarray(1, w.np)),
              multiply(np.asarray(math.log(2) / 8, w.np),
                       multiply(subtract(sa, sb), subtract(sa, sb))))
    return convert(where(infinite, add(a, np.asarray(1, w.np)), where(same, tie, out)), d)


def sinc(x):
    """sin(pi x) / (pi x), and at 0 its Maclaurin polynomial 1 - (pi x)^2/6 + (pi x)^4/120,
    whose value is 1 and whose derivatives there are exact to the fourth (as JAX's rule).
    NumPy's formula replaces 0 by 1e-20, a constant: every derivative at 0 was 0, the second
    (-pi^2/3) too. The formula's branch divides by 1 at 0, so its derivatives stay finite."""
    x = lift(x)
    zero = equal(x, 0)
    y = multiply(math.pi, where(zero, 1, x))
    px2 = multiply(multiply(math.pi, x), multiply(math.pi, x))
    series = add(subtract(1, true_divide(px2, 6)), true_divide(multiply(px2, px2), 120))
    return where(zero, series, true_divide(sin(y), y))


def isposinf(x, out=None):
    from .arithmetic import logical_not
    return logical_and(isinf(x), logical_not(signbit(x)))


def isneginf(x, out=None):
    return logical_and(isinf(x), signbit(x))


def real(val):
    """np.real of a real array: the array itself (a view, as NumPy's)."""
    return lift(val)


def imag(val):
    """np.imag of a real array: zeros of its shape and dtype."""
    x = lift(val)
    return broadcast_to(constant(np.zeros((), x.dtype), trace=x._trace), x.shape)


def isreal(x):
    x = lift(x)
    return broadcast_to(constant(True, dtypes.bool_, x._trace), x.shape)


def iscomplex(x):
    x = lift(x)
    return broadcast_to(constant(False, dtypes.bool_, x._trace), x.shape)


def angle(z, deg=False):
    """The angle of a real number: 0, or pi for negative numbers (and -0.0), NaN at NaN."""
    z = lift(z)
    d = dt(z) if dt(z).is_float else dtypes.float64
    z = convert(z, d)
    out = arctan2(np.zeros((), d.np), z)
    return rad2deg(out) if deg else out
