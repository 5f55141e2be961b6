"""Regressions for bugs found probing tracejit.nn and tracejit.optim against PyTorch's
documented semantics (written as NumPy float64 references), eagerly and under jit."""
from __future__ import annotations

import numpy as np
import pytest

import tracejit
from tracejit import lax, nn
from tracejit.nn import functional as F


def _interp(fn):
    return tracejit.jit(fn, backend="interpreter")


# -- Flatten of an empty batch ------------------------------------------------------------------

def test_flatten_of_an_empty_batch_keeps_the_batch_axis():
    """reshape(0, -1) cannot infer -1 in NumPy; torch.nn.Flatten gives (0, 12)."""
    x = np.zeros((0, 3, 4), np.float32)
    assert nn.Flatten()(x).shape == (0, 12)
    assert _interp(lambda x: nn.Flatten()(x))(x).shape == (0, 12)
    assert nn.Flatten(0, 1)(np.zeros((2, 0, 5))).shape == (0, 5)


def test_a_cnn_on_an_empty_batch_returns_an_empty_batch():
    rng = np.random.default_rng(0)
    model = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1, rng=rng), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(8, 3, rng=rng))
    x = np.zeros((0, 1, 4, 4), np.float32)
    assert model(x).shape == (0, 3)


# -- dtype preservation -------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_relu_of_integers_keeps_the_integer_dtype(dtype):
    x = np.array([3, -2, 0, 5], dtype)
    for out in (F.relu(x), _interp(F.relu)(x)):
        assert out.dtype == dtype
        np.testing.assert_array_equal(out, [3, 0, 0, 5])


@pytest.mark.parametrize("fn", [F.sigmoid, F.gelu, F.erf, lax.erf, lax.logistic],
                         ids=["sigmoid", "gelu", "F.erf", "lax.erf", "lax.logistic"])
def test_float16_sigmoid_gelu_and_erf_stay_float16_under_jit(fn):
    x = np.array([-2.0, -0.5, 0.0, 0.75, 3.0], np.float16)
    eager = fn(x)
    traced = _interp(fn)(x)
    assert eager.dtype == np.float16 and traced.dtype == np.float16
    np.testing.assert_allclose(traced.astype(np.float64), eager.astype(np.float64), rtol=2e-3)


def test_lax_erf_of_integers_is_float_not_truncated():
    x = np.array([0, 1, -2])
    want = np.array([0.0, 0.8427007929497149, -0.9953222650189527])
    np.testing.assert_allclose(lax.erf(x), want, rtol=1e-12)
    np.testing.assert_allclose(_interp(lax.erf)(x), want, rtol=1e-12)


# -- losses --------------------------------------------------------------------------------------

LOGITS = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 5.0], [1.0, 1.0, 1.0]])


@pytest.mark.parametrize("fn", [F.cross_entropy, F.nll_loss], ids=["cross_entropy", "nll"])
def test_loss_rejects_a_target_batch_size_that_differs_from_the_input(fn):
    """A target of one element broadcast against every row gave a loss silently."""
    with pytest.raises(ValueError, match="batch_size"):
        fn(LOGITS, np.array([2]))
    with pytest.raises(ValueError, match="batch_size"):
        fn(LOGITS[:1], np.array([2, 0, 1]))
    with pytest.raises(ValueError, match="batch_size"):
        _interp(fn)(LOGITS, np.array([2], np.int32))


def test_cross_entropy_with_class_probability_targets_follows_pytorch():
    """A float target of the input's shape holds class probabilities (PyTorch); it was cast
    to class indices (a batch of one: a silently wrong loss)."""
    probs = np.array([[0.2, 0.3, 0.5], [0.0, 1.0, 0.0], [0.6, 0.2, 0.2]])
    logp = LOGITS - np.log(np.exp(LOGITS).sum(axis=1, keepdims=True))
    for n in (1, 3):
        want = -(probs[:n] * logp[:n]).sum(axis=1).mean()
        np.testing.assert_allclose(F.cross_entropy(LOGITS[:n], probs[:n]), want, rtol=1e-12)
        np.testing.assert_allclose(_interp(F.cross_entropy)(LOGITS[:n], probs[:n]), want,
                                   rtol=1e-12)
    grad = tracejit.grad(F.cross_entropy)(LOGITS, probs)
    softmax = np.exp(logp)
    np.testing.assert_allclose(grad, (softmax * probs.sum(1, keepdims=True) - probs) / 3,
                               rtol=1e-10, atol=1e-12)


def test_layer_norm_rejects_a_normalized_shape_that_is_not_the_trailing_shape():
    with pytest.raises(ValueError, match="normalized_shape"):
        F.layer_norm(np.ones((2, 6)), (5,))
    with pytest.raises(ValueError, match="normalized_shape"):
        F.layer_norm(np.ones((2, 6)), 5)
    out = F.layer_norm(np.arange(6.0).reshape(2, 3), np.int64(3))
    np.testing.assert_allclose(out.sum(axis=1), 0, atol=1e-12)


