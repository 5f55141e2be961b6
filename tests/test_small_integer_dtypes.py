"""int8, int16, uint8, uint16, uint32 and uint64 end to end (issue 13: ``y.astype(np.uint8)``
labels, ``probs[np.arange(N), labels]``, ``img.astype(np.float32) / 255``).

NEP 50 promotion of every dtype pair and with Python scalars (OverflowError where NumPy 2
raises one, exact comparisons where it compares exactly), wrap-around arithmetic, reductions
with NumPy's accumulator dtypes, indexing and take with small and unsigned indices, astype both
ways, the IR text form, and gradients through uint8 inputs: each against NumPy, on the
interpreter, the NumPy tier and the compiled backend. Many checks share one jitted function, so
the compiled backend builds few kernels.
"""
import itertools
import operator

import numpy as np
import pytest

import tracejit
from gradcheck import check_grad
from tracejit.codegen import Plan, Program, handoff
from tracejit.driver import fusion_of
from tracejit.ir import interpret, parse

SMALL = ("int8", "int16", "uint8", "uint16", "uint32", "uint64")
ALL = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float32", "float64")
BACKENDS = ("interpreter", "numpy", "numba")


def interp(fn):
    return tracejit.jit(fn, backend="interpreter")


def sample(dtype, shape, seed=0) -> np.ndarray:
    """Values over the dtype's whole range, its minimum and maximum included."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind == "f":
        return (rng.standard_normal(shape) * 100).astype(dtype)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    x.flat[0], x.flat[-1] = info.min, info.max
    return x


def outcome(fn, *args):
    """fn's result, or the type of the exception it raised."""
    try:
        with np.errstate(all="ignore"):
            return fn(*args)
    except Exception as e:        # noqa: BLE001 (the type is the outcome compared)
        return type(e)


def assert_same(got, want, rtol=1e-6, path="result"):
    """Same structure, dtypes and shapes; integers and bools exactly, floats within rtol."""
    if isinstance(want, type) or isinstance(got, type):
        assert isinstance(got, type) and isinstance(want, type), f"{path}: {got} vs {want}"
        kind = next(k for k in (OverflowError, IndexError, TypeError, ValueError, Exception)
                    if issubclass(want, k))
        assert issubclass(got, kind), f"{path}: {got.__name__}, NumPy's {want.__name__}"
        return
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want), path
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, rtol, f"{path}[{i}]")
        return
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype, f"{path}: dtype {g.dtype}, NumPy's {w.dtype}"
    assert g.shape == w.shape, f"{path}: shape {g.shape}, NumPy's {w.shape}"
    if w.dtype.kind == "f":
        np.testing.assert_allclose(g, w, rtol=rtol, atol=0, equal_nan=True, err_msg=path)
    else:
        np.testing.assert_array_equal(g, w, err_msg=path)


# --- promotion (tracing only: the interpreter) ------------------------------------------------

PAIR_OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
            "truediv": operator.truediv, "lt": operator.lt, "eq": operator.eq,
            "ge": operator.ge, "xor": operator.xor, "where": lambda a, b: np.where(a != 0, a, b)}


@pytest.mark.parametrize("name", sorted(PAIR_OPS))
def test_every_dtype_pair_promotes_and_computes_as_numpy(name):
    """np.result_type on every pair, and the values (uint64 with int64: float64, and exact
    comparisons), or an error where NumPy raises one."""
    fn = PAIR_OPS[name]
    for da, db in itertools.product(ALL, ALL):
        a, b = sample(da, (4,), 1), sample(db, (4,), 2)
        assert_same(outcome(interp(fn), a, b), outcome(fn, a, b), path=f"{da} {name} {db}")


SCALARS = (1, -1, 128, 255, 256, -129, 70000, 2**40, 2**63 - 1, -2**63, 1.5, True)
BEYOND_INT64 = (2**63, 2**64, -2**63 - 1, 2**70)
SCALAR_OPS = {"add": operator.add, "mul": operator.mul, "floordiv": operator.floordiv,
              "lt": operator.lt, "le": operator.le, "eq": operator.eq, "ne": operator.ne,
              "gt": operator.gt, "max": np.maximum, "where": lambda a, s: np.where(a > 0, a, s),
              "clip_lo": lambda a, s: np.clip(a, s, None), "clip_hi": lambda a, s: np.clip(a, 7, s)}


