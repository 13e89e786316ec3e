"""Run every bench/bench_*.py (each in its own process) and print their figures side by side.

Each benchmark prints one or more `RESULT <json>` lines; anything else it prints is passed
through. `make bench` runs this; `--only floor` picks benchmarks by name, `--json FILE` keeps the
raw figures for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.common import RESULT_PREFIX

BENCH_DIR = Path(__file__).resolve().parent
COLUMNS = [
    ("benchmark", "benchmark", "{}"),
    ("workload", "workload", "{}"),
    ("ops/s", "ops_per_s", "{:.0f}"),
    ("p50 ms", "p50_ms", "{:.2f}"),
    ("p99 ms", "p99_ms", "{:.2f}"),
    ("server CPU us/op", "server_cpu_us_per_op", "{:.1f}"),
    ("capacity ops/CPU-s", "capacity_ops_per_cpu_s", "{:.0f}"),
    ("RSS MB", "server_rss_mb", "{:.0f}"),
    ("errors", "errors", "{}"),
]


def discover(only: list[str]) -> list[str]:
    names = sorted(p.stem for p in BENCH_DIR.glob("bench_*.py"))
    if only:
        wanted = {n if n.startswith("bench_") else f"bench_{n}" for n in only}
        missing = wanted - set(names)
        if missing:
            raise SystemExit(f"no such benchmark(s): {', '.join(sorted(missing))}; have: {', '.join(names)}")
        names = [n for n in names if n in wanted]
    return names


def run_one(name: str) -> tuple[list[dict[str, Any]], int]:
    print(f"== {name}", flush=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", f"bench.{name}"], stdout=subprocess.PIPE, text=True, cwd=BENCH_DIR.parent
    )
    assert proc.stdout is not None
    results: list[dict[str, Any]] = []
    for line in proc.stdout:
        if line.startswith(RESULT_PREFIX):
            results.append(json.loads(line[len(RESULT_PREFIX) :]))
        else:
            print(f"   {line}", end="", flush=True)
    return results, proc.wait()


def table_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """A RESULT as table rows: itself, or one row per load it nests (``bench_data_path`` reports
    ``"tabletdb insert": {...}``, ``"floor": {...}`` and so on in one RESULT)."""
    nested = [
        {"benchmark": result.get("benchmark"), "workload": key, **value}
        for key, value in result.items()
        if isinstance(value, dict) and "ops_per_s" in value
    ]
    return [result] if "ops_per_s" in result or not nested else nested


def cell(fmt: str, value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return fmt.format(value)


def table(rows: list[dict[str, Any]]) -> str:
    header = [title for title, _, _ in COLUMNS]
    body = [[cell(fmt, row.get(key)) for _, key, fmt in COLUMNS] for row in rows]
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(r, widths)) for r in [header, *body]]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description="run all benchmarks")
    parser.add_argument("--only", action="append", default=[], help="benchmark name (repeatable)")
    parser.add_argument("--json", type=Path, help="also write all figures to this file")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    failed: list[str] = []
    for name in discover(args.only):
        results, code = run_one(name)
        rows.extend(row for result in results for row in table_rows(result))
        if code != 0 or not results:
            failed.append(f"{name} (exit {code}, {len(results)} results)")
    print()
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    if failed:
        raise SystemExit(f"benchmarks failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
