"""ONNX import (extract/front/onnx/) and the ONNX backend (runtime/onnx_backend.py).

1. The ONNX model zoo's MNIST network (as the qonnx wheel ships it; scripts/setup.sh --test
   fetches it into build/onnx/mnist-conv): imported, elaborated by Agda, its kernels run
   against the shipped output; its gradients against central differences; a short fine-tune.
2. ONNX's node tests of the supported operators, built with onnx's own loader
   (``collect_testcases``: onnx 1.23 no longer ships them as files), each through the whole
   pipeline; a test the model language cannot express is skipped with the importer's reason.
3. ``onnx.backend.test.BackendTest`` on the pytorch-converted models of those operators.
4. Rejections: an unsupported attribute or operator names the node, the operator and what.
"""
from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
MNIST_CONV = ROOT / "build" / "onnx" / "mnist-conv"

if os.environ.get("CI") and not os.environ.get("ONNX_OPTIONAL"):
    import onnx  # noqa: F401 - CI must have it (scripts/setup.sh --test installs it)
onnx = pytest.importorskip("onnx")
from onnx import helper, numpy_helper, TensorProto  # noqa: E402

from extract.front.onnx import OnnxImportError, import_onnx  # noqa: E402
import runtime.onnx_backend as backend  # noqa: E402

pytestmark = pytest.mark.agda


def _mnist_conv() -> Path:
    path = MNIST_CONV / "model.onnx"
    if not path.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{path} is missing: scripts/setup.sh --test fetches it")
        pytest.skip(f"{path} is missing (scripts/setup.sh --test fetches it)")
    return path


def _tensor(path: Path) -> np.ndarray:
    return numpy_helper.to_array(onnx.load_tensor(str(path)))


# ---------------------------------------------------------------------------------------------
# 1. the model zoo's MNIST network

@pytest.fixture(scope="module")
def mnist_rep(kernel_cache):
    return backend.prepare(onnx.load(str(_mnist_conv())), batch="auto", loss="ce")


def test_mnist_conv_imports_as_a_batched_model():
    imp = import_onnx(_mnist_conv())
    assert imp.batch and imp.name == "mnist_conv"
    assert imp.inputs == {"Input3": (1, 28, 28)}
    # the bias 8×1×1 is squeezed to 8, the 256×10 MatMul weight transposed for dense
    assert imp.params["Parameter6"].shape == (8,)
    assert imp.params["Parameter193_reshape1_t"].shape == (10, 256)
    assert "maxpool(ReLU114_Output_0, 3)" in imp.text   # 14×14 → 4×4, floor mode
    assert "conv2d(Input3, Parameter5, 2)" in imp.text  # SAME_UPPER, kernel 5: padding 2


def test_mnist_conv_matches_the_shipped_output(mnist_rep):
    x = _tensor(MNIST_CONV / "test_data_set_0" / "input_0.pb")
    want = _tensor(MNIST_CONV / "test_data_set_0" / "output_0.pb")
    (got,) = mnist_rep.run([x])
    assert got.shape == want.shape == (1, 10)
    rel = np.abs(got - want).max() / np.abs(want).max()
    assert rel <= 1e-5, (rel, got, want)
    assert got.argmax() == want.argmax()


def test_mnist_conv_gradients_match_central_differences(kernel_cache):
    """float64 kernels: the dump's gradients of the appended cross-entropy against central
    differences of its loss, at random coordinates of every parameter."""
    import runtime
    from runtime.spec import _compiled
    imp = import_onnx(_mnist_conv(), loss="ce")
    m = runtime.load(_compiled(imp.text, "<mnist_conv.model>"), weights=dict(imp.params),
                     precision="f64")
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, size=(2, 1, 28, 28))
    y = np.eye(10)[[3, 7]]
    # keep the logits moderate, so that the loss is not saturated
    for k in m.params:
        m.params[k] = np.asarray(m.params[k]) * (0.05 if k.startswith("Parameter193") else 1.0)
    _check_central_differences(m, {"Input3": x, "y": y}, rng)


def _check_central_differences(m, inputs, rng, h=1e-6):
    """float64 kernels: the dump's gradients against central differences of its loss, at 3
    random coordinates of every parameter."""
    _, grads = m.batch_gradients(inputs)
    for name, g in grads.items():
        w = m.params[name]
        for _ in range(3):
            i = tuple(int(rng.integers(d)) for d in w.shape)
            old = float(w[i])
            w[i] = old + h
            lp, _ = m.batch_gradients(inputs)
            w[i] = old - h
            lm, _ = m.batch_gradients(inputs)
            w[i] = old
            fd = (lp - lm) / (2 * h)
            assert abs(fd - g[i]) <= 1e-5 * max(1.0, abs(fd)), (name, i, fd, g[i])


