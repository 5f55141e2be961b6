"""Value types: a dtype and a static shape, written ``f32[128,784]`` (``f32[]`` for a scalar)."""
from __future__ import annotations

from dataclasses import dataclass

from . import dtypes
from .dtypes import DType


@dataclass(frozen=True)
class TensorType:
    dtype: DType
    shape: tuple[int, ...]

    def __post_init__(self):
        shape = tuple(int(d) for d in self.shape)
        if any(d < 0 for d in shape):
            raise ValueError(f"negative dimension in shape {shape}")
        object.__setattr__(self, "shape", shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def with_shape(self, shape) -> "TensorType":
        return TensorType(self.dtype, tuple(shape))

    def with_dtype(self, dtype) -> "TensorType":
        return TensorType(dtypes.as_dtype(dtype), self.shape)

    def __str__(self) -> str:
        return f"{self.dtype.short}[{','.join(map(str, self.shape))}]"

    __repr__ = __str__


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy's broadcasting of shapes; raises ValueError naming the shapes when they clash."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(ndim):
        dim = 1
        for s in shapes:
            j = i - (ndim - len(s))
            if j < 0:
                continue
            d = s[j]
            if d == 1:
                continue
            if dim not in (1, d):
                raise ValueError(
                    "shapes " + ", ".join(str(tuple(s)) for s in shapes)
                    + " cannot be broadcast together")
            dim = d
        out.append(dim)
    return tuple(out)
