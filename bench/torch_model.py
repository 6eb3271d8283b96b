"""PyTorch behind the benchmark's flat-buffer interface.

The models themselves are written directly in PyTorch in ``bench/torch_zoo.py`` (checked
against the dumps' gradients by ``tests/test_front.py``); this module only adapts the
benchmark's flat buffers to them and
supplies the timed loops, which run on tensors prepared before timing (no NumPy round trip per
batch), with autograd and an in-place SGD update, as a PyTorch user would write them.
"""

from __future__ import annotations

import numpy as np
import torch

from bench import torch_zoo
from bench.model import BenchModel, bench_model


def params_from_flat(w: np.ndarray, device: str = "cpu", requires_grad: bool = True,
                     model: BenchModel | None = None) -> dict:
    """Parameter tensors in their dump shapes, copied from the flat vector."""
    model = model or bench_model("cnn")
    out = {}
    for (name, shape, _), sl in zip(model.param_spec, model.param_slices().values()):
        t = torch.tensor(np.asarray(w[sl], dtype=np.float32).reshape(shape), device=device)
        out[name] = t.requires_grad_(requires_grad)
    return out


def flat_from_params(ps, dtype=np.float32) -> np.ndarray:
    return torch.cat([p.detach().reshape(-1) for p in ps]).cpu().numpy().astype(dtype)


def to_tensors(xs: np.ndarray, device: str = "cpu",
               model: BenchModel | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The benchmark's sample rows -> features (n, *feature shape: MNIST's 28 x 28) and
    integer labels (n,)."""
    model = model or bench_model("cnn")
    images, targets = model.unpack_inputs(xs)
    labels = targets.argmax(axis=1)
    if not np.array_equal(targets, np.eye(targets.shape[1], dtype=np.float32)[labels]):
        raise ValueError("PyTorch reference needs one-hot targets")
    return (torch.from_numpy(images).to(device), torch.from_numpy(labels).to(device))


class TorchImpl:
    """PyTorch (CPU or CUDA) with the benchmark's interface."""

    def __init__(self, device: str = "cpu", name: str | None = None,
                 model: BenchModel | None = None, dtype: str = "float32"):
        """``dtype``: float32 (timed), or float64 for ``batch_grad`` alone (the agreement
        check's arbiter, bench/check.py)."""
        self.model = model or bench_model("cnn")
        self.dtype = getattr(torch, dtype)
        if self.model.name not in torch_zoo.MODELS:
            raise KeyError(f"no PyTorch version of model {self.model.name!r} in bench/torch_zoo.py")
        self.device = device
        self.name = name or f"pytorch-{device}"
        self.threads = torch.get_num_threads()

    def set_threads(self, n: int) -> None:
        if self.device == "cpu":
            torch.set_num_threads(n)
        self.threads = n

    def sync(self) -> None:
        if self.device.startswith("cuda"):
            torch.cuda.synchronize()

    def batch_grad(self, w: np.ndarray, xs: np.ndarray) -> tuple[float, np.ndarray]:
        ps = params_from_flat(w, self.device, model=self.model)
        x, y = to_tensors(xs, self.device, self.model)
        if self.dtype != torch.float32:
            ps = {k: p.detach().to(self.dtype).requires_grad_(True) for k, p in ps.items()}
            x = x.to(self.dtype)
        loss = torch_zoo.batch_loss(self.model.name, ps, x, y)
        grads = torch.autograd.grad(loss, list(ps.values()))
        return float(loss.detach()), flat_from_params(
            grads, np.float32 if self.dtype == torch.float32 else np.float64)

    def prepare(self, xs: np.ndarray):
        """The data in this implementation's native form (done before timing)."""
        return to_tensors(xs, self.device, self.model)

    def train_prepared(self, w: np.ndarray, data, batch: int, lr: float) -> np.ndarray:
        """SGD over prepared data; writes the final weights into ``w``; returns batch losses."""
        x, y = data
        ps = params_from_flat(w, self.device, model=self.model)
        plist = list(ps.values())
        nb = x.shape[0] // batch
        losses = torch.empty(nb, device=self.device)
        for k in range(nb):
            loss = torch_zoo.batch_loss(self.model.name, ps, x[k * batch:(k + 1) * batch], y[k * batch:(k + 1) * batch])
            grads = torch.autograd.grad(loss, plist)
            with torch.no_grad():
                for p, g in zip(plist, grads):
                    p.sub_(g, alpha=lr)
                losses[k] = loss
        self.sync()
        w[:] = flat_from_params(plist)
        return losses.cpu().numpy()

    def predict_prepared(self, w: np.ndarray, data, batch: int) -> np.ndarray:
        x, _ = data
        ps = params_from_flat(w, self.device, requires_grad=False, model=self.model)
        with torch.inference_mode():
            out = torch.cat([torch_zoo.forward(self.model.name, ps, x[lo:lo + batch])
                             for lo in range(0, x.shape[0], batch)])
        self.sync()
        return out.cpu().numpy()

    def train(self, w: np.ndarray, xs: np.ndarray, batch: int, lr: float) -> np.ndarray:
        return self.train_prepared(w, self.prepare(xs), batch, lr)

    def predict(self, w: np.ndarray, xs: np.ndarray, batch: int) -> np.ndarray:
        return self.predict_prepared(w, self.prepare(xs), batch)
