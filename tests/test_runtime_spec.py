"""Everything model-specific the runtime uses comes from the dump (runtime.spec): parameter
shapes, fan-ins (declared, or by the fallback rule), the SaC constants, features/target and
outputs; the checks of images and labels follow them; a dump without ``data`` loads but
cannot train."""

from __future__ import annotations

import json

import numpy as np
import pytest

import runtime
from runtime.spec import leaves, model_spec, spec_from_dump
from runtime.weights import init_params, sac_constants
from test_runtime_cdouble import (
    cnn_dump_variant,
    generated_dump_of,
    use_backend,
    use_double_for_any_dump,
)

CNN_SHAPES = {"k1": (6, 5, 5), "b1": (6,), "k2": (12, 6, 5, 5), "b2": (12,),
              "fc": (10, 12, 1, 4, 4), "b": (10,)}
CNN_FAN_IN = {"k1": 25, "b1": 25, "k2": 150, "b2": 150, "fc": 192, "b": 192}
# the SaC reference's constants (paper): every element of each parameter is this value
CNN_SAC = {"k1": 1 / 25, "b1": 1 / 6, "k2": 1 / 150, "b2": 1 / 12, "fc": 1 / 192, "b": 1 / 10}


def test_leaves_flatten_shape_trees():
    assert leaves(7) == (7,)
    assert leaves([6, [5, 5]]) == (6, 5, 5)
    assert leaves([[2, 3], [4, [1, 5]]]) == (2, 3, 4, 1, 5)
    for bad in (-1, True, [1, 2, 3], "5", None):
        with pytest.raises(ValueError, match="not a shape"):
            leaves(bad)


@pytest.mark.parametrize("new_keys", [False, True], ids=["without-new-keys", "with-new-keys"])
def test_cnn_spec_from_the_dump(tmp_path, new_keys):
    """The same CNN description whether or not the dump carries fan_in and data."""
    spec = model_spec(cnn_dump_variant(tmp_path, new_keys))
    assert spec.name == "cnn"
    assert list(spec.param_shapes) == list(CNN_SHAPES)  # context order
    assert spec.param_shapes == CNN_SHAPES
    assert spec.fan_in == CNN_FAN_IN
    if new_keys:
        assert spec.features == "inp" and spec.target == "target"
        assert spec.input_shape == (28, 28) and spec.n_classes == 10
    else:  # no `data`: the runtime does not guess which input is which
        assert spec.features is None and spec.target is None and not spec.has_data
    assert spec.prediction == "r" and spec.loss == "loss"
    assert spec.output_shape == (10, 1, 1, 1, 1)
    assert spec.input_shapes == {"target": (10, 1, 1, 1, 1), "inp": (28, 28)}


@pytest.mark.parametrize("new_keys", [False, True], ids=["without-new-keys", "with-new-keys"])
def test_sac_constants_of_the_cnn_are_the_papers(tmp_path, new_keys):
    spec = model_spec(cnn_dump_variant(tmp_path, new_keys))
    assert sac_constants(spec) == CNN_SAC  # exactly, not approximately
    params = init_params(spec, "sac", precision="f64")
    for n, value in CNN_SAC.items():
        assert params[n].shape == CNN_SHAPES[n]
        assert np.all(params[n] == value), n


def test_builtin_cnn_spec():
    spec = model_spec("cnn")
    assert spec.param_shapes == CNN_SHAPES and spec.fan_in == CNN_FAN_IN
    assert sac_constants("cnn") == CNN_SAC
    assert spec.input_shape == (28, 28) and spec.n_classes == 10


def _dump(context, chain=(), outputs=None, data=None):
    d = {"format": "ad-expression-dump", "version": 1, "model": "m", "generator": "test",
         "context": list(context), "chain": list(chain), "seed": {}, "gradients": []}
    if outputs is not None:
        d["outputs"] = outputs
    if data is not None:
        d["data"] = data
    return d


def _param(name, shape, **kw):
    return {"name": name, "shape": shape, "role": "param", **kw}


