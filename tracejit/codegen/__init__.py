"""Code generation: fusion groups -> Numba kernel sources (kernel.py, templates.py, with the
per-op rules of emitters.py and the vectorizable math of mathlib.py), cached on disk by source
(cache.py), and the whole Function -> one generated entry function (plan.py)."""
from .cache import cache_dir, clear_cache, stats
from .plan import Plan, Program, compile_plan

__all__ = ["Plan", "Program", "compile_plan", "cache_dir", "clear_cache", "stats"]
