"""CQL request errors, one class per native-protocol error code.

Every layer raises these; the protocol layer turns them into ERROR frames with the right code
and extra fields (spec/clients.md 1.9). Messages should name what was wrong (the column, the
table, the option) so a user can act on them.
"""

from __future__ import annotations


class CqlError(Exception):
    """Base: a request failed in a way the client is told about."""

    code: int = 0x0000

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ServerError(CqlError):
    code = 0x0000


class ProtocolError(CqlError):
    code = 0x000A


class BadCredentials(CqlError):
    code = 0x0100


class Unavailable(CqlError):
    code = 0x1000

    def __init__(self, message: str, consistency: int, required: int, alive: int) -> None:
        super().__init__(message)
        self.consistency = consistency
        self.required = required
        self.alive = alive


class Overloaded(CqlError):
    code = 0x1001


class IsBootstrapping(CqlError):
    code = 0x1002


class TruncateError(CqlError):
    code = 0x1003


class WriteTimeout(CqlError):
    code = 0x1100

    def __init__(
        self, message: str, consistency: int, received: int, block_for: int, write_type: str
    ) -> None:
        super().__init__(message)
        self.consistency = consistency
        self.received = received
        self.block_for = block_for
        self.write_type = write_type


class ReadTimeout(CqlError):
    code = 0x1200

    def __init__(
        self, message: str, consistency: int, received: int, block_for: int, data_present: bool
    ) -> None:
        super().__init__(message)
        self.consistency = consistency
        self.received = received
        self.block_for = block_for
        self.data_present = data_present


class ReadFailure(CqlError):
    code = 0x1300

    def __init__(
        self,
        message: str,
        consistency: int,
        received: int,
        block_for: int,
        failures: int,
        data_present: bool,
    ) -> None:
        super().__init__(message)
        self.consistency = consistency
        self.received = received
        self.block_for = block_for
        self.failures = failures
        self.data_present = data_present


class FunctionFailure(CqlError):
    code = 0x1400

    def __init__(self, message: str, keyspace: str, function: str, arg_types: list[str]) -> None:
        super().__init__(message)
        self.keyspace = keyspace
        self.function = function
        self.arg_types = arg_types


class WriteFailure(CqlError):
    code = 0x1500

    def __init__(
        self,
        message: str,
        consistency: int,
        received: int,
        block_for: int,
        failures: int,
        write_type: str,
    ) -> None:
        super().__init__(message)
        self.consistency = consistency
        self.received = received
        self.block_for = block_for
        self.failures = failures
        self.write_type = write_type


class CdcWriteFailure(CqlError):
    code = 0x1600


class CqlSyntaxError(CqlError):
    """A statement that does not parse. The message carries line and column."""

    code = 0x2000


class Unauthorized(CqlError):
    code = 0x2100


class InvalidRequest(CqlError):
    code = 0x2200


class ConfigurationError(CqlError):
    code = 0x2300


class AlreadyExists(CqlError):
    code = 0x2400

    def __init__(self, message: str, keyspace: str, table: str = "") -> None:
        super().__init__(message)
        self.keyspace = keyspace
        self.table = table


class Unprepared(CqlError):
    code = 0x2500

    def __init__(self, message: str, prepared_id: bytes) -> None:
        super().__init__(message)
        self.prepared_id = prepared_id


class RateLimitReached(CqlError):
    """Scylla's per-partition rate limit. Sent as code 0xF000 with its extra fields only to clients
    that negotiated SCYLLA_RATE_LIMIT_ERROR; others get Config_error (0x2300) with the message."""

    code = 0xF000

    def __init__(self, message: str, op_type: int, rejected_by_coordinator: bool) -> None:
        super().__init__(message)
        self.op_type = op_type  # 0 read, 1 write
        self.rejected_by_coordinator = rejected_by_coordinator
