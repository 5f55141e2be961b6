"""A fused Function run on a CUDA device: the device program.

Steps in the fusion's order: a device group launches its kernel (kernels.py) with the
configuration of launch.py; a CPU group (placement.py says which and why) runs its ops on
NumPy. Values live where they were made. A value is copied to the other side only when a step
there reads it, and at most once per direction (``transfers`` counts them): inputs go to the
device once, intermediates stay there, results come back as NumPy arrays (or stay device
arrays, ``device_results=True``). Kernels compile on the first call (``cuda.jit`` needs a
device); ``ptx(cc)`` compiles every kernel's source for a compute capability without one.

The steps run from Python (a dictionary per call, one launch per kernel); a generated entry
like the CPU plan's is the obvious next step once a GPU can measure what dispatch costs.
"""
from __future__ import annotations

import itertools
import linecache
import math
import sys
import threading

import numpy as np

from ...ir import Function
from ...ir.passes.fusion import Fusion
from ..numpy_tier import NumpyProgram
from .kernels import generate_cuda_kernel, two_pass_reduction
from .launch import device_config
from .placement import cpu_reason
from .simulator import RUN_LOCK as SIMULATOR_RUN_LOCK
from .simulator import make_safe as make_simulator_safe

_modules = itertools.count()
_compiled_kernels: dict = {}     # (source, signature, simulated) -> the cuda.jit kernel
_compiled_lock = threading.Lock()


def _load(source: str, name: str) -> dict:
    """Run a kernel module's source (registered with linecache, so tracebacks and the
    simulator show its lines); its namespace."""
    filename = f"<tracejit cuda kernel {name} #{next(_modules)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {"__name__": f"tracejit_cuda_{name}"}
    exec(compile(source, filename, "exec"), namespace)
    return namespace


def _constant(v) -> np.ndarray:
    return np.asarray(v.op.attrs["value"], dtype=v.type.dtype.np)


