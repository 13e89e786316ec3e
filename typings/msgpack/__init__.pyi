# Type stubs for the parts of msgpack 1.2 that tabletdb uses. msgpack ships no type hints and the
# published msgpack-types stubs pin msgpack < 1.2, so we keep these few signatures ourselves.
from collections.abc import Callable
from typing import Any

class UnpackException(Exception): ...
class ExtraData(UnpackException, ValueError):
    unpacked: Any
    extra: bytes
class FormatError(ValueError, UnpackException): ...
class StackError(ValueError, UnpackException): ...

def packb(
    o: Any,
    *,
    default: Callable[[Any], Any] | None = ...,
    use_single_float: bool = ...,
    use_bin_type: bool = ...,
    strict_types: bool = ...,
    datetime: bool = ...,
    unicode_errors: str | None = ...,
) -> bytes: ...
def unpackb(
    packed: bytes | bytearray | memoryview,
    *,
    raw: bool = ...,
    use_list: bool = ...,
    strict_map_key: bool = ...,
    object_hook: Callable[[dict[Any, Any]], Any] | None = ...,
    list_hook: Callable[[list[Any]], Any] | None = ...,
    max_buffer_size: int = ...,
    **kwargs: Any,
) -> Any: ...
