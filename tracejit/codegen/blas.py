"""BLAS gemm (gemv for one row or column) on strided 2-D views, for the generated matmul
kernels.

Numba's ``np.dot`` hands BLAS only arrays that are C- or F-contiguous as a whole and copies any
other operand first. The row block of a transposed view that a thread takes when a product like
``dW = h.T @ d`` is split across threads is neither, so it was copied on every call. BLAS itself
takes a leading dimension per operand: any view with one unit stride goes in as it is, so
``gemm`` splits a product into row or column blocks with no copies.

``gemm`` calls the BLAS Numba's ``np.dot`` uses (SciPy's, through Numba's C helper
``numba_xxgemm``). The helper is linked by name, so kernels that call it stay cacheable. It looks
up SciPy's function pointer on its first call while taking the GIL: a first call from a worker
thread of a parallel kernel, while the main thread holds the GIL, would deadlock, so
``resolve_blas()`` makes that first call from the main thread before any program runs.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir as llvm_ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

_KINDS = {types.float32: "s", types.float64: "d"}


def _blas_kind(*arrays) -> str | None:
    """'s' or 'd' when all are 2-D arrays of one float dtype BLAS takes, else None."""
    if not all(isinstance(x, types.Array) and x.ndim == 2 for x in arrays):
        return None
    dtypes = {x.dtype for x in arrays}
    return _KINDS.get(arrays[0].dtype) if len(dtypes) == 1 else None


class _Call:
    """What both BLAS calls build: chars, the arrays' data pointers, alpha = 1 and beta (0:
    the result replaces ``c``, 1: it is added to ``c``)."""

    def __init__(self, context, builder, dtype, beta):
        self.builder = builder
        self.context = context
        self.char = llvm_ir.IntType(8)
        self.intp = context.get_value_type(types.intp)
        self.voidp = cgutils.voidptr_t
        value = context.get_value_type(dtype)
        self.alpha = builder.bitcast(cgutils.alloca_once_value(builder, value(1.0)), self.voidp)
        slot = cgutils.alloca_once(builder, value)
        builder.store(builder.sitofp(beta, value), slot)
        self.beta = builder.bitcast(slot, self.voidp)

    def data(self, ty, value):
        ary = self.context.make_array(ty)(self.context, self.builder, value)
        return self.builder.bitcast(ary.data, self.voidp)

    def trans(self, flag):
        b = self.builder
        return b.select(b.icmp_unsigned("!=", flag, flag.type(0)),
                        self.char(ord("t")), self.char(ord("n")))

    def call(self, name, argtypes, args):
        fnty = llvm_ir.FunctionType(llvm_ir.IntType(32), argtypes)
        fn = cgutils.get_or_insert_function(self.builder.module, fnty, name)
        return self.builder.call(fn, args)


@intrinsic
def _xxgemm(typingctx, ta, tb, m, n, k, a, lda, b, ldb, c, ldc, beta):
    """Column-major ``c = op(a) @ op(b) + beta * c`` (op transposes where ``ta``/``tb`` are
    true; ``beta`` 0 or 1)."""
    kind = _blas_kind(a, b, c)
    if kind is None:
        return None

    def codegen(context, builder, signature, args):
        v_ta, v_tb, v_m, v_n, v_k, v_a, v_lda, v_b, v_ldb, v_c, v_ldc, v_beta = args
        x = _Call(context, builder, a.dtype, v_beta)
        ch, ip, vp = x.char, x.intp, x.voidp
        return x.call("numba_xxgemm",
                      [ch, ch, ch, ip, ip, ip, vp, vp, ip, vp, ip, vp, vp, ip],
                      [ch(ord(kind)), x.trans(v_ta), x.trans(v_tb), v_m, v_n, v_k, x.alpha,
                       x.data(a, v_a), v_lda, x.data(b, v_b), v_ldb, x.beta, x.data(c, v_c),
                       v_ldc])

    sig = types.int32(types.boolean, types.boolean, types.intp, types.intp, types.intp, a,
                      types.intp, b, types.intp, c, types.intp, types.intp)
    return sig, codegen


@intrinsic
def _xxgemv(typingctx, trans, m, n, a, lda, x, y, beta):
    """Column-major ``y = op(a) @ x + beta * y`` with unit-stride ``x`` and ``y`` (the data of
    their first element): BLAS gemv, 2-3x faster than a gemm with one column."""
    kind = _blas_kind(a, x, y)
    if kind is None:
        return None

    def codegen(context, builder, signature, args):
        v_t, v_m, v_n, v_a, v_lda, v_x, v_y, v_beta = args
        c = _Call(context, builder, a.dtype, v_beta)
        ch, ip, vp = c.char, c.intp, c.voidp
        return c.call("numba_xxgemv", [ch, ch, ip, ip, vp, vp, ip, vp, vp, vp],
                      [ch(ord(kind)), c.trans(v_t), v_m, v_n, c.alpha, c.data(a, v_a), v_lda,
                       c.data(x, v_x), c.beta, c.data(y, v_y)])

    sig = types.int32(types.boolean, types.intp, types.intp, a, types.intp, x, y, types.intp)
    return sig, codegen


@njit(inline="always")
def _leading(x):
    """How BLAS can read the 2-D array ``x``: (0, ld) row-major, (1, ld) column-major, or
    (-1, 0) when neither stride is one element (it must be copied)."""
    rows, cols = x.shape
    size = x.itemsize
    s0, s1 = x.strides
    if (s1 == size or cols == 1) and (rows == 1 or (s0 % size == 0 and s0 // size >= cols)):
        return 0, max(cols, 1) if rows == 1 else s0 // size
    if (s0 == size or rows == 1) and (cols == 1 or (s1 % size == 0 and s1 // size >= rows)):
        return 1, max(rows, 1) if cols == 1 else s1 // size
    return -1, 0


@njit(cache=True)
def gemm(a, b, c, add):
    """``c[...] = a @ b`` (``add`` 0), or ``c += a @ b`` (``add`` 1: BLAS adds the product to
    ``c`` as it writes it; a gradient a loop accumulates in place takes no pass of its own),
    for 2-D float arrays; ``a``, ``b`` any views with one unit stride, ``c`` a row-major view
    (a buffer, or a row or column block of one). One function for both: one shared module
    to compile."""
    m, k = a.shape
    n = b.shape[1]
    if m == 0 or n == 0:
        return
    if k == 0:
        if add == 0:
            c[:, :] = 0
        return
    la, lda = _leading(a)
    if la < 0:
        a = np.ascontiguousarray(a)
        la, lda = 0, k
    lb, ldb = _leading(b)
    if lb < 0:
        b = np.ascontiguousarray(b)
        lb, ldb = 0, n
    size = c.itemsize
    if n == 1 and (k == 1 or b.strides[0] == size) and (m == 1 or c.strides[0] == size):
        # a matrix times a column: a row-major a is the column-major a.T
        _xxgemv(la == 0, k if la == 0 else m, m if la == 0 else k, a, lda, b, c, add)
        return
    if m == 1 and (k == 1 or a.strides[1] == size) and c.strides[1] == size:
        # a row times a matrix: c.T = b.T @ a.T
        _xxgemv(lb == 1, n if lb == 0 else k, k if lb == 0 else n, b, ldb, a, c, add)
        return
    ldc = n if m == 1 else c.strides[0] // c.itemsize
    # Row-major c = a @ b is column-major c.T = b.T @ a.T: a row-major operand, read
    # column-major, is already its own transpose.
    _xxgemm(lb == 1, la == 1, n, m, k, b, ldb, a, lda, c, ldc, add)


_resolved = False


def resolve_blas():
    """Make Numba's BLAS helper look up gemm and gemv now, from the main thread. Called
    through ctypes (the GIL held, as the helper expects), not through a jitted function: a
    jitted call would make Numba set up its whole compiler context (~250 ms of a warm start;
    codegen/warm_load.py)."""
    global _resolved
    if _resolved:
        return
    import ctypes

    from numba import _helperlib

    from .blas_threads import cython_blas_loaded
    p, n = ctypes.c_void_p, ctypes.c_ssize_t
    c = ctypes.c_char
    xxgemm = ctypes.PYFUNCTYPE(ctypes.c_int, c, c, c, n, n, n, p, p, n, p, n, p, p, n)(
        _helperlib.c_helpers["xxgemm"])
    with cython_blas_loaded():       # (Numba's helper imports it by name: found loaded)
        for kind, dt in ((b"s", np.float32), (b"d", np.float64)):
            a, out = np.ones((2, 2), dt), np.zeros((2, 2), dt)
            one, zero = np.ones(1, dt), np.zeros(1, dt)
            if xxgemm(kind, b"n", b"n", 2, 2, 2, one.ctypes.data, a.ctypes.data, 2, a.ctypes.data,
                      2, zero.ctypes.data, out.ctypes.data, 2) != 0 or not (out == 2).all():
                raise RuntimeError("Numba's BLAS helper (SciPy's BLAS) did not run a 2x2 gemm")
        xxgemv = ctypes.PYFUNCTYPE(ctypes.c_int, c, c, n, n, p, p, n, p, p, p)(
            _helperlib.c_helpers["xxgemv"])
        for kind, dt in ((b"s", np.float32), (b"d", np.float64)):
            a, x, y = np.ones((2, 2), dt), np.ones(2, dt), np.zeros(2, dt)
            one, zero = np.ones(1, dt), np.zeros(1, dt)
            if xxgemv(kind, b"n", 2, 2, one.ctypes.data, a.ctypes.data, 2, x.ctypes.data,
                      zero.ctypes.data, y.ctypes.data) != 0 or not (y == 2).all():
                raise RuntimeError("Numba's BLAS helper (SciPy's BLAS) did not run a 2x2 gemv")
    _resolved = True
