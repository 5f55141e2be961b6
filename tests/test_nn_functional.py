"""tracejit.nn.functional against independent NumPy/SciPy transcriptions of PyTorch's definitions:
eagerly (float64 and float32), under jit, and its gradients (grad, jvp) against central finite
differences in float64. Shapes are small and shared so compiled kernels are reused."""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest
from scipy import special

import tracejit
from tracejit.nn import functional as F


# -- independent references (loops over output positions, written from PyTorch's docs) ---------

def ref_linear(x, w, b=None):
    out = np.einsum("...i,oi->...o", x, w)
    return out if b is None else out + b


def ref_conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1, extra=(0, 0)):
    """extra: more padding on the bottom and on the right only."""
    sh, sw = (stride, stride) if np.isscalar(stride) else stride
    ph, pw = (padding, padding) if np.isscalar(padding) else padding
    dh, dw = (dilation, dilation) if np.isscalar(dilation) else dilation
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.zeros((n, c, h + 2 * ph + extra[0], wd + 2 * pw + extra[1]), np.float64)
    xp[:, :, ph:ph + h, pw:pw + wd] = x
    oh = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for oc in range(o):
        g = oc // og
        for i in range(oh):
            for j in range(ow):
                for ki in range(kh):
                    for kj in range(kw):
                        out[:, oc, i, j] += (xp[:, g * cg:(g + 1) * cg, i * sh + ki * dh,
                                                j * sw + kj * dw] @ w[oc, :, ki, kj])
    if b is not None:
        out += b[None, :, None, None]
    return out


def _pool_ref(x, k, stride, padding, reduce, dilation=1):
    """reduce(window elements inside the input, the window's size) for each output position."""
    kh, kw = (k, k) if np.isscalar(k) else k
    stride = k if stride is None else stride
    sh, sw = (stride, stride) if np.isscalar(stride) else stride
    ph, pw = (padding, padding) if np.isscalar(padding) else padding
    n, c, h, w = x.shape
    oh = (h + 2 * ph - dilation * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dilation * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            rows = [i * sh - ph + a * dilation for a in range(kh)]
            cols = [j * sw - pw + b * dilation for b in range(kw)]
            rows = [r for r in rows if 0 <= r < h]
            cols = [q for q in cols if 0 <= q < w]
            out[:, :, i, j] = reduce(x[:, :, rows][:, :, :, cols], kh * kw)
    return out


def ref_max_pool2d(x, k, stride=None, padding=0, dilation=1):
    return _pool_ref(x, k, stride, padding, lambda win, _: win.max(axis=(2, 3)), dilation)


def ref_avg_pool2d(x, k, stride=None, padding=0, count_include_pad=True, divisor=None):
    def reduce(win, size):
        d = divisor or (size if count_include_pad else win.shape[2] * win.shape[3])
        return win.sum(axis=(2, 3)) / d
    return _pool_ref(x, k, stride, padding, reduce)


def ref_gelu(x):
    return x * 0.5 * (1.0 + special.erf(x / math.sqrt(2.0)))


def ref_gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def ref_cross_entropy(logits, target):
    logp = special.log_softmax(np.asarray(logits, np.float64), axis=1)
    return -np.mean(logp[np.arange(len(target)), target])


def ref_layer_norm(x, shape, w=None, b=None, eps=1e-5):
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)        # biased, as PyTorch
    out = (x - mu) / np.sqrt(var + eps)
    if w is not None:
        out = out * w
    if b is not None:
        out = out + b
    return out


# -- the cases ----------------------------------------------------------------------------------

R = np.random.default_rng(20240601)
X = R.standard_normal((2, 4, 6, 6))             # NCHW image batch, shared by most cases
WC = R.standard_normal((6, 4, 3, 3)) * 0.3
WG = R.standard_normal((6, 2, 3, 3)) * 0.3      # groups=2
WR = R.standard_normal((6, 4, 3, 2)) * 0.3      # rectangular kernel
B6 = R.standard_normal(6)
XL = R.standard_normal((3, 5))
WL = R.standard_normal((4, 5))
B4 = R.standard_normal(4)
LOGITS = R.standard_normal((5, 4)) * 2
TARGET = np.array([0, 3, 1, 3, 2], np.int64)
LN_W = R.standard_normal((6, 6)) + 1
LN_B = R.standard_normal((6, 6))


