"""``x[mask]`` with a traced boolean mask, as a Selection: "the elements of ``full`` where
``mask``".

How many elements a traced mask selects is known only when the program runs, and IR shapes are
static, so the selected array itself cannot exist. The idioms real code writes never need its
size, though: elementwise math on the selection (``np.exp(-x[m])``, ``x[m] ** -1.5``), a
reduction of it (``x[m].sum()``, ``.mean()``), and writing it back under the same mask
(``x[m] = f(x[m])``, ``x[m] += 1``). A Selection keeps a full-shape array and the mask, and does
exactly those; the rest (its shape, indexing it, matmul, returning it from the function) is an
error that names the user's line and says to write ``np.where(mask, x, ...)`` instead.

Shapes. The mask's shape is the leading part of x's (NumPy's rule: a row mask selects rows);
``rest`` = x.shape[mask.ndim:] is one selected element's shape, and ``full`` has x's shape. The
array NumPy would make has shape (count, *rest): its axis 0 is the mask's axes of ``full``, its
axis j >= 1 is ``full``'s axis mask.ndim + j - 1. Other operands may broadcast against ``rest``
only; one that reaches axis 0 would pair with the selected elements by position, which depends
on the data, and is an error (as is a selection under another mask).

The filler. ``full`` is ``where(mask, x, x at the first selected position)``: the unselected
positions repeat a value the selection holds, and every elementwise op keeps it so (each
unselected row of ``full`` equals the first selected row). Results at those positions are
dropped (reductions and writes choose with the mask), but a gradient passes through them times
zero, and zero times an infinite derivative is NaN: with 0 as filler, nbody's ``r ** -1.5`` on
the diagonal or ``log(1 - y)`` where y is 1 would poison the whole gradient. An empty selection
has no such value (its filler is x's first row): its results are NumPy's, its gradient may not
be finite.

Equal masks are the same tracer, or the same computation written twice (``x[x > 0] =
x[x > 0] ** 2`` makes two masks): ``ir.passes.cse.same_computation``.
"""
from __future__ import annotations

import math

import numpy as np

from ...ir import dtypes, ops
from ...ir.passes.cse import same_computation
from ..errors import numpy_error, unsupported, user_location
from ..tracer import DeferredOperand, Tracer
from . import reductions
from .arithmetic import multiply, to_bool, true_divide, where
from .lifting import astype, convert, emit, lift, reshape, trace_of
from .rules import dt, has_tracer, normalize_axes, requested_dtype

WHERE_HINT = ("keep the shape and choose with np.where(mask, x, filler) (a filler that does "
              "not change the result, e.g. 0 for a sum), or reduce the selection with "
              ".sum(), .mean(), .prod(), .any(), .all()")
_EXTREMUM_HINT = ("np.max(np.where(mask, x, -np.inf)) (np.min with np.inf, np.argmax of the "
                  "same); NumPy raises on an empty selection, which a compiled program cannot")
_SPREAD_HINT = ("write it with sums: n = np.count_nonzero(mask); m = np.where(mask, x, 0).sum()"
                " / n; var = np.where(mask, (x - m) ** 2, 0).sum() / n")
_HINTS = {"max": _EXTREMUM_HINT, "min": _EXTREMUM_HINT, "argmax": _EXTREMUM_HINT,
          "argmin": _EXTREMUM_HINT, "ptp": _EXTREMUM_HINT, "amax": _EXTREMUM_HINT,
          "amin": _EXTREMUM_HINT, "var": _SPREAD_HINT, "std": _SPREAD_HINT,
          "shape": "count it with np.count_nonzero(mask)",
          "size": "count it with np.count_nonzero(mask)"}


def select(x: Tracer, mask: Tracer) -> Selection:
    """``x[mask]`` (mask: a traced bool array shaped as x's leading axes)."""
    trace = trace_of(x, mask)
    # Snapshots, not views: later writes into x or the mask do not change a selection.
    x, mask = (Tracer(lift(t, trace)._value, trace) for t in (x, mask))
    if mask.shape != x.shape[:mask.ndim]:
        raise numpy_error(IndexError, f"boolean index of shape {mask.shape} does not match the "
                          f"indexed array's shape {x.shape}",
                          "the mask's shape must be the leading part of the array's")
    if x.size == 0:
        return Selection(x, mask)
    rest = x.shape[mask.ndim:]
    first = emit(x._trace, ops.argmax, [reshape(mask, (-1,))], axis=0)
    row = emit(x._trace, ops.take, [reshape(x, (mask.size,) + rest), first], axis=0)
    return Selection(where(rows(mask, len(rest)), x, row), mask)


