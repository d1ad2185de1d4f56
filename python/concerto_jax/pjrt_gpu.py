"""Compiles a scheduled HLO module with XLA's GPU backend for H100, deviceless, keeping its schedule.

Usage::

    py=$(./scripts/pyenv-xla-gpu | tail -n1)
    PYTHONPATH=python "$py" -m concerto_jax.pjrt_gpu MODULE.hlo [--expect-order ORDER.txt] \\
        [--partitions 8] [--dump DIR] [--spec H100_SPEC.txtpb] --json

prints one JSON line::

    {"file": ..., "ok": bool, "compile_s": float, "instructions": N, "thunks": N,
     "compared": N, "order_equal": bool, "first_difference": str|null,
     "peak_bytes": N|null, "temp_bytes": N|null, "parameter_bytes": N|null,
     "output_bytes": N|null, "optimized_instructions": N, "thunk_kinds": {...},
     "error": str|null}

and exits 1 when the compile fails or the thunk order differs from the module's.

Why through the PJRT C API: jaxlib 0.10.2's Python compile takes only MLIR, which drops a
schedule. The CUDA plugin's C API (``jax_plugins/xla_cuda12/xla_cuda_plugin.so``, C API 0.112,
``xla/pjrt/c/pjrt_c_api.h``) compiles an ``HloModuleProto`` instead, with no client and no
device: ``GetPjrtApi``, ``PJRT_Plugin_Initialize``, ``PJRT_TopologyDescription_Create`` (options
``target_config`` = the H100 spec text (:func:`spec_text`) and ``topology`` = ``"1x1x8"``), ``PJRT_Compile`` (program
format ``"hlo"``: the module parsed by jaxlib's ``hlo_module_from_text``, which takes the text's
instruction order as the schedule when the header says ``is_scheduled=true``, serialized as an
``HloModuleProto``, which keeps the schedule; and a serialized ``CompileOptionsProto``: SPMD,
``partitions`` partitions, one replica, devices ``0..partitions-1``), then
``PJRT_Executable_OptimizedProgram`` (the compiled module, an ``HloModuleProto``). For a module
that has a schedule XLA's GPU compiler skips its HLO passes and runs only the backend (buffer
assignment, thunk emission, LLVM to PTX): the thunks come out in the module's order.

Structs are built with ctypes field by field as in that header (every argument struct starts
with ``size_t struct_size`` and ``PJRT_Extension_Base* extension_start``; ``struct_size`` is the
offset of the last field plus its size); ``PJRT_Api`` is ``struct_size``, ``extension_start``,
``PJRT_Api_Version`` (24 bytes), then function pointers in the header's (append-only) order:
``PJRT_Error_Destroy`` 0, ``PJRT_Error_Message`` 1, ``PJRT_Plugin_Initialize`` 3,
``PJRT_Executable_Destroy`` 40, ``PJRT_Executable_OptimizedProgram`` 48,
``PJRT_TopologyDescription_Create`` 82, ``PJRT_TopologyDescription_Destroy`` 83,
``PJRT_Compile`` 89. The plugin's API version is checked (major 0, minor >= 112).

What is compared: XLA writes ``thunk_sequence.txt`` (with ``--xla_dump_to``); each thunk names
the HLO instruction it was emitted for. The thunks' instruction names, in order, consecutive
repeats merged (one instruction may give several thunks, e.g. a memset and a kernel), and
restricted to names of the module's entry computation, must equal the entry's instruction
order (``--expect-order``: a file with one instruction name per line, else the module's own
text order) restricted to the instructions that got a thunk. Instructions without a thunk
(parameters, constants, bitcasts, get-tuple-elements, tuples, and whatever XLA emits none for)
are not compared; ``compared`` says how many were.

XLA's memory figure for the schedule is its buffer assignment (see :func:`memory`):
``peak_bytes`` is the device memory it allocates, ``temp_bytes`` the part that depends on the
schedule (the heap-simulated peak of the intermediates).

XLA may abort the process, so the compile runs in a child process (this module with
``--child``); the parent reads its JSON. Cost: about 3 s of XLA per 500-instruction module plus
about 2 s of jax import.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter

from concerto_jax import wire
from concerto_jax.h100 import h100_target_config

HERE = os.path.dirname(os.path.abspath(__file__))


def spec_text(path: str | None = None) -> str:
    """The H100 target config: the file ``path``, by default
    :func:`concerto_jax.h100.h100_target_config` (the spec the corpus is compiled with)."""
    if path is not None:
        with open(path) as f:
            return f.read()
    return h100_target_config()


API_MINOR = 112

# Function slots of PJRT_Api (pjrt_c_api.h, C API 0.112).
ERROR_DESTROY, ERROR_MESSAGE, PLUGIN_INITIALIZE = 0, 1, 3
EXECUTABLE_DESTROY, EXECUTABLE_OPTIMIZED_PROGRAM, EXECUTABLE_SERIALIZE = 40, 48, 49
TOPOLOGY_CREATE, TOPOLOGY_DESTROY, COMPILE = 82, 83, 89

NO_THUNK = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}


def plugin_path() -> str:
    """The CUDA plugin's shared library; raises ``ImportError`` when it is not installed."""
    import jax_plugins.xla_cuda12 as plug  # noqa: PLC0415

    path = os.path.join(os.path.dirname(plug.__file__), "xla_cuda_plugin.so")
    if not os.path.exists(path):
        raise ImportError(f"{path} does not exist")
    return path


