"""The forward chain of a dump as an ONNX graph, its parameters and consts as initializers.

    proto = to_onnx(model, arrays)          # model: extract.ir.ir.Model; arrays: name -> array
    export(model, arrays, "net.onnx")       # the same, checked and written

The graph's inputs are the model's inputs the output reads (the features), each with a leading
dynamic batch axis ``N``; its output is the ``output`` binding, ``N`` × the binding's shape as
its leaves (``[10, [1, 1]]`` -> ``N×10×1×1``); with ``loss=True`` the target is an input too and
the loss binding a second output, one value per sample (``N×1``). Every array is float32 (or
float64: ``precision="f64"``).

**The general route.** Every expression of ``E`` (docs/dump-format.md §4) is compiled under
the index variables in scope: an ``imap``/``imaps``/``sum``/``argmax`` binder adds one axis per
leaf of its index shape, so an array expression is a tensor ``[batch, binder axes…, its own
leaves…]`` and an index expression an integer tensor ``[batch, binder axes…, L]`` of its
coordinates (``L`` leaves), both broadcast (an axis an expression does not depend on has size
1). Index arithmetic (``div``, ``mod``, ``ix_plus``, ``ix_minus``, constants, binder variables)
over fixed shapes is computed here, in NumPy: a constant integer tensor. Then

- a selection (``sel``, ``sels``, ``selb``, ``slide``, ``backslide``) is one ``Gather`` from the
  array flattened, at the tabulated positions (``GatherND`` when they depend on the data:
  after an ``argmax``), out-of-range positions (``backslide``, ``ix_minus``) masked by
  ``Where``;
- a map over an index space is the tensor over its axes; ``imapb`` a transpose and reshape;
- ``sum`` is ``ReduceSum`` over its axes, ``argmax`` an ``ArgMax`` over its axes flattened
  (the first largest, as the dump's), its position unravelled by ``Div``/``Mod``;
- the elementwise functions map one to one (``logistic`` -> ``Sigmoid``, ``recip`` ->
  ``Reciprocal``, ``step`` -> ``Cast(Not(x <= 0))``, ``detach`` -> the tensor itself,
  ``scaledown n`` -> ``Div`` by ``n``, ``bin max`` -> ``Max``).

**On top of it** (the same values, fewer and smaller tensors):

- a table of positions that is an affine map of its axes realising a sub-box of the array
  (a reshape, a transpose, a crop, non-overlapping blocks, a stride) becomes ``Slice``,
  ``Reshape`` and ``Transpose`` (no table in the file); the tables left are the overlapping
  windows of a convolution not recognised below, and selections at computed positions;
- a ``sum`` of a product (nested sums merged) is a ``MatMul`` over the summed axes, the axes
  that both factors have as its batch (a dense layer, attention's products);
- ``sum`` over kernel offsets (and input channels) of ``slide(offset, pad(x[channel]))`` times
  a kernel independent of the window is a ``Conv`` (``pads`` from the ``backslide``): conv and
  conv2d layers, the CNN's 3-leaf slides (the channel leaf covered whole);
- ``sels(imaps v. b, argmax w. b)`` (a maximum) is ``ReduceMax``.

A table larger than ``MAX_TABLE`` elements is refused (``ExportError`` naming the binding and
the node), as is an array with an empty dimension; nothing else in ``E`` is.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..ir import ir
from ..ir.ir import (ArgMax, Backslide, Bin, Div, IMap, IMapB, IMapS, IxConst, IxMinus, IxMinusR,
                     IxPlus, Minus, Mod, One, ScaleDown, Sel, SelB, SelS, Slide, Sum, Un, Var,
                     Zero, ZeroBut, leaves, size)

OPSET = 18
MAX_TABLE = 1 << 24   # elements of one tabulated index table (int32: 64 MiB)
PRECISIONS = {"f32": np.float32, "f64": np.float64}
INT = np.int64


class ExportError(ValueError):
    """A dump (or weights) that cannot be exported: one line, naming the binding and node."""


# ---------------------------------------------------------------------------------------------
# tensors: constants folded here, or values of the graph

@dataclass(eq=False)
class T:
    """A tensor: a constant (``value``) or a graph value (``name``); ``shape`` is static but
    for the batch axis, ``None`` where it is the graph's ``N``."""
    shape: tuple
    dtype: type
    name: str | None = None
    value: np.ndarray | None = None
    src: "T | None" = None        # made by reshaping src (a reshape of it reshapes src)
    tsrc: tuple | None = None     # made by transposing tsrc[0] by tsrc[1]

    @property
    def const(self) -> bool:
        return self.value is not None

    @property
    def rank(self) -> int:
        return len(self.shape)


def const(value, dtype=None) -> T:
    v = np.asarray(value, dtype=dtype)
    return T(tuple(v.shape), v.dtype.type, value=v)


def _bdim(a, b):
    if a is None or b is None:
        if (a if a is not None else b) not in (None, 1):
            raise AssertionError("a batch axis against a fixed one")
        return None
    if a != b and 1 not in (a, b):
        raise AssertionError(f"dimensions {a} and {b} do not broadcast")
    return max(a, b)


def bshape(*shapes) -> tuple:
    rank = max(len(s) for s in shapes)
    out = [1] * rank
    for s in shapes:
        s = (1,) * (rank - len(s)) + tuple(s)
        out = [_bdim(x, y) for x, y in zip(out, s)]
    return tuple(out)


def _big(d) -> bool:
    return d is None or d > 1


_NP = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Mod": np.mod,
       "Equal": np.equal, "Less": np.less, "LessOrEqual": np.less_equal,
       "GreaterOrEqual": np.greater_equal, "And": np.logical_and}
