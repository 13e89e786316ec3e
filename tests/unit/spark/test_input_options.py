"""`tabletdb load`'s input rules: the format from the name, CSV options by Spark's names."""

from __future__ import annotations

from pathlib import Path

import pytest

from tabletdb.spark import input_options
from tabletdb.spark.input_options import (
    CsvOptions,
    InputOptionError,
    infer_format,
    parse_csv_options,
    parse_pairs,
    single_line_records,
)


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("rows.csv", "csv"),
        ("ROWS.CSV.gz", "csv"),
        ("part-0.snappy.parquet", "parquet"),
        ("x.pq", "parquet"),
        ("events.jsonl", "json"),
        ("events.ndjson.bz2", "json"),
        ("events.json", "json"),
    ],
)
def test_the_format_comes_from_the_extension(tmp_path: Path, name: str, fmt: str) -> None:
    (tmp_path / name).write_text("")
    assert infer_format(str(tmp_path / name)) == fmt


def test_a_directory_is_judged_by_its_data_files(tmp_path: Path) -> None:
    for name in ("_SUCCESS", ".part-0.parquet.crc", "part-0.parquet", "part-1.parquet"):
        (tmp_path / name).write_text("")
    assert infer_format(str(tmp_path)) == "parquet"
    (tmp_path / "notes.csv").write_text("")
    with pytest.raises(InputOptionError, match=r"mixes formats.*--format parquet\|csv\|json"):
        infer_format(str(tmp_path))


def test_an_unknown_extension_is_one_line_asking_for_format(tmp_path: Path) -> None:
    (tmp_path / "rows.txt").write_text("")
    with pytest.raises(InputOptionError, match=r"cannot tell the format of .*rows\.txt") as caught:
        infer_format(str(tmp_path / "rows.txt"))
    assert "\n" not in str(caught.value)


def test_csv_defaults_read_rfc_4180() -> None:
    options = parse_csv_options({}, "csv")
    assert options == CsvOptions()
    assert options.spark_options() == {
        "header": "true",
        "sep": ",",
        "quote": '"',
        "escape": '"',
        "multiLine": "true",
        "nullValue": "",
    }


def test_csv_options_take_spark_names_case_insensitively() -> None:
    pairs = parse_pairs(
        ["HEADER=false", "sep=\\t", "quote='", "escape=\\", "multiline=FALSE", "nullValue=NA"]
    )
    options = parse_csv_options(pairs, "csv")
    assert options == CsvOptions(False, "\t", "'", "\\", False, "NA")
    assert parse_csv_options({"delimiter": ";"}, "csv").delimiter == ";"
    assert parse_csv_options(parse_pairs(["nullValue="]), "csv").null_value == ""


@pytest.mark.parametrize(
    ("pairs", "fmt", "message"),
    [
        ({"inferSchema": "true"}, "csv", "unknown CSV option 'inferSchema'"),
        ({"header": "yes"}, "csv", "header must be true or false"),
        ({"quote": "''"}, "csv", "quote must be one character"),
        ({"header": "true"}, "parquet", "apply to CSV input, this input is parquet"),
    ],
)
def test_options_that_would_be_ignored_are_refused(pairs: dict[str, str], fmt: str, message: str) -> None:
    with pytest.raises(InputOptionError, match=message):
        parse_csv_options(pairs, fmt)


def test_pairs_need_an_equals_sign() -> None:
    with pytest.raises(InputOptionError, match="KEY=VALUE"):
        parse_pairs(["header"])


def test_a_csv_whose_fields_hold_no_line_break_is_read_line_by_line(tmp_path: Path) -> None:
    plain = tmp_path / "plain.csv"
    plain.write_bytes(b'id,name,tags\r\n1,"a ""quoted"" name","[""x""]"\r\n2,b,\r\n')
    assert single_line_records(str(plain), CsvOptions())
    assert CsvOptions().for_input(str(plain)).multi_line is False
    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "part-0.csv").write_text("id,name\n1,a\n")
    (parts / "_SUCCESS").write_text("")
    (parts / "part-1.csv").write_text('id,name\n2,"b, c"')  # no final newline
    assert single_line_records(str(parts), CsvOptions())


@pytest.mark.parametrize(
    "content",
    [
        b'id,name\n1,"two\nlines"\n',  # a quoted field holding a line break
        b'id,name\n1,"two\r\nlines"\n',
        b"id,name\r1,a\r",  # bare carriage returns: not decided
        b'id,name\n1,ab"c\n',  # a stray quote: not decided either
    ],
)
def test_a_csv_that_may_hold_a_field_across_lines_stays_multi_line(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "rows.csv"
    path.write_bytes(content)
    assert not single_line_records(str(path), CsvOptions())
    assert CsvOptions().for_input(str(path)).multi_line is True


def test_a_field_across_a_scan_chunk_boundary_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(input_options, "SCAN_CHUNK", 7)
    path = tmp_path / "rows.csv"
    path.write_bytes(b'id,name\n1,"a"\n2,"b\nc"\n3,d\n')
    assert not single_line_records(str(path), CsvOptions())
    path.write_bytes(b'id,name\n1,"a"\n2,"b c"\n3,d\n')
    assert single_line_records(str(path), CsvOptions())


def test_inputs_the_scan_cannot_judge_keep_the_options_given(tmp_path: Path) -> None:
    compressed = tmp_path / "rows.csv.gz"
    compressed.write_bytes(b"")
    assert not single_line_records(str(compressed), CsvOptions())
    assert not single_line_records("s3://bucket/rows.csv", CsvOptions())
    plain = tmp_path / "rows.csv"
    plain.write_text("id,name\n1,a\n")
    assert not single_line_records(str(plain), CsvOptions(escape="\\"))
    assert CsvOptions(multi_line=False).for_input(str(plain)).multi_line is False
