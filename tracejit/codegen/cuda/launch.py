"""Launch configurations from the device's properties.

What a kernel's source assumes (the block size of reductions, the GEMM tile: shared arrays
need constants) and how many blocks a grid-stride kernel gets are read from the device the
program runs on: multiprocessors x resident blocks each, so every SM is busy and a grid never
has more blocks than can run at once (the grid-stride loops do the rest). Without a device
(``lower(...).ptx`` on a machine with no GPU) the sources are generated for a typical one.
Under the simulator, every thread is a Python thread: blocks stay tiny there, and the sources
differ only in those constants.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from . import devicelib


@dataclass(frozen=True)
class LaunchConfig:
    multiprocessors: int
    threads: int            # threads per block of elementwise kernels
    reduce_threads: int     # threads per block of reductions (a power of two)
    tile: int               # GEMM tile edge (tile x tile threads)
    blocks_per_sm: int      # resident blocks per multiprocessor
    device: str
    min_per_thread: int = 8  # a two-pass reduction's least elements a thread (pass 1)

    @property
    def max_blocks(self) -> int:
        return self.multiprocessors * self.blocks_per_sm

    def launch(self, spec) -> tuple | None:
        """(grid, block) of a kernel, or None when it has no work."""
        if math.prod(spec.work) == 0:
            return None
        if spec.kind == "elementwise":
            (n,) = spec.work
            return min(-(-n // self.threads), self.max_blocks), self.threads
        if spec.kind in ("reduction", "partial_reduction", "final_reduction"):
            (n,) = spec.work
            return min(n, self.max_blocks), spec.threads[0]
        tiles_n, tiles_m, batch = spec.work
        per_tile = max(1, self.max_blocks // max(1, batch))
        gx = min(tiles_n, per_tile)
        gy = min(tiles_m, max(1, per_tile // gx))
        return (gx, gy, min(batch, 65535)), spec.threads


    def reduction_parts(self, outputs: int, reduced: int) -> int:
        """How many blocks share each output of a reduction (> 1: the two-pass kernels):
        enough to fill the device when the outputs alone do not, each block still with at
        least ``min_per_thread`` elements a thread."""
        if outputs <= 0 or outputs * 2 > self.max_blocks:
            return 1
        per_block = self.reduce_threads * self.min_per_thread
        return max(1, min(self.max_blocks // outputs, reduced // per_block))


def _power_of_two_at_most(n: int) -> int:
    return 1 << (max(1, n).bit_length() - 1)


SIMULATOR = LaunchConfig(1, 4, 4, 4, 1, "CUDA simulator")
# a device like an A100/H100 (132 SMs), for sources generated where there is none
TYPICAL = LaunchConfig(132, 256, 256, 16, 8, "no device (sources for a typical GPU)")


def device_config() -> LaunchConfig:
    """The current device's configuration (SIMULATOR under the simulator, TYPICAL without
    a usable device)."""
    if devicelib.SIMULATED:
        return SIMULATOR
    from numba import cuda
    try:
        dev = cuda.get_current_device()
        sms = dev.MULTIPROCESSOR_COUNT
        max_threads = dev.MAX_THREADS_PER_BLOCK
        per_sm = dev.MAX_THREADS_PER_MULTI_PROCESSOR
        name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    except Exception:                 # noqa: BLE001 (no driver, no device)
        return TYPICAL
    threads = min(256, max_threads)
    reduce_threads = _power_of_two_at_most(min(256, max_threads))
    tile = 16 if max_threads >= 256 else 8
    return LaunchConfig(sms, threads, reduce_threads, tile, max(1, per_sm // threads), name)


def has_device() -> bool:
    """Whether a real CUDA GPU is usable here (the simulator is not one)."""
    if devicelib.SIMULATED:
        return False
    from numba import cuda
    try:
        return bool(cuda.is_available()) and len(cuda.gpus) > 0
    except Exception:                 # noqa: BLE001
        return False
