"""The vendor-case importers (aclcheck.ops.adaptive.vendor): ATK case JSON and ops-nn
op_api unit tests
become exact case-file entries; whatever they do not understand is a SuiteError naming
the file and line; the vendor's real files (when present locally) import completely."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from aclcheck.errors import SuiteError
from aclcheck.ops.adaptive.vendor import Imported, Skipped, read_atk, read_ops_nn_ut
from aclcheck.ops.adaptive.vendor.ops_nn_ut import REASON_PRECISION, strip_comments
from aclcheck.suite.casefile import parse_case_entries

DATA = Path(__file__).parent / "data" / "vendor"
ATK_2D = DATA / "atk_sample_2d.json"
UT_3D = DATA / "ut_sample_3d.cpp"
API_2D, API_3D = "aclnnAdaptiveAvgPool2dBackward", "aclnnAdaptiveAvgPool3dBackward"
VENDOR = Path("/tmp/vendor")  # the vendor's own files, never in the repository


def line_of(text: str, marker: str, nth: int = 1) -> int:
    """The line of the nth occurrence of `marker` in `text`."""
    pos = -1
    for _ in range(nth):
        pos = text.index(marker, pos + 1)
    return text.count("\n", 0, pos) + 1


def raises_at(path: Path, line: int, *words: str) -> pytest.ExceptionInfo[SuiteError]:
    """Context: a SuiteError whose message starts with 'path:line: ' and has `words`."""
    return pytest.raises(SuiteError, match=rf"^{path}:{line}: .*" + ".*".join(words))


# -- ATK ---------------------------------------------------------------------------------------

def atk_sample(fmt: str | None = None) -> Imported:
    return read_atk(ATK_2D, API_2D, "atlas-a2", fmt)


def test_atk_sample_entries_are_exact() -> None:
    got = atk_sample()
    base = {"family": "atk", "product": "atlas-a2", "format": "NCHW"}
    assert got.skipped == ()
    assert got.entries == (
        {**base, "id": "atk-0", "dtype": "float32", "self_shape": [2, 3, 4, 4],
         "grad_shape": [2, 3, 1, 1], "grad_range": [-2, 2.5], "self_range": [0, 1],
         "source": "atk:atk_sample_2d.json#0"},
        {**base, "id": "atk-1", "dtype": "bfloat16", "self_shape": [1, 2, 9, 5],
         "grad_shape": [1, 2, 3, 1], "grad_normal": [-100, 100, 1, 25], "self_fill": "inf",
         "source": "atk:atk_sample_2d.json#1"},
        {**base, "id": "atk-2", "dtype": "float16", "self_shape": [3, 1, 4, 6],
         "grad_shape": [3, 1, 2, 2], "grad_fill": "-inf", "self_fill": "nan",
         "source": "atk:atk_sample_2d.json#2"},
        {**base, "id": "atk-3", "dtype": "float16", "self_shape": [1, 1, 7, 3],
         "grad_shape": [1, 1, 1, 1], "grad_fill": "0.5", "self_fill": "3",
         "source": "atk:atk_sample_2d.json#3"},
        {**base, "id": "atk-4", "dtype": "float32", "self_shape": [4, 2, 5, 0],
         "grad_shape": [4, 2, 2, 2], "grad_normal": [-1.5, 1.5, 0.5, 2], "self_range": [-1, 1],
         "source": "atk:atk_sample_2d.json#4"},
        {**base, "id": "atk-17", "dtype": "float32", "self_shape": [2, 2, 3, 3],
         "grad_shape": [2, 2, 1, 1], "grad_dtype": "float16", "grad_range": [-1, 1],
         "self_range": [-1, 1], "source": "atk:atk_sample_2d.json#17"},
    )


def test_atk_format_argument() -> None:
    assert {e["format"] for e in atk_sample("NCDHW").entries} == {"NCDHW"}
    with pytest.raises(SuiteError, match="unknown format 'NCHW5'"):
        atk_sample("NCHW5")


def _atk_variant(tmp_path: Path, old: str, new: str, nth: int = 1) -> tuple[Path, str]:
    text = ATK_2D.read_text()
    pos = -1
    for _ in range(nth):
        pos = text.index(old, pos + 1)
    text = text[:pos] + new + text[pos + len(old):]
    path = tmp_path / "atk_variant.json"
    path.write_text(text)
    return path, text


def test_atk_unknown_case_field_names_its_line(tmp_path: Path) -> None:
    path, text = _atk_variant(tmp_path, '"standard": {},', '"standard": {},\n   "weird": 1,', 2)
    with raises_at(path, line_of(text, '"weird"'), "unknown case field 'weird'"):
        read_atk(path, API_2D, "atlas-a2")


def test_atk_unknown_input_field_names_its_line(tmp_path: Path) -> None:
    path, text = _atk_variant(tmp_path, '"backward": false}', '"backward": false,\n'
                              '      "format": "ND"}', 3)
    with raises_at(path, line_of(text, '"format"'), "unknown input field 'format'"):
        read_atk(path, API_2D, "atlas-a2")


def test_atk_file_of_the_other_api_names_the_line(tmp_path: Path) -> None:
    text = ATK_2D.read_text()
    with raises_at(ATK_2D, line_of(text, '"aclnn_name"'), f"tests aclnnAdaptiveAvgPool2dB.*"
                   f"not {API_3D}"):
        read_atk(ATK_2D, API_3D, "atlas-a2")


@pytest.mark.parametrize(("old", "new", "words"), [
    ('"range_values": ["nan"]', '"range_values": ["NaN"]', ("range_values must be",)),
    ('"range_values": [0, 1]', '"range_values": [1, 0]', ("range_values must be",)),
    ('"std": [1, 25]', '"std": [1, 25], "seed": 3', ("unknown range_values field 'seed'",)),
    ('"dtype": "bf16"', '"dtype": "fp8"', ("unknown dtype 'fp8'",)),
    ('"name": "Input"', '"name": "weight"', ("unknown input name 'weight'",)),
    ('"type": "tensor"', '"type": "scalar"', ("type 'scalar', not 'tensor'",)),
    ('"api_type": "aclnn_adaptiveavgpool2dgrad"', '"api_type": "aclnn_other"',
     ("executor 'aclnn_other'",)),
])
def test_atk_malformed_values_name_their_line(tmp_path: Path, old: str, new: str,
                                              words: tuple[str, ...]) -> None:
    path, text = _atk_variant(tmp_path, old, new)
    with raises_at(path, line_of(text, new), *words):
        read_atk(path, API_2D, "atlas-a2")


def test_atk_repeated_key_and_id_are_errors(tmp_path: Path) -> None:
    path, text = _atk_variant(tmp_path, '"is_boundary": false', '"is_boundary": false, '
                              '"is_boundary": true')
    with raises_at(path, line_of(text, 'false, "is_boundary"'), "repeats field 'is_boundary'"):
        read_atk(path, API_2D, "atlas-a2")
    path, text = _atk_variant(tmp_path, '"id": 17', '"id": 3')
    with raises_at(path, line_of(text, '{"id": 3', 2), "case id 'atk-3' repeats"):
        read_atk(path, API_2D, "atlas-a2")


def test_atk_invalid_json_names_its_line(tmp_path: Path) -> None:
    path, text = _atk_variant(tmp_path, '"is_boundary": false}', '"is_boundary": false,}')
    with raises_at(path, line_of(text, "false,}"), "not valid JSON"):
        read_atk(path, API_2D, "atlas-a2")


# -- ops-nn unit tests -------------------------------------------------------------------------

def ut_sample() -> Imported:
    return read_ops_nn_ut(UT_3D, API_3D)


def test_ut_sample_entries_are_exact() -> None:
    got = {e["id"]: e for e in ut_sample().entries}
    base = {"family": "ut", "product": "atlas-a2"}
    src = "ut:ut_sample_3d.cpp:"
    assert list(got) == ["plain_success", "dtype_variable_out_differs", "strided_self",
                         "value_vector", "self_nullptr", "grad_output_nullptr_inline",
                         "negative_dim", "complex_dtype", "dtype_loop-int8", "dtype_loop-uint8"]
    assert got["plain_success"] == {
        **base, "id": "plain_success", "dtype": "float32", "format": "NCDHW",
        "self_shape": [2, 2, 2, 2, 2], "grad_shape": [2, 2, 1, 1, 1], "grad_range": [-50, 50],
        "self_range": [-1, 1], "source": src + "16 plain_success", "vendor_status": 0}
    assert got["dtype_variable_out_differs"] == {
        **base, "id": "dtype_variable_out_differs", "dtype": "float16", "format": "ND",
        "self_shape": [2, 3, 3, 3], "grad_shape": [2, 1, 1, 1], "out_shape": [2, 3, 3, 1],
        "out_dtype": "float32", "out_format": "NCL", "grad_range": [0.5, 2.5],
        "source": src + "28 dtype_variable_out_differs", "vendor_status": 161002}
    assert got["strided_self"] == {
        **base, "id": "strided_self", "dtype": "float32", "format": "ND",
        "self_shape": [1, 2, 2, 3, 2], "grad_shape": [1, 2, 1, 1, 1],
        "self_view_strides": [24, 12, 1, 2, 6], "self_view_offset": 4,
        "self_storage_shape": [1, 2, 2, 2, 8], "out_view_strides": [12, 6, 3, 1, 1],
        "out_view_offset": 0, "out_storage_shape": [24], "self_range": [-2, 2],
        "source": src + "40 strided_self", "vendor_status": 0}
    assert got["value_vector"] == {
        **base, "id": "value_vector", "dtype": "float32", "format": "ND",
        "self_shape": [1, 1, 1, 2, 2], "grad_shape": [1, 1, 1, 1, 2],
        "grad_values": [1.0, -1.0], "self_values": [0.35, 2.0, -5.0, 3.25],
        "source": src + "52 value_vector", "vendor_status": 0}
    assert got["self_nullptr"] == {
        **base, "id": "self_nullptr", "dtype": "float32", "format": "ND",
        "grad_shape": [2, 2, 1, 1, 1], "out_shape": [2, 2, 1, 1, 1], "null": ["self"],
        "grad_range": [-50, 50], "source": src + "66 self_nullptr", "vendor_status": 161001}
    assert got["grad_output_nullptr_inline"] == {
        **base, "id": "grad_output_nullptr_inline", "dtype": "bfloat16", "format": "NDHWC",
        "self_shape": [2, 2, 2, 2, 2], "null": ["grad_output"],
        "source": src + "77 grad_output_nullptr_inline", "vendor_status": 161001}
    assert got["negative_dim"] == {
        **base, "id": "negative_dim", "dtype": "float32", "format": "ND",
        "self_shape": [2, 2, 0, 2, 2], "grad_shape": [2, 2, -1, 1, 1],
        "source": src + "88 negative_dim", "vendor_status": 161002}
    assert got["complex_dtype"] == {
        **base, "id": "complex_dtype", "dtype": "complex128", "format": "ND",
        "self_shape": [2, 2, 2, 2], "grad_shape": [2, 1, 1, 1],
        "source": src + "99 complex_dtype", "vendor_status": 161002}
    assert got["dtype_loop-uint8"] == {
        **base, "id": "dtype_loop-uint8", "dtype": "uint8", "format": "ND",
        "self_shape": [2, 2, 2, 2], "grad_shape": [2, 1, 1, 1],
        "source": src + "124 dtype_loop [ACL_UINT8]", "vendor_status": 161002}


def test_ut_sample_skips_what_asserts_nothing() -> None:
    assert ut_sample().skipped == (Skipped("ut:ut_sample_3d.cpp:115 precision_only",
                                           REASON_PRECISION),)


def test_imported_entries_are_valid_case_file_entries() -> None:
    """What the importers write, aclcheck's case-file reader takes as it is."""
    assert len(parse_case_entries(list(ut_sample().entries), str(UT_3D), 0,
                                  "aapool3d-bwd")) == 10
    assert len(parse_case_entries(list(atk_sample().entries), str(ATK_2D), 0,
                                  "aapool2d-bwd")) == 6