@pytest.mark.slow
def test_mnist_conv_fine_tunes_with_the_trainer(tmp_path, kernel_cache):
    """The three-line path of docs/onnx.md: import, train from the imported weights, predict."""
    out = tmp_path / "imp"
    r = subprocess.run([sys.executable, "-m", "extract", "import", str(_mnist_conv()),
                        "--out", str(out), "--check"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    assert "checked: the Agda front end elaborates mnist_conv.model" in r.stdout, r.stdout
    r = subprocess.run([sys.executable, "-m", "extract", "import", str(_mnist_conv()),
                        "--out", str(tmp_path / "named"), "--name", "my-net"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and (tmp_path / "named" / "my_net.model").exists(), r.stderr
    assert "note: the model is named my_net (--name my-net is not a name" in r.stdout, r.stdout
    r = subprocess.run([sys.executable, "-m", "runtime", "train", str(out / "mnist_conv.model"),
                        "--weights", str(out / "mnist_conv.npz"), "--epochs", "1",
                        "--lr", "0.01", "--batch-size", "10", "--train-limit", "2000",
                        "--test-limit", "2000", "--no-progress", "--out", str(tmp_path / "ft")],
                       capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stderr
    before = float(re.search(r"test accuracy of .*: ([0-9.]+)", r.stdout).group(1))
    after = float(re.search(r"epoch 1/1 .* test acc ([0-9.]+)", r.stdout).group(1))
    assert before > 0.95 and after > 0.95, r.stdout
    assert (tmp_path / "ft" / "weights.npz").exists()


# ---------------------------------------------------------------------------------------------
# 2. ONNX's node tests

OPERATORS = ("Add", "Sub", "Mul", "Div", "Max", "Sum", "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Neg",
             "Reciprocal", "Identity", "Conv", "MaxPool", "AveragePool", "MatMul", "Gemm",
             "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Softmax",
             "LogSoftmax", "ReduceSum", "ReduceMean", "Pow", "BatchNormalization", "Sqrt",
             "LayerNormalization", "Gelu", "ConstantOfShape", "Erf",
             # issue #37
             "Concat", "Split", "Slice", "Dropout", "GlobalAveragePool", "GlobalMaxPool", "LRN",
             "Clip", "LeakyRelu", "PRelu", "Elu", "Resize", "DepthToSpace", "SpaceToDepth",
             "ConvTranspose", "ReduceMax")
# element types other than float32/float64 are out of scope: not collected at all
_OTHER_TYPES = re.compile(r"_(u?int\d+|float16|bfloat16|bool|string)(_|$)|_expanded")


def _node_cases():
    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)
    return [c for c in cases
            if len(c.model.graph.node) == 1 and c.model.graph.node[0].op_type in OPERATORS
            and not _OTHER_TYPES.search(c.name)]


NODE_CASES = _node_cases()


def test_the_node_tests_cover_every_supported_operator():
    ops = {c.model.graph.node[0].op_type for c in NODE_CASES}
    assert ops == set(OPERATORS), set(OPERATORS) - ops
    assert len(NODE_CASES) > 150


@pytest.mark.parametrize("case", NODE_CASES, ids=[c.name for c in NODE_CASES])
@pytest.mark.usefixtures("quick_builds")
def test_onnx_node(case, kernel_cache):
    try:
        rep = backend.prepare(case.model)
        outs = [rep.run(list(ins)) for ins, _ in case.data_sets]
    except OnnxImportError as e:
        pytest.skip(f"not expressible: {e}")
    for got, (_, want) in zip(outs, case.data_sets):
        # two float32 roundings of the largest output at least: a Winograd convolution
        # (extract/winograd.py) spreads rounding of that size onto outputs that are exactly 0
        # (ConvTranspose's output_padding)
        atol = max(case.atol, 1e-6, 2.4e-7 * float(np.abs(want[0]).max(initial=0)))
        np.testing.assert_allclose(got[0], want[0], rtol=case.rtol, atol=atol)


# ---------------------------------------------------------------------------------------------
# 3. ONNX's backend test runner, on its pytorch-converted models

# every pytorch-converted model whose operators are all supported: through our runner, passed
# or skipped with the importer's reason (strides, groups, pads, …)
def _converted_cases():
    from onnx.backend.test.loader import load_model_tests
    out = []
    for c in load_model_tests(kind="pytorch-converted"):
        m = onnx.load(os.path.join(c.model_dir, "model.onnx"))
        if {n.op_type for n in m.graph.node} <= set(OPERATORS):
            out.append(c)
    return out


CONVERTED = _converted_cases()


@pytest.mark.parametrize("case", CONVERTED, ids=[c.name for c in CONVERTED])
@pytest.mark.usefixtures("quick_builds")
def test_onnx_pytorch_converted(case, kernel_cache):
    import glob
    m = onnx.load(os.path.join(case.model_dir, "model.onnx"))
    try:
        rep = backend.prepare(m)
    except OnnxImportError as e:
        pytest.skip(f"not expressible: {e}")
    sets = sorted(glob.glob(os.path.join(case.model_dir, "test_data_set_*")))
    assert sets
    for d in sets:
        ins = [_tensor(Path(p)) for p in sorted(glob.glob(os.path.join(d, "input_*.pb")))]
        want = [_tensor(Path(p)) for p in sorted(glob.glob(os.path.join(d, "output_*.pb")))]
        got = rep.run(ins)
        np.testing.assert_allclose(got[0], want[0], rtol=case.rtol, atol=max(case.atol, 1e-6))


# and ONNX's own runner (onnx.backend.test.BackendTest) on those that import
RUNNER = ("Conv2d", "Conv2d_no_bias", "Conv2d_padding", "Conv2d_strided", "ReLU", "Sigmoid",
          "Softmax", "Softmin", "LogSoftmax", "Linear", "Linear_no_bias", "log_softmax_lastdim",
          "log_softmax_dim3", "softmax_lastdim", "softmax_functional_dim3", "AvgPool2d",
          "AvgPool2d_stride", "Tanh", "BatchNorm1d_3d_input_eval", "BatchNorm2d_eval",
          "BatchNorm2d_momentum_eval", "BatchNorm3d_eval", "BatchNorm3d_momentum_eval",
          "MaxPool2d")
_BT = onnx.backend.test.BackendTest(backend.Backend, __name__)
for _name in RUNNER:
    _BT.include(rf"^test_{_name}_cpu$")
_RUNNER_CASES = _BT.test_cases  # (a property that builds new classes at every call)
for _cls_name, _cls in _RUNNER_CASES.items():
    for _attr in [a for a in vars(_cls) if a.startswith("test_")]:
        if not any(_attr == f"test_{n}_cpu" for n in RUNNER):
            delattr(_cls, _attr)   # only ours: not thousands of skips
    # built at -O0 as test_onnx_pytorch_converted's are: the same modules, built once
    globals()[_cls_name] = pytest.mark.usefixtures("quick_builds")(_cls)


def test_the_runner_ran_what_it_was_given():
    ran = {a for c in _RUNNER_CASES.values() for a in vars(c) if a.startswith("test_")}
    assert ran == {f"test_{n}_cpu" for n in RUNNER}


# ---------------------------------------------------------------------------------------------
# 4. what cannot be expressed is rejected, naming the node

def _one_node(op, inputs, output, attrs=None, inits=()):
    node = helper.make_node(op, [i[0] for i in inputs], [output[0]], name="n1", **(attrs or {}))
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs
         if n not in {i.name for i in inits}],
        [helper.make_tensor_value_info(output[0], TensorProto.FLOAT, output[1])],
        initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("attrs, what", [
    ({"kernel_shape": [3, 3], "strides": [2, 1]}, "strides=[2, 1]"),
    ({"kernel_shape": [3, 3], "dilations": [2, 2]}, "dilations=[2, 2]"),
    ({"kernel_shape": [3, 3], "group": 2}, "the kernel has 2 channels per group, 2 groups, the "
                                           "input 2"),
    ({"kernel_shape": [3, 3], "pads": [1, 0, -1, 0]}, "pads=[1, 0, -1, 0]: a negative padding"),
])
def test_an_unsupported_conv_attribute_names_the_node(attrs, what):
    w = numpy_helper.from_array(np.zeros((2, 2, 3, 3), np.float32), "w")
    m = _one_node("Conv", [("x", [1, 2, 6, 6]), ("w", [2, 2, 3, 3])], ("y", None), attrs, [w])
    with pytest.raises(OnnxImportError) as e:
        import_onnx(m, batch=False)
    assert "node 'n1' (Conv)" in str(e.value) and what in str(e.value)


def test_an_unsupported_operator_and_an_integer_input_are_named():
    m = _one_node("Sin", [("x", [3])], ("y", [3]))
    with pytest.raises(OnnxImportError, match=r"node 'n1' \(Sin\): operator not supported"):
        import_onnx(m)
    m = _one_node("Relu", [("x", [3])], ("y", [3]))
    m.graph.input[0].type.tensor_type.elem_type = TensorProto.INT32
    with pytest.raises(OnnxImportError, match="graph input 'x': element type INT32"):
        import_onnx(m)


def test_empty_dynamic_and_sequence_inputs_are_named():
    m = _one_node("Relu", [("x", [0, 3])], ("y", [0, 3]))
    with pytest.raises(OnnxImportError, match=r"graph input 'x' of shape \[0, 3\]: a dimension "
                                              r"of size 0 \(empty tensors"):
        import_onnx(m, batch=False)
    m = _one_node("Relu", [("x", ["N", 3])], ("y", ["N", 3]))
    with pytest.raises(OnnxImportError, match=r"graph input 'x' of shape \['N', 3\]: dimension "
                                              r"'N' is not a fixed positive size"):
        import_onnx(m, batch=False)
    # the backend's prepare takes the whole tensor as one sample by default: its error says
    # how to make a symbolic leading axis the batch
    with pytest.raises(OnnxImportError, match=r"a symbolic leading axis is the batch with "
                                              r"batch=True or \"auto\""):
        backend.prepare(m)
    m2 = _one_node("Relu", [("x", [3, "M"])], ("y", [3, "M"]))
    with pytest.raises(OnnxImportError) as info:
        import_onnx(m2, batch=False)
    assert "batch=True" not in str(info.value)  # not the leading axis: no such hint
    # a sequence input reaches the importer through the backend (it is not an integer input
    # to specialise), which names it
    seq = helper.make_tensor_sequence_value_info("x", TensorProto.FLOAT, [3])
    node = helper.make_node("Identity", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [seq],
                              [helper.make_tensor_sequence_value_info("y", TensorProto.FLOAT, [3])])
    with pytest.raises(OnnxImportError, match="graph input 'x': a sequence, not a tensor"):
        backend.prepare(helper.make_model(graph))


def test_the_cli_reports_an_error_in_one_line_and_writes_nothing(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a protobuf at all")
    r = subprocess.run([sys.executable, "-m", "extract", "import", str(bad), "--out",
                        str(tmp_path / "out")], capture_output=True, text=True)
    assert r.returncode == 1 and r.stderr.startswith("error: ") and r.stderr.count("\n") == 1
    assert not (tmp_path / "out").exists()
    m = _one_node("Sin", [("x", [1, 3])], ("y", [1, 3]))
    onnx.save(m, str(tmp_path / "sin.onnx"))
    r = subprocess.run([sys.executable, "-m", "extract", "import", str(tmp_path / "sin.onnx"),
                        "--out", str(tmp_path / "out")], capture_output=True, text=True)
    assert r.returncode == 1 and "(Sin): operator not supported" in r.stderr
    assert not (tmp_path / "out").exists()
    (tmp_path / "taken.model").write_text("x")
    r = subprocess.run([sys.executable, "-m", "extract", "import", str(tmp_path / "sin.onnx"),
                        "--out", str(tmp_path / "taken.model")], capture_output=True, text=True)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "is a file" in r.stderr
    assert (tmp_path / "taken.model").read_text() == "x"


def _net(nodes, inits=None, out="out"):
    """An ONNX model of ``nodes`` from ``x`` (N × 4) to ``out`` (N × 3); ``inits``: the
    initializers, name -> array (stored as float32)."""
    graph = helper.make_graph(
        nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["N", 3])],
        [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in (inits or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _constant(name, value):
    return helper.make_node("Constant", [], [name],
                            value=numpy_helper.from_array(np.asarray(value, np.float32)))


def _load_f64(imp):
    import runtime
    from runtime.spec import _compiled
    return runtime.load(_compiled(imp.text, "<net.model>"), weights=dict(imp.params),
                        precision="f64")


def test_a_softmax_output_takes_the_cross_entropy_of_its_logits(kernel_cache):
    """A network that ends in Softmax (PyTorch's ``torch.softmax`` before export) keeps the
    probabilities as its output; ``--loss auto`` (cross-entropy) is taken of the logits before
    it, not of the probabilities (a second softmax, whose loss cannot fall below ~1.46)."""
    rng = np.random.default_rng(0)
    w = rng.normal(size=(4, 3))
    imp = import_onnx(_net([helper.make_node("MatMul", ["x", "w"], ["z"]),
                            helper.make_node("Softmax", ["z"], ["p"], axis=-1)],
                           {"w": w}, out="p"))
    assert "maxall(p)" not in imp.text, imp.text
    m = _load_f64(imp)
    x, y = rng.normal(size=(5, 4)), np.array([0, 2, 1, 1, 0])
    z = x @ w.astype(np.float32)            # the weights file holds float32
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(m.predict(x), p, rtol=1e-12)
    loss, _ = m.loss_and_gradients(x, y)
    np.testing.assert_allclose(loss, -np.log(p[np.arange(5), y]).mean(), rtol=1e-12)
    _check_central_differences(m, {"x": x, "y": np.eye(3)[y]}, rng)


def test_a_constant_node_becomes_a_const_that_training_leaves_alone(kernel_cache, tmp_path):
    """The model language has no decimals: a ``Constant`` node's 0.1 is declared a ``const``,
    its value in the weights; the kernels read it, training never changes it, and it has no
    gradient (the initializer ``w`` is a weight: trained)."""
    model = _net([_constant("c", 0.1), helper.make_node("MatMul", ["x", "w"], ["z"]),
                  helper.make_node("Mul", ["z", "c"], ["out"])], {"w": np.ones((4, 3))})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        imp = import_onnx(model, loss="sqerr")
    assert imp.consts == ("c",)
    assert any(l.startswith("const  c : 1") for l in imp.text.splitlines()), imp.text
    assert any(l.startswith("param  w_t : 3x4") for l in imp.text.splitlines()), imp.text
    m = _load_f64(imp)
    assert m.consts == ("c",) and float(m.params["c"][0]) == np.float32(0.1)
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(8, 4)), rng.normal(size=(8, 3))
    np.testing.assert_allclose(m.run({"x": x}), (x @ np.ones((4, 3))) * float(np.float32(0.1)),
                               rtol=1e-12)
    _, grads = m.batch_gradients({"x": x, "y": y})
    assert sorted(grads) == ["w_t"]
    _check_central_differences(m, {"x": x, "y": y}, rng)
    before = m.get_params()
    m.train(x, y, epochs=3, batch_size=4, lr=0.1, momentum=0.5, progress=False)
    assert m.params["c"].tobytes() == before["c"].tobytes()
    assert not np.array_equal(m.params["w_t"], before["w_t"])
    # saved: the weights, and the consts alone, from which the parameters start fresh
    import runtime
    model, weights = imp.save(tmp_path)
    fresh = runtime.load(model, weights=tmp_path / "net.consts.npz")
    assert fresh.params["c"][0] == np.float32(0.1)
    assert not np.array_equal(fresh.params["w_t"], runtime.load(model, weights=weights).params["w_t"])


@pytest.mark.parametrize("k", [1, 2, 3])
def test_pow_by_a_constant_whole_exponent(kernel_cache, k):
    """``x ** k`` (PyTorch's ``x ** 2`` exports as Pow with a constant exponent) becomes a
    product, with the gradients of one; ONNX's own Pow tests all feed the exponent as an
    input, which stays an error."""
    rng = np.random.default_rng(1)
    w = rng.normal(size=(4, 3))
    nodes = [helper.make_node("MatMul", ["x", "w"], ["z"]),
             helper.make_node("Pow", ["z", "k"], ["out"])]
    m = _load_f64(import_onnx(_net(nodes, {"w": w, "k": float(k)}), loss="sqerr"))
    x = rng.normal(size=(5, 4))
    np.testing.assert_allclose(m.predict(x), (x @ w.astype(np.float32)) ** k, rtol=1e-12)
    _check_central_differences(m, {"x": x, "y": rng.normal(size=(5, 3))}, rng)
    for bad, message in [(2.5, "not a whole number"), (9.0, "not a whole number from 1 to 8"),
                         (-1.5, "not a whole number"), (0.0, "not a whole number")]:
        with pytest.raises(OnnxImportError, match=message):
            import_onnx(_net(nodes, {"w": w, "k": bad}))


@pytest.mark.parametrize("op", ["Sqrt", "Pow 0.5", "Pow -0.5"])
def test_sqrt_and_pow_one_half(kernel_cache, op):
    """``Sqrt`` and ``Pow`` by a constant 0.5 are ``sqrt``, by -0.5 ``recip(sqrt(…))``: against
    ONNX's reference evaluator (of ``√(z · z + c)``, ``c > 0`` a parameter), with the gradients
    of one."""
    from onnx.reference import ReferenceEvaluator
    rng = np.random.default_rng(11)
    root = (helper.make_node("Sqrt", ["s"], ["out"]) if op == "Sqrt"
            else helper.make_node("Pow", ["s", "half"], ["out"]))
    nodes = [helper.make_node("MatMul", ["x", "w"], ["z"]), helper.make_node("Mul", ["z", "z"], ["zz"]),
             helper.make_node("Add", ["zz", "c"], ["s"]), root]
    inits = {"w": rng.normal(size=(4, 3)), "c": rng.uniform(0.5, 2.0, size=3)}
    half = {"Sqrt": {}, "Pow 0.5": {"half": 0.5}, "Pow -0.5": {"half": -0.5}}[op]
    model = _net(nodes, {**inits, **half})
    imp = import_onnx(model, loss="sqerr")
    assert ("out = recip(sqrt(s))" if op == "Pow -0.5" else "out = sqrt(s)") in imp.text, imp.text
    x = rng.normal(size=(5, 4)).astype(np.float32).astype(np.float64)
    want = ReferenceEvaluator(model).run(None, {"x": x.astype(np.float32)})[0]
    m = _load_f64(imp)
    np.testing.assert_allclose(m.predict(x), want, rtol=1e-6)
    _check_central_differences(m, {"x": x, "y": rng.normal(size=(5, 3))}, rng)


def test_a_folded_constant_is_a_const_too_and_a_folded_weight_a_param():
    """``Constant → MatMul`` folds the constant (transposed): still a constant of the graph, a
    ``const``; an initializer times a Constant, folded, is a weight: a ``param``."""
    imp = import_onnx(_net([_constant("c", np.ones((4, 3))),
                            helper.make_node("MatMul", ["x", "c"], ["out"])]))
    assert imp.consts == ("c_t",) and "const  c_t : 3x4" in imp.text, imp.text
    imp = import_onnx(_net([_constant("two", 2.0), helper.make_node("Mul", ["w", "two"], ["w2"]),
                            helper.make_node("MatMul", ["x", "w2"], ["out"])],
                           {"w": np.ones((4, 3))}))
    assert imp.consts == () and "const" not in imp.text, imp.text


class _ViewNet:
    """A PyTorch network flattening with ``x.view(...)`` of its own sizes, the tutorials' way,
    exported with a dynamic batch axis: ``Shape`` arithmetic (Gather, Unsqueeze, Concat, Mul)
    that folds to a constant target shape; ``torch.tanh`` exports as ``Tanh``."""

    VIEWS = {
        "size0": lambda h: h.view(h.size(0), -1),
        "product": lambda h: h.view(-1, h.size(1) * h.size(2) * h.size(3)),
        "squeeze": lambda h: h.view(h.shape[0], -1, 1).squeeze(-1),
    }

    @staticmethod
    def export(view: str, path: Path):
        torch = pytest.importorskip("torch")

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = torch.nn.Conv2d(1, 2, 3)
                self.fc = torch.nn.Linear(2 * 4 * 4, 3)

            def forward(self, x):
                return self.fc(_ViewNet.VIEWS[view](torch.tanh(self.conv(x))))

        torch.manual_seed(0)
        net = Net().double()
        torch.onnx.export(net, torch.zeros(1, 1, 6, 6, dtype=torch.float64), str(path),
                          dynamo=False, input_names=["x"], output_names=["out"],
                          dynamic_axes={"x": {0: "N"}, "out": {0: "N"}})
        return net


@pytest.mark.parametrize("view", sorted(_ViewNet.VIEWS))
def test_a_pytorch_view_of_its_own_sizes_and_tanh_import(tmp_path, kernel_cache, view):
    torch = pytest.importorskip("torch")
    net = _ViewNet.export(view, tmp_path / "net.onnx")
    graph_ops = {n.op_type for n in onnx.load(str(tmp_path / "net.onnx")).graph.node}
    assert {"Shape", "Tanh"} <= graph_ops, graph_ops
    imp = import_onnx(onnx.load(str(tmp_path / "net.onnx")), loss="sqerr")
    assert "tanh(" in imp.text and imp.batch
    m = _load_f64(imp)
    rng = np.random.default_rng(2)
    x = rng.normal(size=(5, 1, 6, 6))
    with torch.no_grad():   # the imported weights are float32: give PyTorch the same
        for p in net.parameters():
            p.copy_(p.float().double())
        want = net(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(m.predict(x), want, rtol=1e-12, atol=1e-13)
    _check_central_differences(m, {"x": x[:2], imp.target: rng.normal(size=(2, 3))}, rng)


def test_sliced_and_cast_shapes_fold(kernel_cache):
    """``Shape → Slice → Concat → Cast → Reshape`` (other exporters' way to keep the batch
    axis): the batch axis reads 1, the rest is the constant."""
    def i64(name, v):
        return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
            np.asarray(v, np.int64)))
    nodes = [helper.make_node("Shape", ["x"], ["s"]), i64("lo", [0]), i64("hi", [1]),
             helper.make_node("Slice", ["s", "lo", "hi"], ["n"]), i64("rest", [2, 2]),
             helper.make_node("Concat", ["n", "rest"], ["to"], axis=0),
             helper.make_node("Cast", ["to"], ["to64"], to=TensorProto.INT64),
             helper.make_node("Reshape", ["x", "to64"], ["x3"]),
             helper.make_node("ReduceSum", ["x3"], ["r"], axes=[2], keepdims=0),
             helper.make_node("MatMul", ["r", "w"], ["out"])]
    model = _net(nodes, {"w": np.arange(6).reshape(2, 3)})
    model.opset_import[0].version = 11    # ReduceSum's axes as an attribute
    imp = import_onnx(model, loss="sqerr")
    x = np.random.default_rng(4).normal(size=(5, 4))
    want = x.reshape(5, 2, 2).sum(2) @ np.arange(6).reshape(2, 3)
    np.testing.assert_allclose(_load_f64(imp).predict(x), want, rtol=1e-12)


def _i64(name, v):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
        np.asarray(v, np.int64)))


# shape arithmetic folded to the target of a Reshape of x (N × 4): each against ONNX's own
# reference evaluator at N = 5
_SHAPES = {
    "shape start/end": [helper.make_node("Shape", ["x"], ["n"], start=0, end=-1),
                        _i64("rest", [2, 2]),
                        helper.make_node("Concat", ["n", "rest"], ["to"], axis=0)],
    "gather -2": [helper.make_node("Shape", ["x"], ["s"]), _i64("i", -2),
                  helper.make_node("Gather", ["s", "i"], ["n0"]), _i64("ax", [0]),
                  helper.make_node("Unsqueeze", ["n0", "ax"], ["n"]), _i64("rest", [2, 2]),
                  helper.make_node("Concat", ["rest", "n"], ["to0"], axis=-1), _i64("j", [2, 0, 1]),
                  helper.make_node("Gather", ["to0", "j"], ["to"], axis=0)],
    "slice backwards": [helper.make_node("Shape", ["x"], ["s"]), _i64("lo", [-1]),
                        _i64("hi", [-100]), _i64("ax", [0]), _i64("st", [-1]),
                        helper.make_node("Slice", ["s", "lo", "hi", "ax", "st"], ["r"]),
                        _i64("j", [1, 0]), helper.make_node("Gather", ["r", "j"], ["to"])],
    "squeezed constant": [helper.make_node("Shape", ["x"], ["s"]), _i64("lo", [0]),
                          _i64("hi", [1]), helper.make_node("Slice", ["s", "lo", "hi"], ["n"]),
                          _i64("c", [[2], [2]]), _i64("ax", [1]),
                          helper.make_node("Squeeze", ["c", "ax"], ["rest"]),
                          helper.make_node("Concat", ["n", "rest"], ["to"], axis=0)],
}


@pytest.mark.parametrize("case", sorted(_SHAPES))
def test_shape_arithmetic_folds_as_onnx_computes_it(kernel_cache, case):
    """Shape's start/end, Gather's negative index and axis, Slice backwards and Squeeze of a
    constant fold to the target shape
    ONNX's reference evaluator computes (the network's output is the reshaped input); the batch
    size may move through them, and ends first."""
    from onnx.reference import ReferenceEvaluator
    nodes = [*_SHAPES[case], helper.make_node("Reshape", ["x", "to"], ["out"])]
    graph = helper.make_graph(
        nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    x = np.random.default_rng(5).normal(size=(5, 4))
    want = ReferenceEvaluator(model).run(None, {"x": x.astype(np.float32)})[0]
    imp = import_onnx(model, loss="sqerr")
    assert imp.output_shape[1:] == want.shape[1:], (imp.output_shape, want.shape)
    np.testing.assert_allclose(_load_f64(imp).predict(x).reshape(want.shape), want, rtol=1e-6)


def test_the_batch_size_as_a_value_is_an_error():
    """``z / x.size(0)``: the batch size read as 1 would divide by 1; and a Reshape that puts
    the batch size anywhere but first."""
    mean = [helper.make_node("MatMul", ["x", "w"], ["z"]), helper.make_node("Shape", ["x"], ["s"]),
            _i64("i", 0), helper.make_node("Gather", ["s", "i"], ["n"]),
            helper.make_node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT),
            helper.make_node("Div", ["z", "nf"], ["out"])]
    with pytest.raises(OnnxImportError, match=r"\(Div\): uses the batch size as a value"):
        import_onnx(_net(mean, {"w": np.ones((4, 3))}))
    # pe[:x.size(0)] (the Transformer tutorial's positional encoding): a bound, not data
    pe = [helper.make_node("Shape", ["x"], ["s"]), _i64("i", 0),
          helper.make_node("Gather", ["s", "i"], ["n0"]), _i64("ax", [0]),
          helper.make_node("Unsqueeze", ["n0", "ax"], ["n"]), _i64("lo", [0]),
          helper.make_node("Slice", ["pe", "lo", "n"], ["pes"]),
          helper.make_node("Add", ["x", "pes"], ["xp"]),
          helper.make_node("MatMul", ["xp", "w"], ["out"])]
    with pytest.raises(OnnxImportError, match=r"\(Slice\): uses the batch size as a value"):
        import_onnx(_net(pe, {"w": np.ones((4, 3)), "pe": np.arange(32.0).reshape(8, 4)}))
    swap = [helper.make_node("Shape", ["x"], ["s"]), _i64("j", [1, 0]),
            helper.make_node("Gather", ["s", "j"], ["to"]),
            helper.make_node("Reshape", ["x", "to"], ["x2"]),
            helper.make_node("MatMul", ["x2", "w"], ["out"])]
    with pytest.raises(OnnxImportError, match="the batch size is not the first dimension"):
        import_onnx(_net(swap, {"w": np.ones((4, 3))}))


@pytest.mark.parametrize("to,value,want", [
    (TensorProto.UINT8, 300.7, 44), (TensorProto.INT8, -1.9, -1),
    (TensorProto.FLOAT16, 1e-8, 0.0), (TensorProto.DOUBLE, 0.1, 0.1),
    (TensorProto.BFLOAT16, 0.5, None)])
def test_a_constant_is_cast_as_onnx_casts(to, value, want):
    """The value a cast constant becomes (wrapped, toward zero, rounded to float16); bfloat16 is
    an error, not a zero."""
    c = helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(
        np.asarray(value, np.float64)))
    nodes = [c, helper.make_node("Cast", ["c"], ["ci"], to=to),
             helper.make_node("Cast", ["ci"], ["cf"], to=TensorProto.FLOAT),
             helper.make_node("MatMul", ["x", "w"], ["z"]),
             helper.make_node("Mul", ["z", "cf"], ["out"])]
    if want is None:
        with pytest.raises(OnnxImportError, match="to BFLOAT16: a constant may be cast to"):
            import_onnx(_net(nodes, {"w": np.ones((4, 3))}))
        return
    imp = import_onnx(_net(nodes, {"w": np.ones((4, 3))}))
    (name,) = imp.consts
    assert imp.params[name].ravel()[0] == np.float32(want), imp.params[name]


