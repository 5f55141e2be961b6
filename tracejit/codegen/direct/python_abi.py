"""Calling a direct kernel from Python: a ``METH_FASTCALL`` C function, written in LLVM IR
beside the kernel, that reads NumPy arrays and Python numbers, releases the GIL around the
kernel and raises the kernel's exceptions.

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

from .values import F64, I8, I32, I64, Val, array_struct, cast, storage_type

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
    objs = {"ndarray": np.ndarray}
    for dt in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
               np.uint64, np.float32, np.float64):
        objs[np.dtype(dt).name] = dt
    for name, obj in objs.items():
        holder = ctypes.c_int64(id(obj))
        llvm.add_symbol(f"tracejit_type_{name}", ctypes.addressof(holder))
        _HOLDERS[name] = holder


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
                and not word(_FLAGS, ctypes.c_int32) & _C_CONTIGUOUS)
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


def build_wrapper(module: ir.Module, kernel: ir.Function, name: str, argtypes: tuple,
                  errors: list):
    """Add ``name(self, args, nargs)`` calling ``kernel`` to ``module``."""
    fn = ir.Function(module, ir.FunctionType(PTR, [PTR, PTR.as_pointer(), I64]), name=name)
    # Not optimized, and the kernel not inlined into it: optimizing the wrapper (with a copy
    # of the kernel inlined) took half of LLVM's time for the MLP's kernels, for checks that
    # cost nanoseconds either way
    fn.attributes.add("optnone")
    fn.attributes.add("noinline")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    fail = fn.append_basic_block("bad_argument")
    _, args, nargs = fn.args
    ok = fn.append_basic_block("count_ok")
    b.cbranch(b.icmp_signed("==", nargs, I64(len(argtypes))), ok, fail)
    b.position_at_end(ok)
    llargs = []
    for k, t in enumerate(argtypes):
        obj = b.load(b.gep(args, [I64(k)]))
        nxt = fn.append_basic_block(f"arg{k}")
        if isinstance(t, types.Array):
            good = _check_array(b, module, obj, t, fail)
            b.cbranch(good, nxt, fail)
            b.position_at_end(nxt)
            llargs.append(_array_value(b, obj, t))
            continue
        if t in (types.float32, types.float64):
            x = b.call(_api(module, "PyFloat_AsDouble"), [obj])
            maybe = b.fcmp_ordered("==", x, F64(-1.0))
            v = cast(b, Val(types.float64, x), t).value
        elif t == types.boolean:
            x = b.call(_api(module, "PyObject_IsTrue"), [obj])
            maybe = b.icmp_signed("<", x, I32(0))
            v = b.icmp_signed("!=", x, I32(0))
        elif isinstance(t, types.Integer):
            # (the Mask variant takes NumPy's unsigned scalars through __index__, as the
            # signed one does; the values are in range: the plan chose the type)
            api = "PyLong_AsLongLong" if t.signed else "PyLong_AsUnsignedLongLongMask"
            x = b.call(_api(module, api), [obj])
            maybe = b.icmp_signed("==", x, I64(-1))
            v = cast(b, Val(types.int64 if t.signed else types.uint64, x), t).value
        else:
            raise TypeError(f"no Python conversion for {t}")
        error = b.icmp_unsigned("!=", b.call(_api(module, "PyErr_Occurred"), []),
                                ir.Constant(PTR, None))
        pending = fn.append_basic_block(f"arg{k}.error")
        b.cbranch(b.and_(maybe, error), pending, nxt)
        b.position_at_end(pending)
        b.ret(ir.Constant(PTR, None))
        b.position_at_end(nxt)
        llargs.append(v)
    state = b.call(_api(module, "PyEval_SaveThread"), [])
    status = b.call(kernel, llargs)
    b.call(_api(module, "PyEval_RestoreThread"), [state])
    if not errors:                       # the kernel's int64 is its result
        b.ret(b.call(_api(module, "PyLong_FromLongLong"), [status]))
        b.position_at_end(fail)
        _raise(b, module, "PyExc_TypeError", _cstring(module, _BAD_ARGUMENTS, f"{name}.bad"))
        return fn
    done = fn.append_basic_block("done")
    raised = fn.append_basic_block("raised")
    b.cbranch(b.icmp_signed("==", status, I64(0)), done, raised)
    b.position_at_end(done)
    b.ret(b.call(_api(module, "PyLong_FromLongLong"), [I64(0)]))
    b.position_at_end(raised)
    switch = b.switch(status, fail)
    for code, (cls, message) in enumerate(errors, start=1):
        block = fn.append_basic_block(f"error{code}")
        switch.add_case(I64(code), block)
        b.position_at_end(block)
        _raise(b, module, _exception_symbol(cls), _cstring(module, message,
                                                           f"{name}.msg{code}"))
    b.position_at_end(fail)
    _raise(b, module, "PyExc_TypeError", _cstring(module, _BAD_ARGUMENTS, f"{name}.bad"))
    return fn


_BAD_ARGUMENTS = ("tracejit: a kernel was called with arguments of other types or layouts "
                  "than it was compiled for")


def _exception_symbol(cls) -> str:
    for exc in (IndexError, ValueError, ZeroDivisionError, OverflowError):
        if issubclass(cls, exc):
            return f"PyExc_{exc.__name__}"
    return "PyExc_RuntimeError"


def _check_array(b, module, obj, t: types.Array, fail):
    """Whether ``obj`` is an array of type ``t``; an object that is no ndarray at all goes to
    ``fail`` before any of an array's fields is read (a list has no ``descr`` to follow)."""
    typ = _field(b, obj, _TYPE, PTR)
    ndarray = b.inttoptr(b.load(_external(module, "tracejit_type_ndarray", I64)), PTR)
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
    array = b.function.append_basic_block("is_array")
    b.cbranch(is_array, array, fail)
    b.position_at_end(array)
    nd = _field(b, obj, _ND, I32)
    good = b.icmp_signed("==", nd, I32(t.ndim))
    descr = _field(b, obj, _DESCR, PTR)
    typeobj = _field(b, descr, _DESCR_TYPEOBJ, I64)
    expected = b.load(_external(module, f"tracejit_type_{np.dtype(str(t.dtype)).name}", I64))
    good = b.and_(good, b.icmp_unsigned("==", typeobj, expected))
    # a byte-swapped array has the same scalar type: its byte order must not be '>'
    order = _field(b, descr, _DESCR_BYTEORDER, I8)
    good = b.and_(good, b.icmp_unsigned("!=", order, I8(ord(">"))))
    need = _ALIGNED | (_WRITEABLE if t.mutable else 0)
    need |= {"C": _C_CONTIGUOUS, "F": _F_CONTIGUOUS}.get(t.layout, 0)
    flags = _field(b, obj, _FLAGS, I32)
    return b.and_(good, b.icmp_unsigned("==", b.and_(flags, I32(need)), I32(need)))


