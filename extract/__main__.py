"""``python -m extract MODEL [--dump FILE] [--out DIR] [--show] [--precision f32|f64]
[--no-build] [--strategy auto|dest|element] [--recompute-limit N]``

Reads the dump (``build/dump/MODEL.json`` by default, made by ``make dump`` when missing),
writes ``MODEL.h``, ``MODEL.c`` and ``MODEL.cu`` into ``--out`` (default
``build/gen/PRECISION``), and builds the C through cffi unless ``--no-build``. Any problem with
the dump or the extraction is printed as one line and the exit status is 1; nothing is written
then.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import build, dump
from .lower import ExtractError, Options
from .sources import generate


def _show(text: str) -> None:
    if sys.stdout.isatty():
        from pygments import highlight
        from pygments.formatters import TerminalFormatter
        from pygments.lexers import CLexer
        sys.stdout.write(highlight(text, CLexer(), TerminalFormatter()))
    else:
        sys.stdout.write(text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m extract", description=__doc__.split("\n\n")[1])
    ap.add_argument("model")
    ap.add_argument("--dump", type=Path, help="the dump (default build/dump/MODEL.json)")
    ap.add_argument("--out", type=Path, help="output directory (default build/gen/PRECISION)")
    ap.add_argument("--show", action="store_true", help="print the generated C")
    ap.add_argument("--precision", choices=("f32", "f64"), default="f32")
    ap.add_argument("--no-build", action="store_true", help="only write the sources")
    ap.add_argument("--strategy", choices=("auto", "dest", "element"), default="auto")
    ap.add_argument("--recompute-limit", type=int, default=1,
                    help="largest tolerated recomputation factor of a sum (see extract/lower.py)")
    args = ap.parse_args(argv)
    try:
        path = args.dump if args.dump is not None else build.dump_path(args.model)
        model = dump.load(path)
        if model.name != args.model:
            print(f"warning: the dump is of model {model.name!r}, not {args.model!r}",
                  file=sys.stderr)
        gen = generate(model, args.precision, Options(args.strategy, args.recompute_limit))
    except (dump.DumpError, ExtractError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    out = args.out if args.out is not None else build.ROOT / "build" / "gen" / args.precision
    out.mkdir(parents=True, exist_ok=True)
    for name, text in gen.files.items():
        build.write_if_changed(out / name, text)
    if args.show:
        _show(gen.files[f"{model.name}.c"])
    else:
        print(f"wrote {', '.join(str(out / n) for n in gen.files)}")
    if not args.no_build:
        build.build(model.name, args.precision, gen.files, gen.cdef)
        if not args.show:
            print(f"built and loaded {model.name} ({args.precision}); cache {build.cache_dir()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