def test_integer_division_of_constants_is_toward_zero():
    """ONNX divides integers toward zero (7 / 2 = 3, -7 / 2 = -3): not 3.5, not floor's -4."""
    nodes = [_i64("a", [7, -7, 6]), _i64("b", [2, 2, -4]), helper.make_node("Div", ["a", "b"], ["q"]),
             helper.make_node("Cast", ["q"], ["qf"], to=TensorProto.FLOAT),
             helper.make_node("MatMul", ["x", "w"], ["z"]), helper.make_node("Mul", ["z", "qf"], ["out"])]
    imp = import_onnx(_net(nodes, {"w": np.ones((4, 3))}))
    (name,) = imp.consts
    assert imp.params[name].ravel().tolist() == [3, -3, -1]


def test_malformed_shape_arithmetic_is_an_import_error():
    """Errors of numpy inside an operator are the importer's, naming the node; so is a stride
    of 0 (a division by zero)."""
    for nodes, what in [
            ([helper.make_node("Shape", ["x"], ["s"]), _i64("i", 0),
              helper.make_node("Gather", ["s", "i"], ["g"], axis=1)], "axis 1 of a tensor of rank 1"),
            ([helper.make_node("Shape", ["x"], ["s"]),
              helper.make_node("Concat", ["s", "s"], ["g"])], "no axis attribute"),
            ([_i64("c", [[2, 3]]), _i64("ax", [1]), helper.make_node("Squeeze", ["c", "ax"], ["g"])],
             "only axes of size 1")]:
        nodes = nodes + [helper.make_node("MatMul", ["x", "w"], ["out"])]
        with pytest.raises(OnnxImportError, match=what):
            import_onnx(_net(nodes, {"w": np.ones((4, 3))}))
    graph = helper.make_graph(
        [helper.make_node("MaxPool", ["x"], ["out"], kernel_shape=[2, 2], strides=[0, 0])],
        "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 4, 4])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)])
    with pytest.raises(OnnxImportError, match=r"\(MaxPool\)"):
        import_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))


