"""The compiled corpus round trip (:mod:`concerto_tools.aot_corpus`): :func:`concerto_jax.compile`'s
path on every module of the compiled corpus.

On every module of the compiled corpus (``CONCERTO_XLA_GPU_CORPUS``, the last line of
``scripts/xla-gpu-corpus``; its modules carry XLA's ``serialize()`` payload): concerto's payload
reads back with concerto's entry order, its thunks in that order, the same parameters,
results, aliasing, layouts, shardings and compile options as XLA's; XLA's own module sent
through the same path gives XLA's payload but for the executable's bytes; XLA's parser and
schedule verifier accept concerto's module; ``kept`` is ``"concerto"`` exactly where the plan
is shorter and XLA's buffer assignment of it within the budget. The table (the guide's) is
printed.

Run with the interpreter of ``scripts/pyenv-xla-gpu`` and ``PYTHONPATH=python:tools`` (the test
command does); a missing corpus or plugin is a failure, never a skip.
"""

from __future__ import annotations

import json
import os
import sys
import unittest
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(ROOT, "python"), os.path.join(ROOT, "tools")]

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ["JAX_SKIP_CUDA_CONSTRAINTS_CHECK"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from concerto_tools import aot_corpus  # noqa: E402


def corpus() -> str:
    d = os.environ.get("CONCERTO_XLA_GPU_CORPUS")
    if not d or not os.path.exists(os.path.join(d, "corpus.json")):
        raise RuntimeError("CONCERTO_XLA_GPU_CORPUS does not name a finished corpus: set it to the "
                           "last line of scripts/xla-gpu-corpus")  # fmt: skip
    return d


class Corpus(unittest.TestCase):
    rows: list[dict] = []

    @classmethod
    def setUpClass(cls):
        d = corpus()
        with open(os.path.join(d, "corpus.json")) as f:
            names = json.load(f)["modules"]
        with ThreadPoolExecutor(2) as pool:
            cls.rows = list(pool.map(lambda n: aot_corpus.corpus_row(d, n), names))
        print("\n" + aot_corpus.corpus_table(cls.rows))
        for r in cls.rows:
            for w in r["warnings"]:
                print(f"{r['name']}: kept XLA's executable: {w}")

    def test_every_module_is_in_the_table(self):
        self.assertEqual(len(self.rows), 14)

    def test_every_payload_checks(self):
        for r in self.rows:
            with self.subTest(module=r["name"]):
                self.assertTrue(r["xla_verifies"], "XLA's parser or verifier rejects the plan")
                if r["kept"] == "concerto":
                    self.assertEqual(r["problems"], [])
                    # What runs has the order concerto optimize --emit-hlo wrote.
                    self.assertIsNone(r["order_problem"])
                    self.assertGreater(r["thunks_compared"], 100)
                    self.assertNotEqual(r["payload_bytes"], 0)
                # The only reasons to keep XLA's: not shorter, or over the budget. A failed
                # check or compile would be a bug.
                for w in r["warnings"]:
                    self.assertTrue("not shorter" in w or "over the budget" in w, w)

    def test_kept_is_concerto_exactly_where_it_is_shorter_within_the_budget(self):
        for r in self.rows:
            with self.subTest(module=r["name"]):
                shorter = r["concerto_ns"] < r["xla_ns"]
                within = r["concerto_peak_bytes"] is not None and \
                    r["concerto_peak_bytes"] <= r["budget_bytes"]
                self.assertEqual(r["kept"] == "concerto", shorter and within, r)
                if r["kept"] == "concerto":
                    self.assertLessEqual(r["concerto_peak_bytes"], r["budget_bytes"])
        self.assertTrue(any(r["kept"] == "concerto" for r in self.rows))

    def test_the_scanned_steps_stay_within_the_budget(self):
        scanned = [r for r in self.rows if "_scan_" in r["name"]]
        self.assertEqual(len(scanned), 2)
        for r in scanned:
            if r["kept"] == "concerto":
                self.assertLessEqual(r["concerto_peak_bytes"], r["budget_bytes"])


if __name__ == "__main__":
    unittest.main()
