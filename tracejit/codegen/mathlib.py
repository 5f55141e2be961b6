"""Vectorizable float32 transcendentals for generated kernels.

pip's llvmlite has no SVML, so ``math.exp`` inside a Numba loop is a scalar libm call per element
and the loop does not vectorize. These are branch-free (selects only) polynomial approximations
with Cody-Waite range reduction, which LLVM vectorizes inside a loop (zmm registers on AVX-512,
ymm on AVX2). They keep NumPy's special values: NaN in gives NaN, exp(+inf) = inf, exp(-inf) = 0,
tanh(+-inf) = +-1, sin(-0.0) = -0.0, sin(+-inf) = NaN, log(0) = -inf, log(x < 0) = NaN,
arctan2's signed zeros and infinities. Accuracy: within 2 ulp of float64 rounded to float32
(tests/test_codegen_math.py); sin32, cos32, log32, log1p32, arctan32 and arctan2_32 compute in
float64 and are within 1 ulp; sin32 and cos32 from |x| >= 2**50 (1.1e15) on call libm's sinf
and cosf behind a branch that keeps the loop vectorized (NumPy's values there bit for bit;
``_sin_or_cos`` says why, trig_large_arguments.py how). float64 kernels call ``math``'s libm
functions instead.
"""
from __future__ import annotations

import math

import numpy as np
from llvmlite import ir as llvm_ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from .native import bits_to_f64
from .trig_large_arguments import TRIG32_MAX, cos32_large, sin32_large


@intrinsic
def bits_to_f32(typingctx, x):
    """Reinterpret the bits of an int32 as a float32 (a bit cast, no conversion)."""
    if x != types.int32:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], llvm_ir.FloatType())

    return types.float32(types.int32), codegen


_F = np.float32
_LOG2E = _F(1.44269504088896341)
_LN2_HI = _F(0.693359375)
_LN2_LO = _F(-2.12194440e-4)
_ROUND = _F(12582912.0)        # 1.5 * 2**23: adding and subtracting it rounds to an integer
_HI = _F(89.0)
_LO = _F(-104.0)


@njit(inline="always")
def _scale_by_exponent_bits(p, n):
    """``p * 2**n`` for -150 <= n <= 128 by two multiplications with powers of two built from
    their bits (one power alone cannot reach the denormal range)."""
    n1 = n >> np.int32(1)
    n2 = n - n1
    s1 = bits_to_f32(np.int32((n1 + np.int32(127)) << np.int32(23)))
    s2 = bits_to_f32(np.int32((n2 + np.int32(127)) << np.int32(23)))
    return p * s1 * s2


@intrinsic
def scale_by_power_of_two(typingctx, p, n):
    """``p * 2**n`` for float32 ``p`` and int32 ``n`` (exp's last step).

    On AVX-512 targets it is LLVM's ``ldexp``, which vectorizes to one ``vscalefps`` that rounds
    denormal results once: exp32 0.36 -> 0.31 ns per element, row softmax 8% faster (measured
    single-threaded). Elsewhere LLVM expands a vector ``ldexp`` into a libm call per element
    (measured 9x slower with AVX2 only), so other targets build the powers from their bits. The
    choice is made per target machine when the kernel is compiled; Numba's cache key includes
    the target's CPU features, so a cached kernel is never loaded on the other kind of CPU."""
    if p != types.float32 or n != types.int32:
        return None
    sig = types.float32(types.float32, types.int32)

    def codegen(context, builder, signature, args):
        if _has_avx512(context):
            return _ldexp32(builder, *args)
        return context.compile_internal(builder, _scale_by_exponent_bits.py_func, signature, args)

    return sig, codegen


def _has_avx512(context) -> bool:
    """Whether the machine code being generated is for a CPU with AVX-512 (Numba's cache key
    includes the target's features, so the answer is part of what a cached kernel is for)."""
    return "+avx512f" in context.codegen().magic_tuple()[2].split(",")


def _ldexp32(builder, x, n):
    fnty = llvm_ir.FunctionType(llvm_ir.FloatType(), [llvm_ir.FloatType(), llvm_ir.IntType(32)])
    fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.ldexp.f32.i32")
    return builder.call(fn, [x, n])


