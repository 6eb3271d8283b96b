"""ONNX graph → model file (``docs/model-format.md``) and weights: one pass over the nodes.

    before (ONNX)                                   after (model language)
    Conv(x, W) {pads 2,2,2,2}                       param W : 8x1x5x5
    Add(conv_out, B)      B : 8x1x1                 param B : 8
    Mul(add_out, c)       c = Constant(0.5)         const c : 1
    Relu(scaled)                                    conv_out = conv2d(x, W, 2)
                                                    add_out = for i0 : 8 . for i1 : 28 . for i2 : 28
                                                              . conv_out[i0][i1][i2] + B[i0]
                                                    scaled = for i0 : 8 . for i1 : 28 . for i2 : 28
                                                             . (add_out[i0][i1][i2]) * (c)
                                                    output relu_out = relu(scaled)

Every node becomes one binding (so the extractor never recomputes a sum), every initializer
that an operation reads becomes a ``param`` (a trainable parameter, its value in the weights),
and shapes are only *proposed* here: the Agda elaborator checks them like those of a model
written by hand, and the proved ∇ and optimiser run on the result. Initializers that only
feed shape arithmetic (``Reshape``'s shape, a transposed weight) are folded with NumPy, and
so is a ``Shape`` with what follows it (``Gather``, ``Concat``, ``Slice``, ``Cast``: PyTorch's
``x.view(x.size(0), -1)``), the batch axis reading 1 since every shape is fixed. A
constant that is not a weight (a ``Constant`` node's value, a ``Gemm`` scale, or one folded
from them) becomes a ``const``: the model language writes no decimals, so its value goes into
the weights too, and training leaves it as it is.

The batch axis: with ``batch=True`` the leading dimension of the graph's input (1 or
symbolic) is the runtime's batch and is dropped from every shape; with ``batch=False`` the
whole tensor is one sample (ONNX's node tests). A loss is appended (the model language needs
one to train): softmax cross-entropy on a vector output (``loss="ce"``; of the logits when the
output is a ``Softmax`` of them, which stays the output) or squared error (``"sqerr"``) against
a ``target`` input of the output's shape.

Anything the model language cannot express exactly (strides that differ per axis, dilations,
1-D and 3-D convolutions, dynamic shapes, integer tensors, several graph outputs, …)
raises ``OnnxImportError`` naming the node, its operator and what is unsupported — never an
approximate model.

The package: ``core`` (the walk, names, binding, constants, broadcasting) and one module per
family of operators, each a table ``HANDLERS`` (op_type → handler) and ``SUPPORTED`` (op_type →
its restrictions): ``elementwise``, ``conv`` (convolution and pooling), ``shape`` (and Concat,
Split, Slice, Resize, DepthToSpace), ``normalisation`` (and reductions, softmax, LRN),
``matmul``. Each handler's docstring says what it expands to. ``cli`` is ``python -m extract
import``. ``extract.onnx_import`` re-exports the public names.
"""
from __future__ import annotations

import re
from pathlib import Path

from . import conv, elementwise, matmul, normalisation, shape
from .core import Imported, OnnxBatchWarning, OnnxImportError, _Importer

__all__ = ["OnnxImportError", "OnnxBatchWarning", "Imported", "import_onnx", "SUPPORTED",
           "HANDLERS"]

_FAMILIES = (elementwise, conv, shape, normalisation, matmul)

# op_type -> handler(im, node, attrs), and op_type -> what of it is translated
HANDLERS = {op: f for fam in _FAMILIES for op, f in fam.HANDLERS.items()}
SUPPORTED = {op: fam.SUPPORTED[op] for fam in _FAMILIES for op in fam.HANDLERS}
assert set(HANDLERS) == {op for fam in _FAMILIES for op in fam.SUPPORTED}


def import_onnx(model, *, name: str | None = None, batch="auto", loss: str = "auto") -> Imported:
    """Translate an ONNX model (a path or a ``ModelProto``) into the model language.

    ``batch``: "auto" (a single input whose leading dimension is 1 or symbolic is batched),
    True or False (see the module docstring). ``loss``: "ce", "sqerr" or "auto" (ce for a
    vector output, else sqerr). Raises ``OnnxImportError`` for what cannot be expressed."""
    try:
        import onnx
    except ModuleNotFoundError:
        raise OnnxImportError("the onnx package is not installed (pip install onnx)") from None
    if isinstance(model, (str, Path)):
        p = Path(model)
        if not p.is_file():
            raise OnnxImportError(f"{p}: no such file")
        try:
            model = onnx.load(str(p))
        except Exception as e:  # noqa: BLE001 - protobuf's errors vary
            raise OnnxImportError(f"{p}: not an ONNX model ({type(e).__name__}: {e})") from None
        stem = p.parent.name if p.stem == "model" and p.parent.name else p.stem
        name = name or re.sub(r"[^A-Za-z0-9_]", "_", stem)
    return _Importer(model, name, batch, loss, HANDLERS, SUPPORTED).run()
