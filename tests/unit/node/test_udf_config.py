"""ScyllaDB's two UDF switches: both or neither, and `udf` the only experimental feature."""

from __future__ import annotations

from pathlib import Path

import pytest

from tabletdb.node.config import ConfigError, NodeConfig, load_config


def test_udfs_need_both_switches(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="You must use both enable_user_defined_functions and experimental"):
        NodeConfig(workdir=tmp_path, enable_user_defined_functions=True)
    assert not NodeConfig(workdir=tmp_path, experimental_features=("udf",)).user_defined_functions
    both = load_config(
        None,
        {"workdir": str(tmp_path), "enable_user_defined_functions": "true", "experimental_features": "udf"},
    )
    assert both.user_defined_functions and both.experimental_features == ("udf",)


def test_unknown_experimental_features_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="'views-with-tablets'"):
        NodeConfig(workdir=tmp_path, experimental_features=["udf", "views-with-tablets"])  # type: ignore[arg-type]
