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


# -- third hunt: Sequential seeds, lists of layers, K-dimensional cross-entropy ------------------

def test_sequential_seed_reaches_the_dropout_of_a_nested_sequential():
    """Only direct Dropout children got the seed: a nested Sequential's Dropout ran with seed
    0, the same mask at every training step."""
    rng = np.random.default_rng(0)
    model = nn.Sequential(nn.Sequential(nn.Linear(4, 16, rng=rng), nn.Dropout(0.5)),
                          nn.Linear(16, 2, rng=rng))
    x = np.ones((3, 4), np.float32)
    assert not np.allclose(model(x, seed=1), model(x, seed=2))
    step = tracejit.jit(lambda m, x, s: m(x, seed=s))
    assert not np.allclose(step(model, x, np.int64(1)), step(model, x, np.int64(2)))
    np.testing.assert_allclose(step(model, x, np.int64(1)), model(x, seed=1), rtol=1e-6)


@pytest.mark.parametrize("container", [list, tuple])
def test_layers_held_in_a_list_or_tuple_are_parameters_that_train(container):
    """A tuple of layers (what the 'unhashable list' error suggested) was static: its weights
    were not parameters, grad returned none for them and the optimizer never changed them."""
    class Net(nn.Module):
        def __init__(self):
            rng = np.random.default_rng(0)
            self.layers = container([nn.Linear(3, 3, rng=rng), nn.Linear(3, 2, rng=rng)])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    net = Net()
    assert list(dict(net.named_parameters())) == [
        "layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias"]
    assert isinstance(net.layers, nn.ModuleList) and len(net.layers) == 2
    x = np.ones((4, 3), np.float32)
    g = tracejit.jit(tracejit.grad(lambda m: m(x).sum()))(net)
    np.testing.assert_allclose(g.layers[1].bias, np.full(2, 4.0))
    w = net.layers[0].weight
    np.testing.assert_allclose(g.layers[0].weight,
                               np.tile(4 * net.layers[1].weight.sum(0)[:, None], (1, 3)), rtol=1e-5)
    net.load_state_dict({k: v * 0 for k, v in net.state_dict().items()})
    assert not net.layers[0].weight.any() and w.any()


def test_cross_entropy_takes_k_dimensional_inputs_as_pytorch():
    """(N, C, d1, ...) logits against (N, d1, ...) class indices (segmentation, sequences)
    were refused with a wrong batch-size message."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 3, 4))
    t = rng.integers(0, 5, (2, 3, 4))
    flat_x = x.transpose(0, 2, 3, 1).reshape(-1, 5)
    expected = F.cross_entropy(flat_x, t.reshape(-1))
    np.testing.assert_allclose(F.cross_entropy(x, t), expected, rtol=1e-12)
    np.testing.assert_allclose(tracejit.jit(F.cross_entropy)(x, t), expected, rtol=1e-12)
    np.testing.assert_allclose(F.nll_loss(F.log_softmax(x, 1), t), expected, rtol=1e-12)
    with pytest.raises(ValueError, match="expected target of shape"):
        F.cross_entropy(x, t[:, :2])