# -- pooling argument checks ---------------------------------------------------------------------

@pytest.mark.parametrize("pool", [F.max_pool2d, F.avg_pool2d], ids=["max", "avg"])
def test_pooling_rejects_padding_over_half_the_kernel(pool):
    """Windows of padding only gave -inf maxima (and 0/0 averages) instead of PyTorch's error."""
    with pytest.raises(ValueError, match="pad should be at most half"):
        pool(np.ones((1, 1, 2, 2)), 2, 1, 3)


@pytest.mark.parametrize("pool", [F.max_pool2d, F.avg_pool2d], ids=["max", "avg"])
def test_pooling_rejects_a_kernel_larger_than_the_input(pool):
    """An empty result came back silently; PyTorch says the output size is too small."""
    with pytest.raises(ValueError, match="too small"):
        pool(np.ones((1, 1, 2, 2)), 3)
    with pytest.raises(ValueError, match="too small"):
        _interp(lambda x: pool(x, 3))(np.ones((1, 1, 2, 2)))



# -- layers built with PyTorch's list arguments --------------------------------------------------

def test_layers_built_with_list_sizes_run_under_jit():
    """Conv2d(stride=[1, 1], padding=[1, 1]) worked eagerly but could not be a jit argument
    (a list static attribute is unhashable)."""
    rng = np.random.default_rng(0)
    model = nn.Sequential(nn.Conv2d(1, 2, [3, 3], stride=[1, 1], padding=[1, 1],
                                    dilation=[1, 1], rng=rng),
                          nn.MaxPool2d([2, 2], stride=[2, 2], padding=[0, 0]))
    x = rng.standard_normal((1, 1, 4, 4)).astype(np.float32)
    np.testing.assert_allclose(_interp(lambda m, x: m(x))(model, x), model(x), rtol=1e-6)


def test_layer_norm_layer_takes_a_numpy_integer_size():
    ln = nn.LayerNorm(np.int64(3))
    assert ln.weight.shape == (3,)
    out = _interp(lambda m, x: m(x))(ln, np.arange(6.0, dtype=np.float32).reshape(2, 3))
    np.testing.assert_allclose(out.sum(axis=1), 0, atol=1e-5)


# -- optimizers: gradients and state that do not pair up with the parameters ---------------------

OPTIMIZERS = {"SGD": lambda: tracejit.optim.SGD(lr=0.1), "SGD-momentum":
              lambda: tracejit.optim.SGD(lr=0.1, momentum=0.9),
              "Adam": lambda: tracejit.optim.Adam(lr=0.1)}


@pytest.mark.parametrize("make", OPTIMIZERS.values(), ids=OPTIMIZERS.keys())
def test_optimizer_rejects_gradients_that_do_not_match_the_parameters(make):
    """A missing (or None) gradient raised a bare StopIteration; a gradient of another shape
    broadcast into the parameter and changed its shape."""
    opt = make()
    params = {"a": np.ones(2), "b": np.ones(3)}
    state = opt.init(params)
    for grads in ({"a": np.ones(2)}, {"a": np.ones(2), "b": None},
                  {"a": np.ones(2), "b": np.ones((2, 3))}, {"a": np.ones(2), "b": np.ones(1)}):
        with pytest.raises(ValueError, match="do not match the parameters"):
            opt.update(grads, state, params)
    with pytest.raises(ValueError, match="do not match the parameters"):
        _interp(opt.update)({"a": np.ones(2), "b": np.ones((2, 3))}, state, params)


@pytest.mark.parametrize("make", [OPTIMIZERS["SGD-momentum"], OPTIMIZERS["Adam"]],
                         ids=["SGD-momentum", "Adam"])
def test_optimizer_rejects_a_state_made_for_other_parameters(make):
    """Adam's zip dropped the parameters without buffers (a bare StopIteration); SGD's
    momentum raised IndexError."""
    opt = make()
    params = {"a": np.ones(2), "b": np.ones(3)}
    with pytest.raises(ValueError, match="init"):
        opt.update({"a": np.ones(2), "b": np.ones(3)}, opt.init({"a": np.ones(2)}), params)


def test_conv2d_rejects_zero_stride_and_negative_padding_with_a_clear_message():
    """stride=0 raised ZeroDivisionError, padding=-1 a NumPy pad error."""
    x, w = np.ones((1, 1, 4, 4)), np.ones((1, 1, 3, 3))
    with pytest.raises(ValueError, match="must be positive"):
        F.conv2d(x, w, stride=0)
    with pytest.raises(ValueError, match="must be positive"):
        F.conv2d(x, w, dilation=(1, 0))
    with pytest.raises(ValueError, match="negative padding"):
        F.conv2d(x, w, padding=-1)
