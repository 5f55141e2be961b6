"""Issue 13's corpus (benchmarks/real_code): our rewrites of real NumPy code (NPBench, picoGPT,
min-char-rnn, cs231n, HIPS autograd, numpy-ml) give eager NumPy's results under jit, and their
gradients match autograd's (or central differences where autograd is absent or cannot run
the code). The fast test runs them on the NumPy-tier backend (no Numba compiles); the slow one
compiled. Cases that fail for a known tracejit gap are strict xfails naming it, so a fix shows
up here as an XPASS to remove from the list."""
import pytest

from benchmarks.real_code import CASES, check_case

KNOWN_FAILURES = {
    "npbench_cholesky2": "gradient: np.linalg.cholesky's vjp is the symmetric one (reads both "
                         "triangles); NumPy reads the lower one only, so differences disagree",
    "npbench_contour_integral": "complex128 is not a supported dtype",
    "npbench_mandelbrot1": "complex128 is not a supported dtype",
    "npbench_nbody": "np.ndarray(n) (the constructor) makes a NumPy array, which cannot hold "
                     "the traced values written into it (KE[0] = ...)",
}


def _params():
    for c in CASES:
        marks = ([pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[c.name])]
                 if c.name in KNOWN_FAILURES else [])
        yield pytest.param(c, id=c.name, marks=marks)


def _assert_passes(c, backend):
    row = check_case(c, backend=backend, timed=False)
    assert row["ok"], row


def test_known_failures_name_existing_cases():
    assert set(KNOWN_FAILURES) <= {c.name for c in CASES}


def test_corpus_holds_enough_real_code():
    assert len(CASES) >= 80


@pytest.mark.parametrize("c", list(_params()))
def test_case_matches_numpy_and_gradient_on_numpy_tier(c):
    _assert_passes(c, "numpy")


@pytest.mark.slow
@pytest.mark.parametrize("c", list(_params()))
def test_case_matches_numpy_and_gradient_compiled(c):
    _assert_passes(c, None)
