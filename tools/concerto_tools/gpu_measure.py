"""Measurements on one GPU for ``docs/src/fidelity.md``: run by ``scripts/gpu-measure``.

Usage::

    PYTHONPATH=python:tools python3 -m concerto_tools.gpu_measure step --out DIR \\
        [--layers 4 --d-model 2048 --heads 16 --seq 1024 --batch 8 --vocab 32768 --mlp 4 \\
         --dtype bf16|f32 --warmup 3 --steps 5 --timed 10]
    PYTHONPATH=python:tools python3 -m concerto_tools.gpu_measure contention --out DIR \\
        [--sizes 8192 4096 --ctas 2 8 16 32 --reps 20]
    PYTHONPATH=python:tools python3 -m concerto_tools.gpu_measure parse-trace TRACE.json.gz --out FILE

``step`` (item 1, compute costs): the GPT decoder train step of :mod:`concerto_jax.dump`
(``build_step`` on one device, data parallel, Adam), jitted on the default JAX device with
``--xla_dump_to`` so that the optimised module (``*after_optimizations.txt``) is kept, run
``--warmup`` times, timed ``--timed`` times with a host clock around ``block_until_ready``, and
then profiled for ``--steps`` steps with ``jax.profiler.trace(create_perfetto_trace=True)``.
With ``--dtype bf16`` the parameters (and Adam's moments) are bf16 arrays and the updated
parameters are cast back to bf16 (the model code promotes some values to f32: the attention
scale and mask are f32 constants). Writes under ``DIR``:

- ``step.opt.hlo``: the optimised module of the train step;
- ``step_kernels.json``: per HLO instruction of the step's module, the kernels it launched
  (names, count per step) and the median over the profiled steps of its summed kernel time
  (ns), plus the step times (host clock, and the summed kernel time per profiled step);
- ``step_trace.json.gz``: the profiler's trace (device events only, trimmed).

``contention`` (item 2): with PyTorch, a bf16 GEMM of each size (n x n x n) timed with CUDA
events, alone, then while a communication-like transfer runs on another stream: (a) an
SM-based copy kernel (CuPy ``RawKernel``, a grid-stride 16-byte copy on ``--ctas`` blocks of
512 threads, as NCCL's kernels run on a few CTAs), (b) copy-engine copies (host-pinned to
device ``cudaMemcpyAsync``, and device-to-device ``cudaMemcpyAsync`` through ``Tensor.copy_``).
Each transfer is sized from a calibration run to outlast the GEMM repetitions by half; the
result records whether it really covered them, and the transfer's own time alone and under the
GEMMs. Writes ``DIR/contention.json``.

``parse-trace``: the per-instruction table of ``step`` from a trace file (for re-parsing a
trace brought back from the device).
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict


def _median(xs):
    return statistics.median(xs) if xs else None


def _gpu_info() -> dict:
    """nvidia-smi's name, driver and clocks (best effort)."""
    info = {"host": platform.node(), "python": platform.python_version()}
    try:
        q = "name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,power.limit"
        out = subprocess.run(
            ["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30,
        ).stdout.strip()  # fmt: skip
        info["nvidia_smi"] = out
    except Exception as e:  # noqa: BLE001
        info["nvidia_smi_error"] = repr(e)
    return info


# ---------------------------------------------------------------------------------------------
# Item 1: the train step's kernels


def parse_trace(
    path: str,
    module_prefix: str = "jit_step",
    steps: int | None = None,
    device: str = "GPU",
    line_prefix: str = "Stream",
) -> dict:
    """Per-HLO-instruction kernel times of the profiled steps in a jax profiler trace.

    Device kernel events are the complete (``ph == "X"``) events of a ``/device:GPU`` process on
    a thread named ``Stream ...`` (the derived lines "XLA Ops"/"XLA Modules" repeat them and are
    skipped); each carries ``hlo_module`` and ``hlo_op`` args. The steps are the events of the
    ``XLA Modules`` line whose name starts with ``module_prefix`` (when present), else ``steps``
    equal chunks of each instruction's kernels in time order.
    """
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    pname, tname = {}, {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            pname[e["pid"]] = e.get("args", {}).get("name", "")
        elif e.get("ph") == "M" and e.get("name") == "thread_name":
            tname[(e["pid"], e["tid"])] = e.get("args", {}).get("name", "")
    gpu_pids = {p for p, n in pname.items() if device in n}
    kernels, modules, lines = [], [], defaultdict(int)
    for e in events:
        if e.get("ph") != "X" or e.get("pid") not in gpu_pids:
            continue
        line = tname.get((e["pid"], e.get("tid")), "")
        lines[f"{pname[e['pid']]} / {line}"] += 1
        args = e.get("args") or {}
        if line.startswith("XLA Modules") and str(e.get("name", "")).startswith(module_prefix):
            modules.append((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))))
        if not line.startswith(line_prefix):
            continue
        kernels.append({
            "name": e.get("name", ""), "ts": float(e["ts"]), "dur_us": float(e.get("dur", 0)),
            "hlo_op": args.get("hlo_op"), "hlo_module": args.get("hlo_module"), "line": line,
        })  # fmt: skip
    mine = [k for k in kernels if str(k["hlo_module"] or "").startswith(module_prefix)]
    modules.sort()
    by_step = None
    if modules:
        n_steps = len(modules)
        by_step = defaultdict(lambda: [0.0] * n_steps)
        for k in mine:
            for i, (a, b) in enumerate(modules):
                if a - 1 <= k["ts"] <= b + 1:
                    by_step[k["hlo_op"]][i] += k["dur_us"]
                    break
    else:
        n_steps = steps or 1
    per_op = defaultdict(list)
    for k in mine:
        per_op[k["hlo_op"]].append(k)
    ops = {}
    for op, ks in per_op.items():
        ks.sort(key=lambda k: k["ts"])
        if by_step is not None:
            per_step = by_step[op]
        elif len(ks) % n_steps == 0:
            c = len(ks) // n_steps
            per_step = [sum(k["dur_us"] for k in ks[i * c : (i + 1) * c]) for i in range(n_steps)]
        else:
            per_step = [sum(k["dur_us"] for k in ks) / n_steps]
        names = sorted({k["name"] for k in ks})
        ops[op] = {
            "median_ns": round(1000 * _median(per_step)),
            "per_step_ns": [round(1000 * x) for x in per_step],
            "kernels_per_step": len(ks) / n_steps,
            "kernel_names": names[:8],
        }
    step_kernel_ns = [0.0] * n_steps
    for op in ops.values():
        for i, x in enumerate(op["per_step_ns"]):
            if i < n_steps:
                step_kernel_ns[i] += x
    other = defaultdict(float)
    mine_ids = {id(k) for k in mine}
    for k in kernels:
        if id(k) not in mine_ids:
            other[str(k["hlo_module"])] += k["dur_us"]
    return {
        "trace": os.path.basename(path),
        "steps": n_steps,
        "module_spans_us": [b - a for a, b in modules],
        "kernels_total": len(kernels),
        "kernels_of_step": len(mine),
        "lines": dict(lines),
        "other_modules_us": dict(other),
        "step_kernel_ns": [round(x) for x in step_kernel_ns],
        "ops": ops,
    }


