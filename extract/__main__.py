"""``python -m extract MODEL [--dump FILE] [--dump-out FILE] [--out DIR] [--show]
[--precision f32|f64] [--no-build] [--strategy auto|dest|element] [--recompute-limit N]
[--no-winograd] [--tape] [--html [FILE]] [--latex [FILE]] [--timeout SECONDS]``

``python -m extract import MODEL.onnx [--out DIR] [--name NAME] [--loss ce|sqerr|auto]
[--batch auto|yes|no] [--check]``: translate an ONNX model into a model file and its weights
(``extract/front/onnx/``; with consts, also ``NAME.consts.npz``, their values alone).

``python -m extract export MODEL [--weights W] [--out FILE.onnx] [--loss] [--precision f32|f64]``:
the forward chain and its weights as an ONNX model (``extract/export/``; docs/onnx.md, "Export").

MODEL is a built-in model's name (its dump is ``build/dump/MODEL.json`` by default, else the
zoo's ``build/dump/zoo/MODEL.json`` of ``models/MODEL.model``, made by ``make dump`` when no
dump is built yet, or ``--dump``), a dump file ``*.json``, or a model file ``*.model``
(compiled into a dump by the Agda executable, ``extract/front/frontend.py``). Writes
``M.h``, ``M.c``, ``M.cu`` (M the model's name) and the dump they come from, ``M.dump.json``
(what ``python -m extract.check.validate DIR`` checks them against), into ``--out`` (default
``build/gen/PRECISION`` under the current directory; ``--show`` alone prints the C and writes
nothing), and builds the C through cffi unless ``--no-build``; ``--dump-out`` also writes the
dump elsewhere. Any problem with the model, the dump or the extraction is printed as one line and
the exit status is 1; nothing is written then (no file, no directory, no cache entry).

``--timeout SECONDS`` bounds the whole path (elaboration in Agda, parsing the dump, lowering
and the passes, C compilation: ``extract/limits.py``); at the limit the one line says which
stage was running and for how long (sources written before the C compilation stay written).
Without it the Agda step alone is bounded, by 120 s.

``--html`` and ``--latex`` write the model as mathematics instead (``extract/render/render.py``):
one self-contained HTML page, or a LaTeX fragment, to FILE (``-``: standard output; default
``build/gen/MODEL.html`` or ``.tex`` under the current directory); no C is generated then.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import limits
from .emit import build
from .emit.sources import generate
from .front import frontend
from .ir import dump
from .passes.lower import ExtractError, Options


def _show(text: str) -> None:
    if sys.stdout.isatty():
        from pygments import highlight
        from pygments.formatters import TerminalFormatter
        from pygments.lexers import CLexer
        sys.stdout.write(highlight(text, CLexer(), TerminalFormatter()))
    else:
        sys.stdout.write(text)


def _parse_text(text: str, origin: str):
    """Parse a dump printed by the Agda executable (as ``dump.load`` does a file)."""
    data = dump.loads(text)
    try:
        return dump.parse(data)
    except dump.DumpError as exc:
        raise dump.DumpError(exc.path, f"{exc.message} (in the dump compiled from "
                                       f"{origin})") from None


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    frontend.one_line_warnings()
    if argv[:1] == ["import"]:
        from .front.onnx.cli import main as import_main
        return import_main(argv[1:])
    if argv[:1] == ["export"]:
        from .export.cli import main as export_main
        return export_main(argv[1:])
    ap = argparse.ArgumentParser(prog="python -m extract", description=__doc__.split("\n\n")[1])
    ap.add_argument("model", help="a built-in model's name (cnn, or a zoo model's: mlp, "
                                  "lenet5), a dump (.json) or a model file (.model)")
    ap.add_argument("--dump", type=Path, help="the dump of a built-in model (default "
                                              "build/dump/MODEL.json, or the zoo's "
                                              "build/dump/zoo/MODEL.json)")
    ap.add_argument("--dump-out", type=Path, help="also write the dump to this file")
    ap.add_argument("--out", type=Path,
                    help="output directory (default build/gen/PRECISION under the current "
                         "directory)")
    ap.add_argument("--show", action="store_true",
                    help="print the generated C (and write it only with --out)")
    ap.add_argument("--precision", choices=("f32", "f64"), default="f32")
    ap.add_argument("--no-build", action="store_true", help="only write the sources")
    ap.add_argument("--strategy", choices=("auto", "dest", "element"), default="auto")
    ap.add_argument("--lanes", type=int, choices=(8, 16), default=0,
                    help="samples per lane group of the C batch entry points (default: "
                         "$PROVED_KERNELS_LANES, else 16 where 512-bit FMAs run at full "
                         "width, else 8)")
    ap.add_argument("--block", type=int, choices=(8, 16), default=0,
                    help="most outputs a lane kernel holds in registers (default: "
                         "$PROVED_KERNELS_BLOCK, else 16 with AVX-512, else 8)")
    ap.add_argument("--no-winograd", action="store_true",
                    help="the lane kernels sum convolution rows directly, not by Winograd's "
                         "F(m, r) (extract/passes/winograd.py)")
    ap.add_argument("--tape", action="store_true",
                    help="also M_tape_size, M_batch_forward and M_batch_backward: a batch "
                         "forward that keeps its values and the gradients from them "
                         "(docs/generated-api.md)")
    ap.add_argument("--recompute-limit", type=int, default=1,
                    help="largest tolerated recomputation factor of a sum (see "
                         "extract/passes/lower.py)")
    ap.add_argument("--html", nargs="?", const="", metavar="FILE",
                    help="write the model as mathematics, one HTML page (default "
                         "build/gen/MODEL.html), instead of the C")
    ap.add_argument("--latex", nargs="?", const="", metavar="FILE",
                    help="the same as a LaTeX fragment (default build/gen/MODEL.tex)")
    ap.add_argument("--timeout", type=float, metavar="SECONDS",
                    help="a time limit for the whole path, model file to built kernels "
                         "(default: none, but 120 s for the Agda step)")
    args = ap.parse_args(argv)
    if args.timeout is not None and not args.timeout > 0:
        ap.error(f"--timeout must be a positive number of seconds, not {args.timeout:g}")
    try:
        with limits.time_limit(args.timeout):
            return _run(ap, args)
    except limits.TimeLimitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _run(ap, args) -> int:
    kind = ("model" if frontend.is_model_file(args.model) else
            "dump" if args.model.endswith(".json") else "name")
    if kind != "name" and args.dump is not None:
        ap.error(f"--dump is for a built-in model's name; {args.model} is already a file")
    compiled = None                 # the dump's text, when compiled from a model file
    try:
        if kind == "model":
            try:
                compiled = frontend.compile_model(args.model)
            except (frontend.ModelError, RuntimeError) as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 1
            model = _parse_text(compiled, args.model)
        else:
            path = (Path(args.model) if kind == "dump" else
                    args.dump if args.dump is not None else build.dump_path(args.model))
            model = dump.load(path)
            if kind == "name" and model.name != args.model:
                print(f"warning: the dump is of model {model.name!r}, not {args.model!r}",
                      file=sys.stderr)
        if args.html is not None or args.latex is not None:
            from .render import render
            for written in render.write(model, args.html, args.latex):
                print(f"wrote {written}")
            return 0
        gen = generate(model, args.precision, Options(args.strategy, args.recompute_limit,
                                                       lanes=args.lanes, block=args.block,
                                                       winograd=not args.no_winograd,
                                                       tape=args.tape))
        if args.dump_out is not None:
            args.dump_out.parent.mkdir(parents=True, exist_ok=True)
            build.write_if_changed(args.dump_out, compiled if compiled is not None else
                                   path.read_text())
    except (ValueError, ExtractError, OSError) as exc:  # DumpError is a ValueError
        print(f"error: {exc}", file=sys.stderr)
        return 1
    # default: build/gen/PRECISION under the current directory (never the checkout's or
    # site-packages' from elsewhere); --show alone writes nothing
    if args.out is not None or not args.show:
        out = args.out if args.out is not None else Path("build") / "gen" / args.precision
        try:
            if out.exists() and not out.is_dir():
                raise NotADirectoryError(f"--out {out} is a file, not a directory")
            out.mkdir(parents=True, exist_ok=True)
            for name, text in gen.files.items():
                build.write_if_changed(out / name, text)
            # the dump next to the sources: `python -m extract.check.validate OUT` checks them
            dump_file = f"{model.name}.dump.json"
            build.write_if_changed(out / dump_file,
                                   compiled if compiled is not None else path.read_text())
        except OSError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        if not args.show:
            print(f"wrote {', '.join(str(out / n) for n in [*gen.files, dump_file])}")
    if args.show:
        from .ir.names import c_model
        _show(gen.files[f"{c_model(model.name)}.c"])
    if not args.no_build:
        from .cache import CacheError
        from .emit.gcc import BuildError
        try:
            build.build(model.name, args.precision, gen.files, gen.cdef, parts=gen.parts)
        except (BuildError, CacheError) as exc:     # one line (the log's path in it)
            print(f"error: {exc}", file=sys.stderr)
            return 1
        if not args.show:
            print(f"built and loaded {model.name} ({args.precision}); cache {build.cache_dir()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
