"""The agreement check that gates every benchmark report.

Before anything is timed, every implementation is *probed* on the same inputs:

* ``grad``: mean loss and batch-averaged gradient for a few (weights, batch) pairs, where the
  weights are the paper's constant initial weights and jittered copies of them (the constant
  start is so symmetric that, e.g., two swapped channels would go unnoticed there);
* ``train``: the timed training loop itself over a few batches from the initial weights (its
  per-batch losses and final weights), which also covers the SGD update;
* ``predict``: the timed inference path on a few images.

:func:`compare` then checks each implementation against the first (the reference) with a
normwise relative error per parameter tensor (``|a - b| / |b|``, 2-norms) and a relative error
per loss. Elementwise relative errors are not used: float32 sums of a few thousand terms in a
different order legitimately differ by ~1e-6 relative to the *terms*, which is a large relative
error for a gradient entry that nearly cancels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bench.model import BATCH, LEARNING_RATE, init_params, jittered_params, param_slices

REL_TOL = 1e-4


def probe_weights(model=None) -> list[np.ndarray]:
    """The paper's constant weights and two jittered copies (``model``: a ``BenchModel``;
    default the CNN)."""
    if model is not None:
        return [model.init_params(), model.jittered_params(seed=1),
                model.jittered_params(seed=2, scale=0.5)]
    return [init_params(), jittered_params(seed=1), jittered_params(seed=2, scale=0.5)]


def probe(impl, xs: np.ndarray, batch: int = BATCH, n_batches: int = 3,
          lr: float = LEARNING_RATE, model=None, grad_batch: int | None = None) -> dict:
    """Everything :func:`compare` needs from one implementation, as plain lists (JSON-able).
    ``model``: a ``bench.model.BenchModel`` (default the CNN). ``grad_batch``: the batch of
    the ``grad`` probes (default ``batch``); the ``train`` and ``predict`` probes run the timed
    loops at ``batch``. The benchmark probes gradients at batch 100 whatever it times: at
    batch 1000 the batch-mean gradient of the CNN's bias b1 cancels so much that PyTorch's
    float32 reductions are 4e-4 off a float64 evaluation (normwise), the C's 3e-7."""
    gb = grad_batch or batch
    init = model.init_params if model is not None else init_params
    if xs.shape[0] < n_batches * max(batch, gb):
        raise ValueError(f"agreement check needs {n_batches * max(batch, gb)} samples, "
                         f"have {xs.shape[0]}")
    grads = grad_probes(impl.batch_grad, xs, gb, model, n_batches)
    w = init()
    data = impl.prepare(np.ascontiguousarray(xs[:n_batches * batch]))
    losses = impl.train_prepared(w, data, batch, lr)
    pred = impl.predict_prepared(init(), impl.prepare(np.ascontiguousarray(xs[:batch])),
                                 batch)
    return {"grad": grads,
            "train": {"losses": np.asarray(losses, np.float64).tolist(),
                      "weights": np.asarray(w, np.float32).tolist()},
            "predict": np.asarray(pred, np.float32).ravel().tolist()}


def grad_probes(batch_grad, xs: np.ndarray, gb: int, model=None, n_batches: int = 3,
                dtype=np.float32) -> list[dict]:
    """The ``grad`` probes: ``batch_grad(w, batch)`` for each of :func:`probe_weights` on
    batch ``k % n_batches`` of ``gb`` samples (``dtype``: the precision the results keep;
    the float64 arbiter's are float64)."""
    grads = []
    for k, w in enumerate(probe_weights(model)):
        b = xs[(k % n_batches) * gb:((k % n_batches) + 1) * gb]
        loss, g = batch_grad(w.copy(), np.ascontiguousarray(b))
        grads.append({"loss": float(loss), "grad": np.asarray(g, dtype).tolist()})
    return grads


