"""Bad input found by a bug hunt that crashed inside tracejit, gave a silently wrong answer, or
gave an error naming tracejit's own files instead of the user's line. Each error names this
file and the offending line, and says what to do."""
from __future__ import annotations

import inspect
import os
import warnings

import numpy as np
import pytest

import tracejit
from tracejit import jit
from tracejit import nn, optim
from tracejit.nn import functional as F

HERE = os.path.basename(__file__)


def next_line(n: int = 1) -> str:
    """``file:line`` of the line ``n`` below the one that calls next_line()."""
    return f"{HERE}:{inspect.currentframe().f_back.f_lineno + n}"


def line_of(fn, offset=1):
    """``file:line`` of the line ``offset`` lines below ``def`` in ``fn``'s source."""
    return f"{HERE}:{fn.__code__.co_firstlineno + offset}"


def _interp(fn, **kw):
    return jit(fn, backend="interpreter", **kw)


# -- autodiff API ---------------------------------------------------------------------------------

def test_jvp_refuses_arrays_for_primals_instead_of_iterating_them():
    """jvp(f, x, v) with arrays, not tuples, iterated x and v: f(a, b, c) of a 3-vector ran
    with its elements as three arguments, and gave a number for a wrong question."""
    def f(a, b, c):
        return a * b * c

    line = next_line(2)
    with pytest.raises(TypeError) as info:
        tracejit.jvp(f, np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 0.0]))
    msg = str(info.value)
    assert line in msg and "tuples or lists" in msg and "What to do" in msg, msg
    # the tuple form still works
    out, tangent = tracejit.jvp(f, (1.0, 2.0, 3.0), (1.0, 0.0, 0.0))
    assert (out, tangent) == (6.0, 6.0)


def test_vjp_cotangent_of_the_wrong_shape_names_the_call():
    out, pull = tracejit.vjp(lambda x: x * 2, np.ones(3))
    line = next_line(2)
    with pytest.raises(ValueError) as info:
        pull(np.ones(4))
    msg = str(info.value)
    assert line in msg and "shape" in msg and "What to do" in msg, msg


def test_grad_argnums_beyond_the_arguments_names_the_call():
    g = tracejit.grad(lambda x, y: (x * y).sum(), argnums=2)
    line = next_line(2)
    with pytest.raises(ValueError) as info:
        g(np.ones(3), np.ones(3))
    msg = str(info.value)
    assert line in msg and "argnums" in msg and "What to do" in msg, msg


# -- jit ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("thing", [np.ones(3), 3, None], ids=["array", "int", "None"])
def test_jit_of_something_not_callable_is_refused_where_jit_is_called(thing):
    """jit(x) made a JittedFunction that failed only when called ("'int' object is not
    callable"), and jit(None)(x), the decorator form, wrapped the array silently."""
    line = next_line(2)
    with pytest.raises(TypeError) as info:
        (jit(thing) if thing is not None else jit(None)(np.ones(3)))
    msg = str(info.value)
    assert line in msg and "expected a function" in msg and "What to do" in msg, msg


def test_traced_index_out_of_bounds_says_what_to_do():
    def f(x, i):
        return x[i] * 2

    with pytest.raises(IndexError) as info:
        jit(f, backend="numpy")(np.ones(3), np.array([0, 7]))
    msg = str(info.value)
    assert line_of(f) in msg and "What to do" in msg and "mode='clip'" in msg, msg


# -- control flow bodies called with the wrong arguments ------------------------------------------

