"""The topology coordinator under simulated faults (`tabletdb.sim.topo_seed`): a few seeds in
`make test`, many in `make soak`; every planted bug must be caught; a seed replays exactly.
The world has a tablet table and a vnode table, so requests run the vnode phase too."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from tabletdb.cli.sim_cmd import sim_group
from tabletdb.sim.seed_run import stage_label
from tabletdb.sim.topo_seed import run_topology_seed, run_topology_seeds

ALL_STEPS = {
    "start",
    "write_both_read_old",
    "streaming",
    "write_both_read_new",
    "use_new",
    "cleanup",
    "end_migration",
    "done",
    "finish",
    "roll back",
    "rolled back",
}


def test_a_few_seeds_pass_and_really_exercise_requests_and_faults() -> None:
    results = run_topology_seeds(0, 3)
    assert all(r.ok for r in results), "\n".join(r.describe() for r in results if not r.ok)
    assert sum(r.finished for r in results) >= 3
    assert all(r.writes_acked > 100 and r.coordinator_crashes > 0 for r in results)
    vnode_steps = {
        stage_label(line.split(": ", 1)[1]) for r in results for line in r.trace if " commit " in line
    }
    assert {"vnode_read_old", "vnode_fence", "vnode_read_new"} <= vnode_steps, sorted(vnode_steps)


def test_switching_reads_before_streaming_ends_is_caught() -> None:
    results = run_topology_seeds(0, 5, planted_bug="reads-before-streaming")
    caught = [r for r in results if not r.ok]
    assert caught, "the planted bug went unnoticed in 5 seeds"
    assert all("acknowledged write" in r.violations[0] for r in caught)
    assert all("--planted-bug reads-before-streaming" in r.replay_command() for r in caught)


def test_vnode_ranges_left_unstreamed_are_caught() -> None:
    results = run_topology_seeds(0, 5, planted_bug="vnode-ranges-unstreamed")
    caught = [r for r in results if any("acknowledged vnode write" in v for v in r.violations)]
    assert caught, "vnode ranges switched without their data went unnoticed in 5 seeds"


def test_applying_steps_without_the_state_id_guard_is_caught() -> None:
    results = run_topology_seeds(0, 5, planted_bug="unguarded")
    caught = [r for r in results if not r.ok]
    assert caught, "two coordinators acting on one state id went unnoticed in 5 seeds"
    assert any("two coordinators acted on state id" in v for r in caught for v in r.violations)


def test_a_seed_replays_the_same_trace() -> None:
    a, b = run_topology_seed(11), run_topology_seed(11)
    assert a.trace == b.trace and a.trace
    assert (a.finished, a.rolled_back, a.writes_acked) == (b.finished, b.rolled_back, b.writes_acked)


def test_stage_labels_name_the_step() -> None:
    assert stage_label("advance 3 tablet(s) to streaming") == "streaming"
    assert stage_label("start leave of x: 2 tablet move(s)") == "start"
    assert stage_label("rolled back join of x: why") == "rolled back"


def test_cli_reports_and_fails_on_a_finding() -> None:
    ok = CliRunner().invoke(sim_group, ["topology", "--seeds", "1", "--start", "3"])
    assert ok.exit_code == 0, ok.output
    assert "seeds: 1," in ok.output and "failing: 0" in ok.output
    bad = CliRunner().invoke(
        sim_group, ["topology", "--seeds", "1", "--planted-bug", "reads-before-streaming"]
    )
    assert bad.exit_code == 1 and "replay: tabletdb sim topology --start 0" in bad.output


@pytest.mark.slow
@pytest.mark.timeout(1800)  # ~2-5 s a seed on a loaded two-core box
def test_many_seeds_pass_and_the_coordinator_crashes_after_every_step() -> None:
    results = run_topology_seeds(100, 120)
    failures = [r.describe() for r in results if not r.ok]
    assert not failures, "\n".join(failures)
    crashed_after = set().union(*(r.crashed_after for r in results))
    assert crashed_after >= ALL_STEPS - {"refuse"}, sorted(ALL_STEPS - crashed_after)
    assert sum(r.rolled_back for r in results) > 0 and sum(r.finished for r in results) > 100
