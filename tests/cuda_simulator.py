"""Importing this module chooses Numba's CUDA simulator for this process (a helper of the
tests/test_cuda_*.py modules, not tests), or skips the importing test module with the reason.

The simulator runs ``numba.cuda`` kernels as Python threads; it must be chosen before
``numba.cuda`` is first imported in a process. NUMBA_ENABLE_CUDASIM is set only for that
import (nothing else in tracejit imports numba.cuda: the CUDA backend is imported only when
asked for), and a process that already imported numba.cuda for the real target skips these
tests. A PTX check's child process (TRACEJIT_CUDA_PTX_CHILD=1) keeps the real target: the
simulator does not type-check kernels, NVVM does. TRACEJIT_CUDA_DEVICE_TESTS=1 (what
benchmarks/gpu.py sets) runs the same tests on a real GPU instead, and skips without one.
"""
from __future__ import annotations

import importlib.util
import os
import sys

import pytest

if importlib.util.find_spec("numba_cuda") is None:
    pytest.skip("numba-cuda is not installed (pip install tracejit[cuda])",
                allow_module_level=True)
PTX_CHILD = os.environ.get("TRACEJIT_CUDA_PTX_CHILD") == "1"
ON_DEVICE = os.environ.get("TRACEJIT_CUDA_DEVICE_TESTS") == "1"
if ON_DEVICE:
    from tracejit.codegen.cuda import has_device
    if not has_device():
        pytest.skip("TRACEJIT_CUDA_DEVICE_TESTS=1 but no CUDA GPU is usable here",
                    allow_module_level=True)
elif "numba.cuda" not in sys.modules and not PTX_CHILD:
    _saved = os.environ.get("NUMBA_ENABLE_CUDASIM")
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    try:
        # Numba reads its environment once, when first imported, and numba.cuda's config is
        # numba.core.config: a process that imported numba (tracejit, any earlier test
        # module) must have it read again, or numba.cuda is imported for the real target.
        from numba.core import config as _numba_config
        _numba_config.reload_config()
        import numba.cuda  # noqa: F401
    finally:
        if _saved is None:
            del os.environ["NUMBA_ENABLE_CUDASIM"]
        else:
            os.environ["NUMBA_ENABLE_CUDASIM"] = _saved
from numba.cuda.core import config as _cuda_config  # noqa: E402

if not _cuda_config.ENABLE_CUDASIM and not PTX_CHILD and not ON_DEVICE:
    pytest.skip("numba.cuda was imported for the real target before this module: the "
                "simulator cannot be chosen any more in this process", allow_module_level=True)


def ptx_child_env() -> dict:
    """The environment of a child process compiling kernels to PTX (the real target)."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["TRACEJIT_CUDA_PTX_CHILD"] = "1"
    return env