@pytest.mark.parametrize("dtype", SMALL + ("int32", "int64"))
def test_python_scalars_are_weak_and_overflow_or_compare_as_in_numpy(dtype):
    """``u8 + 1`` stays uint8, ``u8 + 300`` and ``u8 + -1`` raise OverflowError as NumPy 2
    does, ``u8 == 300`` is all False and ``u8 < 2**70`` all True (NumPy 2 compares exactly),
    ``np.clip(u8, 0, 300)`` drops the bound that changes nothing."""
    a = sample(dtype, (5,))
    for (name, op), s in itertools.product(SCALAR_OPS.items(), SCALARS + BEYOND_INT64):
        if name == "where" and s in BEYOND_INT64:
            continue        # NumPy casts it unsafely; a Python int beyond int64 is refused
        both = not name.startswith("clip")      # np.clip(s, a) makes an int64 array of s
        for fn in (lambda a, s=s: op(a, s), lambda a, s=s: op(s, a))[:1 + both]:
            assert_same(outcome(interp(fn), a), outcome(fn, a), path=f"{dtype} {name} {s!r}")


def test_float_functions_of_small_ints_give_numpys_float_float16_too():
    """NumPy's float ufuncs pick the smallest float that holds the integers (int16 ->
    float32; int8, uint8 and bool alone: float16)."""
    i16, u16, u32 = sample("int16", (3,)), sample("uint16", (3,)), sample("uint32", (3,))
    f = interp(lambda a, b, c: (np.sqrt(b), np.exp(a / 40000), np.arctan2(a, b),
                                np.hypot(a, c), np.deg2rad(b), np.mean(a), a / b))
    with np.errstate(divide="ignore"):
        want = (np.sqrt(u16), np.exp(i16 / 40000), np.arctan2(i16, u16), np.hypot(i16, u32),
                np.deg2rad(u16), np.mean(i16), i16 / u16)
    assert_same(f(i16, u16, u32), want)
    u8, i8 = sample("uint8", (2,)), sample("int8", (2,))
    assert_same(interp(np.sqrt)(u8), np.sqrt(u8))
    assert_same(interp(np.arctan2)(i8, u8), np.arctan2(i8, u8))
    assert interp(np.exp)(np.array([True, False])).dtype == np.float16


def test_an_overflowing_python_int_names_the_line_and_the_dtypes_range():
    def f(labels):
        return labels + 300

    line = f.__code__.co_firstlineno + 1
    with pytest.raises(OverflowError, match=rf"(?s)300 out of bounds for uint8.*:{line}.*"
                                            r"\[0, 255\]"):
        interp(f)(np.zeros(3, np.uint8))
    with pytest.raises(OverflowError):
        interp(lambda x: np.max(x, initial=-1))(np.zeros(3, np.uint8))


# --- arithmetic, conversions and reductions on every backend ----------------------------------


def integer_ops(a, b):
    """Elementwise integer ops: they wrap around, and divide by zero as the backend documents
    (0, and INT_MIN // -1 wraps)."""
    return (a + b, a - b, a * b, a // b, a % b, np.fmod(a, b), -a, abs(a), a ** 3, a + 1, 2 * a,
            np.maximum(a, b), np.minimum(a, b), np.sign(a), a & b, a | b, a ^ b, ~a, a < b,
            a == b, a >= b, a > 0, np.where(a > b, a, b), np.clip(a, 1, 300),
            a.astype(np.int64), a.astype(bool), b.astype(np.uint8), b.astype(np.int16),
            b.astype(np.uint64), np.isnan(a))


def float_ops(a):
    """Conversions to and from floats (float -> int only of values in range: NumPy leaves the
    others undefined)."""
    r = (a % 100) * 0.5
    return (a.astype(np.float32) / 255, (a * 0.5).astype(a.dtype), r.astype(np.uint32),
            r.astype(np.int16))


def folded(results):
    """``results`` (of one shape) folded into one array, so that the compiled backend checks
    them in one fused kernel: integers and bools into a uint64 hash (times an odd number, then
    xor: one wrong element always changes it), floats into a float64 sum."""
    h = f = None
    for r in results:
        if r.dtype.kind == "f":
            f = r.astype(np.float64) if f is None else f * 0.5 + r
        else:
            v = r.astype(np.uint64)
            h = v if h is None else (h * np.uint64(31)) ^ v
    return f if h is None else h if f is None else (h, f)


def on_backends(compiled):
    """(dtype, backend) pairs: every dtype on the interpreter and the NumPy tier, the
    ``compiled`` ones also compiled (each compiled program costs test time)."""
    return [pytest.param(d, be, id=f"{d}-{be}") for d in SMALL for be in BACKENDS
            if be != "numba" or d in compiled]


