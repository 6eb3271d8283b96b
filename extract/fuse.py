"""Deprecated alias of ``extract.emit.fuse`` (issue #36), kept for one release.

Importing ``extract.fuse`` warns and puts ``extract.emit.fuse`` in its place in ``sys.modules``:
every name (private ones too) and every monkeypatch reaches the real module.
"""
import importlib
import sys
import warnings

warnings.warn("extract.fuse is deprecated: import extract.emit.fuse",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("extract.emit.fuse")
