"""What each pass did: one ``PassRecord`` per pass run, in order, kept by a ``PassLog``.

The pipeline (``optimize``, and the driver's fusion and plan steps) records into a log when it
is given one, and does nothing more when it is not: the passes themselves only count what they
alone can see (simplify, the patterns that fired). Everything else is read off the Functions
before and after a pass, which are immutable: ops counted, constants made by folding.
``TRACEJIT_DUMP=passes`` prints each record as it is made (``passes+ir``: and the IR after
each pass that changed it); ``jit(f).lower(*args).passes`` returns them as data.

Ops are counted in the Function the pass ran on, not in its regions: a region (the body of a
cond, while_loop or scan) is optimized as a Function of its own and gets records of its own,
named ``@main/3:scan_body`` (op 3 of ``@main``, its region ``scan_body``).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field

from .. import ops


@dataclass
class PassRecord:
    name: str              # inline, simplify, fold, cse, dce, remat, fuse, arena
    function: str          # "@step", or "@step/3:scan_body" for a region
    round: int | None      # the round of optimize's fixpoint loop (None outside it)
    ops_before: int
    ops_after: int
    details: dict          # what the pass knows it did (see summary())
    changed: bool = True   # False: the pass gave back the very Function it was given
    after: object = field(default=None, repr=False, compare=False)   # Function, or Fusion

    @property
    def removed(self) -> int:
        return self.ops_before - self.ops_after

    def summary(self) -> str:
        """One line: ``@step r1 cse: 140 -> 131 ops; merged 9``."""
        where = f"{self.function} r{self.round}" if self.round is not None else self.function
        said = _DESCRIBE.get(self.name, _describe_any)(self.details)
        counts = (f"{self.ops_before} ops" if self.ops_before == self.ops_after
                  else f"{self.ops_before} -> {self.ops_after} ops")
        return f"{where} {self.name}: {counts}" + (f"; {said}" if said else "")


class PassLog(list):
    """The records of one pipeline run (a list of PassRecord). With ``echo``, each record is
    printed to stderr as it is made (where config's dumps go); with ``ir`` too, the IR after
    each pass that changed the Function."""

    def __init__(self, echo: bool = False, ir: bool = False):
        super().__init__()
        self.echo, self.ir = echo, ir

    def add(self, name: str, function: str, before: int, after: int, details: dict,
            round: int | None = None, result=None, changed: bool = True) -> PassRecord:
        record = PassRecord(name, function, round, before, after, details, changed, result)
        self.append(record)
        if self.echo:
            print(f"pass {record.summary()}", file=sys.stderr)
            if self.ir and result is not None and changed:
                print(result, file=sys.stderr)
        return record

    def run(self, name: str, pass_fn, fn, function: str, round: int | None = None,
            **details):
        """``pass_fn(fn)``, recorded: ops before and after, and what ``DETAILS[name]`` reads
        off the two Functions, updated with ``details`` (mutable values the pass filled in)."""
        out = pass_fn(fn)
        found = DETAILS[name](fn, out) if name in DETAILS else {}
        found.update(details)
        self.add(name, function, len(fn.ops), len(out.ops), found, round, out, out is not fn)
        return out

    def removed_by_pass(self, function: str | None = None) -> dict:
        """Ops removed (net) by each pass name, summed over rounds (over one Function, if
        named): the table in docs/performance.md."""
        out: dict = {}
        for r in self:
            if function is None or r.function == function:
                out[r.name] = out.get(r.name, 0) + r.removed
        return out

    def __str__(self) -> str:
        return "\n".join(r.summary() for r in self)


def run_pass(log: PassLog | None, name: str, pass_fn, fn, function: str,
             round: int | None = None, **details):
    """``pass_fn(fn)``, recorded in ``log`` if there is one (no cost without)."""
    if log is None:
        return pass_fn(fn)
    return log.run(name, pass_fn, fn, function, round, **details)


# -- what each pass did, read off the Functions before and after it ---------------------------
def _made_constants(before, after) -> int:
    old = set(before.ops)
    return sum(op.opdef is ops.constant and op not in old for op in after.ops)


DETAILS = {
    "inline": lambda b, a: {"calls": sum(op.opdef is ops.call for op in b.ops)},
    "fold": lambda b, a: {"folded": _made_constants(b, a)},
    "cse": lambda b, a: {"merged": len(b.ops) - len(a.ops)},   # it only ever merges
    "dce": lambda b, a: {"removed": len(b.ops) - len(a.ops)},
}


def _bytes(n: int) -> str:
    return f"{n / 2**20:.2f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB"


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def _describe_any(d: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in d.items())


def _describe_simplify(d: dict) -> str:
    fired = d.get("patterns") or {}
    return ", ".join(f"{k} {v}" for k, v in sorted(fired.items(), key=lambda kv: -kv[1]))


def _describe_fuse(d: dict) -> str:
    kinds = ", ".join(f"{k} {n}" for k, n in d["kinds"].items())
    copies = d["broadcast_copies"]
    tail = f", {copies} broadcast {'copy' if copies == 1 else 'copies'}" if copies else ""
    return f"{_count(d['groups'], 'group')} ({kinds}){tail}"


def _describe_arena(d: dict) -> str:
    return (f"{_bytes(d['arena_bytes'])} planned for {_count(d['buffers'], 'buffer')} "
            f"({_bytes(d['unpacked_bytes'])} unpacked), {_count(d['kernels'], 'kernel')}; "
            f"peak {_bytes(d['peak_bytes'])} live")


def _describe_remat(d: dict) -> str:
    return (f"{_count(d['values_recomputed'], 'value')} recomputed ({d['ops_added']} ops), "
            f"peak {_bytes(d['peak_before'])} -> {_bytes(d['peak_after'])} live, "
            f"{_bytes(d['bytes_saved'])} saved; activations held "
            f"{_bytes(d['activations_before'])} -> {_bytes(d['activations_after'])}")


_DESCRIBE = {
    "inline": lambda d: f"{d['calls']} calls inlined" if d["calls"] else "",
    "simplify": _describe_simplify,
    "fold": lambda d: f"folded {d['folded']}" if d["folded"] else "",
    "cse": lambda d: f"merged {d['merged']}" if d["merged"] else "",
    "dce": lambda d: f"removed {d['removed']}" if d["removed"] else "",
    "fuse": _describe_fuse,
    "arena": _describe_arena,
    "remat": _describe_remat,
}