def test_strip_comments_keeps_lines() -> None:
    text = UT_3D.read_text()
    stripped = strip_comments(text)
    assert stripped.count("\n") == text.count("\n")
    assert "inside_a_block_comment" not in stripped and "commented_out" not in stripped
    assert strip_comments('a = "// not a comment"; // one') == 'a = "// not a comment";       '


def _ut_variant(tmp_path: Path, old: str, new: str, nth: int = 1) -> tuple[Path, str]:
    text = UT_3D.read_text()
    pos = -1
    for _ in range(nth):
        pos = text.index(old, pos + 1)
    text = text[:pos] + new + text[pos + len(old):]
    path = tmp_path / "ut_variant.cpp"
    path.write_text(text)
    return path, text


def test_ut_unknown_statement_names_its_line(tmp_path: Path) -> None:
    path, text = _ut_variant(tmp_path, "    uint64_t workspace_size = 0;\n",
                             "    uint64_t workspace_size = 0;\n    ut.SetSeed(3);\n", 3)
    with raises_at(path, line_of(text, "ut.SetSeed"), r"\.SetSeed\(1 arguments\) not "
                   "understood"):
        read_ops_nn_ut(path, API_3D)
    path, text = _ut_variant(tmp_path, "    auto self = nullptr;\n",
                             "    auto self = nullptr;\n    int x = 3;\n")
    with raises_at(path, line_of(text, "int x"), "statement not understood: 'int x = 3 ;'"):
        read_ops_nn_ut(path, API_3D)


