"""Concerto's schedule inside a JAX program: :func:`compile` returns a step whose executable runs
concerto's order, :func:`save` and :func:`load` carry it from a CPU host to the GPU hosts.

This is JAX's own ahead-of-time route (compile against a topology on a CPU host, run on the
accelerator hosts) with one change: the executable inside is concerto's. For a ``jax.jit`` step
and its arguments (arrays, or ``jax.ShapeDtypeStruct`` with shardings over real devices or the
compile-only devices of ``jax.experimental.topologies.get_topology_desc``), :func:`compile`:

1. lowers and compiles the step with XLA as JAX does, and serializes it
   (``jax.experimental.serialize_executable.serialize``): the *payload*;
2. reads XLA's module, its buffer assignment and its compile options out of the payload's bytes
   (:mod:`concerto_jax.executable`);
3. runs ``concerto optimize MODULE --emit-hlo`` on XLA's module under a work limit (the same
   plan on every host) and a memory budget: XLA's own peak plus ``memory_margin`` (default
   max(1 GiB, 5 %), the margin PyTorch's overlap passes allow), given to concerto as that
   percentage of XLA's schedule's peak in concerto's model;
4. compiles concerto's module (``is_scheduled=true``: XLA's GPU backend keeps its order) through
   the CUDA plugin's PJRT C API with the same compile options (their argument layouts left out:
   they are the global shapes, the module's are per device) and target, and serializes it
   with ``PJRT_Executable_Serialize`` (:mod:`concerto_jax.pjrt_gpu`);
5. builds the payload ``deserialize_and_load`` takes: XLA's payload with only the executable's
   bytes replaced (IFRT's metadata, the shardings, layouts and compile options stay XLA's), and
   checks it (:func:`check_payload`): the module inside has concerto's entry order and its
   thunks run in it, the same parameters, results, aliasing and layouts as XLA's module, and
   XLA's buffer assignment of it within the budget;
6. sends XLA's own module through the same path (``check_wrapper``): the payload must equal
   XLA's in everything but the executable's bytes, with the same module, thunk order and
   buffer assignment. That proves the wrapper, not only concerto's module.

It keeps XLA's own executable, with a warning that says why, whenever the plan is not shorter
than XLA's schedule (simulated), concerto finds no plan within the budget, the compile fails, or
a check fails; ``kept`` says which runs. The numerics are XLA's: the same instructions in
another order (an order can change the bits of a floating-point reduction only where XLA's
own schedule could have).

What a CPU host cannot check: the step's run time and its outputs on the GPU (the GPU issue
measures both). Versions: jax, jaxlib and jax-cuda12-plugin 0.10.2 (the layout of a payload is
not a stable format: :func:`load` refuses another version by name).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import pickle
import re
import shutil
import subprocess
import tempfile
import warnings
from importlib import metadata

from concerto_jax import executable as exe_mod
from concerto_jax import pjrt_gpu, wire

__all__ = ["AotError", "Compiled", "DevicesMissing", "VersionMismatch", "check_payload", "compile",
           "load", "save"]  # fmt: skip

#: The packages whose versions a saved executable records and :func:`load` compares.
PACKAGES = ("jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt")
#: The first bytes of a file :func:`save` writes.
MAGIC = b"CONCERTO-JAX-EXECUTABLE\n"
FORMAT = 1
GIB = 1 << 30


class AotError(RuntimeError):
    """A compile, save or load that cannot go on; the message says why."""


class DevicesMissing(AotError):
    """The executable needs devices this process does not have."""


class VersionMismatch(AotError):
    """The executable was compiled by other versions of jax, jaxlib or the plugin."""


def versions() -> dict[str, str | None]:
    """The installed versions of :data:`PACKAGES` (None when one is not installed)."""
    out = {}
    for p in PACKAGES:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = None
    return out


def default_margin(xla_peak: int) -> int:
    """The default memory margin over XLA's own peak: max(1 GiB, 5 %)."""
    return max(GIB, xla_peak // 20)


def entry_order(text: str) -> list[tuple[str, str]]:
    """The entry computation's instructions (name, opcode) in text order, but its parameters.
    They do no work, and XLA's GPU backend moves some of them (in front of an async
    collective's start that precedes their first reader), so their places say nothing about
    the order."""
    return [(n, op) for n, op in pjrt_gpu.entry_sequence(text) if op != "parameter"]


#: Instructions that launch no kernel: XLA's passes add, remove and rename them freely.
NO_WORK = frozenset({"tuple", "get-tuple-element", "bitcast"})


@dataclasses.dataclass
class EntryGraph:
    """The entry computation of a module's text: ``order`` (:func:`entry_order`), ``users``
    (every instruction's readers, control successors included) and ``root``."""

    order: list[tuple[str, str]]
    users: dict[str, set[str]]
    root: str | None


_REF = re.compile(r"%([\w.\-]+)")


def entry_graph(text: str) -> EntryGraph:
    """:class:`EntryGraph` of ``text``: one pass over the entry computation's lines, each
    instruction's operands (and control predecessors) read as the ``%name`` references after
    its ``=``; references to computations (``calls=``) name no entry instruction."""
    order = entry_order(text)
    names = {n for n, _ in pjrt_gpu.entry_sequence(text)}
    users: dict[str, set[str]] = {n: set() for n in names}
    root, in_entry = None, False
    for line in text.splitlines():
        s = line.strip()
        if not in_entry:
            in_entry = s.startswith("ENTRY ") and s.endswith("{")
            continue
        if s.startswith("}"):
            break
        m = pjrt_gpu._INSTR.match(line)
        if not m:
            continue
        name = m.group(1)
        root = name if s.startswith("ROOT ") else root
        for ref in _REF.findall(line[m.end() - 1 :]):
            if ref in names and ref != name:
                users[ref].add(name)
    return EntryGraph(order, users, root)


def order_problem(entry: list[tuple[str, str]], plan: EntryGraph) -> str | None:
    """Whether the compiled module's ``entry`` order is the ``plan``'s. XLA's GPU backend
    removes copies it finds redundant and instructions nothing reads (the loop counter of an
    unrolled loop's last iteration), rewrites tuples, and adds or renames the copies its layout
    and aliasing passes need (``copy.112`` of a plan can come back as ``copy``). So the plan's
    instructions may be missing when they are copies, launch no kernel (:data:`NO_WORK`), or
    are dead: not the root, every reader missing too. New instructions may be copies or launch
    no kernel. The instructions in both must be in the same order. Returns the first violation,
    or None. Cost: linear in the module (one fixpoint pass per dead chain's length)."""
    names, want_names = {n for n, _ in entry}, {n for n, _ in plan.order}
    missing = {n: op for n, op in plan.order if n not in names}
    allowed = {n for n, op in missing.items() if op == "copy" or op in NO_WORK}
    grew = True
    while grew:
        dead = {n for n in missing if n not in allowed and n != plan.root
                and plan.users.get(n, set()) <= allowed}  # fmt: skip
        allowed |= dead
        grew = bool(dead)
    lost = [n for n, _ in plan.order if n in missing and n not in allowed]
    new = [n for n, op in entry if n not in want_names and op != "copy" and op not in NO_WORK]
    if lost or new:
        return (f"the compiled module lacks {len(lost)} of the plan's instructions that do work "
                f"({', '.join(lost[:3])}) and has {len(new)} the plan has not "
                f"({', '.join(new[:3])})")  # fmt: skip
    a = [n for n, _ in entry if n in want_names]
    b = [n for n, _ in plan.order if n in names]
    if a == b:
        return None
    first = next(k for k, (x, y) in enumerate(zip(a, b)) if x != y)
    return (f"the module's entry order is not the plan's: position {first} of {len(b)} is "
            f"{a[first]} in the module, {b[first]} in the plan")  # fmt: skip


def module_text(proto: bytes) -> str:
    """An ``HloModuleProto`` as HLO text (jaxlib's printer)."""
    from jax._src.lib import hlo  # noqa: PLC0415

    return hlo.HloModule.from_serialized_hlo_module_proto(proto).to_string()


def _header(text: str) -> str:
    """The module's first line: name, ``is_scheduled``, aliasing, entry computation layout."""
    return text.split("\n", 1)[0].strip()


# --- the checks -----------------------------------------------------------------------------


@dataclasses.dataclass
class PayloadCheck:
    """What :func:`check_payload` found; ``problems`` is empty when every check holds."""

    problems: list[str]
    device_bytes: int
    entry: list[tuple[str, str]]
    thunks: list[str]
    text: str


def check_payload(payload: bytes, reference: bytes, plan: str | None) -> PayloadCheck:
    """Checks ``payload`` against ``reference`` (XLA's own payload of the same step), from their
    bytes: the pickles are equal but for the executable's bytes; the IFRT metadata (shardings,
    layouts, name) and the compile options are equal; the module inside ``payload`` has the
    same first line (parameters, results, aliasing, layouts) as ``reference``'s; its entry
    order is that of the module text ``plan`` (when given, :func:`order_problem`); its thunks run in its entry
    order."""
    problems: list[str] = []
    ref = exe_mod.read_payload(reference)
    try:
        got = exe_mod.read_payload(payload)
    except exe_mod.ExecutableError as e:
        return PayloadCheck([f"the payload does not read: {e}"], 0, [], [], "")
    if exe_mod.replace_exec(payload, ref.blob) != reference:
        problems.append("the payload differs from XLA's outside the executable's bytes")
    if got.metadata != ref.metadata:
        problems.append("IFRT's metadata (shardings, layouts, name) differs from XLA's")
    if got.compile_options != ref.compile_options:
        problems.append("the compile options differ from XLA's")
    text, ref_text = module_text(got.gpu.module_proto), module_text(ref.gpu.module_proto)
    if _header(text) != _header(ref_text):
        problems.append(f"the module's parameters, results or layouts differ from XLA's:\n  "
                        f"{_header(text)[:300]}\n  {_header(ref_text)[:300]}")  # fmt: skip
    entry = entry_order(text)
    wrong = None if plan is None else order_problem(entry, entry_graph(plan))
    problems += [wrong] if wrong else []
    names = {n for n, _ in entry}
    thunks = pjrt_gpu.instruction_order([(0, "", t) for t in got.gpu.thunks], names)
    if [n for n, _ in entry if n in set(thunks)] != thunks:
        problems.append("the executable's thunks do not run in the module's entry order")
    return PayloadCheck(problems, got.gpu.device_bytes, entry, thunks, text)


# --- compile --------------------------------------------------------------------------------


@dataclasses.dataclass
class Compiled:
    """A step compiled by :func:`compile`: the call interface of ``jax.stages.Compiled`` and
    what was decided.

    ``kept`` is ``"concerto"`` or ``"xla"`` (the executable inside); ``xla_ns`` and
    ``concerto_ns`` are the makespans of XLA's schedule and of concerto's plan **simulated** by
    concerto's cost model (not measured); ``xla_peak_bytes`` and ``concerto_peak_bytes`` are
    XLA's buffer assignment of each executable (the device memory it reserves);
    ``budget_bytes`` is the memory budget; ``warnings`` say why XLA's executable was kept;
    ``profile`` is what ``profile=`` measured (``concerto optimize --profile``'s report:
    coverage, the ops left to the model), or None.
    """

    kept: str
    xla_ns: int | None
    concerto_ns: int | None
    lower_bound_ns: int | None
    xla_peak_bytes: int
    concerto_peak_bytes: int | None
    budget_bytes: int
    warnings: list[str]
    topology: dict
    payload: bytes
    in_tree: object
    out_tree: object
    xla_payload: bytes
    profile: dict | None = None
    _xla: object = dataclasses.field(default=None, repr=False)
    _loaded: object = dataclasses.field(default=None, repr=False)

    def serialize(self) -> tuple[bytes, object, object]:
        """``(payload, in_tree, out_tree)``, as ``jax.experimental.serialize_executable.serialize``
        returns them: ``deserialize_and_load`` takes them on a host with the devices."""
        return self.payload, self.in_tree, self.out_tree

    def optimized_hlo(self) -> str:
        """The text of the module inside the executable that runs (read from its bytes)."""
        return module_text(exe_mod.read_payload(self.payload).gpu.module_proto)

    def as_text(self) -> str:
        """The same as :meth:`optimized_hlo` (``jax.stages.Compiled.as_text``)."""
        return self.optimized_hlo()

    @property
    def args_info(self):
        """The arguments' info, as XLA's compiled step has it (the executables take the same)."""
        return self._xla.args_info if self._xla is not None else None

    def __call__(self, *args, **kwargs):
        """Runs the step: the executable is loaded on this process's devices the first time
        (:class:`DevicesMissing` when they are not the ones it was compiled for)."""
        if self._loaded is None:
            self._loaded = _deserialize(self.payload, self.in_tree, self.out_tree, self.topology)
        return self._loaded(*args, **kwargs)


def _topology(xla) -> dict:
    """Platform, device kind and count of the devices the step was compiled for."""
    import jax  # noqa: PLC0415

    devices = set()
    for s in jax.tree_util.tree_leaves(xla.input_shardings):
        devices |= set(getattr(s, "device_set", ()))
    if not devices:
        raise AotError("the step's arguments carry no devices (give arrays or ShapeDtypeStructs "
                       "with shardings)")  # fmt: skip
    d = next(iter(devices))
    return {"platform": d.platform, "device_kind": d.device_kind, "devices": len(devices)}


def _target_config(topology: dict, target_config: str | None) -> str:
    if target_config is not None:
        return target_config
    if topology["device_kind"] == "NVIDIA H100 80GB HBM3":
        from concerto_jax.h100 import h100_target_config  # noqa: PLC0415

        return h100_target_config()
    raise AotError(f"no target config for {topology['device_kind']!r}: pass target_config= (a "
                   "GpuTargetConfigProto text, as jax.experimental.topologies takes)")  # fmt: skip


def _compile_options(options: bytes, module_proto: bytes) -> bytes:
    """XLA's compile options for its partitioned module: the argument and result layouts set to
    the module's own program shape. XLA's are the global shapes the step was lowered with; a
    compiled module's parameters and results are per device, with the layouts of its entry
    computation. Everything else (devices, partitions, debug options) stays XLA's."""
    from jax._src.lib import xla_client as xc  # noqa: PLC0415

    shape = xc.XlaComputation(module_proto).program_shape()
    co = xc.CompileOptions.ParseFromString(options)
    co.argument_layouts = shape.parameter_shapes()
    co.executable_build_options.result_layout = shape.result_shape()
    return co.SerializeAsString()


def _pjrt(text: str, options: bytes, partitions: int, spec: str) -> tuple[bytes | None, str | None]:
    """Compiles ``text`` through the plugin's C API and serializes it: ``(executable, error)``."""
    r = pjrt_gpu.compile_scheduled(text, partitions, spec=spec, options=options, serialize=True,
                                   expect_order=[])  # fmt: skip
    if r.get("error"):
        return None, r["error"]
    return wire.field(r["serialized"], 1), None


def _concerto(binary: str, module: str, out: str, work_limit: int | None,
              time_limit: float | None, budget_pct: float, hardware: str,
              profile: str | None = None) -> tuple[dict | None, str | None]:  # fmt: skip
    cmd = [binary, "optimize", module, "--json", "--emit-hlo", out, "--hardware", hardware,
           "--memory-budget", f"{budget_pct:.6f}%"]  # fmt: skip
    if profile is not None:
        cmd += ["--profile", profile]
    if work_limit is not None:
        cmd += ["--work-limit", str(work_limit)]
    if time_limit is not None:
        cmd += ["--time-limit", str(time_limit)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        return None, f"concerto optimize failed ({r.returncode}): {r.stderr.strip()[-600:]}"
    return json.loads(r.stdout), None


def compile_payload(payload: bytes, in_tree, out_tree, topology: dict, *, xla=None,
                    work_limit: int | None = 20_000, time_limit: float | None = None,
                    memory_margin: int | None = None, hardware: str = "h100",
                    target_config: str | None = None, binary: str | None = None,
                    check_wrapper: bool = True, workdir: str | None = None,
                    profile: str | None = None) -> Compiled:  # fmt: skip
    """Steps 2-6 of the module docs on XLA's ``payload`` (``serialize()``'s first item), for
    ``topology`` (``platform``, ``device_kind``, ``devices``)."""
    from concerto.binary import find  # noqa: PLC0415

    xla_info = exe_mod.read_payload(payload)
    xla_text = module_text(xla_info.gpu.module_proto)
    xla_peak = xla_info.gpu.device_bytes
    margin = default_margin(xla_peak) if memory_margin is None else int(memory_margin)
    budget = xla_peak + margin
    spec_text = _target_config(topology, target_config)
    options = _compile_options(xla_info.compile_options, xla_info.gpu.module_proto)
    partitions = topology["devices"]
    notes: list[str] = []
    own = workdir is None
    work = tempfile.mkdtemp(prefix="concerto-aot-") if own else workdir
    os.makedirs(work, exist_ok=True)
    result = dict(kept="xla", xla_ns=None, concerto_ns=None, lower_bound_ns=None,
                  concerto_peak_bytes=None, payload=payload)  # fmt: skip
    try:
        spec = os.path.join(work, "target_config.txtpb")
        with open(spec, "w") as f:
            f.write(spec_text)
        module = os.path.join(work, "xla.hlo")
        with open(module, "w") as f:
            f.write(xla_text)
        if check_wrapper:
            own_exe, err = _pjrt(xla_text, options, partitions, spec)
            if err:
                notes.append(f"XLA's own module did not compile through concerto's path: {err}")
            else:
                blob = wire.encode_varint(len(xla_info.metadata)) + xla_info.metadata + \
                    exe_mod.with_executable(xla_info.executable_and_options, own_exe)
                c = check_payload(exe_mod.replace_exec(payload, blob), payload, xla_text)
                if c.device_bytes != xla_peak:
                    c.problems.append(f"XLA's buffer assignment through concerto's path is "
                                      f"{c.device_bytes} B, {xla_peak} B in XLA's executable")  # fmt: skip
                notes += [f"the wrapper check on XLA's own module: {p}" for p in c.problems]
        if not notes:
            out = os.path.join(work, "concerto.hlo")
            report, err = _concerto(binary or find(), module, out, work_limit, time_limit,
                                    100.0 * budget / xla_peak, hardware, profile)  # fmt: skip
            if report is not None and report.get("profile"):
                result["profile"] = report["profile"]
            if err:
                notes.append(err)
            else:
                result.update(xla_ns=report["xla_ns"], concerto_ns=report["optimized_ns"],
                              lower_bound_ns=report["lower_bound_ns"])  # fmt: skip
                if report["optimized_ns"] >= report["xla_ns"]:
                    notes.append(f"concerto's plan ({report['optimized_ns']} ns, simulated) is "
                                 f"not shorter than XLA's schedule ({report['xla_ns']} ns)")  # fmt: skip
        if not notes:
            with open(out) as f:
                plan_text = f.read()
            plan_exe, err = _pjrt(plan_text, options, partitions, spec)
            if err:
                notes.append(f"XLA's GPU backend did not compile concerto's module: {err}")
        if not notes:
            blob = wire.encode_varint(len(xla_info.metadata)) + xla_info.metadata + \
                exe_mod.with_executable(xla_info.executable_and_options, plan_exe)
            candidate = exe_mod.replace_exec(payload, blob)
            c = check_payload(candidate, payload, plan_text)
            result["concerto_peak_bytes"] = c.device_bytes or None
            notes += c.problems
            if not c.problems and c.device_bytes > budget:
                notes.append(f"XLA's buffer assignment of concerto's executable is "
                             f"{c.device_bytes} B, over the budget of {budget} B (XLA's own "
                             f"{xla_peak} B + {margin} B)")  # fmt: skip
            if not notes:
                result.update(kept="concerto", payload=candidate)
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)
    return Compiled(xla_peak_bytes=xla_peak, budget_bytes=budget, warnings=notes,
                    topology=topology, in_tree=in_tree, out_tree=out_tree, xla_payload=payload,
                    _xla=xla, **result)  # fmt: skip


def compile(jitted, *args, work_limit: int | None = 20_000, time_limit: float | None = None,
            memory_margin: int | None = None, hardware: str = "h100",
            target_config: str | None = None, binary: str | None = None,
            check_wrapper: bool = True, profile: str | None = None, **kwargs) -> Compiled:  # fmt: skip
    """Compiles ``jitted(*args, **kwargs)`` with concerto's schedule (see the module docs).

    ``work_limit``: concerto's deterministic budget (the same plan on every host; ``None`` with
    a ``time_limit`` for a timed search). ``memory_margin``: bytes over XLA's own peak (default
    max(1 GiB, 5 %)). ``hardware``: concerto's cost profile. ``target_config``: the GPU's
    ``GpuTargetConfigProto`` text (default: the H100 SXM's for H100 devices). ``binary``: the
    ``concerto`` command line (default :func:`concerto.binary.find`). ``check_wrapper``: also
    send XLA's own module through the same path (one more compile; see the module docs).
    ``profile``: a ``jax.profiler`` trace of this step (``*.trace.json.gz``) whose measured
    kernel times cost its instructions (``concerto optimize --profile``); its coverage is in
    ``Compiled.profile``."""
    from jax.experimental import serialize_executable  # noqa: PLC0415

    xla = jitted.trace(*args, **kwargs).lower().compile()
    payload, in_tree, out_tree = serialize_executable.serialize(xla)
    c = compile_payload(payload, in_tree, out_tree, _topology(xla), xla=xla,
                        work_limit=work_limit, time_limit=time_limit, memory_margin=memory_margin,
                        hardware=hardware, target_config=target_config, binary=binary,
                        check_wrapper=check_wrapper, profile=profile)  # fmt: skip
    for note in c.warnings:
        warnings.warn(f"concerto_jax.compile keeps XLA's executable: {note}", stacklevel=2)
    return c


# --- save and load --------------------------------------------------------------------------


def save(path: str, compiled: Compiled) -> None:
    """Writes ``compiled``'s payload, exactly ``serialize()``'s bytes, with the versions of
    :data:`PACKAGES`, the topology, the trees and what was decided, to ``path``."""
    payload, in_tree, out_tree = compiled.serialize()
    header = {
        "format": FORMAT,
        "versions": versions(),
        "topology": compiled.topology,
        "kept": compiled.kept,
        "xla_ns": compiled.xla_ns,
        "concerto_ns": compiled.concerto_ns,
        "xla_peak_bytes": compiled.xla_peak_bytes,
        "concerto_peak_bytes": compiled.concerto_peak_bytes,
        "payload_bytes": len(payload),
        "payload_sha256": hashlib.sha256(payload).hexdigest(),
    }
    head = json.dumps(header, sort_keys=True).encode()
    trees = pickle.dumps((in_tree, out_tree))
    with open(path, "wb") as f:
        f.write(MAGIC)
        for part in (head, trees, payload):
            f.write(len(part).to_bytes(8, "little"))
            f.write(part)


def read_saved(path: str) -> tuple[dict, bytes, bytes]:
    """``(header, trees pickle, payload)`` of a file :func:`save` wrote; :class:`AotError`
    naming the file for anything else (another file, a truncated one, a changed payload)."""
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(MAGIC):
        raise AotError(f"{path}: not an executable saved by concerto_jax.save")
    parts, k = [], len(MAGIC)
    for what in ("header", "trees", "payload"):
        if k + 8 > len(data):
            raise AotError(f"{path}: truncated before its {what}")
        n = int.from_bytes(data[k : k + 8], "little")
        k += 8
        if k + n > len(data):
            raise AotError(f"{path}: truncated in its {what} ({len(data) - k} of {n} bytes)")
        parts.append(data[k : k + n])
        k += n
    if k != len(data):
        raise AotError(f"{path}: {len(data) - k} bytes after the payload")
    try:
        header = json.loads(parts[0])
    except ValueError as e:
        raise AotError(f"{path}: the header is not JSON: {e}") from None
    if header.get("format") != FORMAT:
        raise AotError(f"{path}: format {header.get('format')}, this concerto_jax reads {FORMAT}")
    if hashlib.sha256(parts[2]).hexdigest() != header.get("payload_sha256"):
        raise AotError(f"{path}: the payload does not match its checksum")
    return header, parts[1], parts[2]


def _deserialize(payload: bytes, in_tree, out_tree, topology: dict, backend=None):
    """``deserialize_and_load`` on this process's devices, after checking they are the ones
    the executable was compiled for (:class:`DevicesMissing` otherwise)."""
    import jax  # noqa: PLC0415
    from jax.experimental import serialize_executable  # noqa: PLC0415

    want = f"{topology['devices']} {topology['device_kind']!r} ({topology['platform']})"
    try:
        devices = jax.devices(backend) if backend else jax.devices()
    except RuntimeError as e:
        raise DevicesMissing(f"the executable needs {want}; this process has no such backend: {e}") from None
    here = devices[0].platform if devices else "none"
    same = [d for d in devices if d.platform == topology["platform"]]
    if len(same) < topology["devices"]:
        kinds = sorted({f"{d.device_kind} ({d.platform})" for d in devices})
        raise DevicesMissing(f"the executable needs {want}; this process has {len(devices)} "
                             f"{', '.join(kinds) or here}: load it on a host with the devices")  # fmt: skip
    if same[0].device_kind != topology["device_kind"]:
        warnings.warn(f"the executable was compiled for {topology['device_kind']!r}; this host "
                      f"has {same[0].device_kind!r}", stacklevel=3)  # fmt: skip
    return serialize_executable.deserialize_and_load(payload, in_tree, out_tree,
                                                     backend=same[0].client)  # fmt: skip


def load(path: str, backend: str | None = None):
    """The executable :func:`save` wrote, as a ``jax.stages.Compiled`` on this process's
    devices. :class:`VersionMismatch` names a package whose version differs from the one that
    compiled it; :class:`DevicesMissing` says when the devices are not here (a CPU-only host);
    :class:`AotError` for a file that is not one :func:`save` wrote."""
    header, trees, payload = read_saved(path)
    here = versions()
    for pkg, then in header["versions"].items():
        if then is not None and here.get(pkg) != then:
            raise VersionMismatch(f"{path} was compiled with {pkg} {then}; this process has "
                                  f"{pkg} {here.get(pkg)}")  # fmt: skip
    in_tree, out_tree = pickle.loads(trees)  # noqa: S301 - our own file, checksummed
    return _deserialize(payload, in_tree, out_tree, header["topology"], backend)
