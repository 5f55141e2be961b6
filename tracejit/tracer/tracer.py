"""Tracer: the stand-in for an array during tracing. Every operation on it appends IR.

Python operators and array methods live here; NumPy functions reach it through
``__array_ufunc__`` and ``__array_function__``. What they compute is the NumPy layer's
(tracejit/tracer/numpy/), which imports this module; Tracer reaches it through the table in
``_numpy`` (see ``use_numpy_layer``), so imports run one way, from that layer to this module.
"""
from __future__ import annotations

import sys
import types

import numpy as np

from ..ir import Value
from .errors import (ConcretizationError, ConcretizationTypeError, UnsupportedError,
                     array_conversion_error, control_flow_hint, index_into_constant_error,
                     numpy_error, store_into_numpy_array_error, unsupported, user_location)
from .trace_state import Trace, check_alive
from .views import is_array_0d, is_scalar_argument, made_as_array, refresh

# The NumPy layer's functions that Tracer's operators, methods and NumPy protocols call, by
# name (add, reshape, sum, getitem, handle_ufunc, ...): numpy/dispatch.py's TRACER_METHODS,
# handed over by tracejit/tracer/__init__.py before any Tracer exists.
_numpy = types.SimpleNamespace()


def use_numpy_layer(methods: dict) -> None:
    """Connect Tracer to the functions it dispatches to (called once, by tracejit.tracer)."""
    vars(_numpy).update(methods)


def _power_operator(a, b):
    """``a ** b``, which NumPy computes differently from np.power for some exponents."""
    return _numpy.power(*_python_ints(a, b), as_operator=True)


def _python_ints(*xs):
    """The operands of a Python arithmetic operator. Where all are Python numbers (a traced
    Python argument is a weak tracer) and one is a bool, Python computes with ints: True +
    True is 2, True - True 0, -True -1, ~True -2, where NumPy's bool rules give True (a
    logical or) or an error. Such bools become the ints 0 and 1, still weak."""
    if not all(type(x) in (bool, int, float) or (isinstance(x, Tracer) and x._weak)
               for x in xs) or not any(_python_bool(x) for x in xs):
        return xs
    return tuple(_numpy.python_int(x) if _python_bool(x) else
                 int(x) if type(x) is bool else x for x in xs)


def _python_bool(x) -> bool:
    return isinstance(x, Tracer) and x._weak and x._val.type.dtype.is_bool


class ShapeAssignmentError(UnsupportedError, AttributeError):
    """``x.shape = ...`` on a traced array. Also an AttributeError, NumPy's error where it
    cannot reshape in place, so code that falls back to reshape on it keeps working."""


class UnsupportedAttributeError(UnsupportedError, AttributeError):
    """An ndarray attribute a traced array does not have (``x.flat``, ``x.put``, ``x.strides``):
    the user's line and what to do, still an AttributeError so ``hasattr`` answers False."""


# What to write instead of ndarray attributes that traced arrays lack, where one thing does.
_ATTRIBUTE_HINTS = {
    "flat": "index x.ravel() (a view of a C-contiguous x, so writes reach x): "
            "x.ravel()[i] = v",
    "strides": "traced arrays have no memory layout yet: use x.shape and x.itemsize",
    "resize": "rebind the name to a new array: x = np.resize(x, shape), or x.reshape(...)",
    "setflags": "leave the array writeable inside the jitted function",
    "nonzero": "use np.where(cond, x, y) to keep the shape (nonzero's size depends on the "
               "data)",
}


class DeferredOperand:
    """Base of the operand types that Tracer's binary operators and NumPy protocols leave to:
    given one, they return NotImplemented, so that Python (or NumPy) calls the operand's own
    method. A boolean-mask selection ``x[mask]`` (numpy/masked.py) is one: ``t * x[mask]``
    means something only the selection knows, and is not a Tracer operand."""
    __slots__ = ()

    def operand_refusal(self) -> Exception:
        """The error where it is taken for an array anyway (lifted into the trace); a kind
        with more to say (masked.Selection) names what to write instead."""
        return TypeError(f"tracejit: a {type(self).__name__} cannot be used as an array here")


# Run on the frame that asks a tracer's len(): tracer/numpy/patches.py refuses NumPy's
# compiled random code there (np.random.shuffle), which cannot be imported here (a cycle).
LEN_CALLER_CHECKS: list = []


