"""The CUDA target (issue #15): fusion groups as ``@cuda.jit`` kernels through numba-cuda
(kernels.py, scalar rules in scalars.py, device math in devicelib.py), launch configurations
from the device (launch.py), which groups run where (placement.py) and the device program
that moves each value at most once per direction (program.py).

Importing this package imports ``numba.cuda``: only the "cuda" backend does, so that the
CPU backends never depend on numba-cuda being installed.
"""
from .kernels import CudaKernelSpec, generate_cuda_kernel
from .launch import LaunchConfig, device_config, has_device
from .program import CudaProgram

__all__ = ["CudaKernelSpec", "CudaProgram", "LaunchConfig", "device_config",
           "generate_cuda_kernel", "has_device"]
