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

Scalar rules write code of the result's *compute* dtype (representation.py): float32 for a
float16 result. ``scalar_expr`` then rounds to float16 what a rule computed in float32,
except for ops whose result is exact when their operands are (``EXACT``) and those that round
for themselves (``ROUNDS_ITSELF``).
"""
from __future__ import annotations

from ..ir import ops
from .representation import compute_dtype, held, lit, rounded, rounded_from64, scalar_type

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


def wrapped(op, expr):
    """int32 arithmetic in Numba widens to int64: cast back, which wraps like NumPy."""
    dt = op.results[0].dtype
    return f"{scalar_type(dt)}({expr})" if dt.is_int and dt.name != "int64" else f"({expr})"


def _t(op):
    """The dtype a rule computes the result in (float32 for float16)."""
    return compute_dtype(op.results[0].dtype)


def scalar_expr(op, *args, half: bool = False) -> str:
    """The scalar rule's expression of ``op`` on its operands' names, rounded to the result's
    dtype where kernels compute it in another (float16: see the module docstring). ``half``:
    the float32 result is only rounded to a 16-bit float later (kernel.half_accurate)."""
    t = op.results[0].dtype
    if (op.opdef in HALF_ACCURATE and compute_dtype(t).name == "float32"
            and (half or held(t) is not None)):
        expr = f"{HALF_ACCURATE[op.opdef]}({args[0]})"
    else:
        expr = RULES[op.opdef][1](op, *args)
    if held(t) is None or op.opdef in EXACT or op.opdef in ROUNDS_ITSELF:
        return expr
    return rounded(t, expr)


# -- arithmetic ------------------------------------------------------------------------------
def _int64(op, fn: str, a, b):
    """int64 + - * through runtime's wrapping helpers (Numba's own may not wrap), else None."""
    return f"{fn}({a}, {b})" if op.results[0].dtype.name == "int64" else None


@emit(ops.add)
def _(op, a, b):
    return _int64(op, "wadd", a, b) or wrapped(op, f"{a} + {b}")


@emit(ops.sub)
def _(op, a, b):
    return _int64(op, "wsub", a, b) or wrapped(op, f"{a} - {b}")


@emit(ops.mul)
def _(op, a, b):
    return _int64(op, "wmul", a, b) or wrapped(op, f"{a} * {b}")


@emit(ops.div)
def _(op, a, b):
    return f"({a} / {b})"


@emit(ops.floor_divide)
def _(op, a, b):
    return f"({a} // {b})" if _t(op).is_float else wrapped(op, f"ifloordiv({a}, {b})")


@emit(ops.remainder)
def _(op, a, b):
    return f"({a} % {b})" if _t(op).is_float else wrapped(op, f"iremainder({a}, {b})")


@emit(ops.power)
def _(op, a, b):
    if _t(op).is_float:
        return f"{scalar_type(_t(op))}({a} ** {b})"
    return wrapped(op, f"ipow({a}, {b})")


@emit(ops.neg)
def _(op, a):
    return wrapped(op, f"-{a}")


@emit(ops.abs)
def _(op, a):
    return wrapped(op, f"abs({a})")


@emit(ops.sign)
def _(op, a):
    t = _t(op)
    if t.is_float:
        # NumPy's sign of -0.0 is +0.0
        return (f"({a} if {a} != {a} else ({lit(t, 1)} if {a} > 0 else "
                f"({lit(t, -1)} if {a} < 0 else {lit(t, 0)})))")
    return wrapped(op, f"({a} > 0) - ({a} < 0)")


@emit(ops.relu)
def _(op, a):
    return f"({lit(_t(op), 0)} if {a} <= 0 else {a})"        # NaN <= 0 is False: NaN stays


@emit(ops.maximum)
def _(op, a, b):
    nan = f" or {a} != {a}" if _t(op).is_float else ""
    return f"({a} if ({a} >= {b}{nan}) else {b})"


@emit(ops.minimum)
def _(op, a, b):
    nan = f" or {a} != {a}" if _t(op).is_float else ""
    return f"({a} if ({a} <= {b}{nan}) else {b})"


# -- transcendentals: vectorizable float32 versions from mathlib (and float64 exp and log),
# libm for the other float64 ones -------------------------------------------------------------
_FAST32 = {ops.exp: "exp32", ops.tanh: "tanh32", ops.logistic: "logistic32", ops.sin: "sin32",
           ops.cos: "cos32", ops.log: "log32", ops.log1p: "log1p32", ops.arctan: "arctan32"}
_FAST32_BINARY = {ops.arctan2: "arctan2_32"}
_FAST64 = {ops.exp: "exp64", ops.log: "log64"}
# Cheaper versions where a 16-bit float's accuracy is all a result needs (half_accurate.py)
HALF_ACCURATE = {ops.tanh: "tanh16", ops.exp: "exp16"}
_LIBM = {ops.exp: "exp", ops.expm1: "expm1", ops.log: "log", ops.log1p: "log1p",
         ops.sin: "sin", ops.cos: "cos", ops.tan: "tan", ops.tanh: "tanh", ops.sinh: "sinh",
         ops.cosh: "cosh", ops.arcsin: "asin", ops.arccos: "acos", ops.arctan: "atan",
         ops.arcsinh: "asinh", ops.arctanh: "atanh", ops.erf: "erf"}


@emit(*_LIBM, ops.logistic)
def _(op, a):
    t = _t(op)
    if t.name == "float32" and op.opdef in _FAST32:
        return f"{_FAST32[op.opdef]}({a})"
    if t.name == "float64" and op.opdef in _FAST64:
        return f"{_FAST64[op.opdef]}({a})"
    if op.opdef is ops.logistic:
        e = f"exp64(-{a})" if t.name == "float64" else f"{scalar_type(t)}(math.exp(-{a}))"
        return f"({lit(t, 1)} / ({lit(t, 1)} + {e}))"
    return f"{scalar_type(t)}(math.{_LIBM[op.opdef]}({a}))"


@emit(ops.sqrt, ops.floor, ops.ceil, ops.round)
def _(op, a):
    fn = {ops.sqrt: "sqrt", ops.floor: "floor", ops.ceil: "ceil", ops.round: "rint"}[op.opdef]
    return f"{scalar_type(_t(op))}(np.{fn}({a}))"


@emit(ops.arctan2, ops.hypot, ops.copysign)
def _(op, a, b):
    if _t(op).name == "float32" and op.opdef in _FAST32_BINARY:
        return f"{_FAST32_BINARY[op.opdef]}({a}, {b})"
    fn = {ops.arctan2: "atan2", ops.hypot: "hypot", ops.copysign: "copysign"}[op.opdef]
    return f"{scalar_type(_t(op))}(math.{fn}({a}, {b}))"


@emit(ops.gammaln, ops.digamma)
def _(op, a):
    """SciPy's algorithms in float64 (mathlib.py); float32 rounds the result, as SciPy does."""
    fn = "gammaln64" if op.opdef is ops.gammaln else "digamma64"
    t = op.results[0].dtype
    return f"{fn}({a})" if t.name == "float64" else rounded_from64(t, f"{fn}(np.float64({a}))")


