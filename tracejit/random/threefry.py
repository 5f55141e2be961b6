"""Threefry-2x32 and the keys built on it: JAX's ``jax.random`` key functions, bit for bit.

A key is a ``uint32[2]`` array (JAX's legacy raw key layout, ``jax.random.PRNGKey``). Every
number drawn is a pure function of (key, position): threefry2x32 hashes a 64-bit counter under
the key. Nothing is stateful, so the same code runs eagerly on NumPy arrays and traced, and a
traced key (a jitted function's argument) gives new numbers each call from one trace.

Written with NumPy's uint32 arithmetic (``+`` and ``*`` wrap mod 2**32, ``^``, ``|``), which is
exact eagerly, traced and compiled. A rotation ``x << r | x >> (32 - r)`` is written
``x * 2**r | x // 2**(32 - r)``: the same bits, and one op each under tracing (a traced shift by
an array amount is a table lookup and bounds checks).

JAX has two layouts of the counters, chosen by its ``jax_threefry_partitionable`` flag: on (JAX's
default since 0.5), element i of a draw hashes the counter (0, i) (hi, lo) and keeps
``x0 ^ x1``; off (the original), a draw of n words hashes the counter pairs (i, i + n/2) and
concatenates the halves. ``set_threefry_partitionable`` picks one here (default on, as the
installed JAX); it is read while tracing, so set it before a jitted function first runs.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ..ir import dtypes as ir_dtypes
from ..tracer import Tracer
from ..tracer.errors import numpy_error
from ..tracer.numpy.shapes import iota as _traced_iota

_U32 = np.uint32
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = _U32(0x1BD11BDA)
_PARTITIONABLE = [True]
UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32),
               64: np.dtype(np.uint64)}


def set_threefry_partitionable(flag: bool) -> bool:
    """Choose JAX's counter layout (``jax.config.update("jax_threefry_partitionable", flag)``):
    True (the default, as JAX's since 0.5) or False (JAX's original). Returns the previous
    setting. Read while tracing: a function already jitted keeps the layout it was traced with."""
    old = _PARTITIONABLE[0]
    _PARTITIONABLE[0] = bool(flag)
    return old


def threefry_partitionable() -> bool:
    return _PARTITIONABLE[0]


def _rotl(x, r):
    return (x * _U32(1 << r)) | (x // _U32(1 << (32 - r)))


def threefry2x32(k1, k2, x0, x1):
    """The Threefry-2x32 block cipher, 20 rounds (Salmon et al. 2011, as JAX's
    ``threefry2x32_p``): key words ``k1, k2``, counter words ``x0, x1`` (uint32 arrays or
    scalars, broadcast together); returns the two hashed words."""
    with np.errstate(over="ignore"):
        ks = (k1, k2, k1 ^ k2 ^ _PARITY)
        x0 = x0 + ks[0]
        x1 = x1 + ks[1]
        for i in range(5):
            for r in _ROTATIONS[i % 2]:
                x0 = x0 + x1
                x1 = x0 ^ _rotl(x1, r)
            x0 = x0 + ks[(i + 1) % 3]
            x1 = x1 + (ks[(i + 2) % 3] + _U32(i + 1))     # the key word first: a scalar op
        return x0, x1


# ---------------------------------------------------------------------------------------------
# Keys


def _traced(*xs):
    return next((x for x in xs if isinstance(x, Tracer)), None)


def _iota(n, like):
    """0, 1, ..., n-1 as uint32: the IR's iota op where ``like`` is traced (no constant of n
    elements in the IR), np.arange eagerly."""
    if isinstance(like, Tracer):
        return _traced_iota((n,), 0, ir_dtypes.uint32, like._trace)
    return np.arange(n, dtype=_U32)


def check_key(name, key):
    """The key as a uint32[2] array (a tracer stays one); errors as JAX's."""
    if not isinstance(key, Tracer):
        key = np.asarray(key)
    if key.dtype != np.uint32 or key.ndim < 1 or key.shape[-1] != 2:
        raise TypeError(f"{name}: a key is a uint32 array of shape (2,) (from "
                        f"tracejit.random.PRNGKey, split or fold_in); got {key.dtype}"
                        f"{list(key.shape)}")
    if key.ndim != 1:
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                         f"{tuple(key.shape)} != (2,). Use tracejit.vmap for batching.")
    return key


