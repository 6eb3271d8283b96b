"""The dump's JSON Schema (docs/dump-format.schema.json): accepts well-formed dumps, rejects
malformed ones, and agrees with the structural checks of tests/oracle.py."""
import copy
import glob
import json
import os

import jsonschema
import pytest

import dumpgen
import oracle

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA_PATH = os.path.join(ROOT, "docs", "dump-format.schema.json")
DATA = sorted(glob.glob(os.path.join(ROOT, "tests", "data", "*.json")))


@pytest.fixture(scope="module")
def validator():
    with open(SCHEMA_PATH, encoding="utf-8") as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def errors(validator, dump):
    return list(validator.iter_errors(dump))


def test_schema_declares_draft_2020_12(validator):
    assert validator.schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_schema_knows_every_op_of_the_format(validator):
    assert set(validator.schema["$defs"]["node"]["properties"]["op"]["enum"]) == set(oracle.OPS)
    for op, (_, fields) in oracle.OPS.items():
        d = validator.schema["$defs"][f"op_{op}"]
        assert set(d["properties"]) == {"op", "sort", "shape", *fields}
        assert set(d["required"]) == {"op", "sort", "shape", *fields}
        assert d["additionalProperties"] is False


@pytest.mark.parametrize("path", DATA, ids=[os.path.basename(p) for p in DATA])
def test_accepts_hand_built_dumps(validator, path):
    with open(path, encoding="utf-8") as f:
        assert errors(validator, json.load(f)) == []


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("grads", ["random", "ad"])
def test_accepts_random_dumps(validator, seed, grads):
    assert errors(validator, dumpgen.random_dump(seed, gradients=grads)) == []
    assert errors(validator, dumpgen.random_dump(seed, gradients=grads,
                                                 fns=dumpgen.UNARY)) == []
    assert errors(validator, dumpgen.random_dump(seed, gradients=grads,
                                                 fns=dumpgen.UNARY_V4)) == []


def test_accepts_unknown_optional_top_level_key(validator):
    # §7: adding an optional top-level key does not bump the version.
    dump = dumpgen.dot_hand()
    dump["comment"] = "made by hand"
    assert errors(validator, dump) == []


def _dot():
    return dumpgen.dot_hand()


def _set(path, value):
    def mutate(d):
        *head, last = path
        for k in head:
            d = d[k]
        d[last] = value
    return mutate


def _del(path):
    def mutate(d):
        *head, last = path
        for k in head:
            d = d[k]
        del d[last]
    return mutate


# (name, mutation, JSON path the schema reports the error under, or a prefix of it)
R = ("chain", 0, "expr")  # r = sum 5 (λi. a[i]·b[i])
BODY = R + ("body",)      # the bin node
MALFORMED = [
    *[(f"missing {k}", _del((k,)), "$") for k in
      ("format", "version", "model", "generator", "context", "chain", "seed", "gradients")],
    ("wrong version", _set(("version",), 7), "$.version"),
    ("const before version 3", _set(("context", 1, "role"), "const"), "$.context[1].role"),
    ("sqrt before version 4", _set(BODY + ("a",), {"op": "sqrt", "sort": "ar", "shape": 1,
                                                  "a": {"op": "one", "sort": "ar", "shape": 1}}),
     "$.chain[0].expr.body.a.op"),
    ("version as string", _set(("version",), "1"), "$.version"),
    ("wrong format", _set(("format",), "ad-dump"), "$.format"),
    ("unknown op", _set(BODY + ("op",), "pow"), "$.chain[0].expr.body.op"),
    ("missing op", _del(BODY + ("op",)), "$.chain[0].expr.body"),
    ("missing field", _del(BODY + ("b",)), "$.chain[0].expr.body"),
    ("extra field", _set(BODY + ("c",), 1), "$.chain[0].expr.body"),
    ("bad sort", _set(BODY + ("sort",), "ix"), "$.chain[0].expr.body.sort"),
    ("bad fn", _set(BODY + ("fn",), "minus"), "$.chain[0].expr.body.fn"),
    ("ix child where ar expected", _set(BODY + ("a", "a", "sort"), "ix"),
     "$.chain[0].expr.body.a.a.sort"),
    ("negative leaf", _set(R + ("s",), -5), "$.chain[0].expr.s"),
    ("fractional leaf", _set(R + ("s",), 2.5), "$.chain[0].expr.s"),
    ("three-element shape", _set(R + ("s",), [1, 2, 3]), "$.chain[0].expr.s"),
    ("one-element shape", _set(R + ("shape",), [1]), "$.chain[0].expr.shape"),
    ("string shape", _set(("context", 1, "shape"), "5"), "$.context[1].shape"),
    ("nested bad shape", _set(("context", 1, "shape"), [5, [2, "x"]]), "$.context[1].shape"),
    ("negative var index", _set(BODY + ("a", "a", "idx"), -1), "$.chain[0].expr.body.a.a.idx"),
    ("bad role", _set(("context", 0, "role"), "weight"), "$.context[0].role"),
    ("name not an identifier", _set(("chain", 0, "name"), "1r"), "$.chain[0].name"),
    ("name with a dash", _set(("context", 1, "name"), "a-1"), "$.context[1].name"),
    ("gradient without wrt", _del(("gradients", 0, "wrt")), "$.gradients[0]"),
    ("seed without of", _del(("seed", "of")), "$.seed"),
    ("output to a non-name", _set(("outputs", "prediction"), 3), "$.outputs.prediction"),
]


