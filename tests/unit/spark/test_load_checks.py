"""`run_load` refuses what it cannot do before touching Spark or the cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tabletdb.spark.connection import parse_options
from tabletdb.spark.load import LoadError, run_load
from tabletdb.spark.session import parse_conf

RAW = {"hosts": "127.0.0.1", "table": "ks.t"}


def _run(path: Path, fmt: str, rejects: Path) -> Any:
    return run_load(None, parse_options(RAW), RAW, str(path), fmt, str(rejects))  # type: ignore[arg-type]


def test_unknown_format_missing_input_and_existing_rejects_are_refused(tmp_path: Path) -> None:
    source = tmp_path / "in.csv"
    source.write_text("k\n1\n")
    with pytest.raises(LoadError, match="unknown format 'xml'"):
        _run(source, "xml", tmp_path / "rej")
    with pytest.raises(LoadError, match="does not exist"):
        _run(tmp_path / "missing.csv", "csv", tmp_path / "rej")
    (tmp_path / "rej").mkdir()
    with pytest.raises(LoadError, match="already exists"):
        _run(source, "csv", tmp_path / "rej")


def test_spark_conf_pairs() -> None:
    assert parse_conf(["spark.a=1", "spark.b=x=y"]) == {"spark.a": "1", "spark.b": "x=y"}
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_conf(["novalue"])


def test_a_failed_task_is_reported_by_its_exception_line() -> None:
    from tabletdb.cli.load import _first_line

    wrapped = RuntimeError(
        "An exception was thrown from the Python worker:\n"
        "Traceback (most recent call last):\n"
        '  File "writer.py", line 171, in write_rows\n'
        '    raise WriteFailed(f"writing to {table} failed at {window.error}")\n'
        "tabletdb.spark.writer.WriteFailed: writing to ks.t failed at row (k=1): Error from server: "
        'code=2200 [Invalid query] message="A TTL must be greater or equal to 0, but was -5"\n'
    )
    assert _first_line(wrapped).startswith(
        "WriteFailed: writing to ks.t failed at row (k=1): Error from server"
    )
    assert _first_line(RuntimeError("plain failure")) == "plain failure"
