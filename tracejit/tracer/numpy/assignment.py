"""Writing into traced arrays with NumPy's semantics: ``x[key] = v``, ``x += y``, ``out=``,
``np.copyto``, ``np.add.at``, ``x.fill``.

Each write computes the array's new value as pure IR and stores it (``store``): the written
tracer, and every array sharing its memory, stands for the new value from then on (views.py).
A write through a view goes back up the chain of layout ops, each through its inverse
(``INVERSE``), to the root array. The arguments of a jitted function that were written into
are returned by the program and copied back into the caller's arrays (trace_function.py).

How a key's write becomes IR:
- basic keys (ints, slices, None, ...): ``x[key]`` is a view, and storing into a slice is an
  ``update_slice`` (x with the box overwritten; in place in the program when x is not read
  again, so a loop of ``x[i] = v`` costs its boxes, not the whole array each time);
- integer-array keys: a ``scatter`` at the flat positions the key selects (computed at trace
  time when the key is constant; repeated positions keep the last write, as NumPy does);
- a traced boolean mask: ``where(mask, v, x)`` (the value must broadcast over the selection,
  or be a selection ``y[mask]`` under an equal mask: masked.py).
"""
from __future__ import annotations

import numpy as np

from ...ir import dtypes, ops
from ..errors import WriteRefusedError, numpy_error, unsupported, user_location
from ..trace_state import current_trace, outside_array
from ..tracer import Tracer
from ..views import is_scalar_argument
from .arithmetic import where as select
from .indexing import getitem
from .lifting import (broadcast_to, constant, convert, emit, lift, note_python_int, reshape,
                      trace_of)
from .masked import Selection, rows, same_mask
from .rules import dt, has_tracer
from .shapes import flip, iota, transpose

# -- storing a new value ----------------------------------------------------------------------


def store(t: Tracer, new: Tracer) -> None:
    """``t``'s memory now holds ``new`` (same shape and dtype): update ``t``, and through the
    inverse of each layout op, the arrays ``t`` is a view of."""
    view = t._view
    if view is None:
        if t._val.op is None:       # the first write into an argument: where, for messages
            t._trace.written_at.setdefault(id(t), user_location())
        t._val = new._value
        if t._cell is not None:
            t._cell.version += 1
        return
    if view.readonly:
        raise numpy_error(ValueError, "assignment destination is read-only",
                          "this array is a broadcast (np.broadcast_to, np.broadcast_arrays) "
                          "or another read-only view: write into a copy, y = x.copy()")
    parent = view.parent
    store(parent, INVERSE[view.opdef](parent, new, **view.attrs))
    t._val = new._value
    view.version = t._cell.version


def _set_slice(parent, new, starts, stops, steps):
    """``parent`` with ``parent[starts:stops:steps] = new``: an ``update_slice``, which the
    program writes in place when nothing reads ``parent`` afterwards (codegen/plan.py)."""
    if 0 in new.shape:
        return parent
    return emit(parent._trace, ops.update_slice, [parent, new], starts=list(starts),
                steps=list(steps))


def _undo_broadcast(parent, new, **attrs):
    raise AssertionError("a broadcast is read-only")     # store() refuses before this


INVERSE = {
    ops.slice: _set_slice,
    ops.reshape: lambda parent, new, shape: reshape(new, parent.shape),
    ops.transpose: lambda parent, new, perm: transpose(new, list(np.argsort(perm))),
    ops.rev: lambda parent, new, dims: flip(new, tuple(dims)),
    ops.broadcast_in_dim: _undo_broadcast,
}


# -- x[key] = v -------------------------------------------------------------------------------


