"""FLOP counts of any model, read from its expression dump.

``bench/flops.py`` counts the paper's CNN by hand; this module counts any dump the same way,
from the one-sample loop nests the extractor lowers it to (``extract.passes.lower.lower_to_loops``:
every chain binding and every gradient of the dump, after ``opt``, with the bounds of range
guards already tightened). Each statement's arithmetic is counted once per iteration of its
loops (loops whose bounds or guards depend on an outer variable are enumerated), so the count
is exact for the lowered algorithm and does not depend on the lane kernels or registers.

Conventions (those of ``bench/flops.py``): an add, subtract, multiply (also by a constant) or
divide is 1 FLOP; a negation is free; ``s += x`` is one add; ``exp`` and ``log`` are one FLOP
each and reported separately (``exp``); ``logistic`` is exp, add and divide (3 FLOPs);
``recip`` one divide; ``sqrt`` one FLOP (an IEEE operation, like the divide, counted with the
arithmetic); ``relu``, ``step`` and ``max`` one comparison each (``cmp``, counted in the
total). Per batch of B samples, on top of B times (forward + backward): the per-sample
parameter gradients are summed ((B - 1) P adds), averaged (P divides) and applied by SGD
(P multiplies, P subtracts), P the number of parameters. Inference is the forward chain only.

    python -m bench.dumpflops models/lenet5.model
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from functools import lru_cache

from extract.ir import code as C


@dataclass
class Ops:
    arith: int = 0      # add, subtract, multiply, divide, sqrt
    exp: int = 0        # exp and log
    cmp: int = 0        # relu, step, max

    @property
    def total(self) -> int:
        return self.arith + self.exp + self.cmp

    def __add__(self, o: "Ops") -> "Ops":
        return Ops(self.arith + o.arith, self.exp + o.exp, self.cmp + o.cmp)

    def __mul__(self, k: int) -> "Ops":
        return Ops(self.arith * k, self.exp * k, self.cmp * k)


_UNARY = {"logistic": Ops(2, 1, 0), "exp": Ops(0, 1, 0), "log": Ops(0, 1, 0),
          "recip": Ops(1, 0, 0), "sqrt": Ops(1, 0, 0), "relu": Ops(0, 0, 1),
          "step": Ops(0, 0, 1), "erf": Ops(0, 1, 0),
          "derf": Ops(2, 1, 0)}      # derf: 2/√π · exp(−x·x)


def _aval(a: C.Affine, env: dict) -> int:
    v = a.const
    for atom, c in a.terms:
        if isinstance(atom, C.IVar):
            v += c * env[atom]
        elif isinstance(atom, C.IDiv):
            v += c * (_aval(atom.a, env) // atom.d)
        else:
            v += c * (_aval(atom.a, env) % atom.d)
    return v


def _holds(cond, env: dict) -> bool:
    if cond is True or cond is False:
        return cond
    for c in cond:
        v = _aval(c.a, env)
        if (c.op == "ge" and v < 0) or (c.op == "eq" and v != 0):
            return False
    return True


def _expr(e, env: dict) -> Ops:
    if isinstance(e, (C.Lit, C.Load, C.Local)):
        return Ops()
    if isinstance(e, (C.Add, C.Mul)):
        return _expr(e.a, env) + _expr(e.b, env) + Ops(1)
    if isinstance(e, C.Neg):
        return _expr(e.a, env)
    if isinstance(e, C.Scale):
        return _expr(e.a, env) + Ops(1)
    if isinstance(e, C.Un):
        return _expr(e.a, env) + _UNARY[e.fn]
    if isinstance(e, C.Max):
        return _expr(e.a, env) + _expr(e.b, env) + Ops(0, 0, 1)
    if isinstance(e, C.Select):
        free = C.cond_ivars(e.cond)
        if free <= set(env):
            return _expr(e.a, env) if _holds(e.cond, env) else Ops()
        return _expr(e.a, env)  # a guard on a summation variable: an upper bound
    if isinstance(e, C.Reduce):
        m = math.prod(v.extent for v in e.vars)
        return _expr(e.body, env) * m + Ops(max(m - 1, 0))
    raise TypeError(f"unknown expression {type(e).__name__}")


def _uses(stmts) -> set:
    """Loop variables that bounds or guards inside ``stmts`` read (they must be enumerated)."""
    out = set()
    for s in stmts:
        if isinstance(s, C.For):
            for a in (*s.lo, *s.hi):
                out |= a.ivars()
            out |= _uses(s.body)
        elif isinstance(s, C.If):
            out |= C.cond_ivars(s.cond) | _uses(s.body)
        elif isinstance(s, (C.Store, C.Decl, C.Acc, C.Assign)):
            out |= _select_vars(s.value)
    return out


def _select_vars(e) -> set:
    if isinstance(e, C.Select):
        return C.cond_ivars(e.cond) | _select_vars(e.a)
    out = set()
    for f in ("a", "b", "body"):
        if hasattr(e, f) and isinstance(getattr(e, f), C.RExpr):
            out |= _select_vars(getattr(e, f))
    return out


def count_stmts(stmts, env: dict | None = None) -> Ops:
    env = env or {}
    total = Ops()
    for s in stmts:
        if isinstance(s, C.For):
            lo = max([0] + [_aval(a, env) for a in s.lo])
            hi = min([s.var.extent] + [_aval(a, env) for a in s.hi])
            if hi <= lo:
                continue
            if s.var in _uses(s.body):
                for i in range(lo, hi):
                    total = total + count_stmts(s.body, {**env, s.var: i})
            else:
                total = total + count_stmts(s.body, env) * (hi - lo)
        elif isinstance(s, C.If):
            if _holds(s.cond, env):
                total = total + count_stmts(s.body, env)
        elif isinstance(s, C.Store):
            total = total + _expr(s.value, env) + Ops(1 if s.op == "+=" else 0)
        elif isinstance(s, (C.Decl, C.Assign)):
            total = total + _expr(s.value, env)
        elif isinstance(s, C.Acc):
            total = total + _expr(s.value, env) + Ops(1)
    return total


@dataclass(frozen=True)
class ModelFlops:
    model: str
    forward: Ops
    backward: Ops
    n_params: int
    per_binding: tuple      # (name, Ops) in order, forward then backward

    def train(self, images: int, batch: int) -> int:
        """FLOPs of SGD over ``images`` samples in batches of ``batch``."""
        nb = images // batch
        per_batch = (batch * (self.forward.total + self.backward.total)
                     + (batch - 1) * self.n_params + 3 * self.n_params)
        return nb * per_batch

    def infer(self, images: int) -> int:
        return images * self.forward.total

    def summary(self, batch: int) -> dict:
        return {"model": self.model, "forward": self.forward.total,
                "backward": self.backward.total, "n_params": self.n_params,
                "train_per_image": self.train(batch, batch) / batch,
                "infer_per_image": self.forward.total, "exp_forward": self.forward.exp,
                "exp_backward": self.backward.exp}


@lru_cache(maxsize=None)
def count_dump(path: str) -> ModelFlops:
    """FLOP counts of the dump at ``path`` (a JSON file)."""
    from extract.ir import dump, ir
    from extract.passes.lower import lower_to_loops

    m = dump.load(path)
    fwd, bwd = lower_to_loops(m)
    per = tuple((k.name, count_stmts(k.body)) for k in (*fwd, *bwd))
    f = sum((o for _, o in per[:len(fwd)]), Ops())
    b = sum((o for _, o in per[len(fwd):]), Ops())
    return ModelFlops(m.name, f, b, sum(ir.size(p.shape) for p in m.params), per)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", nargs="+", help="built-in name, dump (.json) or model file")
    ap.add_argument("--batch", type=int, default=100)
    args = ap.parse_args(argv)
    from runtime.spec import model_spec
    from extract.emit import build
    for name in args.model:
        spec = model_spec(name)
        path = spec.kernels_dump or spec.dump or build.dump_path(spec.name)
        c = count_dump(str(path))
        print(f"## {c.model} ({path})\n\n| binding | arith | exp/log | cmp | total |\n"
              "| --- | ---: | ---: | ---: | ---: |")
        for n, o in c.per_binding:
            print(f"| {n} | {o.arith} | {o.exp} | {o.cmp} | {o.total} |")
        for n, o in (("**forward**", c.forward), ("**backward**", c.backward)):
            print(f"| {n} | {o.arith} | {o.exp} | {o.cmp} | {o.total} |")
        s = c.summary(args.batch)
        print(f"\ntraining {s['train_per_image']:.0f} FLOP/image at batch {args.batch}; "
              f"inference {s['infer_per_image']} FLOP/image; {c.n_params} parameters\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
