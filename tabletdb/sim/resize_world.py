"""The world of a resize simulation (``resize_seed``): the topology world (``topo_world``) with a
real catalog (one tablets keyspace, tables with tablet-count hints), tables that grow and shrink,
and replica data kept as files per map generation, as a replica keeps them.

Data is key -> (timestamp, value) per file, a deletion being a value of None (it weighs nothing:
as if compacted away, while still winning over older values). A replica writes by its own view
of the map: into the file of the tablet's current generation (``resize_seq_number``) and, while a
split or merge is prepared, also into the file the row will live in after the cut-over (the
replica-local write-both of ``replica.storage_service``). A resize copy (``ResizeFiles``) merges
what a host's current files held when it began into the next generation's files, last write wins
(``replica.resize_files``). A node that restarts sweeps the current generation's files the map no
longer places on it (``replica.leftover_files``); files of a generation its map no longer uses
are dropped (``replica.resize_files.StaleFiles``, without its grace: reads here are instant).
Sizes are the load statistics a node reports: live rows of each current file times a row size.
"""

from __future__ import annotations

import itertools
import random
import uuid
from collections.abc import Callable, Mapping, Sequence

from tabletdb.cql.types import INT
from tabletdb.schema.ddl_common import SchemaConfig
from tabletdb.schema.ddl_keyspace import create_keyspace
from tabletdb.schema.ddl_table import create_table
from tabletdb.schema.model import Catalog
from tabletdb.schema.mutations import apply_mutations
from tabletdb.schema.rack_rules import ClusterShape
from tabletdb.sim.events import EventLoop
from tabletdb.sim.topo_world import Snapshot, World, acknowledged, quorum, vnode_token
from tabletdb.tablets.allocation import NodeCapacity, allocate_replicas
from tabletdb.tablets.count import ResizeState
from tabletdb.tablets.load_stats import TabletSizes
from tabletdb.tablets.migration import read_replicas, write_replicas
from tabletdb.tablets.tablet_map import TabletInfo, TabletMap, TabletReplica, split_point
from tabletdb.topology import vnode_phase as vp
from tabletdb.topology.commands import TopologyCommand

DC, RACK = "dc1", "r1"
KEYSPACE = "ks"
ROW_BYTES = 200
Cell = tuple[int, int | None]
"""(write timestamp, value); None is a deletion."""
FileId = tuple[int, int]
"""(map generation, tablet id): one tablet file of a replica, per table."""
FileKey = tuple[uuid.UUID, int, int]
"""(table id, map generation, tablet id)."""
Rows = dict[int, Cell]


def nts(rf: int) -> dict[str, object]:
    return {"class": "NetworkTopologyStrategy", DC: str(rf)}


def lww(into: Rows, rows: Mapping[int, Cell]) -> None:
    """Merge ``rows`` into ``into``, the newer write of a key winning."""
    for key, cell in rows.items():
        held = into.get(key)
        if held is None or held[0] < cell[0]:
            into[key] = cell


def next_tablet(tm: TabletMap, tid: int, token: int) -> int:
    """The tablet ``token`` of tablet ``tid`` belongs to after the map's prepared resize."""
    if tm.resize is ResizeState.MERGE:
        return tid // 2
    return 2 * tid + (0 if token <= split_point(tm, tid) else 1)


