"""runtime.torch: a model's generated kernels as a torch.nn.Module (forward, the
vector-Jacobian product through derived models, shared parameter memory, PyTorch's optimizers,
schedulers, DataLoader and state_dict)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import runtime  # noqa: E402
import runtime.torch as rt  # noqa: E402
from runtime import _vjp  # noqa: E402

TINY = """model tiny
input  x : 3x4
target y : 2
param  w : 5x3x4
param  b : 5
param  v : 2x5
z = dense(w, x, b)
h = logistic(z)
output o = dense(v, h)
loss loss = sqerr(o, y)
"""


@pytest.fixture(scope="module")
def tiny64():
    return rt.Module(TINY, precision="f64")


def _params(net):
    return [net._parameters[n] for n in net._trained]


def test_vjp_model_keeps_the_outputs_ancestors_only():
    d = _vjp.vjp_model((runtime.DEFAULT_DATA.parent.parent / "models" / "lenet5.model")
                       .read_text(), "x", "z5", (10,), wrt_input=True)
    names = [s.name for s in _vjp.statements(d.text)]
    assert "y" not in names and "m" not in names and "se" not in names and "loss" not in names
    assert names[:2] == ["lenet5_vjpx", "x_in"] and "x" in names
    assert d.text.splitlines()[-1] == "loss vjp_ = sum i : 10 . z5[i] * g_z5[i]"
    assert d.input_grad == "d_x"


def test_gradcheck_inputs_and_parameters_f64(tiny64):
    torch.manual_seed(0)
    x = torch.randn(5, 3, 4, dtype=torch.float64, requires_grad=True)
    f = lambda x, *ps: rt._Run.apply(tiny64, False, x, *ps)  # noqa: E731
    assert torch.autograd.gradcheck(f, (x, *_params(tiny64)))             # the per-sample path
    assert torch.autograd.gradcheck(f, (x.detach(), *_params(tiny64)))    # the batch path


def test_forward_is_the_prediction_and_backward_matches_autograd(tiny64):
    torch.manual_seed(1)
    x = torch.randn(7, 3, 4, dtype=torch.float64)
    out = tiny64(x)
    assert np.array_equal(out.detach().numpy(), tiny64.model.predict(x.numpy()))
    p = {n: t.detach().clone().requires_grad_() for n, t in tiny64.named_parameters()}
    ref = torch.sigmoid(torch.einsum("ok,nk->no", p["w"].reshape(5, 12), x.reshape(7, 12))
                        + p["b"]) @ p["v"].T
    g = torch.randn_like(ref)
    tiny64.zero_grad()
    out.backward(g)
    ref.backward(g)
    for n, t in tiny64.named_parameters():
        assert torch.allclose(t.grad, p[n].grad, rtol=1e-12, atol=1e-14), n


def test_backward_after_another_forward_packs_its_own_input(tiny64):
    """Backward reuses the features its forward packed only while no other forward has come
    between: here the second forward's features are in the buffer when the first backward
    runs."""
    torch.manual_seed(6)
    x1, x2 = torch.randn(4, 3, 4, dtype=torch.float64), torch.randn(4, 3, 4, dtype=torch.float64)
    tiny64.zero_grad()
    tiny64(x1).sum().backward()
    ref = {n: t.grad.clone() for n, t in tiny64.named_parameters()}
    tiny64.zero_grad()
    out1 = tiny64(x1)
    tiny64(x2)
    out1.sum().backward()
    for n, t in tiny64.named_parameters():
        assert torch.equal(t.grad, ref[n]), n


class _Calls:
    """A Kernels stand-in that records which entry points run."""

    def __init__(self, k):
        self.k, self.names = k, []

    def fn(self, name):
        self.names.append(name)
        return self.k.fn(name)

    def __getattr__(self, attr):
        return getattr(self.k, attr)


def test_backward_reads_the_values_its_forward_kept(monkeypatch):
    """A training step runs the forward once: M_batch_forward keeps each group's values and
    M_batch_backward reads them (no M_batch_grad); the gradients are M_batch_grad's, bitwise,
    at 1 and 3 threads and over a batch with a shared last group. Under no_grad the forward
    keeps nothing, and such a forward in between leaves the tape; a later keeping forward makes
    an earlier one's backward compute its own."""
    net = rt.Module(TINY, precision="f64")
    calls = _Calls(net._core.k)
    monkeypatch.setattr(net._core, "k", calls)

    def step(x, g, between=None):
        """(the batch entry points a forward, ``between`` and the backward ran, the grads)."""
        calls.names.clear()
        net.zero_grad()
        out = net(x)
        if between is not None:
            between()
        (out * g).sum().backward()
        return ([c for c in calls.names if c.startswith("batch_")],
                {k: t.grad.clone() for k, t in net.named_parameters()})

    def no_grad_forward(x):
        with torch.no_grad():   # keeps nothing, and packs its own input over x
            net(x)

    torch.manual_seed(7)
    for threads, n in ((1, 13), (3, 37), (2, 20)):
        net.threads = threads
        x = torch.randn(n, 3, 4, dtype=torch.float64)
        g = torch.randn(n, 2, dtype=torch.float64)
        ran, kept = step(x, g)
        assert ran == ["batch_forward", "batch_backward"], ran
        for between, want in (
                # another keeping forward: the first one's values are gone
                (lambda: net(x + 1), ["batch_forward", "batch_forward", "batch_grad"]),
                (lambda: no_grad_forward(x - 1),
                 ["batch_forward", "batch_predict", "batch_backward"])):
            ran, grads = step(x, g, between)
            assert ran == want, ran
            for k, t in grads.items():
                assert torch.equal(t, kept[k]), (threads, n, k)


