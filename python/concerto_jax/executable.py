"""What is inside a serialized JAX executable, read from its bytes; and the same executable with
another XLA executable put in its place.

``jax.experimental.serialize_executable.serialize(compiled)`` returns a pickle (protocol 4) in
which the executable is a persistent id ``("exec", blob)``. For the CUDA plugin (jax, jaxlib
and jax-cuda12-plugin 0.10.2) the layers, outermost first:

1. the pickle: the blob is the one ``BINBYTES`` after the string ``"exec"``
   (:func:`exec_blob`);
2. the blob: a varint length, then IFRT's metadata
   (``xla.ifrt.SerializedXlaExecutableMetadata``: version 3, runtime ``"pjrt_ifrt"``, the input
   and output shardings, the layouts, the computation's name), then the PJRT serialization
   (:func:`split_blob`);
3. the PJRT serialization (``xla.ExecutableAndOptionsProto``): field 1 the executable, field 2
   the ``CompileOptionsProto`` it was compiled with. ``PJRT_Executable_Serialize`` of the CUDA
   plugin returns exactly this message;
4. the executable: a Riegeli file (Google's record format: 64 KiB blocks, each opened by a
   24-byte block header; chunks of records, here compressed with Snappy) whose records hold the
   GPU executable (:func:`riegeli_records`);
5. the GPU executable's record: the ``HloModuleProtoWithConfig`` of the module it runs, the
   buffer allocations (their sizes are XLA's buffer assignment, the device memory the
   executable reserves) and the thunks in execution order, each named by its HLO instruction
   (:func:`read_gpu_executable`).

Nothing here runs a pickle or loads an executable: every layer is read as data, and bytes that
are not what a layer expects raise :class:`ExecutableError` saying which layer and where.
Sources: CPython's ``pickletools`` for the opcodes; the Riegeli file format
(<https://github.com/google/riegeli/blob/master/doc/riegeli_records_file_format.md>) and the
Snappy format description (<https://github.com/google/snappy/blob/main/format_description.txt>);
XLA's ``xla/pjrt/pjrt_executable.proto`` and ``xla/service/hlo.proto``
(``BufferAllocationProto``); the layer boundaries were found on the bytes of jaxlib 0.10.2's
serializations and are checked by ``python/tests_xla_gpu``. Cost: linear in the payload's size
(Snappy is decoded in Python: about 1 s for 10 MB).
"""

from __future__ import annotations

import dataclasses
import pickletools

from concerto_jax import wire

__all__ = ["ExecutableError", "GpuExecutable", "exec_blob", "split_blob", "riegeli_records",
           "snappy_decompress", "read_gpu_executable", "read_payload", "replace_exec"]  # fmt: skip

#: Riegeli's block size and block header size.
BLOCK, BLOCK_HEADER = 1 << 16, 24
#: Riegeli chunk header: header hash, data size, data hash, chunk type (1 byte), number of
#: records (7 bytes), decoded data size.
CHUNK_HEADER = 40


class ExecutableError(ValueError):
    """A payload, blob or executable that is not what its layer should be (truncated, foreign,
    another format); the message names the layer and the place."""


# --- 1. the pickle ------------------------------------------------------------------------


