"""The one mapping from the names a user chooses (model, inputs, parameters, consts, bindings,
gradients) to the identifiers and file names of the generated C and CUDA.

A user's name is never written into C as it is: ``int``, ``errno``, ``NAN``, ``main``,
``printf`` or ``alloca`` are good names for an array, and a model called ``stdlib`` or ``Python``
would otherwise write ``stdlib.h`` or ``Python.h`` over the headers the build includes. So:

    model  NAME  ->  model_NAME         (model_stdlib_forward, model_stdlib_params, model_stdlib.h)
    array  NAME  ->  a<len>_NAME         (int -> a3_int, errno -> a5_errno, z1_lanes -> a8_z1_lanes)

Why it cannot collide:

- with C/C++/CUDA keywords, libc, libm, OpenMP, CUDA or Python's names and macros: every
  generated name a user's name reaches begins ``model_`` or ``a<digits>_``, and no header the build
  includes declares or defines such a name (``tests/test_names.py`` preprocesses them all and
  checks);
- with the generator's own identifiers (``w``, ``x``, ``sample``, ``real``, ``vload``, loop
  variables ``i0``, ``t1``, ...): none of them begins so, but an argmax's position leaves
  (``a2_0``, ``a2_1_p``), whose part after ``a<digits>_`` begins with a digit, as no name does;
- with each other: the length makes an array's identifier end where its name ends, so a kernel
  ``model_M_forward_a2_z1_lanes`` (binding ``z1``, its lane kernel) is not binding ``z1_lanes``'s
  (``model_M_forward_a8_z1_lanes``), and distinct names give distinct identifiers.

The user's names stay in messages and in the Python API: ``runtime`` reads the C layout back
through ``user_array``. The mapping is applied once, to the IR (``to_c``, by ``sources.generate``)
and to a dump's JSON (``dump_to_c``, by ``validate``); everything after it sees C names only.

This module imports ``ir`` alone.
"""
from __future__ import annotations

import re
from dataclasses import replace

from . import ir

MODEL_PREFIX = "model_"
_ARRAY = re.compile(r"a(\d+)_")


def c_model(name: str) -> str:
    """The C prefix (and file stem) of model ``name``: ``model_NAME``."""
    return MODEL_PREFIX + name


def c_array(name: str) -> str:
    """The C identifier of the array ``name``: ``a<len>_NAME``."""
    return f"a{len(name)}_{name}"


def user_array(c: str) -> str | None:
    """The user's name of the C identifier ``c`` (``c_array``'s inverse); None if ``c`` is not
    one (``empty_``, the field of an empty bundle)."""
    m = _ARRAY.match(c)
    if m is None:
        return None
    n = int(m.group(1))
    name = c[m.end():]
    return name if len(name) == n else None


def user_model(c: str) -> str:
    return c[len(MODEL_PREFIX):] if c.startswith(MODEL_PREFIX) else c


def user_text(text: str) -> str:
    """A message about generated code with its C names turned back into the user's."""
    def back(m: re.Match) -> str:
        n, rest = int(m.group(1)), m.group(2)
        return rest if len(rest) >= n else m.group(0)
    # a name begins with a letter or an underscore (an argmax's index a2_0 is not an array)
    return re.sub(r"\ba(\d+)_([A-Za-z_]\w*)", back, text)


def to_c(model: ir.Model) -> ir.Model:
    """``model`` with every user name replaced by its C name (the model's by ``c_model``, the
    arrays' by ``c_array``), its expressions' variables included; the dump's hash kept."""
    memo: dict[int, ir.Node] = {}

    def expr(e):
        if e is None:
            return None
        got = memo.get(id(e))
        if got is not None:
            return got
        if isinstance(e, ir.Var) and e.kind != "index":
            out = replace(e, name=c_array(e.name))
        else:
            changes = {}
            for f in e.child_fields:
                child = getattr(e, f)
                new = expr(child)
                if new is not child:
                    changes[f] = new
            out = replace(e, **changes) if changes else e
        memo[id(e)] = out
        return out

    def array(a: ir.Array) -> ir.Array:
        role = c_array(a.role) if a.kind == "grad" and a.role else a.role
        return replace(a, name=c_array(a.name), role=role, expr=expr(a.expr))
    context = tuple(array(a) for a in model.context)
    chain = tuple(array(a) for a in model.chain)
    gradients = tuple(array(a) for a in model.gradients)
    out = replace(model, name=c_model(model.name), context=context, chain=chain,
                  seed_of=c_array(model.seed_of), seed=expr(model.seed), gradients=gradients,
                  outputs=tuple((k, c_array(v)) for k, v in model.outputs),
                  data=tuple((k, c_array(v)) for k, v in model.data),
                  fan_in=tuple((c_array(k), n) for k, n in model.fan_in),
                  arrays={})
    out.arrays.update({a.name: a for a in (*context, *chain, *gradients)})
    return out


def dump_to_c(d: dict) -> dict:
    """A dump's JSON with its names mapped as ``to_c`` maps the IR (variables in a dump are de
    Bruijn indices: the names are in the top-level fields alone)."""
    out = dict(d)
    out["model"] = c_model(d["model"])
    out["context"] = [{**c, "name": c_array(c["name"])} for c in d["context"]]
    out["chain"] = [{**b, "name": c_array(b["name"])} for b in d["chain"]]
    out["gradients"] = [{**g, "name": c_array(g["name"]), "wrt": c_array(g["wrt"])}
                        for g in d["gradients"]]
    if "seed" in d:
        out["seed"] = {**d["seed"], "of": c_array(d["seed"]["of"])}
    for key in ("outputs", "data"):
        if d.get(key):
            out[key] = {k: c_array(v) for k, v in d[key].items()}
    return out
