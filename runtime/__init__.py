"""Train and run the paper's CNN with the generated, allocation-free C kernels.

    import runtime
    m = runtime.load("cnn")                                  # SaC initial weights, float32
    x, y = runtime.load_mnist(runtime.DEFAULT_DATA, "train")  # bundled 10,000-image subset
    m.train(x, y, epochs=10, batch_size=100, lr=0.05)
    m.evaluate(*runtime.load_mnist(runtime.DEFAULT_DATA, "test"))

Command line: ``python -m runtime train cnn`` and ``python -m runtime predict cnn --weights W``.
"""

from pathlib import Path

from .idx import load_mnist, read_idx, write_idx
from .model import Model, load
from .weights import init_params, load_weights, save_weights

DEFAULT_DATA = Path(__file__).resolve().parent.parent / "data" / "mnist"

__all__ = [
    "DEFAULT_DATA",
    "Model",
    "init_params",
    "load",
    "load_mnist",
    "load_weights",
    "read_idx",
    "save_weights",
    "write_idx",
]