def exec_blob(payload: bytes) -> tuple[bytes, int, int]:
    """The executable's bytes in a ``serialize()`` payload, with their offset and the size of
    the opcode header before them: ``(blob, offset, header)``. Reads the opcodes only."""
    try:
        ops = list(pickletools.genops(payload))
    except Exception as e:  # noqa: BLE001 - pickletools raises ValueError and others
        raise ExecutableError(f"not a pickle ({len(payload)} bytes): {e}") from None
    if not ops or ops[0][0].name != "PROTO" or ops[-1][0].name != "STOP":
        raise ExecutableError("not a JAX executable payload: no protocol header or no STOP")
    found = []
    for i, (op, arg, pos) in enumerate(ops):
        if op.name in ("BINBYTES", "SHORT_BINBYTES", "BINBYTES8"):
            before = [o for o in ops[max(0, i - 3) : i] if o[0].name != "MEMOIZE"]
            if before and before[-1][0].name.endswith("UNICODE") and before[-1][1] == "exec":
                found.append((arg, pos, {"BINBYTES": 5, "SHORT_BINBYTES": 2, "BINBYTES8": 9}[op.name]))
    if len(found) != 1:
        raise ExecutableError(f"not a JAX executable payload: {len(found)} ('exec', bytes) "
                              "persistent ids, 1 expected")  # fmt: skip
    blob, pos, header = found[0]
    return blob, pos + header, header


def replace_exec(payload: bytes, blob: bytes) -> bytes:
    """``payload`` with its executable's bytes replaced by ``blob``: the opcode's length and,
    when it lies inside a pickle frame, the frame's length follow. Every other byte stays."""
    old, offset, header = exec_blob(payload)
    op_at = offset - header
    code = payload[op_at]
    if len(blob) < 256 and code == ord("C"):  # SHORT_BINBYTES
        head = b"C" + bytes([len(blob)])
    elif len(blob) < 1 << 32:
        head = b"B" + len(blob).to_bytes(4, "little")
    else:
        head = b"\x8e" + len(blob).to_bytes(8, "little")
    out = payload[:op_at] + head + blob + payload[offset + len(old) :]
    delta = len(out) - len(payload)
    for op, arg, pos in pickletools.genops(payload):
        if op.name == "FRAME" and pos < op_at < pos + 9 + arg:
            out = out[: pos + 1] + (arg + delta).to_bytes(8, "little") + out[pos + 9 :]
    return out


# --- 2. and 3. the IFRT blob --------------------------------------------------------------


def split_blob(blob: bytes) -> tuple[bytes, bytes]:
    """``(metadata, executable_and_options)`` of an IFRT executable blob; checks that the
    metadata says ``pjrt_ifrt`` and that the rest has an executable (field 1) and compile
    options (field 2)."""
    try:
        meta, rest = wire.delimited(blob)
        runtime = wire.field(meta, 2)
        wire.field(rest, 1), wire.field(rest, 2)
    except wire.WireError as e:
        raise ExecutableError(f"not an IFRT/PJRT executable blob ({len(blob)} bytes): {e}") from None
    if runtime != b"pjrt_ifrt":
        raise ExecutableError(f"the blob's runtime is {runtime[:40]!r}, not 'pjrt_ifrt'")
    return meta, rest


def computation_name(meta: bytes) -> str:
    """The computation's name in IFRT's metadata (field 7)."""
    return wire.field(meta, 7).decode()


def with_executable(executable_and_options: bytes, executable: bytes) -> bytes:
    """``executable_and_options`` with field 1 (the executable) replaced, every other field
    (the compile options above all) kept as it is, in place."""
    out, done = b"", False
    for n, kind, _, start, end in wire.fields(executable_and_options):
        if n == 1 and kind == 2 and not done:
            out += wire.length_delimited(1, executable)
            done = True
        elif not (n == 1 and kind == 2):
            out += executable_and_options[start:end]
    return out


# --- 4. Riegeli and Snappy ----------------------------------------------------------------