def _array_value(b, obj, t: types.Array):
    """Numba's array struct of an ndarray: meminfo null, parent the object itself."""
    st = array_struct(t)
    dims = _field(b, obj, _DIMS, I64.as_pointer())
    strides = _field(b, obj, _STRIDES, I64.as_pointer())
    v = ir.Constant(st, ir.Undefined)
    v = b.insert_value(v, ir.Constant(PTR, None), 0)
    v = b.insert_value(v, obj, 1)
    n = I64(1)
    for k in range(t.ndim):
        d = b.load(b.gep(dims, [I64(k)]))
        n = b.mul(n, d)
        v = b.insert_value(v, d, (5, k))
        v = b.insert_value(v, b.load(b.gep(strides, [I64(k)])), (6, k))
    v = b.insert_value(v, n, 2)
    size = 1 if t.dtype == types.boolean else t.dtype.bitwidth // 8
    v = b.insert_value(v, I64(size), 3)
    data = _field(b, obj, _DATA, PTR)
    return b.insert_value(v, b.bitcast(data, storage_type(t.dtype).as_pointer()), 4)


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


_new_function = ctypes.pythonapi.PyCFunction_NewEx
_new_function.restype = ctypes.py_object
_new_function.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.py_object]


def python_function(address: int, name: str):
    """A Python builtin function object calling the wrapper at ``address``; its method
    definition is kept alive with it."""
    mdef = _MethodDef(name.encode(), address, METH_FASTCALL, None)
    holder = _Keep(mdef)
    fn = _new_function(ctypes.addressof(mdef), holder, None)
    return fn, holder


class _Keep:
    """The ``self`` of a wrapper function: holds its PyMethodDef (which must outlive it)."""

    def __init__(self, mdef):
        self.mdef = mdef

