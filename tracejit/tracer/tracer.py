"""Tracer: the stand-in for an array during tracing. Every operation on it appends IR.

Python operators and array methods live here; NumPy functions reach it through
``__array_ufunc__`` and ``__array_function__``. What they compute is the NumPy layer's
(tracejit/tracer/numpy/), which imports this module; Tracer reaches it through the table in
``_numpy`` (see ``use_numpy_layer``), so imports run one way, from that layer to this module.
"""
from __future__ import annotations

import types

import numpy as np

from ..ir import Value
from .errors import (ConcretizationError, ConcretizationTypeError, array_conversion_error,
                     unsupported, user_location)
from .trace_state import Trace

# The NumPy layer's functions that Tracer's operators, methods and NumPy protocols call, by
# name (add, reshape, sum, getitem, handle_ufunc, ...): numpy/dispatch.py's TRACER_METHODS,
# handed over by tracejit/tracer/__init__.py before any Tracer exists.
_numpy = types.SimpleNamespace()


def use_numpy_layer(methods: dict) -> None:
    """Connect Tracer to the functions it dispatches to (called once, by tracejit.tracer)."""
    vars(_numpy).update(methods)


class Tracer:
    __slots__ = ("_value", "_trace", "_weak", "_loc", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, value: Value, trace: Trace, weak: bool = False):
        self._value = value
        self._trace = trace
        self._weak = weak          # a Python scalar: takes its partner's dtype (NEP 50)
        self._loc = user_location()

    # -- static facts -------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._value.type.shape

    @property
    def dtype(self) -> np.dtype:
        return self._value.type.dtype.np

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return self._value.type.size

    @property
    def T(self):
        return _numpy.transpose(self)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d traced array")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d traced array")
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self) -> str:
        return f"Tracer<{self._value.type}{' weak' if self._weak else ''}>"

    # -- concreteness errors ------------------------------------------------------------------
    def __bool__(self):
        raise ConcretizationTypeError("Using a traced value as a condition (if, while, "
                                      "and/or, bool())", user_location())

    def __float__(self):
        raise ConcretizationTypeError("float() of a traced value", user_location())

    def __int__(self):
        raise ConcretizationTypeError("int() of a traced value", user_location())

    def __index__(self):
        # Not a TypeError: NumPy would swallow that and raise its own, naming nothing.
        raise ConcretizationError("Using a traced value as a Python int (a shape, size, "
                                  "slice bound or range)", user_location())

    def __complex__(self):
        raise ConcretizationTypeError("complex() of a traced value", user_location())

    def __array__(self, dtype=None, copy=None):
        raise array_conversion_error()

    def tolist(self):
        self.__array__()

    def item(self, *args):
        raise ConcretizationTypeError(".item() of a traced value", user_location())

    def __hash__(self):
        raise TypeError("traced values are unhashable (they have no value yet)")

    def __setitem__(self, key, value):
        raise unsupported("in-place assignment to a traced array (x[i] = v)",
                          "build the new array functionally, for example with "
                          "np.where(mask, v, x) or np.concatenate.")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _numpy.handle_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return _numpy.handle_function(func, args, kwargs)

    # -- operators ----------------------------------------------------------------------------
    def __add__(self, o): return _numpy.add(self, o)
    def __radd__(self, o): return _numpy.add(o, self)
    def __sub__(self, o): return _numpy.subtract(self, o)
    def __rsub__(self, o): return _numpy.subtract(o, self)
    def __mul__(self, o): return _numpy.multiply(self, o)
    def __rmul__(self, o): return _numpy.multiply(o, self)
    def __truediv__(self, o): return _numpy.true_divide(self, o)
    def __rtruediv__(self, o): return _numpy.true_divide(o, self)
    def __floordiv__(self, o): return _numpy.floor_divide(self, o)
    def __rfloordiv__(self, o): return _numpy.floor_divide(o, self)
    def __mod__(self, o): return _numpy.remainder(self, o)
    def __rmod__(self, o): return _numpy.remainder(o, self)
    def __pow__(self, o): return _numpy.power(self, o)
    def __rpow__(self, o): return _numpy.power(o, self)
    def __matmul__(self, o): return _numpy.matmul(self, o)
    def __rmatmul__(self, o): return _numpy.matmul(o, self)
    def __and__(self, o): return _numpy.bitwise_and(self, o)
    def __rand__(self, o): return _numpy.bitwise_and(o, self)
    def __or__(self, o): return _numpy.bitwise_or(self, o)
    def __ror__(self, o): return _numpy.bitwise_or(o, self)
    def __xor__(self, o): return _numpy.bitwise_xor(self, o)
    def __rxor__(self, o): return _numpy.bitwise_xor(o, self)
    def __neg__(self): return _numpy.negative(self)
    def __pos__(self): return self
    def __abs__(self): return _numpy.absolute(self)
    def __invert__(self): return _numpy.invert(self)
    def __lt__(self, o): return _numpy.less(self, o)
    def __le__(self, o): return _numpy.less_equal(self, o)
    def __gt__(self, o): return _numpy.greater(self, o)
    def __ge__(self, o): return _numpy.greater_equal(self, o)
    def __eq__(self, o): return _numpy.equal(self, o)   # noqa: elementwise, as in NumPy
    def __ne__(self, o): return _numpy.not_equal(self, o)

    # -- in-place operators ---------------------------------------------------------------
    # Without these Python falls back to ``x = x + y``: a silent rebind, so another name for
    # the array, or the caller's argument, would keep the old value. They are refused until
    # mutation is functionalized. A 0-d value computed inside the trace may rebind: eagerly it
    # is a NumPy scalar (``total += x.sum()``), which is immutable, so += rebinds there too.
    def _inplace(self, symbol: str, other, apply):
        if self.ndim == 0 and (self._value.op is not None or self._weak):
            return apply(self, other)
        raise unsupported(
            f"the in-place operator {symbol}= on a traced array",
            f"write x = x {symbol} y: a new array, leaving other names for x and the caller's "
            "argument unchanged (return the new value if the caller needs it).")

    def __iadd__(self, o): return self._inplace("+", o, _numpy.add)
    def __isub__(self, o): return self._inplace("-", o, _numpy.subtract)
    def __imul__(self, o): return self._inplace("*", o, _numpy.multiply)
    def __itruediv__(self, o): return self._inplace("/", o, _numpy.true_divide)
    def __ifloordiv__(self, o): return self._inplace("//", o, _numpy.floor_divide)
    def __imod__(self, o): return self._inplace("%", o, _numpy.remainder)
    def __ipow__(self, o): return self._inplace("**", o, _numpy.power)
    def __imatmul__(self, o): return self._inplace("@", o, _numpy.matmul)
    def __iand__(self, o): return self._inplace("&", o, _numpy.bitwise_and)
    def __ior__(self, o): return self._inplace("|", o, _numpy.bitwise_or)
    def __ixor__(self, o): return self._inplace("^", o, _numpy.bitwise_xor)

    def __getitem__(self, key):
        return _numpy.getitem(self, key)

    # -- array methods ------------------------------------------------------------------------
    def reshape(self, *shape, order="C"):
        if order != "C":
            raise unsupported(f"reshape(order={order!r})", "use the default order='C'")
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return _numpy.reshape(self, shape)

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = axes[0]
        return _numpy.transpose(self, axes or None)

    def astype(self, dtype, copy=True):
        return _numpy.astype(self, dtype)

    # Signatures follow ndarray's, so positional arguments mean what they mean in NumPy.
    def sum(self, axis=None, dtype=None, out=None, keepdims=False):
        _no_out("sum", out)
        return _numpy.sum(self, axis, keepdims, dtype)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False):
        _no_out("prod", out)
        return _numpy.prod(self, axis, keepdims, dtype)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False):
        _no_out("mean", out)
        return _numpy.mean(self, axis, keepdims, dtype)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        _no_out("var", out)
        return _numpy.var(self, axis, keepdims, ddof)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        _no_out("std", out)
        return _numpy.std(self, axis, keepdims, ddof)

    def max(self, axis=None, out=None, keepdims=False):
        _no_out("max", out)
        return _numpy.amax(self, axis, keepdims)

    def min(self, axis=None, out=None, keepdims=False):
        _no_out("min", out)
        return _numpy.amin(self, axis, keepdims)

    def argmax(self, axis=None, out=None, *, keepdims=False):
        _no_out("argmax", out)
        return _numpy.argmax(self, axis, keepdims)

    def argmin(self, axis=None, out=None, *, keepdims=False):
        _no_out("argmin", out)
        return _numpy.argmin(self, axis, keepdims)

    def all(self, axis=None, out=None, keepdims=False):
        _no_out("all", out)
        return _numpy.all(self, axis, keepdims)

    def any(self, axis=None, out=None, keepdims=False):
        _no_out("any", out)
        return _numpy.any(self, axis, keepdims)

    def round(self, decimals=0, out=None):
        _no_out("round", out)
        return np.round(self, decimals)

    def repeat(self, repeats, axis=None):
        return np.repeat(self, repeats, axis)

    def diagonal(self, offset=0, axis1=0, axis2=1):
        return np.diagonal(self, offset, axis1, axis2)

    def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        return np.trace(self, offset, axis1, axis2, dtype, out)

    def ptp(self, axis=None, keepdims=False):
        return np.ptp(self, axis, keepdims=keepdims)

    def conj(self):
        return self

    conjugate = conj

    @property
    def real(self):
        return self

    @property
    def mT(self):
        return _numpy.swapaxes(self, -1, -2)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __divmod__(self, o): return _numpy.floor_divide(self, o), _numpy.remainder(self, o)
    def __rdivmod__(self, o): return _numpy.floor_divide(o, self), _numpy.remainder(o, self)

    def cumsum(self, axis=None, dtype=None, out=None):
        return np.cumsum(self, axis, dtype)

    def cumprod(self, axis=None, dtype=None, out=None):
        return np.cumprod(self, axis)

    def sort(self, axis=-1, kind=None, order=None):
        raise unsupported("x.sort() (in place)", "there is no sort under tracing yet")

    def clip(self, min=None, max=None):
        return _numpy.clip(self, min, max)

    def squeeze(self, axis=None):
        return _numpy.squeeze(self, axis)

    def flatten(self):
        return _numpy.reshape(self, (-1,))

    ravel = flatten

    def copy(self, order="C"):
        # IR values are immutable; a result that is an argument is copied by the program
        return self

    def swapaxes(self, a, b):
        return _numpy.swapaxes(self, a, b)

    def dot(self, other):
        return _numpy.dot(self, other)

    def take(self, indices, axis=None):
        return _numpy.take(self, indices, axis)


def _no_out(name, out):
    if out is not None:
        raise unsupported(f"x.{name}(out=...)", "assign the result instead")
