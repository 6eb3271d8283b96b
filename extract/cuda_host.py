"""Deprecated alias of ``extract.check.cuda_host`` (issue #36), kept for one release.

Importing ``extract.cuda_host`` warns and puts ``extract.check.cuda_host`` in its place in
``sys.modules``: every name (private ones too) and every monkeypatch reaches the real module.
"""
import importlib
import sys
import warnings

warnings.warn("extract.cuda_host is deprecated: import extract.check.cuda_host",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("extract.check.cuda_host")