def _trim_trace(src: str, dst: str) -> None:
    """Copies the trace keeping the metadata and the GPU processes' events."""
    with gzip.open(src, "rt") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    pname = {
        e["pid"]: e.get("args", {}).get("name", "")
        for e in events
        if e.get("ph") == "M" and e.get("name") == "process_name"
    }
    keep = [e for e in events if e.get("ph") == "M" or "GPU" in pname.get(e.get("pid"), "")]
    with gzip.open(dst, "wt") as f:
        json.dump({"traceEvents": keep}, f)


def _initial_state(a: argparse.Namespace, ns: argparse.Namespace):
    """The step's parameters (normal, scale 0.02, in ``a.dtype``), Adam's state and one batch
    of tokens and targets, all from ``a.seed``."""
    import jax
    import jax.numpy as jnp

    from concerto_jax.dump import param_shapes

    dtype = jnp.bfloat16 if a.dtype == "bf16" else jnp.float32
    shapes = param_shapes(ns)
    is_shape = lambda x: isinstance(x, tuple)  # noqa: E731
    leaves, tree = jax.tree.flatten(shapes, is_leaf=is_shape)
    keys = jax.random.split(jax.random.key(a.seed), len(leaves) + 1)
    params = jax.tree.unflatten(
        tree, [(0.02 * jax.random.normal(k, s, jnp.float32)).astype(dtype)
               for k, s in zip(keys[1:], leaves)],
    )  # fmt: skip
    opt = {
        "count": jnp.zeros((), jnp.int32),
        "m": jax.tree.map(jnp.zeros_like, params),
        "v": jax.tree.map(jnp.zeros_like, params),
    }
    tk, gk = jax.random.split(keys[0])
    tokens = jax.random.randint(tk, (a.batch, a.seq), 0, a.vocab, jnp.int32)
    targets = jax.random.randint(gk, (a.batch, a.seq), 0, a.vocab, jnp.int32)
    return params, opt, tokens, targets


