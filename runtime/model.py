"""A trainable model backed by the generated C kernels; everything model-specific comes from
its expression dump (``runtime.spec``).

    m = runtime.load("cnn")                       # random initial weights (seed 0), float32
    history = m.train(images, labels, epochs=10, batch_size=100, lr=0.05)
    m.evaluate(test_images, test_labels)          # accuracy in [0, 1]
    m.save("cnn.npz"); m2 = runtime.load("cnn", weights="cnn.npz")

``runtime.load`` takes a built-in model's name, a dump (``.json``) or a model file
(``.model``). The dump's optional ``data`` declaration names the features input (whose shape
the images must have) and the one-hot target input (whose number of elements is the number of
classes); a model without it loads, and its gradients can be computed from named inputs
(``batch_gradients``), but ``train``/``predict``/``evaluate`` raise ``ValueError``.

``m.params`` maps each parameter name to a NumPy view of the C parameter buffer (no copy):
writing into a view changes what the kernels see, and training updates it in place.
``m.params[name] = array`` copies ``array`` into the buffer (same shape, floating point,
finite); no parameter can be added or removed. A model's consts (``const`` in a model file)
are there too, and saved with the weights, but training never changes them and
``gradients`` leaves them out.

Training with ``momentum`` keeps its velocity in the model (``m.velocity``), as a PyTorch
optimizer keeps its state: the next ``train`` with momentum continues it, ``m.save`` writes it
with the weights and ``runtime.load`` reads it back, so training resumed from a file follows
the same trajectory as training that never stopped (from a file saved at the end of an epoch,
as the command line saves one after each). ``m.reset_velocity()`` drops it; a ``train``
without momentum that runs an epoch does too. ``m.targets`` records what training fitted,
``"classes"`` (integer labels) or ``"values"`` (float targets: a regression), None before any;
it is saved with the weights, so predictions on unlabelled data know which they are.

Other optimisers (Adam, AdamW, SGD with weight decay; clipping by norm; cosine, step and
warm-up schedules) are ``train``'s ``optimizer=...`` and friends (``runtime.optim``); their
state is ``m.optimizer_state``, saved with the weights too. ``m.history`` accumulates the
per-epoch records of every ``train`` call. ``runtime.torch.Module(m)`` trains the same
weights from PyTorch.

Every entry point checks its arguments (shapes, dtypes, finiteness, ranges) and raises
``ValueError`` before any C code runs. Training allocates its buffers (packed inputs of one
batch, gradient, workspace) once per call and reuses them for every batch; a batch is packed
with ``numpy.copyto`` into the preallocated ``M_inputs`` array, then ``M_batch_grad`` and
``M_sgd_update`` (``M_sgd_momentum_update`` with ``momentum``) run on it. For a given thread
count the result is bitwise reproducible (the kernels fix their reduction order, whatever the
number of threads OpenMP grants).

The C calls release the GIL and a model reuses one workspace: use one ``Model`` from one Python
thread at a time (load two models for two threads).
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import threading
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

import numpy as np

from . import optim as _optim
from ._kernels import Kernels
from .sizes import DataLimitError, InferenceOnlyWarning
from .spec import ModelSpec, model_spec
from .weights import (check_init, check_precision, init_params, names_differ, read_consts,
                      read_optimizer, read_plain, read_weights, save_weights)

__all__ = ["DivergedError", "InferenceOnlyWarning", "Model", "Params", "load", "read_params",
           "default_threads"]


def _uncleared(ffi):
    """cffi's allocator without the zero fill (``ffi.new`` writes every byte)."""
    return ffi.new_allocator(should_clear_after_alloc=False)


@contextlib.contextmanager
def _interrupt_between_batches():
    """Ctrl-C during training, taken between batches: yields ``interrupted()``, which raises the
    KeyboardInterrupt of a Ctrl-C received since. Python raises a Ctrl-C wherever the main
    thread is, and one that lands in a finaliser or a weakref callback (the garbage collector
    runs them at any time) is printed as "Exception ignored" and lost: training went on. A
    second Ctrl-C before the check raises at once. Only in the main thread, and only when the
    handler is Python's own (an application's handler is left alone).

    >>> with _interrupt_between_batches() as interrupted:
    ...     for batch in batches: step(batch); interrupted()
    """
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield lambda: None
        return
    pending = []

    def on_sigint(signum, frame):
        if pending:
            raise KeyboardInterrupt
        pending.append(signum)

    def interrupted():
        if pending:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield interrupted
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


class DivergedError(FloatingPointError):
    """Training met a NaN or infinite loss or weight (a learning rate too large, usually).
    The weights are back to those after the last complete epoch."""


def default_threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


# --------------------------------------------------------------------------------------------
# argument checks (all before any C code runs)


def _show_shape(shape: tuple[int, ...]) -> str:
    return "(N, " + ", ".join(map(str, shape)) + ")"


def check_images(images, shape: tuple[int, ...]) -> np.ndarray:
    """``images``: float32/float64 of shape (N, *shape), finite. Their range is the model's
    business: MNIST pixels lie in [0, 1], standardised features do not."""
    if not isinstance(images, np.ndarray):
        raise ValueError(f"images must be a NumPy array, got {type(images).__name__}")
    if images.dtype not in (np.float32, np.float64):
        hint = " (divide uint8 pixels by 255)" if images.dtype.kind in "ui" else ""
        raise ValueError(f"images must be float32 (or float64), got {images.dtype}{hint}")
    if images.ndim != len(shape) + 1 or images.shape[1:] != tuple(shape):
        raise ValueError(f"images must have shape {_show_shape(shape)}, got {images.shape}")
    if images.shape[0] == 0:
        raise ValueError("images is empty (N = 0)")
    if not np.isfinite(images).all():
        bad = int(np.flatnonzero(~np.isfinite(images).reshape(len(images), -1).all(1))[0])
        raise ValueError(f"images contain NaN or inf (first in image {bad})")
    return images


def check_labels(labels, n: int, n_classes: int, target_shape=None) -> np.ndarray:
    """``labels``: integers of shape (n,) in 0..n_classes-1 (classes: the target is their
    one-hot encoding), or, where ``target_shape`` is given, the targets themselves: floats of
    shape (n, *target_shape), or (n,) for a one-element target (regression), finite."""
    if not isinstance(labels, np.ndarray):
        raise ValueError(f"labels must be a NumPy array, got {type(labels).__name__}")
    if labels.dtype.kind == "f" and target_shape is not None:
        short = _squeezed(target_shape)  # (N, 10), (N, 10, 1) and (N, 1, 10) mean the same
        if labels.ndim < 1 or len(labels) != n or _squeezed(labels.shape[1:]) != short:
            whole = labels.ndim == 1 and bool(np.all(labels == np.round(labels)))
            hint = (" (class labels stored as floats? cast them: labels.astype(int))"
                    if whole and short else "")
            raise ValueError(f"float targets must have shape ({n}, "
                             f"{', '.join(map(str, short or (1,)))}) to match the images and "
                             f"the model's target, got {labels.shape}{hint}")
        if labels.dtype not in (np.float32, np.float64):
            raise ValueError(f"float targets must be float32 or float64, got {labels.dtype}")
        if not np.isfinite(labels).all():
            bad = int(np.flatnonzero(~np.isfinite(labels).reshape(n, -1).all(1))[0])
            raise ValueError(f"targets contain NaN or inf (first in sample {bad})")
        return labels
    if labels.dtype.kind not in "ui":
        also = " or float targets" if target_shape is not None else ""
        raise ValueError(f"labels must have an integer dtype{also}, got {labels.dtype}")
    if labels.shape != (n,):
        raise ValueError(f"labels must have shape ({n},) to match the images, got {labels.shape}")
    if labels.min() < 0 or labels.max() >= n_classes:
        bad = labels[(labels < 0) | (labels >= n_classes)][0]
        hint = (" (the model's target has one element: for regression give float targets)"
                if n_classes == 1 else "")
        raise ValueError(f"labels must lie in 0..{n_classes - 1}, found {bad}{hint}")
    return labels