class Tracer:
    __slots__ = ("_val", "_trace", "_weak", "_loc", "_view", "_cell", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, value: Value, trace: Trace, weak: bool = False):
        self._val = value
        self._trace = trace
        self._weak = weak          # a Python scalar: takes its partner's dtype (NEP 50)
        self._loc = user_location()
        self._view = None          # views.View: how this array derives from the one it views
        self._cell = None          # views.Cell: the memory shared with its views, once it has

    @property
    def _value(self) -> Value:
        """The IR value this array holds now: a write into memory it shares with other arrays
        (views.py) makes a new value, which a view picks up when it is next read."""
        view = self._view
        if view is not None and view.version != self._cell.version:
            refresh(self)
        return self._val

    def __getattr__(self, name):
        # (reached only for names Tracer lacks)
        if not name.startswith("_") and hasattr(np.ndarray, name):
            refusal = unsupported(f"the ndarray attribute x.{name} on a traced array",
                                  _ATTRIBUTE_HINTS.get(name, "write it with supported "
                                                       "NumPy functions, or open an issue"))
            raise UnsupportedAttributeError(str(refusal))
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    # -- static facts -------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._val.type.shape

    @shape.setter
    def shape(self, shape):
        refusal = unsupported("assigning to x.shape (reshaping an array in place)",
                              f"rebind the name to a reshaped view: x = x.reshape({shape!r}), "
                              "which shares x's memory as the in-place reshape would")
        raise ShapeAssignmentError(str(refusal))

    @property
    def dtype(self) -> np.dtype:
        return self._val.type.dtype.np

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return self._val.type.size

    @property
    def T(self):
        return _numpy.transpose(self)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d traced array")
        for check in LEN_CALLER_CHECKS:
            check(sys._getframe(1))
        return self.shape[0]

    def __contains__(self, value):
        # (without it Python iterates and bool()s each comparison: an error naming if/while)
        raise ConcretizationTypeError("`value in x` of a traced array x (a Python bool)",
                                      user_location(), "For a traced boolean, write "
                                      "(x == value).any().")

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d traced array")
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self) -> str:
        return f"Tracer<{self._value.type}{' weak' if self._weak else ''}>"

    # -- concreteness errors ------------------------------------------------------------------
    # (one whose trace has finished, kept in a global list or an attribute, is an escaped
    # tracer: that error says where it was made and what to do)
    def __bool__(self):
        check_alive(self)
        loc = user_location()
        raise ConcretizationTypeError("Using a traced value as a condition (if, while, "
                                      "and/or, bool())", loc, control_flow_hint(loc))

    # a[i] = t into a NumPy array calls these: NumPy reports "setting an array element with a
    # sequence", caused by the error saying what to do instead.
    def __float__(self):
        check_alive(self)
        raise store_into_numpy_array_error() or ConcretizationTypeError(
            "float() of a traced value", user_location())

    def __int__(self):
        check_alive(self)
        raise store_into_numpy_array_error() or ConcretizationTypeError(
            "int() of a traced value", user_location())

    def __index__(self):
        check_alive(self)
        # Not a TypeError: NumPy would swallow that and raise its own, naming nothing.
        loc = user_location()
        raise index_into_constant_error() or ConcretizationError(
            "Using a traced value as a Python int (a shape, size, slice bound or range)", loc,
            control_flow_hint(loc))

    def __complex__(self):
        check_alive(self)
        raise ConcretizationTypeError("complex() of a traced value", user_location())

    def __round__(self, ndigits=None):
        check_alive(self)
        # Python's round() gives a Python number; np.round gives an array, traced
        raise ConcretizationTypeError("round() of a traced value (use np.round(x) or "
                                      "np.round(x, decimals))", user_location())

    def __format__(self, spec):
        # f"{x:.3f}" needs the value now; printing it as the program runs is debug_print's
        if not spec:
            return repr(self)
        check_alive(self)
        raise ConcretizationTypeError(f"formatting a traced value (f\"{{x:{spec}}}\"; use "
                                      "tracejit.debug_print to print values as the program "
                                      "runs)", user_location())

    def __array__(self, dtype=None, copy=None):
        check_alive(self)
        raise (store_into_numpy_array_error() or index_into_constant_error()
               or array_conversion_error())

    def tolist(self):
        self.__array__()

    def item(self, *args):
        check_alive(self)
        raise ConcretizationTypeError(".item() of a traced value", user_location())

    def __hash__(self):
        raise TypeError("traced values are unhashable (they have no value yet)")

    def __setitem__(self, key, value):
        _numpy.setitem(self, key, value)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _numpy.handle_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return _numpy.handle_function(func, args, kwargs)

    # -- operators ----------------------------------------------------------------------------
    def __add__(self, o): return _numpy.add(*_python_ints(self, o))
    def __radd__(self, o): return _numpy.add(*_python_ints(o, self))
    def __sub__(self, o): return _numpy.subtract(*_python_ints(self, o))
    def __rsub__(self, o): return _numpy.subtract(*_python_ints(o, self))
    def __mul__(self, o): return _numpy.multiply(*_python_ints(self, o))
    def __rmul__(self, o): return _numpy.multiply(*_python_ints(o, self))
    def __truediv__(self, o): return _numpy.true_divide(self, o)
    def __rtruediv__(self, o): return _numpy.true_divide(o, self)
    def __floordiv__(self, o): return _numpy.floor_divide(*_python_ints(self, o))
    def __rfloordiv__(self, o): return _numpy.floor_divide(*_python_ints(o, self))
    def __mod__(self, o): return _numpy.remainder(*_python_ints(self, o))
    def __rmod__(self, o): return _numpy.remainder(*_python_ints(o, self))
    def __pow__(self, o): return _power_operator(self, o)
    def __rpow__(self, o): return _numpy.power(*_python_ints(o, self))
    def __matmul__(self, o): return _numpy.matmul(self, o)
    def __rmatmul__(self, o): return _numpy.matmul(o, self)
    def __and__(self, o): return _numpy.bitwise_and(self, o)
    def __rand__(self, o): return _numpy.bitwise_and(o, self)
    def __or__(self, o): return _numpy.bitwise_or(self, o)
    def __ror__(self, o): return _numpy.bitwise_or(o, self)
    def __xor__(self, o): return _numpy.bitwise_xor(self, o)
    def __rxor__(self, o): return _numpy.bitwise_xor(o, self)
    def __neg__(self): return _numpy.negative(*_python_ints(self))
    def __lshift__(self, o): return _numpy.left_shift(self, o)
    def __rlshift__(self, o): return _numpy.left_shift(o, self)
    def __rshift__(self, o): return _numpy.right_shift(self, o)
    def __rrshift__(self, o): return _numpy.right_shift(o, self)
    def __pos__(self):      # a ufunc's: a NumPy scalar when 0-d; +True is 1
        return _numpy.python_int(self) if _python_bool(self) else self._new_root()
    def __abs__(self): return _numpy.absolute(*_python_ints(self))
    def __invert__(self): return _numpy.invert(*_python_ints(self))
    def __lt__(self, o): return _numpy.less(self, o)
    def __le__(self, o): return _numpy.less_equal(self, o)
    def __gt__(self, o): return _numpy.greater(self, o)
    def __ge__(self, o): return _numpy.greater_equal(self, o)
    def __eq__(self, o): return _numpy.equal(self, o)   # noqa: elementwise, as in NumPy
    def __ne__(self, o): return _numpy.not_equal(self, o)

    # -- in-place operators ---------------------------------------------------------------
    # They write into the array, as in NumPy, so other names for it (its views, the caller's
    # argument) see the new value (assignment.py). A 0-d value computed inside the trace
    # rebinds instead: eagerly it is a NumPy scalar (``total += x.sum()``), which is immutable;
    # so does a NumPy scalar argument (another name for it keeps the old value), but not a
    # 0-d array made as one (np.zeros(()), np.array(v), x.copy()): its other names see it.
    def _inplace(self, symbol: str, other, apply):
        if self.ndim == 0 and self._view is None and not is_array_0d(self) and (
                self._val.op is not None or self._weak or is_scalar_argument(self)):
            return apply(*_python_ints(self, other))
        return _numpy.update_in_place(self, apply, other, symbol)

    def __iadd__(self, o): return self._inplace("+", o, _numpy.add)
    def __isub__(self, o): return self._inplace("-", o, _numpy.subtract)
    def __imul__(self, o): return self._inplace("*", o, _numpy.multiply)
    def __itruediv__(self, o): return self._inplace("/", o, _numpy.true_divide)
    def __ifloordiv__(self, o): return self._inplace("//", o, _numpy.floor_divide)
    def __imod__(self, o): return self._inplace("%", o, _numpy.remainder)
    def __ipow__(self, o): return self._inplace("**", o, _power_operator)
    def __imatmul__(self, o): return self._inplace("@", o, _numpy.matmul)
    def __iand__(self, o): return self._inplace("&", o, _numpy.bitwise_and)
    def __ior__(self, o): return self._inplace("|", o, _numpy.bitwise_or)
    def __ixor__(self, o): return self._inplace("^", o, _numpy.bitwise_xor)
    def __ilshift__(self, o): return self._inplace("<<", o, _numpy.left_shift)
    def __irshift__(self, o): return self._inplace(">>", o, _numpy.right_shift)

    def __getitem__(self, key):
        return _numpy.getitem(self, key)

    # -- array methods ------------------------------------------------------------------------
    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return _numpy.reshape(self, shape, order)

    def transpose(self, *axes):
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        return _numpy.transpose(self, axes or None)

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        """A new array; with copy=False, x itself when it has that dtype and order already
        (writes into the result then reach x, as in NumPy)."""
        if casting != "unsafe" and not np.can_cast(self.dtype, dtype, casting):
            raise numpy_error(TypeError, f"Cannot cast array data from {self.dtype!r} to "
                              f"{np.dtype(dtype)!r} according to the rule {casting!r}",
                              "pass casting='unsafe' to convert anyway")
        out = _numpy.handle_function(np.array, (self,), {"dtype": dtype, "order": order,
                                                         "copy": True if copy else None})
        if self.ndim == 0 and self._view is None and not is_array_0d(self) and (
                self._val.op is not None or self._weak or is_scalar_argument(self)):
            # a NumPy scalar's astype is a NumPy scalar (x.sum().astype(np.float32)), not the
            # 0-d array np.array makes
            self._trace.arrays_0d.pop(id(out), None)
        return out

    def view(self, dtype=None, type=None):
        """x itself for a view of x's dtype: the same memory, so writes through either reach
        the other (as x[...] is x). Another dtype would reinterpret the bytes: refused."""
        if _is_array_class(dtype):
            dtype, type = None, dtype
        if type is not None and type is not np.ndarray:
            raise unsupported(f"x.view({type.__name__}) (a view as an ndarray subclass)",
                              "use the plain array x itself")
        if dtype is None or np.dtype(dtype) == self.dtype:
            return self
        raise unsupported(f"x.view({np.dtype(dtype)}) of a {self.dtype} array (its bytes read "
                          "as another dtype)",
                          f"to convert the values, write x.astype(np.{np.dtype(dtype)}); to "
                          "reinterpret the bits, do it outside the jitted function")

    def fill(self, value):
        if is_scalar_argument(self):
            return      # a NumPy scalar's fill writes into a temporary copy: s is unchanged
        _numpy.setitem(self, Ellipsis, value)

    # Signatures follow ndarray's, so positional arguments mean what they mean in NumPy.
    def sum(self, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
        if initial is not None or where is not True:
            return np.sum(self, axis, dtype, out, keepdims, initial=initial, where=where)
        return _numpy.write_out(_numpy.sum(self, axis, keepdims, dtype), out, "sum")

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
        if initial is not None or where is not True:
            return np.prod(self, axis, dtype, out, keepdims, initial=initial, where=where)
        return _numpy.write_out(_numpy.prod(self, axis, keepdims, dtype), out, "prod")

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
        if where is not True:
            return np.mean(self, axis, dtype, out, keepdims, where=where)
        return _numpy.write_out(_numpy.mean(self, axis, keepdims, dtype), out, "mean")

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True):
        if where is not True:
            return np.var(self, axis, dtype, out, ddof, keepdims, where=where)
        return _numpy.write_out(_numpy.var(self, axis, keepdims, ddof, dtype), out, "var")

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True):
        if where is not True:
            return np.std(self, axis, dtype, out, ddof, keepdims, where=where)
        return _numpy.write_out(_numpy.std(self, axis, keepdims, ddof, dtype), out, "std")

    def max(self, axis=None, out=None, keepdims=False, initial=None, where=True):
        if where is not True:
            return np.max(self, axis, out, keepdims, initial=initial, where=where)
        return _numpy.write_out(_numpy.amax(self, axis, keepdims, initial), out, "max")

    def min(self, axis=None, out=None, keepdims=False, initial=None, where=True):
        if where is not True:
            return np.min(self, axis, out, keepdims, initial=initial, where=where)
        return _numpy.write_out(_numpy.amin(self, axis, keepdims, initial), out, "min")

    def argmax(self, axis=None, out=None, *, keepdims=False):
        return _numpy.write_out(_numpy.argmax(self, axis, keepdims), out, "argmax")

    def argmin(self, axis=None, out=None, *, keepdims=False):
        return _numpy.write_out(_numpy.argmin(self, axis, keepdims), out, "argmin")

    def all(self, axis=None, out=None, keepdims=False, *, where=True):
        if where is not True:
            return np.all(self, axis, out, keepdims, where=where)
        return _numpy.write_out(_numpy.all(self, axis, keepdims), out, "all")

    def any(self, axis=None, out=None, keepdims=False, *, where=True):
        if where is not True:
            return np.any(self, axis, out, keepdims, where=where)
        return _numpy.write_out(_numpy.any(self, axis, keepdims), out, "any")

    def round(self, decimals=0, out=None):
        return _numpy.write_out(np.round(self, decimals), out, "round")

    def repeat(self, repeats, axis=None):
        return np.repeat(self, repeats, axis)

    def diagonal(self, offset=0, axis1=0, axis2=1):
        return np.diagonal(self, offset, axis1, axis2)

    def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        return np.trace(self, offset, axis1, axis2, dtype, out)

    def ptp(self, axis=None, keepdims=False):
        return np.ptp(self, axis, keepdims=keepdims)

    def conj(self):
        return self._new_root()

    conjugate = conj

    @property
    def real(self):
        return self     # a view of a real array is the array itself

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
        return np.cumsum(self, axis, dtype, out)

    def cumprod(self, axis=None, dtype=None, out=None):
        return np.cumprod(self, axis, dtype, out)

    def argsort(self, axis=-1, kind=None, order=None, *, stable=None):
        return np.argsort(self, axis, kind, order, stable=stable)

    def sort(self, axis=-1, kind=None, order=None):
        """In place, as ndarray.sort: the array (and its views) hold the sorted values."""
        _numpy.setitem(self, Ellipsis, np.sort(self, axis, kind, order))

    def clip(self, min=None, max=None, out=None):
        return _numpy.write_out(_numpy.clip(self, min, max), out, "clip")

    def squeeze(self, axis=None):
        return _numpy.squeeze(self, axis)

    def flatten(self, order="C"):
        # a copy of the ravel in ``order`` ("A" and "K" read the array's own layout, so the
        # copy comes after: a copy first read a Fortran-ordered array in C order)
        return _numpy.ravel(self, order).copy()

    def ravel(self, order="C"):
        return _numpy.ravel(self, order)

    def copy(self, order="C"):
        return made_as_array(self._new_root())

    # copy.copy / copy.deepcopy: a new array, as ndarray's (the default copied the slots, so a
    # copy of a view shared its memory; deepcopy copied the whole trace)
    def __copy__(self):
        return self if self._weak else self.copy()

    def __deepcopy__(self, memo):
        return self.__copy__()

    def _new_root(self):
        # A new array: a new root, no longer seeing writes into this one (views.py).
        return Tracer(self._value, self._trace, self._weak)

    def swapaxes(self, a, b):
        return _numpy.swapaxes(self, a, b)

    def dot(self, other):
        return _numpy.dot(self, other)

    def take(self, indices, axis=None, out=None, mode="raise"):
        return np.take(self, indices, axis, out, mode)

    def searchsorted(self, v, side="left", sorter=None):
        return np.searchsorted(self, v, side, sorter)

    def partition(self, kth, axis=-1, kind="introselect", order=None):
        """In place, as ndarray.partition (here a full sort: it satisfies the contract)."""
        _numpy.setitem(self, Ellipsis, np.partition(self, kth, axis, kind, order))

    def argpartition(self, kth, axis=-1, kind="introselect", order=None):
        return np.argpartition(self, kth, axis, kind, order)

    def compress(self, condition, axis=None, out=None):
        return np.compress(condition, self, axis, out)

    def choose(self, choices, out=None, mode="raise"):
        return np.choose(self, choices, out, mode)

    def put(self, indices, values, mode="raise"):
        np.put(self, indices, values, mode)

    @property
    def imag(self):
        return np.imag(self)        # zeros: traced arrays are real

    @property
    def device(self):
        return "cpu"

    def to_device(self, device, /, *, stream=None):
        if device != "cpu":
            raise ValueError(f'Unsupported device "{device}"')
        return self



def _is_array_class(obj) -> bool:
    return isinstance(obj, type) and issubclass(obj, np.ndarray)


def _deferring(method):
    """``method`` (a binary operator), returning NotImplemented for a DeferredOperand."""
    def binary(self, o):
        if isinstance(o, DeferredOperand):
            return NotImplemented
        return method(self, o)
    binary.__name__ = binary.__qualname__ = method.__name__
    return binary


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
              "xor", "divmod"):
    for _dunder in (f"__{_name}__", f"__r{_name}__"):
        setattr(Tracer, _dunder, _deferring(getattr(Tracer, _dunder)))
for _dunder in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
    setattr(Tracer, _dunder, _deferring(getattr(Tracer, _dunder)))
del _name, _dunder
