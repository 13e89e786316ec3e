"""What `tabletdb load` reads: the input's format (from its name when not given) and CSV options.

CSV options carry the names and meanings of Spark's CSV reader (`header`, `delimiter`/`sep`,
`quote`, `escape`, `multiLine`, `nullValue`; names are case-insensitive, as Spark's are), so a
data engineer's habits carry over. Two defaults differ from Spark's, for files written by other
tools: `escape` is `"` (RFC 4180 doubles a quote inside a quoted field) and `multiLine` is true
(RFC 4180 allows line breaks inside quoted fields; Spark's default reads them as extra rows).
`multiLine=false` lets Spark split one large file across tasks when no field holds a line break.
Any other option is refused rather than ignored.

A multi-line CSV cannot be split: one Spark task parses the whole file while the other cores
wait, and the load then shuffles its rows to spread them. So before Spark starts, a local,
uncompressed CSV is scanned for a field holding a line break (`single_line_records`: with the
RFC's quoting, a line with an odd number of quote characters opens or closes such a field); when
there is none, `multiLine=true` and `false` read the same records, and the load reads it with
`false` (`for_input`).

No Spark here, so the rules are unit-tested without a JVM.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

FORMATS = ("parquet", "csv", "json")
_EXTENSIONS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".json": "json",
    ".jsonl": "json",
    ".ndjson": "json",
}
_COMPRESSION = (".gz", ".bz2", ".deflate", ".lz4", ".snappy", ".zst", ".zstd")


class InputOptionError(ValueError):
    """The input's format or an option cannot be used; the message says what to pass instead."""


def _format_of_name(name: str) -> str | None:
    """`x.csv`, `x.csv.gz` (Spark reads compressed text), `part-0.snappy.parquet`."""
    lowered = name.lower()
    for suffix in _COMPRESSION:
        lowered = lowered.removesuffix(suffix)
    return next((fmt for ext, fmt in _EXTENSIONS.items() if lowered.endswith(ext)), None)


def infer_format(path: str) -> str:
    """The format of a file from its extension; of a directory from the data files in it (Spark
    writes part files, `_SUCCESS` and dot files beside them, which are skipped)."""
    local = Path(path)
    names = [local.name]
    if local.is_dir():
        names = sorted(p.name for p in local.iterdir() if not p.name.startswith(("_", ".")) and p.is_file())
    found = {f for f in (_format_of_name(n) for n in names) if f is not None}
    if len(found) == 1:
        return found.pop()
    what = "mixes formats" if found else "has no extension this command knows"
    known = ", ".join(sorted(_EXTENSIONS))
    raise InputOptionError(
        f"cannot tell the format of {path}: it {what} ({known}); pass --format {'|'.join(FORMATS)}"
    )


@dataclass(frozen=True)
class CsvOptions:
    header: bool = True
    """False: the fields are the table's columns in DESCRIBE order (as cqlsh's COPY FROM reads)."""
    delimiter: str = ","
    quote: str = '"'
    escape: str = '"'
    multi_line: bool = True
    null_value: str = ""
    """The text read as null (Spark's default: an empty field)."""

    def spark_options(self) -> dict[str, str]:
        """The options for `spark.read.csv`, by Spark's names."""
        return {
            "header": str(self.header).lower(),
            "sep": self.delimiter,
            "quote": self.quote,
            "escape": self.escape,
            "multiLine": str(self.multi_line).lower(),
            "nullValue": self.null_value,
        }

    def for_input(self, path: str) -> CsvOptions:
        """These options for reading `path`: `multi_line` off when no record of it spans lines
        (`single_line_records`), so Spark splits the file across tasks; otherwise unchanged."""
        if self.multi_line and single_line_records(path, self):
            return replace(self, multi_line=False)
        return self


SCAN_CHUNK = 16 << 20


def _data_files(path: str) -> list[Path] | None:
    """The local, uncompressed files Spark would read for `path` (None: cannot tell)."""
    local = Path(path)
    if "://" in path or not local.exists():
        return None
    files = [local] if local.is_file() else sorted(
        p for p in local.rglob("*") if p.is_file() and not p.name.startswith(("_", "."))
    )  # fmt: skip
    if any(p.name.lower().endswith(_COMPRESSION) for p in files):
        return None
    return files


def _lines_balanced(data: bytes, quote: bytes) -> bool:
    """Whether every line of `data` (whole lines) has an even number of quotes and no bare CR."""
    if quote not in data and b"\r" not in data:
        return True
    return not any(line.count(quote) & 1 or b"\r" in line[:-1] for line in data.split(b"\n"))


def single_line_records(path: str, csv: CsvOptions) -> bool:
    """Whether no field of the local CSV at `path` (a file or a directory of part files) holds a
    line break, so reading it line by line gives the same records. Only decided when the escape
    is the quote (RFC 4180's doubled quote, which keeps a line's quote count even); False when
    unsure (another escape, a compressed or remote input, a carriage return inside a line)."""
    if csv.escape != csv.quote:
        return False
    files = _data_files(path)
    if not files:
        return False
    quote = csv.quote.encode()
    for file in files:
        with open(file, "rb") as source:
            rest = b""
            while chunk := source.read(SCAN_CHUNK):
                data = rest + chunk
                cut = data.rfind(b"\n") + 1
                if not _lines_balanced(data[:cut], quote):
                    return False
                rest = data[cut:]
            if rest and not _lines_balanced(rest, quote):
                return False
    return True


_NAMES = {
    "header": "header",
    "delimiter": "delimiter",
    "sep": "delimiter",
    "quote": "quote",
    "escape": "escape",
    "multiline": "multi_line",
    "nullvalue": "null_value",
}


def _boolean(key: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered not in ("true", "false"):
        raise InputOptionError(f"CSV option {key} must be true or false, got {value!r}")
    return lowered == "true"


def _character(key: str, value: str) -> str:
    text = "\t" if value == "\\t" else value
    if len(text) != 1:
        raise InputOptionError(f"CSV option {key} must be one character, got {value!r}")
    return text


def parse_csv_options(pairs: Mapping[str, str], fmt: str) -> CsvOptions:
    """`--option KEY=VALUE` pairs as CSV options; refused for other formats and unknown keys."""
    if pairs and fmt != "csv":
        raise InputOptionError(
            f"--option {', '.join(sorted(pairs))}: input options apply to CSV input, this input is {fmt}"
        )
    values: dict[str, object] = {}
    for key, value in pairs.items():
        field = _NAMES.get(key.lower())
        if field is None:
            raise InputOptionError(
                f"unknown CSV option {key!r}: use header, delimiter (or sep), quote, escape, "
                "multiLine or nullValue"
            )
        if field in ("header", "multi_line"):
            values[field] = _boolean(key, value)
        elif field == "null_value":
            values[field] = value
        else:
            values[field] = _character(key, value)
    return CsvOptions(**values)  # type: ignore[arg-type]


def parse_pairs(pairs: tuple[str, ...] | list[str]) -> dict[str, str]:
    """KEY=VALUE strings as a dict (the value may contain `=`; it may be empty: nullValue=)."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InputOptionError(f"--option takes KEY=VALUE, got {pair!r}")
        out[key.strip()] = value
    return out
