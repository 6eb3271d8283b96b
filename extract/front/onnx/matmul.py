"""Products: ``MatMul`` and ``Gemm``.

    MatMul(x, W)  x : 5×4, W : 4×3 (a constant)  ->  out = for m : 5 . dense(W_t, x[m])
    MatMul(a, b)  both computed                  ->  out = for m : 5 . for o : 3 .
                                                          sum k : 4 . a[m][k] * b[k][o]
"""
from __future__ import annotations

import numpy as np

from .core import _T, _fors

SUPPORTED = {
    "MatMul": "any rank: batched over the leading axes, broadcast (attention's per-head "
              "products)", "Gemm": "alpha, beta, transA, transB",
}


def _matmul(im, node, x: _T, w: _T, k_out: int = 0) -> None:
    """x @ w (NumPy's matmul): of rank 1 or 2, a ``dense`` (a constant ``w``) or a ``sum``;
    of higher rank, ``_batched``."""
    xs, ws = x.shape, w.shape
    if not xs or not ws:
        im.fail(node, f"operands of shapes {xs} and {ws}: a scalar operand")
    if len(xs) > 2 or len(ws) > 2:
        _batched(im, node, x, w, k_out)
        return
    K = xs[-1]
    if ws[0] != K:
        im.fail(node, f"operands of shapes {xs} and {ws} do not multiply")
    if x.const and w.const:
        im.out_const(node, x.value @ w.value)
        return
    if w.const and not x.const:
        wt = _T((ws[1], K) if len(ws) == 2 else (K,), (node.input[1] or "w") + "_t",
                w.value.T if len(ws) == 2 else w.value, w.fixed)   # a view: ref copies it
        if len(ws) == 1:   # a dot product
            body = lambda v: f"sum k : {K} . {v}[k] * {im.ref(wt, node)}[k]"  # noqa: E731
            shape = ()
        else:
            body = lambda v: f"dense({im.ref(wt, node)}, {v})"  # noqa: E731
            shape = (ws[1],)
        if len(xs) == 1:
            im.bind(node, k_out, shape or (), body(x.text))
        else:
            M = xs[0]
            im.bind(node, k_out, (M,) + shape, f"for m : {M} . {body(x.text + '[m]')}")
        return
    X, Wr = im.ref(x, node), im.ref(w, node)
    xi = (lambda m: f"{X}[{m}][k]") if len(xs) == 2 else (lambda m: f"{X}[k]")
    wi = (lambda n: f"{Wr}[k][{n}]") if len(ws) == 2 else (lambda n: f"{Wr}[k]")
    idx, shape = [], []
    if len(xs) == 2:
        idx.append("m"); shape.append(xs[0])  # noqa: E702
    if len(ws) == 2:
        idx.append("o"); shape.append(ws[1])  # noqa: E702
    body = f"sum k : {K} . {xi('m')} * {wi('o')}"
    im.bind(node, k_out, tuple(shape), _fors(idx, shape, body))


def _batched(im, node, x: _T, w: _T, k_out: int) -> None:
    """A product of stacks of matrices (multi-head attention's ``Q·Kᵀ`` per head):
    ``for b… : B . for m : M . for o : O . sum k : K . x[b…][m][k] * w[b…][k][o]``, the
    leading axes broadcast as NumPy's matmul does (an axis 1 against a longer one is read at
    its one position, ``sum u : 1 . …``; a constant's axes 1 are squeezed); an operand of rank 1
    is a row (``x``) or a column (``w``), and its axis is not in the output."""
    if im.batch and not (x.const and w.const):
        top = max(len(t.shape) for t in (x, w) if not t.const)
        x, w = (im.unbatch(node, t, top) if t.const else t for t in (x, w))
    xs, ws = x.shape, w.shape
    K = xs[-1]
    if (ws[-2] if len(ws) > 1 else ws[0]) != K:
        im.fail(node, f"operands of shapes {xs} and {ws} do not multiply")
    if x.const and w.const:
        im.out_const(node, x.value @ w.value)
        return
    bx, bw = xs[:-2], ws[:-2]
    try:
        batch = tuple(np.broadcast_shapes(bx, bw))
    except ValueError:
        im.fail(node, f"operands of shapes {xs} and {ws}: the leading axes do not broadcast")
    bidx = [f"i{j}" for j in range(len(batch))]
    mo_idx, mo_shape = [], []
    if len(xs) > 1:
        mo_idx.append("m"); mo_shape.append(xs[-2])  # noqa: E702
    if len(ws) > 1:
        mo_idx.append("o"); mo_shape.append(ws[-1])  # noqa: E702
    im._outdims = batch + ((xs[-2],) if len(xs) > 1 else ()) + (K,)
    ex = im.elem(x, bidx + (["m"] if len(xs) > 1 else []) + ["k"], len(im._outdims), node)
    im._outdims = batch + (K,) + ((ws[-1],) if len(ws) > 1 else ())
    ew = im.elem(w, bidx + ["k"] + (["o"] if len(ws) > 1 else []), len(im._outdims), node)
    shape = batch + tuple(mo_shape)
    im.bind(node, k_out, shape, _fors(bidx + mo_idx, shape, f"sum k : {K} . {ex} * {ew}"))


def op_MatMul(im, node, a):
    im.only(node, a, {})
    _matmul(im, node, im.operand(node, 0), im.operand(node, 1))


def op_Gemm(im, node, a):
    im.only(node, a, {"alpha": lambda v: True, "beta": lambda v: True,
                        "transA": lambda v: True, "transB": lambda v: True,
                        "broadcast": lambda v: True})  # opset < 7: C broadcasts
    x, w = im.operand(node, 0), im.operand(node, 1)
    alpha, beta = a.get("alpha", 1.0), a.get("beta", 1.0)
    if len(x.shape) != 2 and not (im.batch and len(x.shape) == 1):
        im.fail(node, f"A of shape {x.shape}: Gemm takes matrices")
    if a.get("transA", 0):
        if im.batch:
            im.fail(node, "transA=1 would transpose the batch axis")
        x = im.transpose(node, x, (1, 0))
    if a.get("transB", 0):
        w = im.transpose(node, w, (1, 0))
    if alpha != 1.0:
        if w.const:
            w = _T(w.shape, w.text, w.value * alpha, w.fixed)
        else:
            x = _scaled(im, node, x, alpha)
    c = im.operand(node, 2) if len(node.input) > 2 and node.input[2] else None
    if c is None:
        _matmul(im, node, x, w)
        return
    # the product, then + beta·C (a fresh output name for the product)
    tmp = f"{node.output[0]}_mm"
    node2 = type(node)()
    node2.CopyFrom(node)
    del node2.output[:]
    node2.output.append(tmp)
    _matmul(im, node2, x, w)
    if beta != 1.0:
        c = (_T(c.shape, c.text, c.value * beta, c.fixed) if c.const
             else _scaled(im, node, c, beta))
    im.broadcast(node, [im.env[tmp], c],
                   lambda p, q, numpy=False: p + q if numpy else f"{p} + {q}")


def _scaled(im, node, t: _T, factor: float) -> _T:
    cst = _T((), f"{node.output[0]}_scale", np.array(factor), True)
    name = f"{node.output[0]}_scaled"
    node2 = type(node)()
    node2.CopyFrom(node)
    del node2.output[:]
    node2.output.append(name)
    im.broadcast(node2, [t, cst],
                   lambda p, q, numpy=False: p * q if numpy else f"({p}) * {q}")
    return im.env[name]


HANDLERS = {
    "MatMul": op_MatMul,
    "Gemm": op_Gemm,
}
