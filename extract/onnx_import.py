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
groups, padding that differs per side, ceil mode, ``erf``, dynamic shapes, integer tensors, …)
raises ``OnnxImportError`` naming the node, its operator and what is unsupported — never an
approximate model.
"""
from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import dump

__all__ = ["OnnxImportError", "Imported", "import_onnx", "SUPPORTED"]


class OnnxBatchWarning(UserWarning):
    """A graph input whose first dimension looks like a batch size fixed at export (4 of
    4×1×28×28): without ``--batch yes`` it is taken as part of each sample."""


class OnnxImportError(ValueError):
    """An ONNX model the model language cannot express (or a malformed one)."""


# the operators translated, and what of each (docs/model-format.md, docs/onnx.md)
SUPPORTED = {
    "Add": "broadcasting", "Sub": "broadcasting", "Mul": "broadcasting",
    "Div": "broadcasting (a · recip(b); by a whole-number constant: a / n)",
    "Max": "two or more inputs, broadcasting", "Sum": "broadcasting",
    "Relu": "", "Sigmoid": "", "Tanh": "", "Exp": "", "Log": "", "Neg": "", "Reciprocal": "",
    "Sqrt": "", "Identity": "",
    "Gelu": "approximate='tanh' (opset 20): x·σ(2u), u = √(2/π)·(x + 0.044715·x³); not the "
            "default erf form",
    "Pow": "a constant whole exponent from 1 to 8 (repeated products), or 0.5 (sqrt), "
           "-0.5 (recip(sqrt))",
    "Conv": "2-D, the same stride on both axes, dilation 1, group 1, the same padding on every side",
    "MaxPool": "2-D, square window and stride, floor mode; padding the same on every side, "
               "smaller than the window (-inf: padded by conv2d, + log of padded ones)",
    "AveragePool": "2-D, square window and stride, floor mode; padding the same on every side, "
                   "smaller than the window (zeros: padded by conv2d), count_include_pad 0 or 1",
    "MatMul": "rank 1 or 2 operands", "Gemm": "alpha, beta, transA, transB",
    "Reshape": "", "Flatten": "", "Transpose": "", "Squeeze": "", "Unsqueeze": "",
    "Softmax": "the last axis", "LogSoftmax": "the last axis",
    "ReduceSum": "constant axes", "ReduceMean": "constant axes",
    "Constant": "a tensor value",
    "ConstantOfShape": "a constant shape (folded: a weight of an initializer's shape, a "
                       "const of a Constant's or Shape's)",
    "Shape": "a constant (the batch axis reads 1: each sample is a batch of one)",
    "Gather": "of constants (shape arithmetic)", "Concat": "of constants (shape arithmetic)",
    "Slice": "of constants (shape arithmetic)",
    "Cast": "of a constant; of a tensor, to a float type",
    "BatchNormalization": "inference (training_mode 0), constant statistics: folded to "
                          "x · a + b per channel",
    "LayerNormalization": "the output Y (not Mean, InvStdDev), not over the batch axis",
}

# why an operator of today's networks is not translated (the error names it)
_UNSUPPORTED = {
    "Erf": "the error function erf has no form in the model language (no erf, and none of "
           "its operations composes it exactly); PyTorch's nn.GELU(approximate=\"tanh\") "
           "(another function, tanh's form) exports without it, and imports",
}

_FLOAT_TYPES = {1: "float32", 11: "float64"}

# names a binding or parameter may not take: the language's words and builtins (the generated
# C's are dump.name_problem's)
_RESERVED = set("""
for sum tile
logistic exp log recip relu step max sqrt sqrtf slide backslide block zerobut div mod
dense conv conv2d avgpool maxpool maxall sqerr tanh fmax_ fmax fmin expf logf exp_ log_ i j k n
""".split())


@dataclass
class Imported:
    """The result of an import: a model file's text and the initial values of its parameters
    and consts (``params``; ``consts`` names the latter)."""

    name: str
    text: str
    params: dict[str, np.ndarray]
    inputs: dict[str, tuple[int, ...]]   # graph input name -> per-sample shape in the model
    input_names: dict[str, str]          # graph input name -> model name
    output: str                          # the model's output binding
    output_shape: tuple[int, ...]        # ONNX shape of the output (batch axis included)
    batch: bool
    target: str | None = None
    notes: list[str] = field(default_factory=list)
    consts: tuple[str, ...] = ()

    def save(self, directory) -> tuple[Path, Path]:
        """Write ``NAME.model`` and ``NAME.npz`` (runtime weights, f32) into ``directory``, and
        with consts ``NAME.consts.npz``, their values alone (``--weights`` of it trains from
        fresh parameters)."""
        from runtime.weights import save_weights
        from runtime._files import atomic_write
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        model = d / f"{self.name}.model"
        shapes = {k: tuple(v.shape) for k, v in self.params.items()}
        weights = save_weights(d / f"{self.name}.npz", self.params, self.name, "f32", shapes)
        if self.consts:
            consts = {k: self.params[k] for k in self.consts}
            save_weights(d / f"{self.name}.consts.npz", consts, self.name, "f32",
                         {k: shapes[k] for k in self.consts})
        atomic_write(model, lambda f: f.write(self.text.encode()))
        return model, weights


def _lang(shape) -> tuple:
    """The shape as the model language sees it: a trailing dimension 1 is absorbed (a scalar
    is an array of shape 1, and `for i : S . e` of a scalar e has shape S)."""
    shape = tuple(shape)
    while shape and shape[-1] == 1:
        shape = shape[:-1]
    return shape


def _root(a: np.ndarray) -> int:
    """The id of the array whose memory ``a`` views (a reshaped constant is a view of it)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return id(a)


def _shape_text(shape) -> str:
    shape = _lang(shape)
    return "x".join(str(d) for d in shape) if shape else "1"


@dataclass
class _T:
    """A tensor during the import: an expression of the model language (a name, usually) with
    its shape, or a constant (``value``)."""

    shape: tuple[int, ...]
    text: str | None = None
    value: np.ndarray | None = None
    fixed: bool = False   # a constant that is not a weight: a Constant node's, an attribute's
    batch: np.ndarray | None = None   # of a Shape: where the value is the batch size (read as 1)

    @property
    def const(self) -> bool:
        return self.value is not None