# ------------------------------------------------------------------------------ ctypes structs

P = ctypes.c_void_p
SZ = ctypes.c_size_t


def _struct(name: str, fields: list[tuple[str, object]]):
    cls = type(name, (ctypes.Structure,), {"_fields_": [("struct_size", SZ), ("extension_start", P)] + fields})
    return cls


ApiVersion = type(
    "ApiVersion", (ctypes.Structure,), {"_fields_": [("struct_size", SZ), ("extension_start", P), ("major", ctypes.c_int), ("minor", ctypes.c_int)]}
)
ApiHead = type("ApiHead", (ctypes.Structure,), {"_fields_": [("struct_size", SZ), ("extension_start", P), ("version", ApiVersion)]})


class NamedValue(ctypes.Structure):
    """PJRT_NamedValue: name, type (enum, int), a union of 8 bytes, value_size."""

    _fields_ = [
        ("struct_size", SZ),
        ("extension_start", P),
        ("name", ctypes.c_char_p),
        ("name_size", SZ),
        ("type", ctypes.c_int),
        ("value", P),  # union { const char*; int64_t; const int64_t*; float; bool }
        ("value_size", SZ),
    ]


ErrorDestroy = _struct("ErrorDestroy", [("error", P)])
ErrorMessage = _struct("ErrorMessage", [("error", P), ("message", P), ("message_size", SZ)])
PluginInitialize = _struct("PluginInitialize", [])
TopologyCreate = _struct(
    "TopologyCreate",
    [("topology_name", ctypes.c_char_p), ("topology_name_size", SZ), ("create_options", P), ("num_options", SZ), ("topology", P)],
)
TopologyDestroy = _struct("TopologyDestroy", [("topology", P)])
Program = _struct("Program", [("code", P), ("code_size", SZ), ("format", P), ("format_size", SZ)])
Compile = _struct(
    "Compile",
    [("topology", P), ("program", P), ("compile_options", P), ("compile_options_size", SZ), ("client", P), ("executable", P)],
)
OptimizedProgram = _struct("OptimizedProgram", [("executable", P), ("program", P)])
ExecutableDestroy = _struct("ExecutableDestroy", [("executable", P)])
Serialize = _struct(
    "Serialize",
    [("executable", P), ("serialized_bytes", P), ("serialized_bytes_size", SZ), ("serialized_executable", P), ("deleter", P)],
)


