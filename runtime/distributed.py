"""Data-parallel training over ``torch.distributed``, bitwise equal to one process.

Every process (a *rank*, started by ``torchrun``) loads the same kernels and weights and takes
its share of every global batch; the gradients are combined before the generated update, which
every rank then applies to identical weights. What makes the result independent of the number
of processes is that the split of the work never depends on it:

- a global batch of ``N`` samples is cut into ``groups`` contiguous sample groups (sizes
  differing by at most one, ``numpy.array_split``'s rule); each group's batch-mean gradient is
  computed by ``M_batch_grad`` on that group alone, with the same number of OpenMP threads
  whatever the number of processes;
- rank ``r`` of ``K`` computes the groups ``[G*r//K, G*(r+1)//K)``;
- the batch-mean gradient is ``sum_j (n_j / N) * g_j``, added in the order of the groups
  ``j = 0, 1, ...`` (elementwise, in the model's precision): the parameters are cut into ``K``
  slices, rank ``o`` receives slice ``o`` of every group's gradient (one all-to-all), sums it in
  that order, and an all-gather gives every rank the whole sum. Splitting the parameters does
  not change any element's sum, so the weights after a step are the same bits for 1, 2, 3, ...
  processes, and the same as one process without ``torch.distributed`` (``world() == 1``).

Before: one process, ``M_batch_grad`` over the 100 samples of a batch, then the update.
After, with ``groups=4`` on 2 ranks: rank 0 computes the gradients of samples 0-24 and 25-49,
rank 1 of 50-74 and 75-99; each rank sums its half of the parameters over the four groups, in
order; both then hold the same gradient and apply the same update.

What is and is not reproducible: for given data, batch size, ``groups`` and threads per rank the
weights do not depend on the number of processes or machines; changing ``groups`` or the
threads per rank changes the order of additions, hence the last bits (not the mathematics).
Ordinary ``Model.train`` (no ``distributed``) sums the whole batch at once: it agrees with the
distributed run to rounding, not bitwise.

Faults: every exchange has a time limit (``timeout``); when one fails (a rank died, or hung
past the limit) each rank that sees it says so in the rendezvous store and waits up to ten seconds
for the others: the ranks that stay silent are named in the ``DistributedError`` the others
raise. At start
the ranks compare a hash of the dump, of the generated module and of the weights: a rank that
differs is named and nobody trains.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

__all__ = ["DistributedError", "Context", "context", "group_bounds", "rank_groups", "shard"]

DEFAULT_GROUPS = 6  # a multiple of 1, 2, 3 and 6 processes: balanced for those
DEFAULT_TIMEOUT = 300.0  # seconds for one exchange (an epoch's evaluation on rank 0 included)


class DistributedError(RuntimeError):
    """Distributed training cannot go on: a rank died, hung, or differs from the others."""


def group_bounds(n: int, groups: int) -> list[tuple[int, int]]:
    """The ``groups`` contiguous sample ranges of a batch of ``n`` (``numpy.array_split``'s
    sizes: the first ``n % groups`` one longer); empty ranges when ``n < groups``."""
    q, r = divmod(n, groups)
    out, lo = [], 0
    for j in range(groups):
        hi = lo + q + (1 if j < r else 0)
        out.append((lo, hi))
        lo = hi
    return out


def rank_groups(groups: int, rank: int, world: int) -> range:
    """The groups rank ``rank`` of ``world`` computes: a contiguous block."""
    return range(groups * rank // world, groups * (rank + 1) // world)


def shard(n: int, groups: int, rank: int, world: int) -> list[tuple[int, int]]:
    """The sample ranges of a batch of ``n`` that rank ``rank`` computes (disjoint across the
    ranks, and together the whole batch)."""
    b = group_bounds(n, groups)
    return [b[j] for j in rank_groups(groups, rank, world)]


def _slices(p: int, world: int) -> list[tuple[int, int]]:
    return [(p * o // world, p * (o + 1) // world) for o in range(world)]


@dataclass
class Context:
    """One rank's view of the job: ``rank``, ``world`` (processes), ``groups`` per batch,
    ``timeout`` in seconds; ``dist`` is ``torch.distributed`` (None when ``world == 1``)."""

    rank: int
    world: int
    groups: int
    timeout: float
    dist: object = None
    step: int = 0

    @property
    def main(self) -> bool:
        """Rank 0: the one that prints, saves checkpoints and writes the history."""
        return self.rank == 0

    # -- start ----------------------------------------------------------------------------

    def check_same(self, model, images=None, labels=None, arguments=None) -> None:
        """Every rank has the same dump, generated module, weights, data and training
        arguments (and the same ``groups`` and number of processes), or DistributedError naming
        the ranks that differ from rank 0 and in what."""
        mine = _fingerprint(model)
        mine["groups and processes"] = f"{self.groups} {self.world}"
        if images is not None:
            h = hashlib.sha256(np.ascontiguousarray(images).tobytes())
            h.update(np.ascontiguousarray(labels).tobytes())
            mine["data"] = f"{len(images)} {h.hexdigest()[:16]}"
        if arguments is not None:
            mine["training arguments"] = repr(sorted(arguments.items()))
        if self.world == 1:
            return
        every = [None] * self.world
        self._collective(lambda: self.dist.all_gather_object(every, mine), "compare models")
        odd = [r for r, f in enumerate(every) if f != every[0]]
        if odd:
            what = sorted({k for r in odd for k in every[r] if every[r][k] != every[0][k]})
            raise DistributedError(
                f"rank{'s' if len(odd) > 1 else ''} {', '.join(map(str, odd))} differ"
                f"{'' if len(odd) > 1 else 's'} from rank 0 in {', '.join(what)}: every rank "
                f"must load the same model, kernels, weights and data, with the same arguments")

    # -- one step -------------------------------------------------------------------------

    def gradient(self, model, images, onehot, batch, threads, ws) -> tuple[float, int]:
        """Write the batch-mean gradient of the global batch (``images``, ``onehot``: all of
        it, as every rank holds the data) into the model's gradient buffer; return the
        batch-mean loss and the batch size. This rank computes only its groups."""
        k = model._k
        n = len(images)
        p = k.params_size
        mine = rank_groups(self.groups, self.rank, self.world)
        bounds = group_bounds(n, self.groups)
        grad_fn = k.fn("batch_grad")
        flat_g = k.view(model._g, p)[0]
        # this rank's groups: gradient and loss of each, one row per group (p + 1 reals)
        rows = np.zeros((len(mine), p + 1), dtype=k.dtype)
        for i, j in enumerate(mine):
            lo, hi = bounds[j]
            if hi == lo:
                continue  # an empty group (a batch smaller than the groups): weight 0
            batch.pack(images[lo:hi], None if onehot is None else onehot[lo:hi])
            grad_fn(model._w, batch.c, hi - lo, threads, ws, model._g, model._loss)
            rows[i, :p] = flat_g
            rows[i, p] = model._loss[0]
        weights = np.array([(hi - lo) / n for lo, hi in bounds], dtype=k.dtype)
        if self.world == 1:
            total = _ordered_sum(rows, weights)
        else:
            total = self._exchange(rows, weights, p + 1)
        flat_g[:] = total[:p]
        self.step += 1
        return float(total[p]), n

    def _exchange(self, rows: np.ndarray, weights: np.ndarray, width: int) -> np.ndarray:
        """Reduce-scatter by slices, then all-gather: every rank ends with the whole
        ``sum_j weights[j] * row_j`` in group order."""
        import torch

        world, rank = self.world, self.rank
        cuts = _slices(width, world)
        counts = [len(rank_groups(self.groups, r, world)) for r in range(world)]
        # send slice o of each of my rows to rank o; receive my slice of every group's row
        send = np.concatenate([rows[:, lo:hi].ravel() for lo, hi in cuts])
        mlo, mhi = cuts[rank]
        recv = np.empty(self.groups * (mhi - mlo), dtype=rows.dtype)
        self._collective(lambda: self.dist.all_to_all_single(
            torch.from_numpy(recv), torch.from_numpy(send),
            output_split_sizes=[c * (mhi - mlo) for c in counts],
            input_split_sizes=[len(rows) * (hi - lo) for lo, hi in cuts]), "exchange gradients")
        part = _ordered_sum(recv.reshape(self.groups, mhi - mlo), weights)
        widest = max(hi - lo for lo, hi in cuts)
        mine = np.zeros(widest, dtype=rows.dtype)
        mine[: mhi - mlo] = part
        every = [torch.empty(widest, dtype=torch.from_numpy(mine).dtype) for _ in range(world)]
        self._collective(lambda: self.dist.all_gather(every, torch.from_numpy(mine)),
                         "gather gradients")
        return np.concatenate([e.numpy()[: hi - lo] for e, (lo, hi) in zip(every, cuts)])

    # -- faults ---------------------------------------------------------------------------

    def _store(self):
        try:
            from torch.distributed import distributed_c10d
            return distributed_c10d._get_default_store()
        except Exception:  # no store reachable: the message says less
            return None

    def _collective(self, run, what: str) -> None:
        try:
            run()
        except Exception as e:  # gloo reports a dead peer or a timeout as RuntimeError
            raise DistributedError(self._who(what, e)) from None

    def _who(self, what: str, e: Exception, wait: float | None = None) -> str:
        """The message for a failed exchange: every rank that sees the failure says so in the
        rendezvous store and waits ``wait`` seconds for the others to say so too; the ranks
        that stay silent are the ones that died or hung."""
        head = f"rank {self.rank}: distributed training stopped at step {self.step} ({what})"
        if wait is None:  # long enough for a rank busy between epochs (rank 0 evaluating)
            wait = min(self.timeout, 10.0)
        store = self._store()
        silent = None
        if store is not None:
            try:
                store.set_timeout(datetime.timedelta(seconds=wait + 2))
                store.set(f"proved_kernels/stopped/{self.rank}", str(self.step))
                keys = {r: f"proved_kernels/stopped/{r}" for r in range(self.world)}
                deadline = time.monotonic() + wait
                while True:
                    silent = [r for r, key in keys.items() if not store.check([key])]
                    if not silent or time.monotonic() > deadline:
                        break
                    time.sleep(0.1)
            except Exception:
                silent = None
        if silent:
            return (f"{head}: rank{'s' if len(silent) > 1 else ''} "
                    f"{', '.join(map(str, silent))} did not reach it (died, or hung past the "
                    f"{self.timeout:g} s limit)")
        if silent is None and self.rank != 0:
            return (f"{head}: the rendezvous store is unreachable, so rank 0 (or the launcher "
                    f"hosting the store) is gone")
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return f"{head}: another rank is gone ({first[:200]})"

    def close(self) -> None:
        if self.dist is not None and self.dist.is_initialized():
            self.dist.destroy_process_group()


def _ordered_sum(rows: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``sum_j weights[j] * rows[j]`` added in the order j = 0, 1, ... (elementwise IEEE
    operations, so the bits of an element do not depend on how the rows were sliced)."""
    total = rows[0] * weights[0]
    for j in range(1, len(rows)):
        total = total + rows[j] * weights[j]
    return total


