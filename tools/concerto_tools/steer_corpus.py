"""Steering XLA's GPU scheduler on the corpus's train steps, one or all, and the guide's table.

One step of :mod:`concerto_tools.compile_gpu`, or every module of its corpus and the table of
docs/src/xla-steering.md. The steering itself is the package's
(:func:`concerto_jax.steer.optimize`); this is the command that measures it.

Usage (the interpreter of ``scripts/pyenv-xla-gpu``; a built ``concerto`` binary, found by
:func:`concerto.binary.find`: ``CONCERTO_BIN``, the workspace's cargo target directory, ``PATH``)::

    py=$(./scripts/pyenv-xla-gpu | tail -n1)
    # one step of concerto_tools.compile_gpu (dp|tp|fsdp|mix|moe, same step options)
    PYTHONPATH=python:tools $py -m concerto_tools.steer_corpus --parallel tp --gemm cublas \\
        --out DIR [--layers 4 --d-model 1024 ...]
    # every module of compile_gpu's corpus: the table of docs/src/xla-steering.md
    PYTHONPATH=python:tools $py -m concerto_tools.steer_corpus --corpus --out DIR [--only NAME ...]

Each step prints :meth:`concerto_jax.steer.Steered.report` and leaves the files of
:func:`concerto_jax.steer.optimize` in ``DIR``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

from concerto_jax import steer


def kernel_kinds(module_text: str) -> dict[str, str]:
    """The entry kernels of a compiled module by kind: ``gemm`` (a cuBLAS custom-call or a
    Triton gemm fusion: what a ``_scheduling_group_id`` can be kept on), ``fusion`` (any other
    fusion: loop, input, Triton softmax), ``other``. Kernels of a loop body are named by the
    import ``<while>.it<k>.<name>`` and are not in this map."""
    out = {}
    for line in module_text.splitlines():
        m = re.match(r"\s*(?:ROOT\s+)?%([\w.\-]+) = .*? (fusion|custom-call)\(", line)
        if m:
            gemm = ("__cublas" in line if m.group(2) == "custom-call"
                    else "__triton_gemm" in line or "gemm_fusion" in line)  # fmt: skip
            out[m.group(1)] = "gemm" if gemm else m.group(2).replace("custom-call", "other")
    return out


def later_by_kind(out: str, name: str) -> dict[str, int] | None:
    """The plan's overlapped kernels that the steered schedule runs after their collective
    ended, by :func:`kernel_kinds` (``loop`` for a kernel of an unrolled loop body), from the
    files :func:`concerto_jax.steer.optimize` wrote into ``out``; None where they are missing."""
    f = lambda suffix: os.path.join(out, f"{name}{suffix}")  # noqa: E731
    need = (".gpu.hlo", ".trace.json", ".steered.trace.json")
    if not all(os.path.exists(f(x)) for x in need):
        return None
    with open(f(".gpu.hlo")) as fh:
        kinds = kernel_kinds(fh.read())
    plan = steer.overlaps(steer.trace_timelines(f(".trace.json"))["concerto"])
    tl = steer.trace_timelines(f(".steered.trace.json"))["xla"]
    span = {n: (a, b) for n, s, a, b in tl if s.startswith("comm")}
    start = {n: a for n, s, a, _ in tl if s == "compute"}
    res = {"gemm": 0, "fusion": 0, "loop": 0, "other": 0}
    for c, ks in plan.items():
        end = span.get(c, (0.0, 0.0))[1]
        for k in ks:
            if k in start and start[k] >= end:
                res[kinds.get(k, "loop" if ".it" in k else "other")] += 1
    return res


def build(argv: list[str]):
    """``(name, jitted, args, gemm, mesh)`` of a :mod:`concerto_tools.compile_gpu` step."""
    from concerto_jax import dump
    from concerto_tools import compile_gpu as cg

    a, rest = cg.parse_args(["--out", "-", *argv])
    s = cg.step_args(a, rest)
    data, model = cg.sizes(s)
    import jax

    jax.config.update("jax_use_shardy_partitioner", s.partitioner == "shardy")
    devices = steer.h100_devices()
    if s.parallel == "moe":
        import numpy as np
        from jax.sharding import Mesh

        from concerto_tools.gpu_models import jit_moe_step

        mesh = Mesh(np.array(devices[: s.devices]), ("expert",))
        jitted, args = jit_moe_step(s, mesh, donate=True)
    else:
        mesh = dump.make_mesh(s, data, model, devices)
        jitted, args = dump.jit_step(s, mesh, data, donate=True)
    return cg.module_name(a, s, data, model), jitted, args, a.gemm, mesh


def table(results: list[dict], out: str | None = None) -> str:
    """The markdown table of docs/src/xla-steering.md (with ``out``, the directory of the runs,
    the later kernels by kind, :func:`later_by_kind`)."""
    head = ("| module | ops | coll. | xla | xla-pgle | xla-steered | concerto | bound | "
            "steered recovers | overlaps as plan (xla / pgle / steered) | "
            "plan's overlapped kernels in steered: under / earlier / later | "
            "later: gemm / fusion / loop body / other |")  # fmt: skip
    lines = [head, "|" + "---|" * 12]
    for r in results:
        gain = r["xla_ns"] - r["concerto_ns"]
        rec = f"{(r['xla_ns'] - r['xla_steered_ns']) / gain:.0%}" if gain > 0 else "-"
        m = lambda k: f"{r[k]['exact']:.0%}"  # noqa: E731
        ms = lambda k: f"{r[k] / 1e6:.3f}"  # noqa: E731
        pl = r["placement_steered"]
        lk = later_by_kind(out, r["name"]) if out else None
        later = "-" if lk is None else " / ".join(
            str(lk[k]) for k in ("gemm", "fusion", "loop", "other"))
        ops = str(r["ops"])
        if (r["ops_pgle"], r["ops_steered"]) != (r["ops"], r["ops"]):
            ops += f" ({r['ops_pgle']}, {r['ops_steered']})"
        lines.append(
            f"| {r['name']} | {ops} | {r['collectives']} | {ms('xla_ns')} | "
            f"{ms('xla_pgle_ns')} | {ms('xla_steered_ns')} | {ms('concerto_ns')} | "
            f"{ms('bound_ns')} | {rec} | {m('match_xla')} / {m('match_pgle')} / "
            f"{m('match_steered')} | {pl['under']} / {pl['before']} / {pl['after']} | "
            f"{later} |")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(prog="concerto_tools.steer_corpus", description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--corpus", action="store_true", help="every module of compile_gpu's corpus")
    p.add_argument("--only", action="append", default=[], help="corpus: only these names")
    p.add_argument("--time-limit", type=float, default=None, help="concerto's (default its own)")
    a, rest = p.parse_known_args(argv)
    steer.setup_env()
    if a.corpus:
        from concerto_tools.compile_gpu import corpus_jobs

        jobs = [(n, j) for n, j in corpus_jobs() if not a.only or n in a.only]
    else:
        jobs = [(None, rest)]
    results = []
    for done_name, job in jobs:
        done = os.path.join(a.out, f"{done_name}.json") if done_name else None
        if done and os.path.exists(done):  # a corpus module finished by an earlier run
            with open(done) as f:
                results.append(json.load(f))
            continue
        name, jitted, args, gemm, mesh = build(job)
        s = steer.optimize(jitted, *args, out=a.out, name=name, gemm=gemm, mesh=mesh,
                     time_limit=a.time_limit)  # fmt: skip
        print(s.report(), flush=True)
        with open(os.path.join(a.out, f"{name}.json")) as f:
            results.append(json.load(f))
    if a.corpus:
        with open(os.path.join(a.out, "table.md"), "w") as f:
            f.write(table(results, a.out) + "\n")
        print(table(results, a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
