"""suite.py: Selection validation, sharding, and case files (TOML / JSON) with their errors.

Every case-file error is a SuiteError whose one-line message names the file, the entry
number and the field; the CLI maps SuiteError to exit 2 (tested with the CLI commands).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aclcheck.errors import SuiteError, UsageError
from aclcheck.ops.adaptive_avg_pool2d_backward import contract
from aclcheck.ops.adaptive_avg_pool2d_backward.families import ALL_FAMILIES
from aclcheck.ops.adaptive_avg_pool2d_backward.record import CASE_FILE_KEYS, Case
from aclcheck.suite.casefile import load_case_file, parse_case_entries
from aclcheck.suite.selection import Selection, build_suite
from aclcheck.suite.sharding import interleave, parse_shard
from aclcheck.suite.sharding import round_robin as shard

# -- Selection -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "pattern", "valid"),
    [
        ({"products": ("atlas-a9",)}, "unknown product 'atlas-a9'", contract.PRODUCTS),
        ({"dtypes": ("float8",)}, "unknown dtype 'float8'", contract.ALL_DTYPES),
        ({"formats": ("NHWC",)}, "unknown format 'NHWC'", contract.FORMATS),
        ({"families": ("diagonal",)}, "unknown family 'diagonal'", ALL_FAMILIES),
    ],
)
def test_selection_unknown_names_list_valid_choices(kwargs, pattern, valid):
    with pytest.raises(SuiteError, match=pattern) as info:
        Selection(**kwargs)
    message = str(info.value)
    assert "valid:" in message and "\n" not in message
    assert all(name in message for name in valid)


@pytest.mark.parametrize(("kwargs", "pattern"), [({"count": 0}, "count must be >= 1"),
                                                 ({"seed": -1}, "seed must be >= 0")])
def test_selection_bad_numbers(kwargs, pattern):
    with pytest.raises(SuiteError, match=pattern):
        Selection(**kwargs)


def test_suite_error_is_value_error():
    assert issubclass(SuiteError, ValueError)


def test_default_selection_builds_every_product_dtype_format():
    cases = build_suite(Selection())
    combos = {(c.product, c.dtype, c.format) for c in cases if c.family == "divisible"}
    want = {(p.id, d, f) for p in contract.PRODUCTS.values() for d in p.dtypes
            for f in contract.FORMATS}
    assert combos == want


def test_selection_restricts_and_counts():
    cases = build_suite(Selection(products=("atlas-a2",), dtypes=("bfloat16",),
                                  formats=("NCHW",), families=("global",), count=3))
    assert [c.id.split("-")[3] for c in cases] == ["global0", "global1", "global2"]
    assert all((c.product, c.dtype, c.format) == ("atlas-a2", "bfloat16", "NCHW")
               for c in cases)


def test_only_invalid_dtypes_give_only_invalid_cases():
    cases = build_suite(Selection(products=("atlas-training",), dtypes=("bfloat16",)))
    assert cases and all(c.family == "invalid" for c in cases)
    lacking = [c for c in cases if "_dtype_bfloat16" in c.id]
    assert len(lacking) == 1 and lacking[0].expected_status == contract.PARAM_INVALID


def test_duplicate_family_is_reported_not_crashing():
    with pytest.raises(SuiteError, match="duplicate case id"):
        build_suite(Selection(families=("global", "global")))


# -- shards --------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "want"), [("1/1", (1, 1)), ("2/4", (2, 4)), (" 3/ 3", (3, 3))])
def test_parse_shard(text, want):
    assert parse_shard(text) == want


@pytest.mark.parametrize("text", ["0/4", "5/4", "1/0", "a/b", "2", "1/2/3", "", "-1/2"])
def test_parse_shard_errors(text):
    with pytest.raises(UsageError, match="shard"):
        parse_shard(text)


def test_interleave_undoes_round_robin():
    items = list(range(11))
    for n in (1, 2, 3, 5, 11):
        assert interleave([shard(items, k, n) for k in range(1, n + 1)]) == items
    with pytest.raises(ValueError, match="too short"):
        interleave([[0, 2], [1, 3, 5]])


def test_shards_partition_the_suite():
    cases = build_suite(Selection(families=("divisible", "invalid")))
    parts = [shard(cases, k, 4) for k in range(1, 5)]
    assert sorted(c.id for p in parts for c in p) == sorted(c.id for c in cases)
    assert sum(len(p) for p in parts) == len(cases)
    assert max(map(len, parts)) - min(map(len, parts)) <= 1
    assert shard(cases, 1, 1) == cases


# -- case files: good input -------------------------------------------------------------------

TOML_GOOD = """
suite = "mini"
seed = 7

