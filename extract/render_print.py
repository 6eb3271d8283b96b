"""Deprecated alias of ``extract.render.render_print`` (issue #36), kept for one release.

Importing ``extract.render_print`` warns and puts ``extract.render.render_print`` in its place
in ``sys.modules``: every name (private ones too) and every monkeypatch reaches the real module.
"""
import importlib
import sys
import warnings

warnings.warn("extract.render_print is deprecated: import extract.render.render_print",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("extract.render.render_print")
