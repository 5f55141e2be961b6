"""``custom_vjp``: a function with its own backward rule (JAX's API shape).

Done at trace level, with no new IR op: calling the function inside a trace emits a ``call`` op
whose body is the traced function, named ``<function>.custom_vjp<n>``. That name is the key of
the rule (the user's ``fwd`` and ``bwd``) in a process-wide registry, so the rule travels with
the Function: through copies, passes, and printing and parsing the IR text, as long as the
process has defined it (a call whose rule this process lacks is an error, never an ordinary
call). Reverse mode meets the ``call``, runs ``fwd`` on Tracers for the primal outputs and
residuals, and later ``bwd`` on Tracers for the cotangents. Forward mode and code generation see
an ordinary ``call`` of the function itself.
"""
from __future__ import annotations

import functools
import inspect
import itertools
import re

from ..tracer.errors import EscapedTracerError, call_error, unsupported
from ..tracer.numpy.lifting import astype, lift
from ..tracer.pytree import flatten, unflatten
from ..tracer.trace_state import current_trace
from ..tracer.tracer import Tracer
from .build import call_traced, is_static, static_leaves, zeros_like

_RULES: dict = {}                  # body name -> CustomRule, for the life of the process
_NAME = re.compile(r"\.custom_vjp\d+$")  # Python names have no dot: no other body matches
_numbers = itertools.count(1)


class CustomRule:
    def __init__(self, name, fwd, bwd, in_tree, out_tree, arg_sizes: list[int],
                 static: list[list[bool]] | None = None):
        self.name, self.fwd, self.bwd = name, fwd, bwd
        self.in_tree, self.out_tree, self.arg_sizes = in_tree, out_tree, arg_sizes
        self.num_args = sum(arg_sizes)
        # per argument, which of its leaves were fixed as values (custom_vjp.__call__)
        self.static = static or [[False] * n for n in arg_sizes]

    def _closure_error(self, what):
        return unsupported(
            f"{what} (the custom_vjp function {self.name}'s rule sees its arguments only)",
            "pass the traced value as an argument of the function (bwd returns its "
            "cotangent, or None), as JAX's custom_vjp asks")

    def forward(self, xs: list[Tracer], active: list[bool], results=()):
        """Primal outputs (flat, one per call result) and the residuals, traced from fwd;
        ``results``: the call's result Values, whose types fwd's outputs must have."""
        if any(active[self.num_args:]):    # its gradient would be silently dropped
            raise self._closure_error("differentiating with respect to a traced value "
                                      "that a custom_vjp function closes over")
        args, _ = unflatten(self.in_tree, xs[:self.num_args])
        try:
            out, res = self.fwd(*args)
        except EscapedTracerError as e:    # the closure's tracer is of the finished trace
            raise self._closure_error("a custom_vjp fwd using a traced value it closes "
                                      "over") from e
        outs, tree = flatten(out)
        if tree != self.out_tree:
            raise TypeError(f"custom_vjp: fwd returned outputs of structure {tree}, but the "
                            f"function returns {self.out_tree}")
        if results:     # a wrong one failed deep in the IR builder, naming no custom_vjp
            outs = [lift(x, current_trace()) for x in outs]
            for k, (x, r) in enumerate(zip(outs, results)):
                if x._value.type != r.type:
                    raise TypeError(f"custom_vjp {self.name}: fwd returned output {k} of type "
                                    f"{x._value.type}, but the function returns {r.type}; "
                                    "fwd's outputs must have the function's shapes and "
                                    "dtypes, as in JAX")
        return outs, res

    def backward(self, res, out_cts: list, outs: list[Tracer], xs: list[Tracer]) -> list:
        cts = [c if c is not None else zeros_like(o) for c, o in zip(out_cts, outs)]
        try:
            arg_cts = self.bwd(res, unflatten(self.out_tree, cts))
        except EscapedTracerError as e:
            raise self._closure_error("a custom_vjp bwd using a traced value it closes "
                                      "over") from e
        if not isinstance(arg_cts, tuple):
            raise TypeError("custom_vjp: bwd must return a tuple with one cotangent per "
                            f"argument, got {type(arg_cts).__name__}")
        if len(arg_cts) != len(self.arg_sizes):
            raise TypeError(f"custom_vjp: bwd returned {len(arg_cts)} cotangents for "
                            f"{len(self.arg_sizes)} arguments")
        flat = []
        for k, (n, ct) in enumerate(zip(self.arg_sizes, arg_cts)):
            leaves = [None] * n if ct is None else flatten(ct)[0]
            if len(leaves) != n and len(leaves) == len(self.static[k]):
                # cotangents for the fixed leaves too (an int's): those are not used
                leaves = [c for c, s in zip(leaves, self.static[k]) if not s]
            if len(leaves) != n:
                raise TypeError(f"custom_vjp {self.name}: bwd returned {len(leaves)} arrays "
                                f"for argument {k}, which holds {n}")
            flat += leaves
        return [self._as_operand(c, x, i) for i, (c, x) in enumerate(zip(flat, xs))] + \
            [None] * (len(xs) - len(flat))

    def _as_operand(self, ct, x: Tracer, i: int):
        """A cotangent of x's shape and dtype (a wrong shape would become the gradient's)."""
        if ct is None or not x._value.type.dtype.is_float:
            return None
        ct = lift(ct, x._trace)
        if tuple(ct.shape) != tuple(x.shape):
            raise ValueError(f"custom_vjp {self.name}: bwd returned a cotangent of shape "
                             f"{tuple(ct.shape)} for argument leaf {i} of shape "
                             f"{tuple(x.shape)}; it must have the argument's shape (sum over "
                             "broadcast dims), as in JAX")
        return ct if ct.dtype == x.dtype else astype(ct, x.dtype)


