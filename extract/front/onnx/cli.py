"""``python -m extract import MODEL.onnx``: the command line of the ONNX importer."""
from __future__ import annotations

from pathlib import Path

from . import OnnxImportError, import_onnx


def main(argv=None) -> int:
    """``python -m extract import MODEL.onnx``: write DIR/NAME.model and DIR/NAME.npz."""
    import argparse
    import sys
    ap = argparse.ArgumentParser(prog="python -m extract import",
                                 description="Translate an ONNX model into a model file "
                                             "(docs/model-format.md) and its weights (.npz).")
    ap.add_argument("onnx", type=Path, help="the ONNX model")
    ap.add_argument("--out", type=Path, default=Path("."), help="directory (default: .)")
    ap.add_argument("--name", help="the model's name (default: from the file name)")
    ap.add_argument("--loss", choices=("auto", "ce", "sqerr"), default="auto",
                    help="the loss appended for training: softmax cross-entropy on a vector "
                         "output (ce), squared error (sqerr); auto: ce for a vector output")
    ap.add_argument("--batch", choices=("auto", "yes", "no"), default="auto",
                    help="whether the inputs' leading axis is the batch (auto: a single input "
                         "whose leading dimension is 1 or symbolic)")
    ap.add_argument("--check", action="store_true",
                    help="also elaborate the model file with the Agda front end (shapes)")
    args = ap.parse_args(argv)
    from ..frontend import ModelError, one_line_warnings
    one_line_warnings()
    if args.out.exists() and not args.out.is_dir():
        print(f"error: --out {args.out} is a file; give the directory to write "
              f"NAME.model and NAME.npz in", file=sys.stderr)
        return 1
    batch = {"auto": "auto", "yes": True, "no": False}[args.batch]
    try:
        imp = import_onnx(args.onnx, name=args.name, batch=batch, loss=args.loss)
        if args.check:
            from .. import frontend
            frontend.compile_model(imp.text, name_hint=f"{imp.name}.model")
        model, weights = imp.save(args.out)
    except (OnnxImportError, ModelError, OSError, ValueError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    consts = f", {len(imp.consts)} const{'s' if len(imp.consts) != 1 else ''}" \
        if imp.consts else ""
    print(f"wrote {model} and {weights} ({len(imp.params) - len(imp.consts)} parameters{consts}; "
          f"output {imp.output}, target {imp.target})")
    if imp.consts:
        print(f"the consts alone: {weights.with_name(imp.name + '.consts.npz')} (--weights it "
              f"to train from fresh parameters)")
    if args.check:
        print(f"checked: the Agda front end elaborates {model.name} (every shape agrees)")
    if imp.name != (args.name or imp.name):
        print(f"note: the model is named {imp.name} (--name {args.name} is not a name of the "
              f"model language)")
    return 0
