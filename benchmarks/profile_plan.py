"""Per-kernel profile of a jitted function's compiled plan ("numba" backend).

The generated entry function is one ``@njit`` function that calls every kernel in order, so a
normal profiler sees one opaque call. Here the entry's source is turned into plain Python (the
``@njit`` decorator dropped, each kernel call wrapped in a timer) and run on the same arguments:
kernels are the same compiled Numba functions, so their times are the real ones; the Python
glue between them adds a few microseconds per call, reported apart as ``overhead``.

    from benchmarks.profile_plan import profile, report
    rows = profile(jitted_fn, *args)        # the program jitted_fn.lower(*args) compiles
    print(report(rows))

Command line (the demo models' training steps, or the MLP step of benchmarks.train_step):

    python -m benchmarks.profile_plan cnn|mlp|train_step [--top 15] [--repeat 3] [--source K]
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import dataclass

import numpy as np

_CALL = re.compile(r"^(\s+)(k\d+[sp])\((.*)\)$", re.M)


@dataclass
class KernelRow:
    name: str            # k12p: kernel 12, parallel variant (s: serial)
    index: int
    ms: float            # median over the repeats, per call of the whole program
    calls: int
    kind: str            # the fusion group's kind (loop | matmul | op)
    outputs: list        # output types, e.g. ['f32[128,50176]']
    ops: str             # the group's op names
    source: str


def _program(jitted, args, kwargs):
    lowered = jitted.lower(*args, **kwargs)
    run = lowered._entry.program
    program = getattr(run, "program", None)
    if program is None:
        raise ValueError("profile_plan needs the 'numba' backend")
    leaves = list(jitted._key(args, kwargs)[3])     # the flat argument leaves
    for i, dt in program._scalars:
        leaves[i] = np.asarray(leaves[i], dt)
    return program, leaves


def _instrumented_entry(program, timer):
    src = program.plan.source.replace('@njit(cache=True, error_model="numpy")\n', "")
    src = _CALL.sub(lambda m: f"{m.group(1)}_t({m.group(2)!r}, {m.group(2)}, {m.group(3)})",
                    src)
    src = src.replace("with objmode():", "if True:")
    for mod in program.plan.modules:
        sys.modules.setdefault(mod.__name__, mod)
    ns = {"_t": timer}
    exec(compile(src, "<profiled entry>", "exec"), ns)
    return ns["entry"]


def profile(jitted, *args, repeat: int = 3, **kwargs):
    """Time each kernel of ``jitted``'s program on ``args``. Returns (rows sorted by time,
    total ms per call of the instrumented entry, total ms of the compiled entry)."""
    program, leaves = _program(jitted, args, kwargs)
    runs: list = []
    current: dict = {}

    def timer(name, fn, *a):
        t = time.perf_counter()
        fn(*a)
        current[name] = current.get(name, 0.0) + time.perf_counter() - t
        current["#" + name] = current.get("#" + name, 0) + 1

    entry = _instrumented_entry(program, timer)
    full = program.arguments(leaves)
    entry(*full)                               # warm up (first touch of buffers, JIT loads)
    totals, compiled = [], []
    for _ in range(repeat):
        current = {}
        t = time.perf_counter()
        entry(*full)
        totals.append(time.perf_counter() - t)
        runs.append(current)
        t = time.perf_counter()
        program.run(leaves)
        compiled.append(time.perf_counter() - t)
    names = sorted({k for r in runs for k in r if not k.startswith("#")})
    groups = program.plan.kernel_groups
    rows = []
    for name in names:
        i = int(name[1:-1])
        spec, g = program.plan.kernels[i], groups[i]
        rows.append(KernelRow(name, i, float(np.median([r.get(name, 0.0) for r in runs])) * 1e3,
                              runs[0].get("#" + name, 0), g.kind,
                              [str(v.type) for v in spec.outputs],
                              " ".join(dict.fromkeys(op.opdef.name for op in g.ops)),
                              spec.source))
    rows.sort(key=lambda r: -r.ms)
    return rows, float(np.median(totals)) * 1e3, float(np.median(compiled)) * 1e3


def report(result, top: int = 15) -> str:
    rows, total, compiled = result
    ksum = sum(r.ms for r in rows)
    lines = [f"compiled entry {compiled:.1f} ms/call; instrumented {total:.1f} ms "
             f"(kernels {ksum:.1f} ms, overhead {total - ksum:.1f} ms, {len(rows)} kernels)"]
    for r in rows[:top]:
        lines.append(f"{r.name:6s} {r.ms:8.2f} ms {100 * r.ms / max(ksum, 1e-9):5.1f}%  "
                     f"{r.kind:6s} -> {', '.join(r.outputs)}  [{r.ops[:70]}]")
    return "\n".join(lines)


def _demo_case(name: str):
    if name == "train_step":
        from benchmarks.train_step import init, tracejit_step
        p, x, y = init()
        return tracejit_step, (p, x, y)
    from tracejit import optim
    from tracejit.demo.models import MLP, SimpleCNN
    from tracejit.demo.train import make_train_step
    rng = np.random.default_rng(0)
    model = SimpleCNN(rng=rng) if name == "cnn" else MLP(rng=rng)
    opt = optim.Adam(1e-3)
    state = opt.init(model)
    step = make_train_step(opt)
    x = rng.random((32, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, 32)
    return step, (model, state, x, y)


def cli(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("case", choices=("cnn", "mlp", "train_step"))
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--source", type=int, action="append", default=[],
                    help="also print kernel K's source")
    args = ap.parse_args(argv)
    fn, fargs = _demo_case(args.case)
    t = time.perf_counter()
    fn.lower(*fargs)
    print(f"trace + compile/load {time.perf_counter() - t:.1f} s")
    result = profile(fn, *fargs, repeat=args.repeat)
    print(report(result, args.top))
    for k in args.source:
        row = next((r for r in result[0] if r.index == k), None)
        print(f"==== k{k}\n{row.source if row else '(not run)'}")


if __name__ == "__main__":
    cli()
