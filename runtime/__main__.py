"""Command line: train a model on MNIST or on data of your own, or measure saved weights (accuracy,
or the loss of a regression) and write their predictions.

    python -m runtime train MODEL [--epochs 10] [--batch-size 100] [--lr 0.05] [--threads N]
                                  [--data DIR|FILE.npz] [--out DIR] [--init random|sac|he] [--seed 0]
                                  [--momentum MU] [--precision f32|f64] [--train-limit N]
                                  [--test-limit N] [--shuffle] [--dump FILE] [--no-progress]
    python -m runtime predict MODEL --weights W [--data DIR|FILE.npz] [--split test|train]
                                    [--limit N] [--out PREDICTIONS.npz|.csv]

MODEL is a built-in model's name (``cnn``, or a zoo model's: ``mlp``, ``lenet5``), a dump
(``.json``) or a model file (``.model``);
its dump must declare ``data`` (features and target). ``train`` writes into ``--out`` (default
``out/<model name>``): ``weights.npz`` (saved atomically after every epoch, and on Ctrl-C with
everything learned so far), ``history.json`` and ``curves.png`` (loss and accuracy per epoch;
an earlier run's are replaced, except where ``--weights`` is that directory's ``weights.npz``:
a run resumed where it was saved continues its history, its epochs numbered after the earlier
ones).
``--data`` is a directory of MNIST IDX files (by default the bundled subset,
``runtime.DEFAULT_DATA``) or an ``.npz`` with ``x_train``, ``y_train`` and optionally ``x_test``,
``y_test`` (``runtime.data``): features of the model's input shape, integer labels (classes), or
float targets of the model's target shape (a regression: the test loss replaces the accuracy).
``--momentum MU`` trains with PyTorch's SGD momentum; ``weights.npz`` then holds its velocity
too, which ``--weights`` with ``--momentum`` continues (resumed training goes on exactly).
``predict`` prints the accuracy (the loss, for float targets) and, with ``--out FILE.npz`` or
``FILE.csv``, writes the outputs and predicted classes (then the labels may be absent: data to
predict; weights trained on float targets, a regression, then give the outputs alone).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

from . import DEFAULT_DATA, optim
from ._files import atomic_write, atomic_write_via
from .data import has_split, load_split
from .distributed import DistributedError
from .model import DivergedError, is_regression, load
from .weights import INITS, read_consts
from .spec import ModelCompileError


def _atomic_write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda f: f.write(text), binary=False)


def plot_history(history: dict, path: Path) -> None:
    """Loss and accuracy curves per epoch, as a PNG (matplotlib, Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    epochs = history["epoch"]
    fig, (ax_l, ax_a) = plt.subplots(1, 2, figsize=(10, 4))
    ax_l.plot(epochs, history["loss"], "o-", label="train")
    test_loss = [(e, v) for e, v in zip(epochs, history.get("test_loss", [])) if v is not None]
    if test_loss:  # a regression: the test set's loss beside the training loss
        ax_l.plot(*zip(*test_loss), "o-", label="test")
        ax_l.legend(loc="upper right")
    ax_l.set(xlabel="epoch", ylabel="mean loss", title="loss")
    plotted = False
    for key, label in (("train_accuracy", "train"), ("test_accuracy", "test")):
        points = [(e, a) for e, a in zip(epochs, history[key]) if a is not None]
        if points:
            ax_a.plot(*zip(*points), "o-", label=label)
            plotted = True
    ax_a.set(xlabel="epoch", ylabel="accuracy", title="accuracy", ylim=(0, 1))
    if plotted:
        ax_a.legend(loc="lower right")
    else:  # float targets, or no evaluation: say why the panel is empty
        ax_a.text(0.5, 0.5, "no accuracy" + (" (float targets)" if test_loss else ""),
                  ha="center", va="center", transform=ax_a.transAxes)
    for ax in (ax_l, ax_a):
        ax.grid(alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.tight_layout()
    try:
        atomic_write_via(path, lambda tmp: fig.savefig(tmp, dpi=100), suffix=".png")
    finally:
        plt.close(fig)


def cmd_train(args) -> int:
    dist = None
    if args.distributed:  # under torchrun: rank 0 runs this command; the others follow
        from .distributed import context
        dist = context(args.groups, args.dist_timeout)
    try:
        if dist is not None and not dist.main:
            return _follow(args, dist)
        return _train(args, dist)
    finally:
        # leave the process group before the interpreter exits: gloo's threads outliving it
        # abort the process ("terminate called without an active exception", SIGABRT)
        if dist is not None:
            try:
                dist.close()
            except Exception:  # noqa: BLE001 - a group a failed rank left: nothing to release
                pass


def _train(args, dist) -> int:
    images, labels = load_split(args.data, "train", args.train_limit)
    test = None
    if has_split(args.data, "test") and args.test_limit != 0:  # --test-limit 0: no testing
        test = load_split(args.data, "test", args.test_limit)
    elif args.test_limit != 0:
        print(f"note: {args.data} has no test split (MNIST's t10k files, or x_test and y_test "
              f"in an .npz): no testing", flush=True)
    for what, option, limit, got in (
            ("training", "--train-limit", args.train_limit, len(images)),
            ("test", "--test-limit", args.test_limit, len(test[0]) if test else None)):
        if limit and got is not None and got < limit:
            print(f"note: {args.data} has {got} {what} images, fewer than {option} {limit}: "
                  f"all of them are used", flush=True)
    m = load(args.model, weights=args.weights, precision=args.precision, init=args.init,
             seed=args.seed, dump=args.dump)
    # everything checked before anything is written
    labels = m.check_training(images, labels, args.epochs, args.batch_size, args.lr,
                              args.threads, test, momentum=args.momentum)[1]
    optimizer = _optimizer_args(args)
    optim.check(args.optimizer, args.momentum, args.weight_decay, tuple(args.betas), args.eps,
                args.clip_norm, args.schedule, args.warmup, args.schedule_steps,
                args.step_size, args.gamma)
    regression = is_regression(labels)
    flat = labels.reshape(len(labels), -1) if regression else None
    if regression and flat.shape[1] > 1 and np.isin(flat, (0, 1)).all() and \
            (flat.sum(axis=1) == 1).all():
        print("note: the targets are floats that are one-hot rows: they train as values (no "
              "accuracies); their classes as integers (argmax) train as classes", flush=True)
    out = Path(args.out) if args.out is not None else Path("out") / m.name
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file; it names the directory of weights.npz, "
                         f"history.json and curves.png")
    # where training starts from: a weights file, or fresh parameters (with a file's consts)
    consts_only = args.weights is not None and read_consts(args.weights, m.spec) is not None
    if args.init_given and args.weights is not None and not consts_only:
        print(f"note: --init {args.init} is not used: the parameters come from {args.weights}",
              flush=True)
    origin = (f"the starting weights (init {args.init}"
              + (f", the consts of {args.weights})" if consts_only else ")")
              if args.weights is None or consts_only else str(args.weights))
    if test is not None and (args.weights or not args.epochs):  # measured as it goes on
        if regression:
            print(f"test loss of {origin}: {m.mean_loss(*test, threads=args.threads):.5f}",
                  flush=True)
        else:
            print(f"test accuracy of {origin}: "
                  f"{m.evaluate(*test, threads=args.threads):.4f}", flush=True)
    made = out  # the outermost directory this run makes, removed if it writes nothing there
    while not made.parent.exists() and made.parent != made:
        made = made.parent
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ValueError(f"--out {out}: cannot create the directory ({e.strerror or e})") from None
    weights_path = out / "weights.npz"
    earlier = weights_path.exists()
    # an earlier run's history and curves: left as they are until this run saves its weights
    stale = [p for p in (out / "history.json", out / "curves.png") if p.exists()]
    same = (earlier and args.weights is not None
            and Path(args.weights).resolve() == weights_path.resolve())
    if earlier:
        print(f"note: {weights_path} " + ("is the starting point; each epoch replaces it" if same
              else "exists (an earlier run): this run replaces it"
              + "".join(f", {p.name}" for p in reversed(stale))), flush=True)
    # resumed where it was saved: the history goes on, its epochs numbered after the earlier ones
    before = _earlier_history(out / "history.json") if same and args.epochs else None
    offset = len(before["epoch"]) if before else 0
    if offset:
        first, last = offset + 1, offset + args.epochs
        print(f"note: continuing the history in {out / 'history.json'} ("
              + ("epoch 1" if offset == 1 else f"epochs 1-{offset}") + "); this run's "
              + (f"epoch is {first}" if first == last else f"epochs are {first}-{last}"),
              flush=True)

    def save(model):
        try:
            model.save(weights_path)
        except OSError as e:  # the file is as it was (written atomically)
            raise ValueError(f"cannot write {weights_path} ({e.strerror or e})") from None
        while stale:
            stale.pop().unlink(missing_ok=True)

    start = (f"weights {args.weights}" if args.weights and not consts_only
             else f"init {args.init}" + (f", consts {args.weights}" if consts_only else ""))
    saved_mu = m.velocity_momentum  # of a velocity the weights file holds, else None
    if args.momentum:
        start += f", momentum {args.momentum:g}"
        if saved_mu is not None and args.epochs:
            start += (", continuing the file's velocity" + (
                f" (accumulated with momentum {saved_mu:g})" if saved_mu != args.momentum
                else ""))
    elif saved_mu is not None and args.epochs:
        print(f"note: {args.weights} holds the velocity of training with momentum "
              f"{saved_mu:g}; this run is plain SGD and drops it (--momentum {saved_mu:g} "
              f"continues it)", flush=True)
    if args.epochs:
        print(f"training {m.name} ({m.precision}, {start}) on {len(images)} images from "
              f"{args.data}" + (f", testing on {len(test[0])}" if test else "") + f"; out {out}",
              flush=True)

    def report(model, record):
        save(model)
        line = (f"epoch {offset + record['epoch']}/{offset + args.epochs}  "
                f"loss {record['loss']:.5f}")
        if record["train_accuracy"] is not None:
            line += f"  train acc {record['train_accuracy']:.4f}"
        if record["test_accuracy"] is not None:
            line += f"  test acc {record['test_accuracy']:.4f}"
        if record["test_loss"] is not None:
            line += f"  test loss {record['test_loss']:.5f}"
        if record.get("val_loss") is not None:
            line += f"  val loss {record['val_loss']:.5f}"
        if record.get("val_accuracy") is not None:
            line += f"  val acc {record['val_accuracy']:.4f}"
        line += f"  {record['images_per_s']:.0f} images/s"
        _print(line, args.progress)
        _write_outputs(_joined(before, model.history), out)

    try:
        m.train(
            images,
            labels,
            epochs=args.epochs,
            batch_size=args.batch_size,
            lr=args.lr,
            threads=args.threads,
            progress=args.progress,
            test=test,
            callback=report,
            shuffle=args.shuffle,
            seed=args.seed,
            momentum=args.momentum,
            distributed=dist or False,
            **optimizer,
        )
    except DistributedError as e:
        done = len(m.history["epoch"]) if m.history else 0
        print(f"\nerror: {e}" + (f"; {weights_path} holds epoch {done}" if done else ""),
              file=sys.stderr)
        return 2
    except DivergedError as e:
        done = len(m.history["epoch"]) if m.history else 0
        kept = (f"; {weights_path} holds epoch {done}" if done else
                f"; {out} is as it was before this run" if not created else
                "; no weights written")
        if not done and created:  # the directories this run made, if still empty
            for d in [out, *out.parents]:
                if any(d.iterdir()):
                    break
                d.rmdir()
                if d == made:
                    break
        print(f"\nerror: {e}{kept}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        save(m)
        if m.history and m.history["epoch"]:
            _write_outputs(_joined(before, m.history), out)
        print(f"\ninterrupted: weights learned so far saved to {weights_path}", file=sys.stderr)
        return 130
    if args.epochs == 0:
        save(m)
        print(f"no training (--epochs 0): {weights_path} holds {origin}")
        return 0
    print(f"weights: {weights_path}")
    return 0


def _optimizer_args(args) -> dict:
    """``Model.train``'s optimiser, schedule and validation arguments from the command line."""
    return dict(optimizer=args.optimizer, weight_decay=args.weight_decay,
                betas=tuple(args.betas), eps=args.eps, clip_norm=args.clip_norm,
                schedule=args.schedule, warmup=args.warmup,
                schedule_steps=args.schedule_steps, step_size=args.step_size,
                gamma=args.gamma, validation_split=args.validation_split,
                patience=args.patience, monitor=args.monitor)


def _follow(args, dist) -> int:
    """A rank other than 0 of ``train --distributed``: the same data, model and steps as rank
    0, which alone evaluates, prints and writes."""
    images, labels = load_split(args.data, "train", args.train_limit)
    test = None  # a stopping metric on the test set: every rank measures it, to stop together
    if args.patience is not None and args.monitor.startswith("test_") and args.test_limit != 0:
        test = load_split(args.data, "test", args.test_limit)
    m = load(args.model, weights=args.weights, precision=args.precision, init=args.init,
             seed=args.seed, dump=args.dump)
    try:
        m.train(images, labels, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
                threads=args.threads, progress=False, shuffle=args.shuffle, seed=args.seed,
                test=test,
                momentum=args.momentum, eval_train=False, distributed=dist,
                **_optimizer_args(args))
    except (DistributedError, DivergedError, ValueError) as e:
        print(f"error: rank {dist.rank}: {e}" if isinstance(e, ValueError) else f"error: {e}",
              file=sys.stderr)
        return 2
    return 0


def _print(line: str, progress: bool) -> None:
    if progress:
        from tqdm.auto import tqdm

        tqdm.write(line)
    else:
        print(line, flush=True)


def _earlier_history(path: Path) -> dict | None:
    """The history.json an earlier run left (epochs 1..k, a list per key), or None if there is
    none or it is not one (then this run's history starts afresh, as before)."""
    try:
        h = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not (isinstance(h, dict) and isinstance(h.get("epoch"), list) and h["epoch"]
            and h["epoch"] == list(range(1, len(h["epoch"]) + 1))
            and all(isinstance(v, list) and len(v) == len(h["epoch"]) for v in h.values())):
        return None
    return h


def _joined(before: dict | None, history: dict) -> dict:
    """An earlier run's history followed by this run's, whose epochs continue its numbering."""
    if not before:
        return history
    k = len(before["epoch"])
    out = {}
    for key, values in history.items():
        later = [e + k for e in values] if key == "epoch" else list(values)
        out[key] = before.get(key, [None] * k) + later
    return out


def _write_outputs(history: dict, out: Path) -> None:
    try:
        _atomic_write_text(out / "history.json", json.dumps(history, indent=1) + "\n")
        plot_history(history, out / "curves.png")
    except OSError as e:  # each file is whole, the earlier one or the new one
        raise ValueError(f"cannot write the history or curves into {out} "
                         f"({e.strerror or e})") from None


PREDICTION_FORMATS = (".npz", ".csv")


def write_predictions(path: Path, outputs, classes) -> None:
    """``outputs`` (N × the output's elements) and the predicted ``classes`` (N, or None if the
    model does not classify) to ``path``, atomically: an ``.npz`` of ``outputs`` (and
    ``labels``), or a ``.csv`` with a header and a row per sample (label first)."""
    import numpy as np

    def npz(f):
        np.savez(f, outputs=outputs, **({} if classes is None else {"labels": classes}))

    def csv(f):
        cols = [f"out{j}" for j in range(outputs.shape[1])]
        f.write(",".join((["label"] if classes is not None else []) + cols) + "\n")
        digits = 17 if outputs.dtype == np.float64 else 9  # enough to read the value back
        for i, row in enumerate(outputs):
            cells = [f"{v:.{digits}g}" for v in row.tolist()]
            f.write(",".join(([str(classes[i])] if classes is not None else []) + cells) + "\n")

    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".npz":
        atomic_write(path, npz)
    else:
        atomic_write(path, csv, binary=False)


def _print_accuracy(acc: float, labels, split: str) -> None:
    n = len(labels)
    print(f"accuracy {acc:.4f} ({int(round(acc * n))}/{n} {split} images)")


def cmd_predict(args) -> int:
    out = args.out
    if out is not None and out.is_dir():
        raise ValueError(f"--out {out} is a directory; give a file name ending in .npz or .csv")
    if out is not None and out.suffix not in PREDICTION_FORMATS:
        raise ValueError(f"--out {out}: the predictions are written as .npz or .csv, not "
                         f"{out.suffix or 'a file without a suffix'}")
    images, labels = load_split(args.data, args.split, args.limit, labels=False)
    if labels is None and out is None:  # without --out the accuracy is all there is to print
        raise ValueError(f"{args.data}: no array y_{args.split}, so no accuracy to measure; "
                         f"--out FILE.npz or FILE.csv writes the predictions")
    m = load(args.model, weights=args.weights, precision=args.precision, dump=args.dump)
    m.require_data("predict", predict=True)
    if labels is not None:
        labels = m.check_labels(labels, len(images))
    # float targets: a regression; without labels, what the weights were trained on says
    regression = (is_regression(labels) if labels is not None else m.targets == "values")
    if regression and labels is not None:  # float targets: the loss is the measure
        print(f"loss {m.mean_loss(images, labels, threads=args.threads):.6g} (mean over "
              f"{len(images)} {args.split} images)")
    elif out is None:  # classes, and nothing to write: the accuracy (evaluate's checks)
        _print_accuracy(m.evaluate(images, labels, threads=args.threads), labels, args.split)
    if out is None:
        return 0
    outputs = m.predict(images, threads=args.threads)
    # one score per class (and more than one class): the predicted class is the largest
    classes = (outputs.argmax(axis=1) if m.spec.n_classes == outputs.shape[1] > 1
               and not regression else None)
    if classes is not None and labels is not None:
        _print_accuracy(float((classes == labels).mean()), labels, args.split)
    try:
        write_predictions(out, outputs, classes)
    except OSError as e:
        raise ValueError(f"--out {out}: cannot write the predictions ({e.strerror or e})")
    what = "outputs and predicted labels" if classes is not None else "outputs"
    print(f"predictions: {out} ({what} of {len(images)} {args.split} images)")
    return 0


def _natural(text: str) -> int:
    n = int(text)  # argparse turns a ValueError into "invalid _natural value"
    if n < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, not {n}")
    return n


def _positive(text: str) -> int:
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, not {n}")
    return n


_natural.__name__ = _positive.__name__ = "whole number"  # argparse: "invalid whole number value"


class _DefaultsFormatter(argparse.HelpFormatter):
    """Shows an option's default in its help, unless it is None or a flag's boolean."""

    def _get_help_string(self, action):
        text = action.help or ""
        if action.default not in (None, True, False, argparse.SUPPRESS) and action.option_strings:
            text += " (default: %(default)s)"
        return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m runtime", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    model_help = ("a built-in model's name (cnn, or a zoo model's: mlp, lenet5), a dump (.json) "
                  "or a model file (.model)")
    data_help = ("a directory of MNIST IDX files, or an .npz with x_train, y_train (and x_test, "
                 "y_test)")

    fmt = _DefaultsFormatter
    t = sub.add_parser("train", help="train a model with SGD", formatter_class=fmt)
    t.add_argument("model", help=model_help)
    t.add_argument("--epochs", type=int, default=10, help="passes over the training images")
    t.add_argument("--batch-size", type=int, default=100, help="images per SGD step")
    t.add_argument("--lr", type=float, default=0.05,
                   help="SGD rate: each step subtracts lr times the batch-mean gradient")
    t.add_argument("--momentum", type=float, default=0.0,
                   help="SGD with momentum mu in [0, 1) (PyTorch's: v = mu v + gradient, the "
                        "step lr v; v starts at zero, or continues the one --weights holds: "
                        "weights.npz keeps it, so a run resumed from an epoch's weights.npz goes "
                        "on exactly, batches in order)")
    t.add_argument("--optimizer", choices=("sgd", "adam", "adamw"), default="sgd",
                   help="the update (runtime.optim; each as torch.optim's): sgd (with "
                        "--momentum), adam, adamw")
    t.add_argument("--weight-decay", type=float, default=0.0,
                   help="L2 for sgd and adam, decoupled for adamw")
    t.add_argument("--betas", type=float, nargs=2, default=(0.9, 0.999), metavar=("B1", "B2"),
                   help="Adam's betas")
    t.add_argument("--eps", type=float, default=1e-8, help="Adam's epsilon")
    t.add_argument("--clip-norm", type=float, default=None,
                   help="scale each batch's gradient to this norm at most")
    t.add_argument("--schedule", choices=("cosine", "step"), default=None,
                   help="the learning rate per update: cosine to 0 over --schedule-steps "
                        "(default: this run's updates), or times --gamma every --step-size")
    t.add_argument("--warmup", type=int, default=0,
                   help="updates of linear warm-up before the schedule")
    t.add_argument("--schedule-steps", type=int, default=None,
                   help="the cosine schedule's length in updates")
    t.add_argument("--step-size", type=int, default=1, help="the step schedule's period")
    t.add_argument("--gamma", type=float, default=0.1, help="the step schedule's factor")
    t.add_argument("--validation-split", type=float, default=0.0,
                   help="hold out this fraction of the training images (the last ones)")
    t.add_argument("--patience", type=int, default=None,
                   help="stop when --monitor has not improved for this many epochs")
    t.add_argument("--monitor", default="val_loss",
                   choices=("val_loss", "val_accuracy", "test_loss", "test_accuracy", "loss"))
    t.add_argument("--threads", type=int, default=None,
                   help="default: all cores (1 per process with --distributed)")
    t.add_argument("--data", type=Path, default=DEFAULT_DATA, help=data_help)
    t.add_argument("--out", type=Path, default=None,
                   help="where weights.npz, history.json and curves.png go (default: "
                        "out/<model name>)")
    t.add_argument("--init", choices=INITS, default=None,
                   help="initial weights (default random): uniform +-1/sqrt(fan_in); sac, the "
                        "SaC reference constants of the paper's experiment (1/fan_in; 1/length "
                        "for rank-1 parameters: every unit of a layer the same, and it stays so); "
                        "he, normal of variance 2/fan_in with rank-1 parameters (biases, branch "
                        "scalars) zero, for ReLU networks without normalisation")
    t.add_argument("--seed", type=int, default=0, help="seed of --init random or he, and of --shuffle")
    t.add_argument("--shuffle", action="store_true",
                   help="visit the training images in a new random order each epoch (drawn from "
                        "--seed: a run resumed with --weights draws the same orders again "
                        "unless given another --seed)")
    t.add_argument("--weights", type=Path, default=None,
                   help="start from these weights instead of --init: a .npz written by train "
                        "or by python -m extract import, one of numpy.savez (an array per "
                        "parameter and const, by name), or one of a model's consts alone (the "
                        "parameters then from --init)")
    t.add_argument("--precision", choices=("f32", "f64"), default=None,
                   help="float or double kernels (default: that of --weights, else f32)")
    t.add_argument("--train-limit", type=_positive, default=None,
                   help="use the first N training images")
    t.add_argument("--test-limit", type=_natural, default=None,
                   help="use the first N test images (0: do not test)")
    t.add_argument("--no-progress", dest="progress", action="store_false",
                   help="no progress bar (there is none either where stderr is not a terminal: "
                        "a log file gets the epochs' lines alone)")
    t.add_argument("--dump", type=Path, default=None, help="generate the kernels from this dump")
    t.add_argument("--distributed", action="store_true",
                   help="data-parallel over torch.distributed (gloo): start every process with "
                        "torchrun, e.g. torchrun --nproc_per_node=2 -m runtime train ... "
                        "--distributed; the weights are the same bits for any number of "
                        "processes (docs/distributed.md)")
    t.add_argument("--groups", type=_positive, default=6,
                   help="with --distributed: sample groups per batch, computed whole by one "
                        "process each (at least the number of processes; keep it fixed to "
                        "reproduce a run bit for bit)")
    t.add_argument("--dist-timeout", type=float, default=300.0,
                   help="with --distributed: seconds a process waits for the others at an "
                        "exchange before it stops, naming the ranks that did not come")
    t.set_defaults(func=cmd_train)

    p = sub.add_parser("predict", help="accuracy (or loss) and predictions of saved weights",
                       formatter_class=fmt)
    p.add_argument("model", help=model_help)
    p.add_argument("--weights", type=Path, required=True,
                   help="a weights.npz written by train (or a numpy.savez .npz: an array per "
                        "parameter and const, by name)")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help=data_help)
    p.add_argument("--split", choices=("test", "train"), default="test")
    p.add_argument("--limit", type=_positive, default=None, help="use the first N images")
    p.add_argument("--threads", type=int, default=None, help="default: all cores")
    p.add_argument("--precision", choices=("f32", "f64"), default=None,
                   help="default: that of the weights file")
    p.add_argument("--dump", type=Path, default=None, help="generate the kernels from this dump")
    p.add_argument("--out", type=Path, default=None,
                   help="also write the predictions here: FILE.npz (arrays outputs and labels, "
                        "the predicted classes) or FILE.csv (label, out0, out1, ...); with "
                        "--out the data's labels (y_test) may be left out (then weights "
                        "trained on float targets give the outputs alone)")
    p.set_defaults(func=cmd_predict)

    args = ap.parse_args(argv)
    cores = os.cpu_count()
    if args.threads is not None and cores and args.threads > cores:
        print(f"note: --threads {args.threads} on a machine of {cores} cores: the threads past "
              f"{cores} take turns on them (no faster, often slower)", flush=True)
    if hasattr(args, "init"):  # given or not: a note if --weights makes it unused
        args.init_given, args.init = args.init is not None, args.init or "random"
    if getattr(args, "progress", False) and not sys.stderr.isatty():
        args.progress = False  # a bar's carriage returns would fill a log file
    try:
        from extract.front.frontend import one_line_warnings

        one_line_warnings()
    except ImportError:
        pass
    try:
        return args.func(args)
    except (ValueError, OSError, ModelCompileError, DistributedError, *_model_errors()) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except MemoryError as e:    # the sizes are checked first (runtime/sizes.py); a last resort
        print(f"error: out of memory{f' ({e})' if str(e) else ''}: the model, its batch or its "
              f"data needs more memory than this machine gave (try a smaller --batch)",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # while the kernels are made or the data read (training has its own)
        print("\ninterrupted", file=sys.stderr)
        return 130


def _model_errors() -> tuple:
    """``extract.front.frontend.ModelError`` (a model file the elaborator rejects) and
    ``extract.passes.lower.ExtractError`` (a dump the extractor cannot turn into kernels), if
    importable; both are one-line messages."""
    out = []
    try:
        from extract.cache import CacheError    # a cache that may not be trusted
        from extract.emit.gcc import BuildError      # gcc failed: one line, the log in a file

        out += [CacheError, BuildError]
    except ImportError:
        pass
    try:
        from extract.front.frontend import ModelError

        out.append(ModelError)
    except ImportError:
        pass
    try:
        from extract.passes.lower import ExtractError

        out.append(ExtractError)
    except ImportError:
        pass
    return tuple(out)


if __name__ == "__main__":
    sys.exit(main())
