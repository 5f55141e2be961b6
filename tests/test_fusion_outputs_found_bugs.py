"""Bugs found hunting the multi-output fusion (fusion.py join_first_user) and the stores a
reduction pass makes as it passes (kernel.py passing_stores)."""
import numpy as np

import tracejit


def test_a_column_sum_beside_its_full_size_operand_still_accumulates_columns_in_float64():
    """``y = x * 2`` read by two column reductions joins the first one's kernel and is written
    out there: that kernel still runs the leading-axis loops outside (column_body), storing
    ``y`` as it passes, and sums each column in float64. It ran rows outside with float32
    block sums instead: 2 + 1e-7 + 1e-7 + 1e-7 summed to 2.0 (the float64 sum, rounded, is
    2.0000002)."""
    x = np.array([[1.0, 1.0], [5e-8, 0.5], [5e-8, 0.25], [5e-8, 0.125]], np.float32)

    def f(x):
        y = x * 2
        return y, y.sum(axis=0), y.max(axis=0)

    y, s, m = tracejit.jit(f, tiered=False)(x)
    np.testing.assert_array_equal(y, x * 2)
    np.testing.assert_array_equal(s, ((x * 2).astype(np.float64).sum(axis=0)).astype(np.float32))
    np.testing.assert_array_equal(m, (x * 2).max(axis=0))
    assert s[0] != np.float32(2.0)