_BOOL = ("Equal", "Less", "LessOrEqual", "GreaterOrEqual", "And", "Not")


class Graph:
    """The nodes and initializers being built; integer and structural operations on constants
    are folded in NumPy."""

    def __init__(self, real):
        from onnx import helper, numpy_helper
        self.helper, self.nh = helper, numpy_helper
        self.real = real
        self.nodes, self.inits, self.n = [], [], 0
        self.batch_input: str | None = None
        self._nshape = None
        self._named = {}

    def fresh(self, hint: str) -> str:
        self.n += 1
        return f"{hint}:{self.n}"

    def ref(self, t: T) -> str:
        if t.name is not None:
            return t.name
        v = t.value
        key = (v.dtype.str, v.shape, v.tobytes()) if v.size <= 64 else None
        if key is not None and key in self._named:
            return self._named[key]
        name = self.fresh("c")
        self.inits.append(self.nh.from_array(v, name))
        if key is not None:
            self._named[key] = name
        t.name = name
        return name

    def node(self, op: str, inputs, shape, dtype, hint: str | None = None, out: str | None = None,
             **attrs) -> T:
        name = out or self.fresh(hint or op.lower())
        self.nodes.append(self.helper.make_node(
            op, [self.ref(i) if i is not None else "" for i in inputs], [name], **attrs))
        return T(tuple(shape), dtype, name=name)

    # -- folded operations ----------------------------------------------------------------------

    def binop(self, op: str, a: T, b: T) -> T:
        if a.const and b.const:
            if op == "Div":
                v = (a.value // b.value if np.issubdtype(a.value.dtype, np.integer)
                     else a.value / b.value)
            else:
                v = _NP[op](a.value, b.value)
            return const(v, None if op in _BOOL else a.dtype)
        return self.node(op, [a, b], bshape(a.shape, b.shape),
                         np.bool_ if op in _BOOL else a.dtype)

    def where(self, c: T, a: T, b: T) -> T:
        if c.const and a.const and b.const:
            return const(np.where(c.value, a.value, b.value), a.dtype)
        if c.const and c.value.all() and bshape(c.shape, a.shape, b.shape) == a.shape:
            return a
        return self.node("Where", [c, a, b], bshape(c.shape, a.shape, b.shape), a.dtype)

    def concat_last(self, ts) -> T:
        """Index tensors side by side along their last axis (broadcast along the others)."""
        if len(ts) == 1:
            return ts[0]
        shape = bshape(*[t.shape[:-1] for t in ts])
        if all(t.const for t in ts):
            return const(np.concatenate([np.broadcast_to(t.value, shape + t.shape[-1:])
                                         for t in ts], axis=-1))
        parts = [self.expand(t, shape + t.shape[-1:]) for t in ts]
        return self.node("Concat", parts, shape + (sum(t.shape[-1] for t in ts),), INT, axis=-1)

    def all_last(self, t: T) -> T:
        """``t`` (bool) reduced by ``and`` over its last axis."""
        if t.const:
            return const(t.value.all(axis=-1))
        n = self.cast(t, INT)
        m = self.node("ReduceMin", [n, const([-1], INT)], t.shape[:-1], INT, keepdims=0)
        return self.cast(m, np.bool_)

    def cast(self, t: T, dtype) -> T:
        if t.const:
            return const(t.value.astype(dtype))
        from onnx import helper
        return self.node("Cast", [t], t.shape, dtype,
                         to=helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))

    def unsqueeze(self, t: T, axes) -> T:
        axes = sorted(axes)
        if not axes:
            return t
        shape = list(t.shape)
        for a in axes:
            shape.insert(a, 1)
        if t.const:
            return const(t.value.reshape(shape), t.dtype)
        if t.src is not None:
            return self.reshape(t, shape)
        out = self.node("Unsqueeze", [t, const(axes, INT)], shape, t.dtype)
        out.src = t
        return out

    def reshape(self, t: T, shape) -> T:
        shape = tuple(shape)
        if shape == t.shape:
            return t
        if t.const:
            return const(t.value.reshape([1 if d is None else d for d in shape]), t.dtype)
        if shape and shape[0] is None and (not t.shape or t.shape[0] is not None):
            raise AssertionError("a reshape cannot make the batch axis")
        base = t.src if t.src is not None else t
        if shape == base.shape:
            return base
        spec = [0 if d is None else d for d in shape]
        out = self.node("Reshape", [base, const(spec, INT)], shape, t.dtype)
        out.src = base
        return out

    def transpose(self, t: T, perm) -> T:
        perm = list(perm)
        if perm == sorted(perm):
            return t
        shape = [t.shape[p] for p in perm]
        moved = [p for p in perm if _big(t.shape[p])]
        if moved == sorted(moved) and perm[0] == 0:    # only axes of size 1 move: a reshape
            return self.reshape(t, shape)
        if t.const:
            return const(t.value.transpose(perm), t.dtype)
        if t.tsrc is not None:                  # a transpose of a transpose: one
            base, first = t.tsrc
            return self.transpose(base, [first[p] for p in perm])
        out = self.node("Transpose", [t], shape, t.dtype, perm=perm)
        out.tsrc = (t, perm)
        return out

    def expand(self, t: T, shape) -> T:
        """``t`` broadcast to ``shape`` (``None``: the batch axis ``N``)."""
        out = bshape(t.shape, shape)
        if out == t.shape:
            return t
        if t.const and out[0] is not None:
            return const(np.broadcast_to(t.value, out).copy(), t.dtype)
        if out[0] is None and t.shape[0] is not None:
            spec = self.node("Concat", [self.nshape(), const(list(out[1:]), INT)],
                             (len(out),), INT, axis=0)
        else:
            spec = const([1 if d is None else d for d in out], INT)
        return self.node("Expand", [t, spec], out, t.dtype)

    def slice(self, t: T, axis: int, start: int, end: int) -> T:
        if start == 0 and end == t.shape[axis]:
            return t
        shape = list(t.shape)
        shape[axis] = end - start
        if t.const:
            idx = [slice(None)] * t.rank
            idx[axis] = slice(start, end)
            return const(t.value[tuple(idx)], t.dtype)
        return self.node("Slice", [t, const([start], INT), const([end], INT), const([axis], INT)],
                         shape, t.dtype)

    def reduce(self, op: str, t: T, axes, keepdims: int = 0) -> T:
        axes = sorted(axes)
        if not axes:
            return t
        shape = [d for i, d in enumerate(t.shape) if i not in axes] if not keepdims else \
            [1 if i in axes else d for i, d in enumerate(t.shape)]
        return self.node(op, [t, const(axes, INT)], shape, t.dtype, keepdims=keepdims)

    def nshape(self) -> T:
        """The batch size, ``[N]`` (int64), read from the first graph input."""
        if self._nshape is None:
            if self.batch_input is None:
                raise AssertionError("no input to take the batch size from")
            self._nshape = self.node("Shape", [T((None,), self.real, name=self.batch_input)],
                                     (1,), INT, hint="N", start=0, end=1)
        return self._nshape


