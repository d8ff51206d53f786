"""Reading a file: what is not a regular file, not UTF-8, not TOML or too costly to parse is one line
naming the file and the line (where there is one); and what a file says is shown escaped."""

from __future__ import annotations

import os
import tomllib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import cli_runner
from osep import bounds as B
from osep.config.toml import escape, read_toml, show, toml_key, toml_string
from osep.errors import ConfigError
from osep.ui.cli import cli

SCENARIO = '[scenario]\n[pool]\nslots = 1\n[owners]\na = 1\n[[submit]]\nowner = "a"\nruntime = 1\n'


def write(tmp_path, text, name="f.toml"):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def fails(loader, path):
    with pytest.raises(ConfigError) as info:
        loader(path)
    text = str(info.value)
    assert "\n" not in text and text.isprintable(), text
    return info.value


@pytest.mark.parametrize("data, key, reason", [
    (b"[owners]\na = 1\n\xff = 2\n", "line 3, column 1", "not UTF-8 text (byte 0xff)"),
    (b"[owners]\na = 1\na = 2\n", "line 3, column 6", "not valid TOML: Cannot overwrite a value"),
    (b"a = [1,", "end of file", "not valid TOML: Invalid value"),
    (b"a = " + b"[" * 1000 + b"]" * 1000, None, "nested too deeply"),
    (b"a = " + b"9" * 5000, None, "a number with too many digits"),
    (b"x" + b".x" * 16 + b" = 1\n", "line 1", "a dotted key of more than 16 parts"),
    (b'[o]\n"a"' + b'."a"' * 20 + b" = 1\n", "line 2", "a dotted key of more than 16 parts"),
    (b"a = { x" + b".x" * 20 + b" = 1 }\n", "line 1", "a dotted key of more than 16 parts"),
    (b"[t]\n" * (B.MAX_TABLES + 1), None, "more than 2,500 tables"),
    (b"a = '" + b"x" * B.MAX_FILE_BYTES + b"'\n", None, "larger than 524,288 bytes"),
])
def test_files_that_are_not_toml(tmp_path, data, key, reason):
    err = fails(read_toml, write(tmp_path, data))
    assert err.key == key and reason in err.reason


def test_paths_that_are_not_files(tmp_path):
    assert fails(read_toml, tmp_path).reason == "is a directory, not a file"
    os.mkfifo(tmp_path / "fifo")
    assert fails(read_toml, tmp_path / "fifo").reason == "not a regular file"  # and does not block
    (tmp_path / "zero").symlink_to("/dev/zero")
    assert fails(read_toml, tmp_path / "zero").reason == "not a regular file"
    assert fails(read_toml, tmp_path / "missing").reason == "no such file"
    assert "File name too long" in fails(read_toml, tmp_path / ("x" * 300)).reason
    with pytest.raises(ConfigError, match="NUL"):  # the path itself: the command line escapes it
        read_toml("a\x00b")


def test_what_a_file_says_is_shown_escaped_and_short():
    assert show("a\nb\x1b[31m\u202e") == "'a\\nb\\x1b[31m\\u202e'"
    assert show("x" * 100) == "'" + "x" * 60 + "... (100 characters)'"
    assert show(10**5000) == "a whole number of about 5,001 digits"
    assert show(float("nan")) == "nan" and show([1]) == "an array" and show({}) == "a table"
    assert escape("tab\there\u2028") == "tab\\there\\u2028"
    assert escape("\udcff") == "\\udcff"  # a file name that is not UTF-8


def test_escaped_paths_in_errors_and_output(tmp_path):
    runner = cli_runner()
    bad = write(tmp_path, "[owners]\na = -1\n", "new\nline\x1b[31m.toml")
    result = runner.invoke(cli, ["validate", str(bad)])
    assert result.exit_code == 2
    assert result.stderr == f"osep: error: {tmp_path}/new\\nline\\x1b[31m.toml: owners.a: " \
                            "a share is a finite number, not negative; got -1\n"
    good = write(tmp_path, SCENARIO, "good\n.toml")
    result = runner.invoke(cli, ["validate", str(good)])
    assert result.exit_code == 0 and result.stdout.startswith(f"{tmp_path}/good\\n.toml: scenario 'good\\\\n'")
    result = runner.invoke(cli, ["validate", str(tmp_path)])
    assert result.exit_code == 2 and result.stderr == f"osep: error: {tmp_path}: is a directory, not a file\n"


@pytest.mark.parametrize(("text", "written"), [
    ("plain", '"plain"'), ('say "hi"', '"say \\"hi\\""'), ("back\\slash", '"back\\\\slash"'),
    ("two\nlines", '"two\\nlines"'), ("bell\x07", '"bell\\u0007"'), ("sep\u2028", '"sep\\u2028"'),
    ("grüße 日本", '"grüße 日本"'), ("\U000e0041", '"\\U000e0041"'),
])
def test_strings_are_written_whole_as_toml(text, written):
    assert toml_string(text) == written
    assert tomllib.loads(f"k = {written}") == {"k": text}


def test_keys_are_bare_where_they_can_be():
    assert toml_key("group_physics-2") == "group_physics-2"
    assert toml_key("a.b") == '"a.b"' and toml_key("") == '""' and toml_key("x y") == '"x y"'
    with pytest.raises(ValueError, match="surrogate"):
        toml_string("\udcff")


@given(st.text(alphabet=st.characters(exclude_categories=["Cs"])))
def test_any_string_is_written_as_toml_and_read_back(text):
    assert tomllib.loads(f"{toml_key(text)} = {toml_string(text)}") == {text: text}
    assert "\n" not in toml_string(text) and "\r" not in toml_string(text)
