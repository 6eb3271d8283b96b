"""Shapes: ``Reshape`` and its kin (index arithmetic: ``div``/``mod`` and ``block``),
``Transpose``, and shape arithmetic of constants (``Shape``, ``Gather``, ``Concat``, ``Slice``,
``Cast``, ``ConstantOfShape``, ``Constant``), folded with NumPy.

    Flatten(x)  x : 2×3            ->   out = for k : 6 . x[div(k, 3)][mod(k, 3)]
    Shape(x) -> Gather -> Concat -> Reshape   ->   folded to Reshape's constant target shape

PyTorch's ``x.view(x.size(0), -1)`` exports as Shape → Gather → Unsqueeze → Concat → Reshape:
every shape is fixed here, so all of it folds to a constant target shape. The batch axis reads
1 (each sample is a batch of one): the elements that hold it are tracked (``_T.batch``) through
these operators, and may only end as the batch axis of a Reshape.
"""
from __future__ import annotations

import math

import numpy as np

from .core import _FLOAT_TYPES, _T, _fors, _lang

SUPPORTED = {
    "Reshape": "", "Flatten": "", "Transpose": "", "Squeeze": "", "Unsqueeze": "",
    "Constant": "a tensor value",
    "ConstantOfShape": "a constant shape (folded: a weight of an initializer's shape, a "
                       "const of a Constant's or Shape's)",
    "Shape": "a constant (the batch axis reads 1: each sample is a batch of one)",
    "Gather": "of constants (shape arithmetic)", "Concat": "of constants (shape arithmetic)",
    "Slice": "of constants (shape arithmetic)",
    "Cast": "of a constant; of a tensor, to a float type",
}


def op_Constant(im, node, a):
    if "value" not in a:
        im.fail(node, "only a tensor `value` is supported")
    v = im.nh.to_array(a["value"])
    im.out_const(node, v.astype(np.float64) if v.dtype.kind == "f" else v, fixed=True)


def op_ConstantOfShape(im, node, a):
    """A tensor of a constant shape filled with ``value`` (a one-element tensor; float32 0
    by default), folded: a constant like an initializer. Its role follows its shape's
    (``out_const``): of an initializer's shape it is a weight, a ``param`` (the model
    zoo's "light" models, whose every weight is a ConstantOfShape of a constant shape);
    of a Constant's or a ``Shape``'s, a ``const``. Shape arithmetic of a batched input
    reads the batch axis as 1: allowed as the leading dimension only (the fill is the
    same for every sample, and a constant broadcasts over the batch)."""
    im.only(node, a, {"value": lambda v: True})
    shape = im.const_of(node, 0, "the shape")
    if shape is None:
        im.fail(node, "no shape input")
    shape = np.asarray(shape)
    if shape.ndim != 1 or shape.dtype.kind not in "iu":
        im.fail(node, f"a shape of type {shape.dtype} and rank {shape.ndim}: a 1-D "
                        f"integer tensor is required")
    if (shape < 0).any():
        im.fail(node, f"a negative dimension in the shape {shape.tolist()}")
    batch = im.operand(node, 0).batch
    if batch is not None and batch.any() and (batch[1:].any() or not batch[0]):
        im.fail(node, f"the batch size at position {int(np.argmax(batch))} of the shape "
                        f"{shape.tolist()}: only as its leading dimension")
    if "value" in a:
        v = im.nh.to_array(a["value"])
        if v.size != 1:
            im.fail(node, f"a value of {v.size} elements (one is required)")
        fill = v.reshape(())
    else:
        fill = np.zeros((), np.float32)
    if fill.dtype.kind == "f":
        fill = fill.astype(np.float64)
    elif fill.dtype.kind not in "iub":
        im.fail(node, f"a value of type {fill.dtype}")
    im.out_const(node, np.full(tuple(int(d) for d in shape), fill, dtype=fill.dtype))


def op_Transpose(im, node, a):
    x = im.operand(node, 0)
    perm = a.get("perm", list(reversed(range(len(x.shape) + im.batch))))
    if im.batch:
        if perm[0] != 0:
            im.fail(node, f"perm={perm} moves the batch axis")
        perm = [p - 1 for p in perm[1:]]
    im.only(node, a, {"perm": lambda v: True})
    if x.const:
        im.out_const(node, x.value.transpose(perm))
        return
    if perm == sorted(perm):
        im.env[node.output[0]] = x
        return
    t = im.transpose(node, x, perm)
    im.env[node.output[0]] = t


def _out_shape_const(im, node, v: np.ndarray, batch: np.ndarray | None) -> None:
    im.out_const(node, v)
    if batch is not None and batch.any():
        im.env[node.output[0]].batch = batch


