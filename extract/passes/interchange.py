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

Then, when the innermost loop runs along the output but the output block written by the
innermost loops is too large to stay in registers (more than ``TILE`` elements), a short
reduction loop right outside that block (one the output does not move along, of extent <=
``SHORT``, every read of stride 0 or 1 and one of stride 1) moves to just outside the innermost
loop: the compiler unrolls the pair, and the few outputs of the innermost loop are loaded and
stored once per pass over the short loop instead of once per term (measured on the CNN's
``d_k2`` and ``c11``: see bench/PROFILE.md).

Before (``d_k2``; 6*5*5 = 150 outputs touched per (t2_1, t2_2))::

    for t2_1 < 8:  for t2_2 < 8:  for i1_0 < 6:  for i1_1 < 5:  for i1_2 < 5:
        y[i1_0 * 25 + i1_1 * 5 + i1_2] +=
            d[t2_1 * 8 + t2_2] * x[i1_0 * 144 + (t2_1 + i1_1) * 12 + t2_2 + i1_2];

After (5 outputs held across the 8 iterations of t2_2)::

    for t2_1 < 8:  for i1_0 < 6:  for i1_1 < 5:  for t2_2 < 8:  for i1_2 < 5:
        (same statement)

Both moves are legal when no loop inside the moved one has bounds that mention its variable;
each output element receives the same terms. The relative order of the loops the output does
not move along is kept, so an element whose terms come from those loops alone receives them in
the same order; otherwise the term order is fixed by the new nest (deterministic, so results
stay bitwise reproducible for a build). Only applied to loops along which every array read has
stride 0 or 1 (the first move: of extent >= 4). Not applied to CUDA kernels (their parallel
loops are threads).
"""
from __future__ import annotations

from ..ir.code import For, If, Store, load_nodes

TILE = 64       # output elements the innermost loops may touch per iteration of the loops outside
SHORT = 8       # a reduction loop this short is unrolled with the innermost loop inside it


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
            reads = load_nodes(st.value)
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
        loops = _hold_outputs(loops, st)
    out = tuple(body)
    for loop in reversed(loops):
        out = (For(loop.var, out, loop.parallel, loop.lo, loop.hi),)
    return out[0]


def _movable(loops: list, n: int) -> bool:
    """loops[n] has no extra bounds and no loop inside it has bounds that mention it."""
    cand = loops[n]
    return not (cand.lo or cand.hi) and not any(
        cand.var in a.ivars() for m in loops[n + 1:] for a in (*m.lo, *m.hi))


def _hold_outputs(loops: list, st: Store) -> list:
    """The second move of the module doc: a short reduction loop just outside the innermost."""
    inner = loops[-1]
    if inner.lo or inner.hi or _stride(st.offset, inner.var) != 1:
        return loops
    tile, n = inner.var.extent, len(loops) - 2
    while n >= 0 and _stride(st.offset, loops[n].var) not in (0, None):
        tile *= loops[n].var.extent
        n -= 1
    if tile <= TILE:
        return loops
    if n < 0:
        return loops
    # the reduction loop right outside the output block: moving it keeps the order of the
    # reduction loops, so each output element receives its terms in the same order
    v, reads = loops[n].var, load_nodes(st.value)
    if _stride(st.offset, v) != 0 or not 2 <= v.extent <= SHORT or not _movable(loops, n):
        return loops
    if any(_stride(ld.offset, v) not in (0, 1) for ld in reads) or \
            not any(_stride(ld.offset, v) == 1 for ld in reads):
        return loops
    return loops[:n] + loops[n + 1:-1] + [loops[n], inner]


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
