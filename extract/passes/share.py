"""share_bindings: read a chain binding instead of recomputing its expression.

Reverse-mode AD copies forward subterms into the gradients: the adjoint of
``c1 = logistic(c11)`` is ``d_c1 * logistic(c11) * (1 - logistic(c11))``. Every later subterm
equal to the expression of a chain binding is replaced by a read of that binding (which is in
scope there, §3 of docs/dump-format.md, and holds exactly that value).

Before::

    c1   = logistic(c11)
    d_c11 = (d_c1 * logistic(c11)) * (one + -logistic(c11))

After::

    c1   = logistic(c11)
    d_c11 = (d_c1 * c1) * (one + -c1)

Only closed subterms can match (a binding's expression has no free index variable), so the
replacement is valid under any binder.
"""
from __future__ import annotations

import dataclasses

from ..ir import ir


def _replace(e: ir.Node, table: dict, kinds: set):
    return ir.rewrite(e, lambda t: table.get(t) if (type(t), t.shape) in kinds else None)


def share_bindings(model: ir.Model) -> ir.Model:
    table: dict = {}
    kinds: set = set()
    chain = []
    for b in model.chain:
        expr = _replace(b.expr, table, kinds) if table else b.expr
        chain.append(dataclasses.replace(b, expr=expr))
        if not isinstance(b.expr, ir.Var):
            table.setdefault(b.expr, ir.Var(b.shape, b.name, "chain", "ar"))
            kinds.add((type(b.expr), b.expr.shape))
    grads = [dataclasses.replace(g, expr=_replace(g.expr, table, kinds)) for g in model.gradients]
    out = dataclasses.replace(model, chain=tuple(chain), gradients=tuple(grads), arrays={})
    out.arrays.update({a.name: a for a in (*out.context, *out.chain, *out.gradients)})
    return out
