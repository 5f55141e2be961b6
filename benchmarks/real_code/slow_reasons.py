"""Why a corpus case runs slower under jit than eagerly (issue 13: no ratio below 1.0x without
a reason). Each reason was found by reading the case's program (``jit(f).lower(*args)``) and
timing its parts; the categories say what tracejit would need to change.
"""
from __future__ import annotations

# Below this NumPy time, the jitted call's own fixed cost decides the ratio: 4-6 us here to
# check the arguments' dtypes and shapes, run the Python entry and hand back fresh arrays.
FIXED_COST_US = 40

LOOP = ("Python loop over elements or rows, unrolled into the trace: every iteration is its "
        "own small kernels, BLAS calls and box writes (in place since update_slice), each a "
        "call from the Python entry where NumPy's per-iteration ops are as small; needs the "
        "loop kept as one fori_loop/scan instead of unrolled")
SMALL_KERNELS = ("many small kernels per call (one per layout change or product): the "
                 "Python entry's per-kernel cost exceeds NumPy's per-op cost at this size")
VIEWS = ("NumPy returns a view (no copy); a jitted function returns a fresh array, since "
         "results never alias the arguments")

SLICE_WRITES = ("the slice writes go into arguments: the program copies each written argument "
                "before its first write, and the caller's array gets the result copied back: two "
                "whole-array passes NumPy does not make (the writes themselves are in place)")
SAME_WORK = ("nothing to fuse: NumPy's own ops are the work (BLAS gemv/gemm and whole-matrix "
             "passes in the same order), and each jitted kernel adds its hand-off cost")

MATMUL = ("matmul-bound: one product on one thread is as fast as NumPy's (200x200: 262 against "
          "244 us float32, 488 against 488 us float64), but NumPy's OpenBLAS runs a product on "
          "two threads that share its packed panels, while tracejit splits the product's rows "
          "between two threads that each pack all of the other operand (and runs products under "
          "8.4M multiply-adds on one): 1.0-1.4x slower at 128-320")

REASONS = {
    # Python loops over array elements or output positions (NPBench's and cs231n's direct
    # translations of C loops; conv2d/lenet/resnet loop over output pixels)
    **dict.fromkeys(["npbench_seidel_2d", "npbench_cholesky", "npbench_lu", "npbench_ludcmp",
                     "npbench_trmm", "npbench_correlation", "npbench_trisolv",
                     "npbench_covariance", "npbench_gramschmidt", "npbench_symm",
                     "npbench_durbin", "npbench_doitgen", "npbench_adi", "npbench_syrk",
                     "npbench_syr2k", "cs231n_max_pool_forward_naive",
                     "cs231n_conv_forward_naive", "npbench_deriche", "cs231n_rnn_forward",
                     "min_char_rnn_loss_fun", "npbench_conv2d_bias", "npbench_lenet",
                     "npbench_resnet", "npbench_fdtd_2d"], LOOP),
    **dict.fromkeys(["npbench_jacobi_1d", "npbench_jacobi_2d", "npbench_heat_3d",
                     "min_char_rnn_adagrad_update"], SLICE_WRITES),
    **dict.fromkeys(["npbench_k2mm", "npbench_k3mm", "picogpt_ffn", "picogpt_transformer_block",
                     "picogpt_gpt2", "cs231n_rnn_step_backward", "cs231n_lstm_step_forward",
                     "cs231n_temporal_affine_forward"], MATMUL),
    # at parity: above 1.0x in some runs, below in others (2026-12-01, one machine)
    "picogpt_mha": "at parity: 0.91-1.49x over six runs of the same code",
    "autograd_test_numpy_cos_and_sinh": (
        "at parity: float64 cos and sinh run as fast as NumPy's at 1e5 elements (1572 against "
        "1623 us, 2880 against 2911 us); at ~100 us the call's fixed cost and the spread "
        "decide (0.86-1.02x over four runs)"),
    "cs231n_batchnorm_backward_alt": (
        "NumPy's own time moves 3x between runs (5.0-16.9 ms): 0.67-3.34x over six runs"),
    **dict.fromkeys(["npbench_gesummv", "npbench_gemver", "npbench_atax", "npbench_bicg",
                     "npbench_mvt", "cs231n_affine_backward",
                     "numpy_ml_linear_regression_fit", "numpy_ml_ridge_regression_fit",
                     "autograd_example_logistic_regression_loss", "npbench_gemm",
                     "autograd_test_numpy_tensordot"], SAME_WORK),
    "numpy_ml_logistic_regression_nll": (
        "a boolean-mask selection y_pred[y == 1] is a where() over the whole array plus the "
        "filler's argmax and gather (numpy/masked.py); NumPy copies only the selected "
        "elements, at 133 us the two extra passes and kernels decide"),
    "npbench_hdiff": ("at parity (0.96-1.04x): four kernels' hand-offs; it was 0.38x while "
                      "one fused kernel recomputed lap_field at each of its four shifted reads, "
                      "which fusion no longer does"),
    "cs231n_rnn_step_forward": ("two BLAS products as NumPy's, then float64 tanh in the "
                                "epilogue: libm's scalar tanh against NumPy 2's SIMD loop"),
    "picogpt_gelu": ("float64 tanh and x**3: the kernel calls libm's scalar tanh and pow, "
                     "NumPy 2 runs SIMD loops for both"),
}


def slow_reason(row) -> str:
    ratio, us = row.get("ratio"), row.get("numpy_us")
    if not isinstance(ratio, float) or ratio >= 1.0:
        return ""
    if row["case"] in REASONS:
        return REASONS[row["case"]]
    if us is not None and us < FIXED_COST_US:
        return f"fixed cost: NumPy takes {us:.0f} us, the jitted call's fixed cost is 4-6 us"
    return "not explained yet"