def test_fan_in_fallback_rules():
    spec = spec_from_dump(_dump([
        _param("lead", 4),                # rank 1, no rank >= 2 before it: 1
        {"name": "x", "shape": [3, 3], "role": "input"},
        _param("w", [8, [3, 3]]),         # rank >= 2: 72 / 8
        _param("bw", 8),                  # rank 1: the preceding rank >= 2 parameter's
        _param("v", [2, [5, 7]], fan_in=11),  # declared: wins
        _param("bv", 2),                  # follows the declared fan-in
        _param("u", [3, 4]),              # 12 / 3
        _param("bu", 3, fan_in=5),        # declared on a rank-1 parameter
    ]))
    assert spec.fan_in == {"lead": 1, "w": 9, "bw": 9, "v": 11, "bv": 11, "u": 4, "bu": 5}
    # sac: 1/fan_in for rank >= 2, 1/length for rank 1 (a declared fan-in does not change that)
    assert sac_constants(spec) == {"lead": 1 / 4, "w": 1 / 9, "bw": 1 / 8, "v": 1 / 11,
                                   "bv": 1 / 2, "u": 1 / 4, "bu": 1 / 3}
    for bad in (0, -3, 2.5, True, "25"):
        with pytest.raises(ValueError, match="fan_in must be a positive integer"):
            spec_from_dump(_dump([_param("w", [2, 2], fan_in=bad)]))


def test_random_init_uses_the_declared_fan_in(tmp_path):
    path = cnn_dump_variant(tmp_path, True)
    data = json.loads(path.read_text())
    for c in data["context"]:
        if c["name"] in ("k1", "b1"):
            c["fan_in"] = 4  # bound 1/2 instead of 1/5
    path.write_text(json.dumps(data))
    p = init_params(model_spec(path), "random", seed=0, precision="f64")
    for n in ("k1", "b1"):
        assert 0.25 < np.abs(p[n]).max() <= 0.5, n
    assert np.abs(p["k2"]).max() <= 1 / np.sqrt(150)


def test_he_init_is_normal_of_variance_two_over_fan_in_and_zero_for_vectors(tmp_path):
    """init="he": every parameter of rank >= 2 from N(0, 2/fan_in) (the declared fan-in), every
    rank-1 parameter zero; drawn from the seed; an unknown init is refused naming the three."""
    path = cnn_dump_variant(tmp_path, True)
    spec = model_spec(path)
    p = init_params(spec, "he", seed=0, precision="f64")
    for n, v in p.items():
        if v.ndim >= 2:
            # the sample standard deviation of k elements is within 4/sqrt(2k) of sigma, relatively
            sigma = np.sqrt(2 / spec.fan_in[n])
            assert abs(v.std() / sigma - 1) < 4 / np.sqrt(2 * v.size), (n, v.std(), sigma)
            assert abs(v.mean()) < 4 * sigma / np.sqrt(v.size), n
        else:
            assert not v.any(), n
    assert all((init_params(spec, "he", seed=0, precision="f64")[n] == v).all()
               for n, v in p.items())
    assert not (init_params(spec, "he", seed=1, precision="f64")["k2"] == p["k2"]).all()
    with pytest.raises(ValueError, match="init must be one of 'random', 'sac', 'he', not 'kaiming'"):
        init_params(spec, "kaiming")


def test_declared_data_wins_and_is_checked(tmp_path):
    path = cnn_dump_variant(tmp_path, True, data={"features": "target", "target": "inp"})
    spec = model_spec(path)
    assert (spec.features, spec.input_shape, spec.n_classes) == ("target", (10, 1, 1, 1, 1), 784)
    bad = cnn_dump_variant(tmp_path, True, name="bad.json",
                           data={"features": "image", "target": "target"})
    with pytest.raises(ValueError, match=r"bad\.json.*data\.features names 'image'.*inputs: "
                                         r"target, inp"):
        model_spec(bad)
    with pytest.raises(ValueError, match="bad.json.*data must be"):
        model_spec(cnn_dump_variant(tmp_path, True, name="bad.json", data=["inp", "target"]))
    # naming only the features: loads, but is not trainable
    half = model_spec(cnn_dump_variant(tmp_path, True, name="half.json",
                                       data={"features": "inp"}))
    assert half.features == "inp" and half.target is None and not half.has_data
    assert half.input_shape == (28, 28) and half.n_classes is None


