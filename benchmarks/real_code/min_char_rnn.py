"""Karpathy's min-char-rnn (gist 'min-char-rnn.py'), rewritten in its style: column vectors,
``xs[t][inputs[t]] = 1`` one-hots in dicts keyed by t, a hand-written backward pass with
``dy[targets[t]] -= 1`` and ``np.clip(dparam, -5, 5, out=dparam)``, and the in-place Adagrad
update of the parameters (arguments written back by jit). The globals of the gist (the
weights) are arguments here; ``inputs``/``targets`` are lists of Python ints, as there."""
import numpy as np

from .case import case, out_of_scope

VOCAB = 11


def _params(rng, hidden):
    return (rng.standard_normal((hidden, VOCAB)) * 0.01 * 30,
            rng.standard_normal((hidden, hidden)) * 0.01 * 30,
            rng.standard_normal((VOCAB, hidden)) * 0.01 * 30,
            np.zeros((hidden, 1)) + 0.1, np.zeros((VOCAB, 1)) - 0.1)


def _make_loss(rng, n):
    seq = [int(i) for i in rng.integers(0, VOCAB, 4 * n + 1)]
    hidden = 8 * n
    return (seq[:-1], seq[1:], rng.standard_normal((hidden, 1)) * 0.1) + _params(rng, hidden)


@case("min-char-rnn", _make_loss, small=1, big=6)
def min_char_rnn_loss_fun(inputs, targets, hprev, Wxh, Whh, Why, bh, by):
    vocab_size = Wxh.shape[1]
    xs, hs, ys, ps = {}, {}, {}, {}
    hs[-1] = np.copy(hprev)
    loss = 0
    for t in range(len(inputs)):
        xs[t] = np.zeros((vocab_size, 1))
        xs[t][inputs[t]] = 1
        hs[t] = np.tanh(np.dot(Wxh, xs[t]) + np.dot(Whh, hs[t - 1]) + bh)
        ys[t] = np.dot(Why, hs[t]) + by
        ps[t] = np.exp(ys[t]) / np.sum(np.exp(ys[t]))
        loss += -np.log(ps[t][targets[t], 0])
    dWxh, dWhh, dWhy = np.zeros_like(Wxh), np.zeros_like(Whh), np.zeros_like(Why)
    dbh, dby = np.zeros_like(bh), np.zeros_like(by)
    dhnext = np.zeros_like(hs[0])
    for t in reversed(range(len(inputs))):
        dy = np.copy(ps[t])
        dy[targets[t]] -= 1
        dWhy += np.dot(dy, hs[t].T)
        dby += dy
        dh = np.dot(Why.T, dy) + dhnext
        dhraw = (1 - hs[t] * hs[t]) * dh
        dbh += dhraw
        dWxh += np.dot(dhraw, xs[t].T)
        dWhh += np.dot(dhraw, hs[t - 1].T)
        dhnext = np.dot(Whh.T, dhraw)
    for dparam in [dWxh, dWhh, dWhy, dbh, dby]:
        np.clip(dparam, -5, 5, out=dparam)
    return loss, dWxh, dWhh, dWhy, dbh, dby, hs[len(inputs) - 1]


def _make_adagrad(rng, n):
    params = list(_params(rng, 8 * n))
    grads = [rng.standard_normal(p.shape) for p in params]
    mems = [rng.random(p.shape) for p in params]
    return params, grads, mems


@case("min-char-rnn", _make_adagrad, small=1, big=32)
def min_char_rnn_adagrad_update(params, grads, mems):
    learning_rate = 1e-1
    for param, dparam, mem in zip(params, grads, mems):
        mem += dparam * dparam
        param += -learning_rate * dparam / np.sqrt(mem + 1e-8)


out_of_scope("min_char_rnn_sample", "min-char-rnn",
             "`ix = np.random.choice(range(vocab_size), p=p.ravel())`, then `x[ix] = 1`: each "
             "step indexes with a value drawn from the previous step's output")
