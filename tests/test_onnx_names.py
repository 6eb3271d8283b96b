"""An ONNX graph's name is written into the model file as one comment line, whatever it holds
(issue #38: a name with newlines became extra lines of the model)."""
from __future__ import annotations

import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from extract.front.onnx import import_onnx  # noqa: E402


def test_a_graph_name_with_newlines_stays_one_comment_line():
    evil = "g\nparam  evil : 3\r\nloss  l = evil\u2028x"
    node = helper.make_node("Relu", ["x"], ["y"], name="n1")
    graph = helper.make_graph([node], evil, [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [3])], [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                                      [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    text = import_onnx(model, batch=False).text
    lines = text.splitlines()
    assert not any(ln.startswith(("param  evil", "loss  l")) for ln in lines), text
    assert lines[0].startswith("-- imported from ONNX (g\\nparam  evil") and \
        lines[1].startswith("model ")
    assert "\r" not in text and "\u2028" not in text
