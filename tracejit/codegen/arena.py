"""One reusable block of memory for a program's intermediate arrays.

An intermediate that the entry allocated with ``np.empty`` on every call came back from malloc
as fresh pages for anything large (glibc maps big blocks and unmaps them when freed), so every
call paid page faults and zeroing: the CNN training step spent ~30% of its time on that
(92 ms per step, 65 ms with malloc told to keep its memory). Instead, the plan gives each
intermediate an offset in one arena, packed by liveness (two intermediates share bytes only if
no kernel runs while both are alive), and the Program passes the same arena to every call.

``pack`` places the buffers; ``Arena`` hands the arena to one call at a time, like a caching
allocator holding the program's peak of intermediate memory between calls. The entry is Python
and its kernels release the GIL, so two threads may run one program at once: the second call
gets a fresh block.
"""
from __future__ import annotations

import numpy as np

from .runtime import ADVISE_MIN_BYTES, HUGE_PAGE, MADV_HUGEPAGE

ALIGN = 64          # bytes: a cache line, and the widest vector load


def _advise_huge_pages(addr: int, nbytes: int):
    """madvise(MADV_HUGEPAGE) through ctypes: from Python, without a jitted call (which would
    make Numba set up its compiler context in a warm process; see warm_load.py)."""
    import ctypes
    import sys
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.madvise(ctypes.c_void_p(addr), ctypes.c_size_t(nbytes), ctypes.c_int(MADV_HUGEPAGE))
    except (OSError, AttributeError):
        pass                # advice only


def pack(buffers: list[tuple[int, int, int]]) -> tuple[list[int], int]:
    """Offsets for buffers given as ``(first, last, nbytes)``: the first and last step (both
    inclusive) at which each is alive. First fit, largest first. Returns (offsets, total)."""
    order = sorted(range(len(buffers)), key=lambda i: -buffers[i][2])
    placed: list[tuple[int, int, int, int]] = []        # (start, end, first, last)
    offsets = [0] * len(buffers)
    for i in order:
        first, last, nbytes = buffers[i]
        size = -(-nbytes // ALIGN) * ALIGN
        busy = sorted((s, e) for s, e, f, l in placed if f <= last and first <= l)
        offset = 0
        for s, e in busy:
            if offset + size <= s:
                break
            offset = max(offset, e)
        offsets[i] = offset
        placed.append((offset, offset + size, first, last))
    return offsets, max((e for s, e, f, l in placed), default=0)


class Arena:
    """The arena of one program: ``take()`` before a call, ``give(w)`` after it."""

    def __init__(self, nbytes: int):
        self.nbytes = nbytes
        self._stash: list = []

    def _new(self) -> np.ndarray:
        if self.nbytes >= ADVISE_MIN_BYTES:
            # 2 MiB aligned and advised as huge pages: the kernels stream through tens of MB
            raw = np.empty(self.nbytes + HUGE_PAGE, np.uint8)
            pad = -raw.ctypes.data % HUGE_PAGE
            w = raw[pad:pad + self.nbytes]
            _advise_huge_pages(w.ctypes.data, self.nbytes // HUGE_PAGE * HUGE_PAGE)
            return w
        raw = np.empty(self.nbytes + ALIGN, np.uint8)
        pad = -raw.ctypes.data % ALIGN
        return raw[pad:pad + self.nbytes]

    def take(self) -> np.ndarray:
        try:
            return self._stash.pop()        # atomic under the GIL
        except IndexError:
            return self._new()

    def give(self, w: np.ndarray):
        if not self._stash:
            self._stash.append(w)