def setitem(x: Tracer, key, value) -> None:
    if _writes_outer_state(x):
        # (self.buf[...] = v of a closure's model in the function grad differentiates)
        new = lift(x, current_trace()).copy()
        setitem(new, key, value)
        _outer_state_write(x, new, "unsafe", True)
        return
    _check_writable(x, value)
    keys = key if isinstance(key, tuple) else (key,)
    if any(isinstance(k, Tracer) and k.dtype == np.bool_ for k in keys):
        return _set_masked(x, keys, value)
    if any(_is_array_key(k) for k in keys):
        return _set_positions(x, key, value)
    target = getitem(x, key)
    if _same_memory(target, value):
        return      # x[k] = x[k], as after x[k] += 1: the value is already there
    if target is x or target._view is not None or target.size == 0:
        store(target, fit(value, target))
        return
    # A 0-d result of an all-int key: NumPy hands back a scalar, not a view; write through
    # the equivalent key that keeps a 0-d view.
    _check_element_value(value)
    store(getitem(x, keys + (Ellipsis,)), fit(value, target))


def _names_one_element(key) -> bool:
    """A key of ints and int arrays alone (x[i, j, ...] = v broadcasts v in NumPy)."""
    keys = key if isinstance(key, tuple) else (key,)
    return not any(k is None or k is Ellipsis or isinstance(k, slice) for k in keys)


def _check_element_value(value) -> None:
    """One element named by an all-int key takes a scalar: NumPy refuses x[i, j] = v for a v
    of 1 or more dimensions (np.ones(1), [1.0]) although it would broadcast; jit wrote it."""
    if isinstance(value, (list, tuple)) or getattr(value, "ndim", 0) > 0:
        raise numpy_error(ValueError, "setting an array element with a sequence.",
                          "write a scalar (v[0], v.item()), or x[i, j, ...] = v")


def _same_memory(a: Tracer, b) -> bool:
    """Whether ``b`` is the same view of the same array as ``a`` (made by the same layout ops
    from one parent)."""
    if a is b:
        return True
    while isinstance(b, Tracer) and a._view is not None and b._view is not None:
        va, vb = a._view, b._view
        if va.opdef is not vb.opdef or va.attrs != vb.attrs or va.replay or vb.replay:
            return False
        a, b = va.parent, vb.parent
        if a is b:
            return True
    return False


def _is_array_key(k) -> bool:
    if isinstance(k, Tracer) or isinstance(k, (np.ndarray, range)):
        return True
    return isinstance(k, list) or (isinstance(k, tuple) and has_tracer(k))


def fit(value, target: Tracer, shape=None, fancy=False) -> Tracer:
    """``value`` as written into ``target`` (or into ``shape`` elements of it): cast to its
    dtype as an assignment does (unsafe), broadcast to its shape. ``fancy``: by an integer
    array or mask key (see _as_written)."""
    shape = target.shape if shape is None else tuple(shape)
    v = _as_written(value, target, fancy)
    while v.ndim > len(shape) and v.shape[0] == 1:
        v = reshape(v, v.shape[1:])
    try:
        ok = v.ndim <= len(shape) and np.broadcast_shapes(v.shape, shape) == shape
    except ValueError:
        ok = False
    if not ok:
        raise numpy_error(ValueError, f"could not broadcast input array from shape {v.shape} "
                          f"into shape {shape}",
                          "the value must broadcast to the shape of what it is written into")
    note_python_int(v, dt(target))         # a[i] = s: NumPy refuses an s that does not fit
    return broadcast_to(convert(v, dt(target)), shape)


def _as_written(value, target: Tracer, fancy=False) -> Tracer:
    """``value`` lifted for a write into ``target``. Numbers and lists of them, known while
    tracing, are converted by NumPy's own assignment, which refuses what would not fit
    (``x[0] = 300`` into int8 is its OverflowError, at the user's line, not a wrapped 44);
    arrays are cast unsafely, as NumPy casts them. A ``fancy`` write (an integer array or a
    mask key) makes a NumPy scalar an array of its own dtype, cast unsafely too:
    ``x[mask] = np.int64(300)`` into int8 is 44, where ``x[0] = np.int64(300)`` raises."""
    if not isinstance(value, (bool, int, float, np.generic, list, tuple)) or (
            isinstance(value, (list, tuple)) and has_tracer(value)):
        return lift(value, target._trace)
    d = dt(target)
    if fancy and isinstance(value, np.generic):
        with np.errstate(all="ignore"):
            return constant(np.asarray(value).astype(d.np), trace=target._trace)
    try:
        written = np.empty(np.shape(value), d.np)
        written[...] = value
    except (OverflowError, ValueError) as e:
        info = np.iinfo(d.np) if d.is_int else None
        raise numpy_error(type(e), str(e), (
            f"write integers within {d.name}'s range [{info.min}, {info.max}] (NumPy does "
            "not wrap a Python number into a narrower integer dtype), or widen the array "
            "first, e.g. x = x.astype(np.int64)" if info else
            "write values the array's dtype can hold")) from None
    return constant(written, trace=target._trace)


