"""msgpack encoding of the Raft vocabulary, shared by the wire (`net`) and the durable log.

Every value becomes a positional msgpack array (no field names) so frames stay small; the
layouts below are the format, so change them only additively (append fields at the end and
give them defaults on decode). Two layers are offered:

* ``*_to_obj`` / ``*_from_obj`` convert to and from plain msgpack-able Python values, for
  callers that embed a Raft value inside a larger frame or record;
* ``encode_*`` / ``decode_*`` produce and parse standalone ``bytes``.

Decoding validates shapes and raises `CodecError` naming what was being decoded, so a
corrupt frame or record is reported instead of surfacing as an IndexError deep in the core.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import msgpack

from tabletdb.raft.types import (
    ConfChange,
    ConfChangeSingle,
    ConfChangeType,
    ConfState,
    Entry,
    EntryKind,
    HardState,
    Message,
    MessageType,
    Snapshot,
    SnapshotMeta,
)

T = TypeVar("T")


class CodecError(ValueError):
    """A byte string or object does not hold a well-formed encoded Raft value."""


def _ids(nodes: frozenset[int]) -> list[int]:
    return sorted(nodes)


def _fields(obj: Any, what: str, minimum: int) -> list[Any]:
    if not isinstance(obj, list | tuple) or len(obj) < minimum:
        raise CodecError(f"cannot decode {what}: expected an array of >= {minimum} items, got {obj!r:.200}")
    return list(obj)


def _int(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise CodecError(f"cannot decode {what}: expected an integer, got {value!r:.100}")
    return value


def _bytes(value: Any, what: str) -> bytes:
    if not isinstance(value, bytes):
        raise CodecError(f"cannot decode {what}: expected bytes, got {type(value).__name__}")
    return value


def _id_set(value: Any, what: str) -> frozenset[int]:
    if not isinstance(value, list | tuple):
        raise CodecError(f"cannot decode {what}: expected an array of node ids, got {value!r:.100}")
    return frozenset(_int(v, what) for v in value)


def _enum(enum: Callable[[int], T], value: Any, what: str) -> T:
    try:
        return enum(_int(value, what))
    except ValueError as exc:
        raise CodecError(f"cannot decode {what}: unknown code {value!r}") from exc


# --- Entry: [term, index, kind, data] ---------------------------------------------------------


def entry_to_obj(e: Entry) -> list[Any]:
    return [e.term, e.index, int(e.kind), e.data]


def entry_from_obj(obj: Any) -> Entry:
    f = _fields(obj, "Entry", 4)
    return Entry(
        term=_int(f[0], "Entry.term"),
        index=_int(f[1], "Entry.index"),
        kind=_enum(EntryKind, f[2], "Entry.kind"),
        data=_bytes(f[3], "Entry.data"),
    )


# --- HardState: [term, vote|nil, commit] -------------------------------------------------------


def hard_state_to_obj(hs: HardState) -> list[Any]:
    return [hs.term, hs.vote, hs.commit]


def hard_state_from_obj(obj: Any) -> HardState:
    f = _fields(obj, "HardState", 3)
    vote = None if f[1] is None else _int(f[1], "HardState.vote")
    return HardState(term=_int(f[0], "HardState.term"), vote=vote, commit=_int(f[2], "HardState.commit"))


# --- ConfState: [voters, learners, voters_outgoing] (sorted id arrays) -------------------------


def conf_state_to_obj(cs: ConfState) -> list[Any]:
    return [_ids(cs.voters), _ids(cs.learners), _ids(cs.voters_outgoing)]


def conf_state_from_obj(obj: Any) -> ConfState:
    f = _fields(obj, "ConfState", 3)
    return ConfState(
        voters=_id_set(f[0], "ConfState.voters"),
        learners=_id_set(f[1], "ConfState.learners"),
        voters_outgoing=_id_set(f[2], "ConfState.voters_outgoing"),
    )


# --- ConfChange: [[[type, node], ...], leave_joint] ---------------------------------------------


def conf_change_to_obj(cc: ConfChange) -> list[Any]:
    return [[[int(c.type), c.node] for c in cc.changes], cc.leave_joint]


def conf_change_from_obj(obj: Any) -> ConfChange:
    f = _fields(obj, "ConfChange", 2)
    singles = []
    for item in _fields(f[0], "ConfChange.changes", 0):
        g = _fields(item, "ConfChangeSingle", 2)
        singles.append(
            ConfChangeSingle(
                type=_enum(ConfChangeType, g[0], "ConfChangeSingle.type"),
                node=_int(g[1], "ConfChangeSingle.node"),
            )
        )
    if not isinstance(f[1], bool):
        raise CodecError(f"cannot decode ConfChange.leave_joint: expected a bool, got {f[1]!r:.100}")
    return ConfChange(changes=tuple(singles), leave_joint=f[1])


# --- Snapshot: [[index, term, conf], data] -----------------------------------------------------


def snapshot_meta_to_obj(m: SnapshotMeta) -> list[Any]:
    return [m.index, m.term, conf_state_to_obj(m.conf)]


def snapshot_meta_from_obj(obj: Any) -> SnapshotMeta:
    f = _fields(obj, "SnapshotMeta", 3)
    return SnapshotMeta(
        index=_int(f[0], "SnapshotMeta.index"),
        term=_int(f[1], "SnapshotMeta.term"),
        conf=conf_state_from_obj(f[2]),
    )


def snapshot_to_obj(s: Snapshot) -> list[Any]:
    return [snapshot_meta_to_obj(s.meta), s.data]


def snapshot_from_obj(obj: Any) -> Snapshot:
    f = _fields(obj, "Snapshot", 2)
    return Snapshot(meta=snapshot_meta_from_obj(f[0]), data=_bytes(f[1], "Snapshot.data"))


# --- Message: [type, src, dst, term, log_term, index, entries, commit, reject, reject_hint,
#               snapshot|nil, context] ------------------------------------------------------


def message_to_obj(m: Message) -> list[Any]:
    return [
        int(m.type),
        m.src,
        m.dst,
        m.term,
        m.log_term,
        m.index,
        [entry_to_obj(e) for e in m.entries],
        m.commit,
        m.reject,
        m.reject_hint,
        None if m.snapshot is None else snapshot_to_obj(m.snapshot),
        m.context,
    ]


def message_from_obj(obj: Any) -> Message:
    f = _fields(obj, "Message", 12)
    if not isinstance(f[8], bool):
        raise CodecError(f"cannot decode Message.reject: expected a bool, got {f[8]!r:.100}")
    return Message(
        type=_enum(MessageType, f[0], "Message.type"),
        src=_int(f[1], "Message.src"),
        dst=_int(f[2], "Message.dst"),
        term=_int(f[3], "Message.term"),
        log_term=_int(f[4], "Message.log_term"),
        index=_int(f[5], "Message.index"),
        entries=tuple(entry_from_obj(e) for e in _fields(f[6], "Message.entries", 0)),
        commit=_int(f[7], "Message.commit"),
        reject=f[8],
        reject_hint=_int(f[9], "Message.reject_hint"),
        snapshot=None if f[10] is None else snapshot_from_obj(f[10]),
        context=_bytes(f[11], "Message.context"),
    )


# --- bytes -------------------------------------------------------------------------------------


def _pack(obj: Any) -> bytes:
    data = msgpack.packb(obj, use_bin_type=True)
    assert isinstance(data, bytes)
    return data


def _unpack(data: bytes, what: str) -> Any:
    try:
        return msgpack.unpackb(data, raw=False, use_list=True, strict_map_key=True)
    except (ValueError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError) as exc:
        raise CodecError(f"cannot decode {what}: malformed msgpack ({exc})") from exc


def encode_entry(e: Entry) -> bytes:
    return _pack(entry_to_obj(e))


def decode_entry(data: bytes) -> Entry:
    return entry_from_obj(_unpack(data, "Entry"))


def encode_hard_state(hs: HardState) -> bytes:
    return _pack(hard_state_to_obj(hs))


def decode_hard_state(data: bytes) -> HardState:
    return hard_state_from_obj(_unpack(data, "HardState"))


def encode_conf_state(cs: ConfState) -> bytes:
    return _pack(conf_state_to_obj(cs))


def decode_conf_state(data: bytes) -> ConfState:
    return conf_state_from_obj(_unpack(data, "ConfState"))


def encode_conf_change(cc: ConfChange) -> bytes:
    return _pack(conf_change_to_obj(cc))


def decode_conf_change(data: bytes) -> ConfChange:
    return conf_change_from_obj(_unpack(data, "ConfChange"))


def encode_snapshot(s: Snapshot) -> bytes:
    return _pack(snapshot_to_obj(s))


def decode_snapshot(data: bytes) -> Snapshot:
    return snapshot_from_obj(_unpack(data, "Snapshot"))


def encode_message(m: Message) -> bytes:
    return _pack(message_to_obj(m))


def decode_message(data: bytes) -> Message:
    return message_from_obj(_unpack(data, "Message"))
