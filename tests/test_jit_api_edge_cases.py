"""The jit API surface compared with NumPy running the same function: methods called every
way Python allows, and the errors for static arguments."""
from __future__ import annotations

import numpy as np
import pytest

import tracejit as tj


def test_classmethod_over_jit_binds_the_class():
    """``@classmethod`` over ``@jit`` handed the class to ``__get__``, which treated it as an
    instance to copy (``object.__new__(type)`` failed)."""
    class Scale:
        factor = 3.0

        @classmethod
        @tj.jit
        def apply(cls, x):
            return x * cls.factor

    class Double(Scale):
        factor = 2.0

    x = np.arange(4.0)
    np.testing.assert_array_equal(Scale.apply(x), x * 3.0)
    np.testing.assert_array_equal(Scale().apply(x), x * 3.0)
    np.testing.assert_array_equal(Double.apply(x), x * 2.0)     # cls is static, by identity


def test_unbound_method_call_passes_the_instance():
    """``C.method(obj, x)`` is ``obj.method(x)`` eagerly; it refused ``obj`` as not an array,
    and so did ``C.method.lower(obj, x)``."""
    class Layer:
        def __init__(self):
            self.w, self.k = np.full(4, 2.0), 1.0

        @tj.jit
        def forward(self, x):
            return x * self.w + self.k

    layer, x = Layer(), np.arange(4.0)
    np.testing.assert_array_equal(Layer.forward(layer, x), x * 2.0 + 1.0)
    layer.w = np.full(4, 5.0)
    np.testing.assert_array_equal(Layer.forward(layer, x), x * 5.0 + 1.0)
    np.testing.assert_array_equal(layer.forward(x), x * 5.0 + 1.0)
    assert "mul" in Layer.forward.lower(layer, x).ir


def test_static_argument_traced_by_an_enclosing_jit_says_so():
    """A Tracer is unhashable too: the error told to pass a tuple instead of a list."""
    inner = tj.jit(lambda x, n: x * n, static_argnums=1)
    outer = tj.jit(lambda x, n: inner(x, n))
    with pytest.raises(TypeError, match="traced value"):
        outer(np.ones(3), 2)
    outer = tj.jit(lambda x, n: inner(x, n), static_argnums=1)
    np.testing.assert_array_equal(outer(np.ones(3), 2), np.full(3, 2.0))


def test_wait_compiled_waits_for_signatures_traced_again_for_layouts():
    """A non-contiguous argument the trace read the layout of is traced again (jit's
    ``_layouts``); ``wait_compiled`` left that program on the NumPy tier."""
    def f(a):
        v = a.reshape(-1)
        v[::3] = np.exp(v[::3])
        return a * 2

    j = tj.jit(f, tiered=True)
    y = np.arange(20.0).reshape(5, 4)
    j(y.T.copy())
    j.wait_compiled()
    got, want = y.copy(), y.copy()
    np.testing.assert_allclose(j(got.T), f(want.T), rtol=1e-12)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    j.wait_compiled()
    tiers = [getattr(e.program, "tier", "compiled") for e in j._layouts.values()]
    assert tiers == ["compiled"]
    # stats() lists it too, with the strides it was traced for
    stats = j.stats()
    assert j.trace_count == len(stats) == 2
    assert [s["strides"] is None for s in stats] == [True, False]
    assert all(s["tier"] == "compiled" for s in stats)


def test_a_dict_with_keys_of_mixed_types_is_a_pytree():
    """Its keys do not sort with each other: ordered by type name, then value (the error
    came from inside the pytree code)."""
    x = np.ones(2)
    np.testing.assert_array_equal(tj.jit(lambda d: d[1] + d["a"])({1: x, "a": 2 * x}), 3 * x)
    out = tj.jit(lambda x: {1: x, "a": x * 2})(x)
    np.testing.assert_array_equal(out[1], x)
    np.testing.assert_array_equal(out["a"], 2 * x)


def test_static_argnums_and_argnames_that_name_no_parameter_are_refused():
    """As JAX: a static argument number no call can fill, or a name the function does not
    take, is a mistake (it was silently ignored)."""
    with pytest.raises(ValueError, match="takes only 2 positional"):
        tj.jit(lambda x, n=2: x * n, static_argnums=3)
    with pytest.raises(ValueError, match="name no parameter"):
        tj.jit(lambda x, n=2: x * n, static_argnames="m")
    np.testing.assert_array_equal(
        tj.jit(lambda *a: a[0] * a[1], static_argnums=1)(np.ones(2), 3), [3, 3])
