"""``tabletdb sim raft`` / ``sim topology`` / ``sim resize``: run seeded Raft (topology
coordinator, or tablet split and merge) simulations and report every failing seed with its replay.

The last line is always ``seeds: N, ops: X, violations: V`` so scripts (``make soak``) can parse
it, and the exit status is 1 when any seed found a violation.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

import click

from tabletdb.sim.nemesis import FAULT_KINDS
from tabletdb.sim.resize_seed import PLANTED_BUGS as RESIZE_BUGS
from tabletdb.sim.resize_seed import ResizeSeedResult, run_resize_seed
from tabletdb.sim.runner import SeedResult, run_seed
from tabletdb.sim.seed_run import SeedOutcome
from tabletdb.sim.topo_seed import PLANTED_BUGS, TopologySeedResult, run_topology_seed

W = TypeVar("W")
R = TypeVar("R")
S = TypeVar("S", bound=SeedOutcome)
F = TypeVar("F", bound=Callable[..., Any])


def _one(args: tuple[int, int, int, bool, tuple[str, ...]]) -> SeedResult:
    seed, nodes, ops, planted_bug, faults = args
    return run_seed(seed, nodes=nodes, ops=ops, planted_bug=planted_bug, faults=faults)


def _run_seeds(
    fn: Callable[[W], R], work: list[W], jobs: int, *, pool_from: int, chunksize: int
) -> Iterator[R]:
    """``fn`` over every seed's arguments, in order; in a process pool of ``jobs`` (0: one per CPU)
    only from ``pool_from`` seeds on: a pool costs more than it saves on a few."""
    workers = jobs or os.cpu_count() or 1
    if workers <= 1 or len(work) < pool_from:
        yield from map(fn, work)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(fn, work, chunksize=chunksize)


SEEDS = click.option(
    "--seeds", type=click.IntRange(min=1), default=100, show_default=True, help="Number of seeds."
)
START = click.option("--start", type=click.IntRange(min=0), default=0, show_default=True, help="First seed.")
JOBS = click.option(
    "--jobs",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Worker processes (0: one per CPU). Results do not depend on it.",
)
VERBOSE = click.option("--verbose", is_flag=True, help="Print a line for every seed, not only failing ones.")
TRACE = click.option(
    "--trace", is_flag=True, help="Print each failing seed's event trace (its last 60 lines)."
)


def _planted_bug(bugs: tuple[str, ...]) -> Callable[[F], F]:
    return click.option(
        "--planted-bug",
        type=click.Choice(bugs),
        default=None,
        help="Run with a deliberate bug the checkers must catch.",
    )


def _shown(results: Iterable[S], verbose: bool, trace: bool) -> Iterator[S]:
    """Each result, once its line (every seed's with ``verbose``, else a failing seed's) and, with
    ``trace``, a failing seed's last 60 trace lines are printed."""
    for result in results:
        if verbose or not result.ok:
            click.echo(result.describe())
        if trace and not result.ok:
            click.echo("\n".join(result.trace[-60:]))
        yield result


def _finish(failing: int, started: float, summary: str) -> None:
    """The last two lines (the last one parsed by scripts); exit status 1 if any seed failed."""
    click.echo(f"{failing} failing seeds ({time.perf_counter() - started:.1f}s)")
    click.echo(f"{summary}, failing: {failing}")
    if failing:
        raise SystemExit(1)


@click.group(name="sim")
def sim_group() -> None:
    """Deterministic simulation testing."""


