"""The overhead of ``runtime.torch.Module`` over the generated kernels' own time per step.

    python -m bench.torch_module [--model cnn] [--batch 100] [--steps 30] [--repeats 5]
                                 [--threads 1]

Three loops over the same MNIST batches, alternated ``--repeats`` times, each timed whole
(median per step reported):

- ``module``: a PyTorch training step through ``Module``: ``zero_grad``, forward, the model's
  loss written in PyTorch (the CNN's ``½ Σ (r − t)²``, batch mean; softmax cross-entropy for
  a model whose output is logits), ``backward``, ``torch.optim.SGD.step``;
- ``kernels``: the C calls that step makes, on buffers packed once: ``M_batch_forward`` (the
  outputs, each group's values kept in a tape) and ``M_batch_backward`` (the gradients from
  those values) of the derived model (``runtime._vjp``), nothing else;
- ``floor``: the same PyTorch step around an autograd function that costs nothing (a fixed
  output, zero gradients): PyTorch's own per-step cost (``zero_grad``, the loss and its
  backward, the autograd engine, ``SGD.step``), which any module pays;
- ``python``: the ``module`` loop with the derived model's batch entry points replaced by
  calls that do nothing: PyTorch's step and the module's Python, without the kernels (and
  without what they do to the caches);
- ``train``: ``Model.train``'s own step for reference, ``M_batch_grad`` and ``M_sgd_update``
  of the model itself (its values stay in the thread's cache-sized scratch, group by group,
  where the module's go out to the tape and back: PyTorch asks for the output before it knows
  the gradient to send back).

The overhead is ``module / kernels - 1``: the Python, autograd and optimizer cost around the
kernels (and ``(module - kernels - floor) / kernels``, the module's own glue: packing the
batch, the output and gradient tensors, and the caches the kernels leave behind; ``(python -
floor) / kernels``, the glue's Python alone), measured in the process's CPU time (``time.process_time``: what other programs take
from a shared machine is not counted; with ``--threads 1`` and PyTorch at one thread, one
core's work) and in wall time. On a machine shared with other work, both only ever grow:
the figure is an upper bound.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
import torch

import runtime
import runtime.torch as rt

ZOO = Path(__file__).resolve().parent.parent / "models"


def measure(model: str = "cnn", batch: int = 100, steps: int = 30, repeats: int = 5,
            threads: int = 1) -> dict:
    torch.set_num_threads(1)
    net = rt.Module(ZOO / f"{model}.model", precision="f32", seed=0, threads=threads)
    m = net.model
    x, y = runtime.load_mnist(runtime.DEFAULT_DATA, "train")
    x, y = x[: batch * steps], y[: batch * steps]
    xt = [torch.from_numpy(x[s : s + batch]) for s in range(0, len(x), batch)]
    yt = [torch.from_numpy(y[s : s + batch]) for s in range(0, len(y), batch)]
    hot = [torch.nn.functional.one_hot(b, m.n_classes).to(torch.float32) for b in yt]
    logits = model != "cnn"  # the CNN's output is logistic scores, trained with sqerr
    opt = torch.optim.SGD(net.parameters(), lr=0.01)

    def module_loop():
        for xb, yb, hb in zip(xt, yt, hot):
            opt.zero_grad()
            out = net(xb)
            if logits:
                loss = torch.nn.functional.cross_entropy(out, yb)
            else:
                loss = 0.5 * ((out - hb) ** 2).sum() / len(xb)
            loss.backward()
            opt.step()

    core = net._core
    k = core.k
    packed = []
    for xb in xt:  # one packed batch per step, as the module packs them
        core.batch = None
        core.pack(xb.numpy(), np.zeros((len(xb), core.width), np.float32))
        packed.append((core.batch, core.out))
    ws = core.workspace(threads)
    forward, backward = k.fn("batch_forward"), k.fn("batch_backward")
    tape = k.ffi.new("char[]", int(k.fn("tape_size")(batch, threads)))

    def kernel_loop():
        for b, out in packed:
            forward(core.w, b.c, batch, threads, ws, tape, out)
            backward(core.w, b.c, batch, threads, ws, tape, core.g, core.loss)

    class _Free(torch.autograd.Function):
        """The module's interface at no cost: a fixed output, zero gradients."""

        @staticmethod
        def forward(ctx, x, *params):
            ctx.n = len(params)
            return fixed

        @staticmethod
        def backward(ctx, g):
            return (None, *zeros)

    params = [net._parameters[n] for n in net._trained]
    fixed = torch.zeros(batch, core.width)
    zeros = [torch.zeros_like(p) for p in params]

    def floor_loop():
        for xb, yb, hb in zip(xt, yt, hot):
            opt.zero_grad()
            out = _Free.apply(xb, *params)
            if logits:
                loss = torch.nn.functional.cross_entropy(out, yb)
            else:
                loss = 0.5 * ((out - hb) ** 2).sum() / len(xb)
            loss.backward()
            opt.step()

    class _Idle:
        """The derived model's kernels with the batch entry points doing nothing."""

        def fn(self, name):
            return (lambda *a: None) if name.startswith("batch_") else k.fn(name)

        def __getattr__(self, attr):
            return getattr(k, attr)

    idle = _Idle()

    def python_loop():
        core.k = idle
        try:
            module_loop()
        finally:
            core.k = k

    def train_loop():
        m.train(x, y, epochs=1, batch_size=batch, lr=0.01, threads=threads, progress=False,
                eval_train=False)

    wall = {"module": [], "kernels": [], "train": [], "floor": [], "python": []}
    cpu = {k: [] for k in wall}
    loops = (("module", module_loop), ("kernels", kernel_loop), ("train", train_loop),
             ("floor", floor_loop), ("python", python_loop))
    for _, loop in loops:  # warm up
        loop()
    for _ in range(repeats):
        for name, loop in loops:
            t0, c0 = time.perf_counter(), time.process_time()
            loop()
            cpu[name].append((time.process_time() - c0) / steps)
            wall[name].append((time.perf_counter() - t0) / steps)
    out = {"model": model, "batch": batch, "threads": threads, "steps": steps,
           "repeats": repeats}
    for clock, times in (("cpu", cpu), ("wall", wall)):
        med = {k: statistics.median(v) for k, v in times.items()}
        out[clock] = {"ms_per_step": {k: v * 1e3 for k, v in med.items()},
                      "overhead_over_kernels": med["module"] / med["kernels"] - 1,
                      "glue_over_kernels": (med["module"] - med["kernels"] - med["floor"])
                      / med["kernels"],
                      "python_over_kernels": (med["python"] - med["floor"]) / med["kernels"],
                      "module_over_train": med["module"] / med["train"] - 1}
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="cnn")
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args(argv)
    r = measure(a.model, a.batch, a.steps, a.repeats, a.threads)
    print(f"{r['model']} f32, batch {r['batch']}, {r['threads']} thread(s), median of "
          f"{r['repeats']} runs of {r['steps']} steps")
    for clock in ("cpu", "wall"):
        c = r[clock]
        ms = c["ms_per_step"]
        print(f"  {clock} time: module {ms['module']:.3f}, kernels {ms['kernels']:.3f}, "
              f"PyTorch's own step {ms['floor']:.3f}, the module with no-op kernels "
              f"{ms['python']:.3f}, Model.train {ms['train']:.3f} ms/step; "
              f"overhead over the kernels {100 * c['overhead_over_kernels']:.1f} % (the "
              f"module's glue alone {100 * c['glue_over_kernels']:.1f} %, of which its Python "
              f"{100 * c['python_over_kernels']:.1f} %; over Model.train's step "
              f"{100 * c['module_over_train']:.1f} %)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