# -- division by a value that stays the same along a loop ---------------------------------------
# A row's sum or norm divides every element of the row (softmax, layer norm): one vdivps per 16
# elements, which bounds the pass (softmax 4096 x 1024: 0.24 of 1.3 ms). With b = m * 2**e
# (m in [0.5, 1)), x / b = (x * 2**-e) * (1 / m): 1 / m is always a normal float, and scaling x
# first is exact unless the result is denormal, so the quotient is within an ulp of x / b
# (correctly rounded about three times in four), overflows where x / b does, and keeps x / b's
# results for zero, infinite and NaN b and x. Measured: softmax 1.32 -> 1.16 ms.

@njit(inline="always")
def reciprocal_parts(b):
    """``(1 / m, -e)`` for ``b = m * 2**e``, computed once per row for divide_by_parts."""
    m, e = math.frexp(np.float64(b))
    if not math.isfinite(b):
        e = 0              # frexp's exponent of inf and NaN is unspecified
    return np.float32(1.0 / m), np.int32(-e)


@intrinsic
def divide_by_parts(typingctx, x, b, inv_m, neg_e):
    """``x / b`` given ``reciprocal_parts(b)``: a scale and a multiplication on AVX-512 targets
    (vscalefps, vmulps), the division itself elsewhere (without AVX-512 the scaling is several
    instructions and no faster than vdivps)."""
    if (x, b, inv_m, neg_e) != (types.float32, types.float32, types.float32, types.int32):
        return None

    def codegen(context, builder, signature, args):
        xv, bv, mv, ev = args
        if _has_avx512(context):
            return builder.fmul(_ldexp32(builder, xv, ev), mv)
        return builder.fdiv(xv, bv)

    return types.float32(types.float32, types.float32, types.float32, types.int32), codegen


@njit(inline="always", fastmath={"contract"})
def exp_reduced(x):
    """``(n, r)`` with x = n ln 2 + r, |r| <= ln2/2 (x clamped to where exp is finite and
    not 0): exp32's and half_accurate.exp16's range reduction."""
    xc = x if x < _HI else _HI
    xc = xc if xc > _LO else _LO
    n = (xc * _LOG2E + _ROUND) - _ROUND
    return n, (xc - n * _LN2_HI) - n * _LN2_LO


@njit(inline="always", fastmath={"contract"})
def exp32(x):
    n, r = exp_reduced(x)
    p = _F(1.9875691500e-4)
    p = p * r + _F(1.3981999507e-3)
    p = p * r + _F(8.3334519073e-3)
    p = p * r + _F(4.1665795894e-2)
    p = p * r + _F(1.6666665459e-1)
    p = p * r + _F(5.0000001201e-1)
    p = p * r * r + r + _F(1.0)
    out = scale_by_power_of_two(p, np.int32(n))
    return out if x == x else x


# -- exp of float64, vectorizable --------------------------------------------------------------
# NumPy evaluates float64 exp with SIMD code of its own on AVX-512 CPUs (8 lanes); a libm call
# per element kept a fused loop scalar there (float64 softmax 0.75x NumPy, logsumexp 0.56x).
# fdlibm's e_exp.c algorithm (error below 1 ulp): k = round(x / ln 2), r = x - k ln 2 in two
# parts, exp(r) = 1 + r + r c / (2 - c) with c = r - r**2 P(r**2), times 2**k in two exact
# steps (so that a subnormal result is rounded once).
_LN2_HI64 = 6.93147180369123816490e-01
_LN2_LO64 = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e+00
_EXP_P = (1.66666666666666019037e-01, -2.77777777770155933842e-03,
          6.61375632143793436117e-05, -1.65339022054652515390e-06,
          4.13813679705723846039e-08)
_EXP_OVER = 7.09782712893383973096e+02      # above: inf
_EXP_UNDER = -7.45133219101941108420e+02    # below: 0
_ROUND64 = 6755399441055744.0               # 1.5 * 2**52: adding and subtracting it rounds


