"""HIPS autograd's ``tests/test_numpy.py`` (each test's function of its random arguments) and
functions from its ``examples/`` (neural_net, logistic_regression, rnn, gaussian_process,
tanh), rewritten as written there: ``np.`` calls on arrays from ``npr.randn``."""
import numpy as np
import scipy.special

from .case import case


def _r(rng, *shape):
    return rng.standard_normal(shape)


def _unary(name, shape, fn):
    """A test_numpy.py case: fn of one random array of ``shape`` (times n in its first dim)."""
    case("autograd", lambda r, n: (_r(r, shape[0] * n, *shape[1:]),), small=1, big=100)(
        _named(fn, f"autograd_test_numpy_{name}"))


def _named(fn, name):
    fn.__name__ = fn.__qualname__ = name
    return fn


_unary("dot", (5,), lambda x: np.dot(x, x[::-1]))
_unary("outer", (5,), lambda x: np.outer(x, x * 2))
_unary("max", (5, 6), lambda x: np.max(x))
_unary("max_axis", (5, 3, 4), lambda x: np.max(x, axis=1))
_unary("max_axis_keepdims", (5, 3, 4), lambda x: np.max(x, axis=1, keepdims=True))
_unary("min", (5, 6), lambda x: np.min(x))
_unary("min_axis", (5, 3, 4), lambda x: np.min(x, axis=2))
_unary("sum_1", (5,), lambda x: np.sum(x))
_unary("sum_2", (5, 6), lambda x: np.sum(x, axis=0))
_unary("sum_3", (5, 6, 7), lambda x: np.sum(x, axis=1, keepdims=True))
_unary("mean_1", (5,), lambda x: np.mean(x))
_unary("mean_3", (5, 6, 7), lambda x: np.mean(x, axis=1, keepdims=True))
_unary("index_ints", (5, 6, 7), lambda x: x[3, 0, 1])
_unary("index_slice", (5, 6, 7), lambda x: x[::-1, 2:4, :])
_unary("index_lists", (5, 6, 7), lambda x: x[[0, 1, 2], :, :])
_unary("index_mixed", (5, 6, 7), lambda x: x[3, 2:, [1, 3]])
_unary("vector_slice", (15,), lambda x: x[2:4])
_unary("cumsum_axis0", (5, 3), lambda x: np.cumsum(x, axis=0))
_unary("cumsum_1d", (5,), lambda x: np.cumsum(x))
_unary("transpose", (5, 3, 4), lambda x: np.transpose(x, (1, 0, 2)))
_unary("reshape", (5, 6), lambda x: np.reshape(x, (6 * x.shape[0] // 5, 5)))
_unary("ravel", (5, 6), lambda x: np.ravel(x))
_unary("flatten_method", (5, 6), lambda x: x.flatten())
_unary("diag", (5, 5), lambda x: np.diag(x))
_unary("trace", (5, 6), lambda x: np.trace(x))
_unary("triu", (5, 5), lambda x: np.triu(x, k=1))
_unary("tril", (5, 5), lambda x: np.tril(x, k=-1))
_unary("clip", (5, 6), lambda x: np.clip(x, -0.1, 0.1))
_unary("prod", (5, 4), lambda x: np.prod(x, axis=0))
_unary("var_ddof", (5, 6), lambda x: np.var(x, axis=1, ddof=1))
_unary("std", (5, 6), lambda x: np.std(x, axis=0))
_unary("roll", (5, 6), lambda x: np.roll(x, 2, axis=1))
_unary("cos_and_sinh", (5, 6), lambda x: np.cos(x) * np.sinh(x))
_unary("abs_and_sign", (5, 6), lambda x: np.abs(x) + np.sign(x) * x)
_unary("logsumexp", (5, 6), lambda x: scipy.special.logsumexp(x, axis=1))
_unary("einsum_matmult", (5, 6), lambda x: np.einsum("ij,jk->ik", x, x.T))
_unary("einsum_transpose", (5, 6), lambda x: np.einsum("ij->ji", x))
_unary("einsum_covsum", (5, 6), lambda x: np.einsum("ijk,lji->lki", x.reshape(-1, 2, 3),
                                                     x.reshape(3, 2, -1)))
_unary("tensordot", (5, 6), lambda x: np.tensordot(x, x.T * 2, axes=1))


@case("autograd", lambda r, n: (_r(r, 4 * n, 3), _r(r, 4 * n, 3)), small=1, big=100)
def autograd_test_numpy_concatenate_and_stack(x, y):
    return np.concatenate((x, y), axis=1), np.stack([x, y], axis=0)


@case("autograd", lambda r, n: (_r(r, 4 * n, 3), _r(r, 4 * n, 3)), small=1, big=100)
def autograd_test_numpy_maximum_and_where(x, y):
    return np.maximum(x, y) + np.where(x > y, x * y, y - x)


def _nn_params(rng, sizes):
    return [(rng.standard_normal((m, n)) * 0.3, rng.standard_normal(n) * 0.3)
            for m, n in zip(sizes[:-1], sizes[1:])]


def neural_net_predict(params, inputs):
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return outputs - scipy.special.logsumexp(outputs, axis=1, keepdims=True)


@case("autograd", lambda r, n: (_nn_params(r, [8 * n, 6 * n, 5]), _r(r, 4 * n, 8 * n),
                                np.eye(5)[r.integers(0, 5, 4 * n)]), small=1, big=32)
def autograd_example_neural_net_log_posterior(params, inputs, targets):
    L2_reg = 1.0
    log_prior = -L2_reg * sum(np.sum(W**2) + np.sum(b**2) for W, b in params)
    log_lik = np.sum(neural_net_predict(params, inputs) * targets)
    return log_prior + log_lik


@case("autograd", lambda r, n: (_r(r, 3), _r(r, 4 * n, 3), r.random(4 * n) > 0.5), small=1,
      big=5000)
def autograd_example_logistic_regression_loss(weights, inputs, targets):
    def sigmoid(x):
        return 0.5 * (np.tanh(x / 2.) + 1)
    preds = sigmoid(np.dot(inputs, weights))
    label_probabilities = preds * targets + (1 - preds) * (1 - targets)
    return -np.sum(np.log(label_probabilities))


@case("autograd", lambda r, n: (np.linspace(-7, 7, 20 * n),), small=1, big=5000)
def autograd_example_tanh(x):
    y = np.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)


def _rnn_params(rng, n):
    i, h, o = 5, 4 * n, 5
    return {"init hiddens": rng.standard_normal((1, h)) * 0.1,
            "change": rng.standard_normal((i + h + 1, h)) * 0.1,
            "predict": rng.standard_normal((h + 1, o)) * 0.1}


@case("autograd", lambda r, n: (_rnn_params(r, n), _r(r, 6, 2 * n, 5)), small=1, big=32)
def autograd_example_rnn_predictions(params, inputs):
    def sigmoid(x):
        return 0.5 * (np.tanh(x) + 1.0)

    def concat_and_multiply(weights, *args):
        cat_state = np.hstack(args + (np.ones((args[0].shape[0], 1)),))
        return np.dot(cat_state, weights)

    def update_rnn(input, hiddens):
        return np.tanh(concat_and_multiply(params["change"], input, hiddens))

    def hiddens_to_output_probs(hiddens):
        output = concat_and_multiply(params["predict"], hiddens)
        return output - scipy.special.logsumexp(output, axis=1, keepdims=True)

    num_sequences = inputs.shape[1]
    hiddens = np.repeat(params["init hiddens"], num_sequences, axis=0)
    output = [hiddens_to_output_probs(hiddens)]
    for input in inputs:
        hiddens = update_rnn(input, hiddens)
        output.append(hiddens_to_output_probs(hiddens))
    return output


@case("autograd", lambda r, n: (np.array([0.1, 0.3, -0.2, 0.5, 0.2])[:3], _r(r, 4 * n, 1),
                                _r(r, 4 * n)), small=2, big=60)
def autograd_example_gaussian_process_log_marginal_likelihood(params, x, y):
    def rbf_covariance(kernel_params, x, xp):
        output_scale = np.exp(kernel_params[0])
        lengthscales = np.exp(kernel_params[1:])
        diffs = np.expand_dims(x / lengthscales, 1) - np.expand_dims(xp / lengthscales, 0)
        return output_scale * np.exp(-0.5 * np.sum(diffs**2, axis=2))
    mean, cov_params, noise_scale = params[0], params[2:], np.exp(params[1]) + 0.0001
    cov_y_y = rbf_covariance(cov_params, x, x) + noise_scale * np.eye(len(y))
    prior_mean = mean * np.ones(len(y))
    # scipy.stats.multivariate_normal.logpdf(y, prior_mean, cov_y_y) by its formula
    diff = y - prior_mean
    sign, logdet = np.linalg.slogdet(cov_y_y)
    return -0.5 * (len(y) * np.log(2 * np.pi) + logdet + diff @ np.linalg.solve(cov_y_y, diff))
