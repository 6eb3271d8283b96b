"""interchange_loops: in a perfect loop nest that accumulates into an output (``+=``), move a
loop along which the output is contiguous to the innermost position when the innermost loop
does not move the output (a chain of dependent additions into one element, which neither
pipelines nor vectorises).

Before (``d_k1[t0][t1] += Σ_t2 ...``; t2 innermost, the store fixed along it)::

    for t0 < 6:  for t1 < 5:  for t2 < 24:
        y[t0 * 5 + t1] += d[t0 * 24 + t2] * x[t1 + t2];

After (t1 innermost: consecutive outputs, unit-stride inputs)::

    for t0 < 6:  for t2 < 24:  for t1 < 5:
        y[t0 * 5 + t1] += d[t0 * 24 + t2] * x[t1 + t2];

Legal when no loop inside the moved one has bounds that mention its variable; each output
element receives the same terms, and a term order fixed by the new nest (deterministic, so
results stay bitwise reproducible for a build). Only applied to loops of extent >= 4 along
which every array read has stride 0 or 1. Not applied to CUDA kernels (their parallel loops
are threads).
"""
from __future__ import annotations

from .code import For, If, Load, Store


def _loads(e) -> list:
    from . import code as c
    if isinstance(e, Load):
        return [e]
    if isinstance(e, (c.Lit, c.Local)):
        return []
    if isinstance(e, (c.Add, c.Mul)):
        return _loads(e.a) + _loads(e.b)
    if isinstance(e, c.Select):
        return _loads(e.a)
    if isinstance(e, c.Reduce):
        return _loads(e.body)
    return _loads(e.a)


def _stride(offset, v) -> int | None:
    k = offset.coeff(v)
    if k == 0 and v in offset.ivars():
        return None            # under div / mod
    return k


def _nest(s: For):
    loops, cur = [], s
    while True:
        loops.append(cur)
        if len(cur.body) == 1 and isinstance(cur.body[0], For):
            cur = cur.body[0]
        else:
            break
    body = interchange_loops(loops[-1].body)
    if len(loops) >= 2 and len(body) == 1 and isinstance(body[0], Store) and body[0].op == "+=":
        st = body[0]
        inner = loops[-1].var
        if _stride(st.offset, inner) == 0:
            reads = _loads(st.value)
            for n in range(len(loops) - 2, -1, -1):
                cand = loops[n]
                v = cand.var
                if cand.lo or cand.hi or v.extent < 4 or _stride(st.offset, v) != 1:
                    continue
                if any(_stride(ld.offset, v) not in (0, 1) for ld in reads):
                    continue
                if any(v in a.ivars() for m in loops[n + 1:] for a in (*m.lo, *m.hi)):
                    continue
                loops = loops[:n] + loops[n + 1:] + [cand]
                break
    out = tuple(body)
    for loop in reversed(loops):
        out = (For(loop.var, out, loop.parallel, loop.lo, loop.hi),)
    return out[0]


def interchange_loops(stmts) -> tuple:
    out = []
    for s in stmts:
        if isinstance(s, For):
            out.append(_nest(s))
        elif isinstance(s, If):
            out.append(If(s.cond, interchange_loops(s.body)))
        else:
            out.append(s)
    return tuple(out)
