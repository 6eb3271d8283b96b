"""PyTorch interop: a model's generated kernels as a ``torch.nn.Module``.

    import torch, runtime.torch as rt
    net = rt.Module("models/lenet5.model")            # or a loaded runtime.Model
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    logits = net(x)                                   # (N, 10): the model's `output` binding
    torch.nn.functional.cross_entropy(logits, y).backward(); opt.step()
    net.model.evaluate(images, labels)                # the same weights, in C memory

**What forward returns.** ``net(x)`` is the model's prediction output (its ``output``
binding: LeNet-5's logits, the CNN's logistic scores), flattened per sample as
``Model.predict`` gives it: shape ``(N, elements of output_shape)``. ``x`` is ``(N, *input
shape)``, or any ``(N, ...)`` with as many elements per sample (taken row-major, as
``torch.flatten`` does), on the CPU, in the model's precision (float32 or float64; another
dtype or a CUDA tensor raises ``TypeError``). The model's own loss and target play no part:
any PyTorch loss may follow.

**How backward is computed.** A dump differentiates one scalar, the model's loss seeded with
1, and has gradients for the parameters and the chain bindings only (never an input). So the
module derives a model file (``runtime._vjp``): the bindings the output depends on, an input
``g`` for the upstream gradient of the output, and the loss ``sum i . out[i] * g[i]``. Agda
elaborates and differentiates it like any model, and its generated kernels give the
vector-Jacobian product for the parameters, times ``N`` (the batch kernels average over the
batch; autograd sums). They are built with a tape (docs/generated-api.md): forward runs
``M_batch_forward``, which keeps every group's values, and backward ``M_batch_backward``, the
reverse pass from those values (only the loss reads ``g``, and the reverse pass never reads the
loss's own value), so a step runs the forward once. Another keeping forward between the two,
or a changed thread count, runs ``M_batch_grad`` (forward and backward) instead; under
``torch.no_grad()`` forward keeps nothing (``M_batch_predict``), and such a forward in between
leaves the kept values (backward packs its own input again). The parameters are saved for
backward: changing one in place between the two is autograd's usual error, and a const changed
in place an error naming it (writes into the C buffers from elsewhere, ``net.model.train``
say, are not seen). When ``x`` requires a
gradient (a PyTorch layer before this one, or ``gradcheck``), a second derived model binds
the input again (``x = x_in + 0``) so that the reverse pass has ``d_x``, and backward runs the
one-sample ``M_forward``/``M_backward`` per sample (single-threaded: slower than the batch
kernels, and only then). Each derived model is built once and cached like any other.

``net.loss(x, y)`` is the other entry point: the model's own ``loss`` (batch mean) through the
model's own ``M_batch_grad``, whose backward is exactly the gradient the dump states (the
gradient ``Model.train`` descends); it gives no gradient to ``x``.

**Parameters.** Every trained parameter is an ``nn.Parameter`` made by ``torch.from_numpy``
from the NumPy view of the C parameter buffer (``Model.params``): the optimizer's in-place
updates are what the kernels read, with no copy per step, and ``net.model`` (save, evaluate,
predict, train) sees the same weights. A model's consts are buffers, shared the same way.
``state_dict``/``load_state_dict`` work (loading copies into the C buffer); ``.to()``,
``.double()``, ``.cuda()`` and the like raise rather than copy the parameters out of C memory
(load with ``precision="f64"`` for float64). Replacing a parameter's ``.data`` breaks the
sharing: forward then raises.

One module runs one batch at a time (the kernels share buffers): do not call it from two
threads at once.
"""

from __future__ import annotations

import math
import os
from itertools import chain
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.autograd.function import once_differentiable

from . import _vjp
from ._kernels import Kernels
from .model import Model, _Batch, _check_threads, is_regression
from .model import load as _load
from .spec import model_spec

__all__ = ["Module"]

_ZOO = Path(__file__).resolve().parent.parent / "models"


def _source_text(model, spec) -> str:
    """The model file's text of ``model``: the text given, a ModelBuilder's, the model file
    the spec was compiled from, or, for a built-in model's name, the zoo's file."""
    if isinstance(model, str) and "\n" in model.strip():
        return model
    if callable(getattr(model, "text", None)) and not isinstance(model, (str, os.PathLike)):
        return model.text()
    if spec.source and Path(spec.source).is_file():
        return Path(spec.source).read_text()
    zoo = _ZOO / f"{spec.name}.model"
    if zoo.is_file():
        mine = model_spec(zoo)
        if mine.param_shapes == spec.param_shapes and mine.input_shapes == spec.input_shapes:
            return zoo.read_text()
    raise ValueError(f"runtime.torch.Module needs the model file of {spec.describe()} to derive "
                     f"its vector-Jacobian kernels; give it as source=TEXT")


