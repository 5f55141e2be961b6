"""The public reverse-mode transforms, grad, value_and_grad and vjp (JAX's semantics), and what
every transform shares (``Transformed``, ``run``); jvp is in forward_api.py, jacfwd, jacrev and
hessian in jacobians.py.

Each call traces the user's function into a Function, transforms it (reverse.py, forward.py)
and then either inlines the transformed Function into the enclosing trace (when called inside
jit, another transform, or on Tracers: that is how transforms compose) or, on concrete arrays,
runs it compiled through ``jit``, whose cache keeps one trace per signature.

Arguments that are not differentiated stay concrete, as in JAX (``grad(f)(x, 3)`` where f
loops ``for _ in range(n)``): inside a trace, the Python numbers and NumPy scalars among them
(and vjp's and jvp's integer ones) are traced as their values, not as parameters
(``_Concrete``); on concrete arrays, where the ``jit`` that caches the transform traced them
first, a trace that needed such a value is made again with those arguments static.
"""
from __future__ import annotations

import functools
import inspect
import types
import weakref

import numpy as np

from ..driver import jit, leaf_key, program_of
from ..driver.guards import Guards, contents_changed, reached_moved
from ..ir import dtypes
from ..driver.signature import typed
from ..tracer.errors import ConcretizationError, call_error
from ..tracer.numpy.lifting import lift
from ..tracer.pytree import flatten, flatten_with_paths, state_leaves, unflatten
from ..tracer.trace_state import current_trace
from ..tracer.tracer import Tracer
from ..tracer.trace_function import _rename, inline, trace
from .build import Concrete as _Concrete, is_static
from .reverse import vjp_function
from .split import split_vjp


# -- arguments kept concrete ------------------------------------------------------------------
def _is_scalar(x, floats: bool = True) -> bool:
    """A Python number or NumPy scalar (immutable: safe to trace as its value); with
    ``floats=False`` only bools and integers (vjp and jvp differentiate float primals)."""
    if type(x) in (bool, int) or (floats and type(x) is float):
        return True
    return isinstance(x, np.generic) and (floats or x.dtype.kind in "biu")


def _concrete(tree, keep) -> tuple:
    """``tree`` with the leaves numbered in ``keep`` wrapped in ``_Concrete``."""
    if not keep:
        return tree
    leaves, td = flatten(tree)
    return unflatten(td, [_Concrete(x) if i in keep else x for i, x in enumerate(leaves)])


# -- running a transformed Function -------------------------------------------------------------
def _inside_trace(inputs) -> bool:
    return current_trace() is not None or any(isinstance(x, Tracer) for x in inputs)


def run(fn, inputs: list) -> list:
    """Inline fn into the enclosing trace, or run it compiled on concrete arrays."""
    if _inside_trace(inputs):
        return inline(fn, inputs)
    # A compiled program takes exactly its parameters' dtypes (inline converts): a float32
    # or integer cotangent for a float64 output is converted, as inline would.
    return program_of(fn)([x if getattr(x, "dtype", None) == p.type.dtype.np
                           else np.asarray(x, p.type.dtype.np)
                           for x, p in zip(inputs, fn.params)])


def _callable(fn, what: str):
    """A transform of something that is not a function failed only when called, with Python's
    "'int' object is not callable" (grad(3), vjp(x, f) with the arguments swapped)."""
    if not callable(fn):
        raise call_error(f"tracejit.{what}: expected a function to differentiate, got "
                         f"{type(fn).__name__}",
                         "pass the function first: " + {"vjp": "vjp(f, x)",
                                                         "jvp": "jvp(f, (x,), (v,))"}.get(
                             what, f"{what}(f)(x)"))
    return fn


def _name(fn) -> str:
    return getattr(fn, "__name__", None) or type(fn).__name__