def _rel(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        return float("inf")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return float("inf")
    nb = np.linalg.norm(b)
    return float(np.linalg.norm(a - b) / nb) if nb > 0 else float(np.linalg.norm(a))


@dataclass(frozen=True)
class Row:
    impl: str
    quantity: str
    rel_err: float
    tol: float
    explained: str = ""     # why a difference past tol is not a disagreement (arbitrate)

    @property
    def ok(self) -> bool:
        return self.rel_err <= self.tol or bool(self.explained)


@dataclass(frozen=True)
class Agreement:
    reference: str
    rows: tuple[Row, ...]

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rows)

    def failures(self) -> list[Row]:
        return [r for r in self.rows if not r.ok]

    def worst(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for r in self.rows:
            out[r.impl] = max(out.get(r.impl, 0.0), r.rel_err)
        return out

    def table(self) -> str:
        lines = [f"agreement with {self.reference} (normwise relative error, tolerance "
                 f"{REL_TOL:g}):", "| implementation | quantity | rel. error | ok |",
                 "| --- | --- | ---: | --- |"]
        for r in self.rows:
            ok = f"yes ({r.explained})" if r.explained else "yes" if r.ok else "**NO**"
            lines.append(f"| {r.impl} | {r.quantity} | {r.rel_err:.2e} | {ok} |")
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {"reference": self.reference, "tolerance": REL_TOL, "ok": self.ok,
                "rows": [{"impl": r.impl, "quantity": r.quantity, "rel_err": r.rel_err,
                          "ok": r.ok, **({"explained": r.explained} if r.explained else {})}
                         for r in self.rows]}


def compare(probes: dict[str, dict], tol: float = REL_TOL, slices=None) -> Agreement:
    """Check every probe against the first one; see the module docstring. ``slices``: where
    each parameter lives in the flat vector (default the CNN's)."""
    if not probes:
        raise ValueError("nothing to compare")
    names = list(probes)
    ref = probes[names[0]]
    slices = slices or param_slices()
    rows: list[Row] = []
    for name in names[1:]:
        p = probes[name]
        if len(p["grad"]) != len(ref["grad"]):
            rows.append(Row(name, "number of probes", float("inf"), tol))
            continue
        for k, (a, b) in enumerate(zip(p["grad"], ref["grad"])):
            rows.append(Row(name, f"loss[{k}]", _rel(a["loss"], b["loss"]), tol))
            ga, gb = np.asarray(a["grad"]), np.asarray(b["grad"])
            if ga.shape != gb.shape:
                rows.append(Row(name, f"grad[{k}] shape", float("inf"), tol))
                continue
            for pname, sl in slices.items():
                rows.append(Row(name, f"grad[{k}].{pname}", _rel(ga[sl], gb[sl]), tol))
        rows.append(Row(name, "train losses", _rel(p["train"]["losses"], ref["train"]["losses"]),
                        tol))
        wa, wb = np.asarray(p["train"]["weights"]), np.asarray(ref["train"]["weights"])
        for pname, sl in slices.items():
            rows.append(Row(name, f"trained {pname}",
                            _rel(wa[sl], wb[sl]) if wa.shape == wb.shape else float("inf"), tol))
        rows.append(Row(name, "predictions", _rel(p["predict"], ref["predict"]), tol))
    return Agreement(names[0], tuple(rows))


ARBITER_SLACK = 30      # the most a float32 result may be off float64: 30 * tol (3e-3)


def arbitrate(agreement: Agreement, probes: dict[str, dict], exact: list[dict],
              slices=None) -> Agreement:
    """``agreement`` with each failed ``loss[k]`` / ``grad[k].P`` row settled by ``exact``,
    the same ``grad`` probes evaluated in float64 (PyTorch, :func:`grad_probes`): the row is
    *explained* when both float32 results are within ``ARBITER_SLACK`` times the tolerance
    of float64, so that their difference is the two roundings (a wrong kernel, a swapped
    channel or a border off by one, is off float64 by far more). The row says how far each
    is. Other rows are left as they are.

    Why: ResNet-20 at batch 100 on an Intel AVX-512 machine, with the jittered weights of
    the probes: PyTorch's oneDNN convolutions in float32 are 5.5e-4 off float64 (normwise) on
    the second stage's weight gradients (1.2e-3 on a residual scalar; 2.9e-6 with oneDNN
    off), the generated C 4e-7; on the third probe the generated C's float32 sums over a
    plane are 5.2e-4 off on the third stage's (PyTorch 7e-7). Neither is a disagreement
    about the function."""
    slices = slices or param_slices()
    ref = probes[agreement.reference]
    rows = []
    for r in agreement.rows:
        q = r.quantity
        if r.ok or not q.startswith(("loss[", "grad[")) or "]" not in q \
                or q.endswith(("shape", "probes")):
            rows.append(r)
            continue
        k = int(q[q.index("[") + 1:q.index("]")])
        if k >= len(exact):
            rows.append(r)
            continue
        if q.startswith("loss["):
            a, b, x = probes[r.impl]["grad"][k]["loss"], ref["grad"][k]["loss"], \
                exact[k]["loss"]
        else:
            sl = slices[q.split(".", 1)[1]]
            a, b, x = (np.asarray(p["grad"])[sl] for p in
                       (probes[r.impl]["grad"][k], ref["grad"][k], exact[k]))
        own_err, ref_err = _rel(a, x), _rel(b, x)
        if max(own_err, ref_err) <= ARBITER_SLACK * r.tol:
            r = Row(r.impl, q, r.rel_err, r.tol,
                    f"float32 roundings: {own_err:.1e} and {agreement.reference} "
                    f"{ref_err:.1e} off float64")
        rows.append(r)
    return Agreement(agreement.reference, tuple(rows))


class Perturbed:
    """An implementation whose every result is scaled by ``1 + rel``: a stand-in for a subtly
    wrong kernel, used to show that the check refuses it."""

    def __init__(self, impl, rel: float):
        self.impl, self.rel = impl, rel
        self.name = f"{impl.name}(perturbed {rel:g})"

    def __getattr__(self, attr):
        return getattr(self.impl, attr)

    def batch_grad(self, w, xs):
        loss, g = self.impl.batch_grad(w, xs)
        return loss * (1 + self.rel), g * np.float32(1 + self.rel)

    def train_prepared(self, w, data, batch, lr):
        losses = self.impl.train_prepared(w, data, batch, lr)
        w *= np.float32(1 + self.rel)
        return losses * (1 + self.rel)

    def predict_prepared(self, w, data, batch):
        return self.impl.predict_prepared(w, data, batch) * np.float32(1 + self.rel)
