"""Steers XLA's GPU scheduler with concerto's plan, and compares the two schedulers under the
same costs.

Needs the interpreter of ``scripts/pyenv-xla-gpu`` and a built ``concerto`` binary, found by
:func:`concerto.binary.find` (``CONCERTO_BIN``, the workspace's cargo target directory,
``PATH``). The command that steers one of the corpus's train steps, or every module of the
corpus (the table of docs/src/xla-steering.md), is a tool of the checkout, outside the package:
``PYTHONPATH=python:tools $py -m concerto_tools.steer_corpus`` (tools/concerto_tools/steer_corpus.py).

From Python, for a jitted step and abstract arguments sharded over compile-only H100 devices
(:func:`h100_devices`)::

    from concerto_jax.steer import optimize
    r = optimize(jitted_step, *abstract_args, out="steer-out")
    fast = jax.jit(step, ..., compiler_options=r.compiler_options)

What :func:`optimize` does, deviceless (XLA's CUDA compiler for the 8 H100s of
:mod:`concerto_jax.h100`):

1. **xla**: compiles the step as XLA does by default and writes the module the GPU runs
   (``compiled.as_text()``: XLA's after-optimizations module, ``is_scheduled=true``).
2. ``concerto optimize MODULE --json --emit-pgle costs.pbtxt --emit-pgle-steer steer.pbtxt``:
   concerto's plan for that module, simulated, beside XLA's own schedule (``xla``), and two
   PGLE profiles (``ProfiledInstructionsProto`` text) naming the module's own instructions:
   ``costs.pbtxt`` is concerto's cost model (every kernel's duration, every collective's
   duration as its latency); ``steer.pbtxt`` the same kernels with each collective's latency
   set to the compute concerto's plan runs under it.
3. **xla-pgle**: compiles again with ``xla_gpu_pgle_profile_file_or_directory_path=costs.pbtxt``
   (and ``xla_gpu_pgle_accuracy_checker=PGLE_STRICTNESS_LEVEL_ERROR``, so a name XLA does not
   find fails the compile): XLA's latency-hiding scheduler searches with concerto's costs.
4. **xla-steered**: compiles with ``steer.pbtxt``: XLA's scheduler with the plan's overlaps as
   its latencies.
5. Imports each recompiled module into concerto and simulates XLA's schedule in it (its
   ``xla_ns``) with concerto's costs, so all four rows are the same simulator on the same
   costs; and, per collective, compares the compute kernels that run under it in XLA's
   schedule with those of concerto's plan (both from ``concerto optimize --trace``).

``compiler_options`` of the result is what to give ``jax.jit(..., compiler_options=...)`` (or
``lowered.compile(...)``) to run XLA's best schedule of the two profiles: the profile stays in
``out``.

Scheduling groups (``_scheduling_group_id``) and control dependencies are not used: from JAX the
group attribute reaches only the async collectives (not the fusions whose order the plan
changes), and a control dependency needs the HLO before XLA's scheduler, which jaxlib's compile
(StableHLO only) does not take; see docs/src/xla-steering.md for what was measured.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import time

#: Options every compile here passes: strict PGLE (a profile name XLA misses is an error).
STRICT = {"xla_gpu_pgle_accuracy_checker": "PGLE_STRICTNESS_LEVEL_ERROR"}
PGLE_KEY = "xla_gpu_pgle_profile_file_or_directory_path"


def concerto_bin() -> str:
    """The concerto binary (:func:`concerto.binary.find`: ``$CONCERTO_BIN``, the workspace's
    cargo target directory, ``PATH``); an error listing what was tried when there is none."""
    from concerto.binary import find

    return find()


def setup_env() -> None:
    """The environment of a deviceless compile (before jax is imported)."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ["JAX_SKIP_CUDA_CONSTRAINTS_CHECK"] = "1"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def h100_devices():
    """The 8 compile-only H100 devices of :mod:`concerto_jax.h100`'s topology."""
    setup_env()
    from jax.experimental import topologies

    from concerto_jax.h100 import TOPOLOGY, TOPOLOGY_NAME, h100_target_config

    topo = topologies.get_topology_desc(
        platform="cuda", topology_name=TOPOLOGY_NAME,
        target_config=h100_target_config(), topology=TOPOLOGY,
    )  # fmt: skip
    return list(topo.devices)


