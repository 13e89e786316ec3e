"""Table options: their defaults, validation of user-supplied option maps, and tablet hints.

Defaults follow spec/describe.md so DESCRIBE prints a stable, complete WITH clause. Option maps
arrive from the executor as plain Python values (str, int, float, bool, dict); the validation
messages follow ScyllaDB's so clients and tests see familiar errors.
"""

from __future__ import annotations

import contextlib
import math
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace

from tabletdb.cql.errors import ConfigurationError, CqlSyntaxError, InvalidRequest
from tabletdb.cql.numbers import brief_int

Pairs = tuple[tuple[str, str], ...]
OptionValue = object

COMPACTION_PREFIX = "org.apache.cassandra.db.compaction."
COMPRESSION_PREFIX = "org.apache.cassandra.io.compress."
COMPACTION_CLASSES = frozenset(
    {
        "SizeTieredCompactionStrategy",
        "LeveledCompactionStrategy",
        "TimeWindowCompactionStrategy",
        "IncrementalCompactionStrategy",
        "NullCompactionStrategy",
    }
)
COMPRESSION_CLASSES = frozenset({"LZ4Compressor", "SnappyCompressor", "DeflateCompressor", "ZstdCompressor"})
TABLET_HINT_KEYS = (
    "expected_data_size_in_gb",
    "max_tablet_count",
    "min_per_shard_tablet_count",
    "min_tablet_count",
)
MAX_TTL = 20 * 365 * 24 * 3600  # CQL's largest TTL: 20 years in seconds
CDC_KEYS = ("delta", "enabled", "postimage", "preimage", "ttl")


def pairs(mapping: Mapping[str, str]) -> Pairs:
    """A map option as sorted key/value pairs: hashable, deterministic, msgpack-friendly."""
    return tuple(sorted(mapping.items()))


@dataclass(frozen=True)
class TableOptions:
    """Every table/view option. Map-valued options are sorted string pairs, as Scylla stores them."""

    bloom_filter_fp_chance: float = 0.01
    caching: Pairs = (("keys", "ALL"), ("rows_per_partition", "ALL"))
    comment: str = ""
    compaction: Pairs = (("class", "IncrementalCompactionStrategy"),)
    compression: Pairs = (("sstable_compression", COMPRESSION_PREFIX + "LZ4Compressor"),)
    crc_check_chance: float = 1.0
    default_time_to_live: int = 0
    gc_grace_seconds: int = 864000
    max_index_interval: int = 2048
    memtable_flush_period_in_ms: int = 0
    min_index_interval: int = 128
    speculative_retry: str = "99.0PERCENTILE"
    tombstone_gc: Pairs = (("mode", "repair"), ("propagation_delay_in_seconds", "3600"))
    cdc: Pairs | None = None
    paxos_grace_seconds: int | None = None
    per_partition_rate_limit: Pairs | None = None
    scylla_tags: Pairs | None = None
    synchronous_updates: bool | None = None
    tablets: Pairs | None = None

    @property
    def cdc_enabled(self) -> bool:
        return self.cdc is not None and ("enabled", "true") in self.cdc  # pairs: one per key


# Options the CQL grammar accepts in WITH; `id` is consumed by CREATE TABLE itself.
KNOWN_OPTIONS = frozenset(
    {f for f in TableOptions.__dataclass_fields__}
    | {"id", "dclocal_read_repair_chance", "read_repair_chance", "in_memory"}
)
IGNORED_OBSOLETE = frozenset({"dclocal_read_repair_chance", "read_repair_chance", "in_memory"})


