"""How generated code holds each IR dtype: the storage dtype of its arrays and the compute
dtype of its scalars. The one place that knows that they can differ.

Most dtypes are held as themselves. float16 is not: Numba's CPU target has no float16 type,
so kernels hold a float16 array as its uint16 bit patterns (the *storage* dtype) and a float16
value as a float32 scalar holding it exactly (the *compute* dtype). A load converts
(half.h2f), every op whose result is float16 computes in float32 and rounds (half.round16,
as NumPy's float16 ufuncs do), a store converts back (half.f2h). bfloat16 registers here the
same way (its storage uint16, its compute float32, conversions from codegen/bfloat16.py).

Who uses which:
- storage: arrays made inside kernels and native loops (``np.empty``), kernel argument types
  (plan.array_type) and the ``.view`` the entry hands each kernel (plan.py);
- compute: casts and literals of scalar expressions (emitters.py), accumulators, scalar
  constants passed to kernels (``c*``), a matmul's product buffer.
The Python entry (plan.py, movement.py) holds real np.float16 arrays: NumPy's own float16
does movement, sorts, pad constants, and the results a caller gets back.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..config import config
from ..ir import dtypes
from ..ir.dtypes import DType


@dataclass(frozen=True)
class Held:
    """A dtype held as another in kernels. The strings name kernel-module functions
    (source.HEADER imports them)."""
    storage: np.dtype      # element dtype of its arrays in kernels
    compute: DType         # dtype of its scalars in kernel expressions
    load: str              # stored element -> compute scalar (exact)
    store: str             # compute scalar -> stored element
    round: str             # compute scalar -> the nearest value of the dtype (compute type)
    round64: str           # float64 -> the nearest value of the dtype, rounded once
    bits: object           # a NumPy scalar of the dtype -> its stored element (Python)
    matrix: str            # a stored matrix -> a new float32 one (a matmul operand for BLAS)
    contiguous: str        # a C-contiguous stored array -> a float32 one
    # the names to use instead without hardware conversions (config.f16c off: half.py)
    software: tuple = ()


_HELD: dict[str, Held] = {}


def register_held(dtype: DType, held: Held):
    _HELD[dtype.name] = held


register_held(dtypes.float16, Held(
    np.dtype(np.uint16), dtypes.float32, "h2f", "f2h", "round16", "round16_64",
    lambda x: np.float16(x).view(np.uint16), "h2f_matrix", "h2f_contiguous",
    software=(("h2f", "h2f_sw"), ("f2h", "f2h_sw"), ("round16", "round16_sw"),
              ("round16_64", "round16_64_sw"))))
if dtypes.bfloat16 is not None:          # (codegen/bfloat16.py)
    register_held(dtypes.bfloat16, Held(
        np.dtype(np.uint16), dtypes.float32, "b2f", "f2b", "round_bf16", "round_bf16_64",
        lambda x: np.asarray(x, dtypes.bfloat16.np).view(np.uint16)[()], "b2f_matrix",
        "b2f_contiguous"))


def _fn(h: Held, name: str) -> str:
    """The kernel function ``name``, or its software twin when config.f16c is off (the kernel
    source names it, so the disk cache keeps the two apart)."""
    return dict(h.software).get(name, name) if not config.f16c else name


def held(dt: DType) -> Held | None:
    """How kernels hold ``dt`` when not as itself (None: as itself)."""
    return _HELD.get(dt.name)


def compute_dtype(dt: DType) -> DType:
    h = _HELD.get(dt.name)
    return dt if h is None else h.compute


def _np_name(np_dtype: np.dtype) -> str:
    return "np.bool_" if np_dtype == np.bool_ else f"np.{np_dtype.name}"


def scalar_type(dt: DType) -> str:
    """The Numba scalar type of ``dt``'s values in kernel code (casts): ``np.float32``."""
    return _np_name(compute_dtype(dt).np)


def storage_dtype(dt: DType) -> np.dtype:
    """The element dtype of a kernel's array of ``dt``."""
    h = _HELD.get(dt.name)
    return dt.np if h is None else h.storage


def storage_type(dt: DType) -> str:
    """``storage_dtype`` as source (``np.empty(shape, np.uint16)`` in a kernel)."""
    return _np_name(storage_dtype(dt))


def lit(dt: DType, value) -> str:
    """A scalar literal of ``dt``'s compute type (so float32 code stays float32 and int32 code
    int32), holding ``value`` rounded to ``dt``; NaN and infinities by name."""
    if dt.is_bool:
        return "True" if value else "False"
    name = scalar_type(dt)
    if dt.is_float:
        with np.errstate(over="ignore"):
            x = float(dt.np.type(value))
        if not math.isfinite(x):
            return f"{name}({'np.nan' if math.isnan(x) else 'np.inf' if x > 0 else '-np.inf'})"
        return f"{name}({x!r})"
    return f"{name}({int(value)})"


def storage_literal(dt: DType, value) -> str:
    """An element of ``dt``'s storage holding ``value`` (an array fill inside a kernel)."""
    h = _HELD.get(dt.name)
    return lit(dt, value) if h is None else f"{_np_name(h.storage)}({int(h.bits(value))})"


def scalar_value(dt: DType, value):
    """``value`` as the NumPy scalar a kernel's scalar parameter of ``dt`` takes."""
    with np.errstate(over="ignore"):
        return compute_dtype(dt).np.type(dt.np.type(value))


def load(dt: DType, expr: str) -> str:
    """A stored element ``expr`` of ``dt`` as a compute scalar."""
    h = _HELD.get(dt.name)
    return expr if h is None else f"{_fn(h, h.load)}({expr})"


def store(dt: DType, expr: str) -> str:
    """A compute scalar ``expr`` of ``dt`` as a stored element."""
    h = _HELD.get(dt.name)
    return expr if h is None else f"{_fn(h, h.store)}({expr})"


def rounded(dt: DType, expr: str) -> str:
    """A compute-type expression rounded to ``dt``'s values (no-op for dtypes held as
    themselves: their expressions are of the dtype already)."""
    h = _HELD.get(dt.name)
    return expr if h is None else f"{_fn(h, h.round)}({expr})"


def rounded_from64(dt: DType, expr: str) -> str:
    """A float64 expression as a compute scalar of ``dt``: one rounding, never two."""
    h = _HELD.get(dt.name)
    return f"{scalar_type(dt)}({expr})" if h is None else f"{_fn(h, h.round64)}({expr})"


def matrix_as_float32(dt: DType, expr: str) -> str:
    """A stored matrix ``expr`` of a held ``dt`` as a new float32 one (a BLAS operand)."""
    return f"{_HELD[dt.name].matrix}({expr})"


def contiguous_as_float32(dt: DType, expr: str) -> str:
    """A C-contiguous stored array ``expr`` of a held ``dt`` as a float32 one."""
    return f"{_HELD[dt.name].contiguous}({expr})"