def test_pow_of_constants_folds():
    """``x.size(1) ** -0.5`` (attention's scale): both constants, so a constant."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]), _i64("i", 1),
             helper.make_node("Gather", ["s", "i"], ["d"]),
             helper.make_node("Cast", ["d"], ["df"], to=TensorProto.FLOAT),
             _constant("half", -0.5), helper.make_node("Pow", ["df", "half"], ["scale"]),
             helper.make_node("MatMul", ["x", "w"], ["z"]),
             helper.make_node("Mul", ["z", "scale"], ["out"])]
    imp = import_onnx(_net(nodes, {"w": np.ones((4, 3))}))
    (name,) = imp.consts
    assert imp.params[name].ravel()[0] == np.float32(0.5)


def test_shape_arithmetic_of_a_computed_tensor_is_named():
    """Gather of a computed tensor (an embedding lookup, say) is not shape arithmetic."""
    model = _net([helper.make_node("MatMul", ["x", "w"], ["z"]), _constant("i", [0, 1, 2]),
                  helper.make_node("Gather", ["z", "i"], ["out"], axis=1)], {"w": np.ones((4, 3))})
    with pytest.raises(OnnxImportError, match=r"\(Gather\): only of constants"):
        import_onnx(model)


def test_a_batch_size_fixed_at_export_is_named():
    """Exported at batch 4 without dynamic_axes: 4 × 2 × 3 has no batch axis to find (a
    warning says so); with ``batch=True``, a Reshape to (4, -1) names the fixed batch size."""
    from extract.front.onnx import OnnxBatchWarning
    graph = helper.make_graph(
        [_i64("to", [4, -1]), helper.make_node("Reshape", ["x", "to"], ["f"]),
         helper.make_node("MatMul", ["f", "w"], ["out"])], "net",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 2, 3])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [4, 3])],
        [numpy_helper.from_array(np.ones((6, 3), np.float32), "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.warns(OnnxBatchWarning, match=r"'x' of shape \[4, 2, 3\]: no batch axis found"):
        imp = import_onnx(model)
    assert not imp.batch and imp.inputs == {"x": (4, 2, 3)}
    with pytest.raises(OnnxImportError, match="holds the batch size 4 the model was exported with"):
        import_onnx(model, batch=True)
    flat = helper.make_graph(                     # an MLP exported at batch 4: 4 × 784
        [helper.make_node("MatMul", ["x", "w"], ["out"])], "net",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [4, 3])],
        [numpy_helper.from_array(np.ones((6, 3), np.float32), "w")])
    with pytest.warns(OnnxBatchWarning, match=r"'x' of shape \[4, 6\]"):
        import_onnx(helper.make_model(flat, opset_imports=[helper.make_opsetid("", 13)]))


# ---------------------------------------------------------------------------------------------
# BatchNormalization in inference mode: folded to x · a + b per channel

def _batchnorm(shape, opset=15, attrs=None, consts=("s", "b", "m", "v"), outputs=("out",),
               name="n1", seed=6):
    """A one-node BatchNormalization of ``x`` (``shape``, channels on axis 1) with non-trivial
    statistics: those named in ``consts`` are initializers, the others graph inputs."""
    rng = np.random.default_rng(seed)
    C = shape[1]
    stats = {"s": rng.normal(size=C), "b": rng.normal(size=C), "m": rng.normal(size=C),
             "v": rng.uniform(0.2, 3.0, size=C)}
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], list(outputs),
                            name=name, **(attrs or {}))
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)]
        + [helper.make_tensor_value_info(k, TensorProto.FLOAT, [C]) for k in stats
           if k not in consts],
        [helper.make_tensor_value_info(outputs[0], TensorProto.FLOAT, shape)]
        + [helper.make_tensor_value_info(o, TensorProto.FLOAT, [C]) for o in outputs[1:]],
        [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in stats.items()
         if k in consts])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("shape, batch, opset, attrs", [
    (["N", 3, 4, 5], True, 15, {"epsilon": 1e-3, "training_mode": 0}),
    (["N", 3], True, 9, {}),
    ([2, 3, 4, 5], False, 14, {"epsilon": 0.25}),
    ([2, 3], False, 15, {"momentum": 0.5}),
], ids=["NCHW", "NC", "NCHW-whole", "NC-whole"])
def test_batch_normalization_folds_as_onnx_computes_it(kernel_cache, shape, batch, opset, attrs):
    """scale · (x − mean) / √(var + ε) + B is x · a + b per channel (axis 1 of N×C×H×W and
    of N×C): against ONNX's reference evaluator, batched or as one sample; a and b are weights
    (params), the statistics are not."""
    from onnx.reference import ReferenceEvaluator
    model = _batchnorm(shape, opset, attrs)
    imp = import_onnx(model, batch=batch, loss="sqerr")
    assert sorted(imp.params) == ["b_folded", "s_folded"] and imp.consts == (), imp.text
    assert imp.params["s_folded"].shape == (3,), imp.params["s_folded"].shape
    n = 5 if batch else None
    x = np.random.default_rng(7).normal(size=[n if d == "N" else d for d in shape])
    # the oracle at opset 15: onnx.reference's BatchNormalization_9 fills in the default
    # momentum and then takes the batch's statistics, though opset 9's one output is test mode
    oracle = onnx.ModelProto()
    oracle.CopyFrom(model)
    oracle.opset_import[0].version = 15
    want = ReferenceEvaluator(oracle).run(None, {"x": x.astype(np.float32)})[0]
    got = np.asarray(_load_f64(imp).predict(x if batch else x[None])).reshape(want.shape)
    # the reference computes in float32: relative to the outputs' scale
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6 * np.abs(want).max())


def test_a_pytorch_batchnorm_in_eval_mode_imports(tmp_path, kernel_cache):
    """``Conv2d → BatchNorm2d → ReLU → Flatten → Linear`` in eval mode, with random running
    statistics, exported keeping the BatchNormalization (PyTorch's default eval export folds
    it into the Conv): the imported model's outputs are PyTorch's, its gradients central
    differences'."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.BatchNorm2d(4),
                              torch.nn.ReLU(), torch.nn.Flatten(),
                              torch.nn.Linear(4 * 4 * 4, 3)).double().eval()
    bn = net[1]
    with torch.no_grad():
        bn.running_mean.copy_(torch.randn(4, dtype=torch.float64))
        bn.running_var.copy_(torch.rand(4, dtype=torch.float64) * 2 + 0.1)
        bn.weight.copy_(torch.randn(4, dtype=torch.float64))
        bn.bias.copy_(torch.randn(4, dtype=torch.float64))
    path = tmp_path / "bn.onnx"
    torch.onnx.export(net, torch.zeros(1, 1, 6, 6, dtype=torch.float64), str(path),
                      dynamo=False, training=torch.onnx.TrainingMode.PRESERVE,
                      do_constant_folding=False,
                      input_names=["x"], output_names=["out"],
                      dynamic_axes={"x": {0: "N"}, "out": {0: "N"}})
    graph_ops = [n.op_type for n in onnx.load(str(path)).graph.node]
    assert "BatchNormalization" in graph_ops, graph_ops
    imp = import_onnx(onnx.load(str(path)), batch=True, loss="sqerr")
    assert imp.batch and any(k.endswith("_folded") for k in imp.params), sorted(imp.params)
    assert not any("running" in k for k in imp.params), sorted(imp.params)
    m = _load_f64(imp)
    rng = np.random.default_rng(8)
    x = rng.normal(size=(5, 1, 6, 6))
    with torch.no_grad():   # the imported weights are float32: give PyTorch the same
        for p in [net[0].weight, net[0].bias, net[4].weight, net[4].bias]:
            p.copy_(p.float().double())
        want = net(torch.from_numpy(x)).numpy()
    # a and b are folded in float64 and stored as float32: a relative 6e-8 each
    np.testing.assert_allclose(m.predict(x), want, rtol=1e-6, atol=1e-6)
    _check_central_differences(m, {"x": x[:2], imp.target: rng.normal(size=(2, 3))}, rng)


