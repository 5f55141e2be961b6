"""Arguments a jitted or differentiated function cannot trace are refused at the call, naming the
argument (its path in the pytree), its type or dtype, this file and line, and what to do;
arguments that are plain arrays in disguise (np.memmap, views) just work."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import tracejit
from tracejit import grad, jit, jvp, vjp

HERE = os.path.basename(__file__)


def interp(fn):
    return jit(fn, backend="interpreter")


def here(offset: int) -> str:
    """``file:line`` of the line ``offset`` lines below the caller's current line."""
    return f"{HERE}:{sys._getframe(1).f_lineno + offset}"


# --- ndarray subclasses ----------------------------------------------------------------------


def test_masked_array_is_refused_not_summed_without_its_mask():
    x = np.ma.array([1.0, 2.0], mask=[0, 1])
    assert x.sum() == 1.0                               # what NumPy does; tracing gave 3.0
    where = here(2)
    with pytest.raises(TypeError) as info:
        interp(lambda x: x.sum())(x)
    msg = str(info.value)
    assert "argument x" in msg and "MaskedArray" in msg and where in msg
    assert "np.asarray(x)" in msg and "mask" in msg


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")     # np.matrix's own
def test_matrix_is_refused_not_multiplied_elementwise():
    m = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    where = here(2)
    with pytest.raises(TypeError) as info:
        interp(lambda x: x * x)(m)
    msg = str(info.value)
    assert "argument x" in msg and "matrix" in msg and where in msg and "@" in msg


def test_unknown_ndarray_subclass_is_refused():
    class Tagged(np.ndarray):
        pass

    with pytest.raises(TypeError, match=r"(?s)argument x is a .*Tagged.*np\.asarray\(x\)"):
        interp(lambda x: x + 1)(np.zeros(3).view(Tagged))


def test_subclass_inside_a_pytree_names_its_path():
    params = {"w": np.ma.array([1.0, 2.0], mask=[0, 1]), "b": np.zeros(2)}
    with pytest.raises(TypeError, match=r"argument params\['w'\] is a numpy\.ma\.MaskedArray"):
        interp(lambda params: params["w"] + params["b"])(params)


def test_plain_views_pass():
    x = np.arange(12.0).reshape(3, 4)
    f = interp(lambda x: x * 2)
    np.testing.assert_array_equal(f(x.T), x.T * 2)
    np.testing.assert_array_equal(f(x[::2]), x[::2] * 2)


@pytest.mark.parametrize("backend", ["interpreter", "numba"])
def test_memmap_is_a_plain_array(tmp_path, backend):
    m = np.memmap(tmp_path / "m.dat", dtype=np.float64, mode="w+", shape=(3,))
    m[:] = [1.0, 2.0, 3.0]
    f = jit(lambda x: x * 2 + 1, backend=backend)
    np.testing.assert_array_equal(f(m), [3.0, 5.0, 7.0])
    np.testing.assert_array_equal(f(np.ones(3)), [3.0, 3.0, 3.0])     # same cache entry
    assert f.trace_count == 1


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_matrix_after_a_plain_call_is_still_refused():
    f = jit(lambda x: x * x)
    f(np.ones((2, 2)))
    with pytest.raises(TypeError, match="matrix"):
        f(np.matrix([[1.0, 2.0], [3.0, 4.0]]))


@pytest.mark.parametrize("transform", ["grad", "vjp", "jvp"])
def test_transforms_on_concrete_arrays_refuse_subclasses(transform):
    x = np.ma.array([1.0, 2.0], mask=[0, 1])

    def loss(x):
        return (x * x).sum()

    call = {"grad": lambda: grad(loss)(x), "vjp": lambda: vjp(loss, x),
            "jvp": lambda: jvp(loss, (x,), (x,))}[transform]
    with pytest.raises(TypeError, match="MaskedArray") as info:
        call()
    assert f"{HERE}:" in str(info.value)
    if transform != "jvp":              # jvp's arguments are the tuples primals, tangents
        assert "argument x " in str(info.value)


# --- dtypes ----------------------------------------------------------------------------------


UNSUPPORTED = {
    "object": np.array([1.0, None], dtype=object),
    "str": np.array(["a", "b"]),
    "bytes": np.array([b"a", b"b"]),
    "complex": np.ones(2, np.complex128),
    "longdouble": np.ones(2, np.longdouble),
    "datetime64": np.array(["2024-01-01", "2024-01-02"], dtype="datetime64[D]"),
    "timedelta64": np.array([1, 2], dtype="timedelta64[s]"),
    "structured": np.zeros(2, dtype=[("a", "f8"), ("b", "i8")]),
    "longdouble scalar": np.longdouble(1.0),
    "byte-swapped": np.arange(3.0).astype(">f8"),
}


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_unsupported_dtype_names_the_argument_and_lists_the_supported(name):
    x = UNSUPPORTED[name]
    where = here(2)
    with pytest.raises(TypeError) as info:
        interp(lambda x: x)(x)
    msg = str(info.value)
    assert "argument x" in msg and where in msg and "What to do" in msg
    assert ("supported dtypes: bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, "
            "float16, float32, float64") in msg
    assert (x.dtype.str if name == "byte-swapped" else str(x.dtype)) in msg