def _text(name: str, value: OptionValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise ConfigurationError(f"Invalid value for property '{name}': expected a simple value, got {value!r}")


def _int(name: str, value: OptionValue) -> int:
    """An integer property: every one is a 32-bit int in ScyllaDB's schema tables (and ours)."""
    if isinstance(value, bool):
        raise ConfigurationError(f"Invalid value for property '{name}': {value!r} is not an integer")
    number: int | None = value if isinstance(value, int) else None
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            number = int(value)
    if number is not None and -(2**31) <= number < 2**31:
        return number
    shown = brief_int(value) if isinstance(value, int) else repr(value)
    raise ConfigurationError(f"Invalid integer value {shown} for property '{name}'")


def _float(name: str, value: OptionValue) -> float:
    if isinstance(value, bool):
        raise ConfigurationError(f"Invalid value for property '{name}': {value!r} is not a number")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise ConfigurationError(f"Invalid double value {value!r} for property '{name}'")


def _bool(name: str, value: OptionValue) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ConfigurationError(f"Invalid boolean value {value!r} for property '{name}'")


def _map(name: str, value: OptionValue) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise CqlSyntaxError(f"Invalid value for property '{name}'. It should be a map.")
    return {str(k): _text(name, v) for k, v in value.items()}


def _compaction(value: OptionValue) -> Pairs:
    opts = _map("compaction", value)
    cls = opts.get("class")
    if cls is None:
        raise ConfigurationError("Missing sub-option 'class' for the 'compaction' option.")
    short = cls.removeprefix(COMPACTION_PREFIX)
    if short not in COMPACTION_CLASSES:
        raise ConfigurationError(f"Unable to find compaction strategy class '{cls}'")
    opts["class"] = short
    _compaction_sub_options(opts)
    return pairs(opts)


def _compaction_sub_options(opts: dict[str, str]) -> None:
    """The sub-options tabletdb's background compaction reads (``replica.compaction_policy``):
    refused when they could not be honoured. Others (the SSTable strategies' own) are kept."""
    if "enabled" in opts:
        opts["enabled"] = "true" if _bool("compaction.enabled", opts["enabled"]) else "false"
    if "tombstone_threshold" in opts:
        threshold = _float("tombstone_threshold", opts["tombstone_threshold"])
        if not 0 <= threshold <= 1 or math.isnan(threshold):
            raise ConfigurationError(f"tombstone_threshold must be between 0 and 1, got {threshold}")
    if "tombstone_compaction_interval" in opts:
        _bounded_int("tombstone_compaction_interval", opts["tombstone_compaction_interval"], 0)


def _compression(value: OptionValue) -> Pairs:
    opts = _map("compression", value)
    if "class" in opts:
        opts["sstable_compression"] = opts.pop("class")
    if opts.get("enabled", "true").lower() == "false" or opts.get("sstable_compression") == "":
        return ()
    opts.pop("enabled", None)
    cls = opts.get("sstable_compression")
    if cls is None:
        raise ConfigurationError("Missing sub-option 'sstable_compression' for the 'compression' option.")
    short = cls.removeprefix(COMPRESSION_PREFIX)
    if short not in COMPRESSION_CLASSES:
        raise ConfigurationError(f"Unknown compression class '{cls}'")
    opts["sstable_compression"] = COMPRESSION_PREFIX + short
    if "chunk_length_in_kb" in opts:
        kb = _int("chunk_length_in_kb", opts["chunk_length_in_kb"])
        if kb <= 0 or kb & (kb - 1):
            raise ConfigurationError(f"chunk_length_in_kb must be a power of 2, got {kb}")
    return pairs(opts)


def _caching(value: OptionValue) -> Pairs:
    opts = _map("caching", value)
    for key in opts:
        if key not in ("keys", "rows_per_partition", "enabled"):
            raise ConfigurationError(f"Invalid caching sub-option '{key}'")
    return pairs(opts)


def _tombstone_gc(value: OptionValue) -> Pairs:
    opts = _map("tombstone_gc", value)
    mode = opts.get("mode", "repair")
    if mode not in ("timeout", "repair", "disabled", "immediate"):
        raise ConfigurationError(f"Invalid tombstone_gc mode: {mode}")
    opts["mode"] = mode
    opts.setdefault("propagation_delay_in_seconds", "3600")
    return pairs(opts)


def validate_cdc(value: OptionValue) -> Pairs:
    """Normalise `cdc = {...}` to Scylla's stored form: all five keys, lower-case strings."""
    opts = _map("cdc", value)
    for key in opts:
        if key not in CDC_KEYS:
            raise ConfigurationError(f"Invalid CDC option: {key}")
    result = {"delta": "full", "enabled": "false", "postimage": "false", "preimage": "false", "ttl": "86400"}
    for key in ("enabled", "postimage"):
        if key in opts:
            result[key] = "true" if _bool(f"cdc.{key}", opts[key]) else "false"
    if "preimage" in opts:
        pre = opts["preimage"].lower()
        if pre not in ("true", "false", "full"):
            raise ConfigurationError(f'Invalid value for CDC option "preimage": {opts["preimage"]}')
        result["preimage"] = pre
    if "delta" in opts:
        delta = opts["delta"].lower()
        if delta not in ("full", "keys"):
            raise ConfigurationError(f'Invalid value for CDC option "delta": {opts["delta"]}')
        result["delta"] = delta
    if "ttl" in opts:
        ttl = _int("cdc.ttl", opts["ttl"])
        if ttl < 0:
            raise ConfigurationError(f"Invalid CDC option: ttl must be non-negative, got {ttl}")
        result["ttl"] = str(ttl)
    return pairs(result)


def validate_tablet_hints(value: OptionValue) -> Pairs | None:
    """Table `tablets = {...}` hints per spec/tablets.md; zero values are dropped."""
    opts = _map("tablets", value)
    kept: dict[str, str] = {}
    for key, raw in opts.items():
        if key not in TABLET_HINT_KEYS:
            raise ConfigurationError(f"Unknown tablet hint '{key}'")
        number = (
            _float(key, raw) if key in ("min_per_shard_tablet_count", "expected_data_size_in_gb") else None
        )
        if number is None:
            number = float(_int(key, raw))
        if number < 0 or (key == "max_tablet_count" and number <= 0):
            raise ConfigurationError(f"Invalid value for tablet hint '{key}': {raw}; it must be positive")
        if number != 0:
            kept[key] = _format_number(number)
    lo, hi = kept.get("min_tablet_count"), kept.get("max_tablet_count")
    if lo is not None and hi is not None:
        eff_min = 1 << max(0, math.ceil(math.log2(float(lo))))
        eff_max = 1 << math.floor(math.log2(float(hi)))
        if eff_min > eff_max:
            raise ConfigurationError(
                f"Invalid tablet hints: min_tablet_count {lo} (power of two {eff_min}) exceeds "
                f"max_tablet_count {hi} (power of two {eff_max})"
            )
    return pairs(kept) if kept else None


def _format_number(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def _speculative_retry(value: OptionValue) -> str:
    text = _text("speculative_retry", value).strip()
    upper = text.upper()
    if upper in ("NONE", "ALWAYS"):
        return upper
    for suffix in ("PERCENTILE", "MS"):
        if upper.endswith(suffix):
            try:
                number = float(upper[: -len(suffix)])
            except ValueError:
                break
            if not math.isfinite(number):  # 'nanms', 'infms': no delay to wait
                break
            if suffix == "PERCENTILE":
                if not 0 <= number <= 100:
                    break
                return f"{number:.1f}PERCENTILE"
            return f"{number:.2f}ms"  # ScyllaDB's form: '200ms' is stored and shown as '200.00ms'
    raise ConfigurationError(f"Invalid value {text} for option 'speculative_retry'")


def speculative_retry_text(value: str) -> str:
    """The canonical form of a stored ``speculative_retry`` (values stored before it was
    canonical, e.g. ``50ms``, print as ScyllaDB prints them: ``50.00ms``)."""
    return _speculative_retry(value)


def _bounded_int(name: str, value: OptionValue, low: int) -> int:
    number = _int(name, value)
    if number < low:
        raise ConfigurationError(f"{name} must be greater than or equal to {low}, got {number}")
    return number


def apply_options(
    base: TableOptions, given: Mapping[str, OptionValue], *, for_view: bool = False
) -> TableOptions:
    """Validate a WITH option map and overlay it on `base` (defaults for CREATE, current for ALTER)."""
    changes: dict[str, object] = {}
    for name, value in given.items():
        key = name.lower()
        if key not in KNOWN_OPTIONS:
            raise CqlSyntaxError(f"Unknown property '{name}'")
        if key == "id" or key in IGNORED_OBSOLETE:
            continue
        changes[key] = _convert(key, value, for_view)
    result = replace(base, **changes)  # type: ignore[arg-type]
    if result.min_index_interval > result.max_index_interval:
        raise ConfigurationError("max_index_interval must be greater than or equal to min_index_interval")
    if for_view and result.default_time_to_live != 0:
        raise InvalidRequest(
            "Cannot set or alter default_time_to_live for a materialized view. Data in a materialized view "
            "always expire at the same time than the corresponding data in the parent table."
        )
    return result


def _convert(key: str, value: OptionValue, for_view: bool) -> object:
    if key == "bloom_filter_fp_chance":
        fp = _float(key, value)
        if not 0 < fp <= 1:
            raise ConfigurationError(
                f"bloom_filter_fp_chance must be larger than 0 and at most 1.0 (got {fp})"
            )
        return fp
    if key == "crc_check_chance":
        chance = _float(key, value)
        if not 0 <= chance <= 1:
            raise ConfigurationError("crc_check_chance should be between 0.0 and 1.0")
        return chance
    if key == "comment":
        return _text(key, value)
    if key == "caching":
        return _caching(value)
    if key == "compaction":
        return _compaction(value)
    if key == "compression":
        return _compression(value)
    if key == "default_time_to_live":
        ttl = _bounded_int(key, value, 0)
        if ttl > MAX_TTL:
            raise ConfigurationError(
                f"default_time_to_live must be less than or equal to {MAX_TTL} (got {ttl})"
            )
        return ttl
    if key in ("gc_grace_seconds", "memtable_flush_period_in_ms", "paxos_grace_seconds"):
        return _bounded_int(key, value, 0)
    if key in ("min_index_interval", "max_index_interval"):
        return _bounded_int(key, value, 1)
    if key == "speculative_retry":
        return _speculative_retry(value)
    if key == "tombstone_gc":
        return _tombstone_gc(value)
    if key == "cdc":
        if for_view:
            raise InvalidRequest("Cannot enable CDC for a materialized view")
        return validate_cdc(value)
    if key in ("per_partition_rate_limit", "scylla_tags"):
        return pairs(_map(key, value))
    if key == "synchronous_updates":
        if not for_view:
            raise InvalidRequest("The synchronous_updates option is only applicable to materialized views")
        return _bool(key, value)
    if key == "tablets":
        return validate_tablet_hints(value)
    raise CqlSyntaxError(f"Unknown property '{key}'")


def table_id_option(given: Mapping[str, OptionValue]) -> uuid.UUID | None:
    """The `WITH ID = <uuid>` a restore passes, or None."""
    for name, value in given.items():
        if name.lower() == "id":
            try:
                return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
            except ValueError:
                raise ConfigurationError(f"Invalid table id {value!r}: not a UUID") from None
    return None
