"""tracejit.amp.GradScaler against torch.amp.GradScaler ("cpu") on the same gradients.

Each case gives both scalers the same sequence of scaled gradients, some holding inf or NaN,
and runs the PyTorch loop on each: ``step`` (unscale, then SGD unless a gradient is not
finite) and ``update``. After every update it records the scale, the growth tracker and the
parameters. SGD's lr is 0.5, so an update rounds once in either library: any difference is the
scaler's. A last case unscales float32 and float64 gradients by a scale of 3 (not a power of
two), which shows how the reciprocal is rounded.

torch is not a dependency of tracejit; run this where it is importable, e.g. with torch in a
throwaway virtual environment of the same Python and NumPy:

    PYTHONPATH=/tmp/torchvenv/lib/python3.11/site-packages python -m benchmarks amp_scaler_vs_torch
    ... python benchmarks/amp_scaler_vs_torch.py --record    # prints the data recorded in
                                                             # tests/test_grad_scaler.py

``--record`` needs torch only; the comparison needs torch and tracejit.
"""
from __future__ import annotations

import math
import sys
import textwrap

INF, NAN = float("inf"), float("nan")
LR = 0.5

# Inputs. "grads" lists, per step, the (already scaled) gradients of w (two values) and b.
CASES = [
    {"name": "defaults, growth_interval=3", "config": {"growth_interval": 3},
     "params": {"w": [1.0, -2.0], "b": 0.5},
     "grads": [([1024.0, -3072.0], 512.0), ([2048.0, 4096.0], -1024.0),
               ([65536.0, -8192.0], 16384.0), ([3.0e5, 1.0e3], 7.0e4),
               ([-1.0e5, 2.5e5], 3.0e5), ([6.0e5, -2.0e5], 1.0e5), ([1.0e6, 5.0e5], -2.0e6),
               ([INF, 1.0], 1.0), ([4.0e5, 1.0e5], 2.0e5), ([-3.0e5, 7.0e5], 1.0e5),
               ([2.0e5, 2.0e5], -6.0e5), ([1.0, 2.0], NAN), ([-INF, NAN], INF),
               ([1.0e5, -1.0e5], 3.0e5), ([5.0e5, 2.5e5], -1.0e5), ([2.0e5, 3.0e5], 4.0e5),
               ([-1.0e6, 1.0e6], 5.0e5)]},
    {"name": "growth_factor=3, backoff_factor=0.3 (rounded via float64)",
     "config": {"init_scale": 1000.0, "growth_factor": 3.0, "backoff_factor": 0.3,
                "growth_interval": 2},
     "params": {"w": [0.25, -0.75], "b": 1.5},
     "grads": [([1234.5, -77.25], 10.0), ([300.0, 900.0], -450.0), ([NAN, 1.0], 2.0),
               ([1.0, 1.0], -INF), ([333.0, -666.0], 999.0), ([12.0, 24.0], 48.0),
               ([5.0e3, -5.0e3], 1.0e4), ([7.0, 11.0], 13.0), ([INF, INF], INF),
               ([1.0e4, 2.0e4], 3.0e4), ([-17.0, 19.0], 23.0), ([0.1, 0.2], 0.3)]},
    {"name": "growth stops below float32 overflow",
     "config": {"init_scale": 2.0 ** 124, "growth_factor": 3.0, "growth_interval": 1},
     "params": {"w": [1.0, 2.0], "b": 3.0},
     "grads": [([1.0e37, -2.0e37], 3.0e37), ([1.0e38, 1.0e38], -1.0e38),
               ([2.0e38, -2.0e38], 1.0e38), ([1.0e38, 3.0e38], 3.0e38),
               ([1.0, INF], 1.0), ([1.0e38, 2.0e38], 3.0e38), ([3.0e38, -3.0e38], 1.0e38)]},
    {"name": "backoff underflows to zero",
     "config": {"init_scale": 2.0 ** -146},
     "params": {"w": [1.0, -1.0], "b": 2.0},
     "grads": [([INF, 0.0], 0.0), ([0.0, NAN], 0.0), ([INF, INF], 0.0), ([0.0, 0.0], -INF),
               ([NAN, 0.0], 0.0), ([1.0e-45, -1.0e-45], 0.0)]},
    {"name": "disabled (steps are never skipped)", "config": {"enabled": False},
     "params": {"w": [1.0, -1.0], "b": 2.0},
     "grads": [([1.0, 2.0], 3.0), ([INF, 1.0], 1.0), ([1.0, 1.0], NAN)]},
]

