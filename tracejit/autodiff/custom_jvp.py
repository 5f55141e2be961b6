"""``custom_jvp``: a function with its own forward-mode rule (JAX's API shape); it was missing.

As ``custom_vjp`` (custom.py), with no new IR op: inside a trace a call emits a ``call`` op whose
body is the traced function, named ``<function>.custom_jvp<n>``, the key of the user's rule in
a process-wide registry. Forward mode (forward.py) runs the rule on the call's operands and
tangents instead of differentiating the body. Reverse mode (reverse.py) runs the body forward,
and in the backward pass the vjp of the rule's tangent map (primals fixed, tangents -> output
tangents: linear in the tangents, so its vjp at zero tangents is its transpose), as JAX
transposes the linearized rule. Code generation sees an ordinary ``call`` of the function.
"""
from __future__ import annotations

import functools
import re

from ..tracer.errors import unsupported
from ..tracer.numpy.lifting import astype, broadcast_to, lift
from ..tracer.pytree import flatten, unflatten
from ..tracer.trace_state import current_trace
from ..tracer.tracer import Tracer
from .build import is_static, static_leaves, zeros_like
from .custom import _resolve, call_named, lookup_rule

_RULES: dict = {}                   # body name -> JvpRule, for the life of the process
_NAME = re.compile(r"\.custom_jvp\d+$")


class JvpRule:
    def __init__(self, name, jvp, in_tree, out_tree, arg_sizes: list[int],
                 static: list[bool]):
        self.name, self.jvp = name, jvp
        self.in_tree, self.out_tree, self.arg_sizes = in_tree, out_tree, arg_sizes
        self.num_args = sum(arg_sizes)
        self.static = static            # per argument: all its leaves fixed as values

    def apply(self, xs: list, ts: list) -> tuple[list, list]:
        """(outputs, output tangents), flat, from the user's rule on the call's operands and
        their tangents (None: zero)."""
        if any(t is not None for t in ts[self.num_args:]):
            raise unsupported(f"differentiating with respect to a traced value that the "
                              f"custom_jvp function {self.name} closes over",
                              "pass it as an argument of the function, as JAX asks")
        args, _ = unflatten(self.in_tree, xs[:self.num_args])
        tangents, at = [], 0
        for k, n in enumerate(self.arg_sizes):
            leaves = [t if t is not None else zeros_like(x)
                      for t, x in zip(ts[at:at + n], xs[at:at + n])]
            at += n
            # an argument fixed as its value (an int) has no tangent (JAX's float0 zeros)
            tangents.append(None if self.static[k] else
                            unflatten(flatten(args[k])[1], leaves))
        out, tout = self.jvp(tuple(args), tuple(tangents))
        outs, tree = flatten(out)
        touts, ttree = flatten(tout)
        if tree != self.out_tree or ttree != self.out_tree:
            raise TypeError(f"custom_jvp {self.name}: the rule returned outputs of structure "
                            f"{tree} and tangents of {ttree}, but the function returns "
                            f"{self.out_tree}")
        trace = current_trace()
        outs = [lift(o, trace) for o in outs]
        # (a tangent of the output's dtype and shape: a Python 0.0 for no dependence)
        touts = [broadcast_to(astype(lift(t, trace), o.dtype), tuple(o.shape))
                 if o._value.type.dtype.is_float else None for t, o in zip(touts, outs)]
        return outs, touts

    def transpose(self, xs: list, outs: list, out_cts: list, active: list[bool],
                  record) -> list:
        """The operands' cotangents: the vjp of the rule's tangent map at zero tangents
        (``record``: reverse.record, passed in by reverse.py)."""
        from ..tracer.trace_function import trace
        n = len(xs)
        wrt = [i for i in range(n) if active[i] and xs[i]._value.type.dtype.is_float]

        def tangent_map(primals, tangents):
            full = [None] * n
            for i, t in zip(wrt, tangents):
                full[i] = t
            return self.apply(list(primals), full)[1]

        zero = [zeros_like(xs[i]) for i in wrt]
        traced = trace(tangent_map, (list(xs), zero), {}, f"{self.name}_jvp_map")
        fn = traced.function
        _, pull = record(fn, list(xs) + zero + list(traced.captured),
                         range(n, n + len(wrt)))
        # the map's results: the tangents of the float outputs
        grads = pull([c for c, o in zip(out_cts, outs) if o._value.type.dtype.is_float])
        cts = [None] * n
        for i, g in zip(wrt, grads[n:n + len(wrt)]):
            cts[i] = g
        return cts


def rule_for(call_op) -> JvpRule | None:
    return lookup_rule(_RULES, _NAME, call_op, "custom_jvp")


class custom_jvp:
    """``f = custom_jvp(f)`` and ``@f.defjvp`` on ``jvp(primals, tangents) -> (out,
    tangent_out)``, as JAX's: forward mode uses the rule, reverse mode its transpose (the
    tangent out must be linear in the tangents). Integer, bool and non-array arguments are
    fixed for each call's trace, as custom_vjp's; their tangent is None."""

    def __init__(self, fun):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.jvp = None
        self._names: dict = {}

    def defjvp(self, jvp):
        self.jvp = jvp
        self._names.clear()
        return jvp

    def __call__(self, *args, **kwargs):
        if self.jvp is None:
            raise TypeError(f"custom_jvp {self.__name__}: call defjvp(jvp) first")
        args = _resolve(self.fun, args, kwargs) if kwargs else args
        leaves, _ = flatten((args, {}))
        if current_trace() is None and not any(isinstance(x, Tracer) for x in leaves):
            return self.fun(*args)
        static = [all(is_static(x, "ints") for x in flatten(a)[0]) and bool(flatten(a)[0])
                  for a in args]
        args = static_leaves(args, "ints")
        name, out, in_tree, out_tree, sizes = call_named(self, args, "custom_jvp")
        _RULES[name] = JvpRule(self.__name__, self.jvp, in_tree, out_tree, sizes, static)
        return out