def test_ut_file_of_the_other_api_names_the_line() -> None:
    line = line_of(UT_3D.read_text(), "OP_API_UT(aclnnAdaptiveAvgPool3dBackward")
    with raises_at(UT_3D, line, f"calls {API_3D}, not {API_2D}"):
        read_ops_nn_ut(UT_3D, API_2D)


@pytest.mark.parametrize(("old", "new", "marker", "words"), [
    ("ACL_COMPLEX128", "ACL_COMPLEX32", "ACL_COMPLEX32", ("unknown dtype ACL_COMPLEX32",)),
    ("ACL_FORMAT_NDHWC", "ACL_FORMAT_NC", "ACL_FORMAT_NC)", ("unknown format ACL_FORMAT_NC",)),
    ("ACLNN_ERR_PARAM_NULLPTR", "ACLNN_ERR_INNER", "ERR_INNER", ("unknown name ACLNN_ERR_INNER",)),
    (".ValueRange(-1, 1)", ".ValueRange(1, -1)", "(1, -1)", (r"ValueRange\(1, -1\)",)),
    (".ValueRange(-2, 2)", ".ValidCount(2)", "ValidCount", (r"\.ValidCount",)),
    ("vector<float>{1.0f, -1}", "vector<float>{1.0f}", "{1.0f}", ("Value gives 1 values",)),
    ("vector<double>", "vector<half>", "<half>", (r"vector<half> values not understood",)),
    ("for (auto dtype : dtypes)", "while (true)", "while", ("statement not understood",)),
    ("OUTPUT(out));", "OUTPUT(out), 1);", "OUTPUT(out), 1", ("OP_API_UT takes",)),
    ("TEST_F(l2_sample_test, plain_success)", "TEST(l2_sample_test, plain_success)",
     "TEST(", (r"TEST\(\.\.\.\) tests are not understood",)),
    ("    EXPECT_EQ(aclRet, ACL_SUCCESS);  //",
     "    EXPECT_EQ(aclRet, ACL_SUCCESS);\n    EXPECT_EQ(aclRet, ACL_SUCCESS);  //",
     "ACL_SUCCESS);  //", ("checked twice",)),
])
def test_ut_unknown_constructs_name_their_line(tmp_path: Path, old: str, new: str, marker: str,
                                               words: tuple[str, ...]) -> None:
    path, text = _ut_variant(tmp_path, old, new)
    with raises_at(path, line_of(text, marker), *words):
        read_ops_nn_ut(path, API_3D)


