"""Wrong answers, crashes and refusals found by calling jitted and differentiated functions
with edge-case shapes (0-d, size 0, size 1, negative axes, odd layouts); each test pins the
behaviour that replaced one."""
import numpy as np
import pytest

import tracejit


# A 0-d array argument returned as it is (f(x) = x, x.T, np.squeeze(x)) came back as a NumPy
# scalar (np.float64), where NumPy returns the 0-d array; a NumPy scalar argument returned
# stays a NumPy scalar, as in NumPy.
def test_a_zero_d_array_argument_returned_unchanged_stays_a_zero_d_array():
    def f(x):
        return x, x.T, np.squeeze(x)

    for be in ("interpreter", "numba"):
        jf = tracejit.jit(f, backend=be)
        for _ in range(2):
            out = jf(np.array(1.5))
            assert all(type(o) is np.ndarray and o.shape == () and o == 1.5 for o in out)
            out = jf(np.float64(1.5))       # the same cache key, unless the trace asked
            assert [type(o) for o in out] == [np.float64] * 3 and out[0] == 1.5
