"""The scalar expression of each op inside a CUDA kernel: the CPU kernels' rule
(codegen/emitters.py ``@emit``) wherever it is valid on the device, else the override here.

Overridden: every transcendental and rounding op (devicelib.py says why the CPU spellings do
not run on the device or in the simulator), ``logaddexp``, and ``+ - *`` (the CPU's int64
ones are LLVM intrinsics). Ops with no device rule
(``gammaln``, ``digamma``: SciPy's algorithms in mathlib; integer ``power``: runtime.ipow is
not inlined, and a called Numba function needs a driver to compile) make their group run on
the CPU, with a note (placement.py).
"""
from __future__ import annotations

from ...ir import ops
from .. import emitters
from ..representation import lit, scalar_type
from .devicelib import SIMULATED, call

NO_DEVICE_RULE = {ops.gammaln: "SciPy's gammaln is compiled for the CPU only",
                  ops.digamma: "SciPy's digamma is compiled for the CPU only"}

_UNARY = {ops.exp: "exp", ops.expm1: "expm1", ops.log: "log", ops.log1p: "log1p",
          ops.sin: "sin", ops.cos: "cos", ops.tan: "tan", ops.tanh: "tanh", ops.sinh: "sinh",
          ops.cosh: "cosh", ops.arcsin: "asin", ops.arccos: "acos", ops.arctan: "atan",
          ops.arcsinh: "asinh", ops.arctanh: "atanh", ops.erf: "erf", ops.sqrt: "sqrt",
          ops.floor: "floor", ops.ceil: "ceil", ops.round: "rint"}
_BINARY = {ops.arctan2: "atan2", ops.hypot: "hypot", ops.copysign: "copysign"}

RULES: dict = {}


def _t(op):
    return op.results[0].dtype


def _unary(op, a):
    return f"{scalar_type(_t(op))}({call(_UNARY[op.opdef], a)})"


def _binary(op, a, b):
    return f"{scalar_type(_t(op))}({call(_BINARY[op.opdef], a, b)})"


def _logistic(op, a):
    t = _t(op)
    return f"({lit(t, 1)} / ({lit(t, 1)} + {scalar_type(t)}({call('exp', '-' + a)})))"


def _logaddexp(op, a, b):
    """NumPy's npy_logaddexp: exact at equal operands (infinities too), NaN-propagating."""
    t = _t(op)
    tail = f"{scalar_type(t)}({call('log1p', scalar_type(t) + '(' + call('exp', f'-abs({a} - {b})') + ')')})"
    return (f"(({a} + {lit(t, 0.6931471805599453)}) if {a} == {b} else "
            f"(({a} if {a} > {b} else {b}) + {tail}))")


def _fmod(op, a, b):
    if _t(op).is_float:
        return f"{scalar_type(_t(op))}({call('fmod', a, b)})"
    return emitters.RULES[ops.fmod][1](op, a, b)


def _sign(op, a):
    """Integers: the CPU rule subtracts two bools, which NumPy's bool (the simulator) refuses."""
    if _t(op).is_float:
        return emitters.RULES[ops.sign][1](op, a)
    return f"{scalar_type(_t(op))}((1 if {a} > 0 else 0) - (1 if {a} < 0 else 0))"


def _convert(op, a):
    """float -> a narrow integer: the CPU rule narrows f2i32/f2i64's result (np.int8(...)),
    which under the simulator is a Python int, and NumPy refuses a Python int out of the
    dtype's range (OverflowError for NaN, inf, 300.0 -> int8) where the device wraps it as
    C does: make it a NumPy int32/int64 first, which np.int8 wraps on both targets."""
    src, dst = op.operands[0].dtype, op.results[0].dtype
    if src.is_float and dst.is_int and dst.bits < 64:
        wide, helper = ("int64", "f2i64") if dst.name == "uint32" else ("int32", "f2i32")
        inner = f"np.{wide}({helper}({a}))"
        return inner if dst.name == "int32" else f"{scalar_type(dst)}({inner})"
    return emitters.RULES[ops.convert][1](op, a)


RULES.update({od: _unary for od in _UNARY})
RULES.update({od: _binary for od in _BINARY})
RULES[ops.convert] = _convert
def _operator(symbol):
    """+ - * as Python's operators: the CPU rules' int64 wrapping helpers (runtime.wadd...)
    are LLVM intrinsics that the simulator cannot run. A float product on the device is
    libdevice's mul_rn: a plain ``mul.f32`` lets ptxas fuse it with the add or sub reading it
    (fma, its default), skipping the product's rounding as NumPy never does (softmax's
    exp(z - z.max()) with z = a * b was not 1 at the maximum; architecture.md, fma)."""
    def rule(op, a, b):
        t = op.results[0].dtype
        if symbol == "*" and t.name in ("float32", "float64") and not SIMULATED:
            return f"libdevice.{'f' if t.name == 'float32' else 'd'}mul_rn({a}, {b})"
        if t.name == "int64" and not SIMULATED:
            # Numba's CUDA target marks signed + - * nsw (never overflowing), and NVVM folded
            # int64 (x + 1) > x to True where NumPy wraps: computed in uint64 (no flags, the
            # same bits), as the CPU kernels' runtime.wadd do. (Narrower ints compute in
            # int64, where they cannot overflow; the simulator's NumPy scalars wrap.)
            return f"int64(uint64({a}) {symbol} uint64({b}))"
        return emitters.wrapped(op, f"{a} {symbol} {b}")
    return rule


RULES.update({ops.logistic: _logistic, ops.fmod: _fmod, ops.logaddexp: _logaddexp,
              ops.sign: _sign, ops.add: _operator("+"), ops.sub: _operator("-"),
              ops.mul: _operator("*")})


def device_rule_missing(op) -> str | None:
    """Why ``op`` has no device rule, or None."""
    if op.opdef in NO_DEVICE_RULE:
        return NO_DEVICE_RULE[op.opdef]
    if op.opdef is ops.power and not op.results[0].dtype.is_float:
        return "integer power (runtime.ipow) is compiled for the CPU only"
    return None


def scalar_rule(opdef):
    """The device rule of an elementwise op (valid where device_rule_missing is None)."""
    if opdef in RULES:
        return RULES[opdef]
    kind, rule = emitters.RULES[opdef]
    assert kind == "scalar", opdef
    return rule
