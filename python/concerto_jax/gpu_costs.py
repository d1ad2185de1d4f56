"""Joins the measured kernels of a GPU train step with concerto's cost model (issue 33).

Usage (no GPU needed; python3 and a concerto binary)::

    PYTHONPATH=python python3 -m concerto_jax.gpu_costs \\
        --module docs/fidelity-data/step.opt.hlo.gz \\
        --measured docs/fidelity-data/step_kernels.json \\
        --concerto target/release/concerto [--hardware h100] [--hbm-tbps 4.8] \\
        [--doc docs/src/fidelity.md] [--json docs/fidelity-data/compute_costs.json]

Inputs: the optimised module (``*after_optimizations.txt``, plain or ``.gz``) and the
per-instruction kernel times that ``concerto_jax.gpu_measure step`` measured on a GPU (the
median over the profiled steps of each instruction's summed kernel time).

Concerto's costs, by the CLI alone: ``concerto import MODULE -o g.json`` (ops named after the
HLO instructions), ``concerto optimize g.json --plan p.json`` and ``concerto simulate g.json
--plan p.json --trace t.json``; the trace gives each op's modelled duration (a single-GPU step
has no collective, so no contention applies and every duration is the profile's ``op_ns``).
Where the importer does not cost a cuBLAS custom-call from its shape, the GEMM shape is read
from the module (operand shapes and ``dot_dimension_numbers``) and costed by the same route on
a native graph of one ``gemm`` op per shape: the column "GEMM from shape".

Where the importer rejects the module's text (``%name#0``, the tuple-element operand
shorthand of newer XLA), the shorthand is rewritten to ``%name`` and the result says so.

Output: two markdown tables (per class; GEMMs by shape) written into ``--doc`` between
``<!-- gpu_costs:begin -->`` and ``<!-- gpu_costs:end -->`` (appended when absent), printed,
and the joined rows as JSON (``--json``). Error % is (modelled - measured) / measured.
Re-run it whenever the importer or the profile changes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict

BEGIN = "<!-- gpu_costs:begin -->"
END = "<!-- gpu_costs:end -->"

_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%([\w.\-]+)\s*=\s*(.*)$")
_ARRAY = re.compile(r"^([a-z]+[0-9]*)\[([0-9,]*)\]")
_TUPLE_REF = re.compile(r"(%[\w.\-]+)#[0-9]+")


def _read(path: str) -> str:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return f.read()


def _first_shape(rest: str) -> tuple[str, list[int]] | None:
    """dtype and dims of an instruction's result (the first array of a tuple)."""
    s = rest.lstrip().lstrip("(")
    m = _ARRAY.match(s)
    if not m:
        return None
    dims = [int(x) for x in m.group(2).split(",") if x]
    return m.group(1), dims


def _opcode_and_operands(rest: str) -> tuple[str, list[str]]:
    """The opcode and operand names of an instruction's text after ``=``."""
    s = rest.lstrip()
    if s.startswith("("):
        depth = 0
        for i, ch in enumerate(s):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                s = s[i + 1 :]
                break
    else:
        s = s.split(None, 1)[1] if " " in s else ""
    s = s.lstrip()
    op = s.split("(", 1)[0].strip()
    args = s.split("(", 1)[1] if "(" in s else ""
    depth, end = 1, len(args)
    for i, ch in enumerate(args):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0:
            end = i
            break
    operands = re.findall(r"%([\w.\-]+)", args[:end])
    return op, operands


