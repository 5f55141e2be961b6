"""``Module``: PyTorch's way of writing models, as a pytree so models pass through jit and grad.

Arrays assigned as attributes are parameters, Modules assigned as attributes are submodules
(a list or tuple of Modules becomes a ``ModuleList``, a dict of them keyed by strings a
``ModuleDict``, so their layers' parameters are the model's, trained and saved: static, they
would be constants), everything else (sizes, strides, the ``training`` flag) is static
structure: part of the jit cache key, so it must be hashable. ``grad(loss)(model, ...)``
returns a Module of the same shape whose parameters are the gradients, as in Equinox.
One array in two places of a model (tied weights, ``head.weight = emb.weight``) is one
parameter, as in PyTorch: one leaf of the pytree, so its gradient sums both uses and an
optimizer step keeps the two places one array.

Buffers (``register_buffer``: BatchNorm's running statistics) are leaves too, so jit passes
them as arrays and writes into them reach the caller's, but they are the pytree's *state*
(``tracer.pytree.state_leaves``): ``grad`` gives them zeros, not gradients, and lets the
function write into them; ``parameters()`` leaves them out and ``state_dict`` holds the
persistent ones, as torch's.
"""
from __future__ import annotations

import numpy as np

from ..tracer import Tracer, register_pytree_node
from ..tracer.pytree import note_static_change
from ..tracer.trace_state import outside_array, read_from_outside


def _is_array(v) -> bool:
    return isinstance(v, (np.ndarray, Tracer))


