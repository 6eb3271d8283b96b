"""Print a sha256 per generated source, to show that a refactoring leaves the output unchanged.

For every built-in dump (``build/dump/*.json``), every model file ``models/*.model`` (elaborated
by the Agda executable) and every hand-written dump of ``tests/data/*.json`` that parses, in f32
and f64, with lane groups of 8 and of 16 samples (the other options their defaults): the
sources ``sources.generate`` returns (M.h, M.c, M.cu; and, for the CNN once more, split into
translation units of about 16 KB), the cffi declarations, and the field validation's rewritten
sources (``validate.field_header`` / ``field_c`` and the CUDA host emulation's
``cuda_host.host_source``). Nothing is compiled. One line per file::

    <sha256>  <source>/<precision>/<lanes>/<file>

Run it before and after a change and compare::

    python scripts/emitted_hashes.py > /tmp/before.txt    # on the old commit
    python scripts/emitted_hashes.py > /tmp/after.txt
    diff /tmp/before.txt /tmp/after.txt && wc -l /tmp/after.txt

A dump that does not generate prints ``error <message>`` in place of its hashes (so a change in
what is refused shows too). The hashes depend on the processor (the default register block,
the vector width), so compare on one machine.
"""
from __future__ import annotations

import hashlib
import importlib
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _module(new: str, old: str):
    """The module at its path in the pipeline's subpackages, else at its old flat path."""
    try:
        return importlib.import_module(new)
    except ImportError:
        return importlib.import_module(old)


dump = _module("extract.ir.dump", "extract.dump")
frontend = _module("extract.front.frontend", "extract.frontend")
sources = _module("extract.emit.sources", "extract.sources")
validate = _module("extract.check.validate", "extract.validate")
cuda_host = _module("extract.check.cuda_host", "extract.cuda_host")
Options = _module("extract.passes.lower", "extract.lower").Options


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def models():
    """(label, parsed model or the exception parsing raised) for every source."""
    for path in sorted((ROOT / "build" / "dump").glob("*.json")):
        yield f"build/dump/{path.name}", lambda p=path: dump.load(p)
    for path in sorted((ROOT / "models").glob("*.model")):
        yield f"models/{path.name}", lambda p=path: dump.parse(
            dump.loads(frontend.compile_model(str(p))))
    for path in sorted((ROOT / "tests" / "data").glob("*.json")):
        yield f"tests/data/{path.name}", lambda p=path: dump.load(p)


def hashes(label: str, model, precision: str, lanes: int):
    try:
        gen = sources.generate(model, precision, Options(lanes=lanes))
    except Exception as exc:  # noqa: BLE001 (a refusal is part of the output)
        yield f"error {type(exc).__name__}: {exc}  {label}/{precision}/{lanes}"
        return
    files = {**gen.files, **{f"parts/{k}": v for k, v in gen.parts.items()}, "cdef": gen.cdef}
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in gen.files.items():
            (Path(tmp) / name).write_text(text)
        for src in validate.find_sources(Path(tmp)):
            files["field/" + src.h.name] = validate.field_header(src)
            if src.c is not None:
                files["field/" + src.c.name] = validate.field_c(src)
            if src.cu is not None:
                files["host/" + src.cu.name] = cuda_host.host_source(src.cu.read_text())
    for name, text in sorted(files.items()):
        yield f"{_sha(text)}  {label}/{precision}/{lanes}/{name}"


def main() -> int:
    for label, parse in models():
        try:
            model = parse()
        except Exception as exc:  # noqa: BLE001 (a hand-written dump meant to be refused)
            print(f"refused {type(exc).__name__}  {label}")
            continue
        for precision in ("f32", "f64"):
            for lanes in (8, 16):
                for line in hashes(label, model, precision, lanes):
                    print(line, flush=True)
        if label == "build/dump/cnn.json":  # a split build's translation units, at 16 KB
            default, sources.SPLIT_BYTES = sources.SPLIT_BYTES, 16 * 1024
            try:
                for line in hashes(label + "/split", model, "f32", 16):
                    print(line, flush=True)
            finally:
                sources.SPLIT_BYTES = default
    return 0


if __name__ == "__main__":
    sys.exit(main())