@pytest.mark.parametrize("name,mutate,where", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_rejects_malformed(validator, name, mutate, where):
    dump = _dot()
    mutate(dump)
    errs = errors(validator, dump)
    assert errs, name
    assert any(e.json_path.startswith(where) for e in errs), [e.json_path for e in errs]


@pytest.mark.parametrize("name,mutate,where", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_oracle_rejects_what_the_schema_rejects(name, mutate, where):
    dump = _dot()
    mutate(dump)
    with pytest.raises((oracle.DumpError, KeyError, TypeError)):
        oracle.check_shapes(dump)


@pytest.mark.parametrize("version,ok", [(1, False), (2, False), (3, False), (4, True)])
def test_sqrt_is_a_node_of_version_4(validator, version, ok):
    """§7: the sqrt dump (tests/data/sqrt.json) is valid as version 4 only; an earlier version
    is reported at each sqrt node's op, by the schema as written and by the extractor's
    lookup of nodes by op alike."""
    with open(os.path.join(ROOT, "tests", "data", "sqrt.json"), encoding="utf-8") as f:
        dump = json.load(f)
    dump["version"] = version
    for v in (validator, _fast()):
        paths = sorted({e.json_path for e in v.iter_errors(dump)})
        assert (paths == []) if ok else ("$.chain[1].expr.op" in paths and
                                         all(p.endswith(".op") for p in paths)), paths


@pytest.mark.parametrize("version,ok", [(1, False), (3, False), (4, False), (5, True)])
@pytest.mark.parametrize("name,at", [("maxall", "$.chain[0].expr.i.op"),
                                     ("lse_detach", "$.chain[1].expr.op")])
def test_argmax_and_detach_are_nodes_of_version_5(validator, version, ok, name, at):
    """§7: argmax and detach are valid in version 5 only; before, reported at the node's op,
    by the schema as written and by the extractor's lookup of nodes by op alike."""
    with open(os.path.join(ROOT, "tests", "data", f"{name}.json"), encoding="utf-8") as f:
        dump = json.load(f)
    dump["version"] = version
    for v in (validator, _fast()):
        paths = sorted({e.json_path for e in v.iter_errors(dump)})
        assert (paths == []) if ok else (at in paths and all(p.endswith(".op")
                                                              for p in paths)), paths


@pytest.mark.parametrize("version,ok", [(3, False), (4, False), (5, False), (6, True)])
def test_erf_and_derf_are_nodes_of_version_6(validator, version, ok):
    """§7: erf and derf (tests/data/erf.json) are valid in version 6 only; before, reported at
    each node's op, by the schema as written and by the extractor's lookup alike."""
    with open(os.path.join(ROOT, "tests", "data", "erf.json"), encoding="utf-8") as f:
        dump = json.load(f)
    dump["version"] = version
    for v in (validator, _fast()):
        paths = sorted({e.json_path for e in v.iter_errors(dump)})
        assert (paths == []) if ok else ({"$.chain[1].expr.a.b.b.op", "$.chain[2].expr.op"}
                                         <= set(paths) and all(p.endswith(".op")
                                                               for p in paths)), paths


def test_rejects_argmax_without_a_body(validator):
    with open(os.path.join(ROOT, "tests", "data", "maxall.json"), encoding="utf-8") as f:
        dump = json.load(f)
    del dump["chain"][0]["expr"]["i"]["body"]
    assert any(e.json_path == "$.chain[0].expr.i" for e in errors(validator, dump))


def test_rejects_scaledown_by_zero(validator):
    dump = dumpgen.make_dump("m", [("x", 3, "param")],
                             [("y", dumpgen.scaledown(2, dumpgen.var("x", 3)))],
                             ("y", dumpgen.one(3)), [("y", dumpgen.one(3)), ("x", dumpgen.one(3))])
    assert errors(validator, dump) == []
    dump["chain"][0]["expr"]["n"] = 0
    assert [e.json_path for e in errors(validator, dump)] == ["$.chain[0].expr.n"]


def test_schema_checks_structure_only(validator):
    # A shape mismatch is well-formed JSON for the schema; tests/oracle.py catches it.
    dump = _dot()
    dump["chain"][0]["expr"]["body"]["shape"] = [5, 5]
    assert errors(validator, dump) == []
    with pytest.raises(oracle.DumpError):
        oracle.check_shapes(dump)


def test_validation_is_linear_in_the_dump(validator):
    # Deeply nested, many-field nodes: a oneOf over all ops would revisit children once per
    # alternative and blow up exponentially; the if/then dispatch on op visits each once.
    import time
    t = dumpgen.var("x", 2)
    for _ in range(15):
        t = dumpgen.plus(dumpgen.logistic(t), dumpgen.minus(dumpgen.var("x", 2)))
    dump = dumpgen.make_dump("deep", [("x", 2, "param")], [("y", t)], ("y", dumpgen.one(2)),
                             [("y", dumpgen.one(2)), ("x", dumpgen.one(2))])
    start = time.perf_counter()
    assert errors(validator, copy.deepcopy(dump)) == []
    assert time.perf_counter() - start < 5


@pytest.mark.parametrize("pos,ok", [([1, 1], True), ([9, 9], True), ([1, -1], False),
                                    ([1, 1, 1], False), ("1", False), ([1, [0, 1.5]], False)])
def test_constant_position_is_a_tree_of_naturals(validator, pos, ok):
    # pad_const: p = backslide (ix_const [3, 3] [1, 1]) x. The schema checks that a position
    # is written like a shape; that it fits its shape ([9, 9] does not) is the code's job.
    dump = dumpgen.pad_const_hand()
    dump["chain"][0]["expr"]["i"]["pos"] = pos
    paths = [e.json_path for e in errors(validator, dump)]
    assert (paths == []) if ok else any(p.startswith("$.chain[0].expr.i.pos") for p in paths)
    if pos == [9, 9]:
        with pytest.raises(oracle.DumpError):
            oracle.check_shapes(dump)


def _fast():
    from extract.ir import dump as extract_dump
    extract_dump._validator.cache_clear()
    return extract_dump._validator()[0]


def test_the_extractors_lookup_by_op_is_in_use():
    # the validator extract.ir.dump checks with replaces the node's allOf of if/then by a lookup
    node = _fast().schema["$defs"]["node"]
    assert "allOf" not in node and len(node["x-by-op"]) == len(oracle.OPS)


@pytest.mark.parametrize("path", DATA, ids=[os.path.basename(p) for p in DATA])
def test_the_extractors_validator_accepts_what_the_schema_accepts(validator, path):
    with open(path, encoding="utf-8") as f:
        dump = json.load(f)
    assert errors(validator, dump) == [] and errors(_fast(), dump) == []


@pytest.mark.parametrize("name,mutate,where", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_the_extractors_validator_rejects_what_the_schema_rejects(validator, name, mutate,
                                                                  where):
    dump = _dot()
    mutate(dump)
    best = jsonschema.exceptions.best_match
    plain, fast = best(validator.iter_errors(dump)), best(_fast().iter_errors(dump))
    assert fast is not None and fast.json_path.startswith(where), name
    assert (fast.json_path, fast.message) == (plain.json_path, plain.message)
