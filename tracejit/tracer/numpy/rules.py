"""NumPy's static rules, worked out without emitting IR: result dtypes (NEP 50, Python scalars
weak), broadcast shapes, axis normalization, and which dtypes tracejit accepts.

Kept apart from lifting.py so that every rule has one home the emitting code can ask, and its
errors (NumPy's message, at the user's line) are raised before anything is emitted.
"""
from __future__ import annotations

import numpy as np

from ...ir import dtypes
from ...ir import types as _types
from ...ir.dtypes import DType
from ..errors import numpy_error, unsupported
from ..tracer import DeferredOperand, Tracer


def dt(x: Tracer) -> DType:
    return x._value.type.dtype


def constant_dtype(dtype: np.dtype) -> DType:
    """The IR dtype of a constant's NumPy dtype: an array captured from the enclosing code or
    made in traced code. Other dtypes would only fail later, inside the IR builder."""
    try:
        return dtypes.as_dtype(dtype)
    except TypeError:
        supported = ", ".join(d.name for d in dtypes.all_dtypes())
        raise numpy_error(TypeError, f"an array or value of dtype {dtype} is used in traced "
                          f"code; tracejit supports {supported}",
                          "convert it with .astype(...) (object arrays: build them from "
                          "numbers) before the jitted function uses it") from None


def requested_dtype(dtype) -> DType:
    """A dtype the traced code asks for (astype, dtype=...), or an error at the user's line."""
    try:
        return dtypes.as_dtype(dtype)
    except TypeError as e:
        raise numpy_error(TypeError, str(e), "use one of the supported dtypes") from None


def has_tracer(seq) -> bool:
    return any(isinstance(e, Tracer) or (isinstance(e, (list, tuple)) and has_tracer(e))
               for e in seq)


def sequence_dtype(seq) -> DType:
    """The dtype np.asarray would give a (nested) list holding tracers: no weak scalars."""
    def leaf_dtypes(e):
        if isinstance(e, (list, tuple)):
            return [d for c in e for d in leaf_dtypes(c)]
        return [dt(e).np if isinstance(e, Tracer) else np.asarray(e).dtype]
    return dtypes.as_dtype(np.result_type(*leaf_dtypes(seq)))


def abstract(x) -> tuple[DType, bool]:
    """(dtype, weak) of an operand, without emitting anything."""
    if isinstance(x, Tracer):
        return dt(x), x._weak
    if isinstance(x, (bool, int, float)) and not isinstance(x, np.generic):
        return dtypes.default_dtype_for_weak(dtypes.weak_kind_of(x)), True
    if isinstance(x, (list, tuple)):
        if has_tracer(x):
            return sequence_dtype(x), False
        x = np.asarray(x)
    if isinstance(x, (np.ndarray, np.generic)):
        return constant_dtype(x.dtype), False
    raise operand_error(x)


def operand_error(x):
    """The error for an operand NumPy semantics cannot hold under tracing."""
    if isinstance(x, DeferredOperand):
        return x.operand_refusal()      # a boolean-mask selection says what to write instead
    if isinstance(x, (str, bytes)):
        return unsupported(f"an operation of a traced array with the string {x!r} (NumPy "
                           "compares every element with it, or refuses the operation)",
                           "compare with numbers, or make the decision about strings "
                           "outside the jitted function (a static argument)")
    return unsupported(f"an operand of type {type(x).__name__}",
                       "pass NumPy arrays, Python numbers or traced values")


def result_dtype(*xs) -> DType:
    """NumPy's result dtype for these operands (Tracers, arrays or Python scalars)."""
    return dtypes.promote(*(abstract(x) for x in xs))


def float_result(*xs) -> DType:
    """The dtype of true_divide (and of SciPy's float functions): integers give float64."""
    d = result_dtype(*xs)
    return d if d.is_float else dtypes.float64


_WEAK_TYPE = {"i": int, "u": int, "f": float}


def float_function_dtype(ufunc: np.ufunc, *xs) -> DType:
    """The dtype of a NumPy float ufunc (exp, sqrt, arctan2, ...) of these operands, as the
    ufunc's own loop search gives it: each integer operand needs a float holding it exactly
    (int16 -> float32, int32 -> float64; Python scalars weak); bool, int8 and uint8 operands
    alone give float16, as in NumPy."""
    args = []
    for d, weak in map(abstract, xs):
        args.append(_WEAK_TYPE[d.kind] if weak and d.kind in _WEAK_TYPE else d.np)
    try:
        out = ufunc.resolve_dtypes(tuple(args) + (None,) * ufunc.nout)[-1]
    except TypeError as e:              # NumPy has no loop for these operands
        raise numpy_error(TypeError, str(e), "convert the operands to float first") from None
    return dtypes.as_dtype(out)


def python_int_beyond(x, d: DType) -> int:
    """For a Python int ``x`` beside an integer dtype ``d``: 1 if it lies above ``d``'s range,
    -1 below, 0 inside (or not a Python int). NumPy 2 compares such ints exactly and clips
    with them, where arithmetic refuses them (OverflowError)."""
    if not d.is_int or not isinstance(x, int) or isinstance(x, bool):
        return 0
    info = np.iinfo(d.np)
    return 1 if x > info.max else -1 if x < info.min else 0


def broadcast_shapes(*shapes) -> tuple[int, ...]:
    """NumPy's broadcast shape; a clash is a ValueError naming the shapes and the user's line."""
    try:
        return _types.broadcast_shapes(*shapes)
    except ValueError as e:
        raise numpy_error(ValueError, f"operands could not be broadcast together: {e}",
                          "aligned from the right, each pair of dimensions must be equal or "
                          "one of them 1; add axes with x[:, None] or reshape") from None


def normalize_axis(axis: int, ndim: int) -> int:
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise numpy_error(np.exceptions.AxisError, f"axis {axis} is out of bounds for array "
                          f"of dimension {ndim}", f"use an axis in [-{ndim}, {ndim})")
    return axis % ndim


def whole_if_0d(axis, ndim: int):
    """None for an int axis 0 or -1 of a 0-d array: NumPy's reductions (sum, max, all,
    argmax, ...), cumsum, take, repeat and squeeze read it as the whole array, a rule kept from
    before 0-d arrays (np.sum(np.array(3.0), axis=-1) is 3.0; a tuple of axes is an error)."""
    if ndim == 0 and isinstance(axis, (int, np.integer)) and not isinstance(axis, bool) \
            and int(axis) in (0, -1):
        return None
    return axis


def normalize_axes(axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(normalize_axis(a, ndim) for a in axis)
        if len(set(axes)) != len(axes):
            raise numpy_error(ValueError, f"duplicate value in 'axis': {axis}",
                              "name each axis once")
        return tuple(sorted(axes))
    return (normalize_axis(axis, ndim),)