def _fold(im, node, x: _T, f) -> None:
    """The constant ``f(x)``, its batch-size elements where ``f`` moves ``x``'s."""
    _out_shape_const(im, node, f(x.value), None if x.batch is None else f(x.batch))


def _constants(im, node, what: str) -> list[_T]:
    ts = [im.operand(node, k) for k in range(len(node.input)) if node.input[k]]
    if not all(t.const for t in ts):
        im.fail(node, f"only of constants ({what}); of a computed tensor it is not "
                        f"supported")
    return ts


def op_Shape(im, node, a):
    im.only(node, a, {"start": lambda v: True, "end": lambda v: True})
    x = im.operand(node, 0)
    full = ((1,) if im.batch and not x.const else ()) + tuple(x.shape)
    r = len(full)
    lo, hi = (min(max(v + r if v < 0 else v, 0), r) for v in (a.get("start", 0),
                                                               a.get("end", r)))
    im.out_const(node, np.array(full[lo:hi], dtype=np.int64), fixed=True)
    if im.batch and not x.const and lo == 0 and hi > 0:
        im.env[node.output[0]].batch = np.arange(hi - lo) == 0


def op_Gather(im, node, a):
    im.only(node, a, {"axis": lambda v: True})
    x, i = _constants(im, node, "shape arithmetic such as x.size(0)")
    ax = a.get("axis", 0)
    if not -x.value.ndim <= ax < x.value.ndim:
        im.fail(node, f"axis {ax} of a tensor of rank {x.value.ndim}")
    n = x.value.shape[ax]
    idx = i.value.astype(np.int64)
    if ((idx < -n) | (idx >= n)).any():
        im.fail(node, f"index {idx.tolist()} out of range for axis {ax} of size {n}")
    _fold(im, node, x, lambda v: np.take(v, idx, axis=ax))


def op_Concat(im, node, a):
    im.only(node, a, {"axis": lambda v: True})
    ts = _constants(im, node, "shape arithmetic")
    if "axis" not in a:
        im.fail(node, "no axis attribute (Concat requires one)")
    masks = [np.zeros(t.value.shape, bool) if t.batch is None else t.batch for t in ts]
    _out_shape_const(im, node, np.concatenate([t.value for t in ts], axis=a["axis"]),
                          np.concatenate(masks, axis=a["axis"]))


def op_Slice(im, node, a):
    im.only(node, a, {})
    ts = _constants(im, node, "shape arithmetic such as x.shape[1:]")
    x, starts, ends = ts[0].value, ts[1].value, ts[2].value
    axes = (im.const_of(node, 3, "the axes") if len(node.input) > 3 and node.input[3]
            else np.arange(len(starts)))
    steps = (im.const_of(node, 4, "the steps") if len(node.input) > 4 and node.input[4]
             else np.ones(len(starts), np.int64))
    cut = [slice(None)] * x.ndim
    for s0, e0, ax, st in zip(starts, ends, axes, steps):
        if int(st) == 0:
            im.fail(node, "a step of 0")
        big = np.iinfo(np.int64).max // 2
        cut[int(ax)] = slice(int(np.clip(s0, -big, big)), int(np.clip(e0, -big, big)),
                             int(st))
    _fold(im, node, ts[0], lambda v: v[tuple(cut)])


# ONNX's types a constant may be cast to, as numpy's (float16 rounds, then is kept in float64)
_CASTS = {"FLOAT": np.float32, "DOUBLE": np.float64, "FLOAT16": np.float16,
          "INT8": np.int8, "UINT8": np.uint8, "INT16": np.int16, "UINT16": np.uint16,
          "INT32": np.int32, "UINT32": np.uint32, "INT64": np.int64, "UINT64": np.uint64,
          "BOOL": np.bool_}


def op_Cast(im, node, a):
    im.only(node, a, {"to": lambda v: True, "saturate": lambda v: True})
    x = im.operand(node, 0)
    to = im.onnx.TensorProto.DataType.Name(a["to"])
    if not x.const:
        if a["to"] not in _FLOAT_TYPES:
            im.fail(node, f"to {to}: a computed tensor stays a float tensor")
        im.env[node.output[0]] = x
        return
    if to not in _CASTS:
        im.fail(node, f"to {to}: a constant may be cast to "
                        + ", ".join(sorted(_CASTS)))
    v, dtype = x.value, _CASTS[to]
    if np.issubdtype(dtype, np.integer) and v.dtype.kind == "f":
        v = np.trunc(v).astype(np.int64)      # toward zero, then wrapped as C casts do
    v = v.astype(dtype)
    _out_shape_const(im, node, v.astype(np.float64) if v.dtype.kind == "f" else v, x.batch)


