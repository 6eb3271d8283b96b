"""inline_bindings: an elementwise binding that one later expression reads once is computed
where it is read, for the lane kernels of the batch entry points (extract/emit/sources.py).

Reverse-mode AD leaves chains of elementwise gradients: the gradient of an average pool
spreads ``d_s1`` over the pooled window, and the logistic's gradient multiplies that by
``c1 * (1 - c1)``. Each is a pass over a buffer of the group's size (the CNN's ``d_c1``: 3,456
elements per sample, 221 KB a group of 16), written once and read once. Here the reader
computes it.

Before::

    d_c1  = imap i. d_s1[i / 2] / 4                    -- read by d_c11 alone
    d_c11 = (d_c1 * c1) * (one + -c1)

After (``d_c1`` is no longer an array of the lane kernels)::

    d_c11 = ((imap i. d_s1[i / 2] / 4) * c1) * (one + -c1)

A binding is inlined when

- its expression has no ``sum`` (no loop of its own: the reader's loops compute it, and no
  reduction is moved or repeated);
- it is neither an output the entry points read (the loss, the prediction: the last binding
  where the dump names none) nor a parameter's gradient;
- the expressions after it read it exactly once (counted after ``share_bindings``, as the
  lowering reads them: AD's copies of ``logistic(z1)`` in a gradient are reads of ``h``), and
  the reader has no ``sum`` and at most as many elements: the expression is evaluated at most
  as often as its own loop nest would have, and no reduction of the reader moves (a guard
  the substituted expression brings, ``select(c, a) * b`` folded to ``select(c, a * b)``, would
  otherwise pin a loop-invariant sum of the reader under it, lower.py's ``place``).

A binding's expression is closed (no free index variable, §3 of docs/dump-format.md), so the
substitution is valid under any binder of the reader. Each element is computed by the same
operations in the same order, with two exceptions where the compiler now sees them together:
with ``-ffp-contract=fast`` a product in the binding and a sum in the reader may become one
FMA, and a guarded zero of the binding times an infinity of the reader gives 0, not NaN (the
fold above). The three zoo models' batch gradients and predictions are bitwise those without
the pass (``tests/test_extract_numerics.py`` checks the CNN's). The one-sample functions
(``M_forward``, ``M_backward``) and the CUDA kernels keep every binding: their structs are the
C API.
"""
from __future__ import annotations

import dataclasses

from ..ir import ir
from .share import share_bindings


def _has_sum(e: ir.Node) -> bool:
    return isinstance(e, ir.Sum) or any(_has_sum(c) for c in e.children())


def _read(e: ir.Node, name: str) -> bool:
    return isinstance(e, ir.Var) and e.name == name and e.kind in ("chain", "grad")


def _read_map(e: ir.Node) -> dict:
    """Every array ``e`` reads, with whether each read is under a ``sum``, in order: name ->
    [under a sum?, …]; one walk per expression (a walk per binding and reader was quadratic:
    ResNet-50's 24 s)."""
    out: dict = {}
    stack = [(e, False)]
    while stack:
        t, under = stack.pop()
        if isinstance(t, ir.Var) and t.kind in ("chain", "grad"):
            out.setdefault(t.name, []).append(under)
            continue
        under = under or isinstance(t, ir.Sum)
        stack.extend((c, under) for c in reversed(t.children()))
    return out


def _subst(e: ir.Node, name: str, by: ir.Node) -> ir.Node:
    return ir.rewrite(e, lambda t: by if _read(t, name) else None)


def inline_bindings(model: ir.Model) -> tuple[ir.Model, tuple[tuple[str, str], ...]]:
    """The model with every eligible binding (module doc) computed where it is read, and the
    pairs (binding, its reader) in model order (a reader may itself be inlined later)."""
    out, done = _inline(model)
    return out, tuple(done)


def _inline(original: ir.Model):
    # reads are counted as the lowering will see them: after share_bindings, where AD's copies
    # of a forward subterm (logistic(z1) in d_z1) read the binding instead
    model = share_bindings(original)
    keep = {name for _, name in model.outputs} | {model.chain[-1].name} | \
        {model.param_gradient(p.name).name for p in model.params}
    entries = [*model.chain, *model.gradients]
    reads = [_read_map(b.expr) for b in entries]    # parallel to entries
    sums = [_has_sum(b.expr) for b in entries]
    alive = [True] * len(entries)
    # name -> the entries that read it: a scan of every later entry per binding was
    # quadratic (a 6,000-binding chain: 72 M lookups)
    readers: dict = {}
    for j, r in enumerate(reads):
        for name in r:
            readers.setdefault(name, set()).add(j)
    done = []
    for k, b in enumerate(entries):
        if b.name in keep or sums[k]:
            continue
        uses = [(j, u) for j in sorted(readers.get(b.name, ())) if j > k and alive[j]
                for u in reads[j][b.name]]
        if len(uses) != 1 or uses[0][1] or sums[uses[0][0]] or \
                ir.size(entries[uses[0][0]].shape) > ir.size(b.shape):
            continue
        j = uses[0][0]
        entries[j] = dataclasses.replace(entries[j],
                                         expr=_subst(entries[j].expr, b.name, b.expr))
        for name in reads[j]:
            readers[name].discard(j)
        reads[j] = _read_map(entries[j].expr)
        for name in reads[j]:
            readers.setdefault(name, set()).add(j)
        done.append((b.name, entries[j].name))
        alive[k] = False
    entries = [b for b, a in zip(entries, alive) if a]
    if not done:
        return original, done
    chain = {b.name for b in model.chain}
    out = dataclasses.replace(model, chain=tuple(b for b in entries if b.name in chain),
                              gradients=tuple(b for b in entries if b.name not in chain),
                              arrays={})
    out.arrays.update({a.name: a for a in (*out.context, *out.chain, *out.gradients)})
    return out, done
