"""Bad arguments raise ValueError with a clear message before any C code runs."""

import numpy as np
import pytest

import runtime
from runtime._kernels import Kernels
from test_runtime_cdouble import use_backend


@pytest.fixture
def model(monkeypatch):
    use_backend("double", monkeypatch)
    m = runtime.load("cnn")

    def no_c(self, name):
        raise AssertionError(f"C function {name} called despite invalid arguments")

    monkeypatch.setattr(Kernels, "fn", no_c)
    return m


def good(n=4):
    rng = np.random.default_rng(0)
    return rng.random((n, 28, 28), dtype=np.float32), rng.integers(0, 10, n)


def with_image(**change):
    x, _ = good()
    if "dtype" in change:
        x = x.astype(change["dtype"])
    if "shape" in change:
        x = np.zeros(change["shape"], dtype=np.float32)
    if "value" in change:
        x[1, 2, 3] = change["value"]
    return x


BAD_IMAGES = [
    (with_image(dtype=np.uint8), "float32.*uint8.*divide"),
    (with_image(dtype=np.float16), "float32"),
    (with_image(shape=(4, 784)), r"shape \(N, 28, 28\)"),
    (with_image(shape=(4, 28, 27)), r"shape \(N, 28, 28\)"),
    (with_image(shape=(0, 28, 28)), "empty"),
    (with_image(value=np.nan), "NaN or inf.*image 1"),
    (with_image(value=np.inf), "NaN or inf"),
    ([[0.0] * 28] * 28, "NumPy array"),
]

BAD_LABELS = [
    (np.array([0, 1, 2, 10]), r"0\.\.9.*10"),
    (np.array([0, -1, 2, 3]), r"0\.\.9.*-1"),
    (np.array([0.0, 1.0, 2.0, 3.0]), r"float targets must have shape \(4, 10\).*astype\(int\)"),
    (np.array([0, 1, 2]), r"shape \(4,\)"),
    (np.zeros((4, 1), dtype=np.int64), r"shape \(4,\)"),
]


@pytest.mark.parametrize("images,message", BAD_IMAGES)
def test_bad_images(model, images, message):
    _, y = good()
    for call in (
        lambda: model.train(images, y, progress=False),
        lambda: model.gradients(images, y),
        lambda: model.predict(images),
        lambda: model.evaluate(images, y),
    ):
        with pytest.raises(ValueError, match=message):
            call()


@pytest.mark.parametrize("labels,message", BAD_LABELS)
def test_bad_labels(model, labels, message):
    x, _ = good()
    for call in (
        lambda: model.train(x, labels, progress=False),
        lambda: model.gradients(x, labels),
        lambda: model.evaluate(x, labels),
    ):
        with pytest.raises(ValueError, match=message):
            call()


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"epochs": -1}, "epochs"),
        ({"epochs": 1.5}, "epochs"),
        ({"batch_size": 0}, "batch_size"),
        ({"lr": float("nan")}, "lr"),
        ({"lr": -0.1}, "lr"),
        ({"lr": "0.1"}, "lr"),
        ({"threads": 0}, "threads"),
        ({"test": (np.zeros((2, 28, 28), np.float32),)}, "pair"),
        ({"test": (np.zeros((2, 28, 28), np.float32), np.array([1, 12]))}, r"0\.\.9"),
        ({"callback": 3}, "callback"),
    ],
)
def test_bad_training_options(model, kwargs, message):
    x, y = good()
    with pytest.raises(ValueError, match=message):
        model.train(x, y, progress=False, **kwargs)


def test_bad_parameters(model):
    with pytest.raises(ValueError, match="shape"):
        model.set_params({**model.get_params(), "k1": np.zeros((6, 25), np.float32)})
    with pytest.raises(ValueError, match="finite"):
        model.set_params({**model.get_params(), "b": np.full(10, np.nan, np.float32)})
    with pytest.raises(ValueError, match=r"expected parameters \[.*\]: missing \['b', 'b1'"):
        model.set_params({"k1": model.params["k1"]})
    with pytest.raises(ValueError, match=r"\]: not the model's \['bias'\]$"):
        model.set_params({**model.get_params(), "bias": model.params["b"]})


def test_bad_load_arguments(tmp_path, monkeypatch):
    use_backend("double", monkeypatch)
    with pytest.raises(ValueError, match="unknown model"):
        runtime.load("lenet")
    with pytest.raises(ValueError, match="precision"):
        runtime.load("cnn", precision="f16")
    with pytest.raises(ValueError, match="init"):
        runtime.load("cnn", init="zeros")
    np.savez(tmp_path / "other.npz", k1=np.zeros((6, 5, 5)))  # read as a dict: one is there
    with pytest.raises(ValueError, match=r"other\.npz \(an \.npz without __meta__.*\): expected "
                                         r"parameters \['b', 'b1', 'b2', 'fc', 'k1', 'k2'\]: "
                                         r"missing \['b', 'b1', 'b2', 'fc', 'k2'\]$"):
        runtime.load("cnn", weights=tmp_path / "other.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a weights file"):
        runtime.load("cnn", weights=tmp_path / "junk.npz")


@pytest.mark.agda
def test_images_fill_a_flat_input_row_by_row(kernel_cache):
    """A model of flat input 784 (an MLP imported from PyTorch) takes 28 × 28 images as
    ``torch.flatten`` lays them out; an input of another layout of 784 still wants its own."""
    flat = """model flat
input  x : 784
target y : 10
param  w : 10x784
output z = dense(w, x)
loss l = sqerr(z, y)
"""
    rng = np.random.default_rng(0)
    m = runtime.load(flat, weights={"w": rng.normal(size=(10, 784))}, precision="f64")
    images = rng.uniform(size=(3, 28, 28))
    np.testing.assert_array_equal(m.predict(images), m.predict(images.reshape(3, 784)))
    np.testing.assert_allclose(m.predict(images), images.reshape(3, 784) @ m.params["w"].T,
                               rtol=1e-12)
    np.testing.assert_array_equal(m.predict(images), m.predict(images.reshape(3, 1, 28, 28)))
    with pytest.raises(ValueError, match=r"images must have shape \(N, 784\)"):
        m.predict(rng.uniform(size=(3, 14, 14, 4)))      # pixels of several channels: refused
    blocks = runtime.load(flat.replace("x : 784", "x : 4x196").replace("w : 10x784",
                                                                         "w : 10x4x196"))
    with pytest.raises(ValueError, match=r"images must have shape \(N, 4, 196\)"):
        blocks.predict(images.astype(np.float32))
