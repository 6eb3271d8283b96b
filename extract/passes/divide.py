"""divide_among_threads: the kernels of a group that the threads of a batch share.

The batch entry points give each thread whole groups of ``M_LANES`` samples; where what is
left of the batch fits in a group of half the width (extract/passes/lanes.py: 4 samples of a batch
of 100 at 16 lanes), every thread calls the half-width kernels on that one group, and each
kernel divides its work among them (``part`` of ``nparts``) instead of one thread running it
while the others wait. This pass, the last on those kernels, decides how: a top-level loop
whose iterations own disjoint regions of what the kernel writes becomes ``Divided`` (thread
``part`` runs iterations ``[n * part / nparts, n * (part + 1) / nparts)``), or else the first
such loop of a perfect nest (every thread runs the loops around it); every other
top-level statement runs on thread 0 alone (``OnePart``); a ``Barrier`` separates two parts
of a kernel (the batch entry points put one after every kernel). A loop is divided when

- every store into an array (not a local buffer of the loop) has the offset
  ``c * v + k + (inner loops' terms)``, with one ``c != 0`` per array, and the constants and
  inner terms of all its stores span fewer than ``|c|`` elements: iteration ``v`` writes
  inside ``c * v + [lo, hi]``, which no other iteration touches (the border nests of a
  padded convolution write the same window at other constants);
- every load of such an array is of the same form and inside that window: an iteration reads
  what it writes, never another's;
- it assigns no scalar local declared outside it (an argmax's position and largest value
  included), no loop inside it reuses a variable in scope, and it is not the loop over the
  lanes.

Buffers at the top of a kernel, and the loops after them that fill only those buffers from
arrays the kernel does not write, come first and run on every thread, each filling its own
copy, when no later statement writes those buffers and the rest of the kernel has a divided
loop (extract/passes/winograd.py's transformed rows: the CNN's ``c21`` is then divided among its
output channels). A kernel that declares a local, a buffer or an argmax's position at its top
level otherwise runs on thread 0 whole. Each
element is computed by one thread with the terms and the order of the undivided kernel, so
the values are bitwise those of one thread.

Before::

    for i0 < 6: for j < 64: for l < 8: y[i0 * 512 + j * 8 + l] = x[j * 8 + l] * w[i0]
    z[0] = 1

After::

    Divided(for i0 < 6: ...)
    Barrier
    OnePart(z[0] = 1)
"""
from __future__ import annotations

from ..ir.code import (Acc, ArgDecl, ArgStep, Assign, Barrier, Buffer, Comment, Decl, Divided, For,
                   If, IVar, OnePart, Store, load_nodes)


def _window(offset, v: IVar, inner: set):
    """``(c, k, lo, hi)``: iteration v touches ``offset`` inside ``c * v + k + [lo, hi]``;
    None where another variable than v and the inner loops' occurs, or v inside a div/mod."""
    lo = hi = 0
    for a, n in offset.terms:
        if isinstance(a, IVar):
            if a == v:
                continue
            if a not in inner:
                return None
        elif v in a.a.ivars() or not a.a.ivars() <= inner:
            return None
        alo, ahi = a.range
        lo, hi = lo + min(n * alo, n * ahi), hi + max(n * alo, n * ahi)
    return offset.coeff(v), offset.const, lo, hi


def _walk(stmts, inner: set, private: set, writes: list, reads: list) -> bool:
    """Collect the stores and loads of ``stmts`` (inner: the loops inside the divided one, the
    divided one's variable first; private: the locals and buffers in scope, declared inside
    it); False where it assigns a local from outside, or a loop reuses a variable in scope."""
    private = set(private)          # a block's declarations are its own
    for s in stmts:
        if isinstance(s, For):
            if s.var in inner or s.var.name in {v.name for v in inner}:
                return False
            if not _walk(s.body, inner | {s.var}, private, writes, reads):
                return False
        elif isinstance(s, If):
            if not _walk(s.body, inner, private, writes, reads):
                return False
        elif isinstance(s, (Decl, Buffer, ArgDecl)):
            private.add(s.name)
            if isinstance(s, Decl):
                reads.extend((x, frozenset(inner), frozenset(private))
                             for x in load_nodes(s.value))
        elif isinstance(s, (Acc, Assign)):
            if s.name not in private:
                return False
            reads.extend((x, frozenset(inner), frozenset(private))
                         for x in load_nodes(s.value))
        elif isinstance(s, ArgStep):        # an argmax loop's position and value: its own
            if s.index not in private or s.top not in private:
                return False
            reads.extend((x, frozenset(inner), frozenset(private))
                         for x in load_nodes(s.value))
        elif isinstance(s, Store):
            if s.array not in private:
                writes.append((s.array, s.offset, frozenset(inner)))
            reads.extend((x, frozenset(inner), frozenset(private))
                         for x in load_nodes(s.value))
        elif not isinstance(s, Comment):
            return False
    return True