@pytest.mark.parametrize("backend", ["interpreter", "numba"])
def test_byte_swapped_array_is_refused_clearly_even_after_a_native_call(backend):
    """It reached Numba as a ``pyobject`` and failed with "No matching definition"."""
    f = jit(lambda x: x * 2, backend=backend)
    np.testing.assert_array_equal(f(np.arange(3.0)), [0.0, 2.0, 4.0])
    with pytest.raises(TypeError, match=r"(?s)argument x has the non-native byte order "
                       r"dtype '>f8'.*newbyteorder"):
        f(np.arange(3.0).astype(">f8"))


# --- Python ints beyond int64 ----------------------------------------------------------------


def test_python_int_argument_beyond_int64_names_it():
    f = interp(lambda x, n: x + n)
    f(np.ones(2), 3)                                    # an int argument is cached...
    where = here(2)
    with pytest.raises(OverflowError) as info:
        f(np.ones(2), 2**70)                            # ...but 2**70 must not hit that entry
    msg = str(info.value)
    assert "argument n" in msg and "int64" in msg and where in msg and "float(n)" in msg


def test_int_constant_beyond_int64_in_traced_code_names_the_line():
    def f(x):
        return x + 2**70

    with pytest.raises(OverflowError):
        f(np.ones(2, np.int64))                         # NumPy refuses it too
    with pytest.raises(OverflowError) as info:
        interp(f)(np.ones(2, np.int64))
    msg = str(info.value)
    assert f"{HERE}:{f.__code__.co_firstlineno + 1}" in msg and "int64" in msg
    assert "2.0**70" in msg


def test_int_constant_beyond_int64_with_a_float_array_is_fine_as_in_numpy():
    x = np.ones(2)
    np.testing.assert_array_equal(interp(lambda x: x + 2**70)(x), x + 2**70)


def test_int_constant_beyond_int32_with_an_int32_array_overflows_as_in_numpy():
    with pytest.raises(OverflowError, match=r"out of bounds for int32"):
        interp(lambda x: x * 2**40)(np.ones(2, np.int32))


# --- grad: inputs and outputs ----------------------------------------------------------------


def sq(x):
    return (x * x).sum()


@pytest.mark.parametrize("inside_jit", [False, True])
def test_grad_of_an_integer_input_says_to_cast(inside_jit):
    g = grad(sq)
    where = here(2)
    with pytest.raises(TypeError) as info:
        (jit(g, backend="interpreter") if inside_jit else g)(np.arange(3))
    msg = str(info.value)
    assert "argument x" in msg and "int64" in msg and "float inputs" in msg
    assert "x.astype(np.float64)" in msg and where in msg


def test_grad_of_a_python_int_says_to_pass_a_float():
    with pytest.raises(TypeError, match=r"(?s)argument x is a Python int.*3\.0 instead of 3"):
        grad(lambda x: x * 2.0)(3)


def test_grad_of_a_non_scalar_output_names_the_shape():
    where = here(2)
    with pytest.raises(TypeError) as info:
        grad(lambda x: x * 2)(np.ones(3))
    msg = str(info.value)
    assert "shape (3,)" in msg and ".sum()" in msg and "vjp" in msg and where in msg


def test_grad_of_a_tuple_output_suggests_has_aux_or_indexing():
    where = here(2)
    with pytest.raises(TypeError) as info:
        grad(lambda x: (x.sum(), x.mean()))(np.ones(3))
    msg = str(info.value)
    assert "returned a tuple of 2 values" in msg and "has_aux=True" in msg
    assert "[0]" in msg and where in msg


def test_grad_of_an_integer_output_says_float():
    with pytest.raises(TypeError, match=r"(?s)returned a scalar of dtype int64.*float"):
        grad(lambda x: x.astype(np.int64).sum())(np.ones(3))


def test_grad_with_has_aux_still_works():
    g, aux = grad(lambda x: (sq(x), x.shape[0]), has_aux=True)(np.ones(3))
    np.testing.assert_array_equal(g, [2.0, 2.0, 2.0])
    assert aux == 3


# --- import tracejit -------------------------------------------------------------------------


def test_nn_and_optim_are_attributes_of_tracejit_imported_on_first_use():
    code = ("import sys, tracejit\n"
            "assert 'tracejit.nn' not in sys.modules and 'tracejit.optim' not in sys.modules\n"
            "tracejit.nn.functional.relu; tracejit.nn.Module; tracejit.nn.Linear\n"
            "tracejit.optim.Adam\n"
            "assert 'nn' in dir(tracejit)\n"
            "try:\n    tracejit.no_such_thing\nexcept AttributeError:\n    pass\n"
            "else:\n    raise SystemExit('no AttributeError')\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(tracejit.__file__)))
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
