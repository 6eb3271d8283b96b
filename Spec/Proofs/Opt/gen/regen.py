"""Regenerate the generated parts of the optimiser's soundness proof.

Each target module keeps its hand-written head (imports, lemmas) up to a marker line and the
generated clauses after it:  python3 Spec/Proofs/Opt/gen/regen.py  (from the repository root),
then check with  agda -i /usr/share/agda-stdlib -i . Spec/Proofs/Opt.agda
"""
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
OPT = HERE.parent
# module, generator, first line of the generated part, text kept after it (or None)
TARGETS = [
    ("Fold.agda", "gen_fold.py", "plus-opt-sound :", None),
    ("SumZb.agda", "gen_zb.py", "sum-zb-sound :", None),
    ("Main.agda", "gen_opt.py", "opt-sound (imaps e) ρ with",
     "------------------------------------------------------------------------\n-- Iteration"),
]

for module, gen, start, keep in TARGETS:
    path = OPT / module
    text = path.read_text()
    head = text[: text.index(start)]
    tail = text[text.index(keep):] if keep else ""
    body = subprocess.run([sys.executable, str(HERE / gen)], check=True,
                          capture_output=True, text=True).stdout
    path.write_text(head + body + ("\n" + tail if tail and not body.endswith("\n\n") else tail))
    print("regenerated", path)