[[cases]]
product = "atlas-a2"
dtype = "bf16"
format = "nchw"
self_shape = [2, 3, 17, 9]
grad_shape = [2, 3, 5, 4]

[[cases]]
id = "my-case"
product = "atlas-training"
dtype = "fp16"
format = "NCL"
self_shape = [3, 8, 6]
grad_shape = [3, 16, 12]
distribution = "special"
seed = 99
layout = "strided"

[[cases]]
id = "bf16-on-training"
product = "atlas-training"
dtype = "bfloat16"
format = "ND"
self_shape = [1, 1, 4, 4]
grad_shape = [1, 1, 2, 2]

[[cases]]
id = "overrides"
product = "atlas-a3"
dtype = "FP32"
format = "ND"
self_shape = [2, 3, 8, 6]
grad_shape = [2, 3, 4, 3]
grad_dtype = "float16"
self_dtype = "fp32"
out_dtype = "int64"
grad_format = "nd"
self_format = "ND"
out_format = "NHWC"
out_shape = [2, 3, 8, 7]
null = ["out", "self"]
family = "mine"
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_toml_case_file(tmp_path):
    cf = load_case_file(write(tmp_path, "s.toml", TOML_GOOD))
    assert cf.name == "mini" and cf.seed == 7 and len(cf.cases) == 4
    first, second, bf16, over = cf.cases
    assert (first.dtype, first.format, first.family) == ("bfloat16", "NCHW", "file")
    assert first.id == "a2-bf16-NCHW-case0-n2c3h17w9-o5x4-normal"
    assert first.positive and first.self_shape == (2, 3, 17, 9)
    assert (second.id, second.seed, second.layout, second.distribution) == (
        "my-case", 99, "strided", "special")
    assert bf16.expected_status == contract.PARAM_INVALID and bf16.expectation.rule == "4-dtype"
    assert over.family == "mine" and over.null == ("out", "self")
    assert (over.grad_dtype, over.self_dtype, over.out_dtype) == ("float16", "float32", "int64")
    assert (over.grad_format, over.out_format, over.out_shape) == ("ND", "NHWC", (2, 3, 8, 7))
    assert over.expected_status == contract.PARAM_NULLPTR


def test_file_seed_drives_entry_seeds_and_can_be_overridden(tmp_path):
    path = write(tmp_path, "s.toml", TOML_GOOD)
    a, b = load_case_file(path), load_case_file(path)
    assert a.cases == b.cases
    other = load_case_file(path, suite_seed=8)
    assert other.seed == 8
    assert other.cases[0].seed != a.cases[0].seed  # derived from the suite seed
    assert other.cases[1].seed == 99  # explicit seed wins
    with pytest.raises(SuiteError, match="seed must be >= 0"):
        load_case_file(path, suite_seed=-1)


def test_json_list_and_object_forms(tmp_path):
    entry = {"product": "atlas-a2", "dtype": "float16", "format": "ND",
             "self_shape": [4, 5, 6], "grad_shape": [4, 2, 3]}
    as_list = load_case_file(write(tmp_path, "l.json", json.dumps([entry])))
    as_obj = load_case_file(write(tmp_path, "o.JSON", json.dumps({"cases": [entry]})))
    assert as_list.cases == as_obj.cases and as_list.cases[0].positive


def test_json_accepts_case_records(tmp_path):
    """Case.to_record() dumps (JSON null for unset fields) load back unchanged."""
    cases = build_suite(Selection(families=("layout", "invalid"), products=("atlas-a2",)))
    path = write(tmp_path, "records.json", json.dumps([c.to_record() for c in cases]))
    assert load_case_file(path).cases == cases