def _profile_steps(a: argparse.Namespace, compiled, state, meta: dict) -> str:
    """Runs ``a.steps`` steps under ``jax.profiler``, keeps the trimmed trace in ``a.out`` and
    the per-instruction kernel table in ``meta``; returns the profile's directory (a failure
    is recorded in ``meta["profile_error"]``)."""
    import jax

    params, opt, tokens, targets = state
    prof = tempfile.mkdtemp(prefix="concerto-gpu-prof-")
    try:
        with jax.profiler.trace(prof, create_perfetto_trace=True):
            for _ in range(a.steps):
                params, opt, loss = compiled(params, opt, tokens, targets)
                loss.block_until_ready()
        traces = sorted(glob.glob(os.path.join(prof, "**", "*.trace.json.gz"), recursive=True))
        traces = [t for t in traces if not t.endswith("perfetto_trace.json.gz")] + sorted(
            glob.glob(os.path.join(prof, "**", "perfetto_trace.json.gz"), recursive=True)
        )
        meta["trace_files"] = [os.path.relpath(t, prof) for t in traces]
        if not traces:
            raise RuntimeError(f"no trace file under {prof}")
        try:
            _trim_trace(traces[0], os.path.join(a.out, "step_trace.json.gz"))
        except Exception as e:  # noqa: BLE001
            print(f"step: trimming the trace failed: {e!r}", file=sys.stderr)
            if os.path.getsize(traces[0]) < 15 << 20:
                shutil.copyfile(traces[0], os.path.join(a.out, "step_trace.json.gz"))
        table = parse_trace(traces[0], steps=a.steps)
        meta.update(table)
        print(
            f"step: {len(table['ops'])} instructions with kernels, {table['kernels_of_step']} "
            f"kernels of the step / {table['kernels_total']}; summed kernel time per step "
            f"{[x / 1e6 for x in table['step_kernel_ns']]} ms; lines {table['lines']}",
            flush=True,
        )
    except Exception as e:  # noqa: BLE001
        meta["profile_error"] = repr(e)
        print(f"step: profiling failed: {e!r}", file=sys.stderr)
    return prof


