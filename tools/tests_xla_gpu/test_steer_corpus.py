"""Steering XLA's scheduler with concerto's plan, end to end on one small step compiled
deviceless for 8 H100s: :func:`concerto_jax.steer.optimize` through the command of
:mod:`concerto_tools.steer_corpus`.

Run with the interpreter ``scripts/pyenv-xla-gpu`` prints (jax with the CUDA 12 plugin) and a
built concerto binary (:func:`concerto.binary.find`: ``CONCERTO_BIN``, the workspace's cargo
target directory, ``PATH``)::

    py=$(./scripts/pyenv-xla-gpu | tail -n1)
    PYTHONPATH=python:tools $py -m unittest discover -s tools/tests_xla_gpu

It compiles a 1-layer tensor-parallel GPT step three times (XLA's default, with concerto's costs
as a PGLE profile, with the steering profile; about 30 s on 2 cores); without the CUDA plugin
(``jax_plugins.xla_cuda12``) or the binary it fails, naming what is missing.
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
PYTHON = os.path.join(os.path.dirname(TOOLS), "python")
sys.path[:0] = [PYTHON, TOOLS]

from concerto_jax.steer import concerto_bin  # noqa: E402


def cuda_plugin() -> bool:
    try:
        return importlib.util.find_spec("jax_plugins.xla_cuda12") is not None
    except (ImportError, ValueError):
        return False


class SteerCorpusTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not cuda_plugin():
            raise RuntimeError("the CUDA plugin (jax_plugins.xla_cuda12) is not importable: "
                               "run with the interpreter of scripts/pyenv-xla-gpu")
        concerto_bin()  # an error listing every place tried when there is none

    def test_one_step_end_to_end(self):
        """optimize on one small corpus step, through the tool's command in a child process (XLA
        reads its flags once)."""
        with tempfile.TemporaryDirectory() as out:
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([PYTHON, TOOLS]))
            env.pop("XLA_FLAGS", None)
            cmd = [sys.executable, "-m", "concerto_tools.steer_corpus", "--out", out, "--parallel", "tp",
                   "--gemm", "cublas", "--layers", "1", "--d-model", "256", "--heads", "8",
                   "--seq", "128", "--batch", "8", "--vocab", "1024",
                   "--time-limit", "3"]  # fmt: skip
            r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
            self.assertEqual(r.returncode, 0, r.stderr[-4000:])
            print(r.stdout)
            name = "gpt_tp8_l1_cublas"
            with open(os.path.join(out, f"{name}.json")) as f:
                meta = json.load(f)
            self.assertGreater(meta["collectives"], 0)
            # The same simulator and costs for every row; concerto's plan is never longer than
            # XLA's schedules, and no plan beats the bound.
            for k in ("xla_ns", "xla_pgle_ns", "xla_steered_ns"):
                self.assertLessEqual(meta["concerto_ns"], meta[k], k)
            self.assertLessEqual(meta["bound_ns"], meta["concerto_ns"])
            # The profiles name the compiled module's instructions: XLA compiled with them
            # under PGLE_STRICTNESS_LEVEL_ERROR (a missed name fails the compile).
            for key in ("costs", "steer"):
                with open(meta["files"][key]) as f:
                    text = f.read()
                self.assertIn("costs { name: ", text)
                self.assertIn("latencies { source: ", text)
            for key in ("pgle", "steered"):
                with open(meta["files"][key]) as f:
                    head = f.readline()
                self.assertTrue(head.startswith("HloModule jit_step, is_scheduled=true"), head)
            opts = meta["compiler_options"]
            self.assertTrue(os.path.exists(opts["xla_gpu_pgle_profile_file_or_directory_path"]))
            self.assertIn("overlaps as the plan", r.stdout)


if __name__ == "__main__":
    unittest.main()
