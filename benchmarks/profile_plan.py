"""Per-kernel profile of a jitted function's compiled plan ("numba" backend).

The generated entry is Python that calls every kernel in order (and lets NumPy move data).
Here each of its statements that calls a kernel or moves data is wrapped in a timer and the
entry run on the same arguments: kernels are the same compiled Numba functions, so their times
are the real ones; the timers add a little per statement, reported apart as ``overhead``.

    from benchmarks.profile_plan import profile, report
    rows = profile(jitted_fn, *args)        # the program jitted_fn.lower(*args) compiles
    print(report(rows))

Command line (the demo models' training steps, or the MLP step of benchmarks.train_step):

    python -m benchmarks.profile_plan cnn|mlp|train_step [--top 15] [--repeat 3] [--source K]
"""
from __future__ import annotations

import argparse
import re
import time
from dataclasses import dataclass

import numpy as np

_KERNEL = re.compile(r"\bk(\d+)\b")


@dataclass
class KernelRow:
    name: str            # k12 (its blocks on threads: k12p), or NumPy's data movement
    index: int           # the kernel's index, -1 for data movement
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
    """The entry's source with each statement that runs a kernel or moves data timed."""
    lines = program.plan.source.splitlines()
    out = [lines[0]]
    for line in lines[1:]:
        s = line.strip()
        if line.startswith("        ") or s.startswith(("if ", "raise", "return")) or (
                "= w[" in s or s.endswith("D0)") or ".reshape(" in s and "=" in s
                and "np." not in s):
            out.append(line)            # checks and buffer views: not timed
            continue
        m = _KERNEL.search(s)
        name = (f"k{m.group(1)}" + ("p" if s.startswith("pool.run") else "")) if m else s[:60]
        out.append(f"    _t0 = _clock(); {s}; _t({name!r}, _clock() - _t0)")
    ns = dict(program.entry.__globals__, _t=timer, _clock=time.perf_counter)
    exec(compile("\n".join(out), "<profiled entry>", "exec"), ns)
    return ns["entry"]


def profile(jitted, *args, repeat: int = 3, **kwargs):
    """Time each kernel of ``jitted``'s program on ``args``. Returns (rows sorted by time,
    total ms per call of the instrumented entry, total ms of the compiled entry)."""
    program, leaves = _program(jitted, args, kwargs)
    runs: list = []
    current: dict = {}

    def timer(name, seconds):
        current[name] = current.get(name, 0.0) + seconds
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
        ms = float(np.median([r.get(name, 0.0) for r in runs])) * 1e3
        m = re.fullmatch(r"k(\d+)p?", name)
        if m is None:
            rows.append(KernelRow(name, -1, ms, runs[0].get("#" + name, 0), "move", [], "", ""))
            continue
        i = int(m.group(1))
        spec, g = program.plan.kernels[i], groups[i]
        # a loop's driver (a whole scan, while or fori loop) has no fusion group of its own
        kind = g.kind if g is not None else "loop"
        ops = "" if g is None else " ".join(dict.fromkeys(op.opdef.name for op in g.ops))
        rows.append(KernelRow(name, i, ms, runs[0].get("#" + name, 0), kind,
                              [str(v.type) for v in spec.outputs], ops, spec.source))
    rows.sort(key=lambda r: -r.ms)
    return rows, float(np.median(totals)) * 1e3, float(np.median(compiled)) * 1e3


def report(result, top: int = 15) -> str:
    rows, total, compiled = result
    ksum = sum(r.ms for r in rows)
    lines = [f"entry {compiled:.1f} ms/call; instrumented {total:.1f} ms (timed statements "
             f"{ksum:.1f} ms, overhead {total - ksum:.1f} ms, {len(rows)} statements)"]
    for r in rows[:top]:
        what = (f"{r.kind:6s} -> {', '.join(r.outputs)}  [{r.ops[:70]}]" if r.index >= 0
                else "NumPy data movement")
        lines.append(f"{r.name[:24]:24s} {r.ms:8.2f} ms {100 * r.ms / max(ksum, 1e-9):5.1f}%  "
                     f"{what}")
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
