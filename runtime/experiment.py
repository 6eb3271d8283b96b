"""The paper's training experiment with the generated kernels.

    python -m runtime.experiment [--epochs 10] [--batch-size 100] [--lr 0.05] [--threads N]
                                 [--train 10000] [--precision f32] [--init sac] [--seed 0]
                                 [--data DIR] [--out out/experiment] [--torch] [--dump FILE]

Trains the CNN on the first ``--train`` MNIST training images (default 10,000, the bundled
subset) in batches of 100, in order, with SGD at rate 0.05 for 10 epochs, then measures the
accuracy on all 10,000 test images. Reports the training time (the SGD loop alone, summed over
epochs), images/s, the per-epoch loss and accuracies. With ``--torch`` it repeats the same run
with the PyTorch reference (``runtime.torch_reference``, same initial weights, same batches)
and reports its time, its accuracy and the largest difference between the two final weights.

Writes ``results.json``, ``curves.png`` and ``weights.npz`` into ``--out``. Data: ``--data``,
else the bundled ``data/mnist`` (which holds the full test set); if the training split there
has fewer than ``--train`` images, ``../shared/data/mnist`` is used when present.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from . import DEFAULT_DATA
from .__main__ import plot_history
from .idx import load_mnist
from .model import default_threads, load

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "mnist"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _data(args):
    directory = args.data or DEFAULT_DATA
    x, y = load_mnist(directory, "train", args.train)
    if len(x) < args.train and args.data is None and SHARED.is_dir():
        directory = SHARED
        x, y = load_mnist(directory, "train", args.train)
    xt, yt = load_mnist(args.data or DEFAULT_DATA, "test")
    return directory, (x, y), (xt, yt)


def run(args) -> dict:
    directory, (x, y), (xt, yt) = _data(args)
    threads = args.threads or default_threads()
    m = load("cnn", precision=args.precision, init=args.init, seed=args.seed, dump=args.dump)
    initial = m.get_params()
    print(
        f"CNN experiment: {len(x)} training images from {directory}, {len(xt)} test images; "
        f"{args.epochs} epochs, batch {args.batch_size}, lr {args.lr}, {args.precision}, "
        f"init {args.init}, {threads} threads on {cpu_model()}",
        flush=True,
    )
    history = m.train(
        x, y, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, threads=threads,
        progress=args.progress, test=(xt, yt), eval_train=True,
    )
    train_seconds = sum(history["seconds"])
    result = {
        "config": {
            "epochs": args.epochs, "batch_size": args.batch_size, "lr": args.lr,
            "precision": args.precision, "init": args.init, "seed": args.seed,
            "threads": threads, "train_images": len(x), "test_images": len(xt),
            "data": str(directory), "dump": str(args.dump) if args.dump else "default",
        },
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "python": sys.version.split()[0]},
        "history": history,
        "train_seconds": train_seconds,
        "images_per_s": args.epochs * len(x) / train_seconds if train_seconds else None,
        "test_accuracy": history["test_accuracy"][-1] if args.epochs else m.evaluate(xt, yt),
    }
    for e in range(args.epochs):
        print(
            f"epoch {e + 1:2d}  loss {history['loss'][e]:.5f}  "
            f"train acc {history['train_accuracy'][e]:.4f}  "
            f"test acc {history['test_accuracy'][e]:.4f}  {history['seconds'][e]:.2f} s"
        )
    print(
        f"generated C: test accuracy {result['test_accuracy']:.4f}, training time "
        f"{train_seconds:.2f} s ({result['images_per_s']:.0f} images/s)"
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    m.save(out / "weights.npz")
    if args.epochs:
        plot_history(history, out / "curves.png")

    if args.torch:
        import torch

        from . import torch_reference as tr

        torch.set_num_threads(threads)
        # tensors made once, outside the timed loop (as the generated C's inputs are packed once)
        pt = tr.to_tensors(initial, args.precision, requires_grad=True)
        xt_, yt_ = tr._batch(x, y, args.precision)
        t0 = time.perf_counter()
        tr.sgd_epochs(pt, xt_, yt_, args.batch_size, args.lr, args.epochs)
        seconds = time.perf_counter() - t0
        p = {k: t.detach().numpy().copy() for k, t in pt.items()}
        acc = float(np.mean(tr.predict(p, xt, args.precision).argmax(1) == yt))
        diff = max(float(np.abs(p[n] - m.params[n]).max()) for n in p)
        result["torch"] = {
            "version": torch.__version__, "train_seconds": seconds,
            "images_per_s": args.epochs * len(x) / seconds if seconds else None,
            "test_accuracy": acc, "max_weight_difference": diff,
        }
        print(
            f"PyTorch {torch.__version__}: test accuracy {acc:.4f}, training time {seconds:.2f} s;"
            f" largest weight difference from the generated C: {diff:.3g}"
        )
    (out / "results.json").write_text(json.dumps(result, indent=1) + "\n")
    print(f"results: {out / 'results.json'}")
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m runtime.experiment",
                                 description=__doc__.split("\n\n")[1])
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch-size", type=int, default=100)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--train", type=int, default=10000)
    ap.add_argument("--precision", choices=("f32", "f64"), default="f32")
    ap.add_argument("--init", choices=("sac", "random"), default="sac")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=Path("out") / "experiment")
    ap.add_argument("--dump", type=Path, default=None)
    ap.add_argument("--torch", action="store_true", help="also run the PyTorch reference")
    ap.add_argument("--no-progress", dest="progress", action="store_false")
    run(ap.parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
