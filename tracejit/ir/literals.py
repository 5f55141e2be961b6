"""Text form of attribute values, shared by the printer and the parser so they cannot drift."""
from __future__ import annotations

import base64
import json
import math

import numpy as np

# Arrays with more elements than this are written as base64 of their bytes (exact, compact).
INLINE_ARRAY_LIMIT = 32


def format_float(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    r = repr(float(x))
    return r if ("." in r or "e" in r) else r + ".0"


def format_scalar(x) -> str:
    if isinstance(x, (bool, np.bool_)):
        return "true" if x else "false"
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    return format_float(float(x))


def format_attr(kind: str, value) -> str:
    if kind in ("int", "float", "bool"):
        return format_scalar(value)
    if kind == "optint":
        return "none" if value is None else str(value)
    if kind == "ints":
        return "[" + ",".join(str(v) for v in value) + "]"
    if kind == "dtype":
        return value.short
    if kind == "str":
        return json.dumps(value)
    if kind == "array":
        return format_array(value)
    raise ValueError(kind)


def format_array(arr: np.ndarray) -> str:
    if arr.ndim == 0:
        return format_scalar(arr.item())
    if arr.size <= INLINE_ARRAY_LIMIT:
        return "[" + ", ".join(format_scalar(v) for v in arr.reshape(-1).tolist()) + "]"
    data = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes()
    return "base64" + json.dumps(base64.b64encode(data).decode("ascii"))


def parse_scalar(token: str):
    if token == "true":
        return True
    if token == "false":
        return False
    if token in ("nan", "inf", "-inf"):
        return float(token)
    if any(c in token for c in ".e") and not token.lstrip("-").isdigit():
        return float(token)
    return int(token)


def array_from_text(payload, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """payload: a scalar, a list of scalars, or ("base64", text)."""
    if isinstance(payload, tuple) and payload[0] == "base64":
        data = base64.b64decode(payload[1])
        arr = np.frombuffer(data, dtype=dtype.newbyteorder("<")).astype(dtype)
        return arr.reshape(shape)
    if isinstance(payload, list):
        return np.array(payload, dtype=dtype).reshape(shape)
    return np.array(payload, dtype=dtype).reshape(shape)