def _arg_names(fn) -> list[str] | None:
    try:
        ps = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    return [p.name for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


class Transformed:
    """A transformed function: traced into the enclosing trace, or jitted on arrays."""

    def __init__(self, fn, traced, name: str, differentiated=None):
        functools.update_wrapper(self, fn)
        traced.__name__ = traced.__qualname__ = name
        try:    # jit's errors about an argument then name it as fn does (x, not args0)
            traced.__signature__ = inspect.signature(fn)
        except (TypeError, ValueError):
            pass
        self._traced = traced
        self._jitted = jit(traced)
        # differentiated(nargs) -> the positions of the arguments differentiated; the others
        # may be made static when a trace needs their values (_static)
        self._differentiated = differentiated
        self._static_jits: dict = {}
        self._needs_values = 0       # 1: ints and bools static, 2: floats too

    def __call__(self, *args, **kwargs):
        if current_trace() is not None:
            return self._traced(*args, **kwargs)
        # Python code may need the value of an argument that is not differentiated
        # (range(n), if flag:), which JAX's transforms keep concrete: on a ConcretizationError
        # traced again with the integer and bool ones static, then with the floats too (a
        # float static traces again for each value); later calls start at the stage that
        # worked
        *held, volatile = self._held(args, kwargs)
        base = jit(self._traced) if volatile else self._jitted
        error, tried = None, []
        for stage in range(self._needs_values, 3):
            jitted, (a, k) = ((base, held) if stage == 0
                              else self._static(args, kwargs, held, stage == 2, volatile))
            if jitted is None or jitted in tried:
                continue
            tried.append(jitted)
            try:
                out = jitted(*a, **k)
            except ConcretizationError as e:
                error = e
                continue
            self._needs_values = max(self._needs_values, stage)
            return out
        if error is None:       # (no argument of this call can be static)
            return base(*held[0], **held[1])
        raise error

    def _held(self, args, kwargs):
        """The arguments not differentiated with what no trace takes (a function:
        ``grad(loss)(params, model_fn)``, or one in a dict of settings) held as their values,
        which jit keys its traces by: JAX's grad passes them to the function as they are
        (jit refused them as not arrays). Third: whether any of them is more than a NumPy
        ufunc or builtin: a Python function or object may read globals or attributes that
        change between calls (``W -= lr * dW``), which no guard follows through an argument,
        so such a call is traced afresh, as JAX's grad runs the Python code at every call."""
        if self._differentiated is None:
            return args, kwargs, False
        diff = self._differentiated(len(args))
        volatile = []

        def opaque(x) -> bool:      # (an array of another library is jit's to take or refuse)
            # (a class, np.float32 as a dtype, has its instances' __array__ method)
            return is_static(x, "none") and (not hasattr(x, "__array__")
                                             or isinstance(x, type))

        def hold(v):
            leaves, tree = flatten(v)
            if not any(map(opaque, leaves)):
                return v
            volatile.extend(x for x in leaves if opaque(x) and not isinstance(
                x, (np.ufunc, types.BuiltinFunctionType)) and not _scalar_type(x))
            return unflatten(tree, [_Concrete(x) if opaque(x) else x for x in leaves])
        return (tuple(a if i in diff else hold(a) for i, a in enumerate(args)),
                {k: hold(v) for k, v in kwargs.items()}, bool(volatile))

    def _static(self, args, kwargs, held, floats: bool, volatile: bool = False):
        """(The jit of the transform with the arguments not differentiated that are Python
        ints and bools (``floats``: numbers) or NumPy scalars of those kinds (or hashable
        tuples of them, functions among them) static, the arguments to call it with: those
        static as they are, the others as ``held``), or (None, held) if none is; a fresh one,
        not kept, where ``volatile`` (_held)."""
        if self._differentiated is None:
            return None, held
        diff = self._differentiated(len(args))

        def scalars(v) -> bool:
            leaves = flatten(v)[0]
            if not leaves or not all(_is_scalar(x, floats) or is_static(x, "none")
                                     for x in leaves):
                return False
            try:
                hash(v)
            except TypeError:
                return False
            return True

        nums = tuple(i for i, a in enumerate(args) if i not in diff and scalars(a))
        names = tuple(sorted(k for k, v in kwargs.items() if scalars(v)))
        if not nums and not names:
            return None, held
        jitted = None if volatile else self._static_jits.get((nums, names))
        if jitted is None:
            jitted = jit(self._traced, static_argnums=nums, static_argnames=names)
            if not volatile:
                self._static_jits[nums, names] = jitted
        return jitted, (tuple(a if i in nums else h for i, (a, h) in enumerate(zip(args,
                                                                                   held[0]))),
                        {k: v if k in names else held[1][k] for k, v in kwargs.items()})

    @property
    def __tracejit_body__(self):
        """What a call inside a trace runs (tracer/external_arrays.py follows it)."""
        return self._traced


def _scalar_type(x) -> bool:
    """A dtype given as its scalar type (np.float32, float): a value no call changes."""
    return x in (bool, int, float, complex) or (isinstance(x, type)
                                                and issubclass(x, np.generic))


def none_differentiated(nargs: int) -> tuple:
    """``differentiated`` of a transform that differentiates no argument (autocast,
    excess_precision): on concrete arrays, every argument Python code needs the value of
    (``range(n)``) may be made static."""
    return ()


# -- reverse mode -------------------------------------------------------------------------------
def _argnums(argnums, nargs: int) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums:
        raise call_error("tracejit.grad: argnums is empty",
                         "name the positional arguments to differentiate: argnums=0 or (0, 1)",
                         ValueError)
    for n in nums:
        if not -nargs <= n < nargs:
            raise call_error(f"tracejit.grad: argnums {argnums} but the function was called "
                             f"with {nargs} positional arguments",
                             "pass the arguments to differentiate positionally (keyword "
                             "arguments are not differentiated), or fix argnums", ValueError)
    return tuple(n % nargs for n in nums)


def _check_float(leaves, paths, indices, what):
    for i in indices:
        leaf = leaves[i]
        dtype = leaf.dtype if hasattr(leaf, "dtype") else np.result_type(leaf)
        if not dtypes.is_float_dtype(dtype) or isinstance(leaf, bool):
            name = paths[i] or "?"
            python = isinstance(leaf, (bool, int)) or getattr(leaf, "_weak", False)
            kind = (f"is a Python {'bool' if np.dtype(dtype).kind == 'b' else 'int'}"
                    if python else f"has dtype {np.dtype(dtype)}")
            raise call_error(
                f"tracejit.{what}: argument {name} {kind}, but {what} needs float inputs: "
                "only floating-point inputs have gradients (integer and bool inputs have "
                "none).",
                (f"pass a float: 3.0 instead of 3, or float({name})" if python else
                 f"cast it with {name}.astype(np.float64) (or np.float32)")
                + ", or differentiate with respect to other arguments (argnums=...).")


def _check_scalar_output(out, what: str, has_aux: bool):
    """The output of the function grad differentiates: one float scalar."""
    aux = " (with has_aux=True: the first of the pair)" if has_aux else ""
    leaves = flatten(out)[0]
    if len(leaves) != 1:
        kind = "None" if out is None else f"a {type(out).__name__} of {len(leaves)} values"
        raise call_error(
            f"tracejit.{what}: the function{aux} returned {kind}, but grad needs one float "
            "scalar to differentiate.",
            f"return only the value to differentiate; to return more, use {what}(f, "
            "has_aux=True) and return (value, aux), or differentiate an indexed function, "
            f"e.g. {what}(lambda x: f(x)[0]); tracejit.vjp handles any output.")
    t = leaves[0]
    shape = tuple(np.shape(t))
    dtype = np.dtype(t.dtype) if hasattr(t, "dtype") else np.result_type(t)
    if shape != ():
        raise call_error(
            f"tracejit.{what}: the function{aux} returned an array of shape {shape} "
            f"({dtype}), but grad needs a scalar (shape ()).",
            "reduce it to a scalar (.sum() or .mean()) or use tracejit.vjp for a non-scalar "
            "output.")
    if not dtypes.is_float_dtype(dtype):
        raise call_error(
            f"tracejit.{what}: the function{aux} returned a scalar of dtype {dtype}, but grad "
            "needs a float output (integers have no gradient).",
            "compute the output in floating point, e.g. with .astype(np.float64).")


def _with_aux(fn, has_aux: bool, what: str):
    def body(*args, **kwargs):
        out = fn(*args, **kwargs)
        if has_aux:
            # (a list [value, aux] too, as JAX takes it)
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise call_error(f"tracejit.{what}(has_aux=True): the function must return a "
                                 f"pair (output, aux), got {type(out).__name__}",
                                 "return (value, aux), or drop has_aux=True")
            return tuple(out)
        return out, None
    return body


def _apart(values: list) -> list:
    """``values`` with each one that repeats an earlier one made a separate array: the
    gradients of ``x + y`` are one value, and an in-place update of one leaf's gradient
    (``g *= scale`` for each) must not reach another's, as with PyTorch's ``.grad``. (A
    traced one is a new tracer of the same value: jit returns it as its own array.)"""
    out, seen = [], set()
    for v in values:
        if id(v) in seen:
            v = Tracer(v._value, v._trace, v._weak) if isinstance(v, Tracer) else np.copy(v)
        seen.add(id(v))
        out.append(v)
    return out


def _write_state(leaf, new) -> None:
    """The function grad differentiates wrote into model state (a buffer): the same write
    into the caller's array, a tracer of the enclosing trace (jit copies it back into its
    argument) or an array jit reads from outside (lifted: a parameter, written back too)."""
    target = leaf if isinstance(leaf, Tracer) else lift(leaf, current_trace())
    np.copyto(target, new, casting="unsafe")


def write_state_back(traced, written_leaves: list, news: list) -> None:
    """The new values of the model state a transformed function wrote (grad's, checkpoint's,
    autocast's: ``news``, the results after the user's) into the leaves it wrote
    (``written_leaves``, one per ``traced.written``), then into the enclosing trace's model
    state it closes over (a BatchNorm read from a closure)."""
    for leaf, new in zip(written_leaves, news):
        _write_state(leaf, new)
    for target, new in zip(traced.outer_written, news[len(traced.written):]):
        np.copyto(target, new, casting="unsafe")


def _value_and_grad_traced(fn, argnums, has_aux, what):
    names = _arg_names(fn)

    def checked(*args, **kwargs):
        out = _with_aux(fn, has_aux, what)(*args, **kwargs)
        _check_scalar_output(out[0], what, has_aux)
        return out

    def traced(*args, **kwargs):
        nums = _argnums(argnums, len(args))
        leaves, paths, _ = flatten_with_paths((args, kwargs))
        starts = np.cumsum([0] + [len(flatten(a)[0]) for a in args]).tolist()
        # (each leaf once: argnums=(0, 0) gives the same gradient twice, as JAX's); a model's
        # state (buffers: BatchNorm's running statistics) gets zeros, not a gradient, and the
        # function may write into it, as torch's forward does (written back below)
        state = state_leaves((args, kwargs))
        wrt = sorted({i for n in nums for i in range(starts[n], starts[n + 1])} - state)
        _check_float(leaves, [_rename(p, names) for p in paths], wrt, what)
        # the Python numbers and NumPy scalars not differentiated: traced as their values,
        # which Python code may need (range(n), if flag:), as in JAX; and what cannot be
        # traced at all (a function passed to the loss), held as it is
        keep = {i for i, x in enumerate(leaves)
                if i not in wrt and (_is_scalar(x) or is_static(x, "none"))}
        params = [i for i in range(len(leaves)) if i not in keep]
        t = trace(checked, *_concrete((args, kwargs), keep), _name(fn), names,
                  writable=frozenset(j for j, i in enumerate(params) if i in state),
                  state_writes=True)
        f = t.function
        loss = f.results[0].type
        g = vjp_function(f, [params.index(i) for i in wrt], ct_results=[0])
        outs = run(g, [leaves[i] for i in params] + list(t.captured)
                   + [np.ones((), loss.dtype.np)])
        n = len(f.results)
        value, aux = unflatten(t.out_tree, outs[:t.n_results])
        write_state_back(t, [leaves[params[j]] for j in t.written], outs[t.n_results:n])
        of_leaf = dict(zip(wrt, _apart(outs[n:])))
        of_leaf.update((i, np.zeros_like(leaves[i])) for i in state)
        # an argument holding no leaves ({}, None) has none: its gradient is itself
        grads = [unflatten(flatten(args[k])[1],
                           [of_leaf[i] for i in range(starts[k], starts[k + 1])])
                 for k in nums]
        grads = grads[0] if isinstance(argnums, int) else tuple(grads)
        return (value, aux), grads

    return traced


def value_and_grad(fn, argnums=0, has_aux=False):
    """f(*args) -> (f(*args), gradient); with has_aux, ((value, aux), gradient)."""
    _callable(fn, "value_and_grad")
    core = _value_and_grad_traced(fn, argnums, has_aux, "value_and_grad")

    def traced(*args, **kwargs):
        (value, aux), grads = core(*args, **kwargs)
        return ((value, aux), grads) if has_aux else (value, grads)

    return Transformed(fn, traced, f"value_and_grad_{_name(fn)}",
                       functools.partial(_argnums, argnums))


def grad(fn, argnums=0, has_aux=False):
    """The gradient of a float-scalar function with respect to args[argnums] (pytrees keep
    their structure); with has_aux, (gradient, aux)."""
    _callable(fn, "grad")
    core = _value_and_grad_traced(fn, argnums, has_aux, "grad")

    def traced(*args, **kwargs):
        (_, aux), grads = core(*args, **kwargs)
        return (grads, aux) if has_aux else grads

    return Transformed(fn, traced, f"grad_{_name(fn)}", functools.partial(_argnums, argnums))


_vjp_cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _vjp_traces(fn) -> dict:
    """The traces vjp keeps for ``fn`` by argument signature, forgotten when a global or
    closure value they read changes (driver/guards.py), as jit's are."""
    held = _vjp_cache.get(fn)
    if held is None or (held[0] is not None and held[0].changed() is not None):
        held = _vjp_cache[fn] = (Guards(fn) or None, {})
    return held[1]


def _vjp_prepare(fn, primals, has_aux, keep=frozenset()):
    """The trace of ``fn`` and its split vjp; ``keep``: the leaves traced as their values."""
    leaves, in_tree = flatten((primals, {}))
    params = [i for i in range(len(leaves)) if i not in keep]
    try:
        held = _vjp_cache.get(fn)
    except TypeError:               # (np.sin: no weak references, and no guards)
        held = None
    guards = held[0] if held is not None else None
    t = trace(_with_aux(fn, has_aux, "vjp"), _concrete((primals, {}), keep)[0], {}, _name(fn),
              _arg_names(fn), external_arrays=True,
              outside=guards.arrays() if guards is not None else ())
    f = t.function
    out_leaves, out_tree = flatten(unflatten(t.out_tree, f.results)[0])
    n_out = len(out_leaves)
    wrt = [j for j in range(len(params)) if f.params[j].type.dtype.is_float]
    ct_results = [i for i in range(n_out) if f.results[i].type.dtype.is_float]
    g = vjp_function(f, wrt, ct_results)
    return (t, in_tree, out_tree, [params[j] for j in wrt], ct_results,
            split_vjp(g, len(f.params), len(f.results)), params)


# A vjp cache entry saying that the trace needed the values of the integer primals: the key
# with those values holds the trace (vjp)
_NEEDS_VALUES = object()


def vjp(fn, *primals, has_aux=False):
    """(fn(*primals), vjp_fn) where vjp_fn(cotangent of the output) gives one cotangent per
    primal (None for integer or bool leaves). The forward pass runs now; vjp_fn runs only the
    backward pass, on the residuals kept from it. With has_aux: (out, vjp_fn, aux).
    Integer and bool primals that are Python numbers or NumPy scalars stay concrete, as in
    JAX (``range(n)``): inside a trace always, on concrete arrays where the trace needs them
    (then their values are part of the cache key)."""
    _callable(fn, "vjp")
    leaves, in_tree = flatten((primals, {}))
    ints = frozenset(i for i, x in enumerate(leaves) if _is_scalar(x, floats=False))
    values = tuple(typed(leaves[i]) for i in sorted(ints))
    inside = _inside_trace(leaves)
    prepared = key = None
    if not inside:
        key = (in_tree, tuple(map(leaf_key, leaves)), has_aux)
        try:
            traces = _vjp_traces(fn)
            if traces.get(key) is _NEEDS_VALUES:
                key += (values,)
            prepared = traces.get(key)
        except TypeError:
            key = None
        if prepared is not None and (contents_changed(prepared[0].constant_arrays)
                                     or reached_moved(prepared[0].reached)):
            prepared = None      # (an array it took through an attribute was rebound)
    if prepared is None:
        keep = ints if inside or (key is not None and len(key) == 4) else frozenset()
        try:
            prepared = _vjp_prepare(fn, primals, has_aux, keep)
        except ConcretizationError:
            if keep or not ints:
                raise
            prepared = _vjp_prepare(fn, primals, has_aux, ints)
            if key is not None:
                _vjp_cache[fn][1][key] = _NEEDS_VALUES
                key += (values,)
        if key is not None:
            _vjp_cache[fn][1][key] = prepared
    t, in_tree, out_tree, wrt, ct_results, split, params = prepared
    n = len(t.function.results)
    fwd = run(split.forward, [leaves[i] for i in params] + list(t.captured))
    out, aux = unflatten(t.out_tree, fwd[:n])
    residuals = fwd[n:]

    def vjp_fn(ct):
        ct_leaves, ct_tree = flatten(ct)
        if ct_tree != out_tree:
            raise call_error(f"tracejit.vjp: the cotangent has structure {ct_tree}, but the "
                             f"output has structure {out_tree}",
                             "pass a cotangent of the output's structure (one array per "
                             "output array)")
        for i in ct_results:    # a wrong shape would be broadcast, or fail deep in the trace
            want = t.function.results[i].type.shape
            if tuple(np.shape(ct_leaves[i])) != want:
                raise call_error(f"tracejit.vjp: cotangent {i} has shape "
                                 f"{tuple(np.shape(ct_leaves[i]))}, but its output has shape "
                                 f"{want}",
                                 "the cotangent must have the output's shape, as in JAX",
                                 ValueError)
        cts = run(split.backward, list(residuals) + [ct_leaves[i] for i in ct_results])
        full = [None] * len(leaves)
        for i, c in zip(wrt, _apart(cts)):
            full[i] = c
        return unflatten(in_tree, full)[0]

    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)
