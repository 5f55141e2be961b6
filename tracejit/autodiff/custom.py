"""``custom_vjp``: a function with its own backward rule (JAX's API shape).

Done at trace level, with no new IR op: calling the function inside a trace emits a ``call`` op
whose body is the traced function, and the rule (the user's ``fwd`` and ``bwd``) is kept in a
registry keyed by that body. Reverse mode meets the ``call``, runs ``fwd`` on Tracers for the
primal outputs and residuals, and later ``bwd`` on Tracers for the cotangents. Forward mode and
code generation see an ordinary ``call`` of the function itself.
"""
from __future__ import annotations

import functools
import weakref

from ..tracer.pytree import flatten, unflatten
from ..tracer.trace import current_trace
from ..tracer.tracer import Tracer
from .build import call_traced, zeros_like

_RULES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


class CustomRule:
    def __init__(self, fwd, bwd, in_tree, out_tree, arg_sizes: list[int]):
        self.fwd, self.bwd = fwd, bwd
        self.in_tree, self.out_tree, self.arg_sizes = in_tree, out_tree, arg_sizes
        self.num_args = sum(arg_sizes)

    def forward(self, xs: list[Tracer]):
        """Primal outputs (flat, one per call result) and the residuals, traced from fwd."""
        args, _ = unflatten(self.in_tree, xs[:self.num_args])
        out, res = self.fwd(*args)
        outs, tree = flatten(out)
        if tree != self.out_tree:
            raise TypeError(f"custom_vjp: fwd returned outputs of structure {tree}, but the "
                            f"function returns {self.out_tree}")
        return outs, res

    def backward(self, res, out_cts: list, outs: list[Tracer], num_operands: int) -> list:
        cts = [c if c is not None else zeros_like(o) for c, o in zip(out_cts, outs)]
        arg_cts = self.bwd(res, unflatten(self.out_tree, cts))
        if not isinstance(arg_cts, tuple):
            raise TypeError("custom_vjp: bwd must return a tuple with one cotangent per "
                            f"argument, got {type(arg_cts).__name__}")
        if len(arg_cts) != len(self.arg_sizes):
            raise TypeError(f"custom_vjp: bwd returned {len(arg_cts)} cotangents for "
                            f"{len(self.arg_sizes)} arguments")
        flat = []
        for n, ct in zip(self.arg_sizes, arg_cts):
            flat += [None] * n if ct is None else flatten(ct)[0]
        return flat + [None] * (num_operands - len(flat))


def rule_for(call_op) -> CustomRule | None:
    return _RULES.get(call_op.regions[0])


class custom_vjp:
    """``f = custom_vjp(f); f.defvjp(fwd, bwd)``: fwd(*args) -> (out, residuals),
    bwd(residuals, out_cotangent) -> tuple of one cotangent per argument (None for none)."""

    def __init__(self, fun):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.fwd = self.bwd = None

    def defvjp(self, fwd, bwd):
        self.fwd, self.bwd = fwd, bwd
        return self

    def __call__(self, *args):
        if self.fwd is None:
            raise TypeError(f"custom_vjp {self.__name__}: call defvjp(fwd, bwd) first")
        leaves, in_tree = flatten((args, {}))
        if current_trace() is None and not any(isinstance(x, Tracer) for x in leaves):
            return self.fun(*args)
        out, body, out_tree = call_traced(self.fun, args, {}, self.__name__)
        sizes = [len(flatten(a)[0]) for a in args]
        _RULES[body] = CustomRule(self.fwd, self.bwd, in_tree, out_tree, sizes)
        return out