def divisible(loop: For, lane: IVar | None = None) -> bool:
    """Whether the iterations of ``loop`` own disjoint regions of what it writes (above)."""
    if loop.var == lane or loop.var.extent < 2:
        return False
    v = loop.var
    writes, reads = [], []
    if not _walk(loop.body, {v}, set(), writes, reads) or not writes:
        return False
    region = {}                     # array -> (c, lo, hi): iteration v in c * v + [lo, hi]
    for array, offset, inner in writes:
        w = _window(offset, v, inner - {v})
        if w is None or w[0] == 0:
            return False
        c, lo, hi = w[0], w[1] + w[2], w[1] + w[3]
        if array in region:
            if region[array][0] != c:
                return False
            lo, hi = min(lo, region[array][1]), max(hi, region[array][2])
        region[array] = (c, lo, hi)
    if any(hi - lo >= abs(c) for c, lo, hi in region.values()):
        return False
    for load, inner, private in reads:
        if load.array in private or load.array not in region:
            continue
        c, lo, hi = region[load.array]
        w = _window(load.offset, v, inner - {v})
        if w is None or w[0] != c or w[1] + w[2] < lo or w[1] + w[3] > hi:
            return False
    return True


def _divide(loop: For, lane: IVar | None):
    """``loop`` with a ``Divided`` loop in it, or None: the loop itself if it is divisible,
    else the one loop of its body, and so on. A divided inner loop runs every iteration of
    the loops around it on every thread, its own share of its iterations each time: that is
    sound because the offsets of what it writes and reads mention none of those loops (a
    convolution's input gradient: the output channels inside the loop over the channels it
    sums)."""
    if divisible(loop, lane):
        return Divided(loop)
    if len(loop.body) == 1 and isinstance(loop.body[0], For):
        inner = _divide(loop.body[0], lane)
        if inner is not None:
            return For(loop.var, (inner,), loop.parallel, loop.lo, loop.hi)
    return None


def _own(stmts) -> int:
    """How many leading statements are buffers and loops that write only those buffers from
    what the kernel does not write (the transformed rows of extract/passes/winograd.py), where no
    later statement writes those buffers: every thread fills its own copy, the same."""
    buffers, written = set(), set()
    _writes_of(stmts, written)
    n = 0
    for s in stmts:
        if isinstance(s, Buffer):
            buffers.add(s.name)
        else:
            writes, reads = [], []
            if not (isinstance(s, For) and _walk(s.body, {s.var}, set(), writes, reads)
                    and all(array in buffers for array, _, _ in writes)
                    and all(x.array in buffers or x.array in private
                            or x.array not in written for x, _, private in reads)):
                break
        n += 1
    later = set()
    _writes_of(stmts[n:], later)
    return 0 if later & buffers else n


def _writes_of(stmts, out: set) -> None:
    for s in stmts:
        if isinstance(s, (For, If)):
            _writes_of(s.body, out)
        elif isinstance(s, Store):
            out.add(s.array)


def divide_among_threads(stmts, lane: IVar | None = None) -> tuple:
    """A kernel body as parts for the threads of a shared group (see the module doc);
    ``lane``: the loop over the samples of a group, never divided."""
    own = _own(stmts)
    if own:
        rest = divide_among_threads(stmts[own:], lane)
        if any(isinstance(p, Divided) or isinstance(p, For) for p in rest):
            return (*stmts[:own], *rest)
        return (OnePart(tuple(stmts)),)     # nothing divided: thread 0 alone, as before
    if any(isinstance(s, (Decl, Buffer, Acc, Assign, ArgDecl)) for s in stmts):
        return (OnePart(tuple(stmts)),)
    parts, alone = [], []
    for s in stmts:
        divided = _divide(s, lane) if isinstance(s, For) else None
        if divided is not None:
            if alone:
                parts.append(OnePart(tuple(alone)))
                alone = []
            parts.append(divided)
        else:
            alone.append(s)
    if alone:
        parts.append(OnePart(tuple(alone)))
    out = []
    for p in parts:
        if out:
            out.append(Barrier())
        out.append(p)
    return tuple(out)