def _check_writable(x: Tracer, value) -> None:
    from ..trace_state import current_trace
    if x._trace is not current_trace():
        from ..trace_function import MODEL_STATE_HINT
        raise unsupported("writing into an array of an enclosing trace (a value the function "
                          "closed over, inside grad/jit of an inner function)",
                          MODEL_STATE_HINT if id(x) in x._trace.state else
                          "pass it to the inner function as an argument, or return the new "
                          "value from it", cls=WriteRefusedError)
    trace_of(x, value)      # an escaped tracer is an error here, as anywhere
    if is_scalar_argument(x):
        raise numpy_error(TypeError, f"'numpy.{x.dtype}' object does not support item "
                          "assignment (a NumPy scalar argument is immutable)",
                          "rebind the name (s = s + 1), or pass a 0-d array, np.array(s), "
                          "to write into the caller's value")


def _set_masked(x, keys, value):
    """``x[mask] = v`` with a traced boolean mask: where(mask, v, x); ``v`` a scalar, an array
    of one element's shape, or a selection under an equal mask (its full-shape array)."""
    if len(keys) != 1:
        return _set_masked_after_slices(x, keys, value)
    mask = keys[0]
    if mask.shape != x.shape[:mask.ndim]:
        raise numpy_error(IndexError, f"boolean index of shape {mask.shape} does not match "
                          f"the array's shape {x.shape}",
                          "the mask's shape must be the leading part of the array's")
    rest = x.shape[mask.ndim:]
    if isinstance(value, Selection):
        v = value.full      # x[m] = f(y[m]): full-shape, where it matters equal to NumPy's
        if not same_mask(value.mask, mask):
            raise value.refusal("z[mask] = x[other_mask], a selection under another mask "
                                "(the elements would pair by position)")
        if len(value.rest) != len(rest):
            raise value.refusal(f"z[mask] = x[mask] of another rank (elements of shape "
                                f"{value.rest} into elements of shape {rest})")
    else:
        v = _as_written(value, x, fancy=True)
        if v.ndim > len(rest) and v.size != 1:
            raise unsupported("x[mask] = v with an array v of one value per selected element "
                              "(its length depends on the data)",
                              "write y[mask] with the same mask (x[mask] = f(y[mask])), or "
                              "np.where(mask, new_values_full, x) with a full-size array")
        if v.size == 1 and v.ndim > len(rest):
            v = reshape(v, ())
    store(x, select(rows(mask, len(rest)), fit(v, x), x))


