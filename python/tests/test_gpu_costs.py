"""Tests of the GPU measurement helpers that run without a GPU (issue 33): the profiler-trace
parser of ``concerto_jax.gpu_measure`` and the module parser and markdown writer of
``concerto_jax.gpu_costs``. Run: ``python3 -m unittest python/tests/test_gpu_costs.py`` with
``PYTHONPATH=python`` (no jax needed)."""

from __future__ import annotations

import gzip
import json
import os
import tempfile
import unittest

from concerto_jax.gpu_costs import BEGIN, END, hlo_class, parse_entry, write_doc
from concerto_jax.gpu_measure import parse_trace

MODULE = """HloModule jit_step, is_scheduled=true

%fused_computation (p: bf16[8,64]) -> bf16[8,64] {
  %p = bf16[8,64]{1,0} parameter(0)
  ROOT %n = bf16[8,64]{1,0} negate(%p)
}

ENTRY %main.1 (a: bf16[4,8,32], b: bf16[4,32,64]) -> bf16[4,8,64] {
  %a = bf16[4,8,32]{2,1,0} parameter(0)
  %b = bf16[4,32,64]{2,1,0} parameter(1)
  %custom-call.3 = (bf16[4,8,64]{2,1,0}, s8[1024]{0}) custom-call(%a, %b), custom_call_target="__cublas$lt$matmul", backend_config={"gemm_backend_config":{"dot_dimension_numbers":{"lhs_batch_dimensions":["0"],"lhs_contracting_dimensions":["2"],"rhs_batch_dimensions":["0"],"rhs_contracting_dimensions":["1"]}}}
  %loop_negate_fusion = bf16[4,8,64]{2,1,0} fusion(%custom-call.3#0), kind=kLoop, calls=%fused_computation
  ROOT %copy.1 = bf16[4,8,64]{2,1,0} copy(%loop_negate_fusion)
}
"""


class ParseEntry(unittest.TestCase):
    def test_gemm_shape_from_operands_and_dimension_numbers(self):
        instrs = parse_entry(MODULE)
        cc = instrs["custom-call.3"]
        self.assertEqual(cc["target"], "__cublas$lt$matmul")
        self.assertEqual(cc["gemm"], {"b": 4, "m": 8, "n": 64, "k": 32})
        self.assertEqual(instrs["loop_negate_fusion"]["fusion_kind"], "kLoop")
        self.assertEqual(instrs["loop_negate_fusion"]["operands"], ["custom-call.3"])
        self.assertEqual(instrs["copy.1"]["opcode"], "copy")

    def test_classes(self):
        instrs = parse_entry(MODULE)
        self.assertIn("batched", hlo_class("custom-call.3", instrs["custom-call.3"],
                                           instrs["custom-call.3"]["gemm"]))  # fmt: skip
        self.assertEqual(
            hlo_class("loop_negate_fusion", instrs["loop_negate_fusion"], None),
            "loop fusions (elementwise)",
        )
        self.assertEqual(hlo_class("copy.1", instrs["copy.1"], None), "other (copy)")


class Doc(unittest.TestCase):
    def test_markers_replaced_and_appended(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "f.md")
            with open(p, "w") as f:
                f.write(f"# T\n\nbefore\n{BEGIN}\nold\n{END}\nafter\n")
            write_doc(p, "new\n")
            with open(p) as f:
                text = f.read()
            self.assertIn(f"{BEGIN}\nnew\n{END}\nafter", text)
            self.assertNotIn("old", text)
            q = os.path.join(d, "g.md")
            write_doc(q, "x\n")
            with open(q) as f:
                self.assertEqual(f.read(), f"{BEGIN}\nx\n{END}\n")


class Trace(unittest.TestCase):
    def test_kernels_summed_per_instruction_and_step(self):
        ev = [
            {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/device:GPU:0"}},
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": 7, "args": {"name": "Stream #7"}},
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": 8, "args": {"name": "XLA Ops"}},
        ]
        for step in range(3):
            t0 = 1000.0 * step
            for i, (op, dur) in enumerate([("custom-call.3", 5.0), ("custom-call.3", 2.0 + step),
                                           ("fusion.1", 1.0)]):  # fmt: skip
                args = {"hlo_op": op, "hlo_module": "jit_step"}
                ev.append({"ph": "X", "pid": 1, "tid": 7, "ts": t0 + 10 * i, "dur": dur,
                           "name": f"k{i}", "args": args})  # fmt: skip
                # The derived line repeats the op: not counted.
                ev.append({"ph": "X", "pid": 1, "tid": 8, "ts": t0 + 10 * i, "dur": dur,
                           "name": op, "args": args})  # fmt: skip
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "t.trace.json.gz")
            with gzip.open(p, "wt") as f:
                json.dump({"traceEvents": ev}, f)
            r = parse_trace(p, steps=3)
        self.assertEqual(r["kernels_of_step"], 9)
        cc = r["ops"]["custom-call.3"]
        self.assertEqual(cc["per_step_ns"], [7000, 8000, 9000])
        self.assertEqual(cc["median_ns"], 8000)
        self.assertEqual(cc["kernels_per_step"], 2)
        self.assertEqual(r["ops"]["fusion.1"]["median_ns"], 1000)
        self.assertEqual(r["step_kernel_ns"], [8000, 9000, 10000])


if __name__ == "__main__":
    unittest.main()
