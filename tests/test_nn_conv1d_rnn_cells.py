"""nn.Conv1d / F.conv1d (stride, padding incl. 'same' / 'valid', dilation, groups, bias,
padding modes) and the recurrent cells RNNCell, GRUCell, LSTMCell: torch's formulas,
parameter names, shapes and initialisation.

NumPy transcriptions of torch's formulas always run; torch itself (forward and gradients,
float64 and float32) where it is installed. Jitted checks run on the reference interpreter,
the eager gradients on the compiled backend."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tracejit
from tracejit import nn
from tracejit.nn import functional as F

RNG = np.random.default_rng(1)
SIG = RNG.standard_normal((2, 4, 7))          # (N, C, L)


def _interp(fn):
    return tracejit.jit(fn, backend="interpreter")


# -- NumPy references written from torch's documentation ----------------------------------------

def ref_conv1d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """out[n, o, t] = b[o] + sum_{c in o's group, k} w[o, c, k] x[n, c, t * stride + k *
    dilation - padding] (zeros outside the signal), by loops."""
    n, c, length = x.shape
    o, cg, kw = w.shape
    if padding == "same":                     # the odd element of the padding on the right
        total = dilation * (kw - 1)
        left = total // 2
    elif padding == "valid":
        left = total = 0
    else:
        left, total = padding, 2 * padding
    out_len = (length + total - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, o, out_len))
    og = o // groups
    for i in range(n):
        for oc in range(o):
            g = oc // og
            for t in range(out_len):
                acc = 0.0 if b is None else b[oc]
                for ci in range(cg):
                    for k in range(kw):
                        pos = t * stride + k * dilation - left
                        if 0 <= pos < length:
                            acc += w[oc, ci, k] * x[i, g * cg + ci, pos]
                out[i, oc, t] = acc
    return out


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def ref_cells(cell, x, h, c=None):
    """torch's documented RNNCell / GRUCell / LSTMCell step."""
    gi = x @ cell.weight_ih.T + cell.bias_ih
    gh = h @ cell.weight_hh.T + cell.bias_hh
    if isinstance(cell, nn.RNNCell):
        return np.tanh(gi + gh)
    if isinstance(cell, nn.GRUCell):
        hs = cell.hidden_size
        r = _sigmoid(gi[:, :hs] + gh[:, :hs])
        z = _sigmoid(gi[:, hs:2 * hs] + gh[:, hs:2 * hs])
        nn_ = np.tanh(gi[:, 2 * hs:] + r * gh[:, 2 * hs:])
        return (1 - z) * nn_ + z * h
    i, f, g, o = np.split(gi + gh, 4, axis=1)
    c2 = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    return _sigmoid(o) * np.tanh(c2), c2


# -- conv1d against NumPy ------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1), dict(dilation=2, padding=2),
                                dict(groups=2, padding="same", dilation=2),
                                dict(padding="same", k=4), dict(padding="valid", stride=3)])