@njit(inline="always", fastmath={"contract"})
def exp64(x):
    xc = x if x < 710.0 else 710.0
    xc = xc if xc > -746.0 else -746.0
    k = (xc * _INV_LN2 + _ROUND64) - _ROUND64
    hi = xc - k * _LN2_HI64
    lo = k * _LN2_LO64
    r = hi - lo
    t = r * r
    p = _EXP_P
    c = r - t * (p[0] + t * (p[1] + t * (p[2] + t * (p[3] + t * p[4]))))
    y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi)
    ki = np.int64(k)
    k1 = ki >> np.int64(1)
    out = (y * bits_to_f64((k1 + np.int64(1023)) << np.int64(52))
           * bits_to_f64((ki - k1 + np.int64(1023)) << np.int64(52)))
    out = np.inf if x > _EXP_OVER else out
    out = 0.0 if x < _EXP_UNDER else out
    return out if x == x else x


# log of float64, likewise (fdlibm's e_log.c, error below 1 ulp): x = 2**k m with m in
# [sqrt(1/2), sqrt(2)) from the bits (denormals scaled by 2**54 first), f = m - 1 exact,
# log(1 + f) = f - f**2 / 2 + s (f**2 / 2 + R(s**2)) with s = f / (2 + f).
_LG = (6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01,
       2.222219843214978396e-01, 1.818357216161805012e-01, 1.531383769920937332e-01,
       1.479819860511658591e-01)
_SQRT_HALF_BITS64 = 0x3FE6A09E667F3BCD
_MANTISSA64 = 0x000FFFFFFFFFFFFF


@njit(inline="always", fastmath={"contract"})
def log64(x):
    """log(0) = -inf, log(x < 0) = NaN, log(inf) = inf, log(NaN) = NaN."""
    tiny = x < 2.2250738585072014e-308
    xs = x * 18014398509481984.0 if tiny else x          # 2**54
    i = f64_bits(xs) - np.int64(_SQRT_HALF_BITS64)
    k = (i >> np.int64(52)) - (np.int64(54) if tiny else np.int64(0))
    m = bits_to_f64((i & np.int64(_MANTISSA64)) + np.int64(_SQRT_HALF_BITS64))
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    g = _LG
    r = (z * (g[0] + w * (g[2] + w * (g[4] + w * g[6])))
         + w * (g[1] + w * (g[3] + w * g[5])))
    hfsq = 0.5 * f * f
    dk = np.float64(k)
    out = dk * _LN2_HI64 - ((hfsq - (s * (hfsq + r) + dk * _LN2_LO64)) - f)
    out = out if x > 0.0 else (-np.inf if x == 0.0 else np.nan)
    return out if x < np.inf else x


@njit(inline="always", fastmath={"contract"})
def tanh32(x):
    ax = x if x >= _F(0) else -x
    z = x * x
    s = _F(-5.70498872745e-3)
    s = s * z + _F(2.06390887954e-2)
    s = s * z - _F(5.37397155531e-2)
    s = s * z + _F(1.33314422036e-1)
    s = s * z - _F(3.33332819422e-1)
    small = s * z * x + x
    big = _F(1.0) - _F(2.0) / (exp32(ax + ax) + _F(1.0))
    big = big if x >= _F(0) else -big
    # tanh is odd: the sign of x, so tanh(-0.0) = -0.0 as in NumPy
    return np.float32(np.copysign(small if ax < _F(0.625) else big, x))


@njit(inline="always", fastmath={"contract"})
def logistic32(x):
    return _F(1.0) / (_F(1.0) + exp32(-x))


# -- sin, cos, log, log1p, arctan, arctan2 of float32, computed in float64 ----------------------
# NumPy evaluates some of these with SIMD (float32 sin, cos, log with AVX2; SVML on AVX-512); a
# libm call per element kept the fused loop scalar (NPBench arc_distance at 0.8x NumPy). Here the
# range reduction and the polynomials run in float64 (four lanes per ymm register on AVX2): one
# rounding at the end, so the results are within 1 ulp of float64 rounded to float32 (every
# float32 input checked once, offline; tests/test_codegen_math.py samples every binade).
# Polynomial coefficients: minimax fits (Lawson's iteration, in long double) of the functions'
# Taylor-series remainders; relative error 2**-37 (sin), 2**-34 (cos), 2**-35 (atan), 2**-30 (log).

