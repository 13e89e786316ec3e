"""`tabletdb load`'s input rules: the format from the name, CSV options by Spark's names."""

from __future__ import annotations

from pathlib import Path

import pytest

from tabletdb.spark.input_options import (
    CsvOptions,
    InputOptionError,
    infer_format,
    parse_csv_options,
    parse_pairs,
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
