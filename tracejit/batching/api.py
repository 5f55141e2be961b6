"""``vmap``: JAX's vectorizing map, as one more IR-to-IR transform.

``vmap(f)(xs)`` traces ``f`` once on one example (the arguments without their mapped axis),
then pushes that Function's ops again on the whole batch (push.py), so the result is one
program over the batch, not a loop: it fuses, compiles and differentiates like any other.
Inside a trace (jit, grad, another vmap) the batched ops are emitted into it; on arrays the
transform is jitted, one trace per signature, like grad.
"""
from __future__ import annotations

import copy
import re
import types
import weakref

import numpy as np

from ..autodiff.api import Transformed, _arg_names, _name
from ..autodiff.build import Concrete
from ..tracer.errors import call_error
from ..tracer.numpy.lifting import emit, lift
from ..tracer.pytree import (_sorted_keys, flatten, flatten_with_paths,
                              is_registered_node, node_of, unflatten)
from ..tracer.trace_function import trace
from ..tracer.trace_state import current_trace
from ..tracer.tracer import Tracer
from ..ir import ops
from .push import broadcast, push


def vmap(fun, in_axes=0, out_axes=0, axis_size=None, axis_name=None, spmd_axis_name=None):
    """``fun`` mapped over an axis of its arguments (``in_axes``: an int, None for an argument
    shared by every example, or a tuple of those per positional argument, each of which may
    be a pytree prefix; keyword arguments are mapped over axis 0), its results stacked along
    ``out_axes``. As ``jax.vmap``; collectives (``axis_name``) are not supported."""
    if not callable(fun):
        raise call_error(f"tracejit.vmap: expected a function, got {type(fun).__name__}",
                         "pass the function first: vmap(f, in_axes=0)(x)")
    if axis_name is not None or spmd_axis_name is not None:
        raise call_error("tracejit.vmap: axis_name (collectives such as psum over the "
                         "mapped axis) is not supported",
                         "compute the reduction over the mapped results outside vmap, e.g. "
                         "vmap(f)(x).sum(axis=0)", NotImplementedError)
    _check_axes_spec(in_axes, "in_axes")
    _check_axes_spec(out_axes, "out_axes")
    cache, key = _cache_of(fun), _key((in_axes, out_axes, axis_size))
    if cache is not None and key is not None and key in cache:
        return cache[key]
    # (the caller's lists and dicts may change after this; the transform keeps its own)
    in_axes, out_axes = copy.deepcopy(in_axes), copy.deepcopy(out_axes)

    def traced(*args, **kwargs):
        return _vmap_traced(fun, in_axes, out_axes, axis_size, args, kwargs)

    def mapped(nargs: int) -> tuple:
        """The arguments that are mapped: those no trace may take as static values."""
        if in_axes is None:
            return ()
        if isinstance(in_axes, (int, np.integer)):
            return tuple(range(nargs))
        return tuple(i for i, a in enumerate(in_axes) if i < nargs and a is not None)

    transformed = Transformed(fun, traced, f"vmap_{_name(fun)}", mapped)
    if cache is not None and key is not None:
        if len(cache) >= _CACHED_PER_FUNCTION:
            del cache[next(iter(cache))]
        cache[key] = transformed
    return transformed


# vmap(f)(x) in a loop: each vmap(f) would be a new transform, tracing f at every call, where
# jax caches its transforms on the function. So a Python function keeps its vmaps (one per
# in_axes, out_axes, axis_size) in its __dict__, dying with it; a kept vmap(f) is one of them,
# and its jit checks the globals and closure values f reads at every call, as any jit does.
_CACHE_ATTR = "__tracejit_vmaps__"
_CACHED_PER_FUNCTION = 8


class _Vmaps(dict):
    """A function's vmaps, and which function they are of (functools.wraps copies a
    function's __dict__ into its wrapper's; grad's and jit's wrappers too). It pickles empty
    (cloudpickle carries a function's __dict__ to other processes)."""

    def __init__(self, fun=None):
        super().__init__()
        self.owner = weakref.ref(fun) if fun is not None else None

    def __reduce__(self):
        return _Vmaps, ()


# NumPy's functions and ufuncs (vmap(np.linalg.solve)) live as long as the process: their
# vmaps are kept here
_LIBRARY_VMAPS: dict = {}
_LIBRARY_KINDS = (np.ufunc, type(np.sort), types.BuiltinFunctionType)


def _cache_of(fun) -> dict | None:
    if isinstance(fun, _LIBRARY_KINDS):
        try:
            return _LIBRARY_VMAPS.setdefault(fun, {})
        except TypeError:       # (unhashable)
            return None
    if not isinstance(fun, types.FunctionType) and not (
            hasattr(type(fun), "__tracejit_body__") and hasattr(fun, "__dict__")):
        return None         # (a transform's or jit's wrapper keeps them too: vmap(vmap(f)))
    cache = fun.__dict__.get(_CACHE_ATTR)
    if not isinstance(cache, _Vmaps) or cache.owner is None or cache.owner() is not fun:
        cache = fun.__dict__[_CACHE_ATTR] = _Vmaps(fun)
    return cache