def rows(mask: Tracer, rank: int) -> Tracer:
    """The mask with ``rank`` trailing axes of 1: it broadcasts against a full-shape array."""
    return reshape(mask, mask.shape + (1,) * rank)


def same_mask(a: Tracer, b: Tracer) -> bool:
    return a is b or (a.shape == b.shape and same_computation(a._value, b._value))


class Selection(DeferredOperand):
    """The elements of ``full`` (a full-shape Tracer) where ``mask``. Not a Tracer, so that no
    code takes it for one and silently computes with the unselected values."""
    __slots__ = ("full", "mask", "loc")

    def __init__(self, full: Tracer, mask: Tracer):
        self.full = full
        self.mask = mask
        self.loc = user_location()

    @property
    def rest(self) -> tuple[int, ...]:
        return self.full.shape[self.mask.ndim:]

    @property
    def dtype(self) -> np.dtype:
        return self.full.dtype

    @property
    def ndim(self) -> int:
        return 1 + len(self.rest)

    def __repr__(self) -> str:
        return f"Selection<{self.full._value.type} where {self.mask._value.type}>"

    # -- errors -------------------------------------------------------------------------------
    def refusal(self, what: str, hint: str = WHERE_HINT) -> Exception:
        made = f" made at {self.loc.long}" if self.loc else ""
        return unsupported(f"{what} (x[mask] is a selection by a traced boolean mask{made}; "
                           "its size depends on the data)", hint)

    def operand_refusal(self) -> Exception:
        """Raised where an array is needed: returned from the function, an operand of an
        operation that reads it as an array (DeferredOperand's contract, rules.operand_error)."""
        return self.refusal("using x[mask] as an array (a result of the function, or an "
                            "operand that reads it whole)")

    def __getattr__(self, name):
        # ndarray's other attributes (.shape, .max(), .reshape, ...): named, with a hint
        if name.startswith("__") or not hasattr(np.ndarray, name):
            raise AttributeError(f"'Selection' object has no attribute {name!r}")
        raise self.refusal(f"x[mask].{name}", _HINTS.get(name, WHERE_HINT))

    def __len__(self):
        raise self.refusal("len(x[mask])", _HINTS["size"])

    def __iter__(self):
        raise self.refusal("iterating over x[mask]")

    def __getitem__(self, key):
        raise self.refusal("indexing x[mask]", "index x first, then mask: x[k][mask[k]], or "
                           + WHERE_HINT)

    def __setitem__(self, key, value):
        raise self.refusal("writing into a part of x[mask]",
                           "write into x under the mask: x[mask] = v")

    def __bool__(self):
        raise self.refusal("bool(x[mask])")

    def __array__(self, dtype=None, copy=None):
        raise self.refusal("np.asarray(x[mask])")

    def __float__(self):
        raise self.refusal("float(x[mask])")

    def __int__(self):
        raise self.refusal("int(x[mask])")

    def __index__(self):
        raise self.refusal("int(x[mask])")

    def __complex__(self):
        raise self.refusal("complex(x[mask])")

    # -- elementwise --------------------------------------------------------------------------
    def _full_operand(self, o, name: str):
        """``o`` as an operand of ``full``: a selection under an equal mask, a scalar, or an
        array that broadcasts against ``rest`` only."""
        if isinstance(o, Selection):
            if not same_mask(self.mask, o.mask):
                raise self.refusal(f"{name} of selections under different masks (their "
                                   "elements would pair by position)")
            if len(o.rest) != len(self.rest):
                raise self.refusal(f"{name} of selections of different ranks (elements of "
                                   "one would pair with the other's selected elements)")
            return o.full
        if isinstance(o, (bool, int, float, np.generic)):
            return o
        if isinstance(o, (list, tuple)):
            o = lift(o, self.full._trace) if has_tracer(o) else np.asarray(o)
        if not isinstance(o, (Tracer, np.ndarray)):
            raise unsupported(f"{name} of x[mask] and an operand of type {type(o).__name__}",
                              "pass NumPy arrays, Python numbers or traced values")
        shape = o.shape
        while len(shape) > len(self.rest) and shape[0] == 1:
            shape = shape[1:]
        if len(shape) > len(self.rest):
            raise self.refusal(f"{name} of x[mask] and an array of shape {o.shape} (it would "
                               "pair with the selected elements by position)",
                               "an array may broadcast against one selected element (shape "
                               f"{self.rest}); otherwise " + WHERE_HINT)
        if shape == o.shape:
            return o
        return reshape(o, shape) if isinstance(o, Tracer) else o.reshape(shape)

    def _apply(self, ufunc, inputs, kwargs=None):
        name = f"np.{ufunc.__name__}"
        if ufunc.signature is not None:       # matmul, vecdot: pair elements with each other
            raise self.refusal(f"{name} of x[mask]")
        out = ufunc(*(self._full_operand(x, name) for x in inputs), **(kwargs or {}))
        if isinstance(out, tuple):
            return tuple(Selection(o, self.mask) for o in out)
        return Selection(out, self.mask)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        name = f"np.{ufunc.__name__}"
        if method != "__call__":
            raise self.refusal(f"{name}.{method} of x[mask]",
                               "reduce with x[mask].sum() and its kin, or " + WHERE_HINT)
        extra = sorted(set(kwargs) - {"dtype"})
        if extra:
            raise self.refusal(f"{name} of x[mask] with {extra}", "call it without them")
        return self._apply(ufunc, inputs, kwargs)

    def astype(self, dtype, copy=True):
        return Selection(astype(self.full, dtype), self.mask)

    def copy(self, order="C"):
        return Selection(self.full.copy(), self.mask)

    def __matmul__(self, o):
        raise self.refusal("x[mask] @ y (matmul)")

    __rmatmul__ = __matmul__

    # -- reductions ---------------------------------------------------------------------------
    def sum(self, axis=None, dtype=None, out=None, keepdims=False):
        return self.reduce("sum", axis, dtype, out, keepdims)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False):
        return self.reduce("prod", axis, dtype, out, keepdims)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False):
        return self.reduce("mean", axis, dtype, out, keepdims)

    def any(self, axis=None, out=None, keepdims=False):
        return self.reduce("any", axis, None, out, keepdims)

    def all(self, axis=None, out=None, keepdims=False):
        return self.reduce("all", axis, None, out, keepdims)

    def reduce(self, kind: str, axis, dtype, out, keepdims):
        """A reduction over the selected array's ``axis``: with its axis 0 (the selected
        elements), a Tracer; over the other axes only, a Selection under the same mask."""
        if out is not None:
            raise self.refusal(f"x[mask].{kind}(out=...)", "assign the result instead")
        axes = normalize_axes(axis, self.ndim)
        m = self.mask.ndim
        inner = tuple(m + j - 1 for j in axes if j > 0)
        if 0 not in axes:
            return Selection(_REDUCE[kind](self.full, inner, keepdims, dtype), self.mask)
        inner = tuple(range(m)) + inner
        if kind == "mean":
            value = self._masked_mean(axes, inner, dtype)
        else:
            value = _REDUCE[kind](self._masked(kind), inner, False, dtype)
        if keepdims:
            value = reshape(value, [1] + [1 if j in axes else n
                                          for j, n in enumerate(self.rest, 1)])
        return value

    def _masked(self, kind: str) -> Tracer:
        """``full`` with the reduction's identity at the unselected positions."""
        x = self.full if kind in ("sum", "prod") else to_bool(self.full)
        identity = np.ones((), x.dtype) if kind in ("prod", "all") else np.zeros((), x.dtype)
        return where(rows(self.mask, len(self.rest)), x, identity)

    def _masked_mean(self, axes, inner, dtype) -> Tracer:
        """The sum over the selection, divided by the count (np.sum(mask) times the other
        reduced axes' sizes), in NumPy's dtype for mean: 0 / 0 is NaN for an empty one."""
        d = requested_dtype(dtype) if dtype is not None else (
            dt(self.full) if dt(self.full).is_float else dtypes.float64)
        x = convert(self.full, d)
        total = reductions.sum(where(rows(self.mask, len(self.rest)), x, np.zeros((), d.np)),
                               inner, False, d)
        count = reductions.sum(self.mask)
        per = math.prod(n for j, n in enumerate(self.rest, 1) if j in axes)
        if per != 1:
            count = multiply(count, np.int64(per))
        return true_divide(total, convert(count, d))

    def __array_function__(self, func, types, args, kwargs):
        handler = _FUNCTIONS.get(func)
        name = f"np.{func.__name__}"
        if handler is None or not args or args[0] is not self:
            raise self.refusal(f"{name} of x[mask]", _HINTS.get(func.__name__, WHERE_HINT))
        return handler(*args, **kwargs)