class _Derived:
    """The kernels of a derived model (``runtime._vjp``) over the original model's weights."""

    def __init__(self, text: str, model: Model, wrt_input: bool):
        spec = model.spec
        self.d = _vjp.vjp_model(text, spec.features, spec.prediction, spec.output_shape,
                                wrt_input)
        self.spec = model_spec(self.d.text)
        # the batch path with a tape: the forward keeps its values for the backward
        self.k = k = Kernels.open(self.spec.name, model.precision, self.spec.kernels_dump,
                                  tape=not wrt_input)
        own = model._k
        if k.params != own.params or k.params_size != own.params_size:
            raise RuntimeError(f"the derived model {self.spec.name} lays out its parameters "
                               f"differently from {spec.name}")
        # the model's parameter buffer, as a pointer of the derived library's type
        self.w = k.ffi.cast(f"{k.type('params')} *",
                            int(own.ffi.cast("uintptr_t", model._w)))
        self.g = k.new("params")
        self.loss = k.ffi.new(f"{k.real}[1]")
        self.flat_g = k.view(self.g, k.params_size)[0]
        # each trained parameter's (offset, length, shape) in the flat gradient
        self.fields = {n: (k.params[n].offset, k.params[n].length, model.param_shapes[n])
                       for n in spec.trained}
        self.width = k.values[spec.prediction].length
        self.batch: _Batch | None = None
        self.out = None
        self.packs = 0  # features packed so far: a forward's count tells its backward whether
        #                 they are still in the buffer (autograd checks the saved input's
        #                 version; no other forward of this module came between)
        self.ws: dict[int, object] = {}
        self.tape = None     # M_batch_forward's kept values, and the (n, threads) they are of
        self.taped: tuple | None = None
        self.tapes = 0       # forwards that kept their values so far (as packs)

    def workspace(self, threads: int):
        if threads not in self.ws:
            size = self.k.fn("workspace_size")(threads)
            self.ws[threads] = self.k.ffi.new("char[]", max(int(size), 1))
        return self.ws[threads]

    def pack(self, x: np.ndarray, g: np.ndarray | None, packed: int | None = None) -> int:
        """Copy the features ``x`` (unless ``packed`` is the count of the pack that put them
        there, and the last) and the output's gradient ``g`` into the packed inputs."""
        n = len(x)
        if self.batch is None or self.batch.capacity < n:
            self.batch = _Batch(self.k, self.spec, n)
            self.out = self.k.ffi.new(f"{self.k.real}[]", n * self.width)
            packed = None
        f = self.batch.fields  # views into the packed C inputs: the sources take their shape
        if packed is None or packed != self.packs:
            dst = f[self.d.features][:n]
            np.copyto(dst, x.reshape(dst.shape))
            self.packs += 1
        if g is not None:
            dst = f[self.d.grad_input][:n]
            np.copyto(dst, g.reshape(dst.shape))
        return n

    def predict(self, x: np.ndarray, threads: int, keep: bool = False) -> tuple:
        """(the outputs, the count of the pack of ``x``, with ``keep`` the count of this
        keeping forward, else None): with ``keep``, through ``M_batch_forward``, whose values a
        backward of this forward (``param_vjp`` given both counts) uses instead of computing
        them again."""
        n = self.pack(x, None)
        ws = self.workspace(threads)
        if keep:
            size = int(self.k.fn("tape_size")(n, threads))
            if self.tape is None or len(self.tape) < size:
                self.tape = self.k.ffi.new("char[]", size)
            self.k.fn("batch_forward")(self.w, self.batch.c, n, threads, ws, self.tape,
                                       self.out)
            self.tapes += 1
            self.taped = (n, threads)
        else:
            self.k.fn("batch_predict")(self.w, self.batch.c, n, threads, ws, self.out)
        flat = np.frombuffer(self.k.ffi.buffer(self.out), dtype=self.k.dtype)
        return (flat[: n * self.width].reshape(n, self.width).copy(), self.packs,
                self.tapes if keep else None)

    def param_vjp(self, x: np.ndarray, gout: np.ndarray, threads: int,
                  packed: int | None = None, taped: int | None = None) -> dict[str, np.ndarray]:
        """Σ over the samples of d<out, g>/dw, through the batch kernels (their mean × n):
        views of one new array, in the parameters' shapes. ``taped``: the count of the
        keeping forward of these samples; while no other came since, ``M_batch_backward``
        reads its values (only the loss ``<out, g>`` depends on ``g``, and the reverse pass
        never reads the loss's own value), else ``M_batch_grad`` runs the forward again."""
        n = self.pack(x, gout, packed)
        ws = self.workspace(threads)
        if taped is not None and taped == self.tapes and self.taped == (n, threads):
            self.k.fn("batch_backward")(self.w, self.batch.c, n, threads, ws, self.tape,
                                        self.g, self.loss)
        else:
            self.k.fn("batch_grad")(self.w, self.batch.c, n, threads, ws, self.g, self.loss)
        flat = self.flat_g * n
        return {name: flat[o : o + length].reshape(shape)
                for name, (o, length, shape) in self.fields.items()}

    def full_vjp(self, x: np.ndarray, gout: np.ndarray):
        """(d<out, g>/dx per sample, Σ over the samples of d<out, g>/dw), through the
        one-sample M_forward / M_backward."""
        k, ffi = self.k, self.k.ffi
        n = self.pack(x, gout)
        values = k.new("values")
        grads = ffi.new(f"{k.prefix}grads[]", n)
        forward, backward = k.fn("forward"), k.fn("backward")
        xs = self.batch.c
        for i in range(n):
            forward(self.w, xs + i, values)
            backward(self.w, xs + i, values, grads + i)
        layout = k._layout("grads")
        size = ffi.sizeof(f"{k.prefix}grads") // k.dtype.itemsize
        rows = k.view(grads, size)
        dx = layout[self.d.input_grad]
        gx = rows[:, dx.offset : dx.offset + dx.length]
        gp = {}
        for name, (_, _, shape) in self.fields.items():
            f = layout[f"d_{name}"]
            gp[name] = rows[:, f.offset : f.offset + f.length].sum(axis=0).reshape(shape)
        return gx.copy(), gp


