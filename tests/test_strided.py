"""Strided layers of the model language (Spec/Front/Layers.agda) against PyTorch: the pooling
layers ``maxpool(a, k[, s])`` and ``avgpool(a, k[, s])`` (values and gradients at several
windows and strides, the floor mode that drops windows that do not fit, and a tie in a max
window, whose gradient goes to the first maximal position as in PyTorch's max-pooling), and
``conv2d`` with a stride."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import runtime  # noqa: E402

pytestmark = pytest.mark.agda


def _model(tmp_path, layer: str, C: int, H: int, W: int, k: int, s: int | None):
    """p = layer(x · w), loss = Σ p · r (r: a fixed random weighting of the outputs)."""
    Ho, Wo = (H - k) // (s or k) + 1, (W - k) // (s or k) + 1
    arg = f"{k}" if s is None else f"{k}, {s}"
    text = f"""model pool
input  x : {C}x{H}x{W}
param  w : {C}x{H}x{W}
param  r : {C}x{Ho}x{Wo}
a = x * w
output p = {layer}(a, {arg})
loss l = sum i : {C}x{Ho}x{Wo} . (p * r)[i]
"""
    path = tmp_path / f"pool_{layer}_{k}_{s}.model"
    path.write_text(text)
    return runtime.load(path, precision="f64"), (C, Ho, Wo)


def _torch(layer, x, w, r, k, s):
    wt = torch.tensor(w, requires_grad=True)
    a = torch.tensor(x) * wt
    f = F.max_pool2d if layer == "maxpool" else F.avg_pool2d
    p = f(a[None], k, stride=s or k)[0]
    (p * torch.tensor(r)).sum().backward()
    return p.detach().numpy(), wt.grad.numpy()


@pytest.mark.parametrize("layer", ["maxpool", "avgpool"])
@pytest.mark.parametrize("H, W, k, s", [(7, 5, 2, None), (14, 14, 3, None), (6, 6, 2, 1),
                                        (9, 8, 3, 2)])
def test_pooling_matches_pytorch(tmp_path, kernel_cache, layer, H, W, k, s):
    m, out = _model(tmp_path, layer, 2, H, W, k, s)
    rng = np.random.default_rng(H * 100 + W * 10 + k)
    x = rng.uniform(-1, 1, (2, H, W))
    w = rng.uniform(-1, 1, (2, H, W))
    r = rng.uniform(-1, 1, out)
    m.params["w"], m.params["r"] = w, r
    p_want, g_want = _torch(layer, x, w, r, k, s)
    p = m.run({"x": x[None]})[0]
    assert p.shape == p_want.shape == out
    np.testing.assert_allclose(p, p_want, rtol=1e-12, atol=1e-12)
    _, g = m.batch_gradients({"x": x[None]})
    np.testing.assert_allclose(g["w"], g_want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("k, s", [(2, None), (3, 1)])
def test_a_tie_in_a_max_window_sends_the_gradient_to_the_first_maximal_position(
        tmp_path, kernel_cache, k, s):
    m, out = _model(tmp_path, "maxpool", 1, 6, 6, k, s)
    x = np.ones((1, 6, 6))
    w = np.zeros((1, 6, 6))
    w[0, 0, 1] = w[0, 1, 0] = w[0, 1, 1] = 2.0  # a three-way tie in the first window
    w[0, 4, 4] = w[0, 5, 5] = 1.0                # and a tie of two later
    r = np.ones(out)
    m.params["w"], m.params["r"] = w, r
    _, g_want = _torch("maxpool", x, w, r, k, s)
    _, g = m.batch_gradients({"x": x[None]})
    np.testing.assert_array_equal(g["w"], g_want)
    if s is None:  # one window holds the tie: all of it to (0, 1), the first maximal position
        assert g["w"][0, 0, 1] == 1 and g["w"][0, 1, 0] == 0 and g["w"][0, 1, 1] == 0


def test_a_window_larger_than_the_input_is_rejected(tmp_path):
    from extract.front.frontend import ModelError
    path = tmp_path / "bad.model"
    path.write_text("model bad\ninput x : 4x4\nparam w : 4x4\na = x * w\n"
                    "loss l = sum i : 1 . maxpool(a, 5)[i]\n")
    with pytest.raises(ModelError, match=r"maxpool: the window 5×5 does not fit in the last two "
                                         r"dimensions 4×4"):
        runtime.load(path)


@pytest.mark.parametrize("H, W, P, s", [(7, 5, 1, 2), (8, 8, 0, 3)])
def test_a_strided_conv2d_matches_pytorch(tmp_path, kernel_cache, H, W, P, s):
    Ho, Wo = (H + 2 * P - 3) // s + 1, (W + 2 * P - 3) // s + 1
    path = tmp_path / "sconv.model"
    path.write_text(f"""model sconv
input  x : 2x{H}x{W}
param  k : 3x2x3x3
param  b : 3
param  r : 3x{Ho}x{Wo}
output c = conv2d(x, k, b, {P}, {s})
loss l = sum i : 3x{Ho}x{Wo} . (c * r)[i]
""")
    m = runtime.load(path, precision="f64")
    rng = np.random.default_rng(H + s)
    x, k, b = rng.uniform(-1, 1, (2, H, W)), rng.uniform(-1, 1, (3, 2, 3, 3)), rng.uniform(-1, 1, 3)
    r = rng.uniform(-1, 1, (3, Ho, Wo))
    m.params["k"], m.params["b"], m.params["r"] = k, b, r
    kt, bt = torch.tensor(k, requires_grad=True), torch.tensor(b, requires_grad=True)
    c = F.conv2d(torch.tensor(x)[None], kt, bt, stride=s, padding=P)[0]
    (c * torch.tensor(r)).sum().backward()
    np.testing.assert_allclose(m.run({"x": x[None]})[0], c.detach().numpy(), rtol=1e-12,
                               atol=1e-12)
    _, g = m.batch_gradients({"x": x[None]})
    np.testing.assert_allclose(g["k"], kt.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g["b"], bt.grad.numpy(), rtol=1e-12, atol=1e-12)
