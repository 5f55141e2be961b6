"""Run every benchmark module in this package, or those named on the command line."""
from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def modules() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)])
                  if not m.name.startswith("_"))


def main(argv: list[str]) -> int:
    names = argv or modules()
    unknown = sorted(set(names) - set(modules()))
    if unknown:
        print(f"unknown benchmark(s) {unknown}; available: {modules()}", file=sys.stderr)
        return 2
    sys.argv = sys.argv[:1]     # modules that read their own arguments see none
    for name in names:
        mod = importlib.import_module(f"benchmarks.{name}")
        if not hasattr(mod, "main"):
            continue
        print(f"\n######## benchmarks.{name}", flush=True)
        mod.main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
