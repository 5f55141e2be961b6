"""Tracing a Python function into a Function: arguments become parameters, results results."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ..ir import Function, TensorType, dtypes, verify
from ..ir.passes import dce
from . import primitives as P
from .errors import call_error
from .leaks import check_no_leaks
from .pytree import TreeDef, flatten, flatten_with_paths, unflatten
from .trace import Trace
from .tracer import Tracer


def _param_name(path: str) -> str:
    name = re.sub(r"\[['\"]?([^'\"\]]*)['\"]?\]", r".\1", path).strip(".")
    name = re.sub(r"[^A-Za-z0-9_.]", "_", name)
    return name or "arg"


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
    if isinstance(leaf, np.ndarray) and type(leaf) is not np.ndarray \
            and not isinstance(leaf, np.memmap):
        raise call_error(
            f"tracejit: argument {name} is a {type(leaf).__module__}."
            f"{type(leaf).__qualname__}, an np.ndarray subclass with its own semantics "
            f"({_subclass_semantics(leaf)}), which traced code would ignore, computing a "
            "different result than NumPy.",
            f"pass a plain array: np.asarray({name}), which drops those semantics"
            + (f"; to keep the mask's effect, fill the masked values first, e.g. "
               f"np.ma.filled({name}, 0.0), or pass {name}.mask as its own argument"
               if isinstance(leaf, np.ma.MaskedArray) else
               "; write matrix products with @" if isinstance(leaf, np.matrix) else "") + ".")
    if isinstance(leaf, (np.ndarray, np.generic)):
        return TensorType(_argument_dtype(leaf.dtype, name), leaf.shape), False
    raise call_error(
        f"tracejit: argument {name} has type {type(leaf).__name__}, which is not an array.",
        "pass NumPy arrays, Python numbers, or tuples/lists/dicts of them; mark other "
        "arguments static with static_argnums=... or static_argnames=...")


def _subclass_semantics(leaf) -> str:
    if isinstance(leaf, np.ma.MaskedArray):
        return "its mask: masked elements are left out of sums, means, ..."
    if isinstance(leaf, np.matrix):
        return "* and ** are matrix products, results stay 2-D"
    return "its methods and operators may differ from np.ndarray's"


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
    if kind == "f":
        return f"convert it: {name}.astype(np.float32)"
    if dtype == np.uint64:
        return (f"convert it: {name}.astype(np.int64) if its values fit, else "
                f"{name}.astype(np.float64)")
    if kind in "iu":
        return f"convert it: {name}.astype(np.int32) (or np.int64)"
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


@dataclass
class Traced:
    """One trace: the Function, and how to turn its flat results back into the user's tree."""
    function: Function
    out_tree: TreeDef
    out_weak: list[bool]
    captured: list          # outer Tracers the function closed over (extra trailing params)
    # result index -> an earlier index where the function returned the very same object:
    # jit hands back one array for both, as NumPy would; other results never share memory
    repeats: dict = field(default_factory=dict)


def trace(fn, args: tuple, kwargs: dict, name: str, arg_names: list[str] | None = None,
          roots: tuple = ()) -> Traced:
    """Trace ``fn`` on tracers standing for the leaves of ``(args, kwargs)``. ``roots``:
    other caller's objects ((name, object) pairs, e.g. static arguments) that must not be left
    holding a tracer."""
    leaves, paths, in_tree = flatten_with_paths((args, kwargs))
    names = [_rename(p, arg_names) for p in paths]
    with Trace(name) as tr:
        tracers = []
        for leaf, nm in zip(leaves, names):
            t, weak = abstract_leaf(leaf, nm)
            tracers.append(Tracer(tr.builder.param(t, _param_name(nm)), tr, weak))
        a, k = unflatten(in_tree, tracers)
        out = fn(*a, **k)
        out_leaves, out_tree = flatten(out)
        results = [P.lift(x, tr) for x in out_leaves]
        check_no_leaks(tr, [(n, x) for n, x in zip(arg_names or (), args) if x is not None]
                       + [(f"args[{i}]", x) for i, x in enumerate(args[len(arg_names or ()):])]
                       + [(n, x) for n, x in kwargs.items()] + list(roots))
    first: dict = {}
    repeats = {}
    for i, x in enumerate(out_leaves):
        j = first.setdefault(id(x), i)
        if j != i and isinstance(x, Tracer):
            repeats[i] = j
    function = verify(dce(tr.finish([r._value for r in results])))
    return Traced(function, out_tree, [r._weak for r in results], tr.captured, repeats)


def _rename(path: str, arg_names: list[str] | None) -> str:
    """'[0][1]['w']' (a path into (args, kwargs)) -> 'params[1].w' using argument names."""
    m = re.match(r"\[(0|1)\]\[([^\]]+)\](.*)", path)
    if not m:
        return path
    which, key, rest = m.groups()
    if which == "0":
        i = int(key)
        head = arg_names[i] if arg_names and i < len(arg_names) else f"args{i}"
    else:
        head = key.strip("'\"")
    return head + rest


def inline(function: Function, inputs: list) -> list[Tracer]:
    """Emit the ops of ``function`` into the current trace, on the given tracers/values."""
    trace = P._trace_of(*inputs)
    env = {}
    for p, x in zip(function.params, inputs):
        env[p] = P.lift(x, trace)
        if env[p]._value.type != p.type:
            env[p] = P.convert(env[p], p.type.dtype)
    for op in function.ops:
        new = trace.builder.emit(op.opdef, [env[v]._value for v in op.operands], loc=op.loc,
                                 regions=op.regions or None, **op.attrs)
        for r, nr in zip(op.results, new.results):
            env[r] = Tracer(nr, trace)
    return [env[r] for r in function.results]
