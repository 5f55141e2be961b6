"""``jit(f).lower(*args)``: the program at each stage, as text, for debugging."""
from __future__ import annotations

from .pipeline import fusion_of


class Lowered:
    def __init__(self, entry):
        self._entry = entry

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
            text = str(fusion_of(self.function))
        return text

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
        return {"ir": self.ir, "optimized": self.optimized, "source": self.source,
                "tiers": self.tiers}

    def __str__(self) -> str:
        return self.as_text()
