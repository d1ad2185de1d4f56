"""Compiles train steps with XLA's real CUDA compiler for 8 H100s, deviceless, on a CPU machine.

Usage::

    py=$(./scripts/pyenv-xla-gpu | tail -n1)
    # one module: a concerto_jax.dump step (dp|tp|fsdp|mix) or the MoE step (moe)
    PYTHONPATH=python:tools $py -m concerto_tools.compile_gpu --parallel tp --gemm cublas --out DIR \\
        [--layers 4 --d-model 1024 --heads 16 --seq 512 --batch 16 --vocab 8192 --scan ...]
    # the corpus (CORPUS below), one child process per module, skipping finished modules
    PYTHONPATH=python:tools $py -m concerto_tools.compile_gpu --corpus --out DIR [--jobs 1] [--only NAME]

The steps are those of :mod:`concerto_jax.dump` (``build_step``, its parameter shapes and
shardings; ``--dtype`` defaults to ``bfloat16`` here) and the expert-parallel
mixture-of-experts step of :mod:`concerto_tools.gpu_models`. Parameters and optimiser state are
donated, as in a training loop. Nothing runs: the step is traced on abstract inputs
(``ShapeDtypeStruct`` with ``NamedSharding``) over the compile-only devices of a PJRT
topology, ``jax.experimental.topologies.get_topology_desc(platform="cuda",
topology_name="h100x8", target_config=<H100 SXM spec>, topology="1x1x8")``, lowered and
compiled by the CUDA plugin's GPU compiler (fusion, the async collective conversion, XLA's
latency-hiding scheduler, buffer assignment, Triton / LLVM to PTX, ptxas). Without a GPU
there is no autotuning: Triton gemm fusions get a fallback tile config. Two gemm variants:

- ``triton`` (XLA's default): dots become ``__triton_gemm`` fusions;
- ``cublas`` (``--xla_gpu_enable_triton_gemm=false``): dots become ``__cublas$lt$matmul``
  custom-calls (what an H100 compile picks for most training gemms after autotuning).

The latency-hiding scheduler runs by default for H100 (the dumped ``debug_options`` saying
``xla_gpu_enable_latency_hiding_scheduler: false`` does not mean it was off).

For each module ``<name>`` the output directory gets, from XLA's dump
(``--xla_dump_to --xla_dump_hlo_as_text``) of the train step's module ``jit_step``:

- ``<name>.gpu.hlo``: ``*.sm_9.0a_gpu_after_optimizations.txt``, the module the GPU runs
  (``is_scheduled=true``, the entry sequence is XLA's schedule);
- ``<name>.memory-usage-report.txt``: ``*-memory-usage-report.txt``;
- ``<name>.buffer-assignment.txt``: ``*-buffer-assignment.txt``, every allocation (its size,
  kind: parameter, live-out, constant, thread-local, preallocated temp) and the values in it
  with their offsets and sizes (about 100 KB for a 4-layer step; jaxlib 0.10.2 writes no
  per-value ``Used values:`` section; if a later one does, it is cut off here);
- ``<name>.thunk_sequence.txt``: the thunks in execution order;
- ``<name>.payload``: ``jax.experimental.serialize_executable.serialize(compiled)``'s
  payload (the pickled executable) and ``<name>.trees.pickle`` its input and output trees:
  what :mod:`concerto_jax.aot` starts from;
- ``<name>.json``: the meta (:func:`module_meta`), written last (its presence marks the
  module done).

With ``--corpus`` it also writes ``corpus.json``, the list of modules and their metas, once
all are done. Names: ``gpt_<parallel>_l<layers>[_scan]_<gemm>`` from
:func:`concerto_jax.dump.default_name` (``gpt_tp8_l4_triton``, ``gpt_mix2x4_l4_cublas``,
``gpt_mix2x4_l16_scan_cublas``) and ``moe_ep<devices>_l<layers>_<gemm>``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from concerto_jax import dump
from concerto_jax.h100 import TOPOLOGY, TOPOLOGY_NAME, h100_target_config
from concerto_tools.gpu_models import add_moe_args, check_moe_sizes

GEMMS = ("triton", "cublas")
#: XLA flags of each gemm variant (besides the dump flags).
GEMM_FLAGS = {"triton": [], "cublas": ["--xla_gpu_enable_triton_gemm=false"]}

#: Sizes shared by the corpus's GPT steps: a 1024-wide decoder, 512 tokens, 16 sequences
#: (global batch), bf16.
_GPT = ["--d-model", "1024", "--heads", "16", "--seq", "512", "--batch", "16",
        "--vocab", "8192"]  # fmt: skip
#: The corpus: (parallel, extra options) per step; each compiled in both gemm variants. The
#: 16-layer steps are the deep ones: unrolled (about 3,500 entry instructions, 70 all-reduce
#: pairs) and under ``lax.scan`` (two ``while`` loops with a known trip count of 16, the
#: layers' tensor-parallel all-reduces inside the loop bodies).
CORPUS = [
    ("dp", ["--layers", "4", *_GPT]),
    ("tp", ["--layers", "4", *_GPT]),
    ("fsdp", ["--layers", "4", *_GPT]),
    ("mix", ["--layers", "4", *_GPT]),
    ("mix", ["--layers", "16", *_GPT]),
    ("mix", ["--layers", "16", "--scan", *_GPT]),
    ("moe", ["--layers", "2", "--experts", "16", "--d-model", "1024", "--heads", "16",
             "--seq", "512", "--batch", "16", "--vocab", "8192"]),
]  # fmt: skip


def parse_args(argv: list[str] | None = None) -> tuple[argparse.Namespace, list[str]]:
    """This module's options and the rest (the step's sizes, parsed by
    :func:`step_args`)."""
    p = argparse.ArgumentParser(prog="concerto_tools.compile_gpu",
                                description=__doc__.split("\n")[0])  # fmt: skip
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--parallel", choices=(*dump.PARALLEL, "moe"), help="one module")
    p.add_argument("--gemm", choices=GEMMS, default="triton")
    p.add_argument("--name", default=None, help="module name (default: from the options)")
    p.add_argument("--corpus", action="store_true", help="compile CORPUS, both gemm variants")
    p.add_argument("--only", action="append", default=[], help="corpus: only these names")
    p.add_argument("--jobs", type=int, default=1, help="corpus: modules compiled at once")
    p.add_argument("--list", action="store_true", help="corpus: print the names and exit")
    add_moe_args(p)
    a, rest = p.parse_known_args(argv)
    if not a.corpus and not a.parallel:
        p.error("one of --parallel or --corpus is required")
    return a, rest


def step_args(a: argparse.Namespace, rest: list[str]) -> argparse.Namespace:
    """The step's options as :func:`concerto_jax.dump.parse_args` reads them (its defaults,
    ``--dtype bfloat16`` unless given), with the MoE options added."""
    if "--dtype" not in rest:
        rest = [*rest, "--dtype", "bfloat16"]
    parallel = "dp" if a.parallel == "moe" else a.parallel
    s = dump.parse_args(["--parallel", parallel, "--out", a.out, *rest])
    s.parallel = a.parallel
    for k in ("experts", "capacity_factor", "dense_every"):
        setattr(s, k, getattr(a, k))
    return s


def module_name(a: argparse.Namespace, s: argparse.Namespace, data: int, model: int) -> str:
    """``gpt_tp8_l4_triton``, ``gpt_mix2x4_l16_scan_cublas``, ``moe_ep8_l2_triton``."""
    if a.name:
        return a.name
    if s.parallel == "moe":
        return f"moe_ep{s.devices}_l{s.layers}_{a.gemm}"
    return f"{dump.default_name(s, data, model)}_{a.gemm}"


def corpus_jobs() -> list[tuple[str, list[str]]]:
    """``(name, argv)`` of every corpus module, in CORPUS order, Triton then cuBLAS."""
    jobs = []
    for parallel, extra in CORPUS:
        for gemm in GEMMS:
            argv = ["--parallel", parallel, "--gemm", gemm, *extra]
            a, rest = parse_args(["--out", "-", *argv])
            s = step_args(a, rest)
            data, model = sizes(s)
            jobs.append((module_name(a, s, data, model), argv))
    return jobs


def sizes(s: argparse.Namespace) -> tuple[int, int]:
    """``(data, model)`` mesh axis sizes; ``ValueError`` naming a size that does not fit."""
    if s.parallel == "moe":
        check_moe_sizes(s)
        return s.devices, 1
    return dump.check_sizes(s)


# --- reading XLA's dump -------------------------------------------------------------------

_TOTAL = re.compile(r"^Total bytes:\s*(\d+)", re.M)
_SPACE = re.compile(r"^Memory Space:\s*(.*?)\s*\(color=(\d+)\)", re.M)
_ALLOC = re.compile(r"^allocation (\d+): size (\d+)(.*):$", re.M)


def xla_peak_bytes(report: str) -> int:
    """XLA's peak device memory for its schedule, from its ``*-memory-usage-report.txt``.

    The number is the ``Total bytes: N`` line right under ``Memory Space: default (color=0)``,
    the first line block of the report. XLA's GPU buffer assignment is static: every buffer of
    the program lives in one of a fixed set of allocations (entry parameters, live-out
    outputs, constants, and one ``preallocated-temp`` allocation into which the heap simulator
    packs every temporary by its live range under the module's schedule), and the executable
    reserves them all for the whole run. ``Total bytes`` is the sum of the allocations' sizes
    in the default memory space, so it is what one device holds at once while the step runs:
    the peak for that schedule (donated parameters share their allocation with the outputs,
    so they count once). It equals the sum of the allocation sizes in the buffer assignment
    (:func:`allocation_bytes` ``total``) when there is only the default memory space, and
    ``compiled.memory_analysis()``'s argument + output - alias + temp sizes plus the
    thread-local allocations (a few scalars of reducers; both kept in the meta).
    Other memory spaces (``color != 0``, e.g. host memory) are not device memory and are not
    counted. Raises ``ValueError`` when the report has no default-space total.
    """
    spaces = list(_SPACE.finditer(report))
    totals = list(_TOTAL.finditer(report))
    for sp in spaces:
        if sp.group(2) == "0":
            nxt = next((t for t in totals if t.start() > sp.end()), None)
            if nxt is not None:
                return int(nxt.group(1))
    if not spaces and totals:  # an older report without memory spaces
        return int(totals[0].group(1))
    raise ValueError("no 'Total bytes' of memory space color=0 in the memory-usage report")


def allocation_bytes(buffer_assignment: str) -> dict[str, int]:
    """Bytes of the buffer assignment's allocations by kind: ``parameter`` (entry
    parameters, donated ones included), ``output`` (live-out, not a parameter), ``constant``,
    ``temp`` (``preallocated-temp``: the heap-packed temporaries), ``thread_local`` and
    ``other``; ``total`` is their sum."""
    out: Counter[str] = Counter()
    for m in _ALLOC.finditer(buffer_assignment):
        size, attrs = int(m.group(2)), m.group(3)
        if ", parameter " in attrs:
            kind = "parameter"
        elif "constant" in attrs:
            kind = "constant"
        elif "preallocated-temp" in attrs:
            kind = "temp"
        elif "thread-local" in attrs:
            kind = "thread_local"
        elif "maybe-live-out" in attrs or "output shape" in attrs:
            kind = "output"
        else:
            kind = "other"
        out[kind] += size
        out["total"] += size
    return dict(sorted(out.items()))


_NAME = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*")
_OPCODE = re.compile(r"\s([a-z][a-z0-9\-]*)\(")
_COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "ragged-all-to-all",
                "collective-permute", "collective-broadcast")  # fmt: skip


def _instructions(text: str) -> list[tuple[str, str, str, str]]:
    """``(computation, name, opcode, line)`` of every instruction, in text order. A light
    scan of XLA's printed form: the opcode is the first lower-case word followed by ``(``
    after the ``=`` (shapes and layouts hold no such word)."""
    out = []
    comp = ""
    for line in text.splitlines():
        m = _NAME.match(line)
        if m and line.startswith(" "):
            op = _OPCODE.search(line, m.end() - 1)
            if op:
                out.append((comp, m.group(1), op.group(1), line))
        elif line[:1].strip() and line.rstrip().endswith("{"):
            head = line.split("(", 1)[0].split()
            comp = head[-1].lstrip("%") if head else comp
    return out


def gpu_collectives(text: str) -> dict[str, int]:
    """Collectives of a compiled GPU module by opcode, over every computation (a loop body's
    count once). Async pairs count as ``<op>-start`` / ``<op>-done``; an ``async-start`` /
    ``async-done`` pair wrapping a collective (XLA's form for reduce-scatter, all-to-all and,
    at times, all-gather) counts under the wrapped opcode: ``reduce-scatter-start``,
    ``reduce-scatter-done``, and the wrapped computation is not counted again. Other async
    ops count as ``async-start`` / ``async-done``."""
    ins = _instructions(text)
    by_comp: dict[str, list[str]] = {}
    for comp, _, op, _ in ins:
        by_comp.setdefault(comp, []).append(op)
    start_kind: dict[str, str] = {}
    wrapped = set()
    for _, name, op, line in ins:
        if op == "async-start":
            c = re.search(r"calls=%?([\w.\-]+)", line)
            inner = None
            if c:
                wrapped.add(c.group(1))
                inner = next((o for o in by_comp.get(c.group(1), []) if o in _COLLECTIVES),
                             None)  # fmt: skip
            start_kind[name] = inner or "async"
    counts: Counter[str] = Counter()
    for comp, _, op, line in ins:
        if comp in wrapped:
            continue
        if op == "async-start":
            counts[f"{start_kind[_NAME.match(line).group(1)]}-start"] += 1
        elif op == "async-done":
            operand = re.search(r"async-done\(%?([\w.\-]+)", line)
            counts[f"{start_kind.get(operand.group(1) if operand else '', 'async')}-done"] += 1
        else:
            base = op.removesuffix("-start").removesuffix("-done")
            if base in _COLLECTIVES:
                counts[op] += 1
    return dict(sorted(counts.items()))


def module_stats(text: str) -> dict:
    """Counts of a compiled module: entry instructions; fusions by kind (``kLoop``,
    ``kInput``, ... or, for ``kCustom``, the backend kind: ``__triton_nested_gemm_fusion``
    (a Triton gemm), ``__triton`` (a Triton softmax / normalisation), ...); custom-calls by
    target (``__cublas$lt$matmul`` ...); the collectives by opcode (:func:`gpu_collectives`).
    Fusions and custom-calls count in the computations that run them (the entry, loop
    bodies, async wrappers), not inside fusion bodies: a nested Triton gemm fusion's operand
    fusions are part of its one kernel."""
    ins = _instructions(text)
    entry = None
    for line in text.splitlines():
        if line.startswith("ENTRY "):
            entry = line.split("(", 1)[0].split()[-1].lstrip("%")
            break
    fused = set()
    for _, _, op, line in ins:
        if op == "fusion":
            c = re.search(r"calls=%?([\w.\-]+)", line)
            if c:
                fused.add(c.group(1))
    fusions: Counter[str] = Counter()
    calls: Counter[str] = Counter()
    for comp, _, op, line in ins:
        if comp in fused:
            continue
        if op == "fusion":
            k = re.search(r'"fusion_backend_config":\{"kind":"([^"]+)"', line)
            kind = re.search(r"kind=(k\w+)", line)
            fusions[k.group(1) if k else (kind.group(1) if kind else "?")] += 1
        elif op == "custom-call":
            t = re.search(r'custom_call_target="([^"]+)"', line)
            calls[t.group(1) if t else "?"] += 1
    return {
        "entry": entry,
        "entry_instructions": sum(1 for c, _, _, _ in ins if c == entry),
        "computations": len({c for c, _, _, _ in ins}),
        "fusions": sum(fusions.values()),
        "fusion_kinds": dict(sorted(fusions.items())),
        "custom_calls": dict(sorted(calls.items())),
        "gemm_custom_calls": sum(n for t, n in calls.items() if t.startswith("__cublas")),
        "gemm_fusions": sum(n for k, n in fusions.items() if "gemm" in k),
        "while_loops": sum(1 for _, _, o, _ in ins if o == "while"),
        "collectives": gpu_collectives(text),
    }


def find_dump(tmp: str) -> dict[str, str]:
    """The train step's files in XLA's dump directory, by role; ``RuntimeError`` naming the
    missing one (with the files found)."""
    files = sorted(os.listdir(tmp))
    step = [f for f in files if ".jit_step." in f]
    want = {
        "hlo": "gpu_after_optimizations.txt",
        "memory": "gpu_after_optimizations-memory-usage-report.txt",
        "buffers": "gpu_after_optimizations-buffer-assignment.txt",
        "thunks": "thunk_sequence.txt",
    }
    found = {}
    for role, suffix in want.items():
        hits = [f for f in step if f.endswith(suffix)]
        if not hits:
            raise RuntimeError(f"XLA's dump has no jit_step *{suffix} in {tmp}: {files[:40]}")
        found[role] = os.path.join(tmp, hits[-1])
    return found


def versions() -> dict[str, str]:
    """Installed versions of the packages that make the compile."""
    from importlib import metadata

    out = {}
    for pkg in ("jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt",
                "nvidia-cuda-nvcc-cu12", "numpy"):  # fmt: skip
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


# --- one module -----------------------------------------------------------------------------


def _copy_dump(out: str, name: str, tmp: str) -> tuple[dict, dict]:
    """Copies the step's module, memory report, buffer assignment (up to its used values)
    and thunk sequence from XLA's dump in ``tmp`` to ``out`` as ``name.*``; returns the
    dump's files and the copies' names, by role."""
    src = find_dump(tmp)
    os.makedirs(out, exist_ok=True)
    dst = {
        "hlo": f"{name}.gpu.hlo",
        "memory": f"{name}.memory-usage-report.txt",
        "buffers": f"{name}.buffer-assignment.txt",
        "thunks": f"{name}.thunk_sequence.txt",
    }
    for role, f in dst.items():
        with open(src[role]) as fin:
            text = fin.read()
        if role == "buffers":
            cut = text.find("\nUsed values:")
            text = text[: cut + 1] if cut >= 0 else text
        with open(os.path.join(out, f), "w") as fout:
            fout.write(text)
    return src, dst


def _memory_analysis(ma) -> dict | None:
    """XLA's memory analysis of the compiled step, with arguments + outputs + temporaries -
    aliases (``None`` without one)."""
    if ma is None:
        return None
    analysis = {k: int(getattr(ma, k)) for k in (
        "argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes",
        "temp_size_in_bytes", "generated_code_size_in_bytes")}  # fmt: skip
    analysis["argument_output_temp_minus_alias"] = (
        analysis["argument_size_in_bytes"] + analysis["output_size_in_bytes"]
        + analysis["temp_size_in_bytes"] - analysis["alias_size_in_bytes"]
    )  # fmt: skip
    return analysis


def compile_module(a: argparse.Namespace, s: argparse.Namespace, data: int, model: int,
                   name: str) -> dict:  # fmt: skip
    """Compiles one step in this process (jax must not be imported yet: XLA reads
    ``XLA_FLAGS`` once), copies its dump into ``a.out`` and returns the meta."""
    if "jax" in sys.modules:
        raise RuntimeError("compile_module must run before jax is imported (XLA_FLAGS)")
    tmp = tempfile.mkdtemp(prefix="concerto-xla-gpu-")
    try:
        flags = [f"--xla_dump_to={tmp}", "--xla_dump_hlo_as_text",
                 "--xla_dump_hlo_module_re=jit_step", *GEMM_FLAGS[a.gemm]]  # fmt: skip
        old = os.environ.get("XLA_FLAGS", "").strip()
        os.environ["XLA_FLAGS"] = " ".join(([old] if old else []) + flags)
        os.environ["JAX_PLATFORMS"] = "cpu"
        os.environ["JAX_SKIP_CUDA_CONSTRAINTS_CHECK"] = "1"
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import jax
        from jax.experimental import topologies

        jax.config.update("jax_use_shardy_partitioner", s.partitioner == "shardy")
        topo = topologies.get_topology_desc(
            platform="cuda", topology_name=TOPOLOGY_NAME,
            target_config=h100_target_config(), topology=TOPOLOGY,
        )  # fmt: skip
        devices = list(topo.devices)
        if s.parallel == "moe":
            from jax.sharding import Mesh

            from concerto_tools.gpu_models import jit_moe_step

            import numpy as np

            mesh = Mesh(np.array(devices[: s.devices]), ("expert",))
            jitted, args = jit_moe_step(s, mesh, donate=True)
        else:
            mesh = dump.make_mesh(s, data, model, devices)
            jitted, args = dump.jit_step(s, mesh, data, donate=True)
        t0 = time.perf_counter()
        lowered = jitted.trace(*args).lower()
        t1 = time.perf_counter()
        compiled = lowered.compile()
        t2 = time.perf_counter()
        ma = compiled.memory_analysis()
        import pickle

        from jax.experimental import serialize_executable

        payload, in_tree, out_tree = serialize_executable.serialize(compiled)
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, f"{name}.payload"), "wb") as f:
            f.write(payload)
        with open(os.path.join(a.out, f"{name}.trees.pickle"), "wb") as f:
            pickle.dump((in_tree, out_tree), f)
        src, dst = _copy_dump(a.out, name, tmp)
        with open(src["hlo"]) as f:
            hlo = f.read()
        with open(src["memory"]) as f:
            report = f.read()
        with open(src["buffers"]) as f:
            allocs = allocation_bytes(f.read())
        peak = xla_peak_bytes(report)
        analysis = _memory_analysis(ma)
        with open(src["thunks"]) as f:
            thunks = sum(1 for line in f if line.strip())
        stats = module_stats(hlo)
        meta = {
            "name": name,
            "model": "moe" if s.parallel == "moe" else "gpt",
            "parallel": s.parallel,
            "gemm": a.gemm,
            "versions": versions(),
            "target": {"spec": "h100_sxm (XLA's specs/h100_sxm.txtpb, 4 fields removed)",
                       "topology_name": TOPOLOGY_NAME, "topology": TOPOLOGY,
                       "compute_capability": "9.0a"},  # fmt: skip
            "xla_flags": [f for f in flags if not f.startswith("--xla_dump_to=")],
            "mesh": {k: int(v) for k, v in mesh.shape.items()},
            "sizes": {k: getattr(s, k) for k in ("layers", "d_model", "heads", "seq", "batch",
                                                 "vocab", "mlp", "devices")},  # fmt: skip
            "dtype": s.dtype,
            "optimizer": "adam" if s.parallel == "moe" else s.optimizer,
            "scan": bool(getattr(s, "scan", False)) and s.parallel != "moe",
            "partitioner": s.partitioner,
            "donated": ["params", "opt_state"],
            "scheduled": "is_scheduled=true" in hlo.split("\n", 1)[0],
            "lower_seconds": round(t1 - t0, 3),
            "compile_seconds": round(t2 - t1, 3),
            "xla_peak_bytes": peak,
            "allocation_bytes": allocs,
            "memory_analysis": analysis,
            "thunks": thunks,
            **stats,
            "files": {**dst, "payload": f"{name}.payload", "trees": f"{name}.trees.pickle"},
            "devices": {"platform": devices[0].platform, "device_kind": devices[0].device_kind,
                        "count": len(mesh.devices.flat)},
            "xla_dump": {role: os.path.basename(p) for role, p in src.items()},
        }
        if s.parallel == "moe":
            meta["moe"] = {"experts": s.experts, "capacity_factor": s.capacity_factor,
                           "dense_every": s.dense_every, "top_k": 1}  # fmt: skip
        else:
            meta["tp"] = s.tp
        with open(os.path.join(a.out, f"{name}.json"), "w") as f:
            json.dump(meta, f, indent=1, sort_keys=True)
            f.write("\n")
        return meta
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def summary(meta: dict) -> dict:
    """The one-line JSON printed per module."""
    keys = ("name", "entry_instructions", "fusions", "gemm_fusions", "gemm_custom_calls",
            "collectives", "xla_peak_bytes", "compile_seconds")  # fmt: skip
    return {k: meta[k] for k in keys}


# --- the corpus -----------------------------------------------------------------------------


def build_corpus(a: argparse.Namespace) -> int:
    """Compiles every corpus module not already done (``<name>.json`` present), each in its
    own process, ``a.jobs`` at once; writes ``corpus.json`` when all are done."""
    jobs = corpus_jobs()
    if a.list:
        for name, _ in jobs:
            print(name)
        return 0
    if a.only:
        unknown = set(a.only) - {n for n, _ in jobs}
        if unknown:
            print(f"concerto_tools.compile_gpu: not in the corpus: {sorted(unknown)}",
                  file=sys.stderr)  # fmt: skip
            return 2
        jobs = [j for j in jobs if j[0] in a.only]
    os.makedirs(a.out, exist_ok=True)
    env = dict(os.environ)
    # The child imports concerto_tools (here) and concerto_jax (wherever this process found it).
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    jax_side = os.path.dirname(os.path.dirname(os.path.abspath(dump.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([here, jax_side, *filter(None, [env.get("PYTHONPATH")])])
    env.pop("XLA_FLAGS", None)

    def run(job: tuple[str, list[str]]) -> tuple[str, int, str]:
        name, argv = job
        if os.path.exists(os.path.join(a.out, f"{name}.json")):
            return name, 0, "cached"
        cmd = [sys.executable, "-m", "concerto_tools.compile_gpu", "--out", a.out, *argv]
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
        if r.returncode:
            return name, r.returncode, r.stderr[-4000:]
        return name, 0, r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""

    failed = 0
    with ThreadPoolExecutor(max(1, a.jobs)) as pool:
        for name, rc, out in pool.map(run, jobs):
            if rc:
                failed += 1
                print(f"concerto_tools.compile_gpu: {name} failed ({rc}):\n{out}", file=sys.stderr)
            else:
                print(out if out != "cached" else json.dumps({"name": name, "cached": True}))
    if failed:
        return 1
    if not a.only:
        metas = []
        for name, _ in jobs:
            with open(os.path.join(a.out, f"{name}.json")) as f:
                metas.append(json.load(f))
        with open(os.path.join(a.out, "corpus.json"), "w") as f:
            json.dump({"modules": [m["name"] for m in metas],
                       "summary": [summary(m) for m in metas]}, f, indent=1)  # fmt: skip
            f.write("\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    a, rest = parse_args(argv)
    if a.corpus:
        if rest:
            print(f"concerto_tools.compile_gpu: --corpus takes no step options: {rest}",
                  file=sys.stderr)  # fmt: skip
            return 2
        return build_corpus(a)
    s = step_args(a, rest)
    try:
        data, model = sizes(s)
    except ValueError as e:
        print(f"concerto_tools.compile_gpu: {e}", file=sys.stderr)
        return 2
    name = module_name(a, s, data, model)
    meta = compile_module(a, s, data, model, name)
    print(json.dumps(summary(meta), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
