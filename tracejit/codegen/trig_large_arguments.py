"""sin and cos of float32 from 2**50 on: libm's, behind one vector branch per loop step.

mathlib.py's sin32 and cos32 reduce their argument inline in float64, which is exact below
``TRIG32_MAX``; beyond it they branch to the functions made here.

A float32 |x| >= 2**50 takes libm's ``sinf``/``cosf`` (glibc's: Payne-Hanek reduction; NumPy's
float32 sin and cos there bit for bit, its SIMD loops handing such lanes to the same calls).
sin32 and cos32 branch to ``tracejit_{sin,cos}32_large(x)``, a call LLVM may neither inline
nor speculate: in a scalar loop (strided, transposed) the branch stays and the call stays off
its path. The function's "vector-function-abi-variant" attribute names vector versions of it
(``_v{n}``, the widths LLVM picks: ``_target_choices``), so the loop vectorizer, which
if-converts the branch into a select, widens the call instead of leaving the loop scalar. A
vector version tests its lanes and, only if one is large, calls libm lane by lane
(``_lanes``: preserve_allcc on x86-64, so that the loop keeps its constants in registers);
otherwise it returns its argument, which the select drops. The direct compiler inlines the
vector versions after the O3 pipeline (engine.py): a compare, a test and a branch per vector
step, in place of the NaN select this code had. Numba's pipeline keeps the call. The
functions are internal to each module (about 17 ms more LLVM time for a kernel with sin or
cos); ``llvm.compiler.used`` keeps the vector versions until the vectorizer has used them.
"""
from __future__ import annotations

from llvmlite import ir as llvm_ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

# Below this, the inline reduction is exact; from it on, libm's sinf and cosf
TRIG32_MAX = 2.0 ** 50
_F32_ABS_MASK = 0x7FFFFFFF


def large32_name(which: str) -> str:
    return f"tracejit_{which}32_large"


def _large32_lanes(builder, x, n):
    """|x| >= 2**50 for a vector of n float32 (NaN: no, inf: yes)."""
    vt, it = x.type, llvm_ir.VectorType(llvm_ir.IntType(32), n)
    mask = llvm_ir.Constant(it, [_F32_ABS_MASK] * n)
    magnitude = builder.bitcast(builder.and_(builder.bitcast(x, it), mask), vt)
    return builder.fcmp_ordered(">=", magnitude, llvm_ir.Constant(vt, [TRIG32_MAX] * n))


def _add_attribute(fn, text: str):
    attrs = fn.attributes
    attrs._known = attrs._known | {text}     # llvmlite lists LLVM's keyword attributes only
    attrs.add(text)


