"""Bugs found by running realistic NumPy programs (k-means, Kalman filters, RNN steps, ...)
under tracejit.jit and tracejit.grad, as a careless user would write them."""
import numpy as np
import pytest

import tracejit


class _RNN:
    def __init__(self):
        self.W = np.eye(3) * 0.5
        self.h = np.zeros(3)

    def step(self, x):
        self.h = np.tanh(self.W @ self.h + x)
        self.steps_seen = 1
        return self.h.sum()


@pytest.mark.parametrize("tiered", [True, False])
def test_jit_of_a_bound_method_that_rebinds_an_attribute_of_self_raises_and_leaves_self_alone(
        tiered):
    # jit(obj.step) traces on obj itself: `self.h = h` left obj.h a Tracer (the next call
    # returned the first call's value, and reading obj.h raised an escaped-tracer error far
    # from its cause)
    rnn = _RNN()
    h = rnn.h
    with pytest.raises(tracejit.EscapedTracerError, match=r"self\.h(.|\n)*@tracejit\.jit"):
        tracejit.jit(rnn.step, tiered=tiered, backend="interpreter")(np.ones(3))
    assert rnn.h is h and not hasattr(rnn, "steps_seen")
