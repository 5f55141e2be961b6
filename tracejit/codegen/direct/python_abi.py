"""Calling a direct kernel from Python: one ``METH_FASTCALL`` C function for every kernel
(``tracejit_call_kernel``, written in LLVM IR, compiled once and kept on disk) that reads NumPy
arrays and Python numbers into argument slots as a kernel's descriptor says, releases the GIL
around the kernel and raises the kernel's exceptions. Each kernel module adds only a small
adapter (``<kernel>_py``) that loads its arguments from the slots and calls it.

The function object of a kernel is a builtin function whose ``self`` is the kernel's
descriptor (a ctypes array: the adapter's address, the argument count, the slot count, then
per argument its kind, number of dimensions, dtype, the flags it needs and its item size).
Before, each kernel had a wrapper of its own: 12 ms of building IR, 9 ms of printing it and
9 ms of LLVM per kernel, a third of a kernel's compile (issue #14).

It checks what Numba's dispatcher would check for the kernel's one signature (an ndarray of
the dtype, number of dimensions and layout, aligned, and writeable unless read-only) and
raises TypeError otherwise, as a Numba kernel with compilation disabled does: program.py
answers a TypeError by copying the arguments into the planned layout.

Arrays are read through the fields of NumPy's ``PyArrayObject`` and ``PyArray_Descr``, whose
offsets have not moved since NumPy 1.7 and are the same in NumPy 2; ``layout_ok()`` checks them
against real arrays once per process (little-endian machines only), and the direct compiler is
off where they differ.
"""
from __future__ import annotations

import ctypes
import sys

import numpy as np
from llvmlite import ir
from numba import types

from .values import F64, I8, I32, I64, Val, array_struct, cast

_DATA, _ND, _DIMS, _STRIDES, _DESCR, _FLAGS = 16, 24, 32, 40, 56, 64
_DESCR_TYPEOBJ, _DESCR_BYTEORDER = 16, 26
_C_CONTIGUOUS, _F_CONTIGUOUS, _ALIGNED, _WRITEABLE = 0x1, 0x2, 0x100, 0x400
_TYPE = 8                                  # ob_type, after ob_refcnt
METH_FASTCALL = 0x80

PTR = I8.as_pointer()

_API = {  # C API function -> (return type, argument types)
    "PyFloat_AsDouble": (F64, [PTR]),
    "PyLong_AsLongLong": (I64, [PTR]),
    "PyLong_AsUnsignedLongLongMask": (I64, [PTR]),
    "PyObject_IsTrue": (I32, [PTR]),
    "PyErr_Occurred": (PTR, []),
    "PyErr_SetString": (ir.VoidType(), [PTR, PTR]),
    "PyEval_SaveThread": (PTR, []),
    "PyEval_RestoreThread": (ir.VoidType(), [PTR]),
    "PyLong_FromLongLong": (PTR, [I64]),
    "PyType_IsSubtype": (I32, [PTR, PTR]),
}
# what an exception code from an adapter raises (0: none)
_EXCEPTIONS = ("PyExc_TypeError", "PyExc_IndexError", "PyExc_ValueError",
               "PyExc_ZeroDivisionError", "PyExc_OverflowError", "PyExc_RuntimeError",
               "tracejit_exc_LinAlgError")
_ARRAY, _FLOAT, _BOOL, _INT, _UINT = range(5)      # argument kinds in a descriptor
_HEADER, _PER_ARG = 3, 5                           # descriptor words
_B_PTR = 16                                        # a ctypes object's buffer pointer
# An array's slots: Numba's array struct as words (meminfo, parent, size, item size, data),
# then its shape and strides
_ARRAY_HEAD = 5
_HOLDERS: dict = {}                         # symbol -> ctypes object that holds an address


def register_symbols():
    """Tell LLVM where the C API and the type objects the wrappers compare with are."""
    import llvmlite.binding as llvm
    if _HOLDERS:
        return
    api = ctypes.pythonapi
    for name in _API:
        llvm.add_symbol(name, ctypes.cast(getattr(api, name), ctypes.c_void_p).value)
    for exc in ("PyExc_TypeError", "PyExc_IndexError", "PyExc_ValueError",
                "PyExc_ZeroDivisionError", "PyExc_RuntimeError", "PyExc_OverflowError"):
        var = ctypes.c_void_p.in_dll(api, exc)
        llvm.add_symbol(exc, ctypes.addressof(var))
        _HOLDERS[exc] = var
    holder = ctypes.c_int64(id(np.ndarray))
    llvm.add_symbol("tracejit_type_ndarray", ctypes.addressof(holder))
    _HOLDERS["ndarray"] = holder
    # NumPy's LinAlgError (a ValueError) has no C global: a pointer to the class of our own
    holder = ctypes.c_int64(id(np.linalg.LinAlgError))
    llvm.add_symbol("tracejit_exc_LinAlgError", ctypes.addressof(holder))
    _HOLDERS["LinAlgError"] = holder