def is_regression(labels: np.ndarray) -> bool:
    """Whether checked ``labels`` are float targets rather than integer classes."""
    return labels.dtype.kind == "f"


def _check_positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _check_threads(threads) -> int:
    return default_threads() if threads is None else _check_positive_int("threads", threads)


# --------------------------------------------------------------------------------------------


def _squeezed(shape) -> tuple[int, ...]:
    return tuple(d for d in shape if d != 1)


def _view(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``a`` reshaped without a copy (a copy would not write into the C buffer)."""
    v = a.view()
    v.shape = shape  # raises rather than copy
    return v


class _Batch:
    """Preallocated packed inputs (``M_inputs[capacity]``) with NumPy views of their fields:
    ``fields[name]`` is an array (capacity, *shape of that input)."""

    def __init__(self, k: Kernels, spec: ModelSpec, capacity: int):
        self.capacity = capacity
        self.c = k.new("inputs", capacity)
        rows = k.view(self.c, k.inputs_size)
        flat = {name: rows[:, f.offset : f.offset + f.length] for name, f in k.inputs.items()}
        self.fields = {name: _view(flat[name], (capacity, *shape))
                       for name, shape in spec.input_shapes.items()}
        self.inp = self.fields[spec.features] if spec.has_data else None
        self.target = flat[spec.target] if spec.has_data else None  # (capacity, n_classes)

    def pack(self, images: np.ndarray, onehot: np.ndarray | None) -> int:
        n = len(images)
        np.copyto(self.inp[:n], images, casting="same_kind")
        if onehot is not None:
            np.copyto(self.target[:n], onehot, casting="same_kind")
        return n

    def pack_inputs(self, inputs: dict[str, np.ndarray]) -> None:
        for name, a in inputs.items():
            np.copyto(self.fields[name][: len(a)], a, casting="same_kind")


class Params(Mapping):
    """The parameters of a ``Model``: name -> live NumPy view of the C parameter buffer.

    ``params[name]`` is the view (writing into it changes what the kernels compute);
    ``params[name] = array`` copies ``array`` into the buffer after checking it: the exact shape
    of the parameter, a floating-point dtype (cast to the model's precision), finite values.
    Unknown names raise ``KeyError``; parameters cannot be added or deleted."""

    def __init__(self, views: dict[str, np.ndarray], dtype: np.dtype, precision: str,
                 consts=()):
        self._views = views
        self._dtype = dtype
        self._precision = precision
        self._consts = frozenset(consts)  # named "const" in messages

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self._views[name]
        except KeyError:
            raise KeyError(f"no parameter {name!r}; the model has {', '.join(self._views)}") \
                from None

    def __iter__(self):
        return iter(self._views)

    def __len__(self) -> int:
        return len(self._views)

    def __contains__(self, name) -> bool:
        return name in self._views

    def check(self, name: str, value, what: str | None = None) -> np.ndarray:
        """``value`` as an array of the parameter's shape in the model's dtype, or an error
        (about ``what``: by default "parameter NAME" or "const NAME")."""
        view = self[name]
        a = np.asarray(value)
        what = what or f"{'const' if name in self._consts else 'parameter'} {name}"
        if a.shape != view.shape:
            raise ValueError(f"{what} must have shape {view.shape}, got {a.shape}")
        if a.dtype.kind != "f":
            raise ValueError(
                f"{what} must be finite floating point, got dtype {a.dtype} (integer, "
                f"boolean and complex arrays are not converted; pass .astype(np.{self._dtype})"
                f")")
        with np.errstate(over="ignore", invalid="ignore"):
            cast = a.astype(self._dtype, copy=False)
        if not np.isfinite(cast).all():
            found = ("NaN or inf" if not np.isfinite(a).all()
                     else f"values too large for {self._precision}")
            raise ValueError(f"{what} must be finite floating point, found {found}")
        return cast

    def __setitem__(self, name: str, value) -> None:
        checked = self.check(name, value)  # KeyError for an unknown name, ValueError if bad
        np.copyto(self._views[name], checked)

    def __delitem__(self, name: str) -> None:
        raise TypeError("the parameters of a model cannot be deleted")

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}: {v.shape}" for n, v in self._views.items())
        return f"<runtime.Params {{{inner}}}, {self._precision}>"


class Model:
    """A model with its parameters in C memory. Build one with ``runtime.load``.

    Attributes from the dump: ``name``, ``spec`` (``runtime.spec.ModelSpec``),
    ``param_shapes`` (name -> shape, context order: the parameters and the consts, which
    ``params`` holds and ``save`` writes; training changes the parameters only, ``consts``
    names the others), ``fan_in``, ``input_shapes``,
    ``input_shape`` (of one sample's features; None without ``data``), ``n_classes``,
    ``output_shape`` (of the prediction output), ``features``/``target`` (input names),
    ``prediction``/``loss`` (output names), ``dump`` (the dump file)."""

    def __init__(self, model, precision: str, params: dict[str, np.ndarray], dump=None,
                 velocity: dict[str, np.ndarray] | None = None, momentum: float | None = None,
                 targets: str | None = None, optimizer=None):
        spec = model_spec(model, dump)
        self.spec = spec
        self.name = spec.name
        self.precision = precision
        self.dtype = check_precision(precision)
        self._k = k = Kernels.open(spec.name, precision, spec.kernels_dump)
        shapes = spec.param_shapes
        # located by name: their order in C is free; the C has a placeholder for none
        if set(k.params) != (set(shapes) or {"empty_"}):
            raise RuntimeError(f"kernel parameters {list(k.params)} != expected {list(shapes)}")
        inputs = set(spec.input_shapes) or {"empty_"}  # the C has a placeholder for none
        if set(k.inputs) != inputs:
            raise RuntimeError(f"kernel inputs {list(k.inputs)} != expected {sorted(inputs)}")
        for name, shape in spec.input_shapes.items():
            if k.inputs[name].length != math.prod(shape):
                raise RuntimeError(f"kernel input {name} has {k.inputs[name].length} elements, "
                                   f"not {shape}")
        # the buffers the batch entry points need on every core, checked up front: past the
        # memory available the model loads for predictions alone (one sample at a time, a
        # warning saying what is refused and why), or not at all when even those do not fit
        # (one line naming the largest bindings)
        cores = os.cpu_count() or 1
        try:
            self._check_memory(int(k.fn("workspace_size")(cores)), cores)
        except DataLimitError as e:
            self._check_one_sample(str(e))
            warnings.warn(InferenceOnlyWarning(
                f"{e}: training on as many threads is refused, and predictions whose buffers "
                f"do not fit run one sample at a time (M_forward)"), stacklevel=3)
        self._w = k.new("params")
        self._g = k.new("params")
        self.params = Params(self._views(self._w), self.dtype, precision, spec.consts)
        # the gradients: of the parameters training changes (a const's field is 0)
        self._grad = {n: v for n, v in self._views(self._g).items() if n not in spec.consts}
        self._loss = k.ffi.new(f"{k.real}[1]")
        self._lr = k.dtype.type(0)
        self._ws: dict[int, object] = {}
        self._single = None  # the one-sample path of a model without inputs (_one_sample)
        self._single_forward = None  # predictions one sample at a time (_forward_each)
        self.history: dict[str, list] | None = None
        self.set_params(params)
        self._vel, self._mu = None, None  # SGD momentum's velocity (an M_params), and its mu
        if velocity is not None:
            self._set_velocity(velocity, momentum)
        # what the weights were trained on: "classes", "values" (a regression) or None (unknown)
        self.targets = targets
        # the state of Adam, AdamW or SGD with decay/clipping/a schedule (runtime.optim)
        self.optimizer_state = (None if optimizer is None
                                else _optim.state_from(self, optimizer[0], optimizer[1]))

    # what the dump says
    param_shapes = property(lambda self: dict(self.spec.param_shapes))
    fan_in = property(lambda self: dict(self.spec.fan_in))
    consts = property(lambda self: self.spec.consts)
    input_shapes = property(lambda self: dict(self.spec.input_shapes))
    input_shape = property(lambda self: self.spec.input_shape)
    n_classes = property(lambda self: self.spec.n_classes)
    output_shape = property(lambda self: self.spec.output_shape)
    features = property(lambda self: self.spec.features)
    target = property(lambda self: self.spec.target)
    prediction = property(lambda self: self.spec.prediction)
    loss = property(lambda self: self.spec.loss)
    dump = property(lambda self: self.spec.dump)

    def _views(self, cdata) -> dict[str, np.ndarray]:
        flat = self._k.view(cdata, self._k.params_size)[0]
        out = {}
        for name, shape in self.spec.param_shapes.items():
            f = self._k.params[name]
            if f.length != math.prod(shape):
                raise RuntimeError(f"kernel field {name} has {f.length} elements, not {shape}")
            out[name] = flat[f.offset : f.offset + f.length].reshape(shape)
        return out

    def __repr__(self) -> str:
        n = sum(a.size for k, a in self.params.items() if k not in self.consts)
        c = sum(self.params[k].size for k in self.consts)
        return (f"<runtime.Model {self.name} {self.precision}, {n} parameters"
                + (f", {c} const elements>" if c else ">"))

    # -- data checks (the dump's features and target) -------------------------------------------

    def require_data(self, what: str, predict: bool = False, classify: bool = False) -> None:
        """Raise ValueError unless the dump declares what ``what`` needs: features and a target
        (and no other input), a prediction output (``predict``), one score per class
        (``classify``)."""
        spec = self.spec
        if not spec.has_data:
            how = ("exactly one `input` and one `target` line" if spec.source else
                   'a "data" entry naming both')
            if spec.input_shapes:
                how += f"; its inputs: {', '.join(spec.input_shapes)}"
            raise ValueError(
                f"{what}: {spec.describe()} declares no features/target (it needs {how}), so "
                f"it cannot take images and labels; batch_gradients takes its inputs by name")
        other = set(spec.input_shapes) - {spec.features, spec.target}
        if other:
            raise ValueError(f"{what}: {spec.describe()} has inputs {sorted(other)} besides its "
                             f"features and target; batch_gradients takes them by name")
        if (predict or classify) and spec.prediction is None:
            how = " (mark one binding `output`)" if spec.source else ""
            raise ValueError(f"{what}: {spec.describe()} declares no prediction output{how}")
        if classify and math.prod(spec.output_shape) != spec.n_classes:
            raise ValueError(f"{what}: the prediction {spec.prediction!r} of {spec.describe()} "
                             f"has shape {spec.output_shape}, not one score per class "
                             f"({spec.n_classes})")

    def check_images(self, images) -> np.ndarray:
        shape = self.spec.input_shape
        # (N, 28, 28) for an input 1×28×28 (an imported N×C×H×W network): the same layout;
        # and for a flat input of 784 (an MLP's), a one-channel image's rows one after the
        # other (row-major, as torch.flatten takes them; not H×W×C pixels, whose order differs)
        if (isinstance(images, np.ndarray) and images.ndim >= 1 and images.shape[1:] != shape
                and (_squeezed(images.shape[1:]) == _squeezed(shape)
                     or len(_squeezed(shape)) == 1 and len(_squeezed(images.shape[1:])) == 2
                     and math.prod(images.shape[1:]) == math.prod(shape))):
            images = images.reshape((len(images), *shape))
        return check_images(images, shape)

    def check_labels(self, labels, n: int) -> np.ndarray:
        """Integer classes, or float targets of the target's shape (``check_labels``)."""
        spec = self.spec
        shape = spec.input_shapes[spec.target] if spec.target else None
        return check_labels(labels, n, spec.n_classes, shape)

    # -- parameters ---------------------------------------------------------------------------

    def set_params(self, params: dict[str, np.ndarray]) -> None:
        """Copy ``params`` (name -> array of the parameter's shape) into the C buffer."""
        shapes = self.spec.param_shapes
        if set(params) != set(shapes):
            raise ValueError(names_differ("parameters", shapes, params))
        checked = {n: self.params.check(n, params[n]) for n in shapes}  # all, before any copy
        for n, a in checked.items():
            np.copyto(self.params[n], a)

    def get_params(self) -> dict[str, np.ndarray]:
        """A copy of the parameters (``params`` itself is a live view)."""
        return {n: a.copy() for n, a in self.params.items()}

    def save(self, path: str | os.PathLike) -> Path:
        """Save the weights to ``path`` (.npz), atomically, with the velocity of training with
        momentum if there is one (``velocity``)."""
        keep = self._vel is not None and self.spec.trained  # none without trained parameters
        st = self.optimizer_state if self.spec.trained else None
        return save_weights(path, self.params, self.spec, self.precision,
                            velocity=self.velocity if keep else None,
                            momentum=self._mu if keep else None, targets=self.targets,
                            optimizer=None if st is None else
                            (_optim.state_meta(st), _optim.Updater.arrays(self, st)))

    def export(self, path: str | os.PathLike, loss: bool = False,
               precision: str | None = None) -> Path:
        """Write the model's forward chain with its current weights as an ONNX model
        (``extract.export.onnx``; docs/onnx.md, "Export"): the features in (a leading batch
        axis ``N``), the output binding out; with ``loss``, the target in and the loss per
        sample out too. ``precision``: the model's by default."""
        from extract.export import onnx as onnx_export
        from .spec import ir_model
        return onnx_export.export(ir_model(self.spec), self.get_params(), path,
                                  precision or self.precision, loss)

    @property
    def velocity(self) -> dict[str, np.ndarray] | None:
        """A copy of the velocity of SGD with momentum (trained parameter -> array), which the
        next ``train`` with momentum continues; None before any such training, after
        ``reset_velocity`` or after a ``train`` without momentum."""
        if self._vel is None:
            return None
        views = self._views(self._vel)
        return {n: views[n].copy() for n in self.spec.trained}

    velocity_momentum = property(lambda self: self._mu, doc="The ``mu`` of the last training "
                                 "with momentum, which ``velocity`` accumulated; None without one.")

    def reset_velocity(self) -> None:
        """Forget the velocity: the next ``train`` with momentum starts it from zero."""
        self._vel, self._mu = None, None

    def _set_velocity(self, velocity: dict[str, np.ndarray], momentum) -> None:
        trained = self.spec.trained
        if set(velocity) != set(trained):
            raise ValueError(f"a velocity has an array per trained parameter {sorted(trained)}, "
                             f"got {sorted(velocity)}")
        if (isinstance(momentum, bool) or not isinstance(momentum, (int, float, np.floating))
                or not 0 < momentum < 1):
            raise ValueError(f"a velocity comes with its momentum in (0, 1), got {momentum!r}")
        checked = {n: self.params.check(n, velocity[n], f"the velocity of {n}")
                   for n in trained}
        vel = self._k.new("params")  # zeroed: a const's field stays 0
        views = self._views(vel)
        for n, a in checked.items():
            np.copyto(views[n], a)
        self._vel, self._mu = vel, float(momentum)

    # -- kernels --------------------------------------------------------------------------------

    def _workspace(self, threads: int):
        """The batch entry points' workspace for ``threads`` threads (``DataLimitError`` past
        the memory available). Not cleared: the kernels write every byte of it they read
        (the field validation fills it with 0xff, a value no write leaves, and compares every
        output), so the pages a call never touches are never committed: ``M_batch_predict``
        touches the lane inputs and bindings alone, not the gradients (VGG-19: about 1 of its
        7 GB a thread at 8 lanes)."""
        if threads not in self._ws:
            size = self._k.fn("workspace_size")(threads)
            self._check_memory(int(size), threads)
            try:
                self._ws[threads] = _uncleared(self._k.ffi)("char[]", max(int(size), 1))
            except MemoryError:
                raise DataLimitError(f"model {self.name!r}: the kernels' buffers for {threads} "
                                     f"thread(s) ({int(size):,} bytes) could not be "
                                     f"allocated") from None
        return self._ws[threads]

    def _check_one_sample(self, why: str) -> None:
        """``DataLimitError`` (``why``, and what predictions alone would need) unless the
        one-sample path fits: the parameters and their gradients (allocated at load) and one
        sample's inputs and bindings."""
        from .sizes import check_alloc
        k = self._k
        size = 2 * k.ffi.sizeof(k.type("params")) + k.ffi.sizeof(k.type("values")) + \
            k.ffi.sizeof(k.type("inputs"))
        check_alloc(size, f"{why}; predictions one sample at a time")

    def _forward_each(self, batch, n: int, out: np.ndarray) -> None:
        """``out[:n]`` = the predictions of the first ``n`` samples of ``batch``, one at a time
        through ``M_forward`` (where ``M_batch_predict``'s workspace does not fit)."""
        k = self._k
        if self._single_forward is None:
            self._check_one_sample(f"model {self.name!r}")
            v = k.new("values")
            f = k.values[self.spec.prediction]
            flat = k.view(v, k.ffi.sizeof(k.type("values")) // k.dtype.itemsize)[0]
            self._single_forward = (k.fn("forward"), v, flat[f.offset:][:f.length])
        forward, v, pred = self._single_forward
        for i in range(n):
            forward(self._w, batch.c + i, v)
            out[i] = pred

    def _predict_batch(self, batch, n: int, threads: int, out_c, out_v: np.ndarray) -> None:
        """The predictions of the first ``n`` samples of ``batch`` into ``out_c`` (``out_v``,
        its view): ``M_batch_predict``, or one sample at a time where its workspace does not
        fit the memory available."""
        try:
            ws = self._workspace(threads)
        except DataLimitError:
            self._forward_each(batch, n, out_v)
            return
        self._k.fn("batch_predict")(self._w, batch.c, n, threads, ws, out_c)

    def _check_memory(self, size: int, threads: int) -> None:
        """One line, before allocating, if the kernels' buffers for ``threads`` threads
        (``size`` bytes, the C's ``M_workspace_size``) do not fit the memory available,
        naming the largest bindings and gradients, of one sample (each takes a lane's worth
        of them: VGG-19's are its parameter gradients; runtime/sizes.py)."""
        from .sizes import check_alloc
        k = self._k
        arrays = [(f"binding {n}", f.length * k.dtype.itemsize) for n, f in k.values.items()]
        try:
            grads = k._layout("grads")
        except k.ffi.error:     # kernels without M_grads (tests/test_runtime_cdouble.py's)
            grads = {}
        arrays += [(f"gradient {n}", f.length * k.dtype.itemsize) for n, f in grads.items()]
        check_alloc(size, f"model {self.name!r}: the kernels' buffers for {threads} "
                          f"thread(s) ({size // max(threads, 1):,} bytes a thread)", arrays)

    def _onehot(self, labels: np.ndarray) -> np.ndarray:
        """One row per label: the target of that class, flat (``n_classes`` elements); float
        targets as they are, flat."""
        if is_regression(labels):
            return np.ascontiguousarray(labels.reshape(len(labels), -1), dtype=self.dtype)
        return np.eye(self.spec.n_classes, dtype=self.dtype)[labels]

    def loss_and_gradients(self, images=None, labels=None, threads=None) -> tuple[float, dict]:
        """Batch-mean loss and batch-mean gradients (copies) at the current weights. A model
        without per-sample data (no ``input`` or ``target``: an objective of its parameters
        and consts alone) takes no images and labels: its loss and gradients come from the
        one-sample kernels, ``M_forward`` and ``M_backward``, called once."""
        if not self.spec.input_shapes and images is None and labels is None:
            return self._one_sample()
        self.require_data("gradients")
        images = self.check_images(images)
        labels = self.check_labels(labels, len(images))
        threads = _check_threads(threads)
        batch = _Batch(self._k, self.spec, len(images))
        n = batch.pack(images, self._onehot(labels))
        ws = self._workspace(threads)
        self._k.fn("batch_grad")(self._w, batch.c, n, threads, ws, self._g, self._loss)
        return float(self._loss[0]), {k: v.copy() for k, v in self._grad.items()}

    def gradients(self, images=None, labels=None, threads=None) -> dict[str, np.ndarray]:
        """Batch-mean gradients of the loss at the current weights; the weights do not change
        (no images and labels for a model without per-sample data: ``loss_and_gradients``)."""
        return self.loss_and_gradients(images, labels, threads)[1]

    def mean_loss(self, images, labels, threads=None, chunk: int = 1000) -> float:
        """The mean loss over ``images`` (labels or float targets) at the current weights: the
        measure of a regression, where ``evaluate``'s accuracy has no meaning. ``chunk``
        images at a time through ``M_batch_grad`` (the gradients it also computes are
        dropped)."""
        self.require_data("loss")
        images = self.check_images(images)
        labels = self.check_labels(labels, len(images))
        threads = _check_threads(threads)
        _check_positive_int("chunk", chunk)
        k = self._k
        batch = _Batch(k, self.spec, min(chunk, len(images)))
        ws, grad_fn = self._workspace(threads), k.fn("batch_grad")
        total = 0.0
        for s in range(0, len(images), chunk):
            n = batch.pack(images[s : s + chunk], self._onehot(labels[s : s + chunk]))
            grad_fn(self._w, batch.c, n, threads, ws, self._g, self._loss)
            total += float(self._loss[0]) * n
        return total / len(images)

    def batch_gradients(self, inputs: dict | None = None, n: int | None = None,
                        threads=None) -> tuple[float | None, dict]:
        """Batch-mean gradients from named inputs, for any model (``data`` or not).

        ``inputs`` maps every input of the dump to an array of shape (n, *its shape) (floating
        point, finite); a model without inputs takes ``n`` (default 1) instead. Returns the
        batch-mean of the ``loss`` output (None if the dump declares none) and the gradients
        (copies)."""
        spec = self.spec
        inputs = {} if inputs is None else dict(inputs)
        if set(inputs) != set(spec.input_shapes):
            raise ValueError(f"inputs must be exactly {sorted(spec.input_shapes)} (the dump's "
                             f"inputs), got {sorted(inputs)}")
        sizes = set()
        for name, shape in spec.input_shapes.items():
            a = inputs[name]
            if not isinstance(a, np.ndarray) or a.dtype.kind != "f":
                raise ValueError(f"input {name} must be a floating-point NumPy array")
            if a.shape[1:] != shape or a.ndim != len(shape) + 1:
                raise ValueError(f"input {name} must have shape {_show_shape(shape)}, got "
                                 f"{a.shape}")
            if not np.isfinite(a).all():
                raise ValueError(f"input {name} contains NaN or inf")
            sizes.add(len(a))
        if n is not None:
            sizes.add(_check_positive_int("n", n))
        if len(sizes) > 1:
            raise ValueError(f"inputs disagree on the number of samples: {sorted(sizes)}")
        count = sizes.pop() if sizes else 1
        if count == 0:
            raise ValueError("inputs are empty (n = 0)")
        if not spec.input_shapes:  # every sample is the same one: its gradient is the mean
            loss, grads = self._one_sample()
            return (loss if spec.loss is not None else None), grads
        threads = _check_threads(threads)
        batch = _Batch(self._k, spec, count)
        batch.pack_inputs(inputs)
        ws = self._workspace(threads)
        self._k.fn("batch_grad")(self._w, batch.c, count, threads, ws, self._g, self._loss)
        loss = float(self._loss[0]) if spec.loss is not None else None
        return loss, {k: v.copy() for k, v in self._grad.items()}

    def _one_sample(self) -> tuple[float, dict]:
        """Loss and parameter gradients of a model without inputs, through the one-sample
        entry points (``M_forward`` then ``M_backward``; single-threaded: the lane kernels of
        ``M_batch_grad`` would run a group of identical samples)."""
        if self._single is None:
            k = self._k
            grads = {n: f for n, f in k._layout("grads").items()}
            missing = [p for p in self.spec.trained if f"d_{p}" not in grads]
            if missing:
                raise RuntimeError(f"the kernels' M_grads has no field d_{missing[0]}")
            x, v, g = k.new("inputs"), k.new("values"), k.new("grads")
            gflat = k.view(g, k.ffi.sizeof(k.type("grads")) // k.dtype.itemsize)[0]
            vflat = k.view(v, k.ffi.sizeof(k.type("values")) // k.dtype.itemsize)[0]
            views = {p: gflat[grads[f"d_{p}"].offset:][: grads[f"d_{p}"].length].reshape(
                self.spec.param_shapes[p]) for p in self.spec.trained}
            loss = k.values.get(self.spec.loss) if self.spec.loss is not None else None
            self._single = (k.fn("forward"), k.fn("backward"), x, v, g, views,
                            vflat[loss.offset:][:1] if loss is not None else None)
        forward, backward, x, v, g, views, loss = self._single
        forward(self._w, x, v)
        backward(self._w, x, v, g)
        return (float(loss[0]) if loss is not None else float("nan"),
                {n: a.copy() for n, a in views.items()})

    def run(self, inputs: dict, threads=None) -> np.ndarray:
        """The prediction output for named inputs of any values (``predict`` is for images):
        ``inputs`` maps the dump's inputs to arrays of shape (n, *its shape), floating point and
        finite; a ``target`` input may be left out (it does not affect the prediction; zeros).
        Returns an array of shape (n, *output_shape)."""
        spec = self.spec
        if spec.prediction is None:
            raise ValueError(f"run: {spec.describe()} declares no prediction output")
        inputs = dict(inputs)
        unknown = set(inputs) - set(spec.input_shapes)
        if unknown:
            raise ValueError(f"run: unknown inputs {sorted(unknown)} (the dump's inputs: "
                             f"{sorted(spec.input_shapes)})")
        n = None
        for name in inputs:
            a = inputs[name]
            if not isinstance(a, np.ndarray) or a.dtype.kind != "f":
                raise ValueError(f"run: input {name} must be a floating-point NumPy array")
            if a.ndim == 0:
                raise ValueError(f"run: input {name} has no sample axis")
            if n is not None and len(a) != n:
                raise ValueError(f"run: inputs disagree on the number of samples")
            n = len(a)
        missing = [k for k in spec.input_shapes if k not in inputs]
        if [k for k in missing if k != spec.target]:
            raise ValueError(f"run: missing inputs {sorted(k for k in missing if k != spec.target)}")
        if n is None or n == 0:
            raise ValueError("run: no samples")
        for k in missing:
            inputs[k] = np.zeros((n, *spec.input_shapes[k]), self.dtype)
        for name, shape in spec.input_shapes.items():
            a = inputs[name]
            if a.shape[1:] != shape:
                raise ValueError(f"run: input {name} must have shape {_show_shape(shape)}, got "
                                 f"{a.shape}")
            if not np.isfinite(a).all():
                raise ValueError(f"run: input {name} contains NaN or inf")
        threads = _check_threads(threads)
        k = self._k
        width = k.values[spec.prediction].length
        batch = _Batch(k, spec, n)
        batch.pack_inputs(inputs)
        out_c = k.ffi.new(f"{k.real}[]", n * width)
        out_v = np.frombuffer(k.ffi.buffer(out_c), dtype=self.dtype).reshape(n, width)
        self._predict_batch(batch, n, threads, out_c, out_v)
        return out_v.copy().reshape((n, *spec.output_shape))

    def predict(self, images, threads=None, chunk: int = 1000) -> np.ndarray:
        """The model's prediction output for each image, flattened: shape (N, elements of
        ``output_shape``) (for the CNN, the 10 logistic scores)."""
        self.require_data("predict", predict=True)
        images = self.check_images(images)
        threads = _check_threads(threads)
        _check_positive_int("chunk", chunk)
        k = self._k
        width = k.values[self.spec.prediction].length
        n_all = len(images)
        cap = min(chunk, n_all)
        batch = _Batch(k, self.spec, cap)
        out_c = k.ffi.new(f"{k.real}[]", cap * width)
        out_v = np.frombuffer(k.ffi.buffer(out_c), dtype=self.dtype).reshape(cap, width)
        result = np.empty((n_all, width), dtype=self.dtype)
        for s in range(0, n_all, cap):
            n = batch.pack(images[s : s + cap], None)
            self._predict_batch(batch, n, threads, out_c, out_v)
            result[s : s + n] = out_v[:n]
        return result

    def predict_proba(self, images, threads=None, chunk: int = 1000) -> np.ndarray:
        """Class probabilities: the softmax of ``predict``'s scores, shape (N, classes), each
        row summing to 1. Meant for a classifier whose output is its logits (LeNet-5's
        ``z5``, trained with softmax cross-entropy); of other scores (the CNN's logistic
        outputs) it is still a distribution, with the same argmax."""
        self.require_data("predict_proba", predict=True, classify=True)
        z = self.predict(images, threads, chunk)
        z = z - z.max(axis=1, keepdims=True)
        np.exp(z, out=z)
        z /= z.sum(axis=1, keepdims=True)
        return z

    def evaluate(self, images, labels, threads=None) -> float:
        """Classification accuracy in [0, 1] (argmax of ``predict``)."""
        self.require_data("evaluate", classify=True)
        images = self.check_images(images)
        labels = self.check_labels(labels, len(images))
        if is_regression(labels):
            raise ValueError("evaluate measures the accuracy of integer labels; for float "
                             "targets the measure is mean_loss(images, targets)")
        return float((self.predict(images, threads).argmax(axis=1) == labels).mean())

    # -- training ------------------------------------------------------------------------------

    def check_training(self, images, labels, epochs=10, batch_size=100, lr=0.05, threads=None,
                       test=None, callback=None, eval_train=True, momentum=0.0):
        """What ``train`` checks before it runs anything: raises ``ValueError`` naming the
        first bad argument, else returns ``(images, labels, test, batch_size, threads)``
        checked. The command line calls it before it writes anything."""
        self.require_data("train")
        images = self.check_images(images)
        labels = self.check_labels(labels, len(images))
        if not is_regression(labels):  # accuracies: one score per class
            self.require_data("train", classify=bool(eval_train) or test is not None)
        if test is not None:
            if not (isinstance(test, (tuple, list)) and len(test) == 2):
                raise ValueError("test must be a pair (images, labels)")
            t_images = self.check_images(test[0])
            test = (t_images, self.check_labels(test[1], len(t_images)))
            if is_regression(test[1]) != is_regression(labels):
                raise ValueError("the test set's labels and the training labels must be of one "
                                 "kind: integer classes, or float targets")
        if isinstance(epochs, bool) or not isinstance(epochs, (int, np.integer)) or epochs < 0:
            raise ValueError(f"epochs must be a non-negative integer, got {epochs!r}")
        batch_size = _check_positive_int("batch_size", batch_size)
        if isinstance(lr, bool) or not isinstance(lr, (int, float, np.floating)):
            raise ValueError(f"lr must be a number, got {lr!r}")
        if not math.isfinite(lr) or lr <= 0:
            raise ValueError(f"lr must be finite and positive, got {lr!r}")
        if isinstance(momentum, bool) or not isinstance(momentum, (int, float, np.floating)):
            raise ValueError(f"momentum must be a number, got {momentum!r}")
        if not 0 <= momentum < 1:
            raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
        threads = _check_threads(threads)
        if callback is not None and not callable(callback):
            raise ValueError("callback must be callable")
        return images, labels, test, batch_size, threads

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
        momentum: float = 0.0,
        optimizer: str = "sgd",
        weight_decay: float = 0.0,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        clip_norm: float | None = None,
        schedule: str | None = None,
        warmup: int = 0,
        schedule_steps: int | None = None,
        step_size: int = 1,
        gamma: float = 0.1,
        validation_split: float = 0.0,
        patience: int | None = None,
        monitor: str = "val_loss",
        distributed=False,
    ) -> dict[str, list]:
        """Mini-batch SGD, ``w -= lr * batch-mean gradient``, batches in order (or shuffled
        each epoch with ``shuffle=True``, seeded by ``seed``). The last batch of an epoch may
        be smaller. With ``momentum`` ``mu`` in (0, 1): PyTorch's SGD with momentum (no
        dampening), ``v = mu * v + gradient; w -= lr * v`` (``M_sgd_momentum_update``), ``v``
        continuing from the model's ``velocity`` (of an earlier call, or of the weights file
        it was loaded from; zero if it has none). Training without momentum (an epoch or more)
        drops the velocity.

        Returns the history, a dict of per-epoch lists: ``epoch``, ``loss`` (mean training loss
        over the epoch's batches), ``train_accuracy`` (after the epoch, if ``eval_train``),
        ``test_accuracy`` (if ``test=(images, labels)``), ``seconds`` and ``images_per_s``
        (of the SGD loop alone). With float targets for ``labels`` (a regression: the targets
        themselves, not classes) there are no accuracies: ``test_loss`` is the mean loss over
        the test set instead (None with classes). ``callback(model, record)`` runs after each
        epoch with that epoch's record. Ctrl-C is taken between batches (and after the
        callback): the weights keep every completed update, ``model.history`` holds the finished
        epochs, and the KeyboardInterrupt propagates; interrupted before its first update, the
        call leaves the velocity as it found it. A batch
        whose loss is NaN or infinite, or an epoch that leaves a weight so, raises
        ``DivergedError``: the weights are then those after the last complete epoch (the
        initial ones in the first), which ``model.history`` lists.

        Optimisers (``runtime.optim``, each PyTorch's on the same gradients, one generated
        update kernel a batch): ``optimizer="sgd"`` (with ``momentum``), ``"adam"`` or
        ``"adamw"`` (``betas``, ``eps``); ``weight_decay`` (an L2 term for SGD and Adam,
        decoupled for AdamW); ``clip_norm`` (the gradient scaled to that norm at most, as
        ``clip_grad_norm_``); a ``schedule`` of the learning rate per update, ``"cosine"`` over
        ``schedule_steps`` updates (default: those of this call) or ``"step"`` (times ``gamma``
        every ``step_size`` updates), after ``warmup`` updates of linear warm-up. Their state
        (``optimizer_state``: moments, step count, schedule) continues across calls with the
        same settings (other settings start it afresh) and ``save`` writes it.

        ``validation_split`` in [0, 1): that fraction of the samples, the last ones (before
        any shuffling), is held out: each record gets ``val_loss`` (and ``val_accuracy`` for
        classes). ``patience``: early stopping, when ``monitor`` (``"val_loss"``, lowest best,
        or ``"val_accuracy"``, ``"test_accuracy"``, ``"test_loss"``, ``"loss"``) has not
        improved for that many epochs. A ``callback`` that returns ``False`` stops training
        after its epoch. ``model.history`` accumulates the records of every call (epochs
        numbered on); the call returns its own. Records also hold ``lr``, the rate of the
        epoch's last update.

        ``distributed=True`` (or a ``runtime.distributed.Context``): data-parallel training
        under ``torchrun``, every process calling ``train`` with the same arguments; each takes
        its groups of every batch and the weights after each step are the same bits on every
        process and for any number of processes (``runtime.distributed``; ``threads`` per
        process, default 1, is part of what must stay fixed). Only rank 0 shows
        progress and evaluates the accuracies (every rank does when ``patience`` watches
        a metric, so that all stop together); ``callback`` runs on every rank, and one
        that stops training must decide alike on all.
        """
        cfg = _optim.check(optimizer, momentum, weight_decay, betas, eps, clip_norm, schedule,
                           warmup, schedule_steps, step_size, gamma)
        if (isinstance(validation_split, bool) or not isinstance(validation_split, (int, float))
                or not 0 <= validation_split < 1):
            raise ValueError(f"validation_split must be in [0, 1), got {validation_split!r}")
        if patience is not None:
            patience = _optim._count("patience", patience, 1)
        if monitor not in ("val_loss", "val_accuracy", "test_loss", "test_accuracy", "loss"):
            raise ValueError(f"monitor must be val_loss, val_accuracy, test_loss, test_accuracy "
                             f"or loss, got {monitor!r}")
        best_sign = 1 if monitor.endswith("loss") else -1
        dist = None
        if distributed:
            from . import distributed as distributed_mod
            dist = (distributed if isinstance(distributed, distributed_mod.Context)
                    else distributed_mod.context())
            if threads is None:  # one: the bits must not depend on how many share a machine
                threads = 1
            if not dist.main:  # rank 0 shows progress and evaluates (unless a metric stops)
                progress = False
                if patience is None:
                    eval_train, test = False, None
        images, labels, test, batch_size, threads = self.check_training(
            images, labels, epochs, batch_size, lr, threads, test, callback, eval_train,
            momentum)
        if dist is not None:  # the same model, weights, data and arguments on every rank
            dist.check_same(self, images, labels, dict(
                epochs=epochs, batch_size=batch_size, lr=lr, threads=threads, momentum=momentum,
                shuffle=shuffle, seed=seed, optimizer=optimizer, weight_decay=weight_decay,
                betas=tuple(betas), eps=eps, clip_norm=clip_norm, schedule=schedule,
                warmup=warmup, schedule_steps=schedule_steps, step_size=step_size, gamma=gamma,
                validation_split=validation_split, patience=patience, monitor=monitor))
        if test is not None:
            t_images, t_labels = test
        val = None
        if validation_split:
            cut = len(images) - int(round(len(images) * validation_split))
            if cut < 1 or cut == len(images):
                raise ValueError(f"validation_split {validation_split} of {len(images)} samples "
                                 f"leaves no training or no validation sample")
            val = (images[cut:], labels[cut:])
            images, labels = images[:cut], labels[:cut]
        if patience is not None and monitor.startswith(("val_", "test_")) and (
                (val is None) if monitor.startswith("val_") else test is None):
            raise ValueError(f"early stopping on {monitor} needs "
                             + ("validation_split" if monitor.startswith("val_") else "test"))
        if patience is not None and monitor.endswith("accuracy") and is_regression(labels):
            raise ValueError(f"early stopping on {monitor}: float targets have no accuracy; "
                             f"monitor a loss")

        # set-up: every buffer the loop touches is allocated here, once
        k = self._k
        n_all = len(images)
        bs = min(batch_size, n_all)
        batch = _Batch(k, self.spec, bs)
        onehot = self._onehot(labels)
        ws = self._workspace(threads)
        lr_c = k.dtype.type(lr)
        grad_fn, sgd_fn = k.fn("batch_grad"), k.fn("sgd_update")
        w, g, loss_c = self._w, self._g, self._loss
        vel_before = (self._vel, self._mu)  # given back if the first epoch diverges
        upd = None
        if not cfg.plain and epochs > 0:
            st = self.optimizer_state
            if st is None or not st.same_run(cfg):
                st = _optim.State(cfg)
            self.optimizer_state = st
            upd = _optim.Updater(self, st, lr, epochs * -(-len(images) // min(batch_size,
                                                                              len(images))))
            momentum = 0.0  # the updater's
            start_vel = None
        elif epochs > 0:
            self.optimizer_state = None  # plain SGD: another optimiser's state would be stale
        if upd is None and momentum and epochs > 0:
            if self._vel is None:
                self._vel = k.new("params")  # zeroed by cffi
            vel, mu_c = self._vel, k.dtype.type(momentum)
            self._mu = float(momentum)
            sgd_momentum_fn = k.fn("sgd_momentum_update")
            flat_vel = k.view(vel, k.params_size)[0]
            start_vel = np.empty_like(flat_vel)  # the velocity at the start of the epoch
        elif upd is None:
            start_vel = None
            if not momentum and epochs > 0:
                self._vel, self._mu = None, None  # plain SGD: a velocity would be stale
        flat = k.view(w, k.params_size)[0]
        start = np.empty_like(flat)  # the weights at the start of the epoch, for a divergence
        if shuffle:
            rng = np.random.default_rng(seed)
            perm = np.empty(n_all, dtype=np.int64)
            src_img = np.empty_like(images)
            src_hot = np.empty_like(onehot)
        else:
            src_img, src_hot = images, onehot
        starts = range(0, n_all, bs)
        classes = not is_regression(labels)  # accuracies; else the test loss
        if epochs > 0:
            self.targets = "classes" if classes else "values"

        history: dict[str, list] = {
            "epoch": [],
            "loss": [],
            "train_accuracy": [],
            "test_accuracy": [],
            "test_loss": [],
            "val_loss": [],
            "val_accuracy": [],
            "lr": [],
            "seconds": [],
            "images_per_s": [],
        }
        self._call_history = history
        if self.history is None:
            self.history = {key: [] for key in history}
        for key in history:
            self.history.setdefault(key, [None] * len(self.history["epoch"]))
        first_epoch = len(self.history["epoch"])
        best, since_best = None, 0
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=epochs * len(starts), unit="batch", desc=f"{self.name} train")
        updated = False  # has an update been applied (a velocity kept or dropped)?
        with _interrupt_between_batches() as interrupted:
            try:
                for epoch in range(1, epochs + 1):
                    if shuffle:
                        perm[:] = rng.permutation(n_all)
                        np.take(images, perm, axis=0, out=src_img)
                        np.take(onehot, perm, axis=0, out=src_hot)
                    np.copyto(start, flat)
                    if momentum:
                        np.copyto(start_vel, flat_vel)
                    if upd is not None:
                        upd.mark()
                    total = 0.0
                    t0 = time.perf_counter()
                    for b, s in enumerate(starts, 1):
                        if dist is None:
                            n = batch.pack(src_img[s : s + bs], src_hot[s : s + bs])
                            grad_fn(w, batch.c, n, threads, ws, g, loss_c)
                            loss = float(loss_c[0])
                        else:  # this process's groups, combined with the others' in order
                            loss, n = dist.gradient(self, src_img[s : s + bs],
                                                    src_hot[s : s + bs], batch, threads, ws)
                        if not math.isfinite(loss):
                            self._diverged(start, f"the loss of batch {b} of epoch {epoch} is "
                                                  f"{loss}", lr, start_vel, vel_before, upd)
                        if upd is not None:
                            upd.step(w, g)
                        elif momentum:
                            sgd_momentum_fn(w, g, vel, lr_c, mu_c)
                        else:
                            sgd_fn(w, g, lr_c)
                        updated = True
                        total += loss * n
                        if bar is not None:
                            bar.update(1)
                        interrupted()
                    seconds = time.perf_counter() - t0
                    if not np.isfinite(flat).all():
                        bad = next(n for n, a in self.params.items() if not np.isfinite(a).all())
                        self._diverged(start, f"epoch {epoch} left NaN or inf in {bad}", lr,
                                      start_vel, vel_before, upd)
                    train_acc = (self.evaluate(images, labels, threads) if eval_train and classes
                                 else None)
                    record = {
                        "epoch": first_epoch + epoch,
                        "loss": total / n_all,
                        "train_accuracy": train_acc,
                        "test_accuracy": (self.evaluate(t_images, t_labels, threads)
                                          if test is not None and classes else None),
                        "test_loss": (self.mean_loss(t_images, t_labels, threads)
                                      if test is not None and not classes else None),
                        "val_loss": (self.mean_loss(*val, threads) if val is not None
                                     else None),
                        "val_accuracy": (self.evaluate(*val, threads)
                                         if val is not None and classes else None),
                        "lr": upd.last_lr if upd is not None else lr,
                        "seconds": seconds,
                        "images_per_s": n_all / seconds if seconds > 0 else float("inf"),
                    }
                    for key, value in record.items():
                        history[key].append(value)
                        self.history[key].append(value)
                    if bar is not None:
                        shown = {"loss": f"{record['loss']:.4f}"}
                        if record["test_accuracy"] is not None:
                            shown["test"] = f"{record['test_accuracy']:.3f}"
                        if record["test_loss"] is not None:
                            shown["test loss"] = f"{record['test_loss']:.4f}"
                        bar.set_postfix(shown)
                    stop = callback is not None and callback(self, record) is False
                    if patience is not None:
                        value = record[monitor]
                        if best is None or best_sign * (value - best) < 0:
                            best, since_best = value, 0
                        else:
                            since_best += 1
                            stop = stop or since_best >= patience
                    interrupted()
                    if stop:
                        break
            except KeyboardInterrupt:
                if not updated:  # nothing learned: the velocity is the one the call found
                    self._vel, self._mu = vel_before
                raise
            finally:
                if bar is not None:
                    bar.close()
        return history


    def _diverged(self, start: np.ndarray, what: str, lr: float, start_vel=None,
                  vel_before=None, upd=None):
        np.copyto(self._k.view(self._w, self._k.params_size)[0], start)
        if upd is not None:
            upd.restore()
        done = len(self._call_history["epoch"])
        if start_vel is not None:  # momentum: the velocity of the epoch's start
            np.copyto(self._k.view(self._vel, self._k.params_size)[0], start_vel)
        if not done and vel_before is not None:  # as the call found it (None, or another mu)
            self._vel, self._mu = vel_before
        raise DivergedError(
            f"training diverged: {what} (is lr {lr:g} too large?); the weights are back to "
            + (f"those after epoch {done}" if done else "the initial ones"))


def load(
    model,
    weights=None,
    precision: str | None = None,
    init: str = "random",
    seed: int = 0,
    dump=None,
    timeout: float | None = None,
) -> Model:
    """Build (if needed) and load the generated kernels of ``model``, with initial weights.

    ``model``, the first of these it is (``runtime.spec.KINDS``, one reader each):

    - a ``runtime.spec.ModelSpec``;
    - a ``runtime.builder.ModelBuilder`` (its ``text()``, compiled);
    - a decoded dump (a ``dict``);
    - the text of a dump (``{...}``) or of a model file (a string of more than one line);
    - a path to a model file (``*.model``), compiled by ``extract.front.frontend``;
    - a path to a dump (``*.json``);
    - a built-in model's name (``"cnn"``, ``extract.emit.build.dump_path``).

    A model compiled from a file or a text, and a dump given as data or text, are kept in the
    kernel cache (``dumps/``). ``dump``: generate a built-in model's kernels from this dump file
    instead. ``weights``: None (fresh, by ``init``: "random", uniform in +-1/sqrt(fan_in) seeded
    by ``seed``, "sac", the SaC reference constants generalised, or "he", normal of variance
    2/fan_in with rank-1 parameters zero; ``runtime.weights``); a file
    written by ``Model.save`` (with its velocity, if trained with momentum); an .npz of one
    array per parameter and const by name (``numpy.savez``); a dict of arrays. A model's consts
    are never initialised: they come in ``weights`` (a dict or an .npz of the consts alone
    leaves the parameters fresh). ``precision``: "f32" or "f64"; by default a saved file's,
    else "f32". ``timeout``: seconds for the whole path from a model file to loaded kernels
    (``extract.limits``): at the limit ``extract.limits.TimeLimitError`` (a ``RuntimeError``)
    names the stage that was running; without it only the Agda step is bounded (120 s).
    """
    if timeout is None:
        return _load(model, weights, precision, init, seed, dump)
    from extract import limits
    with limits.time_limit(timeout):
        return _load(model, weights, precision, init, seed, dump)


def _load(model, weights, precision, init, seed, dump) -> Model:
    spec = model_spec(model, dump)
    w = read_params(spec, weights, precision, init, seed)
    try:
        return Model(spec, w.precision, w.params, velocity=w.velocity, momentum=w.momentum,
                     targets=w.targets, optimizer=w.optimizer)
    except ValueError as e:  # a const's shape, a velocity for a const: name the file
        if w.source is None:
            raise
        raise ValueError(f"{w.source}: {e}") from None


class _Weights(NamedTuple):
    precision: str
    params: dict
    velocity: dict | None = None
    momentum: float | None = None
    targets: str | None = None
    optimizer: tuple | None = None
    source: str | None = None   # the file the arrays came from, named in an error about them


def read_params(spec: ModelSpec, weights=None, precision: str | None = None,
                init: str = "random", seed: int = 0) -> _Weights:
    """The weights ``runtime.load`` starts ``spec`` from (its ``weights``, ``precision``,
    ``init`` and ``seed`` as there), without building any kernel: ``(precision, params,
    velocity, momentum, targets, optimizer, source)``, ``params`` name -> array (the shapes
    of a saved file checked; those of a dict or a plain .npz where they are used)."""
    if precision is not None:
        check_precision(precision)
    check_init(init)
    velocity = momentum = targets = optimizer = None
    source = None  # the file the arrays came from, named in an error about them
    if weights is None:
        precision = precision or "f32"
        params = init_params(spec, init, seed, precision)
    elif isinstance(weights, dict):
        precision = precision or "f32"
        if spec.consts and not set(weights) & set(spec.trained):
            params = init_params(spec, init, seed, precision, consts=weights)  # params fresh
        else:
            params = weights
    elif (consts := read_consts(weights, spec)) is not None:
        precision, source = precision or "f32", f"{weights}"
        params = init_params(spec, init, seed, precision, consts=consts)  # params fresh
    elif (plain := read_plain(weights)) is not None:  # numpy.savez's arrays, as a dict's
        precision, params = precision or "f32", plain
        source = (f"{weights} (an .npz without __meta__, read as one array per parameter and "
                  f"const by name)")
    else:
        params, meta, velocity = read_weights(weights, spec.name, spec.param_shapes)
        precision = precision or meta["precision"]
        momentum, source = meta.get("momentum"), f"{weights}"
        targets = meta.get("targets")
        optimizer = read_optimizer(weights)
    return _Weights(precision, params, velocity, momentum, targets, optimizer, source)