class Module:
    training = True   # static: switching train/eval retraces, as it changes the program

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        register_pytree_node(cls, _flatten_module,
                             lambda aux, ch: _unflatten_module(cls, aux, ch), shares_leaves=True,
                             state=_buffer_children)

    def __setattr__(self, name, value):
        # A static change (anything but an array replacing a parameter) is noted: jit's guards
        # on a model read from globals or self see model.eval() or drop.p = 0 only so
        # (driver/guards.py); without it the jitted function kept its train-mode trace.
        d = self.__dict__
        if not (_is_array(value) and (name in d.get("_parameters", ())
                                      or name in d.get("_buffers", ()))):
            note_static_change()
        if name in _REGISTRIES:                     # the registries themselves (jit's
            object.__setattr__(self, name, value)   # write-back of a jitted method's self)
            return
        buffers = d.get("_buffers", {})
        if name in buffers:
            # torch: a tensor (or None) assigned to a buffer's name is the new buffer
            if value is not None and not _is_array(value):
                raise TypeError(f"cannot assign '{type(value).__name__}' object to buffer "
                                f"'{name}' (an array or None required)")
            old = buffers[name]
            if isinstance(value, Tracer) and type(old) is np.ndarray \
                    and read_from_outside(old):
                # the user's model, which jit reads from outside (not a traced copy of it)
                if value is _traced_state(old):
                    return     # self.count += 1 wrote into the buffer's tracer: in place
                raise _rebound_buffer(type(self).__name__, name)
            buffers[name] = value
            return
        params = d.setdefault("_parameters", {})
        modules = d.setdefault("_modules", {})
        if (isinstance(value, (list, tuple)) and value and not isinstance(value, ModuleList)
                and all(isinstance(v, Module) for v in value)):
            value = ModuleList(value)
        elif (isinstance(value, dict) and value and all(isinstance(k, str) for k in value)
              and all(isinstance(v, Module) for v in value.values())):
            value = ModuleDict(value)
        # Removed from the other registries; replaced in place in its own, so a replaced
        # layer or parameter keeps its place in named_parameters and state_dict (as torch)
        if _is_array(value):
            modules.pop(name, None)
            d.pop(name, None)
            params[name] = value
        elif isinstance(value, Module):
            params.pop(name, None)
            d.pop(name, None)
            modules[name] = value
        else:
            params.pop(name, None)
            modules.pop(name, None)
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        d = self.__dict__
        if name in d.get("_parameters", {}):
            return d["_parameters"][name]
        if name in d.get("_buffers", {}):
            # Under jit, the buffer of a model read from outside (a closure's, jit(model)'s)
            # is the trace's parameter for it, so that self.count += 1, self.buf[...] = v
            # or self.buf *= m in a forward is a traced write jit copies back (on the array
            # itself NumPy made it once, at trace time, or refused a traced value)
            buffer = d["_buffers"][name]
            lifted = _traced_state(buffer)
            return buffer if lifted is None else lifted
        if name in d.get("_modules", {}):
            return d["_modules"][name]
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def __delattr__(self, name):
        note_static_change()
        d = self.__dict__
        if name in d.get("_parameters", {}):
            del d["_parameters"][name]
        elif name in d.get("_buffers", {}):
            del d["_buffers"][name]
            d["_non_persistent"] = d.get("_non_persistent", frozenset()) - {name}
        elif name in d.get("_modules", {}):
            del d["_modules"][name]
        else:
            object.__delattr__(self, name)

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def forward(self, *args, **kwargs):
        raise TypeError(f"{type(self).__name__} must define forward()")

    # -- traversal ------------------------------------------------------------------------------
    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True):
        """(name, array) of each parameter, as torch's: a tied parameter (one array in two
        places, ``head.weight = emb.weight``) once, under its first name, unless
        ``remove_duplicate=False``."""
        seen = set() if remove_duplicate else None
        # torch joins a prefix with a dot ("model.0.weight"; it gave "model0.weight")
        for name, p in self._named_parameters(prefix + "." if prefix else "", recurse):
            if seen is not None:
                if id(p) in seen:
                    continue
                seen.add(id(p))
            yield name, p

    def _named_parameters(self, prefix, recurse):
        yield from ((prefix + name, p) for name, p in self.__dict__.get("_parameters", {}).items())
        if recurse:
            for name, m in self.__dict__.get("_modules", {}).items():
                yield from m._named_parameters(prefix + name + ".", True)

    def parameters(self, recurse: bool = True):
        return [p for _, p in self.named_parameters(recurse=recurse)]

    # -- buffers: state that is no parameter ----------------------------------------------------
    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """Hold ``tensor`` (an array, or None) as the buffer ``name``, as torch's: part of
        the model's state (``state_dict`` if ``persistent``, jit passes it as an array)
        but no parameter (``parameters()`` and optimizers leave it; ``grad`` gives it
        zeros)."""
        _check_name(self, name, "buffer", "_buffers")
        if tensor is not None and not _is_array(tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer "
                            f"'{name}' (an array or None required; np.asarray(v) makes one)")
        note_static_change()
        d = self.__dict__
        d.setdefault("_buffers", {})[name] = tensor
        kept = d.get("_non_persistent", frozenset())
        d["_non_persistent"] = kept - {name} if persistent else kept | {name}

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True):
        """(name, array) of each buffer (None ones left out), as torch's."""
        seen = set()
        for name, b, _ in self._named_buffers(prefix + "." if prefix else "", recurse):
            if remove_duplicate:
                if id(b) in seen:
                    continue
                seen.add(id(b))
            yield name, b

    def _named_buffers(self, prefix, recurse):
        d = self.__dict__
        kept = d.get("_non_persistent", frozenset())
        yield from ((prefix + name, b, name not in kept)
                    for name, b in d.get("_buffers", {}).items() if b is not None)
        if recurse:
            for name, m in d.get("_modules", {}).items():
                yield from m._named_buffers(prefix + name + ".", True)

    def buffers(self, recurse: bool = True):
        return [b for _, b in self.named_buffers(recurse=recurse)]

    def children(self):
        return list(self.__dict__.get("_modules", {}).values())

    def named_children(self):
        yield from self.__dict__.get("_modules", {}).items()

    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        """This module (named ``prefix``, ``""`` at the top) and every submodule, depth
        first, as ``torch.nn.Module.named_modules`` (a module reached twice is listed once)."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self.named_children():
            yield from m.named_modules(memo, prefix + ("." if prefix else "") + name,
                                       remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def add_module(self, name: str, module) -> None:
        """Register ``module`` (a Module) as the submodule ``name``, as PyTorch's."""
        _check_module_name(self, name, module, "add_module")
        setattr(self, name, module)

    register_module = add_module

    def apply(self, fn) -> "Module":
        """``fn(m)`` for every submodule, then for this one (PyTorch's order); returns self.
        Typical use: initialisation, ``m.weight = ...`` for each ``Linear``."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def train(self, mode: bool = True) -> "Module":
        note_static_change()
        object.__setattr__(self, "training", mode)
        for m in self.children():
            m.train(mode)
        return self

    def eval(self) -> "Module":
        return self.train(False)

    # -- state dicts ---------------------------------------------------------------------------
    def state_dict(self) -> dict[str, np.ndarray]:
        """Parameters and persistent buffers, module by module, in torch's order."""
        return {k: np.asarray(v) for k, v in self._state_items("")}

    def _state_items(self, prefix):
        d = self.__dict__
        yield from ((prefix + k, v) for k, v in d.get("_parameters", {}).items())
        kept = d.get("_non_persistent", frozenset())
        yield from ((prefix + k, v) for k, v in d.get("_buffers", {}).items()
                    if v is not None and k not in kept)
        for name, m in d.get("_modules", {}).items():
            yield from m._state_items(prefix + name + ".")

    def load_state_dict(self, state: dict, strict: bool = True) -> "Module":
        """Copy ``state``'s arrays into the parameters (cast to their dtypes). As torch's,
        ``strict=False`` loads the keys the model has and ignores the others (shapes must
        still match); unlike torch's it returns the model."""
        own = dict(self._state_items(""))
        missing, unexpected = set(own) - set(state), set(state) - set(own)
        if (missing or unexpected) and strict:
            raise KeyError(f"load_state_dict: missing {sorted(missing)}, unexpected "
                           f"{sorted(unexpected)}")
        state = {k: v for k, v in state.items() if k in own}
        # Check every entry before assigning any, so a failed load leaves the model unchanged.
        updates, tied = [], {}
        for key, value in sorted(state.items(), key=lambda kv: list(own).index(kv[0])):
            *path, name = key.split(".")
            mod = self
            for p in path:
                mod = mod._modules[p]
            registry = mod._parameters if name in mod._parameters else mod._buffers
            old = registry[name]
            value = np.asarray(value)
            if value.shape != old.shape:
                raise ValueError(f"load_state_dict: {key} has shape {value.shape}, the model "
                                 f"expects {old.shape}")
            # A tied parameter (one array under two names) stays one array. torch copies
            # each name's value into the one tensor in state_dict order, so the LAST name's
            # value is what it holds (the first's was kept here: a checkpoint of an untied
            # model loaded into a tied one gave other weights than in torch).
            tied[id(old)] = value.astype(old.dtype)
            updates.append((registry, name, id(old)))
        for registry, name, key in updates:
            registry[name] = tied[key]
        return self

    def save(self, path) -> None:
        """Save the parameters to a NumPy .npz file (keys as in state_dict)."""
        np.savez(path, **self.state_dict())

    def load(self, path) -> "Module":
        with np.load(path) as data:
            return self.load_state_dict({k: data[k] for k in data.files})

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__}("]
        for name, m in self.__dict__.get("_modules", {}).items():
            lines.append("  (" + name + "): " + repr(m).replace("\n", "\n  "))
        for name, p in self.__dict__.get("_parameters", {}).items():
            lines.append(f"  {name}: {p.dtype}{list(p.shape)}")
        for name, b in self.__dict__.get("_buffers", {}).items():
            if b is not None:
                lines.append(f"  {name} (buffer): {b.dtype}{list(b.shape)}")
        return "\n".join(lines) + ")" if len(lines) > 1 else f"{type(self).__name__}()"


def _traced_state(buffer):
    """The running trace's parameter for ``buffer`` if jit reads it from outside, else None."""
    if type(buffer) is not np.ndarray:
        return None
    return outside_array(buffer)


def _rebound_buffer(owner: str, name: str):
    from ..tracer.errors import WriteRefusedError, caller_location, unsupported
    return unsupported(f"assigning a new array to the buffer {owner}.{name} of a model the "
                       "traced function reads from outside (a closure's, jit(model)'s): "
                       "jit writes a buffer's new values back into the caller's array, but "
                       "cannot rebind the attribute",
                       f"write in place: self.{name}[...] = new (or np.copyto(self.{name}, "
                       f"new), self.{name} *= m), as torch's running statistics are updated",
                       loc=caller_location(), cls=WriteRefusedError)


def _static_items(m: Module):
    items = []
    for k, v in m.__dict__.items():
        if k in _REGISTRIES:
            continue
        try:
            hash(v)
        except TypeError:
            raise TypeError(f"{type(m).__name__}.{k} = {v!r} is unhashable; non-array "
                            "attributes of a Module are static and must be hashable (use a "
                            "tuple instead of a list)") from None
        # with its type: 2 and 2.0 (True and 1) are equal in Python, but x * 2 of an int
        # array is int and x * 2.0 float, so a model traced with one reused the other's trace
        items.append((k, type(v), v))
    return tuple(sorted(items, key=lambda kv: kv[0]))


_REGISTRIES = ("_parameters", "_modules", "_buffers")


def _flatten_module(m: Module):
    d = m.__dict__
    params, modules = d.get("_parameters", {}), d.get("_modules", {})
    buffers = d.get("_buffers", {})
    children = list(params.values()) + list(buffers.values()) + list(modules.values())
    # IR names: %model.conv1.weight
    names = [f".{k}" for k in list(params) + list(buffers) + list(modules)]
    return children, (tuple(params), tuple(buffers), tuple(modules), _static_items(m)), names


def _buffer_children(m: Module) -> range:
    """The buffers' positions among the children (state: see tracer.pytree.state_leaves)."""
    d = m.__dict__
    start = len(d.get("_parameters", {}))
    return range(start, start + len(d.get("_buffers", {})))


def _unflatten_module(cls, aux, children):
    pnames, bnames, mnames, static = aux
    m = object.__new__(cls)
    d = m.__dict__
    n, nb = len(pnames), len(bnames)
    d["_parameters"] = dict(zip(pnames, children[:n]))
    if bnames:
        # a 0-d buffer (num_batches_tracked) that jit handed back as a NumPy scalar (as it
        # gives 0-d results) is an array again: buffers are written in place
        d["_buffers"] = {k: np.array(v) if isinstance(v, np.generic) else v
                         for k, v in zip(bnames, children[n:n + nb])}
    d["_modules"] = dict(zip(mnames, children[n + nb:]))
    d.update((k, v) for k, _, v in static)
    return m


register_pytree_node(Module, _flatten_module, lambda aux, ch: _unflatten_module(Module, aux, ch),
                     shares_leaves=True, state=_buffer_children)


def _check_module_name(owner, name, module, what):
    """PyTorch's add_module checks: a Module under a string name that has no dot and is not
    already an attribute (a method such as ``keys``, or ``training``)."""
    if not isinstance(module, Module):
        raise TypeError(f"{what}: {type(module).__name__} is not a Module subclass")
    _check_name(owner, name, "module", "_modules")


def _check_name(owner, name, kind, registry):
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
    if "." in name:
        raise KeyError(f'{kind} name can\'t contain ".", got: {name}')
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')
    if name not in owner.__dict__.get(registry, {}) and hasattr(owner, name):
        raise KeyError(f"attribute '{name}' already exists")


def set_layer(owner, i, module) -> None:
    """``owner[i] = module`` of a ModuleList or Sequential: the layer keeps its name."""
    if not isinstance(module, Module):
        raise TypeError(f"cannot assign {type(module).__name__!r} as child module "
                        "(torch.nn.Module or None expected)")
    if isinstance(i, slice):
        raise TypeError("assigning to a slice of layers is not supported")
    setattr(owner, list(owner.__dict__.get("_modules", {}))[i], module)


def renumber(owner, layers) -> None:
    """Register ``layers`` as ``owner``'s submodules ``"0"``, ``"1"``, ..., as torch numbers a
    ModuleList or a Sequential after ``del``, ``insert`` or ``pop``."""
    note_static_change()
    owner.__dict__["_modules"] = {}
    for i, layer in enumerate(layers):
        setattr(owner, str(i), layer)


def delete_layers(owner, i) -> None:
    layers = owner.children()
    del layers[i]
    renumber(owner, layers)


class ModuleList(Module):
    """Submodules in a list, as ``torch.nn.ModuleList``: indexing, ``len``, iteration,
    ``append``, ``extend``, ``insert``, ``pop``, ``l[i] = m`` and ``del l[i]`` (the layers
    are numbered again, as torch's); their parameters are named ``"0.weight"``, ``"1.weight"``,
    ... (``l[i] = m`` and ``del`` were TypeErrors.)"""

    def __init__(self, modules=()):
        self.extend(modules)

    def append(self, module) -> "ModuleList":
        setattr(self, str(len(self)), module)
        return self

    def extend(self, modules) -> "ModuleList":
        for module in modules:
            self.append(module)
        return self

    def __getitem__(self, i):
        children = self.children()
        return ModuleList(children[i]) if isinstance(i, slice) else children[i]

    def __setitem__(self, i, module) -> None:
        set_layer(self, i, module)

    def __delitem__(self, i) -> None:
        delete_layers(self, i)

    def insert(self, index: int, module) -> None:
        layers = self.children()
        layers.insert(index, module)
        renumber(self, layers)

    def pop(self, i=-1):
        module = self[i]
        del self[i]
        return module

    def __len__(self):
        return len(self.__dict__.get("_modules", {}))

    def __iter__(self):
        return iter(self.children())


class ModuleDict(Module):
    """Submodules by name, as ``torch.nn.ModuleDict``: ``d[key]``, ``d[key] = m``, ``del``,
    ``in``, ``len``, iteration over the keys, ``keys()``, ``values()``, ``items()``,
    ``update()``, ``pop()``, ``clear()``. Insertion order is kept (as a dict's, and as
    PyTorch's), and the parameters are named ``"key.weight"``: ``state_dict`` keys, jit and
    grad treat it as they treat a ``ModuleList``. A dict of Modules assigned to a Module's
    attribute becomes a ModuleDict (as a list becomes a ModuleList)."""

    def __init__(self, modules=None):
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self.__dict__.get("_modules", {})[key]

    def __setitem__(self, key, module) -> None:
        _check_module_name(self, key, module, "ModuleDict")
        setattr(self, key, module)

    def __delitem__(self, key) -> None:
        note_static_change()
        del self.__dict__.get("_modules", {})[key]

    def __contains__(self, key) -> bool:
        return key in self.__dict__.get("_modules", {})

    def __len__(self):
        return len(self.__dict__.get("_modules", {}))

    def __iter__(self):
        return iter(list(self.keys()))

    def keys(self):
        return list(self.__dict__.get("_modules", {}).keys())

    def values(self):
        return list(self.__dict__.get("_modules", {}).values())

    def items(self):
        return list(self.__dict__.get("_modules", {}).items())

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def clear(self) -> None:
        note_static_change()
        self.__dict__.get("_modules", {}).clear()

    def update(self, modules) -> None:
        """From a mapping (its order) or an iterable of (key, module) pairs, as PyTorch's."""
        if isinstance(modules, (dict, ModuleDict)) or hasattr(modules, "items"):
            pairs = list(modules.items())
        else:
            pairs = []
            for j, m in enumerate(modules):
                m = tuple(m)
                if len(m) != 2:
                    raise ValueError(f"ModuleDict update sequence element #{j} has length "
                                     f"{len(m)}; 2 is required")
                pairs.append(m)
        for key, module in pairs:
            self[key] = module
