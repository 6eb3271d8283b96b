"""The model language (docs/model-format.md), elaborated in Agda by ``build/agda/Main model``.

Layers: the zoo's model files elaborate (the paper's CNN to exactly the hand-written chain's
dump); ill-shaped models are rejected with one line naming the line, the binding and the
shapes; every zoo model's generated C equals the oracle, and its dumped gradients equal
PyTorch autograd on an independent PyTorch version of the model (float32) and finite
differences of the dumped loss (float64).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import oracle
from conftest import DTYPES, rel_err, run_single, spec_main
from extract.emit import build
from extract.ir import dump
from extract.emit.sources import generate

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"
ZOO = sorted(p.stem for p in MODELS.glob("*.model"))

pytestmark = pytest.mark.agda


@pytest.fixture(scope="module")
def main() -> Path:
    return spec_main()


def elaborate(main: Path, text: str, name: str = "m.model") -> subprocess.CompletedProcess:
    """Run ``Main model -`` on a model text."""
    return subprocess.run([str(main), "model", "-"], input=text, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture(scope="module")
def zoo(main) -> dict[str, dict]:
    out = {}
    for name in ZOO:
        r = subprocess.run([str(main), "model", str(MODELS / f"{name}.model")],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        out[name] = json.loads(r.stdout)
    return out


# ------------------------------------------------------------------------------------------
# Elaboration


def test_zoo_is_there():
    assert {"cnn", "mlp", "lenet5"} <= set(ZOO)


def test_lenet5_shapes_as_the_issue_asks(zoo):
    d = zoo["lenet5"]
    params = [(c["name"], oracle.leaves(c["shape"])) for c in d["context"] if c["role"] == "param"]
    assert params == [("k1", (6, 5, 5)), ("b1", (6,)), ("k2", (16, 6, 5, 5)), ("b2", (16,)),
                      ("w3", (120, 16, 5, 5)), ("b3", (120,)), ("w4", (84, 120)), ("b4", (84,)),
                      ("w5", (10, 84)), ("b5", (10,))]
    shapes = {b["name"]: oracle.leaves(b["shape"]) for b in d["chain"]}
    assert shapes["z1"] == (6, 28, 28) and shapes["p1"] == (6, 14, 14)     # padded by 2
    assert shapes["z2"] == (16, 10, 10) and shapes["p2"] == (16, 5, 5)


def test_cnn_model_file_is_the_text_agda_elaborates_to_the_chain():
    """Spec/Front/Examples.agda proves by refl that its literal cnn-text elaborates to
    CNN.chain as a term; that literal is models/cnn.model, comments and all."""
    agda = (ROOT / "Spec" / "Front" / "Examples.agda").read_text()
    start = agda.index('cnn-text = "\n') + len('cnn-text = "\n')
    literal = agda[start : agda.index('"', start)]
    assert literal == (MODELS / "cnn.model").read_text()
    assert ("cnn-elaborates : chain-of (elaborate cnn-text) ≡ just (_ , CNN.chain)\n"
            "cnn-elaborates = refl") in agda


def test_cnn_model_file_is_the_hand_written_chain(main, zoo):
    """models/cnn.model and Spec/Model/CNN.agda print the same dump, to the last node."""
    r = subprocess.run([str(main), "dump", "cnn"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0
    assert zoo["cnn"] == json.loads(r.stdout)


@pytest.mark.parametrize("name", ZOO)
def test_zoo_dumps_validate(zoo, name):
    d = zoo[name]
    dump.parse(d)                      # the extractor's checks and the JSON Schema
    oracle.check_shapes(d)             # the independent checker
    assert d["model"] == name
    assert set(d["data"]) == {"features", "target"}
    assert set(d["outputs"]) == {"prediction", "loss"}
    params = [c for c in d["context"] if c["role"] == "param"]
    assert params and all(c["fan_in"] >= 1 for c in params)


def test_mlp_shapes_as_the_issue_asks(zoo):
    d = zoo["mlp"]
    shapes = {c["name"]: oracle.leaves(c["shape"]) for c in d["context"]}
    assert shapes == {"x": (28, 28), "y": (10,), "w1": (128, 28, 28), "b1": (128,),
                      "w2": (10, 128), "b2": (10,)}
    fan = {c["name"]: c.get("fan_in") for c in d["context"]}
    assert fan["w1"] == fan["b1"] == 784 and fan["w2"] == fan["b2"] == 128


BAD = [
    # (what is wrong, replacement in mlp.model, expected pieces of the message)
    ("bias of the wrong length", ("param  b1 : 128", "param  b1 : 64"),
     ["mlp.model:", "binding z1", "dense", "b1", "64", "128"]),
    ("mismatched dense sizes", ("param  w2 : 10x128", "param  w2 : 10x64"),
     ["binding z2", "dense", "w2", "10×64", "must have shape 64", "found 128"]),
    ("unknown name", ("dense(w2, h, b2)", "dense(w2, hidden, b2)"),
     ["binding z2", "unknown name hidden", "in scope", "w1"]),
    ("loss not a scalar", ("sqerr(out, y)", "out"),
     ["binding loss", "scalar", "found shape 10"]),
    ("syntax", ("dense(w1, x, b1)", "dense(w1, x, b1"),
     ["expected", "','", "')'"]),
    ("duplicate name", ("param  b2 : 10", "param  b1 : 10"), ["b1 is already defined (line 9)"]),
    ("decimal without a digit before its point", ("sqerr(out, y)", "sqerr(out, y) * .5"),
     ["mlp.model:", "found '.': a decimal number starts with a digit (0.5, not .5)"]),
    ("number too precise", ("sqerr(out, y)", "sqerr(out, y) * 0.12345678901234567"),
     ["mlp.model:", "binding loss", "the number 0.12345678901234567 has more significant digits"]),
    ("operands of different shapes", ("z2 = dense(w2, h, b2)", "z2 = dense(w2, h, b2) - b1"),
     ["binding z2", "-: the left operand has shape 10, the right one 128"]),
    ("tanh of a sum", ("h  = logistic(z1)", "h  = tanh(dense(w1, x, b1))"),
     ["binding h", "tanh: its input holds a sum", "bind it to a name first"]),
    ("target of the wrong shape", ("target y : 10", "target y : 4"),
     ["binding loss", "sqerr: the target y has shape 4, expected 10",
      "with `target y : 10`, the shape of the output out, the model elaborates"]),
]


# softmax cross-entropy with the maximum inside the gradient, as LeNet-5 wrote it before
# softmax_ce (docs/model-format.md §4)
CE3 = """model ce3
input  x : 84
target y : 10
param  w5 : 10x84
param  b5 : 10
output z5 = dense(w5, x, b5)
m  = maxall(z5)
se = sum j : 10 . exp(z5[j] - m)
loss loss = log(se) + m - (sum j : 10 . y[j] * z5[j])
"""


@pytest.mark.parametrize("edit,words", [
    (("exp(z5[j] - m)", "exp(z5 - m)"),
     ["binding se", "-: the left operand has shape 10, the right one 1"]),
    (("y[j] * z5[j])", "y[j] * z5)"),
     ["binding loss", "*: the left operand has shape 1, the right one 10"])])
def test_elementwise_operands_of_different_shapes_are_named_as_written(main, edit, words):
    """``a - b`` is ``a + (-b)`` in the core: the message says ``-``, and which side is which."""
    text = CE3
    assert edit[0] in text
    r = elaborate(main, text.replace(edit[0], edit[1]))
    assert r.returncode == 1 and all(w in r.stderr for w in words), r.stderr


def test_a_sum_inside_logistic_that_cannot_be_extracted_names_the_binding(main, kernel_cache):
    """``h = logistic(conv2d(…))``: its weight gradient would recompute the convolution for
    every output; the extractor's message names the model's binding h, not only d_k1."""
    from extract.passes.lower import ExtractError
    import runtime
    text = """model lconv
input  x : 28x28
target y : 10
param  k1 : 4x5x5
param  b1 : 4
param  w2 : 10x4x12x12
param  b2 : 10
h = logistic(conv2d(x, k1, b1))
p = maxpool(h, 2)
output z = dense(w2, p, b2)
loss loss = sqerr(z, y)
"""
    from extract.front.frontend import InlineSumWarning
    with pytest.raises(ExtractError, match=r"in binding h \(a sum inside logistic\): give it a "), \
            pytest.warns(InlineSumWarning):
        runtime.load(text)
    runtime.load(text.replace("h = logistic(conv2d(x, k1, b1))",
                              "c = conv2d(x, k1, b1)\nh = logistic(c)"))
    # a product of two sums: the one binding that writes them is named, not h's logistic
    two = """model two
input  x : 16
target y : 10
param  w0 : 16x16
param  w1 : 10x16
param  w2 : 10x16
h = logistic(dense(w0, x))
z = for i : 10 . (sum k : 16 . w1[i][k] * h[k]) * (sum k : 16 . w2[i][k] * h[k])
output o = z
loss l = sqerr(o, y)
"""
    with pytest.raises(ExtractError, match=r"written inside an expression in binding z: give"), \
            pytest.warns(InlineSumWarning, match="binding h computes a sum inside logistic"):
        runtime.load(two)


def test_a_loss_that_fails_on_a_mistaken_target_points_at_its_declaration(main):
    """A cross-entropy that reads the target by index: with ``target y : 4`` the message is
    about a selection, so the elaborator adds that the model elaborates with the output's shape
    for the target; so does LeNet-5's ``softmax_ce`` (its message names the target's shape).
    Not where that would not help: another mistake in the loss, with or without a target of
    another shape than the output's (a scalar target of a 4-way output)."""
    text = CE3
    r = elaborate(main, text.replace("target y : 10", "target y : 4"))
    assert r.returncode == 1
    assert "selection" in r.stderr and "with `target y : 10`, the shape of the output z5, the " \
        "model elaborates" in r.stderr, r.stderr
    lenet = (MODELS / "lenet5.model").read_text().replace("target y : 10", "target y : 4")
    r = elaborate(main, lenet)
    assert r.returncode == 1 and "softmax_ce: the target y has shape 4, expected 10; with " \
        "`target y : 10`, the shape of the output z5, the model elaborates" in r.stderr, r.stderr
    r = elaborate(main, text.replace("(sum j : 10 . y[j] * z5[j])", "(sum j : 10 . y[j] * z5)"))
    assert r.returncode == 1 and "the model elaborates" not in r.stderr, r.stderr
    scalar = """model t4
input x : 4
target y : 1
param w : 4x4
output p = dense(w, x)
loss l = (sum j : 4 . p[j] * p[j]) - y + q
"""
    r = elaborate(main, scalar)
    assert r.returncode == 1 and "unknown name q" in r.stderr, r.stderr
    assert "elaborates" not in r.stderr, r.stderr
    assert elaborate(main, scalar.replace(" + q", "")).returncode == 0


@pytest.mark.parametrize("what,edit,pieces", BAD, ids=[b[0] for b in BAD])
def test_shape_errors_are_one_line_naming_binding_and_shapes(main, tmp_path, what, edit, pieces):
    text = (MODELS / "mlp.model").read_text()
    assert edit[0] in text
    path = tmp_path / "mlp.model"
    path.write_text(text.replace(edit[0], edit[1]))
    r = subprocess.run([str(main), "model", str(path)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 1 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for p in pieces:
        assert p in lines[0], (p, lines[0])


def test_a_model_without_bindings_names_its_last_line(main, tmp_path):
    path = tmp_path / "decls.model"
    path.write_text("model decls\ninput  x : 3\n\ntarget y : 2   -- and nothing else\n\n")
    r = subprocess.run([str(main), "model", str(path)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.strip() == (f"{path}:4: the model has no bindings; the last statement "
                                f"must be the objective: loss NAME = …")


def test_kernel_larger_than_input_is_rejected(main):
    text = (MODELS / "cnn.model").read_text().replace("k1 : 6x5x5", "k1 : 6x29x5")
    r = elaborate(main, text)
    assert r.returncode == 1
    assert "binding c11: conv: the kernel k1 has windows of shape 29×5" in r.stderr
    assert "input inp of shape 28×28" in r.stderr


def test_core_language_without_layers(main):
    """A model written with named indices only: the same numbers as the oracle says."""
    text = """model core
input x : 4x3
target t : 4
param w : 4x3
h = for i : 4 . sum j : 3 . w[i][j] * x[i][j]
output p = logistic(h) - 0
loss l = (sum i : 4 . ((p - t) * (p - t))[i]) / 2
"""
    r = elaborate(main, text)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    rng = np.random.default_rng(0)
    vals = {"x": rng.normal(size=(4, 3)), "t": rng.normal(size=4), "w": rng.normal(size=(4, 3))}
    out = oracle.evaluate(d, vals)
    p = 1 / (1 + np.exp(-(vals["w"] * vals["x"]).sum(1)))
    assert np.allclose(out["p"], p, rtol=1e-14)
    assert np.allclose(out["l"], 0.5 * ((p - vals["t"]) ** 2).sum(), rtol=1e-14)
    # d l / d w[i][j] = (p - t)_i p_i (1 - p_i) x[i][j]
    dw = ((p - vals["t"]) * p * (1 - p))[:, None] * vals["x"]
    assert np.allclose(out["d_w"], dw, rtol=1e-12)


def test_tanh_is_twice_the_logistic_of_twice_less_one(main, kernel_cache, tmp_path):
    """``tanh(a)`` expands to ``logistic(a + a) + logistic(a + a) - 1`` (E has no tanh): the
    oracle and the generated C (f64) give tanh and its gradient ``1 - tanh²``, the field
    validation passes every emitted kernel; a non-array argument is named."""
    import runtime
    text = """model t
input x : 4x3
target t : 4
param w : 4x3
h = for i : 4 . sum j : 3 . w[i][j] * x[i][j]
output p = tanh(h)
loss l = sqerr(p, t)
"""
    r = elaborate(main, text)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    rng = np.random.default_rng(3)
    vals = {"x": rng.normal(size=(4, 3)), "t": rng.normal(size=4), "w": rng.normal(size=(4, 3))}
    h = (vals["w"] * vals["x"]).sum(1)
    p = np.tanh(h)
    dw = ((p - vals["t"]) * (1 - p * p))[:, None] * vals["x"]
    out = oracle.evaluate(d, vals)
    np.testing.assert_allclose(out["p"], p, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(out["d_w"], dw, rtol=1e-12, atol=1e-14)
    m = runtime.load(r.stdout, weights={"w": vals["w"]}, precision="f64")
    np.testing.assert_allclose(m.predict(vals["x"][None])[0], p, rtol=1e-13, atol=1e-15)
    _, g = m.loss_and_gradients(vals["x"][None], vals["t"][None])
    np.testing.assert_allclose(g["w"], dw, rtol=1e-12, atol=1e-14)
    bad = elaborate(main, text.replace("tanh(h)", "tanh(h, 2)"))
    assert bad.returncode == 1 and "tanh: takes one array: tanh(a)" in bad.stderr
    (tmp_path / "t.model").write_text(text)
    validates(tmp_path / "t.model", tmp_path / "g")


LAYERNORM_TEXT = """model ln
input x : 4x6
target t : 4
param a : 8x6
param g : 8
param b : 8
param w : 8
h = for i : 4 . dense(a, x[i])
m = for i : 4 . (sum j : 8 . h[i][j]) / 8
c = for i : 4 . for j : 8 . h[i][j] - m[i]
v = for i : 4 . (sum j : 8 . c[i][j] * c[i][j]) / 8
r = for i : 4 . recip(sqrt(v[i] + 1e-5))
y = for i : 4 . for j : 8 . c[i][j] * r[i] * g[j] + b[j]
z = for i : 4 . sum j : 8 . w[j] * y[i][j]
output p = logistic(z)
loss l = sqerr(p, t)
"""


@pytest.mark.torch
def test_layer_normalisation_with_sqrt_is_pytorchs(main, kernel_cache, tmp_path):
    """Layer normalisation written with bindings, ``sqrt`` and the number ``1e-5``
    (docs/model-format.md §4), after a dense layer so that the gradient of ``a`` goes through
    ``sqrt′``: the dump's values and
    gradients (oracle, f64) are those of ``torch.nn.functional.layer_norm`` and autograd, the
    generated C (f64) gives the same, and the field validation passes every emitted kernel."""
    torch = pytest.importorskip("torch")
    import runtime
    r = elaborate(main, LAYERNORM_TEXT)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["version"] == 5 and '"op": "sqrt"' in json.dumps(d)
    rng = np.random.default_rng(11)
    vals = {"x": rng.normal(size=(4, 6)), "t": rng.uniform(size=4),
            "a": rng.normal(size=(8, 6)), "g": rng.normal(size=8), "b": rng.normal(size=8),
            "w": rng.normal(size=8)}
    params = ("a", "g", "b", "w")
    T = {k: torch.tensor(v, dtype=torch.float64, requires_grad=k in params)
         for k, v in vals.items()}
    y = torch.nn.functional.layer_norm(T["x"] @ T["a"].t(), (8,), T["g"], T["b"], eps=1e-5)
    p = torch.sigmoid(y @ T["w"])
    (0.5 * ((p - T["t"]) ** 2).sum()).backward()
    p = p.detach().numpy()
    grads = {k: T[k].grad.numpy() for k in params}
    out = oracle.evaluate(d, vals)
    np.testing.assert_allclose(out["p"], p, rtol=1e-12)
    for k in params:
        np.testing.assert_allclose(out["d_" + k], grads[k], rtol=1e-9, atol=1e-12, err_msg=k)
    model = runtime.load(r.stdout, weights={k: vals[k] for k in params}, precision="f64")
    np.testing.assert_allclose(model.predict(vals["x"][None])[0], p, rtol=1e-12)
    _, g = model.loss_and_gradients(vals["x"][None], vals["t"][None])
    for k in params:
        np.testing.assert_allclose(g[k], grads[k], rtol=1e-9, atol=1e-12, err_msg=k)
    (tmp_path / "ln.model").write_text(LAYERNORM_TEXT)
    validates(tmp_path / "ln.model", tmp_path / "g")


CONST_TEXT = """model k
input x : 4x3
target t : 4
const m : 4x3
param w : 4x3
h = for i : 4 . sum j : 3 . w[i][j] * m[i][j] * x[i][j]
output p = logistic(h)
loss l = sqerr(p, t)
"""


@pytest.mark.torch
def test_a_const_has_pytorchs_gradients(main):
    """The dump of a model with a const, against PyTorch autograd with the mask a tensor that
    requires no gradient: the same gradient of ``w``, and none of ``m``."""
    torch = pytest.importorskip("torch")
    r = elaborate(main, CONST_TEXT)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    rng = np.random.default_rng(9)
    vals = {"x": rng.normal(size=(4, 3)), "t": rng.normal(size=4), "w": rng.normal(size=(4, 3)),
            "m": rng.integers(0, 2, size=(4, 3)).astype(float)}
    T = {k: torch.tensor(v, dtype=torch.float64, requires_grad=(k == "w"))
         for k, v in vals.items()}
    p = torch.sigmoid((T["w"] * T["m"] * T["x"]).sum(1))
    (0.5 * ((p - T["t"]) ** 2).sum()).backward()
    out = oracle.evaluate(d, vals)
    np.testing.assert_allclose(out["d_w"], T["w"].grad.numpy(), rtol=1e-12, atol=1e-15)
    assert T["m"].grad is None and "d_m" not in out


def validates(model: Path, out: Path) -> None:
    """Every kernel emitted for ``model`` (C and CUDA, each entry point) equals the dump over
    F_p (python -m extract, then python -m extract.check.validate, as a user runs them)."""
    for cmd in (["extract", str(model), "--out", str(out), "--no-build"],
                ["extract.check.validate", str(out)]):
        r = subprocess.run([sys.executable, "-m", *cmd], capture_output=True, text=True,
                           timeout=600)
        assert r.returncode == 0, r.stderr
    assert "output elements equal the dump's over F_p" in r.stdout, r.stdout


def test_a_const_is_read_never_trained(main, kernel_cache, tmp_path):
    """``const m : S``: a base variable like a parameter, but the dump gives it role const and
    no gradient; the runtime needs its value (the weights), reads it, never trains it, and
    the field validation passes every emitted kernel (a const's gradient field is 0)."""
    import runtime
    text = CONST_TEXT
    r = elaborate(main, text)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["version"] == 5
    assert [(c["name"], c["role"]) for c in d["context"]] == \
        [("x", "input"), ("t", "input"), ("m", "const"), ("w", "param")]
    assert "fan_in" not in d["context"][2]
    assert [g["wrt"] for g in d["gradients"]] == ["l", "p", "h", "w"]
    rng = np.random.default_rng(5)
    m_val = rng.integers(0, 2, size=(4, 3)).astype(float)
    vals = {"x": rng.normal(size=(4, 3)), "t": rng.normal(size=4), "w": rng.normal(size=(4, 3)),
            "m": m_val}
    p = 1 / (1 + np.exp(-(vals["w"] * m_val * vals["x"]).sum(1)))
    dw = ((p - vals["t"]) * p * (1 - p))[:, None] * m_val * vals["x"]
    out = oracle.evaluate(d, vals)
    np.testing.assert_allclose(out["d_w"], dw, rtol=1e-12, atol=1e-15)

    with pytest.raises(ValueError, match="the const m has no value"):
        runtime.load(r.stdout)
    model = runtime.load(r.stdout, weights={"m": m_val}, precision="f64")  # w fresh
    assert model.consts == ("m",) and list(model.params) == ["m", "w"]
    model.params["w"] = vals["w"]
    _, g = model.loss_and_gradients(vals["x"][None], vals["t"][None])
    assert list(g) == ["w"]
    np.testing.assert_allclose(g["w"], dw, rtol=1e-12, atol=1e-15)
    xs, ts = rng.normal(size=(32, 4, 3)), rng.normal(size=(32, 4))
    model.train(xs, ts, epochs=2, batch_size=8, lr=0.5, momentum=0.9, progress=False)
    assert model.params["m"].tobytes() == m_val.tobytes()
    assert not np.array_equal(model.params["w"], vals["w"])
    saved = model.save(tmp_path / "k.npz")
    again = runtime.load(r.stdout, weights=saved)
    assert again.params["m"].tobytes() == m_val.tobytes()
    with pytest.raises(ValueError, match=r"mn: not a const of the model \(consts: m\)"):
        runtime.load(r.stdout, weights={"mn": m_val})
    v2 = dict(d, version=2)
    with pytest.raises(ValueError, match="role 'const' is in dump version 3, the dump says 2"):
        runtime.load(v2, weights={"m": m_val})

    # from the command line: the const's values in an .npz of their own, the params fresh
    (tmp_path / "k.model").write_text(text)
    np.savez(tmp_path / "m.npz", m=m_val)
    np.savez(tmp_path / "data.npz", x_train=xs, y_train=ts)
    cli = [sys.executable, "-m", "runtime", "train", str(tmp_path / "k.model"), "--data",
           str(tmp_path / "data.npz"), "--epochs", "1", "--batch-size", "8", "--no-progress",
           "--out", str(tmp_path / "run")]
    r = subprocess.run(cli, capture_output=True, text=True, timeout=600)
    assert r.returncode == 2 and "the const m has no value" in r.stderr \
        and "numpy.savez(FILE, m=...)" in r.stderr, r.stderr
    r = subprocess.run(cli + ["--weights", str(tmp_path / "m.npz")], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "(f32, init random, consts " in r.stdout, r.stdout  # the params are fresh
    trained = runtime.load(tmp_path / "k.model", weights=tmp_path / "run" / "weights.npz")
    assert trained.params["m"].tobytes() == m_val.astype(np.float32).tobytes()
    # a model of consts alone: momentum has nothing to keep, and its file stays version 1
    (tmp_path / "c.model").write_text("model c\ninput x : 3\ntarget t : 3\nconst m : 3\n"
                                      "output p = for i : 3 . m[i] * x[i]\n"
                                      "loss l = sqerr(p, t)\n")
    only = runtime.load(tmp_path / "c.model", weights={"m": np.ones(3)})
    only.train(np.ones((4, 3)), np.ones((4, 3)), epochs=1, batch_size=2, momentum=0.5,
               progress=False)
    only.save(tmp_path / "c.npz")
    assert runtime.load_weights(tmp_path / "c.npz")[1]["version"] == 1
    np.savez(tmp_path / "m43.npz", m=m_val.T)  # named: the file, and as a const
    with pytest.raises(ValueError, match=r"m43\.npz: const m must have shape \(4, 3\), got "
                                         r"\(3, 4\)"):
        runtime.load(tmp_path / "k.model", weights=tmp_path / "m43.npz")

    late = elaborate(main, text.replace("const m : 4x3\n", "") + "const m : 4x3\n")
    assert late.returncode == 1 and \
        "declarations (input, target, param, const) come before the bindings" in late.stderr
    # a bias right after a const takes the fan-in of the parameter before it, not the const's
    d2 = json.loads(elaborate(main, text.replace("param w : 4x3", "param b : 4\nparam w : 4x3")
                              ).stdout)
    assert [c.get("fan_in") for c in d2["context"]] == [None, None, None, 1, 3]
    validates(tmp_path / "k.model", tmp_path / "g")


# ------------------------------------------------------------------------------------------
# The zoo through the pipeline


def random_values(d: dict, seed: int) -> dict[str, np.ndarray]:
    """Parameters of the size random init gives, a random image, a one-hot target."""
    rng = np.random.default_rng(seed)
    vals = {}
    for c in d["context"]:
        shape = oracle.leaves(c["shape"])
        if c["role"] == "param":
            bound = 1 / np.sqrt(c["fan_in"])
            vals[c["name"]] = rng.uniform(-bound, bound, size=shape)
        elif c["name"] == d["data"]["target"]:
            t = np.zeros(int(np.prod(shape)))
            t[rng.integers(t.size)] = 1
            vals[c["name"]] = t.reshape(shape)
        else:
            vals[c["name"]] = rng.uniform(0, 1, size=shape)
    return vals


@pytest.mark.parametrize("precision", ["f64", "f32"])
@pytest.mark.parametrize("name", ZOO)
def test_zoo_generated_c_matches_oracle(zoo, kernel_cache, name, precision):
    d = zoo[name]
    m = dump.parse(d)
    g = generate(m, precision)
    # in parts, as runtime.load builds it (the same module: one build for both)
    ffi, lib = build.build(m.name, precision, g.files, g.cdef, parts=g.parts)
    vals = {k: v.astype(DTYPES[precision]) for k, v in random_values(d, 1).items()}
    want = oracle.evaluate(d, vals, np.float64)
    got = run_single(ffi, lib, m, vals, precision)
    tol = {"f64": 1e-12, "f32": 1e-5}[precision]
    spread = conditioning(d, vals, want) if precision == "f32" else {}
    for n, v in got.items():
        err = rel_err(v, want[n])
        # an entry computed by cancellation (a layer norm's mean gradient: a sum of terms much
        # larger than their sum) is held to what float32 rounding of its inputs alone does to it
        assert err <= max(tol, 50 * spread.get(n, 0.0)), (n, err, spread.get(n))


def conditioning(d, vals, want) -> dict:
    """How much each binding and gradient of the dump moves (normwise, relative) when the
    inputs, and every binding and gradient entry as it is stored, move by one float32 rounding
    (relative 2^-24, random signs): the error that float32 arithmetic cannot avoid in it,
    whatever the order of its operations (a sum whose terms cancel, read from stored float32
    values, moves by far more than its own rounding)."""
    rng = np.random.default_rng(7)

    def rounded(x):
        return np.asarray(x, np.float64) * (1 + rng.choice([-1.0, 1.0], np.shape(x)) * 2.0 ** -24)
    moved = {k: rounded(v) for k, v in vals.items()}
    again = oracle.evaluate(d, moved, np.float64, stored=rounded)
    return {n: rel_err(again[n], w) for n, w in want.items() if n in again}


def torch_loss(name: str, vals: dict, data: dict):
    """The zoo models written directly in PyTorch (``bench/torch_zoo.py``, independent of the
    dump; also the benchmark's PyTorch peers), on a batch of one sample; ``data``: the dump's
    features and target."""
    torch = pytest.importorskip("torch")
    from bench import torch_zoo
    x = vals[data["features"]].reshape(1, *vals[data["features"]].shape)
    label = torch.argmax(vals[data["target"]].reshape(-1)).reshape(1)
    return torch_zoo.batch_loss(name, vals, x, label)


@pytest.mark.torch
@pytest.mark.parametrize("name", ZOO)
def test_zoo_gradients_match_pytorch_autograd(zoo, name):
    torch = pytest.importorskip("torch")
    d = zoo[name]
    vals = random_values(d, 2)
    want = oracle.evaluate(d, vals, np.float32)
    tv = {k: torch.tensor(v, dtype=torch.float32, requires_grad=True) for k, v in vals.items()}
    loss = torch_loss(name, tv, d["data"])
    loss.backward()
    assert rel_err(want[d["outputs"]["loss"]], loss.detach().numpy()) <= 1e-5
    for c in d["context"]:
        if c["role"] == "param":
            err = rel_err(want["d_" + c["name"]], tv[c["name"]].grad.numpy())
            assert err <= 1e-4, (c["name"], err)


BENCH_MODELS = sorted((ROOT / "bench" / "models").glob("*.model"))


@pytest.mark.torch
@pytest.mark.parametrize("path", BENCH_MODELS, ids=[p.stem for p in BENCH_MODELS])
def test_bench_models_match_their_pytorch_twins(main, path):
    """The benchmark's own models (bench/models: the CIFAR-sized network) elaborate, and their
    PyTorch twins (bench/torch_zoo.py, the peers timed) give the dump's loss and gradients,
    in float64."""
    torch = pytest.importorskip("torch")
    r = subprocess.run([str(main), "model", str(path)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    vals = random_values(d, 4)
    want = oracle.evaluate(d, vals, np.float64)
    tv = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in vals.items()}
    loss = torch_loss(d["model"], tv, d["data"])
    loss.backward()
    assert rel_err(want[d["outputs"]["loss"]], loss.detach().numpy()) <= 1e-12
    for c in d["context"]:
        if c["role"] == "param":
            err = rel_err(want["d_" + c["name"]], tv[c["name"]].grad.numpy())
            assert err <= 1e-10, (c["name"], err)


COORDINATES = 48     # single coordinates test_zoo_gradients_match_finite_differences moves


@pytest.mark.parametrize("name", ZOO)
def test_zoo_gradients_match_finite_differences(zoo, name):
    """Directional central differences of the dumped loss along random directions, and a
    sample of coordinates of every parameter (float64)."""
    d = zoo[name]
    vals = random_values(d, 3)
    out = oracle.evaluate(d, vals)
    lname = d["outputs"]["loss"]
    params = [c["name"] for c in d["context"] if c["role"] == "param"]

    def loss(v):
        return float(oracle.evaluate(d, v, forward_only=True)[lname].ravel()[0])

    rng = np.random.default_rng(5)
    # a model with kinks (relu, max) needs a step that rarely crosses one
    h = 1e-7 if any(op in json.dumps(d["chain"]) for op in ("\"relu\"", "\"max\"")) else 1e-5
    for _ in range(3):
        dirs = {p: rng.normal(size=vals[p].shape) for p in params}
        plus = {**vals, **{p: vals[p] + h * dirs[p] for p in params}}
        minus = {**vals, **{p: vals[p] - h * dirs[p] for p in params}}
        fd = (loss(plus) - loss(minus)) / (2 * h)
        an = sum(float((np.asarray(out["d_" + p]).ravel() * dirs[p].ravel()).sum())
                 for p in params)
        assert abs(fd - an) <= 1e-7 * max(1.0, abs(an)), (fd, an)
    # four coordinates of every parameter, fewer if that is more than COORDINATES in all (the
    # encoder's 18 parameters: two each), and for a model of still more parameters (resnet20's
    # 53) one of each of COORDINATES drawn at random; the directions above move every one
    per = min(4, max(1, COORDINATES // len(params)))
    chosen = params if per * len(params) <= COORDINATES else \
        sorted(rng.choice(params, size=COORDINATES, replace=False), key=params.index)
    for p in chosen:
        g = np.asarray(out["d_" + p]).ravel()
        for i in rng.choice(g.size, size=min(per, g.size), replace=False):
            e = np.zeros(g.size)
            e[i] = h
            plus = {**vals, p: vals[p] + e.reshape(vals[p].shape)}
            minus = {**vals, p: vals[p] - e.reshape(vals[p].shape)}
            fd = (loss(plus) - loss(minus)) / (2 * h)
            assert abs(fd - g[i]) <= 1e-7 * max(1.0, abs(g[i])), (p, i, fd, g[i])


# ---------------------------------------------------------------------------------------------
# the max-reduction and the stop-gradient (dump format version 5)

def _loss_and_grads(d: dict, vals: dict) -> tuple[float, dict]:
    out = oracle.evaluate(d, vals, np.float64)
    return float(out[d["outputs"]["loss"]].ravel()[0]), out


@pytest.mark.parametrize("n", [10, 1000, 100_000])
def test_maxall_and_logsumexp_dumps_do_not_grow_with_the_elements(main, n):
    """The dump of a max and a log-sum-exp over n elements has the same size for every n (the
    number n itself aside): the reduction is one node, not a nest of n binary maxima."""
    text = f"model r\nparam x : {n}\nm = maxall(x)\nloss l = logsumexp(x) + m\n"
    r = elaborate(main, text)
    assert r.returncode == 0, r.stderr
    size = len(r.stdout) - r.stdout.count(str(n)) * len(str(n))
    small = elaborate(main, text.replace(str(n), "7"))
    assert abs(size - (len(small.stdout) - small.stdout.count("7"))) < 64
    d = json.loads(r.stdout)
    assert d["version"] == 5 and '"op": "argmax"' in json.dumps(d)


def test_max_binder_value_gradient_and_ties(main):
    """`max j : 6 . x[j]` is the largest element, its gradient the seed at the *first* maximal
    position (ties included), and `max(a, b)` beside it is still the elementwise call."""
    text = ("model r\ninput u : 6\ntarget t : 1\nparam x : 6\n"
            "loss l = (max j : 6 . x[j] * u[j]) + (sum j : 6 . max(x, u)[j])\n")
    r = elaborate(main, text)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    x = np.array([1.0, 5.0, -2.0, 5.0, 0.5, 3.0])
    u = np.ones(6)
    loss, out = _loss_and_grads(d, {"u": u, "t": np.zeros(1), "x": x})
    assert loss == 5.0 + np.maximum(x, u).sum()
    want = np.zeros(6)
    want[1] = 1.0                                   # the first of the two 5s
    want += (x > u)                                 # max(x, u): to x where x > u
    np.testing.assert_array_equal(out["d_x"], want)


def test_logsumexp_gradient_is_the_softmax_and_detach_passes_nothing(main):
    text = ("model r\nparam x : 50\nparam w : 50\n"
            "loss l = logsumexp(x) + (sum j : 50 . detach(w)[j] * x[j])\n")
    r = elaborate(main, text)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    rng = np.random.default_rng(3)
    x, w = rng.normal(size=50) * 4, rng.normal(size=50)
    loss, out = _loss_and_grads(d, {"x": x, "w": w})
    top = x.max()
    lse = top + np.log(np.exp(x - top).sum())
    assert abs(loss - (lse + w @ x)) <= 1e-12 * abs(lse + w @ x)
    np.testing.assert_allclose(out["d_x"], np.exp(x - lse) + w, rtol=1e-12)
    np.testing.assert_array_equal(out["d_w"], np.zeros(50))    # detach(w): no gradient


@pytest.mark.parametrize("text, says", [
    ("model r\nparam x : 4x4\nloss l = max j : 4 . x[j]\n", "max: the body must be a scalar"),
    ("model r\nparam x : 4\nloss l = sum i : 4 . (" + "relu(" * 300 + "x" + ")" * 300 + ")[i]\n",
     "3: binding l: nesting deeper than 200 levels"),
])
def test_max_and_nesting_errors_name_the_line(main, text, says):
    r = elaborate(main, text)
    assert r.returncode == 1 and says in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_shapes_with_many_numbers_lex(main):
    """A file of many shapes and numbers (the lexer once measured the rest of the file at every
    number) elaborates, and a dimension list is read whole."""
    decls = "".join(f"param p{i} : 2x3x4\n" for i in range(400))
    text = "model r\n" + decls + "loss l = sum k : 2x3x4 . p399[k]\n"
    r = elaborate(main, text)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert [c["shape"] for c in d["context"][:1]] == [[2, [3, 4]]]


def test_overlapping_maxpool_with_ties_is_numpys_first_argmax(main):
    """maxpool(x, 3, 2) over windows that overlap, on small integers (many ties): the values are
    the windows' maxima and the gradient of ½‖p‖² adds each window's maximum at its *first*
    maximal position (NumPy's argmax), overlapping windows adding up."""
    text = ("model mp\nparam x : 2x7x7\ninput y : 2x3x3\np = maxpool(x, 3, 2)\n"
            "loss l = sqerr(p, y)\n")
    r = elaborate(main, text)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    x = np.random.default_rng(0).integers(0, 4, size=(2, 7, 7)).astype(float)
    out = oracle.evaluate(d, {"x": x, "y": np.zeros((2, 3, 3))}, np.float64)
    want, grad = np.zeros((2, 3, 3)), np.zeros((2, 7, 7))
    for c in range(2):
        for i in range(3):
            for j in range(3):
                w = x[c, 2 * i:2 * i + 3, 2 * j:2 * j + 3]
                want[c, i, j] = w.max()
                k = int(np.argmax(w))
                grad[c, 2 * i + k // 3, 2 * j + k % 3] += w.max()
    np.testing.assert_array_equal(out["p"].reshape(2, 3, 3), want)
    np.testing.assert_array_equal(out["d_x"].reshape(2, 7, 7), grad)
