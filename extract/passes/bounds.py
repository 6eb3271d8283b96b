"""tighten_bounds: turn range guards on loop variables into loop bounds, and loops whose body
runs at one point only into that point.

Before::

    for (int j = 0; j < 12; j++) {
        if (j >= t && j < t + 8 && i == u) {
            y[j] += x[j - t];
        }
    }

After::

    if (i == u) {
        for (int j = t; j < t + 8; j++) {
            y[j] += x[j - t];
        }
    }

and ``for (j < 12) { if (j == t) { y[j] += a; } }`` becomes ``y[t] += a;`` (with the guard
``0 <= t < 12`` kept when it does not always hold). A guard applies to a loop when it is the
only statement of the loop body; constraints with a coefficient ±1 on the loop variable become
bounds, and so do those with another coefficient where the bound is a division of a value that
is never negative (``2*t + a - 1 >= 0``, a stride-2 convolution's border, is ``t >= (2 - a) div
2``: C's division and the floor agree there); the others move out of the loop when they do not
mention its variable. Parallel loops
are left alone when they are thread indices (CUDA): ``threads=True``.
"""
from __future__ import annotations

from ..ir.code import (Affine, Cmp, For, IDiv, If, IVar, cmp_eq, conj, div_mod_point, div_mod_side,
                       in_range, subst_stmts)


def _normalise(cond: tuple) -> tuple:
    """Pairs ``a >= 0`` and ``-a >= 0`` become ``a == 0``."""
    out, used = [], set()
    for n, c in enumerate(cond):
        if n in used:
            continue
        if c.op == "ge":
            neg = -c.a
            for m in range(n + 1, len(cond)):
                d = cond[m]
                if m not in used and d.op == "ge" and d.a == neg:
                    used.add(m)
                    eq = cmp_eq(c.a)
                    c = eq if isinstance(eq, Cmp) else c
                    break
        out.append(c)
    return tuple(out)


def _tighten_for(s: For, threads: bool) -> list:
    body = tighten_bounds(s.body, threads)
    v = s.var
    if not (len(body) == 1 and isinstance(body[0], If)) or (s.parallel and threads):
        return [For(v, body, s.parallel, s.lo, s.hi)] if body else []
    guard = body[0]
    cond = _normalise(guard.cond)
    # a point: v == e
    for c in cond:
        k = c.a.coeff(v)
        rest_a = c.a - Affine.of(v).scale(k)
        if c.op == "eq" and abs(k) == 1 and v not in rest_a.ivars() and not s.lo and not s.hi:
            value = rest_a.scale(-k)
            m = {v: value}
            rest = tuple(x for x in cond if x is not c)
            where = conj(in_range(value, v.extent), *(cmp_eq(x.a.subst(m)) if x.op == "eq"
                                                      else _ge(x.a.subst(m)) for x in rest))
            if where is False:
                return []
            inner = subst_stmts(guard.body, m)
            return list(inner) if where is True else [If(where, inner)]
    # a point: v div d == X and v mod d == Y  ->  v == d*X + Y
    point = None if (s.lo or s.hi) else div_mod_point(cond, v)
    if point is not None:
        m = {v: point}
        where = conj(in_range(point, v.extent), *(cmp_eq(x.a.subst(m)) if x.op == "eq"
                                                  else _ge(x.a.subst(m)) for x in cond))
        if where is False:
            return []
        inner = subst_stmts(guard.body, m)
        return list(inner) if where is True else [If(where, inner)]
    lo, hi, keep, outside = list(s.lo), list(s.hi), [], []
    for c in cond:
        k = c.a.coeff(v)
        rest_a = c.a - Affine.of(v).scale(k)
        if v not in c.a.ivars():
            outside.append(c)
        elif v in rest_a.ivars():
            block = _block_bounds(c, v)
            if block is None:
                keep.append(c)
            else:
                lo.append(block[0])
                hi.append(block[1])
        elif c.op == "ge" and k == 1:           # v + r >= 0  ->  v >= -r
            lo.append(-rest_a)
        elif c.op == "ge" and k == -1:          # -v + r >= 0 ->  v < r + 1
            hi.append(rest_a + Affine.of(1))
        elif c.op == "ge" and k > 1 and (Affine.of(k - 1) - rest_a).range[0] >= 0:
            # k*v + r >= 0 -> v >= ceil(-r / k) = (k - 1 - r) div k, a division of a value
            # never negative (C's and the floor's agree): a strided convolution's border
            lo.append(Affine.of(IDiv(Affine.of(k - 1) - rest_a, k)))
        elif c.op == "ge" and k < -1 and rest_a.range[0] >= 0:
            # -k*v + r >= 0 -> v <= r div k, r never negative
            hi.append(Affine.of(IDiv(rest_a, -k)) + Affine.of(1))
        else:
            keep.append(c)
    lo = [a for a in lo if a.range[1] > 0]            # drop bounds that never bind
    hi = [a for a in hi if a.range[0] < v.extent]
    inner = (If(tuple(keep), guard.body),) if keep else guard.body
    if len(lo) == 1 and len(hi) == 1 and (hi[0] - lo[0]).is_const and lo[0].range[0] >= 0 \
            and hi[0].range[1] <= v.extent:
        # for v in [e, e + n): count from 0 instead, v = w + e (a constant trip count)
        n = (hi[0] - lo[0]).const
        if n <= 0:
            return []
        w = IVar(v.name, n, v.rank)
        body2 = subst_stmts(inner, {v: Affine.of(w) + lo[0]})
        loop = For(w, body2, s.parallel)
        return [If(tuple(outside), (loop,))] if outside else [loop]
    loop = For(v, tuple(inner), s.parallel, tuple(lo), tuple(hi))
    return [If(tuple(outside), (loop,))] if outside else [loop]


def _block_bounds(c: Cmp, v):
    """``X == (v + r) div d`` (v only there) gives ``d*X - r <= v < d*X - r + d``."""
    side = div_mod_side(c, v, IDiv)
    if side is None:
        return None
    x, r, d = side
    low = x.scale(d) - r
    return low, low + Affine.of(d)


def _ge(a: Affine):
    from ..ir.code import cmp_ge
    return cmp_ge(a)


def tighten_bounds(stmts, threads: bool = False) -> tuple:
    out = []
    for s in stmts:
        if isinstance(s, For):
            out.extend(_tighten_for(s, threads))
        elif isinstance(s, If):
            body = tighten_bounds(s.body, threads)
            if body:
                out.append(If(s.cond, body))
        else:
            out.append(s)
    return tuple(out)
