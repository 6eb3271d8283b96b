"""Front end: a model file (``*.model``, docs/model-format.md) → the Agda elaborator → the
expression dump's JSON text (docs/dump-format.md).

In: a model file (a path or its text). Out: the dump text, or one ``ModelError`` naming the
line and binding. ``frontend.py`` runs ``build/agda/Main model FILE``; the ONNX importer
(``extract/onnx_import.py``, an ONNX file → a model file and its weights) feeds it too.
"""