def _set_masked_after_slices(x, keys, value):
    """``x[..., mask] = v``, ``x[:, mask] = v``: a traced mask among full slices (and at most
    one Ellipsis), with a value of one element: where(mask over its axes, v, x)."""
    at = [i for i, k in enumerate(keys) if isinstance(k, Tracer)]
    others = [k for k in keys if not isinstance(k, Tracer)]
    full = all(k is Ellipsis or (isinstance(k, slice) and k == slice(None)) for k in others)
    n_ellipsis = sum(k is Ellipsis for k in others)
    if len(at) != 1 or not full or n_ellipsis > 1:
        raise unsupported("a traced boolean mask combined with other indices in an "
                          "assignment", "apply the mask alone: x[mask] = v, or write "
                          "x[..., mask] = v with full slices only")
    mask = keys[at[0]]
    free = x.ndim - (len(others) - n_ellipsis) - mask.ndim
    lead = sum(k is not Ellipsis for k in keys[:at[0]]) + (
        max(free, 0) if any(k is Ellipsis for k in keys[:at[0]]) else 0)
    if free < 0 or mask.shape != x.shape[lead:lead + mask.ndim]:
        raise numpy_error(IndexError, f"boolean index of shape {mask.shape} does not match "
                          f"the array's shape {x.shape} at axis {lead}",
                          "the mask's shape must match the axes it indexes")
    v = None if isinstance(value, Selection) else _as_written(value, x, fancy=True)
    if v is None or v.size != 1:
        raise unsupported("x[..., mask] = v with a v of more than one value (its layout "
                          "depends on the data)", "write one value, or use np.where(mask, "
                          "new_values_full, x) with a full-size array")
    m = reshape(mask, (1,) * lead + mask.shape + (1,) * (x.ndim - lead - mask.ndim))
    store(x, select(m, fit(reshape(v, ()), x), x))


def _set_positions(x, key, value):
    """``x[integer arrays, ...] = v``: a scatter at the flat positions the key selects."""
    flat = reshape(x, (-1,)) if x.ndim != 1 else x
    if _constant_key(key):
        where_ = np.arange(x.size).reshape(x.shape)[key]       # NumPy's own reading of key
        if where_.ndim == 0 and _names_one_element(key):
            _check_element_value(value)
        v = fit(value, x, where_.shape, fancy=True)
        pos = where_.reshape(-1)
        # Repeated positions: NumPy's last write wins; keep only those writes.
        _, last_rev = np.unique(pos[::-1], return_index=True)
        keep = np.sort(pos.size - 1 - last_rev)
        v = reshape(v, (-1,))
        if keep.size != pos.size:
            v = emit(x._trace, ops.take, [v, constant(keep, trace=x._trace)], axis=0)
        positions = constant(pos[keep], trace=x._trace)
    else:
        grid = reshape(iota((x.size,), 0, dtypes.int64, x._trace), x.shape)
        positions = getitem(grid, key)
        if positions.ndim == 0 and _names_one_element(key):
            _check_element_value(value)
        v = reshape(fit(value, x, positions.shape, fancy=True), (-1,))
        positions = reshape(positions, (-1,))
    if positions.size == 0:
        if x.size == 0 and not _constant_key(key):
            # the indices are checked when the program runs (gather_linear's check of an empty
            # gather), as NumPy checks them though it writes nothing: x depends on them
            from .reductions import add_zero
            total = emit(x._trace, ops.reduce_sum, [reshape(positions, (-1,))], axes=(0,))
            store(x, add_zero(_plain(x), broadcast_to(convert(total, dt(x)), x.shape)))
        return
    new = emit(x._trace, ops.scatter, [_plain(flat), positions, v], axis=0)
    store(x, reshape(new, x.shape) if x.ndim != 1 else new)


def _plain(t: Tracer) -> Tracer:
    """A tracer of ``t``'s current value, not linked to it (an operand, not a view)."""
    return Tracer(t._value, t._trace)


def _constant_key(key) -> bool:
    keys = key if isinstance(key, tuple) else (key,)
    return not any(isinstance(k, Tracer) or (isinstance(k, (list, tuple)) and has_tracer(k))
                   for k in keys)


# -- in-place operators, out=, and the functions that write ------------------------------------


def update_in_place(x: Tracer, apply, other, symbol: str) -> Tracer:
    """``x op= y``: ``x``'s memory gets ``x op y``, cast as a ufunc's ``out`` is (same_kind)."""
    if _writes_outer_state(x):
        write_out(apply(lift(x, current_trace()), other), x, f"ufunc for {symbol}=",
                  casting="same_kind")
        return x
    _check_writable(x, other)
    write_out(apply(x, other), x, f"ufunc for {symbol}=", casting="same_kind")
    return x


