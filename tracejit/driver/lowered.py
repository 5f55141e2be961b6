"""``jit(f).lower(*args)``: the program at each stage, as text, for debugging."""
from __future__ import annotations

from ..ir.passes import PassLog
from ..ir.passes.pass_log import _bytes
from ..ir.passes.remat import policy_of
from .pipeline import fusion_of, optimized_of, plan_of


class Lowered:
    def __init__(self, entry, remat="none"):
        self._entry = entry
        self._remat = remat
        self._passes = None

    @property
    def function(self):
        """The traced Function (an object: transform it, print it, run it)."""
        return self._entry.traced.function

    @property
    def ir(self) -> str:
        """The traced IR, before any optimization."""
        return str(self.function)

    @property
    def optimized(self) -> str:
        """The IR after the passes, each op annotated with its fusion group ``# [g3 loop]``."""
        text = getattr(self._entry.program, "optimized", None)
        if text is None:
            text = str(fusion_of(self.function, remat=self._remat))
        return text

    @property
    def passes(self):
        """What each pass did, in order: a ``PassLog`` (a list) of ``PassRecord``s, each with
        ``name`` (inline, simplify, fold, cse, dce per round; then fuse and arena),
        ``function`` (``@f``, or ``@f/3:scan_body`` for a region), ``round``, ``ops_before``,
        ``ops_after`` and ``details`` (simplify: ``patterns`` fired by name; fold: ``folded``;
        cse: ``merged``; dce: ``removed``; fuse: ``groups`` and their ``kinds``; arena:
        ``arena_bytes``, ``buffers``, ``peak_bytes``...; with ``remat``, a ``remat`` record
        before fuse: ``values_recomputed``, ``bytes_saved``). ``print`` it for one line a pass, as
        ``TRACEJIT_DUMP=passes`` prints. The passes are run again here on the traced
        Function (they are deterministic), through the compiled backend's pipeline."""
        if self._passes is None:
            log = PassLog()
            plan_of(self.function, optimized_of(self.function, log, self._remat), log)
            self._passes = log
        return self._passes

    @property
    def remat(self) -> str:
        """One line: values recomputed by ``remat`` and the arena's peak live bytes without
        and with it (the plan is built again without; nothing is compiled)."""
        if policy_of(self._remat) is None:
            return "remat: none"
        base = PassLog()
        plan_of(self.function, optimized_of(self.function, base), base)
        (rec,) = [r for r in self.passes if r.name == "remat"]
        old = next(r for r in base if r.name == "arena").details
        new = next(r for r in self.passes if r.name == "arena").details
        saved = old["peak_bytes"] - new["peak_bytes"]
        return (f"remat: {rec.details['values_recomputed']} values recomputed; arena peak "
                f"{_bytes(old['peak_bytes'])} -> {_bytes(new['peak_bytes'])} live "
                f"({_bytes(saved)} saved), arena {_bytes(old['arena_bytes'])} -> "
                f"{_bytes(new['arena_bytes'])}")

    @property
    def source(self) -> str:
        """The generated source of every kernel and of the entry function ("numba" backend)."""
        return getattr(self._entry.program, "source", "# (interpreter backend: no source)")

    @property
    def tiers(self) -> str:
        """Which tier runs the program's calls, and how long its kernels took to compile."""
        describe = getattr(self._entry.program, "describe", None)
        return describe() if describe is not None else "compiled before the first call"

    @property
    def placement(self) -> str:
        """Where each group runs and why ("cuda" backend: the groups left on the CPU)."""
        return getattr(self._entry.program, "placement", "# every group on the CPU")

    def ptx(self, cc=(9, 0)) -> list[str]:
        """The PTX of every CUDA kernel for compute capability ``cc`` ("cuda" backend),
        compiled by NVVM without a GPU."""
        ptx = getattr(self._entry.program, "ptx", None)
        if ptx is None:
            raise ValueError("ptx() needs a program of the cuda backend: "
                             "jit(f, device='cuda').lower(*args).ptx()")
        return ptx(cc)

    def as_text(self) -> str:
        return "\n\n".join(f"== {name} ==\n{text}" for name, text in self.stages().items())

    def stages(self) -> dict[str, str]:
        stages = {"ir": self.ir, "optimized": self.optimized, "source": self.source,
                  "tiers": self.tiers}
        if policy_of(self._remat) is not None:
            stages["remat"] = self.remat
        return stages

    def __str__(self) -> str:
        return self.as_text()
