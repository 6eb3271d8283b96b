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
    "Gather": "of constants (shape arithmetic)",
    "Concat": "any axis but the batch's; of constants folded (shape arithmetic)",
    "Slice": "of constants folded; of a computed tensor, constant starts and ends, step 1",
    "Split": "any axis but the batch's, constant sizes",
    "DepthToSpace": "DCR and CRD (index arithmetic: block, div, mod)",
    "SpaceToDepth": "index arithmetic: block, div, mod",
    "Resize": "constant scales or sizes; per axis: nearest (an integer factor: div; else a "
              "one-hot matrix), linear and cubic (a const matrix of weights, ONNX's own)",
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


def _at(name: str, shape, ix) -> str:
    """``name`` at the indices ``ix`` (one per dimension of ``shape``; those of trailing
    dimensions 1, absorbed by the language, left out)."""
    return name + "".join(f"[{i}]" for i in ix[:len(_lang(shape))])


def _axis(im, node, a, x: _T, default=None) -> int:
    """An ``axis`` attribute as an axis of the per-sample shape (the batch's refused)."""
    rank = len(x.shape) + (im.batch and not x.const)
    ax = a.get("axis", default)
    if ax is None:
        im.fail(node, "no axis attribute (it is required)")
    ax = ax + rank if ax < 0 else ax
    if not 0 <= ax < rank:
        im.fail(node, f"axis={a.get('axis', default)} of a tensor of rank {rank}")
    if im.batch and not x.const:
        if ax == 0:
            im.fail(node, f"axis={a.get('axis', default)} is the batch axis")
        ax -= 1
    return ax


def _mask(im, node, value: np.ndarray, what: str) -> str:
    """A const of 0s and 1s that selects (a Concat's or Split's), declared as it is."""
    return im.ref(_T(value.shape, f"{node.output[0]}_{what}", value.astype(np.float64), True),
                  node)


def _concat(im, node, parts: list[_T], axis: int) -> str:
    """The parts side by side along ``axis``: with ``g`` the gcd of their sizes along it, the
    output's ``Q = N/g`` chunks of ``g`` are each one of the parts' chunks, chosen by a const
    0/1 matrix ``M_t`` (``Q×Q_t``; a vector when the part is one chunk):

        out[…k…] = Σ_t sum n : Q_t . M_t[div(k, g)][n] * block(for j : n_t . p_t[…j…], n)[mod(k, g)]

    (``M_t[q][n] = 1`` where chunk ``n`` of part ``t`` is chunk ``q`` of the output). Every
    term but one is a product by 0, so the value is exact for finite inputs (an infinity or
    NaN in one part spreads to the others, as 0·inf is NaN); ``Q`` products per element: a
    few for a network's concatenations, whose sizes share a large factor (DenseNet's 32)."""
    sizes = [p.shape[axis] for p in parts]
    N, g = sum(sizes), math.gcd(*sizes)
    Q = N // g
    shape = parts[0].shape[:axis] + (N,) + parts[0].shape[axis + 1:]
    idx = [f"i{d}" for d in range(len(shape))]
    k = idx[axis]
    terms, off = [], 0
    for t, (p, n) in enumerate(zip(parts, sizes)):
        Qt, q0 = n // g, off // g
        src = im.ref(p, node)

        def el(i, p=p, src=src):
            return _at(src, p.shape, idx[:axis] + [i] + idx[axis + 1:])
        if Qt == 1:
            m = np.zeros(Q)
            m[q0] = 1
            terms.append(f"{_mask(im, node, m, f'part{t}')}[div({k}, {g})] * "
                         f"{el(f'mod({k}, {g})')}")
        elif g == 1:
            m = np.zeros((N, n))
            m[off + np.arange(n), np.arange(n)] = 1
            terms.append(f"(sum n : {n} . {_mask(im, node, m, f'part{t}')}[{k}][n] * {el('n')})")
        else:
            m = np.zeros((Q, Qt))
            m[q0 + np.arange(Qt), np.arange(Qt)] = 1
            terms.append(f"(sum n : {Qt} . {_mask(im, node, m, f'part{t}')}[div({k}, {g})][n]"
                         f" * block(for j : {n} . {el('j')}, n)[mod({k}, {g})])")
        off += n
    return _fors(idx, shape, " + ".join(terms)), shape


