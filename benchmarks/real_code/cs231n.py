"""The cs231n assignments' layer code (``cs231n/layers.py``, ``rnn_layers.py``), rewritten as
the course's reference solutions write it: ``x.reshape(x.shape[0], -1)``, cached tuples,
masks as float arrays, ``np.add.at`` for the embedding gradient, ``probs[np.arange(N), y]``,
forward and backward passes both (the backward ones are ordinary NumPy functions too)."""
import numpy as np

from .case import case


def _r(rng, *shape):
    return rng.standard_normal(shape)


def affine_forward(x, w, b):
    out = x.reshape(x.shape[0], -1).dot(w) + b
    return out


@case("cs231n", lambda r, n: (_r(r, 2 * n, 3, n), _r(r, 3 * n, 5), _r(r, 5)), small=2, big=64)
def cs231n_affine_forward(x, w, b):
    return affine_forward(x, w, b)


@case("cs231n", lambda r, n: (_r(r, 2 * n, 5), _r(r, 2 * n, 3, n), _r(r, 3 * n, 5)),
      small=2, big=64)
def cs231n_affine_backward(dout, x, w):
    dx = dout.dot(w.T).reshape(x.shape)
    dw = x.reshape(x.shape[0], -1).T.dot(dout)
    db = np.sum(dout, axis=0)
    return dx, dw, db


@case("cs231n", lambda r, n: (_r(r, 4 * n, 3 * n),), small=2, big=200)
def cs231n_relu_forward(x):
    out = np.maximum(0, x)
    return out


@case("cs231n", lambda r, n: (_r(r, 4 * n, 3 * n), _r(r, 4 * n, 3 * n)), small=2, big=200)
def cs231n_relu_backward(dout, x):
    dx = dout * (x > 0)
    return dx


@case("cs231n", lambda r, n: (_r(r, 4 * n, 5), r.integers(0, 5, 4 * n)), small=2, big=500)
def cs231n_svm_loss(x, y):
    N = x.shape[0]
    correct_class_scores = x[np.arange(N), y]
    margins = np.maximum(0, x - correct_class_scores[:, np.newaxis] + 1.0)
    margins[np.arange(N), y] = 0
    loss = np.sum(margins) / N
    num_pos = np.sum(margins > 0, axis=1)
    dx = np.zeros_like(x)
    dx[margins > 0] = 1
    dx[np.arange(N), y] -= num_pos
    dx /= N
    return loss, dx


@case("cs231n", lambda r, n: (_r(r, 4 * n, 5), r.integers(0, 5, 4 * n)), small=2, big=500)
def cs231n_softmax_loss(x, y):
    shifted_logits = x - np.max(x, axis=1, keepdims=True)
    Z = np.sum(np.exp(shifted_logits), axis=1, keepdims=True)
    log_probs = shifted_logits - np.log(Z)
    probs = np.exp(log_probs)
    N = x.shape[0]
    loss = -np.sum(log_probs[np.arange(N), y]) / N
    dx = probs.copy()
    dx[np.arange(N), y] -= 1
    dx /= N
    return loss, dx


def _bn_args(r, n):
    d = 3 * n
    return (_r(r, 4 * n, d) * 2 + 1, 1 + 0.1 * _r(r, d), 0.1 * _r(r, d),
            {"mode": "train", "running_mean": np.zeros(d), "running_var": np.ones(d)})


def batchnorm_forward(x, gamma, beta, bn_param):
    mode = bn_param["mode"]
    eps = bn_param.get("eps", 1e-5)
    momentum = bn_param.get("momentum", 0.9)
    N, D = x.shape
    running_mean = bn_param.get("running_mean", np.zeros(D, dtype=x.dtype))
    running_var = bn_param.get("running_var", np.zeros(D, dtype=x.dtype))
    sample_mean = x.mean(axis=0)
    sample_var = x.var(axis=0)
    x_hat = (x - sample_mean) / np.sqrt(sample_var + eps)
    out = gamma * x_hat + beta
    cache = (x, x_hat, sample_mean, sample_var, gamma, eps)
    running_mean = momentum * running_mean + (1 - momentum) * sample_mean
    running_var = momentum * running_var + (1 - momentum) * sample_var
    bn_param["running_mean"] = running_mean
    bn_param["running_var"] = running_var
    return out, cache


@case("cs231n", _bn_args, small=2, big=200)
def cs231n_batchnorm_forward(x, gamma, beta, bn_param):
    out, _ = batchnorm_forward(x, gamma, beta, bn_param)
    return out, bn_param["running_mean"], bn_param["running_var"]