@pytest.mark.parametrize("rank", range(1, 9))
def test_any_rank_1_to_8_is_a_legal_entry(rank):
    shape = [2] * rank
    cases = parse_case_entries([{"product": "atlas-a2", "dtype": "float32", "format": "ND",
                                 "self_shape": shape, "grad_shape": shape}], "x.json")
    want = contract.SUCCESS if rank in (3, 4) else contract.PARAM_INVALID
    assert cases[0].expected_status == want


@pytest.mark.parametrize("dtype", ["float64", "int64", "uint64", "int8", "bool", "double"])
def test_other_dtypes_make_invalid_calls(dtype):
    (case,) = parse_case_entries([{"product": "atlas-a3", "dtype": dtype, "format": "NCHW",
                                   "self_shape": [1, 2, 4, 4], "grad_shape": [1, 2, 2, 2]}],
                                 "x.json")
    assert case.expected_status == contract.PARAM_INVALID and case.expectation.rule == "4-dtype"


def test_private_format_makes_invalid_call():
    (case,) = parse_case_entries([{"product": "atlas-a2", "dtype": "fp16", "format": "fractal_nz",
                                   "self_shape": [1, 2, 4, 4], "grad_shape": [1, 2, 2, 2]}],
                                 "x.json")
    assert case.format == "FRACTAL_NZ" and case.expected_status == contract.PARAM_INVALID


def test_null_as_single_string():
    (case,) = parse_case_entries([{"product": "atlas-a2", "dtype": "fp16", "format": "ND",
                                   "self_shape": [1, 2, 4, 4], "grad_shape": [1, 2, 2, 2],
                                   "null": "grad_output"}], "x.json")
    assert case.null == ("grad_output",) and case.expected_status == contract.PARAM_NULLPTR


# -- case files: bad input ---------------------------------------------------------------------

BASE = {"product": "atlas-a2", "dtype": "float16", "format": "NCHW",
        "self_shape": [1, 2, 4, 4], "grad_shape": [1, 2, 2, 2]}


@pytest.mark.parametrize(
    ("change", "field", "fragment"),
    [
        ({"colour": "red"}, "colour", "unknown key"),
        ({"self_shape": [1, 2, -2**41, 4]}, "self_shape", "over the limit"),
        ({"grad_view_strides": [1, -2, 4, 4]}, "grad_view_strides", "negative dim"),
        ({"grad_shape": [1] * 9}, "grad_shape", "rank must be 1..8"),
        ({"grad_shape": []}, "grad_shape", "rank must be 1..8"),
        ({"self_shape": "1x2x4x4"}, "self_shape", "list of integers"),
        ({"self_shape": [1, 2, 4.0, 4]}, "self_shape", "integers"),
        ({"self_shape": [1, 2, True, 4]}, "self_shape", "integers"),
        ({"out_storage_shape": [1, -2, 4, 4]}, "out_storage_shape", "negative dim"),
        ({"product": "atlas-a9"}, "product", "valid: atlas-training"),
        ({"product": 3}, "product", "must be a string"),
        ({"dtype": "float8"}, "dtype", "valid: float16"),
        ({"grad_dtype": "f16"}, "grad_dtype", "unknown dtype"),
        ({"dtype": 16}, "dtype", "must be a string"),
        ({"format": "NXYZ"}, "format", "valid: ND"),
        ({"out_format": "XYZ"}, "out_format", "unknown format"),
        ({"distribution": "gauss"}, "distribution", "valid: normal"),
        ({"layout": "tiled"}, "layout", "valid: contiguous"),
        ({"null": ["bias"]}, "null", "grad_output, self, out"),
        ({"null": 3}, "null", "must be a list"),
        ({"seed": -1}, "seed", "[0, 2**63)"),
        ({"seed": 2**63}, "seed", "[0, 2**63)"),
        ({"seed": "7"}, "seed", "integer"),
        ({"seed": 1.5}, "seed", "integer"),
        ({"id": "a/b"}, "id", "without '/'"),
        ({"id": ""}, "id", "non-empty"),
        ({"id": 5}, "id", "must be a string"),
        ({"family": ["x"]}, "family", "must be a string"),
    ],
)
def test_bad_entry_names_file_entry_and_field(tmp_path, change, field, fragment):
    entries = [BASE, {**BASE, **change}]
    path = write(tmp_path, "bad.json", json.dumps(entries))
    with pytest.raises(SuiteError) as info:
        load_case_file(path)
    message = str(info.value)
    assert message.startswith(f"{path}: entry 2, field '{field}':"), message
    assert fragment in message and "\n" not in message


