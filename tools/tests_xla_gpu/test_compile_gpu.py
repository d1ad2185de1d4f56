"""Train steps compiled by XLA's CUDA compiler for 8 H100s, deviceless
(:mod:`concerto_tools.compile_gpu`), and the readers of XLA's dump it uses.

Run with the interpreter ``scripts/pyenv-xla-gpu`` prints (jax with the CUDA 12 plugin)::

    py=$(./scripts/pyenv-xla-gpu | tail -n1)
    PYTHONPATH=python:tools $py -m unittest discover -s tools/tests_xla_gpu

``CompileGpuTest`` compiles three small steps (about 30 s on 2 cores); it needs that venv (no
GPU) and fails, naming it, where the CUDA plugin (``jax_plugins.xla_cuda12``) is not
importable. ``DumpReadersTest`` reads the checked-in compiled modules of ``fixtures/hlo_gpu``
and needs no jax at all.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(HERE)
ROOT = os.path.dirname(TOOLS)
PYTHON = os.path.join(ROOT, "python")
FIXTURES = os.path.join(ROOT, "fixtures", "hlo_gpu")
sys.path[:0] = [PYTHON, TOOLS]

from concerto_tools.compile_gpu import (  # noqa: E402
    allocation_bytes,
    gpu_collectives,
    module_stats,
    xla_peak_bytes,
)


def cuda_plugin() -> bool:
    """Whether jax's CUDA 12 plugin (the GPU compiler) is importable here."""
    try:
        return importlib.util.find_spec("jax_plugins.xla_cuda12") is not None
    except ImportError:
        return False


def read(path: str) -> str:
    with open(path) as f:
        return f.read()


#: Small steps: 2 layers, 256 wide, 128 tokens.
SMALL = ["--layers", "2", "--d-model", "256", "--heads", "8", "--seq", "128", "--batch", "16",
         "--vocab", "1024"]  # fmt: skip
STEPS = {
    "gpt_mix2x4_l2_triton": ["--parallel", "mix", "--gemm", "triton", *SMALL],
    "gpt_mix2x4_l2_cublas": ["--parallel", "mix", "--gemm", "cublas", *SMALL],
    "moe_ep8_l2_triton": ["--parallel", "moe", "--experts", "8", *SMALL],
}

_TMP: tempfile.TemporaryDirectory | None = None
OUT = ""


class CompileGpuTest(unittest.TestCase):
    """Compiles :data:`STEPS` once (each in its own process, as the corpus does)."""

    @classmethod
    def setUpClass(cls):
        if not cuda_plugin():
            raise RuntimeError("jax's CUDA plugin (jax_plugins.xla_cuda12) is not importable: "
                               "run with the interpreter of scripts/pyenv-xla-gpu")
        global _TMP, OUT
        _TMP = tempfile.TemporaryDirectory(prefix="concerto-compile-gpu-")
        OUT = _TMP.name
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([PYTHON, TOOLS])
        env.pop("XLA_FLAGS", None)
        procs = {
            name: subprocess.Popen(
                [sys.executable, "-m", "concerto_tools.compile_gpu", "--out", OUT, *argv],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
            )  # fmt: skip
            for name, argv in STEPS.items()
        }
        cls.stdout = {}
        for name, p in procs.items():
            out, err = p.communicate(timeout=600)
            if p.returncode:
                raise RuntimeError(f"compile_gpu {name} failed ({p.returncode}):\n{err[-3000:]}")
            cls.stdout[name] = json.loads(out.strip().splitlines()[-1])

    @classmethod
    def tearDownClass(cls):
        if _TMP is not None:
            _TMP.cleanup()

    def meta(self, name: str) -> dict:
        return json.loads(read(os.path.join(OUT, f"{name}.json")))

    def test_files_and_a_scheduled_module(self):
        for name in STEPS:
            for suffix in (".gpu.hlo", ".memory-usage-report.txt", ".buffer-assignment.txt",
                           ".thunk_sequence.txt", ".json"):  # fmt: skip
                self.assertTrue(os.path.isfile(os.path.join(OUT, name + suffix)), name + suffix)
            head = read(os.path.join(OUT, f"{name}.gpu.hlo")).split("\n", 1)[0]
            self.assertTrue(head.startswith("HloModule jit_step,"), head[:80])
            self.assertIn("is_scheduled=true", head)
            meta = self.meta(name)
            self.assertTrue(meta["scheduled"])
            self.assertEqual(meta["name"], name)
            self.assertEqual(self.stdout[name]["name"], name)
            self.assertEqual(meta["versions"]["jax-cuda12-plugin"], meta["versions"]["jaxlib"])
            self.assertEqual(meta["dtype"], "bfloat16")
            self.assertGreater(meta["thunks"], 0)

    def test_async_collective_pairs(self):
        for name in STEPS:
            coll = self.meta(name)["collectives"]
            starts = {k[: -len("-start")]: n for k, n in coll.items() if k.endswith("-start")}
            self.assertTrue(starts, f"{name}: no async collective: {coll}")
            for op, n in starts.items():
                self.assertEqual(coll.get(f"{op}-done"), n, f"{name}: {coll}")
            # Every collective is async on H100: no synchronous form is left.
            self.assertFalse([k for k in coll if not k.endswith(("-start", "-done"))], coll)
        self.assertGreater(self.meta("gpt_mix2x4_l2_triton")["collectives"]["all-reduce-start"], 0)

    def test_peak_matches_the_report(self):
        for name in STEPS:
            meta = self.meta(name)
            peak = meta["xla_peak_bytes"]
            self.assertIsInstance(peak, int)
            self.assertGreater(peak, 0)
            report = read(os.path.join(OUT, f"{name}.memory-usage-report.txt"))
            self.assertEqual(peak, xla_peak_bytes(report))
            self.assertIn(f"Total bytes: {peak} ", report)
            # The same figure two more ways: the sum of the buffer assignment's allocations,
            # and jax's memory_analysis plus the thread-local scalars.
            ba = read(os.path.join(OUT, f"{name}.buffer-assignment.txt"))
            self.assertEqual(allocation_bytes(ba)["total"], peak)
            ma = meta["memory_analysis"]
            thread_local = meta["allocation_bytes"].get("thread_local", 0)
            self.assertEqual(ma["argument_output_temp_minus_alias"] + thread_local, peak)
            self.assertGreater(meta["allocation_bytes"]["temp"], 0)

    def test_moe_has_all_to_all(self):
        coll = self.meta("moe_ep8_l2_triton")["collectives"]
        # Two all-to-alls per MoE layer forward, two in its backward; one MoE layer of two.
        self.assertEqual(coll.get("all-to-all-start"), 4, coll)
        self.assertEqual(coll.get("all-to-all-done"), 4, coll)
        hlo = read(os.path.join(OUT, "moe_ep8_l2_triton.gpu.hlo"))
        self.assertIn(" async-start(", hlo)
        self.assertIn(" all-to-all(", hlo)

    def test_gemm_variants(self):
        cublas = self.meta("gpt_mix2x4_l2_cublas")
        triton = self.meta("gpt_mix2x4_l2_triton")
        self.assertIn("--xla_gpu_enable_triton_gemm=false", cublas["xla_flags"])
        self.assertGreater(cublas["custom_calls"].get("__cublas$lt$matmul", 0), 0, cublas)
        self.assertIn('custom_call_target="__cublas$lt$matmul"',
                      read(os.path.join(OUT, "gpt_mix2x4_l2_cublas.gpu.hlo")))  # fmt: skip
        self.assertGreater(triton["gemm_fusions"], 0, triton["fusion_kinds"])
        self.assertEqual(triton["gemm_custom_calls"], 0, triton["custom_calls"])
        # The same step: the gemms moved from fusions to custom-calls.
        self.assertEqual(cublas["collectives"], triton["collectives"])


