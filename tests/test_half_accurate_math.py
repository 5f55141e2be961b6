"""Functions computed to a 16-bit float's accuracy (tanh16, exp16) where that is all a result
needs (emitters.HALF_ACCURATE, kernel.half_accurate): a float16 or bfloat16 result, or a
float32 value a kernel only rounds to one (a float16 chain under amp.excess_precision)."""
import numpy as np

import tracejit as tj
from test_codegen_math import _elementwise
from tracejit.codegen.half_accurate import exp16, tanh16

F16 = np.float16


_tanh16_all, _exp16_all = _elementwise(tanh16), _elementwise(exp16)


def _source(fn, *args) -> str:
    return tj.jit(fn, tiered=False).lower(*args).source


def test_tanh16_rounds_to_numpys_float16_tanh_on_every_float16_value():
    every = np.arange(2 ** 16, dtype=np.uint16).view(F16)
    with np.errstate(all="ignore"):
        want = np.tanh(every)
    got = _tanh16_all(every.astype(np.float32)).astype(F16)
    np.testing.assert_array_equal(got.view(np.uint16)[~np.isnan(want)],
                                  want.view(np.uint16)[~np.isnan(want)])
    assert np.isnan(got[np.isnan(want)]).all()


def test_tanh16_is_within_3e_7_of_tanh_and_keeps_special_values():
    x = np.linspace(-12, 12, 1_000_003, dtype=np.float32)
    want = np.tanh(x.astype(np.float64))
    assert np.max(np.abs(_tanh16_all(x) - want) / np.maximum(np.abs(want), 1e-30)) < 3e-7
    special = _tanh16_all(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30], np.float32))
    assert np.isnan(special[0]) and list(special[1:3]) == [1, -1]
    assert str(special[3]) == "0.0" and str(special[4]) == "-0.0" and special[5] == np.float32(1e-30)


def chain(x, y):
    return np.tanh(x * y + 0.5 * x) * (1 / (1 + np.exp(-y))) - x / (1 + y * y)


def test_a_float16_chain_under_excess_precision_takes_the_half_accurate_tanh():
    x = np.linspace(-3, 3, 64).astype(F16)
    src = _source(tj.amp.excess_precision(chain), x, x)
    assert "tanh16(" in src and "tanh32(" not in src
    assert "exp16(" in src and "exp32(" not in src
    got = tj.jit(tj.amp.excess_precision(chain), tiered=False)(x, x)
    exact = chain(x.astype(np.float64), x.astype(np.float64))
    assert np.max(np.abs(got - exact)) <= np.max(np.abs(exact)) * 2.0 ** -10


def test_float32_values_stored_or_compared_keep_the_float32_tanh():
    x = np.linspace(-3, 3, 64).astype(np.float32)
    src = _source(chain, x, x)
    assert "tanh32(" in src and "exp32(" in src and "tanh16(" not in src and "exp16(" not in src
    # compared: the comparison needs float32's accuracy even if the result is float16
    src = _source(lambda a: (np.tanh(a) > 0.5).astype(F16), x)
    assert "tanh32(" in src and "tanh16(" not in src


def test_exp16_is_within_2e_7_of_exp_and_keeps_exps_special_values():
    x = np.linspace(-87, 88, 1_000_003, dtype=np.float32)
    want = np.exp(x.astype(np.float64))
    assert np.max(np.abs(_exp16_all(x) - want) / want) < 2e-7
    with np.errstate(over="ignore", under="ignore"):
        special = np.array([np.nan, np.inf, -np.inf, 0.0, 100.0, -103.0, -120.0], np.float32)
        got = _exp16_all(special)
        want = np.exp(special.astype(np.float64)).astype(np.float32)
    assert np.isnan(got[0]) and list(got[1:5]) == [np.inf, 0, 1, np.inf] and got[6] == 0
    assert 0 < got[5] < np.finfo(np.float32).tiny and abs(got[5] / want[5] - 1) < 1e-2


def test_exp16_rounds_to_within_one_ulp_of_numpys_float16_exp_on_every_float16_value():
    every = np.arange(2 ** 16, dtype=np.uint16).view(F16)
    with np.errstate(all="ignore"):
        want = np.exp(every)
        got = _exp16_all(every.astype(np.float32)).astype(F16)
    both = np.isfinite(want) & np.isfinite(got)
    assert (np.isnan(got) == np.isnan(want)).all() and (np.isinf(got) == np.isinf(want)).all()
    ulps = np.abs(got[both].view(np.int16).astype(np.int64) - want[both].view(np.int16))
    assert ulps.max() <= 1 and (ulps == 0).mean() > 0.999
