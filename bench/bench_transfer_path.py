"""Benchmark: the byte path of a dedicated tablet transfer alone, in variants, beside `cp` + fsync.

Issue 14: a migration's `transfer` phase moved 31.5 MB in 55-64 ms on a quiet box (~500 MB/s)
while `cp` of the same bytes in the page cache runs at ~2.5 GB/s. This isolates the path
`net.dedicated` uses — `socket.sendfile` of a file on one thread, `net.file_bytes.splice_into`
(socket -> pipe -> file) on another, `TrailingDigest` checksumming behind the writes, the sender's
own checksum of the file beside `sendfile`, then one fsync of the received file — over loopback
in one process, without nodes, RPC or SQLite, and runs it in variants of the knobs that might
limit it:

* `writeback`: bytes between `sync_file_range` requests (`file_bytes.WRITEBACK_BYTES`; 0 = none);
* `pipe`: the splice pipe's size (`file_bytes.PIPE_BYTES`);
* `sockbuf`: SO_SNDBUF / SO_RCVBUF set on both ends (0 = the kernel's autotuning);
* `digest`: whether both checksums run (off shows what they cost).

Each variant runs `--runs` times, interleaved with the others (in a rotated order each run) and
with the baseline (`cp` of the same file + fsync, into the same directory), and the median is
printed with its ratio to the baseline's median. The variant named `current` is what the code
does today. Figures measured on a loaded machine are noise: run it on a quiet one.

Reproduce: `PYTHONPATH=. .venv/bin/python -m bench.bench_transfer_path [--mb 32] [--runs 7] [--dir DIR]`
(`--dir` on the filesystem the node's data lives on; the default is a temporary directory there
is no reason to trust is the same disk).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.common import RESULT_PREFIX
from tabletdb.net import file_bytes
from tabletdb.net.file_bytes import TrailingDigest, digest_of, splice_into

MB = 1 << 20


@dataclass(frozen=True)
class Variant:
    name: str
    writeback: int = file_bytes.WRITEBACK_BYTES
    pipe: int = file_bytes.PIPE_BYTES
    sockbuf: int = 0
    digest: bool = True


VARIANTS = (
    Variant("current"),
    Variant("no-writeback", writeback=0),
    Variant("writeback-2MB", writeback=2 * MB),
    Variant("writeback-32MB", writeback=32 * MB),
    Variant("pipe-256KB", pipe=256 << 10),
    Variant("sockbuf-4MB", sockbuf=4 * MB),
    Variant("sockbuf-16MB", sockbuf=16 * MB),
    Variant("no-digests", digest=False),
)


@contextmanager
def _knobs(variant: Variant) -> Iterator[None]:
    saved = file_bytes.WRITEBACK_BYTES, file_bytes.PIPE_BYTES
    file_bytes.WRITEBACK_BYTES = variant.writeback or (1 << 62)
    file_bytes.PIPE_BYTES = variant.pipe
    try:
        yield
    finally:
        file_bytes.WRITEBACK_BYTES, file_bytes.PIPE_BYTES = saved


def _pair(sockbuf: int) -> tuple[socket.socket, socket.socket]:
    server = socket.create_server(("127.0.0.1", 0))
    try:
        client = socket.socket()
        if sockbuf:
            client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, sockbuf)
        client.connect(server.getsockname())
        sender, _ = server.accept()
        if sockbuf:
            sender.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sockbuf)
        return sender, client
    finally:
        server.close()


def one_transfer(source: Path, target: Path, variant: Variant) -> float:
    """Seconds from the first byte sent to the received file synced (and checked, with digests)."""
    size = source.stat().st_size
    sender, receiver = _pair(variant.sockbuf)
    sent_digest: list[bytes] = []

    def send() -> None:
        with open(source, "rb") as f:
            if variant.digest:
                side = threading.Thread(target=lambda: sent_digest.append(digest_of(f.fileno(), size)))
                side.start()
            sender.sendfile(f, 0, size)
            if variant.digest:
                side.join()
        sender.close()

    with _knobs(variant), open(target, "w+b") as out:
        started = time.perf_counter()
        thread = threading.Thread(target=send)
        thread.start()
        if variant.digest:
            checksum = TrailingDigest(out.fileno(), size)
            splice_into(receiver, out.fileno(), size, 60.0, checksum.written)
            received = checksum.result()
        else:
            splice_into(receiver, out.fileno(), size, 60.0)
        os.fsync(out.fileno())
        thread.join()
        elapsed = time.perf_counter() - started
    receiver.close()
    if variant.digest and sent_digest != [received]:
        raise RuntimeError(f"{variant.name}: the checksums differ")
    target.unlink()
    return elapsed


def one_cp(source: Path, target: Path) -> float:
    started = time.perf_counter()
    shutil.copyfile(source, target)
    with open(target, "rb") as f:
        os.fsync(f.fileno())
    elapsed = time.perf_counter() - started
    target.unlink()
    return elapsed


def run(megabytes: int, runs: int, folder: Path) -> dict[str, dict[str, float]]:
    source = folder / "source.bin"
    source.write_bytes(os.urandom(megabytes * MB))
    with open(source, "rb") as f:
        os.fsync(f.fileno())
    target = folder / "target.bin"
    times: dict[str, list[float]] = {"cp+fsync": []}
    for variant in VARIANTS:
        times[variant.name] = []
    for n in range(runs):  # each run in another order, so no variant always follows the same one
        times["cp+fsync"].append(one_cp(source, target))
        for variant in VARIANTS[n % len(VARIANTS) :] + VARIANTS[: n % len(VARIANTS)]:
            times[variant.name].append(one_transfer(source, target, variant))
    base = statistics.median(times["cp+fsync"])
    return {
        name: {
            "median_ms": round(statistics.median(t) * 1000, 1),
            "MBps": round(megabytes / statistics.median(t), 1),
            "vs_cp_fsync": round(base / statistics.median(t), 2),
        }
        for name, t in times.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=32)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--dir", help="where the files go (the data disk); default: a temporary directory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-transfer-", dir=args.dir) as tmp:
        result = run(args.mb, args.runs, Path(tmp))
    for name, figures in result.items():
        print(
            f"{name:>16}: {figures['MBps']:8.1f} MB/s  median {figures['median_ms']:7.1f} ms  "
            f"{figures['vs_cp_fsync']:.2f} of cp + fsync",
            flush=True,
        )
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
    print(RESULT_PREFIX + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