@pytest.mark.parametrize("kw, what", [
    ({"attrs": {"training_mode": 1}}, "training_mode=1: the statistics of the batch"),
    ({"consts": ("s", "b", "v")}, "the mean must be a constant"),
    ({"consts": ("s", "b", "m")}, "the variance must be a constant"),
    ({"outputs": ("out", "rm", "rv")}, "the running mean and variance outputs"),
    ({"opset": 7, "attrs": {"spatial": 0}}, "attribute spatial=0 is not supported"),
    ({"opset": 6, "attrs": {"is_test": 0}}, "is_test=0: the statistics of the batch"),
])
def test_a_batchnorm_in_training_mode_or_of_computed_statistics_is_named(kw, what):
    with pytest.raises(OnnxImportError) as e:
        import_onnx(_batchnorm([1, 3, 4, 4], **kw), batch=True)
    assert str(e.value).startswith("node 'n1' (BatchNormalization): " + what), str(e.value)


def test_an_unnamed_node_is_named_by_its_position_and_operator():
    """``node #1 (MaxPool)``: its index in graph.node; a named node keeps its name."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["out"], kernel_shape=[2, 2], dilations=[2, 2])]
    graph = helper.make_graph(
        nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 5, 5])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(OnnxImportError, match=r"^node #1 \(MaxPool\): attribute dilations=\[2, 2\] "):
        import_onnx(model)
    with pytest.raises(OnnxImportError, match=r"^node #0 \(BatchNormalization\): training_mode"):
        import_onnx(_batchnorm([1, 3, 4, 4], attrs={"training_mode": 1}, name=""))
    model.graph.node[1].name = "pool"
    with pytest.raises(OnnxImportError, match=r"^node 'pool' \(MaxPool\): attribute dilations"):
        import_onnx(model)


# ---------------------------------------------------------------------------------------------
# LayerNormalization: the mean, the centred input and the inverse standard deviation as bindings

def _layernorm(shape, attrs=None, bias=True, outputs=("out",), scale_shape=None,
               bias_shape=None, name="n1", seed=9):
    """``x · w`` (``w`` a parameter of the sample's shape, so that the gradients pass through the
    normalisation) then a LayerNormalization (opset 17) with a Scale and, with ``bias``, a B:
    initializers of the normalised shape (or of ``scale_shape``, ``bias_shape``)."""
    rng = np.random.default_rng(seed)
    axis = (attrs or {}).get("axis", -1)
    per = shape[1:] if shape[0] == "N" else shape
    norm = tuple(d for d in shape[axis:] if d != "N")
    inits = {"w": rng.uniform(0.5, 1.5, size=per), "s": rng.normal(size=scale_shape or norm)}
    if bias:
        inits["b"] = rng.normal(size=bias_shape or norm)
    nodes = [helper.make_node("Mul", ["x", "w"], ["z"]),
             helper.make_node("LayerNormalization", ["z", "s"] + (["b"] if bias else []),
                              list(outputs), name=name, **(attrs or {}))]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(outputs[0], TensorProto.FLOAT, shape)]
        + [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs[1:] if o],
        [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("shape, kw, batch", [
    (["N", 6], {}, True),
    (["N", 2, 3], {"attrs": {"axis": -2, "epsilon": 0.25}, "bias": False}, True),
    (["N", 2, 3], {"attrs": {"axis": 1, "epsilon": 1e-3, "stash_type": 1}}, True),
    ([2, 3, 4], {"attrs": {"axis": 1}, "scale_shape": (4,), "bias_shape": (3, 1)}, False),
    ([3, 4], {"attrs": {"axis": 0, "epsilon": 0.5}}, False),
], ids=["last", "last-two-no-B-eps", "last-two-axis1", "whole-broadcast-scale", "whole-all"])
@pytest.mark.usefixtures("quick_builds")
def test_layer_normalization_as_onnx_computes_it(kernel_cache, shape, kw, batch):
    """Over the axes from ``axis`` to the last: the mean, the centred input, the variance and
    the inverse standard deviation bound once each, ε a const; against ONNX's reference
    evaluator, batched or as one sample, and the gradients against central differences."""
    model = _layernorm(shape, **kw)
    imp = import_onnx(model, batch=batch, loss="sqerr")
    assert imp.batch == batch
    for b in ("out_mean", "out_centred", "out_var", "out_invstd"):
        assert re.search(rf"^{b} = ", imp.text, re.M), imp.text
    assert "recip(sqrt(" in imp.text and imp.consts == ("out_eps",), imp.text
    eps = kw.get("attrs", {}).get("epsilon", 1e-5)
    assert imp.params["out_eps"].ravel().tolist() == [np.float32(eps)]
    assert sorted(imp.params) == sorted(["w", "s", "out_eps"] + (["b"] if kw.get("bias", True)
                                                                  else [])), imp.text
    _check_against_the_reference(model, imp, shape, batch, seed=10)


def _check_against_the_reference(model, imp, shape, batch, seed, scale=1):
    """The import (float64) against ONNX's reference evaluator (float32: relative to the
    outputs' scale) on 5 random samples of ``scale`` (batched, or one sample), and its
    gradients against central differences."""
    from onnx.reference import ReferenceEvaluator
    rng = np.random.default_rng(seed)
    x = (rng.normal(size=[5 if d == "N" else d for d in shape]) * scale).astype(np.float32)
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    m = _load_f64(imp)
    xb = x.astype(np.float64) if batch else x[None].astype(np.float64)
    got = np.asarray(m.predict(xb)).reshape(want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6 * np.abs(want).max())
    y = rng.normal(size=(len(xb),) + tuple(imp.output_shape[1:] if batch else imp.output_shape))
    _check_central_differences(m, {"x": xb[:2], imp.target: y[:2]}, rng)


def _export_and_import(torch, net, path, opset: int, seed: int):
    """``net`` (float64, 4 inputs) exported by PyTorch's TorchScript exporter at ``opset``,
    imported with a squared-error loss and loaded in float64: (the import; the exported
    operators; the model; a generator of ``seed``; 5 inputs drawn from it; PyTorch's outputs
    for them: the graph is float64, and so are the weights the import stores)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, torch.zeros(1, 4, dtype=torch.float64), str(path), dynamo=False,
                          opset_version=opset, input_names=["x"], output_names=["out"],
                          dynamic_axes={"x": {0: "N"}, "out": {0: "N"}})
    graph = onnx.load(str(path))
    imp = import_onnx(graph, loss="sqerr")
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(5, 4))
    with torch.no_grad():
        want = net(torch.from_numpy(x)).numpy()
    return imp, {n.op_type for n in graph.graph.node}, _load_f64(imp), rng, x, want


@pytest.mark.parametrize("opset", [13, 17])
def test_a_pytorch_layernorm_imports(tmp_path, kernel_cache, opset):
    """``Linear → LayerNorm → ReLU → Linear``: at opset 17 PyTorch exports a
    LayerNormalization, before it ReduceMean, Sub, Pow 2, Add, Sqrt and Div; either imports,
    its outputs PyTorch's, its gradients central differences'."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.LayerNorm(6), torch.nn.ReLU(),
                              torch.nn.Linear(6, 3)).double().eval()
    with torch.no_grad():
        net[1].weight.copy_(torch.randn(6, dtype=torch.float64))
        net[1].bias.copy_(torch.randn(6, dtype=torch.float64))
    imp, ops, m, rng, x, want = _export_and_import(torch, net, tmp_path / "ln.onnx", opset,
                                                   seed=12)
    assert ("LayerNormalization" in ops) == (opset >= 17), ops
    assert opset >= 17 or "Sqrt" in ops, ops
    assert imp.batch and "sqrt(" in imp.text, imp.text
    # ε: a float32 const (PyTorch's 1e-5 rounded), relative 3e-8 of the variance's term
    np.testing.assert_allclose(m.predict(x), want, rtol=1e-7, atol=1e-9)
    _check_central_differences(m, {"x": x[:2], imp.target: rng.normal(size=(2, 3))}, rng)


@pytest.mark.parametrize("kw, what", [
    ({"outputs": ("out", "mean")}, "the Mean output 'mean' is not supported (only Y)"),
    ({"outputs": ("out", "", "istd")}, "the InvStdDev output 'istd' is not supported"),
    ({"outputs": ("out", "mean", "istd")},
     "the Mean output 'mean' and the InvStdDev output 'istd' are not supported"),
    ({"attrs": {"axis": 0}}, "axis=0 normalises over the batch axis"),
    ({"attrs": {"axis": -2}}, "axis=-2 normalises over the batch axis"),
    ({"attrs": {"axis": 2}}, "axis=2 of an input of rank 2"),
    ({"attrs": {"stash_type": TensorProto.FLOAT16}}, "attribute stash_type=10 is not supported"),
    ({"scale_shape": (5,)},
     "Scale and B of shapes (5,), (6,) do not broadcast to X's per-sample shape (6,)"),
    ({"scale_shape": (3,), "bias": False},
     "Scale of shape (3,) does not broadcast to X's per-sample shape (6,)"),
    ({"scale_shape": (2, 6), "bias": False}, "a constant of shape (2, 6) varies along the batch"),
])
def test_an_unsupported_layernorm_is_named(kw, what):
    with pytest.raises(OnnxImportError) as e:
        import_onnx(_layernorm(["N", 6], **kw), batch=True)
    assert str(e.value).startswith("node 'n1' (LayerNormalization): " + what), str(e.value)
    with pytest.raises(OnnxImportError, match=r"^node #1 \(LayerNormalization\): "):
        import_onnx(_layernorm(["N", 6], name="", **kw), batch=True)


# ---------------------------------------------------------------------------------------------
# Gelu: the tanh form is x·σ(2u), u = √(2/π)·(x + 0.044715·x³); the default erf form
# x·(1 + erf(x/√2))/2

def _gelu(shape, approximate="tanh", opset=20, name="n1", seed=13):
    """``x · w`` (``w`` a parameter of the sample's shape, so that the gradients pass through
    the activation) then a Gelu."""
    rng = np.random.default_rng(seed)
    per = shape[1:] if shape[0] == "N" else shape
    attrs = {} if approximate is None else {"approximate": approximate}
    nodes = [helper.make_node("Mul", ["x", "w"], ["z"]),
             helper.make_node("Gelu", ["z"], ["out"], name=name, **attrs)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, shape)],
        [numpy_helper.from_array(rng.uniform(0.5, 2.0, size=per).astype(np.float32), "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("shape, batch", [(["N", 6], True), ([2, 3, 4], False)],
                         ids=["batched", "whole"])
def test_gelu_tanh_as_onnx_computes_it(kernel_cache, shape, batch):
    """``0.5·x·(1 + tanh(u))`` is ``x·σ(2u)``: one binding of ``2u``, its two constants consts,
    then ``x * logistic(2u)``; against ONNX's reference evaluator (its function body, in
    float32), batched or as one sample, and the gradients against central differences."""
    model = _gelu(shape)
    imp = import_onnx(model, batch=batch, loss="sqerr")
    assert re.search(r"^output out = z \* logistic\(out_2u\)$", imp.text, re.M), imp.text
    assert imp.consts == ("out_cubic", "out_scale"), imp.text
    assert imp.params["out_cubic"].ravel().tolist() == [np.float32(0.044715)]
    assert imp.params["out_scale"].ravel().tolist() == [np.float32(2 * np.sqrt(2 / np.pi))]
    _check_against_the_reference(model, imp, shape, batch, seed=14, scale=2)


@pytest.mark.parametrize("opset", [17, 18, 20])
def test_a_pytorch_gelu_tanh_imports(tmp_path, kernel_cache, opset):
    """``Linear → GELU(approximate="tanh") → Linear``: at opset 20 PyTorch exports a Gelu,
    before it Mul, Add, Tanh and Constants (x·x·x, 0.044715, √(2/π), 1, 0.5); either imports,
    its outputs PyTorch's, its gradients central differences'."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.GELU(approximate="tanh"),
                              torch.nn.Linear(6, 3)).double().eval()
    with torch.no_grad():     # pre-activations of a few units: both of GELU's sides
        net[0].weight.mul_(4.0)
    imp, ops, m, rng, x, want = _export_and_import(torch, net, tmp_path / "gelu.onnx", opset,
                                                   seed=15)
    assert ("Gelu" in ops) == (opset >= 20), ops
    assert opset >= 20 or "Tanh" in ops, ops
    assert imp.batch and ("logistic(" if opset >= 20 else "tanh(") in imp.text, imp.text
    # the constants are float32 consts (0.044715, √(2/π) rounded): relative 3e-8 of u
    np.testing.assert_allclose(m.predict(x), want, rtol=1e-6, atol=1e-9)
    _check_central_differences(m, {"x": x[:2], imp.target: rng.normal(size=(2, 3))}, rng)


