"""Optimisers and learning-rate schedules for ``Model.train``, over the generated update kernels.

Every update is one generated C function, one pass over the parameters, allocation-free
(``docs/generated-api.md``): ``M_adam_update`` (Adam and AdamW), ``M_sgd_decay_update`` (SGD
with weight decay, momentum and a gradient scale) and ``M_grad_sqnorm`` (the gradient's norm,
for clipping). Python computes the scalars of a step in double: the learning rate of the
schedule, the bias corrections, the clipping factor. Each is PyTorch's, on the same gradients:

- ``adam``: ``torch.optim.Adam(lr, betas, eps, weight_decay)`` (weight decay as an L2 term
  added to the gradient); ``adamw``: ``torch.optim.AdamW`` (decoupled: ``w *= 1 - lr * wd``);
- ``sgd``: ``torch.optim.SGD(lr, momentum, weight_decay)`` (no dampening, no Nesterov);
- ``clip_norm``: ``torch.nn.utils.clip_grad_norm_(params, clip_norm)`` before the step (the
  gradient times ``min(1, clip_norm / (norm + 1e-6))``);
- schedules, per update ``t = 0, 1, …`` (one a batch): ``warmup`` W: the rate times
  ``(t + 1) / W`` for ``t < W`` (``LinearLR(start_factor=1/W, total_iters=W-1)``), then
  ``cosine`` over the remaining ``total - W`` updates: ``(1 + cos(π (t - W) / (total - W))) / 2``
  (``CosineAnnealingLR(T_max=total - W)``, down to 0 and staying there), or ``step``:
  ``gamma ** ((t - W) // step_size)`` (``StepLR``).

The state (Adam's ``m`` and ``v``, the step count, the schedule and its hyperparameters)
stays with the model between ``train`` calls, as a PyTorch optimizer's does, and ``Model.save``
writes it with the weights (weights format version 3, ``runtime/weights.py``): training resumed
from the file goes on as if it had never stopped. SGD's velocity is the model's ``velocity``,
as for plain momentum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

OPTIMIZERS = ("sgd", "adam", "adamw")
SCHEDULES = (None, "cosine", "step")

__all__ = ["OPTIMIZERS", "SCHEDULES", "Config", "State", "lr_factor"]


@dataclass(frozen=True)
class Config:
    """What a ``train`` call asked for (checked by ``check``)."""

    optimizer: str = "sgd"
    momentum: float = 0.0
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    clip_norm: float | None = None
    schedule: str | None = None
    warmup: int = 0
    total: int | None = None      # the schedule's length in updates (cosine)
    step_size: int = 1            # step schedule: every step_size updates
    gamma: float = 0.1            # step schedule: times gamma

    @property
    def plain(self) -> bool:
        """Plain SGD (with or without momentum): the kernels ``train`` used before."""
        return (self.optimizer == "sgd" and not self.weight_decay and self.clip_norm is None
                and self.schedule is None and not self.warmup)

    def meta(self) -> dict:
        return {"optimizer": self.optimizer, "momentum": self.momentum,
                "weight_decay": self.weight_decay, "betas": list(self.betas), "eps": self.eps,
                "clip_norm": self.clip_norm, "schedule": self.schedule, "warmup": self.warmup,
                "total": self.total, "step_size": self.step_size, "gamma": self.gamma}


def _number(name, value, lo=None, hi=None, lo_open=False, hi_open=False):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or (lo is not None and (v <= lo if lo_open else v < lo)) or \
            (hi is not None and (v >= hi if hi_open else v > hi)):
        rng = (f"{'(' if lo_open else '['}{lo if lo is not None else '-inf'}, "
               f"{hi if hi is not None else 'inf'}{')' if hi_open or hi is None else ']'}")
        raise ValueError(f"{name} must be in {rng}, got {value!r}")
    return v


def _count(name, value, lo=0):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo:
        raise ValueError(f"{name} must be an integer ≥ {lo}, got {value!r}")
    return int(value)


def check(optimizer="sgd", momentum=0.0, weight_decay=0.0, betas=(0.9, 0.999), eps=1e-8,
          clip_norm=None, schedule=None, warmup=0, total=None, step_size=1,
          gamma=0.1) -> Config:
    """A ``Config``, or ``ValueError`` naming the first bad argument."""
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {optimizer!r}")
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be 'cosine', 'step' or None, got {schedule!r}")
    if optimizer != "sgd" and momentum:
        raise ValueError(f"momentum is SGD's; {optimizer} has betas")
    if not (isinstance(betas, (tuple, list)) and len(betas) == 2):
        raise ValueError(f"betas must be a pair, got {betas!r}")
    b = (_number("betas[0]", betas[0], 0, 1, hi_open=True),
         _number("betas[1]", betas[1], 0, 1, hi_open=True))
    return Config(optimizer, _number("momentum", momentum, 0, 1, hi_open=True),
                  _number("weight_decay", weight_decay, 0), b,
                  _number("eps", eps, 0, lo_open=True),
                  None if clip_norm is None else _number("clip_norm", clip_norm, 0, lo_open=True),
                  schedule, _count("warmup", warmup),
                  None if total is None else _count("schedule_steps", total, 1),
                  _count("step_size", step_size, 1), _number("gamma", gamma, 0, lo_open=True))


def lr_factor(c: Config, t: int, total: int) -> float:
    """The schedule's factor of the learning rate at update ``t`` (0-based) of ``total``."""
    if c.warmup and t < c.warmup:
        return (t + 1) / c.warmup
    s = t - c.warmup
    if c.schedule == "cosine":
        span = max(total - c.warmup, 1)
        return (1 + math.cos(math.pi * min(s, span) / span)) / 2
    if c.schedule == "step":
        return c.gamma ** (s // c.step_size)
    return 1.0


@dataclass
class State:
    """A model's optimiser state between ``train`` calls: the config it was built with, the
    number of updates done, and Adam's moments (``M_params`` buffers; None for SGD)."""

    config: Config
    step: int = 0
    total: int | None = None
    m: object = None
    v: object = None
    saved: dict = field(default_factory=dict)  # snapshot for a divergence

    def same_run(self, c: Config) -> bool:
        """Whether ``c`` continues this state (same optimiser and hyperparameters)."""
        a, b = self.config.meta(), c.meta()
        a.pop("total"), b.pop("total")
        return a == b


class Updater:
    """The update of one ``train`` call: ``step(w, g)`` after each ``M_batch_grad``."""

    def __init__(self, model, state: State, lr: float, calls_total: int):
        self.model, self.state, self.c = model, state, state.config
        k = model._k
        self.k = k
        self.lr = float(lr)
        if self.c.total is not None:
            state.total = self.c.total
        elif state.total is None:
            state.total = state.step + calls_total
        if self.c.optimizer in ("adam", "adamw"):
            if state.m is None:
                state.m, state.v = k.new("params"), k.new("params")
            model._vel, model._mu = None, None  # SGD's velocity would be stale
            self.fn = k.fn("adam_update")
        else:
            if self.c.momentum:  # the model's velocity, saved as plain momentum's is
                if model._vel is None:
                    model._vel = k.new("params")
                model._mu = self.c.momentum
                self.vel = model._vel
            else:                # scratch (vel = g at every step): nothing to keep
                model._vel, model._mu = None, None
                self.vel = k.new("params")
            self.fn = k.fn("sgd_decay_update")
        self.norm = k.fn("grad_sqnorm")
        self.real = k.dtype.type
        self._buffers = [state.m, state.v] if state.m is not None else [self.vel]
        self._flats = [k.view(b, k.params_size)[0] for b in self._buffers]
        self._marks = [np.empty_like(f) for f in self._flats]
        self._mark_step = state.step
        self.last_lr = None  # the rate of the last update (the history's "lr")

    def mark(self) -> None:
        """Remember the state (start of an epoch), for ``restore``."""
        for f, s in zip(self._flats, self._marks):
            np.copyto(s, f)
        self._mark_step = self.state.step

    def restore(self) -> None:
        for f, s in zip(self._flats, self._marks):
            np.copyto(f, s)
        self.state.step = self._mark_step

    def lr_now(self) -> float:
        return self.lr * lr_factor(self.c, self.state.step, self.state.total)

    def step(self, w, g) -> None:
        c, r = self.c, self.real
        scale = 1.0
        if c.clip_norm is not None:
            norm = math.sqrt(self.norm(g))
            scale = min(1.0, c.clip_norm / (norm + 1e-6))
        lr = self.last_lr = self.lr_now()
        self.state.step += 1
        t = self.state.step
        if c.optimizer == "sgd":
            self.fn(w, g, self.vel, r(lr), r(c.momentum), r(c.weight_decay), r(scale))
            return
        b1, b2 = c.betas
        decoupled = c.optimizer == "adamw"
        self.fn(w, g, self.state.m, self.state.v,
                r(lr / (1 - b1 ** t)), r(math.sqrt(1 - b2 ** t)), r(1 - b1), r(b2), r(1 - b2),
                r(c.eps), r(0.0 if decoupled else c.weight_decay),
                r(1 - lr * c.weight_decay if decoupled else 1.0), r(scale))

    # -- saving -----------------------------------------------------------------------------

    @staticmethod
    def arrays(model, state: State) -> dict[str, np.ndarray]:
        """The state's arrays for the weights file: ``m/NAME``, ``v/NAME``."""
        if state.m is None:
            return {}
        out = {}
        for key, buf in (("m", state.m), ("v", state.v)):
            views = model._views(buf)
            for n in model.spec.trained:
                out[f"{key}/{n}"] = views[n].copy()
        return out


def state_meta(state: State) -> dict:
    return {**state.config.meta(), "step": state.step, "total": state.total}


def state_from(model, meta: dict, arrays: dict[str, np.ndarray]) -> State:
    """The ``State`` a weights file holds (``meta``: its ``__meta__["optimizer"]``)."""
    try:
        c = check(meta["optimizer"], meta["momentum"], meta["weight_decay"],
                  tuple(meta["betas"]), meta["eps"], meta["clip_norm"], meta["schedule"],
                  meta["warmup"], meta["total"], meta["step_size"], meta["gamma"])
        step = _count("step", meta["step"])
    except (KeyError, TypeError) as e:
        raise ValueError(f"the optimiser state's record is incomplete ({e})") from None
    state = State(c, step, meta.get("total"))
    if c.optimizer in ("adam", "adamw"):
        k = model._k
        state.m, state.v = k.new("params"), k.new("params")
        for key, buf in (("m", state.m), ("v", state.v)):
            views = model._views(buf)
            for n in model.spec.trained:
                if f"{key}/{n}" not in arrays:
                    raise ValueError(f"the optimiser state has no {key} for {n}")
                np.copyto(views[n], model.params.check(n, arrays[f"{key}/{n}"],
                                                       f"the optimiser's {key} of {n}"))
    return state
