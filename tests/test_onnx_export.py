"""ONNX export (extract/export/, docs/onnx.md "Export"): the forward chain of a dump as an ONNX
graph that onnxruntime runs to the generated kernels' outputs.

1. Every zoo model (models/*.model), with random weights, exported by ``Model.export``: the
   graph passes ``onnx.checker`` (full check), takes the features with a batch axis ``N`` and
   gives the output binding; onnxruntime's outputs on random inputs agree with the kernels'
   ``predict`` and with the NumPy oracle of the dump (tests/oracle.py), to 1e-5 relative (the
   largest difference over the largest output); so does the loss per sample (``loss=True``).
   The general route alone (``recognise=False``: tabulated positions, Gather, ReduceSum,
   ArgMax) agrees too.
2. Round trips: every zoo model export -> import, to kernels that agree with the model's;
   import -> export -> import of the ONNX model zoo's MNIST network and a PyTorch
   ``Linear -> LayerNorm -> ReLU -> Linear``: the exported graph runs as the original does,
   and imports again to kernels that agree with the first.
3. Errors: a table past the limit names the binding and the node; a missing weights file, a
   missing parameter, a model without an output: one line, exit status 1, nothing written.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

if os.environ.get("CI") and not os.environ.get("ONNX_OPTIONAL"):
    import onnx  # noqa: F401 - CI must have it (scripts/setup.sh --test installs it)
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import oracle  # noqa: E402
import runtime  # noqa: E402
from extract.export import onnx as ex  # noqa: E402
from extract.ir import dump, ir  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ZOO = sorted(p.stem for p in (ROOT / "models").glob("*.model"))
MNIST_CONV = ROOT / "build" / "onnx" / "mnist-conv" / "model.onnx"

pytestmark = pytest.mark.agda


def _session(path_or_proto):
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    data = path_or_proto if isinstance(path_or_proto, (str, Path)) else \
        path_or_proto.SerializeToString()
    return ort.InferenceSession(str(data) if isinstance(data, Path) else data, opts,
                                providers=["CPUExecutionProvider"])


def _rel(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.abs(got - want).max() / np.abs(want).max())


def _consts(name: str) -> dict:
    """Values of a zoo model's consts (the encoder's GELU constants)."""
    return {"k1": np.float32([np.sqrt(2 / np.pi)]), "k2": np.float32([0.044715])} \
        if name == "encoder" else {}


@pytest.fixture(scope="module")
def zoo(kernel_cache):
    return {}


def _quick(load):
    """``load()`` with the kernels built at -O0 (what the export means, not what gcc makes of
    the C: the zoo and numerics tests build these models at -O3), in a table of loaded
    kernels of its own (tests/conftest.py: quick_builds)."""
    from conftest import at_O0
    with pytest.MonkeyPatch.context() as mp:
        at_O0(mp)
        return load()


def _model(zoo, name):
    if name not in zoo:
        consts = _consts(name)
        zoo[name] = _quick(lambda: runtime.load(ROOT / "models" / f"{name}.model",
                                                init="random", seed=3, weights=consts or None))
    return zoo[name]


def _features(m, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(0, 1, (n,) + m.input_shape).astype(np.float32)


# ---------------------------------------------------------------------------------------------
# 1. the zoo

@pytest.mark.parametrize("name", ZOO)
def test_a_zoo_model_exports_and_onnxruntime_agrees(zoo, name, tmp_path):
    m = _model(zoo, name)
    path = m.export(tmp_path / f"{name}.onnx")
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    assert [i.name for i in proto.graph.input] == [m.features]
    dims = [d.dim_param or d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim]
    assert dims == ["N", *m.input_shape]
    assert [o.name for o in proto.graph.output] == [m.prediction]
    stored = {i.name for i in proto.graph.initializer}
    assert set(m.param_shapes) <= stored          # every parameter and const, by its name
    x = _features(m, 7, seed=11)
    got = _session(path).run(None, {m.features: x})[0]
    assert got.shape == (7, *m.output_shape)
    assert _rel(got.reshape(7, -1), m.predict(x)) <= 1e-5
    # the oracle, independent of the kernels, in float64
    d = json.loads(Path(m.dump).read_text())
    for s in range(2):
        vals = {**m.get_params(), m.features: x[s], m.target: np.zeros(m.spec.input_shapes[
            m.target])}
        want = oracle.evaluate(d, vals, np.float64, forward_only=True)[m.prediction]
        assert _rel(got[s], want) <= 1e-5


@pytest.mark.parametrize("name", ZOO)
def test_the_loss_per_sample_is_a_second_output(zoo, name, tmp_path):
    m = _model(zoo, name)
    path = m.export(tmp_path / f"{name}.onnx", loss=True)
    sess = _session(path)
    assert [i.name for i in sess.get_inputs()] == [m.features, m.target]
    x = _features(m, 6, seed=12)
    labels = np.arange(6) % m.n_classes
    y = np.eye(m.n_classes, dtype=np.float32)[labels].reshape((6,) + m.spec.input_shapes[
        m.target])
    out, loss = sess.run(None, {m.features: x, m.target: y})
    assert loss.shape == (6, 1)
    assert _rel(loss.mean(), m.mean_loss(x, labels)) <= 1e-5


@pytest.mark.parametrize("name", ZOO)
def test_the_general_route_alone_agrees(zoo, name):
    """No pattern recognised: every selection a Gather of a tabulated table (or a GatherND
    after an argmax), every sum a ReduceSum, every maximum an ArgMax and its selection."""
    m = _model(zoo, name)
    model = dump.load(m.dump)
    proto = ex.to_onnx(model, m.get_params(), recognise=False)
    ops = {n.op_type for n in proto.graph.node}
    assert not ops & {"MatMul", "Conv", "ReduceMax"}, ops
    assert "Gather" in ops and "ReduceSum" in ops
    exported = ex._needed(model, [m.prediction])     # the bindings the output reads
    if any(isinstance(t, ir.ArgMax) for b in exported for t in _nodes(b.expr)):
        assert {"ArgMax", "GatherND"} <= ops
    x = _features(m, 3, seed=13)
    got = _session(proto).run(None, {m.features: x})[0]
    assert _rel(got.reshape(3, -1), m.predict(x)) <= 1e-5


def _nodes(e):
    todo = [e]
    while todo:
        x = todo.pop()
        yield x
        todo.extend(x.children())


def test_recognised_convolutions_leave_no_table(zoo):
    """The CNN's and LeNet-5's convolutions are Conv nodes, their pools reshapes: no Gather,
    and the file is the weights and little more (the tabulated route's tables: more)."""
    for name, convs in (("cnn", 3), ("lenet5", 2)):
        m = _model(zoo, name)
        model = dump.load(m.dump)
        proto = ex.to_onnx(model, m.get_params())
        ops = [n.op_type for n in proto.graph.node]
        assert ops.count("Conv") == convs and "Gather" not in ops, ops
        weights = sum(a.size for a in m.get_params().values()) * 4
        assert len(proto.SerializeToString()) < weights * 1.2
        tabulated = ex.to_onnx(model, m.get_params(), recognise=False)
        assert len(tabulated.SerializeToString()) > weights * 1.2


def test_a_maximum_over_computed_positions_is_exact():
    """``argmax`` of data then a selection at it: GatherND at the data's positions, the first
    of equal maxima (a tie), against the oracle."""
    d = _tie_dump()
    model = dump.parse(d)
    proto = ex.to_onnx(model, {"w": np.float32([1.0, 2.0, 3.0])}, recognise=False)
    assert "GatherND" in {n.op_type for n in proto.graph.node}
    x = np.float32([[1, 5, 5, 0], [7, 7, 2, 1], [0, 0, 0, 0]])
    got = _session(proto).run(None, {"x": x})[0]
    for s in range(3):
        want = oracle.evaluate(d, {"x": x[s], "w": np.float32([1, 2, 3])}, np.float64,
                               forward_only=True)["r"]
        np.testing.assert_array_equal(got[s], want)


def _tie_dump() -> dict:
    """``r[j] = w[j] · x[a + j]``, ``a`` the first position of the larger of ``x[0]``,
    ``x[1]``: a position of the data used as an index (a ``slide`` at an ``argmax``)."""
    def var(i, shape, sort="ar"):
        return {"op": "var", "sort": sort, "shape": shape, "idx": i}
    am = {"op": "argmax", "sort": "ix", "shape": 2, "s": 2,
          "body": {"op": "sels", "sort": "ar", "shape": 1,
                   "a": {"op": "slide", "sort": "ar", "shape": 3, "s": 2, "p": 2,
                         "i": var(0, 2, "ix"), "a": var(3, 4)},
                   "i": {"op": "ix_const", "sort": "ix", "shape": 3, "pos": 0}}}
    expr = {"op": "imaps", "sort": "ar", "shape": 3, "s": 3,
            "body": {"op": "bin", "fn": "mul", "sort": "ar", "shape": 1,
                     "a": {"op": "sels", "sort": "ar", "shape": 1, "a": var(1, 3),
                           "i": var(0, 3, "ix")},
                     "b": {"op": "sels", "sort": "ar", "shape": 1,
                           "a": {"op": "slide", "sort": "ar", "shape": 3, "s": 2, "p": 2,
                                 "i": am, "a": var(2, 4)},
                           "i": var(0, 3, "ix")}}}
    return {"format": "ad-expression-dump", "version": 5, "model": "tie",
            "generator": "test", "context": [{"name": "x", "shape": 4, "role": "input"},
                                             {"name": "w", "shape": 3, "role": "param"}],
            "chain": [{"name": "r", "shape": 3, "expr": expr}],
            "seed": {"of": "r", "expr": {"op": "one", "sort": "ar", "shape": 3}},
            "gradients": [{"name": "d_r", "wrt": "r", "shape": 3,
                           "expr": {"op": "one", "sort": "ar", "shape": 3}},
                          {"name": "d_w", "wrt": "w", "shape": 3,
                           "expr": {"op": "zero", "sort": "ar", "shape": 3}}],
            "outputs": {"prediction": "r"}}


# ---------------------------------------------------------------------------------------------
# 2. round trips

def _reimport(path: Path, out: Path, **kw):
    from extract.front.onnx import import_onnx
    imp = import_onnx(onnx.load(str(path)), **kw)
    model, weights = imp.save(out)
    return imp, runtime.load(model, weights=weights)


@pytest.mark.parametrize("name", ZOO)
def test_a_zoo_model_round_trips_through_onnx(zoo, name, tmp_path):
    """export -> import: the graph the exporter writes is one the importer reads back, to
    kernels that compute the zoo model's prediction from the weights the file carries."""
    m = _model(zoo, name)
    path = m.export(tmp_path / f"{name}.onnx")
    _, again = _quick(lambda: _reimport(path, tmp_path / "again"))
    x = _features(m, 5, seed=12)
    got = again.predict(x.reshape((5, *again.input_shape)))
    assert _rel(got.reshape(5, -1), m.predict(x)) <= 1e-5


@pytest.mark.usefixtures("quick_builds")
def test_mnist_conv_round_trips(tmp_path, kernel_cache):
    if not MNIST_CONV.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{MNIST_CONV} is missing: scripts/setup.sh --test fetches it")
        pytest.skip(f"{MNIST_CONV} is missing (scripts/setup.sh --test fetches it)")
    _, m1 = _reimport(MNIST_CONV, tmp_path / "a")
    exported = m1.export(tmp_path / "mnist.onnx")
    ops = {n.op_type for n in onnx.load(str(exported)).graph.node}
    assert "Conv" in ops and "Gather" not in ops, ops
    x = runtime.load_mnist(runtime.DEFAULT_DATA, "test")[0][:20]
    xin = x.reshape(20, 1, 28, 28).astype(np.float32)
    orig = np.concatenate([_session(MNIST_CONV).run(None, {"Input3": xin[i:i + 1]})[0]
                           for i in range(20)])
    again = _session(exported).run(None, {m1.features: xin})[0]
    assert _rel(again, orig) <= 1e-5
    assert _rel(again, m1.predict(xin)) <= 1e-5
    imp2, m2 = _reimport(exported, tmp_path / "b")
    assert imp2.batch
    assert _rel(m2.predict(xin), m1.predict(xin)) <= 1e-5
    assert (m2.predict(xin).argmax(1) == orig.argmax(1)).all()


@pytest.mark.torch
@pytest.mark.usefixtures("quick_builds")
def test_a_pytorch_layernorm_net_round_trips(tmp_path, kernel_cache):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.LayerNorm(6), torch.nn.ReLU(),
                              torch.nn.Linear(6, 3), torch.nn.Softmax(dim=1)).eval()
    src = tmp_path / "ln.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, torch.zeros(1, 4), str(src), dynamo=False, opset_version=17,
                          input_names=["x"], output_names=["out"],
                          dynamic_axes={"x": {0: "N"}, "out": {0: "N"}})
    _, m1 = _reimport(src, tmp_path / "a", loss="sqerr")
    exported = m1.export(tmp_path / "again.onnx")
    x = np.random.default_rng(5).normal(size=(9, 4)).astype(np.float32)
    with torch.no_grad():
        want = net(torch.from_numpy(x)).numpy()
    got = _session(exported).run(None, {m1.features: x})[0]
    assert _rel(got, want) <= 1e-5
    _, m2 = _reimport(exported, tmp_path / "b", loss="sqerr")
    assert _rel(m2.predict(x), m1.predict(x)) <= 1e-5


