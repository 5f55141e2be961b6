"""Wrong derivatives, crashes and refusals found by the third autodiff review hunt, one test
per behaviour. They run on the interpreter: they pin down derivatives, not compilation."""
from __future__ import annotations

import numpy as np
import pytest

import tracejit
import tracejit as tj
from gradcheck import assert_close, ijit, numeric_grad
from tracejit import lax


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setattr(tracejit.config, "backend", "interpreter")


def test_grad_of_a_scan_whose_body_prints_its_carry_matches_finite_differences(capsys):
    # The residuals that depend on the scan's consts alone are computed once, before the
    # loop, by the body's ops they need; dce kept the body's debug_print of the carry among
    # them too, and it read a carry that has no value there: a KeyError under grad.
    xs = np.array([2.0, 3.0])

    def loss(w):
        def body(c, x):
            tj.debug_print("c={}", c)
            return c * x * w, None
        c, _ = lax.scan(body, w, xs)
        return (c ** 2).sum()

    w = np.array([0.5, -1.0])
    g = ijit(tj.grad(loss))(w)
    assert capsys.readouterr().out.count("c=") == 2     # printed by the forward scan only
    assert_close(g, numeric_grad(ijit(loss), [w], 0), rtol=1e-5)
