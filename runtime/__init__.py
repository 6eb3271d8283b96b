"""Train and run models with the generated, allocation-free C kernels (the paper's CNN is the
built-in ``"cnn"``); everything model-specific is read from the model's expression dump.

    import runtime
    m = runtime.load("cnn")                                  # random initial weights, float32
    x, y = runtime.load_mnist(runtime.DEFAULT_DATA, "train")  # bundled 10,000-image subset
    m.train(x, y, epochs=10, batch_size=100, lr=0.05)
    m.evaluate(*runtime.load_mnist(runtime.DEFAULT_DATA, "test"))

``runtime.load`` also takes a dump (``"my.json"``) or a model file (``"my.model"``).
Command line: ``python -m runtime train MODEL`` and ``python -m runtime predict MODEL --weights W``.
From PyTorch: ``runtime.torch.Module(MODEL)`` is a ``torch.nn.Module`` over the same kernels
(imported on demand: PyTorch is optional). Optimisers and schedules: ``runtime.optim``.

``DEFAULT_DATA`` is the bundled MNIST subset: ``runtime/_data/mnist`` in an installed package
(copied there by setup.py), else ``data/mnist`` of the source checkout.
"""

from pathlib import Path

from . import data
from .idx import load_mnist, read_idx, write_idx
from .model import DivergedError, InferenceOnlyWarning, Model, load
from .onnx_export import export_onnx
from .spec import ModelSpec, model_spec
from .weights import init_params, load_weights, read_weights, save_weights


def _default_data() -> Path:
    try:
        from extract.emit.build import locate
    except ImportError:  # extract missing: the checkout's copy
        return Path(__file__).resolve().parent.parent / "data" / "mnist"
    return locate("mnist")


DEFAULT_DATA = _default_data()

__all__ = [
    "DEFAULT_DATA",
    "DivergedError",
    "InferenceOnlyWarning",
    "Model",
    "ModelSpec",
    "data",
    "export_onnx",
    "init_params",
    "load",
    "load_mnist",
    "load_weights",
    "read_weights",
    "model_spec",
    "read_idx",
    "save_weights",
    "write_idx",
]
