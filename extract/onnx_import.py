"""The ONNX importer, kept at its old place: ``extract.front.onnx`` is the importer (a core and
one module per family of operators); this module re-exports its public names, so
``from extract.onnx_import import import_onnx`` and ``python -m extract import`` work as before.
"""
from __future__ import annotations

from .front.onnx import (SUPPORTED, Imported, OnnxBatchWarning, OnnxImportError,  # noqa: F401
                         import_onnx)
from .front.onnx.cli import main  # noqa: F401
from .front.onnx.core import _Importer  # noqa: F401 - tests name it

__all__ = ["OnnxImportError", "Imported", "import_onnx", "SUPPORTED", "main"]