class Pjrt:
    """The plugin's PJRT_Api and the calls this module makes."""

    def __init__(self, so: str):
        self.lib = ctypes.CDLL(so)
        self.lib.GetPjrtApi.restype = P
        self.api = self.lib.GetPjrtApi()
        head = ApiHead.from_address(self.api)
        self.version = (head.version.major, head.version.minor)
        if head.version.major != 0 or head.version.minor < API_MINOR:
            raise RuntimeError(f"the plugin's PJRT C API is {self.version}, 0.{API_MINOR}+ needed")
        self.slots = (head.struct_size - 40) // 8

    def _fn(self, slot: int):
        if slot >= self.slots:
            raise RuntimeError(f"PJRT_Api has {self.slots} functions, slot {slot} wanted")
        addr = P.from_address(self.api + 40 + 8 * slot).value
        return ctypes.CFUNCTYPE(P, P)(addr)

    @staticmethod
    def _args(cls, **kw):
        a = cls(**kw)
        a.struct_size = ctypes.sizeof(cls)  # the last field ends the struct: no tail padding
        return a

    def call(self, slot: int, args) -> None:
        err = self._fn(slot)(ctypes.addressof(args))
        if err:
            m = self._args(ErrorMessage, error=err)
            self._fn(ERROR_MESSAGE)(ctypes.addressof(m))
            msg = ctypes.string_at(m.message, m.message_size).decode(errors="replace")
            self._fn(ERROR_DESTROY)(ctypes.addressof(self._args(ErrorDestroy, error=err)))
            raise RuntimeError(msg)

    def initialize(self) -> None:
        self.call(PLUGIN_INITIALIZE, self._args(PluginInitialize))

    def topology(self, name: str, options: dict[str, str]):
        keep = []
        values = (NamedValue * len(options))()
        for k, (key, val) in enumerate(options.items()):
            kb, vb = key.encode(), val.encode()
            keep += [kb, vb]
            values[k] = NamedValue(ctypes.sizeof(NamedValue), None, kb, len(kb), 0, ctypes.cast(ctypes.c_char_p(vb), P), len(vb))
        nb = name.encode()
        a = self._args(TopologyCreate, topology_name=nb, topology_name_size=len(nb), create_options=ctypes.addressof(values), num_options=len(options))
        self.call(TOPOLOGY_CREATE, a)
        return a.topology

    def destroy_topology(self, topology) -> None:
        self.call(TOPOLOGY_DESTROY, self._args(TopologyDestroy, topology=topology))

    def compile(self, topology, code: bytes, options: bytes):
        code_buf = ctypes.create_string_buffer(code, len(code))
        fmt = ctypes.create_string_buffer(b"hlo", 3)
        prog = self._args(Program, code=ctypes.addressof(code_buf), code_size=len(code), format=ctypes.addressof(fmt), format_size=3)
        opt_buf = ctypes.create_string_buffer(options, len(options))
        a = self._args(
            Compile,
            topology=topology,
            program=ctypes.addressof(prog),
            compile_options=ctypes.addressof(opt_buf),
            compile_options_size=len(options),
            client=None,
        )
        self.call(COMPILE, a)
        return a.executable

    def optimized_program(self, executable) -> bytes:
        fmt = ctypes.create_string_buffer(b"hlo", 3)
        prog = self._args(Program, code=None, code_size=0, format=ctypes.addressof(fmt), format_size=3)
        a = self._args(OptimizedProgram, executable=executable, program=ctypes.addressof(prog))
        self.call(EXECUTABLE_OPTIMIZED_PROGRAM, a)
        buf = ctypes.create_string_buffer(prog.code_size)
        prog.code = ctypes.addressof(buf)
        self.call(EXECUTABLE_OPTIMIZED_PROGRAM, a)
        fmt_out = ctypes.string_at(prog.format, prog.format_size).decode()
        return fmt_out, buf.raw[: prog.code_size]

    def serialize(self, executable) -> bytes:
        """``PJRT_Executable_Serialize``: the plugin's serialization of ``executable`` (for the
        CUDA plugin an ``xla.ExecutableAndOptionsProto``: the executable, then its compile
        options), copied out before its backing memory is freed."""
        a = self._args(Serialize, executable=executable)
        self.call(EXECUTABLE_SERIALIZE, a)
        out = ctypes.string_at(a.serialized_bytes, a.serialized_bytes_size)
        if a.deleter:
            ctypes.CFUNCTYPE(None, P)(a.deleter)(a.serialized_executable)
        return out

    def destroy_executable(self, executable) -> None:
        self.call(EXECUTABLE_DESTROY, self._args(ExecutableDestroy, executable=executable))


