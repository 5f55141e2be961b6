"""A stand-in for NumPy's OpenBLAS in tests of codegen/blas_threads.py: the thread count it
is set to, without touching the real library."""
from __future__ import annotations

from tracejit.codegen import blas_threads


class FakeBlas:
    """NumPy's OpenBLAS: its thread count and every count it was set to; with ``interrupt``
    set, the next setting raises KeyboardInterrupt instead (a Ctrl-C landing in the Python
    code that sets it)."""

    def __init__(self, n):
        self.n, self.history, self.interrupt = n, [], False

    def scipy_openblas_get_num_threads64_(self):
        return self.n

    def scipy_openblas_set_num_threads64_(self, n):
        if self.interrupt:
            self.interrupt = False
            raise KeyboardInterrupt
        self.n = n
        self.history.append(n)


def use_fake_blas(monkeypatch, n: int) -> FakeBlas:
    """A FakeBlas of ``n`` threads in place of NumPy's OpenBLAS, with no user setting of the
    thread count in the environment."""
    for k in blas_threads.ENV + ("TRACEJIT_THREADS",):
        monkeypatch.delenv(k, raising=False)
    fake = FakeBlas(n)
    monkeypatch.setattr(blas_threads, "_numpy_openblas", lambda: fake)
    return fake
