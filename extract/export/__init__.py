"""Export: the dump IR -> an ONNX model of the forward chain with its weights.

``onnx.to_onnx(model, arrays)`` builds the graph (``onnx.ExportError``: one line naming the
binding and the node it cannot export), ``onnx.export(model, arrays, path)`` writes it;
``cli`` is ``python -m extract export``. Reads the dump IR only (``ir``); the weights come
in as arrays (``runtime.Model.export`` passes its own).
"""