def _take(im, node, x: _T, axis: int, start: int, n: int, what: str):
    """Positions ``start`` to ``start + n`` of ``x`` along ``axis`` (a Split's output, a
    Slice): with ``g`` the gcd of ``start``, ``n`` and the size ``N``, chunk ``c`` of the
    output is chunk ``start/g + c`` of ``x``, chosen by a const 0/1 matrix (``Q_t×Q``):

        out[…j…] = sum n : Q . M[div(j, g)][n] * block(for k : N . x[…k…], n)[mod(j, g)]

    exact for finite values (see ``_concat``); ``N/g`` products per element."""
    N = x.shape[axis]
    g = math.gcd(start, n, N)
    Q, Qt, q0 = N // g, n // g, start // g
    shape = x.shape[:axis] + (n,) + x.shape[axis + 1:]
    idx = [f"i{d}" for d in range(len(shape))]
    j = idx[axis]
    if n == N:
        return x.text, shape
    src = im.ref(x, node)

    def el(i):
        return _at(src, x.shape, idx[:axis] + [i] + idx[axis + 1:])
    vec = f"for k : {N} . {el('k')}"
    if Qt == 1:
        m = np.zeros(Q)
        m[q0] = 1
        body = f"sum n : {Q} . {_mask(im, node, m, what)}[n] * block({vec}, n)[{j}]"
    elif g == 1:
        m = np.zeros((n, N))
        m[np.arange(n), start + np.arange(n)] = 1
        body = f"sum n : {N} . {_mask(im, node, m, what)}[{j}][n] * {el('n')}"
    else:
        m = np.zeros((Qt, Q))
        m[np.arange(Qt), q0 + np.arange(Qt)] = 1
        body = (f"sum n : {Q} . {_mask(im, node, m, what)}[div({j}, {g})][n] * "
                f"block({vec}, n)[mod({j}, {g})]")
    return _fors(idx, shape, body), shape


def op_Concat(im, node, a):
    """Of constants: folded (shape arithmetic, the batch size tracked); of computed tensors
    (and constants among them): ``_concat``."""
    im.only(node, a, {"axis": lambda v: True})
    ts = [im.operand(node, k) for k in range(len(node.input)) if node.input[k]]
    if "axis" not in a:
        im.fail(node, "no axis attribute (Concat requires one)")
    if all(t.const for t in ts):
        masks = [np.zeros(t.value.shape, bool) if t.batch is None else t.batch for t in ts]
        _out_shape_const(im, node, np.concatenate([t.value for t in ts], axis=a["axis"]),
                         np.concatenate(masks, axis=a["axis"]))
        return
    top = max(len(t.shape) for t in ts if not t.const)
    if im.batch:
        ts = [im.unbatch(node, t, top) if t.const else t for t in ts]
    x = next(t for t in ts if not t.const)
    axis = _axis(im, node, a, x)
    for t in ts:
        if len(t.shape) != top or any(d != e for i, (d, e) in enumerate(zip(t.shape, x.shape))
                                      if i != axis):
            im.fail(node, "inputs of shapes " + ", ".join(str(t.shape) for t in ts)
                    + f" differ beyond the axis {axis}")
    ts = [t for t in ts if t.shape[axis]]
    if len(ts) == 1:
        im.env[node.output[0]] = ts[0]
        return
    expr, shape = _concat(im, node, ts, axis)
    im.bind(node, 0, shape, expr)