@intrinsic
def f32_bits(typingctx, x):
    """The bits of a float32 as an int32 (a bit cast, no conversion)."""
    if x != types.float32:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], llvm_ir.IntType(32))

    return types.int32(types.float32), codegen


@intrinsic
def f64_bits(typingctx, x):
    """The bits of a float64 as an int64 (a bit cast, no conversion)."""
    if x != types.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], llvm_ir.IntType(64))

    return types.int64(types.float64), codegen


@intrinsic
def fma64(typingctx, a, b, c):
    """``a * b + c`` rounded once: LLVM's fma, one vfmadd on CPUs with FMA (x86-64 since 2013,
    every ARM64); elsewhere a libm call, still exact. sin32's reduction needs it exact."""
    if (a, b, c) != (types.float64,) * 3:
        return None

    def codegen(context, builder, signature, args):
        ty = llvm_ir.DoubleType()
        fn = cgutils.get_or_insert_function(builder.module, llvm_ir.FunctionType(ty, [ty] * 3),
                                            "llvm.fma.f64")
        return builder.call(fn, args)

    return types.float64(types.float64, types.float64, types.float64), codegen


_H = float.fromhex
_SHIFT52 = 6755399441055744.0   # 1.5 * 2**52: adding and subtracting it rounds to an integer
_TWO_OVER_PI = _H("0x1.45f306dc9c883p-1")
_NEG_PIO2_1 = _H("-0x1.921fb54442d18p+0")     # -pi/2 as a sum of three doubles (159 bits)
_NEG_PIO2_2 = _H("-0x1.1a62633145c07p-54")
_NEG_PIO2_3 = _H("0x1.f1976b7ed8fbcp-110")
_SIN = (_H("-0x1.5555554cb90d5p-3"), _H("0x1.11110895a9708p-7"), _H("-0x1.a00f9d2278b00p-13"),
        _H("0x1.6cd8388ff8000p-19"))
_COS = (_H("-0x1.ffffffd0bc6f1p-2"), _H("0x1.55553e0cd489ep-5"), _H("-0x1.6c087d13c5a30p-10"),
        _H("0x1.9933d5fcdc800p-16"))


@njit(inline="always", fastmath={"contract"})
def _sin_or_cos(x, quarter_turns):
    """sin(x + quarter_turns * pi/2) for float32 x, |x| < TRIG32_MAX (NaN for inf and NaN);
    not the value from there on, where sin32 and cos32 take libm's (their ``_large`` calls).

    k = x * 2/pi rounded (the 1.5 * 2**52 trick, k mod 4 read from the sum's low bits), then
    r = x - k * pi/2 in |r| <= pi/4 with pi/2 in three doubles: the first fma is exact (x -
    k * P1 is a multiple of 2**-52 below 1 while k < 2**51), the other two round by 2**-53 of
    r, and the 159 bits of pi/2 leave an error of k * 2**-160, below 2**-60 of the smallest |r|
    a float32 reaches there. Larger arguments need 2/pi to 190 bits, the window chosen by the
    exponent (Payne-Hanek): branch-free, every element would pay for it (selecting among four
    exponent groups of constants measured 2.4x slower; a 2/pi window cut from 64-bit words by
    the exponent, 2.2x; a table of 2**e * 2/pi mod 4 read by the exponent, 2.2x: LLVM reads
    it lane by lane on AVX2), hence the branch below."""
    xd = np.float64(x)
    s = xd * _TWO_OVER_PI + _SHIFT52
    k = s - _SHIFT52
    r = fma64(k, _NEG_PIO2_1, xd)
    r = fma64(k, _NEG_PIO2_2, r)
    r = fma64(k, _NEG_PIO2_3, r)
    q = f64_bits(s) + quarter_turns
    w = r * r
    sp = r + r * w * (_SIN[0] + w * (_SIN[1] + w * (_SIN[2] + w * _SIN[3])))
    cp = 1.0 + w * (_COS[0] + w * (_COS[1] + w * (_COS[2] + w * _COS[3])))
    v = cp if q & 1 else sp
    v = -v if q & 2 else v
    return _F(v)




_TRIG32_MAX_F = _F(TRIG32_MAX)