class CudaProgram:
    """``program(leaves) -> list of arrays`` on the device; see the module docstring."""

    guarded = None           # every call goes through run (its arguments move to the device)

    def __init__(self, function: Function, fusion: Fusion, config=None,
                 device_results: bool = False):
        self.function = function
        self.fusion = fusion
        self.config = config or device_config()
        self.device_results = device_results
        self.kernels: list = []          # CudaKernelSpec of each device group
        self.notes: list[str] = []       # why each CPU group runs there
        self.steps: list = []            # ("gpu", kernel index) | ("cpu", runner, g) | ...
        self.transfers = {"to_device": 0, "to_host": 0}
        self._compiled = None
        for g in fusion.groups:
            if g.kind == "alias":
                self.steps.append(("alias", g.ops[0]))
                continue
            why = cpu_reason(g)
            if why is None:
                parts = 1
                if two_pass_reduction(g):
                    parts = self.config.reduction_parts(
                        math.prod(g.outer), math.prod(g.space[d] for d in g.axes))
                self.kernels.append(generate_cuda_kernel(g, self.config.reduce_threads,
                                                         self.config.tile, parts))
                self.steps.append(("gpu", len(self.kernels) - 1))
            else:
                self.notes.append(f"g{g.id} on the CPU: {why}")
                runner = NumpyProgram(Function(f"g{g.id}", list(g.inputs), list(g.ops),
                                               list(g.outputs)))
                self.steps.append(("cpu", runner, g))
        self._dtypes = [p.type.dtype.np for p in function.params]

    # -- inspection ------------------------------------------------------------------------
    @property
    def placement(self) -> str:
        n_gpu = len(self.kernels)
        lines = [f"# device: {self.config.device}; {n_gpu} kernel(s) on the device, "
                 f"{len(self.notes)} group(s) on the CPU"]
        return "\n".join(lines + [f"# {note}" for note in self.notes])

    @property
    def optimized(self) -> str:
        return f"{self.placement}\n{self.fusion}"

    @property
    def launched(self) -> list:
        """(name, spec) of every kernel in launch order: a two-pass reduction's final pass
        right after its partials kernel."""
        out = []
        for i, spec in enumerate(self.kernels):
            out.append((f"k{i}", spec))
            if spec.final is not None:
                out.append((f"k{i}_final", spec.final))
        return out

    @property
    def source(self) -> str:
        parts = [self.placement]
        for name, spec in self.launched:
            parts.append(f"# cuda kernel {name} ({spec.kind}): {spec.signature}\n{spec.source}")
        return "\n".join(parts)

    sources = source

    def ptx(self, cc=(9, 0)) -> list[str]:
        """The PTX of every kernel for compute capability ``cc``, compiled with NVVM; needs no
        GPU (nor a driver), but the real CUDA target: not under the simulator."""
        return [kernel_ptx(spec, cc, name) for name, spec in self.launched]

    # -- running ---------------------------------------------------------------------------
    def _compile(self):
        from numba import cuda
        if not _simulated() and not cuda.is_available():
            raise RuntimeError("jit(f, device='cuda'): no CUDA GPU is available here (set "
                               "NUMBA_ENABLE_CUDASIM=1 before importing numba.cuda to run on "
                               "Numba's CUDA simulator)")
        def one(spec, name):
            # Sources are generic over sizes, so another shape's program (a retrace) has the
            # same kernels: each was compiled again (seconds each on a GPU), as the CPU
            # kernels' cache avoids. Compiled once a process, by source and signature.
            key = (spec.source, spec.signature, _simulated())
            with _compiled_lock:
                kernel = _compiled_kernels.get(key)
                if kernel is None:
                    fn = _load(spec.source, name)["kernel"]
                    kernel = cuda.jit(fn) if _simulated() else cuda.jit(spec.signature)(fn)
                    _compiled_kernels[key] = kernel
            return kernel, self.config.launch(spec)

        return [(one(spec, f"k{i}"), spec.final and one(spec.final, f"k{i}_final"))
                for i, spec in enumerate(self.kernels)]

    def __call__(self, leaves):
        return self.run(leaves)

    def run(self, leaves):
        if not _simulated():
            return self._run(leaves)
        make_simulator_safe()
        # The simulator's threads of a block meet at every syncthreads; with Python's 5 ms
        # GIL switch interval each meeting costs milliseconds (a reduction test: 3.2 s, 0.7 s
        # at 50 us). Only while a simulated program runs: one at a time (simulator.py), so a
        # concurrent call cannot save the lowered interval and restore it after ours.
        with SIMULATOR_RUN_LOCK:
            saved = sys.getswitchinterval()
            sys.setswitchinterval(5e-5)
            try:
                return self._run(leaves)
            finally:
                sys.setswitchinterval(saved)

    def _run(self, leaves):
        from numba import cuda
        if self._compiled is None:
            self._compiled = self._compile()
        host: dict = {}
        dev: dict = {}
        fresh: set = set()      # values whose host array is a copy from the device
        params = self.fusion.function.params
        for p, x, dt in zip(params, leaves, self._dtypes):
            if hasattr(x, "__cuda_array_interface__") and not hasattr(x, "__cuda_ndarray__"):
                # CuPy's, PyTorch's (device arrays to the tracer): np.asarray raised on
                # them; Numba's view of the same memory, no copy
                x = cuda.as_cuda_array(x)
            d = _on_device(x, p, dt)
            if d is not None:
                dev[p] = d                 # a device array argument: read where it is
            else:
                if hasattr(x, "copy_to_host"):
                    x = x.copy_to_host()   # another dtype or layout than the kernels take
                    self.transfers["to_host"] += 1
                host[p] = np.asarray(x, dtype=dt, order="C")   # 0-d stays 0-d

        def to_device(v):
            d = dev.get(v)
            if d is None:
                x = to_host(v)
                d = dev[v] = cuda.to_device(np.ascontiguousarray(x).reshape(v.shape or (1,)))
                self.transfers["to_device"] += 1
            return d

        def to_host(v):
            x = host.get(v)
            if x is None:
                if v in dev:
                    x = dev[v].copy_to_host().reshape(v.shape)
                    self.transfers["to_host"] += 1
                    fresh.add(v)
                else:
                    x = _constant(v)
                host[v] = x
            return x

        for step in self.steps:
            if step[0] == "gpu":
                spec = self.kernels[step[1]]
                first, final = self._compiled[step[1]]
                scratch = [cuda.device_array(n, np.dtype(dtype if dtype != "boolean" else bool))
                           for dtype, n in spec.scratch]
                _launch(spec, first, to_device, dev, scratch)
                if final is not None:
                    _launch(spec.final, final, to_device, dev, scratch)
            elif step[0] == "cpu":
                _, runner, g = step
                for v, x in zip(g.outputs, runner([to_host(v) for v in g.inputs])):
                    host[v] = np.asarray(x)
            else:
                op = step[1]
                for r, v in zip(op.results, op.operands):
                    if v in dev:
                        dev[r] = dev[v]
                    host_value = host.get(v)
                    if host_value is not None or v not in dev:
                        host[r] = to_host(v)
        return self._results(fresh, dev, to_host, to_device,
                             {id(dev[p]) for p in params if p in dev})

    def _results(self, fresh, dev, to_host, to_device, arguments):
        from numba import cuda
        out, held = [], []
        for r in self.fusion.function.results:
            if self.device_results:
                d = to_device(r)
                if id(d) in arguments or any(d is o for o in held):
                    # an argument or another result: a copy, as NumPy's result would be
                    copy = cuda.device_array(d.shape, d.dtype)
                    copy.copy_to_device(d)
                    d = copy
                held.append(d)
                # in the result's own shape: a 0-d one is held as one element, (1,)
                out.append(d.reshape(r.shape) if r.shape != tuple(d.shape) else d)
                continue
            x = to_host(r)
            # A copy from the device is fresh; a CPU group's result may be a view of an
            # argument, a constant or another result: copied. (Not "any value on the device":
            # an argument a kernel read is there too, and its host array is the caller's.)
            if r not in fresh or any(x is o for o in out):
                x = np.array(x, copy=True)
            out.append(x)
        return out