def _operands(dtype):
    a, b = sample(dtype, (3, 5), 3), sample(dtype, (3, 5), 4)
    b[0, :2] = 0                                  # division by zero
    if np.dtype(dtype).kind == "i":
        b[1, 0] = -1                              # INT_MIN // -1 wraps
        a[1, 0] = np.iinfo(dtype).min
    return a, b


def elementwise(a, b):
    return integer_ops(a, b) + float_ops(a)


def elementwise_folded(a, b):
    return folded(integer_ops(a, b) + float_ops(a))


ELEMENTWISE = {"interpreter": tracejit.jit(elementwise, backend="interpreter"),
               "numpy": tracejit.jit(elementwise, backend="numpy"),
               "numba": tracejit.jit(elementwise_folded, backend="numba")}


# Compiled for one dtype of each kind the code generator tells apart: narrow signed (Numba
# widens, the kernel wraps back), narrow unsigned (the same, unsigned), 64-bit unsigned.
@pytest.mark.parametrize("dtype,backend", on_backends(("int8", "uint8", "uint64")))
def test_arithmetic_wraps_around_and_converts_as_numpy(dtype, backend):
    """One jitted function for every dtype: its cache keeps their programs apart. Compiled, the
    results are folded into two in one kernel (their dtypes are the trace's, checked above)."""
    a, b = _operands(dtype)
    with np.errstate(all="ignore"):
        want = (elementwise if backend != "numba" else elementwise_folded)(a, b)
    assert_same(ELEMENTWISE[backend](a, b), want)


def reductions(a):
    """NumPy's accumulators: sums and products of signed ints in int64, of unsigned in
    uint64 (NumPy 2); means in float64."""
    return (np.sum(a), a.sum(axis=0), a.sum(axis=1, keepdims=True), np.prod(a, axis=0),
            np.mean(a), a.mean(axis=1), np.max(a), np.min(a, axis=0), np.argmax(a, axis=1),
            np.argmin(a), np.cumsum(a, axis=1), np.var(a), np.ptp(a, axis=1),
            np.count_nonzero(a), np.any(a, axis=0))


def reductions_folded(a):
    """Most of reductions(), folded by shape: compiled, a kernel per kind of reduction."""
    return (folded((np.sum(a), np.max(a), np.count_nonzero(a), np.mean(a))),
            folded((a.sum(axis=0), np.prod(a, axis=0), np.min(a, axis=0))),
            folded((np.argmax(a, axis=1), np.ptp(a, axis=1))), np.cumsum(a, axis=1))


REDUCTIONS = {"interpreter": tracejit.jit(reductions, backend="interpreter"),
              "numpy": tracejit.jit(reductions, backend="numpy"),
              "numba": tracejit.jit(reductions_folded, backend="numba")}


# Compiled for uint64: unsigned sums add in uint64 whatever the input (uint8's are uint64's),
# and max and min start from its extremes (0 and 2**64 - 1, a literal beyond int64).
@pytest.mark.parametrize("dtype,backend", on_backends(("uint64",)))
def test_reductions_use_numpys_accumulator_dtypes(dtype, backend):
    a = sample(dtype, (4, 6), 5)
    with np.errstate(over="ignore"):                  # NumPy's uint64 scalars warn on wrapping
        want = (reductions if backend != "numba" else reductions_folded)(a)
    assert_same(REDUCTIONS[backend](a), want, rtol=1e-9)


def exact_comparisons(u, s, k):
    """uint64 against int64 (NumPy has exact loops, promotion would give float64) and against
    a traced Python int (whose value is unknown when tracing)."""
    return u < s, u == s, s >= u, u > k, u == k, u.astype(np.uint8) <= k


@pytest.mark.parametrize("backend", BACKENDS)
def test_uint64_compares_exactly_with_signed_ints(backend):
    u = np.array([2**53 + 1, 2**63, 2**64 - 1, 5, 0], np.uint64)
    s = np.array([2**53, 2**63 - 1, -1, 5, -2**63], np.int64)
    f = tracejit.jit(exact_comparisons, backend=backend)
    for k in (-1, 5, 2**62):
        assert_same(f(u, s, k), exact_comparisons(u, s, k))


