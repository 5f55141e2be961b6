"""Bugs found training object-oriented, from-scratch NumPy models under jit (Dense layers
with W and b in a Model's list, optimizers updating them in place or rebinding them): the
arrays a trace takes through attributes and containers are read at every call
(tracer/external_arrays.py, driver/guards.ReachedArrays)."""
import numpy as np

import tracejit


class Dense:
    def __init__(self, rng, i, o):
        self.W = rng.standard_normal((i, o))
        self.b = rng.standard_normal(o)

    def forward(self, x):
        return np.tanh(x @ self.W + self.b)


class Model:
    def __init__(self, layers):
        self.layers = layers

    def forward(self, x):
        for layer in self.layers:
            x = layer.forward(x)
        return x


class Net(Model):
    @tracejit.jit
    def predict(self, x):
        for layer in self.layers:
            x = layer.forward(x)
        return x


def _model(seed=0, n=2, cls=Model):
    rng = np.random.default_rng(seed)
    return cls([Dense(rng, 3, 3) for _ in range(n)])


X = np.random.default_rng(9).standard_normal((4, 3))
GLOBAL = _model(1)


@tracejit.jit
def global_predict(x):
    for layer in GLOBAL.layers:
        x = np.tanh(x @ layer.W + layer.b)
    return x


def _steps(predict, model, rebind, n=6):
    """A training-loop-like sequence: the weights change between calls."""
    for step in range(n):
        np.testing.assert_allclose(predict(X), model.forward(X), rtol=1e-12)
        for layer in model.layers:
            if rebind:
                layer.W = layer.W - 0.1 * np.sin(layer.W + step)
                layer.b = layer.b * 0.9
            else:
                layer.W -= 0.1 * np.sin(layer.W + step)
                layer.b *= 0.9


def test_a_jitted_method_sees_weights_of_the_layers_in_its_self_updated_in_place():
    net = _model(cls=Net)
    _steps(net.predict, net, rebind=False)


def test_a_jitted_method_sees_layer_weights_rebound_without_tracing_again():
    net = _model(cls=Net)
    before = Net.predict.trace_count
    _steps(net.predict, net, rebind=True)
    assert Net.predict.trace_count == before + 1


def test_layer_weights_of_a_global_model_rebound_by_the_optimizer_are_seen_once_traced():
    global_predict.clear_cache()
    before = global_predict.trace_count
    _steps(global_predict, GLOBAL, rebind=True)
    assert global_predict.trace_count == before + 1


def test_a_static_model_argument_has_its_weights_read_at_every_call():
    model = _model(2)
    predict = tracejit.jit(lambda m, x: m.forward(x), static_argnums=0)
    _steps(lambda x: predict(model, x), model, rebind=False)
    _steps(lambda x: predict(model, x), model, rebind=True)
    assert predict.trace_count == 1


class Linear:
    """PyTorch's layout: weight (out, in), used transposed."""

    def __init__(self, rng):
        self.weight = rng.standard_normal((2, 3))
        self.table = rng.standard_normal((3, 4))


LIN = [Linear(np.random.default_rng(3))]


@tracejit.jit
def linear_views(x):
    return x @ LIN[0].weight.T + x @ LIN[0].table[:, ::2] + LIN[0].table.reshape(-1)[:2]


def test_a_view_of_a_reached_array_sees_it_changed_in_place():
    def eager(x):
        return x @ LIN[0].weight.T + x @ LIN[0].table[:, ::2] + LIN[0].table.reshape(-1)[:2]

    for _ in range(3):
        np.testing.assert_allclose(linear_views(X), eager(X), rtol=1e-12)
        LIN[0].weight *= 1.5
        LIN[0].table += 1.0


GROWING = _model(4)


@tracejit.jit
def growing_predict(x):
    return GROWING.forward(x)


def test_a_layer_appended_to_the_list_the_code_iterates_traces_again():
    growing_predict(X)
    GROWING.layers.append(Dense(np.random.default_rng(5), 3, 3))
    np.testing.assert_allclose(growing_predict(X), GROWING.forward(X), rtol=1e-12)


def test_a_layer_weight_rebound_to_another_shape_traces_again():
    model = Model([Dense(np.random.default_rng(6), 3, 3)])
    predict = tracejit.jit(lambda m, x: m.forward(x), static_argnums=0)
    predict(model, X)
    model.layers[0].W = np.ones((3, 5))
    model.layers[0].b = np.zeros(5)
    out = predict(model, X)
    assert out.shape == (4, 5)
    np.testing.assert_allclose(out, model.forward(X), rtol=1e-12)


def test_one_array_reached_by_two_paths_then_rebound_apart_is_seen():
    model = _model(7)
    predict = tracejit.jit(lambda m, x: m.forward(x), static_argnums=0)
    shared = np.eye(3)
    model.layers[0].W = model.layers[1].W = shared
    np.testing.assert_allclose(predict(model, X), model.forward(X), rtol=1e-12)
    model.layers[1].W = shared + 1.0
    np.testing.assert_allclose(predict(model, X), model.forward(X), rtol=1e-12)


class Slotted:
    __slots__ = ("W",)

    def __init__(self):
        self.W = np.ones((3, 3))


SLOTTED = [Slotted()]


@tracejit.jit
def slotted_predict(x):
    return x @ SLOTTED[0].W


def test_weights_of_a_slotted_layer_are_read_at_every_call():
    for _ in range(3):
        np.testing.assert_allclose(slotted_predict(X), X @ SLOTTED[0].W, rtol=1e-12)
        SLOTTED[0].W += 1.0
    SLOTTED[0].W = SLOTTED[0].W * 2.0
    np.testing.assert_allclose(slotted_predict(X), X @ SLOTTED[0].W, rtol=1e-12)


VJP_MODEL = _model(8)


def _vjp_loss(x):
    return VJP_MODEL.forward(x).sum()


def test_vjp_sees_a_rebound_layer_weight():
    for _ in range(3):
        out, pull = tracejit.vjp(_vjp_loss, X)
        np.testing.assert_allclose(out, _vjp_loss(X), rtol=1e-12)
        VJP_MODEL.layers[0].W = VJP_MODEL.layers[0].W * 0.5
