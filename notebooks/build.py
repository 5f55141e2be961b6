"""Generate the notebooks from the cells below and execute them, so they are committed with
their outputs.

    python notebooks/build.py                 # write and execute all four
    python notebooks/build.py 03              # only those whose file name contains "03"
    python notebooks/build.py --no-execute    # write without outputs

tests/test_notebooks.py executes each committed notebook afresh and checks that its cells are
the ones defined here (edit this file, not the .ipynb, then rebuild).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def md(text: str):
    return ("markdown", text.strip("\n"))


def code(text: str):
    return ("code", text.strip("\n"))


# -- 01 quickstart -------------------------------------------------------------------------------

QUICKSTART = [
    md("""
# tracejit quickstart: `jit`, the IR, `grad`

tracejit traces plain NumPy code into a typed SSA IR, transforms that IR (automatic
differentiation), optimizes it (fusion) and compiles it (Numba kernels). This notebook shows the
three things you use every day: `tracejit.jit`, printing the IR, and `tracejit.grad`.
"""),
    code("""
import numpy as np
import tracejit
from tracejit.nn import functional as F
"""),
    md("""
## `jit`: the expression `z = (x + y) * w`

Decorate a function that uses NumPy. The first call with a given argument signature (pytree
structure, dtypes, shapes) traces it and compiles it; later calls run the compiled program.
The result has NumPy's dtype, shape and values.
"""),
    code("""
@tracejit.jit
def f(x, y, w):
    return (x + y) * w

rng = np.random.default_rng(0)
x, y, w = (rng.standard_normal((3, 4)).astype(np.float32) for _ in range(3))
z = f(x, y, w)
print(z.dtype, z.shape, "equal to NumPy:", np.allclose(z, (x + y) * w))
"""),
    md("""
## The IR

`tracejit.make_ir(f)(*args)` returns the traced `Function`: one op a line, every value typed
(`f32[3,4]`), and the file and line of your code that produced it.
"""),
    code("""
print(tracejit.make_ir(f)(x, y, w))
"""),
    md("""
The IR is explicit: broadcasting and dtype conversions that NumPy does implicitly become
`broadcast_in_dim` and `convert` ops. Here `w` is a vector broadcast over rows, and `2` is a
Python scalar, which (as in NumPy 2) does not change the float32 dtype:
"""),
    code("""
print(tracejit.make_ir(lambda x, v: (x + v) * 2)(x, w[0]))
"""),
    md("""
## An MLP: Dense -> ReLU -> Dense -> Softmax

`tracejit.nn.functional` has PyTorch's functions, argument names and layouts (`linear` takes an
`(out, in)` weight). Parameters can be any pytree: here a dict.
"""),
    code("""
params = {
    "w1": (rng.standard_normal((16, 4)) * 0.5).astype(np.float32), "b1": np.zeros(16, np.float32),
    "w2": (rng.standard_normal((3, 16)) * 0.5).astype(np.float32), "b2": np.zeros(3, np.float32),
}

@tracejit.jit
def mlp(p, x):
    h = F.relu(F.linear(x, p["w1"], p["b1"]))
    return F.softmax(F.linear(h, p["w2"], p["b2"]), dim=1)

xb = rng.standard_normal((5, 4)).astype(np.float32)
probs = mlp(params, xb)
print(probs.round(3))
print("rows sum to 1:", np.allclose(probs.sum(axis=1), 1))
print(tracejit.make_ir(mlp)(params, xb))
"""),
    md("""
## `grad`

`tracejit.grad(loss)` is a new function returning the gradient with respect to the first
argument, with the same structure (here a dict). It is an IR-to-IR transform, so it composes
with `jit` and with itself.
"""),
    code("""
labels = np.array([0, 2, 1, 1, 0])

def loss(p, x, labels):
    h = F.relu(F.linear(x, p["w1"], p["b1"]))
    return F.cross_entropy(F.linear(h, p["w2"], p["b2"]), labels)

g = tracejit.grad(loss)(params, xb, labels)
print({k: (v.dtype, v.shape) for k, v in g.items()})
"""),
    md("""