@pytest.mark.parametrize("text, weights, change, match", [
    # the kept values are of the weights at the forward: autograd refuses the backward after
    # an in-place change, as it does for PyTorch's own layers
    (TINY, None, "w", "modified by an inplace operation"),
    # a const is a buffer, not an argument autograd versions: backward checks it itself
    (TINY.replace("param  v : 2x5", "param  v : 2x5\nconst  c : 5")
     .replace("h = logistic(z)", "h = logistic(z + c)"),
     {"c": np.full(5, 0.5)}, "c", "the const c of tiny was modified in place")])
def test_a_weight_changed_between_forward_and_backward_is_refused(text, weights, change, match):
    net = rt.Module(text, precision="f64", weights=weights)
    out = net(torch.randn(4, 3, 4, dtype=torch.float64))
    with torch.no_grad():
        getattr(net, change).add_(1.0)
    with pytest.raises(RuntimeError, match=match):
        out.sum().backward()


def test_parameters_share_the_c_buffers(tiny64):
    m = tiny64.model
    for n, t in tiny64.named_parameters():
        assert t.data_ptr() == m.params[n].ctypes.data
    opt = torch.optim.SGD(tiny64.parameters(), lr=0.1)
    before = m.params["w"].copy()
    tiny64(torch.randn(3, 3, 4, dtype=torch.float64)).sum().backward()
    opt.step()
    assert not np.array_equal(m.params["w"], before)
    assert np.array_equal(m.params["w"], tiny64.w.detach().numpy())
    assert tiny64.w.data_ptr() == m.params["w"].ctypes.data


def test_state_dict_round_trip(tiny64):
    sd = {k: v.clone() for k, v in tiny64.state_dict().items()}
    assert set(sd) == {"w", "b", "v"}
    with torch.no_grad():
        tiny64.w.add_(1.0)
    tiny64.load_state_dict(sd)
    assert np.array_equal(tiny64.model.params["w"], sd["w"].numpy())
    assert tiny64.w.data_ptr() == tiny64.model.params["w"].ctypes.data


def test_wrong_device_dtype_and_conversions_are_clear_errors(tiny64):
    with pytest.raises(TypeError, match="CPU"):
        tiny64(torch.empty(2, 3, 4, dtype=torch.float64, device="meta"))
    with pytest.raises(TypeError, match="float64"):
        tiny64(torch.zeros(2, 3, 4, dtype=torch.float32))
    with pytest.raises(ValueError, match="12 elements"):
        tiny64(torch.zeros(2, 5, dtype=torch.float64))
    with pytest.raises(TypeError, match="cannot move"):
        tiny64.float()
    tiny64.double()  # already: nothing to do
    with pytest.raises(RuntimeError, match="shares the C buffer"):
        saved = tiny64.b.data
        tiny64.b.data = saved.clone()
        try:
            tiny64(torch.zeros(2, 3, 4, dtype=torch.float64))
        finally:
            tiny64.b.data = saved


