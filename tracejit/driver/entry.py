"""One cache entry of a jitted function: the trace and the program running it, the results
given back in the shape the user's function returned them, the new values of arguments the
function wrote into copied back into the caller's arrays, and what it did to the dicts and
lists among its arguments done to the caller's (as running it eagerly would)."""
from __future__ import annotations

import numpy as np

from ..tracer.arguments import is_device_array
from ..tracer.pytree import unflatten
from ..tracer.trace_function import Traced


class CompiledEntry:
    """One cache entry: the trace, and the program that runs it."""

    def __init__(self, traced: Traced, program):
        self.traced = traced
        self.program = program
        self.layout_dependent = traced.layout_dependent
        self.scalar_kinds = traced.scalar_kinds
        # An Executable's own ``run``: one call less on every call of the entry.
        self._run = getattr(program, "run", program)
        self._out_tree = traced.out_tree
        self._repeats = list(traced.repeats.items())
        # 0-d results given as NumPy scalars, as NumPy's ufuncs and reductions give them;
        # those that are arrays eagerly (np.array(v), x.reshape(())) stay 0-d arrays
        arrays_0d = traced.out_arrays_0d
        self._scalar = [r.type.shape == () and not (i < len(arrays_0d) and arrays_0d[i])
                        for i, r in enumerate(traced.function.results)]
        self._n = traced.n_results
        self._written = list(zip(traced.written, traced.written_names))
        self._written_at = [f"\n  the write: {loc.describe()}" if loc else ""
                            for loc in traced.written_at]
        self._leaf_names = traced.leaf_names
        self._containers = traced.containers
        self._returns_written = list(traced.returns_written.items())
        # A model's state (Module buffers) read from outside that the function wrote into:
        # positions among the external arrays, whose new values come last
        self._written_outside = list(traced.written_outside)
        # One array result (the common case): skip the pytree rebuild on every call.
        self._single = (traced.out_tree.kind == "leaf" and not self._scalar[0]
                        and not self._written and self._containers is None
                        and not self._written_outside)
        self._guarded_of = self._guarded = None
        self._int_ranges = traced.int_ranges      # (only Python ints: never the fast path)
        # Arrays the function reads from its globals and closures, passed after the arguments
        # at every call, so that a change made in place is seen (tracer/external_arrays.py);
        # one that is not C-contiguous is passed as a contiguous copy, as an argument is.
        self._external = tuple(traced.captured)
        self._external_names = traced.captured_names
        self._contiguous = all(a.flags.c_contiguous for a in self._external)
        if not self._contiguous:
            self._run = _with_contiguous(self._run, len(self._external))

    def takes(self, array) -> bool:
        """Whether the program takes ``array`` as a parameter (one read from outside)."""
        return any(a is array for a in self._external)

    def rebind(self, swaps: dict) -> None:
        """Pass ``swaps[id(old)]`` where the trace read ``old`` from outside (an attribute
        rebound to an array of the same type: guards.ReachedArrays)."""
        external = tuple(swaps.get(id(a), a) for a in self._external)
        if any(n is not o for n, o in zip(external, self._external)):
            self._external = external
            self._guarded_of = self._guarded = None      # (made again with them)

    @property
    def guarded(self):
        """The fastest call, for JittedFunction's last-used entry: no Python-side checks; it
        raises TypeError or ArgumentMismatch when the arguments do not fit (see plan.py).
        None while a tiered program still runs on NumPy."""
        guarded = getattr(self.program, "guarded", None) if self._contiguous else None
        if guarded is not self._guarded_of:
            self._guarded_of = guarded
            if guarded is not None and self._external:
                guarded = _with_external(guarded, self._external)
            if guarded is None:
                self._guarded = None
            elif self._single:
                self._guarded = lambda args: guarded(args)[0]
            elif self._written or self._written_outside:
                self._guarded = lambda args: self._rebuild(self._write_back(args, guarded(args)),
                                                           args)
            else:
                self._guarded = lambda args: self._rebuild(guarded(args))
        return self._guarded

    def __call__(self, leaves, tree=None):
        if self._int_ranges:
            _check_int_ranges(leaves, self._int_ranges)
        outs = self._run((*leaves, *self._external) if self._external else leaves)
        if self._single:
            return outs[0]
        if self._written or self._written_outside:
            outs = self._write_back(leaves, outs)
        if self._containers is not None:
            # After every call, not just the traced one: the trace ran on copies of the
            # containers (tracer/container_writes.py).
            self._containers.apply(tree, leaves, outs[self._n + len(self._written):])
        return self._rebuild(outs, leaves)

    def _rebuild(self, outs, leaves=()):
        # (a 0-d device result, device_results=True, stays a device array: [()] copies it)
        outs = [o[()] if s and not is_device_array(o) else o
                for o, s in zip(outs[:self._n], self._scalar)]
        # Eagerly, the function returned the argument itself (a 0-d one too: an array, not a
        # scalar).
        for r, k in self._returns_written:
            dst = leaves[self._written[k][0]]
            if isinstance(dst, np.ndarray):
                outs[r] = dst
        for i, j in self._repeats:
            outs[i] = outs[j]
        return unflatten(self._out_tree, outs)

    def _write_back(self, leaves, outs):
        """Copy the new values of written arguments into the caller's arrays (a Python number
        or NumPy scalar is immutable: eagerly, the write rebound a local name)."""
        new = outs[self._n:]
        for (i, name), where in zip(self._written, self._written_at):
            dst = leaves[i]
            if is_device_array(dst):
                # (f(d, d) on the CUDA backend: traced as two arrays, as NumPy ones are)
                for j, other in enumerate(leaves):
                    if j != i and is_device_array(other) and _device_overlap(dst, other):
                        raise ValueError(
                            f"the jitted function writes into its argument {name}, which "
                            f"shares memory with another argument, {self._leaf_names[j]}; "
                            "tracejit traced them as separate arrays, so the result could "
                            f"differ from NumPy's. Pass a copy of one of them.{where}")
            if not isinstance(dst, np.ndarray):
                continue
            if not dst.flags.writeable:
                raise ValueError(f"assignment destination is read-only: the jitted function "
                                 f"writes into its argument {name}, a read-only array; pass a "
                                 f"writeable copy (np.array(...)).{where}")
            for j, other in enumerate(leaves):
                if j != i and isinstance(other, np.ndarray) and _overlap(dst, other):
                    # (one array in two arguments: a layer two models share, whose running
                    # statistics a copy would split; in one Module it is one leaf)
                    shared = (" If they are one layer two models share, pass the models in "
                              "one argument, nn.ModuleList([a, b]): an array found twice in a "
                              "Module is one argument." if other is dst else "")
                    raise ValueError(
                        f"the jitted function writes into its argument {name}, which shares "
                        f"memory with another argument, {self._leaf_names[j]}; tracejit "
                        "traced them as separate arrays, so the result could differ from "
                        f"NumPy's. Pass a copy of one of them.{shared}{where}")
            for other, label in zip(self._external, self._external_names):
                if _overlap(dst, other):
                    raise ValueError(
                        f"the jitted function writes into its argument {name}, which shares "
                        f"memory with {label}, an array it reads from outside itself; "
                        "tracejit read them as separate arrays, so the result could differ "
                        f"from NumPy's. Pass a copy of one of them.{where}")
        if self._written_outside:
            for k, value in zip(self._written_outside, outs[-len(self._written_outside):]):
                np.copyto(self._external[k], value)
        for (i, _), value in zip(self._written, new):
            if isinstance(leaves[i], np.ndarray):
                np.copyto(leaves[i], value)
            elif is_device_array(leaves[i]):
                dst = leaves[i]
                if not hasattr(dst, "copy_to_device"):   # CuPy's, PyTorch's: Numba's view
                    from numba import cuda
                    dst = cuda.as_cuda_array(dst)
                if dst.is_c_contiguous() or (dst.is_f_contiguous()
                                             and isinstance(value, np.ndarray)):
                    dst.copy_to_device(value)
                else:
                    # a strided view (d[:, ::2]): copy_to_device wants one region; Fortran
                    # order from a device value (device_results=True): the same strides
                    dst[...] = value
        return outs


