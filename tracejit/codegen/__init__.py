"""Code generation: fusion groups -> Numba kernel sources (kernel.py, templates.py, with the
per-op rules of emitters.py and the vectorizable math of mathlib.py), cached on disk by source
(cache.py); groups that only move data -> NumPy statements (movement.py); the whole Function
-> one generated Python entry (plan.py), loaded and run by program.py, large kernels on
blocks in several threads (threads.py). The NumPy first tier is numpy_tier.py."""
from .cache import cache_dir, clear_cache, stats
from .plan import Plan
from .program import Program, compile_plan

__all__ = ["Plan", "Program", "compile_plan", "cache_dir", "clear_cache", "stats"]