def _fingerprint(model) -> dict[str, str]:
    def sha(b: bytes) -> str:
        return hashlib.sha256(b).hexdigest()[:16]

    spec = model.spec
    dump = spec.kernels_dump or spec.dump
    lib_name = model._k.lib.__name__.rsplit(".", 1)[0]
    module = sys.modules.get(lib_name)
    path = getattr(module, "__file__", None)
    w = model._k.view(model._w, model._k.params_size)[0]
    return {
        "dump": sha(open(dump, "rb").read()) if dump else spec.name,
        "kernels": sha(open(path, "rb").read()) if path else lib_name,
        "precision": model.precision,
        "weights": sha(w.tobytes()),
    }


def context(groups: int = DEFAULT_GROUPS, timeout: float = DEFAULT_TIMEOUT) -> Context:
    """This process's place in the job: from ``torchrun``'s environment (``RANK``,
    ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``), joining the gloo process group; one
    process of one (no ``torch.distributed``) when ``WORLD_SIZE`` is unset or 1."""
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise ValueError(f"groups must be a positive integer, got {groups!r}")
    if not (isinstance(timeout, (int, float)) and timeout > 0):
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    world = int(os.environ.get("WORLD_SIZE", "1") or 1)
    if world == 1:
        return Context(0, 1, groups, float(timeout))
    missing = [v for v in ("RANK", "MASTER_ADDR", "MASTER_PORT") if not os.environ.get(v)]
    if missing:
        raise DistributedError(f"WORLD_SIZE is {world} but {', '.join(missing)} "
                               f"{'is' if len(missing) == 1 else 'are'} not set: start the "
                               f"processes with torchrun")
    if groups < world:
        raise ValueError(f"groups ({groups}) must be at least the number of processes "
                         f"({world}): each process computes whole groups")
    try:
        import torch.distributed as dist
    except ImportError as e:
        raise DistributedError(f"distributed training needs PyTorch (torch.distributed): {e}")
    if not dist.is_initialized():
        try:
            dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=timeout))
        except Exception as e:
            raise DistributedError(f"cannot join the process group as rank "
                                   f"{os.environ.get('RANK')} of {world} at "
                                   f"{os.environ.get('MASTER_ADDR')}:"
                                   f"{os.environ.get('MASTER_PORT')}: {e}") from None
    return Context(dist.get_rank(), dist.get_world_size(), groups, float(timeout), dist)
