"""Deprecated alias of ``extract.passes.share`` (issue #36), kept for one release.

Importing ``extract.share`` warns and puts ``extract.passes.share`` in its place in
``sys.modules``: every name (private ones too) and every monkeypatch reaches the real module.
"""
import importlib
import sys
import warnings

warnings.warn("extract.share is deprecated: import extract.passes.share",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("extract.passes.share")
