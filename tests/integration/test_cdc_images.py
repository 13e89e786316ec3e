"""CDC pre-images and post-images through a real server and scylla-driver (issue 16 item 1).

Each test replays an example of ScyllaDB's "Preimages and postimages" document and compares
the log row by row: operation, batch position and the value columns (and, where the document's
rules say so, the ``cdc$deleted_*`` flags of pre-images).
"""

from __future__ import annotations

from typing import Any

NTS_1 = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"


def _table(session: Any, name: str, columns: str, cdc: str) -> str:
    session.execute(f"CREATE KEYSPACE IF NOT EXISTS cdci WITH replication = {NTS_1}")
    session.execute(f"CREATE TABLE cdci.{name} ({columns}) WITH cdc = {cdc}")
    return f"cdci.{name}"


def _log(session: Any, table: str, columns: str) -> list[tuple[Any, ...]]:
    """(batch_seq_no, operation, *columns) of every log row, in log order."""
    rows = session.execute(
        f'SELECT "cdc$time", "cdc$batch_seq_no", "cdc$operation", {columns} FROM {table}_scylla_cdc_log'
    )
    ordered = sorted(rows, key=lambda r: (r[0].time, r[1]))
    return [tuple(r[1:]) for r in ordered]


def test_preimage_of_changed_columns_and_full(session: Any) -> None:
    for option, v1_shown in (("true", None), ("'full'", 0)):
        name = "changed" if option == "true" else "whole"
        t = _table(
            session,
            name,
            "pk int, ck int, v1 int, v2 map<int, int>, PRIMARY KEY (pk, ck)",
            f"{{'enabled': true, 'preimage': {option}}}",
        )
        session.execute(f"UPDATE {t} SET v1 = 0 WHERE pk = 0 AND ck = 0")
        session.execute(f"UPDATE {t} SET v2 = v2 + {{1: 1, 2: 2}} WHERE pk = 0 AND ck = 0")
        session.execute(f"UPDATE {t} SET v2 = v2 + {{2: 3, 3: 4}} WHERE pk = 0 AND ck = 0")
        assert _log(session, t, 'pk, ck, v1, v2, "cdc$deleted_v2"') == [
            (0, 1, 0, 0, 0, None, None),
            (0, 0, 0, 0, v1_shown, None, True),  # v2 was null before: flagged
            (1, 1, 0, 0, None, {1: 1, 2: 2}, None),
            (0, 0, 0, 0, v1_shown, {1: 1, 2: 2}, None),
            (1, 1, 0, 0, None, {2: 3, 3: 4}, None),
        ]


def test_preimages_of_each_operation_kind(session: Any) -> None:
    t = _table(
        session, "ops", "pk int, ck int, v int, PRIMARY KEY (pk, ck)", "{'enabled': true, 'preimage': true}"
    )
    for ck in range(3):
        session.execute(f"UPDATE {t} SET v = 0 WHERE pk = 0 AND ck = {ck}")
    session.execute(f"UPDATE {t} SET v = 1 WHERE pk = 0 AND ck = 0")
    session.execute(f"INSERT INTO {t} (pk, ck, v) VALUES (0, 0, 2)")
    session.execute(f"DELETE FROM {t} WHERE pk = 0 AND ck = 0")
    session.execute(f"DELETE FROM {t} WHERE pk = 0 AND ck >= 1 AND ck < 2")
    session.execute(f"DELETE FROM {t} WHERE pk = 0")
    assert _log(session, t, "pk, ck, v") == [
        (0, 1, 0, 0, 0),
        (0, 1, 0, 1, 0),
        (0, 1, 0, 2, 0),
        (0, 0, 0, 0, 0),
        (1, 1, 0, 0, 1),
        (0, 0, 0, 0, 1),
        (1, 2, 0, 0, 2),
        (0, 0, 0, 0, 2),
        (1, 3, 0, 0, None),
        (0, 5, 0, 1, None),  # range and partition deletes: no pre-image
        (1, 8, 0, 2, None),
        (0, 4, 0, None, None),
    ]


def test_postimages_with_full_preimages(session: Any) -> None:
    t = _table(
        session,
        "post",
        "pk int, ck int, v1 int, v2 int, PRIMARY KEY (pk, ck)",
        "{'enabled': true, 'preimage': 'full', 'postimage': true}",
    )
    session.execute(f"UPDATE {t} SET v1 = 0 WHERE pk = 0 AND ck = 0")
    session.execute(f"UPDATE {t} SET v2 = 0 WHERE pk = 0 AND ck = 1")
    session.execute(f"UPDATE {t} SET v1 = 0 WHERE pk = 0 AND ck = 2")
    session.execute(f"INSERT INTO {t} (pk, ck, v2) VALUES (0, 0, 0)")
    session.execute(f"DELETE FROM {t} WHERE pk = 0 AND ck = 0")
    session.execute(f"DELETE FROM {t} WHERE pk = 0 AND ck >= 1 AND ck < 2")
    session.execute(f"DELETE FROM {t} WHERE pk = 0")
    assert _log(session, t, "ck, v1, v2") == [
        (0, 1, 0, 0, None),
        (1, 9, 0, 0, None),
        (0, 1, 1, None, 0),
        (1, 9, 1, None, 0),
        (0, 1, 2, 0, None),
        (1, 9, 2, 0, None),
        (0, 0, 0, 0, None),
        (1, 2, 0, None, 0),
        (2, 9, 0, 0, 0),  # the post-image shows every column
        (0, 0, 0, 0, 0),
        (1, 3, 0, None, None),  # a row delete: pre-image, no post-image
        (0, 5, 1, None, None),
        (1, 8, 2, None, None),
        (0, 4, None, None, None),
    ]