class _Run(torch.autograd.Function):
    """forward: the prediction output; backward: the vector-Jacobian product (see the module's
    docstring). The parameters are arguments only so that autograd routes their gradients:
    the kernels read them from C memory, which they share."""

    @staticmethod
    def forward(ctx, net, keep, x, *params):
        ctx.net = net
        # the parameters too: autograd then refuses a backward after they changed in place,
        # which the kept values would not reflect; the consts' versions, checked by backward
        ctx.save_for_backward(x, *params)
        ctx.consts = [(n, b, b._version) for n, b in net._buffers.items()]
        out, ctx.packed, ctx.taped = net._core.predict(net._numpy(x), net.threads, keep)
        return torch.from_numpy(out)

    @staticmethod
    @once_differentiable
    def backward(ctx, gout):
        x = ctx.saved_tensors[0]
        net = ctx.net
        for name, b, version in ctx.consts:
            if b._version != version:
                raise RuntimeError(f"the const {name} of {net.model.name} was modified in place "
                                   f"between the forward and its backward")
        gout_np = gout.detach().numpy().astype(net.model.dtype, copy=False)
        xn = x.detach().numpy()  # checked by forward
        if ctx.needs_input_grad[2]:
            gx, gp = net._input_core().full_vjp(xn, gout_np)
            gx = torch.from_numpy(gx).reshape(x.shape)
        else:  # x is still packed unless another forward came between
            gx, gp = None, net._core.param_vjp(xn, gout_np, net.threads, ctx.packed, ctx.taped)
        grads = [torch.from_numpy(gp[n]) if need else None
                 for n, need in zip(net._trained, ctx.needs_input_grad[3:])]
        return (None, None, gx, *grads)


class _Loss(torch.autograd.Function):
    """The model's own loss (batch mean) and its exact gradient (``M_batch_grad``)."""

    @staticmethod
    def forward(ctx, net, x, y, *params):
        m = net.model
        images = net._numpy(x).reshape((len(x), *m.input_shape))
        labels = m.check_labels(y.detach().numpy(), len(images))
        loss, grads = m.loss_and_gradients(images, labels, net.threads)
        ctx.grads = [torch.from_numpy(grads[n]) for n in net._trained]
        return torch.tensor(loss, dtype=x.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, gloss):
        return (None, None, None, *(g * gloss for g in ctx.grads))