@emit(ops.logaddexp)
def _(op, a, b):
    return f"logaddexp{'32' if _t(op).name == 'float32' else '64'}({a}, {b})"


@emit(ops.fmod)
def _(op, a, b):
    return f"{scalar_type(_t(op))}(np.fmod({a}, {b}))" if _t(op).is_float else wrapped(
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
    return f"bool({expr})" if _t(op).is_bool else wrapped(op, expr)


@emit(ops.logical_not)
def _(op, a):
    return f"(not {a})"


@emit(ops.where)
def _(op, c, a, b):
    return f"({a} if {c} else {b})"


@emit(ops.convert)
def _(op, a):
    """Operands arrive in their compute dtype; a float16 result is rounded here, once: from
    float64 directly (half.round16_64), from float32 and the narrow integers through
    float32. A 32- or 64-bit integer float32 cannot hold exactly goes through float64 (exact,
    or rounded to 53 bits, which rounding to 8 or 11 then leaves right): beyond float16's
    range anyway, but not bfloat16's, where float32 rounded twice (2**24 + 3 * 2**16 + 1)."""
    src, dst = op.operands[0].dtype, op.results[0].dtype
    if dst.is_bool:
        return f"({a} != 0)"
    if held(dst) is not None and src != dst:
        if src.name == "float64":
            return rounded_from64(dst, a)
        if src.is_int and src.bits >= 32:
            return rounded_from64(dst, f"np.float64({a})")
        return f"{scalar_type(dst)}({a})" if src.is_bool else rounded(
            dst, f"{scalar_type(dst)}({a})")
    if src.is_float and dst.is_int:
        return _FLOAT_TO_INT[dst.name].format(a)
    return f"{scalar_type(dst)}({a})"


# float -> int as NumPy on x86 (see runtime.py): the narrow ones through int32, as C does;
# out-of-range values are undefined in NumPy, but never LLVM's poison here
_FLOAT_TO_INT = {"int64": "f2i64({})", "int32": "f2i32({})", "int16": "np.int16(f2i32({}))",
                 "int8": "np.int8(f2i32({}))", "uint8": "np.uint8(f2i32({}))",
                 "uint16": "np.uint16(f2i32({}))", "uint32": "np.uint32(f2i64({}))",
                 "uint64": "f2u64({})"}


def iota_expr(op, idx: tuple) -> str:
    return rounded(op.results[0].dtype, f"{scalar_type(_t(op))}({idx[op.attrs['dim']]})")


# Results exact whenever the operands are values of the result dtype: a float16 kernel does
# not round them. ROUNDS_ITSELF: rules that round a float16 result themselves.
EXACT = frozenset({ops.neg, ops.abs, ops.sign, ops.maximum, ops.minimum, ops.relu, ops.where,
                   ops.floor,
                   ops.ceil, ops.round, ops.copysign, ops.fmod})
ROUNDS_ITSELF = frozenset({ops.convert, ops.gammaln, ops.digamma})


register("scalar", ops.iota)(iota_expr)
