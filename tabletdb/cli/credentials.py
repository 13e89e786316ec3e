"""Credentials files for the commands that connect as a client (`load`, `backup`, `restore`).

The format is cqlsh's `cqlshrc`, so the file a user already has for cqlsh works unchanged.
"""

from __future__ import annotations

import configparser
from pathlib import Path

import click


def read_credentials(path: str) -> tuple[str, str]:
    """A cqlsh credentials file (`[PlainTextAuthProvider]` with `username` and `password`) or a
    cqlshrc-style one (the same keys under `[authentication]`; the header may be left out)."""
    text = Path(path).read_text()
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(text if text.lstrip().startswith("[") else "[authentication]\n" + text)
    for name in ("PlainTextAuthProvider", "authentication"):
        if parser.has_section(name) and {"username", "password"} <= set(parser[name]):
            return parser[name]["username"], parser[name]["password"]
    raise click.BadParameter(
        f"{path} needs username and password under [PlainTextAuthProvider] or [authentication]"
    )