def test_a_uint64_constant_reaches_a_kernel_run_on_threads():
    """Parallel kernels get their scalars through an int64 buffer (codegen/handoff.py): a
    uint64 beyond int64 goes as its bits."""
    x = sample("uint64", (4, 3))
    fn = tracejit.make_ir(lambda x: x * np.uint64(2**64 - 3) + np.uint64(2**63 + 1))(x)
    program = Program(Plan(fusion_of(fn), par_min=1))       # every kernel on blocks
    with np.errstate(over="ignore"):
        want = [x * np.uint64(2**64 - 3) + np.uint64(2**63 + 1)]
    assert_same(program([x]), want)                         # on threads.py's pool
    program.runner.ready.wait()                             # the hand-off, built meanwhile
    if handoff.enabled():
        assert program.runner.jobs
    assert_same(program([x]), want)


# --- indexing with small and unsigned indices -------------------------------------------------


def indexing(logits, labels):
    """A classifier's loss and picks with uint8 labels."""
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    n = len(labels)
    return (-logp[np.arange(n), labels].mean(), np.take(logits, labels, axis=1),
            np.take_along_axis(logp, labels[:, None], axis=1), logits[labels % 4],
            np.argmax(logits, axis=1) == labels, np.take(logits, labels, mode="wrap"))


@pytest.mark.parametrize("backend", ["interpreter", "numpy"])
@pytest.mark.parametrize("index_dtype", ["uint8", "int16", "uint64"])
def test_indexing_and_take_with_small_and_unsigned_labels(index_dtype, backend):
    """Indices become int64 first (NumPy's intp), so compiled, the index dtype changes only
    that conversion: the compiled gradient below gathers (and scatters) with uint8 labels."""
    rng = np.random.default_rng(6)
    logits = rng.standard_normal((6, 5))
    labels = np.array([0, 4, 2, 2, 1, 3]).astype(index_dtype)
    assert_same(tracejit.jit(indexing, backend=backend)(logits, labels),
                indexing(logits, labels), rtol=1e-12)


def uint64_picks(x, i):
    return np.take(x, i), np.take(x, i, mode="clip"), np.take(x, i, mode="wrap"), x[i]


@pytest.mark.parametrize("backend", BACKENDS)
def test_uint64_indices_are_read_as_intp_as_numpy_does(backend):
    """NumPy casts index arrays to intp: a uint64 2**64 - 1 picks the last element, and 2**63
    (INT_MIN) is out of bounds."""
    x = np.arange(5.0)
    i = np.array([1, 2**64 - 1, 4], np.uint64)
    assert_same(tracejit.jit(uint64_picks, backend=backend)(x, i), uint64_picks(x, i))
    with pytest.raises(IndexError):
        tracejit.jit(lambda x, i: x[i], backend=backend)(x, np.array([2**63], np.uint64))


# --- gradients, the text form -----------------------------------------------------------------


def classifier(w, img, labels):
    """uint8 images scaled to [0, 1] and uint8 labels: a softmax classifier's loss."""
    x = img.reshape(len(img), -1).astype(np.float64) / 255
    logits = x @ w
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(labels)), labels].mean()


def test_gradient_through_uint8_inputs_matches_finite_differences_and_compiles():
    rng = np.random.default_rng(7)
    w = rng.standard_normal((12, 3)) * 0.1
    img = rng.integers(0, 256, (5, 3, 4)).astype(np.uint8)
    labels = np.array([0, 2, 1, 1, 0], np.uint8)
    check_grad(classifier, w, img, labels)
    want = interp(tracejit.grad(classifier))(w, img, labels)
    np.testing.assert_allclose(tracejit.jit(tracejit.grad(classifier))(w, img, labels), want,
                               rtol=1e-12)
    gw, gimg, glabels = interp(lambda *args: tracejit.vjp(classifier, *args)[1](1.0))(
        w, img, labels)
    assert gimg is None and glabels is None                 # integers have no gradient
    np.testing.assert_allclose(gw, want, rtol=1e-12)


def test_ir_text_form_round_trips_every_small_integer_dtype():
    def f(a, b, c, d, e, g):
        return (a + np.uint8(255), b * np.int8(-128), c - 1, d // 3,
                e + np.uint64(2**64 - 1), g.astype(np.uint32), a.astype(np.float32) / 255)

    args = [sample(d, (3,)) for d in ("uint8", "int8", "int16", "uint16", "uint64", "uint32")]
    fn = tracejit.make_ir(f)(*args)
    text = str(fn)
    for short in ("u8[3]", "i8[3]", "i16[3]", "u16[3]", "u32[3]", "u64[3]",
                  "18446744073709551615", "-128"):
        assert short in text
    parsed = parse(text)
    assert str(parsed) == text
    with np.errstate(all="ignore"):
        assert_same(interpret(parsed, args), list(f(*args)))