Check one entry against a central finite difference (in float64):
"""),
    code("""
p64 = {k: v.astype(np.float64) for k, v in params.items()}
x64 = xb.astype(np.float64)
g64 = tracejit.grad(loss)(p64, x64, labels)
eps = 1e-6
plus, minus = dict(p64), dict(p64)
plus["w2"] = p64["w2"].copy(); plus["w2"][1, 3] += eps
minus["w2"] = p64["w2"].copy(); minus["w2"][1, 3] -= eps
fd = (loss(plus, x64, labels) - loss(minus, x64, labels)) / (2 * eps)
print(f"grad {g64['w2'][1, 3]:.10f}   finite difference {fd:.10f}")
"""),
    md("""
The gradient is itself a traced program. Its IR is the forward pass followed by the backward
pass (here only the first lines):
"""),
    code("""
text = str(tracejit.make_ir(tracejit.grad(loss))(params, xb, labels))
print("\\n".join(text.splitlines()[:14]), f"\\n  ... ({len(text.splitlines()) - 2} ops)")
"""),
    md("""
`value_and_grad` returns both; `jvp` is forward mode (a directional derivative):
"""),
    code("""
value, grads = tracejit.value_and_grad(loss)(params, xb, labels)
print("loss", value)
direction = {k: np.ones_like(v) for k, v in params.items()}
out, tangent = tracejit.jvp(lambda p: loss(p, xb, labels), (params,), (direction,))
print("jvp", tangent, " = sum of the gradient:", sum(v.sum() for v in grads.values()))
"""),
    md("""
## One trace per signature

A jitted function keeps one compiled program per argument signature. New values reuse it; a
new shape traces again:
"""),
    code("""
f(x + 1, y, w)
print("traces so far:", f.trace_count)
f(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), np.ones((2, 2), np.float32))
print("after a new shape:", f.trace_count)
"""),
]


# -- 02 fusion and generated code -------------------------------------------------------------------

FUSION = [
    md("""
# Fusion and generated code

`jit(f).lower(*args)` shows every stage of the compiled program: the traced IR (`.ir`), the
IR after the optimization passes with each op's fusion group (`.optimized`), and the Python
source of the Numba kernels that run it (`.source`).
"""),
    code("""
import os
import time

import matplotlib.pyplot as plt
import numpy as np

import tracejit

QUICK = os.environ.get("TRACEJIT_NOTEBOOK_QUICK") == "1"
"""),
    md("""
## One fused loop for `(x + y) * w`

In NumPy, `(x + y) * w` makes a temporary array for `x + y`, then a second pass. tracejit fuses
the two elementwise ops into one kernel: one loop, no temporary.
"""),
    code("""
def f(x, y, w):
    return (x + y) * w

x, y, w = (np.random.default_rng(i).standard_normal((256, 256)).astype(np.float32)
           for i in range(3))
lowered = tracejit.jit(f).lower(x, y, w)
print(lowered.ir)
"""),
    code("""
print(lowered.optimized)
"""),
    code("""
print(lowered.source)
"""),
    md("""
## A longer chain: the tanh form of GELU

Nine elementwise ops, one kernel:
"""),
    code("""
def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

lowered = tracejit.jit(gelu_tanh).lower(x)
print(lowered.optimized)
"""),
    md("""
## Reductions and broadcasts: softmax

A row reduction (`max`), a broadcast back, `exp`, another reduction (`sum`) and a division.
The optimized IR shows which ops share a kernel:
"""),
    code("""
def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)

lowered = tracejit.jit(softmax).lower(x)
print(lowered.optimized)
"""),
    code("""
print(lowered.source)
"""),
    md("""
## Speed against NumPy eager

Median time per call (after the first, compiling, call) for growing inputs. Elementwise chains
gain the most: NumPy makes one pass and one temporary per op, the fused kernel one pass in all.
"""),
    code("""
def median_time(fn, *args, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t)
    return float(np.median(times))

