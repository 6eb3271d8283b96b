"""A trainable model backed by the generated C kernels.

    m = runtime.load("cnn")                       # SaC reference initial weights, float32
    history = m.train(images, labels, epochs=10, batch_size=100, lr=0.05)
    m.evaluate(test_images, test_labels)          # accuracy in [0, 1]
    m.save("cnn.npz"); m2 = runtime.load("cnn", weights="cnn.npz")

``m.params`` maps each parameter name to a NumPy view of the C parameter buffer (no copy):
writing into it changes what the kernels see, and training updates it in place.

Every entry point checks its arguments (shapes, dtypes, finiteness, ranges) and raises
``ValueError`` before any C code runs. Training allocates its buffers (packed inputs of one
batch, gradient, workspace) once per call and reuses them for every batch; a batch is packed
with ``numpy.copyto`` into the preallocated ``M_inputs`` array, then ``M_batch_grad`` and
``M_sgd_update`` run on it. For a given thread count the result is bitwise reproducible (the
kernels fix their reduction order).

The C calls release the GIL and a model reuses one workspace: use one ``Model`` from one Python
thread at a time (load two models for two threads).
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import numpy as np

from ._kernels import Kernels
from .weights import check_precision, init_params, load_weights, param_shapes, save_weights

__all__ = ["Model", "load", "default_threads"]

N_CLASSES = 10
IMAGE_SHAPE = (28, 28)


def default_threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


# --------------------------------------------------------------------------------------------
# argument checks (all before any C code runs)


def check_images(images) -> np.ndarray:
    if not isinstance(images, np.ndarray):
        raise ValueError(f"images must be a NumPy array, got {type(images).__name__}")
    if images.dtype not in (np.float32, np.float64):
        hint = " (divide uint8 pixels by 255)" if images.dtype.kind in "ui" else ""
        raise ValueError(f"images must be float32 (or float64), got {images.dtype}{hint}")
    if images.ndim != 3 or images.shape[1:] != IMAGE_SHAPE:
        raise ValueError(f"images must have shape (N, 28, 28), got {images.shape}")
    if images.shape[0] == 0:
        raise ValueError("images is empty (N = 0)")
    if not np.isfinite(images).all():
        bad = int(np.flatnonzero(~np.isfinite(images).reshape(len(images), -1).all(1))[0])
        raise ValueError(f"images contain NaN or inf (first in image {bad})")
    lo, hi = images.min(), images.max()
    if lo < 0 or hi > 1:
        raise ValueError(f"image values must lie in [0, 1], found range [{lo}, {hi}]")
    return images


def check_labels(labels, n: int) -> np.ndarray:
    if not isinstance(labels, np.ndarray):
        raise ValueError(f"labels must be a NumPy array, got {type(labels).__name__}")
    if labels.dtype.kind not in "ui":
        raise ValueError(f"labels must have an integer dtype, got {labels.dtype}")
    if labels.shape != (n,):
        raise ValueError(f"labels must have shape ({n},) to match the images, got {labels.shape}")
    if labels.min() < 0 or labels.max() >= N_CLASSES:
        bad = labels[(labels < 0) | (labels >= N_CLASSES)][0]
        raise ValueError(f"labels must lie in 0..{N_CLASSES - 1}, found {bad}")
    return labels


def _check_positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _check_threads(threads) -> int:
    return default_threads() if threads is None else _check_positive_int("threads", threads)


# --------------------------------------------------------------------------------------------


class _Batch:
    """Preallocated packed inputs (``M_inputs[capacity]``) with NumPy views of their fields."""

    def __init__(self, k: Kernels, capacity: int):
        self.capacity = capacity
        self.c = k.new("inputs", capacity)
        rows = k.view(self.c, k.inputs_size)
        f_inp, f_tgt = k.inputs["inp"], k.inputs["target"]
        self.inp = rows[:, f_inp.offset : f_inp.offset + f_inp.length].reshape(-1, *IMAGE_SHAPE)
        self.target = rows[:, f_tgt.offset : f_tgt.offset + f_tgt.length]

    def pack(self, images: np.ndarray, onehot: np.ndarray | None) -> int:
        n = len(images)
        np.copyto(self.inp[:n], images, casting="same_kind")
        if onehot is not None:
            np.copyto(self.target[:n], onehot, casting="same_kind")
        return n


class Model:
    """The CNN with its parameters in C memory. Build one with ``runtime.load``."""

    def __init__(self, model: str, precision: str, params: dict[str, np.ndarray], dump=None):
        self.name = model
        self.precision = precision
        self.dtype = check_precision(precision)
        self._k = k = Kernels.open(model, precision, dump)
        shapes = param_shapes(model)
        if set(k.params) != set(shapes):  # located by name: their order in C is free
            raise RuntimeError(f"kernel parameters {list(k.params)} != expected {list(shapes)}")
        if k.inputs.keys() != {"inp", "target"} or k.inputs["target"].length != N_CLASSES:
            raise RuntimeError(f"unexpected kernel inputs {k.inputs}")
        self._w = k.new("params")
        self._g = k.new("params")
        self.params = self._views(self._w)
        self._grad = self._views(self._g)
        self._loss = k.ffi.new(f"{k.real}[1]")
        self._lr = k.dtype.type(0)
        self._ws: dict[int, object] = {}
        self.history: dict[str, list] | None = None
        self.set_params(params)

    def _views(self, cdata) -> dict[str, np.ndarray]:
        flat = self._k.view(cdata, self._k.params_size)[0]
        out = {}
        for name, shape in param_shapes(self.name).items():
            f = self._k.params[name]
            if f.length != math.prod(shape):
                raise RuntimeError(f"kernel field {name} has {f.length} elements, not {shape}")
            out[name] = flat[f.offset : f.offset + f.length].reshape(shape)
        return out

    def __repr__(self) -> str:
        n = sum(a.size for a in self.params.values())
        return f"<runtime.Model {self.name} {self.precision}, {n} parameters>"

    # -- parameters ---------------------------------------------------------------------------

    def set_params(self, params: dict[str, np.ndarray]) -> None:
        """Copy ``params`` (name -> array of the parameter's shape) into the C buffer."""
        shapes = param_shapes(self.name)
        if set(params) != set(shapes):
            raise ValueError(f"expected parameters {sorted(shapes)}, got {sorted(params)}")
        for n, s in shapes.items():
            a = np.asarray(params[n])
            if a.shape != s:
                raise ValueError(f"parameter {n} must have shape {s}, got {a.shape}")
            if a.dtype.kind != "f" or not np.isfinite(a).all():
                raise ValueError(f"parameter {n} must be finite floating point")
        for n in shapes:
            np.copyto(self.params[n], params[n], casting="same_kind")

    def get_params(self) -> dict[str, np.ndarray]:
        """A copy of the parameters (``params`` itself is a live view)."""
        return {n: a.copy() for n, a in self.params.items()}

    def save(self, path: str | os.PathLike) -> Path:
        """Save the weights to ``path`` (.npz), atomically."""
        return save_weights(path, self.params, self.name, self.precision)

    # -- kernels --------------------------------------------------------------------------------

    def _workspace(self, threads: int):
        if threads not in self._ws:
            size = self._k.fn("workspace_size")(threads)
            self._ws[threads] = self._k.ffi.new("char[]", max(int(size), 1))
        return self._ws[threads]

    def _onehot(self, labels: np.ndarray) -> np.ndarray:
        return np.eye(N_CLASSES, dtype=self.dtype)[labels]

    def loss_and_gradients(self, images, labels, threads=None) -> tuple[float, dict]:
        """Batch-mean loss and batch-mean gradients (copies) at the current weights."""
        images = check_images(images)
        labels = check_labels(labels, len(images))
        threads = _check_threads(threads)
        batch = _Batch(self._k, len(images))
        n = batch.pack(images, self._onehot(labels))
        ws = self._workspace(threads)
        self._k.fn("batch_grad")(self._w, batch.c, n, threads, ws, self._g, self._loss)
        return float(self._loss[0]), {k: v.copy() for k, v in self._grad.items()}

    def gradients(self, images, labels, threads=None) -> dict[str, np.ndarray]:
        """Batch-mean gradients of the loss at the current weights; the weights do not change."""
        return self.loss_and_gradients(images, labels, threads)[1]

    def predict(self, images, threads=None, chunk: int = 1000) -> np.ndarray:
        """The network's outputs r (logistic scores), shape (N, 10)."""
        images = check_images(images)
        threads = _check_threads(threads)
        _check_positive_int("chunk", chunk)
        k = self._k
        width = k.values["r"].length
        n_all = len(images)
        cap = min(chunk, n_all)
        batch = _Batch(k, cap)
        out_c = k.ffi.new(f"{k.real}[]", cap * width)
        out_v = np.frombuffer(k.ffi.buffer(out_c), dtype=self.dtype).reshape(cap, width)
        result = np.empty((n_all, width), dtype=self.dtype)
        ws = self._workspace(threads)
        predict = k.fn("batch_predict")
        for s in range(0, n_all, cap):
            n = batch.pack(images[s : s + cap], None)
            predict(self._w, batch.c, n, threads, ws, out_c)
            result[s : s + n] = out_v[:n]
        return result

    def evaluate(self, images, labels, threads=None) -> float:
        """Classification accuracy in [0, 1] (argmax of ``predict``)."""
        images = check_images(images)
        labels = check_labels(labels, len(images))
        return float((self.predict(images, threads).argmax(axis=1) == labels).mean())

    # -- training ------------------------------------------------------------------------------

    def train(
        self,
        images,
        labels,
        epochs: int = 10,
        batch_size: int = 100,
        lr: float = 0.05,
        threads: int | None = None,
        progress: bool = True,
        test: tuple | None = None,
        callback=None,
        shuffle: bool = False,
        seed: int = 0,
        eval_train: bool = True,
    ) -> dict[str, list]:
        """Mini-batch SGD, ``w -= lr * batch-mean gradient``, batches in order (or shuffled
        each epoch with ``shuffle=True``, seeded by ``seed``). The last batch of an epoch may
        be smaller.

        Returns the history, a dict of per-epoch lists: ``epoch``, ``loss`` (mean training loss
        over the epoch's batches), ``train_accuracy`` (after the epoch, if ``eval_train``),
        ``test_accuracy`` (if ``test=(images, labels)``), ``seconds`` and ``images_per_s``
        (of the SGD loop alone). ``callback(model, record)`` runs after each epoch with that
        epoch's record. On KeyboardInterrupt the weights keep every completed update,
        ``model.history`` holds the finished epochs, and the interrupt propagates.
        """
        images = check_images(images)
        labels = check_labels(labels, len(images))
        if test is not None:
            if not (isinstance(test, (tuple, list)) and len(test) == 2):
                raise ValueError("test must be a pair (images, labels)")
            t_images = check_images(test[0])
            t_labels = check_labels(test[1], len(t_images))
        if isinstance(epochs, bool) or not isinstance(epochs, (int, np.integer)) or epochs < 0:
            raise ValueError(f"epochs must be a non-negative integer, got {epochs!r}")
        batch_size = _check_positive_int("batch_size", batch_size)
        if isinstance(lr, bool) or not isinstance(lr, (int, float, np.floating)):
            raise ValueError(f"lr must be a number, got {lr!r}")
        if not math.isfinite(lr) or lr <= 0:
            raise ValueError(f"lr must be finite and positive, got {lr!r}")
        threads = _check_threads(threads)
        if callback is not None and not callable(callback):
            raise ValueError("callback must be callable")

        # set-up: every buffer the loop touches is allocated here, once
        k = self._k
        n_all = len(images)
        bs = min(batch_size, n_all)
        batch = _Batch(k, bs)
        onehot = self._onehot(labels)
        ws = self._workspace(threads)
        lr_c = k.dtype.type(lr)
        grad_fn, sgd_fn = k.fn("batch_grad"), k.fn("sgd_update")
        w, g, loss_c = self._w, self._g, self._loss
        if shuffle:
            rng = np.random.default_rng(seed)
            perm = np.empty(n_all, dtype=np.int64)
            src_img = np.empty_like(images)
            src_hot = np.empty_like(onehot)
        else:
            src_img, src_hot = images, onehot
        starts = range(0, n_all, bs)

        history: dict[str, list] = {
            "epoch": [],
            "loss": [],
            "train_accuracy": [],
            "test_accuracy": [],
            "seconds": [],
            "images_per_s": [],
        }
        self.history = history
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=epochs * len(starts), unit="batch", desc=f"{self.name} train")
        try:
            for epoch in range(1, epochs + 1):
                if shuffle:
                    perm[:] = rng.permutation(n_all)
                    np.take(images, perm, axis=0, out=src_img)
                    np.take(onehot, perm, axis=0, out=src_hot)
                total = 0.0
                t0 = time.perf_counter()
                for s in starts:
                    n = batch.pack(src_img[s : s + bs], src_hot[s : s + bs])
                    grad_fn(w, batch.c, n, threads, ws, g, loss_c)
                    sgd_fn(w, g, lr_c)
                    total += float(loss_c[0]) * n
                    if bar is not None:
                        bar.update(1)
                seconds = time.perf_counter() - t0
                train_acc = self.evaluate(images, labels, threads) if eval_train else None
                record = {
                    "epoch": epoch,
                    "loss": total / n_all,
                    "train_accuracy": train_acc,
                    "test_accuracy": (
                        self.evaluate(t_images, t_labels, threads) if test is not None else None
                    ),
                    "seconds": seconds,
                    "images_per_s": n_all / seconds if seconds > 0 else float("inf"),
                }
                for key, value in record.items():
                    history[key].append(value)
                if bar is not None:
                    shown = {"loss": f"{record['loss']:.4f}"}
                    if record["test_accuracy"] is not None:
                        shown["test"] = f"{record['test_accuracy']:.3f}"
                    bar.set_postfix(shown)
                if callback is not None:
                    callback(self, record)
        finally:
            if bar is not None:
                bar.close()
        return history


def load(
    model: str = "cnn",
    weights=None,
    precision: str | None = None,
    init: str = "sac",
    seed: int = 0,
    dump=None,
) -> Model:
    """Build (if needed) and load the generated kernels of ``model``, with initial weights.

    ``weights``: a path to a file written by ``Model.save``, or a dict of arrays, or None for
    fresh weights by ``init`` ("sac": the SaC reference constants; "random": uniform in
    +-1/sqrt(fan_in), seeded by ``seed``). ``precision``: "f32" or "f64"; by default that of the
    weights file, else "f32". ``dump``: generate the kernels from this dump file instead of
    extract's default (the dump printed by the Agda spec, ``build/dump/<model>.json``).
    """
    param_shapes(model)  # unknown model -> ValueError
    if precision is not None:
        check_precision(precision)
    if weights is None:
        precision = precision or "f32"
        params = init_params(model, init, seed, precision)
    elif isinstance(weights, dict):
        precision = precision or "f32"
        params = weights
    else:
        params, meta = load_weights(weights, model)
        precision = precision or meta["precision"]
    return Model(model, precision, params, dump)
