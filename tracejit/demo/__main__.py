"""`make demo`: the IR of an MLP forward pass, then training a CNN and an MLP on the digits, and
a character-level RNN written with `tracejit.scan` beside its unrolled twin.

    python -m tracejit.demo            # about a minute or two on 2 cores
    python -m tracejit.demo --long     # more epochs
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from . import char_rnn, forward
from .data import load_digits_28
from .models import MLP, SimpleCNN
from .train import train


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--long", action="store_true", help="train for more epochs")
    ap.add_argument("--no-train", action="store_true", help="only the forward-pass demo")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    forward.main()
    if args.no_train:
        return
    data = load_digits_28()
    print(f"\n== Training on scikit-learn's digits: {len(data[0][1])} train, "
          f"{len(data[1][1])} test images, 1x28x28 ==")
    rng = np.random.default_rng(0)
    epochs_mlp, epochs_cnn = (20, 10) if args.long else (8, 3)
    _, acc_mlp, _ = train("MLP", MLP(rng=rng), data, epochs_mlp)
    _, acc_cnn, _ = train("CNN", SimpleCNN(rng=rng), data, epochs_cnn)
    char_rnn.main(["--steps", "1000" if args.long else "300"])
    print(f"\nMLP {acc_mlp * 100:.1f}%, CNN {acc_cnn * 100:.1f}% test accuracy; "
          f"demo took {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
