"""The op registry: what an op is (``OpDef``) and the table of all of them (``OPS``).

The ops themselves are defined in ops.py, each once, with every stage-neutral fact about it:
operands, attributes, type rule, reference semantics (its NumPy implementation, which the
interpreter runs), category, the dtype kinds it accepts, whether it is costly to compute,
a layout op's index map, and the NumPy names that reach it (or ``internal``).

Later stages keep their rules in tables keyed by the OpDef, each made by :func:`rule_table`
(derivatives in autodiff/, code generation in codegen/emitters.py);
``tests/test_op_coverage.py`` lists any op that lacks a rule in some stage.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from . import dtypes
from .types import TensorType


class IRTypeError(TypeError):
    """An op was applied to operands or attributes its type rule rejects."""


# Attribute kinds: how a value is normalised, printed and parsed.
ATTR_KINDS = ("int", "ints", "float", "bool", "dtype", "array", "str", "optint")


def _normalize_attr(kind: str, name: str, value):
    if kind == "int":
        return int(value)
    if kind == "optint":
        return None if value is None else int(value)
    if kind == "ints":
        return tuple(int(v) for v in value)
    if kind == "float":
        return float(value)
    if kind == "bool":
        return bool(value)
    if kind == "dtype":
        return dtypes.as_dtype(value)
    if kind == "str":
        return str(value)
    if kind == "array":
        arr = np.asarray(value)
        dtypes.as_dtype(arr.dtype)  # rejects unsupported dtypes
        arr = np.array(arr, copy=True)
        arr.setflags(write=False)
        return arr
    raise ValueError(f"unknown attribute kind {kind!r} for {name}")


# What an op does with its operands, which decides how every stage treats it:
CATEGORIES = (
    "elementwise",   # result[i] = f(operands[i]); ``arity`` operands of one type (iota: 0)
    "reduction",     # reduces ``axes`` (or ``axis``) of its operand
    "scan",          # a running reduction along ``axis`` (cumsum): same shape as the operand
    "sort",          # orders along ``axis`` (sort, argsort): same shape as the operand
    "linalg",        # factors or solves the matrices in the last two dims (LAPACK: solve, ...)
    "layout",        # moves elements without computing: has an ``index_map``
    "movement",      # moves data into a new shape that no index map states (pad, concatenate)
    "gather",        # reads at integer indices (take)
    "scatter",       # writes at integer indices (scatter_add)
    "matmul",        # contraction
    "source",        # no operands: a constant
    "effect",        # a side effect (debug_print)
    "structural",    # regions and barriers (call, optimization_barrier)
    "control",       # structured control flow over regions (cond, while_loop, scan)
)


@dataclass(eq=False)
class OpDef:
    """Every fact about one op that is not a later stage's rule."""
    name: str
    num_operands: int | None          # None: variadic
    attrs: dict[str, str]             # attribute name -> kind (ATTR_KINDS)
    type_rule: Callable[[list[TensorType], dict], list[TensorType]]
    impl: Callable[..., Any]          # impl(*arrays, **attrs) -> array, or list for multi-result
    category: str = "structural"      # one of CATEGORIES
    differentiable: bool = True
    side_effect: bool = False          # kept by DCE even when unused (debug_print)
    meta: dict = field(default_factory=dict)  # more stage-neutral facts, e.g. {"numpy": np.tanh}
    num_regions: int | None = 0       # ops holding nested Functions (call, control flow);
    #                                   None: one or more (cond's branches)
    arity: int | None = None          # elementwise: number of operands
    kinds: str = "biuf"               # dtype kinds of the (first) operand the type rule accepts
    costly: bool = False              # a transcendental: worth computing once, not twice
    # layout ops: ``index_map(op, idx) -> idx`` of the operand read when the result is read at
    # the symbolic index ``idx`` (dims named by strings, "0" for a broadcast size-1 dim, "?"
    # where arithmetic is needed: the kernel generator then computes it)
    index_map: Callable | None = None
    numpy: tuple = ()                 # NumPy names whose tracing emits this op (np.<name>)
    internal: bool = False            # emitted by the tracer or autodiff itself, no NumPy name
    # attributes that may be left out, and their values then; the printer leaves them out too
    defaults: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.category not in CATEGORIES:
            raise ValueError(f"op {self.name}: unknown category {self.category!r}")
        if (self.category == "layout") != (self.index_map is not None):
            raise ValueError(f"op {self.name}: a layout op, and only one, has an index_map")
        if self.category == "elementwise" and self.arity is None:
            raise ValueError(f"elementwise op {self.name} needs its arity")
        self.numpy = tuple(self.numpy)

    def normalize_attrs(self, attrs: dict) -> dict:
        unknown = set(attrs) - set(self.attrs)
        if unknown:
            raise IRTypeError(f"{self.name}: unknown attributes {sorted(unknown)}")
        attrs = {**self.defaults, **attrs}
        missing = set(self.attrs) - set(attrs)
        if missing:
            raise IRTypeError(f"{self.name}: missing attributes {sorted(missing)}")
        return {k: _normalize_attr(self.attrs[k], k, attrs[k]) for k in self.attrs}

    def infer(self, operand_types: list[TensorType], attrs: dict,
              regions: list | tuple = ()) -> list[TensorType]:
        if self.num_operands is not None and len(operand_types) != self.num_operands:
            raise IRTypeError(
                f"{self.name} takes {self.num_operands} operands, got {len(operand_types)}")
        if (len(regions) != self.num_regions if self.num_regions is not None
                else not regions):
            raise IRTypeError(f"{self.name} holds {self.num_regions or 'one or more'} regions, "
                              f"got {len(regions)}")
        try:
            if self.num_regions != 0:
                return list(self.type_rule(operand_types, attrs, regions))
            return list(self.type_rule(operand_types, attrs))
        except ValueError as e:  # e.g. a negative dimension in a result shape
            raise IRTypeError(f"{self.name}: {e}") from None

    def __repr__(self) -> str:
        return f"<op {self.name}>"


OPS: dict[str, OpDef] = {}


def register(opdef: OpDef) -> OpDef:
    if opdef.name in OPS:
        raise ValueError(f"op {opdef.name} registered twice")
    OPS[opdef.name] = opdef
    return opdef


def lookup(name: str) -> OpDef:
    try:
        return OPS[name]
    except KeyError:
        raise IRTypeError(f"unknown op {name!r}") from None


def rule_table() -> tuple[dict, "Callable"]:
    """A stage's per-op table and its decorator: ``TABLE, rule = rule_table()`` then
    ``@rule(ops.tanh) def _(...)``. Each stage (derivatives, kernels) keeps its own table;
    tests/test_op_coverage.py checks the tables against the registry."""
    table: dict = {}

    def rule(opdef):
        def register(fn):
            table[opdef] = fn
            return fn
        return register

    return table, rule
