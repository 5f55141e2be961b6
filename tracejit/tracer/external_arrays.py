"""Arrays a traced function reads from its globals and closures, made inputs of the trace.

Eagerly, ``x @ W`` with a global ``W`` reads ``W``'s values at each call, also after the
training loop changed them in place (``W -= lr * dW``). jax.jit bakes such an array into the
program as a constant and documents that as a sharp edge; torch.compile makes the tensors a
function reads from its globals inputs of its graph. tracejit does as torch.compile: before a
top-level trace, ``shadow`` copies the function, and the user's functions it reaches through
its globals and closures (a helper it calls, the function ``grad`` wraps), giving each copy
globals and closure cells that hold a tracer where the original holds a writeable array. Each
such array becomes a parameter of the trace, passed by the caller at every call
(``Traced.captured``). The user's functions, globals and cells are left as they are: the
copies share their code, so errors and tracebacks name the user's lines.

Arrays held in attributes and containers (``cfg.scale``, ``params["W"]``, a global list of
layer objects each with its ``W``) cannot be swapped for tracers without copying the user's
objects, so they stay where they are and are noted instead (``ExternalArrays.reach``, and the
guards' attribute chains, which the caller passes as ``outside``): an op that takes one of
them (lifting.constant) makes it a parameter like a global's. A small one the code names
(``cfg.flags``) is also checked for changes at every call, since Python code may have read
its values on the array itself (``if cfg.flags[0] > 0``).

What stays a constant: read-only arrays (they cannot change), arrays deeper than
``REACH_DEPTH`` or past ``REACH_ITEMS`` in a container, a function's arrays where it stores
into its globals or its enclosing function's variables (``global step``, ``nonlocal``) or uses
``globals()``, ``eval`` or ``exec``, arrays it passes to ``isinstance`` or ``type`` (a tracer
is no ndarray), and every array of a trace in which Python code needed a value (``if W[0] >
0``, ``W.tolist()``): that trace is made again with them as constants (trace_function.py).
Rebinding a name (``W = new``) or a guarded attribute (``cfg.scale = new``) is seen by the
guards (driver/guards.py), which follow the same functions; an array reached otherwise is read
again by its path (``resolve``) at every call (guards.ReachedArrays: ``layer.W = new`` in a
loop over ``model.layers``, ``layers[i] = new``, a layer appended). A view Python made of a
reached array (``layer.W.T``) is that array's tracer viewed (``view_of``); what Python code
computes from one itself (``layer.b.sum()``, ``if layer.mask[0]:``) stays fixed.
"""
from __future__ import annotations

import functools
import types
import zlib

import numpy as np

from .arguments import abstract_leaf
from .pytree import is_registered_node, state_children
from .tracer import Tracer
from .user_code import (CELL_STORES, MISSING, READS_GLOBALS, STORES, cell_value, global_names,
                        is_library, stored_names, type_checked)
from .views import argument_root

# Arrays Python code reads the values of are left constants, and those this small are checked
# for changes at every call (a few microseconds); larger ones are only lifted
SMALL_CONSTANT_ARRAY = 4096
CHECKSUM_MAX_BYTES = 1 << 28     # arrays reached from outside checked for trace-time writes
MAX_DEPTH = 3          # user functions reached through others, as the guards follow them
MAX_FUNCTIONS = 64
# How far into the user's objects and containers arrays are looked for (ExternalArrays.reach)
REACH_DEPTH = 3
REACH_ITEMS = 64
REACH_OBJECTS = 256
def liftable(value) -> bool:
    """An array the function may see changed in place between calls."""
    return type(value) in (np.ndarray, np.memmap) and value.flags.writeable