def parse_entry(text: str) -> dict[str, dict]:
    """Instructions of the ENTRY computation: name -> opcode, result shape, operands, fusion
    kind, custom-call target, backend kind and, for a cuBLAS call, the GEMM shape (b, m, n, k)."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("ENTRY "))
    instrs: dict[str, dict] = {}
    for line in lines[start + 1 :]:
        if line.startswith("}"):
            break
        m = _INSTR.match(line)
        if not m:
            continue
        name, rest = m.group(1), m.group(2)
        op, operands = _opcode_and_operands(rest)
        shape = _first_shape(rest)
        info = {"opcode": op, "shape": shape, "operands": operands}
        if (k := re.search(r"kind=(k\w+)", rest)) and op == "fusion":
            info["fusion_kind"] = k.group(1)
        if t := re.search(r'custom_call_target="([^"]+)"', rest):
            info["target"] = t.group(1)
        if b := re.search(r'"kind":"(__[\w$]+)"', rest):
            info["backend_kind"] = b.group(1)
        if d := re.search(r'"dot_dimension_numbers":(\{[^}]*\})', rest):
            info["dot_dims"] = json.loads(d.group(1))
        instrs[name] = info
    for info in instrs.values():
        dd = info.get("dot_dims")
        if dd is None or len(info["operands"]) < 2:
            continue
        lhs = instrs.get(info["operands"][0], {}).get("shape")
        rhs = instrs.get(info["operands"][1], {}).get("shape")
        if not lhs or not rhs:
            continue
        l, r = lhs[1], rhs[1]
        lb = [int(x) for x in dd.get("lhs_batch_dimensions", [])]
        lc = [int(x) for x in dd.get("lhs_contracting_dimensions", [])]
        rb = [int(x) for x in dd.get("rhs_batch_dimensions", [])]
        rc = [int(x) for x in dd.get("rhs_contracting_dimensions", [])]
        prod = lambda xs: math.prod(xs) if xs else 1  # noqa: E731
        b = prod([l[i] for i in lb])
        k = prod([l[i] for i in lc])
        m_ = prod([l[i] for i in range(len(l)) if i not in lb + lc])
        n = prod([r[i] for i in range(len(r)) if i not in rb + rc])
        info["gemm"] = {"b": b, "m": m_, "n": n, "k": k}
        info["dtype"] = lhs[0]
    return instrs


def hlo_class(name: str, info: dict, gemm: dict | None) -> str:
    """The row of the per-class table an instruction belongs to (from the module, not from
    concerto's classification)."""
    op = info.get("opcode", "")
    target = info.get("target", "")
    kind = info.get("backend_kind", "")
    if gemm is not None or "cublas" in target or "gemm" in kind:
        if gemm is not None and gemm["b"] > 1:
            return "GEMM, batched (attention scores / context)"
        return "GEMM (projections, MLP, unembedding)"
    if kind == "__triton" or name.startswith("triton_softmax"):
        return "Triton block-level fusions (softmax, normalisation)"
    fk = info.get("fusion_kind")
    if fk == "kLoop":
        return "loop fusions (elementwise)"
    if fk == "kInput":
        return "input fusions (reductions, transposes)"
    if fk is not None:
        return f"other fusions ({fk})"
    return f"other ({op or 'unknown'})"


def _run(cmd: list[str]) -> str:
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[-2000:]}")
    return p.stdout


def concerto_durations(bin_: str, graph: str, hardware: str, work: str) -> dict:
    """Per op name: (dur_ns, class, flops, bytes) from concerto's simulated trace of ``graph``
    (HLO or native JSON), after import, a plan and a simulation."""
    g = os.path.join(work, "g.json")
    plan = os.path.join(work, "p.json")
    trace = os.path.join(work, "t.json")
    _run([bin_, "import", graph, "--hardware", hardware, "-o", g])
    _run([bin_, "optimize", g, "--hardware", hardware, "--time-limit", "5", "--plan", plan])
    sim = json.loads(_run([bin_, "simulate", g, "--hardware", hardware, "--plan", plan,
                           "--trace", trace, "--json"]))  # fmt: skip
    with open(trace) as f:
        t = json.load(f)
    events = t["traceEvents"] if isinstance(t, dict) else t
    out = {}
    for e in events:
        if e.get("ph") != "X" or "dur_ns" not in e.get("args", {}):
            continue
        if not str(e.get("args", {}).get("stream", "")).startswith("compute"):
            continue
        a = e["args"]
        out[e["name"]] = {"ns": a["dur_ns"], "class": a.get("class"), "flops": a.get("flops"),
                          "bytes": a.get("bytes")}  # fmt: skip
    with open(g) as f:
        graph_json = json.load(f)
    return {"ops": out, "simulate": sim, "graph": graph_json}


def shape_durations(bin_: str, shapes: list[dict], hardware: str, work: str, fmt: dict) -> dict:
    """concerto's cost of one bf16 GEMM per shape (its measured GEMM tables), by the CLI on a
    native graph of independent ``gemm`` ops; returns ``{"b,m,n,k": ns}``."""
    if not shapes:
        return {}
    ops = []
    for s in shapes:
        b, m, n, k = s["b"], s["m"], s["n"], s["k"]
        ops.append({
            "name": f"gemm_{b}x{m}x{n}x{k}",
            "kind": {"type": "compute", "class": "gemm", "flops": 2 * b * m * n * k,
                     "bytes": 2 * b * (m * k + k * n + m * n), "gemm": dict(s)},
            "outputs": [{"shape": [b, m, n], "dtype": "bf16"}],
            "inputs": [],
        })  # fmt: skip
    native = {**fmt, "name": "gemm_shapes", "resident_bytes": 0, "ops": ops}
    path = os.path.join(work, "shapes.json")
    with open(path, "w") as f:
        json.dump(native, f)
    sub = os.path.join(work, "shapes")
    os.makedirs(sub, exist_ok=True)
    d = concerto_durations(bin_, path, hardware, sub)["ops"]
    return {o["name"].split("_", 1)[1].replace("x", ","): d[o["name"]]["ns"] for o in ops}