@dataclass
class Case:
    name: str
    fn: Callable            # the functional under test (static options bound)
    ref: Callable           # the independent reference
    args: tuple
    diff: tuple = (0,)      # differentiable argument positions


CASES = [
    Case("linear", F.linear, ref_linear, (XL, WL, B4), (0, 1, 2)),
    Case("linear_no_bias", F.linear, ref_linear, (XL, WL), (0, 1)),
    Case("conv2d", F.conv2d, ref_conv2d, (X, WC, B6), (0, 1, 2)),
    Case("conv2d_stride2_pad1", lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1),
         lambda x, w, b: ref_conv2d(x, w, b, 2, 1), (X, WC, B6), (0, 1, 2)),
    Case("conv2d_dilation2_pad2", lambda x, w: F.conv2d(x, w, padding=2, dilation=2),
         lambda x, w: ref_conv2d(x, w, None, 1, 2, 2), (X, WC), (0, 1)),
    Case("conv2d_groups2", lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=2),
         lambda x, w, b: ref_conv2d(x, w, b, 1, 1, 1, 2), (X, WG, B6), (0, 1, 2)),
    Case("conv2d_rect_kernel_stride_pad",
         lambda x, w: F.conv2d(x, w, stride=(2, 1), padding=(0, 1), dilation=(1, 2)),
         lambda x, w: ref_conv2d(x, w, None, (2, 1), (0, 1), (1, 2)), (X, WR), (0, 1)),
    Case("conv2d_padding_same_even_kernel", lambda x, w: F.conv2d(x, w, padding="same"),
         lambda x, w: ref_conv2d(x, w, None, 1, (1, 0), 1, 1, extra=(0, 1)), (X, WR),
         (0, 1)),
    Case("conv2d_padding_same_dilated", lambda x, w: F.conv2d(x, w, padding="same",
                                                             dilation=2),
         lambda x, w: ref_conv2d(x, w, None, 1, 2, 2), (X, WC), (0, 1)),
    Case("max_pool2d", lambda x: F.max_pool2d(x, 2), lambda x: ref_max_pool2d(x, 2), (X,)),
    Case("max_pool2d_dilation2", lambda x: F.max_pool2d(x, 2, 1, 1, dilation=2),
         lambda x: ref_max_pool2d(x, 2, 1, 1, dilation=2), (X,)),
    Case("max_pool2d_k3_s2_p1", lambda x: F.max_pool2d(x, 3, stride=2, padding=1),
         lambda x: ref_max_pool2d(x, 3, 2, 1), (X,)),
    Case("avg_pool2d", lambda x: F.avg_pool2d(x, 2), lambda x: ref_avg_pool2d(x, 2), (X,)),
    Case("avg_pool2d_k3_s2_p1", lambda x: F.avg_pool2d(x, 3, stride=2, padding=1),
         lambda x: ref_avg_pool2d(x, 3, 2, 1), (X,)),
    Case("avg_pool2d_exclude_pad", lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
         lambda x: ref_avg_pool2d(x, 3, 2, 1, count_include_pad=False), (X,)),
    Case("avg_pool2d_divisor_override", lambda x: F.avg_pool2d(x, 2, divisor_override=3),
         lambda x: ref_avg_pool2d(x, 2, divisor=3), (X,)),
    Case("relu", F.relu, lambda x: np.where(x > 0, x, 0.0), (X,)),
    Case("gelu_erf", F.gelu, ref_gelu, (X,)),
    Case("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), ref_gelu_tanh, (X,)),
    Case("sigmoid", F.sigmoid, special.expit, (X,)),
    Case("tanh", F.tanh, np.tanh, (X,)),
    Case("softmax_dim1", lambda x: F.softmax(x, dim=1), lambda x: special.softmax(x, axis=1),
         (X,)),
    Case("softmax_dim_neg1", lambda x: F.softmax(x, -1), lambda x: special.softmax(x, axis=-1),
         (LOGITS,)),
    Case("log_softmax_dim1", lambda x: F.log_softmax(x, dim=1),
         lambda x: special.log_softmax(x, axis=1), (LOGITS,)),
    Case("log_softmax_dim0", lambda x: F.log_softmax(x, 0),
         lambda x: special.log_softmax(x, axis=0), (X,)),
    Case("cross_entropy", F.cross_entropy, ref_cross_entropy, (LOGITS, TARGET)),
    Case("mse_loss", F.mse_loss, lambda a, b: np.mean((a - b) ** 2), (XL, XL[::-1].copy()),
         (0, 1)),
    Case("layer_norm_affine", lambda x, w, b: F.layer_norm(x, (6, 6), w, b),
         lambda x, w, b: ref_layer_norm(x, (6, 6), w, b), (X, LN_W, LN_B), (0, 1, 2)),
    Case("layer_norm_last_dim_eps", lambda x: F.layer_norm(x, 5, eps=1e-3),
         lambda x: ref_layer_norm(x, (5,), eps=1e-3), (XL,)),
]
IDS = [c.name for c in CASES]


