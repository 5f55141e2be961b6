"""``jit(f).lower(*args)``: the program at each stage, as text, for debugging."""
from __future__ import annotations


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

    def as_text(self) -> str:
        return "\n\n".join(f"== {name} ==\n{text}" for name, text in self.stages().items())

    def stages(self) -> dict[str, str]:
        return {"ir": self.ir}

    def __str__(self) -> str:
        return self.as_text()
