"""Which traced arrays share memory, so that a write through one is seen through the others.

IR values are immutable; NumPy arrays are not. To trace code that writes into arrays
(``x[i] = v``, ``x += y``, ``out=``), every write makes a new IR value, and the traced array
written to stands for it from then on (functionalization, as in ``torch.func.functionalize``).
Arrays that NumPy would let share memory must follow: ``y = x[1:]; x[1] = 5`` changes ``y``.

So each layout op applied to a tracer (slice, reshape, transpose, rev, broadcast) records the
result as a *view* of its operand: the op, to be replayed on the operand's current value when
the view is next read after a write into the memory they share (a ``Cell``, counting writes).
A write through a view goes back up the chain through each op's inverse (assignment.py), down
to the *root*, the array that is not a view. NumPy functions that return new arrays cut these
links at the NumPy boundary (``fresh``), so a link only survives where NumPy returns a view.

Whether a reshape of a view is a view or a copy depends on the view's strides, as in NumPy:
each view can produce a *proxy*, a NumPy array of one byte per element with the strides the
real array would have, on which NumPy itself answers. A root standing for an argument is
C-contiguous in a first trace; a trace in which such a decision read an argument's layout
(``Trace.read_layout``) holds for C-contiguous arguments only, and jit traces again, with the
arguments' own strides (``argument_root``), for others (driver/jit.py): so ``x.ravel()`` of a
Fortran-ordered ``x`` is a copy, as in NumPy, and a function that never asks costs no second
trace. ``np.asfortranarray`` and ``np.array(..., order="F")`` make Fortran-ordered roots. Other
new arrays are taken to be C-contiguous (NumPy gives a ufunc on Fortran-ordered inputs a
Fortran-ordered result: a write through a reshape of such a result is not modelled).
"""
from __future__ import annotations

import weakref

import numpy as np

from ..ir import ops

LAYOUT_VIEWS = frozenset((ops.slice, ops.reshape, ops.transpose, ops.rev, ops.broadcast_in_dim))


class Cell:
    """The memory a root and its views share: its root tracer and how many writes it has had."""
    __slots__ = ("root", "version", "proxy", "argument")

    def __init__(self, root):
        self.root = root
        self.version = 0
        self.proxy = None
        self.argument = False       # the root stands for an argument: its layout is an input


class View:
    """How a view derives from its parent: one layout op, replayed when the view is stale (or,
    for a read-only view NumPy makes with strides tracejit has no layout op for, such as
    np.diagonal, the function that made it: ``replay``)."""
    __slots__ = ("parent", "opdef", "attrs", "version", "readonly", "proxy", "replay")

    def __init__(self, parent, opdef, attrs, version, readonly, replay=None):
        self.parent = parent
        self.opdef = opdef
        self.attrs = attrs
        self.version = version
        self.readonly = readonly
        self.proxy = None
        self.replay = replay


def cell_of(t) -> Cell:
    if t._cell is None:
        t._cell = Cell(t)
    return t._cell


def link(result, parent, opdef, attrs) -> None:
    """Record ``result`` (made by a layout op on ``parent``) as a view of ``parent``, unless
    NumPy would have copied (a reshape that the view's strides do not allow)."""
    if result._trace is not parent._trace or result is parent:
        return
    view = parent._view
    readonly = (view is not None and view.readonly) or (
        opdef is ops.broadcast_in_dim and _broadcasts(parent.shape, attrs))
    if not readonly and is_scalar_argument(parent):
        return      # NumPy makes a new array; a broadcast is linked still (it is read-only,
                    # and a NumPy scalar is never written: it reads the same either way)
    # (a new array is C-contiguous: its reshapes are views; an argument may not be)
    if opdef is ops.reshape and (view is not None or cell_of(parent).argument):
        p = proxy(parent)
        if not np.may_share_memory(p.reshape(attrs["shape"]), p):
            return
    cell = cell_of(parent)
    result._cell = cell
    result._view = View(parent, opdef, attrs, cell.version, readonly)


def link_readonly(result, parent, replay) -> None:
    """Record ``result = replay(parent)`` as a read-only view of ``parent``."""
    if result is parent or result._trace is not parent._trace or result._view is not None:
        return
    cell = cell_of(parent)
    result._cell = cell
    result._view = View(parent, None, {}, cell.version, True, replay)


def is_scalar_argument(t) -> bool:
    """Whether ``t`` stands for a NumPy scalar argument, immutable: what NumPy makes of it
    (``s.reshape(1)``, ``s[None]``) is a new array, not a view, and it cannot be written into.
    Asked of a 0-d argument, the trace then depends on which kind it is (Trace.zero_d)."""
    if t._view is not None:
        return False
    trace = t._trace
    kind = trace.zero_d.get(t._val)
    if kind is None:
        return False
    trace.scalar_kinds_read.add(t._val)
    return kind


def made_as_array(t):
    """Record that NumPy makes ``t`` as an array (np.zeros, np.array, x.copy()): a 0-d one is
    then written into by ``t += 1``, as a computed 0-d value (a NumPy scalar) is not.
    Returns ``t``."""
    if getattr(t, "ndim", None) == 0 and getattr(t, "_trace", None) is not None:
        t._trace.arrays_0d[id(t)] = weakref.ref(t)
    return t


def is_array_0d(t) -> bool:
    """Whether the 0-d ``t`` was made as an array (made_as_array)."""
    ref = t._trace.arrays_0d.get(id(t))
    return ref is not None and ref() is t


def _broadcasts(shape, attrs) -> bool:
    """A broadcast that repeats elements (a read-only view in NumPy), not one adding 1-dims."""
    out, dims = attrs["shape"], attrs["dims"]
    mapped = {d: shape[i] for i, d in enumerate(dims)}
    return any(mapped.get(d, 1) != n for d, n in enumerate(out))


def refresh(t) -> None:
    """Bring a stale view up to date: replay its op on its parent's current value."""
    view = t._view
    if view.replay is not None:
        t._val = view.replay(view.parent)._value
    else:
        t._val = t._trace.emit(view.opdef, [view.parent._value], **view.attrs).result
    view.version = t._cell.version


def proxy(t) -> np.ndarray:
    """A NumPy array with ``t``'s strides (one byte per element), for NumPy to decide what is
    a view."""
    view = t._view
    if view is None:
        cell = cell_of(t)
        if cell.argument:
            t._trace.read_layout = True
        if cell.proxy is None:
            cell.proxy = np.empty(t.shape, np.uint8)
        return cell.proxy
    if view.proxy is None:
        if view.replay is not None:     # no layout op to mimic: any reshape of it copies
            return np.empty(t.shape, np.uint8)
        view.proxy = _PROXY_OPS[view.opdef](proxy(view.parent), **view.attrs)
    return view.proxy


def argument_root(t, leaf, layouts: bool) -> None:
    """Mark root ``t`` as standing for argument ``leaf``; ``layouts``: with the argument's
    memory layout (else C-contiguous)."""
    if isinstance(leaf, np.ndarray) and t.ndim:
        cell = cell_of(t)
        cell.argument = True
        if layouts and not leaf.flags.c_contiguous:
            cell.proxy = strided_proxy(leaf.shape, leaf.strides, leaf.itemsize)


def strided_proxy(shape, strides, itemsize: int) -> np.ndarray:
    """An array of ``itemsize``-byte elements laid out with ``strides`` (its memory allocated,
    never touched), for NumPy to decide views on."""
    lo = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0 and n > 0)
    hi = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0 and n > 0)
    base = np.empty(hi - lo + itemsize, np.uint8)
    return np.ndarray(shape, np.dtype((np.void, itemsize)), base, -lo, strides)


def in_order(t, order: str) -> bool:
    """Whether ``t``'s memory is contiguous in ``order`` ("C" or "F")."""
    if t._view is not None and t._view.replay is not None:       # a gather's strides
        return t.size <= 1
    flags = proxy(t).flags
    return flags.c_contiguous if order == "C" else flags.f_contiguous


def set_order(t, order: str) -> None:
    """Lay the new root ``t`` out in ``order`` ("C" or "F")."""
    if order == "F" and t._view is None:
        cell_of(t).proxy = np.empty(t.shape, np.uint8, order="F")


def _broadcast_proxy(p, shape, dims):
    shaped = [1] * len(shape)
    for i, d in enumerate(dims):
        shaped[d] = p.shape[i]
    return np.broadcast_to(p.reshape(shaped), shape)


_PROXY_OPS = {
    ops.slice: lambda p, starts, stops, steps: p[tuple(map(slice, starts, stops, steps))],
    ops.reshape: lambda p, shape: p.reshape(shape),
    ops.transpose: lambda p, perm: p.transpose(perm),
    ops.rev: lambda p, dims: np.flip(p, tuple(dims)),
    ops.broadcast_in_dim: _broadcast_proxy,
}


def fresh(result, inputs=()):
    """``result`` as new arrays: what a NumPy function that returns a copy gives. A tracer
    that is a view, or that is one of the inputs, is replaced by a new root on its value."""
    if isinstance(result, (list, tuple)):
        items = [fresh(r, inputs) for r in result]    # a namedtuple (SlogdetResult) takes *items
        return type(result)(*items) if hasattr(result, "_fields") else type(result)(items)
    if hasattr(result, "_view") and (result._view is not None
                                     or any(result is x for x in inputs)):
        return type(result)(result._value, result._trace, result._weak)
    return result