def _with_external(guarded, external: tuple):
    def call(args):
        return guarded(args + external)
    return call


def _with_contiguous(run, n: int):
    def call(leaves):
        leaves = list(leaves)
        leaves[-n:] = [np.ascontiguousarray(a) for a in leaves[-n:]]
        return run(leaves)
    return call


def _overlap(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` and ``b`` share an element (not just a span of memory: ``x[::2]`` and
    ``x[1::2]`` are separate arrays to NumPy); where that is too costly to decide, they may."""
    if not np.may_share_memory(a, b):
        return False
    try:
        return np.shares_memory(a, b, max_work=1000)
    except np.exceptions.TooHardError:
        return True


def _device_overlap(a, b) -> bool:
    """Whether device arrays ``a`` and ``b`` may share memory: the NumPy arrays under the
    simulator's, else their spans of bytes (as np.may_share_memory)."""
    ha, hb = getattr(a, "_ary", None), getattr(b, "_ary", None)
    if isinstance(ha, np.ndarray) and isinstance(hb, np.ndarray):
        return _overlap(ha, hb)

    def span(x):
        iface = x.__cuda_array_interface__
        shape, item = iface["shape"], np.dtype(iface["typestr"]).itemsize
        if 0 in shape:
            return 0, 0
        strides = iface.get("strides") or [
            item * int(np.prod(shape[k + 1:], dtype=np.int64)) for k in range(len(shape))]
        lo = iface["data"][0] + sum(min(0, (n - 1) * st) for n, st in zip(shape, strides))
        hi = iface["data"][0] + sum(max(0, (n - 1) * st) for n, st in zip(shape, strides))
        return lo, hi + item
    try:
        (la, ha_), (lb, hb_) = span(a), span(b)
    except (AttributeError, KeyError, TypeError):
        return False
    return la < hb_ and lb < ha_


def _check_int_ranges(leaves, ranges):
    """NumPy's OverflowError for a Python int argument that the function combined with an
    integer array whose dtype cannot hold it (x + s with x int8 and s = 200): the trace
    converts the argument, which would wrap."""
    for i, d, loc in ranges:
        v, info = leaves[i], np.iinfo(d.np)
        if isinstance(v, int) and not info.min <= v <= info.max:
            where = f" at {loc.describe()}" if loc else ""
            raise OverflowError(
                f"tracejit: Python integer {v} out of bounds for {d.name}{where}\nWhat to do: "
                f"pass a value within [{info.min}, {info.max}], or widen the array first, "
                "e.g. x.astype(np.int64)")
