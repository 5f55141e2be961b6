"""Tracing a Python function into a Function: arguments become parameters, results results."""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..ir import Function, TensorType, dtypes, verify
from ..ir.passes import dce
from . import primitives as P
from .errors import user_location
from .pytree import TreeDef, flatten, flatten_with_paths, unflatten
from .trace import Trace
from .tracer import Tracer


def _param_name(path: str) -> str:
    name = re.sub(r"\[['\"]?([^'\"\]]*)['\"]?\]", r".\1", path).strip(".")
    name = re.sub(r"[^A-Za-z0-9_.]", "_", name)
    return name or "arg"


def abstract_leaf(leaf, path: str = "") -> tuple[TensorType, bool]:
    """The (type, weak) that a leaf argument traces as."""
    if isinstance(leaf, Tracer):
        return leaf._value.type, leaf._weak
    if isinstance(leaf, (bool, int, float)) and not isinstance(leaf, np.generic):
        return TensorType(dtypes.default_dtype_for_weak(dtypes.weak_kind_of(leaf)), ()), True
    if isinstance(leaf, (np.ndarray, np.generic)):
        return TensorType(dtypes.as_dtype(leaf.dtype), leaf.shape), False
    loc = user_location()
    raise TypeError(
        f"tracejit: argument {path or '?'} has type {type(leaf).__name__}, which is not an "
        "array." + (f"\n  in the call at {loc.describe()}" if loc else "") + "\nWhat to do: "
        "pass NumPy arrays, Python numbers, or tuples/lists/dicts of them; mark other "
        "arguments static with static_argnums=... or static_argnames=...")


@dataclass
class Traced:
    """One trace: the Function, and how to turn its flat results back into the user's tree."""
    function: Function
    out_tree: TreeDef
    out_weak: list[bool]
    captured: list          # outer Tracers the function closed over (extra trailing params)


def trace(fn, args: tuple, kwargs: dict, name: str, arg_names: list[str] | None = None
          ) -> Traced:
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
    function = verify(dce(tr.finish([r._value for r in results])))
    return Traced(function, out_tree, [r._weak for r in results], tr.captured)


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