class Module(nn.Module):
    """A model's generated kernels as a ``torch.nn.Module`` (see the module's docstring).

    ``model``: anything ``runtime.load`` takes (a model file, a built-in name, a model's text,
    a ModelBuilder), loaded with ``load_kwargs`` (``precision``, ``weights``, ``init``,
    ``seed``), or a loaded ``runtime.Model``, whose weights the module then shares.
    ``source``: the model file's text, where it cannot be found (a model loaded from a dump).
    ``threads``: for the batch kernels (default: all cores)."""

    def __init__(self, model, *, source: str | None = None, threads: int | None = None,
                 **load_kwargs):
        super().__init__()
        if isinstance(model, Model):
            if load_kwargs:
                raise ValueError(f"a loaded Model takes no load arguments, got "
                                 f"{sorted(load_kwargs)}")
            loaded, origin = model, model
        else:
            loaded = _load(model, **load_kwargs)
            origin = model
        loaded.require_data("runtime.torch.Module", predict=True)
        # not a submodule: a plain attribute (nn.Module.__setattr__ leaves a non-Module alone)
        self.model = loaded
        self.threads = _check_threads(threads)
        self._text = source if source is not None else _source_text(origin, loaded.spec)
        self._core = _Derived(self._text, loaded, wrt_input=False)
        self._core_x: _Derived | None = None
        self._trained = list(loaded.spec.trained)
        for name in self._trained:
            self.register_parameter(name, nn.Parameter(torch.from_numpy(loaded.params[name])))
        for name in loaded.spec.consts:
            self.register_buffer(name, torch.from_numpy(loaded.params[name]))
        self._ptrs = {n: loaded.params[n].ctypes.data for n in loaded.params}
        self.dtype = torch.float32 if loaded.dtype == np.float32 else torch.float64
        self._per_sample = math.prod(loaded.input_shape)

    def _input_core(self) -> _Derived:
        if self._core_x is None:
            self._core_x = _Derived(self._text, self.model, wrt_input=True)
        return self._core_x

    def _numpy(self, x: torch.Tensor) -> np.ndarray:
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"expected a torch.Tensor, got {type(x).__name__}")
        if x.device.type != "cpu":
            raise TypeError(f"runtime.torch.Module runs the generated C kernels on the CPU; "
                            f"the input is on {x.device} (move it with .cpu())")
        if x.dtype != self.dtype:
            raise TypeError(f"the model {self.model.name} is {self.model.precision}: the input "
                            f"must be {self.dtype}, got {x.dtype} (load the model with "
                            f"precision='{'f64' if x.dtype == torch.float64 else 'f32'}', or "
                            f"cast the input)")
        per = self._per_sample
        if x.dim() < 1 or len(x) == 0 or x.numel() != per * len(x):
            raise ValueError(f"the input must be (N, {', '.join(map(str, self.model.input_shape))})"
                             f" or (N, ...) with {per} elements per sample, got "
                             f"{tuple(x.shape)}")
        return x.detach().numpy()

    def _check_shared(self) -> None:
        for name, t in chain(self._parameters.items(), self._buffers.items()):
            if t is None or t.data_ptr() != self._ptrs[name]:
                raise RuntimeError(f"parameter {name} no longer shares the C buffer (was its "
                                   f".data replaced?); copy values in with "
                                   f"`with torch.no_grad(): p.copy_(v)`")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The prediction output, ``(N, elements of output_shape)``."""
        self._check_shared()
        params = [self._parameters[n] for n in self._trained]
        # keep the forward's values for a backward that may come: with gradients on, for the
        # parameters only (an input's gradient takes the one-sample kernels)
        keep = (torch.is_grad_enabled() and not getattr(x, "requires_grad", False)
                and any(p.requires_grad for p in params))
        return _Run.apply(self, keep, x, *params)

    def loss(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The model's own loss, the batch mean, with the exact gradient of the dump for the
        parameters (no gradient to ``x``, which must not require one). ``y``: integer class
        labels ``(N,)`` or float targets of the target's shape."""
        self._check_shared()
        if x.requires_grad:
            raise ValueError("Module.loss gives no gradient with respect to x (the dump has "
                             "none for an input); use forward and a PyTorch loss")
        self._numpy(x)
        return _Loss.apply(self, x, y, *(self._parameters[n] for n in self._trained))

    def _apply(self, fn, recurse=True):
        for name, t in chain(self._parameters.items(), self._buffers.items()):
            moved = fn(t)
            if (moved.data_ptr() != t.data_ptr() or moved.dtype != t.dtype
                    or moved.device != t.device):
                raise TypeError(f"runtime.torch.Module keeps its parameters in the C buffer "
                                f"of its kernels ({self.model.precision}, CPU) and cannot move "
                                f"or convert them; load the model with the precision wanted")
        return self

    def extra_repr(self) -> str:
        return f"{self.model.name}, {self.model.precision}, threads={self.threads}"