# ------------------------------------------------------------------------------ the child


def compile_options(partitions: int) -> bytes:
    """A serialized CompileOptionsProto: SPMD over ``partitions`` partitions, one replica."""
    import numpy as np  # noqa: PLC0415
    from jax._src.lib import xla_client  # noqa: PLC0415

    co = xla_client.CompileOptions()
    eb = co.executable_build_options
    eb.num_replicas = 1
    eb.num_partitions = partitions
    eb.use_spmd_partitioning = True
    eb.device_assignment = xla_client.DeviceAssignment.create(np.arange(partitions).reshape(1, partitions))
    co.num_replicas = 1
    co.num_partitions = partitions
    return co.SerializeAsString()


def _child(path: str, partitions: int, dump_dir: str, spec: str | None, options: str | None = None,
           serialize_to: str | None = None) -> dict:  # fmt: skip
    """Compiles ``path`` (XLA_FLAGS already set by the parent); returns the result dict.
    ``options``: a file holding a serialized ``CompileOptionsProto`` to compile with instead of
    :func:`compile_options`'s; ``serialize_to``: where to write ``PJRT_Executable_Serialize``'s
    bytes."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    from jax._src.lib import hlo  # noqa: PLC0415

    out: dict = {"error": None}
    with open(path) as f:
        text = f.read()
    module = hlo.hlo_module_from_text(text)
    if module.schedule() is None:
        raise RuntimeError("the module has no schedule (is_scheduled=true missing)")
    code = module.as_serialized_hlo_module_proto()
    pjrt = Pjrt(plugin_path())
    out["api_version"] = "%d.%d" % pjrt.version
    pjrt.initialize()
    topo = pjrt.topology("h100x8", {"target_config": spec_text(spec), "topology": f"1x1x{partitions}"})
    t0 = time.perf_counter()
    if options is not None:
        with open(options, "rb") as f:
            opts = f.read()
    else:
        opts = compile_options(partitions)
    exe = pjrt.compile(topo, code, opts)
    out["compile_s"] = round(time.perf_counter() - t0, 3)
    if serialize_to is not None:
        blob = pjrt.serialize(exe)
        with open(serialize_to, "wb") as f:
            f.write(blob)
        out["serialized_bytes"] = len(blob)
    fmt, optimized = pjrt.optimized_program(exe)
    out["optimized_format"] = fmt
    if fmt == "hlo_with_config":
        optimized = wire.field(optimized, 1)  # HloModuleProtoWithConfig.hlo_module
    out["optimized_hlo"] = hlo.HloModule.from_serialized_hlo_module_proto(optimized).to_string()
    pjrt.destroy_executable(exe)
    pjrt.destroy_topology(topo)
    return out


# ------------------------------------------------------------------------------ the parent

_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*\S")


def entry_sequence(text: str) -> list[tuple[str, str]]:
    """``(name, opcode)`` of the entry computation's instructions in text order."""
    out, in_entry, depth = [], False, 0
    for line in text.splitlines():
        s = line.strip()
        if not in_entry:
            if s.startswith("ENTRY ") and s.endswith("{"):
                in_entry = True
            continue
        if s.startswith("}"):
            break
        m = _INSTR.match(line)
        if m:
            out.append((m.group(1), _opcode(line[m.end() - 1 :])))
    return out


def _opcode(rest: str) -> str:
    """The opcode after the shape in ``shape opcode(...)``."""
    rest = rest.lstrip()
    if rest.startswith("("):
        depth = 0
        for k, ch in enumerate(rest):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                rest = rest[k + 1 :]
                break
    else:
        rest = rest.split(None, 1)[1] if " " in rest else ""
    return rest.lstrip().split("(", 1)[0].strip()


