"""Bugs found writing the model code users write (transformers, RNNs, embeddings, training
loops with tracejit.nn and tracejit.optim), each checked against a NumPy transcription (and
PyTorch where it is installed)."""
import numpy as np
import pytest

import tracejit as tj
from gradcheck import numeric_grad
from tracejit import nn, optim


# -- tied weights in an nn.Module ---------------------------------------------------------

class _TiedLM(nn.Module):
    """An embedding whose transpose is the output layer's weight (PyTorch's weight tying)."""

    def __init__(self, rng, vocab=5, dim=3):
        self.emb = rng.standard_normal((vocab, dim))
        self.proj = nn.Linear(dim, dim, dtype=np.float64, rng=rng)
        self.out = nn.Linear(dim, vocab, bias=False, dtype=np.float64, rng=rng)
        self.out.weight = self.emb

    def forward(self, ids):
        return self.out(np.tanh(self.proj(self.emb[ids])))


def _tied_loss(m, ids, y):
    logits = m(ids)
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    return -np.take_along_axis(logp, y[..., None], axis=-1).mean()


def _tied_loss_numpy(emb, w, b, ids, y):
    logits = np.tanh(emb[ids] @ w.T + b) @ emb.T
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    return -np.take_along_axis(logp, y[..., None], axis=-1).mean()


def test_tied_module_weights_are_one_parameter_with_the_summed_gradient():
    """A weight shared by two layers of an nn.Module (``out.weight = emb``) is one parameter,
    as in PyTorch: its gradient sums both uses, and an Adam step keeps the layers tied (it
    had two leaves, each with half the gradient, and the step untied them)."""
    rng = np.random.default_rng(0)
    m = _TiedLM(rng)
    assert [n for n, _ in m.named_parameters()] == ["emb", "proj.weight", "proj.bias"]
    assert list(m.state_dict()) == ["emb", "proj.weight", "proj.bias", "out.weight"]
    ids, y = np.array([[1, 2, 2], [0, 1, 4]]), np.array([[2, 2, 0], [1, 1, 3]])

    g = tj.jit(tj.grad(_tied_loss))(m, ids, y)
    assert g.emb is g.out.weight
    want = numeric_grad(lambda e: _tied_loss_numpy(e, m.proj.weight, m.proj.bias, ids, y),
                        [m.emb], 0)
    np.testing.assert_allclose(g.emb, want, rtol=1e-6, atol=1e-8)

    opt = optim.Adam(lr=1e-2)
    state = opt.init(m)
    assert len(state["exp_avg"]) == 3

    @tj.jit
    def step(m, state, ids, y):
        loss, grads = tj.value_and_grad(_tied_loss)(m, ids, y)
        m, state = opt.update(grads, state, m)
        return m, state, loss

    new, state, _ = step(m, state, ids, y)
    assert new.emb is new.out.weight
    # One Adam step from zero moments moves each entry by lr * sign(grad) (|grad| >> eps).
    np.testing.assert_allclose(new.emb, m.emb - 1e-2 * np.sign(want), rtol=1e-6)

    loaded = _TiedLM(np.random.default_rng(1)).load_state_dict(new.state_dict())
    assert loaded.emb is loaded.out.weight

    torch = pytest.importorskip("torch")
    e, w, b = (torch.tensor(a, requires_grad=True) for a in (m.emb, m.proj.weight, m.proj.bias))
    logits = (torch.tanh(e[torch.tensor(ids)] @ w.T + b) @ e.T).reshape(-1, 5)
    torch.nn.functional.cross_entropy(logits, torch.tensor(y).reshape(-1)).backward()
    np.testing.assert_allclose(g.emb, e.grad.numpy(), rtol=1e-6, atol=1e-8)


class _Biases(nn.Module):
    def __init__(self):
        self.a, self.b, self.c = np.ones(3), np.full(3, 2.0), np.full(3, 3.0)

    def forward(self, x):
        return np.sum(x * self.a + self.b + self.c)


def test_equal_gradients_of_untied_parameters_stay_separate_leaves():
    """grad of ``x * a + b + c`` gives b and c one cotangent object; the Module of gradients
    still has one leaf per parameter (taken as tied, it had fewer, and the optimizer refused
    it), eagerly, from jit, and inside a jitted training step."""
    m, x = _Biases(), np.arange(3.0)
    opt = optim.SGD(lr=0.5)
    state = opt.init(m)
    loss = lambda m, x: m(x)

    @tj.jit
    def step(m, state, x):
        return opt.update(tj.grad(loss)(m, x), state, m)[0]

    for g in (tj.grad(loss)(m, x), tj.jit(tj.grad(loss))(m, x)):
        assert g.b is not g.c and len(g.parameters()) == 3
        np.testing.assert_array_equal(opt.update(g, state, m)[0].c, [2.5] * 3)
    new = step(m, state, x)
    np.testing.assert_array_equal(new.a, 1 - 0.5 * x)
    np.testing.assert_array_equal(new.c, [2.5] * 3)