def snappy_decompress(b: bytes) -> bytes:
    """A raw Snappy block: a varint length, then literals and back-references."""
    n, k = wire.varint(b, 0)
    out = bytearray()
    while k < len(b):
        tag = b[k]
        k += 1
        kind = tag & 3
        if kind == 0:
            ln = tag >> 2
            if ln >= 60:
                extra = ln - 59
                ln = int.from_bytes(b[k : k + extra], "little")
                k += extra
            ln += 1
            if k + ln > len(b):
                raise ExecutableError("snappy: a literal runs past the end")
            out += b[k : k + ln]
            k += ln
            continue
        if kind == 1:
            ln, off = ((tag >> 2) & 7) + 4, ((tag >> 5) << 8) | b[k]
            k += 1
        elif kind == 2:
            ln, off = (tag >> 2) + 1, int.from_bytes(b[k : k + 2], "little")
            k += 2
        else:
            ln, off = (tag >> 2) + 1, int.from_bytes(b[k : k + 4], "little")
            k += 4
        if off == 0 or off > len(out):
            raise ExecutableError(f"snappy: a copy {off} bytes back from byte {len(out)}")
        start = len(out) - off
        if off >= ln:
            out += out[start : start + ln]
        else:  # overlapping: the pattern repeats
            while ln > 0:
                piece = out[start : start + min(ln, off)]
                out += piece
                ln -= len(piece)
    if len(out) != n:
        raise ExecutableError(f"snappy: {len(out)} bytes decoded, {n} announced")
    return bytes(out)


def _decompress(block: bytes, compression: int) -> bytes:
    """A Riegeli compressed block: none (0) as is; Snappy ('s') after its varint size."""
    if compression == 0:
        return block
    size, k = wire.varint(block, 0)
    if compression == ord("s"):
        out = snappy_decompress(block[k:])
    else:
        raise ExecutableError(f"riegeli: compression {chr(compression)!r} is not read here "
                              "(none and snappy are)")  # fmt: skip
    if len(out) != size:
        raise ExecutableError(f"riegeli: {len(out)} bytes decompressed, {size} announced")
    return out


def riegeli_records(data: bytes) -> list[bytes]:
    """Every record of a Riegeli file whose record chunks are simple chunks (type ``r``),
    uncompressed or Snappy-compressed; signature, metadata and padding chunks are skipped."""
    if len(data) < BLOCK_HEADER + CHUNK_HEADER:
        raise ExecutableError(f"riegeli: {len(data)} bytes, too short for a file")
    # The logical stream: the file without the block header at each 64 KiB boundary.
    logical = b"".join(data[i + BLOCK_HEADER : i + BLOCK] for i in range(0, len(data), BLOCK))
    records, k = [], 0
    while k < len(logical):
        if k + CHUNK_HEADER > len(logical):
            raise ExecutableError(f"riegeli: a chunk header cut off at logical byte {k}")
        h = logical[k : k + CHUNK_HEADER]
        size = int.from_bytes(h[8:16], "little")
        kind = h[24]
        count = int.from_bytes(h[25:32], "little")
        body = logical[k + CHUNK_HEADER : k + CHUNK_HEADER + size]
        if len(body) != size:
            raise ExecutableError(f"riegeli: a chunk of {size} bytes at logical byte {k} is cut off")
        if kind == ord("r"):
            records += _simple_chunk(body, count)
        elif kind not in (ord("s"), ord("m"), ord("p")):
            raise ExecutableError(f"riegeli: chunk type {kind:#x} at logical byte {k} is not read here")
        k += CHUNK_HEADER + size
    if k == 0 or not records:
        raise ExecutableError("riegeli: no records")
    return records


def _simple_chunk(body: bytes, count: int) -> list[bytes]:
    """The records of a simple chunk: compression type, the compressed sizes (varints), the
    compressed values (the records one after the other)."""
    if not body:
        raise ExecutableError("riegeli: an empty simple chunk")
    compression = body[0]
    n, k = wire.varint(body, 1)
    sizes_raw = _decompress(body[k : k + n], compression)
    values = _decompress(body[k + n :], compression)
    sizes, j = [], 0
    while j < len(sizes_raw):
        v, j = wire.varint(sizes_raw, j)
        sizes.append(v)
    if len(sizes) != count or sum(sizes) != len(values):
        raise ExecutableError(f"riegeli: {len(sizes)} record sizes for {count} records, "
                              f"{sum(sizes)} bytes for {len(values)}")  # fmt: skip
    out, pos = [], 0
    for s in sizes:
        out.append(values[pos : pos + s])
        pos += s
    return out


