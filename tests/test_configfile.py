"""configfile: the one reader of case files, tolerance overrides and known-failure lists.
Errors are one line, `FILE: entry N, field 'x': message`, whatever the file holds."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aclcheck.configfile import MAX_DEPTH, Entry, nesting_depth, read_document
from aclcheck.errors import ConfigError, SuiteError, UsageError
from aclcheck.judging.case.overrides import load_overrides
from aclcheck.judging.gate import xfail
from aclcheck.suite.casefile import load_case_file


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_toml_and_json_by_suffix(tmp_path: Path) -> None:
    assert read_document(write(tmp_path, "a.toml", "x = [1, 2]\n"), "file") == {"x": [1, 2]}
    assert read_document(write(tmp_path, "a.JSON", '{"x": [1, 2]}'), "file") == {"x": [1, 2]}
    assert read_document(write(tmp_path, "a.txt", '{"x": 1}'), "file", syntax="json") == {"x": 1}


@pytest.mark.parametrize(("name", "text", "fragment"), [
    ("a.toml", "x = ", "not valid TOML"),
    ("a.json", "{", "not valid JSON"),
    ("a.json", "[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("a.json", "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), f"at most {MAX_DEPTH}"),
    ("a.toml", "a = " + "[" * 40 + "]" * 40, f"at most {MAX_DEPTH}"),
])
def test_syntax_and_nesting_errors_are_one_line(tmp_path: Path, name: str, text: str,
                                                fragment: str) -> None:
    path = write(tmp_path, name, text)
    with pytest.raises(ConfigError) as info:
        read_document(path, "file")
    message = str(info.value)
    assert message.startswith(f"{path}: ") and fragment in message and "\n" not in message


def test_size_limit_and_non_regular_files(tmp_path: Path) -> None:
    big = write(tmp_path, "big.toml", "x = 1\n" * 100)
    with pytest.raises(ConfigError, match="over the 10-byte limit"):
        read_document(big, "file", max_bytes=10)
    with pytest.raises(ConfigError, match="cannot read case file: no such file"):
        read_document(tmp_path / "absent.toml", "case file")
    with pytest.raises(ConfigError, match="not a regular file"):
        read_document(tmp_path, "file")
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe.toml")
        with pytest.raises(ConfigError, match="not a regular file"):  # and does not block
            read_document(tmp_path / "pipe.toml", "file")


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc")
def test_the_limit_binds_what_is_read_not_what_stat_says() -> None:
    """/proc files are regular and report size 0, as a file swapped or grown after a
    size check would: the limit counts the bytes read."""
    with pytest.raises(ConfigError, match="over the 10-byte limit"):
        read_document("/proc/self/maps", "file", max_bytes=10, syntax="json")


def test_nesting_depth_is_iterative() -> None:
    deep: list = []
    node = deep
    for _ in range(10_000):
        node.append([])
        node = node[0]
    assert nesting_depth(deep) == MAX_DEPTH + 1  # stops counting past the limit
    assert nesting_depth({"a": [1, {"b": 2}]}) == 3 and nesting_depth(5) == 0


def test_entry_names_file_entry_and_field() -> None:
    entry = Entry.of({"name": 3, "n": -1, "flag": "yes", "tags": ["a", 2]}, "f.toml", 4,
                     ("name", "n", "flag", "tags", "dims"))
    for call, field, fragment in [
        (lambda: entry.text("name"), "name", "must be a string, got int"),
        (lambda: entry.integer("n", lo=0), "n", "must be an integer in [0, 2**63)"),
        (lambda: entry.boolean("flag"), "flag", "must be true or false"),
        (lambda: entry.text_list("tags"), "tags", "must be a list of strings"),
        (lambda: entry.dims("dims", 4, 10), "dims", "missing required key"),
    ]:
        with pytest.raises(ConfigError) as info:
            call()
        message = str(info.value)
        assert message.startswith(f"f.toml: entry 4, field {field!r}: ") and fragment in message
    with pytest.raises(ConfigError, match=r"entry 2, field 'bad': unknown key \(valid: a\)"):
        Entry.of({"bad": 1}, "f.toml", 2, ("a",))
    with pytest.raises(ConfigError, match=r"entry 2, field '-': entry must be a table"):
        Entry.of([1], "f.toml", 2, ("a",))


def test_dims_are_bounded() -> None:
    entry = Entry.of({"s": [1, 10**30]}, "c.json", 1, ("s",))
    with pytest.raises(ConfigError, match=r"field 's': dim 10+ is over the limit of 1024"):
        entry.dims("s", 4, 1024)


def test_the_three_formats_share_the_style(tmp_path: Path) -> None:
    cases = write(tmp_path, "c.toml", '[[cases]]\nproduct = "atlas-a2"\ndtype = 1\n'
                  'format = "ND"\nself_shape = [1, 4, 4]\ngrad_shape = [1, 2, 2]\n')
    with pytest.raises(SuiteError, match=r"c.toml: entry 1, field 'dtype': must be a string"):
        load_case_file(cases)
    known = write(tmp_path, "x.toml", '[[xfail]]\nid = "a*"\nreason = "r"\nmay_pass = 1\n')
    with pytest.raises(UsageError, match=r"x.toml: entry 1, field 'may_pass': must be true"):
        xfail.load_xfails(known)
    deep = write(tmp_path, "t.toml", "a = " + "[" * 40 + "]" * 40)
    with pytest.raises(UsageError, match=r"t.toml: nested"):
        load_overrides(deep)