@njit(inline="always", fastmath={"contract"})
def sin32(x):
    out = _sin_or_cos(x, 0)
    out = x if x == _F(0) else out      # sin(-0.0) = -0.0
    return sin32_large(x) if abs(x) >= _TRIG32_MAX_F else out


@njit(inline="always", fastmath={"contract"})
def cos32(x):
    out = _sin_or_cos(x, 1)
    return cos32_large(x) if abs(x) >= _TRIG32_MAX_F else out


_LN2 = _H("0x1.62e42fefa39efp-1")
_SQRT_HALF_BITS = 0x3F3504F3
_LOG1P = (_H("-0x1.000000000cf8dp-1"), _H("0x1.555545f845b81p-2"), _H("-0x1.ffffeded2fd88p-3"),
          _H("0x1.99a546179f126p-3"), _H("-0x1.5562e4b9eabccp-3"), _H("0x1.2332b9d07d1bdp-3"),
          _H("-0x1.fb42fc8174c13p-4"), _H("0x1.e650cf7467010p-4"), _H("-0x1.e2ea9e6d4419bp-4"),
          _H("0x1.1b4358fc02327p-4"))


@njit(inline="always", fastmath={"contract"})
def _log64(x):
    """log x in float64 for a positive finite float32 x: x = m * 2**e with m in [sqrt(1/2),
    sqrt(2)) from the bits (denormals scaled by 2**23 first), log x = e ln 2 + log1p(m - 1),
    m - 1 exact, log1p(f) = f + f**2 P(f) with no division."""
    tiny = x < _F(1.1754943508222875e-38)
    xs = x * _F(8388608.0) if tiny else x
    i = np.int32(f32_bits(xs) - np.int32(_SQRT_HALF_BITS))
    e = np.int32(np.int32(i >> np.int32(23)) - (np.int32(23) if tiny else np.int32(0)))
    m = bits_to_f32(np.int32((i & np.int32(0x7FFFFF)) + np.int32(_SQRT_HALF_BITS)))
    f = np.float64(m) - 1.0
    c = _LOG1P
    p = c[9]
    p = p * f + c[8]
    p = p * f + c[7]
    p = p * f + c[6]
    p = p * f + c[5]
    p = p * f + c[4]
    p = p * f + c[3]
    p = p * f + c[2]
    p = p * f + c[1]
    p = p * f + c[0]
    return np.float64(e) * _LN2 + (f + f * f * p)


@njit(inline="always", fastmath={"contract"})
def log32(x):
    """log(0) = -inf, log(x < 0) = NaN, log(inf) = inf."""
    x = _F(x)
    out = _F(_log64(x))
    out = out if x > _F(0) else (_F(-np.inf) if x == _F(0) else _F(np.nan))
    return out if x < _F(np.inf) else x


@njit(inline="always", fastmath={"contract"})
def log1p32(x):
    """log1p x = log u + c / u with u = 1 + x rounded to float32 and c = (1 + x) - u, exact in
    float64 (for tiny x, u = 1 and c = x); log1p(-1) = -inf, NaN below, log1p(-0.0) = -0.0."""
    x = _F(x)
    u = _F(1) + x
    u = u if u > _F(0) else _F(1)      # x <= -1 and NaN are chosen below; no 0 / 0
    ud = np.float64(u)
    c = (1.0 - ud) + np.float64(x)
    out = _F(_log64(u) + c / ud)
    out = out if x > _F(-1) else (_F(-np.inf) if x == _F(-1) else _F(np.nan))
    out = x if x == _F(0) else out
    return out if x < _F(np.inf) else x


_TAN_PI_8 = _H("0x1.a827999fcef32p-2")
_PIO4 = _H("0x1.921fb54442d18p-1")
_PIO2 = _H("0x1.921fb54442d18p+0")
_PI = _H("0x1.921fb54442d18p+1")
_ATAN = (_H("-0x1.555554c885af4p-2"), _H("0x1.99991a3a87e1ep-3"), _H("-0x1.247f04e2b5db9p-3"),
         _H("0x1.c467d7c847726p-4"), _H("-0x1.5b446fe773570p-4"), _H("0x1.84f17bc78d5c1p-5"))