def thunk_names(sequence_text: str, metadata_text: str) -> list[tuple[int, str, str]]:
    """``(thunk id, kind, HLO instruction)`` of the top-level thunks of ``thunk_sequence.txt``
    in order (lines ``NNN: kKind [...]``; indented lines are thunks nested in an async start),
    named by ``thunk_metadata.txt`` (``thunk_id`` -> ``profile_annotation``, the instruction's
    name). Thunks without a name (XLA's own command buffers, sequentials) are left out."""
    names = {}
    for block in re.findall(r"thunk_metadata \{(.*?)\n\}", metadata_text, re.S):
        i = re.search(r"thunk_id: (\d+)", block)
        a = re.search(r'profile_annotation: "((?:[^"\\]|\\.)*)"', block)
        if i and a:
            names[int(i.group(1))] = a.group(1)
    out = []
    for line in sequence_text.splitlines():
        m = re.match(r"^(\d+): (k\w+)", line)
        if m and int(m.group(1)) in names:
            out.append((int(m.group(1)), m.group(2), names[int(m.group(1))]))
    return out


def instruction_order(thunks: list[tuple[int, str, str]], names: set[str]) -> list[str]:
    """The entry instructions the thunks were emitted for, in order, consecutive repeats merged
    (one instruction may give several thunks: a memset and a kernel, a copy per element)."""
    seq: list[str] = []
    for _, _, name in thunks:
        if name in names and (not seq or seq[-1] != name):
            seq.append(name)
    return seq


def memory(dump_dir: str) -> dict:
    """XLA's memory figures for the compiled schedule, from the dump:

    - ``peak_bytes``: ``Total bytes`` of ``*-memory-usage-report.txt``, the device memory XLA's
      buffer assignment allocates (every allocation: parameters, the output, the temp buffer,
      constants, thread-local);
    - from ``*-buffer-assignment.txt``: ``temp_bytes`` (the ``preallocated-temp`` allocation,
      whose size is the heap-simulated peak of every intermediate value in this schedule),
      ``parameter_bytes``, ``output_bytes`` (donated outputs share their parameter's
      allocation) and ``allocations``.
    """
    out: dict = {"peak_bytes": None, "temp_bytes": None, "parameter_bytes": None, "output_bytes": None, "allocations": None}
    for f in sorted(glob.glob(os.path.join(dump_dir, "*-memory-usage-report.txt")))[-1:]:
        with open(f) as fh:
            m = re.search(r"Total bytes:\s*(\d+)", fh.read())
        if m:
            out["peak_bytes"] = int(m.group(1))
    for f in sorted(glob.glob(os.path.join(dump_dir, "*-buffer-assignment.txt")))[-1:]:
        by_kind: Counter = Counter()
        count = 0
        with open(f) as fh:
            text = fh.read()
        for m in re.finditer(r"^allocation \d+: size (\d+), ([a-z-]+)", text, re.M):
            by_kind[m.group(2)] += int(m.group(1))
            count += 1
        out["temp_bytes"] = by_kind.get("preallocated-temp", 0)
        out["parameter_bytes"] = by_kind.get("parameter", 0)
        out["output_bytes"] = by_kind.get("output", 0) + by_kind.get("maybe-live-out", 0)
        out["allocations"] = count
    return out


