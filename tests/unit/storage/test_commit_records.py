"""Reading the commit log back: a torn tail is dropped, damage followed by valid records is
corruption (refused, or skipped exactly), and a bad last record counts as a torn tail - as in
the Raft log, whose reader shares the judgement."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tabletdb.raft.storage_records import CorruptLogError, RecordType, encode_record, scan
from tabletdb.storage.commit_log import CommitLog
from tabletdb.storage.commit_records import HEADER, CommitLogCorrupt, encode, read_log

PAYLOADS = [b"first", b"second record", b"third", b"fourth!", b"fifth"]


def write_log(path: Path, payloads: list[bytes]) -> list[int]:
    """Write the records; the offset of each."""
    offsets, data = [], b""
    for payload in payloads:
        offsets.append(len(data))
        data += encode(payload)
    path.write_bytes(data)
    return offsets


def flip(path: Path, offset: int, xor: int = 0xFF) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= xor
    path.write_bytes(bytes(data))


def test_a_whole_log_reads_back(tmp_path: Path) -> None:
    write_log(tmp_path / "log", PAYLOADS)
    contents = read_log(tmp_path / "log")
    assert contents.records == PAYLOADS and not contents.corrupt and contents.torn_tail is None


@pytest.mark.parametrize("cut", [1, HEADER.size - 1, HEADER.size + 2])
def test_a_record_cut_short_is_a_torn_tail(tmp_path: Path, cut: int) -> None:
    path = tmp_path / "log"
    write_log(path, PAYLOADS)
    whole = encode(b"the record a crash interrupted")
    with path.open("ab") as f:
        f.write(whole[:cut])
    contents = read_log(path)
    assert contents.records == PAYLOADS and not contents.corrupt
    assert contents.torn_tail is not None and not contents.torn_tail.whole
    assert contents.torn_tail.size == cut


def test_zeros_after_the_records_are_a_torn_tail_not_records(tmp_path: Path) -> None:
    """What a power loss often leaves: the file grew, its last blocks are zeros."""
    path = tmp_path / "log"
    write_log(path, PAYLOADS)
    with path.open("ab") as f:
        f.write(bytes(4096))
    contents = read_log(path)
    assert contents.records == PAYLOADS and not contents.corrupt
    assert contents.torn_tail is not None and contents.torn_tail.size == 4096


def test_a_flipped_byte_in_a_middle_record_is_corruption(tmp_path: Path) -> None:
    path = tmp_path / "log"
    offsets = write_log(path, PAYLOADS)
    flip(path, offsets[1] + HEADER.size + 3)  # inside record 2's payload
    before = path.read_bytes()
    contents = read_log(path)
    assert contents.records == PAYLOADS[:1] + PAYLOADS[2:]  # every other record is readable
    (stretch,) = contents.corrupt
    assert (stretch.offset, stretch.end) == (offsets[1], offsets[2])
    assert stretch.one_record and "crc32 does not match" in stretch.found
    assert contents.torn_tail is None
    log = CommitLog(path)
    with pytest.raises(CommitLogCorrupt) as refused:
        log.records()
    log.close()
    message = str(refused.value)
    assert str(path) in message and f"byte offset {offsets[1]}" in message
    assert "commitlog_skip_corrupt_records" in message and "\n" not in message
    assert path.read_bytes() == before  # reading never repairs


def test_a_damaged_length_field_is_corruption_and_the_next_record_is_found(tmp_path: Path) -> None:
    path = tmp_path / "log"
    offsets = write_log(path, PAYLOADS)
    flip(path, offsets[1] + 3, 0x40)  # record 2 now claims ~1 GiB
    contents = read_log(path)
    assert contents.records == PAYLOADS[:1] + PAYLOADS[2:]
    (stretch,) = contents.corrupt
    assert (stretch.offset, stretch.end) == (offsets[1], offsets[2])
    assert not stretch.one_record and "claiming" in stretch.found  # how many records: unknown


def test_a_length_that_points_at_a_later_record_does_not_hide_the_one_between(tmp_path: Path) -> None:
    """The bad record's header is tried first, but a valid record before where it points wins."""
    path = tmp_path / "log"
    offsets = write_log(path, PAYLOADS)
    data = bytearray(path.read_bytes())
    HEADER.pack_into(data, offsets[1], offsets[3] - offsets[1] - HEADER.size, 0)  # spans records 2-3
    path.write_bytes(bytes(data))
    contents = read_log(path)
    assert contents.records == PAYLOADS[:1] + PAYLOADS[2:]
    assert [(s.offset, s.end) for s in contents.corrupt] == [(offsets[1], offsets[2])]