@pytest.mark.parametrize("approximate", [None, "none"], ids=["default", "none"])
@pytest.mark.parametrize("shape, batch", [(["N", 6], True), ([2, 3, 4], False)],
                         ids=["batched", "whole"])
def test_gelu_erf_as_onnx_computes_it(kernel_cache, shape, batch, approximate):
    """The default ``x·Φ(x) = x·(1 + erf(x/√2))/2``: one binding of ``x/√2`` (1/√2 a const),
    then ``x * (1 + erf(u)) / 2``; against ONNX's reference evaluator (float32), batched or as
    one sample, and the gradients (erf′ = derf, version 6) against central differences."""
    model = _gelu(shape, approximate)
    imp = import_onnx(model, batch=batch, loss="sqerr")
    assert re.search(r"^output out = z \* \(1 \+ erf\(out_u\)\) / 2$", imp.text, re.M), imp.text
    assert imp.consts == ("out_rsqrt2",), imp.text
    assert imp.params["out_rsqrt2"].ravel().tolist() == [np.float32(1 / np.sqrt(2))]
    _check_against_the_reference(model, imp, shape, batch, seed=14, scale=2)


@pytest.mark.parametrize("opset", [17, 20])
def test_a_pytorch_gelu_imports(tmp_path, kernel_cache, opset):
    """``Linear → GELU() → Linear`` (the exact GELU, BERT's): at opset 20 PyTorch exports a
    Gelu, before it Div, Erf, Add and Mul; either imports, its outputs PyTorch's, its gradients
    central differences'."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.GELU(),
                              torch.nn.Linear(6, 3)).double().eval()
    with torch.no_grad():     # pre-activations of a few units: both of GELU's sides
        net[0].weight.mul_(4.0)
    imp, ops, m, rng, x, want = _export_and_import(torch, net, tmp_path / "gelu.onnx", opset,
                                                   seed=15)
    assert ("Gelu" in ops) == (opset >= 20) and ("Erf" in ops) == (opset < 20), ops
    assert imp.batch and "erf(" in imp.text, imp.text
    # the constants are float32 consts (1/√2, or √2 in a division, rounded): relative 3e-8
    np.testing.assert_allclose(m.predict(x), want, rtol=1e-6, atol=1e-9)
    _check_central_differences(m, {"x": x[:2], imp.target: rng.normal(size=(2, 3))}, rng)


@pytest.mark.parametrize("kw, what", [
    ({"approximate": "fast"}, "approximate='fast' is not supported (only 'none' and 'tanh')"),
    ({"opset": 18}, "Gelu is an operator of opset 20; the model imports opset 18"),
])
def test_an_unsupported_gelu_is_named(kw, what):
    with pytest.raises(OnnxImportError) as e:
        import_onnx(_gelu(["N", 6], **kw), batch=True)
    assert str(e.value).startswith("node 'n1' (Gelu): " + what), str(e.value)


def test_erf_imports_as_erf(kernel_cache):
    """An Erf node is the model language's ``erf``, against Python's math.erf in float64."""
    m = _one_node("Erf", [("x", [1, 5])], ("y", [1, 5]))
    imp = import_onnx(m, batch=True, loss="sqerr")
    assert re.search(r"^output y = erf\(x\)$", imp.text, re.M), imp.text
    x = np.array([[-3.0, -0.5, 0.0, 0.7, 2.5]])
    got = _load_f64(imp).predict(x)
    np.testing.assert_allclose(got, [[math.erf(v) for v in x[0]]], rtol=1e-15, atol=1e-16)


# ---------------------------------------------------------------------------------------------
# Padded pooling: the same padding on every side, placed by conv2d (a 1×1 kernel of 1)

def _pool_net(op, attrs, shape=("N", 2, 5, 6), name="n1", seed=16):
    """``x · w`` (``w`` a parameter of the sample's shape) then a pooling."""
    rng = np.random.default_rng(seed)
    per = shape[1:] if shape[0] == "N" else shape
    nodes = [helper.make_node("Mul", ["x", "w"], ["z"]),
             helper.make_node(op, ["z"], ["out"], name=name, **attrs)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(rng.uniform(0.5, 2.0, size=per).astype(np.float32), "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


_PADDED_POOLS = {
    "max-pads1-stride2": ("MaxPool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1],
                                      "strides": [2, 2]}),
    "max-same-lower": ("MaxPool", {"kernel_shape": [3, 3], "auto_pad": "SAME_LOWER"}),
    "avg-pads1-stride2": ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1],
                                          "strides": [2, 2]}),
    "avg-pads2-include": ("AveragePool", {"kernel_shape": [3, 3], "pads": [2, 2, 2, 2],
                                          "count_include_pad": 1}),
    "avg-same-upper-stride2": ("AveragePool", {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER",
                                               "strides": [2, 2]}, (7, 5)),
}


