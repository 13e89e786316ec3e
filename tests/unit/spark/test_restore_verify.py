"""Restore verification plans: every table's ring counted once, judged against the manifest."""

from __future__ import annotations

import itertools

import pytest

from tabletdb.spark.backup_manifest import BackupFile, Manifest, TableEntry
from tabletdb.spark.restore_verify import MAX_TOKEN, MIN_TOKEN, VNODE_SLICES, judge, plan_checks


def _file(first: int, last: int, rows: int, host: str = "h1") -> BackupFile:
    return BackupFile(0, first, last, f"{host}/{first}", 1, "x", rows, host)


def _manifest(replicas: str = "one") -> Manifest:
    tablets = TableEntry(
        "ks",
        "t",
        "id-t",
        True,
        3,
        [-100, 100, MAX_TOKEN],
        # tablet (-100, 100] was never written: no file
        row_count=7,
        files=[_file(MIN_TOKEN, -100, 3), _file(100, MAX_TOKEN, 4), _file(100, MAX_TOKEN, 2, "h2")],
    )
    vnodes = TableEntry("ks", "v", "id-v", False, 0, [], row_count=5, files=[])
    return Manifest("c", "now", "tag", ["ks"], [tablets, vnodes], replicas=replicas)


def test_the_plan_follows_tablets_and_slices_vnode_rings() -> None:
    checks = plan_checks(_manifest())
    tablet = [c for c in checks if c.table_id == "id-t"]
    assert [(c.first, c.last, c.expected) for c in tablet] == [
        (MIN_TOKEN, -100, 3),
        (-100, 100, 0),
        (100, MAX_TOKEN, 4),  # the fullest replica's file
    ]
    ring = [c for c in checks if c.table_id == "id-v"]
    assert len(ring) == VNODE_SLICES and all(c.expected is None for c in ring)
    assert ring[0].first == MIN_TOKEN and ring[-1].last == MAX_TOKEN
    assert all(a.last == b.first for a, b in itertools.pairwise(ring))  # no gap, no overlap
    assert len({c.key for c in checks}) == len(checks)


def _counts(manifest: Manifest, tablet_counts: list[int], vnode_total: int) -> dict[str, int]:
    checks = plan_checks(manifest)
    ring = [c for c in checks if c.table_id == "id-v"]
    counts = {c.key: n for c, n in zip([c for c in checks if c.table_id == "id-t"], tablet_counts)}
    counts.update({c.key: 0 for c in ring})
    counts[ring[0].key] = vnode_total
    return counts


def test_matching_counts_pass() -> None:
    manifest = _manifest()
    assert judge(manifest, plan_checks(manifest), _counts(manifest, [3, 0, 4], 5)) == []


@pytest.mark.parametrize(
    ("tablets", "vnode_total", "expected"),
    [
        (
            [3, 1, 4],
            5,
            ["ks.t tokens (-100, 100]: 1 rows, the backup has 0", "ks.t: 8 rows, the backup has 7"],
        ),
        ([3, 0, 4], 4, ["ks.v: 4 rows, the backup has 5"]),
    ],
)
def test_a_mismatch_names_the_table_and_the_range(
    tablets: list[int], vnode_total: int, expected: list[str]
) -> None:
    manifest = _manifest()
    assert judge(manifest, plan_checks(manifest), _counts(manifest, tablets, vnode_total)) == expected


def test_all_replica_backups_accept_more_rows_but_not_fewer() -> None:
    manifest = _manifest("all")
    assert judge(manifest, plan_checks(manifest), _counts(manifest, [3, 1, 5], 6)) == []
    assert judge(manifest, plan_checks(manifest), _counts(manifest, [2, 1, 5], 6)) == [
        f"ks.t tokens ({MIN_TOKEN}, -100]: 2 rows, the backup has 3"
    ]