UNSCALE = {"scale": 3.0, "dtypes": ["float32", "float64"],
           "grads": [1.0, 7.0, 1.0e-3, -5.5e4, 3.0e38, 1.0e-40, 0.0, -0.0]}


# -- torch ----------------------------------------------------------------------------------------

def torch_case(case: dict) -> list[dict]:
    """The case in torch: [{"scale", "growth_tracker", "w", "b"} after each update]."""
    import torch
    params = {k: torch.tensor(v, dtype=torch.float32, requires_grad=True)
              for k, v in case["params"].items()}
    opt = torch.optim.SGD(list(params.values()), lr=LR)
    scaler = torch.amp.GradScaler("cpu", **case["config"])
    out = []
    for gw, gb in case["grads"]:
        scaler.scale(torch.ones(()))           # the loss a training loop would scale
        params["w"].grad = torch.tensor(gw, dtype=torch.float32)
        params["b"].grad = torch.tensor(gb, dtype=torch.float32)
        scaler.step(opt)
        scaler.update()
        out.append({"scale": scaler.get_scale(), "growth_tracker": scaler._get_growth_tracker(),
                    "w": params["w"].tolist(), "b": params["b"].item()})
    return out


def torch_unscale() -> dict[str, list[float]]:
    """The gradients of UNSCALE unscaled by torch, per dtype."""
    import torch
    out = {}
    for name in UNSCALE["dtypes"]:
        p = torch.zeros(len(UNSCALE["grads"]), dtype=getattr(torch, name), requires_grad=True)
        opt = torch.optim.SGD([p], lr=LR)
        scaler = torch.amp.GradScaler("cpu", init_scale=UNSCALE["scale"])
        scaler.scale(torch.ones(()))
        p.grad = torch.tensor(UNSCALE["grads"], dtype=getattr(torch, name))
        scaler.unscale_(opt)
        out[name] = p.grad.tolist()
    return out


# -- tracejit -------------------------------------------------------------------------------------

def tracejit_case(case: dict, mode: str = "eager") -> list[dict]:
    """The case with tracejit.amp.GradScaler: ``mode`` is "eager" (the PyTorch-style object),
    "functional" (pure functions on NumPy) or "jit" / "jit-numpy" (the pure functions inside
    one jitted step, compiled or on the NumPy backend)."""
    import numpy as np

    import tracejit
    from tracejit.amp import GradScaler
    from tracejit.optim import SGD

    scaler, opt = GradScaler(**case["config"]), SGD(lr=LR)
    params = {k: np.asarray(v, np.float32) for k, v in case["params"].items()}
    opt_state = opt.init(params)

    def train_step(params, opt_state, state, grads):
        grads, found_inf = scaler.unscale(grads, state)
        params, opt_state = scaler.step(opt, grads, opt_state, params, found_inf)
        return params, opt_state, scaler.update(state, found_inf)

    if mode.startswith("jit"):
        train_step = tracejit.jit(train_step, backend="numpy" if mode == "jit-numpy" else None)
    state, out = scaler.init(), []
    for gw, gb in case["grads"]:
        grads = {"w": np.asarray(gw, np.float32), "b": np.asarray(gb, np.float32)}
        if mode == "eager":
            scaler.scale(np.ones((), np.float32))
            params, opt_state = scaler.step(opt, grads, opt_state, params)
            scaler.update()
            scale, tracker = scaler.get_scale(), scaler.get_growth_tracker()
        else:
            params, opt_state, state = train_step(params, opt_state, state, grads)
            scale, tracker = float(state["scale"]), int(state["growth_tracker"])
        out.append({"scale": scale, "growth_tracker": tracker, "w": params["w"].tolist(),
                    "b": float(params["b"])})
    return out


def tracejit_unscale() -> dict[str, list[float]]:
    import numpy as np

    from tracejit.amp import GradScaler
    scaler = GradScaler(init_scale=UNSCALE["scale"])
    return {name: scaler.unscale(np.asarray(UNSCALE["grads"], name), scaler.init())[0].tolist()
            for name in UNSCALE["dtypes"]}


# -- output ---------------------------------------------------------------------------------------