class DumpReadersTest(unittest.TestCase):
    """The readers on the checked-in modules (no jax needed)."""

    def fixtures(self) -> list[str]:
        names = sorted(f[: -len(".json")] for f in os.listdir(FIXTURES) if f.endswith(".json"))
        self.assertTrue(names, FIXTURES)
        return names

    def test_fixture_metas_match_their_files(self):
        for name in self.fixtures():
            meta = json.loads(read(os.path.join(FIXTURES, f"{name}.json")))
            hlo = read(os.path.join(FIXTURES, f"{name}.gpu.hlo"))
            self.assertLess(len(hlo), 1 << 20, name)
            stats = module_stats(hlo)
            for key in ("entry_instructions", "fusions", "fusion_kinds", "custom_calls",
                        "collectives"):  # fmt: skip
                self.assertEqual(stats[key], meta[key], f"{name}: {key}")
            report = read(os.path.join(FIXTURES, f"{name}.memory-usage-report.txt"))
            self.assertEqual(xla_peak_bytes(report), meta["xla_peak_bytes"], name)
            ba = read(os.path.join(FIXTURES, f"{name}.buffer-assignment.txt"))
            self.assertEqual(allocation_bytes(ba)["total"], meta["xla_peak_bytes"], name)
            self.assertIn("is_scheduled=true", hlo.split("\n", 1)[0])

    def test_fixtures_cover_the_collective_forms(self):
        seen = set()
        for name in self.fixtures():
            seen.update(json.loads(read(os.path.join(FIXTURES, f"{name}.json")))["collectives"])
        for want in ("all-reduce-start", "all-gather-start", "reduce-scatter-start",
                     "all-to-all-start"):  # fmt: skip
            self.assertIn(want, seen)

    def test_async_wrapped_collectives_count_under_their_opcode(self):
        hlo = """HloModule m, is_scheduled=true

%wrapped_rs (p: f32[8]) -> f32[1] {
  %p = f32[8]{0} parameter(0)
  ROOT %rs = f32[1]{0} reduce-scatter(%p), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}, to_apply=%add
}

ENTRY %main (x: f32[8]) -> f32[1] {
  %x = f32[8]{0} parameter(0)
  %ars = f32[8]{0} all-reduce-start(%x), channel_id=2, to_apply=%add
  %ard = f32[8]{0} all-reduce-done(%ars)
  %s = ((f32[8]{0}), f32[1]{0}) async-start(%ard), calls=%wrapped_rs
  ROOT %d = f32[1]{0} async-done(%s)
}
"""
        self.assertEqual(
            gpu_collectives(hlo),
            {"all-reduce-done": 1, "all-reduce-start": 1, "reduce-scatter-done": 1,
             "reduce-scatter-start": 1},
        )  # fmt: skip

    def test_peak_is_the_default_memory_space_total(self):
        report = (
            "Memory Space: default (color=0)\nTotal bytes: 1130514 (1.08MiB)\n"
            "  cumulative_size;       size;       offset; used_by_n_values; shapes_list\n\n"
            "Memory Space: host (color=5)\nTotal bytes: 77 (77B)\n"
        )
        self.assertEqual(xla_peak_bytes(report), 1130514)
        with self.assertRaises(ValueError):
            xla_peak_bytes("Memory Space: host (color=5)\nTotal bytes: 77 (77B)\n")


if __name__ == "__main__":
    unittest.main()