def _as(args, dtype):
    return tuple(a.astype(dtype) if a.dtype.kind == "f" else a for a in args)


# -- values -------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_eager_float64_matches_pytorch_definition(case):
    got = case.fn(*case.args)
    np.testing.assert_allclose(got, case.ref(*case.args), rtol=1e-10, atol=1e-12)
    assert np.shape(got) == np.shape(case.ref(*case.args))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_eager_float32_keeps_dtype_and_matches(case):
    args = _as(case.args, np.float32)
    got = case.fn(*args)
    assert np.asarray(got).dtype == np.float32
    np.testing.assert_allclose(got, case.ref(*case.args), rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_jit_equals_eager(case):
    args = _as(case.args, np.float32)
    eager = np.asarray(case.fn(*args))
    out = np.asarray(tracejit.jit(case.fn)(*args))
    assert out.dtype == eager.dtype and out.shape == eager.shape
    np.testing.assert_allclose(out, eager, rtol=1e-5, atol=1e-6)


# -- gradients ----------------------------------------------------------------------------------

def _cotangent(case):
    out = np.asarray(case.fn(*case.args))
    return np.random.default_rng(len(case.name)).standard_normal(out.shape)


def _central_difference(f, args, i, eps=1e-6):
    args = list(args)
    x = args[i]
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        g[idx] = (f(*args[:i], xp, *args[i + 1:]) - f(*args[:i], xm, *args[i + 1:])) / (2 * eps)
    return g


# The transforms are checked on the reference interpreter (the IR's semantics; no kernels to
# compile). Compiled gradients: the next test, tests/test_nn_module.py and tests/test_optim.py.
def _on_interpreter(fn):
    return tracejit.jit(fn, backend="interpreter")


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_grad_matches_central_differences(case):
    ct = _cotangent(case)

    def loss(*args):
        return (case.fn(*args) * ct).sum()

    grads = _on_interpreter(tracejit.grad(loss, argnums=case.diff))(*case.args)
    assert len(grads) == len(case.diff)
    for i, g in zip(case.diff, grads):
        assert g.shape == case.args[i].shape and g.dtype == np.float64
        np.testing.assert_allclose(g, _central_difference(loss, case.args, i), rtol=1e-5,
                                   atol=1e-6, err_msg=f"d/d arg {i}")


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_jvp_matches_central_differences(case):
    rng = np.random.default_rng(7)
    diff_args = tuple(case.args[i] for i in case.diff)
    diff_tangents = tuple(rng.standard_normal(a.shape) for a in diff_args)

    def f(*diff):
        full = list(case.args)
        for i, a in zip(case.diff, diff):
            full[i] = a
        return case.fn(*full)

    out, tan = _on_interpreter(lambda p, t: tracejit.jvp(f, p, t))(diff_args, diff_tangents)
    np.testing.assert_allclose(out, case.fn(*case.args), rtol=1e-12, atol=1e-12)
    eps = 1e-6
    plus = f(*[a + eps * t for a, t in zip(diff_args, diff_tangents)])
    minus = f(*[a - eps * t for a, t in zip(diff_args, diff_tangents)])
    np.testing.assert_allclose(tan, (plus - minus) / (2 * eps), rtol=1e-5, atol=1e-6)


def test_grad_inside_jit_equals_grad_outside():
    """The same conv -> relu -> max_pool -> cross-entropy gradient, traced inside one jit."""
    def loss(w, b, x, t):
        h = F.max_pool2d(F.relu(F.conv2d(x, w, b, padding=1)), 2)
        return F.cross_entropy(h.reshape(h.shape[0], -1)[:, :4], t)

    t = np.array([1, 2], np.int64)
    outside = tracejit.grad(loss, argnums=(0, 1))(WC, B6, X, t)
    inside = tracejit.jit(tracejit.grad(loss, argnums=(0, 1)))(WC, B6, X, t)
    for a, b in zip(outside, inside):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(outside[0], _central_difference(
        lambda w: loss(w, B6, X, t), (WC,), 0), rtol=1e-5, atol=1e-7)


# -- conv2d / pooling specifics ------------------------------------------------------------------

def test_conv2d_rejects_channel_mismatch_with_groups():
    with pytest.raises(ValueError, match="channels"):
        F.conv2d(X, WC, groups=2)


def test_conv2d_output_shape_follows_pytorch_formula():
    out = F.conv2d(np.zeros((1, 4, 7, 9)), np.zeros((3, 4, 3, 3)), stride=(2, 3), padding=(1, 2),
                   dilation=(2, 1))
    # floor((H + 2p - d(k-1) - 1) / s) + 1
    assert out.shape == (1, 3, (7 + 2 - 4 - 1) // 2 + 1, (9 + 4 - 2 - 1) // 3 + 1)


def test_conv2d_padding_strings_follow_pytorch():
    assert F.conv2d(X, WC, padding="valid").shape == (2, 6, 4, 4)
    assert F.conv2d(X, WR, padding="same").shape == X.shape[:1] + (6,) + X.shape[2:]
    with pytest.raises(ValueError, match="strided"):
        F.conv2d(X, WC, stride=2, padding="same")
    with pytest.raises(ValueError, match="Invalid padding string"):
        F.conv2d(X, WC, padding="full")


def test_pooling_rejects_ceil_mode():
    with pytest.raises(ValueError, match="ceil_mode"):
        F.max_pool2d(X, 2, ceil_mode=True)
    with pytest.raises(ValueError, match="ceil_mode"):
        F.avg_pool2d(X, 2, 2, 0, True)


def test_max_pool2d_padding_never_wins_over_negative_inputs():
    x = -1.0 - np.abs(R.standard_normal((1, 1, 4, 4)))
    out = F.max_pool2d(x, 3, stride=2, padding=1)
    assert (out < -1.0).all()
    np.testing.assert_array_equal(out, ref_max_pool2d(x, 3, 2, 1))


def test_avg_pool2d_counts_padding_in_the_divisor():
    out = F.avg_pool2d(np.ones((1, 1, 2, 2)), 2, stride=1, padding=1)
    np.testing.assert_allclose(out[0, 0], [[0.25, 0.5, 0.25], [0.5, 1.0, 0.5],
                                           [0.25, 0.5, 0.25]])


# -- activations, losses ------------------------------------------------------------------------

def test_gelu_rejects_unknown_approximation():
    with pytest.raises(ValueError, match="approximate"):
        F.gelu(X, approximate="fast")


def test_gelu_erf_and_tanh_forms_differ_slightly():
    exact, approx = F.gelu(X), F.gelu(X, approximate="tanh")
    assert 0 < np.abs(exact - approx).max() < 1e-3


def test_sigmoid_saturates_without_overflow_warnings():
    x = np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = F.sigmoid(x)
    np.testing.assert_allclose(out, special.expit(x.astype(np.float64)), atol=1e-7)
    np.testing.assert_allclose(tracejit.jit(F.sigmoid)(x), out, atol=1e-7)


def test_softmax_is_stable_for_large_logits():
    x = np.array([[1000.0, 1001.0, 1002.0]], np.float32)
    out = F.softmax(x, dim=1)
    np.testing.assert_allclose(out, special.softmax([[0.0, 1.0, 2.0]], axis=1), rtol=1e-6)
    np.testing.assert_allclose(F.log_softmax(x, 1), special.log_softmax([[0.0, 1.0, 2.0]], 1),
                               rtol=1e-6)


def test_cross_entropy_of_confident_correct_logits_is_near_zero():
    logits = np.eye(4, dtype=np.float32) * 50
    assert F.cross_entropy(logits, np.arange(4)) < 1e-6
    assert abs(F.cross_entropy(np.zeros((3, 4)), np.array([0, 1, 2])) - math.log(4)) < 1e-12


def test_cross_entropy_accepts_int32_targets_under_jit():
    got = tracejit.jit(F.cross_entropy)(LOGITS.astype(np.float32), TARGET.astype(np.int32))
    np.testing.assert_allclose(got, ref_cross_entropy(LOGITS, TARGET), rtol=1e-5)


def test_cross_entropy_gradient_is_softmax_minus_one_hot_over_n():
    g = tracejit.grad(F.cross_entropy)(LOGITS, TARGET)
    expected = (special.softmax(LOGITS, axis=1) - np.eye(4)[TARGET]) / len(TARGET)
    np.testing.assert_allclose(g, expected, rtol=1e-12, atol=1e-14)


# -- one_hot ------------------------------------------------------------------------------------

def test_one_hot_is_int64_with_a_trailing_class_axis():
    t = np.array([[0, 2], [1, 1]])
    out = F.one_hot(t, 3)
    assert out.dtype == np.int64 and out.shape == (2, 2, 3)
    np.testing.assert_array_equal(out, np.eye(3, dtype=np.int64)[t])


def test_one_hot_under_jit_equals_eager():
    t = np.array([3, 0, 1], np.int64)
    out = tracejit.jit(F.one_hot, static_argnums=1)(t, 4)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, F.one_hot(t, 4))


# -- dropout ------------------------------------------------------------------------------------

XD = np.ones((64, 128), np.float32)


def test_dropout_same_seed_same_mask_and_new_seed_new_mask():
    a, b, c = F.dropout(XD, 0.5, seed=1), F.dropout(XD, 0.5, seed=1), F.dropout(XD, 0.5, seed=2)
    np.testing.assert_array_equal(a, b)
    assert (a != c).mean() > 0.3          # independent masks differ on about half the entries


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_drops_about_p_and_scales_the_rest_by_one_over_one_minus_p(p):
    out = F.dropout(XD, p, seed=3)
    assert out.dtype == np.float32
    dropped = out == 0
    assert abs(dropped.mean() - p) < 0.03
    np.testing.assert_allclose(out[~dropped], 1.0 / (1.0 - p), rtol=1e-6)


def test_dropout_masks_of_consecutive_seeds_are_uncorrelated():
    masks = np.stack([F.dropout(XD, 0.5, seed=s) == 0 for s in range(8)]).reshape(8, -1)
    corr = np.corrcoef(masks.astype(np.float64))
    assert np.abs(corr[np.triu_indices(8, 1)]).max() < 0.05


def test_dropout_eval_mode_and_p_zero_are_identity_and_p_one_zeroes():
    np.testing.assert_array_equal(F.dropout(X, 0.5, training=False, seed=1), X)
    np.testing.assert_array_equal(F.dropout(X, 0.0, seed=1), X)
    np.testing.assert_array_equal(F.dropout(X, 1.0, seed=1), np.zeros_like(X))
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(X, 1.5)


def test_dropout_under_jit_equals_eager_and_a_traced_seed_does_not_retrace():
    f = tracejit.jit(lambda x, seed: F.dropout(x, 0.25, seed=seed))
    for s in (0, 5, 123456789):
        np.testing.assert_array_equal(f(XD, np.int64(s)), F.dropout(XD, 0.25, seed=s))
    assert f.trace_count == 1


def test_dropout_gradient_is_the_scaled_mask():
    g = tracejit.grad(lambda x: F.dropout(x, 0.25, seed=9).sum())(X)
    np.testing.assert_allclose(g, F.dropout(np.ones_like(X), 0.25, seed=9))