def _binary(ufunc):
    def op(self, o):
        return self._apply(ufunc, (self, o))

    def reflected(self, o):
        return self._apply(ufunc, (o, self))
    return op, reflected


def _unary(ufunc):
    return lambda self: self._apply(ufunc, (self,))


for _name, _ufunc in [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                      ("truediv", np.true_divide), ("floordiv", np.floor_divide),
                      ("mod", np.remainder), ("pow", np.power), ("and", np.bitwise_and),
                      ("or", np.bitwise_or), ("xor", np.bitwise_xor), ("divmod", np.divmod)]:
    _op, _reflected = _binary(_ufunc)
    setattr(Selection, f"__{_name}__", _op)
    setattr(Selection, f"__r{_name}__", _reflected)
def _in_place(ufunc, symbol: str):
    """``x[mask] op= y``: Python computes ``x[mask] op y`` into NumPy's copy of the selected
    elements, cast back as a ufunc's ``out`` is (same_kind: ``x[mask] += 1.5`` of an int x
    raises, as in NumPy), then writes it under the mask."""
    def op(self, o):
        out = self._apply(ufunc, (self, o))
        if not np.can_cast(out.dtype, self.dtype, "same_kind"):
            raise numpy_error(TypeError, f"Cannot cast ufunc '{ufunc.__name__}' output from "
                              f"dtype('{out.dtype}') to dtype('{self.dtype}') with casting "
                              "rule 'same_kind'", f"convert explicitly: x[mask] = (x[mask] "
                              f"{symbol} y).astype(np.{self.dtype})")
        return out if out.dtype == self.dtype else out.astype(self.dtype)
    return op