@pytest.mark.parametrize("case", sorted(_PADDED_POOLS))
@pytest.mark.usefixtures("quick_builds")
def test_padded_pooling_as_onnx_computes_it(kernel_cache, case):
    """Each H×W plane padded by ``conv2d`` with a 1×1 kernel of 1 (zeros where ``conv2d``
    puts its own), ``−inf`` for MaxPool (``+ log`` of padded ones), and AveragePool's mean of
    the elements that are not padding (``count_include_pad`` 0: ``recip`` of the pooled
    padded ones); against ONNX's reference evaluator, and the gradients against central
    differences."""
    from onnx.reference import ReferenceEvaluator
    op, attrs, *hw = _PADDED_POOLS[case]
    hw = hw[0] if hw else (5, 6)   # SAME at stride 2 pads 5 and 7 by 1 on each side, 6 not
    model = _pool_net(op, attrs, ("N", 2) + hw)
    imp = import_onnx(model, batch=True, loss="sqerr")
    assert "conv2d(z[i0], pad_one, " in imp.text, imp.text
    assert ("log(out_pad_ones)" in imp.text) == (op == "MaxPool"), imp.text
    assert ("recip(out_pad_count" in imp.text) == (case in ("avg-pads1-stride2",
                                                            "avg-same-upper-stride2")), imp.text
    assert all(imp.params[c].min() == imp.params[c].max() == 1 for c in imp.consts), imp.consts
    rng = np.random.default_rng(17)
    x = rng.normal(size=(4, 2) + hw).astype(np.float32)
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    assert imp.output_shape[1:] == want.shape[1:], (imp.output_shape, want.shape)
    m = _load_f64(imp)
    got = np.asarray(m.predict(x.astype(np.float64))).reshape(want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    _check_central_differences(m, {"x": x[:2].astype(np.float64),
                                   imp.target: rng.normal(size=(2,) + want.shape[1:])}, rng)


@pytest.mark.parametrize("pool", ["max", "avg", "avg-exclude"])
@pytest.mark.usefixtures("quick_builds")
def test_a_pytorch_padded_pooling_imports(tmp_path, kernel_cache, pool):
    """``Conv2d → MaxPool2d(3, 2, padding=1)`` (ResNet's stem) or ``AvgPool2d(3, 2,
    padding=1)`` (PyTorch counts the padding by default; ``count_include_pad=False`` not)
    ``→ Flatten → Linear``: its outputs PyTorch's, its gradients central differences'."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    layer = {"max": torch.nn.MaxPool2d(3, 2, padding=1),
             "avg": torch.nn.AvgPool2d(3, 2, padding=1),
             "avg-exclude": torch.nn.AvgPool2d(3, 2, padding=1, count_include_pad=False)}[pool]
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), layer, torch.nn.Flatten(),
                              torch.nn.Linear(2 * 3 * 3, 3)).double().eval()
    path = tmp_path / "pool.onnx"
    torch.onnx.export(net, torch.zeros(1, 1, 7, 7, dtype=torch.float64), str(path),
                      dynamo=False, input_names=["x"], output_names=["out"],
                      dynamic_axes={"x": {0: "N"}, "out": {0: "N"}})
    imp = import_onnx(onnx.load(str(path)), loss="sqerr")
    assert imp.batch and "pad_one" in imp.text, imp.text
    m = _load_f64(imp)
    rng = np.random.default_rng(18)
    x = rng.normal(size=(5, 1, 7, 7))
    with torch.no_grad():   # the imported weights are float32: give PyTorch the same
        for p in net.parameters():
            p.copy_(p.float().double())
        want = net(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(m.predict(x), want, rtol=1e-12, atol=1e-13)
    _check_central_differences(m, {"x": x[:2], imp.target: rng.normal(size=(2, 3))}, rng)


@pytest.mark.parametrize("op, attrs, what", [
    # (a padding per side, auto_pad SAME with an even window and ceil mode are expressed since
    # issue #37: tests/test_onnx_ops.py)
    ("MaxPool", {"kernel_shape": [3, 3], "pads": [3, 0, 1, 0]},
     "pads=[3, 0, 1, 0]: a padding as large as the window 3×3"),
    ("AveragePool", {"kernel_shape": [2, 2], "pads": [1, -1, 1, 0]},
     "pads=[1, -1, 1, 0]: a negative padding"),
    ("MaxPool", {"kernel_shape": [2, 2], "pads": [2, 2, 2, 2]},
     "pads=[2, 2, 2, 2]: a padding as large as the window 2×2"),
    ("MaxPool", {"kernel_shape": [1, 1], "strides": [2, 2]},
     "pooling an input of spatial shape 5×1 (a trailing dimension 1 is absorbed"),
])
def test_a_padding_pooling_cannot_express_is_named(op, attrs, what):
    shape = ("N", 2, 5, 1) if "5×1" in what else ("N", 2, 5, 6)
    with pytest.raises(OnnxImportError) as e:
        import_onnx(_pool_net(op, attrs, shape), batch=True)
    assert str(e.value).startswith(f"node 'n1' ({op}): " + what), str(e.value)


# ---------------------------------------------------------------------------------------------
# Convolutions with a dimension 1: a 1×1 kernel (ResNet's bottlenecks, MobileNet's pointwise
# convolutions), an input or output plane H×1 or 1×1. The model language absorbs a trailing
# dimension 1 of what it computes, not of what is declared: the kernel is declared as it is
# (U×C×1×1), a plane H×1 convolved transposed (1×H, the kernel transposed), an output U×H′×1
# read back into the language's U×H′.

def _conv_net(x_shape, w_shape, attrs=None, bias=True, seed=21):
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array(rng.normal(size=w_shape).astype(np.float32), "w")]
    if bias:
        inits.append(numpy_helper.from_array(rng.normal(size=w_shape[:1]).astype(np.float32),
                                             "b"))
    node = helper.make_node("Conv", ["x", "w"] + (["b"] if bias else []), ["out"], name="n1",
                            **(attrs or {}))
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


_CONVS_WITH_ONES = {
    "1x1": ((3, 5, 6), (4, 3, 1, 1), {}),
    "1x1-one-channel": ((1, 5, 6), (4, 1, 1, 1), {}),
    "1x1-one-channel-one-output": ((1, 4, 4), (1, 1, 1, 1), {}),
    "1x1-stride2-no-bias": ((3, 5, 6), (2, 3, 1, 1), {"strides": [2, 2]}, False),
    "1x1-padded": ((2, 3, 4), (3, 2, 1, 1), {"pads": [1, 1, 1, 1]}),
    "kernel-3x1": ((2, 5, 6), (3, 2, 3, 1), {}),
    "column-3x1-padded": ((2, 7, 1), (3, 2, 3, 1), {"pads": [1, 1, 1, 1]}),
    "column-3x1-stride2": ((2, 7, 1), (3, 2, 3, 1), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
    "column-1x1": ((2, 7, 1), (3, 2, 1, 1), {}),
    "column-one-channel": ((1, 6, 1), (2, 1, 2, 1), {}),
    "point-1x1": ((3, 1, 1), (4, 3, 1, 1), {}),
    "point-1x1-padded": ((2, 1, 1), (3, 2, 1, 1), {"pads": [1, 1, 1, 1]}),
    "point-one-channel": ((1, 1, 1), (2, 1, 1, 1), {}),
    "row-1x3-stride2": ((2, 1, 6), (3, 2, 1, 3), {"strides": [2, 2]}),
    "output-Hx1": ((2, 5, 4), (3, 2, 3, 4), {}),
    "output-1x1": ((2, 3, 3), (4, 2, 3, 3), {}),
}


@pytest.mark.parametrize("case, batch", [(c, True) for c in sorted(_CONVS_WITH_ONES)] + [
    (c, False) for c in ("1x1", "column-3x1-padded", "point-1x1", "output-Hx1")])
@pytest.mark.usefixtures("quick_builds")
def test_a_conv_with_a_dimension_one_as_onnx_computes_it(kernel_cache, case, batch):
    """Against ONNX's reference evaluator (with a batch axis, and a few as one rank-4
    sample); the gradients against central differences."""
    from onnx.reference import ReferenceEvaluator
    x_shape, w_shape, attrs, *bias = _CONVS_WITH_ONES[case]
    model = _conv_net(("N",) + x_shape if batch else (2,) + x_shape, w_shape, attrs,
                      bias=bias[0] if bias else True)
    imp = import_onnx(model, batch=batch, loss="sqerr")
    rng = np.random.default_rng(22)
    x = rng.normal(size=(3 if batch else 2,) + x_shape).astype(np.float32)
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    assert imp.output_shape[1:] == want.shape[1:], (imp.output_shape, want.shape)
    m = _load_f64(imp)
    xs = x.astype(np.float64) if batch else x.astype(np.float64)[None]
    got = np.asarray(m.predict(xs)).reshape(want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    # the runtime's arrays have the language's shapes (H×1 is H)
    lang = m.spec.input_shapes
    xs = xs[:2]
    inputs = {"x": xs.reshape(xs.shape[:1] + tuple(lang["x"])),
              imp.target: rng.normal(size=xs.shape[:1] + tuple(lang[imp.target]))}
    _check_central_differences(m, inputs, rng)
    # declared as it is (U×C×1×1), or transposed for a column
    flip = x_shape[-1] == 1 and w_shape[2:] != (1, 1)
    w_decl = "x".join(map(str, w_shape[:2] + w_shape[:1:-1] if flip else w_shape))
    decl = rf"^param  w{'_t' if flip else ''} : {w_decl}\b"
    assert re.search(decl, imp.text, re.M), imp.text


@pytest.mark.parametrize("net", ["bottleneck", "squeeze", "column"])
@pytest.mark.usefixtures("quick_builds")
def test_a_pytorch_pointwise_conv_imports(tmp_path, kernel_cache, net):
    """``nn.Conv2d(C, U, 1)``: a ResNet bottleneck (1×1, 3×3 padded, 1×1 to one channel), a
    squeeze (a 1×1 kernel on one channel, an average over the whole plane, then a 1×1
    kernel on the 3×1×1 means), a column input N×2×7×1 (a 3×1 kernel padded, then a 1×1 one):
    its outputs PyTorch's, its gradients central differences'."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    nn = torch.nn
    shape, layers = {
        "bottleneck": ((3, 5, 6), [nn.Conv2d(3, 4, 1), nn.ReLU(), nn.Conv2d(4, 4, 3, padding=1),
                                   nn.ReLU(), nn.Conv2d(4, 1, 1), nn.Flatten(),
                                   nn.Linear(5 * 6, 3)]),
        "squeeze": ((1, 6, 6), [nn.Conv2d(1, 3, 1), nn.ReLU(), nn.AvgPool2d(6),
                                nn.Conv2d(3, 3, 1), nn.Flatten()]),
        "column": ((2, 7, 1), [nn.Conv2d(2, 4, (3, 1), padding=1), nn.Tanh(),
                               nn.Conv2d(4, 2, 1), nn.Flatten(), nn.Linear(2 * 7 * 3, 3)]),
    }[net]
    model = nn.Sequential(*layers).double().eval()
    path = tmp_path / "net.onnx"
    torch.onnx.export(model, torch.zeros((1,) + shape, dtype=torch.float64), str(path),
                      dynamo=False, input_names=["x"], output_names=["out"],
                      dynamic_axes={"x": {0: "N"}, "out": {0: "N"}})
    imp = import_onnx(onnx.load(str(path)), loss="sqerr")
    assert imp.batch, imp.text
    m = _load_f64(imp)
    rng = np.random.default_rng(23)
    x = rng.normal(size=(5,) + shape)
    with torch.no_grad():   # the imported weights are float32: give PyTorch the same
        for p in model.parameters():
            p.copy_(p.float().double())
        want = model(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(m.predict(x), want, rtol=1e-12, atol=1e-13)
    xs = x[:2].reshape((2,) + tuple(m.spec.input_shapes["x"]))   # 2×7×1 is 2×7
    _check_central_differences(m, {"x": xs, imp.target: rng.normal(size=(2, 3))}, rng)
    assert any(v.ndim == 4 and v.shape[2:] == (1, 1) for v in imp.params.values()), imp.text


def test_a_conv_kernel_the_language_cannot_declare_is_named():
    """A computed kernel ending in 1 (the language absorbs the 1 of what it computes), and a
    Conv kernel U×C×1×1 that another operation reads too (one initializer, two shapes)."""
    rng = np.random.default_rng(24)
    w = numpy_helper.from_array(rng.normal(size=(4, 3, 1, 1)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "k"], ["out"], name="n1")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 5, 6]),
                     helper.make_tensor_value_info("k", TensorProto.FLOAT, [4, 3, 1, 1])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)])
    with pytest.raises(OnnxImportError) as e:
        import_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    assert str(e.value).startswith("node 'n1' (Conv): a computed kernel of shape 4×3×1×1: the "
                                   "model language absorbs a trailing dimension 1"), str(e.value)
    # one initializer 4×4×1×1: a Conv's kernel, and added to its output (4×4×5×6)
    w = numpy_helper.from_array(rng.normal(size=(4, 4, 1, 1)).astype(np.float32), "w")
    conv = helper.make_node("Conv", ["x", "w"], ["c"], name="n1")
    for nodes, what in [
            ([conv, helper.make_node("Add", ["c", "w"], ["out"], name="n2")],
             "node 'n2' (Add): 'w' is the kernel of a Conv, declared w : 4x4x1x1; it cannot "
             "be read as 4x4 too (two parameters of one array)"),
            ([helper.make_node("Add", ["x", "w"], ["c"], name="n2"),
              helper.make_node("Conv", ["c", "w"], ["out"], name="n1")],
             "node 'n1' (Conv): the kernel 'w' of shape 4×4×1×1 is read by another operation "
             "too, as 4x4 (two parameters of one array)"),
            ([conv, helper.make_node("Conv", ["c", "w"], ["out"], name="n2")], None)]:
        graph = helper.make_graph(
            nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 5, 6])],
            [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], [w])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        if what is None:   # two Convs of one kernel: one parameter
            imp = import_onnx(model, batch=False)
            assert list(imp.params) == ["w"] and "conv2d(c[n], w)" in imp.text, imp.text
            continue
        with pytest.raises(OnnxImportError) as e:
            import_onnx(model, batch=False)
        assert str(e.value) == what, str(e.value)
    # the kernel of a Conv of a column N×C×H×1 is transposed (but a 1×1 kernel): another
    # Conv reading it is not
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="n1"),
             helper.make_node("Conv", ["x", "w"], ["c2"], name="n2"),
             helper.make_node("Add", ["c", "c2"], ["out"], name="n3")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 5, 1])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], [w])
    imp = import_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    assert list(imp.params) == ["w"], imp.text   # 1×1: its own transpose
    w = numpy_helper.from_array(rng.normal(size=(4, 4, 3, 1)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="n1", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["c", "w"], ["out"], name="n2")]   # of 4×5×3: not
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 5, 1])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], [w])
    with pytest.raises(OnnxImportError) as e:
        import_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    assert str(e.value) == ("node 'n2' (Conv): the kernel 'w' of shape 4×4×3×1 is the kernel "
                            "of another Conv too, declared w_t : 4x4x1x3 there (an input "
                            "ending in 1 takes its kernel transposed)"), str(e.value)


# ---------------------------------------------------------------------------------------------
# ConstantOfShape (the model zoo's "light" models: every weight a ConstantOfShape), and a
# ResNet-like network of such weights end to end (light_resnet50's operators; the network
# itself: bench/resnet50.py)