def run_step(a: argparse.Namespace) -> int:
    """Item 1 (see the module docs)."""
    os.makedirs(a.out, exist_ok=True)
    dump = tempfile.mkdtemp(prefix="concerto-gpu-dump-")
    old = os.environ.get("XLA_FLAGS", "").strip()
    os.environ["XLA_FLAGS"] = " ".join(
        ([old] if old else []) + [f"--xla_dump_to={dump}", "--xla_dump_hlo_as_text",
                                  "--xla_dump_hlo_module_re=.*jit_step.*"]
    )  # fmt: skip
    import jax
    import jaxlib

    from concerto_jax.dump import build_step

    dev = jax.devices()[0]
    print(f"step: jax {jax.__version__} on {dev.device_kind} ({dev.platform})", flush=True)
    ns = argparse.Namespace(
        layers=a.layers, d_model=a.d_model, heads=a.heads, seq=a.seq, batch=a.batch,
        vocab=a.vocab, mlp=a.mlp, devices=1, tp=1, parallel="dp", optimizer="adam",
        scan=False, partitioner="shardy",
        dtype="bfloat16" if a.dtype == "bf16" else "float32",
    )  # fmt: skip
    import inspect

    # dump.py's build_step reads ``dtype`` (bf16 activations, attention scale and mask) where
    # it has that option; an older one computes in the parameters' dtype with f32 promotions.
    model_dtype = "dtype" in inspect.getsource(build_step)
    params, opt, tokens, targets = _initial_state(a, ns)
    inner = build_step(ns, None, {})

    def step(params, opt, tokens, targets):
        new, opt2, loss = inner(params, opt, tokens, targets)
        # Keep the state's dtypes (Adam's bias correction is f32), so every call hits the
        # same compiled module.
        cast = lambda n, o: n.astype(o.dtype)  # noqa: E731
        return jax.tree.map(cast, new, params), jax.tree.map(cast, opt2, opt), loss

    jitted = jax.jit(step, donate_argnums=(0, 1))
    n_params = sum(int(x.size) for x in jax.tree.leaves(params))
    t0 = time.perf_counter()
    compiled = jitted.lower(params, opt, tokens, targets).compile()
    compile_s = time.perf_counter() - t0
    print(f"step: {n_params / 1e6:.1f} M parameters, compiled in {compile_s:.1f} s", flush=True)
    losses = []
    for _ in range(a.warmup):
        params, opt, loss = compiled(params, opt, tokens, targets)
    losses.append(float(loss))
    host_ms = []
    for _ in range(a.timed):
        t0 = time.perf_counter()
        params, opt, loss = compiled(params, opt, tokens, targets)
        loss.block_until_ready()
        host_ms.append((time.perf_counter() - t0) * 1e3)
    losses.append(float(loss))
    print(f"step: median {_median(host_ms):.3f} ms (host clock, {a.timed} steps), "
          f"loss {losses[0]:.4f} -> {losses[-1]:.4f}", flush=True)  # fmt: skip
    # The optimised module and the timings first: the profiler may fail.
    files = sorted(os.listdir(dump))
    opt_files = [f for f in files if "jit_step" in f and f.endswith("after_optimizations.txt")]
    meta = {
        "jax": jax.__version__, "jaxlib": jaxlib.__version__, "device": dev.device_kind,
        "platform": dev.platform, "dtype": a.dtype, "model_dtype_option": model_dtype,
        "parameters": n_params,
        "sizes": {k: getattr(a, k) for k in
                  ("layers", "d_model", "heads", "seq", "batch", "vocab", "mlp")},
        "compile_s": compile_s, "host_step_ms": host_ms, "host_step_median_ms": _median(host_ms),
        "losses": losses, "xla_dump_files": files[:60], "gpu": _gpu_info(),
        "xla_flags": os.environ["XLA_FLAGS"],
    }  # fmt: skip
    if opt_files:
        shutil.copyfile(os.path.join(dump, opt_files[-1]), os.path.join(a.out, "step.opt.hlo"))
        meta["module_file"] = opt_files[-1]
    else:
        print(f"step: no after_optimizations module in {files[:20]}", file=sys.stderr)
    out_json = os.path.join(a.out, "step_kernels.json")

    def save():
        with open(out_json, "w") as f:
            json.dump(meta, f, indent=1, sort_keys=True)

    save()
    prof = _profile_steps(a, compiled, (params, opt, tokens, targets), meta)
    save()
    shutil.rmtree(dump, ignore_errors=True)
    shutil.rmtree(prof, ignore_errors=True)
    return 0


# ---------------------------------------------------------------------------------------------
# Item 2: contention

_COPY_SRC = r"""
extern "C" __global__ void sm_copy(const int4* __restrict__ src, int4* __restrict__ dst,
                                   unsigned long long n, int passes) {
    // Grid-stride 16-byte copy, four loads in flight per thread (NCCL's primitives unroll
    // likewise), repeated `passes` times over the buffer.
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (int p = 0; p < passes; ++p) {
        unsigned long long i = first;
        for (; i + 3 * stride < n; i += 4 * stride) {
            int4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
            dst[i] = a; dst[i + stride] = b; dst[i + 2 * stride] = c; dst[i + 3 * stride] = d;
        }
        for (; i < n; i += stride) dst[i] = src[i];
    }
}
"""


