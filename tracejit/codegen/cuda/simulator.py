"""Numba's CUDA simulator, made safe for the generated kernels.

The simulator gives the threads of a block one ``cuda.shared.array`` per source line: the
first thread to reach the line makes it, the others find it. That find-or-make is not atomic
(numba-cuda's ``FakeCUDAShared.array``: ``get``, then ``np.empty``, then store), and with the
short GIL switch interval a simulated program runs under (program.py), two threads of a block
could both make one: each then worked on its own "shared" tile, and a tiled matmul gave wrong
values, a different case in about one run of the differential suite in two. ``make_safe``
replaces it with the same lookup under a lock.

It also runs one kernel at a time (numba-cuda's ``_push_kernel_context`` asserts it, and a
launch swaps the kernel's global ``cuda`` for its own fake module): threads calling a jitted
function at once failed ("'Thread' object has no attribute 'threadIdx'"). ``RUN_LOCK``: a
simulated program runs whole under it (program.py), as one stream would run its kernels.
"""
from __future__ import annotations

import sys
import threading

_lock = threading.Lock()
_done = False
RUN_LOCK = threading.RLock()


def make_safe() -> None:
    global _done
    if _done:
        return
    import numpy as np
    from numba.core import types
    from numba.cuda.simulator import kernelapi
    from numba.np import numpy_support

    original = kernelapi.FakeCUDAShared.array

    def array(self, shape, dtype, alignment=None):
        if shape == 0 or alignment is not None:
            return original(self, shape, dtype, alignment)   # dynamic shared memory, errors
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        caller = sys._getframe(1)
        key = (caller.f_code.co_filename, caller.f_lineno)       # the simulator's own key
        with _lock:
            res = self._allocations.get(key)
            if res is None:
                res = self._allocations[key] = np.empty(shape, dtype)
        return res

    kernelapi.FakeCUDAShared.array = array
    _done = True
