"""The nine architectures ``onnx`` ships (``onnx/backend/test/data/light/``), with random weights,
for tests/test_onnx_zoo.py and by hand (``python tests/onnx_zoo.py [NAME …]``).

Every weight of a "light" model is a ``ConstantOfShape`` (one value repeated): the output is
then the same for every input. ``with_random_weights`` replaces each by an initializer of
random values whose scale keeps the activations in range through the depth (He's for a
kernel, a batch normalization's statistics near (0, 1), scales near 1, offsets near 0), and
``scale_last`` scales the last product so that the logits spread (std 3): a softmax neither
uniform nor one-hot. ``onnxruntime`` is the reference.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

ARCHITECTURES = ("bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
                 "shufflenet", "squeezenet", "vgg19", "zfnet512")


def light(name: str) -> Path:
    import onnx
    return Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data" / "light" / \
        f"light_{name}.onnx"


def _role(g, name: str) -> tuple[str, int]:
    """The operator and input position that read ``name`` (through Unsqueeze and Reshape)."""
    for node in g.node:
        if name in node.input:
            if node.op_type in ("Unsqueeze", "Reshape", "Identity"):
                return _role(g, node.output[0])
            return node.op_type, list(node.input).index(name)
    return "", -1


def with_random_weights(model, seed: int = 0):
    import onnx
    from onnx import numpy_helper
    rng = np.random.default_rng(seed)
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    inits = {i.name: i for i in g.initializer}
    keep, added = [], []
    for node in g.node:
        if node.op_type != "ConstantOfShape" or node.input[0] not in inits:
            keep.append(node)
            continue
        shape = tuple(int(d) for d in numpy_helper.to_array(inits[node.input[0]]))
        op, k = _role(g, node.output[0])
        if len(shape) == 4:
            fan = np.prod(shape[1:]) if op != "ConvTranspose" else shape[0] * np.prod(shape[2:])
            v = rng.normal(0, np.sqrt(2 / fan), shape)
        elif len(shape) == 2:
            v = rng.normal(0, np.sqrt(1 / shape[1]), shape)
        elif op == "BatchNormalization" and k in (1, 4):     # scale, variance
            v = rng.uniform(0.8, 1.2, shape) if k == 1 else rng.uniform(0.5, 1.5, shape)
        elif op == "Mul":
            v = rng.uniform(0.8, 1.2, shape)
        else:                                                 # biases, offsets, means
            v = rng.normal(0, 0.1, shape)
        added.append(numpy_helper.from_array(v.astype(np.float32), node.output[0]))
    del g.node[:]
    g.node.extend(keep)
    g.initializer.extend(added)
    return m


def data_input(model):
    inits = {i.name for i in model.graph.initializer}
    return next(vi for vi in model.graph.input if vi.name not in inits)


def ort_run(model, x: np.ndarray, outputs=None) -> list:
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    s = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(outputs, {data_input(model).name: x})


def scale_last(model, x: np.ndarray, spread: float = 3.0) -> None:
    """Scale (in place) the weight of the last Gemm or Conv so that the logits of ``x`` have
    standard deviation ``spread``."""
    import onnx
    from onnx import helper, numpy_helper
    last = [n for n in model.graph.node if n.op_type in ("Gemm", "Conv")][-1]
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    probe.graph.output.append(helper.make_tensor_value_info(last.output[0],
                                                            onnx.TensorProto.FLOAT, None))
    z = ort_run(probe, x)[-1]
    name = last.input[1]
    producers = {o: n for n in model.graph.node for o in n.output}
    while name in producers:                 # a weight reshaped first (Inception v1's)
        name = producers[name].input[0]
    init = next(i for i in model.graph.initializer if i.name == name)
    w = numpy_helper.to_array(init) * np.float32(spread / max(float(z.std()), 1e-30))
    init.CopyFrom(numpy_helper.from_array(w.astype(np.float32), init.name))


def prepared(name: str, seed: int = 0):
    """The architecture with random weights, a random input and onnxruntime's output."""
    import onnx
    model = with_random_weights(onnx.load(str(light(name))), seed)
    dims = [d.dim_value for d in data_input(model).type.tensor_type.shape.dim]
    x = np.random.default_rng(seed).normal(size=dims).astype(np.float32)
    scale_last(model, x)
    return model, x, ort_run(model, x)[0]


def errors(got, want) -> tuple[float, float]:
    """(the largest difference over the largest |want|, the largest elementwise relative)."""
    got, want = np.asarray(got, np.float64).ravel(), np.asarray(want, np.float64).ravel()
    diff = np.abs(got - want)
    return float(diff.max() / np.abs(want).max()), float((diff / np.abs(want)).max())


def shipped_output(name: str) -> np.ndarray:
    """The architecture's ``light_NAME_output_0.pb``: its output with the shipped weights,
    which is the same for every input (each weight one value repeated), so any input
    reconstructs the one it was computed of."""
    import onnx
    from onnx import numpy_helper
    p = light(name)
    return numpy_helper.to_array(onnx.load_tensor(str(p.with_name(p.stem + "_output_0.pb"))))


def check_shipped(name: str, rep, seed: int = 0) -> tuple[float, float]:
    """The built network ``rep`` (of ``check``: the same names, random weights) with the
    shipped weights, which the importer reads from the ConstantOfShape nodes, on a random
    input, against the shipped output: (over the largest, elementwise relative)."""
    import onnx
    from extract.front.onnx import import_onnx
    model = onnx.load(str(light(name)))
    imp = import_onnx(model, batch=True, loss="auto")
    params = {k: v for k, v in imp.params.items() if k in rep.model.params}
    assert set(params) == set(rep.model.params), set(rep.model.params) ^ set(params)
    rep.model.set_params(params)
    dims = [d.dim_value for d in data_input(model).type.tensor_type.shape.dim]
    x = np.random.default_rng(seed + 1).normal(size=dims).astype(np.float32)
    (got,) = rep.run([x])
    want = shipped_output(name)
    return errors(got.reshape(want.shape), want)


def check(name: str, seed: int = 0, log=print) -> tuple[float, float]:
    """Import, elaborate, build and run one architecture against onnxruntime (random
    weights), then with the shipped weights against the shipped output."""
    import runtime.onnx_backend as backend
    model, x, want = prepared(name, seed)
    t = time.monotonic()
    rep = backend.prepare(model, batch=True, loss="auto")
    log(f"{name}: imported, elaborated and built in {time.monotonic() - t:.0f} s")
    t = time.monotonic()
    (got,) = rep.run([x])
    err = errors(got, want)
    log(f"{name}: ran in {time.monotonic() - t:.0f} s; against onnxruntime: {err[0]:.1e} over "
        f"the largest, {err[1]:.1e} elementwise relative (outputs {float(np.abs(want).min()):.1e}"
        f" to {float(np.abs(want).max()):.1e})")
    shipped = check_shipped(name, rep, seed)
    log(f"{name}: with the shipped weights against light_{name}_output_0.pb: {shipped[0]:.1e} "
        f"over the largest, {shipped[1]:.1e} elementwise relative")
    assert shipped[0] <= 1e-5, (name, shipped)
    return err


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    for n in sys.argv[1:] or ARCHITECTURES:
        try:
            check(n)
        except Exception as e:  # noqa: BLE001 - a report per architecture
            print(f"{n}: {type(e).__name__}: {str(e)[:500]}")
        sys.stdout.flush()
