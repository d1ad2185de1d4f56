"""Protocol-buffer wire format, read and written by hand: enough to take apart and put back
together the serialized executables of :mod:`concerto_jax.aot` without the ``.proto`` files
(jaxlib ships none of the ones involved).

A message is a sequence of fields, each a varint key ``number << 3 | wire type`` followed by a
varint (type 0), 8 bytes (type 1), a varint length and that many bytes (type 2: bytes,
strings and nested messages) or 4 bytes (type 5). Cost: O(size) for every function here.
Source: the protobuf encoding reference, <https://protobuf.dev/programming-guides/encoding/>.
"""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["WireError", "fields", "field", "varint", "encode_varint", "length_delimited",
           "delimited"]  # fmt: skip


class WireError(ValueError):
    """Bytes that are not the protobuf message (or the framing) expected; the message says
    where."""


def varint(b: bytes, k: int) -> tuple[int, int]:
    """The varint at ``b[k:]`` and the offset after it; :class:`WireError` when it is cut
    off or longer than 10 bytes."""
    v, shift, start = 0, 0, k
    while True:
        if k >= len(b):
            raise WireError(f"a varint at byte {start} runs past the end ({len(b)} bytes)")
        c = b[k]
        k += 1
        v |= (c & 0x7F) << shift
        if c < 0x80:
            return v, k
        shift += 7
        if shift >= 70:
            raise WireError(f"a varint at byte {start} is longer than 10 bytes")


def encode_varint(v: int) -> bytes:
    """``v`` (>= 0) as a varint."""
    if v < 0:
        raise ValueError("a negative varint")
    out = bytearray()
    while True:
        low = v & 0x7F
        v >>= 7
        if v:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def fields(b: bytes) -> Iterator[tuple[int, int, object, int, int]]:
    """Every field of the message ``b``: ``(number, wire type, value, start, end)``, where
    ``value`` is an int for types 0, 1 and 5 and the bytes for type 2, and ``b[start:end]`` is
    the whole field, key included. :class:`WireError` for a group (types 3, 4), an unknown
    type, field number 0, or a field that runs past the end."""
    k = 0
    while k < len(b):
        start = k
        key, k = varint(b, k)
        number, kind = key >> 3, key & 7
        if number == 0:
            raise WireError(f"field number 0 at byte {start}")
        if kind == 0:
            value, k = varint(b, k)
        elif kind == 1:
            if k + 8 > len(b):
                raise WireError(f"field {number} at byte {start} runs past the end")
            value, k = int.from_bytes(b[k : k + 8], "little"), k + 8
        elif kind == 2:
            n, k = varint(b, k)
            if k + n > len(b):
                raise WireError(f"field {number} at byte {start} ({n} bytes) runs past the end "
                                f"({len(b)} bytes)")  # fmt: skip
            value, k = b[k : k + n], k + n
        elif kind == 5:
            if k + 4 > len(b):
                raise WireError(f"field {number} at byte {start} runs past the end")
            value, k = int.from_bytes(b[k : k + 4], "little"), k + 4
        else:
            raise WireError(f"wire type {kind} (field {number}) at byte {start}")
        yield number, kind, value, start, k


def field(b: bytes, number: int) -> bytes:
    """The bytes of the (last) length-delimited field ``number`` of ``b``; :class:`WireError`
    when there is none."""
    found = None
    for n, kind, value, _, _ in fields(b):
        if n == number and kind == 2:
            found = value
    if found is None:
        raise WireError(f"no length-delimited field {number}")
    return found


def length_delimited(number: int, value: bytes) -> bytes:
    """Field ``number`` holding ``value`` (wire type 2)."""
    return encode_varint(number << 3 | 2) + encode_varint(len(value)) + value


def delimited(b: bytes) -> tuple[bytes, bytes]:
    """``b`` as a varint length, that many bytes, and the rest: ``(head, rest)``;
    :class:`WireError` when the length runs past the end."""
    n, k = varint(b, 0)
    if k + n > len(b):
        raise WireError(f"a length prefix of {n} bytes at the start runs past the end "
                        f"({len(b)} bytes)")  # fmt: skip
    return b[k : k + n], b[k + n :]