def _on_device(x, p, dtype):
    """``x`` as the device array a kernel takes for parameter ``p`` (C-contiguous, 0-d as one
    element), or None when ``x`` is not a device array or not one of that dtype and layout."""
    if not hasattr(x, "__cuda_ndarray__") or np.dtype(x.dtype) != dtype:
        return None
    if not x.is_c_contiguous():
        return None
    shape = p.shape or (1,)
    return x if tuple(x.shape) == shape else x.reshape(shape)


def _launch(spec, compiled, to_device, dev, scratch):
    """Launch one kernel: its inputs moved to the device, its outputs allocated there."""
    from numba import cuda
    kernel, config = compiled
    args = [to_device(v) for v in spec.inputs]
    outs = []
    for v in spec.outputs:
        outs.append(cuda.device_array(v.shape or (1,), v.type.dtype.np))
        dev[v] = outs[-1]
    if config is not None:
        grid, block = config
        scalars = [v.type.dtype.np.type(v.op.attrs["value"][()]) for v in spec.scalars]
        kernel[grid, block](*args, *outs, *scratch, *scalars, *spec.sizes)


def kernel_ptx(spec, cc=(9, 0), name: str = "kernel") -> str:
    """The PTX of one kernel (a CudaKernelSpec) for compute capability ``cc``."""
    from numba import cuda
    if not hasattr(cuda, "compile_ptx") or _simulated():
        raise RuntimeError("ptx() needs numba-cuda's real target, not the simulator "
                           "(NUMBA_ENABLE_CUDASIM is set)")
    ptx, _ = cuda.compile_ptx(_load(spec.source, name)["kernel"], spec.signature, cc=cc)
    return ptx


def _simulated() -> bool:
    from . import devicelib
    return devicelib.SIMULATED
