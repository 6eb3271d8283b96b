"""Helpers for tests that build loop IR by hand (extract/ir/code.py): affine offsets, perfect
nests, and the order of a nest's loops."""
from __future__ import annotations

from extract.ir import code as c
from extract.ir.code import Affine, Buffer, For, Load, Mul, Store


def aff(*terms, const: int = 0) -> Affine:
    """``aff((i, 4), (j, 1), const=2)`` is ``4*i + j + 2``."""
    out = Affine.of(const)
    for v, k in terms:
        out = out + Affine.of(v).scale(k)
    return out


def nest(loops, store):
    """The perfect nest of ``loops`` (outermost first) around one statement."""
    body = (store,)
    for v in reversed(loops):
        body = (For(v, body),)
    return body[0]


def order(stmt) -> list:
    """The names of the loops of a nest, following the first statement of each body."""
    out = []
    while isinstance(stmt, For):
        out.append(stmt.var.name)
        stmt = stmt.body[0]
    return out


def run(stmts, out: str) -> dict:
    """Execute statements over sequences: an element of ``out`` or of a buffer holds the list
    of terms added to it, in order; ``a[i] * b[j]`` is the term ``(i, j)``. Loops run over
    their bounds (``For.lo``, ``For.hi``), guards (``If``: ``a >= 0``, ``a == 0``) hold or
    skip their body."""
    mem: dict = {}

    def value(e, env):
        if isinstance(e, Load):
            i = e.offset.subst(env).const
            if e.array == out or e.array in buffers:
                return list(mem.get((e.array, i), []))
            return (e.array, i)
        if isinstance(e, Mul):
            return (value(e.a, env), value(e.b, env))
        if isinstance(e, c.Lit):
            return ("lit", e.value)
        raise TypeError(e)
    buffers: set = set()

    def exec_(ss, env):
        for s in ss:
            if isinstance(s, For):
                lo = max([0, *(b.subst(env).const for b in s.lo)])
                hi = min([s.var.extent, *(b.subst(env).const for b in s.hi)])
                for k in range(lo, hi):
                    exec_(s.body, {**env, s.var: Affine.of(k)})
            elif isinstance(s, c.If):
                if all(x if isinstance(x, bool) else
                       (x.a.subst(env).const >= 0 if x.op == "ge" else x.a.subst(env).const == 0)
                       for x in s.cond):
                    exec_(s.body, env)
            elif isinstance(s, Buffer):
                buffers.add(s.name)
            elif isinstance(s, Store):
                key = (s.array, s.offset.subst(env).const)
                v = value(s.value, env)
                if s.op == "=":
                    mem[key] = v if isinstance(v, list) else [v]
                else:
                    mem.setdefault(key, []).append(v)
            else:
                raise TypeError(s)
    exec_(stmts, {})
    return {k[1]: v for k, v in mem.items() if k[0] == out}