sizes = [2 ** k for k in (range(10, 21, 5) if QUICK else range(10, 23, 2))]
repeat = 5 if QUICK else 30
results = {}
for name, fn in [("(x + y) * w", f), ("gelu (tanh)", gelu_tanh), ("softmax rows", softmax)]:
    jitted = tracejit.jit(fn)
    rows = []
    for n in sizes:
        shape = (n // 256, 256)
        args = [np.random.default_rng(0).standard_normal(shape).astype(np.float32)
                for _ in range(3 if fn is f else 1)]
        np.testing.assert_allclose(jitted(*args), fn(*args), rtol=1e-4, atol=1e-5)
        rows.append((median_time(fn, *args, repeat=repeat),
                     median_time(jitted, *args, repeat=repeat)))
    results[name] = np.array(rows)
    print(f"{name:14s} speedup vs NumPy:",
          " ".join(f"{t_np / t_jit:5.2f}x" for t_np, t_jit in rows))
"""),
    code("""
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
for name, rows in results.items():
    line, = ax1.loglog(sizes, rows[:, 0] * 1e6, "--", alpha=0.7)
    ax1.loglog(sizes, rows[:, 1] * 1e6, "-o", color=line.get_color(), label=name)
    ax2.semilogx(sizes, rows[:, 0] / rows[:, 1], "-o", label=name)
ax1.set(xlabel="elements", ylabel="time per call (µs)",
        title="tracejit (solid) vs NumPy eager (dashed)")
ax2.axhline(1.0, color="gray", lw=0.8)
ax2.set(xlabel="elements", ylabel="speedup (NumPy time / tracejit time)",
        title="speedup over NumPy eager")
ax1.legend(); ax2.legend()
fig.tight_layout()
"""),
    md("""
Small inputs are dominated by the fixed cost of a call (flattening the arguments, looking up the
compiled program); on large inputs one fused pass beats NumPy's pass per op. (Timings on a shared
machine are noisy: rerun the two cells above to measure yours.)
"""),
]


# -- 03 training the CNN -------------------------------------------------------------------------

TRAINING = [
    md("""
# Training the reference CNN on handwritten digits

The model, written as in PyTorch with `tracejit.nn`:
`conv1 = Conv2d(1, 32, 3, 1, 1)`, `conv2 = Conv2d(32, 64, 3, 1, 1)`, `fc1 = Linear(64*28*28, 128)`,
`fc2 = Linear(128, 10)`; relu(conv1) -> relu(conv2) -> flatten -> relu(fc1) -> fc2, trained with
Adam and cross-entropy. The data are scikit-learn's 8x8 digits upsampled to 28x28 (nothing is
downloaded), with a held-out test split.
"""),
    code("""
import os
import time

import matplotlib.pyplot as plt
import numpy as np

import tracejit
from tracejit import optim
from tracejit.demo.data import batches, load_digits_28
from tracejit.demo.models import SimpleCNN
from tracejit.nn import functional as F

QUICK = os.environ.get("TRACEJIT_NOTEBOOK_QUICK") == "1"   # set by the test suite
EPOCHS = 1 if QUICK else 2
MAX_STEPS = 12 if QUICK else None
"""),
    code("""
(x_train, y_train), (x_test, y_test) = load_digits_28()
print(f"train {x_train.shape} {x_train.dtype}, test {x_test.shape}")
model = SimpleCNN(rng=np.random.default_rng(0))
print(model)
print(f"{sum(p.size for p in model.parameters()):,} parameters")
"""),
    md("""
## One jitted training step

Forward, backward (`value_and_grad`) and the Adam update are traced into one program. The model
is a pytree, so it goes in and comes out of the jitted function like any array; so does the
optimizer state.
"""),
    code("""
def loss_fn(model, x, y):
    return F.cross_entropy(model(x), y)

opt = optim.Adam(lr=1e-3)

@tracejit.jit
def train_step(model, opt_state, x, y):
    loss, grads = tracejit.value_and_grad(loss_fn)(model, x, y)
    model, opt_state = opt.update(grads, opt_state, model)
    return model, opt_state, loss