def compile_scheduled(hlo_text: str, partitions: int = 8, dump_dir: str | None = None, spec: str | None = None, expect_order: list[str] | None = None,
                      options: bytes | None = None, serialize: bool = False) -> dict:  # fmt: skip
    """Compiles ``hlo_text`` (a module with ``is_scheduled=true``) with XLA's GPU backend for H100
    in a child process; returns a dict with ``optimized_hlo`` (text), ``thunks`` (instruction
    names in thunk order), ``peak_bytes`` (XLA's buffer-assignment peak), ``compile_s``, the
    order comparison (see the module docs) and ``error`` (None when it compiled).

    ``options``: a serialized ``CompileOptionsProto`` to compile with (default: SPMD over
    ``partitions``, :func:`compile_options`); ``serialize``: also return the executable's
    ``PJRT_Executable_Serialize`` bytes as ``serialized``."""
    own = dump_dir is None
    dump = tempfile.mkdtemp(prefix="concerto-pjrt-") if own else dump_dir
    os.makedirs(dump, exist_ok=True)
    src = os.path.join(dump, "input.hlo")
    with open(src, "w") as f:
        f.write(hlo_text)
    env = dict(os.environ)
    env["XLA_FLAGS"] = f"--xla_dump_to={dump} --xla_dump_hlo_as_text"
    env["JAX_PLATFORMS"] = "cpu"
    env["JAX_SKIP_CUDA_CONSTRAINTS_CHECK"] = "1"
    env["PYTHONPATH"] = os.path.dirname(HERE) + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "concerto_jax.pjrt_gpu", "--child", src, "--partitions", str(partitions)]
    cmd += ["--spec", spec] if spec else []
    if options is not None:
        opt_path = os.path.join(dump, "compile_options.pb")
        with open(opt_path, "wb") as f:
            f.write(options)
        cmd += ["--options", opt_path]
    ser_path = os.path.join(dump, "executable.pjrt")
    if serialize:
        cmd += ["--serialize-to", ser_path]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    res: dict = {"error": None}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = "\n".join((p.stderr or "").strip().splitlines()[-8:])
        res["error"] = f"the compile child exited {p.returncode}: {tail}"
    else:
        res.update(json.loads(lines[-1]))
    res["child_s"] = round(wall, 3)
    if serialize and not res.get("error"):
        with open(ser_path, "rb") as f:
            res["serialized"] = f.read()
    if res.get("error"):
        if own:
            shutil.rmtree(dump, ignore_errors=True)
        return res
    sequence = entry_sequence(hlo_text)
    names = {n for n, _ in sequence}
    seq_files = sorted(glob.glob(os.path.join(dump, "*.thunk_sequence.txt")))
    meta_files = sorted(glob.glob(os.path.join(dump, "*.thunk_metadata.txt")))
    raw = []
    if seq_files and meta_files:
        with open(seq_files[-1]) as f1, open(meta_files[-1]) as f2:
            raw = thunk_names(f1.read(), f2.read())
    res["thunk_count"] = len(raw)
    res["thunk_kinds"] = dict(sorted(Counter(k for _, k, _ in raw).items()))
    thunks = instruction_order(raw, names)
    res["thunks"] = thunks
    res["instructions"] = len(sequence)
    order = expect_order if expect_order is not None else [n for n, _ in sequence]
    got = set(thunks)
    want = [n for n in order if n in got]
    res["compared"] = len(want)
    res["order_equal"] = bool(thunks) and want == thunks
    res["first_difference"] = None
    if not res["order_equal"]:
        for k, (a, b) in enumerate(zip(want + [None] * len(thunks), thunks + [None] * len(want))):
            if a != b:
                res["first_difference"] = f"position {k}: the order has {a}, the thunks {b}"
                break
        if not thunks:
            res["first_difference"] = "no thunk sequence in the dump"
    res.update(memory(dump))
    res["optimized_instructions"] = len(entry_sequence(res.get("optimized_hlo", "")))
    res["dump_dir"] = None if own else dump
    if own:
        shutil.rmtree(dump, ignore_errors=True)
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="concerto_jax.pjrt_gpu", description=__doc__.split("\n")[0])
    ap.add_argument("module")
    ap.add_argument("--expect-order", help="a file of entry instruction names, one per line")
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--dump", help="keep XLA's dump here")
    ap.add_argument("--spec", help="H100 target config file (default: see spec_text)")
    ap.add_argument("--json", action="store_true", help="print one JSON line (the default output)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--options", help=argparse.SUPPRESS)  # a CompileOptionsProto file (child)
    ap.add_argument("--serialize-to", help=argparse.SUPPRESS)  # the serialization's file (child)
    a = ap.parse_args(argv)
    if a.child:
        try:
            out = _child(a.module, a.partitions, None, a.spec, a.options, a.serialize_to)
        except Exception as e:  # noqa: BLE001 - reported to the parent
            out = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(out))
        return 0
    order = None
    if a.expect_order:
        with open(a.expect_order) as f:
            order = [ln.strip().lstrip("%") for ln in f if ln.strip()]
    with open(a.module) as f:
        text = f.read()
    res = compile_scheduled(text, a.partitions, a.dump, a.spec, order)
    res["file"] = a.module
    res["ok"] = res.get("error") is None and bool(res.get("order_equal"))
    short = {k: v for k, v in res.items() if k not in ("optimized_hlo", "thunks")}
    print(json.dumps(short))
    return 0 if res["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
