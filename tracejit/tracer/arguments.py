"""What an argument of a traced function traces as, and the arguments that cannot be traced.

Anything the compiled code would get wrong is refused here with the argument's name (its path,
``x`` or ``params['w']``) and what to do: an ndarray subclass with its own semantics
(``np.matrix``, masked arrays; ``np.memmap`` is a plain array), a dtype the backend cannot
hold, a byte-swapped array, a Python int beyond int64.
"""
from __future__ import annotations

import numpy as np

from ..ir import TensorType, dtypes
from .errors import call_error
from .tracer import Tracer


def abstract_leaf(leaf, path: str = "") -> tuple[TensorType, bool]:
    """The (type, weak) that a leaf argument traces as; anything the compiled code would get
    wrong (an ndarray subclass with its own semantics, a dtype it cannot hold, a Python int
    beyond int64) is refused here, naming the argument."""
    name = path or "?"
    if isinstance(leaf, Tracer):
        return leaf._value.type, leaf._weak
    if isinstance(leaf, (bool, int, float)) and not isinstance(leaf, np.generic):
        if isinstance(leaf, int) and not isinstance(leaf, bool) and not _fits_int64(leaf):
            raise call_error(
                f"tracejit: argument {name} is a Python int {_short_int(leaf)}, which does "
                "not fit in int64 (tracejit's widest integer).",
                f"pass float({name}) if an approximation will do, or mark it static "
                "(static_argnames=...) if it is a setting.", OverflowError)
        return TensorType(dtypes.default_dtype_for_weak(dtypes.weak_kind_of(leaf)), ()), True
    if has_own_semantics(leaf):
        raise call_error(
            f"tracejit: argument {name} is a {subclass_semantics(leaf)}, which traced code "
            "would ignore, computing a different result than NumPy.",
            subclass_hint(leaf, name))
    if isinstance(leaf, (np.ndarray, np.generic)):
        return TensorType(_argument_dtype(leaf.dtype, name), leaf.shape), False
    if is_device_array(leaf):
        # a device array (what jit(f, device="cuda", device_results=True) returns), for the
        # CUDA backend, which reads it where it is (codegen/cuda/program.py)
        return TensorType(_argument_dtype(np.dtype(leaf.dtype), name), tuple(leaf.shape)), False
    raise call_error(
        f"tracejit: argument {name} has type {type(leaf).__name__}, which is not an array.",
        container_hint(leaf, name) + "pass NumPy arrays, Python numbers, or tuples/lists/dicts "
        "of them (strings, bytes and enum members in them are static values already); mark "
        "other arguments static with static_argnums=... or static_argnames=...")


def container_hint(x, name: str) -> str:
    """For a container that is no pytree (a dict, list or tuple subclass such as OrderedDict
    or defaultdict, a dataclass): what to pass instead, as the start of a hint; else ""."""
    for base in (dict, list, tuple):
        if isinstance(x, base):
            return (f"{type(x).__name__} is a {base.__name__} subclass, and only plain "
                    f"{base.__name__}s{' and namedtuples' if base is tuple else ''} are "
                    f"pytrees: pass {base.__name__}"
                    f"({name}), or register {type(x).__name__} with "
                    "tracejit.register_pytree_node; ")
    if hasattr(type(x), "__dataclass_fields__"):
        return (f"register the dataclass {type(x).__name__} with "
                "tracejit.register_pytree_node to pass its arrays; ")
    return ""


def is_device_array(x) -> bool:
    """A CUDA device array: numba-cuda's (``__cuda_ndarray__``, also its simulator's) or any
    with the CUDA array interface; told apart without importing numba.cuda."""
    return hasattr(x, "__cuda_array_interface__") or hasattr(x, "__cuda_ndarray__")


def has_own_semantics(x) -> bool:
    """An ndarray subclass whose semantics traced code would not keep (``np.matrix``, masked
    arrays, any other but ``np.memmap``, which is a plain array in a file): refused as an
    argument here, and as a constant (a global or closure array) by tracer/numpy/lifting.py."""
    return (isinstance(x, np.ndarray) and type(x) is not np.ndarray
            and not isinstance(x, np.memmap))


def subclass_semantics(x) -> str:
    """``x``'s class and the semantics a trace would drop, for an error message."""
    if isinstance(x, np.ma.MaskedArray):
        what = "its mask: masked elements are left out of sums, means, ..."
    elif isinstance(x, np.matrix):
        what = "* and ** are matrix products, results stay 2-D"
    else:
        what = "its methods and operators may differ from np.ndarray's"
    return (f"{type(x).__module__}.{type(x).__qualname__}, an np.ndarray subclass with its "
            f"own semantics ({what})")


def subclass_hint(x, name: str | None = None) -> str:
    """What to do instead of giving traced code the subclass ``x``: the argument ``name``, or
    (None) an array it reads from its globals or closures."""
    if name is None:
        return ("make it a plain array where it is defined: np.asarray(...), which drops those "
                "semantics" + ("; to keep the mask's effect, fill the masked values first, "
                               "e.g. np.ma.filled(..., 0.0)"
                               if isinstance(x, np.ma.MaskedArray) else
                               "; write matrix products with @" if isinstance(x, np.matrix)
                               else "") + ".")
    return (f"pass a plain array: np.asarray({name}), which drops those semantics"
            + (f"; to keep the mask's effect, fill the masked values first, e.g. "
               f"np.ma.filled({name}, 0.0), or pass {name}.mask as its own argument"
               if isinstance(x, np.ma.MaskedArray) else
               "; write matrix products with @" if isinstance(x, np.matrix) else "") + ".")


def _fits_int64(n: int) -> bool:
    return -2**63 <= n < 2**63


def _short_int(n: int) -> str:
    if abs(n) < 10**40:
        return str(n)
    return f"of {n.bit_length()} bits"


def _dtype_hint(dtype: np.dtype, name: str) -> str:
    if dtype.fields is not None:
        return f"pass each field as its own array, e.g. {name}[{dtype.names[0]!r}]"
    if not dtype.isnative:
        return (f"convert it to native byte order: {name}.astype({name}.dtype.newbyteorder"
                "('='))")
    kind = dtype.kind
    if kind in "OSUV":
        return ("pass numeric arrays; if it holds numbers, convert it with "
                f"np.asarray({name}, dtype=np.float64); if it is a setting, mark it static "
                "(static_argnames=...)")
    if kind == "c":
        return f"complex numbers are not supported: pass {name}.real and {name}.imag"
    if kind in "mM":
        return (f"convert it to numbers first, e.g. {name}.astype(np.int64) (in the dtype's "
                f"units) or ({name} - start) / np.timedelta64(1, 's')")
    if kind == "f":          # long double: float64 is the closest
        return f"convert it: {name}.astype(np.float64)"
    return f"convert it to one of the supported dtypes with {name}.astype(...)"


def _argument_dtype(dtype: np.dtype, name: str) -> dtypes.DType:
    """The IR dtype of an argument's NumPy dtype, or an error naming the argument."""
    if dtype.isnative:
        try:
            return dtypes.as_dtype(dtype)
        except TypeError:
            pass
    supported = ", ".join(d.name for d in dtypes.all_dtypes())
    what = (f"has the structured dtype {dtype}" if dtype.fields is not None else
            f"has the non-native byte order dtype {dtype.str!r}" if not dtype.isnative else
            f"has dtype {dtype}")
    raise call_error(f"tracejit: argument {name} {what}, which tracejit cannot compile; "
                     f"supported dtypes: {supported}.", _dtype_hint(dtype, name))
