"""How generated CUDA kernels spell scalar math, on the device and under Numba's CUDA
simulator.

Why not the CPU kernels' helpers: mathlib's exp32/tanh32 are built on LLVM intrinsics that
neither NVVM nor the simulator runs (``radd`` and ``bits_to_f32`` are not usable in pure
Python), ``np.sqrt`` on a scalar does not type on the CUDA target, and ``@cuda.jit(device=
True)`` helpers need a driver to compile (``compile_ptx`` must work without one). The
simulator runs a kernel as Python, where ``math.exp(1000.0)`` raises instead of giving inf
and libdevice's functions are stubs returning None. So a kernel's source spells each function
for its target: ``math``/libdevice calls on the device, NumPy's ufuncs under the simulator
(the sources differ anyway: launch.py). runtime.py's integer helpers (ifloordiv, f2i32, ...)
are inlined Numba functions that compile for the device as they are.
"""
from __future__ import annotations


def _simulated() -> bool:
    from numba.cuda.core import config
    return bool(config.ENABLE_CUDASIM)


SIMULATED = _simulated()

# math name -> (spelling on the device, spelling under the simulator)
_LIBDEVICE = {"floor", "ceil", "rint"}        # math.floor and math.ceil return integers
_NUMPY = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
          "atanh": "arctanh", "atan2": "arctan2"}


def call(fn: str, *args: str) -> str:
    """The call of math function ``fn`` on ``args`` in a kernel for this target."""
    if SIMULATED:
        name = "sp_erf" if fn == "erf" else f"np.{_NUMPY.get(fn, fn)}"
        return f"{name}({', '.join(args)})"
    if fn in _LIBDEVICE:
        return f"libdevice.{fn}({', '.join(f'np.float64({a})' for a in args)})"
    return f"math.{fn}({', '.join(args)})"


IMPORTS = ("from scipy.special import erf as sp_erf" if SIMULATED
           else "from numba.cuda import libdevice")
