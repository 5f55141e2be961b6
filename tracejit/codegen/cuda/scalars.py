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
from .devicelib import call

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


RULES.update({od: _unary for od in _UNARY})
RULES.update({od: _binary for od in _BINARY})
def _operator(symbol):
    """+ - * as Python's operators: the CPU rules' int64 wrapping helpers (runtime.wadd...)
    are LLVM intrinsics that the simulator cannot run."""
    def rule(op, a, b):
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
