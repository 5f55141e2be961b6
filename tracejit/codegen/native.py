"""Native-code building blocks for the parallel hand-off (handoff.py): atomic operations on
an int64 array, a spin-wait hint, typed pointers from addresses, and calling compiled code by
address.

Calling a kernel by the address of its C wrapper (every Numba function has one, named
``fndesc.llvm_cfunc_wrapper_name``) runs it from native code without linking it into the
caller's module: nothing is compiled twice, and no GIL is needed to call it.
"""
from __future__ import annotations

from llvmlite import ir as llvm_ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _slot(context, builder, sig, array, index):
    ary = context.make_array(sig.args[0])(context, builder, array)
    return builder.gep(ary.data, [index])


def _int64_array(arr):
    return isinstance(arr, types.Array) and arr.dtype == types.int64 and arr.ndim == 1


@intrinsic
def atomic_load(typingctx, arr, idx):
    """``arr[idx]``, read atomically (sequentially consistent)."""
    if not _int64_array(arr):
        return None

    def codegen(context, builder, sig, args):
        return builder.load_atomic(_slot(context, builder, sig, *args), "seq_cst", 8)
    return types.int64(arr, idx), codegen


@intrinsic
def atomic_store(typingctx, arr, idx, val):
    """``arr[idx] = val``, atomically."""
    if not _int64_array(arr):
        return None

    def codegen(context, builder, sig, args):
        builder.store_atomic(args[2], _slot(context, builder, sig, args[0], args[1]),
                             "seq_cst", 8)
        return context.get_dummy_value()
    return types.none(arr, idx, types.int64), codegen


@intrinsic
def atomic_add(typingctx, arr, idx, val):
    """``arr[idx] += val`` atomically; the value before."""
    if not _int64_array(arr):
        return None

    def codegen(context, builder, sig, args):
        return builder.atomic_rmw("add", _slot(context, builder, sig, args[0], args[1]),
                                  args[2], "seq_cst")
    return types.int64(arr, idx, types.int64), codegen


@intrinsic
def atomic_claim(typingctx, arr, idx, expected):
    """``arr[idx] = expected + 1`` if it still holds ``expected``: whether it did."""
    if not _int64_array(arr):
        return None

    def codegen(context, builder, sig, args):
        one = llvm_ir.Constant(llvm_ir.IntType(64), 1)
        res = builder.cmpxchg(_slot(context, builder, sig, args[0], args[1]), args[2],
                              builder.add(args[2], one), "seq_cst", "seq_cst")
        return builder.extract_value(res, 1)
    return types.boolean(arr, idx, types.int64), codegen


@intrinsic
def spin_pause(typingctx):
    """The CPU's spin-wait hint (x86 ``pause``), or nothing on other targets."""
    def codegen(context, builder, sig, args):
        if str(builder.module.triple).startswith(("x86_64", "i686", "i386")):
            fn = cgutils.get_or_insert_function(
                builder.module, llvm_ir.FunctionType(llvm_ir.VoidType(), []),
                "llvm.x86.sse2.pause")
            builder.call(fn, [])
        return context.get_dummy_value()
    return types.none(), codegen


@intrinsic
def yield_cpu(typingctx):
    """``sched_yield()``: give the core to another runnable thread if there is one (a spinning
    thread on a machine that others keep busy); returns at once on an idle core."""
    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(
            builder.module, llvm_ir.FunctionType(llvm_ir.IntType(32), []), "sched_yield")
        builder.call(fn, [])
        return context.get_dummy_value()
    return types.none(), codegen


@intrinsic
def pointer_to(typingctx, addr, example):
    """The address ``addr`` as a pointer to values of ``example``'s type (for ``carray``)."""
    ptrty = types.CPointer(example)

    def codegen(context, builder, sig, args):
        return builder.inttoptr(args[0], context.get_value_type(ptrty))
    return ptrty(types.int64, example), codegen


@intrinsic
def bits_to_f64(typingctx, x):
    """Reinterpret the bits of an int64 as a float64."""
    if x != types.int64:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], llvm_ir.DoubleType())
    return types.float64(types.int64), codegen


@intrinsic
def call_address(typingctx, addr, args):
    """Call the C wrapper at ``addr`` of a Numba function returning int64 with the values of
    the tuple ``args`` (of exactly its parameter types)."""
    if not isinstance(args, types.BaseTuple):
        return None

    def codegen(context, builder, sig, llargs):
        fnaddr, tup = llargs
        tys = sig.args[1].types
        fnty = llvm_ir.FunctionType(context.get_value_type(types.int64),
                                    [context.get_value_type(t) for t in tys])
        fn = builder.inttoptr(fnaddr, fnty.as_pointer())
        return builder.call(fn, [builder.extract_value(tup, k) for k in range(len(tys))])
    return types.int64(types.int64, args), codegen


@intrinsic
def copy_elements(typingctx, dst, src, n):
    """``dst[:n] = src[:n]`` for contiguous 1-D arrays of one dtype (flat views made by
    ``reshape``, which checks), as one ``memmove``: a copy loop (a loop driver's carries and
    stacked outputs) is vectorized into a hundred lines of machine code for LLVM to build."""
    if not (isinstance(dst, types.Array) and isinstance(src, types.Array)
            and dst.dtype == src.dtype and dst.ndim == src.ndim == 1
            and dst.layout in "CA" and src.layout in "CA" and isinstance(n, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        d = context.make_array(sig.args[0])(context, builder, args[0])
        s = context.make_array(sig.args[1])(context, builder, args[1])
        count = context.cast(builder, args[2], sig.args[2], types.int64)
        dtype = sig.args[0].dtype
        itemsize = 1 if dtype == types.boolean else dtype.bitwidth // 8
        cgutils.raw_memmove(builder, d.data, s.data, count, itemsize)
        return context.get_dummy_value()
    return types.none(dst, src, n), codegen


@intrinsic
def same_data(typingctx, a, b):
    """Whether arrays ``a`` and ``b`` start at the same address: a matmul kernel that adds
    its product to an input (``c + a @ b``) given that input's own buffer as its output
    updates it in place, and copies it first otherwise (matmul.py)."""
    if not (isinstance(a, types.Array) and isinstance(b, types.Array)):
        return None

    def codegen(context, builder, sig, args):
        x = context.make_array(sig.args[0])(context, builder, args[0])
        y = context.make_array(sig.args[1])(context, builder, args[1])
        return builder.icmp_unsigned("==", builder.ptrtoint(x.data, llvm_ir.IntType(64)),
                                     builder.ptrtoint(y.data, llvm_ir.IntType(64)))
    return types.boolean(a, b), codegen
