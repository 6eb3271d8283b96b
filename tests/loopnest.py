"""Helpers for tests that build loop IR by hand (extract/code.py): affine offsets, perfect
nests, and the order of a nest's loops."""
from __future__ import annotations

from extract.code import Affine, For


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