def test_half_declared_data_loads_but_does_not_train(tmp_path, monkeypatch):
    use_double_for_any_dump(monkeypatch)
    m = runtime.load(cnn_dump_variant(tmp_path, True, data={"target": "target"}))
    x, y = runtime.load_mnist(runtime.DEFAULT_DATA, "test", 4)
    with pytest.raises(ValueError, match="declares no features/target"):
        m.train(x, y, progress=False)
    with pytest.raises(ValueError, match="declares no features/target"):
        m.predict(x)
    with pytest.raises(ValueError, match=r"\(it needs a \"data\" entry naming both; its inputs: "
                                         r"target, inp\)"):
        m.evaluate(x, y)
    loss, g = m.batch_gradients({"inp": x, "target": np.eye(10)[y].reshape(4, 10, 1, 1, 1, 1)})
    ref = runtime.load("cnn")
    ref_loss, ref_g = ref.loss_and_gradients(x, y)
    assert loss == ref_loss
    for n in g:
        np.testing.assert_array_equal(g[n], ref_g[n])


def test_load_forms_and_their_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown model 'lenet'.*cnn"):
        model_spec("lenet")
    with pytest.raises(ValueError, match="unknown model"):
        model_spec("some/dir/cnn")
    with pytest.raises(FileNotFoundError, match="missing.json"):
        model_spec(tmp_path / "missing.json")
    (tmp_path / "junk.json").write_text("{not json")
    with pytest.raises(ValueError, match="junk.json: not JSON"):
        model_spec(tmp_path / "junk.json")
    (tmp_path / "other.json").write_text('{"format": "something-else"}')
    with pytest.raises(ValueError, match="other.json: not an expression dump"):
        model_spec(tmp_path / "other.json")
    dot = generated_dump_of("dot")
    with pytest.raises(ValueError, match="dump of model 'dot', not 'cnn'"):
        model_spec("cnn", dump=dot)
    assert model_spec("dot", dump=dot).kernels_dump == dot
    assert model_spec(str(dot)).name == "dot"


@pytest.mark.agda
def test_a_model_or_a_dump_given_as_text():
    """runtime.load(text): a model file's text is compiled, a dump's JSON is read, as the files
    would be (before, either was taken for a built-in name: OSError, file name too long)."""
    from extract.emit.build import ROOT
    text = (ROOT / "models" / "mlp.model").read_text()
    spec = model_spec(text)
    assert spec.name == "mlp" and spec.param_shapes == model_spec("mlp").param_shapes
    dumped = spec.kernels_dump.read_text()
    assert model_spec(dumped).param_shapes == spec.param_shapes
    with pytest.raises(ValueError, match="<dump text>: not JSON"):
        model_spec(dumped[:-10] + "}")
    with pytest.raises(ValueError, match="<dump text>: not an expression dump"):
        model_spec('{"format": "other"}')
    assert model_spec(json.loads(dumped)).param_shapes == spec.param_shapes   # a decoded dump


def test_a_path_with_braces_is_a_path(tmp_path, monkeypatch):
    """Only a string of several lines, or one from ``{`` to ``}``, is a model's text."""
    dot = generated_dump_of("dot")
    (tmp_path / "{run1}").mkdir()
    (tmp_path / "{run1}" / "dot.json").write_text(dot.read_text())
    monkeypatch.chdir(tmp_path)
    assert model_spec("{run1}/dot.json").name == "dot"
    (tmp_path / "mine.model").write_text("model mine\n")
    with pytest.raises(ValueError, match="unknown model 'mine'.*did you mean the file mine.model"):
        model_spec("mine")
    (tmp_path / "mine.txt").write_text("model mine\n")  # a model file by another name
    with pytest.raises(ValueError, match=r"mine\.txt: a model file's name ends in \.model"):
        model_spec("mine.txt")
    np.savez(tmp_path / "w.npz", a=np.zeros(2))  # weights given for the model, say
    with pytest.raises(ValueError, match=r"w\.npz: not a model \(a binary file: weights\?"):
        model_spec("w.npz")