@case("cs231n", lambda r, n: (_r(r, 4 * n, 3 * n),) + _bn_args(r, n)[:3], small=2, big=200)
def cs231n_batchnorm_backward(dout, x, gamma, beta):
    _, cache = batchnorm_forward(x, gamma, beta, {"mode": "train"})
    x, x_hat, mu, var, gamma, eps = cache
    N = x.shape[0]
    dbeta = np.sum(dout, axis=0)
    dgamma = np.sum(dout * x_hat, axis=0)
    dx_hat = dout * gamma
    std_inv = 1.0 / np.sqrt(var + eps)
    dvar = np.sum(dx_hat * (x - mu), axis=0) * -0.5 * std_inv**3
    dmu = np.sum(dx_hat * -std_inv, axis=0) + dvar * np.mean(-2.0 * (x - mu), axis=0)
    dx = dx_hat * std_inv + dvar * 2 * (x - mu) / N + dmu / N
    return dx, dgamma, dbeta


@case("cs231n", lambda r, n: (_r(r, 4 * n, 3 * n),) + _bn_args(r, n)[:3], small=2, big=200)
def cs231n_batchnorm_backward_alt(dout, x, gamma, beta):
    _, cache = batchnorm_forward(x, gamma, beta, {"mode": "train"})
    x, x_hat, mu, var, gamma, eps = cache
    N = dout.shape[0]
    dbeta = dout.sum(axis=0)
    dgamma = np.sum(x_hat * dout, axis=0)
    dx = (gamma / np.sqrt(var + eps) / N) * (N * dout - dgamma * x_hat - dbeta)
    return dx, dgamma, dbeta


@case("cs231n", lambda r, n: (_r(r, 4 * n, 3 * n), 1 + 0.1 * _r(r, 3 * n), 0.1 * _r(r, 3 * n)),
      small=2, big=200)
def cs231n_layernorm_forward(x, gamma, beta):
    eps = 1e-5
    x_t = x.T
    mu = x_t.mean(axis=0)
    var = x_t.var(axis=0)
    x_hat = (x_t - mu) / np.sqrt(var + eps)
    out = gamma * x_hat.T + beta
    return out


@case("cs231n", lambda r, n: (_r(r, 4 * n, 3 * n), r.random((4 * n, 3 * n))), small=2, big=200)
def cs231n_dropout_forward(x, u):
    # the mask's uniform draws are an argument: np.random.rand(*x.shape) < p in the original
    p = 0.7
    mask = (u < p) / p
    out = x * mask
    out = out.astype(x.dtype, copy=False)
    return out


@case("cs231n", lambda r, n: (_r(r, 2, 3, n + 4, n + 4), _r(r, 4, 3, 3, 3), _r(r, 4)),
      small=1, big=6)
def cs231n_conv_forward_naive(x, w, b):
    stride, pad = 1, 1
    N, C, H, W = x.shape
    F, _, HH, WW = w.shape
    H_out = 1 + (H + 2 * pad - HH) // stride
    W_out = 1 + (W + 2 * pad - WW) // stride
    x_pad = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), mode="constant")
    out = np.zeros((N, F, H_out, W_out))
    for i in range(H_out):
        for j in range(W_out):
            x_window = x_pad[:, :, i * stride:i * stride + HH, j * stride:j * stride + WW]
            for f in range(F):
                out[:, f, i, j] = np.sum(x_window * w[f], axis=(1, 2, 3)) + b[f]
    return out


@case("cs231n", lambda r, n: (_r(r, 2, 3, 2 * n + 2, 2 * n + 2),), small=1, big=8)
def cs231n_max_pool_forward_naive(x):
    pool_height, pool_width, stride = 2, 2, 2
    N, C, H, W = x.shape
    H_out = 1 + (H - pool_height) // stride
    W_out = 1 + (W - pool_width) // stride
    out = np.zeros((N, C, H_out, W_out))
    for i in range(H_out):
        for j in range(W_out):
            x_window = x[:, :, i * stride:i * stride + pool_height,
                         j * stride:j * stride + pool_width]
            out[:, :, i, j] = np.max(x_window, axis=(2, 3))
    return out


@case("cs231n", lambda r, n: (_r(r, 2, 3, n + 2, n + 2), 1 + 0.1 * _r(r, 3), 0.1 * _r(r, 3)),
      small=2, big=16)
def cs231n_spatial_batchnorm_forward(x, gamma, beta):
    N, C, H, W = x.shape
    x_flat = x.transpose(0, 2, 3, 1).reshape(-1, C)
    out_flat, _ = batchnorm_forward(x_flat, gamma, beta, {"mode": "train"})
    out = out_flat.reshape(N, H, W, C).transpose(0, 3, 1, 2)
    return out


def rnn_step_forward(x, prev_h, Wx, Wh, b):
    next_h = np.tanh(x.dot(Wx) + prev_h.dot(Wh) + b)
    return next_h


def _rnn_args(r, n):
    return (_r(r, 2 * n, 3), _r(r, 2 * n, 4 * n), _r(r, 3, 4 * n) * 0.3,
            _r(r, 4 * n, 4 * n) * 0.3, _r(r, 4 * n) * 0.1)


