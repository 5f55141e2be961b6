"""numpy-ml (ddbourgin/numpy-ml) rewritten in its style: activation and loss classes' ``fn``
bodies (``numpy_ml/neural_nets/activations``, ``losses``), its kernels
(``numpy_ml/utils/kernels.py``), layer-norm and softmax layer forwards, and the linear
models' closed forms and losses."""
import numpy as np
import scipy.special

from .case import case


def _r(rng, *shape):
    return rng.standard_normal(shape)


def _z(r, n):
    return (_r(r, 4 * n, 3 * n) * 2,)


@case("numpy-ml", _z, small=2, big=300)
def numpy_ml_sigmoid(z):
    return 1 / (1 + np.exp(-z))


@case("numpy-ml", _z, small=2, big=300)
def numpy_ml_leaky_relu(z):
    alpha = 0.3
    _z = z.copy()
    _z[z < 0] = _z[z < 0] * alpha
    return _z


@case("numpy-ml", _z, small=2, big=300)
def numpy_ml_elu(z):
    alpha = 1.0
    return np.where(z > 0, z, alpha * (np.exp(z) - 1))


@case("numpy-ml", _z, small=2, big=300)
def numpy_ml_selu(z):
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    return scale * np.where(z > 0, z, alpha * (np.exp(z) - 1))


@case("numpy-ml", _z, small=2, big=300)
def numpy_ml_hard_sigmoid(z):
    return np.clip((0.2 * z) + 0.5, 0.0, 1.0)


@case("numpy-ml", _z, small=2, big=300)
def numpy_ml_softplus(z):
    return np.log(np.exp(z) + 1)


@case("numpy-ml", _z, small=2, big=300)
def numpy_ml_gelu(z):
    pi, sqrt, tanh = np.pi, np.sqrt, np.tanh
    approx = 0.5 * z * (1 + tanh(sqrt(2 / pi) * (z + 0.044715 * z ** 3)))
    exact = 0.5 * z * (1 + scipy.special.erf(z / sqrt(2)))
    return approx, exact


@case("numpy-ml", lambda r, n: (_r(r, 4 * n, 5), _r(r, 4 * n, 5)), small=2, big=300)
def numpy_ml_squared_error(y, y_pred):
    return 0.5 * np.linalg.norm(y_pred - y) ** 2


@case("numpy-ml", lambda r, n: (np.eye(5)[r.integers(0, 5, 4 * n)], r.random((4 * n, 5))),
      small=2, big=300)
def numpy_ml_cross_entropy(y, y_pred):
    eps = np.finfo(float).eps
    cross_entropy = -np.sum(y * np.log(y_pred + eps))
    return cross_entropy


@case("numpy-ml", lambda r, n: (r.random((4 * n, 6)), r.random((4 * n, 6)), _r(r, 4 * n, 2),
                                _r(r, 4 * n, 2)), small=1, big=300)
def numpy_ml_vae_loss(y, y_pred, t_mean, t_log_var):
    eps = np.finfo(float).eps
    y_pred = np.clip(y_pred, eps, 1 - eps)
    rec_loss = -np.sum(y * np.log(y_pred) + (1 - y) * np.log(1 - y_pred), axis=1)
    kl_loss = -0.5 * np.sum(1 + t_log_var - t_mean ** 2 - np.exp(t_log_var), axis=1)
    loss = np.mean(kl_loss + rec_loss)
    return loss


@case("numpy-ml", lambda r, n: (_r(r, 4 * n, 3), _r(r, 3 * n, 3)), small=1, big=200)
def numpy_ml_rbf_kernel(X, Y):
    sigma = np.sqrt(X.shape[1] / 2)
    D = -2 * X @ Y.T + np.sum(Y ** 2, axis=1) + np.sum(X ** 2, axis=1)[:, np.newaxis]
    D[D < 0] = 0
    return np.exp(-0.5 * D / sigma ** 2)


@case("numpy-ml", lambda r, n: (_r(r, 4 * n, 3), _r(r, 3 * n, 3)), small=1, big=200)
def numpy_ml_polynomial_kernel(X, Y):
    gamma, c0, d = 1 / X.shape[1], 1, 3
    return (gamma * (X @ Y.T) + c0) ** d


@case("numpy-ml", lambda r, n: (_r(r, 4 * n, 6 * n), _r(r, 6 * n), _r(r, 6 * n)), small=1,
      big=100)
def numpy_ml_layer_norm_1d_forward(X, scaler, intercept):
    epsilon = 1e-5
    X_mean, X_var = X.mean(axis=1, keepdims=True), X.var(axis=1, keepdims=True)
    lnorm = (X - X_mean) / np.sqrt(X_var + epsilon)
    y = scaler * lnorm + intercept
    return y


@case("numpy-ml", lambda r, n: (_r(r, 4 * n, 6 * n),), small=1, big=100)
def numpy_ml_softmax_layer_forward(X):
    e_X = np.exp(X - np.max(X, axis=-1, keepdims=True))
    return e_X / e_X.sum(axis=-1, keepdims=True)


@case("numpy-ml", lambda r, n: (_r(r, 8 * n, 3), _r(r, 8 * n)), small=1, big=500)
def numpy_ml_linear_regression_fit(X, y):
    # LinearRegression.fit with fit_intercept=True: the normal equations by pseudo-inverse
    X = np.c_[np.ones(X.shape[0]), X]
    pseudo_inverse = np.linalg.inv(X.T @ X) @ X.T
    beta = np.dot(pseudo_inverse, y)
    return beta


@case("numpy-ml", lambda r, n: (_r(r, 8 * n, 3), _r(r, 8 * n)), small=1, big=500)
def numpy_ml_ridge_regression_fit(X, y):
    alpha = 1.0
    X = np.c_[np.ones(X.shape[0]), X]
    A = alpha * np.eye(X.shape[1])
    pseudo_inverse = np.linalg.inv(X.T @ X + A) @ X.T
    beta = pseudo_inverse @ y
    return beta


@case("numpy-ml", lambda r, n: (_r(r, 8 * n, 4), (r.random(8 * n) > 0.5).astype(float),
                                _r(r, 4)), small=1, big=500)
def numpy_ml_logistic_regression_nll(X, y, beta):
    gamma = 0.1
    N, M = X.shape
    order = 2
    y_pred = 1 / (1 + np.exp(-X @ beta))
    norm_beta = np.linalg.norm(beta, ord=order)
    nll = -np.log(y_pred[y == 1]).sum() - np.log(1 - y_pred[y == 0]).sum()
    penalty = (gamma / 2) * norm_beta ** 2
    return (penalty + nll) / N


@case("numpy-ml", lambda r, n: (_r(r, 4 * n, 5),), small=1, big=300)
def numpy_ml_logsumexp(log_probs):
    _max = np.max(log_probs, axis=1, keepdims=True)
    ds = log_probs - _max
    exp_sum = np.exp(ds).sum(axis=1, keepdims=True)
    return _max + np.log(exp_sum)


@case("numpy-ml", lambda r, n: (_r(r, 4 * n, 3), _r(r, 3 * n, 3)), small=1, big=200)
def numpy_ml_euclidean_pairwise(X, Y):
    return np.sqrt(np.sum((X[:, None, :] - Y[None, :, :]) ** 2, axis=-1))