def test_beside_pytorch_modules_in_a_sequential(tiny64):
    torch.manual_seed(2)
    seq = nn.Sequential(nn.Linear(6, 12, dtype=torch.float64), nn.Unflatten(1, (3, 4)),
                        tiny64, nn.Tanh())
    x = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(seq, (x,))
    seq(x).sum().backward()
    assert seq[0].weight.grad is not None and tiny64.w.grad is not None


def test_a_built_in_model_takes_the_zoos_file_and_shares_a_loaded_models_weights():
    m = runtime.load("cnn", seed=7)
    net = rt.Module(m)
    assert net.model is m and net.k1.data_ptr() == m.params["k1"].ctypes.data
    x = runtime.load_mnist(runtime.DEFAULT_DATA, "test")[0][:8]
    assert np.array_equal(net(torch.from_numpy(x)).detach().numpy(), m.predict(x))
    with pytest.raises(ValueError, match="no load arguments"):
        rt.Module(m, precision="f64")


def test_loss_entry_point_is_the_models_gradient(tiny64):
    x = np.random.default_rng(3).standard_normal((6, 3, 4))
    y = np.array([0, 1, 1, 0, 1, 0])
    tiny64.zero_grad()
    loss = tiny64.loss(torch.from_numpy(x), torch.from_numpy(y))
    loss.backward()
    ref_loss, ref = tiny64.model.loss_and_gradients(x, y)
    assert loss.item() == ref_loss
    for n, t in tiny64.named_parameters():
        assert np.array_equal(t.grad.numpy(), ref[n])
    with pytest.raises(ValueError, match="no gradient with respect to x"):
        tiny64.loss(torch.from_numpy(x).requires_grad_(), torch.from_numpy(y))


def test_optimizer_scheduler_and_dataloader_float32():
    net = rt.Module(TINY, precision="f32", seed=4)
    assert all(p.dtype == torch.float32 for p in net.parameters())
    rng = np.random.default_rng(5)
    x = torch.from_numpy(rng.standard_normal((64, 3, 4)).astype(np.float32))
    y = torch.from_numpy(rng.integers(0, 2, 64))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=16,
                                         shuffle=True)
    opt = torch.optim.Adam(net.parameters(), lr=0.05)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=5 * len(loader))
    first = None
    for _ in range(5):
        total = 0.0
        for xb, yb in loader:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(net(xb), yb)
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item()
        first = first if first is not None else total
    assert total < first
    # the model trained in C memory: its own predictions are the module's
    assert np.array_equal(net.model.predict(x.numpy()), net(x).detach().numpy())


@pytest.mark.parametrize("precision", ["f32", "f64"])
def test_lenet5_one_epoch_module_with_torch_adam_equals_the_generated_adam(precision):
    """LeNet-5, one epoch over 1,000 MNIST images at batch 100: through Module with
    torch.optim.Adam and a cosine schedule (stepped per batch), and through Model.train with
    the generated Adam and the same schedule, from the same weights: they agree to 1e-5
    (relative, in norm, every parameter)."""
    zoo = runtime.DEFAULT_DATA.parent.parent / "models" / "lenet5.model"
    x, y = runtime.load_mnist(runtime.DEFAULT_DATA, "train")
    dtype = np.float32 if precision == "f32" else np.float64
    x, y = x[:1000].astype(dtype), y[:1000]
    steps = 10
    net = rt.Module(zoo, precision=precision, seed=0, threads=1)
    ref = runtime.load(zoo, precision=precision, seed=0)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    for s in range(0, 1000, 100):
        opt.zero_grad()
        logits = net(torch.from_numpy(x[s : s + 100]))
        nn.functional.cross_entropy(logits, torch.from_numpy(y[s : s + 100])).backward()
        opt.step()
        sched.step()
    ref.train(x, y, epochs=1, batch_size=100, lr=1e-3, threads=1, progress=False,
              eval_train=False, optimizer="adam", schedule="cosine")
    moved = 0.0
    for n in ref.spec.trained:
        a, b = net.model.params[n], ref.params[n]
        err = np.linalg.norm(a - b) / np.linalg.norm(b)
        assert err <= 1e-5, (n, err)
        moved = max(moved, np.linalg.norm(b - runtime.load(zoo, precision=precision, seed=0)
                                          .params[n]) / np.linalg.norm(b))
    assert moved > 1e-3  # the epoch did train