@case("cs231n", _rnn_args, small=1, big=64)
def cs231n_rnn_step_forward(x, prev_h, Wx, Wh, b):
    return rnn_step_forward(x, prev_h, Wx, Wh, b)


@case("cs231n", lambda r, n: (_r(r, 2 * n, 4 * n),) + _rnn_args(r, n), small=1, big=64)
def cs231n_rnn_step_backward(dnext_h, x, prev_h, Wx, Wh, b):
    next_h = rnn_step_forward(x, prev_h, Wx, Wh, b)
    dtanh = dnext_h * (1 - next_h**2)
    dx = dtanh.dot(Wx.T)
    dprev_h = dtanh.dot(Wh.T)
    dWx = x.T.dot(dtanh)
    dWh = prev_h.T.dot(dtanh)
    db = np.sum(dtanh, axis=0)
    return dx, dprev_h, dWx, dWh, db


@case("cs231n", lambda r, n: (_r(r, 2 * n, 5, 3), _r(r, 2 * n, 4 * n), _r(r, 3, 4 * n) * 0.3,
                              _r(r, 4 * n, 4 * n) * 0.3, _r(r, 4 * n) * 0.1), small=1, big=64)
def cs231n_rnn_forward(x, h0, Wx, Wh, b):
    N, T, D = x.shape
    H = h0.shape[1]
    h = np.zeros((N, T, H))
    prev_h = h0
    for t in range(T):
        prev_h = rnn_step_forward(x[:, t, :], prev_h, Wx, Wh, b)
        h[:, t, :] = prev_h
    return h


@case("cs231n", lambda r, n: (r.integers(0, 7, (2 * n, 5)), _r(r, 7, 4 * n)), small=1, big=64)
def cs231n_word_embedding_forward(x, W):
    out = W[x]
    return out


@case("cs231n", lambda r, n: (_r(r, 2 * n, 5, 4 * n), r.integers(0, 7, (2 * n, 5)),
                              _r(r, 7, 4 * n)), small=1, big=64)
def cs231n_word_embedding_backward(dout, x, W):
    dW = np.zeros_like(W)
    np.add.at(dW, x, dout)
    return dW


@case("cs231n", lambda r, n: (_r(r, 2 * n, 5, 4 * n), _r(r, 4 * n, 7), _r(r, 7)), small=1,
      big=64)
def cs231n_temporal_affine_forward(x, w, b):
    N, T, D = x.shape
    M = b.shape[0]
    out = x.reshape(N * T, D).dot(w).reshape(N, T, M) + b
    return out


@case("cs231n", lambda r, n: (_r(r, 2 * n, 5, 7), r.integers(0, 7, (2 * n, 5)),
                              r.random((2 * n, 5)) > 0.3), small=1, big=64)
def cs231n_temporal_softmax_loss(x, y, mask):
    N, T, V = x.shape
    x_flat = x.reshape(N * T, V)
    y_flat = y.reshape(N * T)
    mask_flat = mask.reshape(N * T)
    probs = np.exp(x_flat - np.max(x_flat, axis=1, keepdims=True))
    probs /= np.sum(probs, axis=1, keepdims=True)
    loss = -np.sum(mask_flat * np.log(probs[np.arange(N * T), y_flat])) / N
    dx_flat = probs.copy()
    dx_flat[np.arange(N * T), y_flat] -= 1
    dx_flat /= N
    dx_flat *= mask_flat[:, None]
    dx = dx_flat.reshape(N, T, V)
    return loss, dx


@case("cs231n", lambda r, n: (_r(r, 4 * n, 3 * n) * 4,), small=2, big=200)
def cs231n_sigmoid(x):
    pos_mask = x >= 0
    neg_mask = x < 0
    z = np.zeros_like(x)
    z[pos_mask] = np.exp(-x[pos_mask])
    z[neg_mask] = np.exp(x[neg_mask])
    top = np.ones_like(x)
    top[neg_mask] = z[neg_mask]
    return top / (1 + z)


@case("cs231n", lambda r, n: (_r(r, 2 * n, 3), _r(r, 2 * n, 4 * n), _r(r, 2 * n, 4 * n),
                              _r(r, 3, 16 * n) * 0.3, _r(r, 4 * n, 16 * n) * 0.3,
                              _r(r, 16 * n) * 0.1), small=1, big=64)
def cs231n_lstm_step_forward(x, prev_h, prev_c, Wx, Wh, b):
    H = prev_h.shape[1]
    a = x.dot(Wx) + prev_h.dot(Wh) + b
    ai, af, ao, ag = a[:, :H], a[:, H:2 * H], a[:, 2 * H:3 * H], a[:, 3 * H:]
    i = 1 / (1 + np.exp(-ai))
    f = 1 / (1 + np.exp(-af))
    o = 1 / (1 + np.exp(-ao))
    g = np.tanh(ag)
    next_c = f * prev_c + i * g
    next_h = o * np.tanh(next_c)
    return next_h, next_c
