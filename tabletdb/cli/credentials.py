"""Credentials files for the commands that connect as a client (`load`, `backup`, `restore`).

The format is cqlsh's `cqlshrc`, so the file a user already has for cqlsh works unchanged.
"""

from __future__ import annotations

import configparser
from pathlib import Path

import click


def read_credentials(path: str) -> tuple[str, str]:
    """A cqlshrc-style file: `[authentication]` with `username` and `password` (the section
    header may be left out)."""
    text = Path(path).read_text()
    parser = configparser.ConfigParser()
    parser.read_string(text if text.lstrip().startswith("[") else "[authentication]\n" + text)
    section = parser["authentication"] if parser.has_section("authentication") else None
    if section is None or "username" not in section or "password" not in section:
        raise click.BadParameter(f"{path} needs username and password under [authentication]")
    return section["username"], section["password"]
