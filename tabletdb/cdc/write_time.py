"""Which write timestamps a CDC table accepts (spec/cdc.md, "generation leeway"; issue 16 item 3).

Pure. A write's log row goes to the streams operating at its timestamp, so a CDC write must
carry a timestamp whose streams every node knows and that still refine the current ownership:
not more than the leeway past the server's clock (a later set may not be known yet), and, once
older than the leeway, not in a set that is no longer the current one (its ranges may not match
who owns the data now). ``starts`` are the times the sets operate from: the vnode generations,
or one tablet table's stream sets, whose first counts from the start of time as the first vnode
generation does (a table's first streams serve any older timestamp).
"""

from __future__ import annotations

import bisect
import datetime
from collections.abc import Sequence

GENERATION_LEEWAY_US = 5_000_000
"""ScyllaDB's ``generation_leeway``: 5 s either side of the server's clock."""


def _shown(micros: int) -> str:
    moment = datetime.datetime.fromtimestamp(micros / 1_000_000, datetime.UTC)
    return moment.strftime("%Y/%m/%d %H:%M:%S.%f UTC")


def refusal(
    starts: Sequence[int], timestamp: int, now: int, leeway: int = GENERATION_LEEWAY_US
) -> str | None:
    """Why a CDC write at ``timestamp`` (µs) is refused at ``now`` (µs), or None if accepted.

    The messages begin as ScyllaDB's do, which clients and tests match on."""
    if timestamp > now + leeway:
        return (
            f'cdc: attempted to get a stream "from the future" ({_shown(timestamp)}; current server time: '
            f"{_shown(now)}). A CDC table accepts write timestamps at most {leeway // 1000} ms ahead of "
            "the server's clock, as later streams may not be known yet; keep client clocks in sync "
            "with the servers' or let the server pick the timestamp."
        )
    if timestamp > now - leeway or not starts:
        return None
    current = max(bisect.bisect_right(starts, now - leeway) - 1, 0)  # the set operating a leeway ago
    superseded = current + 1 < len(starts) and starts[current + 1] <= now
    if (current > 0 and timestamp < starts[current]) or superseded:
        return (
            f'cdc: attempted to get a stream "from the past" ({_shown(timestamp)}; current server time: '
            f"{_shown(now)}). A CDC table refuses write timestamps older than the streams operating "
            f"now (since {_shown(starts[current])}) by more than {leeway // 1000} ms, as their log "
            "rows would go to streams that no longer match the data's owners; keep client clocks in "
            "sync with the servers' or let the server pick the timestamp."
        )
    return None