@njit(inline="always", fastmath={"contract"})
def _angle(a, b):
    """atan(a / b) in [0, pi/2] for float64 a, b >= 0, not both 0 or both infinite: one
    division, of the smaller by the larger, or (lo - hi) / (lo + hi) = tan(atan(lo/hi) - pi/4)
    where lo / hi > tan(pi/8) (exact numerator and denominator: float32 operands), so that the
    polynomial's argument stays within tan(pi/8)."""
    swap = a > b
    lo = b if swap else a
    hi = a if swap else b
    mid = lo > _TAN_PI_8 * hi
    u = (lo - hi if mid else lo) / (lo + hi if mid else hi)
    w = u * u
    c = _ATAN
    p = c[0] + w * (c[1] + w * (c[2] + w * (c[3] + w * (c[4] + w * c[5]))))
    t = (_PIO4 if mid else 0.0) + (u + u * w * p)
    return _PIO2 - t if swap else t


@njit(inline="always", fastmath={"contract"})
def arctan32(x):
    x = _F(x)
    t = _angle(abs(np.float64(x)), 1.0)
    out = _F(-t if f32_bits(x) < np.int32(0) else t)
    return out if x == x else x


@njit(inline="always", fastmath={"contract"})
def arctan2_32(y, x):
    """NumPy's (C99's) arctan2: the angle of (|x|, |y|) in the first quadrant, mirrored by the
    signs (sign bits, so that -0.0 counts as negative): arctan2(+-0, -0) = +-pi, arctan2(+-0,
    +0) = +-0, arctan2(+-inf, -+inf) = +-3pi/4, +-pi/4; NaN if either is NaN."""
    y = _F(y)
    x = _F(x)
    a = abs(np.float64(y))
    b = abs(np.float64(x))
    both_inf = (a == np.inf) & (b == np.inf)
    a = 1.0 if both_inf else a
    b = 1.0 if both_inf | ((b == 0.0) & ~(a > 0.0)) else b    # never 0 / 0 (nor NaN / 0)
    t = _angle(a, b)
    t = _PI - t if f32_bits(x) < np.int32(0) else t
    out = _F(-t if f32_bits(y) < np.int32(0) else t)
    return out if (x == x) & (y == y) else x + y


# -- NaN-propagating max / min -------------------------------------------------------------------
# NumPy's max/min propagate NaN. Written as compare-and-select (``v if v > a or v != v else a``)
# a reduction does not vectorize (measured: 1.39 ms for the row max of 4096 x 1024 float32,
# against 0.41 ms with these); LLVM's llvm.maximum / llvm.minimum have exactly NumPy's semantics
# and LLVM >= 17 vectorizes reductions over them.

def _minmax(name):
    @intrinsic
    def impl(typingctx, a, b):
        if a != b or not isinstance(a, types.Float):
            return None

        def codegen(context, builder, signature, args):
            ty = args[0].type
            suffix = "f32" if a.bitwidth == 32 else "f64"
            fn = cgutils.get_or_insert_function(builder.module, llvm_ir.FunctionType(ty, [ty, ty]),
                                                f"llvm.{name}.{suffix}")
            return builder.call(fn, args)

        return a(a, b), codegen
    return impl


fmaximum = _minmax("maximum")
fminimum = _minmax("minimum")


@intrinsic
def radd(typingctx, a, b):
    """``a + b`` as an fadd with the ``reassoc`` flag. A reduction loop over it vectorizes into
    partial sums, where plain ``+`` stays one sequential chain of adds; the rest of the kernel
    keeps strict semantics (exp32's rounding trick relies on them). Measured on 4096 x 1024
    float32 rows: layer norm 3.7 -> 1.2 ms, row softmax 2.0 -> 1.6 ms (against 16 lanes kept in
    a per-row array)."""
    if a != b or not isinstance(a, types.Float):
        return None

    def codegen(context, builder, signature, args):
        return builder.fadd(args[0], args[1], flags=("reassoc",))

    return a(a, b), codegen


def has_vector_minmax() -> bool:
    import llvmlite.binding as llvm
    return llvm.llvm_version_info >= (17,)


# -- scipy.special's gammaln and digamma, in float64 (float32 kernels round the result, as
# SciPy's float32 loops do) -----------------------------------------------------------------