def _i64_init(name, v):
    return numpy_helper.from_array(np.asarray(v, np.int64), name)


def _fill(value, dtype=np.float32):
    return numpy_helper.from_array(np.asarray([value], dtype))


def _cos_net(shape_node, fill=None, inits=(), x_shape=("N", 4), op="Add"):
    """``op(x, ConstantOfShape(s))`` with ``s`` from ``shape_node`` (a node producing "s", or
    None: ``s`` an initializer among ``inits``)."""
    attrs = {} if fill is None else {"value": fill}
    nodes = ([shape_node] if shape_node is not None else []) + [
        helper.make_node("ConstantOfShape", ["s"], ["c"], name="cos", **attrs),
        helper.make_node(op, ["x", "c"], ["out"])]
    graph = helper.make_graph(
        nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])


@pytest.mark.parametrize("case", ["initializer", "constant", "shape-of-batched-x",
                                  "default-value"])
def test_constant_of_shape_folds_as_onnx_computes_it(kernel_cache, case):
    """A ``ConstantOfShape`` of a constant shape is folded: of an initializer's shape it is a
    weight (a ``param``: light_resnet50's), of a ``Constant``'s or of ``Shape(x)`` (the batch
    axis reading 1, leading) a ``const``; the default value is float32 0. Against ONNX's
    reference evaluator, batched."""
    from onnx.reference import ReferenceEvaluator
    if case == "initializer":
        model = _cos_net(None, _fill(0.25), [_i64_init("s", [4])], op="Mul")
    elif case == "constant":
        model = _cos_net(helper.make_node("Constant", [], ["s"], value=_i64_init("v", [1, 4])),
                         _fill(1.5))
    elif case == "shape-of-batched-x":
        model = _cos_net(helper.make_node("Shape", ["x"], ["s"]), _fill(-2.0))
    else:
        model = _cos_net(helper.make_node("Constant", [], ["s"], value=_i64_init("v", [4])))
    imp = import_onnx(model, loss="sqerr")
    assert imp.batch
    weight = case == "initializer"
    assert (imp.consts == ()) == weight, imp.text
    assert any(l.startswith("param" if weight else "const") and " : 4" in l
               for l in imp.text.splitlines()), imp.text
    x = np.random.default_rng(5).normal(size=(3, 4))
    want = ReferenceEvaluator(model).run(None, {"x": x.astype(np.float32)})[0]
    np.testing.assert_allclose(_load_f64(imp).predict(x), want, rtol=1e-6)


@pytest.mark.parametrize("kw, what", [
    ({"fill": np.array([1.0, 2.0], np.float32)}, "a value of 2 elements (one is required)"),
    ({"computed": True}, "the shape must be a constant (an initializer), not computed"),
    ({"batch_at": 1}, "the batch size at position 1 of the shape [4, 1]: only as its "
                      "leading dimension"),
    ({"shape": [-1]}, "a negative dimension in the shape [-1]"),
])
def test_a_constant_of_shape_it_cannot_fold_is_named(kw, what):
    if "computed" in kw:    # of the (float) input: computed
        nodes = [helper.make_node("ConstantOfShape", ["x"], ["c"], name="cos"),
                 helper.make_node("Add", ["x", "c"], ["out"])]
        graph = helper.make_graph(
            nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
            [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    elif "batch_at" in kw:  # Shape(x) reversed: the batch size second
        nodes = [helper.make_node("Shape", ["x"], ["sx"]),
                 helper.make_node("Slice", ["sx", "st", "en", "ax", "step"], ["s"])]
        inits = [_i64_init("st", [-1]), _i64_init("en", [-3]), _i64_init("ax", [0]),
                 _i64_init("step", [-1])]
        graph = helper.make_graph(
            nodes + [helper.make_node("ConstantOfShape", ["s"], ["c"], name="cos"),
                     helper.make_node("Add", ["x", "c"], ["out"])],
            "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
            [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    else:
        fill = numpy_helper.from_array(kw["fill"]) if "fill" in kw else None
        model = _cos_net(None, fill, [_i64_init("s", kw.get("shape", [4]))])
    with pytest.raises(OnnxImportError) as e:
        import_onnx(model)
    assert str(e.value) == f"node 'cos' (ConstantOfShape): {what}", str(e.value)


def _resnet_like(seed=31):
    """light_resnet50's operators at a small size, its weights ConstantOfShape of initializer
    shapes: Conv 3×3 stride 2 → BatchNormalization → Relu → MaxPool 3×3 stride 2 padded 1 →
    a bottleneck (Conv 1×1 → BN → Relu → Conv 3×3 padded → BN) beside a projection (Conv 1×1
    → BN), their Sum → Relu → AveragePool over the plane → Reshape → Gemm (transB) → Softmax.
    The kernels are random initializers where a constant kernel would make every channel
    alike; the statistics of two batch normalizations are ConstantOfShape (fills differ)."""
    rng = np.random.default_rng(seed)
    inits, nodes = [], []

    def init(name, v):
        inits.append(numpy_helper.from_array(np.asarray(v, np.float32), name))

    def cos(name, shape, value):
        inits.append(_i64_init(name + "__SHAPE", shape))
        nodes.append(helper.make_node("ConstantOfShape", [name + "__SHAPE"], [name],
                                      value=_fill(value)))

    def bn(x, name, C, light):
        for k, (lo, hi) in zip(("s", "b", "rm", "riv"),
                               ((0.5, 1.5), (-0.5, 0.5), (-0.5, 0.5), (0.5, 2.0))):
            if light:
                cos(f"{name}_{k}", [C], float(rng.uniform(lo, hi)))
            else:
                init(f"{name}_{k}", rng.uniform(lo, hi, C))
        nodes.append(helper.make_node("BatchNormalization", [x] + [f"{name}_{k}" for k in
                                      ("s", "b", "rm", "riv")], [name], epsilon=1e-5))
        return name

    def conv(x, name, shape, light=False, **attrs):
        if light:
            cos(name + "_w", shape, 0.05)
        else:
            init(name + "_w", rng.normal(0, np.sqrt(2 / np.prod(shape[1:])), shape))
        nodes.append(helper.make_node("Conv", [x, name + "_w"], [name],
                                      kernel_shape=shape[2:], **attrs))
        return name

    c1 = conv("x", "c1", [4, 3, 3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    r1 = "r1"
    nodes.append(helper.make_node("Relu", [bn(c1, "bn1", 4, True)], [r1]))
    nodes.append(helper.make_node("MaxPool", [r1], ["p1"], kernel_shape=[3, 3], strides=[2, 2],
                                  pads=[1, 1, 1, 1]))
    a = conv("p1", "c2a", [2, 4, 1, 1], light=True)
    nodes.append(helper.make_node("Relu", [bn(a, "bn2a", 2, False)], ["r2a"]))
    b = bn(conv("r2a", "c2b", [6, 2, 3, 3], pads=[1, 1, 1, 1]), "bn2b", 6, True)
    proj = bn(conv("p1", "c2p", [6, 4, 1, 1]), "bn2p", 6, False)
    nodes.append(helper.make_node("Sum", [b, proj], ["sum"]))
    nodes.append(helper.make_node("Relu", ["sum"], ["r2"]))
    nodes.append(helper.make_node("AveragePool", ["r2"], ["gap"], kernel_shape=[3, 3],
                                  strides=[1, 1]))
    inits.append(_i64_init("flat", [1, 6]))
    nodes.append(helper.make_node("Reshape", ["gap", "flat"], ["f"]))
    init("fc_w", rng.normal(0, 0.5, (5, 6)))
    cos("fc_b", [5], 0.1)
    nodes.append(helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["z"], transB=1))
    nodes.append(helper.make_node("Softmax", ["z"], ["prob"]))
    graph = helper.make_graph(
        nodes, "resnet_like", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                             [1, 3, 11, 11])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, 5])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])


@pytest.mark.usefixtures("quick_builds")
def test_a_resnet_like_graph_of_constant_of_shape_weights_imports(kernel_cache, tmp_path,
                                                                   monkeypatch):
    """light_resnet50's operators (ConstantOfShape weights, BatchNormalization, a residual Sum,
    a padded MaxPool, AveragePool, Reshape, Gemm, Softmax) at a small size, imported,
    elaborated, extracted and built: the probabilities against ONNX's reference evaluator in
    float32 and float64, the gradients of the cross-entropy (of the logits) against central
    differences; split into translation units (extract/emit/build.py), the same values."""
    from onnx.reference import ReferenceEvaluator
    import runtime
    from runtime.spec import _compiled
    model = _resnet_like()
    imp = import_onnx(model)
    assert imp.batch and imp.consts == ("pad_one", "pad_ones_6x6"), imp.text
    assert "gpu" not in imp.text and "c2a_w : 2x4x1x1" in imp.text, imp.text
    assert (imp.params["c2a_w"] == np.float32(0.05)).all()
    rng = np.random.default_rng(8)
    x = rng.normal(size=(4, 3, 11, 11)).astype(np.float32)
    ref = ReferenceEvaluator(model)
    want = np.concatenate([ref.run(None, {"x": x[i:i + 1]})[0] for i in range(4)])
    assert want.std(axis=1).min() > 1e-3          # not a uniform output
    spec = _compiled(imp.text, "<resnet_like.model>")
    m32 = runtime.load(spec, weights=dict(imp.params))
    got32 = m32.run({"x": x.reshape(4, 3, 11, 11)})
    np.testing.assert_allclose(got32, want, rtol=1e-5, atol=1e-7)
    m = runtime.load(spec, weights=dict(imp.params), precision="f64")
    got = m.run({"x": x.astype(np.float64)})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    y = np.eye(5)[[0, 3, 1, 4]]
    _check_central_differences(m, {"x": x.astype(np.float64), "y": y}, rng)
    # split into translation units, a few kernels each: each part warning-free, the same
    # predictions and gradients
    from extract.emit import build, sources
    from extract.ir import dump
    dm = dump.load(spec.kernels_dump)
    whole = sources.generate(dm, "f64")
    monkeypatch.setattr(sources, "SPLIT_BYTES", 4000)
    g = sources.generate(dm, "f64")
    assert whole.parts == {} and len(g.parts) > 4 and g.files == whole.files
    from extract.ir.names import c_model
    (tmp_path / f"{c_model(dm.name)}.h").write_text(g.files[f"{c_model(dm.name)}.h"])
    for f, text in g.parts.items():
        (tmp_path / f).write_text(text)
        build.compile_c(tmp_path / f, tmp_path / f"{f}.o")
    from runtime._kernels import Kernels
    monkeypatch.setattr(Kernels, "_cache", {})     # not the whole build's, kept per dump
    split = runtime.load(spec, weights=dict(imp.params), precision="f64")
    assert split._k.lib is not m._k.lib
    np.testing.assert_allclose(split.run({"x": x.astype(np.float64)}), got, rtol=1e-13)
    inputs = {"x": x.astype(np.float64), "y": y}
    for a, b in zip(split.batch_gradients(inputs)[1].values(),
                    m.batch_gradients(inputs)[1].values()):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
