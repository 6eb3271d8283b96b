"""``python -m extract export MODEL [--weights W] [--out FILE.onnx] [--loss]
[--precision f32|f64] [--init random|sac] [--seed N] [--dump FILE]``: write MODEL's forward
chain with its weights as an ONNX model (``extract/export/onnx.py``; docs/onnx.md, "Export").

MODEL is anything ``runtime.load`` takes (a built-in name, a model file, a dump); ``--weights``
any weights it takes (a file ``Model.save`` or ``python -m runtime train`` wrote, an ``.npz`` of
one array per parameter, or of the consts alone); without it, fresh weights by ``--init`` and
``--seed``, said on stderr. Every problem is one line, ``error: …``, exit status 1, and nothing
is written; a usage error is argparse's, status 2.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m extract export",
                                 description="Write a model's forward chain and its weights as "
                                             "an ONNX model (onnxruntime runs it).")
    ap.add_argument("model", help="a built-in model's name, a model file (.model) or a dump "
                                  "(.json)")
    ap.add_argument("--weights", help="the weights (default: fresh, by --init and --seed)")
    ap.add_argument("--out", type=Path, help="the ONNX file (default: NAME.onnx)")
    ap.add_argument("--loss", action="store_true",
                    help="also take the target as an input and give the loss per sample as "
                         "a second output")
    ap.add_argument("--precision", choices=("f32", "f64"),
                    help="the tensors' type (default: the weights file's, else f32)")
    ap.add_argument("--init", default="random",
                    help="fresh weights when --weights is not given: random, sac or he "
                         "(runtime.weights.INITS; another is refused there, by name)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dump", help="the dump of a built-in model (as runtime.load's dump=)")
    args = ap.parse_args(argv)
    try:
        import onnx  # noqa: F401
    except ImportError:
        print("error: export needs the onnx package (pip install onnx)", file=sys.stderr)
        return 1
    from runtime.onnx_export import export_onnx
    from .onnx import graph_inputs
    from runtime.spec import ModelCompileError, ir_model, model_spec
    try:
        spec = model_spec(args.model, args.dump)
        out = args.out if args.out is not None else Path(f"{spec.name}.onnx")
        if out.is_dir():
            raise IsADirectoryError(f"--out {out} is a directory; give the ONNX file's name")
        if not out.parent.is_dir():
            raise FileNotFoundError(f"--out {out}: no directory {out.parent}")
        if args.weights is not None and not Path(args.weights).is_file():
            raise FileNotFoundError(f"no weights file {args.weights}")
        path = export_onnx(spec, out, args.weights, args.precision, args.init, args.seed,
                           args.loss)
    except (ValueError, OSError, ModelCompileError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.weights is None:
        print(f"note: no --weights: fresh weights ({args.init}, seed {args.seed})",
              file=sys.stderr)
    model = ir_model(spec)
    print(f"wrote {path} ({path.stat().st_size:,} bytes; inputs "
          f"{', '.join(graph_inputs(model, args.loss))}; output {model.output('prediction')}"
          + (f", loss {model.output('loss')}" if args.loss else "") + ")")
    return 0