class Shadows:
    """Copies of a function and of the user's functions it reaches, their arrays replaced by
    what ``lift(array, name, label, constant)`` gives (a tracer; the array itself to leave it a
    constant: always where ``constant``, for an array the code passes to ``isinstance``)."""

    def __init__(self, lift, reach=None):
        self.lift = lift
        self.reach = reach
        self._done: dict = {}        # id(original) -> its copy (or the original)
        self._held: list = []        # the originals, so that their ids stay theirs
        self._reached: set = set()   # ids of functions reached again while being copied

    def of(self, obj, depth: int = 0):
        key = id(obj)
        if key in self._done:
            self._reached.add(key)
            return self._done[key]
        if depth > MAX_DEPTH or len(self._done) >= MAX_FUNCTIONS:
            return obj
        self._done[key] = obj            # a cycle (a recursive function) reaches the original
        self._held.append(obj)
        new = self._copy(obj, depth)
        self._done[key] = new
        return new

    def _copy(self, obj, depth: int):
        if isinstance(obj, types.FunctionType):
            return self._function(obj, depth)
        if isinstance(obj, types.MethodType):
            func = self.of(obj.__func__, depth)
            return obj if func is obj.__func__ else types.MethodType(func, obj.__self__)
        if isinstance(obj, functools.partial):
            func = self.of(obj.func, depth)
            return obj if func is obj.func else functools.partial(func, *obj.args,
                                                                  **obj.keywords)
        # jit's and grad's wrappers: what they call inside a trace (__tracejit_body__)
        body = getattr(type(obj), "__tracejit_body__", None)
        if body is not None:
            inner = body.__get__(obj)
            new = self.of(inner, depth)
            return obj if new is inner else new
        return obj

    def _function(self, fn: types.FunctionType, depth: int):
        code = fn.__code__
        user = not is_library(code.co_filename)
        # A library's or tracejit's own function (grad's wrapper) is only a way through to the
        # user's functions its closure holds: its own globals are not the user's.
        cells = fn.__closure__
        new_cells = None
        checked = type_checked(code) if user else ()
        if cells:
            written = stored_names(code, CELL_STORES)
            out = []
            for name, cell in zip(code.co_freevars, cells):
                v = cell_value(cell)
                new = v
                if v is not MISSING and name not in written:
                    if user and liftable(v):
                        new = self.lift(v, name, f"{name} (closed over by {fn.__name__})",
                                        name in checked)
                    else:
                        if user and self.reach is not None:
                            self.reach(v, name)
                        if (user or isinstance(v, types.FunctionType)
                                or hasattr(type(v), "__tracejit_body__")):
                            # (a library's closure may use an object it holds other than by
                            # calling it: only its functions are followed, and jit's and
                            # grad's wrappers, which it calls: jit(grad(loss)) holds grad's)
                            new = self.of(v, depth + user)     # (a library's: no deeper)
                out.append(cell if new is v else types.CellType(new))
            if any(c is not o for c, o in zip(out, cells)):
                new_cells = tuple(out)
        defaults = self._defaults(fn, checked) if user else None
        if defaults is not None:
            cells = cells if new_cells is None else new_cells
            new_cells = cells if cells is not None else ()
        g = fn.__globals__
        new_globals = None
        if user and not stored_names(code, STORES) and not global_names(code) & READS_GLOBALS:
            # The copy is made first, its globals filled below: a recursive call (through
            # the globals) reaches the copy, not the original with the arrays constants.
            new_globals = {}
            copy = self._copy_of(fn, new_globals, cells if new_cells is None else new_cells,
                                 defaults)
            self._done[id(fn)] = copy
            self._reached.discard(id(fn))
            changed = {}
            for name in global_names(code):
                v = g.get(name, MISSING)
                if v is MISSING or isinstance(v, types.ModuleType):
                    continue
                if liftable(v):
                    new = self.lift(v, name, f"global {name}", name in checked)
                else:
                    if self.reach is not None:
                        self.reach(v, name)
                    new = self.of(v, depth + 1)
                if new is not v:
                    changed[name] = new
            if changed or new_cells is not None or id(fn) in self._reached:
                new_globals.update(g)
                new_globals.update(changed)
                return copy
            self._done[id(fn)] = fn
            new_globals = None
        if new_cells is None:
            return fn
        return self._copy_of(fn, g, new_cells or None, defaults)

    def _defaults(self, fn: types.FunctionType, checked):
        """(defaults, kwdefaults) of the copy of the user's ``fn`` with its default argument
        values that are writeable arrays lifted (``def f(x, w=np.ones(3))``: Python binds the
        array itself, read at every call as a global is, and a write into it refused), or
        None if it has none."""
        code = fn.__code__
        names = code.co_varnames[code.co_argcount - len(fn.__defaults__ or ()):code.co_argcount]
        pos = [(n, v) for n, v in zip(names, fn.__defaults__ or ())]
        kw = list((fn.__kwdefaults__ or {}).items())
        if not any(liftable(v) for _, v in pos + kw):
            return None
        lifted = {n: self.lift(v, n, f"{n} (the default of {fn.__name__})", n in checked)
                  if liftable(v) else v for n, v in pos + kw}
        return (tuple(lifted[n] for n, _ in pos) or None,
                {n: lifted[n] for n, _ in kw} if fn.__kwdefaults__ is not None else None)

    @staticmethod
    def _copy_of(fn: types.FunctionType, g: dict, cells, defaults=None):
        argdefs, kwdefaults = defaults or (fn.__defaults__, fn.__kwdefaults__)
        copy = types.FunctionType(fn.__code__, g, fn.__name__, argdefs, cells)
        copy.__kwdefaults__ = kwdefaults
        copy.__qualname__ = fn.__qualname__
        copy.__module__ = fn.__module__
        copy.__doc__ = fn.__doc__
        copy.__dict__.update(fn.__dict__)
        return copy


