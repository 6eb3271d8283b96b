"""The networks users bring (tests/torch_nets.py: MobileNet v2 at width 0.25, a ResNet-18 with
its AdaptiveAvgPool2d, a ViT encoder with fused q/k/v and four heads, a U-Net with a
transposed convolution, a bilinear Resize and skip Concats), exported from PyTorch as a user
would, imported with their batch axis, built and run:

- ``test_a_fresh_export_agrees_with_onnxruntime_and_pytorch``: the default export
  (``torch.onnx.export`` of the network in eval mode: batch normalisation folded into the
  convolutions, equal initializers shared, as a freshly made network's folded biases are),
  float32, a batch of two random inputs against onnxruntime and PyTorch;
- ``test_gradients_and_a_training_step_agree_with_pytorch``: the export that keeps the
  batch normalisation nodes (``TrainingMode.PRESERVE``: PyTorch's parameters are the graph's
  initializers), its statistics randomised, float64: the batch-mean loss and the gradient of
  every PyTorch parameter against autograd's, then one step of the trainer
  (``Model.train``, SGD) against ``torch.optim.SGD``'s. Each PyTorch parameter is found among
  the imported ones by its values (as they are; transposed: a ``Linear`` read by ``Gemm`` or
  ``MatMul``; flipped: a transposed convolution's kernel; each plane transposed: the kernel
  of a convolution of 1×1 planes). Batch normalisation is folded by the importer into
  ``x · s + t`` per channel: γ's and β's gradients are checked through s's and t's, and the
  training step on the parameters PyTorch and the import share.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch_nets  # noqa: E402

import runtime.onnx_backend as backend  # noqa: E402

pytestmark = [pytest.mark.agda, pytest.mark.torch]

NAMES = list(torch_nets.NETWORKS)


def _export(net, shape, path: Path, preserve: bool = False):
    net.eval()
    # the batch axis dynamic (as a user exports for batches): or a batch of 1, for ONNX
    kw = {"training": torch.onnx.TrainingMode.PRESERVE} if preserve else \
        {"dynamic_axes": {"x": {0: "batch"}, "out": {0: "batch"}}}
    with torch.no_grad():
        torch.onnx.export(net, torch.zeros((1, *shape)), str(path), dynamo=False,
                          input_names=["x"], output_names=["out"], opset_version=17, **kw)
    return onnx.load(str(path))


def _close(got, want, tol, what):
    scale = max(float(np.abs(want).max()), 1e-30)
    err = float(np.abs(np.asarray(got, np.float64) - want).max()) / scale
    assert got.shape == want.shape and err <= tol, f"{what}: {err:.2e} of the largest output"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.usefixtures("quick_builds")
def test_a_fresh_export_agrees_with_onnxruntime_and_pytorch(name, tmp_path, kernel_cache):
    make, shape, loss = torch_nets.NETWORKS[name]
    torch.manual_seed(0)
    net = make()
    model = _export(net, shape, tmp_path / f"{name}.onnx")
    x = np.random.default_rng(1).normal(size=(2, *shape)).astype(np.float32)
    rep = backend.prepare(model, batch=True, loss=loss)
    (got,) = rep.run([x])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (want,) = sess.run(None, {"x": x})
    _close(got, want, 1e-5, "onnxruntime")
    with torch.no_grad():
        _close(got, net(torch.from_numpy(x)).numpy(), 1e-5, "PyTorch")


_VIEWS = {"as is": lambda a: a,
          "transposed": lambda a: a.T if a.ndim == 2 else None,
          "flipped": lambda a: a.transpose(1, 0, 2, 3)[:, :, ::-1, ::-1] if a.ndim == 4
          else None,
          # a kernel of planes H×1 (the model language's H), convolved transposed
          "planes transposed": lambda a: a.transpose(0, 1, 3, 2) if a.ndim == 4 else None}


def _find(params: dict, value: np.ndarray, what: str) -> tuple[str, str]:
    """The one imported parameter holding ``value``'s numbers, and how (``_VIEWS``)."""
    hits = {}
    for q, v in params.items():
        for view, f in _VIEWS.items():
            fv = f(value)
            if fv is not None and v.size == fv.size and np.array_equal(np.ravel(v),
                                                                       np.ravel(fv)):
                hits.setdefault(q, view)
    assert len(hits) == 1, f"{what}: imported as {sorted(hits) or 'nothing'}"
    return next(iter(hits.items()))


