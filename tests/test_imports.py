"""Imports in ``extract/`` and ``runtime/`` only go down the pipeline, with no circle.

Every import of a package module by another, at module level or inside a function (a late
import is still a dependency: it only hides the circle until the function runs), is an edge; a
circle is a strongly connected component of more than one module. The check reads the sources
(ast), so it sees every import whether or not a test runs the code around it.

The stages of ``extract`` (its subpackages, extract/README.md), lowest first, and what each may
import besides itself:

    bottom   extract/paths.py, extract/limits.py, extract/cache.py,
             extract/__init__.py                                          nothing of the project
    ir       extract/ir/ (the dump IR, the loop IR)                        the bottom
    front    extract/front/, extract/onnx_import.py (model file -> dump)  ir (it checks its dump)
    passes   extract/passes/ (dump IR -> loop IR -> loop IR)               ir
    emit     extract/emit/ (loop IR -> C, CUDA -> cffi module)             passes, ir
    check    extract/check/ (the generated code over a finite field)      emit, passes, ir
    render   extract/render/ (the dump IR as mathematics)                  ir
    export   extract/export/ (the dump IR -> an ONNX graph)                ir

``extract/__main__.py`` (the command line) may import any stage; ``runtime`` may import
``extract``, never the reverse. The deprecated aliases at the old flat paths
(``extract/lower.py``, ...) import their module by name (``importlib``), so they add no edge;
an import of one is checked as an import of the module it names, and no module of ours imports
one.
"""
from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("extract", "runtime")


def module_of(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports(path: Path) -> set[str]:
    """The package modules that ``path`` imports (``from . import x`` names x when x is a
    module of the package)."""
    mod = module_of(path)
    package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] in PACKAGES}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            elif node.module and node.module.split(".")[0] in PACKAGES:
                target = node.module
            else:
                continue
            out.add(target)
            out |= {f"{target}.{a.name}" for a in node.names}
    return out


def graph() -> dict[str, set[str]]:
    files = [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")]
    mods = {module_of(p): p for p in files}
    edges = {m: {t for t in imports(p) if t in mods and t != m} for m, p in mods.items()}
    # a package's __init__ re-exporting its modules is not a circle of the modules
    return {m: {t for t in ts if not (m in PACKAGES and t.startswith(m + "."))}
            for m, ts in edges.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iteratively)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]; counter[0] += 1
        stack.append(root); on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]; counter[0] += 1
                    stack.append(w); on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop(); on.discard(w); comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_the_scan_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_in_extract_or_runtime():
    found = circles(graph())
    assert not found, "import circles: " + "; ".join(" <-> ".join(c) for c in found)


# -- the stages ------------------------------------------------------------------------------

BOTTOM = {"extract", "extract.paths", "extract.limits", "extract.cache"}
STAGES = ("front", "ir", "passes", "emit", "check", "render", "export")
MAY_IMPORT = {
    "bottom": set(),
    "ir": {"bottom"},
    "front": {"bottom", "ir"},
    "passes": {"bottom", "ir"},
    "emit": {"bottom", "ir", "passes"},
    "check": {"bottom", "ir", "passes", "emit"},
    "render": {"bottom", "ir"},
    "export": {"bottom", "ir"},
}
# modules of ours that still import an alias (an old path), and why
ALIAS_USERS: dict[str, str] = {}
# upward imports known and to be removed (a test fails once one is gone: delete it here)
KNOWN_UPWARD = {
    # the ONNX importer writes the weights file with runtime's writer (to move down or out)
    "extract.front.onnx.core imports runtime._files: front may not import runtime",
    "extract.front.onnx.core imports runtime.weights: front may not import runtime",
    # the exporter's command line reads a model and its weights as runtime.load does (the
    # graph itself, extract/export/onnx.py, is built from the dump IR and arrays alone)
    "extract.export.cli imports runtime.onnx_export: export may not import runtime",
    "extract.export.cli imports runtime.spec: export may not import runtime",
}


def stage(module: str) -> str:
    """``bottom``, a stage of ``extract`` (``front``, ``ir``, ...), ``cli`` or ``runtime``."""
    if module in BOTTOM:
        return "bottom"
    if module.startswith("runtime"):
        return "runtime"
    if module == "extract.__main__":
        return "cli"
    if module == "extract.onnx_import":
        return "front"
    part = module.split(".")[1]
    assert part in STAGES, f"{module}: in no stage of extract (see this file's docstring)"
    return part


def aliases() -> dict[str, str]:
    """The deprecated modules at the old paths and the module each stands for: a module whose
    body puts ``importlib.import_module("NEW")`` in its own place in ``sys.modules``."""
    out = {}
    for path in (ROOT / "extract").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript)
                    and ast.unparse(node.targets[0]) == "sys.modules[__name__]"):
                out[module_of(path)] = node.value.args[0].value
    return out


