"""Analytic floating-point operation counts of the CNN, per image and per batch.

Conventions (see README.md): one multiply, add, subtract or divide is one FLOP; a negation is
free; ``exp`` is counted as one FLOP and also reported on its own (``exp``), so a reader who
prices it at 10-20 FLOPs can reweigh. A sum of ``m`` terms costs ``m - 1`` adds (the first term
initialises the accumulator), a bias add is one more. The count is of the algorithm, not of
any one implementation: forward-saved activations (c1, s1, c2, s2, r) are reused by the
backward pass, ``logistic'(x)`` is computed as ``y * (1 - y)`` from the saved ``y``, the
average pool divides by 4 once per output, its backward divides once per input element, and
the gradient of the input image is not computed.

>>> c = count()
>>> c["forward"].total, c["backward"].total
(423966, 657496)
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Config:
    """The CNN's sizes; the default is the paper's network."""

    image: int = 28
    k1: int = 5          # first kernel side
    c1: int = 6          # first layer channels
    pool: int = 2        # average pool side
    k2: int = 5          # second kernel side
    c2: int = 12         # second layer channels
    out: int = 10        # classes

    @property
    def h1(self) -> int:   # c1 side
        return self.image - self.k1 + 1

    @property
    def p1(self) -> int:   # s1 side
        return self.h1 // self.pool

    @property
    def h2(self) -> int:   # c2 side
        return self.p1 - self.k2 + 1

    @property
    def p2(self) -> int:   # s2 side
        return self.h2 // self.pool

    @property
    def features(self) -> int:  # length of s2
        return self.c2 * self.p2 * self.p2

    @property
    def n_params(self) -> int:
        return (self.c1 * self.k1 ** 2 + self.c1 + self.c2 * self.c1 * self.k2 ** 2 + self.c2
                + self.out * self.features + self.out)

    def check(self) -> None:
        if self.h1 % self.pool or self.h2 % self.pool or self.h2 < 1:
            raise ValueError(f"inconsistent CNN sizes: {self}")


@dataclass
class Ops:
    """Counts by kind; ``total`` weighs every kind (exp included) as one FLOP."""

    add: int = 0
    mul: int = 0
    div: int = 0
    exp: int = 0

    @property
    def total(self) -> int:
        return self.add + self.mul + self.div + self.exp

    def __add__(self, o: "Ops") -> "Ops":
        return Ops(self.add + o.add, self.mul + o.mul, self.div + o.div, self.exp + o.exp)

    def scaled(self, k: int) -> "Ops":
        return Ops(self.add * k, self.mul * k, self.div * k, self.exp * k)


def _dot(outputs: int, length: int, bias: bool) -> Ops:
    """``outputs`` dot products of ``length`` terms, plus a bias each if asked."""
    return Ops(add=outputs * (length - 1 + bias), mul=outputs * length)


def _logistic(n: int) -> Ops:       # 1 / (1 + exp(-x)): exp, add, divide
    return Ops(add=n, div=n, exp=n)


def _pool(outputs: int, window: int) -> Ops:   # sum of window terms, then / window
    return Ops(add=outputs * (window - 1), div=outputs)


def _dlogistic_pool(n: int) -> Ops:
    """d_x = (d_pooled / window) * y * (1 - y) per element: divide, subtract, two multiplies."""
    return Ops(add=n, mul=2 * n, div=n)


def layers(cfg: Config = Config()) -> dict[str, Ops]:
    """Per-image counts of every stage, forward then backward, in evaluation order."""
    cfg.check()
    q = cfg.pool ** 2
    n_c1, n_s1 = cfg.c1 * cfg.h1 ** 2, cfg.c1 * cfg.p1 ** 2
    n_c2, n_s2 = cfg.c2 * cfg.h2 ** 2, cfg.features
    return {
        # forward
        "conv1": _dot(n_c1, cfg.k1 ** 2, bias=True),
        "logistic1": _logistic(n_c1),
        "pool1": _pool(n_s1, q),
        "conv2": _dot(n_c2, cfg.c1 * cfg.k2 ** 2, bias=True),
        "logistic2": _logistic(n_c2),
        "pool2": _pool(n_s2, q),
        "fc": _dot(cfg.out, n_s2, bias=True),
        "logistic3": _logistic(cfg.out),
        # loss = 1/2 sum (r - t)^2: subtract, square, sum, halve
        "loss": Ops(add=cfg.out + cfg.out - 1, mul=cfg.out + 1),
        # backward
        "d_r1": Ops(add=2 * cfg.out, mul=2 * cfg.out),     # (r - t) * r * (1 - r)
        "d_fc": Ops(mul=cfg.out * n_s2),                    # outer product; d_b = d_r1 is free
        "d_s2": _dot(n_s2, cfg.out, bias=False),            # fc^T d_r1
        "d_c21": _dlogistic_pool(n_c2),
        "d_b2": Ops(add=cfg.c2 * (cfg.h2 ** 2 - 1)),
        "d_k2": _dot(cfg.c2 * cfg.c1 * cfg.k2 ** 2, cfg.h2 ** 2, bias=False),
        # full correlation: every (o, c, u, v, y, x) term is one multiply; each of the n_s1
        # sums has at least one term (p1 = h2 + k2 - 1)
        "d_s1": Ops(add=cfg.c2 * cfg.c1 * cfg.k2 ** 2 * cfg.h2 ** 2 - n_s1,
                    mul=cfg.c2 * cfg.c1 * cfg.k2 ** 2 * cfg.h2 ** 2),
        "d_c11": _dlogistic_pool(n_c1),
        "d_b1": Ops(add=cfg.c1 * (cfg.h1 ** 2 - 1)),
        "d_k1": _dot(cfg.c1 * cfg.k1 ** 2, cfg.h1 ** 2, bias=False),
    }


FORWARD = ("conv1", "logistic1", "pool1", "conv2", "logistic2", "pool2", "fc", "logistic3")


def _sum(ops) -> Ops:
    total = Ops()
    for o in ops:
        total = total + o
    return total


def count(cfg: Config = Config()) -> dict[str, Ops]:
    """Per-image ``forward`` (prediction, no loss), ``loss``, ``backward``; and per batch-step
    ``update`` for ``n_params`` parameters (average the summed gradient, then SGD)."""
    ls = layers(cfg)
    names = list(ls)
    back = names[names.index("d_r1"):]
    return {
        "forward": _sum(ls[k] for k in FORWARD),
        "loss": ls["loss"],
        "backward": _sum(ls[k] for k in back),
        # per batch of B: (B - 1) * P adds to sum the per-image gradients, P divides to
        # average them, P multiplies and P subtracts for w -= lr * g
        "update_per_param": Ops(add=1, mul=1, div=1),
    }


def train_flops(n_images: int, batch: int, cfg: Config = Config()) -> int:
    """FLOPs of SGD training over ``n_images`` in batches of ``batch`` (full batches only)."""
    c = count(cfg)
    nb = n_images // batch
    per_image = c["forward"].total + c["loss"].total + c["backward"].total
    per_batch = batch * per_image + (batch - 1) * cfg.n_params + 3 * cfg.n_params
    return nb * per_batch


def infer_flops(n_images: int, cfg: Config = Config()) -> int:
    """FLOPs of the forward pass (prediction r, no loss) over ``n_images``."""
    return n_images * count(cfg)["forward"].total


def summary(cfg: Config = Config(), batch: int = 100) -> dict:
    c = count(cfg)
    return {
        "config": asdict(cfg),
        "n_params": cfg.n_params,
        "per_image": {k: asdict(v) | {"total": v.total} for k, v in c.items()},
        "layers": {k: asdict(v) | {"total": v.total} for k, v in layers(cfg).items()},
        "train_per_image": train_flops(batch, batch, cfg) / batch,
        "infer_per_image": c["forward"].total,
        "batch": batch,
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args(argv)
    s = summary(batch=args.batch)
    if args.json:
        print(json.dumps(s, indent=2))
        return
    print("| stage | add | mul | div | exp | total |\n| --- | ---: | ---: | ---: | ---: | ---: |")
    for k, v in s["layers"].items():
        print(f"| {k} | {v['add']} | {v['mul']} | {v['div']} | {v['exp']} | {v['total']} |")
    for k, v in s["per_image"].items():
        print(f"| **{k}** | {v['add']} | {v['mul']} | {v['div']} | {v['exp']} | {v['total']} |")
    print(f"\ntraining: {s['train_per_image']:.1f} FLOP/image at batch {args.batch}; "
          f"inference: {s['infer_per_image']} FLOP/image")


if __name__ == "__main__":
    main()
