"""Differential tests: NumPy model code run under tracejit.jit must equal running it eagerly.

Each case is a snippet of the kind found in real model code. It runs once eagerly on NumPy
arrays and once jitted on the same arrays; the results must have the same pytree structure,
dtypes and shapes, and the same values (within floating-point tolerance). Float cases run in
float32 and float64 (some in float16 too), so type promotion (NEP 50, Python scalars weak) is
checked in each.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest
import scipy.special

import tracejit
from tracejit.scipy import special as tj_special
from tracejit.scipy.stats import multivariate_normal, norm


@dataclass
class Case:
    name: str
    fn: Callable
    make: Callable          # (dtype, rng) -> tuple of arguments
    dtypes: tuple = ("float32", "float64")


CASES: list[Case] = []


def case(make, dtypes=("float32", "float64")):
    def register(fn):
        CASES.append(Case(fn.__name__, fn, make, dtypes))
        return fn
    return register


# benchmarks/differential.py runs every case at realistic sizes by raising SCALE: each dim
# above 1 that the helpers below make (and the cases' own `sized` shapes) is multiplied by it.
# Size-1 dims stay 1 (squeeze). The tests run at SCALE = 1.
SCALE = 1


def sized(*shape):
    return tuple(d * SCALE if d > 1 else d for d in shape)


def randn(*shape):
    return lambda dt, rng: rng.standard_normal(sized(*shape)).astype(dt)


def args(*makers):
    return lambda dt, rng: tuple(m(dt, rng) for m in makers)


def labels(n, k, dtype=np.int64):
    return lambda dt, rng: rng.integers(0, sized(k)[0], sized(n)).astype(dtype)


def ints(*shape, lo=-20, hi=20, dtype=np.int64):
    return lambda dt, rng: rng.integers(lo, hi, sized(*shape)).astype(dtype)


def nonzero_ints(*shape, dtype=np.int64):
    def make(dt, rng):
        x = rng.integers(1, 9, sized(*shape)) * rng.choice([-1, 1], sized(*shape))
        return x.astype(dtype)
    return make


INT_ONLY = ("int64",)
# float16 too: NumPy's own float16 eagerly, tracejit's kernels on uint16 bits (a sample:
# every case passes in float16 at the tolerance below, but each is one more compile)
WITH_FLOAT16 = ("float32", "float64", "float16")

# --- activations and normalisation ------------------------------------------------------------


@case(args(randn(4, 10)), dtypes=WITH_FLOAT16)
def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@case(args(randn(4, 10)))
def log_softmax(x):
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=1, keepdims=True))


@case(args(randn(3, 5, 7)))
def logsumexp(x):
    m = np.max(x, axis=-1)
    return m + np.log(np.exp(x - m[..., None]).sum(-1))


@case(args(randn(6, 16), randn(16), randn(16)), dtypes=WITH_FLOAT16)
def layer_norm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


@case(args(randn(8, 3, 4, 4)))
def batch_norm_stats(x):
    mean = np.mean(x, axis=(0, 2, 3), keepdims=True)
    var = np.var(x, axis=(0, 2, 3), keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5), mean.squeeze(), np.std(x, axis=0)


@case(args(randn(5, 7)), dtypes=("float32", "float64"))
def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


@case(args(randn(5, 7)))
def sigmoid(x):
    return 1 / (1 + np.exp(-x))


@case(args(randn(5, 7)))
def relu_variants(x):
    return np.maximum(x, 0), np.where(x > 0, x, 0.01 * x), np.maximum(0.0, x) * (x != 0)


@case(args(randn(5, 7)))
def softplus_and_silu(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0), x * (1 / (1 + np.exp(-x)))


@case(args(randn(4, 6)))
def clip_values(x):
    return np.clip(x, -0.5, 0.5), x.clip(0, None), np.clip(x, a_min=None, a_max=1)


@case(args(randn(6, 8)))
def l2_normalise(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True), np.linalg.norm(x)


@case(args(randn(5, 8), randn(7, 8)))
def cosine_similarity(a, b):
    an = a / np.linalg.norm(a, axis=-1, keepdims=True)
    bn = b / np.linalg.norm(b, axis=-1, keepdims=True)
    return an @ bn.T


# --- losses ----------------------------------------------------------------------------------


@case(args(randn(6, 5), labels(6, 5)))
def cross_entropy_fancy_index(logits, y):
    m = logits.max(axis=1, keepdims=True)
    logp = logits - m - np.log(np.exp(logits - m).sum(axis=1, keepdims=True))
    return -logp[np.arange(logits.shape[0]), y].mean()


@case(args(randn(6, 5), labels(6, 5)), dtypes=("float32", "float64"))
def cross_entropy_take_along_axis(logits, y):
    logp = logits - np.log(np.sum(np.exp(logits), axis=-1, keepdims=True))
    return -np.mean(np.take_along_axis(logp, y[:, None], axis=1))


@case(args(randn(6, 5), labels(6, 5)))
def one_hot_by_comparison(logits, y):
    onehot = (y[:, None] == np.arange(5)).astype(logits.dtype)
    return onehot, -(onehot * logits).sum(axis=1)


@case(args(randn(6, 5), labels(6, 5)))
def argmax_accuracy(logits, y):
    return np.mean(np.argmax(logits, axis=1) == y), (logits.argmax(-1) == y).sum()


@case(args(randn(10), randn(10)))
def mse(pred, target):
    return np.mean((pred - target) ** 2), np.square(pred - target).sum() / pred.size


@case(args(randn(10), randn(10)))
def huber_loss(pred, target):
    d = np.abs(pred - target)
    return np.where(d < 1.0, 0.5 * d ** 2, d - 0.5).mean()


@case(args(randn(4, 6), lambda dt, rng: rng.random(sized(4, 6)) > 0.3))
def dropout_with_mask(x, mask):
    return x * mask / 0.7, np.where(mask, x / (1 - 0.3), 0)


@case(args(randn(8), lambda dt, rng: rng.random(sized(8)) > 0.5))
def binary_cross_entropy(z, y):
    p = np.clip(1 / (1 + np.exp(-z)), 1e-7, 1 - 1e-7)
    return -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))


# --- attention and contractions ---------------------------------------------------------------


@case(args(randn(2, 5, 8), randn(2, 5, 8), randn(2, 5, 8)), dtypes=("float32", "float64"))
def attention_3d_matmul(q, k, v):
    s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s) / np.exp(s).sum(axis=-1, keepdims=True)
    return p @ v


@case(args(randn(2, 3, 4, 8), randn(2, 3, 4, 8), randn(2, 3, 4, 8)))
def attention_4d_einsum(q, k, v):
    s = np.einsum("bhqd,bhkd->bhqk", q, k) / 8 ** 0.5     # a Python float: stays float32
    p = np.exp(s - s.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    return np.einsum("bhqk,bhkd->bhqd", p, v)


@case(args(randn(2, 4, 6), randn(6, 3), randn(4, 6)))
def einsum_contractions(x, w, y):
    return (np.einsum("bij,jk->bik", x, w), np.einsum("ij,ij->i", y, y),
            np.einsum("ij->ji", y), np.einsum("bij->b", x), np.einsum("i,j->ij", w[:, 0], w[0]))


@case(args(randn(3, 4), randn(4, 5), randn(4), randn(2, 3, 4)))
def matmul_ranks(a, b, v, t):
    return (np.matmul(a, b), a @ v, v @ b, v @ v, t @ b, np.dot(a, b), np.dot(v, v),
            np.tensordot(t, b, axes=([2], [0])), np.outer(v, v), np.inner(a, a))


@case(args(randn(6, 3), randn(4, 3)))
def pairwise_distances(a, b):
    d = a[:, None, :] - b[None, :, :]
    sq = (a ** 2).sum(1)[:, None] + (b ** 2).sum(1)[None, :] - 2 * a @ b.T
    return np.sqrt((d ** 2).sum(-1)), sq


@case(args(randn(5, 4), randn(4, 3), randn(3)), dtypes=WITH_FLOAT16)
def mlp_layer(x, w, b):
    h = np.tanh(x @ w + b)
    return h, h.sum(axis=0), h.T @ h


# --- layout ----------------------------------------------------------------------------------


@case(args(randn(2, 3), randn(2, 3), randn(2)))
def concatenate_stack(a, b, c):
    return (np.concatenate([a, b], axis=0), np.concatenate((a, b), axis=-1),
            np.stack([a, b]), np.stack([a, b], axis=-1), np.hstack([a, b]), np.vstack([a, b]),
            np.hstack([c, c]), np.vstack([c, c]), np.concatenate([a, b], axis=None))


@case(args(randn(6, 4)))
def split_parts(x):
    a, b, c = np.split(x, 3)
    d, e = np.split(x, [1], axis=1)
    return a, b, c, d, e, np.array_split(x, 2, axis=1)


@case(args(randn(3, 4)), dtypes=("float32", "float64"))
def pad_flip(x):
    return (np.pad(x, 1), np.pad(x, ((0, 0), (2, 1))), np.pad(x, (1, 0), constant_values=-1),
            np.flip(x), np.flip(x, axis=1), x[::-1], x[:, ::-2], np.fliplr(x), np.flipud(x))


@case(args(randn(2, 3, 4)))
def transposes(x):
    return (x.T, x.transpose(1, 0, 2), np.transpose(x, (2, 0, 1)), np.swapaxes(x, 0, 2),
            x.swapaxes(1, 2), np.moveaxis(x, 0, -1), np.moveaxis(x, [0, 1], [-1, -2]),
            np.transpose(x))


@case(args(randn(2, 3, 4)))
def reshapes(x):
    return (x.reshape(-1), x.reshape(6, -1), np.reshape(x, (4, -1)), x.reshape(2, 12),
            x.ravel(), x.flatten(), np.ravel(x), x.reshape((-1, 2, 2)))


@case(args(randn(1, 3, 1, 4)))
def squeeze_expand(x):
    return (x.squeeze(), np.squeeze(x, axis=0), x.squeeze(2), np.expand_dims(x, 0),
            np.expand_dims(x, -1), np.expand_dims(x[0, :, 0], (0, 2)), x[None], x[..., None])


@case(args(randn(4, 5, 6)))
def basic_indexing(x):
    return (x[0], x[-1, 2], x[1:3], x[:, 1:4:2], x[..., -1], x[:, None, 0], x[1, :, 2:],
            x[[0, 2]], x[:, [1, 3], 0], x[np.array([3, 0]), :, np.array([1, 5])], x[0, 0, 0],
            x[:, -2:, ::3])


@case(args(randn(4, 4)))
def triangular_masks(x):
    causal = np.tril(np.ones((4, 4), dtype=bool))
    return np.triu(x), np.tril(x, -1), np.triu(x, 1), np.where(causal, x, -np.inf)


@case(args(randn(3, 4)))
def broadcast_and_like(x):
    return (np.zeros_like(x), np.ones_like(x), np.full_like(x, 2.5), np.zeros_like(x, dtype=int),
            np.broadcast_to(x[0], (5, 4)), np.ones(x.shape, x.dtype) * x,
            np.zeros((2,) + x.shape[1:], dtype=x.dtype) + x[:2])


@case(args(randn(3, 2)))
def repeat_tile(x):
    return np.repeat(x, 2, axis=0), np.tile(x, (2, 3)), np.repeat(x, 3)


# --- elementwise maths ------------------------------------------------------------------------


@case(args(randn(8)))
def polynomial(x):
    c = [1.0, -2.0, 0.5, 3.0]
    horner = ((c[3] * x + c[2]) * x + c[1]) * x + c[0]
    powers = sum(ci * x ** i for i, ci in enumerate(c))
    return horner, powers


@case(args(randn(8)), dtypes=("float32", "float64"))
def cumulative_expressions(x):
    # Running sums written with a triangular matrix: what model code does without cumsum.
    n = x.shape[0]
    lower = np.tril(np.ones((n, n), dtype=x.dtype))
    return lower @ x, (lower @ np.exp(x)) / np.arange(1, n + 1)


@case(args(lambda dt, rng: (rng.random(sized(3, 4)) + 0.1).astype(dt)))
def unary_math(x):
    return (np.exp(x), np.log(x), np.sqrt(x), np.sin(x), np.cos(x), np.tan(x), np.arctan(x),
            np.arcsin(x / 2), np.arccos(x / 2), np.sinh(x), np.cosh(x), np.log2(x),
            np.log10(x), np.exp2(x), np.expm1(x), np.log1p(x), np.reciprocal(x),
            np.floor(x * 3), np.ceil(x * 3), np.round(x * 3), np.trunc(x * 3), np.sign(x - 0.5),
            np.abs(x - 0.5), np.square(x), np.arctan2(x, x - 0.5), np.round(x, 2),
            np.arctanh(x / 2), np.arcsinh(x))


@case(args(randn(3, 4)), dtypes=WITH_FLOAT16)
def reductions(x):
    return (x.sum(), x.sum(0), np.sum(x, axis=1, keepdims=True), x.mean(), np.prod(x, 0),
            x.max(), np.min(x, axis=0), np.amax(x, 1), x.argmax(), np.argmin(x, axis=0),
            np.argmax(x, axis=1, keepdims=True), x.std(ddof=1), np.var(x, 1), (x > 0).all(1),
            np.any(x > 1), np.max(x, axis=(0, 1)), np.add.reduce(x, axis=1))


@case(args(randn(3, 4)))
def nan_and_inf_tests(x):
    y = np.log(x)  # NaN for negatives
    return np.isnan(y), np.isfinite(y), np.isinf(1 / (x * 0)), np.where(np.isnan(y), 0.0, y)


@case(args(randn(5)), dtypes=("float32", "float64"))
def scalar_arithmetic(x):
    return x + 1, 2 * x, x / 3, x - 0.5, 1.5 ** x, x ** 2, -x, +x, abs(x), 2.0 - x, 1 / x


# --- integers, bools and promotion ------------------------------------------------------------


@case(args(ints(10), nonzero_ints(10)), INT_ONLY)
def integer_arithmetic(a, b):
    return (a // b, a % b, a * b, a + b, a - b, a // 3, a % 4, -7 // b, b ** 2, a ** 0, np.abs(a),
            a / b, np.maximum(a, b), a < b, a >= 2, a == b, a != 0)


@case(args(ints(10, lo=0, hi=8), ints(10, lo=0, hi=8)), INT_ONLY)
def bitwise_and_bool_logic(a, b):
    p, q = a > 3, b > 3
    return (p & q, p | q, p ^ q, ~p, a & b, a | 1, a ^ b, ~a, np.logical_and(p, q),
            np.logical_or(p, a), np.logical_xor(p, q), np.logical_not(p))


@case(args(ints(6, dtype=np.int32), randn(6)), ("float32",))
def int32_plus_float32(i, f):
    return i + f, i * f, i + 1.5, i + 1, i * np.float32(2), i // 2, i / 2


@case(args(randn(6)))
def float_times_python_float(x):
    return x * 0.1, x + 1e10, x * 3, x / np.float64(2), np.float32(2) * x, x * True


@case(args(ints(6), ints(6, dtype=np.int32)), INT_ONLY)
def int64_and_int32_with_python_ints(a, b):
    return a / 2, a + b, b + 7, b * 2 ** 20, b // 3, a * b, b / b.shape[0], b.sum(), b.mean()


@case(args(lambda dt, rng: rng.random(sized(6)) > 0.5, lambda dt, rng: rng.random(sized(6)) > 0.5),
      INT_ONLY)
def bool_arithmetic(p, q):
    return (p + q, p * q, p + 1, p * 2.5, p.sum(), p.mean(), p.astype(np.int32) - q,
            np.where(p, 1, 0), p == q, p > q, np.sum(p & q), p.any(), p.all())


@case(args(randn(4)), dtypes=WITH_FLOAT16)
def astype_conversions(x):
    return (x.astype(np.int32), x.astype(np.int64) + 1, (x > 0).astype(np.float32), x.astype(bool),
            (x * 10).astype(int) // 3, x.astype("float64"))


@case(args(lambda dt, rng: np.asarray(rng.standard_normal(), dt), randn(3)))
def zero_d_arrays_and_scalars(s, x):
    return s * x, s + 1, s * s, np.exp(s), s > 0, x[0] * s, x.sum() + s, np.float32(1.5) + s, s.T


@case(args(randn(4, 4)))
def properties_as_python_values(x):
    n, d = x.shape
    return x * x.ndim, x / x.size, x.reshape(n * d), x[: n // 2], x.astype(x.dtype) + len(x)


@case(args(randn(3, 4)))
def ufunc_dtype_keyword(x):
    return np.add(x, 1, dtype=np.float64), np.sum(x, dtype=np.float64), np.mean(x, axis=0)


@case(args(randn(6, 4), labels(6, 4)))
def scatter_free_label_smoothing(logits, y):
    n, k = logits.shape
    target = np.where(np.arange(k)[None, :] == y[:, None], 0.9, 0.1 / (k - 1))
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return -(target * logp).sum(-1).mean(), target.dtype == np.float64


@case(args(randn(2, 6)), dtypes=WITH_FLOAT16)
def where_with_mixed_branches(x):
    return np.where(x > 0, 1, 0), np.where(x > 0, x, 0), np.where(x > 0, 1.0, x), np.where(
        x > 0, np.int32(1), np.float32(0))


@case(args(randn(3, 5), randn(5)))
def min_max_binary(x, v):
    return np.maximum(x, v), np.minimum(x, 0.0), np.fmax(x, v), np.fmin(x, v)


@case(args(randn(2, 3, 4, 5), randn(2, 3, 5, 6)))
def einsum_with_ellipsis(a, b):
    return np.einsum("...ij,...jk->...ik", a, b), np.einsum("...ij->...", a), np.einsum(
        "b...j,b...j->b...", a, a)


@case(args(randn(4, 4), randn(5)))
def diagonal_and_trace(m, v):
    return (np.diag(m), np.diag(m, 1), np.diag(v), np.diag(v, -2), np.trace(m), m.diagonal(),
            np.diagonal(m, -1), m.trace(1))


@case(args(randn(3, 6)))
def diff_roll_and_stacks(x):
    return (np.diff(x), np.diff(x, axis=0), np.diff(x, n=2), np.roll(x, 2, axis=1),
            np.roll(x, -1), np.roll(x, (1, 2), axis=(0, 1)), np.dstack([x, x]),
            np.column_stack([x[0], x[1]]), np.atleast_3d(x))


@case(args(randn(3, 6), randn(3, 6)))
def nan_safe_and_comparison_helpers(a, b):
    y = np.log(a)
    return (np.fmax(y, b), np.fmin(b, y), np.logaddexp(a, b), np.hypot(a, b),
            np.nan_to_num(y), np.isclose(a, a + 1e-9), np.isclose(y, y, equal_nan=True),
            np.count_nonzero(a > 0), np.count_nonzero(a > 0, axis=1), np.ptp(a, axis=1))


@case(args(randn(4, 5), randn(5)))
def select_average_and_ufunc_methods(x, w):
    return (np.select([x < -0.5, x > 0.5], [x * 2, 1.0], default=0.0),
            np.average(x, axis=1, weights=w), np.average(x),
            np.subtract.outer(w, w), np.maximum.reduce(x, axis=0), np.float_power(x, 2),
            np.divmod(x, 0.3), np.deg2rad(x), np.vecdot(x, w))


@case(args(randn(2, 5, 4), randn(4, 3), labels(2, 6)))
def sequence_model_idioms(x, w, lengths):
    mask = np.arange(x.shape[1])[None, :] < lengths[:, None]
    h = np.dot(x, w) * x.shape[-1] ** -0.5
    pooled = (h * mask[..., None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1)
    rows = [row.sum() for row in x[0]]
    return (pooled, np.ones(4) @ x.transpose(0, 2, 1), np.einsum("bti,ij", x, w),
            np.stack(rows), [x[0, 0], x[1, 0]] + x[0, :2], len(x) * x.mean(axis=(1, 2)),
            np.linalg.norm(h, ord=2, axis=-1), x.astype(np.float32, copy=False))


# --- issue 13: cumprod, sorting, np.gradient, pad modes, arrays from traced values ------------


@case(args(randn(3, 5)), dtypes=("float32", "float64"))
def cumprod_and_sorting(x):
    # random normal data: no ties, so every argsort kind agrees with NumPy's default one
    return (np.cumprod(x, axis=1), x.cumprod(), np.cumprod(x > 0, axis=0), np.sort(x),
            np.sort(x, axis=0), np.sort(x, axis=None), np.argsort(x, axis=0), x.argsort(),
            np.argsort(-x, kind="stable"), np.take_along_axis(x, np.argsort(x), axis=-1))


@case(args(randn(4, 6)))
def finite_differences(x):
    # np.float64(0.1) is not weak: float32 data is differenced in float64, stored as float32
    return (np.gradient(x, 0.5),
            np.gradient(x, np.float64(0.1), np.array([0.0, 1.0, 3.0, 3.5, 5.0, 8.0]),
                        edge_order=2))


@case(args(randn(3, 4)))
def pad_modes(x):
    return (np.pad(x, 1, constant_values=((1, 2), (3, 4))), np.pad(x, (2, 1), mode="edge"),
            np.pad(x, ((1, 5), (4, 2)), mode="reflect"), np.pad(x, 3, mode="symmetric"),
            np.pad(x, ((0, 0), (5, 6)), mode="wrap"), np.pad(x, {1: (1, 2)}))


@case(args(randn(3, 4)))
def arrays_from_traced_values(x):
    # np.array / np.asarray of traced values, with like= (NumPy dispatches them) and without
    return (np.array([x[0, 0], x[1, 1], 2.0], like=x), np.asarray(x, like=x),
            np.array([x[0, 0], [x[1, 1], 2.0][0]]), np.asarray([x[0], x[2]]),
            np.array([[x[0, 0], x[0, 1]], [x[1, 0], x[1, 1]]], like=x), np.stack([x[0], x[1]]),
            np.array(x[0], dtype=np.float64, ndmin=3, like=x))


# --- issue 13: np.linalg's solvers; scipy.special and scipy.stats (through tracejit.scipy) -----


def well_conditioned(*shape):
    """Random matrices plus 3 on the diagonal: far from singular."""
    def make(dt, rng):
        s = sized(*shape)
        return (rng.standard_normal(s) + 3 * np.eye(s[-1])).astype(dt)
    return make


@case(args(well_conditioned(3, 3), randn(3, 2), randn(3), well_conditioned(2, 3, 3)))
def linalg_solvers(a, b, v, batch):
    spd = a @ a.T + np.eye(3, dtype=a.dtype)
    # float32 stays float32; an integer right-hand side makes it float64, as in NumPy
    return (np.linalg.solve(a, b), np.linalg.solve(batch, v), np.linalg.inv(batch),
            np.linalg.det(a), np.linalg.slogdet(batch), np.linalg.cholesky(spd),
            np.linalg.cholesky(spd, upper=True), np.linalg.solve(a, np.arange(3)))


@case(args(randn(3, 5)), dtypes=("float64",))
def scipy_special_functions(x):
    # float32 stays float32 in SciPy's ufuncs (tests/test_scipy_functions.py: logsumexp's)
    lse = tj_special.logsumexp
    return (scipy.special.gammaln(x), scipy.special.gammaln(x.astype(np.float32)),
            scipy.special.digamma(4 * x), lse(x, axis=1), lse(np.where(x > 0, -np.inf, x)))


@case(args(randn(4, 3), randn(3), randn(3, 3)), dtypes=("float64",))
def scipy_stats_logpdfs(x, mu, m):
    cov = m @ m.T + np.eye(3)
    # float64 results, from float32 inputs too, as SciPy's; nan where the scale is negative
    return (norm.logpdf(x), norm.logpdf(x.astype(np.float32), mu, scale=mu),
            multivariate_normal.logpdf(x, mu, cov))


PARAMS = [pytest.param(c, dt, id=f"{c.name}-{dt}") for c in CASES for dt in c.dtypes]


@pytest.mark.parametrize("case,dtype", PARAMS)
def test_jit_matches_numpy(case, dtype):
    """The jitted snippet returns NumPy's pytree, dtypes, shapes and values."""
    rng = np.random.default_rng(0)
    inputs = case.make(dtype, rng)
    with np.errstate(all="ignore"):
        expected = case.fn(*inputs)
    got = tracejit.jit(case.fn)(*inputs)
    # float32 intermediates may round differently (summation order) even in float64 results.
    # float16 sums round once in tracejit, at every step in some of NumPy's loops
    tol = {"float16": 1e-2, "float32": 2e-5}.get(dtype, 1e-11)
    assert_same_tree(got, expected, tol)


def assert_same_tree(got, expected, tol, path="result"):
    if isinstance(expected, (tuple, list)):
        assert type(got) is type(expected), f"{path}: {type(got)} vs {type(expected)}"
        assert len(got) == len(expected), path
        for i, (g, e) in enumerate(zip(got, expected)):
            assert_same_tree(g, e, tol, f"{path}[{i}]")
        return
    g, e = np.asarray(got), np.asarray(expected)
    assert g.dtype == e.dtype, f"{path}: dtype {g.dtype} != NumPy's {e.dtype}"
    assert g.shape == e.shape, f"{path}: shape {g.shape} != NumPy's {e.shape}"
    if e.dtype.kind == "f":
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol, equal_nan=True, err_msg=path)
    else:
        np.testing.assert_array_equal(g, e, err_msg=path)
