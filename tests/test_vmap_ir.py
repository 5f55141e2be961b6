"""The batching transform on IR: a batched Function run by the interpreter equals the original
run once per example and stacked, for random programs over every op (tests/strategies.py),
random control flow, and random choices of which parameters are batched. No compiles: the
interpreter defines the semantics the per-op rules must keep."""
import contextlib
import io

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

from strategies import arrays, control_flow_programs, random_programs
from tracejit.batching import push, rules  # noqa: F401  (rules fill push.RULES)
from tracejit.batching.push import RULES, batch_function
from tracejit.batching.rules import MAPPED_OVER_BATCH
from tracejit.ir import OPS, interpret, verify


def _quiet(fn, inputs):
    with contextlib.redirect_stdout(io.StringIO()):
        return interpret(fn, [np.copy(x) for x in inputs])


def _close(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    if want.dtype.kind == "f":
        tol = 1e-4 if want.dtype.itemsize <= 4 else 1e-9
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


@st.composite
def batched_programs(draw, programs):
    """(Function, per-example inputs [b][param], batched flags, size)."""
    fn, first = draw(programs)
    flags = draw(st.lists(st.booleans(), min_size=len(fn.params), max_size=len(fn.params)))
    assume(any(flags))
    size = draw(st.integers(1, 3))
    examples = [list(first)]
    for _ in range(size - 1):
        examples.append([draw(arrays(p.type)) if f else x
                         for p, f, x in zip(fn.params, flags, first)])
    return fn, examples, flags, size


def _check(fn, examples, flags, size):
    batched, out_flags = batch_function(fn, flags, size)
    verify(batched)
    inputs = [np.stack([ex[i] for ex in examples]) if f else examples[0][i]
              for i, f in enumerate(flags)]
    got = _quiet(batched, inputs)
    want = [_quiet(fn, ex) for ex in examples]
    for k, (g, b) in enumerate(zip(got, out_flags)):
        for e in range(size):
            _close(g[e] if b else g, np.asarray(want[e][k]))


@given(batched_programs(random_programs(special_values=False)))
def test_random_programs_batched_equal_one_run_per_example(case):
    _check(*case)


@given(batched_programs(control_flow_programs(special_values=False)))
def test_random_control_flow_batched_equal_one_run_per_example(case):
    _check(*case)


def test_every_op_has_a_batching_rule_or_is_mapped_over_the_batch():
    # (an op without operands, a constant, is never batched)
    missing = sorted(n for n, d in OPS.items() if d not in RULES and d not in MAPPED_OVER_BATCH
                     and d.num_operands != 0)
    assert missing == []