@pytest.mark.parametrize("key", ["product", "dtype", "format", "self_shape", "grad_shape"])
def test_missing_required_key(tmp_path, key):
    entry = {k: v for k, v in BASE.items() if k != key}
    path = write(tmp_path, "missing.json", json.dumps([entry]))
    with pytest.raises(SuiteError, match=rf"entry 1, field '{key}': missing required key"):
        load_case_file(path)


def test_duplicate_id_names_both_entries(tmp_path):
    text = TOML_GOOD + '\n[[cases]]\nid = "my-case"\nproduct = "atlas-a2"\ndtype = "fp32"\n' \
        'format = "ND"\nself_shape = [2, 4, 4]\ngrad_shape = [2, 1, 1]\n'
    path = write(tmp_path, "dup.toml", text)
    with pytest.raises(SuiteError, match=r"dup.toml: entry 5, field 'id': duplicate id "
                                         r"'my-case' \(first in entry 2\)"):
        load_case_file(path)


def test_explicit_id_clashing_with_generated_id(tmp_path):
    entries = [BASE, {**BASE, "id": "a2-fp16-NCHW-case0-n1c2h4w4-o2x2-normal"}]
    with pytest.raises(SuiteError, match="entry 2, field 'id': duplicate id"):
        load_case_file(write(tmp_path, "clash.json", json.dumps(entries)))


def test_unknown_key_lists_valid_keys(tmp_path):
    path = write(tmp_path, "k.toml", TOML_GOOD.replace('family = "mine"', 'famly = "mine"'))
    with pytest.raises(SuiteError) as info:
        load_case_file(path)
    assert "entry 4, field 'famly': unknown key" in str(info.value)
    assert all(key in str(info.value) for key in CASE_FILE_KEYS)


@pytest.mark.parametrize(
    ("name", "text", "fragment"),
    [
        ("a.toml", "[[cases]\nproduct = 1", "not valid TOML"),
        ("a.json", "[{", "not valid JSON"),
        ("a.JSON", "[{", "not valid JSON"),
        ("a.json", '{"cases": [], "extra": 1}', "unknown top-level key 'extra'"),
        ("a.json", '{"cases": {"x": 1}}', "expected a list of cases"),
        ("a.json", '"text"', "expected a list of cases"),
        ("a.toml", 'suite = "x"', "expected a list of cases"),
        ("a.toml", "seed = -3\n[[cases]]\n", "top-level 'seed' must be a non-negative"),
        ("a.toml", 'seed = "3"\n', "top-level 'seed'"),
        ("a.toml", "suite = 3\ncases = []\n", "top-level 'suite' must be a string"),
        ("a.json", "[3]", "entry 1, field '-': entry must be a table"),
    ],
)
def test_bad_file_structure(tmp_path, name, text, fragment):
    path = write(tmp_path, name, text)
    with pytest.raises(SuiteError) as info:
        load_case_file(path)
    assert str(info.value).startswith(f"{path}:") and fragment in str(info.value)


def test_unreadable_and_non_utf8_files(tmp_path):
    with pytest.raises(SuiteError, match="cannot read case file"):
        load_case_file(tmp_path / "absent.toml")
    with pytest.raises(SuiteError, match="cannot read case file"):
        load_case_file(tmp_path)  # a directory
    path = tmp_path / "bin.toml"
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(SuiteError, match="not valid TOML"):
        load_case_file(path)


def test_empty_case_list_is_allowed(tmp_path):
    assert load_case_file(write(tmp_path, "e.json", "[]")).cases == []


def test_case_file_cases_are_plain_cases(tmp_path):
    cf = load_case_file(write(tmp_path, "s.toml", TOML_GOOD))
    for case in cf.cases:
        assert isinstance(case, Case)
        assert Case.from_record(case.to_record()) == case
