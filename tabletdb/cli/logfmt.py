"""Structured (logfmt: key=value) logging for the server process.

One line per event, machine-greppable, with any ``extra={...}`` fields appended, so test
harnesses and operators can filter a node's stderr without a parser. Quiet (WARNING) unless asked.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import TextIO

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

# Attributes every LogRecord has; anything else on a record came from `extra=` and is logged.
_STANDARD_ATTRS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


def _quote(value: object) -> str:
    """Quote a value only when it would otherwise be ambiguous to split on spaces and '='."""
    text = str(value)
    if text and not any(ch in text for ch in ' "=\n\t\\'):
        return text
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


class LogfmtFormatter(logging.Formatter):
    """Format records as ``ts=... level=... logger=... msg=... k=v ...``."""

    def format(self, record: logging.LogRecord) -> str:
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        parts = [
            f"ts={ts}.{int(record.msecs):03d}Z",
            f"level={record.levelname}",
            f"logger={_quote(record.name)}",
            f"msg={_quote(record.getMessage())}",
        ]
        for key, value in record.__dict__.items():
            if key not in _STANDARD_ATTRS and not key.startswith("_"):
                parts.append(f"{key}={_quote(value)}")
        if record.exc_info:
            parts.append(f"exc={_quote(self.formatException(record.exc_info))}")
        return " ".join(parts)


def configure_logging(level: str, stream: TextIO | None = None) -> None:
    """Install the logfmt handler on the root logger, replacing earlier handlers (idempotent)."""
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(LogfmtFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
