"""XLA's GPU backend compiles a rescheduled H100 module deviceless, in the given order.

Run with the venv that has the CUDA plugin::

    py=$(./scripts/pyenv-xla-gpu | tail -n1)
    PYTHONPATH=python "$py" -m unittest discover -s python/tests_xla_gpu

It needs that venv (no GPU): without the CUDA plugin or the H100 spec it fails, naming what
is missing.

The module is ``fixtures/hlo_gpu_export/gpt_mix2x4_l2_cublas.hlo`` (XLA's own schedule) with a
schedule that differs from XLA's, made by editing the text as concerto's exporter would: two
independent kernels swapped; an all-reduce that XLA had made synchronous (``is_sync=true``,
nothing between start and done) stretched over an independent kernel moved between its start
and done, and the pair made async (``is_sync=false``); and an async all-reduce start hoisted right
after its operand.
"""

from __future__ import annotations

import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

from concerto_jax import pjrt_gpu  # noqa: E402

FIXTURE = os.path.join(ROOT, "fixtures", "hlo_gpu_export", "gpt_mix2x4_l2_cublas.hlo")

_LINE = re.compile(r"^\s*(?:ROOT\s+)?%([\w.\-]+)\s*=\s*")
_NOP = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}


def _missing() -> str | None:
    try:
        pjrt_gpu.plugin_path()
    except ImportError as e:
        return f"the CUDA plugin is not importable ({e}): run with scripts/pyenv-xla-gpu's python"
    try:
        pjrt_gpu.spec_text()
    except FileNotFoundError as e:
        return str(e)
    return None


def entry_bounds(lines: list[str]) -> tuple[int, int]:
    start = next(k for k, ln in enumerate(lines) if ln.startswith("ENTRY "))
    end = next(k for k in range(start, len(lines)) if lines[k].startswith("}"))
    return start + 1, end


def parse_entry(lines: list[str], lo: int, hi: int) -> list[tuple[str, str, list[str]]]:
    """``(name, opcode, operands)`` of the entry's lines ``lo..hi``."""
    out = []
    for ln in lines[lo:hi]:
        m = _LINE.match(ln)
        assert m, ln
        name = m.group(1)
        opcode = pjrt_gpu._opcode(ln[m.end() :])
        args = ln[m.end() :].split(opcode + "(", 1)[1]
        depth, k = 1, 0
        while depth:
            depth += {"(": 1, ")": -1}.get(args[k], 0)
            k += 1
        operands = re.findall(r"%([\w.\-]+)", args[: k - 1])
        out.append((name, opcode, operands))
    return out