def roofline_ns(flops: int, bytes_: int, cls: str, hbm: float) -> float:
    """The h100 profile's formula for an op without a GEMM shape, with HBM bandwidth ``hbm``
    (bytes/s): max(flops / peak, bytes / hbm, 1 µs), peak the bf16 tensor peak for classes
    gemm/attention, the f32 vector peak otherwise (graph/src/hardware/profile.rs)."""
    peak = 989e12 if cls in ("gemm", "attention") else 67e12
    return max(flops / peak * 1e9, bytes_ / hbm * 1e9, 1000.0)


def pct(model: float, meas: float) -> str:
    return "-" if not meas else f"{100.0 * (model - meas) / meas:+.0f}"


def build(a: argparse.Namespace) -> dict:
    text = _read(a.module)
    measured = json.loads(_read(a.measured))
    instrs = parse_entry(text)
    work = tempfile.mkdtemp(prefix="concerto-gpu-costs-")
    mod = os.path.join(work, "module.hlo")
    rewritten = False
    with open(mod, "w") as f:
        f.write(text)
    try:
        conc = concerto_durations(a.concerto, mod, a.hardware, work)
    except RuntimeError as e:
        if "#" not in str(e):
            raise
        with open(mod, "w") as f:
            f.write(_TUPLE_REF.sub(r"\1", text))
        rewritten = True
        conc = concerto_durations(a.concerto, mod, a.hardware, work)
    gops = {o["name"]: o for o in conc["graph"]["ops"]}
    fmt = {k: conc["graph"][k] for k in ("format", "version") if k in conc["graph"]}
    shapes = {}
    for name, info in instrs.items():
        g = gops.get(name, {}).get("kind", {}).get("gemm") or info.get("gemm")
        if g and name in measured["ops"]:
            shapes[name] = g
    uniq = {f"{s['b']},{s['m']},{s['n']},{s['k']}": s for s in shapes.values()}
    by_shape_ns = shape_durations(a.concerto, list(uniq.values()), a.hardware, work, fmt)
    hbm = a.hbm_tbps * 1e12
    rows = []
    for name, meas in measured["ops"].items():
        info = instrs.get(name, {})
        c = conc["ops"].get(name)
        g = shapes.get(name)
        key = f"{g['b']},{g['m']},{g['n']},{g['k']}" if g else None
        model = c["ns"] if c else None
        shape_model = by_shape_ns.get(key) if key else None
        if c and not (gops.get(name, {}).get("kind", {}).get("gemm")):
            adj = roofline_ns(c["flops"] or 0, c["bytes"] or 0, c["class"] or "", hbm)
        else:
            adj = model
        rows.append({
            "name": name, "class": hlo_class(name, info, g), "concerto_class": c and c["class"],
            "measured_ns": meas["median_ns"], "kernels": meas["kernels_per_step"],
            "kernel_names": meas["kernel_names"], "model_ns": model,
            "model_shape_ns": shape_model if shape_model is not None else model,
            "model_hbm_ns": adj if shape_model is None else shape_model,
            "gemm": g, "target": info.get("target"), "backend_kind": info.get("backend_kind"),
            "fusion_kind": info.get("fusion_kind"), "flops": c and c["flops"],
            "bytes": c and c["bytes"],
        })  # fmt: skip
    return {
        "module": os.path.basename(a.module), "hardware": a.hardware, "hbm_tbps": a.hbm_tbps,
        "rewritten_tuple_refs": rewritten, "device": measured.get("device"),
        "host_step_median_ms": measured.get("host_step_median_ms"),
        "step_kernel_ns": measured.get("step_kernel_ns"), "simulate": conc["simulate"],
        "rows": rows,
    }  # fmt: skip


