"""The SSA graph: Values, Ops and Functions.

A Function is a list of Ops in program order; each Op defines fresh Values (SSA) and only uses
parameters or Values defined by earlier Ops. Ops hold ``regions`` (nested Functions) so that
structured control flow fits later without changing this module.
"""
from __future__ import annotations

import itertools
from typing import Any, Iterable

from .types import TensorType

_ids = itertools.count()


class Value:
    """One SSA value: its type, and the Op that defines it (None for a parameter)."""

    __slots__ = ("type", "op", "name", "id")

    def __init__(self, type: TensorType, op: "Op | None" = None, name: str | None = None):
        self.type = type
        self.op = op
        self.name = name
        self.id = next(_ids)

    @property
    def dtype(self):
        return self.type.dtype

    @property
    def shape(self):
        return self.type.shape

    def __repr__(self) -> str:
        return f"Value({self.name or self.id}: {self.type})"


class Op:
    """An application of an OpDef (see registry.py) to operand Values, with attributes."""

    __slots__ = ("opdef", "operands", "attrs", "results", "loc", "regions")

    def __init__(self, opdef, operands: list[Value], attrs: dict[str, Any],
                 result_types: list[TensorType], loc: str | None = None,
                 regions: list["Function"] | None = None):
        self.opdef = opdef
        self.operands = list(operands)
        self.attrs = dict(attrs)
        self.results = [Value(t, self) for t in result_types]
        self.loc = loc
        self.regions = regions or []

    @property
    def name(self) -> str:
        return self.opdef.name

    @property
    def result(self) -> Value:
        (r,) = self.results
        return r

    def __repr__(self) -> str:
        return f"Op({self.name}, {[str(v.type) for v in self.operands]} -> {[str(r.type) for r in self.results]})"


class Function:
    """Typed parameters, ops in order, and results: the unit every stage takes and gives."""

    def __init__(self, name: str, params: list[Value], ops: list[Op], results: list[Value]):
        self.name = name
        self.params = list(params)
        self.ops = list(ops)
        self.results = list(results)

    @property
    def param_types(self) -> list[TensorType]:
        return [p.type for p in self.params]

    @property
    def result_types(self) -> list[TensorType]:
        return [r.type for r in self.results]

    # ``str(fn)`` (the text form, printer.py) and ``fn(*arrays)`` (the reference interpreter,
    # interpreter.py) are attached by ir/__init__.py: both modules build on this one, which
    # imports neither.

    def __repr__(self) -> str:
        return f"<Function @{self.name} ({len(self.params)} params, {len(self.ops)} ops)>"

    def uses(self) -> dict[Value, list[Op]]:
        """Map from each Value to the Ops that read it, in program order."""
        users: dict[Value, list[Op]] = {}
        for op in self.ops:
            for v in op.operands:
                users.setdefault(v, []).append(op)
        return users


class Builder:
    """Appends Ops to a growing Function, checking each against its type rule."""

    def __init__(self, name: str = "main"):
        self.name = name
        self.params: list[Value] = []
        self.ops: list[Op] = []

    def param(self, type: TensorType, name: str | None = None) -> Value:
        v = Value(type, None, name)
        self.params.append(v)
        return v

    def emit(self, opdef, operands: Iterable[Value], loc: str | None = None,
             regions: list["Function"] | None = None, **attrs) -> Op:
        operands = list(operands)
        attrs = opdef.normalize_attrs(attrs)
        result_types = opdef.infer([v.type for v in operands], attrs, regions or [])
        op = Op(opdef, operands, attrs, result_types, loc, regions)
        self.ops.append(op)
        return op

    def build(self, results: list[Value]) -> Function:
        return Function(self.name, self.params, self.ops, results)