def reschedule(text: str) -> tuple[str, dict]:
    """The module with two independent kernels swapped and a sync all-reduce start hoisted."""
    lines = text.split("\n")
    lo, hi = entry_bounds(lines)
    body = lines[lo:hi]
    instrs = parse_entry(lines, lo, hi)
    pos = {n: k for k, (n, _, _) in enumerate(instrs)}
    def kernels() -> list[int]:
        return [k for k, (_, op, _) in enumerate(instrs) if op not in _NOP and not op.endswith("-done") and not op.endswith("-start")]

    work = kernels()
    # 1. Swap: the first pair of consecutive kernels a < b where every operand of b is defined
    # before a: b moves right before a.
    swapped = None
    for a, b in zip(work, work[1:]):
        if all(pos[o] < a for o in instrs[b][2]):
            body.insert(a, body.pop(b))
            instrs.insert(a, instrs.pop(b))
            swapped = (instrs[a][0], instrs[a + 1][0])
            break
    assert swapped, "no two independent consecutive kernels"
    pos = {n: k for k, (n, _, _) in enumerate(instrs)}
    work = kernels()
    # 2. Stretch: a sync all-reduce pair (XLA's is_sync=true: start and done adjacent) gets the
    # first later kernel that reads nothing defined after the start moved between its start
    # and done, and becomes async.
    best = None
    for k, (name, op, operands) in enumerate(instrs):
        if op == "all-reduce-start" and '"is_sync":true' in body[k]:
            later = [j for j in work if j > k + 1 and all(pos[o] < k for o in instrs[j][2])]
            if later:
                best = (k, later[0])
                break
    assert best, "no sync all-reduce pair with an independent kernel after it"
    k, j = best
    start, sunk_over = instrs[k][0], 1
    body.insert(k + 1, body.pop(j))
    instrs.insert(k + 1, instrs.pop(j))
    body[k] = body[k].replace('"is_sync":true', '"is_sync":false', 1)
    pos = {n: j for j, (n, _, _) in enumerate(instrs)}
    # 3. Hoist: the async all-reduce start with the most kernels between its operand and it
    # goes right after its operand.
    best = None
    for k, (name, op, operands) in enumerate(instrs):
        if op == "all-reduce-start" and name != start:
            at = max(pos[o] for o in operands) + 1
            kernels = sum(1 for j in range(at, k) if instrs[j][1] not in _NOP)
            if kernels and (best is None or kernels > best[2]):
                best = (k, at, kernels)
    hoisted = None
    if best:
        k, at, _ = best
        body.insert(at, body.pop(k))
        instrs.insert(at, instrs.pop(k))
        hoisted = instrs[at][0]
    lines[lo:hi] = body
    order = [n for n, _, _ in instrs]
    return "\n".join(lines), {"swapped": swapped, "stretched": start, "over": sunk_over, "hoisted": hoisted, "order": order}


class CompileScheduledTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        missing = _missing()
        if missing:
            raise RuntimeError(f"this test needs XLA's GPU compiler: {missing}")
        with open(FIXTURE) as f:
            cls.text = f.read()
        cls.original = pjrt_gpu.compile_scheduled(cls.text)
        cls.edited, cls.edit = reschedule(cls.text)
        cls.result = pjrt_gpu.compile_scheduled(cls.edited, expect_order=cls.edit["order"])

    def test_xla_s_own_order_compiles_in_order(self):
        r = self.original
        self.assertIsNone(r["error"])
        self.assertTrue(r["order_equal"], r["first_difference"])
        self.assertGreater(r["compared"], 100)

    def test_a_rescheduled_module_compiles_in_the_given_order(self):
        r = self.result
        self.assertIsNone(r["error"])
        self.assertTrue(r["order_equal"], r["first_difference"])
        # The stretched pair's done now has a thunk of its own (a sync all-reduce has one).
        self.assertEqual(r["compared"], self.original["compared"] + 1)
        thunks = r["thunks"]
        a, b = self.edit["swapped"]
        self.assertLess(thunks.index(a), thunks.index(b))
        self.assertGreater(self.original["thunks"].index(a), self.original["thunks"].index(b))
        # The stretched pair spans kernels from start to done; made async it gets its own
        # stream (an async start and done thunk instead of one sync all-reduce thunk).
        start = self.edit["stretched"]
        self.assertGreater(self.edit["over"], 0)
        self.assertEqual(r["thunk_kinds"].get("kAsyncStart", 0), self.original["thunk_kinds"].get("kAsyncStart", 0) + 1)
        self.assertIn(start, thunks)
        self.assertIn("is_sync\":false", r["optimized_hlo"].split(f"%{start} = ", 1)[1].split("\n", 1)[0])

    def test_xla_s_buffer_assignment_peak_is_reported(self):
        for r in (self.original, self.result):
            self.assertGreater(r["peak_bytes"], r["temp_bytes"])
            self.assertGreater(r["temp_bytes"], 0)
        print(
            f"\n{os.path.basename(FIXTURE)}: XLA's buffer assignment: XLA's order "
            f"{self.original['peak_bytes']} B (temp {self.original['temp_bytes']} B), "
            f"rescheduled {self.result['peak_bytes']} B (temp {self.result['temp_bytes']} B); "
            f"compile {self.original['compile_s']} s / {self.result['compile_s']} s",
            file=sys.stderr,
        )


if __name__ == "__main__":
    unittest.main()