@njit
def gammaln64(x):
    """log|Gamma(x)|: libm's lgamma, with SciPy's values where they differ from C's: -inf at
    -inf, and inf where 1/x overflows (|x| <= 2**-1024), SciPy's (cephes) value there."""
    if x == -np.inf:
        return x
    if abs(x) <= 5.562684646268003e-309:
        return np.inf
    return math.lgamma(x)


# SciPy's digamma on [1, 2] (cephes psi's digamma_imp_1_2, from Boost): digamma(x) =
# (x - root) * (Y + P(x - 1) / Q(x - 1)), the positive root as a sum of three doubles, so that
# the value keeps its relative accuracy at the root. Coefficients highest degree first.
_DIGAMMA_Y = float(np.float32(0.99558162689208984))
_DIGAMMA_ROOT = (1569415565.0 / 1073741824.0, (381566830.0 / 1073741824.0) / 1073741824.0,
                 0.9016312093258695918615325266959189453125e-19)
_DIGAMMA_P = (-0.0020713321167745952, -0.045251321448739056, -0.28919126444774784,
              -0.65031853770896507, -0.32555031186804491, 0.25479851061131551)
_DIGAMMA_Q = (-0.55789841321675513e-6, 0.0021284987017821144, 0.054151797245674225,
              0.43593529692665969, 1.4606242909763515, 2.0767117023730469, 1.0)
_EULER = 0.5772156649015329
# B_2k / (2k) for k = 1..8 (Bernoulli numbers): digamma(x) ~ log x - 1/(2x) - sum B_2k/(2k x^2k)
_DIGAMMA_ASYMPTOTIC = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12,
                       -3617 / 8160)


@njit
def digamma64(x):
    """The digamma function psi(x) = d/dx log Gamma(x), with SciPy's special values (nan at the
    poles x = 0, -1, -2, ... except psi(+-0) = -+inf, nan at -inf, inf at inf).

    Negative x by reflection, psi(x) = psi(1 - x) - pi / tan(pi x), after reducing x to the
    nearest integer's distance r (exact) so that tan(pi r) is accurate (SciPy's fractional part
    loses digits next to a pole). Then SciPy's (cephes psi) for x > 0: the harmonic sum at the
    integers up to 10; x < 1 or x in (2, 10) moved into [1, 2] by the recurrence psi(x + 1) =
    psi(x) + 1/x, where Boost's rational approximation about the positive root holds (equal
    to SciPy's there, bit for bit; a recurrence up to 10 instead cancelled to 80 ulp near 2);
    x >= 10 by the asymptotic series, whose next term is below 1e-17 there."""
    if x != x or x == np.inf:
        return x
    if x == -np.inf:
        return np.nan
    if x == 0.0:
        return math.copysign(np.inf, -x)
    result = 0.0
    if x < 0.0:
        r = x - np.rint(x)
        if r == 0.0:
            return np.nan
        result = -math.pi / math.tan(math.pi * r)
        x = 1.0 - x
    if x <= 10.0 and x == np.floor(x):
        i = 1.0
        while i < x:
            result += 1.0 / i
            i += 1.0
        return result - _EULER
    if x < 1.0:
        result -= 1.0 / x
        x += 1.0
    elif x < 10.0:
        while x > 2.0:
            x -= 1.0
            result += 1.0 / x
    if x <= 2.0:
        g = ((x - _DIGAMMA_ROOT[0]) - _DIGAMMA_ROOT[1]) - _DIGAMMA_ROOT[2]
        u = x - 1.0
        p = 0.0
        for k in range(len(_DIGAMMA_P)):
            p = p * u + _DIGAMMA_P[k]
        q = 0.0
        for k in range(len(_DIGAMMA_Q)):
            q = q * u + _DIGAMMA_Q[k]
        return result + (g * _DIGAMMA_Y + g * (p / q))
    z = 1.0 / (x * x)
    s = 0.0
    for k in range(len(_DIGAMMA_ASYMPTOTIC) - 1, -1, -1):
        s = (s + _DIGAMMA_ASYMPTOTIC[k]) * z
    return result + (math.log(x) - 0.5 / x - s)
