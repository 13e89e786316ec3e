"""The ``tabletdb`` command.

``tabletdb server`` loads the node configuration (YAML file, then flags named like scylla.yaml
keys with dashes) and runs one node until SIGTERM/SIGINT. Configuration mistakes print a single
line and exit 2 so scripts and the test harness can tell them from crashes. Heavy modules (the
node runner, the simulator) are imported only by the command that needs them: ``tabletdb --help``
stays fast and a broken subsystem cannot take the whole command line down.
"""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Sequence
from typing import Any

import click

from tabletdb.cli.logfmt import LEVELS, configure_logging
from tabletdb.node.config import (
    AUTHENTICATORS,
    AUTHORIZERS,
    TABLETS_MODES,
    ConfigError,
    NodeConfig,
    config_sources,
    ignored_keys,
    load_config,
    write_effective_config,
)

EXIT_CONFIG_ERROR = 2
_RUNNER_MODULE = "tabletdb.node.runner"

# Subcommands living in their own modules: name -> (module, attribute names to try in order).
_LAZY_COMMANDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "sim": ("tabletdb.cli.sim_cmd", ("sim_group", "sim_command")),
    "load": ("tabletdb.cli.load", ("load_command",)),
    "backup": ("tabletdb.cli.backup", ("backup_command",)),
    "restore": ("tabletdb.cli.backup", ("restore_command",)),
    "cluster": ("tabletdb.cli.cluster", ("cluster_group",)),
    "status": ("tabletdb.cli.status", ("status_command",)),
    "cdc": ("tabletdb.cli.cdc", ("cdc_group",)),
    "nodetool": ("tabletdb.cli.nodetool", ("nodetool_group",)),
}


class _LazyGroup(click.Group):
    """A group whose extra subcommands are imported only when invoked or listed in --help."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is not None or cmd_name not in _LAZY_COMMANDS:
            return command
        module_name, attributes = _LAZY_COMMANDS[cmd_name]
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            return _unavailable_command(cmd_name, f"{module_name} is not part of this build yet")
        for attribute in attributes:
            found = getattr(module, attribute, None)
            if isinstance(found, click.Command):
                return found
        return _unavailable_command(cmd_name, f"{module_name} defines none of {', '.join(attributes)}")


def _unavailable_command(name: str, reason: str) -> click.Command:
    def fail() -> None:
        raise click.ClickException(f"'tabletdb {name}' is unavailable: {reason}")

    return click.Command(name, callback=fail, help=f"(unavailable: {reason})")


def _parse_option_pairs(pairs: Sequence[str]) -> dict[str, str]:
    """`-o key=value` pairs: any config key, for settings without a dedicated flag."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError("-o/--option", pair, "KEY=VALUE with a scylla.yaml key name")
        out[key.strip()] = value
    return out


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tabletdb")
def cli() -> None:
    """tabletdb: a distributed CQL database (ScyllaDB look-alike) in Python."""


@cli.command()
@click.option("--config", "config_file", type=click.Path(dir_okay=False), help="scylla.yaml-style file.")
@click.option("--workdir", help="Data directory of this node (node.yaml, raft/, data/ live here).")
@click.option("--cluster-name")
@click.option("--listen-address", help="Address for internode traffic (default 127.0.0.1).")
@click.option("--rpc-address", help="Address CQL clients connect to (default: listen address).")
@click.option("--broadcast-address")
@click.option("--native-transport-port", type=int, help="CQL port (default 9042).")
@click.option("--native-shard-aware-transport-port", type=int, help="Shard-aware CQL port (default: none).")
@click.option("--seeds", help="Comma-separated seed addresses (default: this node, a new cluster).")
@click.option("--smp", type=int, help="Logical shards of this node (default 2).")
@click.option("--authenticator", help=f"{' | '.join(AUTHENTICATORS)} (org.apache.cassandra.auth.* accepted).")
@click.option("--authorizer", help=f"{' | '.join(AUTHORIZERS)}.")
@click.option("--api-address", help="REST admin API address (default: listen address).")
@click.option("--api-port", type=int, help="REST admin API port (default 10000).")
@click.option("--dc", help="Datacenter name (default datacenter1).")
@click.option("--rack", help="Rack name (default rack1).")
@click.option("--tablets-mode-for-new-keyspaces", type=click.Choice(TABLETS_MODES))
@click.option("--maintenance-mode/--no-maintenance-mode", default=None, help="Start without joining.")
@click.option(
    "--replace-node-first-boot",
    metavar="HOST_ID",
    help="Host id of a dead node this new node replaces (first boot only).",
)
@click.option("-o", "--option", "options", multiple=True, metavar="KEY=VALUE", help="Any config key.")
@click.option(
    "--log-level",
    type=click.Choice(LEVELS, case_sensitive=False),
    default="WARNING",
    show_default=True,
    help="Structured key=value logs on stderr.",
)
def server(config_file: str | None, options: tuple[str, ...], log_level: str, **flags: Any) -> None:
    """Run one node until SIGTERM or SIGINT."""
    configure_logging(log_level)
    try:
        given = {key: value for key, value in flags.items() if value is not None}
        overrides: dict[str, Any] = {**_parse_option_pairs(options), **given}
        config = load_config(config_file, overrides)
        sources = config_sources(config_file, overrides)
        ignored = ignored_keys(config_file, overrides)
        write_effective_config(config)
    except ConfigError as exc:
        click.echo(f"tabletdb: config error: {exc}", err=True)
        sys.exit(EXIT_CONFIG_ERROR)
    except OSError as exc:
        click.echo(f"tabletdb: cannot write the effective config into the workdir: {exc}", err=True)
        sys.exit(EXIT_CONFIG_ERROR)
    if ignored:
        logging.getLogger("tabletdb.node.config").warning(
            "config keys accepted and ignored (ScyllaDB keys without effect here): %s", ", ".join(ignored)
        )
    sys.exit(_run_server(config, sources))


def _run_server(config: NodeConfig, sources: dict[str, str]) -> int:
    """Import the node runner only now: it pulls in every layer of the server."""
    try:
        runner = importlib.import_module(_RUNNER_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name != _RUNNER_MODULE:
            raise
        click.echo(f"tabletdb: {_RUNNER_MODULE} is not part of this build yet", err=True)
        return 1
    code: int = runner.run_server(config, sources)
    return code


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point (`tabletdb = "tabletdb.cli.main:main"`)."""
    cli.main(args=list(argv) if argv is not None else None, prog_name="tabletdb")


if __name__ == "__main__":
    main()
