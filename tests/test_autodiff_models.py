"""Composite functions of the kind found in real models, each checked for grad, vjp and jvp
against central finite differences, and for second derivatives (Hessian-vector products)
against finite differences of the gradient."""
from __future__ import annotations

import numpy as np
import pytest

from tracejit import lax
from gradcheck import check_grad, check_hvp, check_jvp, check_vjp

rng = np.random.default_rng(42)
B, D, H, C = 3, 4, 5, 3
X = rng.standard_normal((B, D))
W1, B1 = rng.standard_normal((D, H)) * 0.5, rng.standard_normal(H) * 0.1
W2, B2 = rng.standard_normal((H, C)) * 0.5, rng.standard_normal(C) * 0.1
Y = np.array([0, 2, 1])
T = rng.standard_normal((B, C))


def logsumexp(z, axis=-1):
    m = np.max(z, axis=axis, keepdims=True)
    return np.log(np.sum(np.exp(z - m), axis=axis, keepdims=True)) + m


def softmax(z, axis=-1):
    e = np.exp(z - np.max(z, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def mlp_mse(w1, x):
    return np.mean((np.tanh(x @ w1 + B1) @ W2 + B2 - T) ** 2)


def mlp_relu_xent(w1, x):
    logits = np.maximum(x @ w1 + B1, 0.0) @ W2 + B2
    logp = logits - logsumexp(logits)
    return -np.mean(logp[np.arange(B), Y])


def softmax_xent_onehot(z):
    return -np.sum(np.eye(C)[Y] * np.log(softmax(z))) / B


def logsumexp_rows(z):
    return logsumexp(z)[:, 0]


def layer_norm(x, gain):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * gain


def attention(x, wq):
    q, k, v = x @ wq, x @ W1[:, :D], x
    a = softmax(q @ k.T / np.sqrt(D))
    return a @ v


def batched_attention(x, wq):
    xs = np.stack([x, x[::-1]])
    q = xs @ wq
    a = softmax(np.matmul(q, np.swapaxes(xs, 1, 2)) / 2.0)
    return np.matmul(a, xs).sum(axis=0)


def residual_block(x, w):
    h = np.maximum(x @ w, 0.0) @ w.T
    return layer_norm(x + h, 1.0)


def rnn_unrolled(h, wx):
    wh = W1[:, :D]
    for t in range(3):
        h = np.tanh(h @ wh + X[t] * wx)
    return h.sum()


def gru_unrolled(h, wz):
    def sig(u):
        return 1 / (1 + np.exp(-u))
    for t in range(3):
        z = sig(h @ wz + X[t])
        cand = np.tanh(h @ W1[:, :D] * z)
        h = (1 - z) * h + z * cand
    return h


def logistic_regression(w, x):
    z = x @ w
    return np.mean(np.log1p(np.exp(-z * np.array([1.0, -1.0, 1.0]))))


def huber(pred):
    r = pred - T
    return np.sum(np.where(np.abs(r) < 0.5, 0.5 * r * r, 0.5 * (np.abs(r) - 0.25)))


def ridge(w, x):
    return np.sum((x @ w - T[:, 0]) ** 2) + 0.1 * np.sum(w * w)


def conv1d(x, k):
    cols = [x[:, i:i + 2] * k[i] for i in range(3)]
    return np.tanh(np.concatenate(cols, axis=1))


def batch_norm(x, gain):
    mu = x.mean(axis=0)
    sd = x.std(axis=0)
    return (x - mu) / (sd + 1e-3) * gain


def cosine_similarity(a, b):
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def gaussian_nll(mu, log_sigma):
    s = np.exp(log_sigma)
    return np.sum(0.5 * ((T - mu) / s) ** 2 + log_sigma + 0.5 * np.log(2 * np.pi))


def softplus_loss(x):
    return np.sum(np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0.0))


def polynomial(x, c):
    return np.sum(c[0] + c[1] * x + c[2] * x ** 3) + np.prod(x[0] + 2.0)


def max_pool(x):
    return x.reshape(B, 2, 2).max(axis=-1) * 1.5


def embedding_mean(table):
    ids = np.array([[0, 2], [1, 1], [3, 0]])
    return np.tanh(table[ids].mean(axis=1))


def gelu(x):
    return 0.5 * x * (1 + lax.erf(x / np.sqrt(2.0)))


def swish(x, beta):
    return x / (1 + np.exp(-beta * x))


def kl_divergence(z):
    p = softmax(T)
    return np.sum(p * (np.log(p) - np.log(softmax(z))))


def focal_loss(z):
    p = softmax(z)[np.arange(B), Y]
    return -np.sum((1 - p) ** 2.0 * np.log(p))


def elu(x):
    return np.where(x > 0, x, np.expm1(x)) * np.arange(1, x.shape[-1] + 1)


def hinge_triplet(a, p):
    n = a[::-1]
    d_ap = np.sum((a - p) ** 2, axis=1)
    d_an = np.sum((a - n) ** 2, axis=1)
    return np.sum(np.maximum(d_ap - d_an + 0.3, 0.0))


def pad_flip_transpose(x):
    y = np.pad(np.flip(x, axis=1), ((1, 0), (0, 2)))
    return np.sin(y.T) * np.arange(y.size).reshape(y.T.shape)


def bilinear_einsum(x, w):
    return np.einsum("bi,ij,bj->b", x, w, x)


def clipped_sqrt(x):
    return np.sqrt(np.clip(x * x + 0.5, 0.6, 3.0)).sum(axis=0)


MODELS = {
    "mlp_mse": (mlp_mse, W1, X),
    "mlp_relu_softmax_xent": (mlp_relu_xent, W1, X),
    "softmax_xent_onehot": (softmax_xent_onehot, T),
    "logsumexp": (logsumexp_rows, T),
    "layer_norm": (layer_norm, X, rng.standard_normal(D)),
    "attention": (attention, X, rng.standard_normal((D, D)) * 0.5),
    "batched_attention": (batched_attention, X, rng.standard_normal((D, D)) * 0.5),
    "residual_block": (residual_block, X, rng.standard_normal((D, H)) * 0.5),
    "rnn_unrolled": (rnn_unrolled, rng.standard_normal(D), rng.standard_normal(D)),
    "gru_unrolled": (gru_unrolled, rng.standard_normal(D) * 0.5, rng.standard_normal((D, D))),
    "logistic_regression": (logistic_regression, rng.standard_normal(D), X),
    "huber": (huber, T + rng.standard_normal(T.shape)),
    "ridge": (ridge, rng.standard_normal(D), X),
    "conv1d": (conv1d, X, rng.standard_normal(3)),
    "batch_norm": (batch_norm, X, rng.standard_normal(D)),
    "cosine_similarity": (cosine_similarity, X, X[::-1] + 0.3),
    "gaussian_nll": (gaussian_nll, rng.standard_normal(T.shape), rng.standard_normal(C) * .3),
    "softplus": (softplus_loss, X),
    "polynomial": (polynomial, X * 0.5, rng.standard_normal(3)),
    "max_pool": (max_pool, X),
    "embedding_mean": (embedding_mean, rng.standard_normal((4, D))),
    "gelu": (gelu, X),
    "swish": (swish, X, np.float64(1.3)),
    "kl_divergence": (kl_divergence, rng.standard_normal((B, C))),
    "focal_loss": (focal_loss, rng.standard_normal((B, C))),
    "elu": (elu, X),
    "hinge_triplet": (hinge_triplet, X, X + 0.2 * rng.standard_normal(X.shape)),
    "pad_flip_transpose": (pad_flip_transpose, X),
    "bilinear_einsum": (bilinear_einsum, X, rng.standard_normal((D, D))),
    "clipped_sqrt": (clipped_sqrt, X),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_gradient_matches_finite_differences(name):
    f, *args = MODELS[name]
    check_grad(f, *args)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_vjp_matches_finite_differences(name):
    f, *args = MODELS[name]
    check_vjp(f, *args)


# Standalone vjp runs its split forward and backward programs compiled: a few models of
# distinct structure here, every model in the slow suite (each compiles two programs).
_COMPILED_VJP = {"mlp_relu_softmax_xent", "attention", "layer_norm", "conv1d",
                 "pad_flip_transpose", "embedding_mean"}


@pytest.mark.parametrize("name", [
    n if n in _COMPILED_VJP else pytest.param(n, marks=pytest.mark.slow) for n in sorted(MODELS)])
def test_model_standalone_compiled_vjp_matches_finite_differences(name):
    f, *args = MODELS[name]
    check_vjp(f, *args, backend="numba")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_jvp_matches_finite_differences(name):
    f, *args = MODELS[name]
    check_jvp(f, *args)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_second_derivative_matches_finite_differences_of_the_gradient(name):
    f, *args = MODELS[name]

    def scalar(*a):
        out = f(*a)
        return np.sum(out * out) if np.ndim(out) else out

    check_hvp(scalar, *args)