def write_out(result, out, name: str, casting: str = "unsafe"):
    """``out=``: write ``result`` into ``out`` and return ``out``, as NumPy does (ufuncs cast
    same_kind, reductions and other functions unsafe)."""
    if out is None:
        return result
    if isinstance(out, tuple):
        if len(out) != 1:
            raise unsupported(f"{name} with several outputs in out=", "assign the results")
        out = out[0]
    if not isinstance(out, Tracer):
        raise unsupported(f"{name}(..., out=a NumPy array) inside a traced function (a "
                          "NumPy array cannot hold a traced value)",
                          "make out a traced array, e.g. np.zeros_like(x) of a traced x, or "
                          "assign the result")
    outer = _writes_outer_state(out)     # (np.add(self.buf, v, out=self.buf) inside grad)
    result = lift(result, current_trace() if outer else out._trace)
    if result.ndim > out.ndim or np.broadcast_shapes(result.shape, out.shape) != out.shape:
        raise numpy_error(ValueError, f"non-broadcastable output operand with shape "
                          f"{out.shape} doesn't match the broadcast shape {result.shape}",
                          "out must have the result's shape")
    if not outer:
        _check_writable(out, result)
    if casting != "unsafe" and not np.can_cast(result.dtype, out.dtype, casting):
        raise numpy_error(TypeError, f"Cannot cast {name} output from dtype('{result.dtype}') "
                          f"to dtype('{out.dtype}') with casting rule '{casting}'",
                          f"convert explicitly: x = (x op y).astype(np.{out.dtype})")
    if outer:
        _outer_state_write(out, result, "unsafe", True)
        return out
    store(out, broadcast_to(convert(result, dt(out)), out.shape))
    return out


def copyto(dst, src, casting="same_kind", where=True):
    """np.copyto."""
    if type(dst) is np.ndarray:
        # an array jit reads from outside (a closure model's buffer): its parameter, written
        # into (refused unless it is model state: external_arrays.ExternalArrays.state)
        lifted = outside_array(dst)
        dst = dst if lifted is None else lifted
    if not isinstance(dst, Tracer):
        raise unsupported("np.copyto into a NumPy array inside a traced function",
                          "write into a traced array, or assign the result")
    if _outer_state_write(dst, src, casting, where):
        return
    _check_writable(dst, src)
    s = lift(src, dst._trace)
    if casting != "unsafe" and not s._weak and not np.can_cast(s.dtype, dst.dtype, casting):
        raise numpy_error(TypeError, f"Cannot cast array data from dtype('{s.dtype}') to "
                          f"dtype('{dst.dtype}') according to the rule '{casting}'",
                          "pass casting='unsafe' or convert first")
    if casting != "unsafe" and s._weak and _kind_rank(dt(s)) > _kind_rank(dt(dst)):
        # a Python number: NumPy 2 refuses one of a higher kind (2.0 into ints, 1 into bools)
        raise numpy_error(TypeError, f"Cannot cast scalar from dtype('{s.dtype}') to "
                          f"dtype('{dst.dtype}') according to the rule '{casting}'",
                          "pass casting='unsafe' or convert first")
    new = fit(src, dst)
    if where is not True:
        new = select(where, new, dst)
    store(dst, new)


def _writes_outer_state(dst: Tracer) -> bool:
    """Whether a write into ``dst`` is one into an enclosing trace's model state that the
    current trace notes (``_outer_state_write``), as np.copyto's: an in-place operator,
    ``out=`` or ``x[k] = v`` of a custom Module's forward (``self.count += 1``)."""
    trace = current_trace()
    return (trace is not None and dst._trace is not trace and dst._view is None
            and trace.outer_state_writes is not None and id(dst) in dst._trace.state)


