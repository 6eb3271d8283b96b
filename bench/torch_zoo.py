"""The zoo models (models/*.model) and the benchmark's own (bench/models/*.model) written
directly in PyTorch, independent of their dumps.

One function per model computes the prediction output of a batch, another the batch-mean loss;
the parameters are tensors in their dump shapes (``p[name]``), ``x`` the features
(``(N, 28, 28)``, ``resnet20``'s and ``vgg_cifar``'s ``(N, 3, 32, 32)``), ``labels`` the class
indices ``(N,)``. They are the benchmark's PyTorch peers (``bench/torch_model.py``) and the
references of ``tests/test_front.py``, which checks their gradients against the dump's (oracle)
at batch 1: so the peer timed is the peer checked.

``torch`` is imported only when a function here is called.
"""

from __future__ import annotations


def _torch():
    import torch  # lazy

    return torch


def _mlp(p, x):
    torch = _torch()
    n = x.shape[0]
    h = torch.sigmoid(torch.addmm(p["b1"], x.reshape(n, -1), p["w1"].reshape(128, -1).t()))
    return torch.sigmoid(torch.addmm(p["b2"], h, p["w2"].t()))


def _cnn(p, x):
    torch = _torch()
    F = torch.nn.functional
    n = x.shape[0]
    c1 = torch.sigmoid(F.conv2d(x.reshape(n, 1, 28, 28), p["k1"].reshape(6, 1, 5, 5), p["b1"]))
    s1 = F.avg_pool2d(c1, 2)
    c2 = torch.sigmoid(F.conv2d(s1, p["k2"], p["b2"]))
    s2 = F.avg_pool2d(c2, 2)
    return torch.sigmoid(torch.addmm(p["b"], s2.reshape(n, -1), p["fc"].reshape(10, -1).t()))


def _lenet5(p, x):
    torch = _torch()
    F = torch.nn.functional
    n = x.shape[0]
    a1 = torch.relu(F.conv2d(x.reshape(n, 1, 28, 28), p["k1"].reshape(6, 1, 5, 5), p["b1"],
                             padding=2))
    p1 = F.max_pool2d(a1, 2)
    a2 = torch.relu(F.conv2d(p1, p["k2"], p["b2"]))
    p2 = F.max_pool2d(a2, 2)
    a3 = torch.relu(torch.addmm(p["b3"], p2.reshape(n, -1), p["w3"].reshape(120, -1).t()))
    a4 = torch.relu(torch.addmm(p["b4"], a3, p["w4"].t()))
    return torch.addmm(p["b5"], a4, p["w5"].t())        # the logits


def _wide1000(p, x):
    torch = _torch()
    n = x.shape[0]
    h = torch.relu(torch.addmm(p["b1"], x.reshape(n, -1), p["w1"].reshape(256, -1).t()))
    return torch.addmm(p["b2"], h, p["w2"].t())        # the 1000 logits


def _encoder(p, x):
    """models/encoder.model: one post-LN transformer encoder block over the 28 rows."""
    torch = _torch()
    F = torch.nn.functional
    n = x.shape[0]
    a0 = F.linear(x.reshape(n, 28, 28), p["we"], p["be"]) + p["pos"]          # n×28×16
    q = torch.einsum("hec,ntc->nthe", p["wq"], a0)
    k = torch.einsum("hec,ntc->nthe", p["wk"], a0)
    v = torch.einsum("hec,ntc->nthe", p["wv"], a0)
    s = torch.einsum("nihe,njhe->nhij", q, k) / 2                            # n×4×28×28
    w = torch.softmax(s, dim=-1)
    o = torch.einsum("nhij,njhe->nihe", w, v).reshape(n, 28, 16)
    r1 = F.linear(o, p["wo"].reshape(16, 16), p["bo"]) + a0
    n1 = F.layer_norm(r1, (16,), p["g1"], p["n1b"], eps=1e-5)
    h1 = F.linear(n1, p["w1"], p["c1"])
    k1, k2 = p["k1"].reshape(()), p["k2"].reshape(())
    gl = h1 * torch.sigmoid(2 * k1 * (h1 + k2 * h1 ** 3))                  # GELU-tanh
    r2 = F.linear(gl, p["w2"], p["c2"]) + n1
    n2 = F.layer_norm(r2, (16,), p["g2"], p["n2b"], eps=1e-5)
    return F.linear(n2.mean(dim=1), p["wc"], p["bc"])                       # the logits


def _resnet20(p, x):
    """models/resnet20.model: ResNet-20 with a learned scalar on each block's residual branch."""
    torch = _torch()
    F = torch.nn.functional
    a = torch.relu(F.conv2d(x.reshape(-1, 3, 32, 32), p["k0"], p["b0"], padding=1))
    for n in range(1, 10):
        stride = 2 if n in (4, 7) else 1
        v = torch.relu(F.conv2d(a, p[f"k{n}a"], p[f"b{n}a"], padding=1, stride=stride))
        w = F.conv2d(v, p[f"k{n}b"], p[f"b{n}b"], padding=1)
        short = F.conv2d(a, p[f"p{n}"], p[f"q{n}"], stride=2) if stride == 2 else a
        a = torch.relu(short + p[f"m{n}"].reshape(()) * w)
    return F.linear(a.mean(dim=(2, 3)), p["wf"], p["bf"])                    # the logits


def _vgg_cifar(p, x):
    """bench/models/vgg_cifar.model: two padded 3×3 convolutions with ReLU and max-pooling,
    two dense layers."""
    torch = _torch()
    F = torch.nn.functional
    n = x.shape[0]
    a1 = F.max_pool2d(torch.relu(F.conv2d(x.reshape(n, 3, 32, 32), p["k1"], p["b1"],
                                          padding=1)), 2)
    a2 = F.max_pool2d(torch.relu(F.conv2d(a1, p["k2"], p["b2"], padding=1)), 2)
    a3 = torch.relu(torch.addmm(p["b3"], a2.reshape(n, -1), p["w3"].reshape(128, -1).t()))
    return torch.addmm(p["b4"], a3, p["w4"].t())        # the logits


def _sqerr(out, labels):
    torch = _torch()
    target = torch.nn.functional.one_hot(labels, out.shape[1]).to(out.dtype)
    return (0.5 * ((out - target) ** 2).sum(dim=1)).mean()


def _cross_entropy(logits, labels):
    return _torch().nn.functional.cross_entropy(logits, labels)


# model name -> (prediction of a batch, batch-mean loss of the prediction)
MODELS = {"mlp": (_mlp, _sqerr), "cnn": (_cnn, _sqerr), "lenet5": (_lenet5, _cross_entropy),
          "wide1000": (_wide1000, _cross_entropy), "encoder": (_encoder, _cross_entropy),
          "resnet20": (_resnet20, _cross_entropy), "vgg_cifar": (_vgg_cifar, _cross_entropy)}


def forward(name: str, p, x):
    """The prediction output of model ``name`` for features ``x`` (N, 28, 28; resnet20's and
    vgg_cifar's N, 3, 32, 32)."""
    return MODELS[name][0](p, x)


def batch_loss(name: str, p, x, labels):
    """The mean over the batch of model ``name``'s loss."""
    f, loss = MODELS[name]
    return loss(f(p, x), labels)
