"""Checkpointing, splitting a vjp into forward and backward programs, and liveness: what
the backward pass keeps between the two."""
import numpy as np

import tracejit as tj
from tracejit.autodiff import split_vjp, vjp_function
from tracejit.ir.passes.liveness import liveness

from gradcheck import ijit


def _mlp_blocks(checkpointed: bool, depth=4, width=16, batch=8):
    rng = np.random.default_rng(0)
    params = [rng.standard_normal((width, width)) * 0.3 for _ in range(depth)]
    x = rng.standard_normal((batch, width))

    def block(w, h):
        return np.tanh(np.tanh(h @ w) @ w) + h

    def loss(params, x):
        h = x
        for w in params:
            h = (tj.checkpoint(block) if checkpointed else block)(w, h)
        return np.mean(h * h)

    return loss, params, x


def _split(loss, params, x):
    f = tj.make_ir(loss)(params, x)
    g = vjp_function(f, list(range(len(params))), [0])
    return g, split_vjp(g, len(f.params), len(f.results))


def test_checkpointing_keeps_fewer_bytes_between_forward_and_backward():
    plain = _split(*_mlp_blocks(False))
    ckpt = _split(*_mlp_blocks(True))
    assert ckpt[1].residual_bytes < plain[1].residual_bytes
    assert liveness(ckpt[0]).peak_bytes < liveness(plain[0]).peak_bytes


def test_checkpointing_does_not_change_the_gradient():
    loss, params, x = _mlp_blocks(False)
    loss_ck, _, _ = _mlp_blocks(True)
    g = ijit(tj.grad(loss))(params, x)
    g_ck = ijit(tj.grad(loss_ck))(params, x)
    assert len(g) == len(g_ck) == 4
    for a, b in zip(g, g_ck):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_split_forward_then_backward_equals_the_whole_vjp():
    loss, params, x = _mlp_blocks(True)
    g, s = _split(loss, params, x)
    whole = g(*params, x, np.float64(1.0))
    fwd = s.forward(*params, x)
    n = s.num_results
    grads = s.backward(*fwd[n:], np.float64(1.0))
    for a, b in zip(whole, fwd[:n] + grads):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_liveness_counts_a_value_from_definition_to_last_use():
    def f(x):
        y = x * 2.0          # y dies at z's op, z is a result
        z = y + 1.0
        return z
    fn = tj.make_ir(f)(np.zeros(100))       # 800 bytes per array
    lv = liveness(fn)
    assert lv.peak_bytes <= 3 * 800 + 64
    assert lv.held_across(len(fn.ops), include_params=False) == 800  # only the result