def _matched(params: dict, net) -> tuple[dict, dict]:
    """PyTorch's parameters -> (the imported parameter, the view); and each batch
    normalisation (folded by the importer into ``x · s + t``, s = γ / √(σ² + ε) and t = β − μ s,
    computed in float64 and stored in float32) -> its imported (s, t)."""
    folded, bn = {}, set()
    for mname, mod in net.named_modules():
        if isinstance(mod, torch.nn.BatchNorm2d):
            g, b, mu, var = (np.asarray(t.detach().numpy(), np.float64) for t in
                             (mod.weight, mod.bias, mod.running_mean, mod.running_var))
            sc = g / np.sqrt(var + mod.eps)
            folded[mname] = (_find(params, sc.astype(np.float32), f"{mname} s")[0],
                             _find(params, (b - mu * sc).astype(np.float32),
                                   f"{mname} t")[0])
            bn |= {f"{mname}.weight", f"{mname}.bias"}
    plain = {n: _find(params, p.detach().numpy(), n) for n, p in net.named_parameters()
             if n not in bn}
    return plain, folded


def _rel(got, want) -> float:
    got, want = np.ravel(got), np.ravel(want)
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-300))


# float64 kernels, float32 parameters: the importer stores what it folds (batch normalisation's
# s and t, GELU's 1/√2) in float32, so the imported network is PyTorch's to about 1e-8
TOL = 1e-6


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.usefixtures("quick_builds")
def test_gradients_and_a_training_step_agree_with_pytorch(name, tmp_path, kernel_cache):
    import runtime
    from extract.front.onnx import import_onnx
    from runtime.spec import _compiled
    make, shape, loss = torch_nets.NETWORKS[name]
    torch.manual_seed(0)
    net = torch_nets.randomise_statistics(make())
    imp = import_onnx(_export(net, shape, tmp_path / f"{name}.onnx", preserve=True),
                      batch=True, loss=loss)
    m = runtime.load(_compiled(imp.text, f"<{imp.name}.model>"), weights=dict(imp.params),
                     precision="f64")
    plain, folded = _matched(imp.params, net)
    rng = np.random.default_rng(2)
    n = 2
    x = rng.normal(size=(n, *shape))
    net = net.double().eval()
    out = net(torch.from_numpy(x))
    if loss == "ce":
        labels = rng.integers(out.shape[1], size=n)
        target = np.eye(out.shape[1])[labels]
        want_loss = torch.nn.functional.cross_entropy(out, torch.from_numpy(labels))
    else:
        labels = target = rng.normal(size=out.shape)
        want_loss = 0.5 * ((out - torch.from_numpy(target)) ** 2).sum() / n
    want_loss.backward()
    got_loss, grads = m.batch_gradients({"x": x, imp.target: target})
    assert _rel(got_loss, want_loss.item()) <= TOL, (got_loss, want_loss.item())
    tp = dict(net.named_parameters())
    for tname, (q, view) in plain.items():
        err = _rel(grads[q], _VIEWS[view](tp[tname].grad.numpy()))
        assert err <= TOL, f"{tname} ({q}, {view}): {err:.1e} of its largest"
    for mname, (qs, qt) in folded.items():
        # γ's and β's gradients from s's and t's: ∂s/∂γ = 1/√(σ² + ε), ∂t/∂γ = −μ/√(σ² + ε)
        mod = dict(net.named_modules())[mname]
        r = 1 / np.sqrt(mod.running_var.numpy() + mod.eps)
        mu = mod.running_mean.numpy()
        assert _rel(grads[qt], mod.bias.grad.numpy()) <= TOL, mname
        assert _rel(r * (grads[qs] - mu * grads[qt]), mod.weight.grad.numpy()) <= TOL, mname
    # one step of the trainer: each parameter PyTorch has as it is moves as torch.optim.SGD
    # moves it
    lr = 0.05
    before = {q: np.array(m.params[q]) for q, _ in plain.values()}
    tbefore = {k: v.detach().numpy().copy() for k, v in tp.items()}
    torch.optim.SGD(net.parameters(), lr=lr).step()
    m.train(x, labels, epochs=1, batch_size=n, lr=lr, progress=False, eval_train=False)
    for tname, (q, view) in plain.items():
        want = np.ravel(_VIEWS[view](tp[tname].detach().numpy() - tbefore[tname]))
        got = np.ravel(np.asarray(m.params[q]) - before[q])
        # of the largest update, and the rounding of w − lr·g (a few units of w's last place)
        slack = TOL * np.abs(want).max() + 1e-15 * np.abs(before[q]).max()
        assert np.abs(got - want).max() <= slack, tname
