"""The paper's CNN in PyTorch: an independent reference for gradients, training and timing.

Same parameters (names, shapes, row-major layout) as the generated kernels (the parameters of
the ``cnn`` dump, ``runtime.weights.param_shapes("cnn")``), same loss
``1/2 * sum((r - onehot(label))^2)`` per image, averaged over the batch. Layers (convolutions
are cross-correlations, valid, stride 1):

    c1 = logistic(conv(inp[28,28], k1[6,5,5]) + b1)          6 x 24 x 24
    s1 = 2x2 average pool                                     6 x 12 x 12
    c2 = logistic(conv(s1, k2[12,6,5,5]) + b2)                12 x 8 x 8   (12x1x8x8 in the dump)
    s2 = 2x2 average pool                                     12 x 4 x 4
    r  = logistic(<fc[10,12,1,4,4], s2> + b)                  10

``torch`` is imported only when a function here is called.
"""

from __future__ import annotations

import numpy as np

from .weights import check_precision, param_shapes

__all__ = ["forward", "loss_and_gradients", "sgd_step", "train_epoch"]


def _torch():
    import torch  # lazy: the rest of runtime must work without PyTorch

    return torch


def _dtype(precision: str):
    torch = _torch()
    check_precision(precision)
    return torch.float32 if precision == "f32" else torch.float64


def to_tensors(params: dict[str, np.ndarray], precision: str = "f32", requires_grad=False):
    torch = _torch()
    dt = _dtype(precision)
    shapes = param_shapes("cnn")
    out = {}
    for n, s in shapes.items():
        a = np.asarray(params[n])
        if a.shape != s:
            raise ValueError(f"parameter {n} has shape {a.shape}, expected {s}")
        out[n] = torch.tensor(a, dtype=dt, requires_grad=requires_grad)
    return out


def forward(p, images):
    """``p``: dict of tensors; ``images``: tensor (N, 28, 28). Returns r, a tensor (N, 10)."""
    torch = _torch()
    F = torch.nn.functional
    x = images.unsqueeze(1)  # N x 1 x 28 x 28
    c1 = torch.sigmoid(F.conv2d(x, p["k1"].unsqueeze(1), p["b1"]))  # N x 6 x 24 x 24
    s1 = F.avg_pool2d(c1, 2)  # N x 6 x 12 x 12
    c2 = torch.sigmoid(F.conv2d(s1, p["k2"], p["b2"]))  # N x 12 x 8 x 8
    s2 = F.avg_pool2d(c2, 2)  # N x 12 x 4 x 4
    fc = p["fc"].reshape(10, 12, 4, 4)
    return torch.sigmoid(torch.einsum("nchw,ochw->no", s2, fc) + p["b"])


def batch_loss(p, images, labels):
    """Mean over the batch of 1/2 * sum((r - onehot)^2)."""
    torch = _torch()
    r = forward(p, images)
    target = torch.nn.functional.one_hot(labels, 10).to(r.dtype)
    return (0.5 * ((r - target) ** 2).sum(dim=1)).mean()


def _batch(images, labels, precision):
    torch = _torch()
    x = torch.tensor(np.asarray(images), dtype=_dtype(precision))
    y = torch.tensor(np.asarray(labels), dtype=torch.int64)
    return x, y


def loss_and_gradients(params, images, labels, precision: str = "f32"):
    """Batch-mean loss (float) and gradients (dict of NumPy arrays) by PyTorch autograd."""
    p = to_tensors(params, precision, requires_grad=True)
    x, y = _batch(images, labels, precision)
    loss = batch_loss(p, x, y)
    loss.backward()
    return float(loss.detach()), {n: t.grad.numpy().copy() for n, t in p.items()}


def predict(params, images, precision: str = "f32") -> np.ndarray:
    torch = _torch()
    p = to_tensors(params, precision)
    x, _ = _batch(images, np.zeros(len(images), dtype=np.int64), precision)
    with torch.no_grad():
        return forward(p, x).numpy()


def sgd_step(params, images, labels, lr: float, precision: str = "f32"):
    """One SGD step ``w -= lr * batch-mean gradient``; returns (new params as NumPy, loss)."""
    loss, grads = loss_and_gradients(params, images, labels, precision)
    dt = check_precision(precision)
    new = {n: (np.asarray(params[n], dtype=dt) - dt.type(lr) * grads[n]).astype(dt) for n in grads}
    return new, loss


def train_epoch(params, images, labels, batch_size=100, lr=0.05, precision="f32"):
    """One epoch of in-order mini-batch SGD, the loop of the generated trainer, in PyTorch.

    Returns (params as NumPy, mean loss). Works on tensors throughout (no NumPy round trip per
    batch), so it is also the timing baseline of the benchmark.
    """
    p = to_tensors(params, precision, requires_grad=True)
    x, y = _batch(images, labels, precision)
    loss = sgd_epochs(p, x, y, batch_size, lr, 1)[0]
    return {k: t.detach().numpy().copy() for k, t in p.items()}, loss


def sgd_epochs(p, x, y, batch_size=100, lr=0.05, epochs=1):
    """In-order mini-batch SGD on tensors already made (``to_tensors(..., requires_grad=True)``
    and ``_batch``), updating ``p`` in place; returns the mean loss of each epoch."""
    torch = _torch()
    n = len(x)
    losses = []
    for _ in range(epochs):
        total = 0.0
        for i in range(0, n, batch_size):
            loss = batch_loss(p, x[i : i + batch_size], y[i : i + batch_size])
            grads = torch.autograd.grad(loss, list(p.values()))
            with torch.no_grad():
                for t, g in zip(p.values(), grads):
                    t.sub_(lr * g)
            total += float(loss.detach()) * len(x[i : i + batch_size])
        losses.append(total / n)
    return losses