def upward(edges: dict[str, set[str]], alias: dict[str, str]) -> list[str]:
    """Every import that goes up the pipeline, as ``A imports B (stage -> stage)``."""
    out = []
    for a in sorted(edges):
        if a in alias:
            continue
        for b in sorted(edges[a]):
            target = alias.get(b, b)
            sa, sb = stage(a), stage(target)
            if sa == "runtime" or sa == "cli" and sb != "runtime" or sa == sb:
                continue
            if sb not in MAY_IMPORT.get(sa, set()):
                via = f" (through the alias {b})" if b != target else ""
                out.append(f"{a} imports {target}{via}: {sa} may not import {sb}")
    return out


def test_the_stage_check_names_an_upward_import():
    edges = {"extract.ir.dump": {"extract.emit.build", "extract.paths"},
             "extract.emit.build": {"extract.ir.dump", "extract.lower"},
             "extract.passes.lower": {"runtime.model"},
             "extract.__main__": {"extract.check.validate"}, "runtime.model": {"extract"}}
    assert upward(edges, {"extract.lower": "extract.passes.lower"}) == [
        "extract.ir.dump imports extract.emit.build: ir may not import emit",
        "extract.passes.lower imports runtime.model: passes may not import runtime"]
    edges = {"extract.passes.fuse": {"extract.emit.printer"},
             "extract.ir.code": {"extract.printer"}}
    assert upward(edges, {"extract.printer": "extract.emit.printer"}) == [
        "extract.ir.code imports extract.emit.printer (through the alias extract.printer): "
        "ir may not import emit",
        "extract.passes.fuse imports extract.emit.printer: passes may not import emit"]


def test_imports_go_down_the_pipeline():
    found = upward(graph(), aliases())
    new = [f for f in found if f not in KNOWN_UPWARD]
    assert not new, "imports up the pipeline:\n" + "\n".join(new)
    gone = KNOWN_UPWARD - set(found)
    assert not gone, "no longer found (remove from KNOWN_UPWARD):\n" + "\n".join(sorted(gone))


def test_no_module_imports_a_deprecated_alias():
    alias = aliases()
    found = [f"{m} imports {t} (now {alias[t]})" for m, ts in sorted(graph().items())
             for t in sorted(ts) if t in alias and m not in alias and m not in ALIAS_USERS]
    assert not found, "imports of old paths:\n" + "\n".join(found)


# -- the old paths, for one release ------------------------------------------------------------

OLD = {"frontend": "front", "dump": "ir", "code": "ir", "lower": "passes", "bounds": "passes",
       "interchange": "passes", "split": "passes", "inline": "passes", "peel": "passes",
       "registers": "passes", "divide": "passes", "lanes": "passes", "winograd": "passes",
       "share": "passes", "printer": "emit", "sources": "emit", "build": "emit", "cpu": "emit",
       "fuse": "emit", "validate": "check", "field": "check", "cuda_host": "check",
       "render_math": "render", "render_print": "render"}


def test_every_old_module_has_an_alias():
    assert aliases() == {f"extract.{m}": f"extract.{s}.{m}" for m, s in OLD.items()}


@pytest.mark.parametrize("name", sorted(OLD))
def test_an_old_path_is_the_new_module(name, monkeypatch):
    """``import extract.lower`` warns, naming the new path, and gives the new module itself: its
    private names, and a monkeypatch through the old name reaches the code that reads it."""
    old, new = f"extract.{name}", f"extract.{OLD[name]}.{name}"
    monkeypatch.delitem(sys.modules, old, raising=False)   # imported afresh: it warns again
    with pytest.warns(DeprecationWarning, match=f"{old} is deprecated: import {new}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new) is sys.modules[old]


def test_old_imports_reach_the_real_module(monkeypatch):
    import extract.passes.lower as lower
    monkeypatch.delitem(sys.modules, "extract.lower", raising=False)
    with pytest.warns(DeprecationWarning):
        from extract.lower import _sums, Options
    assert (_sums, Options) == (lower._sums, lower.Options)
    monkeypatch.delitem(sys.modules, "extract.winograd", raising=False)
    with pytest.warns(DeprecationWarning):
        import extract.winograd as old
    monkeypatch.setattr(old, "LIMIT", 7)
    from extract.passes import winograd
    assert winograd.LIMIT == 7


@pytest.mark.parametrize("package, module", [("ir", "ir"), ("render", "render")])
def test_a_package_at_an_old_module_path_forwards_its_names(package, module):
    """``extract.ir`` and ``extract.render`` were modules and are packages now: their names are
    the modules' ``extract.ir.ir`` and ``extract.render.render``, with a warning."""
    pkg = importlib.import_module(f"extract.{package}")
    real = importlib.import_module(f"extract.{package}.{module}")
    name = "Model" if package == "ir" else "write"
    with pytest.warns(DeprecationWarning, match=f"extract.{package}.{name} is deprecated"):
        assert getattr(pkg, name) is getattr(real, name)
    with pytest.raises(AttributeError):
        pkg.no_such_name


def test_python_m_extract_validate_still_runs():
    res = subprocess.run([sys.executable, "-m", "extract.validate", "--help"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "usage: python -m extract.check.validate" in res.stdout
    assert "extract.validate is deprecated: import extract.check.validate" in res.stderr
