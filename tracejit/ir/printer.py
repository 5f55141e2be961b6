"""Readable text form of a Function: one op a line, every value typed, the user's file:line.

``parse(print_function(f))`` rebuilds f, and printing that gives the same text again.
"""
from __future__ import annotations

import json
import re

from .graph import Function, Value
from .literals import format_attr

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
_FUNC_NAME = re.compile(r"^[A-Za-z0-9_.]+$")


def _loc(loc: str) -> str:
    """A location on one line, as the parser reads it back (a comment runs to the line's end)."""
    return re.sub(r"\s*[\r\n]+\s*", " ", loc).strip()


def _type_list(types) -> str:
    return "(" + ", ".join(str(t) for t in types) + ")"


class _Namer:
    def __init__(self):
        self.names: dict[Value, str] = {}
        self.taken: set[str] = set()
        self.counter = 0

    def param(self, v: Value, index: int) -> str:
        name = v.name if v.name and _IDENT.match(v.name) and not v.name[0].isdigit() else None
        if name is None or name in self.taken:
            name, k = f"arg{index}", 0
            while name in self.taken:  # a named parameter may already be called argN
                k += 1
                name = f"arg{index}_{k}"
        self.taken.add(name)
        self.names[v] = "%" + name
        return self.names[v]

    def result(self, v: Value) -> str:
        while str(self.counter) in self.taken:
            self.counter += 1
        name = str(self.counter)
        self.counter += 1
        self.taken.add(name)
        self.names[v] = "%" + name
        return self.names[v]

    def __getitem__(self, v: Value) -> str:
        try:
            return self.names[v]
        except KeyError:
            return f"%<undefined {v.id}>"


def print_function(fn: Function, indent: str = "", annotate=None) -> str:
    """annotate(op) -> str | None adds a note after an op (used to show fusion groups)."""
    namer = _Namer()
    params = ", ".join(f"{namer.param(p, i)}: {p.type}" for i, p in enumerate(fn.params))
    fname = fn.name if _FUNC_NAME.match(fn.name) else json.dumps(fn.name)  # "<lambda>"
    lines = [f"{indent}func @{fname}({params}) -> {_type_list(fn.result_types)} {{"]
    for op in fn.ops:
        operands = ", ".join(namer[v] for v in op.operands)
        attrs = " ".join(f"{k}={format_attr(kind, op.attrs[k])}"
                         for k, kind in op.opdef.attrs.items()
                         if k not in op.opdef.defaults or op.attrs[k] != op.opdef.defaults[k])
        body = " ".join(x for x in (op.name, operands, attrs) if x)
        if op.results:
            lhs = ", ".join(namer.result(r) for r in op.results)
            types = ", ".join(str(r.type) for r in op.results)
            text = f"{lhs} = {body} : {types}"
        else:
            text = body
        line = f"{indent}  {text}"
        note = annotate(op) if annotate else None
        loc = _loc(op.loc) if op.loc else ""
        if note:
            line = f"{line:<60}  # [{note}]" + (f" {loc}" if loc else "")
        elif loc:
            line = f"{line}  # {loc}"
        lines.append(line)
        if op.regions:
            # Nested Functions follow their op, between braces, indented.
            lines.append(f"{indent}  {{")
            lines.extend(print_function(r, indent + "    ", annotate) for r in op.regions)
            lines.append(f"{indent}  }}")
    lines.append(f"{indent}  return " + ", ".join(namer[r] for r in fn.results))
    lines.append(f"{indent}}}")
    return "\n".join(lines)
