"""Element types of the IR.

Dtypes are an open registry (``register_dtype``) rather than a closed enum, so that a dtype
(float16, bfloat16) is added without touching every stage. Promotion is delegated to NumPy 2
(NEP 50), so traced code returns the dtypes NumPy would (float16 + float32 -> float32,
float16 + a Python float -> float16), with one exception: bfloat16.

bfloat16 is ml_dtypes' NumPy dtype (registered when ml_dtypes is installed, as it is with
JAX). NumPy's promotion with it is ml_dtypes' own and surprising (bfloat16 * 2.5 is float32,
bfloat16 + float16 an error, bfloat16 + int32 float64), so ``promote`` follows JAX's table
there: bfloat16 with integers, booleans and Python scalars stays bfloat16, with float16 it is
float32, with a wider float the wider float. How kernels hold the dtypes NumPy has and Numba's
CPU target has not (float16, bfloat16) is codegen's business (codegen/representation.py).
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass

import numpy as np

# ml_dtypes is imported only once bfloat16 is used: its import takes ~1 s of CPU (0.7.0
# registers its ufunc loops), in every process that imports tracejit (each test subprocess,
# compile worker and notebook kernel), most of which never see a bfloat16. Whether it is
# installed is known without importing it.
_HAS_ML_DTYPES = importlib.util.find_spec("ml_dtypes") is not None


def ml_dtypes():
    """The ml_dtypes module (imported on first use), which defines NumPy's bfloat16."""
    import ml_dtypes as module
    return module


@dataclass(frozen=True)
class DType:
    name: str        # NumPy's name: "float32"
    short: str       # the IR text form: "f32"
    kind: str        # NumPy's: "b" bool, "i" signed int, "u" unsigned int, "f" float

    @property
    def np(self) -> np.dtype:
        d = _NUMPY.get(self.name)
        if d is None:
            if self.name == "bfloat16":
                ml_dtypes()                      # (which makes NumPy know the name)
            d = _NUMPY[self.name] = np.dtype(self.name)
        return d

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        """Any integer, signed or unsigned."""
        return self.kind in "iu"

    @property
    def is_unsigned(self) -> bool:
        return self.kind == "u"

    @property
    def bits(self) -> int:
        return self.np.itemsize * 8

    @property
    def is_bool(self) -> bool:
        return self.kind == "b"

    def __repr__(self) -> str:
        return self.short

    __str__ = __repr__


_BY_NAME: dict[str, DType] = {}
_NUMPY: dict[str, np.dtype] = {}
_BY_SHORT: dict[str, DType] = {}


def register_dtype(name: str, short: str, kind: str) -> DType:
    dt = DType(name, short, kind)
    _BY_NAME[name] = dt
    _BY_SHORT[short] = dt
    return dt


bool_ = register_dtype("bool", "bool", "b")
int8 = register_dtype("int8", "i8", "i")
int16 = register_dtype("int16", "i16", "i")
int32 = register_dtype("int32", "i32", "i")
int64 = register_dtype("int64", "i64", "i")
uint8 = register_dtype("uint8", "u8", "u")
uint16 = register_dtype("uint16", "u16", "u")
uint32 = register_dtype("uint32", "u32", "u")
uint64 = register_dtype("uint64", "u64", "u")
float16 = register_dtype("float16", "f16", "f")
float32 = register_dtype("float32", "f32", "f")
float64 = register_dtype("float64", "f64", "f")
bfloat16 = register_dtype("bfloat16", "bf16", "f") if _HAS_ML_DTYPES else None


def from_short(short: str) -> DType:
    try:
        return _BY_SHORT[short]
    except KeyError:
        raise ValueError(f"unknown dtype {short!r}; known: {sorted(_BY_SHORT)}") from None


def is_short_name(s: str) -> bool:
    return s in _BY_SHORT


def as_dtype(x) -> DType:
    """DType of a NumPy dtype, a type like np.float32, a DType, or a dtype name."""
    if isinstance(x, DType):
        return x
    if isinstance(x, str) and x in _BY_SHORT:
        return _BY_SHORT[x]
    if isinstance(x, str) and x in _BY_NAME:        # ("bfloat16" before ml_dtypes is loaded)
        return _BY_NAME[x]
    try:
        name = np.dtype(x).name
    except TypeError:
        raise TypeError(f"{x!r} is not a dtype") from None
    if name not in _BY_NAME:
        raise TypeError(
            f"dtype {name} is not supported by tracejit; supported: "
            f"{', '.join(sorted(_BY_NAME))}")
    return _BY_NAME[name]


def all_dtypes() -> list[DType]:
    return list(_BY_NAME.values())


# A weakly typed operand is a Python scalar (NEP 50): it takes the dtype of its partner.
_WEAK_EXAMPLE = {"b": False, "i": 0, "u": 0, "f": 0.0}


def weak_kind_of(value) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "b"
    if isinstance(value, int):
        return "i"
    if isinstance(value, float):
        return "f"
    raise TypeError(f"{type(value).__name__} is not a Python scalar")


def default_dtype_for_weak(kind: str) -> DType:
    """The dtype a Python scalar gets when nothing strong is beside it (like NumPy)."""
    return {"b": bool_, "i": int64, "u": int64, "f": float64}[kind]


def promote(*operands: tuple[DType, bool]) -> DType:
    """Result dtype of NumPy's promotion over (dtype, weak) pairs.

    Weak operands stand for Python scalars of that dtype's kind and are passed to NumPy as
    Python values, which NumPy 2 treats as weak.
    """
    strong = {dt for dt, weak in operands if not weak}
    if bfloat16 is not None and bfloat16 in strong:
        return _promote_bfloat16(strong)
    args = []
    for dt, weak in operands:
        args.append(_WEAK_EXAMPLE[dt.kind] if weak else dt.np)
    if all(weak for _, weak in operands):
        # All Python scalars: NumPy would promote the Python types among themselves.
        kinds = "biuf"
        return default_dtype_for_weak(max((dt.kind for dt, _ in operands), key=kinds.index))
    return as_dtype(np.result_type(*args))


def _promote_bfloat16(strong: set) -> DType:
    """JAX's promotion where a bfloat16 operand meets others (module docstring)."""
    floats = {dt for dt in strong if dt.is_float}
    wider = floats - {bfloat16, float16}
    if wider:
        return max(wider, key=lambda dt: dt.bits)
    return float32 if float16 in floats else bfloat16


def is_float_dtype(np_dtype) -> bool:
    """Whether a NumPy dtype is a floating-point one (bfloat16's NumPy kind is 'V', not 'f')."""
    try:
        return as_dtype(np_dtype).is_float
    except TypeError:
        return np.dtype(np_dtype).kind == "f"


def finfo(np_dtype):
    """np.finfo, which has no bfloat16: ml_dtypes' own finfo for it."""
    if bfloat16 is not None and np.dtype(np_dtype).name == "bfloat16":
        return ml_dtypes().finfo(np_dtype)
    return np.finfo(np_dtype)