def test_postimages_of_collections_and_static_rows(session: Any) -> None:
    t = _table(
        session,
        "coll",
        "pk int, ck int, v map<int, int>, s set<text> static, PRIMARY KEY (pk, ck)",
        "{'enabled': true, 'preimage': true, 'postimage': true}",
    )
    session.execute(f"UPDATE {t} SET v = {{1: 1, 2: 2}} WHERE pk = 0 AND ck = 0")
    session.execute(f"UPDATE {t} SET v = v + {{3: 3}}, v = v - {{2}} WHERE pk = 0 AND ck = 0")
    session.execute(f"UPDATE {t} SET v = {{4: 4}} WHERE pk = 0 AND ck = 0")
    assert _log(session, t, 'v, "cdc$deleted_elements_v", "cdc$deleted_v"') == [
        (0, 1, {1: 1, 2: 2}, None, True),
        (1, 9, {1: 1, 2: 2}, None, None),
        (0, 0, {1: 1, 2: 2}, None, None),
        (1, 1, {3: 3}, {2}, None),
        (2, 9, {1: 1, 3: 3}, None, None),
        (0, 0, {1: 1, 3: 3}, None, None),
        (1, 1, {4: 4}, None, True),
        (2, 9, {4: 4}, None, None),
    ]
    session.execute(f"UPDATE {t} SET s = s + {{'a'}} WHERE pk = 1")
    session.execute(f"UPDATE {t} SET s = s + {{'b'}} WHERE pk = 1")
    static = [r for r in _log(session, t, "pk, ck, s") if r[2] == 1]
    assert static == [
        (0, 1, 1, None, {"a"}),
        (1, 9, 1, None, {"a"}),
        (0, 0, 1, None, {"a"}),
        (1, 1, 1, None, {"b"}),
        (2, 9, 1, None, {"a", "b"}),
    ]


def test_a_batch_keeps_images_before_and_after_its_deltas(session: Any) -> None:
    t = _table(
        session,
        "batched",
        "pk int, ck int, v int, PRIMARY KEY (pk, ck)",
        "{'enabled': true, 'preimage': true, 'postimage': true}",
    )
    session.execute(f"INSERT INTO {t} (pk, ck, v) VALUES (0, 1, 10)")
    session.execute(
        f"BEGIN UNLOGGED BATCH UPDATE {t} SET v = 11 WHERE pk = 0 AND ck = 1; "
        f"INSERT INTO {t} (pk, ck, v) VALUES (0, 2, 20); APPLY BATCH"
    )
    rows = _log(session, t, "ck, v")[2:]
    assert rows == [(0, 0, 1, 10), (1, 1, 1, 11), (2, 2, 2, 20), (3, 9, 1, 11), (4, 9, 2, 20)]
    applied = session.execute(f"UPDATE {t} SET v = 12 WHERE pk = 0 AND ck = 1 IF v = 11").one()
    assert applied[0] is True
    assert _log(session, t, "ck, v")[7:] == [(0, 0, 1, 11), (1, 1, 1, 12), (2, 9, 1, 12)]


def test_images_on_a_table_with_an_index(session: Any) -> None:
    """The image read holds its own partition lock; the index maintenance inside it takes the
    view lock, so concurrent writes to one partition neither deadlock nor lose a pre-image."""
    t = _table(
        session,
        "indexed",
        "pk int, ck int, v int, PRIMARY KEY (pk, ck)",
        "{'enabled': true, 'preimage': true}",
    )
    session.execute(f"CREATE INDEX ON {t} (v)")
    update = session.prepare(f"UPDATE {t} SET v = ? WHERE pk = 0 AND ck = 0")
    futures = [session.execute_async(update, (n,)) for n in range(20)]
    for f in futures:
        f.result()
    (final,) = session.execute(f"SELECT v FROM {t} WHERE pk = 0 AND ck = 0")
    assert [r.pk for r in session.execute(f"SELECT pk FROM {t} WHERE v = %s", (final.v,))] == [0]
    log = _log(session, t, "v")
    deltas = [r for r in log if r[1] == 1]
    pres = [r for r in log if r[1] == 0]
    assert len(deltas) == 20 and len(pres) == 19  # every write but the first saw a live row