def _define_large32(module, which: str, slow_cconv: str, widths: tuple, slow_lanes: int):
    """The ``_large`` functions of ``which`` (sin or cos), scalar and vector (``widths``
    lanes), in ``module``; the vector ones call libm lane by lane through a function of
    ``slow_lanes`` lanes (a whole vector register, >= every width)."""
    f32, i32 = llvm_ir.FloatType(), llvm_ir.IntType(32)
    name = large32_name(which)
    fn = llvm_ir.Function(module, llvm_ir.FunctionType(f32, [f32]), name)
    fn.linkage = "internal"
    for a in ("noinline", "cold", "minsize", "optsize", "nounwind", "readnone"):
        fn.attributes.add(a)
    _add_attribute(fn, '"vector-function-abi-variant"="%s"' % ",".join(
        f"_ZGV_LLVM_N{n}v_{name}({name}_v{n})" for n in widths))
    b = llvm_ir.IRBuilder(fn.append_basic_block("entry"))
    libm = cgutils.get_or_insert_function(module, llvm_ir.FunctionType(f32, [f32]),
                                          f"llvm.{which}.f32")
    b.ret(b.call(libm, [fn.args[0]]))

    # libm's value of each of ``slow_lanes`` lanes, one call after another, by value in and
    # out: a vector register argument and result keep LLVM from putting a vzeroupper before
    # the call and before the return (one would clear the upper halves of registers that
    # preserve_allcc promises to keep)
    wide = llvm_ir.VectorType(f32, slow_lanes)
    slow = llvm_ir.Function(module, llvm_ir.FunctionType(wide, [wide]), f"{name}_lanes")
    slow.linkage = "internal"
    slow.calling_convention = slow_cconv
    for a in ("noinline", "cold", "minsize", "optsize", "nounwind", "readnone"):
        slow.attributes.add(a)
    b = llvm_ir.IRBuilder(slow.append_basic_block("entry"))
    out = slow.args[0]
    for lane in range(slow_lanes):
        one = b.call(libm, [b.extract_element(slow.args[0], i32(lane))])
        out = b.insert_element(out, one, i32(lane))
    b.ret(out)

    vectors = []
    for n in widths:
        vt = llvm_ir.VectorType(f32, n)
        v = llvm_ir.Function(module, llvm_ir.FunctionType(vt, [vt]), f"{name}_v{n}")
        v.linkage = "internal"
        for a in ("alwaysinline", "nounwind", "readnone"):
            v.attributes.add(a)
        b = llvm_ir.IRBuilder(v.append_basic_block("entry"))
        i1s = llvm_ir.VectorType(llvm_ir.IntType(1), n)
        any_of = cgutils.get_or_insert_function(
            module, llvm_ir.FunctionType(llvm_ir.IntType(1), [i1s]),
            f"llvm.vector.reduce.or.v{n}i1")
        large, small = v.append_basic_block("large"), v.append_basic_block("small")
        b.cbranch(b.call(any_of, [_large32_lanes(b, v.args[0], n)]), large, small)
        b.position_at_end(large)
        x = v.args[0]
        if n != slow_lanes:         # n < slow_lanes: the lanes widened, then narrowed again
            x = b.shuffle_vector(x, x, llvm_ir.Constant(
                llvm_ir.VectorType(i32, slow_lanes), [k % n for k in range(slow_lanes)]))
        y = b.call(slow, [x], cconv=slow_cconv)
        if n != slow_lanes:
            y = b.shuffle_vector(y, y, llvm_ir.Constant(llvm_ir.VectorType(i32, n),
                                                        list(range(n))))
        b.ret(y)
        b.position_at_end(small)
        b.ret(v.args[0])
        vectors.append(v)
    _keep(module, vectors)


def _keep(module, functions):
    """``functions`` added to the module's ``llvm.compiler.used`` (made here, or grown: sin's
    and cos's may each come first)."""
    ptr = llvm_ir.IntType(8).as_pointer()
    used = module.globals.get("llvm.compiler.used")
    values = list(used.initializer.constant) if used is not None else []
    values += [f.bitcast(ptr) for f in functions]
    aty = llvm_ir.ArrayType(ptr, len(values))
    if used is None:
        used = llvm_ir.GlobalVariable(module, aty, "llvm.compiler.used")
        used.linkage = "appending"
        used.section = "llvm.metadata"
    used.value_type = aty
    used.initializer = llvm_ir.Constant(aty, values)


_CCONV = "preserve_allcc"


def _target_choices(context) -> tuple:
    """(calling convention of the lane-by-lane call, vector widths, lanes of the lane-by-lane
    call) for the target machine. preserve_allcc on x86-64 (checked there): a call that
    clobbers no register, so that the vector loop around it keeps its constants in registers
    (with a plain call: 8-15 % slower). Widths: those LLVM's vectorizer picks for float32 sin
    and cos (float64 inside: two vector registers of doubles, eight lanes on AVX2, sixteen
    on AVX-512), and half that; each width is a function of its own in every module (about
    2 ms of code generation a width). The lane-by-lane call takes and returns a full vector
    register of floats (256 bits with AVX, 512 with AVX-512), whatever the width."""
    triple, _, features = context.codegen().magic_tuple()
    features = features.split(",")
    if "+avx512f" in features:
        widths, lanes = (8, 16), 16
    elif "+avx" in features:
        widths, lanes = (4, 8), 8
    else:
        widths, lanes = (2, 4), 4
    return (_CCONV if triple.startswith("x86_64") else "ccc"), widths, lanes


def _large32(which):
    @intrinsic
    def large(typingctx, x):
        if x != types.float32:
            return None

        def codegen(context, builder, signature, args):
            module = builder.module
            if large32_name(which) not in module.globals:
                _define_large32(module, which, *_target_choices(context))
            return builder.call(module.globals[large32_name(which)], args)

        return types.float32(types.float32), codegen
    large.__name__ = f"{which}32_large"
    return large


sin32_large = _large32("sin")
cos32_large = _large32("cos")