def run_concerto(module: str, *extra: str, time_limit: float | None = None) -> dict:
    """``concerto optimize MODULE --json EXTRA...``: the JSON summary (``xla_ns``,
    ``optimized_ns``, ``lower_bound_ns`` ...), from :func:`concerto.optimize` in process when
    the engine is installed, ``CONCERTO_BIN`` is not set and it takes every option; else
    from the binary."""
    if not os.environ.get("CONCERTO_BIN"):
        try:
            import concerto
            from concerto._args import kwargs_from_args
        except ImportError:
            concerto = None
        if concerto is not None and hasattr(concerto, "optimize"):
            kwargs = kwargs_from_args(extra)
            if kwargs is not None:
                if time_limit is not None:
                    kwargs["time_limit"] = time_limit
                return json.loads(concerto.optimize(module, **kwargs).to_json())
    cmd = [concerto_bin(), "optimize", module, "--json", *extra]
    if time_limit is not None:
        cmd += ["--time-limit", str(time_limit)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return json.loads(r.stdout)


def trace_timelines(path: str) -> dict[str, list[tuple[str, str, float, float]]]:
    """Every scheduler's timeline in a ``concerto optimize --trace`` file: ``{scheduler:
    [(op, stream, start_us, end_us)]}``."""
    with open(path) as f:
        d = json.load(f)
    ev = d["traceEvents"] if isinstance(d, dict) else d
    procs = {e["pid"]: e["args"]["name"].split(" ")[0] for e in ev
             if e.get("name") == "process_name"}  # fmt: skip
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
               if e.get("name") == "thread_name"}  # fmt: skip
    out: dict[str, list] = {}
    for e in ev:
        if e.get("ph") == "X":
            out.setdefault(procs[e["pid"]], []).append(
                (e["name"], threads[(e["pid"], e["tid"])], e["ts"], e["ts"] + e["dur"]))
    return out


def overlaps(timeline: list[tuple[str, str, float, float]]) -> dict[str, frozenset[str]]:
    """The compute kernels that start while each collective runs, by collective."""
    comp = [(n, a) for n, s, a, _ in timeline if s == "compute"]
    return {n: frozenset(c for c, ca in comp if a <= ca < b)
            for n, s, a, b in timeline if s.startswith("comm")}  # fmt: skip


def overlap_match(plan: dict[str, frozenset], other: dict[str, frozenset]) -> dict:
    """How far ``other``'s overlaps follow ``plan``'s: the share of collectives with exactly
    the plan's kernels under them, the mean Jaccard similarity of the kernel sets (1 for two
    empty sets), and the share of the plan's overlapped kernels that are under the same
    collective in ``other``."""
    names = sorted(plan)
    same = jac = 0.0
    kept = total = 0
    for n in names:
        a, b = plan[n], other.get(n, frozenset())
        same += a == b
        jac += 1.0 if not a and not b else len(a & b) / len(a | b)
        kept += len(a & b)
        total += len(a)
    k = max(1, len(names))
    return {"collectives": len(names), "exact": same / k, "jaccard": jac / k,
            "kernels_kept": kept / total if total else 1.0}  # fmt: skip


def placement(plan: dict[str, frozenset], timeline: list[tuple[str, str, float, float]]
              ) -> dict[str, int]:  # fmt: skip
    """Where the kernels the plan runs under each collective run in another schedule's
    ``timeline``: under the same collective (``under``), before its start (``before``: XLA
    ran the kernel earlier) or after its end (``after``: the plan hoisted the kernel above the
    point where the other scheduler placed it, typically across the collective's done)."""
    span = {n: (a, b) for n, s, a, b in timeline if s.startswith("comm")}
    start = {n: a for n, s, a, _ in timeline if s == "compute"}
    out = {"under": 0, "before": 0, "after": 0}
    for c, kernels in plan.items():
        a, b = span.get(c, (0.0, 0.0))
        for k in kernels:
            t = start.get(k)
            if t is None:
                continue
            out["under" if a <= t < b else "before" if t < a else "after"] += 1
    return out


@dataclasses.dataclass
class Steered:
    """What :func:`optimize` found; times in ns, simulated by concerto with its costs."""

    name: str
    xla_ns: int
    xla_pgle_ns: int
    xla_steered_ns: int
    concerto_ns: int
    bound_ns: int
    match_xla: dict
    match_pgle: dict
    match_steered: dict
    placement_steered: dict
    files: dict
    compiler_options: dict
    compile_seconds: dict

    def recovered(self, ns: int) -> float | None:
        """Share of concerto's gain over ``xla`` that a schedule of ``ns`` recovers."""
        gain = self.xla_ns - self.concerto_ns
        return (self.xla_ns - ns) / gain if gain > 0 else None

    def report(self) -> str:
        """Before/after, one line each."""
        ms = lambda ns: f"{ns / 1e6:.3f} ms"  # noqa: E731
        rows = [("xla (XLA's own costs)", self.xla_ns, self.match_xla),
                ("xla-pgle (concerto's costs)", self.xla_pgle_ns, self.match_pgle),
                ("xla-steered (plan latencies)", self.xla_steered_ns, self.match_steered),
                ("concerto (its plan)", self.concerto_ns, None)]  # fmt: skip
        out = [f"{self.name}: simulated with concerto's costs; bound {ms(self.bound_ns)}"]
        for label, ns, m in rows:
            rec = self.recovered(ns)
            extra = "" if m is None else (
                f"  overlaps as the plan: {m['exact']:.0%} of {m['collectives']} collectives"
                f" (Jaccard {m['jaccard']:.2f})")  # fmt: skip
            gain = "" if rec is None or m is None else f"  recovers {rec:.0%} of concerto's gain"
            out.append(f"  {label:30s} {ms(ns):>11s}{gain}{extra}")
        out.append(f"  jax.jit(..., compiler_options={json.dumps(self.compiler_options)})")
        return "\n".join(out)


