"""Claims of README.md that this suite did not pin down elsewhere, checked as the README words them."""
import numpy as np
import pytest

import tracejit


class _Obj:
    pass


_cfg = _Obj()
_cfg.scale = np.array([2.0, 3.0])
_cfg.mask = np.array([1, 0])


def test_attribute_array_rebound_to_same_kind_is_passed_without_tracing_again():
    # README: rebinding one the code names (cfg.scale = new) traces again, unless the new one
    # has the same type, dtype and shape.
    traces = []

    @tracejit.jit
    def f(x):
        traces.append(1)
        return x * _cfg.scale

    x = np.ones(2)
    f(x)
    _cfg.scale = np.array([5.0, 7.0])
    np.testing.assert_array_equal(f(x), [5.0, 7.0])
    assert len(traces) == 1
    _cfg.scale = np.array([1.0, 2.0], np.float32)
    np.testing.assert_array_equal(f(x), [1.0, 2.0])
    assert len(traces) == 2


def test_small_named_attribute_array_read_by_python_is_compared_at_every_call():
    # README: a small one the code names (if cfg.mask[0]:) is compared with its traced
    # contents at every call, and a change traces again.
    @tracejit.jit
    def f(x):
        return x * 2 if _cfg.mask[0] else x * 3

    x = np.ones(2)
    np.testing.assert_array_equal(f(x), [2.0, 2.0])
    _cfg.mask[0] = 0
    np.testing.assert_array_equal(f(x), [3.0, 3.0])


class _Stateful:
    def __init__(self):
        self.h = np.zeros(2)

    @tracejit.jit
    def step(self, x):
        self.h = self.h + x
        return x


class _Counter:
    def __init__(self):
        self.h = np.zeros(2)
        self.n = 0

    @tracejit.jit
    def step(self, x):
        self.h = self.h + x
        self.n += 1
        return x


def test_array_attributes_of_self_are_written_back_and_others_raise():
    # README: the array attributes of a jitted method's self are updated after the call; a
    # new attribute of self or one that is not an array raises an error naming the line.
    s = _Stateful()
    s.step(np.ones(2))
    s.step(np.ones(2))
    np.testing.assert_array_equal(s.h, [2.0, 2.0])
    with pytest.raises(tracejit.UnsupportedError, match="test_docs_claims.py"):
        _Counter().step(np.ones(2))