# ---------------------------------------------------------------------------------------------
# 3. errors

def test_a_table_past_the_limit_names_the_binding_and_the_node(zoo):
    m = _model(zoo, "cnn")
    with pytest.raises(ex.ExportError) as e:
        ex.to_onnx(dump.load(m.dump), m.get_params(), max_table=1000, recognise=False)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("binding c11: cannot export the node Slide `slide(t1, inp)`: its "
                          "table of positions has 14,400 elements, more than 1,000"), msg


def test_missing_weights_are_named():
    model = dump.load(ROOT / "build" / "dump" / "zoo" / "mlp.json")
    arrays = {a.name: np.zeros(ir.size(a.shape), np.float32) for a in model.params
              if a.name != "b2"}
    with pytest.raises(ex.ExportError, match=r"^no value for the param b2 \(shape 10\) in the "
                                             r"weights$"):
        ex.to_onnx(model, arrays)
    arrays["b2"] = np.full(10, np.nan, np.float32)
    with pytest.raises(ex.ExportError, match="^the param b2 must be finite"):
        ex.to_onnx(model, arrays)


def test_a_model_without_an_output_is_refused():
    model = dump.load(ROOT / "build" / "dump" / "chain.json")
    with pytest.raises(ex.ExportError, match=r"^model chain declares no output binding"):
        ex.to_onnx(model, {"a": np.ones(5, np.float32), "b": np.ones(5, np.float32)})


