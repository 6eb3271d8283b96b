"""The importer's core: the walk over the graph, model-language names, binding, constants and
broadcasting; the operators are handled by the family modules' tables (``HANDLERS``), which
``extract.front.onnx`` joins and hands to ``_Importer``.

    _Importer(model, name, batch, loss, handlers).run()
        inputs declared  ->  for each node: handlers[op_type](im, node, attrs)  ->  loss appended

A handler reads its operands with ``im.operand`` (a ``_T``: an expression of the model language
and its shape, or a constant), declares the constants it reads with ``im.ref`` (a ``param``, or
a ``const`` for a constant of the graph), and writes its output with ``im.bind`` (one binding per
node), ``im.broadcast`` (an elementwise operation with ONNX broadcasting) or ``im.out_const``
(a constant folded with NumPy). It refuses what it cannot express with ``im.fail(node, why)``.
"""
from __future__ import annotations

import re
import textwrap
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...ir import dump


class OnnxBatchWarning(UserWarning):
    """A graph input whose first dimension looks like a batch size fixed at export (4 of
    4×1×28×28): without ``--batch yes`` it is taken as part of each sample."""


class OnnxImportError(ValueError):
    """An ONNX model the model language cannot express (or a malformed one)."""


# why an operator of today's networks is not translated (the error names it)
_UNSUPPORTED: dict[str, str] = {}

_FLOAT_TYPES = {1: "float32", 11: "float64"}

