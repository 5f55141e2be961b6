"""The math functions (``math.*`` and NumPy's, on scalars) kernels call, and what each becomes
in LLVM IR, as Numba lowers them: calls.py lowers them, typing_answers.py asks Numba their
types ahead of time."""

# LLVM intrinsics (name -> llvm.<name>.f32/f64)
INTRINSIC_UNARY = {"exp": "exp", "log": "log", "sqrt": "sqrt", "sin": "sin", "cos": "cos",
                   "fabs": "fabs", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
                   "rint": "rint", "exp2": "exp2", "log2": "log2", "log10": "log10",
                   "absolute": "fabs"}
# libm functions (name -> the C function)
LIBM_UNARY = {"tanh": "tanh", "log1p": "log1p", "expm1": "expm1", "tan": "tan",
              "sinh": "sinh", "cosh": "cosh", "asin": "asin", "acos": "acos", "atan": "atan",
              "asinh": "asinh", "acosh": "acosh", "atanh": "atanh", "erf": "erf",
              "erfc": "erfc", "lgamma": "lgamma", "gamma": "tgamma", "arcsin": "asin",
              "arccos": "acos", "arctan": "atan", "arcsinh": "asinh", "arccosh": "acosh",
              "arctanh": "atanh", "cbrt": "cbrt"}
LIBM_BINARY = {"atan2": "atan2", "hypot": "hypot", "arctan2": "atan2"}
# lowered one by one in calls.py
OTHER_UNARY = {"isnan", "isinf", "isfinite", "frexp"}
OTHER_BINARY = {"copysign", "pow", "power", "fmod"}

UNARY = {*INTRINSIC_UNARY, *LIBM_UNARY, *OTHER_UNARY}
BINARY = {*LIBM_BINARY, *OTHER_BINARY}