def _same(a, b) -> bool:
    """Equal as floats, NaN equal to NaN (recursively over lists and dicts)."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b or (math.isnan(a) and math.isnan(b))


def _literal(x) -> str:
    """Python source for x, with inf and NaN as the names INF and NAN."""
    if isinstance(x, float):
        return ("NAN" if math.isnan(x) else "-INF" if x == -INF else "INF" if x == INF
                else repr(x))
    if isinstance(x, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in x.items()) + "}"
    if isinstance(x, tuple):
        return "(" + ", ".join(map(_literal, x)) + ("," if len(x) == 1 else "") + ")"
    if isinstance(x, list):
        return "[" + ", ".join(map(_literal, x)) + "]"
    return repr(x)


def _line(prefix: str, value, end: str = "") -> str:
    """``prefix + literal(value) + end``, wrapped at 100 columns (inside its brackets)."""
    indent = " " * (len(prefix) + 1)
    return textwrap.fill(prefix + _literal(value) + end, 100, subsequent_indent=indent,
                         break_long_words=False, break_on_hyphens=False)


def record() -> None:
    """Print the reference data (inputs and torch's results) for tests/test_grad_scaler.py."""
    import torch
    out = [f"TORCH_VERSION = {torch.__version__!r}", "CASES = ["]
    for case in CASES:
        out += [f"    {{'name': {case['name']!r},", _line("     'config': ", case["config"], ","),
                _line("     'params': ", case["params"], ","), "     'grads': ["]
        out += [_line("         ", g, ",") for g in case["grads"]]
        out += ["     ],", "     # torch after each update(): (scale, growth tracker, w, b)",
                "     'torch': ["]
        out += [_line("         ", (r["scale"], r["growth_tracker"], r["w"], r["b"]), ",")
                for r in torch_case(case)]
        out += ["     ]},"]
    out += ["]", f"UNSCALE = {{'scale': {UNSCALE['scale']!r},",
            _line("           'grads': ", UNSCALE["grads"], ","), "           'torch': {"]
    out += [_line(f"               {name!r}: ", values, ",")
            for name, values in torch_unscale().items()]
    out += ["           }}"]
    print("\n".join(out).replace("'", '"'))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        import torch
    except ImportError:
        print("amp_scaler_vs_torch: torch is not importable, so there is nothing to compare "
              "against.\nInstall it outside the project (python3 -m venv /tmp/torchvenv && "
              "/tmp/torchvenv/bin/pip install torch numpy) and put its site-packages on "
              "PYTHONPATH; tests/test_grad_scaler.py holds a recorded run.")
        return 1
    if "--record" in argv:
        record()
        return 0
    modes = ["eager", "functional", "jit-numpy", "jit"]
    print(f"torch {torch.__version__}: scale after each update(), torch vs tracejit "
          f"({', '.join(modes)}); 'same' compares scale, growth tracker and parameters")
    all_same = True
    for case in CASES:
        ref = torch_case(case)
        ours = {m: tracejit_case(case, m) for m in modes}
        print(f"\n{case['name']}  {case['config']}")
        print(f"{'step':>4} {'grads finite':>12} {'torch scale':>14} {'tracejit scale':>14} "
              f"{'tracker':>7}  same")
        for i, (gw, gb) in enumerate(case["grads"]):
            finite = all(math.isfinite(g) for g in [*gw, gb])
            same = all(_same(ours[m][i], ref[i]) for m in modes)
            all_same &= same
            print(f"{i + 1:>4} {str(finite):>12} {ref[i]['scale']:>14.7g} "
                  f"{ours['eager'][i]['scale']:>14.7g} {ref[i]['growth_tracker']:>7}  "
                  f"{'yes' if same else 'NO ' + str({m: ours[m][i] for m in modes})}")
    ref, ours = torch_unscale(), tracejit_unscale()
    print(f"\nunscale by {UNSCALE['scale']}: {UNSCALE['grads']}")
    for name in UNSCALE["dtypes"]:
        same = _same(ref[name], ours[name])
        all_same &= same
        print(f"  {name}: torch {ref[name]}\n  {' ' * len(name)}  same as tracejit: "
              f"{'yes' if same else 'NO ' + str(ours[name])}")
    print("\nall the same" if all_same else "\nDIFFERENCES (above)")
    return 0 if all_same else 1


if __name__ == "__main__":
    sys.exit(main())