@tracejit.jit
def predict(model, x):
    return np.argmax(model(x), axis=1)

opt_state = opt.init(model)
ir = train_step.lower(model, opt_state, x_train[:32], y_train[:32]).ir.splitlines()
print(f"{len(ir) - 2} ops, of which the first:")
print("\\n".join(ir[1:9]) + "\\n  ...")
"""),
    code("""
rng = np.random.default_rng(0)
losses, t0, steps = [], time.perf_counter(), 0
for epoch in range(EPOCHS):
    for xb, yb in batches(x_train, y_train, 32, rng):
        model, opt_state, loss = train_step(model, opt_state, xb, yb)
        losses.append(float(loss))
        steps += 1
        if MAX_STEPS and steps >= MAX_STEPS:
            break
    print(f"epoch {epoch + 1}: {steps} steps, running loss {np.mean(losses[-10:]):.4f}, "
          f"{time.perf_counter() - t0:.1f} s")

def accuracy(model, x, y, bs=32):
    pred = np.concatenate([predict(model, x[i:i + bs]) for i in range(0, len(y) - bs + 1, bs)])
    return (pred == y[:len(pred)]).mean()

print(f"test accuracy: {accuracy(model, x_test, y_test) * 100:.1f}%")
"""),
    md("""
## The loss curve
"""),
    code("""
fig, ax = plt.subplots(figsize=(7, 3.5))
ax.plot(losses, alpha=0.4, label="per step")
k = min(10, len(losses))
ax.plot(np.arange(k - 1, len(losses)), np.convolve(losses, np.ones(k) / k, "valid"),
        label=f"mean of {k}")
ax.set(xlabel="step (batch of 32)", ylabel="cross-entropy", title="training loss")
ax.legend();
"""),
    md("""
## A few predictions on held-out digits
"""),
    code("""
xs, ys = x_test[:32], y_test[:32]
pred = predict(model, xs)
fig, axes = plt.subplots(2, 8, figsize=(10, 3))
for ax, img, p, t in zip(axes.flat, xs, pred, ys):
    ax.imshow(img[0], cmap="gray_r")
    ax.set_title(f"{p}" + ("" if p == t else f" (true {t})"), color="k" if p == t else "red")
    ax.axis("off")
fig.suptitle("predicted label (red: wrong)")
fig.tight_layout()
"""),
    md("""