_PROBE = (ctypes.c_int64 * 2)()


def layout_ok() -> bool:
    """Whether this NumPy's array objects have the field offsets the wrappers read."""
    a = np.zeros((3, 5), np.float32)[:, 1:4]
    base = id(a)

    def word(off, ty=ctypes.c_int64):
        return ty.from_address(base + off).value
    swapped = a.astype(">f4")
    try:
        return (sys.byteorder == "little"
                and ctypes.c_char.from_address(id(swapped.dtype) + _DESCR_BYTEORDER).value
                == b">"
                and word(_DATA) == a.__array_interface__["data"][0]
                and word(_ND, ctypes.c_int32) == 2
                and [ctypes.c_int64.from_address(word(_DIMS) + 8 * k).value
                     for k in range(2)] == [3, 3]
                and [ctypes.c_int64.from_address(word(_STRIDES) + 8 * k).value
                     for k in range(2)] == [20, 4]
                and word(_TYPE) == id(np.ndarray)
                and ctypes.c_int64.from_address(word(_DESCR) + _DESCR_TYPEOBJ).value
                == id(np.float32)
                and word(_FLAGS, ctypes.c_int32) & _ALIGNED
                and not word(_FLAGS, ctypes.c_int32) & _C_CONTIGUOUS
                and ctypes.c_void_p.from_address(id(_PROBE) + _B_PTR).value
                == ctypes.addressof(_PROBE))
    except Exception:                        # noqa: BLE001
        return False


def _api(module, name):
    ret, args = _API[name]
    try:
        return module.get_global(name)
    except KeyError:
        return ir.Function(module, ir.FunctionType(ret, args), name=name)


def _external(module, name, ty):
    try:
        return module.get_global(name)
    except KeyError:
        g = ir.GlobalVariable(module, ty, name=name)
        g.linkage = "external"
        return g


def _field(b, obj, offset: int, ty):
    p = b.gep(obj, [I64(offset)])
    return b.load(b.bitcast(p, ty.as_pointer()))


def _cstring(module, text: str, name: str):
    data = bytearray(text.encode()) + b"\0"
    g = ir.GlobalVariable(module, ir.ArrayType(I8, len(data)), name=name)
    g.global_constant = True
    g.linkage = "internal"
    g.initializer = ir.Constant(ir.ArrayType(I8, len(data)), data)
    return g.bitcast(PTR)


def _raise(b, module, exc: str, message_global):
    err = b.load(_external(module, exc, PTR))
    b.call(_api(module, "PyErr_SetString"), [err, message_global])
    b.ret(ir.Constant(PTR, None))


def build_adapter(module: ir.Module, kernel: ir.Function, name: str, argtypes: tuple,
                  errors: list):
    """Add ``name(slots, message, exception) -> status`` to ``module``: it loads the kernel's
    arguments from the slots ``tracejit_call_kernel`` filled, calls the kernel, and says
    which exception its status raises (a code of ``_EXCEPTIONS``, 1-based; 0: none, the
    status is the kernel's result) with which message."""
    fn = ir.Function(module, ir.FunctionType(I64, [I64.as_pointer(), PTR.as_pointer(),
                                                   I32.as_pointer()]), name=name)
    # Not optimized, the kernel not inlined into it: LLVM's time goes to the kernel alone
    fn.attributes.add("optnone")
    fn.attributes.add("noinline")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    slots, message, exception = fn.args
    llargs, at = [], 0
    for t in argtypes:
        slot = b.gep(slots, [I64(at)])
        if isinstance(t, types.Array):
            llargs.append(b.load(b.bitcast(slot, array_struct(t).as_pointer())))
            at += _ARRAY_HEAD + 2 * t.ndim
            continue
        if t in (types.float32, types.float64):
            x = Val(types.float64, b.load(b.bitcast(slot, F64.as_pointer())))
            llargs.append(cast(b, x, t).value)
        elif t == types.boolean:
            llargs.append(b.icmp_signed("!=", b.load(slot), I64(0)))
        elif isinstance(t, types.Integer):
            x = Val(types.int64 if t.signed else types.uint64, b.load(slot))
            llargs.append(cast(b, x, t).value)
        else:
            raise TypeError(f"no Python conversion for {t}")
        at += 1
    status = b.call(kernel, llargs)
    b.store(I32(0), exception)
    if not errors:                       # the kernel's int64 is its result
        b.ret(status)
        return fn
    raised = fn.append_basic_block("raised")
    done = fn.append_basic_block("done")
    b.cbranch(b.icmp_signed("==", status, I64(0)), done, raised)
    b.position_at_end(done)
    b.ret(status)
    b.position_at_end(raised)
    bad = fn.append_basic_block("bad_status")
    switch = b.switch(status, bad)
    for code, (cls, text) in enumerate(errors, start=1):
        block = fn.append_basic_block(f"error{code}")
        switch.add_case(I64(code), block)
        b.position_at_end(block)
        b.store(I32(_EXCEPTIONS.index(_exception_symbol(cls)) + 1), exception)
        b.store(_cstring(module, text, f"{name}.msg{code}"), message)
        b.ret(status)
    b.position_at_end(bad)
    b.store(I32(1), exception)
    b.store(_cstring(module, _BAD_ARGUMENTS, f"{name}.bad"), message)
    b.ret(status)
    return fn


