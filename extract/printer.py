"""Deprecated alias of ``extract.emit.printer`` (issue #36), kept for one release.

Importing ``extract.printer`` warns and puts ``extract.emit.printer`` in its place in
``sys.modules``: every name (private ones too) and every monkeypatch reaches the real module.
"""
import importlib
import sys
import warnings

warnings.warn("extract.printer is deprecated: import extract.emit.printer",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("extract.emit.printer")