def optimize(jitted, *args, out: str, name: str = "step", gemm: str = "triton",
             mesh=None, time_limit: float | None = None, compiler_options: dict | None = None
             ) -> Steered:  # fmt: skip
    """Compiles ``jitted`` on ``args`` (abstract arguments sharded over the compile-only
    devices, :func:`h100_devices`), optimises it with concerto, recompiles it with concerto's
    costs and with the steering profile, and simulates all of them (module docs). ``gemm``
    ``cublas`` compiles dots to cuBLAS (``xla_gpu_enable_triton_gemm=False``); ``mesh`` is
    only reported. Writes into ``out``: ``<name>.gpu.hlo`` (XLA's default),
    ``<name>.costs.pbtxt``, ``<name>.steer.pbtxt``, ``<name>.pgle.gpu.hlo``,
    ``<name>.steered.gpu.hlo`` and ``<name>.json`` (the result)."""
    os.makedirs(out, exist_ok=True)
    base_opts = dict(compiler_options or {})
    if gemm == "cublas":
        base_opts["xla_gpu_enable_triton_gemm"] = False
    lowered = jitted.trace(*args).lower()
    path = lambda suffix: os.path.join(out, f"{name}{suffix}")  # noqa: E731
    seconds = {}

    def compile_to(suffix: str, opts: dict) -> str:
        t = time.perf_counter()
        text = lowered.compile(opts).as_text()
        seconds[suffix] = round(time.perf_counter() - t, 2)
        with open(path(suffix), "w") as f:
            f.write(text)
        return path(suffix)

    base = compile_to(".gpu.hlo", base_opts)
    costs, steer = path(".costs.pbtxt"), path(".steer.pbtxt")
    trace0 = path(".trace.json")
    r0 = run_concerto(base, "--emit-pgle", costs, "--emit-pgle-steer", steer, "--trace", trace0,
                      time_limit=time_limit)  # fmt: skip
    pgle = compile_to(".pgle.gpu.hlo", {**base_opts, **STRICT, PGLE_KEY: costs})
    steered = compile_to(".steered.gpu.hlo", {**base_opts, **STRICT, PGLE_KEY: steer})
    t0 = trace_timelines(trace0)
    plan = overlaps(t0["concerto"])
    res = {}
    for key, mod in (("pgle", pgle), ("steered", steered)):
        tr = path(f".{key}.trace.json")
        # The recompiled module's own schedule is all this needs: a short search.
        r = run_concerto(mod, "--trace", tr, time_limit=2.0)
        tl = trace_timelines(tr)["xla"]
        res[key] = (r, overlaps(tl), tl)
        if r["collectives"] != r0["collectives"]:
            raise RuntimeError(
                f"{mod}: {r['collectives']} collectives, {base}: {r0['collectives']}: "
                "the recompiled module is another step")
    best = min(("pgle", costs), ("steered", steer), key=lambda kv: res[kv[0]][0]["xla_ns"])
    s = Steered(
        name=name,
        xla_ns=r0["xla_ns"],
        xla_pgle_ns=res["pgle"][0]["xla_ns"],
        xla_steered_ns=res["steered"][0]["xla_ns"],
        concerto_ns=r0["optimized_ns"],
        bound_ns=r0["lower_bound_ns"],
        match_xla=overlap_match(plan, overlaps(t0["xla"])),
        match_pgle=overlap_match(plan, res["pgle"][1]),
        match_steered=overlap_match(plan, res["steered"][1]),
        placement_steered=placement(plan, res["steered"][2]),
        files={"xla": base, "costs": costs, "steer": steer, "pgle": pgle, "steered": steered},
        compiler_options={**base_opts, PGLE_KEY: os.path.abspath(best[1])},
        compile_seconds=seconds,
    )
    meta = dataclasses.asdict(s)
    meta["mesh"] = None if mesh is None else {k: int(v) for k, v in mesh.shape.items()}
    meta["ops"], meta["collectives"] = r0["ops"], r0["collectives"]
    # XLA's passes after its scheduler can differ a little between schedules (one copy more
    # or less): the ops of each recompiled module's graph.
    meta["ops_pgle"], meta["ops_steered"] = res["pgle"][0]["ops"], res["steered"][0]["ops"]
    with open(path(".json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")
    return s