def _resolve(fun, args: tuple, kwargs: dict) -> tuple:
    """The arguments of a call of ``fun`` as positional ones, defaults filled in, as JAX's
    custom_vjp resolves them: fwd gets them all and bwd returns one cotangent for each."""
    try:
        sig = inspect.signature(fun)
    except (TypeError, ValueError):
        sig = None
    if sig is None:
        if kwargs:
            raise TypeError(f"custom_vjp {_name(fun)}: keyword arguments {sorted(kwargs)} "
                            "cannot be matched to positions (the function has no signature); "
                            "pass them positionally")
        return args
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    if bound.kwargs:
        raise call_error(f"custom_vjp {_name(fun)}: the keyword-only arguments "
                         f"{sorted(bound.kwargs)} cannot be matched to positions, as fwd and "
                         "bwd take the arguments positionally (JAX's custom_vjp refuses them "
                         "too)", "make them positional parameters, or close over them")
    return tuple(bound.args)


def _name(fun) -> str:
    return getattr(fun, "__name__", type(fun).__name__)


def rule_for(call_op) -> CustomRule | None:
    return lookup_rule(_RULES, _NAME, call_op, "custom_vjp")


def call_named(custom, args, kind: str):
    """A call of ``custom.fun`` on ``args`` (static leaves fixed) as a call op whose body is
    named ``<fn>.<kind><n>``, one name per argument structure (``custom._names``), the key
    the rule is registered under: (name, results, in_tree, out_tree, leaves per argument)."""
    _, in_tree = flatten((args, {}))
    sizes = [len(flatten(a)[0]) for a in args]
    key = (in_tree, tuple(sizes))
    name = custom._names.get(key)
    if name is None:
        name = custom._names[key] = f"{custom.__name__}.{kind}{next(_numbers)}"
    out, _, out_tree = call_traced(custom.fun, args, {}, name)
    return name, out, in_tree, out_tree, sizes


def lookup_rule(rules: dict, pattern, call_op, kind: str):
    """The rule of a call op from ``rules`` by its region's name; an error where the name says
    it had a ``kind`` rule (``pattern``) that this process has not defined (IR read from text
    or the disk cache)."""
    name = call_op.regions[0].name
    rule = rules.get(name)
    if rule is None and pattern.search(name):
        raise LookupError(f"the call of @{name} has a {kind} rule that this process has "
                          f"not defined: run the code that defines the {kind} function "
                          "(and calls it once with arguments of this structure) first")
    return rule


class custom_vjp:
    """``f = custom_vjp(f); f.defvjp(fwd, bwd)``: fwd(*args) -> (out, residuals),
    bwd(residuals, out_cotangent) -> tuple of one cotangent per argument (None for none).
    Keyword arguments and defaults are bound to positions first, as JAX's are: fwd gets them
    all positionally, and bwd answers for each. Integer, bool and non-array arguments (a
    step count, a function) are fixed for each call's trace, as JAX's ``nondiff_argnums``
    make them: fwd gets them as they are, and bwd's answer for them (None) is not used."""

    def __init__(self, fun):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.fwd = self.bwd = None
        self._names: dict = {}      # argument structure -> the body name its rule is under
        # no defaults, keyword-only or ** parameters: a call without keywords is as it is
        try:
            self._simple = all(p.default is p.empty and p.kind in (p.POSITIONAL_ONLY,
                                                                   p.POSITIONAL_OR_KEYWORD)
                               for p in inspect.signature(fun).parameters.values())
        except (TypeError, ValueError):
            self._simple = True

    def _positional(self, args, kwargs) -> tuple:
        if not kwargs and self._simple:
            return args
        return _resolve(self.fun, args, kwargs)

    def defvjp(self, fwd, bwd):
        self.fwd, self.bwd = fwd, bwd
        self._names.clear()         # a new rule: new names, so earlier IR keeps its old rule
        return self

    def __call__(self, *args, **kwargs):
        if self.fwd is None:
            raise TypeError(f"custom_vjp {self.__name__}: call defvjp(fwd, bwd) first")
        args = self._positional(args, kwargs)
        leaves, in_tree = flatten((args, {}))
        if current_trace() is None and not any(isinstance(x, Tracer) for x in leaves):
            return self.fun(*args)
        # integer, bool and non-array arguments (custom_vjp(f)(x, n_steps)) are fixed for
        # this call's trace, as JAX's nondiff_argnums fix them: fwd gets them as they are,
        # and what bwd answers for them is not used
        static = [[is_static(x, "ints") for x in flatten(a)[0]] for a in args]
        args = static_leaves(args, "ints")
        name, out, in_tree, out_tree, sizes = call_named(self, args, "custom_vjp")
        _RULES[name] = CustomRule(self.__name__, self.fwd, self.bwd, in_tree, out_tree, sizes,
                                  static)
        return out
