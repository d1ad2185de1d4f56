"""Steering XLA's scheduler with concerto's plan (:mod:`concerto_jax.steer`) deviceless for 8 H100s.

Run with the interpreter ``scripts/pyenv-xla-gpu`` prints (jax with the CUDA 12 plugin) and a
built concerto binary (:func:`concerto.binary.find`: ``CONCERTO_BIN``, the workspace's cargo
target directory, ``PATH``)::

    py=$(./scripts/pyenv-xla-gpu | tail -n1)
    PYTHONPATH=python $py -m unittest discover -s python/tests_xla_gpu

``SteerTest`` checks that XLA's strict PGLE compile rejects a profile that misses a name (what
makes the steered compiles a check); without the CUDA plugin (``jax_plugins.xla_cuda12``) or
the binary it fails, naming what is missing. ``OverlapTest`` checks the overlap measure and
needs neither. :func:`concerto_jax.steer.optimize` end to end on one step is
tools/tests_xla_gpu/test_steer_corpus.py (through the command of
:mod:`concerto_tools.steer_corpus`).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = os.path.dirname(HERE)
sys.path.insert(0, PYTHON)

from concerto_jax.steer import concerto_bin, overlap_match, overlaps  # noqa: E402


def cuda_plugin() -> bool:
    try:
        return importlib.util.find_spec("jax_plugins.xla_cuda12") is not None
    except (ImportError, ValueError):
        return False


class OverlapTest(unittest.TestCase):
    def test_overlaps_and_match(self):
        plan_tl = [("ar", "comm.intra-node", 10.0, 20.0), ("a", "compute", 0.0, 10.0),
                   ("b", "compute", 10.0, 15.0), ("c", "compute", 15.0, 25.0),
                   ("ag", "comm.intra-node", 30.0, 31.0)]  # fmt: skip
        plan = overlaps(plan_tl)
        self.assertEqual(plan, {"ar": frozenset({"b", "c"}), "ag": frozenset()})
        other = {"ar": frozenset({"b"}), "ag": frozenset()}
        m = overlap_match(plan, other)
        self.assertEqual(m["exact"], 0.5)
        self.assertAlmostEqual(m["jaccard"], 0.75)
        self.assertEqual(m["kernels_kept"], 0.5)
        self.assertEqual(overlap_match(plan, plan)["exact"], 1.0)


class SteerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not cuda_plugin():
            raise RuntimeError("the CUDA plugin (jax_plugins.xla_cuda12) is not importable: "
                               "run with the interpreter of scripts/pyenv-xla-gpu")
        concerto_bin()  # an error listing every place tried when there is none

    def test_profile_missing_a_name_is_an_error(self):
        """What makes the strict compile a check: XLA rejects a profile that misses a name."""
        code = r"""
import os, sys
from concerto_jax import steer
steer.setup_env()
import jax, jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import numpy as np
devs = steer.h100_devices()
mesh = Mesh(np.array(devs), ("x",))
sh = NamedSharding(mesh, P("x", None))
f = jax.jit(lambda a, b: jnp.tanh(a @ b.T).sum(0), in_shardings=(sh, sh))
args = [jax.ShapeDtypeStruct((1024, 512), jnp.bfloat16, sharding=sh)] * 2
lowered = f.trace(*args).lower()
text = lowered.compile().as_text()
path = os.path.join(sys.argv[1], "m.gpu.hlo")
open(path, "w").write(text)
import subprocess
prof = os.path.join(sys.argv[1], "p.pbtxt")
subprocess.run([steer.concerto_bin(), "optimize", path, "--json", "--emit-pgle", prof],
               check=True, capture_output=True)
lines = open(prof).read().splitlines()
assert any(l.startswith("latencies") for l in lines), lines
opts = {**steer.STRICT, steer.PGLE_KEY: prof}
lowered.compile(opts)  # every name found
bad = os.path.join(sys.argv[1], "bad.pbtxt")
open(bad, "w").write("\n".join(lines[1:]) + "\n")  # the first kernel's cost left out
try:
    lowered.compile({**steer.STRICT, steer.PGLE_KEY: bad})
except Exception as e:
    print("REJECTED", str(e)[:200])
"""
        with tempfile.TemporaryDirectory() as out:
            env = dict(os.environ, PYTHONPATH=PYTHON)
            env.pop("XLA_FLAGS", None)
            r = subprocess.run([sys.executable, "-c", code, out], capture_output=True, text=True,
                               env=env, timeout=600)  # fmt: skip
            self.assertEqual(r.returncode, 0, r.stderr[-4000:])
            self.assertIn("REJECTED", r.stdout)
            self.assertIn("missing instructions", r.stdout)


if __name__ == "__main__":
    unittest.main()
