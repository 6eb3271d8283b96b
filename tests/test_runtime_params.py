"""``Model.params``: a fixed mapping of live views; assigning copies into the C buffer."""

from __future__ import annotations

import numpy as np
import pytest

import runtime
from test_runtime_cdouble import use_backend


@pytest.fixture(params=["generated", "double"])
def backend(request, monkeypatch):
    use_backend(request.param, monkeypatch)
    return request.param


def images(n=8, seed=0):
    return np.random.default_rng(seed).random((n, 28, 28), dtype=np.float32)


def test_assignment_reaches_the_kernels(backend):
    m = runtime.load("cnn", init="random", seed=1)
    x = images()
    before = m.predict(x)
    view_k1, view_b = m.params["k1"], m.params["b"]
    new = runtime.init_params("cnn", "random", seed=7, precision="f64")  # float64: cast
    m.params["k1"] = new["k1"]
    m.params["b"] = new["b"].tolist()  # any array-like of floats
    assert not np.allclose(m.predict(x), before)
    # the same predictions as a model loaded with those weights
    want = {**runtime.load("cnn", init="random", seed=1).get_params(),
            "k1": new["k1"], "b": new["b"]}
    ref = runtime.load("cnn", weights=want, precision="f32")
    np.testing.assert_array_equal(m.predict(x), ref.predict(x))
    # the views stay the views of the C buffer, now holding the new values
    assert m.params["k1"] is view_k1 and m.params["b"] is view_b
    assert not view_k1.flags.owndata
    np.testing.assert_array_equal(view_k1, new["k1"].astype(np.float32))
    # and training still updates the same arrays in place
    y = np.arange(8) % 10
    m.train(x, y, epochs=1, batch_size=4, threads=1, progress=False, eval_train=False)
    assert m.params["k1"] is view_k1
    assert not np.array_equal(view_k1, new["k1"].astype(np.float32))


def test_assignment_is_checked(backend):
    m = runtime.load("cnn")
    keep = m.get_params()
    b = m.params["b"]
    cases = [
        (np.zeros((10, 1), np.float32), ValueError, r"parameter b must have shape \(10,\), got "
                                                    r"\(10, 1\)"),
        (np.float32(0.5), ValueError, r"must have shape \(10,\), got \(\)"),  # no broadcasting
        (np.zeros(11, np.float32), ValueError, "shape"),
        (np.arange(10), ValueError, "floating point, got dtype int64.*not converted"),
        (np.ones(10, bool), ValueError, "got dtype bool"),
        (np.ones(10, complex), ValueError, "got dtype complex128"),
        (np.full(10, np.nan), ValueError, "finite.*NaN or inf"),
        (np.full(10, -np.inf, np.float32), ValueError, "NaN or inf"),
        (np.full(10, 1e300), ValueError, "too large for f32"),
    ]
    for value, error, message in cases:
        with pytest.raises(error, match=message):
            m.params["b"] = value
        np.testing.assert_array_equal(m.params["b"], keep["b"])  # untouched
    with pytest.raises(KeyError, match="no parameter 'bias'; the model has k1, b1, k2, b2, fc, b"):
        m.params["bias"] = np.zeros(10, np.float32)
    with pytest.raises(KeyError, match="bias"):
        m.params["bias"]
    with pytest.raises(TypeError):
        del m.params["b"]
    assert list(m.params) == ["k1", "b1", "k2", "b2", "fc", "b"] and len(m.params) == 6
    assert "b" in m.params and "bias" not in m.params
    assert m.params["b"] is b


def test_set_params_is_all_or_nothing(backend):
    m = runtime.load("cnn")
    keep = m.get_params()
    new = runtime.init_params("cnn", "random", seed=3)
    new["fc"] = new["fc"].astype(np.int32)  # the last one is bad
    with pytest.raises(ValueError, match="parameter fc"):
        m.set_params(new)
    for n, a in keep.items():
        np.testing.assert_array_equal(m.params[n], a)  # not even k1 was copied
