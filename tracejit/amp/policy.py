"""Autocast's policy: which IR ops run in the low precision, which in float32.

The table follows PyTorch's autocast op reference (its CUDA and CPU lists) translated to
tracejit's IR, whose ops are lower level than torch's (softmax, layer_norm and the losses are
max, sub, exp, sum, div, log here; a convolution is im2col and one ``matmul``):

``"lower"``
    The contractions: their float32 (or float16) operands are converted to the low dtype and
    the op's result is low precision. Backends accumulate float16 matmuls in float32 and round
    once (codegen/matmul.py; the NumPy tier and the interpreter call NumPy's float16 matmul,
    which accumulates in float32 too), as torch does. This is where the time
    goes, and where halving the bytes pays.
``"float32"``
    Ops whose result loses too much in float16 (large ranges, long sums, division by small
    values): float16 operands are converted up to float32 first, so the op and its result are
    float32. torch's float32 list: exp, expm1, log, log1p, pow, sinh, cosh, tan, asin, acos,
    sum, prod, cumsum, cumprod, reciprocal and rtruediv (``div`` here), and through them
    softmax, log_softmax, logsumexp, the norms and the losses. Linear algebra is on torch's
    CPU float32 list. ``gammaln``/``digamma`` are tracejit's additions (unbounded ranges).
``"promote"`` (every op not in the table)
    Runs in whatever dtype its operands have now. Where operands that shared one dtype now
    differ (a float16 matmul result plus a float32 bias), the narrower ones are converted to
    NumPy's promotion of them (torch's "promote to the widest input type"). A scalar constant
    (``0.5``, the ``0.0`` of a ReLU) takes its partner's dtype instead, as a Python scalar
    would under NEP 50 and in torch; float64 values are never converted down (torch casts only
    float32, "eligible" types, too).

``POLICY`` is a plain dict, op name -> category: read it, or extend it
(``tracejit.amp.POLICY["tanh"] = "float32"``) before ``autocast`` is applied, or pass
overrides per function (``autocast(f, policy={"tanh": "float32"})``). ``autocast`` takes a
copy when it is applied, so a jitted function's cached traces never disagree with it.
"""
from __future__ import annotations

from types import MappingProxyType

from ..ir import OPS

CATEGORIES = ("lower", "float32", "promote")

LOWER = ("matmul",)

FLOAT32 = (
    # exponentials, logarithms and powers: softmax, log_softmax, logsumexp, softplus, losses
    "exp", "expm1", "log", "log1p", "logaddexp", "power",
    # long sums and products: sum, mean, var, norms, cross-entropy's mean
    "reduce_sum", "reduce_prod", "cumsum", "cumprod",
    # division (torch: reciprocal, rtruediv, rsqrt; the normalizations divide)
    "div",
    # large-range elementary and special functions
    "sinh", "cosh", "tan", "arcsin", "arccos", "gammaln", "digamma",
    # linear algebra (torch's CPU list)
    "solve", "triangular_solve", "cholesky", "slogdet", "eigh", "svd", "qr",
)

POLICY: dict[str, str] = {**{name: "lower" for name in LOWER},
                          **{name: "float32" for name in FLOAT32}}

DEFAULT_CATEGORY = "promote"


def resolve(overrides=None) -> MappingProxyType:
    """A frozen copy of ``POLICY`` with ``overrides`` applied, every entry checked: op names
    are the IR's (``tracejit.ir.OPS``), categories one of ``CATEGORIES``."""
    table = dict(POLICY)
    table.update(overrides or {})
    for name, category in table.items():
        if name not in OPS:
            raise ValueError(f"autocast policy: {name!r} is not an IR op; the ops are "
                             f"tracejit.ir.OPS's names, e.g. 'matmul', 'exp', 'reduce_sum'")
        if category not in CATEGORIES:
            raise ValueError(f"autocast policy: {name!r} -> {category!r}; a category is one "
                             f"of {CATEGORIES}")
    return MappingProxyType(table)


def table() -> str:
    """The default policy as text, one line per category (for docs and the REPL)."""
    rows = []
    for category in CATEGORIES[:2]:
        names = sorted(n for n, c in POLICY.items() if c == category)
        rows.append(f"{category:8} {', '.join(names)}")
    rows.append(f"{'promote':8} every other op")
    return "\n".join(rows)