def _cli(*args, cwd):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "extract", "export", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=600)


def test_the_cli_writes_the_model_with_its_weights(zoo, tmp_path):
    m = _model(zoo, "mlp")
    weights = m.save(tmp_path / "w.npz")
    r = _cli("mlp", "--weights", str(weights), "--out", "mlp.onnx", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"wrote mlp.onnx (") and "inputs x; output out" in r.stdout
    x = _features(m, 4, seed=14)
    got = _session(tmp_path / "mlp.onnx").run(None, {"x": x})[0]
    assert _rel(got, m.predict(x)) <= 1e-5


@pytest.mark.parametrize("args, why", [
    (["mlp", "--weights", "nowhere.npz"], "error: no weights file nowhere.npz"),
    (["no_such_model"], "error: unknown model 'no_such_model'"),
    (["chain"], "error: model chain declares no output binding to export"),
    (["mlp", "--weights", "bad.npz"], "error: bad.npz: not a weights file"),
    (["mlp", "--out", "sub"], "error: --out sub is a directory"),
])
def test_the_cli_reports_an_error_in_one_line_and_writes_nothing(tmp_path, args, why):
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    (tmp_path / "sub").mkdir()
    before = sorted(p.name for p in tmp_path.iterdir())
    r = _cli(*args, cwd=tmp_path)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert r.stderr.startswith(why) and r.stderr.count("\n") == 1, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_usage_error_is_status_2(tmp_path):
    r = _cli("mlp", "--precision", "f16", cwd=tmp_path)
    assert r.returncode == 2 and "invalid choice" in r.stderr
