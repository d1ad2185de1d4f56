"""The grammar census: XLA's own test modules, judged by XLA's parser and imported by concerto.

XLA's C++ tests hold thousands of small HLO modules as raw strings (``R"(HloModule ...)"``,
``R"hlo(...)hlo"``) and its test data more as ``.hlo`` files. This module extracts them,
parses each with XLA's parser (jaxlib's ``hlo_module_from_text``, the oracle) and imports
each with concerto (the ``import_check`` example of ``concerto-extract``), and prints the count
table: accepted by XLA / imported / clear errors by kind / panics / hangs.

Usage (``scripts/xla-grammar-census`` wraps all three steps)::

    PYTHONPATH=python:tools python -m concerto_tools.grammar_census extract --xla-git DIR [--rev main] --out MODULES
    PYTHONPATH=python:tools python -m concerto_tools.grammar_census run --modules MODULES --import-check BIN \\
        [--jobs 2] [--timeout 20] [--results results.jsonl]
    PYTHONPATH=python:tools python -m concerto_tools.grammar_census sample --modules MODULES --results results.jsonl \\
        --out fixtures/hlo_xla_tests

``extract`` writes one file per module, named after its source file and index
(``service--gpu--fusion_test.3.hlo`` is the fourth module of
``xla/service/gpu/fusion_test.cc``), and ``index.tsv`` (file, source path, index, kind).

XLA's parser aborts the process on some inputs (a failed ``CHECK``), so it runs in worker
child processes that parse one module at a time: a worker that dies takes only its current
module with it (counted as rejected, "aborted") and is replaced; a module that takes longer
than ``--timeout`` seconds is a hang. The importer runs the same way (its worker catches
panics and reports them; a worker that dies or overruns the timeout counts as a panic or a
hang). Cost: the modules are small; the census of about 8,000 takes a few minutes on two
cores, most of it XLA's parser.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

#: A C++ raw string literal: ``R"delim( ... )delim"``.
_RAW = re.compile(r'R"([^()\\\s"]{0,16})\((.*?)\)\1"', re.S)


def module_name(source: str, index: int) -> str:
    """The file name of module ``index`` of XLA source file ``source``."""
    stem = source[len("xla/"):] if source.startswith("xla/") else source
    stem = re.sub(r"\.(cc|hlo|txt)$", "", stem)
    return f"{stem.replace('/', '--')}.{index}.hlo"


def raw_modules(text: str) -> list[str]:
    """The raw strings of C++ source ``text`` that hold an HLO module (start with
    ``HloModule`` after whitespace)."""
    out = []
    for m in _RAW.finditer(text):
        body = m.group(2)
        if body.lstrip().startswith("HloModule"):
            out.append(body)
    return out


def file_modules(text: str) -> list[str]:
    """The modules of an ``.hlo`` test-data file: the whole file, or its pieces when it holds
    several (``// -----`` separators of lit tests, or several ``HloModule`` headers)."""
    pieces = re.split(r"^// -----.*$", text, flags=re.M)
    out = []
    for piece in pieces:
        starts = [m.start() for m in re.finditer(r"^\s*HloModule\b", piece, flags=re.M)]
        for k, s in enumerate(starts):
            end = starts[k + 1] if k + 1 < len(starts) else len(piece)
            out.append(piece[s:end])
    return out


def git_files(git_dir: str, rev: str) -> list[str]:
    out = subprocess.run(
        ["git", "-C", git_dir, "ls-tree", "-r", "--name-only", rev],
        check=True, capture_output=True, text=True,
    ).stdout
    return out.splitlines()


def git_blobs(git_dir: str, rev: str, paths: list[str]):
    """Yields ``(path, text)`` for ``paths`` at ``rev``, through one ``git cat-file --batch``."""
    proc = subprocess.Popen(
        ["git", "-C", git_dir, "cat-file", "--batch"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )
    assert proc.stdin and proc.stdout
    for path in paths:
        proc.stdin.write(f"{rev}:{path}\n".encode())
        proc.stdin.flush()
        header = proc.stdout.readline().split()
        if len(header) < 3:
            continue
        size = int(header[2])
        data = proc.stdout.read(size)
        proc.stdout.read(1)
        yield path, data.decode("utf-8", errors="replace")
    proc.stdin.close()
    proc.wait()


def extract(git_dir: str, rev: str, out: Path, hlo_files: bool = True) -> int:
    """Writes every module of XLA's tests at ``rev`` under ``out``; returns the count."""
    out.mkdir(parents=True, exist_ok=True)
    files = git_files(git_dir, rev)
    tests = [f for f in files if f.startswith("xla/") and f.endswith("_test.cc")]
    datas = [f for f in files if f.startswith("xla/") and f.endswith(".hlo")] if hlo_files else []
    rows = []
    for kind, paths, split in (("test.cc", tests, raw_modules), ("hlo-file", datas, file_modules)):
        for path, text in git_blobs(git_dir, rev, paths):
            for k, body in enumerate(split(text)):
                name = module_name(path, k)
                (out / name).write_text(body)
                rows.append((name, path, k, kind))
    with open(out / "index.tsv", "w") as f:
        f.write("file\tsource\tindex\tkind\n")
        for r in rows:
            f.write("\t".join(map(str, r)) + "\n")
    commit = subprocess.run(
        ["git", "-C", git_dir, "rev-parse", rev], check=True, capture_output=True, text=True
    ).stdout.strip()
    (out / "SOURCE").write_text(f"{commit}\n")
    return len(rows)


# ---------------------------------------------------------------- workers

_XLA_WORKER = r"""
import json, sys
from jax._src.lib import hlo
print("ready", flush=True)
for line in sys.stdin:
    path = line.rstrip("\n")
    try:
        with open(path) as f:
            text = f.read()
        hlo.hlo_module_from_text(text)
        r = {"ok": True}
    except Exception as e:
        lines = [s.strip() for s in str(e).splitlines() if s.strip()]
        r = {"ok": False, "error": " | ".join(lines[:3])[:400] or type(e).__name__}
    print(json.dumps(r), flush=True)
"""


class Worker:
    """A child process answering one line per input line, restarted when it dies or hangs."""

    def __init__(self, argv: list[str], ready: bool, env: dict | None = None):
        self.argv, self.ready, self.env = argv, ready, env
        self.proc: subprocess.Popen | None = None
        self.buf = b""
        self.eof = False

    def _start(self) -> None:
        self.proc = subprocess.Popen(
            self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=self.env,
        )
        self.buf = b""
        if self.ready:
            line = self._readline(120.0)
            if line != "ready":
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                raise RuntimeError(f"worker {self.argv[0]} did not start: {err[-2000:]}")

    def _readline(self, timeout: float) -> str | None:
        """The next line, or None when the worker closed its output (it died: ``self.eof``
        is set) or ``timeout`` passed."""
        assert self.proc and self.proc.stdout
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        self.eof = False
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([fd], [], [], left)
            if not r:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                self.eof = True
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode(errors="replace")

    def kill(self) -> None:
        if self.proc:
            self.proc.kill()
            self.proc.wait()
            if self.proc.stderr:
                self.proc.stderr.close()
            self.proc = None

    def ask(self, path: str, timeout: float) -> tuple[str, str | None]:
        """``("line", text)``, ``("died", stderr tail)`` or ``("hang", None)``."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        assert self.proc and self.proc.stdin
        try:
            self.proc.stdin.write((path + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        line = self._readline(timeout)
        if line is not None:
            return "line", line
        if not self.eof:
            self.kill()
            return "hang", None
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
        self.kill()
        lines = [s.strip() for s in err.strip().splitlines() if s.strip()]
        # A failed CHECK logs `F0000 ... file.cc:N] Check failed: ...` before the stack.
        fatal = [s for s in lines if "Check failed" in s or re.match(r"F\d{4} ", s)]
        return "died", " | ".join(fatal[:2] or lines[-3:])[:300]


def xla_verdict(worker: Worker, path: str, timeout: float) -> dict:
    how, line = worker.ask(path, timeout)
    if how == "line":
        r = json.loads(line)
        return {"xla": "accepted" if r["ok"] else "rejected", "xla_error": r.get("error")}
    if how == "hang":
        return {"xla": "rejected", "xla_error": "hang (timeout)"}
    return {"xla": "rejected", "xla_error": f"aborted: {line}"}


#: Lowering errors by kind: the first pattern found in the message names the kind.
ERROR_KINDS = (
    ("trip-count", "has no known trip count"),
    ("unroll-limit", "unrolling"),
)

#: Why a loop has no known trip count: the first pattern found in the message names the
#: reason (the phrases of the importer's `Unknown` reasons, `extract/src/hlo/lower/trip_count.rs`).
TRIP_COUNT_REASONS = (
    ("over-128-evaluated", "evaluated iterations"),
    ("never-ends", "never ends"),
    ("data-dependent", "is data-dependent"),
    ("bound-not-constant", "the bound is not a constant"),
    ("bound-not-constant", "a bound carried in the loop"),
    ("init-not-constant", "is not a constant:"),
    ("state-not-tuple", "is not a `tuple` instruction, where"),
    ("body-not-tuple", "its body's root"),
    ("update-not-counter", "is not computed from that element alone"),
    ("update-not-counter", "is not one op of that element and constants"),
    ("no-induction-variable", "does not read one scalar element"),
    ("not-evaluable", "evaluating it failed"),
)


def trip_count_reason(message: str) -> str:
    """The reason key of a "has no known trip count" message (``other`` if none matches)."""
    for name, pattern in TRIP_COUNT_REASONS:
        if pattern in message:
            return name
    return "other"


def concerto_verdict(worker: Worker, path: str, timeout: float) -> dict:
    how, line = worker.ask(path, timeout)
    if how == "hang":
        return {"concerto": "hang", "concerto_error": None}
    if how == "died":
        return {"concerto": "panic", "concerto_error": f"worker died: {line}"}
    parts = line.split("\t")
    status = parts[1] if len(parts) > 1 else "?"
    if status == "ok":
        return {"concerto": "imported", "ops": int(parts[2])}
    if status == "panic":
        return {"concerto": "panic", "concerto_error": parts[2] if len(parts) > 2 else ""}
    if status == "error":
        kind, message = parts[2], parts[3] if len(parts) > 3 else ""
        for name, pattern in ERROR_KINDS:
            if pattern in message:
                kind = name
                break
        r = {"concerto": "error", "error_kind": kind, "concerto_error": message}
        if kind == "trip-count":
            r["trip_count_reason"] = trip_count_reason(message)
        return r
    return {"concerto": "unreadable", "concerto_error": line}


#: Modules the oracle (the census's jaxlib) accepts and XLA's own test at the census's
#: revision expects rejected, as concerto rejects them: the oracle's parser is older. Each is
#: (test source, text of the module, the test that expects the error).
XLA_TEST_REJECTS = (
    ("xla/hlo/parser/hlo_parser_test.cc", "replica_groups=[2,2]<=[16]",
     "CollectiveDeviceListIotaSizeMismatch"),
)


def xla_test_rejects(source: str, text: str) -> str | None:
    """The XLA test that expects module ``text`` of ``source`` rejected, if it is one of
    :data:`XLA_TEST_REJECTS`."""
    for src, snippet, test in XLA_TEST_REJECTS:
        if source == src and snippet in text:
            return test
    return None


def venv_python() -> str:
    return os.environ.get("CONCERTO_PYTHON", sys.executable)


def import_flags(unknown_trip_count: int | None = None,
                 unbounded_dim_size: int | None = None) -> list[str]:
    """The ``import_check`` flags of the import options: the count of every loop whose count
    the importer cannot read (``--unknown-trip-count``), the size of every unbounded
    dimension (``--unbounded-dim-size``)."""
    flags = []
    if unknown_trip_count is not None:
        flags += ["--unknown-trip-count", str(unknown_trip_count)]
    if unbounded_dim_size is not None:
        flags += ["--unbounded-dim-size", str(unbounded_dim_size)]
    return flags


def run(modules: Path, import_check: str, jobs: int, timeout: float, results: Path,
        files: list[str] | None = None, xla_timeout: float = 120.0,
        flags: list[str] | None = None) -> list[dict]:
    """Judges every module under ``modules`` (or just ``files``); writes and returns the rows.
    ``flags``: the importer's options (:func:`import_flags`)."""
    index = {}
    with open(modules / "index.tsv") as f:
        next(f)
        for line in f:
            name, source, k, kind = line.rstrip("\n").split("\t")
            index[name] = {"file": name, "source": source, "index": int(k), "kind": kind}
    names = files if files is not None else list(index)
    env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3")
    chunks = [names[i::jobs] for i in range(jobs)]
    # One pair of workers per job, each in its own process so the jobs run in parallel.
    procs = []
    part_paths = []
    for j, chunk in enumerate(chunks):
        part = results.with_suffix(f".part{j}")
        part_paths.append(part)
        listing = results.with_suffix(f".list{j}")
        listing.write_text("\n".join(chunk) + "\n")
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "concerto_tools.grammar_census", "_shard",
             "--modules", str(modules), "--import-check", import_check,
             "--timeout", str(timeout), "--xla-timeout", str(xla_timeout),
             "--list", str(listing), "--out", str(part), "--flags", json.dumps(flags or [])],
            env=env,
        ))
    for p in procs:
        p.wait()
    rows = []
    for j, part in enumerate(part_paths):
        with open(part) as f:
            for line in f:
                r = json.loads(line)
                rows.append({**index.get(r["file"], {"file": r["file"]}), **r})
        part.unlink()
        results.with_suffix(f".list{j}").unlink()
    order = {n: i for i, n in enumerate(names)}
    rows.sort(key=lambda r: order.get(r["file"], 0))
    for r in rows:
        if r.get("xla") == "accepted" and r.get("concerto") == "error":
            test = xla_test_rejects(r.get("source", ""), (modules / r["file"]).read_text())
            if test:
                r["xla_test_rejects"] = test
    with open(results, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    return rows


def shard(modules: Path, import_check: str, timeout: float, listing: Path, out: Path,
          xla_timeout: float, flags: list[str]) -> None:
    names = [n for n in listing.read_text().splitlines() if n]
    xla = Worker([venv_python(), "-c", _XLA_WORKER], ready=True)
    imp = Worker([import_check, *flags], ready=False)
    with open(out, "w") as f:
        for n, name in enumerate(names):
            path = str(modules / name)
            r = {"file": name}
            r.update(xla_verdict(xla, path, xla_timeout))
            r.update(concerto_verdict(imp, path, timeout))
            f.write(json.dumps(r) + "\n")
            f.flush()
            if n % 500 == 499:
                print(f"  {out.name}: {n + 1}/{len(names)}", file=sys.stderr, flush=True)
    xla.kill()
    imp.kill()


# ---------------------------------------------------------------- the checked-in sample

#: Grammar features a sample should cover, found by a light scan of the text (approximate:
#: a label for choosing modules, not a parse).
FEATURES = {
    "inferred-shape": re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*[a-z][a-z0-9-]*\(", re.M),
    "no-entry": re.compile(r"\A(?!.*\bENTRY\b)", re.S),
    "nested-operand": re.compile(
        r"[a-z]\((?:[^()\n]*,\s*)?(?:[a-z0-9]+\[[^\]\n]*\]\S*\s+)?[a-z][a-z0-9-]*\((?!\))"),
    "multiline-header": re.compile(r"\A\s*HloModule[^\n]*,[ \t]*\n"),
    "header-colon": re.compile(r"\A\s*HloModule\s+[\w.\-]+:"),
    "param-without-colon": re.compile(r"^\s*(?:ENTRY\s+)?%?[\w.\-]+\s*\(%?[\w.\-]+ [a-z0-9]+\[", re.M),
    "buffer-shape": re.compile(r"[=(,]\s*b\("),
    "custom-call-literal": re.compile(r"literal=[a-z0-9]+\["),
    "value-on-next-line": re.compile(r"=[ \t]*\n\s*%?[\w.\-]+"),
    "inline-computation": re.compile(
        r"\b(?:to_apply|calls|body|condition|branch_computations|true_computation|"
        r"false_computation)=\{\{?\s*(?:ROOT\b|%?[\w.\-]+\s*=)"),
    "gemm-without-dimension-numbers": re.compile(
        r"custom_call_target=\"__cublas\$(?:gemm|lt\$matmul)[^\"]*\"(?![^\n]*dot_dimension_numbers)"),
}

#: Files of the sample are at most this large, and the sample at most this many.
SAMPLE_FILE_BYTES = 6000
SAMPLE_SIZE = 180


def verdict_of(r: dict) -> str:
    """The concerto verdict written in the manifest: ``imported`` or ``error:KIND``."""
    if r["concerto"] == "imported":
        return "imported"
    if r["concerto"] == "error":
        return f"error:{r['error_kind']}"
    return r["concerto"]


def features_of(text: str) -> list[str]:
    return [k for k, pat in FEATURES.items() if pat.search(text)]


def sample(modules: Path, results: Path, out: Path) -> list[dict]:
    """Chooses a small sample of census rows covering each grammar feature, each verdict and
    as many opcodes as small modules allow; copies the modules to ``out`` with
    ``MANIFEST.tsv``. Deterministic for given inputs."""
    from concerto_jax.hlo_text import opcodes

    rows = [json.loads(line) for line in open(results)]
    cands = []
    for r in rows:
        if r["concerto"] in ("panic", "hang"):
            continue
        # XLA accepts it: concerto must import it or name the loop; XLA rejects it: only
        # modules concerto rejects too (the differential agreement).
        if r["xla"] == "accepted" and verdict_of(r) not in ("imported", "error:trip-count"):
            continue
        if r["xla"] == "rejected" and r["concerto"] != "error":
            continue
        if (r.get("xla_error") or "").startswith(("hang", "aborted")):
            continue
        text = (modules / r["file"]).read_text()
        if len(text.encode()) > SAMPLE_FILE_BYTES:
            continue
        r = dict(r, features=features_of(text), ops=sorted({o for _, _, o in opcodes(text)}),
                 size=len(text.encode()))
        cands.append(r)
    cands.sort(key=lambda r: (r["size"], r["file"]))
    chosen: dict[str, dict] = {}
    per_source: Counter = Counter()

    def take(pred, n: int, per_file: int = 2) -> None:
        got = 0
        for r in cands:
            if got >= n:
                break
            if r["file"] in chosen or per_source[r["source"]] >= per_file or not pred(r):
                continue
            chosen[r["file"]] = r
            per_source[r["source"]] += 1
            got += 1

    for feature in FEATURES:
        take(lambda r, f=feature: r["xla"] == "accepted" and f in r["features"], 12)
    take(lambda r: verdict_of(r) == "error:trip-count", 10)
    take(lambda r: r["xla"] == "rejected", 12)
    seen: set[str] = set()
    for r in chosen.values():
        seen.update(r["ops"])
    all_ops = sorted({o for r in cands if r["xla"] == "accepted" for o in r["ops"]})
    for op in all_ops:
        if len(chosen) >= SAMPLE_SIZE:
            break
        if op not in seen:
            take(lambda r, o=op: r["xla"] == "accepted" and o in r["ops"], 1, per_file=3)
            for r in chosen.values():
                seen.update(r["ops"])
    take(lambda r: r["xla"] == "accepted", SAMPLE_SIZE - len(chosen))
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.hlo"):
        old.unlink()
    picked = sorted(chosen.values(), key=lambda r: r["file"])
    with open(out / "MANIFEST.tsv", "w") as f:
        f.write("file\tsource\tindex\txla\tconcerto\tfeatures\n")
        for r in picked:
            (out / r["file"]).write_text((modules / r["file"]).read_text())
            f.write("\t".join([r["file"], r["source"], str(r["index"]), r["xla"], verdict_of(r),
                               ",".join(r["features"]) or "-"]) + "\n")
    return picked


# ---------------------------------------------------------------- the table


def table(rows: list[dict]) -> str:
    """The count table of census rows, per source kind and in all."""
    lines = []
    kinds = sorted({r.get("kind", "?") for r in rows}, key=lambda k: (k != "test.cc", k))
    for kind in kinds + ["all"]:
        rs = [r for r in rows if kind == "all" or r.get("kind") == kind]
        if kind == "all" and len(kinds) == 1:
            break
        acc = [r for r in rs if r["xla"] == "accepted"]
        rej = [r for r in rs if r["xla"] == "rejected"]
        imported = sum(r["concerto"] == "imported" for r in acc)
        errors = Counter(r.get("error_kind") for r in acc if r["concerto"] == "error")
        label = {"test.cc": "raw strings in xla/**/*_test.cc", "hlo-file": ".hlo files under xla/",
                 "all": "all"}.get(kind, kind)
        lines.append(f"## {label}")
        lines.append("| modules | accepted by XLA | imported | clear errors | panics | hangs |")
        lines.append("|---:|---:|---:|---:|---:|---:|")
        panics = sum(r["concerto"] == "panic" for r in rs)
        hangs = sum(r["concerto"] == "hang" for r in rs)
        lines.append(
            f"| {len(rs)} | {len(acc)} | {imported} | {sum(errors.values())} | {panics} | {hangs} |"
        )
        lines.append("")
        lines.append("Clear errors on modules XLA accepts, by kind: " + (", ".join(
            f"{k} {v}" for k, v in errors.most_common()) or "none") + ".")
        newer = [r for r in acc if r.get("xla_test_rejects")]
        if newer:
            lines.append(f"Of these, {len(newer)} XLA's own test expects rejected (the oracle's "
                         "parser is older): " + ", ".join(
                             f"{r['file']} ({r['xla_test_rejects']})" for r in newer) + ".")
        reasons = Counter(r.get("trip_count_reason") or trip_count_reason(r.get("concerto_error") or "")
                          for r in acc if r.get("error_kind") == "trip-count")
        if reasons:
            lines.append("Loops without a known trip count, by reason: " + ", ".join(
                f"{k} {v}" for k, v in reasons.most_common()) + ".")
        rimp = sum(r["concerto"] == "imported" for r in rej)
        rerr = sum(r["concerto"] == "error" for r in rej)
        lines.append(f"Modules XLA rejects: {len(rej)} (concerto imports {rimp}, errors on {rerr}).")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("extract", help="extract XLA's test modules from its git repository")
    e.add_argument("--xla-git", required=True)
    e.add_argument("--rev", default="main")
    e.add_argument("--out", required=True, type=Path)
    e.add_argument("--no-hlo-files", action="store_true")
    r = sub.add_parser("run", help="judge the extracted modules and print the table")
    r.add_argument("--modules", required=True, type=Path)
    r.add_argument("--import-check", required=True)
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--timeout", type=float, default=20.0,
                   help="seconds concerto may take on one module before it counts as a hang")
    r.add_argument("--xla-timeout", type=float, default=120.0,
                   help="seconds XLA's parser may take on one module (a few take 10 s)")
    r.add_argument("--results", type=Path)
    r.add_argument("--unknown-trip-count", type=int,
                   help="the trip count of every loop whose count cannot be read")
    r.add_argument("--unbounded-dim-size", type=int,
                   help="the size of every unbounded dimension `?`")
    t = sub.add_parser("table", help="print the table of a results file")
    t.add_argument("results", type=Path)
    m = sub.add_parser("sample", help="choose the checked-in sample and write its manifest")
    m.add_argument("--modules", required=True, type=Path)
    m.add_argument("--results", required=True, type=Path)
    m.add_argument("--out", required=True, type=Path)
    s = sub.add_parser("_shard")
    s.add_argument("--modules", required=True, type=Path)
    s.add_argument("--import-check", required=True)
    s.add_argument("--timeout", type=float, required=True)
    s.add_argument("--xla-timeout", type=float, required=True)
    s.add_argument("--list", required=True, type=Path)
    s.add_argument("--out", required=True, type=Path)
    s.add_argument("--flags", required=True, help="the importer's flags, a JSON list")
    a = ap.parse_args(argv)
    if a.cmd == "extract":
        n = extract(a.xla_git, a.rev, a.out, hlo_files=not a.no_hlo_files)
        print(f"{n} modules written to {a.out}")
        return 0
    if a.cmd == "_shard":
        shard(a.modules, a.import_check, a.timeout, a.list, a.out, a.xla_timeout,
              json.loads(a.flags))
        return 0
    if a.cmd == "sample":
        picked = sample(a.modules, a.results, a.out)
        feats = Counter(f for r in picked for f in r["features"])
        verdicts = Counter((r["xla"], verdict_of(r)) for r in picked)
        ops = {o for r in picked for o in r["ops"]}
        size = sum(r["size"] for r in picked)
        print(f"{len(picked)} modules ({size} bytes, {len(ops)} opcodes) written to {a.out}")
        print("features:", dict(feats))
        print("verdicts:", dict(verdicts))
        return 0
    if a.cmd == "table":
        rows = [json.loads(line) for line in open(a.results)]
        print(table(rows))
        return 0
    results = a.results or a.modules / "results.jsonl"
    rows = run(a.modules, a.import_check, a.jobs, a.timeout, results, xla_timeout=a.xla_timeout,
               flags=import_flags(a.unknown_trip_count, a.unbounded_dim_size))
    print(table(rows))
    print(f"(per-module verdicts: {results})")
    bad = sum(r["concerto"] in ("panic", "hang") for r in rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