class ExternalArrays:
    """The arrays a top-level trace lifted (``Shadows.lift``): each a parameter after the
    arguments', appended to the trace's ``captured`` for the caller to pass at every call.
    Those of fewer than ``constant_below`` elements stay constants (``constants``: label,
    array, its bytes now), for the caller to check that they have not changed."""

    def __init__(self, trace, param_name, constant_below: float, outside=()):
        self.trace = trace
        self._param_name = param_name
        self._constant_below = constant_below
        self._by_id: dict = {}
        self.tracers: list = []          # (tracer, its first value, label)
        self.constants: list = []
        # Arrays reached through attributes and containers (cfg.scale, params["W"],
        # layers[0]): id -> (array, label, named). They stay where they are (the user's
        # objects are not copied); an op that takes one makes it a parameter (``found``).
        # ``named``: the code names it (the caller's guards found it), so Python code may
        # read its values too (if cfg.flags[0]:): a small one is also checked for changes.
        self._outside: dict = {}
        # id -> [(root, steps)]: where ``reach`` found each (``resolve`` reads it again), so
        # that the caller sees one rebound (``layer.W = layer.W - lr * dW``, a layer appended
        # to the list the code iterates) in those it used (``reached``)
        self._paths: dict = {}
        self._used: dict = {}            # id -> the array, of those an op took
        self._by_owner = None            # (len(_outside), {id(memory owner): arrays})
        self._visited = 0
        self._in_models: set = set()     # ids of the dicts and submodules of models reached
        self._checksums: dict = {}       # id -> checksum of an outside array (``snapshot``)
        # ids of the arrays reached as a model's state (an nn.Module's buffers: BatchNorm's
        # running statistics), which the function may write into: written back (``state``)
        self._state_ids: set = set()
        for label, array in outside:
            self._outside.setdefault(id(array), (array, label, True))

    def shadow(self, fn):
        return Shadows(self.lift, self.reach).of(fn)

    def reach(self, value, label: str, depth: int = 0, path=None, in_node=False,
              free=False) -> None:
        """Note the writeable arrays held by ``value`` (a global or closure value of the
        user's code that is no array itself, a static argument, a jitted method's ``self``):
        its items if it is a list, tuple or dict, its own attributes if it is an object, the
        globals and closure variables of a user's function (switch's branches in a list), a
        bound method's object and function, a partial's function and arguments, to
        ``REACH_DEPTH`` levels, ``REACH_ITEMS`` of each (``layers[i]`` in a loop,
        ``model.layers[0].W``), with the path to each (``resolve``)."""
        # A registered pytree node (an nn.Module) holds its arrays and submodules in dicts of
        # its own (_parameters, _modules): those and the submodules in them (``free``) are no
        # level of depth and count in no limit but a model's size, or a global Sequential's
        # weights (model._modules["0"]._parameters["weight"], four levels; a 65th layer)
        # stayed constants of the trace: load_state_dict, an in-place change or an optimizer
        # step was not seen.
        if depth >= REACH_DEPTH or (not free and self._visited >= REACH_OBJECTS):
            return
        if free:
            if id(value) in self._in_models:          # (a module holding its parent)
                return
            self._in_models.add(id(value))
        else:
            self._visited += 1
        root, steps = (value, ()) if path is None else path
        node = is_registered_node(value)
        if node:
            self._state_ids.update(id(b) for b in state_children(value) if liftable(b))
        limit = None if free or node else REACH_ITEMS
        if type(value) in (list, tuple):
            n = len(value)
            items = ((f"{label}[{i}]", ("item", i, n), v)
                     for i, v in enumerate(value[:limit]))
        elif type(value) is dict:
            n = len(value)
            items = ((f"{label}[{k!r}]", ("key", k, n), v)
                     for k, v in list(value.items())[:limit])
        elif isinstance(value, types.FunctionType):
            # a function held in a container or an attribute (switch's branches in a global
            # list, a step function in a dict): neither copied (Shadows) nor guarded, so the
            # arrays its globals and closure cells hold are reached here, by their path
            items = _function_items(value, label)
        elif type(value) in _MEMBERS:
            # a bound method's object and function, a partial's function and arguments (the
            # step function of a loop as a global: STEP = model.step, partial(body, W))
            items = ((f"{label}.{k}", ("member", k, None), getattr(value, k))
                     for k in _MEMBERS[type(value)])
        elif isinstance(value, (types.ModuleType, type, types.MethodType,
                                np.generic, str, bytes, int, float, complex, bool)) \
                or value is None:
            return
        else:
            try:
                d = object.__getattribute__(value, "__dict__")
            except AttributeError:
                d = {}
            if type(d) is not dict:
                return
            # (a slotted class's attributes too: its slots' descriptors run no user code)
            own = [(k, ("attr", k, None), v) for k, v in d.items()] + [
                (k, ("slot", k, None), v) for k, v in _slot_values(value)]
            items = ((f"{label}.{k}", step, v) for k, step, v in own[:limit])
        for name, step, v in items:
            if liftable(v):
                self._outside.setdefault(id(v), (v, name, False))
                paths = self._paths.setdefault(id(v), [])
                if len(paths) < 4:
                    paths.append((root, steps + (step,)))
            else:
                flat = (node and type(v) is dict) or (in_node and is_registered_node(v))
                self.reach(v, name, depth + (not flat), (root, steps + (step,)),
                           in_node=node and type(v) is dict, free=flat)

    def found(self, array):
        """The tracer for ``array`` if it is one of the arrays reached from outside (else
        None): a parameter, passed at every call, so a change in place is seen; or the
        array itself where it stays a constant (a small one, in a trace made again)."""
        entry = self._outside.get(id(array))
        if entry is None or entry[0] is not array:
            return None
        out = self.lift(array, entry[1].split(".")[-1].split("[")[0], entry[1])
        self._used[id(array)] = array
        return out if isinstance(out, Tracer) else None

    def reaches(self, array) -> bool:
        """Whether ``array`` is one of the arrays reached from outside (see ``found``)."""
        entry = self._outside.get(id(array))
        return entry is not None and entry[0] is array

    def view_of(self, array):
        """The tracer for ``array`` if it is a view of one of the arrays reached from outside
        (``layer.W.T``, ``cfg.table[:, 0]``, ``params["W"].reshape(-1)``: Python code made
        it from the array itself), else None: that array's tracer viewed the same way, so
        that a change in place is seen through the view too (baked in, it was not)."""
        owner = array.base
        if owner is None or array.size == 0:
            return None
        by_owner = self._by_owner
        if by_owner is None or by_owner[0] != len(self._outside):
            index: dict = {}
            for a, _, _ in self._outside.values():
                index.setdefault(id(a if a.base is None else a.base), []).append(a)
            by_owner = self._by_owner = (len(self._outside), index)
        for r in by_owner[1].get(id(owner), ()):
            if r.dtype != array.dtype or not r.flags.c_contiguous or r.size == 0:
                continue
            size = r.itemsize
            start = (array.__array_interface__["data"][0]
                     - r.__array_interface__["data"][0])
            if start % size or any(st % size for st in array.strides):
                continue
            start //= size
            steps = [st // size for st in array.strides]
            low = start + sum(min(0, st) * (n - 1) for st, n in zip(steps, array.shape))
            high = start + sum(max(0, st) * (n - 1) for st, n in zip(steps, array.shape))
            if low < 0 or high >= r.size:
                continue
            t = self.found(r)
            if t is None:
                return None
            if start == 0 and array.ndim == r.ndim and array.ndim > 1:
                # a transpose (W.T, np.transpose(W, axes)): the axes whose strides these are
                rs = [st // size for st in r.strides]
                perm = [rs.index(st) if st in rs else -1 for st in steps]
                if sorted(perm) == list(range(r.ndim)) and \
                        [r.shape[k] for k in perm] == list(array.shape):
                    return t.transpose(perm)
            # any other view: the elements it addresses, gathered from the flat array
            flat = np.full(array.shape, start, np.int64)
            for d, (st, n) in enumerate(zip(steps, array.shape)):
                shape = [1] * array.ndim
                shape[d] = n
                flat = flat + (np.arange(n, dtype=np.int64) * st).reshape(shape)
            return t.reshape(-1)[flat]
        return None

    def reached(self) -> list:
        """(label, array, its paths, whether it is a parameter) of each array an op took
        through attributes and containers, for the caller to read again at every call
        (``resolve``): one rebound (``layer.W = new``, ``layers.append(l)``) is passed in
        its place, or traces again."""
        out = []
        for key, array in self._used.items():
            paths = self._paths.get(key)
            if paths:
                out.append((self._outside[key][1], array, tuple(paths),
                            key in self._by_id))
        return out

    def constants_after(self) -> list:
        """``constants`` with the small named arrays no op made a parameter: Python code may
        have read their values (``if cfg.flags[0]:`` runs on the array itself), so they are
        checked for changes at every call."""
        out = list(self.constants)
        held = {id(a) for _, a, _ in out}
        for key, (array, label, named) in self._outside.items():
            if named and key not in self._by_id and key not in held \
                    and array.size <= SMALL_CONSTANT_ARRAY:
                out.append((label, array, array.tobytes()))
        return out

    def lift(self, array: np.ndarray, name: str, label: str, constant: bool = False):
        tracer = None if constant else self._by_id.get(id(array))
        if tracer is not None:
            return tracer
        if constant or array.size < self._constant_below:
            if array.size <= SMALL_CONSTANT_ARRAY and all(a is not array
                                                          for _, a, _ in self.constants):
                self.constants.append((label, array, array.tobytes()))
            return array
        try:
            t, _ = abstract_leaf(array, label)
        except (TypeError, ValueError, OverflowError):
            # a dtype tracejit cannot hold (complex, object): a constant, as before; a small
            # one is checked for changes at every call, as one Python reads
            return self.lift(array, name, label, constant=True)
        tracer = Tracer(self.trace.builder.param(t, self._param_name(name)), self.trace)
        argument_root(tracer, array, False)
        if t.shape == ():
            self.trace.zero_d[tracer._val] = False       # a 0-d array: written in place
        self._by_id[id(array)] = tracer
        if id(array) in self._state_ids:
            self.trace.state.add(id(tracer))      # (a grad inside may write into it)
        self.tracers.append((tracer, tracer._val, label))
        # (an np.memmap as the plain array it is: a view of the same memory)
        self.trace.captured.append(array if type(array) is np.ndarray
                                   else array.view(np.ndarray))
        return tracer

    def state(self) -> list:
        """(tracer, array) of each model state array (a Module's buffer) the function wrote
        into: the program returns its new value, which the caller copies into the array after
        every call, as into an argument written into (torch mutates buffers in place)."""
        # (captured holds the lifted arrays in the order of ``tracers``: see ``lift``)
        return [(t, a) for (t, first, _), a in zip(self.tracers, self.trace.captured)
                if t._val is not first and id(a) in self._state_ids]

    def smallest_lifted(self) -> int:
        return min(t.size for t, _, _ in self.tracers)

    def snapshot(self) -> None:
        """Checksum the arrays reached from outside before the function runs: Python code
        that writes into one (``cfg.W[0] += 1``, ``self.count[0] = 0`` of a ``jit(obj.step)``)
        does it on the array itself, once at trace time and not at every call, and an op
        that read the array before the write reads the written one in the program."""
        self._checksums = {key: _checksum(a) for key, (a, _, _) in self._outside.items()
                           if _checksummed(a)}

    def written(self, state_written_back: bool) -> tuple[str, object] | None:
        """(label, where) of the first lifted array the function wrote into, if any, or of
        one reached from outside whose contents changed since ``snapshot`` (where unknown);
        with ``state_written_back``, a model's state is not one (see ``state``)."""
        state = {id(t) for t, _ in self.state()} if state_written_back else set()
        for tracer, first, label in self.tracers:
            if tracer._val is not first and id(tracer) not in state:
                return label, self.trace.written_at.get(id(tracer))
        for key, (a, label, _) in self._outside.items():
            before = self._checksums.get(key)
            if before is not None and _checksum(a) != before:
                return label, None
        return None


def _checksummed(a: np.ndarray) -> bool:
    """Whether ``snapshot`` reads ``a`` (~0.5 ms a MiB, twice a trace): not an array of
    Python objects (no bytes to read), a memmap (a dataset on disk) or one over
    CHECKSUM_MAX_BYTES."""
    return (not a.dtype.hasobject and type(a) is np.ndarray
            and a.nbytes <= CHECKSUM_MAX_BYTES)


def _checksum(a: np.ndarray) -> int:
    """A checksum of ``a``'s bytes (no copy of a C-contiguous array)."""
    return zlib.crc32(np.ascontiguousarray(a).reshape(-1).view(np.uint8))


def resolve(path):
    """What the path ``reach`` found an array by (root, steps) holds now, or MISSING: read
    from own ``__dict__``s (never a property) and plain containers, the length of each
    container on the way as it was (a layer appended to the list the code iterates)."""
    value, steps = path
    for kind, k, n in steps:
        if kind == "attr":
            try:
                d = object.__getattribute__(value, "__dict__")
            except AttributeError:
                return MISSING
            if type(d) is not dict:
                return MISSING
            value = d.get(k, MISSING)
        elif kind == "slot":
            value = dict(_slot_values(value)).get(k, MISSING)
        elif kind == "member":
            if k not in _MEMBERS.get(type(value), ()):
                return MISSING
            value = getattr(value, k)
        elif kind == "global":
            if not isinstance(value, types.FunctionType):
                return MISSING
            value = value.__globals__.get(k, MISSING)
        elif kind == "cell":
            if not isinstance(value, types.FunctionType) or k not in value.__code__.co_freevars:
                return MISSING
            value = cell_value(value.__closure__[value.__code__.co_freevars.index(k)])
        elif kind == "item":
            if type(value) not in (list, tuple) or len(value) != n:
                return MISSING
            value = value[k]
        else:
            if type(value) is not dict or len(value) != n:
                return MISSING
            value = value.get(k, MISSING)
        if value is MISSING:
            return MISSING
    return value


# What ``reach`` follows in a bound method and a partial (read-only members, no user code)
_MEMBERS = {types.MethodType: ("__self__", "__func__"),
            functools.partial: ("func", "args", "keywords")}


def _function_items(fn: types.FunctionType, label: str) -> list:
    """(label, step, value) of the globals and closure variables a user's function reads
    (as Shadows would lift them), for ``ExternalArrays.reach``: none of a library's, nor of
    one that stores into them or reads ``globals()`` (Shadows leaves their arrays constants)."""
    code = fn.__code__
    if is_library(code.co_filename) or stored_names(code, STORES | CELL_STORES) \
            or global_names(code) & READS_GLOBALS:
        return []
    out = []
    g = fn.__globals__
    for name in sorted(global_names(code)):
        v = g.get(name, MISSING)
        if v is not MISSING and not isinstance(v, types.ModuleType):
            out.append((f"{label}: global {name}", ("global", name, None), v))
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        v = cell_value(cell)
        if v is not MISSING:
            out.append((f"{label}: {name}", ("cell", name, None), v))
    return out[:REACH_ITEMS]


@functools.lru_cache(maxsize=None)
def slot_names(cls) -> tuple:
    """The attribute names of the slots of ``cls`` and its bases (private ones mangled)."""
    names = []
    for c in cls.__mro__:
        slots = c.__dict__.get("__slots__", ())
        for k in (slots,) if isinstance(slots, str) else slots:
            if k in ("__dict__", "__weakref__"):
                continue
            if k.startswith("__") and not k.endswith("__"):
                k = f"_{c.__name__.lstrip('_')}{k}"
            names.append(k)
    return tuple(names)


@functools.lru_cache(maxsize=None)
def _slots(cls) -> tuple:
    """(attribute name, member descriptor) of the slots of ``cls`` and its bases."""
    out = []
    for k in slot_names(cls):
        member = next((c.__dict__[k] for c in cls.__mro__ if k in c.__dict__), None)
        if type(member) is types.MemberDescriptorType:
            out.append((k, member))
    return tuple(out)


def _slot_values(value) -> list:
    """(name, value) of the slots ``value`` has assigned."""
    out = []
    for k, member in _slots(type(value)):
        try:
            out.append((k, member.__get__(value, type(value))))
        except AttributeError:           # a slot not assigned
            pass
    return out
