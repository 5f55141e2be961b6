"""``jvp``, forward mode's public transform, with JAX's semantics: the user's function traced,
``forward.jvp_function`` of it run (inlined into an enclosing trace, or jitted on arrays, one
jit kept per function). The reverse-mode transforms and what every transform shares are in
api.py."""
from __future__ import annotations

import types
import weakref

import numpy as np

from ..driver import jit
from ..tracer.errors import ConcretizationError, call_error
from ..tracer.pytree import flatten, unflatten
from ..tracer.trace_function import trace
from ..tracer.trace_state import current_trace
from .api import _arg_names, _callable, _concrete, _is_scalar, _name, _with_aux, run
from .forward import jvp_function


def _jvp_traced(fn, primals, tangents, has_aux=False):
    """(output, output tangent) or, with ``has_aux``, (output, output tangent, aux)."""
    p_leaves, p_tree = flatten(tuple(primals))
    t_leaves, t_tree = flatten(tuple(tangents))
    if p_tree != t_tree:
        raise call_error(f"tracejit.jvp: tangents have structure {t_tree}, primals {p_tree}",
                         "pass one tangent of its primal's structure per primal")
    # integer and bool primals that are Python numbers or NumPy scalars: traced as their
    # values, which Python code may need (range(n)), as in JAX
    keep = {i for i, x in enumerate(p_leaves) if _is_scalar(x, floats=False)}
    params = [i for i in range(len(p_leaves)) if i not in keep]
    t = trace(_with_aux(fn, has_aux, "jvp"), _concrete(tuple(primals), keep), {}, _name(fn),
              _arg_names(fn))
    f = t.function
    wrt = [j for j in range(len(params)) if f.params[j].type.dtype.is_float]
    for j in wrt:
        i = params[j]
        if tuple(np.shape(t_leaves[i])) != f.params[j].type.shape:
            raise call_error(f"tracejit.jvp: tangent {i} has shape {np.shape(t_leaves[i])}, "
                             f"its primal {f.params[j].type}",
                             "each tangent must have its primal's shape, as in JAX",
                             ValueError)
    j = jvp_function(f, wrt)
    outs = run(j, [p_leaves[i] for i in params] + list(t.captured)
               + [t_leaves[params[k]] for k in wrt])
    n = len(f.results)
    (out, aux), (tangent, _) = unflatten(t.out_tree, outs[:n]), unflatten(t.out_tree, outs[n:])
    return (out, tangent, aux) if has_aux else (out, tangent)


# jvp's jitted functions by fn (a dict: has_aux -> them). A plain Python function keeps its
# own, in its __dict__ as (fn, jits), so that they die with it: they close over fn, so a
# WeakKeyDictionary entry's value held its key alive, and jvp of a new lambda (or closure)
# each step kept every one with its traces and programs. (fn is in the value because
# functools.update_wrapper copies __dict__: a wrapper of fn must not find fn's.) Other
# callables are kept in _jvp_jits.
_JVP_ATTR = "__tracejit_jvp__"
_jvp_jits: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _jvp_jits_of(fn):
    if type(fn) is types.FunctionType:
        held = fn.__dict__.get(_JVP_ATTR)
        return held[1] if held is not None and held[0] is fn else None
    try:
        return _jvp_jits.get(fn)
    except TypeError:
        return None


def _keep_jvp_jits(fn, jitted) -> None:
    if type(fn) is types.FunctionType:
        fn.__dict__[_JVP_ATTR] = (fn, jitted)
        return
    try:
        _jvp_jits[fn] = jitted
    except TypeError:
        pass


def _check_jvp_arguments(primals, tangents):
    """primals and tangents are sequences of arguments: an array there would be iterated, its
    rows taken for the arguments (f(a, b, c) of np.array([1., 2., 3.]) ran)."""
    if not (isinstance(primals, (tuple, list)) and isinstance(tangents, (tuple, list))):
        raise call_error(f"tracejit.jvp: primals and tangents must be tuples or lists, one "
                         f"entry per argument of the function, got {type(primals).__name__} "
                         f"and {type(tangents).__name__}",
                         "wrap them, as in JAX: jvp(f, (x,), (v,)) for a function of one "
                         "argument")


def jvp(fn, primals, tangents, has_aux=False):
    """(fn(*primals), the directional derivative of fn at primals along tangents); with
    has_aux, fn returns (output, aux) and jvp (output, tangent, aux), as JAX's (it was
    refused: jacfwd and hessian with has_aux are built on it)."""
    _callable(fn, "jvp")
    _check_jvp_arguments(primals, tangents)
    if current_trace() is not None:
        return _jvp_traced(fn, primals, tangents, has_aux)
    held = _jvp_jits_of(fn)
    if held is None:
        held = {}
        _keep_jvp_jits(fn, held)
    jitted = held.get(bool(has_aux))
    if jitted is None:
        def traced(primals, tangents):
            return _jvp_traced(fn, primals, tangents, has_aux)

        def with_values(rest, tangents, values):
            """``traced`` on the primals' leaves ``rest`` and, static, their integer ones:
            ``values`` = (the primals' treedef, ((leaf index, value), ...))."""
            p_tree, known = values
            leaves = list(rest)
            for i, v in known:
                leaves.insert(i, v)
            return _jvp_traced(fn, unflatten(p_tree, leaves), tangents, has_aux)

        traced.__name__ = with_values.__name__ = f"jvp_{_name(fn)}"
        jitted = held[bool(has_aux)] = (jit(traced), jit(with_values, static_argnums=2),
                                        [False])
    plain, static, needs_values = jitted
    primals, tangents = tuple(primals), tuple(tangents)
    p_leaves, p_tree = flatten(primals)
    known = tuple((i, x) for i, x in enumerate(p_leaves) if _is_scalar(x, floats=False))
    if not (known and needs_values[0]):
        try:
            return plain(primals, tangents)
        except ConcretizationError:
            if not known:
                raise
    # Python code needed the value of an integer primal (range(n)), which JAX keeps
    # concrete: traced again with those static
    rest = tuple(x for x in p_leaves if not _is_scalar(x, floats=False))
    out = static(rest, tangents, (p_tree, known))
    needs_values[0] = True
    return out