def _key(spec):
    """A hashable form of vmap's settings (lists and dicts among them), None if there is none."""
    try:
        return _frozen(spec)
    except TypeError:
        return None


def _frozen(spec):
    if isinstance(spec, (tuple, list)):
        return (type(spec), tuple(_frozen(x) for x in spec))
    if isinstance(spec, dict):
        return (dict, tuple(sorted((k, _frozen(v)) for k, v in spec.items())))
    if spec is None or isinstance(spec, (int, np.integer)):
        return (type(spec), spec if spec is None else int(spec))
    raise TypeError(spec)


def _check_axes_spec(spec, what: str):
    leaves = flatten(spec)[0] if spec is not None else []
    for a in leaves:
        if a is not None and not isinstance(a, (int, np.integer)) or isinstance(a, bool):
            raise call_error(f"tracejit.vmap: {what} must be ints, None, or tuples, lists "
                             f"and dicts of them; got {a!r}",
                             f"pass e.g. {what}=0, or {what}=(0, None) for two arguments")


def _axes_of(value, spec, what: str, path: str) -> list:
    """One axis (or None) per leaf of ``value``, from ``spec``: an int or None for all its
    leaves, or a container of ``value``'s own structure (a pytree prefix)."""
    if spec is None or isinstance(spec, (int, np.integer)):
        return [None if spec is None else int(spec)] * len(flatten(value)[0])
    if isinstance(spec, dict) and isinstance(value, dict) and set(spec) == set(value):
        return [a for k in _sorted_keys(value) for a in
                _axes_of(value[k], spec[k], what, f"{path}[{k!r}]")]
    if (isinstance(spec, (tuple, list)) and isinstance(value, (tuple, list))
            and len(spec) == len(value)):
        return [a for i, (v, s) in enumerate(zip(value, spec))
                for a in _axes_of(v, s, what, f"{path}[{i}]")]
    if type(spec) is type(value) and is_registered_node(value):
        # a registered class as its own prefix, as in jax (P(0, None) for a P(a, b))
        _, _, specs, _ = node_of(spec)
        _, _, children, keys = node_of(value)
        if len(specs) == len(children):
            return [a for v, s, k in zip(children, specs, keys)
                    for a in _axes_of(v, s, what, path + k)]
    raise call_error(f"tracejit.vmap: {what} {spec!r} does not match the structure of "
                     f"{path or 'the value'}, {type(value).__name__}"
                     f"{f' of {len(value)}' if isinstance(value, (tuple, list, dict)) else ''}",
                     f"give {what} one entry per element (or one int or None for all)",
                     ValueError)


def _in_axes(args, kwargs, in_axes) -> list:
    if isinstance(in_axes, list):       # (JAX takes a list as a tuple here)
        in_axes = tuple(in_axes)
    if isinstance(in_axes, tuple) and len(in_axes) != len(args):
        raise call_error(f"tracejit.vmap: in_axes has {len(in_axes)} entries for "
                         f"{len(args)} positional arguments",
                         "give in_axes one entry per positional argument (None for one "
                         "that is not mapped)", ValueError)
    axes = _axes_of(args, in_axes, "in_axes", "args")
    return axes + [0] * len(flatten(kwargs)[0])