# names a binding or parameter may not take: the language's words and builtins (the generated
# C's are dump.name_problem's)
_RESERVED = set("""
for sum tile
logistic exp log recip relu step max sqrt sqrtf erf erff derf slide backslide block zerobut div mod
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
        """Write ``NAME.model`` and ``NAME.npz`` (runtime weights, f32, or f64 for a float64
        graph) into ``directory``, and with consts ``NAME.consts.npz``, their values alone
        (``--weights`` of it trains from fresh parameters)."""
        from runtime.weights import save_weights
        from runtime._files import atomic_write
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        model = d / f"{self.name}.model"
        shapes = {k: tuple(v.shape) for k, v in self.params.items()}
        precision = "f64" if any(v.dtype == np.float64 for v in self.params.values()) else "f32"
        weights = save_weights(d / f"{self.name}.npz", self.params, self.name, precision, shapes)
        if self.consts:
            consts = {k: self.params[k] for k in self.consts}
            save_weights(d / f"{self.name}.consts.npz", consts, self.name, precision,
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
    """One import: the state of the walk (names taken, declarations, bindings, the tensors of
    the graph by name) and the helpers the handlers share. ``handlers`` maps an op_type to
    ``f(im, node, attrs)``; ``supported`` (op_type -> restrictions) is what an error lists."""

    def __init__(self, model, name: str | None, batch, loss: str, handlers=None,
                 supported=None):
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
        # constants declared by ref -> theirs (a kernel read so too would be two parameters);
        # of the biases declared in groups (G×Ug) -> (their param, G, Ug)
        self.kernels: dict[int, str] = {}
        self.declared: dict[int, str] = {}
        self.grouped: dict[int, tuple[str, int, int]] = {}
        self.env: dict[str, _T] = {}
        self.squeezed: dict[int, _T] = {}  # id(constant) -> its squeezed form
        self.alive: list = []               # constants whose id() is a key above
        self.at: int | str = "?"            # the index in graph.node of the node translated
        self.derived: dict = {}             # the consts and bindings of paddings, once each
        self.handlers = dict(handlers or {})
        self.supported = dict(supported or {})
        # what weights and folded constants are kept in: a graph with a float64 input is a
        # float64 model, whose weights keep their precision (for precision="f64")
        inits = {t.name for t in self.graph.initializer}
        self.dtype = (np.float64 if any(i.type.tensor_type.elem_type == 11
                                        for i in self.graph.input if i.name not in inits)
                      else np.float32)

    # -- names ---------------------------------------------------------------------------------

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

    def fresh(self, raw: str, what: str) -> str:
        s = self._ident(raw, self.used)
        self.used[s] = what
        return s

    # -- errors --------------------------------------------------------------------------------

    def where(self, node) -> str:
        # an unnamed node by its position in graph.node (from 0): "node #3 (MaxPool)"
        if node.name:
            return f"node {node.name!r} ({node.op_type})"
        return f"node #{self.at} ({node.op_type})"

    def fail(self, node, what: str):
        raise OnnxImportError(f"{self.where(node)}: {what}")

    # -- tensors -------------------------------------------------------------------------------

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
            flat = self.vector(t.value)
            if flat is not None:
                return flat
            raise OnnxImportError(
                (f"{self.where(node)}: " if node is not None else "")
                + f"{t.text!r} is the kernel of a Conv, declared "
                f"{self.kernels[_root(t.value)]}; it cannot be read as "
                f"{_shape_text(t.value.shape)} too (two parameters of one array)")
        if key not in self.param_of:
            if t.value.size == 0:
                self.fail(node, "an empty constant")
            p = self.fresh(t.text or "w", "param")
            self.param_of[key] = p
            self.declared[_root(t.value)] = p
            self.alive.append(t.value)
            shape = _lang(t.value.shape) or (1,)
            self.params[p] = self.stored(t.value.reshape(shape))
            if not t.fixed:
                self.decls.append(f"param  {p} : {_shape_text(shape)}")
            else:
                self.decls.append(f"const  {p} : {_shape_text(shape)}   -- a constant of the "
                                  f"graph (its value with the weights)")
                self.consts.append(p)
        return self.param_of[key]

    def stored(self, value) -> np.ndarray:
        """A weight or constant as the import keeps it, in the graph's precision."""
        return np.ascontiguousarray(value, dtype=self.dtype)

    def vector(self, value: np.ndarray) -> str | None:
        """The one declaration of a constant vector (an ONNX exporter shares one initializer
        between operations that read equal values: the folded biases of a fresh network), as
        the vector: its param, or the view of the param it has in groups (a grouped
        convolution's bias, G×Ug: ``for i : U . b[div(i, Ug)][mod(i, Ug)]``); None if it has
        neither (not yet declared, or declared otherwise). One param, so the operations that
        read it stay tied in training as in the graph."""
        shape, root = _lang(value.shape), _root(value)
        if len(shape) != 1:
            return None
        if root in self.declared and root not in self.kernels:
            p = self.declared[root]
            return p if _lang(self.params[p].shape) == shape else None
        if root not in self.grouped:
            return None
        p, G, Ug = self.grouped[root]
        if G * Ug != shape[0]:
            return None
        key = ("ungrouped", root)
        if key not in self.derived:
            name = self.fresh(f"{p}_all", "binding")
            self.lines.append((name, f"for i : {G * Ug} . {p}[div(i, {Ug})][mod(i, {Ug})]",
                               name))
            self.derived[key] = name
        return self.derived[key]

    def bind(self, node, k: int, shape, expr: str) -> _T:
        out = node.output[k]
        name = self.fresh(out, "binding")
        self.lines.append((name, expr, out))
        t = _T(tuple(shape), name)
        self.env[out] = t
        return t

    # -- the walk ------------------------------------------------------------------------------

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
            n = self.fresh(vi.name, "input")
            names[vi.name], inputs[vi.name] = n, tuple(d)
            self.decls.append(f"input  {n} : {_shape_text(d)}")
            self.env[vi.name] = _T(tuple(d), n)
        for self.at, node in enumerate(g.node):
            if node.domain not in ("", "ai.onnx"):
                self.fail(node, f"operator domain {node.domain!r} is not supported")
            f = self.handlers.get(node.op_type)
            if f is None:
                why = _UNSUPPORTED.get(node.op_type)
                self.fail(node, "operator not supported" + (f": {why}" if why else "")
                          + "; the supported operators:\n" + textwrap.fill(
                              ", ".join(sorted(self.supported)), width=92,
                              initial_indent="  ", subsequent_indent="  "))
            self._batch_size_check(node)
            try:
                f(self, node, self.attrs(node))
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
            name = self.fresh(out + "_out", "binding")
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
        y = self.fresh("y", "target")
        self.target_decl = f"target {y} : {_shape_text(t.shape)}"
        n = t.text
        if loss == "ce":
            if len(t.shape) != 1:
                raise OnnxImportError(f"loss 'ce' needs a vector output; {n} has shape "
                                      f"{t.shape}")
            k = t.shape[0]
            if n in self.softmax_of:  # the output is already a softmax: its logits' entropy
                z, m, se = self.softmax_of[n]
                ls = self.fresh("loss", "binding")
                self.loss_lines = [
                    f"-- {n} is the softmax of {z}: the cross-entropy of the logits {z}",
                    f"loss {ls} = log({se}) + {m} - (sum j : {k} . {y}[j] * {z}[j])"]
                return y
            m, se, ls = (self.fresh(x, "binding") for x in ("m", "se", "loss"))
            self.loss_lines = [
                f"{m} = maxall({n})",
                f"{se} = sum j : {k} . exp({n}[j] - {m})",
                f"loss {ls} = log({se}) + {m} - (sum j : {k} . {y}[j] * {n}[j])"]
        elif loss == "sqerr":
            ls = self.fresh("loss", "binding")
            self.loss_lines = [f"loss {ls} = sqerr({n}, {y})"]
        else:
            raise OnnxImportError(f"unknown loss {loss!r} (ce, sqerr or auto)")
        return y

    def attrs(self, node) -> dict:
        from onnx import helper
        return {a.name: helper.get_attribute_value(a) for a in node.attribute}

    # -- helpers for the operators -------------------------------------------------------------

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

    def unbatch(self, node, t: _T, rank: int) -> _T:
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
            ts = [self.unbatch(node, t, top) if t.const else t for t in ts]
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

    # -- helpers shared by families (shape, matmul, …) -----------------------------------------

    def transpose(self, node, t: _T, perm) -> _T:
        perm = list(perm)
        if t.const:
            return _T(tuple(t.value.transpose(perm).shape), (t.text or "w") + "_t",
                      t.value.transpose(perm), t.fixed)   # a view: ref copies it once
        shape = tuple(t.shape[p] for p in perm)
        idx = [f"i{k}" for k in range(len(perm))]
        src = [None] * len(perm)
        for k, p in enumerate(perm):
            src[p] = idx[k]
        name = self.fresh(f"{t.text}_t", "binding")
        src = src[:len(_lang(t.shape))]
        self.lines.append((name, _fors(idx, shape, t.text + "".join(f"[{i}]" for i in src)),
                           name))
        return _T(shape, name)

    # -- the batch size through shape arithmetic (extract.front.onnx.shape folds it) ---------

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

    def raw_axes(self, node, a, k=1):
        axes = a.get("axes")
        if axes is None and len(node.input) > k and node.input[k]:
            axes = [int(v) for v in self.const_of(node, k, "axes").reshape(-1)]
        return axes

    def norm_axes(self, node, axes, full_rank):
        axes = [ax + full_rank if ax < 0 else ax for ax in axes]
        if self.batch:
            if 0 in axes:
                self.fail(node, "the axes include the batch axis")
            axes = [ax - 1 for ax in axes]
        return axes


def _fors(idx, shape, body: str) -> str:
    e = body
    for i, d in reversed(list(zip(idx, shape))):
        e = f"for {i} : {d} . {e}"
    return e