_BAD_ARGUMENTS = ("tracejit: a kernel was called with arguments of other types or layouts "
                  "than it was compiled for")


def _exception_symbol(cls) -> str:
    if issubclass(cls, np.linalg.LinAlgError):
        return "tracejit_exc_LinAlgError"
    for exc in (IndexError, ValueError, ZeroDivisionError, OverflowError):
        if issubclass(cls, exc):
            return f"PyExc_{exc.__name__}"
    return "PyExc_RuntimeError"


# -- the one wrapper ---------------------------------------------------------------------------
_WRAPPER = "tracejit_call_kernel"


def _wrapper_ir() -> str:
    """``tracejit_call_kernel(self, args, nargs)``: checks and reads each argument as the
    descriptor (``self``'s buffer) says, into slots on the stack, then calls the adapter."""
    module = ir.Module(name=_WRAPPER)
    fn = ir.Function(module, ir.FunctionType(PTR, [PTR, PTR.as_pointer(), I64]), name=_WRAPPER)
    self_, args, nargs = fn.args
    blocks = {n: fn.append_basic_block(n) for n in (
        "entry", "loop", "argument", "array", "is_array", "array_ok", "dims", "dims_done",
        "float", "bool", "int", "uint", "scalar", "next", "call", "raise", "bad", "pending")}
    b = ir.IRBuilder(blocks["entry"])
    desc = _field(b, self_, _B_PTR, I64.as_pointer())
    adapter_type = ir.FunctionType(I64, [I64.as_pointer(), PTR.as_pointer(), I32.as_pointer()])
    adapter = b.inttoptr(b.load(b.gep(desc, [I64(0)])), adapter_type.as_pointer())
    n = b.load(b.gep(desc, [I64(1)]))
    slots = b.alloca(I64, b.load(b.gep(desc, [I64(2)])), name="slots")
    message = b.alloca(PTR, name="message")
    exception = b.alloca(I32, name="exception")
    ndarray = b.inttoptr(b.load(_external(module, "tracejit_type_ndarray", I64)), PTR)
    b.cbranch(b.icmp_signed("==", nargs, n), blocks["loop"], blocks["bad"])

    # for k, at in arguments and their first slots
    b.position_at_end(blocks["loop"])
    k = b.phi(I64, name="k")
    at = b.phi(I64, name="at")
    k.add_incoming(I64(0), blocks["entry"])
    at.add_incoming(I64(0), blocks["entry"])
    b.cbranch(b.icmp_signed("<", k, n), blocks["argument"], blocks["call"])
    b.position_at_end(blocks["argument"])
    obj = b.load(b.gep(args, [k]))
    d = b.gep(desc, [b.add(I64(_HEADER), b.mul(k, I64(_PER_ARG)))])

    def word(i):
        return b.load(b.gep(d, [I64(i)]))
    slot = b.gep(slots, [at])
    kind = word(0)
    switch = b.switch(kind, blocks["bad"])
    for code, name in ((_ARRAY, "array"), (_FLOAT, "float"), (_BOOL, "bool"), (_INT, "int"),
                       (_UINT, "uint")):
        switch.add_case(I64(code), blocks[name])

    # an array: an ndarray (or a subclass) before any of its fields is read
    b.position_at_end(blocks["array"])
    typ = _field(b, obj, _TYPE, PTR)
    exact = b.icmp_unsigned("==", typ, ndarray)
    with b.if_else(exact) as (then, otherwise):
        with then:
            exact_block = b.block
        with otherwise:                          # a subclass (np.memmap) is an array too
            sub = b.icmp_signed("!=", b.call(_api(module, "PyType_IsSubtype"), [typ, ndarray]),
                                I32(0))
            sub_block = b.block
    is_array = b.phi(ir.IntType(1))
    is_array.add_incoming(exact, exact_block)
    is_array.add_incoming(sub, sub_block)
    b.cbranch(is_array, blocks["is_array"], blocks["bad"])
    b.position_at_end(blocks["is_array"])
    ndim = word(1)
    good = b.icmp_signed("==", b.sext(_field(b, obj, _ND, I32), I64), ndim)
    descr = _field(b, obj, _DESCR, PTR)
    good = b.and_(good, b.icmp_unsigned("==", _field(b, descr, _DESCR_TYPEOBJ, I64), word(2)))
    # a byte-swapped array has the same scalar type: its byte order must not be '>'
    good = b.and_(good, b.icmp_unsigned("!=", _field(b, descr, _DESCR_BYTEORDER, I8),
                                        I8(ord(">"))))
    need = b.trunc(word(3), I32)
    flags = _field(b, obj, _FLAGS, I32)
    good = b.and_(good, b.icmp_unsigned("==", b.and_(flags, need), need))
    b.cbranch(good, blocks["array_ok"], blocks["bad"])
    # Numba's array struct: meminfo null, parent the object, size, item size, data, shape,
    # strides
    b.position_at_end(blocks["array_ok"])
    b.store(I64(0), slot)
    b.store(b.ptrtoint(obj, I64), b.gep(slot, [I64(1)]))
    b.store(word(4), b.gep(slot, [I64(3)]))
    b.store(b.ptrtoint(_field(b, obj, _DATA, PTR), I64), b.gep(slot, [I64(4)]))
    dims = _field(b, obj, _DIMS, I64.as_pointer())
    strides = _field(b, obj, _STRIDES, I64.as_pointer())
    b.branch(blocks["dims"])
    b.position_at_end(blocks["dims"])
    i = b.phi(I64, name="i")
    size = b.phi(I64, name="size")
    i.add_incoming(I64(0), blocks["array_ok"])
    size.add_incoming(I64(1), blocks["array_ok"])
    more = b.icmp_signed("<", i, ndim)
    body = fn.append_basic_block("dim")
    b.cbranch(more, body, blocks["dims_done"])
    b.position_at_end(body)
    extent = b.load(b.gep(dims, [i]))
    b.store(extent, b.gep(slot, [b.add(I64(_ARRAY_HEAD), i)]))
    b.store(b.load(b.gep(strides, [i])),
            b.gep(slot, [b.add(b.add(I64(_ARRAY_HEAD), ndim), i)]))
    i.add_incoming(b.add(i, I64(1)), body)
    size.add_incoming(b.mul(size, extent), body)
    b.branch(blocks["dims"])
    b.position_at_end(blocks["dims_done"])
    b.store(size, b.gep(slot, [I64(2)]))
    array_next = b.add(at, b.add(I64(_ARRAY_HEAD), b.mul(ndim, I64(2))))
    b.branch(blocks["next"])

    # a Python number: converted (an error it raises is the caller's)
    scalars = []
    for name, api, convert in (
            ("float", "PyFloat_AsDouble", lambda x: b.bitcast(x, I64)),
            ("bool", "PyObject_IsTrue", lambda x: b.zext(b.icmp_signed("!=", x, I32(0)), I64)),
            ("int", "PyLong_AsLongLong", lambda x: x),
            # (the Mask variant takes NumPy's unsigned scalars through __index__, as the
            # signed one does; the values are in range: the plan chose the type)
            ("uint", "PyLong_AsUnsignedLongLongMask", lambda x: x)):
        b.position_at_end(blocks[name])
        x = b.call(_api(module, api), [obj])
        if name == "float":
            maybe = b.fcmp_ordered("==", x, F64(-1.0))
        elif name == "bool":
            maybe = b.icmp_signed("<", x, I32(0))
        else:
            maybe = b.icmp_signed("==", x, I64(-1))
        scalars.append((convert(x), maybe, b.block))
        b.branch(blocks["scalar"])
    b.position_at_end(blocks["scalar"])
    value = b.phi(I64)
    maybe = b.phi(ir.IntType(1))
    for v, m, block in scalars:
        value.add_incoming(v, block)
        maybe.add_incoming(m, block)
    error = b.icmp_unsigned("!=", b.call(_api(module, "PyErr_Occurred"), []),
                            ir.Constant(PTR, None))
    b.store(value, slot)
    scalar_next = b.add(at, I64(1))
    scalar_done = b.block
    b.cbranch(b.and_(maybe, error), blocks["pending"], blocks["next"])
    b.position_at_end(blocks["pending"])
    b.ret(ir.Constant(PTR, None))

    b.position_at_end(blocks["next"])
    following = b.phi(I64)
    following.add_incoming(array_next, blocks["dims_done"])
    following.add_incoming(scalar_next, scalar_done)
    k.add_incoming(b.add(k, I64(1)), blocks["next"])
    at.add_incoming(following, blocks["next"])
    b.branch(blocks["loop"])

    # the kernel, without the GIL
    b.position_at_end(blocks["call"])
    b.store(I32(0), exception)
    state = b.call(_api(module, "PyEval_SaveThread"), [])
    status = b.call(adapter, [slots, message, exception])
    b.call(_api(module, "PyEval_RestoreThread"), [state])
    code = b.load(exception)
    result = fn.append_basic_block("result")
    b.cbranch(b.icmp_signed("==", code, I32(0)), result, blocks["raise"])
    b.position_at_end(result)
    b.ret(b.call(_api(module, "PyLong_FromLongLong"), [status]))
    b.position_at_end(blocks["raise"])
    text = b.load(message)
    switch = b.switch(code, blocks["bad"])
    for c, exc in enumerate(_EXCEPTIONS, start=1):
        block = fn.append_basic_block(exc)
        switch.add_case(I32(c), block)
        b.position_at_end(block)
        b.call(_api(module, "PyErr_SetString"), [b.load(_external(module, exc, PTR)), text])
        b.ret(ir.Constant(PTR, None))
    b.position_at_end(blocks["bad"])
    _raise(b, module, "PyExc_TypeError", _cstring(module, _BAD_ARGUMENTS, "bad_arguments"))
    return str(module)