def test_two_damaged_stretches_are_both_reported(tmp_path: Path) -> None:
    path = tmp_path / "log"
    offsets = write_log(path, PAYLOADS)
    flip(path, offsets[1] + HEADER.size)
    flip(path, offsets[3] + HEADER.size)
    contents = read_log(path)
    assert contents.records == [PAYLOADS[0], PAYLOADS[2], PAYLOADS[4]]
    assert [s.offset for s in contents.corrupt] == [offsets[1], offsets[3]]
    assert contents.corrupt_bytes == (offsets[2] - offsets[1]) + (offsets[4] - offsets[3])


def test_a_corrupt_last_record_is_a_torn_tail_as_in_the_raft_log(tmp_path: Path) -> None:
    """A whole-sized last record failing its checksum is what a power loss leaves (the file grew,
    the block never reached the disk); it cannot be told from a bit flipped later, and nothing
    follows it. Both logs drop it; the commit log marks it ``whole`` (reported at WARNING)."""
    path = tmp_path / "log"
    offsets = write_log(path, PAYLOADS)
    flip(path, offsets[-1] + HEADER.size + 1)
    contents = read_log(path)
    assert contents.records == PAYLOADS[:-1] and not contents.corrupt
    assert contents.torn_tail is not None and contents.torn_tail.whole
    assert contents.torn_tail.offset == offsets[-1]

    raft = b"".join(encode_record(RecordType.ENTRY, p) for p in PAYLOADS)
    last = len(raft) - len(PAYLOADS[-1]) + 1
    damaged = raft[:last] + bytes([raft[last] ^ 0xFF]) + raft[last + 1 :]
    result = scan(damaged, "wal")
    assert [p for _, p in result.records] == PAYLOADS[:-1] and result.damage == "checksum mismatch"
    middle = len(encode_record(RecordType.ENTRY, PAYLOADS[0])) + HEADER.size + 2
    with pytest.raises(CorruptLogError):
        scan(raft[:middle] + bytes([raft[middle] ^ 0xFF]) + raft[middle + 1 :], "wal")


def test_an_empty_payload_is_never_written() -> None:
    with pytest.raises(ValueError, match="payload"):
        encode(b"")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    payloads=st.lists(st.binary(min_size=1, max_size=40), min_size=2, max_size=6),
    data=st.data(),
)
def test_one_flipped_byte_loses_exactly_its_record(
    tmp_path_factory: pytest.TempPathFactory, payloads: list[bytes], data: st.DataObject
) -> None:
    """Wherever one byte of a record is flipped, every other record is read back; the damaged
    one is corruption unless it is the last, which is a torn tail."""
    path = tmp_path_factory.mktemp("log") / "log"
    offsets = write_log(path, payloads)
    ends = [*offsets[1:], path.stat().st_size]
    k = data.draw(st.integers(0, len(payloads) - 1), label="record")
    at = data.draw(st.integers(offsets[k], ends[k] - 1), label="byte")
    flip(path, at, data.draw(st.integers(1, 255), label="xor"))
    contents = read_log(path)
    assert contents.records == payloads[:k] + payloads[k + 1 :]
    if k == len(payloads) - 1:
        assert not contents.corrupt and contents.torn_tail is not None
        assert contents.torn_tail.offset == offsets[k]
    else:
        assert [(s.offset, s.end) for s in contents.corrupt] == [(offsets[k], ends[k])]
        assert contents.torn_tail is None
