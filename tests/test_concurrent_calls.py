"""One compiled program run by several threads at once: its kernels release the GIL, so calls
overlap, and each must get its own intermediates (the arena) and its own result buffers."""
import threading

import numpy as np

import tracejit


def test_threads_running_one_program_at_once_get_their_own_results():
    @tracejit.jit(tiered=False)
    def f(x):
        h = np.tanh(x * 2.0) + x.sum(axis=1, keepdims=True)   # an intermediate in the arena
        return h * 3.0                                        # a pooled result (>= 1 MiB)

    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((512, 1024)).astype(np.float32) for _ in range(4)]
    f(inputs[0])
    expected = [np.tanh(x * 2) * 3 + x.sum(axis=1, keepdims=True) * 3 for x in inputs]
    bad = []
    barrier = threading.Barrier(len(inputs))

    def work(i):
        barrier.wait()
        for _ in range(20):
            out = f(inputs[i])
            if not np.allclose(out, expected[i], rtol=1e-4, atol=1e-4):
                bad.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == []
