"""runtime/builder.py: the text of a model written with ModelBuilder (an MLP, the paper's
CNN; the statements of models/mlp.model and models/cnn.model), every sum layer in a binding of
its own, the shapes it infers for each layer, the parentheses of operators, and the early
ValueErrors; with the real Agda executable (tests marked ``agda``), that the elaborator
accepts the text and agrees with the inferred shapes, that the extractor accepts the dump, and
that ``runtime.load(builder)`` trains a small MLP."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from runtime.builder import ModelBuilder

DATA = Path(__file__).resolve().parent / "data"
MODELS = Path(__file__).resolve().parent.parent / "models"

MLP_TEXT = """model mlp
input  x : 28x28
target y : 10
param  w1 : 128x28x28
param  b1 : 128
param  w2 : 10x128
param  b2 : 10
z1 = dense(w1, x, b1)
h1 = logistic(z1)
z2 = dense(w2, h1, b2)
output out = logistic(z2)
loss loss = sqerr(out, y)
"""

CNN_TEXT = """model cnn
target target : 10x1x1x1x1
input  inp : 28x28
param  k1 : 6x5x5
param  b1 : 6
param  k2 : 12x6x5x5
param  b2 : 12
param  fc : 10x12x1x4x4
param  b : 10
c11 = conv(inp, k1, b1)
c1 = logistic(c11)
s1 = avgpool(c1, 2)
c21 = conv(s1, k2, b2)
c2 = logistic(c21)
s2 = avgpool(c2, 2)
r1 = conv(s2, fc, b)
output r = logistic(r1)
loss loss = sqerr(r, target)
"""


def mlp() -> tuple:
    """The MLP with the default names."""
    b = ModelBuilder("mlp")
    x = b.input("x", (28, 28))
    y = b.target("y", 10)
    h = b.logistic(b.dense(x, 128))
    out = b.output(b.logistic(b.dense(h, 10)))
    b.loss(b.sqerr(out, y))
    return b, h, out


def mlp_file(hidden: int = 128) -> ModelBuilder:
    """models/mlp.model (the hidden layer named h); ``hidden`` units."""
    b = ModelBuilder("mlp")
    x = b.input("x", (28, 28))
    y = b.target("y", 10)
    h = b.bind("h", b.logistic(b.dense(x, hidden)))
    out = b.output(b.logistic(b.dense(h, 10)))
    b.loss(b.sqerr(out, y))
    return b


def statements(text: str) -> list[str]:
    """A model file's statements: comments and blank lines dropped, continuation lines joined,
    white space normalised to single spaces."""
    out: list[str] = []
    for line in text.splitlines():
        line = re.split(r"--|#", line, maxsplit=1)[0]
        if not line.strip():
            continue
        if line[0].isspace() and out:
            out[-1] += " " + line
        else:
            out.append(line)
    return [" ".join(st.split()) for st in out]


def paper_cnn() -> tuple:
    """The paper's CNN (Spec/Model/CNN.agda), with its names."""
    b = ModelBuilder("cnn")
    t = b.target("target", (10, 1, 1, 1, 1))
    x = b.input("inp", (28, 28))
    c11 = b.bind("c11", b.conv(x, 6, 5))
    c1 = b.bind("c1", b.logistic(c11))
    s1 = b.bind("s1", b.avgpool(c1, 2))
    c21 = b.bind("c21", b.conv(s1, 12, 5))
    c2 = b.bind("c2", b.logistic(c21))
    s2 = b.bind("s2", b.avgpool(c2, 2))
    r1 = b.bind("r1", b.conv(s2, 10, 4, weight="fc", bias="b"))
    r = b.output(b.logistic(r1), "r")
    loss = b.loss(b.sqerr(r, t))
    return b, [c11, c1, s1, c21, c2, s2, r1, r, loss]


def cnn_default() -> tuple:
    """The paper's CNN with the default names (z1, h1, p1, ...)."""
    b = ModelBuilder("cnn")
    t = b.target("target", (10, 1, 1, 1, 1))
    x = b.input("inp", (28, 28))
    s1 = b.avgpool(b.logistic(b.conv(x, 6, 5)), 2)
    s2 = b.avgpool(b.logistic(b.conv(s1, 12, 5)), 2)
    r = b.output(b.logistic(b.conv(s2, 10, 4)))
    b.loss(b.sqerr(r, t))
    return (b,)


def test_mlp_text_and_shapes(tmp_path):
    b, h, out = mlp()
    assert b.text() == MLP_TEXT
    assert h.shape == (128,) and str(h) == "h1"      # a layer's input is bound to a name
    assert [st[1] for st in b._stmts] == ["z1", "h1", "z2", "out", "loss"]
    assert out.shape == (10,)
    assert b.save(tmp_path / "mlp.model") == tmp_path / "mlp.model"
    assert (tmp_path / "mlp.model").read_text() == MLP_TEXT
    assert [p.name for p in tmp_path.iterdir()] == ["mlp.model"]


def test_mlp_is_models_mlp_model():
    assert statements(mlp_file().text()) == statements((MODELS / "mlp.model").read_text())


def test_paper_cnn_is_models_cnn_model():
    b, _ = paper_cnn()
    assert statements(b.text()) == statements((MODELS / "cnn.model").read_text())


def test_cnn_default_names():
    b, = cnn_default()
    assert b.text().splitlines()[-9:] == [
        "z1 = conv(inp, k1, b1)", "h1 = logistic(z1)", "p1 = avgpool(h1, 2)",
        "z2 = conv(p1, k2, b2)", "h2 = logistic(z2)", "p2 = avgpool(h2, 2)",
        "z3 = conv(p2, k3, b3)", "output out = logistic(z3)", "loss loss = sqerr(out, target)"]


def test_statements_normalise_files():
    assert statements("-- c\nmodel m  # c\n\nz =  a +\n   b -- c\n") == ["model m", "z = a + b"]


def test_sum_layers_are_bindings_of_their_own():
    b = ModelBuilder("m")
    x = b.input("x", (6, 12, 12))
    t = b.target("t", 2)
    c = b.conv(x, 4, 5)                             # a pending sum: not bound until used
    assert str(c) == "conv(x, k1, b1)" and c.name is None and b._stmts == []
    p = b.avgpool(b.logistic(c), 2)                 # its input: h1 = logistic(z1)
    q = b.avgpool(b.logistic(p) * b.logistic(p), 2)
    d = b.dense(-q, 2, bias=False)                  # elementwise, inline on names
    e = b.dense(x, 2, weight="z3", bias=False)      # the name z3 is taken: z4
    b.output(b.logistic(d + e) / 2)
    b.loss(b.sqerr(b.logistic(b.dense(q, 2)), t))  # layer 4: z4 is taken, z5
    assert b.text().splitlines()[-11:] == [
        "z1 = conv(x, k1, b1)",
        "h1 = logistic(z1)",
        "p1 = avgpool(h1, 2)",
        "h2 = logistic(p1) * logistic(p1)",
        "p2 = avgpool(h2, 2)",
        "h3 = -p2",
        "z2 = dense(w2, h3)",
        "z4 = dense(z3, x)",
        "output out = logistic(z2 + z4) / 2",
        "z5 = dense(w4, p2, b4)",
        "loss loss = sqerr(logistic(z5), t)"]
    # a sum bound by the user keeps the user's name; output and loss bind a sum themselves
    b = ModelBuilder("n")
    x, t = b.input("x", 3), b.target("t", 1)
    a = b.bind("a", b.dense(x, 2))
    b.output(b.dense(b.logistic(a), 1))
    b.loss(b.dense(b.input("u", 1) * 0, 1, bias=False))
    assert [" ".join(st) for st in b._stmts] == [
        " a dense(w1, x, b1)", " h1 logistic(a)", "output out dense(w2, h1, b2)",
        " h2 u * 0", "loss loss dense(w3, h2)"]


def flat(shape) -> tuple:
    return (shape,) if isinstance(shape, int) else flat(shape[0]) + flat(shape[1])


def test_paper_cnn_text_and_shapes():
    b, bindings = paper_cnn()
    assert b.text() == CNN_TEXT
    # the shapes of the hand-built CNN dump (context and chain), flattened
    d = json.loads((DATA / "cnn_hand.json").read_text())
    want = {a["name"]: flat(a["shape"]) for a in d["context"] + d["chain"]}
    got = {e.name: e.shape for e in bindings}
    got.update({n: s for _, n, s in b._params})
    got.update({n: s for _, n, s in b._data})
    assert got == want


def test_layer_shape_rules():
    b = ModelBuilder("m")
    x = b.input("x", (6, 12, 12))
    k = b.param("k", (12, 6, 5, 5))
    c = b.conv(x, k, bias=False)                    # the paper's multi-channel convolution
    assert c.shape == (12, 1, 8, 8) and str(c) == "conv(x, k)"
    assert b.conv(x, 3, (3, 4)).shape == (3, 1, 10, 9)          # kernel 6x3x4 (named k2)
    assert b._params[-2:] == [["param", "k2", (3, 6, 3, 4)], ["param", "b2", (3,)]]
    assert b.conv(b.input("v", 10), 2, 3).shape == (2, 8)       # one dimension: kernel 3
    assert b.avgpool(c, 4).shape == (12, 1, 2, 2)
    w = b.param("w", (5, 6, 12, 12))
    d = b.dense(x, w, bias=b.param("bw", 5))
    assert d.shape == (5,) and str(d) == "dense(w, x, bw)"
    assert b.dense(x, 7, weight="fc", bias=False).shape == (7,)
    assert b._params[-1] == ["param", "fc", (7, 6, 12, 12)]
    assert b.sqerr(d, d).shape == (1,)


def test_conv2d_pooling_and_max_follow_the_language():
    """docs/model-format.md §4: padding, stride, floor mode; the text the user would write."""
    b = ModelBuilder("m")
    x = b.input("x", (3, 32, 32))
    c = b.conv2d(x, 8, 5, padding=2)
    assert c.shape == (8, 32, 32) and str(c) == "conv2d(x, k1, b1, 2)"
    assert b._params == [["param", "k1", (8, 3, 5, 5)], ["param", "b1", (8,)]]
    s = b.conv2d(b.relu(c), 4, (3, 2), stride=2, bias=False)      # binds z1, then h1
    assert s.shape == (4, 15, 16) and str(s) == "conv2d(h1, k2, 0, 2)"
    assert b.maxpool(s, 3, 2).shape == (4, 7, 7)                  # (15 - 3) // 2 + 1
    assert b.avgpool(s, 2).shape == (4, 7, 8)                     # floor: a row dropped
    assert str(b.maxpool(s, 2)) == "maxpool(z2, 2)" and str(b.avgpool(s, 3, 1)) == \
        "avgpool(z2, 3, 1)"
    k = b.param("k", (2, 5, 5))
    assert b.conv2d(b.input("g", (28, 28)), k, bias=False).shape == (2, 24, 24)
    m = b.maxall(s)
    assert m.shape == (1,) and str(m) == "maxall(z2)"
    assert str(b.max(b.relu(s), 0)) == "max(relu(z2), 0)"
    assert b.max(s, s).shape == s.shape


def test_bindings_outputs_and_raw_expressions():
    b = ModelBuilder("m")
    x = b.input("x", 10)
    y = b.target("y", 3)
    raw = b.expr("for i : 10 . x[i] * x[i]", shape=10)
    assert b.expr("x") is x                           # a declared name is its own Expr
    h = b.dense(raw, 3)                               # a raw input is bound first
    r = b.output(b.bind("r", b.logistic(h)))          # an existing binding becomes the output
    b.loss(b.bind("e", b.sqerr(r, y) / 2))            # the last binding becomes the loss
    assert b.text().splitlines()[-4:] == [
        "h1 = for i : 10 . x[i] * x[i]",
        "z1 = dense(w1, h1, b1)",
        "output r = logistic(z1)",
        "loss e = sqerr(r, y) / 2"]
    # an expression of unknown shape cannot feed a layer
    with pytest.raises(ValueError, match=r"^dense: the shape of sum i : 3 \. y\[i\] is unknown"):
        ModelBuilder("n").dense(b.expr("sum i : 3 . y[i]"), 2)


def test_operators_parenthesise():
    b = ModelBuilder("m")
    a, c = b.input("a", 4), b.input("c", 4)
    assert str((a - -c) * (a + c) / 2) == "(a - -c) * (a + c) / 2"
    assert str(-(-a)) == "-(-a)"                      # never "--": a comment
    assert str(a * (c * a)) == "a * (c * a)" and str(a * c * a) == "a * c * a"
    assert str(a - (c - a)) == "a - (c - a)" and str(a - c - a) == "a - c - a"
    assert str(1 - a) == "1 - a" and str(a + 0) == "a + 0" and str(-(a + c)) == "-(a + c)"
    assert str(b.logistic(b.expr("for i : 4 . a[i]"))) == "logistic(for i : 4 . a[i])"
    assert str(b.expr("for i : 4 . a[i]") * a) == "(for i : 4 . a[i]) * a"
    assert str(a["i"]) == "a[i]" and str((a + c)["i"]) == "(a + c)[i]"


@pytest.mark.parametrize("build, message", [
    (lambda b, x: b.avgpool(b.input("p", (6, 25, 1)), 2),
     "avgpool: a 2×2 window does not fit the last two dimensions of p (shape 6x25x1)"),
    (lambda b, x: b.maxpool(x, 2), "maxpool: a 2×2 window does not fit the last two dimensions"),
    (lambda b, x: b.maxpool(b.input("p", (4, 4)), 2, 0), "maxpool: the stride must be a "
                                                          "positive integer, not 0"),
    (lambda b, x: b.conv2d(x, 2, 3), "conv2d: the input x has shape 28; it must be C×H×W or "
                                     "H×W"),
    (lambda b, x: b.conv2d(b.input("i", (3, 8, 8)), 4, 9), "conv2d: a kernel of shape 4x3x9x9 "
                                                           "does not fit the input i of shape "
                                                           "3x8x8 padded by 0"),
    (lambda b, x: b.conv2d(b.input("i", (3, 8, 8)), b.param("k", (4, 2, 3, 3))),
     "conv2d: a kernel of shape 4x2x3x3 does not fit the input i"),
    (lambda b, x: b.conv2d(b.input("i", (8, 8)), 4, 3, stride=0), "conv2d: stride must be an "
                                                                   "integer >= 1, not 0"),
    (lambda b, x: b.conv2d(b.input("i", (8, 8)), 4), "conv2d: give the kernel's size"),
    (lambda b, x: b.max(x, b.input("z", 3)), "max: the shapes 28 and 3 differ"),
    (lambda b, x: b.conv(x, 2, 30), "conv: a kernel of shape 2x30 does not fit the input x "
                                    "of shape 28"),
    (lambda b, x: b.conv(x, b.param("k", (2, 3, 3)), 0),
     "conv: a kernel of shape 2x3x3 does not fit"),
    (lambda b, x: b.conv(x, 2), "conv: give the kernel's size"),
    (lambda b, x: b.dense(x, b.param("w", (10, 64))),
     "dense: the weight w has shape 10x64, so the input must have shape 64; found 28"),
    (lambda b, x: b.dense(x, 10, bias=b.param("c", 9)), "dense: the bias: the shapes 9 and 10"),
    (lambda b, x: b.dense(x, 0), "not a shape: 0"),
    (lambda b, x: b.sqerr(x, b.target("t", 10)), "sqerr: the shapes 28 and 10 differ"),
    (lambda b, x: x + b.input("z", 3), "'+': the shapes 28 and 3 differ"),
    (lambda b, x: x / 0, "'/': divide by a positive integer"),
    (lambda b, x: b.loss(x), "loss: the objective must have shape 1, found 28"),
    (lambda b, x: b.input("x", 3), "input: the name 'x' is already used"),
    (lambda b, x: b.param("d_w", 3), "param: 'd_w' is not a valid name"),
    (lambda b, x: b.bind("2h", x), "binding: '2h' is not a valid name"),
    (lambda b, x: ModelBuilder("my model"), "model: 'my model' is not a valid name"),
    (lambda b, x: b.text(), "model m: no loss yet"),
])
def test_errors_name_the_layer(build, message):
    b = ModelBuilder("m")
    x = b.input("x", 28)
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        build(b, x)


def test_errors_leave_the_model_unchanged():
    b, _, _ = mlp()
    text = b.text()
    with pytest.raises(ValueError, match="the loss is the last statement"):
        b.bind("late", b.expr("x"))
    with pytest.raises(ValueError, match="already has an output, out"):
        b.output(b.expr("x"))
    c = ModelBuilder("c")
    x = c.logistic(c.input("x", (6, 4, 4)))
    for bad in (lambda: c.conv(x, 2, 5), lambda: c.dense(x, 3, bias=c.expr("q", shape=2))):
        with pytest.raises(ValueError):
            bad()
    assert c._params == [] and c._stmts == [] and c._layers == 0     # nothing declared
    c.loss(c.sqerr(c.dense(x, 1), c.target("t", 1)))
    assert "param  w1 : 1x6x4x4" in c.text() and b.text() == text


# -- with the real elaborator -------------------------------------------------------------

def _missing():
    from test_frontend_cli import MISSING
    return MISSING


@pytest.mark.agda
@pytest.mark.skipif(_missing() is not None, reason=str(_missing()))
@pytest.mark.parametrize("make", [mlp, paper_cnn])
def test_agda_accepts_builder_text(make):
    from extract.ir import dump
    b, *_ = make()
    d = json.loads(b.compile())
    m = dump.parse(d)
    decl = {n: s for _, n, s in b._params} | {n: s for _, n, s in b._data}
    assert {a["name"]: flat(a["shape"]) for a in d["context"]} == decl
    assert [a.name for a in m.chain] == [s[1] for s in b._stmts]
    if make is paper_cnn:           # the same context as the Agda model of the paper
        hand = json.loads((DATA / "cnn_hand.json").read_text())
        strip = [{k: a[k] for k in ("name", "shape", "role")} for a in d["context"]]
        assert strip == hand["context"]


@pytest.mark.agda
@pytest.mark.skipif(_missing() is not None, reason=str(_missing()))
@pytest.mark.parametrize("make", [lambda: (mlp_file(),), mlp, paper_cnn, cnn_default],
                         ids=["mlp-file", "mlp-default-names", "paper_cnn",
                              "cnn-default-names"])
def test_extractor_accepts_builder_text(make):
    """No sum left inline: the C extractor generates the kernels (it raises on a sum that
    would be recomputed for every output element)."""
    from extract.ir import dump
    from extract.emit import sources
    b, *_ = make()
    sources.generate(dump.parse(json.loads(b.compile())), "f32")


@pytest.mark.agda
@pytest.mark.skipif(_missing() is not None, reason=str(_missing()))
def test_load_builder_and_train(kernel_cache):
    """Define, generate, train and use a model in one go: runtime.load(builder)."""
    import runtime
    b = mlp_file(hidden=32)
    m = runtime.load(b, init="random", seed=0)
    assert m.name == "mlp" and m.param_shapes == {
        "w1": (32, 28, 28), "b1": (32,), "w2": (10, 32), "b2": (10,)}
    assert m.spec.dump.parent == kernel_cache / "dumps"      # the dump, content-addressed
    m2 = b.load(init="random", seed=0)                         # the shortcut, its options
    assert all(np.array_equal(m2.params[n], m.params[n]) for n in m.param_shapes)
    assert not np.array_equal(b.load(init="sac").params["w1"], m.params["w1"])
    x, y = runtime.load_mnist(runtime.DEFAULT_DATA, "train")
    xt, yt = runtime.load_mnist(runtime.DEFAULT_DATA, "test")
    x, y, xt, yt = x[:2000], y[:2000], xt[:1000], yt[:1000]
    before, _ = m.loss_and_gradients(x, y)
    hist = m.train(x, y, epochs=1, batch_size=10, lr=2.0, progress=False, eval_train=False)
    after, _ = m.loss_and_gradients(x, y)
    assert after < before and hist["loss"][0] < before, (before, hist["loss"], after)
    assert m.evaluate(xt, yt) > 0.5


def test_a_const_is_declared_in_order_and_loads_with_its_value(kernel_cache):
    """``const(name, shape)``: declared among the parameters, in call order; its value comes
    with the weights (a dict of the consts alone leaves the parameters to ``init``)."""
    import runtime
    b = ModelBuilder("masked")
    x, y = b.input("x", (28, 28)), b.target("y", 10)
    mask = b.const("mask", (28, 28))
    h = b.bind("h", b.expr("for i : 28x28 . x[i] * mask[i]", shape=(28, 28)))
    b.loss(b.cross_entropy(b.output(b.dense(h, 10)), y))
    assert b.text().splitlines()[3:6] == ["const  mask : 28x28", "param  w1 : 10x28x28",
                                          "param  b1 : 10"]
    keep = np.zeros((28, 28))
    keep[:, :14] = 1                                  # the left half of every image
    m = b.load(weights={"mask": keep}, seed=0)
    assert m.consts == ("mask",) and set(m.param_shapes) == {"mask", "w1", "b1"}
    assert np.array_equal(m.params["w1"], b.load(weights={"mask": keep}, seed=0).params["w1"])
    images, labels = runtime.load_mnist(runtime.DEFAULT_DATA, "train", 500)
    g = m.gradients(images, labels)
    assert set(g) == {"w1", "b1"} and not g["w1"][:, :, 14:].any() and g["w1"][:, :, :14].any()


def test_load_builder_rejects_dump():
    import runtime
    with pytest.raises(ValueError, match="dump= is for a built-in model's name; model mlp is a "
                                         "ModelBuilder"):
        runtime.load(mlp_file(), dump="x.json")


@pytest.mark.agda
@pytest.mark.skipif(_missing() is not None, reason=str(_missing()))
def test_load_builder_reports_the_elaborators_line(kernel_cache):
    import runtime
    from extract.front.frontend import ModelError
    b = ModelBuilder("bad")
    x, t = b.input("x", 3), b.target("t", 1)
    b.loss(b.sqerr(b.dense(x, 1) + b.expr("q", shape=1), t))
    with pytest.raises(ModelError, match=r"^<bad\.model>:7: binding loss: unknown name q;"):
        runtime.load(b)


def relu_net():
    b = ModelBuilder("relunet")
    x = b.input("x", (4, 3))
    y = b.target("y", 3)
    h = b.relu(b.dense(x, 5))
    e = b.exp(b.dense(h, 3))
    out = b.output(b.log(e + 1) * b.recip(e + 1))
    b.loss(b.sqerr(out, y))
    return (b,)


def test_elementwise_functions_stay_inline_on_bound_sums():
    (b,) = relu_net()
    lines = [ln for ln in b.text().splitlines() if "=" in ln]
    assert lines[0].split() == ["z1", "=", "dense(w1,", "x,", "b1)"]
    assert "relu(z1)" in b.text() and "exp(z2)" in b.text()
    assert any("log(" in ln and "recip(" in ln for ln in lines), lines


@pytest.mark.agda
@pytest.mark.skipif(_missing() is not None, reason=str(_missing()))
def test_elementwise_functions_elaborate_and_extract():
    from extract.ir import dump
    from extract.emit import sources
    (b,) = relu_net()
    m = dump.parse(json.loads(b.compile()))
    ops = set(re.findall(r'"op": ?"(\w+)"', b.compile()))
    assert {"relu", "exp", "log", "recip"} <= ops
    sources.generate(m, "f32")


def sqrt_net():
    """A softsign-like squashing z / sqrt(1 + z²) of a dense layer."""
    b = ModelBuilder("sqrtnet")
    x, y = b.input("x", 4), b.target("y", 3)
    z = b.bind("z", b.dense(x, 3))
    norm = b.bind("norm", b.sqrt(1 + z * z / 2))
    out = b.output(z * b.recip(norm))
    b.loss(b.sqerr(out, y))
    return b, norm


def test_sqrt_stays_inline_and_writes_sqrt():
    b, norm = sqrt_net()
    lines = [ln for ln in b.text().splitlines() if "=" in ln]
    assert lines[:2] == ["z = dense(w1, x, b1)", "norm = sqrt(1 + z * z / 2)"], lines
    assert "output out = z * recip(norm)" in lines and norm.shape == (3,)
    with pytest.raises(ValueError, match="shapes 3 and 4 differ"):
        b.sqrt(b.input("u", 3)) + b.input("v", 4)


@pytest.mark.agda
@pytest.mark.skipif(_missing() is not None, reason=str(_missing()))
def test_sqrt_elaborates_and_extracts():
    """Needs an Agda executable with sqrt (dump version 4 and later)."""
    from extract.ir import dump
    from extract.emit import sources
    b, _ = sqrt_net()
    d = json.loads(b.compile())
    assert d["version"] == 5
    norm = next(c for c in d["chain"] if c["name"] == "norm")
    assert norm["expr"]["op"] == "sqrt"
    g = sources.generate(dump.parse(d), "f32")
    assert "sqrtf(" in g.files["model_sqrtnet.c"]


@pytest.mark.agda
@pytest.mark.skipif(_missing() is not None, reason=str(_missing()))
def test_erf_writes_the_exact_gelu(kernel_cache):
    """``b.erf`` stays inline: the exact GELU ``z * (1 + erf(z * c)) / 2`` of a dense layer,
    ``c`` a const of 1/√2 given with the weights, elaborates to a version 6 dump and predicts
    x·Φ(x) with Python's math.erf."""
    import math
    b = ModelBuilder("gelunet")
    x, y = b.input("x", 4), b.target("y", 3)
    c = b.const("c", 1)
    z = b.bind("z", b.dense(x, 3))
    u = b.bind("u", b.expr("for i : 3 . z[i] * c", (3,)))
    out = b.output(z * (1 + b.erf(u)) / 2)
    b.loss(b.sqerr(out, y))
    assert "output out = z * (1 + erf(u)) / 2" in b.text().splitlines(), b.text()
    assert json.loads(b.compile())["version"] == 6
    m = b.load(precision="f64", weights={"c": np.array([1 / math.sqrt(2)])}, seed=2)
    xs = np.random.default_rng(3).normal(size=(4, 4))
    zs = xs @ m.params["w1"].T + m.params["b1"]
    want = zs * (1 + np.vectorize(math.erf)(zs / math.sqrt(2))) / 2
    np.testing.assert_allclose(m.predict(xs), want, rtol=1e-13, atol=1e-15)


@pytest.mark.agda
@pytest.mark.skipif(_missing() is not None, reason=str(_missing()))
def test_cross_entropy_is_the_softmax_ce_layer(kernel_cache):
    """``b.cross_entropy(z, y)`` writes the layer ``softmax_ce(z, y)`` (the zoo's LeNet-5's
    loss); its gradient with respect to the logits is softmax(z) − y. Of a matrix it has one
    value per row (shape (T,)), bound as ``ce1`` inside an expression; ``log_softmax`` keeps
    its input's shape."""
    b = ModelBuilder("ce")
    x, y = b.input("x", 4), b.target("y", 3)
    z = b.output(b.dense(x, 3, weight="w", bias=False), "z")
    b.loss(b.cross_entropy(z, y))
    lines = b.text().splitlines()
    assert lines[-1] == "loss loss = softmax_ce(z, y)", lines
    m = b.load(precision="f64")
    rng = np.random.default_rng(0)
    xs, labels = rng.normal(size=(5, 4)), np.array([0, 2, 1, 1, 0])
    assert_softmax_cross_entropy(m, xs, labels)

    b2 = ModelBuilder("rows")
    x2, y2 = b2.input("x", (2, 3)), b2.target("t", (2, 3))
    ce = b2.cross_entropy(x2, y2)
    assert ce.shape == (2,) and b2.log_softmax(x2).shape == (2, 3)
    b2.loss(b2.expr(f"sum i : 2 . {ce._ref()}[i]", 1))
    assert b2.text().splitlines()[-2:] == ["ce1 = softmax_ce(x, t)",
                                           "loss loss = sum i : 2 . ce1[i]"], b2.text()
    d = json.loads(b2.compile())
    assert [c["shape"] for c in d["chain"]] == [2, 1]
    with pytest.raises(ValueError, match="cross_entropy: the shapes 2x3 and 3 differ"):
        b2.cross_entropy(x2, b2.target("u", 3))


@pytest.mark.agda
@pytest.mark.skipif(_missing() is not None, reason=str(_missing()))
def test_logsumexp_and_detach(kernel_cache):
    """``b.logsumexp(z)`` is bound as ``lse1`` (a layer) and is log Σ exp z, its gradient the
    softmax; ``b.detach(a)`` is ``a`` with no gradient: ``sqerr(z + detach(z), y)`` has the
    gradient of ``z`` alone (``2z − y``), not twice it."""
    b = ModelBuilder("lse")
    x, y = b.input("x", 4), b.target("y", 3)
    z = b.output(b.dense(x, 3, weight="w", bias=False), "z")
    b.loss(b.logsumexp(z) - b.expr("sum j : 3 . y[j] * z[j]", (1,)))
    lines = b.text().splitlines()
    assert "lse1 = logsumexp(z)" in lines, lines
    assert lines[-1] == "loss loss = lse1 - (sum j : 3 . y[j] * z[j])", lines
    m = b.load(precision="f64")
    rng = np.random.default_rng(0)
    xs, labels = rng.normal(size=(5, 4)) * 40, np.array([0, 2, 1, 1, 0])   # large logits
    assert_softmax_cross_entropy(m, xs, labels)

    b2 = ModelBuilder("det")
    x2, y2 = b2.input("x", 4), b2.target("y", 3)
    z2 = b2.bind("z", b2.dense(x2, 3, weight="w", bias=False))
    out = b2.output(z2 + b2.detach(z2), "out")
    b2.loss(b2.sqerr(out, y2))
    assert "output out = z + detach(z)" in b2.text().splitlines()
    m2 = b2.load(precision="f64")
    _, g2 = m2.loss_and_gradients(xs, labels)
    zs = xs @ m2.params["w"].T
    np.testing.assert_allclose(g2["w"], (2 * zs - np.eye(3)[labels]).T @ xs / 5, rtol=1e-10)


def test_tanh_binds_an_input_that_is_not_a_name():
    """tanh reads its input four times (2σ(2a) − 1): a dense layer's sum is bound first, a name
    is read as it is."""
    b = ModelBuilder("tanh_net")
    x, y = b.input("x", 4), b.target("y", 3)
    h = b.tanh(b.dense(x, 5))
    out = b.output(b.tanh(b.dense(h, 3)))
    b.loss(b.sqerr(out, y))
    lines = [ln for ln in b.text().splitlines() if "=" in ln]
    assert lines[:2] == ["z1 = dense(w1, x, b1)", "h1 = tanh(z1)"], lines
    assert "output out = tanh(z2)" in lines


def lenet_like():
    b = ModelBuilder("lenet_like")
    x, y = b.input("x", (28, 28)), b.target("y", 10)
    a1 = b.maxpool(b.relu(b.conv2d(x, 6, 5, padding=2)), 2)
    a2 = b.avgpool(b.relu(b.conv2d(a1, 16, 5)), 3, 2)
    z = b.bind("z", b.dense(b.max(b.dense(a2, 32), 0), 10))
    b.output(z)
    m = b.bind("m", b.maxall(z))
    b.loss(b.expr("log(sum j : 10 . exp(z[j] - m)) + m - (sum j : 10 . y[j] * z[j])", 1))
    return b, {"p1": a1.shape, "p2": a2.shape, "z": z.shape, "m": m.shape}


@pytest.mark.agda
@pytest.mark.skipif(_missing() is not None, reason=str(_missing()))
def test_agda_and_the_extractor_accept_conv2d_pooling_and_max():
    from extract.ir import dump
    from extract.emit import sources
    b, shapes = lenet_like()
    d = json.loads(b.compile())
    chain = {a["name"]: flat(a["shape"]) for a in d["chain"]}
    assert {n: chain[n] for n in shapes} == shapes          # the builder's shapes are Agda's
    assert shapes["p1"] == (6, 14, 14) and shapes["p2"] == (16, 4, 4)
    sources.generate(dump.parse(d), "f32")


def assert_softmax_cross_entropy(m, xs, labels):
    """The model's batch-mean loss and the gradient of its weight ``w`` (logits ``xs @ w.T``)
    are the softmax cross-entropy's, computed here in NumPy."""
    logits = xs @ m.params["w"].T
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    n, k = len(xs), p.shape[1]
    loss, g = m.loss_and_gradients(xs, labels)
    np.testing.assert_allclose(loss, -np.log(p[np.arange(n), labels]).mean(), rtol=1e-12)
    np.testing.assert_allclose(g["w"], (p - np.eye(k)[labels]).T @ xs / n, rtol=1e-10)