def test_checks_follow_the_dump_feature_shape(tmp_path, monkeypatch):
    """A CNN dump whose image input is declared flat (784) takes (N, 784) images, and (N, 28,
    28) ones row by row (as torch.flatten lays them out); the 28 × 28 input rejects flat images
    with a message that gives the dump's shape; same predictions."""
    use_double_for_any_dump(monkeypatch)
    path = cnn_dump_variant(tmp_path, True)
    data = json.loads(path.read_text())
    next(c for c in data["context"] if c["name"] == "inp")["shape"] = 784
    flat = tmp_path / "flat.json"
    flat.write_text(json.dumps(data))
    m = runtime.load(flat, init="random")
    ref = runtime.load(path, init="random")
    assert m.input_shape == (784,) and ref.input_shape == (28, 28)
    x, y = runtime.load_mnist(runtime.DEFAULT_DATA, "test", 6)
    np.testing.assert_array_equal(m.predict(x), m.predict(x.reshape(6, 784)))
    with pytest.raises(ValueError, match=r"images must have shape \(N, 28, 28\), got \(6, 784\)"):
        ref.predict(x.reshape(6, 784))
    p = m.predict(x.reshape(6, 784))
    np.testing.assert_array_equal(p, ref.predict(x))
    assert not np.allclose(p[0], p[1])  # the images did reach the kernels
    assert m.evaluate(x.reshape(6, 784), y) == ref.evaluate(x, y)


def test_labels_follow_the_dump_class_count(tmp_path, monkeypatch):
    """With data declared the other way round (features = the 10-element target input), there
    are 784 classes: label 783 is accepted, 784 is not."""
    use_double_for_any_dump(monkeypatch)
    path = cnn_dump_variant(tmp_path, True, data={"features": "target", "target": "inp"})
    m = runtime.load(path)
    assert m.n_classes == 784
    x = np.full((2, 10, 1, 1, 1, 1), 0.5, np.float32)
    m.gradients(x, np.array([0, 783]))
    with pytest.raises(ValueError, match=r"0\.\.783, found 784"):
        m.gradients(x, np.array([0, 784]))


def test_model_attributes_come_from_the_dump(monkeypatch):
    use_backend("double", monkeypatch)
    m = runtime.load("cnn")
    assert m.name == "cnn" and m.param_shapes == CNN_SHAPES and m.fan_in == CNN_FAN_IN
    assert m.input_shape == (28, 28) and m.n_classes == 10
    assert m.output_shape == (10, 1, 1, 1, 1) and m.prediction == "r" and m.loss == "loss"
    assert m.features == "inp" and m.target == "target"


def test_dump_without_data_loads_but_does_not_train(tmp_path):
    """The ``dot`` model (an input ``seed``, parameters a and b, r = sum a*b; no data, no
    outputs) loads on the generated kernels; batch_gradients works (d r/d a = seed * b) while
    train, predict, evaluate and gradients say that the model declares no features/target."""
    m = runtime.load(generated_dump_of("dot"), init="random", precision="f64")
    assert m.name == "dot" and m.input_shape is None and m.n_classes is None
    assert m.param_shapes == {"a": (5,), "b": (5,)}
    x = np.zeros((3, 1, 1), np.float32)
    y = np.zeros(3, np.int64)
    for call in (lambda: m.train(x, y, progress=False), lambda: m.predict(x),
                 lambda: m.evaluate(x, y), lambda: m.gradients(x, y)):
        with pytest.raises(ValueError, match="declares no features/target"):
            call()
    seed = np.array([[1.0], [2.0], [3.0]])
    loss, g = m.batch_gradients({"seed": seed}, threads=1)
    assert loss is None
    np.testing.assert_allclose(g["a"], 2.0 * m.params["b"], rtol=1e-12)
    np.testing.assert_allclose(g["b"], 2.0 * m.params["a"], rtol=1e-12)
    with pytest.raises(ValueError, match=r"inputs must be exactly \['seed'\]"):
        m.batch_gradients({})
    with pytest.raises(ValueError, match=r"input seed must have shape \(N, 1\)"):
        m.batch_gradients({"seed": np.ones((3, 2))})


def test_an_edited_dump_file_gets_new_kernels(tmp_path):
    """Kernels of a dump file are cached by its content, not its path alone: rewriting the file
    with another model of the same name and loading it again gives that model's kernels."""
    path = tmp_path / "m.json"
    chain = json.loads(generated_dump_of("chain").read_text())
    path.write_text(json.dumps(chain))
    first = runtime.load(path, precision="f64")
    assert first.name == "chain" and first.input_shapes == {}
    dot = json.loads(generated_dump_of("dot").read_text())
    dot["model"] = "chain"  # same name, other content
    path.write_text(json.dumps(dot))
    second = runtime.load(path, precision="f64", init="random")
    assert second.input_shapes == {"seed": (1,)}
    _, g = second.batch_gradients({"seed": np.ones((2, 1))}, threads=1)
    np.testing.assert_allclose(g["a"], second.params["b"], rtol=1e-12)
