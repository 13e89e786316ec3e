"""Benchmark: one tablet migration's throughput beside `cp` of the same bytes (issue 14).

Two node processes (one shard each), a tablets keyspace at RF=1 with two tablets: the placement
puts one on each node. After `--mb` MB of 64 KiB blobs are written, the second node is
decommissioned through REST, so exactly one tablet replica migrates (write both, the live SQLite
file pinned and sent whole, checksummed, synced and installed, reads switched, the old file
deleted) to the first node.

Figures, all from the same run:
* `stream_MBps`: the streaming step alone, from the target's `tablet streamed ... bytes= ms=`
  log line (the image offered by the source, sent over a dedicated connection with sendfile,
  spliced into the staged file, checksummed on both ends, synced, checked and installed on the
  target); `via` says which image (`pinned`: the live file, `copy`: an online-backup copy) and
  path (`sendfile`, or `rpc` chunks under internode TLS); `log_bytes`: how many of the bytes
  streamed were the source's committed log frames, replayed by the target;
* `phases_ms`: where that time went, from both nodes' log lines: on the target `open` (the
  `tablet.copy_open` call, the source's pin inside it), `transfer` (dial, bytes, checksums),
  `check` (the log frames replayed, header bytes, the one fsync, header and schema), `install`
  (rename and directory fsync, or a merge); on the source `source_prepare` (deferred rows, the
  pin: a read transaction and the log's committed frames copied, no checkpoint) and
  `source_send` (sendfile with its checksum beside it, until the target closed);
* `cp_MBps` / `cp_fsync_MBps`: `cp` of the file the migration installed on the staying node
  (its `.db` and any `-wal`) to another file on the same filesystem, without and with an fsync;
* `stream_vs_cp` / `stream_vs_cp_fsync`: stream_MBps over each. Issue 14's goal is >= 0.5, and
  it is judged against `cp` + fsync: a migration must make the target's file durable before the
  tablet's transition commits, which `cp` alone does not do (docs/architecture.md, tablet
  streaming);
* `decommission_s`, `node_cpu_s_per_MB` (`target_` / `source_`): the whole request (barriers,
  stages, cleanup) and each node's CPU seconds over it (/proc/<pid>/stat; the leaving node is
  sampled until it exits) per streamed MB.
Run on a quiet machine; figures measured under load are noise.

`--profile DIR` runs both nodes under cProfile (`bench.profiled`: the event-loop thread's CPU),
writing `DIR/stays.prof` and `DIR/leaves.prof` when each node exits.

Reproduce: `PYTHONPATH=. .venv/bin/python -m bench.bench_migration [--mb 64] [--profile DIR]`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.common import RESULT_PREFIX, cp_baseline, proc_cpu_seconds
from tests.harness.addresses import AddressAllocator
from tests.harness.node import NodeFactory, TestNode

BLOB = 64 * 1024
OPTIONS = {"write_request_timeout_in_ms": 60000, "read_request_timeout_in_ms": 60000}
STREAMED = re.compile(
    r"tablet streamed .*?tablet=(\d+) .*?bytes=(\d+) mode=(\w+) ms=(\d+) via=(\S+) "
    r"open_ms=(\d+) transfer_ms=(\d+) check_ms=(\d+) install_ms=(\d+)(?: log_bytes=(\d+))?"
)
SENT = re.compile(r"tablet image sent .*?bytes=(\d+) kind=(\w+) prepare_ms=(\d+) send_ms=(\d+)")
MB = 1024 * 1024


def _session(node: TestNode) -> Any:
    from cassandra.cluster import Cluster

    cluster = Cluster([node.host], port=node.port, protocol_version=4)
    return cluster, cluster.connect()


def _load(node: TestNode, megabytes: int) -> str:
    """Create mk.t and write `megabytes` of blobs through `node`; the table's id."""
    from cassandra.concurrent import execute_concurrent_with_args

    cluster, s = _session(node)
    try:
        s.execute(
            "CREATE KEYSPACE mk WITH replication = {'class': 'NetworkTopologyStrategy', "
            "'replication_factor': 1} AND tablets = {'enabled': true, 'initial': 2}"
        )
        s.execute("CREATE TABLE mk.t (k int PRIMARY KEY, v blob)")
        insert = s.prepare("INSERT INTO mk.t (k, v) VALUES (?, ?)")
        rows = megabytes * MB // BLOB
        execute_concurrent_with_args(s, insert, [(k, os.urandom(BLOB)) for k in range(rows)], concurrency=16)
        table_id = (
            s.execute("SELECT id FROM system_schema.tables WHERE keyspace_name = 'mk' AND table_name = 't'")
            .one()
            .id
        )
        return str(table_id)
    finally:
        cluster.shutdown()


def _tablet_files(node: TestNode, table_id: str, tablet: str = "*") -> list[Path]:
    table_dir = next((node.workdir / "data" / "mk").glob(f"t-{table_id.replace('-', '')}"))
    return sorted(p for p in table_dir.rglob(f"tablet-{tablet}.db*") if p.is_file())


