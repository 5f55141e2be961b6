"""Intermediate arrays live in one arena per program (codegen/arena.py), packed by liveness and
reused across calls; results never share its memory."""
import numpy as np
import pytest

import tracejit
from tracejit.codegen.arena import ALIGN, Arena, pack


def _overlap(a, b) -> bool:
    return a[0] < b[1] and b[0] < a[1]


@pytest.mark.parametrize("seed", range(5))
def test_packed_buffers_alive_at_once_never_share_bytes(seed):
    rng = np.random.default_rng(seed)
    spans = []
    for _ in range(40):
        first = int(rng.integers(0, 30))
        spans.append((first, first + int(rng.integers(0, 6)), int(rng.integers(1, 5000))))
    offsets, total = pack(spans)
    for i, (fi, li, ni) in enumerate(spans):
        assert offsets[i] % ALIGN == 0 and offsets[i] + ni <= total
        for j, (fj, lj, nj) in enumerate(spans[:i]):
            if fi <= lj and fj <= li:             # alive at the same step
                assert not _overlap((offsets[i], offsets[i] + ni), (offsets[j], offsets[j] + nj))
    assert total < sum(-(-n // ALIGN) * ALIGN for _, _, n in spans)   # something was shared


def test_a_chain_of_intermediates_reuses_the_bytes_of_dead_ones():
    # a -> b -> c -> d: a and c can share, b and d can share
    offsets, total = pack([(0, 1, 1024), (1, 2, 1024), (2, 3, 1024), (3, 4, 1024)])
    assert total == 2048 and offsets[0] == offsets[2] and offsets[1] == offsets[3]


def _layers(x, w):
    h = np.tanh(x @ w)
    g = np.maximum(h @ w.T, 0) + x
    return (g * g).sum(axis=1), np.exp(h).mean()


def test_a_program_reuses_its_arena_and_matches_numpy():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 48), dtype=np.float32)
    w = rng.standard_normal((48, 48), dtype=np.float32) / 8
    f = tracejit.jit(_layers)
    assert "= w[" in f.lower(x, w).source
    first = f(x, w)
    for _ in range(3):
        for got, want in zip(f(x, w), _layers(x, w)):
            np.testing.assert_allclose(got, want, rtol=2e-5)
    for got, want in zip(first, _layers(x, w)):                   # results are not overwritten
        np.testing.assert_allclose(got, want, rtol=2e-5)
    (entry,) = f._cache.values()
    arena = entry.program.program.arena       # CompiledEntry -> run -> Program
    assert arena is not None and len(arena._stash) == 1        # back after every call
    block = arena._stash[0]
    f(x, w)
    assert arena._stash == [block]                             # the same block, reused


def test_a_result_that_views_an_intermediate_is_not_in_the_arena():
    def f(x):
        h = x * 2.0
        return h.reshape(-1), h.sum()
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    g = tracejit.jit(f)
    flat, _ = g(x)
    g(x + 100)                                    # a later call must not write into ``flat``
    np.testing.assert_array_equal(flat, (x * 2).reshape(-1))


def test_the_arena_hands_out_one_block_at_a_time():
    """A call that starts while another is inside the entry (possible while debug_print's
    object-mode block runs Python) gets its own block."""
    arena = Arena(4096)
    a = arena.take()
    b = arena.take()                              # a concurrent call gets its own
    assert a.ctypes.data != b.ctypes.data and a.nbytes == b.nbytes == 4096
    assert a.ctypes.data % ALIGN == 0
    arena.give(a)
    arena.give(b)
    assert arena.take() is a and len(arena._stash) == 0
