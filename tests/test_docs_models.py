"""The model files the documentation shows are complete models that work as printed.

A fenced block tagged ``model`` (three backquotes and ``model``) in README.md or docs/*.md is a
model file: each elaborates (``extract.front.frontend.compile_model``, the Agda elaborator and
the front end's checks) without an error or a warning, and its C is generated (the extractor
accepts it). Any other fenced block that reads like a model file (a declaration, or a ``loss``
statement) is an error here, so that a snippet cannot escape the check by losing its tag.
"""
from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.S | re.M)


def blocks(path: Path):
    """(line, info string, text) of every fenced block of a Markdown file."""
    text = path.read_text(encoding="utf-8")
    for m in FENCE.finditer(text):
        yield text.count("\n", 0, m.start()) + 1, m.group(1).strip(), m.group(2)


def looks_like_a_model(text: str) -> bool:
    return bool(re.search(r"^(input|target|param|const)\s+[A-Za-z_]\w*\s*:\s*[0-9]", text, re.M)
                or re.search(r"^loss\s+[A-Za-z_]\w*\s*=", text, re.M))


SNIPPETS = [(p, line, text) for p in DOCS for line, info, text in blocks(p) if info == "model"]


def test_the_docs_have_their_snippets():
    """The ones this test was written for: the MLP (README, docs/models.md, model-format §1)
    and model-format §4's cross-entropy, layer normalisation and GELU."""
    names = {(p.name, re.search(r"^model\s+(\w+)", t, re.M)[1]) for p, _, t in SNIPPETS}
    assert {("README.md", "mlp"), ("models.md", "mlp"), ("model-format.md", "mlp"),
            ("model-format.md", "ce3"), ("model-format.md", "ln"),
            ("model-format.md", "gelu")} <= names, names


@pytest.mark.agda
@pytest.mark.parametrize("path, line, text", SNIPPETS,
                         ids=[f"{p.name}:{line}" for p, line, _ in SNIPPETS])
def test_every_model_snippet_elaborates_without_a_warning(path, line, text):
    from extract.emit.sources import generate
    from extract.front.frontend import compile_model
    from extract.ir import dump
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = compile_model(text, name_hint=f"{path.name}:{line}")
    generate(dump.parse(json.loads(d)), "f32")


@pytest.mark.parametrize("path", DOCS, ids=[p.name for p in DOCS])
def test_an_untagged_block_is_not_a_model_file(path):
    untagged = [line for line, info, text in blocks(path)
                if info != "model" and looks_like_a_model(text)]
    assert untagged == [], f"{path.name}: blocks at lines {untagged} read like model files: " \
                           f"tag them ```model (and make each a complete model)"
