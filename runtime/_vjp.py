"""Derived model files for ``runtime.torch``: the vector-Jacobian products of a model's output.

A dump differentiates one scalar, the model's ``loss``, seeded with 1, and it has a gradient
for every parameter and every chain binding, none for an input (docs/dump-format.md §2). A
PyTorch module needs more: the gradient of ``<output, g>`` for any upstream gradient ``g`` of
the output, with respect to the parameters and, when the input requires a gradient, to the
input. Both come from a model file derived from the user's, elaborated and differentiated by
Agda like any other (so the proved ``∇`` and ``opt`` make these gradients too):

    model lenet5                         model lenet5_vjp
    input  x : 28x28                     input  x : 28x28
    target y : 10                        param  k1 : 6x5x5   ...
    param  k1 : 6x5x5   ...        ->    input  g_z5 : 10
    ...                                  ...                     (the output's ancestors)
    output z5 = dense(w5, a4, b5)        output z5 = dense(w5, a4, b5)
    m  = maxall(z5)  ...                 loss vjp_ = sum i : 10 . z5[i] * g_z5[i]
    loss loss = ...

With ``wrt_input=True`` the features input is renamed and bound again as the first binding
(``x = x_in + 0``), so the reverse pass has a gradient ``d_x`` per sample, which the one-sample
``M_backward`` writes (the batch kernels average parameter gradients only).

The rewrite is textual, statement by statement: comments dropped, continuation lines joined,
each binding's names found by a regular expression; bindings the output does not depend on
(the loss, and what only the loss reads) are left out, and a target the output does not read
too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DECL = ("input", "target", "param", "const")


@dataclass(frozen=True)
class Statement:
    kind: str   # model, input, target, param, const, binding, output, loss
    name: str
    rest: str   # a declaration's shape, a binding's expression


def _strip_comment(line: str) -> str:
    cut = [i for i in (line.find("--"), line.find("#")) if i >= 0]
    return line[: min(cut)] if cut else line


def statements(text: str) -> list[Statement]:
    """The statements of a model file: one per line that starts a statement, its
    continuation lines (starting with white space) joined to it, comments removed."""
    joined: list[str] = []
    for raw in text.splitlines():
        line = _strip_comment(raw)
        if not line.strip():
            continue
        if line[0].isspace() and joined:
            joined[-1] += " " + line.strip()
        else:
            joined.append(line.strip())
    out = []
    for s in joined:
        words = s.split(None, 1)
        if words[0] == "model":
            out.append(Statement("model", words[1].strip(), ""))
            continue
        if words[0] in _DECL and len(words) > 1 and ":" in words[1] and _NAME.match(words[1]):
            name, shape = words[1].split(":", 1)
            out.append(Statement(words[0], name.strip(), shape.strip()))
            continue
        kind = "binding"
        if words[0] in ("output", "loss") and len(words) > 1 and _NAME.match(words[1]):
            kind, s = words[0], words[1]
        if "=" not in s:
            raise ValueError(f"cannot read the statement {s!r}")
        name, expr = s.split("=", 1)
        out.append(Statement(kind, name.strip(), expr.strip()))
    return out


def _fresh(base: str, taken: set[str]) -> str:
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}{k}"
    taken.add(name)
    return name


@dataclass(frozen=True)
class Derived:
    text: str            # the model file
    name: str            # its model's name
    features: str        # the input the samples are given in
    grad_input: str      # the input that takes the upstream gradient of the output
    output: str          # the output binding
    input_grad: str | None  # the gradient entry (d_x) of the features, with wrt_input


def vjp_model(text: str, features: str, output: str, output_shape: tuple[int, ...],
              wrt_input: bool = False) -> Derived:
    """The model file whose loss is ``sum i : S . output[i] * g[i]`` (see the module's
    docstring). ``features``: the input the samples are; ``output``: the output binding,
    of leaf shape ``output_shape``."""
    sts = statements(text)
    names = {s.name for s in sts}
    bindings = {s.name: s for s in sts if s.kind in ("binding", "output", "loss")}
    if output not in bindings:
        raise ValueError(f"the model has no binding {output!r}")
    # the output's ancestors among the bindings, and the declarations they read
    need, todo = set(), [output]
    while todo:
        b = todo.pop()
        if b in need:
            continue
        need.add(b)
        for ref in _NAME.findall(bindings[b].rest):
            if ref in bindings and ref not in need:
                todo.append(ref)
    read = {ref for b in need for ref in _NAME.findall(bindings[b].rest)}
    model = next(s.name for s in sts if s.kind == "model")
    taken = set(names)
    name = _fresh(f"{model}_vjp{'x' if wrt_input else ''}", taken)
    g = _fresh(f"g_{output}", taken)
    loss = _fresh("vjp_", taken)
    idx = _fresh("i", taken)
    raw = _fresh(f"{features}_in", taken) if wrt_input else None
    shape = "x".join(map(str, output_shape)) or "1"
    lines = [f"model {name}"]
    for s in sts:
        if s.kind in _DECL:
            if s.kind in ("input", "target") and s.name not in read and s.name != features:
                continue   # the target, which only the loss reads
            kind = "input" if s.kind == "target" else s.kind
            lines.append(f"{kind} {raw if s.name == features and raw else s.name} : {s.rest}")
    lines.append(f"input {g} : {shape}")
    if raw:
        lines.append(f"{features} = {raw} + 0")
    for s in sts:
        if s.name in need:
            lines.append(f"{'output ' if s.name == output else ''}{s.name} = {s.rest}")
    lines.append(f"loss {loss} = sum {idx} : {shape} . {output}[{idx}] * {g}[{idx}]")
    return Derived("\n".join(lines) + "\n", name, raw or features, g, output,
                   f"d_{features}" if raw else None)