def _vmap_traced(fun, in_axes, out_axes, axis_size, args, kwargs):
    leaves, tree = flatten((args, kwargs))
    axes = _in_axes(args, kwargs, in_axes)
    size = axis_size
    for i, (x, a) in enumerate(zip(leaves, axes)):
        if a is None:
            continue
        shape = tuple(np.shape(x))
        if not -len(shape) <= a < len(shape):
            raise call_error(f"tracejit.vmap: in_axes {a} of {_leaf_name(fun, args, kwargs, i)}, "
                             f"of shape {shape}: a mapped argument needs that axis",
                             "map an axis the argument has, or pass in_axes=None for it",
                             ValueError)
        axes[i] = a % len(shape)
        if size is None:
            size = shape[axes[i]]
        elif shape[axes[i]] != size:
            sizes = [f"{_leaf_name(fun, args, kwargs, j)}: axis {b % np.ndim(y)} of size "
                     f"{np.shape(y)[b]}" for j, (y, b) in enumerate(zip(leaves, axes))
                     if b is not None and -np.ndim(y) <= b < np.ndim(y)]
            given = [f"axis_size {axis_size}"] if axis_size is not None else []
            raise call_error(f"tracejit.vmap got inconsistent sizes for the mapped axes: "
                             f"{'; '.join(given + sizes)}",
                             "map arguments whose mapped axes have one size (that of "
                             "axis_size, where given)", ValueError)
    if size is None:
        raise call_error("tracejit.vmap: no argument is mapped (every in_axes is None), so "
                         "the batch size is unknown", "pass axis_size=n", ValueError)
    outer = current_trace()
    if outer is None:           # config.disable_jit: jit ran this on the arrays themselves
        return _one_by_one(fun, leaves, tree, axes, size, out_axes)
    batched_in, examples = [], []
    for x, a in zip(leaves, axes):
        if a is None:
            examples.append(x if isinstance(x, Tracer) or isinstance(x, np.ndarray)
                            else Concrete(x))
            continue
        t = lift(x, outer)
        if a:
            n = t._value.type.ndim
            t = emit(outer, ops.transpose, [t], perm=(a,) + tuple(
                d for d in range(n) if d != a))
        batched_in.append(t)
        shape = tuple(t._value.type.shape[1:])
        examples.append(np.broadcast_to(np.zeros((), t._value.type.dtype.np), shape))
    a, k = unflatten(tree, examples)
    traced = trace(fun, a, k, _name(fun), _arg_names(fun), context="under vmap")
    fn = traced.function
    inputs, flags = [], []
    it = iter(batched_in)
    for x, ax in zip(leaves, axes):
        if ax is not None:
            inputs.append(next(it))
            flags.append(True)
        elif isinstance(x, (Tracer, np.ndarray)):
            inputs.append(lift(x, outer))
            flags.append(False)
    inputs += [lift(c, outer) for c in traced.captured]
    flags += [False] * len(traced.captured)
    outs, obs = push(fn, inputs, flags, size)
    n = traced.n_results
    out = unflatten(traced.out_tree, outs[:n])
    return _out_axes(out, obs[:n], out_axes, size)


def _one_by_one(fun, leaves, tree, axes, size, out_axes):
    """vmap under ``config.disable_jit``: ``fun`` called on each example in Python (prints,
    breakpoints and exceptions where the user's code is), its results stacked along
    ``out_axes``; an out_axes None result is the first example's."""
    if size == 0:
        raise call_error("tracejit.vmap of 0 examples under config.disable_jit: there is no "
                         "example to run the function on, to learn its results' shapes",
                         "turn disable_jit off for this call, or map at least one example",
                         ValueError)
    outs = []
    for k in range(size):
        example = [x if a is None else np.take(np.asarray(x), k, axis=a)
                   for x, a in zip(leaves, axes)]
        args, kwargs = unflatten(tree, example)
        outs.append(fun(*args, **kwargs))
    first, out_tree = flatten(outs[0])
    columns = [flatten(o)[0] for o in outs]
    axes_out = _axes_of(outs[0], tuple(out_axes) if isinstance(out_axes, list) else out_axes,
                        "out_axes", "the result")
    placed = [first[j] if a is None else np.stack([np.asarray(c[j]) for c in columns], axis=a)
              for j, a in enumerate(axes_out)]
    return unflatten(out_tree, placed)


def _leaf_name(fun, args, kwargs, i: int) -> str:
    """The ``i``-th leaf of ``(args, kwargs)`` as the user names it: ``x``, ``params['w']``."""
    path = flatten_with_paths((args, kwargs))[1][i]
    m = re.match(r"\[(\d)\]\[([^\]]+)\](.*)", path)
    if m is None:
        return "an argument"
    which, key, rest = m.groups()
    if which == "1":
        return f"argument {key.strip(chr(39))}{rest}"
    names = _arg_names(fun) or []
    k = int(key)
    return f"argument {names[k] if k < len(names) else f'args[{k}]'}{rest}"


def _out_axes(out, batched: list[bool], out_axes, size):
    leaves, tree = flatten(out)
    spec = tuple(out_axes) if isinstance(out_axes, list) else out_axes
    axes = _axes_of(out, spec, "out_axes", "the result")
    placed = []
    for x, b, a in zip(leaves, batched, axes):
        if a is None:
            if b:
                raise call_error("tracejit.vmap: out_axes is None for a result that differs "
                                 "between examples", "give that result an out_axes (0)",
                                 ValueError)
            placed.append(x)
            continue
        if not b:
            x = broadcast(x, size)
        n = x._value.type.ndim
        if not -n <= a < n:
            raise call_error(f"tracejit.vmap: out_axes {a} for a result of {n - 1} dims",
                             f"pass an out_axes between {-n} and {n - 1}", ValueError)
        a %= n
        if a:
            perm = tuple(range(1, a + 1)) + (0,) + tuple(range(a + 1, n))
            x = emit(x._trace, ops.transpose, [x], perm=perm)
        placed.append(x)
    return unflatten(tree, placed)
