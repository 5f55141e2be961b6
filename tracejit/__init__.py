"""tracejit: a tracing JIT compiler for numerical Python.

    @tracejit.jit
    def f(x, y):
        return np.tanh(x @ y).sum(axis=1)

    print(tracejit.make_ir(f)(x, y))   # the typed SSA IR
    f(x, y)                            # traced once per signature, then compiled
"""
from . import ir, lax
from .autodiff import (checkpoint, custom_jvp, custom_vjp, grad, hessian, jacfwd, jacrev,
                       jvp, value_and_grad, vjp)
from .batching import vmap
from .codegen.cache import CacheWarning, clear_cache
from .config import ConfigWarning, config
from .debugging import debug_print
from .driver import CompileWarning, RetraceWarning, jit, make_ir
from .tracer import (ConcretizationError, EscapedTracerError, Tracer, TracerError,
                     UnsupportedError, cond, fori_loop, register_pytree_node, scan, switch,
                     tree_map, while_loop)

__version__ = "0.1.0"

__all__ = ["ir", "lax", "config", "ConfigWarning", "jit", "make_ir", "register_pytree_node",
           "tree_map", "Tracer", "TracerError", "ConcretizationError", "EscapedTracerError",
           "UnsupportedError", "RetraceWarning", "grad", "value_and_grad", "vjp", "jvp", "jacfwd",
           "jacrev", "hessian", "checkpoint", "custom_vjp", "custom_jvp", "debug_print",
           "vmap", "clear_cache", "CacheWarning", "CompileWarning", "cond", "switch", "while_loop", "fori_loop", "scan"]

# Imported on first use (``tracejit.nn.Linear`` after ``import tracejit``, as with torch.nn),
# so that ``import tracejit`` stays as fast for code that does not use them.
_LAZY_SUBMODULES = ("nn", "optim", "scipy", "amp", "random")


def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY_SUBMODULES))