def _words(key):
    """A key's two uint32 words, as uint32[1] arrays (0-d ones would make the fusion start new
    kernels); a pair of words (what ``subkeys`` gives) passes as it is."""
    return key if isinstance(key, tuple) else (key[0:1], key[1:2])


def PRNGKey(seed) -> np.ndarray:
    """A key from an integer seed: ``uint32[2]``, JAX's ``PRNGKey(seed)``: (high, low) 32 bits
    of the seed as a 64-bit integer (a Python int is NumPy's int64; a seed of 32 bits or fewer
    has high word 0). Seeds in [0, 2**32) give JAX's keys under either x64 setting; a negative
    Python int gives JAX's x64 key (JAX without x64 truncates it to 32 bits first).
    A traced integer seed gives a traced key."""
    if isinstance(seed, (bool, np.bool_)):
        raise TypeError(f"PRNGKey accepts an integer seed, got {seed!r}")
    if isinstance(seed, int):
        if not -2 ** 63 <= seed < 2 ** 63:
            raise OverflowError(f"PRNGKey: seed {seed} does not fit in int64")
        v = seed & (2 ** 64 - 1)
        return np.array([v >> 32, v & 0xFFFFFFFF], dtype=_U32)
    if not isinstance(seed, Tracer):
        seed = np.asarray(seed)
    if seed.ndim:
        raise TypeError(f"PRNGKey accepts a scalar seed, but was given an array of shape "
                        f"{tuple(seed.shape)} != (). Use tracejit.vmap for batching")
    if seed.dtype.kind not in "iu":
        raise TypeError(f"PRNGKey accepts an integer seed, got dtype {seed.dtype}")
    lo = seed.astype(_U32)
    if seed.dtype.itemsize == 8:
        hi = (seed // seed.dtype.type(1 << 32)).astype(_U32)     # floor: the arithmetic shift
    else:
        hi = lo * _U32(0)
    if isinstance(seed, Tracer):
        return np.stack([hi, lo])
    return np.array([hi, lo], dtype=_U32)


def key(seed) -> np.ndarray:
    """``jax.random.key(seed)``: here the same raw ``uint32[2]`` key as PRNGKey (tracejit has
    no typed key arrays)."""
    return PRNGKey(seed)


def key_data(keys):
    """The key's uint32 words (a raw key already is them)."""
    return keys


def wrap_key_data(key_bits_array, *, impl=None):
    if impl not in (None, "threefry2x32"):
        raise ValueError(f"tracejit.random implements threefry2x32 only, not {impl!r}")
    return key_bits_array


def clone(key):
    return key


def _threefry_2x32(k1, k2, n, like):
    """JAX's ``threefry_2x32(key, iota(n))`` (the original layout): the counters i and
    i + ceil(n/2) hashed as a pair, the two halves concatenated, the padding dropped."""
    h = (n + 1) // 2
    lo = _iota(h, like)
    with np.errstate(over="ignore"):
        hi = lo + _U32(h)
        if n % 2:               # an odd count is padded with a 0 (hashed beside counter h - 1)
            hi = np.concatenate([hi[:h - 1], np.zeros(1, _U32)])
        b0, b1 = threefry2x32(k1, k2, lo, hi)
    return np.concatenate([b0, b1])[:n]


def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        return (operator.index(shape),)
    return tuple(operator.index(d) for d in shape)


def split(key, num=2):
    """``num`` new keys (``num`` an int or a shape): ``uint32[*num, 2]``, JAX's
    ``random.split``."""
    key = check_key("split", key)
    shape = _shape(num)
    n = math.prod(shape)
    if n >= 2 ** 32:
        raise numpy_error(ValueError, f"random.split into {n} keys: the counters are 32-bit, "
                          "so at most 2**32 - 1 keys a split",
                          "split in stages: split(key, m), then split each of those")
    b0, b1 = _split_words(key, n)
    return np.stack([b0, b1], axis=-1).reshape(*shape, 2)


def _split_words(key, n):
    """The words of ``split(key, n)``: two uint32[n] arrays (not stacked: a stack is a
    concatenate, which ends a fused kernel)."""
    k1, k2 = _words(key)
    like = _traced(k1, k2)
    if _PARTITIONABLE[0]:
        return threefry2x32(k1, k2, _U32(0), _iota(n, like))
    out = _threefry_2x32(k1, k2, 2 * n, like)
    return out[0::2], out[1::2]


def subkeys(key, n):
    """``split(key, n)`` as n pairs of words, for the samplers' own use."""
    b0, b1 = _split_words(key, n)
    return [(b0[i:i + 1], b1[i:i + 1]) for i in range(n)]


def fold_in(key, data):
    """A new key from a key and a 32-bit integer (``random.fold_in``): the hash of the counter
    (0, data) under the key. ``data`` may be traced."""
    key = check_key("fold_in", key)
    if np.ndim(data):
        raise TypeError(f"fold_in accepts a scalar, but was given an array of shape "
                        f"{np.shape(data)} != (). Use tracejit.vmap for batching.")
    if isinstance(data, Tracer):
        if data.dtype.kind not in "iub":
            raise TypeError(f"fold_in: data must be an integer, got dtype {data.dtype}")
        data = data.astype(_U32).reshape(1)
    else:
        if not isinstance(data, (int, np.integer)) and np.asarray(data).dtype.kind not in "iub":
            raise TypeError(f"fold_in: data must be an integer, got {data!r}")
        data = np.array([int(data) & 0xFFFFFFFF], _U32)
    k1, k2 = _words(key)
    # hashed as uint32[1], not 0-d: the fusion keeps a chain of 0-d ops in many kernels
    b0, b1 = threefry2x32(k1, k2, _U32(0), data)
    return np.concatenate([b0, b1])


def random_bits(key, bit_width, shape):
    """Uniform bits, ``uint{bit_width}[shape]``, as JAX's ``threefry_random_bits``; ``key`` a
    key array or a pair of its words."""
    shape = _shape(shape)
    n = math.prod(shape)
    dtype = UINT_DTYPES[bit_width]
    if n == 0:
        return np.zeros(shape, dtype)
    if n >= 2 ** 32:
        raise numpy_error(ValueError, f"a random draw of {n} numbers: the counters are "
                          "32-bit, so at most 2**32 - 1 numbers a draw",
                          "draw in parts from keys split off this one (random.split)")
    k1, k2 = _words(key)
    like = _traced(k1, k2)
    if _PARTITIONABLE[0]:
        b0, b1 = threefry2x32(k1, k2, _U32(0), _iota(n, like))
        if bit_width == 64:
            out = (b0.astype(np.uint64) * np.uint64(1 << 32)) | b1.astype(np.uint64)
        else:
            out = b0 ^ b1
            if bit_width < 32:
                out = out.astype(dtype)
    else:
        words = -(-n * bit_width // 32)
        bits = _threefry_2x32(k1, k2, words, like)
        if bit_width == 64:
            out = (bits[:n].astype(np.uint64) * np.uint64(1 << 32)) | bits[n:].astype(np.uint64)
        elif bit_width == 32:
            out = bits
        else:                   # bits.view(dtype)[:n]: the low part of each word first
            per = 32 // bit_width
            mask = _U32((1 << bit_width) - 1)
            parts = [(bits // _U32(1 << (bit_width * j))) & mask for j in range(per)]
            out = np.stack(parts, axis=1).reshape(-1)[:n].astype(dtype)
    return out.reshape(shape)


def bits(key, shape=(), dtype=None):
    """Uniform random bits, JAX's ``random.bits``: unsigned integers of ``dtype`` (default
    uint32, JAX's default without x64)."""
    key = check_key("bits", key)
    dtype = np.dtype(np.uint32 if dtype is None else dtype)
    if dtype.kind != "u":
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dtype}")
    return random_bits(key, dtype.itemsize * 8, shape)
