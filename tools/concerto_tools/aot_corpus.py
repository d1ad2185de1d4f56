"""The compiled corpus round trip: :func:`concerto_jax.compile`'s path on every module of
``scripts/xla-gpu-corpus`` and the guide's table (docs/src/concepts/xla-compiled.md).

For each module (its ``.payload``, ``.trees.pickle`` and meta), :func:`corpus_row` runs
:func:`concerto_jax.aot.compile_payload`, then XLA's parser and schedule verifier on concerto's
module, the running module's entry order against the plan's, and the payload checks of
:func:`concerto_jax.aot.check_payload`. Usage (``scripts/xla-gpu-roundtrip``)::

    py=$(./scripts/pyenv-xla-gpu | tail -n1)
    PYTHONPATH=python:tools $py -m concerto_tools.aot_corpus CORPUS_DIR [--jobs 2] [--only NAME]
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import tempfile
from collections import Counter

from concerto_jax import aot, xla_check


def corpus_row(corpus: str, name: str, binary: str | None = None,
               work_limit: int = 20_000) -> dict:  # fmt: skip
    """:func:`compile_payload` on the corpus module ``name`` (``scripts/xla-gpu-corpus``: its
    ``.payload``, ``.trees.pickle`` and meta), with the checks of ``python/tests_xla_gpu``:
    XLA's parser and schedule verifier on concerto's module, and ``optimized_hlo()``'s entry
    order against the one ``concerto optimize --emit-hlo`` wrote. Returns the table's row."""
    with open(os.path.join(corpus, f"{name}.json")) as f:
        meta = json.load(f)
    with open(os.path.join(corpus, f"{name}.payload"), "rb") as f:
        payload = f.read()
    with open(os.path.join(corpus, f"{name}.trees.pickle"), "rb") as f:
        in_tree, out_tree = pickle.load(f)  # noqa: S301 - the corpus's own file
    dev = meta["devices"]
    topology = {"platform": dev["platform"], "device_kind": dev["device_kind"],
                "devices": dev["count"]}  # fmt: skip
    work = tempfile.mkdtemp(prefix=f"concerto-aot-{name}-")
    try:
        c = aot.compile_payload(payload, in_tree, out_tree, topology, work_limit=work_limit,
                            binary=binary, workdir=work)  # fmt: skip
        row = {"name": name, "kept": c.kept, "xla_ns": c.xla_ns, "concerto_ns": c.concerto_ns,
               "xla_peak_bytes": c.xla_peak_bytes, "concerto_peak_bytes": c.concerto_peak_bytes,
               "budget_bytes": c.budget_bytes, "warnings": c.warnings,
               "payload_bytes": len(c.payload), "xla_payload_bytes": len(payload)}  # fmt: skip
        plan, plan_text = os.path.join(work, "concerto.hlo"), None
        if os.path.exists(plan):
            with open(plan) as f:
                plan_text = f.read()
            check = xla_check.check_text(plan_text, plan, allow_unscheduled=False)
            row["xla_verifies"] = xla_check.passed(check, allow_unscheduled=False)
            row["plan_entry"] = aot.entry_order(plan_text)
        if c.kept == "concerto":
            running = c.optimized_hlo()
            row["entry"] = aot.entry_order(running)
            row["order_problem"] = aot.order_problem(row["entry"], aot.entry_graph(plan_text))
            row["removed"] = removed(row["entry"], row["plan_entry"])
            info = aot.check_payload(c.payload, payload, plan_text)
            row["thunks_compared"] = len(info.thunks)
            row["problems"] = info.problems
        return row
    finally:
        shutil.rmtree(work, ignore_errors=True)


def removed(entry: list[tuple[str, str]], plan: list[tuple[str, str]]) -> str:
    """The plan's instructions XLA's backend removed, by opcode (``"34 copy, 2 fusion"``), and
    the ones it added, or ``"-"``."""
    have, want = {n for n, _ in entry}, {n for n, _ in plan}
    gone = Counter(op for n, op in plan if n not in have)
    new = Counter(op for n, op in entry if n not in want)
    text = ", ".join(f"{k} {op}" for op, k in sorted(gone.items()))
    text += "; added " + ", ".join(f"{k} {op}" for op, k in sorted(new.items())) if new else ""
    return text or "-"


def corpus_table(rows: list[dict]) -> str:
    """The guide's table of :func:`corpus_row` rows (markdown)."""
    out = ["| module | entry instructions | thunks in the plan's order | xla (ms, simulated) | "
           "concerto (ms, simulated) | XLA's buffer assignment: XLA's executable | concerto's "
           "executable | ratio | budget | kept | removed by XLA's backend |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]  # fmt: skip
    for r in rows:
        ms = lambda ns: "-" if ns is None else f"{ns / 1e6:.3f}"  # noqa: E731
        ours = r["concerto_peak_bytes"]
        ratio = "-" if not ours else f"{ours / r['xla_peak_bytes']:.3f}"
        out.append(f"| `{r['name']}` | {len(r.get('plan_entry', [])) or '-'} | "
                   f"{r.get('thunks_compared', '-')} | {ms(r['xla_ns'])} | {ms(r['concerto_ns'])} | "
                   f"{r['xla_peak_bytes']:,} | {'-' if not ours else f'{ours:,}'} | {ratio} | "
                   f"{r['budget_bytes']:,} | {r['kept']} | {r.get('removed', '-')} |")  # fmt: skip
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """``python -m concerto_tools.aot_corpus DIR [--jobs N] [--only NAME]``: every corpus
    module through :func:`corpus_row`, the table on stdout; exit 1 when a check fails."""
    import argparse  # noqa: PLC0415
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

    ap = argparse.ArgumentParser(prog="concerto_tools.aot_corpus", description=main.__doc__)
    ap.add_argument("dir")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--json", help="also write the rows here")
    a = ap.parse_args(argv)
    with open(os.path.join(a.dir, "corpus.json")) as f:
        names = [n for n in json.load(f)["modules"] if not a.only or n in a.only]
    with ThreadPoolExecutor(max(1, a.jobs)) as pool:
        rows = list(pool.map(lambda n: corpus_row(a.dir, n), names))
    print(corpus_table(rows))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    bad = [r["name"] for r in rows if r.get("problems") or r.get("xla_verifies") is False]
    for r in rows:
        for w in r["warnings"]:
            print(f"{r['name']}: kept XLA's executable: {w}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