class ResizeWorld(World):
    def __init__(
        self, rng: random.Random, loop: EventLoop, nodes: int, rf: int, tables: Sequence[tuple[str, int, int]]
    ) -> None:
        """``tables``: (name, min_tablet_count, max_tablet_count); each starts at its minimum."""
        super().__init__(rng, loop, nodes, tablets=1, rf=rf)
        hosts = sorted(self.hosts, key=lambda h: self.hosts[h].name)
        config = SchemaConfig(datacenters=(DC,), cluster=self.schema_shape(len(hosts)))
        made = create_keyspace(Catalog(), KEYSPACE, nts(rf), config=config)
        catalog = apply_mutations(Catalog(), made.mutations, self.new_id())
        nodes_cap = [NodeCapacity(h, DC, RACK, 1) for h in hosts]
        maps: dict[uuid.UUID, TabletMap] = {}
        self.table_names: dict[uuid.UUID, str] = {}
        for name, low, high in tables:
            table_id = self.new_id()
            options = {"tablets": {"min_tablet_count": low, "max_tablet_count": high}}
            columns = [("k", INT, False), ("v", INT, False)]
            made = create_table(
                catalog,
                KEYSPACE,
                name,
                columns,
                ["k"],
                options=options,
                new_id=self.new_id(),
                table_id=table_id,
                config=config,
            )
            catalog = apply_mutations(catalog, made.mutations, self.new_id())
            replicas, _ = allocate_replicas(low, {DC: rf}, nodes_cap)
            maps[table_id] = TabletMap.even(table_id, replicas)
            self.table_names[table_id] = name
        first = self.snapshots[0]
        self.snapshots = [Snapshot(0, first.topology, maps, catalog)]
        self.files: dict[uuid.UUID, dict[uuid.UUID, dict[FileId, Rows]]] = {
            h: {t: {} for t in maps} for h in self.hosts
        }
        """host -> table -> its tablet files."""
        self.rows_acked: dict[uuid.UUID, dict[int, Cell]] = {t: {} for t in maps}
        """table -> key -> the newest acknowledged write (or deletion) of the key."""
        self.clock = 0
        self.leftovers_swept = 0
        self._buckets: dict[int, tuple[TabletMap, list[int], dict[int, list[int]]]] = {}
        self.no_write_both = False
        """Planted bug: a replica writes only its current file while a resize is prepared."""
        self.after_apply: Callable[[], None] = lambda: None
        """Called after each command that took effect (the seed checks the new maps)."""

    # --- shape ---------------------------------------------------------------------------------

    @staticmethod
    def schema_shape(nodes: int) -> ClusterShape:
        return ClusterShape.of([(DC, RACK)] * nodes)

    def locations(self) -> dict[uuid.UUID, tuple[str, str]]:
        return {h: (DC, RACK) for h in self.hosts}

    def vnode_view(self) -> vp.VnodeView:
        return vp.VnodeView({}, (), {})  # tablets only: no ring changes

    def new_host(self, name: str) -> uuid.UUID:
        host = super().new_host(name)
        if hasattr(self, "files"):
            self.files[host] = {t: {} for t in self.table_names}
        return host

    def table_map(self, host: uuid.UUID, table_id: uuid.UUID) -> TabletMap:
        return self.view_of(host).tablets[table_id]

    # --- the data plane -----------------------------------------------------------------------

    def table_files(self, host: uuid.UUID, table_id: uuid.UUID) -> dict[FileId, Rows]:
        return self.files[host].setdefault(table_id, {})

    def _write_files(self, host: uuid.UUID, table_id: uuid.UUID, token: int) -> list[FileId]:
        tm = self.table_map(host, table_id)
        tid = tm.tablet_id_of(token)
        out = [(tm.resize_seq_number, tid)]
        if tm.resize is not ResizeState.NONE and not self.no_write_both:
            out.append((tm.resize_seq_number + 1, next_tablet(tm, tid, token)))
        return out

    def write_row(
        self, via: uuid.UUID, table_id: uuid.UUID, key: int, value: int | None, drop: float
    ) -> bool:
        """A QUORUM write (or deletion) coordinated by ``via`` on its own view; True if acknowledged."""
        view = self.view_of(via)
        token = vnode_token(key)
        info = view.tablets[table_id].tablet_for(token)
        self.clock += 1
        cell = (self.clock, value)
        took: set[uuid.UUID] = set()
        for r in write_replicas(info):
            if not self.takes_write(via, r.host, view.topology.version, drop):
                continue
            own = self.table_map(r.host, table_id)
            if not places(own.tablet_for(token), r.host):
                continue  # its map places the tablet elsewhere: it refuses the write
            files = self.table_files(r.host, table_id)
            for fid in self._write_files(r.host, table_id, token):
                lww(files.setdefault(fid, {}), {key: cell})
            took.add(r.host)
        if acknowledged(info, took):
            self.rows_acked[table_id][key] = cell
            self.writes_acked += 1
            return True
        self.writes_failed += 1
        return False

    def _tablet_file(self, host: uuid.UUID, table_id: uuid.UUID, tid: int) -> FileId:
        return (self.table_map(host, table_id).resize_seq_number, tid)

    def snapshot_of(self, table_id: uuid.UUID, tid: int, sources: tuple[TabletReplica, ...]) -> object:
        out: Rows = {}
        for r in sources:
            lww(out, self.table_files(r.host, table_id).get(self._tablet_file(r.host, table_id, tid), {}))
        return out

    def stream(
        self,
        table_id: uuid.UUID,
        tid: int,
        sources: tuple[TabletReplica, ...],
        target: TabletReplica,
        copy: object,
    ) -> None:
        assert isinstance(copy, dict)
        fid = self._tablet_file(target.host, table_id, tid)
        lww(self.table_files(target.host, table_id).setdefault(fid, {}), copy)

    def cleanup(self, table_id: uuid.UUID, tid: int, replica: TabletReplica) -> None:
        self.table_files(replica.host, table_id).pop(self._tablet_file(replica.host, table_id, tid), None)
        self.check_replicas("cleanup")

    def copy_snapshot(self, host: uuid.UUID, tables: Sequence[uuid.UUID], seq: int) -> dict[FileKey, Rows]:
        """A resize copy's consistent snapshot of ``host``'s current files (generation ``seq``)."""
        out: dict[FileKey, Rows] = {}
        for t in tables:
            tm = self.table_map(host, t)
            for (gen, tid), rows in self.table_files(host, t).items():
                if gen == seq and tid < tm.tablet_count and places(tm.tablets[tid], host):
                    out[(t, gen, tid)] = dict(rows)  # only the files of its replicas (``local_files``)
        return out

    def copy_into_next(self, host: uuid.UUID, snapshot: Mapping[FileKey, Rows], kind: ResizeState) -> bool:
        """Merge the snapshot into the next generation's files, as the host's map cuts them;
        refused (False) unless the host's map is being resized as asked (a stale request)."""
        for (table_id, seq, tid), rows in snapshot.items():
            tm = self.table_map(host, table_id)
            if tm.resize is not kind or tm.resize_seq_number != seq:
                return False
            files = self.table_files(host, table_id)
            for key, cell in rows.items():
                lww(files.setdefault((seq + 1, next_tablet(tm, tid, vnode_token(key))), {}), {key: cell})
        return True

    def apply(self, command: TopologyCommand, origin: str) -> bool:
        took = super().apply(command, origin)
        if took:
            self.after_apply()
        return took

    def catch_up(self, host: uuid.UUID, full: bool) -> None:
        h = self.hosts[host]
        restarting = not h.serving
        before = h.view
        super().catch_up(host, full)
        if h.view != before or (restarting and h.serving):
            self._drop_stale(host)
        if restarting and h.serving:
            self._sweep_leftovers(host)

    def _drop_stale(self, host: uuid.UUID) -> None:
        """Files of a generation the host's maps no longer use (older, or a rolled-back next)."""
        maps = self.view_of(host).tablets
        for table_id, files in self.files[host].items():
            tm = maps[table_id]
            live = {tm.resize_seq_number}
            if tm.resize is not ResizeState.NONE:
                live.add(tm.resize_seq_number + 1)
            for fid in [f for f in files if f[0] not in live]:
                del files[fid]

    def _sweep_leftovers(self, host: uuid.UUID) -> None:
        maps = self.view_of(host).tablets
        for table_id, files in self.files[host].items():
            tm = maps[table_id]
            for seq, tid in list(files):
                if seq != tm.resize_seq_number:
                    continue
                info = tm.tablets[tid]
                if host not in {r.host for r in (*info.replicas, *(info.new_replicas or ()))}:
                    del files[(seq, tid)]
                    self.leftovers_swept += 1
                    self.log(f"{self.name(host)} sweeps its leftover file of tablet {tid}")

    def leftovers(self) -> int:
        """Current-generation files on hosts the committed maps do not place the tablet on."""
        count = 0
        for host, tables in self.files.items():
            for table_id, files in tables.items():
                tm = self.committed.tablets[table_id]
                for seq, tid in files:
                    if seq == tm.resize_seq_number and tid < tm.tablet_count:
                        info = tm.tablets[tid]
                        count += all(r.host != host for r in (*info.replicas, *(info.new_replicas or ())))
        return count

    def report(self, host: uuid.UUID) -> TabletSizes:
        """The host's load statistics, by its own maps: live rows of the file of every tablet it
        holds a replica of (0 for one never written), as ``replica.load_stats`` reports."""
        maps = self.view_of(host).tablets
        out: TabletSizes = {}
        for table_id, files in self.files[host].items():
            tm = maps[table_id]
            seq = tm.resize_seq_number
            for tid, info in enumerate(tm.tablets):
                if any(r.host == host for r in (*info.replicas, *(info.new_replicas or ()))):
                    rows = files.get((seq, tid), {})
                    out[(table_id, tid)] = ROW_BYTES * sum(1 for _, v in rows.values() if v is not None)
        return out

    # --- the invariant ---------------------------------------------------------------------------

    def check_replicas(self, when: str) -> None:
        """Every QUORUM read returns each acknowledged write (or a newer one): for group0's latest
        maps over all replicas, and for every serving node by its own view over the replicas it
        can reach (fewer than a quorum: the read fails, which is no loss), each read quorum meets
        a replica holding the write, each replica answering from the file its own view of the
        map reads; a replica whose own map places the tablet elsewhere refuses, as a real one does.
        (RF 3 -> 2 may leave a row on one of the two replicas: a QUORUM of both reads it.)"""
        readers: dict[tuple[int, frozenset[uuid.UUID] | None], str] = {(self.committed.index, None): "group0"}
        for h in self.coordinators():
            reached = frozenset(r for r in self.hosts if self.reachable(h, r) and self.hosts[r].serving)
            readers.setdefault((self.hosts[h].view, reached), self.name(h))
        for table_id, acked in self.rows_acked.items():
            seen: set[tuple[int, frozenset[uuid.UUID] | None]] = set()
            for (index, reach), who in sorted(readers.items(), key=lambda kv: (kv[0][0], kv[1])):
                tm = self.snapshots[index].tablets[table_id]
                if (id(tm), reach) in seen:
                    continue
                seen.add((id(tm), reach))
                missed = self._missed(table_id, tm, acked, reach)
                if missed is not None:
                    key, ts, held, replicas = missed
                    names = [self.name(r.host) for r in replicas]
                    table = self.table_names[table_id]
                    self.violation(
                        f"acknowledged write of key {key} of table {table} (ts {ts}) is on {held} of the "
                        f"read replicas {names} that {who} reaches by view {index} (after {when})"
                    )
                    return

    def _missed(
        self, table_id: uuid.UUID, tm: TabletMap, acked: dict[int, Cell], reach: frozenset[uuid.UUID] | None
    ) -> tuple[int, int, int, tuple[TabletReplica, ...]] | None:
        """An acknowledged key some QUORUM read by ``tm`` over the replicas in ``reach`` (None:
        all) would miss: (key, ts, holders, the replicas reached)."""
        by_tablet = self._by_tablet(tm, acked)
        for tid, keys in by_tablet.items():
            every = read_replicas(tm.tablets[tid])
            readers = every if reach is None else tuple(r for r in every if r.host in reach)
            q = quorum(len(every))
            if len(readers) < q:
                continue  # the read fails: unavailable
            files = []
            for r in readers:
                rm = self.table_map(r.host, table_id)
                own = self.table_files(r.host, table_id)
                same = rm is tm  # else the replica reads by a map of its own: the key's file there
                rows = (
                    own.get((rm.resize_seq_number, tid)) if same and places(tm.tablets[tid], r.host) else None
                )
                files.append((r.host, rm, own, same, rows))
            for key in keys:
                ts, value = acked[key]
                answered = held = 0
                cells: list[Cell | None] = []
                for host, rm, own, same, rows in files:
                    if not same:
                        rid = self._tablet_of(rm, key)
                        if not places(rm.tablets[rid], host):
                            continue
                        rows = own.get((rm.resize_seq_number, rid))
                    elif rows is None and not places(tm.tablets[tid], host):
                        continue  # its map places the tablet elsewhere: it refuses the read
                    answered += 1
                    cell = None if rows is None else rows.get(key)
                    cells.append(cell)
                    held += cell is not None and cell[0] >= ts
                if answered >= q and held < answered - q + 1 and _stale_quorum(cells, q, ts, value):
                    return key, ts, held, readers
        return None

    def _by_tablet(self, tm: TabletMap, acked: dict[int, Cell]) -> dict[int, list[int]]:
        """The acknowledged keys of ``tm``'s table by tablet (cached per map: keys only come)."""
        cached = self._buckets.get(id(tm))
        if cached is None or cached[0] is not tm:
            if len(self._buckets) > 64:
                self._buckets.clear()
            cached = self._buckets[id(tm)] = (tm, [0], {})
        _, seen, buckets = cached
        for key in itertools.islice(acked, seen[0], None):
            buckets.setdefault(tm.tablet_id_of(vnode_token(key)), []).append(key)
        seen[0] = len(acked)
        return buckets

    def _tablet_of(self, tm: TabletMap, key: int) -> int:
        return tm.tablet_id_of(vnode_token(key))


def _stale_quorum(cells: list[Cell | None], q: int, ts: int, value: int | None) -> bool:
    """Whether some ``q`` of the answers make a read return something older than the acknowledged
    write that differs from it (the newest cell wins; an older deletion of a deleted row, or no
    row at all, reads the same as the deletion)."""
    for some in itertools.combinations(cells, q):
        newest = max((c for c in some if c is not None), default=None)
        if (newest is None or newest[0] < ts) and (None if newest is None else newest[1]) != value:
            return True
    return False


def places(info: TabletInfo, host: uuid.UUID) -> bool:
    """Whether a map's tablet has a replica (or a new one, in transition) on ``host``: a replica
    serves reads and writes of a tablet only then (``StorageService`` refuses the others)."""
    return any(r.host == host for r in info.replicas) or any(r.host == host for r in info.new_replicas or ())