for _name, _ufunc, _symbol in [("add", np.add, "+"), ("sub", np.subtract, "-"),
                               ("mul", np.multiply, "*"), ("truediv", np.true_divide, "/"),
                               ("floordiv", np.floor_divide, "//"), ("mod", np.remainder, "%"),
                               ("pow", np.power, "**"), ("and", np.bitwise_and, "&"),
                               ("or", np.bitwise_or, "|"), ("xor", np.bitwise_xor, "^")]:
    setattr(Selection, f"__i{_name}__", _in_place(_ufunc, _symbol))
for _name, _ufunc in [("lt", np.less), ("le", np.less_equal), ("gt", np.greater),
                      ("ge", np.greater_equal), ("eq", np.equal), ("ne", np.not_equal)]:
    setattr(Selection, f"__{_name}__", _binary(_ufunc)[0])
for _name, _ufunc in [("neg", np.negative), ("pos", np.positive), ("abs", np.absolute),
                      ("invert", np.invert)]:
    setattr(Selection, f"__{_name}__", _unary(_ufunc))
Selection.__hash__ = None
del _name, _ufunc, _op, _reflected, _symbol

_REDUCE = {
    "sum": reductions.sum, "prod": reductions.prod, "mean": reductions.mean,
    "any": lambda x, axes, keepdims, dtype: reductions.any(x, axes, keepdims),
    "all": lambda x, axes, keepdims, dtype: reductions.all(x, axes, keepdims),
    "count_nonzero": lambda x, axes, keepdims, dtype: reductions.count_nonzero(
        x, axes, keepdims=keepdims),
}


def _numpy_reduction(kind: str, takes_dtype: bool = True):
    """np.sum(sel, ...) and its kin: NumPy's signature, refusing initial= and where=."""
    def call(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
        given = sorted(k for k, v in kw.items() if v is not np._NoValue and v is not None)
        if given:
            raise a.refusal(f"np.{kind} of x[mask] with {given}", "call it without them")
        return a.reduce(kind, axis, dtype, out, keepdims)

    def logical(a, axis=None, out=None, keepdims=False, **kw):
        return call(a, axis, None, out, keepdims, **kw)
    return call if takes_dtype else logical


_FUNCTIONS = {
    np.sum: _numpy_reduction("sum"), np.prod: _numpy_reduction("prod"),
    np.mean: _numpy_reduction("mean"), np.any: _numpy_reduction("any", False),
    np.all: _numpy_reduction("all", False),
    np.count_nonzero: lambda a, axis=None, *, keepdims=False: a.reduce(
        "count_nonzero", axis, None, None, keepdims),
}