@sim_group.command(name="raft")
@SEEDS
@START
@click.option("--nodes", type=click.IntRange(min=1), default=3, show_default=True, help="Nodes per cluster.")
@click.option(
    "--ops", type=click.IntRange(min=1), default=100, show_default=True, help="Client ops per seed."
)
@click.option(
    "--planted-bug",
    is_flag=True,
    help="Turn on the core's test-only bug (commit earlier-term entries by counting replicas).",
)
@click.option(
    "--faults",
    default=",".join(FAULT_KINDS),
    show_default=True,
    help="Comma-separated fault kinds the nemesis may inject (empty: none).",
)
@JOBS
@VERBOSE
def raft_command(
    seeds: int, start: int, nodes: int, ops: int, planted_bug: bool, faults: str, jobs: int, verbose: bool
) -> None:
    """Run seeds START..START+SEEDS-1 against the Raft core, durable log and checkers."""
    kinds = tuple(k for k in (part.strip() for part in faults.split(",")) if k)
    unknown = sorted(set(kinds) - set(FAULT_KINDS))
    if unknown:
        raise click.BadParameter(
            f"unknown fault kinds {unknown}; known: {', '.join(FAULT_KINDS)}", param_hint="--faults"
        )
    started = time.perf_counter()
    total_ops = violations = failing = 0
    work = [(seed, nodes, ops, planted_bug, kinds) for seed in range(start, start + seeds)]
    for result in _run_seeds(_one, work, jobs, pool_from=16, chunksize=8):
        total_ops += result.completed + result.indeterminate
        violations += len(result.violations)
        if not result.ok:
            failing += 1
        if verbose or not result.ok:
            click.echo(result.describe())
    elapsed = time.perf_counter() - started
    rate = total_ops / elapsed if elapsed else 0.0
    click.echo(f"{failing} failing seeds; {rate:.0f} simulated ops per wall-clock second ({elapsed:.1f}s)")
    click.echo(f"seeds: {seeds}, ops: {total_ops}, violations: {violations}")
    if violations:
        raise SystemExit(1)


def _one_topology(args: tuple[int, int, str]) -> TopologySeedResult:
    seed, requests, planted_bug = args
    return run_topology_seed(seed, requests=requests, planted_bug=planted_bug)


@sim_group.command(name="topology")
@SEEDS
@START
@click.option(
    "--requests",
    type=click.IntRange(min=1),
    default=6,
    show_default=True,
    help="Topology requests (join, decommission, removenode, replace) the operator makes per seed.",
)
@_planted_bug(PLANTED_BUGS)
@JOBS
@VERBOSE
@TRACE
def topology_command(
    seeds: int, start: int, requests: int, planted_bug: str | None, jobs: int, verbose: bool, trace: bool
) -> None:
    """Run seeds START..START+SEEDS-1 of the topology coordinator simulation."""
    started = time.perf_counter()
    failing = finished = rolled_back = 0
    work = [(seed, requests, planted_bug or "") for seed in range(start, start + seeds)]
    for result in _shown(_run_seeds(_one_topology, work, jobs, pool_from=8, chunksize=2), verbose, trace):
        finished += result.finished
        rolled_back += result.rolled_back
        failing += not result.ok
    _finish(failing, started, f"seeds: {seeds}, requests finished: {finished}, rolled back: {rolled_back}")


def _one_resize(args: tuple[int, int, str]) -> ResizeSeedResult:
    seed, length_ms, planted_bug = args
    return run_resize_seed(seed, length_ms=length_ms, planted_bug=planted_bug)


@sim_group.command(name="resize")
@SEEDS
@START
@click.option(
    "--length-ms",
    type=click.IntRange(min=1_000),
    default=6_000,
    show_default=True,
    help="Virtual milliseconds of faults and growing/shrinking tables per seed (then all faults heal).",
)
@_planted_bug(RESIZE_BUGS)
@JOBS
@VERBOSE
@TRACE
def resize_command(
    seeds: int,
    start: int,
    length_ms: int,
    planted_bug: str | None,
    jobs: int,
    verbose: bool,
    trace: bool,
) -> None:
    """Run seeds START..START+SEEDS-1 of the tablet split/merge simulation."""
    started = time.perf_counter()
    failing = splits = merges = 0
    work = [(seed, length_ms, planted_bug or "") for seed in range(start, start + seeds)]
    for result in _shown(_run_seeds(_one_resize, work, jobs, pool_from=8, chunksize=2), verbose, trace):
        splits += result.splits
        merges += result.merges
        failing += not result.ok
    _finish(failing, started, f"seeds: {seeds}, splits: {splits}, merges: {merges}")
