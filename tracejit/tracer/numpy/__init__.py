"""NumPy semantics on Tracers, lowered to explicit IR ops.

This is where NumPy's implicit rules become explicit IR: type promotion (NEP 50, Python scalars
weak) becomes ``convert``, broadcasting becomes ``broadcast_in_dim``, ``keepdims`` becomes
``reshape``, and so on. Functions take Tracers, NumPy arrays or Python scalars (at least one
Tracer) and return Tracers with the dtype and shape NumPy would give. One module per theme,
each with the NumPy functions composed from its ops:

    rules.py           dtype promotion, broadcast shapes, axes: rules that emit nothing
    lifting.py         operands into the trace (lift, constants, emit, promote) and the layout
                       ops that needs (reshape, broadcast_to, concatenate, stack)
    shapes.py          transpose, squeeze, flip, slices; arrays made from a shape
    padding.py         np.pad (constant values per side, edge, wrap, reflect, symmetric)
    sorting.py         sort, argsort
    order_statistics.py  median, quantile, percentile and their nan* forms
    searching.py       searchsorted, digitize, interp, isin
    finite_differences.py  np.gradient
    conversion.py      np.array, np.asarray, ... of traced values
    patches.py         the NumPy attributes replaced during a trace (conversions, np.zeros, ...)
    joining.py         hstack, vstack, atleast_Nd, split, ...
    arithmetic.py      operators, comparisons, logical and bitwise ops, where, clip
    math_functions.py  exp, log, trig, rounding, NaN tests, erf, sigmoid
    reductions.py      sum, mean, max, argmax, all, ... and average, ptp
    accumulations.py   maximum/minimum.accumulate, cumulative_sum, cumulative_prod
    gather.py          take, take_along_axis, repeat, tile, roll, unravel_index
    indexing.py        x[key]
    linalg.py          matmul, dot, tensordot, norms, diag, trace, triu, cross, kron, vander
    correlation.py     cov, corrcoef, convolve, correlate
    einsum.py          np.einsum
    dispatch.py        NumPy function -> implementation tables (__array_ufunc__/function)

tracer.py never imports this layer: tracejit/tracer/__init__.py hands Tracer the table of
functions its operators and methods call (dispatch.TRACER_METHODS), so imports run one way.
"""