def _cpu_until_exit(pid: int, out: list[float], stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            out.append(proc_cpu_seconds(pid))
        except (FileNotFoundError, ProcessLookupError):
            return
        time.sleep(0.05)


def _profiled(node: TestNode, out: Path) -> None:
    """Run ``node`` under ``bench.profiled`` (same arguments after the module name)."""
    argv = node.process.argv
    at = argv.index("tabletdb.cli.main")
    node.process.argv = [*argv[:at], "bench.profiled", str(out), "--", *argv[at + 1 :]]


def run(megabytes: int, base: Path, profiles: Path | None = None) -> dict[str, Any]:
    factory = NodeFactory(AddressAllocator.for_this_process(), base)
    try:
        stays = factory.create(smp=1, options=OPTIONS)
        leaves = factory.create(seeds=[stays.host], smp=1, options=OPTIONS)
        if profiles is not None:
            profiles.mkdir(parents=True, exist_ok=True)
            _profiled(stays, profiles / "stays.prof")
            _profiled(leaves, profiles / "leaves.prof")
        stays.start()
        leaves.start()
        table_id = _load(stays, megabytes)
        if not _tablet_files(leaves, table_id):
            raise RuntimeError("the leaving node holds no tablet of mk.t; nothing would migrate")
        pids = [stays.process.pid, leaves.process.pid]
        assert pids[0] is not None and pids[1] is not None
        cpu_before = [proc_cpu_seconds(pid) for pid in pids]
        samples: list[float] = []
        stop = threading.Event()
        sampler = threading.Thread(target=_cpu_until_exit, args=(pids[1], samples, stop))
        sampler.start()
        started = time.monotonic()
        request = urllib.request.Request(
            leaves.api_url + "/storage_service/decommission", method="POST", data=b""
        )
        with urllib.request.urlopen(request, timeout=1800) as response:
            response.read()
        decommission_s = time.monotonic() - started
        stays_cpu = proc_cpu_seconds(pids[0]) - cpu_before[0]
        stop.set()
        sampler.join()
        leaves_cpu = (samples[-1] if samples else cpu_before[1]) - cpu_before[1]
        streams = STREAMED.findall(_log(stays))
        if len(streams) != 1:
            raise RuntimeError(f"expected one tablet streamed to the staying node, found {streams}")
        sent = SENT.findall(_log(leaves))
        if len(sent) != 1:
            raise RuntimeError(f"expected one tablet image sent by the leaving node, found {sent}")
        tablet, raw_bytes, mode, raw_ms, via, *target_phases, raw_log_bytes = streams[0]
        stream_bytes, stream_ms = int(raw_bytes), int(raw_ms)
        _, kind, prepare_ms, send_ms = sent[0]
        # the baseline: cp of the very file the migration installed (the same bytes)
        cp_bytes, cp_s, cp_fsync_s = cp_baseline(_tablet_files(stays, table_id, tablet), base / "cp-baseline")
    finally:
        factory.cleanup()
    stream_mbps = stream_bytes / MB / max(stream_ms / 1000, 1e-6)
    cp_mbps = cp_bytes / MB / max(cp_s, 1e-6)
    cp_fsync_mbps = cp_bytes / MB / max(cp_fsync_s, 1e-6)
    streamed_mb = stream_bytes / MB
    open_ms, transfer_ms, check_ms, install_ms = (int(ms) for ms in target_phases)
    return {
        "loaded_MB": megabytes,
        "stream_bytes": stream_bytes,
        "install_mode": mode,
        "via": via,
        "log_bytes": int(raw_log_bytes or 0),
        "stream_s": round(stream_ms / 1000, 3),
        "stream_MBps": round(stream_mbps, 1),
        "cp_bytes": cp_bytes,
        "cp_MBps": round(cp_mbps, 1),
        "cp_fsync_MBps": round(cp_fsync_mbps, 1),
        "stream_vs_cp": round(stream_mbps / cp_mbps, 2),
        "stream_vs_cp_fsync": round(stream_mbps / cp_fsync_mbps, 2),
        # the target's phases (open: the copy_open RPC, the source's pin inside it; transfer:
        # dial, bytes, checksums; check: header bytes, fsync, header and schema; install: rename
        # and directory fsync, or the merge), then the source's (prepare: deferred rows and the
        # pin's checkpoint; send: sendfile, its checksum, waiting for the target to close)
        "phases_ms": {
            "open": open_ms,
            "transfer": transfer_ms,
            "check": check_ms,
            "install": install_ms,
            "source_prepare": int(prepare_ms),
            "source_send": int(send_ms),
        },
        "image_kind": kind,
        "decommission_s": round(decommission_s, 2),
        "node_cpu_s": round(stays_cpu + leaves_cpu, 3),
        "node_cpu_s_per_MB": round((stays_cpu + leaves_cpu) / streamed_mb, 4),
        "target_cpu_s_per_MB": round(stays_cpu / streamed_mb, 4),
        "source_cpu_s_per_MB": round(leaves_cpu / streamed_mb, 4),
        "loadavg_1m": os.getloadavg()[0],
    }


def _log(node: TestNode) -> str:
    return (node.workdir.parent / f"{node.workdir.name}.log").read_text()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=64, help="MB written (about half migrates)")
    parser.add_argument("--profile", metavar="DIR", help="run both nodes under cProfile, profiles in DIR")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-migration-") as tmp:
        result = run(args.mb, Path(tmp), Path(args.profile).resolve() if args.profile else None)
    phases = " ".join(f"{k}={v}" for k, v in result["phases_ms"].items())
    print(
        f"migration {result['stream_MBps']} MB/s ({result['stream_bytes'] / MB:.1f} MB in "
        f"{result['stream_s']} s, {result['via']}, {result['log_bytes'] / MB:.1f} MB of log frames); "
        f"cp {result['cp_MBps']} MB/s, cp + fsync "
        f"{result['cp_fsync_MBps']} MB/s; ratios {result['stream_vs_cp']} of cp, "
        f"{result['stream_vs_cp_fsync']} of cp + fsync (goal >= 0.5 of cp + fsync)\n"
        f"phases ms: {phases}\n"
        f"node CPU per MB: target {result['target_cpu_s_per_MB']} s, source "
        f"{result['source_cpu_s_per_MB']} s; decommission {result['decommission_s']} s; "
        f"load average {result['loadavg_1m']:.1f}",
        flush=True,
    )
    print(RESULT_PREFIX + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