# --- 5. the GPU executable ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class GpuExecutable:
    """What a serialized XLA GPU executable holds, read from its bytes."""

    #: The ``HloModuleProto`` it runs (parse it with jaxlib's
    #: ``hlo.HloModule.from_serialized_hlo_module_proto``).
    module_proto: bytes
    #: The HLO instruction each top-level thunk was emitted for, in execution order.
    thunks: tuple[str, ...]
    #: ``(size, color)`` of every buffer allocation: XLA's buffer assignment.
    allocations: tuple[tuple[int, int], ...]

    @property
    def device_bytes(self) -> int:
        """The device memory the executable reserves: the allocations of the default memory
        space (color 0), as XLA's memory-usage report's ``Total bytes``."""
        return sum(size for size, color in self.allocations if color == 0)


def _allocations(msg: bytes) -> list[tuple[int, int]] | None:
    """``(size, color)`` of each ``BufferAllocationProto`` (index 1, size 2, color 8) in the
    repeated field 1 of ``msg``; None when ``msg`` is not such a list."""
    out = []
    try:
        for n, kind, v, _, _ in wire.fields(msg):
            if n != 1 or kind != 2:
                return None
            size = color = 0
            index = None
            for m, k2, x, _, _ in wire.fields(v):
                if m == 1 and k2 == 0:
                    index = x
                elif m == 2 and k2 == 0:
                    size = x
                elif m == 8 and k2 == 0:
                    color = x
            if index is None and out:
                return None
            out.append((size, color))
    except wire.WireError:
        return None
    return out or None


def read_gpu_executable(executable: bytes, name: str) -> GpuExecutable:
    """The GPU executable record of a Riegeli file (layer 4): the record with a field that is
    an ``HloModuleProtoWithConfig`` of the module ``name`` (field 1), its buffer allocations
    (field 10) and its thunks (fields 13: each names its instruction in field 1, field 1)."""
    if not executable.startswith(bytes.fromhex("83af70d10d884a3f")):
        raise ExecutableError("the executable is not a Riegeli file (no signature block)")
    want = name.encode()
    for record in riegeli_records(executable):
        try:
            fs = list(wire.fields(record))
        except wire.WireError:
            continue
        module = None
        for n, kind, v, _, _ in fs:
            if n == 1 and kind == 2:
                try:
                    m = wire.field(v, 1)
                    if wire.field(m, 1) == want:
                        module = m
                except wire.WireError:
                    pass
        if module is None:
            continue
        allocations, thunks = None, []
        for n, kind, v, _, _ in fs:
            if n == 10 and kind == 2:
                allocations = _allocations(v)
            elif n == 13 and kind == 2:
                try:
                    thunks.append(wire.field(wire.field(v, 1), 1).decode())
                except (wire.WireError, UnicodeDecodeError):
                    raise ExecutableError("a thunk without its instruction's name") from None
        if allocations is None:
            raise ExecutableError(f"the executable of {name} has no buffer allocations (field 10)")
        return GpuExecutable(module, tuple(thunks), tuple(allocations))
    raise ExecutableError(f"no record of the executable holds the module {name!r}")


@dataclasses.dataclass(frozen=True)
class Payload:
    """A ``serialize()`` payload taken apart (:func:`read_payload`)."""

    blob: bytes
    metadata: bytes
    executable_and_options: bytes
    compile_options: bytes
    name: str
    gpu: GpuExecutable


def read_payload(payload: bytes) -> Payload:
    """Every layer of ``payload`` (see the module docs)."""
    blob, _, _ = exec_blob(payload)
    meta, eao = split_blob(blob)
    name = computation_name(meta)
    gpu = read_gpu_executable(wire.field(eao, 1), name)
    return Payload(blob, meta, eao, wire.field(eao, 2), name, gpu)