def _reshape_to(im, node, x: _T, shape) -> None:
    shape = tuple(int(d) for d in shape)
    if math.prod(shape) != math.prod(x.shape):
        im.fail(node, f"cannot reshape {x.shape} to {shape}")
    if x.const:
        im.out_const(node, x.value.reshape(shape))
        return
    if shape == x.shape:
        im.env[node.output[0]] = x
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
            im.bind(node, 0, shape, flat_expr)
            return
        flat = im.fresh(f"{node.output[0]}_flat", "binding")
        im.lines.append((flat, flat_expr, flat))
        src = flat
    idx = [f"i{k}" for k in range(len(shape) - 1)]
    e = src
    for i in idx:
        e = f"block({e}, {i})"
    im.bind(node, 0, shape, _fors(idx, shape[:-1], e) if idx else e)


def _target(im, node, x: _T, spec) -> tuple:
    """ONNX Reshape's target shape (0: copy, -1: infer), batch axis handled."""
    full = (((1,) if im.batch and not x.const else ()) + x.shape)
    spec = [int(d) for d in spec]
    out = []
    for i, d in enumerate(spec):
        out.append(full[i] if d == 0 else d)
    if out.count(-1) > 1:
        im.fail(node, f"shape {spec} has more than one -1")
    if -1 in out:
        known = math.prod(d for d in out if d != -1)
        out[out.index(-1)] = math.prod(full) // known if known else 0
    if im.batch and not x.const:
        if out and out[0] == im.fixed_batch:
            im.fail(node, f"shape {spec} holds the batch size {out[0]} the model was "
                            f"exported with: export again with a dynamic_axes entry or a "
                            f"batch of 1")
        if not out or out[0] != 1:
            im.fail(node, f"shape {spec} does not keep the batch axis first")
        out = out[1:]
    return tuple(out)


def op_Reshape(im, node, a):
    im.only(node, a, {"allowzero": lambda v: v == 0})
    x = im.operand(node, 0)
    spec = im.const_of(node, 1, "the shape")
    if spec is None:
        spec = a.get("shape")
    else:
        mask = im.operand(node, 1).batch
        if mask is not None and (mask.ravel()[1:].any() or x.const):
            im.fail(node, "the batch size is not the first dimension of the shape")
    _reshape_to(im, node, x, _target(im, node, x, spec))


def op_Flatten(im, node, a):
    im.only(node, a, {"axis": lambda v: True})
    x = im.operand(node, 0)
    full = ((1,) if im.batch and not x.const else ()) + x.shape
    ax = a.get("axis", 1)
    ax = ax + len(full) if ax < 0 else ax
    shape = (math.prod(full[:ax]), math.prod(full[ax:]))
    if im.batch and not x.const:
        if ax != 1:
            im.fail(node, f"axis={a.get('axis')} flattens the batch axis")
        shape = shape[1:]
    _reshape_to(im, node, x, shape)


def op_Squeeze(im, node, a):
    im.only(node, a, {"axes": lambda v: True})
    x = im.operand(node, 0)
    axes = im.raw_axes(node, a)
    if x.const:     # a constant has no batch axis
        ax = None if axes is None else tuple(axes)
        if ax is not None and any(x.value.shape[k] != 1 for k in ax):
            im.fail(node, f"axes {list(ax)} of a constant of shape {x.value.shape}: "
                            f"only axes of size 1 can be squeezed")
        _fold(im, node, x, lambda v: np.squeeze(v, axis=ax))
        return
    if axes is None:
        axes = [i for i, d in enumerate(x.shape) if d == 1]
    else:
        axes = im.norm_axes(node, axes, len(x.shape) + im.batch)
    _reshape_to(im, node, x, tuple(d for i, d in enumerate(x.shape) if i not in axes))


def op_Unsqueeze(im, node, a):
    im.only(node, a, {"axes": lambda v: True})
    x = im.operand(node, 0)
    axes = im.raw_axes(node, a) or []
    if x.const:
        _fold(im, node, x, lambda v: np.expand_dims(v, tuple(axes)))
        return
    axes = im.norm_axes(node, axes, len(x.shape) + im.batch + len(axes))
    shape = list(x.shape)
    for ax in sorted(axes):
        shape.insert(ax, 1)
    _reshape_to(im, node, x, tuple(shape))


HANDLERS = {
    "Constant": op_Constant,
    "ConstantOfShape": op_ConstantOfShape,
    "Transpose": op_Transpose,
    "Shape": op_Shape,
    "Gather": op_Gather,
    "Concat": op_Concat,
    "Slice": op_Slice,
    "Cast": op_Cast,
    "Reshape": op_Reshape,
    "Flatten": op_Flatten,
    "Squeeze": op_Squeeze,
    "Unsqueeze": op_Unsqueeze,
}