def _outer_state_write(dst, src, casting, where) -> bool:
    """``np.copyto`` into an enclosing trace's model state (a BatchNorm's running statistics
    closed over by the function grad differentiates): the new value is noted in the current
    trace, which grad hands back to the enclosing one (Trace.outer_state_writes); False where
    it is no such write."""
    trace = current_trace()
    if dst._trace is trace or trace is None or trace.outer_state_writes is None \
            or id(dst) not in dst._trace.state:
        return False
    now = lift(dst, trace)               # its value here (after an earlier write, that one)
    new = fit(src, now)
    if where is not True:
        new = select(where, new, now)
    trace.outer_state_writes[id(dst)] = (dst, Tracer(new._value, trace))
    return True


def _kind_rank(d) -> int:
    return 0 if d.is_bool else 1 if d.is_int else 2


def ufunc_at(ufunc_name: str, a, indices, b=None):
    """np.add.at / np.subtract.at: unbuffered, so repeated indices accumulate."""
    from .arithmetic import negative
    if not isinstance(a, Tracer):
        raise unsupported(f"np.{ufunc_name}.at on a NumPy array inside a traced function",
                          "write into a traced array, or compute the result with ops")
    if ufunc_name not in ("add", "subtract"):
        raise unsupported(f"np.{ufunc_name}.at", "np.add.at and np.subtract.at are supported")
    _check_writable(a, b)
    key = indices if isinstance(indices, tuple) else (indices,)
    if _constant_key(key):
        grid = np.arange(a.size).reshape(a.shape)[key]
        positions = constant(grid, trace=a._trace)
    else:
        positions = getitem(reshape(iota((a.size,), 0, dtypes.int64, a._trace), a.shape), key)
    # NumPy's ufunc.at casts the values to a's dtype unsafely (add.at of 2.7 into an int
    # array adds 2) and runs a's own loop
    v = fit(lift(1 if b is None else b, a._trace), a, positions.shape)
    if ufunc_name == "subtract":
        v = negative(v)
    flat = reshape(_plain(a), (-1,))
    new = emit(a._trace, ops.scatter_add, [flat, reshape(positions, (-1,)),
                                           reshape(v, (-1,))], axis=0)
    store(a, reshape(new, a.shape))


def fill_diagonal(a, val, wrap=False):
    """np.fill_diagonal: a write at the diagonal's positions."""
    if not isinstance(a, Tracer):
        raise unsupported("np.fill_diagonal of a NumPy array inside a traced function",
                          "make the array traced, e.g. np.zeros_like(x) of a traced x")
    if a.ndim < 2:
        raise numpy_error(ValueError, "array must be at least 2-d", "pass a matrix")
    if a.ndim > 2 and len(set(a.shape)) != 1:
        raise numpy_error(ValueError, "All dimensions of input must be of equal length",
                          "pass a square array")
    if a.ndim == 2:         # NumPy's rule: every (columns + 1)-th flat element
        step = a.shape[1] + 1
        end = a.size if wrap else a.shape[1] * a.shape[1]
        pos = np.arange(0, min(end, a.size), step)
    else:
        pos = np.ravel_multi_index((np.arange(a.shape[0]),) * a.ndim, a.shape)
    flat_key = np.unravel_index(pos, a.shape)
    v = _as_written(val, a)
    if v.size > 1:
        v = _repeat_to(reshape(v, (-1,)), pos.size)
    setitem(a, flat_key, v)


def _repeat_to(v: Tracer, n: int) -> Tracer:
    """v repeated cyclically to n elements (how np.fill_diagonal uses a sequence of values)."""
    idx = np.arange(n) % v.size
    return emit(v._trace, ops.take, [v, constant(idx, trace=v._trace)], axis=0)



# ---------------------------------------------------------------------------------------------
# np.put_along_axis, np.put, np.putmask, np.place: writes at positions of the same shape as
# their arguments (the traced array keeps its shape whatever the data)


def _write_target(a, name):
    if not isinstance(a, Tracer):
        raise unsupported(f"{name} into a NumPy array inside a traced function",
                          "write into a traced array (e.g. x = np.array(a) first)")
    return a