_wrapper_address = None


def wrapper_address(folder, version: str) -> int:
    """The address of ``tracejit_call_kernel``: from this process, the disk, or compiled."""
    global _wrapper_address
    if _wrapper_address is None:
        from . import engine
        register_symbols()
        # At O1: glue around CPython's API, as fast per call as at O3 (2.2-2.8 us a jitted
        # call of 8-element arrays either way) for half the LLVM time (37 against 70 ms).
        key = f"{version}|{_WRAPPER}|O1|{_HEADER},{_PER_ARG},{_B_PTR}"
        (address,), _, _ = engine.load(key, [_WRAPPER], folder, lambda: (_wrapper_ir(), []),
                                       speed=1)
        _wrapper_address = address
    return _wrapper_address


def descriptor_words(adapter: int, argtypes: tuple) -> list:
    """What ``tracejit_call_kernel`` reads for a kernel: see the module's docstring."""
    words, slots = [], 0
    for t in argtypes:
        if isinstance(t, types.Array):
            need = _ALIGNED | (_WRITEABLE if t.mutable else 0)
            need |= {"C": _C_CONTIGUOUS, "F": _F_CONTIGUOUS}.get(t.layout, 0)
            size = 1 if t.dtype == types.boolean else t.dtype.bitwidth // 8
            words += [_ARRAY, t.ndim, id(np.dtype(str(t.dtype)).type), need, size]
            slots += _ARRAY_HEAD + 2 * t.ndim
            continue
        if t in (types.float32, types.float64):
            kind = _FLOAT
        elif t == types.boolean:
            kind = _BOOL
        elif isinstance(t, types.Integer):
            kind = _INT if t.signed else _UINT
        else:
            raise TypeError(f"no Python conversion for {t}")
        words += [kind, 0, 0, 0, 0]
        slots += 1
    return [adapter, len(argtypes), slots] + words


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


_new_function = ctypes.pythonapi.PyCFunction_NewEx
_new_function.restype = ctypes.py_object
_new_function.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.py_object]


def python_function(adapter: int, argtypes: tuple, wrapper: int):
    """A builtin function calling the kernel whose adapter is at ``adapter`` through the
    wrapper at ``wrapper``, and its descriptor (its ``self``, which holds its method
    definition: that must outlive it)."""
    words = descriptor_words(adapter, argtypes)
    desc = (ctypes.c_int64 * len(words))(*words)
    desc.mdef = _MethodDef(b"kernel", wrapper, METH_FASTCALL, None)
    return _new_function(ctypes.addressof(desc.mdef), desc, None), desc
