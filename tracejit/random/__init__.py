"""``tracejit.random``: JAX's counter-based PRNG (``jax.random``), traceable.

    key = tracejit.random.PRNGKey(0)            # uint32[2]
    key, sub = tracejit.random.split(key)
    x = tracejit.random.normal(sub, (3, 4))     # float32, JAX's numbers bit for bit

    @tracejit.jit
    def step(params, key):                      # one trace; a new key, new numbers
        noise = tracejit.random.normal(key, params.shape)
        ...

Keys are explicit values: a draw is a pure function of (key, shape, dtype), so it runs eagerly
on NumPy arrays, traced under ``jit`` (a traced key: one trace for any key), ``vmap`` (over a
batch of keys, ``vmap(lambda k: normal(k, (3,)))(split(key, 8))``) and ``grad`` (draws are
constants of the differentiation). A NumPy draw (``np.random.randn``) inside ``jit`` is refused
instead, since its numbers would be drawn once while tracing.

The generator is Threefry-2x32 (threefry.py); the samplers are JAX's algorithms
(distributions.py); erf_inv is XLA's (erfinv.py). Keys, split, fold_in, bits, uniform,
bernoulli, randint, permutation and choice give jax.random's exact numbers (both settings of
``jax_threefry_partitionable``; float16, bfloat16, float32, float64); categorical, an argmax
over Gumbel noise, too unless an ulp decides it. What goes through a log differs in the last
bits where XLA's log and log1p round otherwise than NumPy's: normal is 95 % identical, at most
3 ulp off in float32 (30 in float64, where XLA's log1p is the less accurate); gumbel,
exponential and truncated_normal likewise (absolute errors of a few float32 ulp of 1).
"""
from .distributions import (bernoulli, categorical, choice, exponential, gumbel, normal,
                            permutation, randint, truncated_normal, uniform)
from .erfinv import erf_inv
from .threefry import (PRNGKey, bits, clone, fold_in, key, key_data, set_threefry_partitionable,
                       split, threefry2x32, threefry_partitionable, wrap_key_data)

__all__ = ["PRNGKey", "key", "split", "fold_in", "bits", "uniform", "normal", "bernoulli",
           "randint", "categorical", "gumbel", "exponential", "truncated_normal",
           "permutation", "choice", "key_data", "wrap_key_data", "clone", "threefry2x32",
           "erf_inv", "set_threefry_partitionable", "threefry_partitionable"]