def op_Split(im, node, a):
    """Each output a range of the input along ``axis`` (``_take``); the sizes from the
    ``split`` input or attribute, or ``num_outputs`` (opset 18) or the number of outputs
    (equal parts; the last smaller when they do not divide)."""
    im.only(node, a, {"axis": lambda v: True, "split": lambda v: True,
                      "num_outputs": lambda v: True})
    x = im.operand(node, 0)
    axis = _axis(im, node, a, x, 0)
    if x.const:
        im.fail(node, "of a constant")
    N = x.shape[axis]
    sizes = a.get("split")
    if sizes is None and len(node.input) > 1 and node.input[1]:
        sizes = [int(v) for v in im.const_of(node, 1, "the split sizes").reshape(-1)]
    if sizes is None:
        parts = a.get("num_outputs", len(node.output))
        each = -(-N // parts)
        sizes = [min(each, N - each * i) for i in range(parts)]
    sizes = [int(v) for v in sizes]
    if sum(sizes) != N or len(sizes) != len(node.output) or min(sizes) < 1:
        im.fail(node, f"split sizes {sizes} of an axis of {N} into {len(node.output)} outputs")
    start = 0
    for k, n in enumerate(sizes):
        if node.output[k]:
            expr, shape = _take(im, node, x, axis, start, n, f"part{k}")
            im.bind(node, k, shape, expr)
        start += n


def op_Slice(im, node, a):
    """Of constants: folded (shape arithmetic). Of a computed tensor: constant starts, ends
    and axes, steps of 1; each sliced axis a ``_take``."""
    im.only(node, a, {"starts": lambda v: True, "ends": lambda v: True,
                      "axes": lambda v: True})
    x0 = im.operand(node, 0)
    if im.opset < 10:
        starts, ends = a.get("starts"), a.get("ends")
        axes = a.get("axes", list(range(len(starts))))
        steps = [1] * len(starts)
        if x0.const:
            ts = [x0]
    else:
        if x0.const:
            ts = _constants(im, node, "shape arithmetic such as x.shape[1:]")
        starts, ends = (im.const_of(node, k, w) for k, w in ((1, "starts"), (2, "ends")))
        axes = (im.const_of(node, 3, "the axes") if len(node.input) > 3 and node.input[3]
                else np.arange(len(starts)))
        steps = (im.const_of(node, 4, "the steps") if len(node.input) > 4 and node.input[4]
                 else np.ones(len(starts), np.int64))
    big = np.iinfo(np.int64).max // 2
    if x0.const:
        x = ts[0].value
        cut = [slice(None)] * x.ndim
        for s0, e0, ax, st in zip(starts, ends, axes, steps):
            if int(st) == 0:
                im.fail(node, "a step of 0")
            cut[int(ax)] = slice(int(np.clip(s0, -big, big)), int(np.clip(e0, -big, big)),
                                 int(st))
        _fold(im, node, ts[0], lambda v: v[tuple(cut)])
        return
    t = x0
    todo = list(zip(starts, ends, axes, steps))
    for n_, (s0, e0, ax, st) in enumerate(todo):
        ax = _axis(im, node, {"axis": int(ax)}, x0)
        if int(st) != 1:
            im.fail(node, f"a step of {int(st)} on axis {int(ax)} (of a computed tensor, 1)")
        N = t.shape[ax]
        lo, hi = (int(np.clip(v, -big, big)) for v in (s0, e0))
        lo, hi = (min(max(v + N if v < 0 else v, 0), N) for v in (lo, hi))
        if hi <= lo:
            im.fail(node, f"an empty slice {lo}:{hi} of axis {ax}")
        expr, shape = _take(im, node, t, ax, lo, hi - lo, f"range{n_}")
        if expr == t.text:
            continue
        if n_ == len(todo) - 1:
            im.bind(node, 0, shape, expr)
            return
        name = im.fresh(f"{node.output[0]}_{n_}", "binding")
        im.lines.append((name, expr, name))
        t = _T(shape, name)
    im.env[node.output[0]] = t


def _image(im, node, x: _T, what: str) -> tuple[str, str, tuple]:
    """For an N×C×H×W operator: the prefix mapping the samples (``for n : N .`` without a
    batch axis), the index reading one, and the per-sample C×H×W."""
    if x.const:
        im.fail(node, "of a constant")
    per = len(x.shape) == 4 and not im.batch
    if len(x.shape) != (4 if per else 3):
        im.fail(node, f"{what} of a tensor of shape {((1,) if im.batch else ()) + x.shape}: "
                      f"N×C×H×W is required")
    return (f"for n : {x.shape[0]} . " if per else ""), ("[n]" if per else ""), x.shape[-3:]


def op_DepthToSpace(im, node, a):
    """``C×H×W → C/b²×Hb×Wb``: output ``(c, y, z)`` reads channel ``(i·b + j)·C′ + c`` (DCR,
    the default) or ``c·b² + i·b + j`` (CRD) at ``(⌊y/b⌋, ⌊z/b⌋)``, ``i = y mod b``,
    ``j = z mod b``: the channel is picked by ``block`` from the vector of channels
    (``block(block(for k : C . x[k][h][w], i), j)[c]``), index arithmetic alone."""
    im.only(node, a, {"blocksize": lambda v: v >= 1, "mode": lambda v: True})
    mode = a.get("mode", b"DCR")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode not in ("DCR", "CRD"):
        im.fail(node, f"mode={mode!r} (DCR or CRD)")
    x = im.operand(node, 0)
    each, at, (C, H, W) = _image(im, node, x, "DepthToSpace")
    b = int(a["blocksize"])
    if C % (b * b):
        im.fail(node, f"{C} channels do not split into blocks of {b}×{b}")
    Cp = C // (b * b)
    vec = f"for k : {C} . {x.text}{at}[k][div(i1, {b})][div(i2, {b})]"
    i, j = f"mod(i1, {b})", f"mod(i2, {b})"
    sel = (f"block(block({vec}, {i}), {j})[i0]" if mode == "DCR"
           else f"block(block({vec}, i0), {i})[{j}]")
    shape = x.shape[:-3] + (Cp, H * b, W * b)
    im.bind(node, 0, shape, f"{each}for i0 : {Cp} . for i1 : {H * b} . for i2 : {W * b} . {sel}")


def op_SpaceToDepth(im, node, a):
    """``C×H×W → Cb²×H/b×W/b``: output channel ``o`` is ``(i·b + j)·C + c``: the block
    ``(i, j)`` of the plane ``c`` at ``q`` (``block(x[c], q)[i][j]``, ``q`` the output
    position), ``c = o mod C``, ``i``, ``j`` the quotient and remainder of ``⌊o/C⌋`` by ``b``."""
    im.only(node, a, {"blocksize": lambda v: v >= 1})
    x = im.operand(node, 0)
    each, at, (C, H, W) = _image(im, node, x, "SpaceToDepth")
    b = int(a["blocksize"])
    if H % b or W % b:
        im.fail(node, f"a plane {H}×{W} does not split into blocks of {b}×{b}")
    if H // b == 1 or W // b == 1 or W == 1:
        im.fail(node, f"a plane {H}×{W} in blocks of {b}×{b} (a trailing dimension 1 is "
                      f"absorbed in the model language)")
    shape = x.shape[:-3] + (C * b * b, H // b, W // b)
    q = f"div(i0, {C})"
    body = f"block({x.text}{at}[mod(i0, {C})], i1)[div({q}, {b})][mod({q}, {b})]"
    im.bind(node, 0, shape, f"{each}for i0 : {C * b * b} . for i1 : {H // b}x{W // b} . {body}")


def _resize_matrix(im, node, a, n: int, m: int, scale=None) -> np.ndarray:
    """The m×n matrix of ONNX's own Resize along one axis (with the node's mode and
    coordinate attributes, and its scale when it gives scales: the coordinates are mapped by
    the scale, not by m/n): the reference evaluator's output for the n unit vectors."""
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator
    attrs = {k: v for k, v in a.items() if k in ("mode", "coordinate_transformation_mode",
                                                 "nearest_mode", "cubic_coeff_a",
                                                 "exclude_outside", "extrapolation_value")}
    given = (helper.make_tensor("sizes", TensorProto.INT64, [2], [n, m]) if scale is None
             else helper.make_tensor("scales", TensorProto.FLOAT, [2], [1.0, float(scale)]))
    r = helper.make_node("Resize", ["x", "", "scales" if scale is not None else "",
                                    "sizes" if scale is None else ""], ["y"], **attrs)
    g = helper.make_graph([r], "axis", [helper.make_tensor_value_info("x", TensorProto.DOUBLE,
                                                                      [n, n])],
                          [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [n, m])],
                          initializer=[given])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    (y,) = ReferenceEvaluator(model).run(None, {"x": np.eye(n)})
    return np.asarray(y, np.float64).T


def op_Resize(im, node, a):
    """Per axis whose size changes, one binding: for nearest with an integer factor ``r``,
    ``x[…div(i, r)…]`` (index arithmetic, exact); otherwise ``sum n : N . R[i][n] *
    x[…n…]``, ``R`` the const matrix of ONNX's own 1-D resize of that axis (the reference
    evaluator's, for the node's mode and coordinate transformation: linear and cubic weights,
    or a one-hot nearest), exact up to the rounding of the weighted sum. Scales or sizes must
    be constants; the batch axis keeps its size."""
    im.only(node, a, {"mode": lambda v: True, "coordinate_transformation_mode":
                      lambda v: v not in (b"tf_crop_and_resize", "tf_crop_and_resize"),
                      "nearest_mode": lambda v: True, "cubic_coeff_a": lambda v: True,
                      "exclude_outside": lambda v: True, "extrapolation_value": lambda v: True,
                      "antialias": lambda v: v == 0,
                      "keep_aspect_ratio_policy": lambda v: v in (b"stretch", "stretch")})
    x = im.operand(node, 0)
    if x.const:
        im.fail(node, "of a constant")
    full = ((1,) if im.batch else ()) + x.shape
    if im.opset < 11:
        scales, sizes = im.const_of(node, 1, "the scales"), None
    else:
        scales = (im.const_of(node, 2, "the scales") if len(node.input) > 2 and node.input[2]
                  else None)
        sizes = (im.const_of(node, 3, "the sizes") if len(node.input) > 3 and node.input[3]
                 else None)
        if scales is not None and scales.size == 0:
            scales = None
    given = None if sizes is not None else [float(v) for v in scales.reshape(-1)]
    if sizes is not None:
        out = [int(v) for v in sizes.reshape(-1)]
    elif scales is not None:
        out = [int(math.floor(d * float(s))) for d, s in zip(full, scales.reshape(-1))]
    else:
        im.fail(node, "neither scales nor sizes")
    if len(out) != len(full):
        im.fail(node, f"sizes {out} for a tensor of rank {len(full)}")
    if im.batch:
        if out[0] != 1:
            im.fail(node, "resizes the batch axis")
        out = out[1:]
        given = given and given[1:]
    mode = a.get("mode", b"nearest")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    t = x
    changed = [d for d, (n, m) in enumerate(zip(x.shape, out)) if n != m]
    if not changed:
        im.env[node.output[0]] = x
        return
    for step, d in enumerate(changed):
        n, m = t.shape[d], out[d]
        R = _resize_matrix(im, node, a, n, m, None if given is None else given[d])
        if R.shape != (m, n):
            im.fail(node, f"axis {d}: ONNX's resize of {n} gives {R.shape[0]}, not {m}")
        shape = t.shape[:d] + (m,) + t.shape[d + 1:]
        idx = [f"i{k}" for k in range(len(shape))]
        r = m // n
        nearest = (mode == "nearest" and m % n == 0
                   and np.array_equal(R, np.eye(n)[np.arange(m) // r]))
        if nearest:
            body = _at(t.text, t.shape, idx[:d] + [f"div({idx[d]}, {r})"] + idx[d + 1:])
        else:
            Rn = im.ref(_T(R.shape, f"{node.output[0]}_axis{d}", R, True), node)
            body = (f"sum n : {n} . {Rn}[{idx[d]}][n] * "
                    f"{_at(t.text, t.shape, idx[:d] + ['n'] + idx[d + 1:])}")
        expr = _fors(idx, shape, body)
        if step == len(changed) - 1:
            im.bind(node, 0, shape, expr)
            return
        name = im.fresh(f"{node.output[0]}_axis{d}", "binding")
        im.lines.append((name, expr, name))
        t = _T(shape, name)


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
    "DepthToSpace": op_DepthToSpace,
    "SpaceToDepth": op_SpaceToDepth,
    "Resize": op_Resize,
    "Split": op_Split,
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