@pytest.mark.parametrize("call, says", [
    (lambda x: tracejit.fori_loop(0, 3, lambda v: v + 1, x), "body_fun(i, val)"),
    (lambda x: tracejit.while_loop(lambda v: v.sum() < 9, lambda v, w: v + 1, x),
     "body_fun(val)"),
    (lambda x: tracejit.scan(lambda c: (c, c), x, x), "f(carry, x)"),
    (lambda x: tracejit.cond(x.sum() > 0, lambda a: a, lambda a: -a), "operands"),
    (lambda x: tracejit.cond(x.sum() > 0, x, -x), "not a function"),
    (lambda x: tracejit.switch(1, [lambda a: a, lambda a: -a]), "operands"),
], ids=["fori_loop", "while_loop", "scan", "cond", "cond_of_arrays", "switch"])
def test_control_flow_body_of_the_wrong_arity_names_the_call_and_the_signature(call, says):
    """Python's "<lambda>() takes 1 positional argument but 2 were given" named neither the
    loop nor the user's line, and its traceback ended inside tracejit."""
    with pytest.raises(tracejit.TracerError) as info:
        jit(call)(np.ones(3))
    msg = str(info.value)
    assert isinstance(info.value, TypeError)
    assert line_of(call, 0) in msg and says in msg and "What to do" in msg, msg


def test_control_flow_body_raising_its_own_type_error_is_unchanged():
    def body(i, v):
        return v + len(3)

    with pytest.raises(TypeError, match="has no len") as info:
        jit(lambda x: tracejit.fori_loop(0, 3, body, x))(np.ones(3))
    assert not isinstance(info.value, tracejit.TracerError)


# -- nn and optim: the error names the user's call, not tracejit/nn --------------------------------

def test_layer_shape_mismatch_names_the_line_that_called_the_model():
    """The matmul error inside nn.Linear named tracejit/nn/functional.py only."""
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))

    def f(model, x):
        return model(x)

    with pytest.raises(ValueError) as info:
        _interp(f)(model, np.ones((3, 5), np.float32))
    msg = str(info.value)
    assert line_of(f) in msg and "What to do" in msg, msg


def test_conv2d_channel_mismatch_names_the_callers_line_and_says_channels_first():
    conv = nn.Conv2d(3, 4, 3)
    line = next_line(2)
    with pytest.raises(ValueError) as info:
        conv(np.ones((2, 8, 8, 3), np.float32))
    msg = str(info.value)
    assert line in msg and "channels" in msg and "transpose" in msg, msg


def test_conv2d_and_pooling_of_one_image_follow_pytorchs_unbatched_input():
    """A (C, H, W) image crashed with "not enough values to unpack (expected 4, got 3)";
    PyTorch takes it as a batch of one."""
    conv = nn.Conv2d(2, 4, 3, padding=1, rng=np.random.default_rng(0))
    x = np.random.default_rng(1).standard_normal((2, 6, 6)).astype(np.float32)
    np.testing.assert_allclose(conv(x), conv(x[None])[0], rtol=1e-6)
    np.testing.assert_allclose(_interp(conv.forward)(x), conv(x[None])[0], rtol=1e-5)
    np.testing.assert_array_equal(F.max_pool2d(x, 2), F.max_pool2d(x[None], 2)[0])
    np.testing.assert_array_equal(F.avg_pool2d(x, 2), F.avg_pool2d(x[None], 2)[0])
    line = next_line(2)
    with pytest.raises(ValueError) as info:
        conv(np.ones((6, 6), np.float32))
    msg = str(info.value)
    assert line in msg and "(N, C, H, W)" in msg and "What to do" in msg, msg


def test_conv2d_kernel_larger_than_the_input_names_the_callers_line():
    conv = nn.Conv2d(1, 4, 3)

    def f(m, x):
        return m(x)

    with pytest.raises(ValueError) as info:
        _interp(f)(conv, np.ones((1, 1, 2, 2), np.float32))
    msg = str(info.value)
    assert line_of(f) in msg and "kernel" in msg and "What to do" in msg, msg


