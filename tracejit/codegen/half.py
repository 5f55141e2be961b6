"""float16 inside Numba kernels: conversions between float16 bit patterns and float32/float64.

Numba's CPU target has no float16 type, so kernels hold a float16 array as its uint16 bit
patterns (codegen/representation.py says where) and compute with float32 scalars that hold
float16 values exactly:

- ``h2f(bits)``: a loaded element, the float32 of the same value (exact: subnormals, infinities,
  NaN payloads too);
- ``round16(x)``: a float32 rounded to the nearest float16 value (ties to even), still a
  float32: the result of every op whose result dtype is float16. NumPy's float16 ufuncs do
  the same (convert to float32, compute, round back), and float32's 24 bits are at least
  2 * 11 + 2, so for + - * / sqrt the double rounding is exact: results are bit-identical;
- ``f2h(x)``: a float32 to float16 bits for a store (round to nearest even, subnormals,
  overflow to inf, NaN stays NaN);
- ``d2h(x)`` and ``round16_64(x)``: a float64 rounded to float16 in ONE step, straight from
  its bits (a float64 sum's total, a float64 -> float16 convert: through float32 it could
  round twice).

The conversions are written here (``h2f_sw``, ``f2h_sw``, ``round16_sw``, ``d2h``): branch-free
(selects) in 32-bit integer lanes, so LLVM vectorizes the loops they are inlined into; their
NaN results keep NumPy's payload (its top mantissa bits, at least one set).
tests/test_float16.py checks them against NumPy's ``astype`` on every float16 pattern, every
float32 pattern next to a float16 rounding boundary, and a million random ones.

``h2f``, ``f2h`` and ``round16`` are what kernels call: on a CPU with conversion instructions
(x86-64 with F16C, since 2012; 64-bit Arm) LLVM's own half conversions, one vcvtph2ps /
vcvtps2ph per 8 elements, the same roundings (a NaN comes out quieted: a signaling NaN's
payload differs from NumPy's); elsewhere the routines above. A float16 program rounds after
every op, and the software round16 is a dozen vector instructions against two: measured on a
2-core AVX2 machine (benchmarks/half_precision.py), the elementwise chain at 1e7 took 40 ms
with the routines, 25 ms with F16C, 14 ms in float32. The choice is made per target machine
when a kernel compiles (Numba's cache key includes the CPU's features); ``TRACEJIT_F16C=0``
makes kernels call the routines instead (representation.py picks the names).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir as llvm_ir
from numba import njit, types
from numba.extending import intrinsic

from .mathlib import bits_to_f32, f32_bits, f64_bits
from .native import bits_to_f64

_F, _I = np.float32, np.int32
_TWO_112 = _F(2.0 ** 112)        # 2**(127 - 15): float16's exponent bias into float32's
_HALF = _F(0.5)                  # ulp 2**-24, float16's smallest subnormal
_INF = _F(np.inf)
_TWO_28 = 2.0 ** 28              # a float64 whose ulp is 2**-24
_TWO_28_BITS = 0x41B0000000000000

# float32 bit patterns (magnitudes), int32 so that comparisons stay 32-bit lanes
_F32_MIN_NORMAL16 = _I(0x38800000)   # 2**-14, float16's smallest normal
_F32_OVERFLOW16 = _I(0x477FF000)     # 65520: halfway from 65504 (the largest float16) to 65536
_F32_INF = _I(0x7F800000)
_F32_HALF = _I(0x3F000000)
_H_INF = _I(0x7C00)
_H_INF_SHIFTED = _I(0x7C00 << 13)
_ZERO = _I(0)
# float64 bit patterns (magnitudes)
_F64_MIN_NORMAL16 = 0x3F10000000000000
_F64_OVERFLOW16 = 0x40EFFE0000000000
_F64_INF = 0x7FF0000000000000


def _int32_op(name: str):
    """A wrapping int32 operation. Numba widens int32 arithmetic to int64, which doubles the
    vector registers the conversions need (h2f measured 0.76 against 0.2 ns per element):
    these keep every lane 32 bits wide."""
    @intrinsic
    def op(typingctx, a, b):
        if not all(isinstance(t, (types.Integer, types.Boolean)) for t in (a, b)):
            return None

        def codegen(context, builder, signature, args):
            x, y = (context.cast(builder, v, t, types.int32)
                    for v, t in zip(args, signature.args))
            return getattr(builder, name)(x, y)

        return types.int32(a, b), codegen
    return op


_and, _or, _add, _sub = (_int32_op(n) for n in ("and_", "or_", "add", "sub"))
_shl, _shr = _int32_op("shl"), _int32_op("lshr")


@njit(inline="always")
def h2f_sw(h):
    """float16 bits -> float32, exact. The magnitude's bits shifted into float32's place read
    as a float32 2**112 too small (float16's subnormals as float32 subnormals), so one exact
    multiplication rebiases normals and subnormals alike; infinities and NaN (exponent all
    ones) get float32's all-ones exponent instead, keeping the payload."""
    b = _I(h)
    mag = _shl(_and(b, 0x7FFF), 13)
    scaled = f32_bits(bits_to_f32(mag) * _TWO_112)
    bits = scaled if mag < _H_INF_SHIFTED else _or(mag, _F32_INF)
    return bits_to_f32(_or(bits, _shl(_and(b, 0x8000), 16)))


@njit(inline="always")
def round16_sw(x):
    """float32 -> the nearest float16 value (ties to even), as a float32. Adding and taking
    away ``m = 2**(e + 13)`` (``e`` the exponent of ``x``) leaves 11 significant bits, rounded
    by the FPU's own round-to-nearest-even; ``m`` at least 0.5 makes the step 2**-24 below
    float16's normals, its subnormal spacing. From 65520 up the result is inf; NaN stays NaN."""
    a = _and(f32_bits(x), 0x7FFFFFFF)
    m = bits_to_f32(max(_add(_and(a, _F32_INF), 13 << 23), _F32_HALF))
    ax = abs(x)
    r = (ax + m) - m
    r = r if a < _F32_OVERFLOW16 else ax * _INF     # inf * inf = inf, NaN * inf = NaN
    return np.float32(np.copysign(r, x))


@njit(inline="always")
def f2h_sw(x):
    """float32 -> float16 bits (round to nearest even)."""
    u = f32_bits(x)
    a = _and(u, 0x7FFFFFFF)
    # normals: rebias the exponent, drop 13 mantissa bits rounding to even; a carry out of the
    # mantissa correctly bumps the exponent
    normal = _shr(_add(_sub(a, (112 << 23) - 0xFFF), _and(_shr(a, 13), 1)), 13)
    # subnormals: 0.5 + |x| rounds |x| to a multiple of 2**-24 (ulp(0.5)); the bits above
    # 0.5's are the float16 subnormal's
    small = _sub(f32_bits(bits_to_f32(a) + _HALF), _F32_HALF)
    payload = _and(_shr(a, 13), 0x3FF)
    nan = _or(_or(_H_INF, payload), payload == _ZERO)
    r = (small if a < _F32_MIN_NORMAL16 else normal if a < _F32_OVERFLOW16
         else _H_INF if a <= _F32_INF else nan)
    return np.uint16(_or(r, _and(_shr(u, 16), 0x8000)))


def _has_f16c(context) -> bool:
    """Whether the machine code being generated is for a CPU with half <-> float conversion
    instructions: x86-64 with F16C, and every 64-bit Arm."""
    triple, _, features = context.codegen().magic_tuple()
    return "+f16c" in features.split(",") or triple.startswith(("aarch64", "arm64"))


@intrinsic
def h2f(typingctx, h):
    """float16 bits -> float32: ``fpext`` of the bits as LLVM's half, or ``h2f_sw``."""
    if h != types.uint16:
        return None
    sig = types.float32(types.uint16)

    def codegen(context, builder, signature, args):
        if _has_f16c(context):
            return builder.fpext(builder.bitcast(args[0], llvm_ir.HalfType()),
                                 llvm_ir.FloatType())
        return context.compile_internal(builder, h2f_sw.py_func, signature, args)

    return sig, codegen


@intrinsic
def f2h(typingctx, x):
    """float32 -> float16 bits: ``fptrunc`` to LLVM's half (round to nearest even), or
    ``f2h_sw``."""
    if x != types.float32:
        return None
    sig = types.uint16(types.float32)

    def codegen(context, builder, signature, args):
        if _has_f16c(context):
            half = builder.fptrunc(args[0], llvm_ir.HalfType())
            return builder.bitcast(half, llvm_ir.IntType(16))
        return context.compile_internal(builder, f2h_sw.py_func, signature, args)

    return sig, codegen


@intrinsic
def round16(typingctx, x):
    """float32 -> the nearest float16 value as a float32: there and back through LLVM's half,
    or ``round16_sw``."""
    if x != types.float32:
        return None
    sig = types.float32(types.float32)

    def codegen(context, builder, signature, args):
        if _has_f16c(context):
            half = builder.fptrunc(args[0], llvm_ir.HalfType())
            return builder.fpext(half, llvm_ir.FloatType())
        return context.compile_internal(builder, round16_sw.py_func, signature, args)

    return sig, codegen


@njit(inline="always")
def d2h(x):
    """float64 -> float16 bits (round to nearest even), straight from the float64's bits:
    no intermediate float32 rounding."""
    u = f64_bits(x)
    sign = (u >> 48) & 0x8000
    a = u & 0x7FFFFFFFFFFFFFFF
    normal = (a - ((1023 - 15) << 52) + ((1 << 41) - 1) + ((a >> 42) & 1)) >> 42
    small = f64_bits(bits_to_f64(a) + _TWO_28) - _TWO_28_BITS
    payload = (a >> 42) & 0x3FF
    nan = 0x7C00 | payload | np.int64(payload == 0)
    r = (small if a < _F64_MIN_NORMAL16 else normal if a < _F64_OVERFLOW16
         else 0x7C00 if a <= _F64_INF else nan)
    return np.uint16(r | sign)


@njit(inline="always")
def round16_64(x):
    """float64 -> the nearest float16 value, rounded once, as a float32."""
    return h2f(d2h(x))


@njit(inline="always")
def round16_64_sw(x):
    return h2f_sw(d2h(x))


@njit
def h2f_matrix(x):
    """A float16 matrix (uint16 bits, any layout) as a new C-contiguous float32 one: a
    matmul's operand for BLAS's sgemm."""
    out = np.empty(x.shape, np.float32)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            out[i, j] = h2f(x[i, j])
    return out


@njit
def h2f_contiguous(x):
    """A C-contiguous float16 array (uint16 bits) as a float32 array of the same shape."""
    flat = x.ravel()
    out = np.empty(flat.size, np.float32)
    for i in range(flat.size):
        out[i] = h2f(flat[i])
    return out.reshape(x.shape)
