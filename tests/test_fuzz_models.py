"""Fuzzing the front door: the zoo's model files (models/*.model), mutated at random with a
fixed seed, are each accepted or refused with one line, never a traceback, a crash or a hang.

A case is elaborated by the Agda executable (``frontend.compile_model``: milliseconds), its
dump parsed and checked (``dump.parse``: scopes, shapes, the memory budget), the runtime's
description of it read (``runtime.spec``), and its loops lowered (``lower_to_loops``) when the
model is small; no C is compiled. The default is a few hundred cases in well under a minute; a
longer run:

    PK_FUZZ_CASES=20000 PK_FUZZ_SEED=7 python -m pytest -q -p no:cacheprovider -n 0 \\
        tests/test_fuzz_models.py
"""
from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CASES = int(os.environ.get("PK_FUZZ_CASES", "300"))
SEED = int(os.environ.get("PK_FUZZ_SEED", "0"))
LOWER_BELOW = 200_000       # lower the loops of a model with fewer elements than this

WORDS = ["int", "errno", "NAN", "main", "for", "sum", "tile", "model", "param", "const",
         "input", "target", "output", "loss", "dense", "conv2d", "relu", "logistic", "exp",
         "log", "sqrt", "maxall", "argmax", "sqerr", "x", "_x", "a__b", "é", "0", "-1",
         "99999999999", "4294967296", "65536", "1x1", "0x3", "=", ":", ".", ",", "(", ")",
         "[", "]", "+", "*", "-", "/", "--", "\t", "\n", "\r\n", "\x00", "\u2028", "\ufeff"]


def _mutate(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        op = rng.randrange(9)
        if op == 0 and text:                                    # delete a character
            i = rng.randrange(len(text))
            text = text[:i] + text[i + 1:]
        elif op == 1:                                           # insert a word or character
            i = rng.randrange(len(text) + 1)
            text = text[:i] + rng.choice(WORDS) + text[i:]
        elif op == 2 and len(lines) > 1:                        # delete a line
            del lines[rng.randrange(len(lines))]
            text = "\n".join(lines)
        elif op == 3 and lines:                                 # duplicate a line
            k = rng.randrange(len(lines))
            lines.insert(k, lines[k])
            text = "\n".join(lines)
        elif op == 4 and len(lines) > 1:                        # swap two lines
            a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[a], lines[b] = lines[b], lines[a]
            text = "\n".join(lines)
        elif op == 5:                                           # a number changed
            import re
            nums = list(re.finditer(r"\d+", text))
            if nums:
                m = rng.choice(nums)
                text = text[:m.start()] + rng.choice(["0", "1", "7", "100000", "99999999999",
                                                      "2147483648"]) + text[m.end():]
        elif op == 6:                                           # a name replaced
            import re
            ws = list(re.finditer(r"\b[A-Za-z_]\w*\b", text))
            if ws:
                m = rng.choice(ws)
                text = text[:m.start()] + rng.choice(WORDS) + text[m.end():]
        elif op == 7 and text:                                  # truncated
            text = text[:rng.randrange(len(text))]
        else:                                                   # a random byte-ish character
            i = rng.randrange(len(text) + 1)
            text = text[:i] + chr(rng.randrange(1, 0x3000)) + text[i:]
        lines = text.split("\n")
    return text


def _one_case(text: str, path: Path) -> str:
    """"accepted", or the one-line error; raises what is neither."""
    from extract import limits
    from extract.ir import dump
    from extract.front.frontend import ModelError, compile_model
    from extract.passes.lower import ExtractError, lower_to_loops
    from runtime.spec import spec_from_dump
    path.write_bytes(text.encode("utf-8", "surrogatepass"))     # as a user gives it: a file
    try:
        out = compile_model(path)
        data = json.loads(out)
        m = dump.parse(data)
        spec_from_dump(data, Path("<fuzz>"), None)
        if sum(a.shape if isinstance(a.shape, int) else 1 for a in m.context) < LOWER_BELOW:
            import extract.ir as ir
            if sum(ir.size(a.shape) for a in (*m.context, *m.chain)) < LOWER_BELOW:
                with limits.time_limit(20):
                    lower_to_loops(m)
        return "accepted"
    except (ModelError, dump.DumpError, ExtractError, ValueError, limits.TimeLimitError) as e:
        return str(e)


def _zoo() -> list[tuple[str, str]]:
    return [(p.name, p.read_text()) for p in sorted((ROOT / "models").glob("*.model"))]


@pytest.mark.agda
def test_mutated_zoo_models_are_accepted_or_refused_in_one_line(tmp_path):
    from test_frontend_cli import MISSING
    if MISSING is not None:
        pytest.skip(str(MISSING))
    zoo = _zoo()
    rng = random.Random(SEED)
    t0 = time.perf_counter()
    outcomes = {"accepted": 0, "refused": 0}
    for case in range(CASES):
        name, text = zoo[case % len(zoo)]
        mutated = _mutate(text, rng)
        try:
            got = _one_case(mutated, tmp_path / "case.model")
        except Exception as e:     # noqa: BLE001 (anything else is the finding)
            pytest.fail(f"case {case} (seed {SEED}, from {name}): {type(e).__name__}: {e}\n"
                        f"--- model ---\n{mutated}")
        if got == "accepted":
            outcomes["accepted"] += 1
            continue
        outcomes["refused"] += 1
        assert got.strip() and "\n" not in got.strip() and "Traceback" not in got, \
            f"case {case} (seed {SEED}, from {name}): not one line:\n{got}\n--- model ---\n" \
            f"{mutated}"
    print(f"\n{CASES} cases (seed {SEED}): {outcomes['accepted']} accepted, "
          f"{outcomes['refused']} refused in one line, {time.perf_counter() - t0:.1f} s")