def tables(r: dict) -> str:
    rows = r["rows"]
    steps = r.get("step_kernel_ns") or []
    ms = lambda ns: f"{ns / 1e6:.3f}"  # noqa: E731
    out = []
    out.append(
        f"Measured: {r['device']}, median over the profiled steps of each instruction's summed "
        f"kernel time. Modelled: concerto's `{r['hardware']}` profile through `concerto import` "
        "/ `optimize --plan` / `simulate --trace` (see `python/concerto_jax/gpu_costs.py`)."
        + (" The module's `%name#0` operands were rewritten to `%name` for the importer."
           if r["rewritten_tuple_refs"] else "")
    )
    out.append("")
    out.append(
        "| class | instr. | measured (ms) | concerto import (ms) | err % | GEMMs from shape (ms) "
        f"| err % | same, HBM {r['hbm_tbps']:g} TB/s (ms) | err % |"
    )
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    groups = defaultdict(list)
    for x in rows:
        groups[x["class"]].append(x)
    order = sorted(groups, key=lambda k: -sum(x["measured_ns"] for x in groups[k]))
    tot = defaultdict(float)
    for k in order + ["total"]:
        xs = rows if k == "total" else groups[k]
        m = sum(x["measured_ns"] for x in xs)
        c = sum(x["model_ns"] or 0 for x in xs)
        s = sum(x["model_shape_ns"] or 0 for x in xs)
        h = sum(x["model_hbm_ns"] or 0 for x in xs)
        label = "**total (one step)**" if k == "total" else k
        out.append(f"| {label} | {len(xs)} | {ms(m)} | {ms(c)} | {pct(c, m)} | {ms(s)} | "
                   f"{pct(s, m)} | {ms(h)} | {pct(h, m)} |")  # fmt: skip
        tot[k] = m
    out.append("")
    if steps:
        out.append(
            f"Summed kernel time per profiled step: {', '.join(ms(x) for x in steps)} ms; host "
            f"clock per step (no profiler): {r['host_step_median_ms']:.3f} ms."
        )
        out.append("")
    # GEMMs by shape.
    shp = defaultdict(list)
    for x in rows:
        if x["gemm"]:
            g = x["gemm"]
            how = "cuBLAS" if x["target"] and "cublas" in x["target"] else "Triton"
            shp[(g["b"], g["m"], g["n"], g["k"], how)].append(x)
    out.append(
        "| GEMM (b, m, n, k) | kernel | calls | measured (µs/call) | TFLOP/s | concerto import "
        "(µs) | err % | concerto from shape (µs) | err % |"
    )
    out.append("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for key in sorted(shp, key=lambda k: -sum(x["measured_ns"] for x in shp[k])):
        xs = shp[key]
        b, m, n, k, how = key
        meas = statistics.median(x["measured_ns"] for x in xs)
        imp = statistics.median(x["model_ns"] or 0 for x in xs)
        sh = statistics.median(x["model_shape_ns"] or 0 for x in xs)
        tf = 2 * b * m * n * k / meas / 1e3
        out.append(f"| ({b}, {m}, {n}, {k}) | {how} | {len(xs)} | {meas / 1e3:.1f} | {tf:.0f} | "
                   f"{imp / 1e3:.1f} | {pct(imp, meas)} | {sh / 1e3:.1f} | {pct(sh, meas)} |")  # fmt: skip
    out.append("")
    # Largest absolute errors among non-GEMM instructions.
    other = [x for x in rows if not x["gemm"]]
    other.sort(key=lambda x: -abs((x["model_hbm_ns"] or 0) - x["measured_ns"]))
    out.append("Largest differences outside GEMMs (model at the HBM bandwidth above):")
    out.append("")
    out.append("| instruction | class | measured (µs) | concerto (µs) | bytes (MB) | measured GB/s |")
    out.append("|---|---|---:|---:|---:|---:|")
    for x in other[:8]:
        gbs = (x["bytes"] or 0) / x["measured_ns"] if x["measured_ns"] else 0
        out.append(f"| {x['name']} | {x['class']} | {x['measured_ns'] / 1e3:.1f} | "
                   f"{(x['model_hbm_ns'] or 0) / 1e3:.1f} | {(x['bytes'] or 0) / 1e6:.1f} | "
                   f"{gbs:.0f} |")  # fmt: skip
    return "\n".join(out) + "\n"


def write_doc(path: str, body: str) -> None:
    text = _read(path) if os.path.exists(path) else ""
    block = f"{BEGIN}\n{body}{END}"
    if BEGIN in text and END in text:
        pre = text.split(BEGIN, 1)[0]
        post = text.split(END, 1)[1]
        text = pre + block + post
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + block + "\n"
    with open(path, "w") as f:
        f.write(text)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="concerto_jax.gpu_costs", description=__doc__.split("\n")[0])
    p.add_argument("--module", required=True)
    p.add_argument("--measured", required=True)
    p.add_argument("--concerto", required=True, help="the concerto binary")
    p.add_argument("--hardware", default="h100")
    p.add_argument("--hbm-tbps", type=float, default=4.8,
                   help="HBM bandwidth of the measured GPU for the adjusted column (H200: 4.8)")
    p.add_argument("--doc", help="markdown file to write the tables into (between markers)")
    p.add_argument("--json", help="write the joined rows here")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    r = build(a)
    body = tables(r)
    print(body)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(r, f, indent=1, sort_keys=True)
            f.write("\n")
    if a.doc:
        write_doc(a.doc, body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