def test_cross_entropy_refuses_float_class_labels_instead_of_truncating_them():
    """Float targets of shape (N,) were cast to int: probabilities 0.7 became class 0 and
    the loss was silently wrong; PyTorch refuses them."""
    logits = np.array([[1.0, 2.0], [0.5, 0.0], [0.0, 3.0]])
    line = next_line(2)
    with pytest.raises(TypeError) as info:
        F.cross_entropy(logits, np.array([0.3, 0.7, 0.9]))
    msg = str(info.value)
    assert line in msg and "astype(np.int64)" in msg, msg

    def loss(z, y):
        return F.cross_entropy(z, y)

    with pytest.raises(TypeError) as info:
        _interp(loss)(logits, np.array([0.0, 1.0, 1.0]))
    assert line_of(loss) in str(info.value)
    # integer labels and class probabilities of the input's shape still work
    want = F.cross_entropy(logits, np.array([0, 1, 1]))
    assert np.isclose(_interp(loss)(logits, np.array([0, 1, 1], np.int32)), want)
    assert np.isclose(F.cross_entropy(logits, np.eye(2)[[0, 1, 1]]), want)


def test_cross_entropy_batch_size_mismatch_names_the_callers_line():
    line = next_line(2)
    with pytest.raises(ValueError, match="batch_size") as info:
        F.nll_loss(np.zeros((3, 2)), np.array([0, 1]))
    msg = str(info.value)
    assert line in msg and "What to do" in msg, msg


def test_mse_loss_of_different_shapes_warns_at_the_callers_line_as_pytorch():
    """(N, 1) predictions against (N,) targets broadcast to N * N differences: a silently
    wrong loss (PyTorch warns)."""
    line = next_line(2)
    with pytest.warns(UserWarning, match="shapes differ") as record:
        got = F.mse_loss(np.ones((3, 1)), np.arange(3.0))
    assert got == pytest.approx(((np.ones((3, 1)) - np.arange(3.0)) ** 2).mean())
    assert [(os.path.basename(w.filename), w.lineno) for w in record] == [
        (HERE, int(line.rsplit(":", 1)[1]))]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert F.mse_loss(np.ones(3), np.arange(3.0)) == pytest.approx(2 / 3)


def test_optimizer_state_of_another_model_names_the_update_line():
    opt = optim.Adam(lr=1e-3)
    state = opt.init([np.ones(3)])
    params = [np.ones(4)]
    line = next_line(2)
    with pytest.raises(ValueError) as info:
        opt.update([np.ones(4)], state, params)
    msg = str(info.value)
    assert line in msg and "init(params)" in msg, msg


def test_a_transform_of_something_not_callable_is_refused_where_it_is_made():
    """grad(3) and vjp(x, f) failed only when called, with "'int' object is not callable"."""
    for make in (lambda: tracejit.grad(3), lambda: tracejit.jacfwd(np.ones(2)),
                 lambda: tracejit.hessian(None), lambda: tracejit.value_and_grad(1.5)):
        with pytest.raises(TypeError, match="expected a function to differentiate"):
            make()
    with pytest.raises(TypeError, match=r"vjp\(f, x\)"):
        tracejit.vjp(np.ones(3), np.sin)


def test_a_string_or_float_index_raises_numpys_index_error_naming_the_line():
    for index in ("a", 1.5):
        with pytest.raises(IndexError, match="valid indices") as info:
            tracejit.jit(lambda x: x[index])(np.ones(3))
        assert os.path.basename(__file__) in str(info.value)


def test_a_traced_index_into_an_array_that_is_not_traced_says_to_pass_the_array():
    """``m.emb[ids]`` (an array read through an attribute is a constant NumPy indexes itself)
    said to mark an argument static, which does not fit."""
    class Model:
        pass
    m = Model()
    m.emb = np.arange(12.0).reshape(6, 2)
    for f, arg in ((lambda ids: m.emb[ids].sum(), np.array([1, 2])),
                   (lambda i: m.emb[i:i + 2].sum(), 1)):
        with pytest.raises(tracejit.ConcretizationError, match="pass the array as an argument"):
            tracejit.jit(f)(arg)
