"""The inverse error function as XLA computes it (``lax.erf_inv``, so ``jax.random.normal``):
Giles' single-precision approximation for float32 (and float16, computed in float32), his
double-precision one for float64, with XLA's coefficients and evaluation order (Horner, the
branch's coefficients selected per element). NumPy ops only: the same code runs eagerly and
traced. XLA's own log1p may differ from NumPy's (and from the compiled kernel's) in the last
bit, so results agree with JAX's to a few ulp, mostly exactly (the tests say how closely).

M. Giles, "Approximating the erfinv function", GPU Computing Gems Jade Edition, 2011.
"""
from __future__ import annotations

import numpy as np

# float32: w = -log1p(-x*x) < 5 and otherwise (highest degree first)
_F32_LT5 = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
            -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_F32_GE5 = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
            -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)

# float64: w < 6.25 (23 coefficients), w < 16 (19), w >= 16 (17)
_F64_LT625 = (
    -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
    1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
    6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
    2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
    1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
    4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
    0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
    0.24015818242558961693, 1.6536545626831027356)
_F64_LT16 = (
    2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
    1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
    2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
    6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
    0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
    -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
    3.0838856104922207635)
_F64_GE16 = (
    -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
    -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
    2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
    -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
    7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
    1.0103004648645343977, 4.8499064014085844221)


def _erf_inv32(x, f):
    w = -np.log1p(x * -x)
    lt = w < f(5.0)
    w = np.where(lt, w - f(2.5), np.sqrt(w) - f(3.0))
    p = np.where(lt, f(_F32_LT5[0]), f(_F32_GE5[0]))
    for a, b in zip(_F32_LT5[1:], _F32_GE5[1:]):
        p = np.where(lt, f(a), f(b)) + p * w
    return p * x


def _erf_inv64(x, f):
    w = -np.log1p(x * -x)
    lt6 = w < f(6.25)
    lt16 = w < f(16.0)

    def coefficient(i):
        c = f(_F64_LT625[i])
        if i < 19:
            c = np.where(lt6, c, f(_F64_LT16[i]))
        if i < 17:
            c = np.where(lt16, c, f(_F64_GE16[i]))
        return c

    w = np.where(lt6, w - f(3.125), np.sqrt(w) - np.where(lt16, f(3.25), f(5.0)))
    p = coefficient(0)
    for i in range(1, 17):
        p = coefficient(i) + p * w
    for i in range(17, 19):
        p = np.where(lt16, coefficient(i) + p * w, p)
    for i in range(19, 23):
        p = np.where(lt6, coefficient(i) + p * w, p)
    return p * x


def erf_inv(x):
    """erfinv(x) for x in [-1, 1] (+-inf at +-1, nan outside), in x's float dtype."""
    dtype = x.dtype
    if dtype.kind != "f" and dtype.name != "bfloat16":
        raise TypeError(f"erf_inv needs a float array, got {dtype}")
    with np.errstate(invalid="ignore", divide="ignore"):
        if dtype == np.float64:
            r = _erf_inv64(x, np.float64)
        else:
            xf = x if dtype == np.float32 else x.astype(np.float32)
            r = _erf_inv32(xf, np.float32)
            if dtype != np.float32:
                r = r.astype(dtype)
        return np.where(np.abs(x) == dtype.type(1), x * dtype.type(np.inf), r)
