"""Karpathy's min-char-rnn (hidden 100, sequence 25, tanh cell, softmax cross-entropy,
Adagrad), written with ``tracejit.scan``, trained beside the same model with its time loop
unrolled by Python, from the same start on the same text: the two loss curves agree, and the
scan version traces and compiles one step of the loop instead of 25. (Bit for bit when both
run compiled, ``TRACEJIT_TIERED=0``: 3e-14 after 300 steps. Tiered, each runs its first steps
on the NumPy tier until its kernels are in, for a different number of steps; where NumPy has
exp and tanh of its own (AVX-512 machines), they differ from the kernels' in the last bit and
300 steps of training grow that to about 1e-2.)

    python -m tracejit.demo.char_rnn              # 300 steps each
    python -m tracejit.demo.char_rnn --steps 1000

The training step is plain NumPy, as in the original: Adagrad updates the parameters and its
memory in place (``mem += g * g``; ``p -= lr * g / np.sqrt(mem + 1e-8)``), and jit writes
them back into the caller's arrays. The text is the Zen of Python (``this``), which ships with
Python, so the demo needs no download.
"""
from __future__ import annotations

import argparse
import codecs
import contextlib
import io
import time

import numpy as np

import tracejit as tj

HIDDEN, SEQ, LR = 100, 25, 1e-1


def text() -> str:
    with contextlib.redirect_stdout(io.StringIO()):     # importing `this` prints the Zen
        import this
    return codecs.decode(this.s, "rot13")


def init(vocab: int, seed: int = 0) -> tuple:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((HIDDEN, vocab)) * 0.01,    # Wxh
            rng.standard_normal((HIDDEN, HIDDEN)) * 0.01,   # Whh
            rng.standard_normal((vocab, HIDDEN)) * 0.01,    # Why
            np.zeros(HIDDEN), np.zeros(vocab))              # bh, by


def cell(params, h, x, target):
    """One time step: the new hidden state and this step's cross-entropy."""
    Wxh, Whh, Why, bh, by = params
    h = np.tanh(Wxh @ x + Whh @ h + bh)
    y = Why @ h + by
    p = np.exp(y - y.max())
    p = p / p.sum()
    return h, -np.sum(np.log(p) * target)


def loss_scan(params, inputs, targets, hprev):
    """inputs, targets: one-hot [SEQ, vocab]. The loop is one ``scan`` op in the IR."""
    def step(h, xt):
        return cell(params, h, *xt)
    h, losses = tj.scan(step, hprev, (inputs, targets))
    return losses.sum(), h


def loss_unrolled(params, inputs, targets, hprev):
    """The same loss with a Python loop: traced, it is SEQ copies of the cell."""
    h, loss = hprev, 0.0
    for t in range(inputs.shape[0]):
        h, lt = cell(params, h, inputs[t], targets[t])
        loss = loss + lt
    return loss, h


def make_step(loss_fn):
    @tj.jit
    def train_step(params, mem, inputs, targets, hprev):
        (loss, h), grads = tj.value_and_grad(loss_fn, has_aux=True)(params, inputs, targets,
                                                                    hprev)
        for p, g, m in zip(params, grads, mem):
            np.clip(g, -5, 5, out=g)                 # exploding gradients
            m += g * g                               # Adagrad, in place, as in the original
            p += -LR * g / np.sqrt(m + 1e-8)
        return loss, h
    return train_step


def train(loss_fn, data: np.ndarray, vocab: int, steps: int, every: int = 50):
    """Train from the same start; returns the loss curve (step, loss, smoothed loss) every
    ``every`` steps, the first call's seconds, the step from which compiled code ran (the
    first steps run on the NumPy tier while the kernels compile; -1: not within ``steps``),
    and the median compiled step in ms."""
    params = init(vocab)
    mem = tuple(np.zeros_like(p) for p in params)
    step_fn = make_step(loss_fn)
    eye = np.eye(vocab)
    smooth = -np.log(1.0 / vocab) * SEQ
    h, pos, curve, times, compiled_from = np.zeros(HIDDEN), 0, [], [], None
    for n in range(steps):
        if pos + SEQ + 1 >= len(data):
            h, pos = np.zeros(HIDDEN), 0
        chunk = data[pos:pos + SEQ + 1]
        compiled = step_fn.stats()[0]["tier"] == "compiled" if n else False
        t = time.perf_counter()
        loss, h = step_fn(params, mem, eye[chunk[:-1]], eye[chunk[1:]], h)
        times.append(time.perf_counter() - t)
        if compiled and compiled_from is None:
            compiled_from = n
        smooth = smooth * 0.999 + float(loss) * 0.001
        pos += SEQ
        if n % every == 0 or n == steps - 1:
            curve.append((n, float(loss), smooth))
    if compiled_from is None:
        # still compiling when training ended: wait, then time compiled steps on copies
        step_fn.wait_compiled()
        params = tuple(p.copy() for p in params)
        mem = tuple(m.copy() for m in mem)
        for _ in range(20):
            t = time.perf_counter()
            step_fn(params, mem, eye[chunk[:-1]], eye[chunk[1:]], h)
            times.append(time.perf_counter() - t)
        compiled_from = -1
    fast = times[compiled_from:] if compiled_from >= 0 else times[-20:]
    return curve, times[0], compiled_from, float(np.median(fast) * 1e3)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=300)
    args = ap.parse_args(argv)
    corpus = text()
    chars = sorted(set(corpus))
    data = np.array([chars.index(c) for c in corpus])
    vocab = len(chars)
    print(f"\n== min-char-rnn on the Zen of Python: {len(corpus)} characters, vocabulary "
          f"{vocab}, hidden {HIDDEN}, sequence {SEQ}, Adagrad ==")
    results = {}
    for name, fn in (("scan", loss_scan), ("unrolled", loss_unrolled)):
        results[name] = train(fn, data, vocab, args.steps)
        curve, first, compiled_from, step_ms = results[name]
        print(f"{name:>8}: first call {first:.2f} s (trace, then the NumPy tier); compiled "
              + (f"from step {compiled_from}" if compiled_from >= 0 else
                 "after training (waited for)") + f": {step_ms:.2f} ms a step")
    print("\n  step   loss (scan)   loss (unrolled)   smooth (scan)   smooth (unrolled)")
    for (n, ls, ss), (_, lu, su) in zip(results["scan"][0], results["unrolled"][0]):
        print(f"{n:>6}   {ls:11.4f}   {lu:15.4f}   {ss:13.4f}   {su:17.4f}")
    gap = max(abs(a[1] - b[1]) for a, b in zip(results["scan"][0], results["unrolled"][0]))
    print(f"largest difference between the two loss curves: {gap:.2e}"
          + ("" if gap < 1e-6 else " (the NumPy tier's exp and tanh and the kernels' differ in "
             "the last bit on this CPU, and the two switched tiers at different steps)"))


if __name__ == "__main__":
    main()
