"""Large results are written into buffers a program keeps (plan._ResultPool) and reused only
when nobody holds them: a result the caller keeps, in any way, is never overwritten by a later
call. The pool tells from reference counts, which CPython versions count differently, so this
pins the behaviour down rather than the count."""
import numpy as np

import tracejit
from tracejit.codegen.plan import POOL_MIN

N = POOL_MIN // 8          # float64 elements: results of exactly POOL_MIN bytes are pooled


def test_a_held_result_is_never_overwritten_by_later_calls():
    f = tracejit.jit(lambda x: x + 1.0)

    def call(k):                                  # the result of call k holds k + 1 everywhere
        return f(np.full(N, float(k)))

    held = {}                                     # what was kept: call number -> how
    r = call(0)
    held[0] = r
    held[1] = call(1)[1:]                         # a view
    held[2] = [call(2)]                           # inside a list
    held[3] = {"r": call(3)}                      # inside a dict
    r = call(4)
    view = r.reshape(2, -1)                       # a reshaped view, the original dropped
    del r
    held[4] = view
    r = call(5)
    held[5] = r[::2]                              # a strided view, the original dropped
    del r
    held[6] = memoryview(call(6))                 # a buffer export
    held[7] = np.asarray(call(7))                 # the same array under another name
    for k in range(8, 20):                        # dropped results: their buffers are reused
        assert call(k)[0] == k + 1
    for k, h in held.items():
        arr = np.asarray(h[0] if type(h) is list else h["r"] if type(h) is dict else h)
        assert (arr == k + 1).all(), f"the result of call {k}, kept, was overwritten"


def test_a_dropped_result_gives_its_buffer_to_the_next_call():
    f = tracejit.jit(lambda x: x * 2.0)
    x = np.ones(N)
    address = f(x).ctypes.data                    # dropped at once
    assert all(f(x).ctypes.data == address for _ in range(3))