def put_along_axis(arr, indices, values, axis):
    """arr[i0, ..., indices, ..., iN] = values, the other axes' positions broadcast (NumPy's
    _make_along_axis_idx); ``axis=None`` writes into the flattened array."""
    arr = _write_target(arr, "np.put_along_axis")
    idx = lift(indices, arr._trace)
    if axis is None:
        if idx.ndim != 1:
            raise numpy_error(ValueError, "when axis=None, `indices` must have a single "
                              "dimension.", "pass 1-D indices")
        return put(arr, idx, values)
    if not dt(idx).is_int:
        raise numpy_error(IndexError, "`indices` must be an integer array",
                          "convert them with .astype(np.int64)")
    if idx.ndim != arr.ndim:
        raise numpy_error(ValueError, "`indices` and `arr` must have the same number of "
                          "dimensions", "give indices arr's number of dimensions")
    from .rules import normalize_axis
    axis = normalize_axis(axis, arr.ndim)
    key = tuple(idx if d == axis else
                np.arange(n).reshape([n if i == d else 1 for i in range(arr.ndim)])
                for d, n in enumerate(arr.shape))
    setitem(arr, key, values)


def put(a, ind, v, mode="raise"):
    """a.flat[ind] = v, ``v`` repeated cyclically over the positions; mode 'wrap'/'clip'
    fold the positions in, 'raise' checks constant ones."""
    from .arithmetic import clip, remainder
    from .gather import check_bounds, constant_value, unravel_index
    a = _write_target(a, "np.put")
    idx = reshape(lift(ind, a._trace), (-1,))
    if not dt(idx).is_int:
        raise numpy_error(TypeError, "Cannot cast array data from dtype('float64') to "
                          "dtype('int64') according to the rule 'safe'", "pass integer indices")
    n = a.size
    if mode == "wrap":
        idx = remainder(idx, n)
    elif mode == "clip":
        idx = clip(idx, 0, n - 1)
    else:
        value = constant_value(idx)
        if value is not None:
            check_bounds(np.broadcast_to(value, idx.shape), n, 0)
        from .arithmetic import add, less, logical_and, where
        idx = where(less(idx, 0), add(idx, n), idx)
        # a traced position still out of range becomes ``n``, past the end, so the write's
        # own check raises IndexError as NumPy's put does (-n - 1 became -1: the last one)
        inside = logical_and(less(idx, n), less(-1, idx))
        idx = where(inside, idx, np.asarray(n, dt(idx).np))
    if idx.size == 0:
        return
    vals = reshape(_as_written(v, a), (-1,))
    if vals.size == 0:
        return
    vals = _repeat_to(vals, idx.size) if vals.size != idx.size else vals
    setitem(a, unravel_index(idx, a.shape), vals)


def putmask(a, mask, values):
    """a.flat[i] = values.flat[i % values.size] where mask."""
    from .gather import resize
    a = _write_target(a, "np.putmask")
    vals = _as_written(values, a)
    if vals.size == 0:
        return
    m = broadcast_to(lift(mask, a._trace), a.shape)
    store(a, select(m, resize(vals, a.shape), _plain(a)))


def place(arr, mask, vals):
    """The n-th True position of ``mask`` gets vals[n % len(vals)]."""
    from .arithmetic import remainder, subtract, to_bool
    from .gather import take
    from .reductions import cumsum
    arr = _write_target(arr, "np.place")
    v = reshape(_as_written(vals, arr), (-1,))
    m = reshape(to_bool(lift(mask, arr._trace)), (-1,))
    if m.size != arr.size:
        raise numpy_error(ValueError, "place: mask and data must be the same size",
                          "pass a mask of the array's size")
    if v.size == 0:
        raise unsupported("np.place with no values (NumPy raises only if the mask has a "
                          "True, which needs the data)", "pass at least one value")
    nth = remainder(subtract(cumsum(m), 1), v.size)
    new = select(m, take(v, nth, 0, mode="clip"), reshape(_plain(arr), (-1,)))
    store(arr, reshape(new, arr.shape))