def _contention_of_size(a: argparse.Namespace, n: int, dev, streams, comms: dict,
                        comm_alone: dict) -> dict:
    """One GEMM size of item 2: the n x n x n bf16 GEMM alone, then beside each transfer of
    ``comms`` (paired batches, ``a.trials`` of them); returns the size's entry."""
    import torch

    s_gemm, s_comm = streams
    A = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    B = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    C = torch.empty(n, n, device=dev, dtype=torch.bfloat16)
    flops = 2.0 * n * n * n

    def gemms(reps: int):
        """Records reps+1 events around reps GEMMs on s_gemm; returns the events."""
        evs = [torch.cuda.Event(enable_timing=True) for _ in range(reps + 1)]
        with torch.cuda.stream(s_gemm):
            evs[0].record(s_gemm)
            for i in range(reps):
                torch.mm(A, B, out=C)
                evs[i + 1].record(s_gemm)
        return evs

    # Warm-up: GEMMs for about a second, so that the clocks have ramped up.
    t_end = time.perf_counter() + 1.0
    while time.perf_counter() < t_end:
        gemms(a.reps)
        torch.cuda.synchronize()

    def alone_batch() -> list[float]:
        torch.cuda.synchronize()
        evs = gemms(a.reps)
        torch.cuda.synchronize()
        return [evs[i].elapsed_time(evs[i + 1]) for i in range(a.reps)]

    first = alone_batch()
    base0 = _median(first)
    batch_ms = base0 * a.reps
    entry = {"flops": flops, "with": {}}
    all_alone = list(first)
    for name, launch in comms.items():
        unit = comm_alone[name]["unit_ms"]
        units = max(1, int(a.cover * batch_ms / unit) + 1)
        alone, during, cover, comm_ms = [], [], [], []
        for _ in range(a.trials):
            # Paired: the GEMMs alone right before each overlapped batch.
            alone += alone_batch()
            torch.cuda.synchronize()
            c0 = torch.cuda.Event(enable_timing=True)
            c1 = torch.cuda.Event(enable_timing=True)
            c0.record(s_comm)
            launch(units)
            c1.record(s_comm)
            # The GEMMs start once the transfer has started.
            s_gemm.wait_event(c0)
            evs = gemms(a.reps)
            torch.cuda.synchronize()
            during += [evs[i].elapsed_time(evs[i + 1]) for i in range(a.reps)]
            comm_ms.append(c0.elapsed_time(c1))
            cover.append({
                "comm_start_before_gemms_ms": c0.elapsed_time(evs[0]),
                "comm_end_after_gemms_ms": evs[-1].elapsed_time(c1),
            })  # fmt: skip
        all_alone += alone
        covered = all(c["comm_start_before_gemms_ms"] >= 0 and c["comm_end_after_gemms_ms"] > 0
                      for c in cover)  # fmt: skip
        base, med = _median(alone), _median(during)
        comm_alone_ms = unit * units
        entry["with"][name] = {
            "alone_ms": base, "median_ms": med, "slowdown": med / base,
            "alone_samples_ms": alone, "samples_ms": during,
            "covered": covered, "cover": cover, "units": units,
            "comm_ms_during": comm_ms, "comm_ms_alone_est": comm_alone_ms,
            "comm_slowdown": _median(comm_ms) / comm_alone_ms,
        }  # fmt: skip
        print(f"contention: {n}^3 with {name:>12}: {med:.4f} ms vs {base:.4f} alone, "
              f"x{med / base:.3f} (covered {covered}); comm x{_median(comm_ms) / comm_alone_ms:.3f}",
              flush=True)  # fmt: skip
    entry["alone_ms"] = _median(all_alone)
    entry["alone_tflops"] = flops / entry["alone_ms"] / 1e9
    print(f"contention: {n}^3 bf16 alone {entry['alone_ms']:.4f} ms "
          f"({entry['alone_tflops']:.0f} TFLOP/s)", flush=True)
    return entry


