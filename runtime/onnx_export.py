"""A model and its weights as an ONNX file, without building its kernels.

    runtime.export_onnx("models/lenet5.model", "lenet5.onnx", weights="out/lenet5/weights.npz")

``model`` is anything ``runtime.load`` takes, ``weights`` too (None: fresh weights by ``init``
and ``seed``); the graph is ``extract.export.onnx``'s (docs/onnx.md, "Export"). A loaded
model exports its current weights with ``Model.export(path)``. ``python -m extract export``
is the command line (``extract/export/cli.py``).
"""
from __future__ import annotations

import os
from pathlib import Path

from .model import read_params
from .spec import ir_model, model_spec

__all__ = ["export_onnx", "ir_model"]


def export_onnx(model, path: str | os.PathLike, weights=None, precision: str | None = None,
                init: str = "random", seed: int = 0, loss: bool = False, dump=None) -> Path:
    """Write ``model``'s forward chain with ``weights`` to the ONNX file ``path``; returns it.
    Raises ``ValueError`` (``extract.export.onnx.ExportError`` among them) naming what is
    wrong, and writes nothing then."""
    from extract.export import onnx as onnx_export
    spec = model_spec(model, dump)
    w = read_params(spec, weights, precision, init, seed)
    try:
        return onnx_export.export(ir_model(spec), w.params, path, w.precision, loss)
    except onnx_export.ExportError as e:
        if w.source is None or "weights" not in str(e):
            raise
        raise onnx_export.ExportError(f"{w.source}: {e}") from None