Save the trained weights (`.npz`, keys as PyTorch's `state_dict`) and load them back:
"""),
    code("""
import tempfile
path = os.path.join(tempfile.mkdtemp(), "cnn.npz")
model.save(path)
restored = SimpleCNN(rng=np.random.default_rng(1)).load(path)
print(sorted(np.load(path).files))
print("same predictions:", (predict(restored, xs) == pred).all())
"""),
]


# -- 04 debugging --------------------------------------------------------------------------------

DEBUGGING = [
    md("""
# Debugging: error messages, retraces, dumps, and drawing the graph
"""),
    code("""
import os
import shutil
import subprocess
import sys

import numpy as np

import tracejit
"""),
    md("""
## Error messages

Inside `jit` the arguments are *traced*: their dtype and shape are known, their values are not.
Python control flow on a traced value cannot work; the error says where and what to do instead.
"""),
    code("""
@tracejit.jit
def relu_or_neg(x):
    if x.sum() > 0:
        return x
    return -x

try:
    relu_or_neg(np.ones(3))
except tracejit.ConcretizationError as e:
    print(type(e).__name__, e, sep="\\n")
"""),
    md("""
The fix: choose elementwise with `np.where`, or make the deciding argument static.
"""),
    code("""
@tracejit.jit
def relu_or_neg(x):
    return np.where(x.sum() > 0, x, -x)

print(relu_or_neg(np.ones(3)), relu_or_neg(-np.ones(3)))

@tracejit.jit(static_argnames="n")
def head(x, n):
    return x[:n]                    # n is a Python int at trace time

print(head(np.arange(5.0), n=2))
"""),
    md("""
A NumPy function that tracejit does not implement is named, with the line that called it:
"""),
    code("""
@tracejit.jit
def eigenvalues(a):
    return np.linalg.eig(a)[0]      # general (complex) eigenvalues: eigh is for symmetric ones

try:
    eigenvalues(np.eye(3))
except tracejit.UnsupportedError as e:
    print(type(e).__name__, e, sep="\\n")
"""),
    code("""
@tracejit.jit
def scale(x):
    return x * float(x.max())

try:
    scale(np.ones(3))
except tracejit.ConcretizationError as e:
    print(type(e).__name__, e, sep="\\n")
"""),
    md("""
## Why did it retrace? `TRACEJIT_EXPLAIN_RETRACE=1`

Each new argument signature traces and compiles again. With `TRACEJIT_EXPLAIN_RETRACE=1` in the
environment (or `tracejit.config.explain_retrace = True`), every retrace says which argument
changed and how; without it, a function traced 8 times warns once.
"""),
    code("""
tracejit.config.explain_retrace = True

@tracejit.jit
def normalize(x, eps):
    return x / (np.abs(x).sum() + eps)

normalize(np.ones(4, np.float32), 1e-6)
normalize(np.ones(8, np.float32), 1e-6)          # new shape
normalize(np.ones(8, np.float64), 1e-6)          # new dtype
normalize(np.ones(8, np.float64), 1)             # Python int instead of float
tracejit.config.explain_retrace = False
print("traces:", normalize.trace_count)
"""),
    md("""
## What did it compile? `TRACEJIT_DUMP`

`TRACEJIT_DUMP=ir,optimized,source` prints those stages of every function as it is compiled.
Here in a fresh Python process, with the variable in its environment:
"""),
    code('''
script = """
import numpy as np, tracejit
@tracejit.jit
def f(x, y, w):
    return (x + y) * w
f(*[np.ones((2, 3), np.float32)] * 3)
"""
env = dict(os.environ, TRACEJIT_DUMP="ir,optimized")
out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
print(out.stderr)
''', ),
    md("""
The same stages are available on any jitted function without the environment variable:
`jit(f).lower(*args).ir`, `.optimized` and `.source`. `TRACEJIT_DISABLE_JIT=1` runs jitted
functions as plain Python, to step through them in a debugger.

## Drawing the graph

The IR is a graph: each op reads values and defines new ones. `to_dot` writes it in Graphviz's
DOT language (paste it into any Graphviz viewer, or render it with the `dot` program when it is
installed). The drawing below needs only matplotlib: ops are placed in layers by their depth.
"""),
    code('''
def to_dot(fn):
    """A Function as Graphviz DOT: parameters as ellipses, ops as boxes, edges labelled by type."""
    ids, lines = {}, [f'digraph "{fn.name}" {{', "  rankdir=TB; node [fontname=monospace];"]
    for i, p in enumerate(fn.params):
        ids[p] = f"p{i}"
        lines.append(f'  p{i} [shape=ellipse, label="{p.name or f"arg{i}"}: {p.type}"];')
    for j, op in enumerate(fn.ops):
        lines.append(f'  op{j} [shape=box, label="{op.name}"];')
        for v in op.operands:
            lines.append(f'  {ids[v]} -> op{j} [label="{v.type}", fontsize=9];')
        for r in op.results:
            ids[r] = f"op{j}"
    for k, r in enumerate(fn.results):
        lines.append(f'  out{k} [shape=ellipse, label="result {k}: {r.type}"];')
        lines.append(f"  {ids[r]} -> out{k};")
    return "\\n".join(lines + ["}"])


def f(x, y, w):
    return np.tanh((x + y) * w).sum(axis=1)

args = [np.ones((3, 4), np.float32)] * 3
fn = tracejit.make_ir(f)(*args)
dot = to_dot(fn)
print(dot)
'''),
    code('''
import matplotlib.pyplot as plt

def draw(fn, ax):
    """Layered drawing: parameters (blue) on top, each op one layer below its deepest operand,
    ops that compute a result in green."""
    depth, pos, labels, edges = {}, {}, {}, []
    for i, p in enumerate(fn.params):
        depth[p] = 0
        labels[p] = f"{p.name or f'arg{i}'}\\n{p.type}"
    nodes = list(fn.params)
    for op in fn.ops:
        d = 1 + max((depth[v] for v in op.operands), default=0)
        key = op.results[0] if op.results else op
        depth[key] = d
        for r in op.results:
            depth[r] = d
        labels[key] = f"{op.name}\\n{op.results[0].type if op.results else ''}"
        edges += [(_node(v, fn), key) for v in op.operands]
        nodes.append(key)
    layers = {}
    for n in nodes:
        layers.setdefault(depth[n], []).append(n)
    for d, row in layers.items():
        for k, n in enumerate(row):
            pos[n] = (k - (len(row) - 1) / 2, -d)
    for a, b in edges:
        ax.annotate("", xy=pos[b], xytext=pos[a],
                    arrowprops=dict(arrowstyle="->", color="gray", shrinkA=14, shrinkB=14))
    for n in nodes:
        is_param, is_result = n in fn.params, n in fn.results
        ax.text(*pos[n], labels[n], ha="center", va="center", fontsize=8, family="monospace",
                bbox=dict(boxstyle="round" if is_param else "square", ec="gray",
                          fc="#dde8f6" if is_param else "#d8f0d8" if is_result else "#f6eedd"))
    xs = [p[0] for p in pos.values()]
    ax.set_xlim(min(xs) - 0.8, max(xs) + 0.8)
    ax.set_ylim(-max(layers) - 0.6, 0.6)
    ax.axis("off")

def _node(v, fn):
    """The drawn node of a value: the parameter itself, or its op's first result."""
    return v if v.op is None else v.op.results[0]

fig, ax = plt.subplots(figsize=(6, 6))
draw(fn, ax)
ax.set_title(f"@{fn.name}: {len(fn.ops)} ops");
'''),
    md("""
When Graphviz's `dot` program is on the PATH, render the DOT text with it (here as SVG):
"""),
    code("""
from IPython.display import SVG, display

if shutil.which("dot"):
    svg = subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True, text=True,
                         check=True).stdout
    display(SVG(svg))
else:
    print("Graphviz's dot program is not installed: the matplotlib drawing above is the graph")
"""),
    md("""
The gradient's graph is larger; the same drawing works for any Function, for example the
backward pass of `f`:
"""),
    code("""
gfn = tracejit.make_ir(tracejit.grad(lambda x, y, w: f(x, y, w).sum()))(*args)
fig, ax = plt.subplots(figsize=(9, 8))
draw(gfn, ax)
ax.set_title(f"grad: {len(gfn.ops)} ops");
"""),
]


NOTEBOOKS = {
    "01_quickstart.ipynb": QUICKSTART,
    "02_fusion_and_codegen.ipynb": FUSION,
    "03_training_cnn.ipynb": TRAINING,
    "04_debugging.ipynb": DEBUGGING,
}


def make_notebook(cells):
    import nbformat
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell(src) if kind == "markdown"
                else nbformat.v4.new_code_cell(src) for kind, src in cells]
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:02d}"          # stable ids: rebuilding gives the same file
    return nb


def execute(nb, timeout=600, env=None):
    """Run every cell in a fresh kernel, in this folder; raises on the first cell error."""
    from nbclient import NotebookClient
    old = dict(os.environ)
    os.environ.update(env or {})
    try:
        NotebookClient(nb, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(HERE)}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    return nb


def main(argv=None):
    import nbformat
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("only", nargs="*", help="build notebooks whose name contains this")
    ap.add_argument("--no-execute", action="store_true")
    args = ap.parse_args(argv)
    for name, cells in NOTEBOOKS.items():
        if args.only and not any(s in name for s in args.only):
            continue
        nb = make_notebook(cells)
        t0 = time.perf_counter()
        if not args.no_execute:
            execute(nb)
        nbformat.write(nb, str(HERE / name))
        print(f"wrote {name} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