def test_ut_test_without_a_call_or_check_is_skipped(tmp_path: Path) -> None:
    path, _ = _ut_variant(tmp_path, "    EXPECT_EQ(aclRet, ACLNN_ERR_PARAM_NULLPTR);\n", "")
    got = read_ops_nn_ut(path, API_3D)
    assert Skipped("ut:ut_variant.cpp:66 self_nullptr", "asserts nothing (the status of "
                   "TestGetWorkspaceSize is not checked)") in got.skipped
    assert "self_nullptr" not in {e["id"] for e in got.entries}


# -- the vendor's own files --------------------------------------------------------------------

def _vendor(name: str) -> Path:
    path = VENDOR / name
    if not path.is_file():
        pytest.skip(f"{path} absent (the vendor's files are not in the repository)")
    return path


@pytest.mark.parametrize("api", [API_2D, API_3D])
def test_vendor_atk_files_import_every_case(api: str) -> None:
    got = read_atk(_vendor(f"atk_{api}.json"), api, "atlas-a2")
    assert len(got.entries) == 209 and got.skipped == ()
    assert {e["format"] for e in got.entries} == {"NCHW"}
    assert all("vendor_status" not in e for e in got.entries)


@pytest.mark.parametrize(("api", "entries", "skipped", "statuses"), [
    # 27 tests: 17 check the status (two loop over 3 and 2 dtypes), 9 only TestPrecision(),
    # 1 nothing
    (API_2D, 20, 10, {0: 7, 161002: 13}),
    # 34 TEST_F, one commented out: 33 tests, all checked
    (API_3D, 33, 0, {0: 16, 161002: 15, 161001: 2}),
])
def test_vendor_unit_tests_import(api: str, entries: int, skipped: int,
                                  statuses: dict[int, int]) -> None:
    got = read_ops_nn_ut(_vendor(f"test_aclnn_{api.removeprefix('aclnn')}.cpp"), api)
    assert (len(got.entries), len(got.skipped)) == (entries, skipped)
    assert collections.Counter(e["vendor_status"] for e in got.entries) == statuses