def run_contention(a: argparse.Namespace) -> int:
    """Item 2 (see the module docs)."""
    import cupy
    import numpy as np
    import torch

    os.makedirs(a.out, exist_ok=True)
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    print(f"contention: torch {torch.__version__}, {props.name}, {props.multi_processor_count} SMs",
          flush=True)  # fmt: skip
    kernel = cupy.RawKernel(_COPY_SRC, "sm_copy")
    s_gemm = torch.cuda.Stream()
    s_comm = torch.cuda.Stream()
    torch.manual_seed(0)
    copy_elems = a.copy_mib * (1 << 20) // 16  # int4 elements
    csrc = torch.randint(-1000, 1000, (copy_elems * 4,), dtype=torch.int32, device=dev)
    cdst = torch.empty_like(csrc)
    c_src, c_dst = cupy.asarray(csrc), cupy.asarray(cdst)
    host = torch.empty(a.h2d_mib * (1 << 20), dtype=torch.uint8).pin_memory()
    host.random_(0, 255)
    hdst = torch.empty(host.shape, dtype=torch.uint8, device=dev)
    d2d_src = torch.empty(a.d2d_mib * (1 << 20), dtype=torch.uint8, device=dev).random_(0, 255)
    d2d_dst = torch.empty_like(d2d_src)

    def launch_sm_copy(ctas: int, passes: int):
        with cupy.cuda.ExternalStream(s_comm.cuda_stream):
            kernel((ctas,), (512,), (c_src, c_dst, np.uint64(copy_elems), np.int32(passes)))

    def launch_h2d(n: int):
        with torch.cuda.stream(s_comm):
            for _ in range(n):
                hdst.copy_(host, non_blocking=True)

    def launch_d2d(n: int):
        with torch.cuda.stream(s_comm):
            for _ in range(n):
                d2d_dst.copy_(d2d_src, non_blocking=True)

    def time_comm(launch, unit: int) -> float:
        """ms of launch(unit) alone on s_comm."""
        torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record(s_comm)
        launch(unit)
        e1.record(s_comm)
        torch.cuda.synchronize()
        return e0.elapsed_time(e1)

    results = {"device": props.name, "sm_count": props.multi_processor_count,
               "torch": torch.__version__, "cupy": cupy.__version__, "gpu": _gpu_info(),
               "copy_mib": a.copy_mib, "h2d_mib": a.h2d_mib, "d2d_mib": a.d2d_mib,
               "threads_per_cta": 512, "reps": a.reps, "trials": a.trials, "cover": a.cover,
               "sizes": {}}  # fmt: skip
    # Comm-side rates alone (warm-up first).
    launch_sm_copy(16, 1)
    launch_h2d(1)
    launch_d2d(1)
    torch.cuda.synchronize()
    comm_alone = {}
    for ctas in a.ctas:
        ms = _median([time_comm(lambda u: launch_sm_copy(ctas, u), 1) for _ in range(3)])
        comm_alone[f"sm_copy_{ctas}"] = {"unit_ms": ms,
                                         "gb_per_s": 2 * a.copy_mib * (1 << 20) / ms / 1e6}
    ms = _median([time_comm(launch_h2d, 1) for _ in range(3)])
    comm_alone["h2d_memcpy"] = {"unit_ms": ms, "gb_per_s": a.h2d_mib * (1 << 20) / ms / 1e6}
    ms = _median([time_comm(launch_d2d, 1) for _ in range(3)])
    comm_alone["d2d_memcpy"] = {"unit_ms": ms, "gb_per_s": 2 * a.d2d_mib * (1 << 20) / ms / 1e6}
    results["comm_alone"] = comm_alone

    def save():
        with open(os.path.join(a.out, "contention.json"), "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)

    save()
    print("contention: comm alone " + json.dumps(
        {k: round(v["gb_per_s"], 1) for k, v in comm_alone.items()}) + " GB/s", flush=True)

    comms = {f"sm_copy_{c}": (lambda u, c=c: launch_sm_copy(c, u)) for c in a.ctas}
    comms["h2d_memcpy"] = launch_h2d
    comms["d2d_memcpy"] = launch_d2d

    for n in a.sizes:
        results["sizes"][str(n)] = _contention_of_size(a, n, dev, (s_gemm, s_comm), comms,
                                                       comm_alone)  # fmt: skip
        save()
        torch.cuda.empty_cache()
    return 0


# ---------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (see the module docs)."""
    p = argparse.ArgumentParser(prog="concerto_tools.gpu_measure", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("step")
    s.add_argument("--out", required=True)
    s.add_argument("--layers", type=int, default=4)
    s.add_argument("--d-model", type=int, default=2048)
    s.add_argument("--heads", type=int, default=16)
    s.add_argument("--seq", type=int, default=1024)
    s.add_argument("--batch", type=int, default=8)
    s.add_argument("--vocab", type=int, default=32768)
    s.add_argument("--mlp", type=int, default=4)
    s.add_argument("--dtype", choices=("bf16", "f32"), default="bf16")
    s.add_argument("--warmup", type=int, default=3)
    s.add_argument("--timed", type=int, default=10)
    s.add_argument("--steps", type=int, default=5)
    s.add_argument("--seed", type=int, default=0)
    c = sub.add_parser("contention")
    c.add_argument("--out", required=True)
    c.add_argument("--sizes", type=int, nargs="+", default=[8192, 4096])
    c.add_argument("--ctas", type=int, nargs="+", default=[2, 8, 16, 32])
    c.add_argument("--reps", type=int, default=20)
    c.add_argument("--trials", type=int, default=5)
    c.add_argument("--cover", type=float, default=3.0,
                   help="transfer sized to last this many times the GEMM batch alone")
    c.add_argument("--copy-mib", type=int, default=1024)
    c.add_argument("--h2d-mib", type=int, default=512)
    c.add_argument("--d2d-mib", type=int, default=2048)
    t = sub.add_parser("parse-trace")
    t.add_argument("trace")
    t.add_argument("--out", required=True)
    t.add_argument("--steps", type=int, default=5)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    a = parse_args(argv)
    if a.cmd == "step":
        return run_step(a)
    if a.cmd == "contention":
        return run_contention(a)
    table = parse_trace(a.trace, steps=a.steps)
    with open(a.out, "w") as f:
        json.dump(table, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
