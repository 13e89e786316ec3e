"""scylla-driver's own message codec as a test oracle: it builds request frames exactly as the
driver sends them and parses our response frames exactly as the driver would."""

from __future__ import annotations

import struct
from typing import Any

from cassandra import protocol as dp
from cassandra.protocol_features import ProtocolFeatures

from tabletdb.protocol.extensions import build_supported

SCYLLA_FEATURES = ProtocolFeatures.parse_from_supported(build_supported())
PLAIN_FEATURES = ProtocolFeatures()


def request_frame(msg: Any, stream: int = 0, features: Any = PLAIN_FEATURES, compressor: Any = None) -> bytes:
    frame: bytes = dp._ProtocolHandler.encode_message(msg, stream, 4, compressor, False, features)
    return frame


def startup_options(features: Any = PLAIN_FEATURES, compression: str | None = None) -> dict[str, str]:
    options = {"CQL_VERSION": "3.3.1", "DRIVER_NAME": "ScyllaDB Python Driver", "DRIVER_VERSION": "3.29.12"}
    if compression:
        options["COMPRESSION"] = compression
    features.add_startup_options(options)
    return options


def decode_response(
    frame: bytes, features: Any = PLAIN_FEATURES, result_metadata: Any = None, decompressor: Any = None
) -> Any:
    version, flags, stream, opcode, length = struct.unpack(">BBhBi", frame[:9])
    assert version == 0x84, hex(version)
    assert length == len(frame) - 9
    msg = dp._ProtocolHandler.decode_message(
        4, features, {}, stream, flags, opcode, frame[9:], decompressor, result_metadata
    )
    return msg
