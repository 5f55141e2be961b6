"""Tracing a Python function into an IR Function (``trace``): arguments become parameters,
results results; and ``inline``, which emits a Function's ops into the current trace."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import numpy as np

from ..ir import Function, verify
from ..ir.passes import dce
from .arguments import abstract_leaf
from .views import argument_root, is_array_0d
from .container_writes import ContainerWrites, first_change, record, snapshot
from .errors import TracerError, WriteRefusedError, concretizations, unsupported
from .external_arrays import SMALL_CONSTANT_ARRAY, ExternalArrays
from .leaks import check_no_leaks
from .numpy.patches import numpy_sees_tracers
from .numpy.lifting import convert, lift, trace_of
from .pytree import TreeDef, flatten, flatten_with_paths, state_leaves, unflatten
from .trace_state import Trace, current_trace
from .tracer import DeferredOperand, Tracer


_UNDER_TRANSFORM = "under a transform (grad, vjp, jvp, checkpoint, autocast)"


def _param_name(path: str) -> str:
    name = re.sub(r"\[['\"]?([^'\"\]]*)['\"]?\]", r".\1", path).strip(".")
    name = re.sub(r"[^A-Za-z0-9_.]", "_", name)
    return name or "arg"


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
    # Argument leaves the function wrote into (x[i] = v, x += y): their new values are the
    # Function's last results, after the user's, for the caller to copy back.
    written: list = field(default_factory=list)
    written_names: list = field(default_factory=list)
    # What the function did to the dicts and lists among its arguments (state["m"] = v, a new
    # key, l.append(x)), for the caller to do to its own after each call; the values it needs
    # from the program are the Function's last results, after the written ones.
    containers: ContainerWrites | None = None
    # result index -> k: the function returned the argument leaf written[k] itself
    returns_written: dict = field(default_factory=dict)
    # Whether the trace depends on its arguments' memory layouts (a reshape or ravel of one
    # is a view or a copy by its strides): it holds for the layouts it was traced with only
    layout_dependent: bool = False
    # (leaf index, dtype, where): Python-int arguments converted to a narrower integer dtype,
    # whose values the caller checks (driver/entry.py)
    int_ranges: list = field(default_factory=list)
    # Where the function first wrote into each of ``written`` (a SourceLocation or None), for
    # the caller's errors about that write (a read-only argument, one sharing memory)
    written_at: list = field(default_factory=list)
    # (leaf index, whether it was a NumPy scalar) of the 0-d leaves whose kind the trace
    # depends on (written into, viewed, returned unchanged: a NumPy scalar is immutable, a 0-d
    # array is not); None if none
    scalar_kinds: tuple | None = None
    # Every leaf's name (x, params['w']), for messages
    leaf_names: list = field(default_factory=list)
    # Arrays read from globals and closures left constants where Python code needed their
    # values (external_arrays.py): (label, array, its bytes when traced), for the caller to
    # trace again when one changes in place
    constant_arrays: list = field(default_factory=list)
    # The names of the arrays read from outside (global W) among ``captured``, for messages
    captured_names: list = field(default_factory=list)
    # Arrays ops took through attributes and containers (layers[i].W): (label, array, the
    # paths to it, whether it is among ``captured``), which the caller reads again at every
    # call (external_arrays.reached)
    reached: list = field(default_factory=list)
    # Positions in ``captured`` of the model state read from outside (a Module's buffers) that
    # the function wrote into: their new values are the Function's last results
    written_outside: list = field(default_factory=list)
    # An enclosing trace's model state the function wrote into (``state_writes``): its new
    # values are the Function's last results
    outer_written: list = field(default_factory=list)
    # Whether each result leaf is a 0-d array eagerly (np.array(v), np.zeros(()), a view such
    # as np.squeeze(x) or x.reshape(())), not a NumPy scalar as a ufunc's or a reduction's is
    out_arrays_0d: list = field(default_factory=list)

    @property
    def n_results(self) -> int:
        """How many of the Function's results are the user's (then ``written``, then the
        values for ``containers``)."""
        return (len(self.function.results) - len(self.written)
                - (self.containers.n_values if self.containers else 0)
                - len(self.written_outside) - len(self.outer_written))


def trace(fn, args: tuple, kwargs: dict, name: str, arg_names: list[str] | None = None,
          roots: tuple = (), writes_back: bool = False, layouts: bool = False,
          context: str = _UNDER_TRANSFORM, external_arrays: bool = False,
          outside: tuple = (), reach: tuple = (), writable: frozenset = frozenset(),
          state_writes: bool = False) -> Traced:
    """Trace ``fn`` on tracers standing for the leaves of ``(args, kwargs)``. ``roots``:
    other caller's objects ((name, object) pairs, e.g. static arguments) that must not be left
    holding a tracer. ``writes_back``: the caller copies the new values of arguments the
    function wrote into back to them, and changes its containers as the function changed the
    arguments' (jit); otherwise either is an error. ``layouts``: array arguments have their
    own strides (else each is taken as C-contiguous), see views.argument_root. ``context``:
    where ``fn`` runs, for the refusal of a write that cannot be written back.
    ``external_arrays``: in a top-level trace, the writeable arrays ``fn`` reads from its
    globals and closures become parameters after the arguments', the arrays themselves in
    ``Traced.captured`` for the caller to pass at every call (external_arrays.py); where
    Python code needed one's values, ``fn`` is traced again with the small ones as constants
    (``Traced.constant_arrays``, whose contents the caller checks), then with all.
    ``outside``: (label, array) of arrays the caller found ``fn`` reads through attributes
    and containers (``cfg.scale``, ``params["W"]``: its guards), made parameters as well.
    ``reach``: (label, value) of other objects whose arrays are read at every call as those
    of globals are (a static argument, a jitted method's ``self``). ``writable``: positions
    of leaves the function may write into even without ``writes_back`` (grad's model state,
    pytree.state_leaves): their new values are results after the user's (``written``).
    ``state_writes``: writes into an enclosing trace's model state are noted, their values
    results too (``outer_written``), for the caller (grad) to write there."""
    if not (external_arrays and current_trace() is None):
        return _trace(fn, args, kwargs, name, arg_names, roots, writes_back, layouts, context,
                      None, writable=writable, state_writes=state_writes)
    once = functools.partial(_trace, fn, args, kwargs, name, arg_names, roots, writes_back,
                             layouts, context, outside=outside, reach=reach, writable=writable,
                             state_writes=state_writes)
    try:
        return once(1)
    except _NeedsConstants as e:
        if e.smallest_lifted <= SMALL_CONSTANT_ARRAY:
            try:
                return once(SMALL_CONSTANT_ARRAY + 1)
            except _NeedsConstants:
                pass
    return once(float("inf"))


# What to do where a transform cannot write a model's state (a BatchNorm's running statistics
# in training mode): a copy or a returned value is no way out of a layer's own write
MODEL_STATE_HINT = ("it is a model's state (a buffer: BatchNorm's running statistics, updated "
                    "in training mode), which jit, grad, checkpoint and autocast let a forward "
                    "pass write, but not vmap, jvp, vjp, jacfwd, jacrev or a loop body (scan, "
                    "fori_loop, while_loop, cond): call model.eval() first to normalize with "
                    "the running statistics, or run the loop in Python")


class _NeedsConstants(Exception):
    """A trace with lifted arrays failed where Python code needed a value (``if W[0] > 0``,
    ``W.tolist()``) or an op refused one: it is made again with more of them constants."""

    def __init__(self, smallest_lifted: int):
        super().__init__()
        self.smallest_lifted = smallest_lifted


def _trace(fn, args, kwargs, name, arg_names, roots, writes_back, layouts, context,
           constant_below, outside=(), reach=(), writable=frozenset(),
           state_writes=False) -> Traced:
    """One trace; ``constant_below``: None to leave every array ``fn`` reads from outside a
    constant, else lift those of at least this many elements."""
    leaves, paths, in_tree = flatten_with_paths((args, kwargs))
    names = [_rename(p, arg_names) for p in paths]
    with Trace(name) as tr:
        tracers = []
        for leaf, nm in zip(leaves, names):
            t, weak = abstract_leaf(leaf, nm)
            tracers.append(Tracer(tr.builder.param(t, _param_name(nm)), tr, weak))
            argument_root(tracers[-1], leaf, layouts)
            if isinstance(leaf, (np.generic, np.ndarray)) and t.shape == ():
                tr.zero_d[tracers[-1]._val] = isinstance(leaf, np.generic)
        originals = [t._val for t in tracers]
        tr.state = {id(tracers[i]) for i in state_leaves((args, kwargs))}
        tr.outer_state_writes = {} if state_writes else None
        a, k = unflatten(in_tree, tracers)
        before = snapshot((a, k), in_tree)
        externals = (ExternalArrays(tr, _param_name, constant_below, outside)
                     if constant_below is not None else None)
        tr.external = externals
        if externals is not None:
            for label, value in reach:
                externals.reach(value, label)
        run = externals.shadow(fn) if externals else fn
        if externals is not None:
            externals.snapshot()
        made = concretizations()
        try:
            with numpy_sees_tracers():
                out = run(*a, **k)
            out_leaves, out_tree = flatten(out)
            _check_results(out, out_leaves, name)
            results = [lift(x, tr) for x in out_leaves]
        except TracerError as e:
            if externals is not None and externals.tracers \
                    and not isinstance(e, WriteRefusedError):
                raise _NeedsConstants(externals.smallest_lifted()) from e
            raise
        if externals is not None and externals.tracers and concretizations() != made:
            # Python needed a value and the user's code caught the error (try: int(N) except
            # TypeError: ...): it took another path than it does on the arrays themselves
            raise _NeedsConstants(externals.smallest_lifted())
        if externals is not None and (w := externals.written(writes_back)) is not None:
            raise unsupported(f"a function that writes into {w[0]}, an array it reads from "
                              "outside itself (x[i] = v, x += y, out=x)",
                              "pass the array as an argument (jit copies the writes back into"
                              " it), or write into a copy", loc=w[1])
        rename = functools.partial(_rename, arg_names=arg_names)
        check_no_leaks(tr, [(n, x) for n, x in zip(arg_names or (), args) if x is not None]
                       + [(f"args[{i}]", x) for i, x in enumerate(args[len(arg_names or ()):])]
                       + [(n, x) for n, x in kwargs.items()] + list(roots))
        changed = first_change(before, rename)
        containers, container_values = (record(before, tracers, tr, rename)
                                        if changed and writes_back else (None, []))
        written = [i for i, (t, v) in enumerate(zip(tracers, originals)) if t._val is not v]
        # Read while the trace is current: a stale read-only gather view (np.diagonal of an
        # array written after it) is brought up to date by running its NumPy function again.
        # A model's state read from outside (a closure's BatchNorm): written back, after all
        outside_state = externals.state() if externals is not None and writes_back else []
        outer = list(tr.outer_state_writes.values()) if state_writes else []
        values = ([r._value for r in results] + [tracers[i]._value for i in written]
                  + [v._value for v in container_values]
                  + [t._value for t, _ in outside_state] + [v._value for _, v in outer])
    first: dict = {}
    repeats = {}
    for i, x in enumerate(out_leaves):
        j = first.setdefault(id(x), i)
        if j != i and isinstance(x, Tracer):
            repeats[i] = j
    written_at = [tr.written_at.get(id(tracers[i])) for i in written]
    # A 0-d array argument returned (as it is, or after x += 1 into it) is that array in NumPy,
    # not a NumPy scalar as a NumPy scalar argument is: the trace then keys on which it is
    zero_d_args = {id(t): isinstance(leaf, np.ndarray) for t, leaf in zip(tracers, leaves)
                   if isinstance(leaf, (np.generic, np.ndarray)) and np.ndim(leaf) == 0}
    returned = {id(x) for x in out_leaves}
    kinds_read = [i for i, (t, v) in enumerate(zip(tracers, originals))
                  if v in tr.scalar_kinds_read or (id(t) in zero_d_args and id(t) in returned)]
    refused = [k for k, i in enumerate(written) if i not in writable]
    if refused and not writes_back:
        k = refused[0]
        raise unsupported(f"a function that writes into its argument {names[written[k]]} (x[i]"
                          f" = v, x += y, out=x) {context}",
                          MODEL_STATE_HINT if id(tracers[written[k]]) in tr.state else
                          "write into a copy (x = x.copy() first) or return the new value",
                          loc=written_at[k])
    if changed and not writes_back:
        raise unsupported(f"a function that {changed} {context}",
                          "change a copy (d = dict(d), l = list(l) first) or return the new "
                          "value")
    returns_written = {i: written.index(j) for i, x in enumerate(out_leaves)
                       for j in written if x is tracers[j]}
    function, captured = dce(tr.finish(values)), tr.captured
    labels = [label for _, _, label in externals.tracers] if externals is not None else []
    if externals is not None and externals.tracers:
        function, captured, labels = _without_unused(function, len(leaves), captured, labels,
                                                     {id(a) for _, a in outside_state})
    function = verify(function)
    traced = Traced(function, out_tree, [r._weak for r in results], captured, repeats,
                  written, [names[i] for i in written], containers, returns_written,
                  tr.read_layout, [(i, d, loc) for i, v in enumerate(originals)
                                   for d, loc in tr.int_casts.get(v, ())], written_at,
                  tuple((i, isinstance(leaves[i], np.generic)) for i in kinds_read) or None,
                  names,
                  externals.constants_after() if externals is not None else [])
    traced.captured_names = labels
    traced.written_outside = [next(k for k, c in enumerate(captured) if c is a)
                              for _, a in outside_state]
    traced.outer_written = [t for t, _ in outer]
    traced.out_arrays_0d = [(isinstance(x, Tracer) and x.ndim == 0
                             and (x._view is not None or is_array_0d(x)
                                  or zero_d_args.get(id(x), False)))
                            or (type(x) is np.ndarray and x.ndim == 0)    # np.array(2.0)
                            for x in out_leaves]
    if externals is not None:
        ids = {id(a) for a in captured}
        traced.reached = [r for r in externals.reached() if not r[3] or id(r[1]) in ids]
    return traced


def _without_unused(function: Function, n_leaves: int, captured: list, labels: list,
                    written: set):
    """The trace's lifted arrays that no op reads dropped (a global the function read on a
    path it did not take, or only for its shape), but for those written back (``written``:
    their ids), which the caller must still find."""
    used = {v for op in function.ops for v in op.operands} | set(function.results)
    keep = [i for i, p in enumerate(function.params[n_leaves:])
            if p in used or id(captured[i]) in written]
    if len(keep) == len(captured):
        return function, captured, labels
    params = function.params[:n_leaves] + [function.params[n_leaves + i] for i in keep]
    return (Function(function.name, params, function.ops, function.results),
            [captured[i] for i in keep], [labels[i] for i in keep])


def scalar_kinds(leaves) -> tuple:
    """Which leaves are NumPy scalars."""
    return tuple(isinstance(x, np.generic) for x in leaves)


def scalar_kinds_hold(leaves, kinds) -> bool:
    """Whether the leaves a trace read the kind of (Traced.scalar_kinds: (index, is a NumPy
    scalar) pairs) are of those kinds: only those, as a trace that returns a 0-d array argument
    unchanged holds whatever the other 0-d arguments are."""
    return all(isinstance(leaves[i], np.generic) is k for i, k in kinds)


_RESULT_LEAVES = (Tracer, bool, int, float, np.ndarray, np.generic, DeferredOperand)


def _check_results(out, out_leaves, name: str) -> None:
    """A result that is no array (a generator, a map, a dataclass): an error naming the
    function and the result, not "an operand of type ..." pointing at the caller's line."""
    if all(isinstance(x, _RESULT_LEAVES) for x in out_leaves):
        return
    _, paths, _ = flatten_with_paths(out)
    i = next(i for i, x in enumerate(out_leaves) if not isinstance(x, _RESULT_LEAVES))
    x, where = out_leaves[i], (f" (result{paths[i]})" if paths[i] else "")
    lazy = hasattr(x, "__next__") or isinstance(x, (range, map, filter, zip))
    raise unsupported(
        f"a {type(x).__name__} as a result of {name}{where}, not an array,",
        "consume it inside the function: return tuple(...) or np.stack(list(...))" if lazy
        else "return arrays, Python numbers, strings, or tuples/lists/dicts/namedtuples of "
        "them; register a class of your own with tracejit.register_pytree_node")


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
    trace = trace_of(*inputs)
    env = {}
    for p, x in zip(function.params, inputs):
        env[p] = lift(x, trace)
        if env[p]._value.type != p.type:
            env[p] = convert(env[p], p.type.dtype)
    for op in function.ops:
        new = trace.builder.emit(op.opdef, [env[v]._value for v in op.operands], loc=op.loc,
                                 regions=op.regions or None, **op.attrs)
        for r, nr in zip(op.results, new.results):
            env[r] = Tracer(nr, trace)
    return [env[r] for r in function.results]