# ---------------------------------------------------------------------------------------------
# the compiler of expressions

@dataclass(frozen=True)
class _Bound:
    """An index variable in scope: a binder's (``axis``: its first axis among the binder axes)
    or an ``ix_minus``'s (``value``: its coordinates, made when ``k`` binder axes were in
    scope)."""
    var: str
    shape: ir.Shape
    axis: int | None = None
    value: T | None = None
    k: int = 0


def _axes(ctx) -> int:
    return sum(len(leaves(b.shape)) for b in ctx if b.axis is not None)


def _strides(dims) -> list[int]:
    out, acc = [], 1
    for d in reversed(dims):
        out.append(acc)
        acc *= d
    return out[::-1]


def _coords(dims, before: int, after: int) -> np.ndarray:
    """The positions of ``dims`` as coordinates: ``[1, 1×before, *dims, 1×after, L]``."""
    grid = np.moveaxis(np.indices(dims, dtype=INT), 0, -1) if dims else np.zeros((0,), INT)
    return grid.reshape((1,) + (1,) * before + tuple(dims) + (1,) * after + (len(dims),))


class _Refused(Exception):
    def __init__(self, node, why):
        self.node, self.why = node, why


class Compiler:
    def __init__(self, g: Graph, arrays: dict[str, T], max_table: int = MAX_TABLE,
                 recognise: bool = True):
        self.g, self.arrays, self.max_table, self.recognise = g, arrays, max_table, recognise
        self.memo: dict = {}
        self._var_memo: dict = {}

    # -- entry points ---------------------------------------------------------------------------

    def ar(self, e: ir.Node, ctx: tuple) -> T:
        key = (id(e), ctx)
        t = self.memo.get(key)
        if t is None:
            t = self._ar(e, ctx)
            want = 1 + _axes(ctx) + len(leaves(e.shape))
            assert t.rank == want, (type(e).__name__, t.shape, want)
            self.memo[key] = t
        return t

    def ix(self, e: ir.Node, ctx: tuple) -> T:
        key = (id(e), ctx)
        t = self.memo.get(key)
        if t is None:
            t = self._ix(e, ctx)
            assert t.rank == 2 + _axes(ctx), (type(e).__name__, t.shape)
            self.memo[key] = t
        return t

    # -- index expressions ----------------------------------------------------------------------

    def _ix(self, e, ctx) -> T:
        g, k = self.g, _axes(ctx)
        if isinstance(e, Var):
            for b in reversed(ctx):
                if b.var == e.name:
                    if b.axis is not None:
                        dims = leaves(b.shape)
                        return const(_coords(dims, b.axis, k - b.axis - len(dims)))
                    return g.unsqueeze(b.value, range(1 + b.k, 1 + k))
            raise _Refused(e, f"the index variable {e.name} is not in scope")
        if isinstance(e, IxConst):
            pos = np.array(leaves(e.pos), INT)
            return const(pos.reshape((1,) * (1 + k) + (len(pos),)))
        if isinstance(e, (Div, Mod)):
            p = const(np.array(leaves(e.p), INT))
            return g.binop("Div" if isinstance(e, Div) else "Mod", self.ix(e.i, ctx), p)
        if isinstance(e, IxPlus):
            return g.binop("Add", self.ix(e.i, ctx), self.ix(e.j, ctx))
        if isinstance(e, ArgMax):
            return self._argmax(e, ctx)
        raise _Refused(e, f"an index node {type(e).__name__} the exporter does not know")

    def _argmax(self, e: ArgMax, ctx) -> T:
        g, k = self.g, _axes(ctx)
        dims = leaves(e.s)
        inner = ctx + (_Bound(e.var, e.s, axis=k),)
        body = self.ar(e.body, inner)                        # [B, γ, dims, 1]
        body = g.expand(body, (1,) * (1 + k) + tuple(dims) + (1,))
        flat = g.reshape(body, body.shape[:1 + k] + (size(e.s),))
        if flat.const:
            lin = const(np.argmax(flat.value, axis=-1).astype(INT))
        else:
            lin = g.node("ArgMax", [flat], flat.shape[:-1], INT, axis=1 + k, keepdims=0,
                         select_last_index=0)
        lin = g.unsqueeze(lin, [1 + k])
        st, dm = const(np.array(_strides(dims), INT)), const(np.array(dims, INT))
        return g.binop("Mod", g.binop("Div", lin, st), dm)

    # -- array expressions ----------------------------------------------------------------------

    def _ar(self, e, ctx) -> T:
        g, k = self.g, _axes(ctx)
        er = len(leaves(e.shape))
        if isinstance(e, Var):
            if e.kind not in ("context", "chain") or e.name not in self.arrays:
                raise _Refused(e, f"it reads {e.name}, which is not a forward array")
            key = (e.name, k)
            if key not in self._var_memo:
                self._var_memo[key] = g.unsqueeze(self.arrays[e.name], range(1, 1 + k))
            return self._var_memo[key]
        if isinstance(e, (Zero, One)):
            return const(np.full((1,) * (1 + k + er), 1 if isinstance(e, One) else 0,
                                 g.real))
        if isinstance(e, IMapS):
            body = self.ar(e.body, ctx + (_Bound(e.var, e.s, axis=k),))
            return g.reshape(body, body.shape[:-1])
        if isinstance(e, IMap):
            return self.ar(e.body, ctx + (_Bound(e.var, e.s, axis=k),))
        if isinstance(e, IMapB):
            return self._imapb(e, ctx)
        if isinstance(e, Sum):
            return self._sum(e, ctx)
        if isinstance(e, (Sel, SelS)):
            if isinstance(e, SelS) and self.recognise:
                m = self._max(e, ctx)
                if m is not None:
                    return m
            # a selection of a selection (x[i][j]…) is one, at the positions side by side
            chain, base = [e], e.a
            while isinstance(base, Sel):
                chain.append(base)
                base = base.a
            coords = g.concat_last([self.ix(c.i, ctx) for c in reversed(chain)])
            dims = leaves(base.shape)[:coords.shape[-1]]
            out = self._gather(e, self.ar(base, ctx), dims, coords, 0, None)
            return g.unsqueeze(out, [out.rank]) if isinstance(e, SelS) else out
        if isinstance(e, (SelB, Slide, Backslide)):
            return self._window(e, ctx)
        if isinstance(e, ZeroBut):
            same = g.all_last(g.binop("Equal", self.ix(e.i, ctx), self.ix(e.j, ctx)))
            a = self.ar(e.a, ctx)
            return g.where(g.unsqueeze(same, range(same.rank, same.rank + er)), a,
                           const(np.zeros((), g.real)))
        if isinstance(e, (IxMinus, IxMinusR)):
            return self._ix_minus(e, ctx)
        if isinstance(e, Un):
            a = self.ar(e.a, ctx)
            if e.fn == "detach":
                return a
            if e.fn == "step":
                le = g.node("LessOrEqual", [a, const(np.zeros((), g.real))], a.shape, np.bool_)
                return g.cast(g.node("Not", [le], a.shape, np.bool_), g.real)
            op = {"logistic": "Sigmoid", "exp": "Exp", "log": "Log", "recip": "Reciprocal",
                  "sqrt": "Sqrt", "relu": "Relu"}[e.fn]
            return g.node(op, [a], a.shape, g.real)
        if isinstance(e, Bin):
            a, b = self.ar(e.a, ctx), self.ar(e.b, ctx)
            op = {"plus": "Add", "mul": "Mul", "max": "Max"}[e.fn]
            return g.node(op, [a, b], bshape(a.shape, b.shape), g.real)
        if isinstance(e, ScaleDown):
            a = self.ar(e.a, ctx)
            return g.node("Div", [a, const(np.array(e.n, g.real))], a.shape, g.real)
        if isinstance(e, Minus):
            a = self.ar(e.a, ctx)
            return g.node("Neg", [a], a.shape, g.real)
        raise _Refused(e, f"an array node {type(e).__name__} the exporter does not know")

    def _imapb(self, e: IMapB, ctx) -> T:
        g, k = self.g, _axes(ctx)
        s, p = leaves(e.s), leaves(e.p)
        body = self.ar(e.body, ctx + (_Bound(e.var, e.s, axis=k),))   # [B, γ, s…, p…]
        body = g.expand(body, (1,) * (1 + k) + s + p)
        m = len(s)
        perm = list(range(1 + k)) + [1 + k + j for i in range(m) for j in (i, m + i)]
        out = g.transpose(body, perm)
        return g.reshape(out, out.shape[:1 + k] + tuple(a * b for a, b in zip(s, p)))

    def _ix_minus(self, e, ctx) -> T:
        g, k = self.g, _axes(ctx)
        bound = leaves(shape_suc(e.p) if isinstance(e, IxMinus) else e.s)
        kk = g.binop("Sub", self.ix(e.i, ctx), self.ix(e.j, ctx))
        valid = g.all_last(g.binop("And", g.binop("GreaterOrEqual", kk, const(np.zeros(1, INT))),
                                   g.binop("Less", kk, const(np.array(bound, INT)))))
        kc = g.where(g.unsqueeze(valid, [valid.rank]), kk, const(np.zeros(1, INT)))
        var_shape = ir.shape_suc(e.p) if isinstance(e, IxMinus) else e.s
        body = self.ar(e.body, ctx + (_Bound(e.var, var_shape, value=kc, k=k),))
        er = body.rank - valid.rank
        return g.where(g.unsqueeze(valid, range(valid.rank, valid.rank + er)), body,
                       const(np.zeros((), g.real)))

    # -- selections -----------------------------------------------------------------------------

    def _window(self, e, ctx) -> T:
        """``selb``, ``slide``, ``backslide``: each element of the result is one element of the
        array, at a position computed from the result's own: a gather over the result's axes."""
        g, k = self.g, _axes(ctx)
        a = self.ar(e.a, ctx)
        out_dims = leaves(e.shape)
        ny = len(out_dims)
        i = g.unsqueeze(self.ix(e.i, ctx), range(1 + k, 1 + k + ny))
        y = const(_coords(out_dims, k, 0))
        mask = None
        if isinstance(e, SelB):
            x = g.binop("Add", g.binop("Mul", i, const(np.array(leaves(e.p), INT))), y)
        elif isinstance(e, Slide):
            x = g.binop("Add", i, y)
        else:
            x = g.binop("Sub", y, i)
            dims = const(np.array(leaves(e.a.shape), INT))
            mask = g.all_last(g.binop("And", g.binop("GreaterOrEqual", x, const(np.zeros(1, INT))),
                                      g.binop("Less", x, dims)))
            x = g.where(g.unsqueeze(mask, [mask.rank]), x, const(np.zeros(1, INT)))
        return self._gather(e, a, leaves(e.a.shape), x, ny, mask)

    def _gather(self, e, d: T, sel_dims, x: T, ny: int, mask: T | None) -> T:
        """``d`` (``[B, γ… (k), E…]``) at the coordinates ``x`` (``[B, γ…, y… (ny), ns]``) of its
        first ``ns`` element axes (of ``sel_dims``): ``[B, γ…, y…, rest…]``; where ``mask`` is
        false, 0."""
        g = self.g
        k = x.rank - 2 - ny
        ns = len(sel_dims)
        sel_dims = list(sel_dims)
        rest = d.shape[1 + k + ns:]
        if all(dd == 1 for dd in d.shape[1 + k:1 + k + ns]):
            # constant along the selected axes: the selection is the array itself
            out = g.reshape(d, d.shape[:1 + k] + rest)
            out = g.unsqueeze(out, range(1 + k, 1 + k + ny))
        else:
            d = g.expand(d, (1,) * (1 + k) + tuple(sel_dims) + (1,) * len(rest))
            sel = const(np.array(_strides(sel_dims), INT))
            if x.const:
                lin = const((x.value * sel.value).sum(axis=-1))
            else:
                lin = g.reduce("ReduceSum", g.binop("Mul", x, sel), [x.rank - 1])
            gd = d.shape[1:1 + k]
            n_sel = math.prod(sel_dims)
            if any(dd > 1 for dd in gd):
                grid = np.zeros((1,) + tuple(gd) + (1,) * ny, INT)
                for j, st in enumerate(_strides(gd)):
                    if gd[j] > 1:
                        shape = [1] * grid.ndim
                        shape[1 + j] = gd[j]
                        grid = grid + np.arange(gd[j], dtype=INT).reshape(shape) * st * n_sel
                lin = g.binop("Add", const(grid), lin)
            m = math.prod(gd) * n_sel
            flat = g.reshape(d, (d.shape[0], m) + rest)
            out = self._take(e, flat, lin, m, rest)
        if mask is not None:
            er = len(rest)
            out = g.where(g.unsqueeze(mask, range(mask.rank, mask.rank + er)), out,
                          const(np.zeros((), g.real)))
        return out

    def _take(self, e, flat: T, lin: T, m: int, rest) -> T:
        """``flat`` (``[B, m, rest…]``) at the flat positions ``lin`` (``[B', j…]``)."""
        g = self.g
        if lin.const:
            table = lin.value[0]
            if self.recognise:
                out = self._affine(flat, table, m, rest)
                if out is not None:
                    return out
            if table.size > self.max_table:
                raise _Refused(e, f"its table of positions has {table.size:,} elements, more "
                                  f"than {self.max_table:,}")
            idx = const(table.astype(np.int32 if m < 2 ** 31 else INT))
            return g.node("Gather", [flat, idx], (flat.shape[0],) + table.shape + tuple(rest),
                          g.real, axis=1)
        if lin.shape[0] is not None:             # the same positions for every sample
            idx = g.reshape(lin, lin.shape[1:])
            return g.node("Gather", [flat, idx], (flat.shape[0],) + idx.shape + tuple(rest),
                          g.real, axis=1)
        flat = g.expand(flat, (None,) + flat.shape[1:])
        idx = g.unsqueeze(lin, [lin.rank])
        return g.node("GatherND", [flat, idx], lin.shape + tuple(rest), g.real, batch_dims=1)

    def _affine(self, flat: T, table: np.ndarray, m: int, rest) -> T | None:
        """A table of flat positions that is an affine map of its axes onto a sub-box of some
        row-major view of ``[m]``: the tensor by ``Slice``, ``Reshape`` and ``Transpose``
        alone; None otherwise (``_take`` gathers). An axis on which the map is not affine is
        split into its prime factors first (``div``/``mod`` of a flat index: a reshape)."""
        out = self._affine_on(flat, table, m, rest)
        if out is None:
            fine = tuple(f for n in table.shape for f in _primes(n))
            if len(fine) > len(table.shape):
                out = self._affine_on(flat, table.reshape(fine), m, rest)
                if out is not None:
                    back, at = [], 1
                    for n in table.shape:
                        parts = out.shape[at:at + len(_primes(n))]
                        at += len(_primes(n))
                        back.append(math.prod(parts))
                    if any(b not in (1, n) for b, n in zip(back, table.shape)):
                        out = self.g.expand(out, (1,) + fine + (1,) * len(rest))
                        back = list(table.shape)
                    out = self.g.reshape(out, out.shape[:1] + tuple(back) + tuple(rest))
        return out

    def _affine_on(self, flat: T, table: np.ndarray, m: int, rest) -> T | None:
        g = self.g
        jd = table.shape
        base = int(table.flat[0]) if table.size else 0
        coef = {}
        for a, n in enumerate(jd):
            if n > 1:
                unit = [0] * len(jd)
                unit[a] = 1
                coef[a] = int(table[tuple(unit)]) - base
        want = np.full(jd, base, INT)
        for a, c in coef.items():
            shape = [1] * len(jd)
            shape[a] = jd[a]
            want = want + np.arange(jd[a], dtype=INT).reshape(shape) * c
        if not np.array_equal(want, table) or any(c < 0 for c in coef.values()):
            return None
        moving = sorted((a for a in coef if coef[a] > 0), key=lambda a: -coef[a])
        # split [m] at the strides of the moving axes: each a dimension of its own
        # (positions z = base + Σ c_a x_a; axis a steps by c_a, covering c_a·n_a)
        cur = flat
        pos = 1                       # the axis of cur being cut
        labels: list = []             # for cur's axes from 1 on: ("j", a) or ("one",)
        length, start = m, base
        for a in moving:
            c, n = coef[a], jd[a]
            inner = [b for b in moving if coef[b] < c]
            extent = sum(coef[b] * (jd[b] - 1) for b in inner) + 1
            if extent > c:
                return None              # overlapping windows
            outer, start = divmod(start, c)
            if outer + n > length // c or start + extent > c:
                return None
            if length % c:
                cur = g.slice(cur, pos, 0, (length // c) * c)
                length = (length // c) * c
            cur = g.reshape(cur, cur.shape[:pos] + (length // c, c) + cur.shape[pos + 1:])
            cur = g.slice(cur, pos, outer, outer + n)
            labels.append(("j", a))
            pos += 1
            length = c
        cur = g.slice(cur, pos, start, start + 1)
        labels.append(("one",))
        order = [1 + labels.index(("j", a)) for a in sorted(moving)]
        nrest = len(rest)
        perm = [0] + order + [1 + len(labels) + r for r in range(nrest)]
        ones = [1 + i for i, lab in enumerate(labels) if lab == ("one",)]
        cur = g.transpose(cur, perm + ones)
        shape = list(cur.shape[:1]) + [jd[a] if a in moving else 1 for a in range(len(jd))]
        return g.reshape(cur, tuple(shape) + tuple(rest))     # constant axes stay 1

    def _max(self, e: SelS, ctx) -> T | None:
        """``sels(imaps v. b, argmax w. b[w/v])``: the largest ``b``, a ``ReduceMax``."""
        if not (isinstance(e.a, IMapS) and isinstance(e.i, ArgMax) and e.a.s == e.i.s):
            return None
        v, w = e.a.var, e.i.var
        renamed = ir.rewrite(e.i.body, lambda t: replace(t, name=v) if isinstance(t, Var)
                             and t.kind == "index" and t.name == w else None)
        if renamed != e.a.body:
            return None
        g, k = self.g, _axes(ctx)
        dims = leaves(e.a.s)
        body = self.ar(e.a.body, ctx + (_Bound(v, e.a.s, axis=k),))     # [B, γ, dims, 1]
        return g.reduce("ReduceMax", body, range(1 + k, 1 + k + len(dims)))

    # -- sums -----------------------------------------------------------------------------------

    def _sum(self, e: Sum, ctx) -> T:
        g, k = self.g, _axes(ctx)
        binders, body = [], e
        inner = ctx
        while isinstance(body, Sum):
            binders.append(body)
            inner = inner + (_Bound(body.var, body.s, axis=_axes(inner)),)
            body = body.body
        dims = [d for b in binders for d in leaves(b.s)]
        axes = list(range(1 + k, 1 + k + len(dims)))
        if self.recognise:
            conv = self._conv(binders, body, ctx, inner)
            if conv is not None:
                return conv
        if isinstance(body, Bin) and body.fn == "mul" and self.recognise:
            a, b = self.ar(body.a, inner), self.ar(body.b, inner)
            return self._contract(a, b, axes, dims)
        t = self.ar(body, inner)
        t = g.expand(t, tuple(1 if i not in axes else dims[i - 1 - k] for i in range(t.rank)))
        return g.reduce("ReduceSum", t, axes)

    def _contract(self, a: T, b: T, axes, dims) -> T:
        """``Σ over axes of a·b`` (``a``, ``b`` of one rank, broadcast): one ``MatMul``."""
        g = self.g
        n_of = dict(zip(axes, dims))
        pa, pb = [], []
        for ax in axes:
            if _big(a.shape[ax]) and _big(b.shape[ax]):
                continue
            if _big(b.shape[ax]):
                pb.append(ax)
            else:
                if not _big(a.shape[ax]) and n_of[ax] > 1:
                    a = g.expand(a, tuple(n_of[ax] if i == ax else 1 for i in range(a.rank)))
                pa.append(ax)
        a = g.reduce("ReduceSum", a, pa, keepdims=1)
        b = g.reduce("ReduceSum", b, pb, keepdims=1)
        rank = a.rank
        csum = [ax for ax in axes if _big(a.shape[ax]) and _big(b.shape[ax])]
        if not csum:
            prod = g.node("Mul", [a, b], bshape(a.shape, b.shape), g.real)
            return g.reshape(prod, tuple(d for i, d in enumerate(prod.shape) if i not in axes))
        lead = [0] if a.shape[0] is None or b.shape[0] is None else []
        free = [i for i in range(rank) if i not in axes and i not in lead]
        both = [i for i in free if _big(a.shape[i]) and _big(b.shape[i])]
        ma = [i for i in free if _big(a.shape[i]) and not _big(b.shape[i])]
        nb = [i for i in free if _big(b.shape[i]) and not _big(a.shape[i])]

        def prepare(t, left, right):
            t = g.transpose(t, lead + both + left + right +
                            [i for i in range(rank) if i not in lead + both + left + right])
            shape = tuple(t.shape[:len(lead)]) + tuple(t.shape[len(lead):len(lead) + len(both)])
            shape += (math.prod(t.shape[len(lead) + len(both):len(lead) + len(both) + len(left)]),
                      math.prod(t.shape[len(lead) + len(both) + len(left):
                                        len(lead) + len(both) + len(left) + len(right)]))
            return g.reshape(t, shape)

        a2 = prepare(a, ma, csum)
        b2 = prepare(b, csum, nb)
        out = g.node("MatMul", [a2, b2], bshape(a2.shape[:-2], b2.shape[:-2]) +
                     (a2.shape[-1 - 1], b2.shape[-1]), g.real)
        # back to the axes' order: [lead, both, ma, nb] -> every axis but the summed
        full = lead + both + ma + nb
        out = g.reshape(out, out.shape[:len(lead) + len(both)] +
                        tuple(a.shape[i] for i in ma) + tuple(b.shape[i] for i in nb))
        keep = [i for i in range(rank) if i not in axes]
        order = sorted(full, key=keep.index)
        out = g.transpose(out, [full.index(i) for i in order])
        shape = []
        it = iter(out.shape)
        for i in keep:
            shape.append(next(it) if i in full else 1)
        return g.reshape(out, tuple(shape))

    def _conv(self, binders, body, ctx, inner) -> T | None:
        """``sum c… . sum t . slide(t, pad(x)) * w`` with ``w`` independent of the window's
        positions and of the data, ``x`` of the channels ``c…`` alone: a ``Conv`` (the kernel
        ``w`` over the outer binders and ``c…``, ``t``); None if the sum is not of that form.
        Leading leaves that the window covers whole (and does not pad) are channels too."""
        if not (isinstance(body, Bin) and body.fn == "mul"):
            return None
        for f1, f2 in ((body.a, body.b), (body.b, body.a)):
            if (isinstance(f1, Slide) and isinstance(f1.i, Var) and f1.i.kind == "index"
                    and any(b.var == f1.i.name and b.s == f1.s for b in binders)):
                break
        else:
            return None
        g, k = self.g, _axes(ctx)
        x, pads = f1.a, None
        if isinstance(x, Backslide) and isinstance(x.i, IxConst):
            begin = leaves(x.i.pos)
            end = tuple(r - u - b for r, u, b in zip(leaves(x.shape), leaves(x.a.shape), begin))
            x, pads = x.a, (begin, end)
        window, image, out = leaves(f1.s), leaves(x.shape), leaves(f1.shape)
        if pads is None:
            pads = ((0,) * len(image), (0,) * len(image))
        axis = {b.var: b.axis for b in inner[len(ctx):]}
        t_at = axis[f1.i.name]
        chans = [(axis[b.var], leaves(b.s)) for b in binders if b.var != f1.i.name]
        xt = self.ar(x, inner)
        wt = self.ar(f2, inner)
        nt = len(window)
        if (any(d != 1 for d in xt.shape[1:1 + k]) or any(d != 1 for d in xt.shape[1 + t_at:
                                                                              1 + t_at + nt])
                or wt.shape[0] is not None and wt.shape[0] != 1 or wt.shape[0] is None
                or any(d != 1 for d in wt.shape[wt.rank - len(out):])):
            return None
        lead = 0                      # leading leaves covered whole: channels
        while (lead < len(image) - 1 and out[lead] == 1 and pads[0][lead] == 0
               and pads[1][lead] == 0):
            lead += 1
        spatial = len(image) - lead
        if not 1 <= spatial <= 3:
            return None
        c_axes = [a for a0, dims in chans for a in range(1 + a0, 1 + a0 + len(dims))]
        c_dims = [d for _, dims in chans for d in dims]
        xt = g.expand(xt, tuple(c_dims[c_axes.index(i)] if i in c_axes else 1
                                for i in range(xt.rank)))
        xt = g.transpose(xt, [0] + c_axes + [i for i in range(1, xt.rank) if i not in c_axes])
        n_c = math.prod(c_dims) * math.prod(image[:lead])
        xt = g.reshape(xt, (xt.shape[0], n_c) + image[lead:])
        t_axes = list(range(1 + t_at, 1 + t_at + nt))
        wt = g.expand(wt, tuple(c_dims[c_axes.index(i)] if i in c_axes else
                                window[i - 1 - t_at] if i in t_axes else 1
                                for i in range(wt.rank)))
        outer = list(range(1, 1 + k))
        wt = g.transpose(wt, [0] + outer + c_axes + t_axes +
                         [i for i in range(wt.rank) if i not in [0] + outer + c_axes + t_axes])
        o_dims = wt.shape[1:1 + k]
        wt = g.reshape(wt, (math.prod(o_dims), n_c) + window[lead:])
        y = g.node("Conv", [xt, wt], (xt.shape[0], math.prod(o_dims)) + out[lead:], g.real,
                   kernel_shape=list(window[lead:]),
                   pads=list(pads[0][lead:]) + list(pads[1][lead:]))
        return g.reshape(y, (y.shape[0],) + tuple(o_dims) + out)


def _primes(n: int) -> list[int]:
    out, f = [], 2
    while f * f <= n:
        while n % f == 0:
            out.append(f)
            n //= f
        f += 1
    return out + ([n] if n > 1 else [])


def shape_suc(p):
    return ir.shape_suc(p)


# ---------------------------------------------------------------------------------------------
# the model

def _needed(model: ir.Model, roots) -> list[ir.Array]:
    """The chain bindings the roots read, transitively, in chain order."""
    by = {b.name: b for b in model.chain}
    need, todo = set(), list(roots)
    while todo:
        n = todo.pop()
        if n in need or n not in by:
            continue
        need.add(n)
        todo.extend(ir.reads(by[n].expr))
    return [b for b in model.chain if b.name in need]


def _live(nodes, roots):
    """The nodes the roots need (in order), and the names they read."""
    made = {o: n for n in nodes for o in n.output}
    live, used, todo = set(), set(roots), list(roots)
    while todo:
        n = made.get(todo.pop())
        if n is None or id(n) in live:
            continue
        live.add(id(n))
        for i in n.input:
            if i and i not in used:
                used.add(i)
                todo.append(i)
    return [n for n in nodes if id(n) in live], used


def _reach(model: ir.Model, loss: bool):
    """(the graph's outputs, the chain bindings they need, the context arrays those read)."""
    out = model.output("prediction")
    if out is None:
        raise ExportError(f"model {model.name} declares no output binding to export (mark one "
                          f"`output`)")
    roots = [out]
    if loss:
        lo = model.output("loss")
        if lo is None:
            raise ExportError(f"model {model.name} declares no loss to export")
        roots.append(lo)
    chain = _needed(model, roots)
    read = set(roots)
    for b in chain:
        read |= ir.reads(b.expr)
    first = [dict(model.data).get(k) for k in ("features", "target")]
    context = [a for a in model.context if a.name in read]
    # the features first, then the target, then the rest in context order
    return roots, chain, sorted(context, key=lambda a: first.index(a.name) if a.name in first
                                else len(first))


def graph_inputs(model: ir.Model, loss: bool = False) -> list[str]:
    """The names of the exported graph's inputs (the model's inputs the outputs read)."""
    return [a.name for a in _reach(model, loss)[2] if a.role == "input"]


def to_onnx(model: ir.Model, arrays, precision: str = "f32", loss: bool = False,
            max_table: int = MAX_TABLE, recognise: bool = True):
    """The ONNX ``ModelProto`` of ``model``'s forward chain, from its output (and with
    ``loss``, its loss) back, with ``arrays`` (name -> array: every parameter and const the
    output reads) as initializers. Raises ``ExportError`` naming what is missing or refused."""
    import onnx
    from onnx import helper
    if precision not in PRECISIONS:
        raise ExportError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    real = PRECISIONS[precision]
    roots, chain, context = _reach(model, loss)
    for a in list(context) + chain:
        if 0 in leaves(a.shape):
            raise ExportError(f"{a.name} has shape {ir.show_shape(a.shape)}, with no element: "
                              f"ONNX's Reshape cannot keep an empty axis")
    g = Graph(real)
    tensors: dict[str, T] = {}
    inputs, inits = [], []
    tdt = helper.np_dtype_to_tensor_dtype(np.dtype(real))
    for a in context:
        dims = leaves(a.shape)
        if a.role == "input":
            inputs.append(helper.make_tensor_value_info(a.name, tdt, ["N", *dims]))
            tensors[a.name] = T((None,) + dims, real, name=a.name)
            if g.batch_input is None:
                g.batch_input = a.name
            continue
        if a.name not in arrays:
            raise ExportError(f"no value for the {a.role} {a.name} (shape "
                              f"{'x'.join(map(str, dims))}) in the weights")
        v = np.asarray(arrays[a.name])
        if v.size != math.prod(dims):
            raise ExportError(f"the {a.role} {a.name} has {v.size} elements in the weights, "
                              f"its shape {'x'.join(map(str, dims))} holds {math.prod(dims)}")
        if not np.issubdtype(v.dtype, np.floating) or not np.isfinite(v).all():
            raise ExportError(f"the {a.role} {a.name} must be finite floating-point values")
        inits.append(g.nh.from_array(v.astype(real).reshape(dims), a.name))
        tensors[a.name] = g.reshape(T(dims, real, name=a.name), (1,) + dims)
    comp = Compiler(g, tensors, max_table, recognise)
    for b in chain:
        try:
            t = comp.ar(b.expr, ())
        except _Refused as r:
            text = ir.show(r.node)
            text = text if len(text) <= 80 else text[:77] + "..."
            raise ExportError(f"binding {b.name}: cannot export the node "
                              f"{type(r.node).__name__} `{text}`: {r.why}") from None
        dims = leaves(b.shape)
        t = g.expand(t, (1,) + dims)
        if b.name in roots and t.shape[0] is not None and g.batch_input is not None:
            t = g.expand(t, (None,) + dims)      # an output the same for every sample
        tensors[b.name] = g.node("Identity", [t], t.shape, real, out=b.name)
    outputs = []
    for r in roots:
        dims = leaves(next(b for b in chain if b.name == r).shape)
        outputs.append(helper.make_tensor_value_info(
            r, tdt, ["N" if g.batch_input is not None else 1, *dims]))
    nodes, used = _live(g.nodes, roots)
    graph = helper.make_graph(nodes, model.name, inputs, outputs,
                              inits + [i for i in g.inits if i.name in used])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="proved-kernels",
                              doc_string=f"the forward chain of {model.name} "
                                         f"(dump {model.dump_hash[:12]})")
    proto.ir_version = 10
    onnx.checker.check_model(proto, full_check=True)
    return proto


def export(model: ir.Model, arrays, path, precision: str = "f32", loss: bool = False,
           max_table: int = MAX_TABLE, recognise: bool = True) -> Path:
    """Write ``to_onnx(...)`` to ``path`` (atomically: a temporary file renamed)."""
    import os
    import tempfile
    proto = to_onnx(model, arrays, precision, loss, max_table, recognise)
    path = Path(path)
    data = proto.SerializeToString()
    fd, tmp = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".",
                               prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _umask() -> int:
    import os
    m = os.umask(0)
    os.umask(m)
    return m