class _Importer:
    def __init__(self, model, name: str | None, batch, loss: str):
        import onnx
        from onnx import numpy_helper, shape_inference
        self.onnx, self.nh = onnx, numpy_helper
        try:
            model = shape_inference.infer_shapes(model)
        except Exception:  # noqa: BLE001 - shapes are also computed below
            pass
        self.model = model
        self.graph = model.graph
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
                          13)
        self.name = self._ident(name or self.graph.name or "imported", {})
        self.loss = loss
        self.batch_request = batch
        # a vector Softmax's binding -> (its logits, their max, the sum of exp(logit - max)):
        # a cross-entropy of a softmax output is taken of the logits, with these bindings
        self.softmax_of: dict[str, tuple[str, str, str]] = {}
        self.used: dict[str, str] = {}     # model names taken -> what
        self.decls: list[str] = []
        self.lines: list[str] = []
        self.params: dict[str, np.ndarray] = {}
        self.consts: list[str] = []      # of params: the graph's constants (declared const)
        self.param_of: dict[int, str] = {}  # id(array) -> param name
        # id(_root(array)) of Conv kernels declared as they are -> their param; of the
        # constants declared by ref: a kernel read so too would be two parameters
        self.kernels: dict[int, str] = {}
        self.declared: set[int] = set()
        self.env: dict[str, _T] = {}
        self.squeezed: dict[int, _T] = {}  # id(constant) -> its squeezed form
        self.alive: list = []               # constants whose id() is a key above
        self.at: int | str = "?"            # the index in graph.node of the node translated
        self.derived: dict = {}             # the consts and bindings of paddings, once each

    # -- names ----------------------------------------------------------------------------------

    def _ident(self, raw: str, used) -> str:
        # "/conv1/Conv_output_0" -> conv1_Conv_output_0: no leading or double underscore (C's)
        s = re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9_]", "_", raw)).strip("_") or "t"
        if s[0].isdigit():
            s = "t" + s
        if s.startswith("d_"):
            s = "v" + s
        # the word lanes names generated kernels: "x_lanes" -> x_lanes0
        s = "_".join(w + "0" if w in dump.LANE_WORDS else w for w in s.split("_"))
        base, n = s, 1
        while s in _RESERVED or dump.name_problem(s) or s in used:
            n += 1
            s = f"{base}_{n}"
        return s

    def _fresh(self, raw: str, what: str) -> str:
        s = self._ident(raw, self.used)
        self.used[s] = what
        return s

    # -- errors ---------------------------------------------------------------------------------

    def _where(self, node) -> str:
        # an unnamed node by its position in graph.node (from 0): "node #3 (MaxPool)"
        if node.name:
            return f"node {node.name!r} ({node.op_type})"
        return f"node #{self.at} ({node.op_type})"

    def fail(self, node, what: str):
        raise OnnxImportError(f"{self._where(node)}: {what}")

    # -- tensors --------------------------------------------------------------------------------

    def _dims(self, vi) -> list:
        t = vi.type.tensor_type
        if not vi.type.HasField("tensor_type"):
            kind = (vi.type.WhichOneof("value") or "untyped").replace("_type", "")
            raise OnnxImportError(f"graph input {vi.name!r}: a {kind}, not a tensor (only "
                                  f"tensors are supported)")
        if t.elem_type not in _FLOAT_TYPES:
            raise OnnxImportError(f"graph input {vi.name!r}: element type "
                                  f"{self.onnx.TensorProto.DataType.Name(t.elem_type)} is not "
                                  f"supported (float32 and float64 are)")
        if not t.HasField("shape"):
            raise OnnxImportError(f"graph input {vi.name!r}: no shape (dynamic rank is not "
                                  f"supported)")
        return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?")
                for d in t.shape.dim]

    def operand(self, node, k: int) -> _T:
        name = node.input[k]
        if name not in self.env:
            self.fail(node, f"input {name!r} is not produced by any node before it")
        return self.env[name]

    def ref(self, t: _T, node=None) -> str:
        """The expression of a tensor, declaring a constant on first use: a weight as a
        ``param``, a constant of the graph as a ``const``."""
        if not t.const:
            return t.text
        key = id(t.value)
        if _root(t.value) in self.kernels:
            raise OnnxImportError(
                (f"{self._where(node)}: " if node is not None else "")
                + f"{t.text!r} is the kernel of a Conv, declared "
                f"{self.kernels[_root(t.value)]}; it cannot be read as "
                f"{_shape_text(t.value.shape)} too (two parameters of one array)")
        if key not in self.param_of:
            if t.value.size == 0:
                self.fail(node, "an empty constant")
            p = self._fresh(t.text or "w", "param")
            self.param_of[key] = p
            self.declared.add(_root(t.value))
            self.alive.append(t.value)
            shape = _lang(t.value.shape) or (1,)
            self.params[p] = np.ascontiguousarray(t.value.reshape(shape), dtype=np.float32)
            if not t.fixed:
                self.decls.append(f"param  {p} : {_shape_text(shape)}")
            else:
                self.decls.append(f"const  {p} : {_shape_text(shape)}   -- a constant of the "
                                  f"graph (its value with the weights)")
                self.consts.append(p)
        return self.param_of[key]

    def bind(self, node, k: int, shape, expr: str) -> _T:
        out = node.output[k]
        name = self._fresh(out, "binding")
        self.lines.append((name, expr, out))
        t = _T(tuple(shape), name)
        self.env[out] = t
        return t

    # -- the walk -------------------------------------------------------------------------------

    def run(self) -> Imported:
        g = self.graph
        inits = {i.name: i for i in g.initializer}
        for i in g.initializer:
            v = self.nh.to_array(i)
            if v.dtype.kind == "f":
                v = v.astype(np.float64)
            self.env[i.name] = _T(tuple(v.shape), i.name, v)
        data = [vi for vi in g.input if vi.name not in inits]
        if not data:
            raise OnnxImportError("the graph has no inputs (besides initializers)")
        dims = {vi.name: self._dims(vi) for vi in data}
        batch = self.batch_request
        if batch == "auto":
            batch = len(data) == 1 and all(len(d) >= 2 and (d[0] == 1 or isinstance(d[0], str))
                                           for d in dims.values())
            fixed = [(vi.name, dims[vi.name]) for vi in data if len(dims[vi.name]) >= 2
                     and isinstance(dims[vi.name][0], int) and dims[vi.name][0] > 1]
            if not batch and fixed:
                name, d = fixed[0]
                warnings.warn(OnnxBatchWarning(
                    f"graph input {name!r} of shape {list(d)}: no batch axis found, so each "
                    f"sample is all of it; if {d[0]} is the batch size the model was exported "
                    f"with, export again with a dynamic_axes entry or a batch of 1"))
        self.batch = bool(batch)
        # the batch size fixed in the graph (an export at batch 4), for Reshape's message
        self.fixed_batch = next((d[0] for d in dims.values() if d and isinstance(d[0], int)
                                 and d[0] > 1), None) if self.batch else None
        inputs, names = {}, {}
        for vi in data:
            d = dims[vi.name]
            if self.batch:
                if not d:
                    raise OnnxImportError(f"graph input {vi.name!r} is a scalar: no batch axis")
                d = d[1:]
            if any(x == 0 for x in d):
                raise OnnxImportError(f"graph input {vi.name!r} of shape {list(dims[vi.name])}: "
                                      f"a dimension of size 0 (empty tensors are not supported)")
            bad = [x for x in d if not isinstance(x, int) or x <= 0]
            if bad:
                raise OnnxImportError(f"graph input {vi.name!r} of shape {list(dims[vi.name])}: "
                                      f"dimension {bad[0]!r} is not a fixed positive size "
                                      f"(dynamic shapes are not supported"
                                      + ("; only the leading batch axis may be symbolic"
                                         if self.batch else
                                         "; a symbolic leading axis is the batch with "
                                         "batch=True or \"auto\" (--batch yes|auto)"
                                         if not isinstance(dims[vi.name][0], int)
                                         and bad[0] == dims[vi.name][0] else "") + ")")
            n = self._fresh(vi.name, "input")
            names[vi.name], inputs[vi.name] = n, tuple(d)
            self.decls.append(f"input  {n} : {_shape_text(d)}")
            self.env[vi.name] = _T(tuple(d), n)
        for self.at, node in enumerate(g.node):
            if node.domain not in ("", "ai.onnx"):
                self.fail(node, f"operator domain {node.domain!r} is not supported")
            f = getattr(self, "op_" + node.op_type, None)
            if f is None:
                why = _UNSUPPORTED.get(node.op_type)
                self.fail(node, "operator not supported" + (f": {why}" if why else "")
                          + " (supported: " + ", ".join(sorted(SUPPORTED)) + ")")
            self._batch_size_check(node)
            try:
                f(node, self.attrs(node))
            except OnnxImportError:
                raise
            except (ValueError, IndexError, KeyError, TypeError, ZeroDivisionError) as e:
                # a malformed node (strides of 0, an axis out of range, ...)
                self.fail(node, f"cannot be read ({type(e).__name__}: {e})")
        if len(g.output) != 1:
            raise OnnxImportError(f"the graph has {len(g.output)} outputs; one is supported")
        out = g.output[0].name
        t = self.env.get(out)
        if t is None:
            raise OnnxImportError(f"the graph output {out!r} is not produced by any node")
        if t.const:
            raise OnnxImportError(f"the graph output {out!r} is a constant")
        last = self.lines[-1][0] if self.lines else None
        if last != t.text:
            # the output is an input or an earlier binding: bind it (once more)
            name = self._fresh(out + "_out", "binding")
            self.lines.append((name, t.text, out))
            t = _T(t.shape, name)
        output_shape = ((1,) if self.batch else ()) + t.shape
        target = self.add_loss(t)
        body = []
        for (n, e, src) in self.lines:
            kw = "output " if n == t.text else ""
            body.append(f"{kw}{n} = {e}")
        body += self.loss_lines
        # the graph's name is anyone's text: one line of escaped ASCII in the comment
        shown = (self.graph.name or "graph").encode("unicode_escape").decode("ascii")[:200]
        header = [f"-- imported from ONNX ({shown}, opset {self.opset}) by "
                  f"python -m extract import", f"model {self.name}"]
        text = "\n".join(header + self.decls + [self.target_decl] + body) + "\n"
        return Imported(self.name, text, self.params, inputs, names, t.text, output_shape,
                        self.batch, target, consts=tuple(self.consts))

    def add_loss(self, t: _T) -> str:
        loss = self.loss
        if loss == "auto":
            loss = "ce" if len(t.shape) == 1 and t.shape[0] > 1 else "sqerr"
        y = self._fresh("y", "target")
        self.target_decl = f"target {y} : {_shape_text(t.shape)}"
        n = t.text
        if loss == "ce":
            if len(t.shape) != 1:
                raise OnnxImportError(f"loss 'ce' needs a vector output; {n} has shape "
                                      f"{t.shape}")
            k = t.shape[0]
            if n in self.softmax_of:  # the output is already a softmax: its logits' entropy
                z, m, se = self.softmax_of[n]
                ls = self._fresh("loss", "binding")
                self.loss_lines = [
                    f"-- {n} is the softmax of {z}: the cross-entropy of the logits {z}",
                    f"loss {ls} = log({se}) + {m} - (sum j : {k} . {y}[j] * {z}[j])"]
                return y
            m, se, ls = (self._fresh(x, "binding") for x in ("m", "se", "loss"))
            self.loss_lines = [
                f"{m} = maxall({n})",
                f"{se} = sum j : {k} . exp({n}[j] - {m})",
                f"loss {ls} = log({se}) + {m} - (sum j : {k} . {y}[j] * {n}[j])"]
        elif loss == "sqerr":
            ls = self._fresh("loss", "binding")
            self.loss_lines = [f"loss {ls} = sqerr({n}, {y})"]
        else:
            raise OnnxImportError(f"unknown loss {loss!r} (ce, sqerr or auto)")
        return y

    def attrs(self, node) -> dict:
        from onnx import helper
        return {a.name: helper.get_attribute_value(a) for a in node.attribute}

    # -- helpers for the operators ------------------------------------------------------------

    def const_of(self, node, k: int, what: str) -> np.ndarray:
        if k >= len(node.input) or not node.input[k]:
            return None
        t = self.operand(node, k)
        if not t.const:
            self.fail(node, f"{what} must be a constant (an initializer), not computed")
        return t.value

    def only(self, node, a: dict, allowed: dict):
        for k, v in a.items():
            if k in allowed and not allowed[k](v):
                self.fail(node, f"attribute {k}={v!r} is not supported")
            if k not in allowed:
                self.fail(node, f"attribute {k!r} is not supported")

    def out_const(self, node, v: np.ndarray, fixed: bool | None = None):
        """A constant output; by default ``fixed`` (not a weight) if every constant input is
        (a weight scaled by a Constant is still a weight)."""
        if fixed is None:
            consts = [self.env[i] for i in node.input if i in self.env and self.env[i].const]
            fixed = bool(consts) and all(c.fixed for c in consts)
        self.env[node.output[0]] = _T(tuple(v.shape), node.output[0], v, fixed)

    def elem(self, t: _T, idx: list[str], out_rank: int, node) -> str:
        """The element of ``t`` at the output position named by ``idx`` (broadcasting, trailing
        dimensions aligned)."""
        r = len(t.shape)
        mine = idx[out_rank - r:]
        if t.const:
            v = t.value
            keep = [i for i, d in enumerate(v.shape) if d != 1]
            if id(v) not in self.squeezed:
                self.alive.append(v)
                self.squeezed[id(v)] = _T(tuple(v.shape[i] for i in keep), t.text,
                                          v.reshape([v.shape[i] for i in keep]), t.fixed)
            base = self.ref(self.squeezed[id(v)], node)
            return base + "".join(f"[{mine[i]}]" for i in keep)
        text = t.text
        parts, sums = [], []
        for i, d in enumerate(_lang(t.shape)):
            if d == 1 and self._outdims[out_rank - r + i] != 1:
                u = f"u{len(sums)}"
                sums.append(u)
                parts.append(f"[{u}]")
            else:
                parts.append(f"[{mine[i]}]")
        e = text + "".join(parts)
        for u in reversed(sums):
            e = f"(sum {u} : 1 . {e})"
        return e

    def _unbatch(self, node, t: _T, rank: int) -> _T:
        """A constant broadcast against a batched tensor of ``rank`` (per sample): its axes
        beyond ``rank`` line up with the batch axis and must be 1."""
        extra = len(t.shape) - rank
        if extra <= 0:
            return t
        if any(d != 1 for d in t.shape[:extra]):
            self.fail(node, f"a constant of shape {t.shape} varies along the batch axis")
        key = ("unbatch", id(t.value), rank)
        if key not in self.squeezed:
            self.alive.append(t.value)
            self.squeezed[key] = _T(t.shape[extra:], t.text, t.value.reshape(t.shape[extra:]),
                                    t.fixed)
        return self.squeezed[key]

    def broadcast(self, node, ts: list[_T], combine) -> None:
        """An elementwise operation of ``ts`` with ONNX broadcasting; ``combine`` builds the
        expression from the operands' expressions (whole arrays or elements)."""
        if self.batch and not all(t.const for t in ts):
            top = max(len(t.shape) for t in ts if not t.const)
            ts = [self._unbatch(node, t, top) if t.const else t for t in ts]
        try:
            out = tuple(np.broadcast_shapes(*[t.shape for t in ts]))
        except ValueError:
            self.fail(node, "operand shapes " + ", ".join(str(t.shape) for t in ts)
                      + " do not broadcast")
        if all(t.const for t in ts):
            self.out_const(node, combine(*[t.value for t in ts], numpy=True))
            return
        if all(t.shape == out for t in ts):
            self.bind(node, 0, out, combine(*[self.ref(t, node) for t in ts]))
            return
        if not out:
            self.bind(node, 0, out, combine(*[self.ref(t, node) for t in ts]))
            return
        self._outdims = out
        idx = [f"i{k}" for k in range(len(out))]
        body = combine(*[self.elem(t, idx, len(out), node) for t in ts])
        self.bind(node, 0, out, _fors(idx, out, body))

    # -- elementwise --------------------------------------------------------------------------

    def op_Add(self, node, a):
        self.only(node, a, {})
        self.broadcast(node, [self.operand(node, 0), self.operand(node, 1)],
                       lambda x, y, numpy=False: x + y if numpy else f"{x} + {y}")

    def op_Sub(self, node, a):
        self.only(node, a, {})
        self.broadcast(node, [self.operand(node, 0), self.operand(node, 1)],
                       lambda x, y, numpy=False: x - y if numpy else f"{x} - ({y})")

    def op_Mul(self, node, a):
        self.only(node, a, {})
        self.broadcast(node, [self.operand(node, 0), self.operand(node, 1)],
                       lambda x, y, numpy=False: x * y if numpy else f"({x}) * ({y})")

    def op_Div(self, node, a):
        self.only(node, a, {})
        x, y = self.operand(node, 0), self.operand(node, 1)
        if y.const and y.value.size == 1 and not x.const:
            v = float(y.value.reshape(()))
            if v == int(v) and v >= 1:
                self.bind(node, 0, np.broadcast_shapes(x.shape, y.shape),
                          f"{x.text} / {int(v)}")
                return
        def combine(p, q, numpy=False):
            if not numpy:
                return f"({p}) * recip({q})"
            if p.dtype.kind in "iu" and q.dtype.kind in "iu":   # ONNX: toward zero
                return np.sign(p) * np.sign(q) * (np.abs(p) // np.abs(q))
            return p / q
        self.broadcast(node, [x, y], combine)

    def op_Pow(self, node, a):
        """``x ** k`` for a constant whole ``k`` in 1..8: ``x * x * …`` (each factor the same
        binding); ``x ** 0.5``: ``sqrt(x)``, ``x ** -0.5`` (RMS normalisation's):
        ``recip(sqrt(x))``; another exponent has no form in the model language."""
        self.only(node, a, {})
        x, y = self.operand(node, 0), self.operand(node, 1)
        if x.const and y.const:
            self.out_const(node, np.power(x.value.astype(np.float64), y.value))
            return
        if not (y.const and y.value.size == 1):
            self.fail(node, "the exponent must be a constant (a scalar initializer or Constant)")
        k = float(y.value.reshape(()))
        if k in (0.5, -0.5):  # (x is not a constant: of two, the power is folded above)
            self.bind(node, 0, x.shape, f"sqrt({x.text})" if k > 0 else f"recip(sqrt({x.text}))")
            return
        if not (k == int(k) and 1 <= k <= 8):
            self.fail(node, f"the exponent {k:g} is not a whole number from 1 to 8 (nor ±0.5)")
        if x.const:
            self.out_const(node, x.value ** int(k))
        else:
            self.bind(node, 0, x.shape, " * ".join([x.text] * int(k)))

    def op_Max(self, node, a):
        self.only(node, a, {})
        ts = [self.operand(node, k) for k in range(len(node.input))]

        def combine(*xs, numpy=False):
            if numpy:
                return np.maximum.reduce(np.broadcast_arrays(*xs))
            e = xs[0]
            for x in xs[1:]:
                e = f"max({e}, {x})"
            return e
        self.broadcast(node, ts, combine)

    def op_Sum(self, node, a):
        self.only(node, a, {})
        ts = [self.operand(node, k) for k in range(len(node.input))]

        def combine(*xs, numpy=False):
            if numpy:
                return sum(np.broadcast_arrays(*xs))
            return " + ".join(xs)
        self.broadcast(node, ts, combine)

    def _unary(self, node, a, fn, npf):
        self.only(node, a, {})
        x = self.operand(node, 0)
        if x.const:
            self.out_const(node, npf(x.value))
        else:
            self.bind(node, 0, x.shape, fn(x.text))

    def op_Relu(self, node, a):
        self._unary(node, a, lambda x: f"relu({x})", lambda v: np.maximum(v, 0))

    def op_Sigmoid(self, node, a):
        self._unary(node, a, lambda x: f"logistic({x})", lambda v: 1 / (1 + np.exp(-v)))

    def op_Tanh(self, node, a):
        # the model language's tanh layer: 2σ(2x) − 1
        self._unary(node, a, lambda x: f"tanh({x})", np.tanh)

    def op_Exp(self, node, a):
        self._unary(node, a, lambda x: f"exp({x})", np.exp)

    def op_Log(self, node, a):
        self._unary(node, a, lambda x: f"log({x})", np.log)

    def op_Neg(self, node, a):
        self._unary(node, a, lambda x: f"-{x}", np.negative)

    def op_Reciprocal(self, node, a):
        self._unary(node, a, lambda x: f"recip({x})", lambda v: 1 / v)

    def op_Sqrt(self, node, a):
        # IEEE: NaN below 0, as ONNX's
        self._unary(node, a, lambda x: f"sqrt({x})", np.sqrt)

    # 2·√(2/π) and the coefficient of x³ of GELU's tanh form (ONNX's Gelu, PyTorch's
    # nn.GELU(approximate="tanh"))
    _GELU_SCALE = 2.0 * math.sqrt(2.0 / math.pi)
    _GELU_CUBIC = 0.044715

    def op_Gelu(self, node, a):
        """``approximate="tanh"``: ``0.5·x·(1 + tanh(u))``, ``u = √(2/π)·(x + 0.044715·x³)``,
        is ``x·σ(2u)`` (``0.5·(1 + tanh u) = σ(2u)``): the binding ``Y_2u = (x + x·x·x·k)·s``
        with the consts ``Y_cubic`` (``k = 0.044715``) and ``Y_scale`` (``s = 2·√(2/π)``), then
        ``Y = x * logistic(Y_2u)``. The default ``approximate="none"`` is ``x·Φ(x)``, of the
        error function: the model language has no ``erf``, so it is refused."""
        approx = a.get("approximate", b"none")
        approx = approx.decode() if isinstance(approx, bytes) else approx
        self.only(node, a, {"approximate": lambda v: True})
        if self.opset < 20:
            self.fail(node, f"Gelu is an operator of opset 20; the model imports opset "
                            f"{self.opset}")
        if approx == "none":
            self.fail(node, "approximate='none' (the default) is x·Φ(x), of the error function "
                            "erf, which the model language does not have (nor any exact form "
                            "of it); approximate='tanh' (PyTorch's nn.GELU(approximate="
                            "\"tanh\")) is supported")
        if approx != "tanh":
            self.fail(node, f"approximate={approx!r} is not supported (only 'tanh')")
        x = self.operand(node, 0)
        if x.const:
            v = x.value
            self.out_const(node, 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi)
                                                         * (v + self._GELU_CUBIC * v ** 3))))
            return
        base = node.output[0]
        k = self.ref(_T((), f"{base}_cubic", np.array(self._GELU_CUBIC), True), node)
        s = self.ref(_T((), f"{base}_scale", np.array(self._GELU_SCALE), True), node)
        shape = _lang(x.shape)
        idx = [f"i{j}" for j in range(len(shape))]
        e = x.text + "".join(f"[{i}]" for i in idx)
        u = self._fresh(f"{base}_2u", "binding")
        self.lines.append((u, _fors(idx, shape, f"({e} + {e} * {e} * {e} * {k}) * {s}"), u))
        self.bind(node, 0, x.shape, f"{x.text} * logistic({u})")

    def op_Identity(self, node, a):
        self.only(node, a, {})
        self.env[node.output[0]] = self.operand(node, 0)

    def op_Constant(self, node, a):
        if "value" not in a:
            self.fail(node, "only a tensor `value` is supported")
        v = self.nh.to_array(a["value"])
        self.out_const(node, v.astype(np.float64) if v.dtype.kind == "f" else v, fixed=True)

    def op_ConstantOfShape(self, node, a):
        """A tensor of a constant shape filled with ``value`` (a one-element tensor; float32 0
        by default), folded: a constant like an initializer. Its role follows its shape's
        (``out_const``): of an initializer's shape it is a weight, a ``param`` (the model
        zoo's "light" models, whose every weight is a ConstantOfShape of a constant shape);
        of a Constant's or a ``Shape``'s, a ``const``. Shape arithmetic of a batched input
        reads the batch axis as 1: allowed as the leading dimension only (the fill is the
        same for every sample, and a constant broadcasts over the batch)."""
        self.only(node, a, {"value": lambda v: True})
        shape = self.const_of(node, 0, "the shape")
        if shape is None:
            self.fail(node, "no shape input")
        shape = np.asarray(shape)
        if shape.ndim != 1 or shape.dtype.kind not in "iu":
            self.fail(node, f"a shape of type {shape.dtype} and rank {shape.ndim}: a 1-D "
                            f"integer tensor is required")
        if (shape < 0).any():
            self.fail(node, f"a negative dimension in the shape {shape.tolist()}")
        batch = self.operand(node, 0).batch
        if batch is not None and batch.any() and (batch[1:].any() or not batch[0]):
            self.fail(node, f"the batch size at position {int(np.argmax(batch))} of the shape "
                            f"{shape.tolist()}: only as its leading dimension")
        if "value" in a:
            v = self.nh.to_array(a["value"])
            if v.size != 1:
                self.fail(node, f"a value of {v.size} elements (one is required)")
            fill = v.reshape(())
        else:
            fill = np.zeros((), np.float32)
        if fill.dtype.kind == "f":
            fill = fill.astype(np.float64)
        elif fill.dtype.kind not in "iub":
            self.fail(node, f"a value of type {fill.dtype}")
        self.out_const(node, np.full(tuple(int(d) for d in shape), fill, dtype=fill.dtype))

    def op_BatchNormalization(self, node, a):
        """Inference mode (PyTorch's ``model.eval()`` export): with constant statistics,
        ``scale · (x − mean) / √(var + ε) + B`` is ``x · s + t`` per channel (axis 1 of the ONNX
        tensor), ``s = scale / √(var + ε)`` and ``t = B − mean · s`` folded with NumPy in
        float64; then one binding ``x · s + t`` of constants ``s``, ``t`` of shape C×1×…×1 (the
        parameters ``SCALE_folded`` and ``B_folded``, or consts if the statistics all are)."""
        if a.get("training_mode", 0) != 0:
            self.fail(node, f"training_mode={a['training_mode']}: the statistics of the batch "
                            f"(training mode) are not expressible; export in eval mode")
        if a.get("is_test", 1) != 1:   # opset 6 and before: is_test=0 is training mode
            self.fail(node, f"is_test={a['is_test']}: the statistics of the batch (training "
                            f"mode) are not expressible; export in eval mode")
        if any(node.output[1:]):
            self.fail(node, "the running mean and variance outputs (training mode) are not "
                            "supported")
        self.only(node, a, {"epsilon": lambda v: True, "momentum": lambda v: True,
                            "training_mode": lambda v: True, "is_test": lambda v: True,
                            "spatial": lambda v: v == 1})   # opset 7-8; 1 by default
        if len(node.input) != 5 or not all(node.input):
            self.fail(node, f"{len(node.input)} inputs: X, scale, B, input_mean and input_var "
                            f"are required")
        x = self.operand(node, 0)
        scale, bias, mean, var = (self.const_of(node, k, what) for k, what in
                                  [(1, "the scale"), (2, "the bias B"), (3, "the mean"),
                                   (4, "the variance")])
        rank = len(x.shape) + (self.batch and not x.const)   # with the batch axis
        if rank < 2:
            self.fail(node, f"an input of shape {x.shape}: no channel axis (N×C×…)")
        C = (((1,) if self.batch and not x.const else ()) + x.shape)[1]
        if any(v.shape != (C,) for v in (scale, bias, mean, var)):
            self.fail(node, f"scale, B, mean and variance of shapes {scale.shape}, {bias.shape}, "
                            f"{mean.shape}, {var.shape}: each must have the {C} channels")
        eps = float(a.get("epsilon", 1e-5))
        f64 = [np.asarray(v, np.float64) for v in (scale, bias, mean, var)]
        s = f64[0] / np.sqrt(f64[3] + eps)
        t = f64[1] - f64[2] * s
        per = (C,) + (1,) * (rank - 2)
        fixed = all(self.operand(node, k).fixed for k in range(1, 5))
        s = _T(per, f"{node.input[1]}_folded", s.reshape(per), fixed)
        t = _T(per, f"{node.input[2]}_folded", t.reshape(per), fixed)
        # one binding, x · s + t (as two, a Mul's and an Add's, ResNet-50's 53 were 53 arrays
        # of activations and 53 of their gradients more)
        self.broadcast(node, [x, s, t], lambda p, q, r, numpy=False:
                       p * q + r if numpy else f"({p}) * ({q}) + {r}")

    def op_LayerNormalization(self, node, a):
        """Over the axes from ``axis`` to the last (opset 17), as ONNX's function body computes
        it: ``mean = Σ x / n``, ``c = x − mean``, ``var = Σ c² / n``, ``Y = c · recip(sqrt(var +
        ε)) · Scale + B``, Scale and B broadcast against X. The mean, ``c`` and the inverse
        standard deviation are bindings (``Y_mean``, ``Y_centred``, ``Y_var``, ``Y_invstd``:
        computed once, per position of the axes before ``axis``), ε a ``const`` (the language
        writes no decimals: ``Y_eps``, its value with the weights). Only the output Y: the
        Mean and InvStdDev outputs are refused."""
        extra = [(what, o) for what, o in zip(("Mean", "InvStdDev"), node.output[1:]) if o]
        if extra:
            self.fail(node, " and ".join(f"the {what} output {o!r}" for what, o in extra)
                      + (" are" if len(extra) > 1 else " is") + " not supported (only Y)")
        self.only(node, a, {"axis": lambda v: True, "epsilon": lambda v: True,
                            "stash_type": lambda v: v in _FLOAT_TYPES})
        if len(node.input) < 2 or not node.input[1]:
            self.fail(node, "no Scale input (X and Scale are required)")
        x = self.operand(node, 0)
        if x.const:
            self.fail(node, "of a constant")
        ts = [self.operand(node, k) for k in (1, 2) if len(node.input) > k and node.input[k]]
        shape = x.shape
        rank = len(shape) + self.batch       # ONNX's, with the batch axis
        axis = a.get("axis", -1)
        ax = axis + rank if axis < 0 else axis
        if not 0 <= ax < rank:
            self.fail(node, f"axis={axis} of an input of rank {rank}")
        if self.batch:
            if ax == 0:
                self.fail(node, f"axis={axis} normalises over the batch axis")
            ax -= 1
            ts = [self._unbatch(node, t, len(shape)) if t.const else t for t in ts]
        try:
            out = tuple(np.broadcast_shapes(shape, *[t.shape for t in ts]))
        except ValueError:
            out = None
        if out != shape:
            two = len(ts) > 1
            self.fail(node, f"Scale{' and B' if two else ''} of shape{'s' if two else ''} "
                      + ", ".join(str(t.shape) for t in ts)
                      + f" do{'' if two else 'es'} not broadcast to X's "
                      + f"{'per-sample ' if self.batch else ''}shape {shape}")
        outer, inner = shape[:ax], shape[ax:]
        n = math.prod(inner)
        idx = [f"i{k}" for k in range(len(shape))]
        red = [f"r{k}" for k in range(ax, len(shape))]

        def at(name, shp, ix):     # a trailing dimension 1 is absorbed (_lang)
            return name + "".join(f"[{i}]" for i in ix[:len(_lang(shp))])

        def mean_over(f):          # for the outer positions: Σ f(position) / n over the inner
            body = f(idx[:ax] + red)
            for r, d in reversed(list(zip(red, inner))):
                body = f"sum {r} : {d} . {body}"
            return _fors(idx[:ax], outer, f"({body}) / {n}" if n > 1 else body)

        base = node.output[0]
        mean, c, var, inv = (self._fresh(f"{base}_{w}", "binding")
                             for w in ("mean", "centred", "var", "invstd"))
        self._outdims = shape
        scale, *bias = (self.elem(t, idx, len(shape), node) for t in ts)
        eps = self.ref(_T((), f"{base}_eps", np.array(float(a.get("epsilon", 1e-5))), True),
                       node)
        self.lines.append((mean, mean_over(lambda ix: at(x.text, shape, ix)), mean))
        self.lines.append((c, _fors(idx, shape, f"{at(x.text, shape, idx)} - "
                                                f"{at(mean, outer, idx)}"), c))
        self.lines.append((var, mean_over(lambda ix: f"{at(c, shape, ix)} * {at(c, shape, ix)}"),
                           var))
        self.lines.append((inv, _fors(idx[:ax], outer,
                                      f"recip(sqrt({at(var, outer, idx)} + {eps}))"), inv))
        body = " + ".join([f"{at(c, shape, idx)} * {at(inv, outer, idx)} * {scale}", *bias])
        self.bind(node, 0, shape, _fors(idx, shape, body))

    # -- convolution and pooling ----------------------------------------------------------------

    def _spatial(self, node, x: _T, what: str) -> bool:
        """Whether x has a leading sample axis (rank 4 when batch=False); checks the rank."""
        r = len(x.shape)
        if self.batch and r == 3:
            return False
        if not self.batch and r == 4:
            return True
        self.fail(node, f"{what} of a tensor of shape "
                  f"{((1,) if self.batch else ()) + x.shape}: only 2-D (N×C×H×W) is supported")

    def _pads(self, node, a, kernel) -> int:
        auto = a.get("auto_pad", b"NOTSET")
        auto = auto.decode() if isinstance(auto, bytes) else auto
        pads = list(a.get("pads", [0] * 4))
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            if any(k % 2 == 0 for k in kernel):
                self.fail(node, f"auto_pad={auto} with an even kernel pads asymmetrically")
            pads = [(k - 1) // 2 for k in kernel] * 2
        elif auto not in ("NOTSET", "VALID"):
            self.fail(node, f"auto_pad={auto!r} is not supported")
        if len(set(pads)) != 1:
            self.fail(node, f"pads={pads}: only the same padding on every side is supported "
                            f"(conv2d pads symmetrically, and the model language writes no "
                            f"constant offset to place an array at or crop it from)")
        return pads[0]

    def op_Conv(self, node, a):
        x, w = self.operand(node, 0), self.operand(node, 1)
        b = self.operand(node, 2) if len(node.input) > 2 and node.input[2] else None
        ones = lambda v: all(s == 1 for s in v)  # noqa: E731
        same = lambda v: len(set(v)) == 1  # noqa: E731
        self.only(node, a, {"strides": same, "dilations": ones, "group": lambda g: g == 1,
                            "kernel_shape": lambda k: len(k) == 2, "pads": lambda p: True,
                            "auto_pad": lambda p: True})
        if len(w.shape) != 4:
            self.fail(node, f"a kernel of shape {w.shape}: only 2-D convolutions (kernel "
                      f"U×C×kh×kw) are supported")
        stride = a.get("strides", [1, 1])[0]
        auto = a.get("auto_pad", b"NOTSET")
        if stride != 1 and (auto.decode() if isinstance(auto, bytes) else auto) in (
                "SAME_UPPER", "SAME_LOWER"):
            self.fail(node, f"auto_pad={auto!r} with strides={a['strides']} is not supported")
        pad = self._pads(node, a, w.shape[2:])
        per = self._spatial(node, x, "a convolution")
        C, H, W = x.shape[-3:]
        if w.shape[1] != C:
            self.fail(node, f"the kernel has {w.shape[1]} channels, the input {C}")
        U, kh, kw = w.shape[0], w.shape[2], w.shape[3]
        out = (U, (H + 2 * pad - kh) // stride + 1, (W + 2 * pad - kw) // stride + 1)
        # The model language absorbs a trailing dimension 1 (`for` of a scalar), so a plane
        # H×1 is the vector H: the planes are convolved transposed, 1×H (`for j : 1` of the
        # vector; 1×1 of a scalar), with the kernel transposed (the same padding on every
        # side, the same stride on both axes: the transposed output), and the output read
        # back transposed. A declared shape is kept as written, so the kernel is declared as
        # it is, U×C×1×1 included.
        flip = W == 1
        args = [self._kernel(node, w, flip and (kh, kw) != (1, 1))]   # 1×1: its own transpose
        if b is not None:
            args.append(self.ref(b, node))
        if pad or stride != 1:
            args.append(str(pad))
        if stride != 1:
            args.append(str(stride))
        n = x.shape[0] if per else None
        each = f"for n : {n} . " if per else ""   # n, i, j, k: reserved, never a name
        at = "[n]" if per else ""
        src = self.ref(x, node)
        if flip:
            src = self._fresh(f"{node.output[0]}_planes_t", "binding")
            self.lines.append((src, f"{each}for i : {C} . for j : {'1x1' if H == 1 else '1'} . "
                                    f"{self.ref(x, node)}{at}[i]", src))
        conv = f"{each}conv2d({src}{at}, {', '.join(args)})"
        shape = ((n,) if per else ()) + out
        if not flip and out[2] != 1:
            self.bind(node, 0, shape, conv)
            return
        # conv2d's output U×H′×1 (or, transposed, U×W′×H′) keeps its trailing 1: read into
        # the language's shape of U×H′×W′, element by element
        raw = self._fresh(f"{node.output[0]}_conv", "binding")
        self.lines.append((raw, conv, raw))
        self.bind(node, 0, shape, f"{each}for i : {out[0]} . for j : {out[1]} . "
                                  f"for k : {out[2]} . {raw}{at}[i][{'k][j' if flip else 'j][k'}]")

    def _kernel(self, node, w: _T, flip: bool) -> str:
        """The kernel of a ``Conv`` as ``conv2d`` takes it, U×C×kh×kw as written (its trailing
        1s kept: ``_lang`` would absorb them), transposed (U×C×kw×kh) for transposed planes."""
        if not flip and _lang(w.shape) == tuple(w.shape):
            return self.ref(w, node)
        dims = "×".join(map(str, w.shape))
        if not w.const:
            self.fail(node, f"a computed kernel of shape {dims}"
                      + (" of an input whose last dimension is 1" if flip else "")
                      + ": the model language absorbs a trailing dimension 1 of an array it "
                        "computes (a kernel of the graph, declared, keeps it)")
        key = ("kernel", id(w.value), flip)
        if key not in self.derived:
            root = _root(w.value)
            if root in self.declared:
                self.fail(node, f"the kernel {w.text!r} of shape {dims} is read by another "
                                f"operation too, as {_shape_text(w.shape)} (two parameters of "
                                f"one array)")
            if root in self.kernels:
                self.fail(node, f"the kernel {w.text!r} of shape {dims} is the kernel of "
                                f"another Conv too, declared {self.kernels[root]} there "
                                f"(an input ending in 1 takes its kernel transposed)")
            value = w.value.transpose(0, 1, 3, 2) if flip else w.value
            p = self._fresh((w.text or "w") + ("_t" if flip else ""), "param")
            self.derived[key] = p
            self.kernels[root] = f"{p} : {'x'.join(map(str, value.shape))}"
            self.alive.append(w.value)
            self.params[p] = np.ascontiguousarray(value, dtype=np.float32)
            shape = "x".join(map(str, value.shape))
            if not w.fixed:
                self.decls.append(f"param  {p} : {shape}" + ("   -- transposed (an input "
                                  "H×1 is convolved as 1×H)" if flip else ""))
            else:
                self.decls.append(f"const  {p} : {shape}   -- a constant of the graph (its "
                                  f"value with the weights)" + (", transposed" if flip else ""))
                self.consts.append(p)
        return self.derived[key]

    def _pool_pad(self, node, a, k: int, s: int, H: int, W: int) -> int:
        """The padding of a pooling: ``pads`` or ``auto_pad`` SAME (ONNX's: the total padding
        of a dimension ``n`` is ``(⌈n/s⌉ − 1)·s + k − n``, its half, rounded down, before for
        SAME_UPPER); only the same on every side, smaller than the window."""
        auto = a.get("auto_pad", b"NOTSET")
        auto = auto.decode() if isinstance(auto, bytes) else auto
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            lo, hi = [], []
            for n in (H, W):
                total = max((-(-n // s) - 1) * s + k - n, 0)
                lo.append(total // 2 if auto == "SAME_UPPER" else total - total // 2)
                hi.append(total - lo[-1])
            pads, what = lo + hi, f"auto_pad={auto} pads {lo + hi} (begins, ends)"
        elif auto in ("NOTSET", "VALID"):
            pads = list(a.get("pads", [0] * 4)) if auto == "NOTSET" else [0] * 4
            what = f"pads={pads}"
        else:
            self.fail(node, f"auto_pad={auto!r} is not supported")
        if len(pads) != 4:
            self.fail(node, f"{what}: 2-D pooling takes four pads")
        if len(set(pads)) != 1:
            self.fail(node, f"{what}: only the same padding on every side is supported (the "
                            f"model language pads symmetrically, as conv2d does: it writes no "
                            f"constant offset to place an array at)")
        if pads[0] >= k:
            self.fail(node, f"{what}: a padding as large as the window {k}×{k} (a window of "
                            f"padding alone)")
        return pads[0]

    def _ones(self, shape: tuple[int, ...]) -> str:
        """A const of ones of ``shape`` (as written: ``1x1x1`` is not absorbed), declared once:
        ``pad_one`` (1×1×1, the kernel of the 1×1 convolution that pads) and ``pad_ones_HxW``
        (the unpadded plane, whose padding marks where the padding is)."""
        key = ("ones", shape)
        if key not in self.derived:
            p = self._fresh("pad_one" if shape == (1, 1, 1)
                            else "pad_ones_" + "x".join(map(str, shape)), "param")
            self.derived[key] = p
            self.params[p] = np.ones(shape, np.float32)
            self.decls.append(f"const  {p} : {'x'.join(map(str, shape))}   -- ones (for a "
                              f"padding)")
            self.consts.append(p)
        return self.derived[key]

    def _padded_ones(self, node, H: int, W: int, P: int) -> str:
        """Ones of shape H×W padded by P zeros on each side: 1 inside, 0 in the padding (a
        binding of consts alone: no gradient)."""
        key = ("padded ones", H, W, P)
        if key not in self.derived:
            name = self._fresh(f"{node.output[0]}_pad_ones", "binding")
            self.lines.append((name, f"sum u : 1 . conv2d({self._ones((H, W))}, "
                                     f"{self._ones((1, 1, 1))}, {P})[u]", name))
            self.derived[key] = name
        return self.derived[key]

    def _padded(self, node, x: _T, P: int, fill: str | None) -> str:
        """``x`` with ``P`` zeros on each side of its last two dimensions, as a binding: each
        H×W plane padded by ``conv2d`` with the 1×1 kernel ``1`` (``sum u : 1 . conv2d(a, one,
        P)[u]``: a single product by 1, exact), so the zeros are placed where ``conv2d`` places
        its own. ``fill="-inf"``: ``+ log(ones padded)``, ``0`` inside and ``−inf`` in the
        padding (MaxPool's: ONNX's max ignores the padding; a weight or const is finite, so the
        infinity is computed)."""
        H, W = x.shape[-2:]
        base = node.output[0]
        outer = x.shape[:-2]
        idx = [f"i{j}" for j in range(len(outer))]
        plane = x.text + "".join(f"[{i}]" for i in idx)
        body = f"(sum u : 1 . conv2d({plane}, {self._ones((1, 1, 1))}, {P})[u])"
        if fill == "-inf":
            key = ("-inf", H, W, P)
            if key not in self.derived:
                ninf = self._fresh(f"{base}_pad_ninf", "binding")
                self.lines.append((ninf, f"log({self._padded_ones(node, H, W, P)})", ninf))
                self.derived[key] = ninf
            body += f" + {self.derived[key]}"
        name = self._fresh(f"{base}_padded", "binding")
        self.lines.append((name, _fors(idx, outer, body), name))
        return name

    def _pool(self, node, a, layer):
        if len(node.output) > 1 and node.output[1]:
            self.fail(node, "the Indices output is not supported")
        x = self.operand(node, 0)
        k = a.get("kernel_shape")
        if not k or len(k) != 2 or k[0] != k[1]:
            self.fail(node, f"kernel_shape={k}: only a square 2-D window is supported")
        s = a.get("strides", [1, 1])
        if len(s) != 2 or s[0] != s[1]:
            self.fail(node, f"strides={s}: only the same stride on both axes is supported")
        self.only(node, a, {"kernel_shape": lambda v: True, "strides": lambda v: True,
                            "pads": lambda p: True, "ceil_mode": lambda c: c == 0,
                            "dilations": lambda d: all(v == 1 for v in d),
                            "auto_pad": lambda p: True,
                            "storage_order": lambda v: True,
                            "count_include_pad": lambda v: True})
        self._spatial(node, x, "pooling")
        kk, ss = k[0], s[0]
        H, W = x.shape[-2:]
        P = self._pool_pad(node, a, kk, ss, H, W)
        if kk > H + 2 * P or kk > W + 2 * P:
            self.fail(node, f"the window {kk}×{kk} does not fit in {H}×{W}"
                      + (f" padded by {P}" if P else ""))
        out = x.shape[:-2] + ((H + 2 * P - kk) // ss + 1, (W + 2 * P - kk) // ss + 1)
        arg = f"{kk}" if kk == ss else f"{kk}, {ss}"
        if W == 1 and (kk, ss) != (1, 1):
            # the plane H×1 is the vector H: the layer would pool the two dimensions before
            self.fail(node, f"pooling an input of spatial shape {H}×{W} (a trailing dimension "
                            f"1 is absorbed in the model language)")
        if not P:
            self._bind_layer(node, out, f"{layer}({x.text}, {arg})")
            return
        if H == 1 or W == 1:
            self.fail(node, f"padding an input of spatial shape {H}×{W} (a trailing dimension "
                            f"1 is absorbed in the model language)")
        padded = self._padded(node, x, P, "-inf" if layer == "maxpool" else None)
        if layer == "maxpool" or a.get("count_include_pad", 0):
            self._bind_layer(node, out, f"{layer}({padded}, {arg})")
            return
        # count_include_pad=0: the mean of the window's elements that are not padding, Σ/n:
        # the mean of all k² times recip of the mean of the padded ones (n/k²)
        base = node.output[0]
        cnt = self._fresh(f"{base}_pad_count", "binding")
        self.lines.append((cnt, f"{layer}({self._padded_ones(node, H, W, P)}, {arg})", cnt))
        pooled = self._fresh(f"{base}_pooled", "binding")
        self.lines.append((pooled, f"{layer}({padded}, {arg})", pooled))
        idx = [f"i{j}" for j in range(len(out))]
        at = "".join(f"[{i}]" for i in idx)
        body = f"{pooled}{at} * recip({cnt}[{idx[-2]}][{idx[-1]}])"
        self.bind(node, 0, out, _fors(idx, out, body))

    def _bind_layer(self, node, shape, expr: str) -> None:
        """Bind a pooling: its output …×M′×1 keeps the trailing 1 (the layer's shape, not
        absorbed), so it is read into the language's shape, element by element."""
        if shape[-1] != 1:
            self.bind(node, 0, shape, expr)
            return
        raw = self._fresh(f"{node.output[0]}_pooled", "binding")
        self.lines.append((raw, expr, raw))
        idx = [f"i{j}" for j in range(len(shape))]
        self.bind(node, 0, shape, _fors(idx, shape, raw + "".join(f"[{i}]" for i in idx)))

    def op_MaxPool(self, node, a):
        self._pool(node, a, "maxpool")

    def op_AveragePool(self, node, a):
        self._pool(node, a, "avgpool")

    # -- products -------------------------------------------------------------------------------

    def _matmul(self, node, x: _T, w: _T, k_out: int = 0) -> None:
        """x @ w for rank 1 or 2 operands (NumPy's matmul)."""
        xs, ws = x.shape, w.shape
        if not (1 <= len(xs) <= 2 and 1 <= len(ws) <= 2):
            self.fail(node, f"operands of shapes {xs} and {ws}: only rank 1 or 2 is supported")
        K = xs[-1]
        if ws[0] != K:
            self.fail(node, f"operands of shapes {xs} and {ws} do not multiply")
        if x.const and w.const:
            self.out_const(node, x.value @ w.value)
            return
        if w.const and not x.const:
            wt = _T((ws[1], K) if len(ws) == 2 else (K,), (node.input[1] or "w") + "_t",
                    w.value.T.copy() if len(ws) == 2 else w.value, w.fixed)
            if len(ws) == 1:   # a dot product
                body = lambda v: f"sum k : {K} . {v}[k] * {self.ref(wt, node)}[k]"  # noqa: E731
                shape = ()
            else:
                body = lambda v: f"dense({self.ref(wt, node)}, {v})"  # noqa: E731
                shape = (ws[1],)
            if len(xs) == 1:
                self.bind(node, k_out, shape or (), body(x.text))
            else:
                M = xs[0]
                self.bind(node, k_out, (M,) + shape, f"for m : {M} . {body(x.text + '[m]')}")
            return
        X, Wr = self.ref(x, node), self.ref(w, node)
        xi = (lambda m: f"{X}[{m}][k]") if len(xs) == 2 else (lambda m: f"{X}[k]")
        wi = (lambda n: f"{Wr}[k][{n}]") if len(ws) == 2 else (lambda n: f"{Wr}[k]")
        idx, shape = [], []
        if len(xs) == 2:
            idx.append("m"); shape.append(xs[0])  # noqa: E702
        if len(ws) == 2:
            idx.append("o"); shape.append(ws[1])  # noqa: E702
        body = f"sum k : {K} . {xi('m')} * {wi('o')}"
        self.bind(node, k_out, tuple(shape), _fors(idx, shape, body))

    def op_MatMul(self, node, a):
        self.only(node, a, {})
        self._matmul(node, self.operand(node, 0), self.operand(node, 1))

    def op_Gemm(self, node, a):
        self.only(node, a, {"alpha": lambda v: True, "beta": lambda v: True,
                            "transA": lambda v: True, "transB": lambda v: True,
                            "broadcast": lambda v: True})  # opset < 7: C broadcasts
        x, w = self.operand(node, 0), self.operand(node, 1)
        alpha, beta = a.get("alpha", 1.0), a.get("beta", 1.0)
        if len(x.shape) != 2 and not (self.batch and len(x.shape) == 1):
            self.fail(node, f"A of shape {x.shape}: Gemm takes matrices")
        if a.get("transA", 0):
            if self.batch:
                self.fail(node, "transA=1 would transpose the batch axis")
            x = self._transpose(node, x, (1, 0))
        if a.get("transB", 0):
            w = self._transpose(node, w, (1, 0))
        if alpha != 1.0:
            if w.const:
                w = _T(w.shape, w.text, w.value * alpha, w.fixed)
            else:
                x = self._scaled(node, x, alpha)
        c = self.operand(node, 2) if len(node.input) > 2 and node.input[2] else None
        if c is None:
            self._matmul(node, x, w)
            return
        # the product, then + beta·C (a fresh output name for the product)
        tmp = f"{node.output[0]}_mm"
        node2 = type(node)()
        node2.CopyFrom(node)
        del node2.output[:]
        node2.output.append(tmp)
        self._matmul(node2, x, w)
        if beta != 1.0:
            c = (_T(c.shape, c.text, c.value * beta, c.fixed) if c.const
                 else self._scaled(node, c, beta))
        self.broadcast(node, [self.env[tmp], c],
                       lambda p, q, numpy=False: p + q if numpy else f"{p} + {q}")

    def _scaled(self, node, t: _T, factor: float) -> _T:
        cst = _T((), f"{node.output[0]}_scale", np.array(factor), True)
        name = f"{node.output[0]}_scaled"
        node2 = type(node)()
        node2.CopyFrom(node)
        del node2.output[:]
        node2.output.append(name)
        self.broadcast(node2, [t, cst],
                       lambda p, q, numpy=False: p * q if numpy else f"({p}) * {q}")
        return self.env[name]

    # -- shapes ---------------------------------------------------------------------------------

    def _transpose(self, node, t: _T, perm) -> _T:
        perm = list(perm)
        if t.const:
            return _T(tuple(t.value.transpose(perm).shape), (t.text or "w") + "_t",
                      np.ascontiguousarray(t.value.transpose(perm)), t.fixed)
        shape = tuple(t.shape[p] for p in perm)
        idx = [f"i{k}" for k in range(len(perm))]
        src = [None] * len(perm)
        for k, p in enumerate(perm):
            src[p] = idx[k]
        name = self._fresh(f"{t.text}_t", "binding")
        src = src[:len(_lang(t.shape))]
        self.lines.append((name, _fors(idx, shape, t.text + "".join(f"[{i}]" for i in src)),
                           name))
        return _T(shape, name)

    def op_Transpose(self, node, a):
        x = self.operand(node, 0)
        perm = a.get("perm", list(reversed(range(len(x.shape) + self.batch))))
        if self.batch:
            if perm[0] != 0:
                self.fail(node, f"perm={perm} moves the batch axis")
            perm = [p - 1 for p in perm[1:]]
        self.only(node, a, {"perm": lambda v: True})
        if x.const:
            self.out_const(node, x.value.transpose(perm))
            return
        if perm == sorted(perm):
            self.env[node.output[0]] = x
            return
        t = self._transpose(node, x, perm)
        self.env[node.output[0]] = t

    # -- shape arithmetic: constants only ------------------------------------------------------
    # PyTorch's x.view(x.size(0), -1) exports as Shape → Gather → Unsqueeze → Concat → Reshape:
    # every shape is fixed here, so all of it folds to a constant target shape. The batch
    # axis reads 1 (each sample is a batch of one): the elements that hold it are tracked
    # (_T.batch) through these operators, and may only end as the batch axis of a Reshape.

    _SHAPE_OPS = {"Shape", "Gather", "Concat", "Slice", "Cast", "Squeeze", "Unsqueeze",
                  "Identity", "Reshape", "ConstantOfShape"}

    def _batch_size_check(self, node) -> None:
        """The batch size may move through the shape operators as data (their first input;
        any input of Concat; the shape of a Reshape), never be an index, a bound or a value."""
        for k, name in enumerate(node.input):
            t = self.env.get(name) if name else None
            if t is None or t.batch is None or not t.batch.any():
                continue
            carried = (node.op_type == "Concat" or (node.op_type == "Reshape" and k == 1)
                       or (node.op_type in self._SHAPE_OPS - {"Reshape"} and k == 0))
            if not carried:
                self.fail(node, "uses the batch size as a value (it is not known when the "
                                "model is written; only a Reshape may keep it as its first "
                                "dimension)")

    def _out_shape_const(self, node, v: np.ndarray, batch: np.ndarray | None) -> None:
        self.out_const(node, v)
        if batch is not None and batch.any():
            self.env[node.output[0]].batch = batch

    def _fold(self, node, x: _T, f) -> None:
        """The constant ``f(x)``, its batch-size elements where ``f`` moves ``x``'s."""
        self._out_shape_const(node, f(x.value), None if x.batch is None else f(x.batch))

    def _constants(self, node, what: str) -> list[_T]:
        ts = [self.operand(node, k) for k in range(len(node.input)) if node.input[k]]
        if not all(t.const for t in ts):
            self.fail(node, f"only of constants ({what}); of a computed tensor it is not "
                            f"supported")
        return ts

    def op_Shape(self, node, a):
        self.only(node, a, {"start": lambda v: True, "end": lambda v: True})
        x = self.operand(node, 0)
        full = ((1,) if self.batch and not x.const else ()) + tuple(x.shape)
        r = len(full)
        lo, hi = (min(max(v + r if v < 0 else v, 0), r) for v in (a.get("start", 0),
                                                                   a.get("end", r)))
        self.out_const(node, np.array(full[lo:hi], dtype=np.int64), fixed=True)
        if self.batch and not x.const and lo == 0 and hi > 0:
            self.env[node.output[0]].batch = np.arange(hi - lo) == 0

    def op_Gather(self, node, a):
        self.only(node, a, {"axis": lambda v: True})
        x, i = self._constants(node, "shape arithmetic such as x.size(0)")
        ax = a.get("axis", 0)
        if not -x.value.ndim <= ax < x.value.ndim:
            self.fail(node, f"axis {ax} of a tensor of rank {x.value.ndim}")
        n = x.value.shape[ax]
        idx = i.value.astype(np.int64)
        if ((idx < -n) | (idx >= n)).any():
            self.fail(node, f"index {idx.tolist()} out of range for axis {ax} of size {n}")
        self._fold(node, x, lambda v: np.take(v, idx, axis=ax))

    def op_Concat(self, node, a):
        self.only(node, a, {"axis": lambda v: True})
        ts = self._constants(node, "shape arithmetic")
        if "axis" not in a:
            self.fail(node, "no axis attribute (Concat requires one)")
        masks = [np.zeros(t.value.shape, bool) if t.batch is None else t.batch for t in ts]
        self._out_shape_const(node, np.concatenate([t.value for t in ts], axis=a["axis"]),
                              np.concatenate(masks, axis=a["axis"]))

    def op_Slice(self, node, a):
        self.only(node, a, {})
        ts = self._constants(node, "shape arithmetic such as x.shape[1:]")
        x, starts, ends = ts[0].value, ts[1].value, ts[2].value
        axes = (self.const_of(node, 3, "the axes") if len(node.input) > 3 and node.input[3]
                else np.arange(len(starts)))
        steps = (self.const_of(node, 4, "the steps") if len(node.input) > 4 and node.input[4]
                 else np.ones(len(starts), np.int64))
        cut = [slice(None)] * x.ndim
        for s0, e0, ax, st in zip(starts, ends, axes, steps):
            if int(st) == 0:
                self.fail(node, "a step of 0")
            big = np.iinfo(np.int64).max // 2
            cut[int(ax)] = slice(int(np.clip(s0, -big, big)), int(np.clip(e0, -big, big)),
                                 int(st))
        self._fold(node, ts[0], lambda v: v[tuple(cut)])

    # ONNX's types a constant may be cast to, as numpy's (float16 rounds, then is kept in float64)
    _CASTS = {"FLOAT": np.float32, "DOUBLE": np.float64, "FLOAT16": np.float16,
              "INT8": np.int8, "UINT8": np.uint8, "INT16": np.int16, "UINT16": np.uint16,
              "INT32": np.int32, "UINT32": np.uint32, "INT64": np.int64, "UINT64": np.uint64,
              "BOOL": np.bool_}

    def op_Cast(self, node, a):
        self.only(node, a, {"to": lambda v: True, "saturate": lambda v: True})
        x = self.operand(node, 0)
        to = self.onnx.TensorProto.DataType.Name(a["to"])
        if not x.const:
            if a["to"] not in _FLOAT_TYPES:
                self.fail(node, f"to {to}: a computed tensor stays a float tensor")
            self.env[node.output[0]] = x
            return
        if to not in self._CASTS:
            self.fail(node, f"to {to}: a constant may be cast to "
                            + ", ".join(sorted(self._CASTS)))
        v, dtype = x.value, self._CASTS[to]
        if np.issubdtype(dtype, np.integer) and v.dtype.kind == "f":
            v = np.trunc(v).astype(np.int64)      # toward zero, then wrapped as C casts do
        v = v.astype(dtype)
        self._out_shape_const(node, v.astype(np.float64) if v.dtype.kind == "f" else v, x.batch)

    def _reshape_to(self, node, x: _T, shape) -> None:
        shape = tuple(int(d) for d in shape)
        if math.prod(shape) != math.prod(x.shape):
            self.fail(node, f"cannot reshape {x.shape} to {shape}")
        if x.const:
            self.out_const(node, x.value.reshape(shape))
            return
        if shape == x.shape:
            self.env[node.output[0]] = x
            return
        # flatten (div/mod split the flat index into the input's position), then cut the flat
        # vector into the output's blocks
        src = x.text
        xl = _lang(x.shape)
        if len(xl) > 1:
            n = math.prod(xl)
            sel, rest, rem = "", "k", n
            for d in xl[:-1]:
                rem //= d
                sel += f"[div({rest}, {rem})]"
                rest = f"mod({rest}, {rem})"
            sel += f"[{rest}]"
            flat_expr = f"for k : {n} . {src}{sel}"
            if len(shape) == 1:
                self.bind(node, 0, shape, flat_expr)
                return
            flat = self._fresh(f"{node.output[0]}_flat", "binding")
            self.lines.append((flat, flat_expr, flat))
            src = flat
        idx = [f"i{k}" for k in range(len(shape) - 1)]
        e = src
        for i in idx:
            e = f"block({e}, {i})"
        self.bind(node, 0, shape, _fors(idx, shape[:-1], e) if idx else e)

    def _target(self, node, x: _T, spec) -> tuple:
        """ONNX Reshape's target shape (0: copy, -1: infer), batch axis handled."""
        full = (((1,) if self.batch and not x.const else ()) + x.shape)
        spec = [int(d) for d in spec]
        out = []
        for i, d in enumerate(spec):
            out.append(full[i] if d == 0 else d)
        if out.count(-1) > 1:
            self.fail(node, f"shape {spec} has more than one -1")
        if -1 in out:
            known = math.prod(d for d in out if d != -1)
            out[out.index(-1)] = math.prod(full) // known if known else 0
        if self.batch and not x.const:
            if out and out[0] == self.fixed_batch:
                self.fail(node, f"shape {spec} holds the batch size {out[0]} the model was "
                                f"exported with: export again with a dynamic_axes entry or a "
                                f"batch of 1")
            if not out or out[0] != 1:
                self.fail(node, f"shape {spec} does not keep the batch axis first")
            out = out[1:]
        return tuple(out)

    def op_Reshape(self, node, a):
        self.only(node, a, {"allowzero": lambda v: v == 0})
        x = self.operand(node, 0)
        spec = self.const_of(node, 1, "the shape")
        if spec is None:
            spec = a.get("shape")
        else:
            mask = self.operand(node, 1).batch
            if mask is not None and (mask.ravel()[1:].any() or x.const):
                self.fail(node, "the batch size is not the first dimension of the shape")
        self._reshape_to(node, x, self._target(node, x, spec))

    def op_Flatten(self, node, a):
        self.only(node, a, {"axis": lambda v: True})
        x = self.operand(node, 0)
        full = ((1,) if self.batch and not x.const else ()) + x.shape
        ax = a.get("axis", 1)
        ax = ax + len(full) if ax < 0 else ax
        shape = (math.prod(full[:ax]), math.prod(full[ax:]))
        if self.batch and not x.const:
            if ax != 1:
                self.fail(node, f"axis={a.get('axis')} flattens the batch axis")
            shape = shape[1:]
        self._reshape_to(node, x, shape)

    def _raw_axes(self, node, a, k=1):
        axes = a.get("axes")
        if axes is None and len(node.input) > k and node.input[k]:
            axes = [int(v) for v in self.const_of(node, k, "axes").reshape(-1)]
        return axes

    def _norm_axes(self, node, axes, full_rank):
        axes = [ax + full_rank if ax < 0 else ax for ax in axes]
        if self.batch:
            if 0 in axes:
                self.fail(node, "the axes include the batch axis")
            axes = [ax - 1 for ax in axes]
        return axes

    def op_Squeeze(self, node, a):
        self.only(node, a, {"axes": lambda v: True})
        x = self.operand(node, 0)
        axes = self._raw_axes(node, a)
        if x.const:     # a constant has no batch axis
            ax = None if axes is None else tuple(axes)
            if ax is not None and any(x.value.shape[k] != 1 for k in ax):
                self.fail(node, f"axes {list(ax)} of a constant of shape {x.value.shape}: "
                                f"only axes of size 1 can be squeezed")
            self._fold(node, x, lambda v: np.squeeze(v, axis=ax))
            return
        if axes is None:
            axes = [i for i, d in enumerate(x.shape) if d == 1]
        else:
            axes = self._norm_axes(node, axes, len(x.shape) + self.batch)
        self._reshape_to(node, x, tuple(d for i, d in enumerate(x.shape) if i not in axes))

    def op_Unsqueeze(self, node, a):
        self.only(node, a, {"axes": lambda v: True})
        x = self.operand(node, 0)
        axes = self._raw_axes(node, a) or []
        if x.const:
            self._fold(node, x, lambda v: np.expand_dims(v, tuple(axes)))
            return
        axes = self._norm_axes(node, axes, len(x.shape) + self.batch + len(axes))
        shape = list(x.shape)
        for ax in sorted(axes):
            shape.insert(ax, 1)
        self._reshape_to(node, x, tuple(shape))

    def _last_axis(self, node, a, x: _T) -> None:
        rank = len(x.shape) + (1 if self.batch else 0)
        ax = a.get("axis", -1 if self.opset >= 13 else 1)
        ax = ax + rank if ax < 0 else ax
        if ax != rank - 1:
            self.fail(node, f"axis={a.get('axis', ax)}: only the last axis is supported")

    def _softmax(self, node, a, log: bool):
        self.only(node, a, {"axis": lambda v: True})
        x = self.operand(node, 0)
        if x.const:
            self.fail(node, "of a constant")
        self._last_axis(node, a, x)
        n = x.shape[-1]
        outer = x.shape[:-1]
        oi = [f"i{k}" for k in range(len(outer))]
        at = "".join(f"[{i}]" for i in oi)
        base = node.output[0]
        m = self._fresh(base + "_max", "binding")
        e = self._fresh(base + "_exp", "binding")
        s = self._fresh(base + "_sum", "binding")
        self.lines.append((m, _fors(oi, outer, f"maxall({x.text}{at})"), m))
        self.lines.append((e, _fors(oi + ["j"], outer + (n,),
                                    f"exp({x.text}{at}[j] - {m}{at})"), e))
        self.lines.append((s, _fors(oi, outer, f"sum j : {n} . {e}{at}[j]"), s))
        if log:
            body = f"{x.text}{at}[j] - {m}{at} - log({s}{at})"
        else:
            body = f"{e}{at}[j] * recip({s}{at})"
        t = self.bind(node, 0, x.shape, _fors(oi + ["j"], outer + (n,), body))
        if not log and not outer:
            self.softmax_of[t.text] = (x.text, m, s)

    def op_Softmax(self, node, a):
        self._softmax(node, a, log=False)

    def op_LogSoftmax(self, node, a):
        self._softmax(node, a, log=True)

    def _reduce(self, node, a, mean: bool):
        self.only(node, a, {"axes": lambda v: True, "keepdims": lambda v: True,
                            "noop_with_empty_axes": lambda v: v == 0})
        x = self.operand(node, 0)
        if x.const:
            self.fail(node, "of a constant")
        axes = self._raw_axes(node, a)
        if not axes:
            axes = list(range(len(x.shape)))
        else:
            axes = self._norm_axes(node, axes, len(x.shape) + self.batch)
        keep = a.get("keepdims", 1)
        out_idx, out_shape, sel, sums = [], [], [], []
        for i, d in enumerate(x.shape):
            if i in axes:
                r = f"r{i}"
                sums.append((r, d))
                sel.append(r)
                if keep:
                    out_idx.append(f"z{i}")
                    out_shape.append(1)
            else:
                out_idx.append(f"i{i}")
                out_shape.append(d)
                sel.append(f"i{i}")
        body = x.text + "".join(f"[{s}]" for s in sel[:len(_lang(x.shape))])
        for r, d in reversed(sums):
            body = f"sum {r} : {d} . {body}"
        count = math.prod(d for _, d in sums)
        if mean and count > 1:
            body = f"({body}) / {count}"
        self.bind(node, 0, tuple(out_shape), _fors(out_idx, out_shape, body) if out_idx
                  else body)

    def op_ReduceSum(self, node, a):
        self._reduce(node, a, mean=False)

    def op_ReduceMean(self, node, a):
        self._reduce(node, a, mean=True)


def _fors(idx, shape, body: str) -> str:
    e = body
    for i, d in reversed(list(zip(idx, shape))):
        e = f"for {i} : {d} . {e}"
    return e


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
    return _Importer(model, name, batch, loss).run()


def main(argv=None) -> int:
    """``python -m extract import MODEL.onnx``: write DIR/NAME.model and DIR/NAME.npz."""
    import argparse
    import sys
    ap = argparse.ArgumentParser(prog="python -m extract import",
                                 description="Translate an ONNX model into a model file "
                                             "(docs/model-format.md) and its weights (.npz).")
    ap.add_argument("onnx", type=Path, help="the ONNX model")
    ap.add_argument("--out", type=Path, default=Path("."), help="directory (default: .)")
    ap.add_argument("--name", help="the model's name (default: from the file name)")
    ap.add_argument("--loss", choices=("auto", "ce", "sqerr"), default="auto",
                    help="the loss appended for training: softmax cross-entropy on a vector "
                         "output (ce), squared error (sqerr); auto: ce for a vector output")
    ap.add_argument("--batch", choices=("auto", "yes", "no"), default="auto",
                    help="whether the inputs' leading axis is the batch (auto: a single input "
                         "whose leading dimension is 1 or symbolic)")
    ap.add_argument("--check", action="store_true",
                    help="also elaborate the model file with the Agda front end (shapes)")
    args = ap.parse_args(argv)
    from .frontend import ModelError, one_line_warnings
    one_line_warnings()
    if args.out.exists() and not args.out.is_dir():
        print(f"error: --out {args.out} is a file; give the directory to write "
              f"NAME.model and NAME.npz in", file=sys.stderr)
        return 1
    batch = {"auto": "auto", "yes": True, "no": False}[args.batch]
    try:
        imp = import_onnx(args.onnx, name=args.name, batch=batch, loss=args.loss)
        if args.check:
            from . import frontend
            frontend.compile_model(imp.text, name_hint=f"{imp.name}.model")
        model, weights = imp.save(args.out)
    except (OnnxImportError, ModelError, OSError, ValueError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    consts = f", {len(imp.consts)} const{'s' if len(imp.consts) != 1 else ''}" \
        if imp.consts else ""
    print(f"wrote {model} and {weights} ({len(imp.params) - len(imp.consts)} parameters{consts}; "
          f"output {imp.output}, target {imp.target})")
    if imp.consts:
        print(f"the consts alone: {weights.with_name(imp.name + '.consts.npz')} (--weights it "
              f"to train from fresh parameters)")
    if args.check:
        print(f"checked: the Agda front end elaborates {model.name} (every shape agrees)")
    if imp.name != (args.name or imp.name):
        print(f"note: the model is named {imp.name} (--name {args.name} is not a name of the "
              f"model language)")
    return 0