def test_conv1d_matches_numpy_loops(kw):
    groups, k = kw.get("groups", 1), kw.pop("k", 3)
    w = RNG.standard_normal((6, 4 // groups, k))
    b = RNG.standard_normal(6)
    want = ref_conv1d(SIG, w, b, **kw)
    np.testing.assert_allclose(F.conv1d(SIG, w, b, **kw), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(F.conv1d(SIG[0], w, b, **kw), want[0], rtol=1e-12, atol=1e-12)


def test_conv1d_layer_init_jit_and_padding_modes():
    conv = nn.Conv1d(4, 6, 3, stride=1, padding=1, groups=2, dtype=np.float64,
                     rng=np.random.default_rng(0))
    assert conv.weight.shape == (6, 2, 3) and conv.bias.shape == (6,)
    bound = 1 / math.sqrt(2 * 3)
    assert np.abs(conv.weight).max() <= bound and np.abs(conv.bias).max() <= bound
    want = ref_conv1d(SIG, conv.weight, conv.bias, padding=1, groups=2)
    np.testing.assert_allclose(_interp(lambda x: conv(x))(SIG), want, rtol=1e-12, atol=1e-12)
    circular = nn.Conv1d(4, 6, 3, padding=1, padding_mode="circular", dtype=np.float64,
                         rng=np.random.default_rng(1))
    wrapped = np.concatenate([SIG[:, :, -1:], SIG, SIG[:, :, :1]], axis=2)
    np.testing.assert_allclose(circular(SIG),
                               ref_conv1d(wrapped, circular.weight, circular.bias),
                               rtol=1e-12, atol=1e-12)
    assert nn.Conv1d(4, 2, 3, bias=False).bias is None


def test_conv1d_errors_name_the_problem():
    w = np.ones((6, 4, 3))
    with pytest.raises(ValueError, match="2-D .unbatched. or 3-D"):
        F.conv1d(np.ones((1, 1, 4, 7)), w)
    with pytest.raises(ValueError, match="weight must be 3-D"):
        F.conv1d(SIG, np.ones((6, 4, 3, 3)))
    with pytest.raises(ValueError, match="has 4 channels, but the weight"):
        F.conv1d(SIG, np.ones((6, 3, 3)))
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        F.conv1d(SIG, w, padding="same", stride=2)
    with pytest.raises(ValueError, match="smaller than the kernel"):
        F.conv1d(SIG[:, :, :2], w)


# -- cells against NumPy -------------------------------------------------------------------------

@pytest.mark.parametrize("cls,gates", [(nn.RNNCell, 1), (nn.GRUCell, 3), (nn.LSTMCell, 4)])
def test_cells_parameters_init_and_formulas(cls, gates):
    cell = cls(5, 3, dtype=np.float64, rng=np.random.default_rng(2))
    names = [n for n, _ in cell.named_parameters()]
    assert names == ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]
    assert cell.weight_ih.shape == (gates * 3, 5) and cell.weight_hh.shape == (gates * 3, 3)
    assert max(np.abs(p).max() for p in cell.parameters()) <= 1 / math.sqrt(3)
    assert nn.RNNCell(5, 3).weight_ih.dtype == np.float32
    x, h, c = RNG.standard_normal((2, 5)), RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))
    if cls is nn.LSTMCell:
        got, want = cell(x, (h, c)), ref_cells(cell, x, h, c)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-12)
        zero = cell(x)                             # hx None: zeros
        np.testing.assert_allclose(zero[1], ref_cells(cell, x, 0 * h, 0 * c)[1], rtol=1e-12,
                                   atol=1e-12)
        one = cell(x[0], (h[0], c[0]))             # one unbatched sample
        np.testing.assert_allclose(one[0], want[0][0], rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_allclose(cell(x, h), ref_cells(cell, x, h), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(cell(x), ref_cells(cell, x, 0 * h), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(cell(x[1], h[1]), ref_cells(cell, x, h)[1], rtol=1e-12,
                                   atol=1e-12)
    with pytest.raises(ValueError, match="inconsistent input_size: got 4 expected 5"):
        cell(np.ones((2, 4)))
    with pytest.raises(ValueError, match="Input batch size 2 doesn't match hidden batch size 3"):
        cell(x, (np.ones((3, 3)), np.ones((3, 3))) if cls is nn.LSTMCell else np.ones((3, 3)))


def test_rnn_cell_relu_and_a_jitted_unrolled_sequence():
    cell = nn.RNNCell(5, 3, nonlinearity="relu", dtype=np.float64)
    xs = RNG.standard_normal((4, 2, 5))
    h = np.zeros((2, 3))
    for x in xs:
        h = np.maximum(x @ cell.weight_ih.T + cell.bias_ih + h @ cell.weight_hh.T
                       + cell.bias_hh, 0)

    def unrolled(cell, xs):
        h = None
        for x in xs:
            h = cell(x, h)
        return h
    np.testing.assert_allclose(_interp(unrolled)(cell, xs), h, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="Unknown nonlinearity"):
        nn.RNNCell(2, 2, nonlinearity="gelu")


# -- against torch -----------------------------------------------------------------------------

class Sequence(nn.Module):
    """Conv1d layers then the three cells over the convolved sequence, in one loss."""

    def __init__(self, dtype):
        self.conv = nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2, dtype=dtype)
        self.same = nn.Conv1d(6, 5, 2, padding="same", dtype=dtype)
        self.rnn = nn.RNNCell(5, 3, dtype=dtype)
        self.gru = nn.GRUCell(3, 3, dtype=dtype)
        self.lstm = nn.LSTMCell(3, 2, dtype=dtype)

    def forward(self, x):
        seq = self.same(self.conv(x))             # (N, 5, L')
        h = hg = None
        hc = None
        for t in range(seq.shape[2]):
            h = self.rnn(seq[:, :, t], h)
            hg = self.gru(h, hg)
            hc = self.lstm(hg, hc)
        return hc[0] * hc[1]


def _torch_sequence(ours):
    torch = pytest.importorskip("torch")
    t = torch.nn.ModuleDict({
        "conv": torch.nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2),
        "same": torch.nn.Conv1d(6, 5, 2, padding="same"), "rnn": torch.nn.RNNCell(5, 3),
        "gru": torch.nn.GRUCell(3, 3), "lstm": torch.nn.LSTMCell(3, 2)})
    dtype = {np.float64: torch.float64, np.float32: torch.float32}[ours.conv.weight.dtype.type]
    t = t.to(dtype)
    t.load_state_dict({k: torch.tensor(v) for k, v in ours.state_dict().items()})

    def forward(x):
        seq = t["same"](t["conv"](x))
        h = hg = hc = None
        for i in range(seq.shape[2]):
            h = t["rnn"](seq[:, :, i], h)
            hg = t["gru"](h, hg)
            hc = t["lstm"](hg, hc)
        return hc[0] * hc[1]
    return torch, t, forward


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 1e-5)])
def test_conv1d_and_cells_forward_and_gradients_match_torch(dtype, tol):
    model = Sequence(dtype)
    torch, t, t_forward = _torch_sequence(model)
    x = SIG.astype(dtype)
    weights = RNG.standard_normal((2, 2)).astype(dtype)

    def loss(m, x):
        return (m(x) * weights).sum()

    xt = torch.tensor(x, requires_grad=True)
    tv = (t_forward(xt) * torch.tensor(weights)).sum()
    tv.backward()
    grads = {name: p.grad.numpy() for name, p in t.named_parameters()}
    scale = max(1.0, max(np.abs(g).max() for g in grads.values()))

    def check(value, g_model, g_x):
        assert abs(float(value) - tv.item()) <= tol * max(1.0, abs(tv.item()))
        assert np.abs(g_x - xt.grad.numpy()).max() <= tol * scale
        for name, g in g_model.named_parameters():
            assert np.abs(g - grads[name]).max() <= tol * scale, name

    np.testing.assert_allclose(model(x), t_forward(torch.tensor(x)).detach().numpy(),
                               rtol=tol, atol=tol)
    both = (lambda m, x: tracejit.value_and_grad(loss, argnums=(0, 1))(m, x))
    check(*_flat(both(model, x)))                  # eager: grad compiles its trace
    check(*_flat(_interp(both)(model, x)))         # under jit


def _flat(out):
    value, (g_model, g_x) = out
    return value, g_model, g_x


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 1e-5)])
def test_conv1d_function_matches_torch(dtype, tol):
    torch = pytest.importorskip("torch")
    x = SIG.astype(dtype)
    for kw, k in [(dict(stride=2, padding=1, dilation=2, groups=2), 3),
                  (dict(padding="same", dilation=3), 2), (dict(padding="valid"), 4)]:
        w = RNG.standard_normal((6, 4 // kw.get("groups", 1), k)).astype(dtype)
        b = RNG.standard_normal(6).astype(dtype)
        want = torch.nn.functional.conv1d(torch.tensor(x), torch.tensor(w), torch.tensor(b), **kw)
        np.testing.assert_allclose(F.conv1d(x, w, b, **kw), want.numpy(), rtol=tol, atol=tol)
