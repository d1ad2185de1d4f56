"""XLA's parser, the oracle of the grammar census, re-run on the checked-in sample.

``fixtures/hlo_xla_tests/MANIFEST.tsv`` records, per module of XLA's tests, whether XLA's
parser (jaxlib's ``hlo_module_from_text``) accepts it; the Rust differential test
(``extract/tests/xla_grammar.rs``) checks concerto's verdicts against the same manifest. This
test checks the XLA half: each module is parsed in a worker child process (XLA aborts the
process on some inputs), with a timeout.
"""

from __future__ import annotations

import os
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1] / "python"), str(HERE.parent)]

from concerto_tools.grammar_census import Worker, _XLA_WORKER, xla_verdict  # noqa: E402

SAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "hlo_xla_tests"


class GrammarSample(unittest.TestCase):
    def test_xla_verdicts_match_the_manifest(self):
        lines = (SAMPLE / "MANIFEST.tsv").read_text().splitlines()
        header = lines[0].split("\t")
        self.assertEqual(header[:5], ["file", "source", "index", "xla", "concerto"])
        rows = [dict(zip(header, line.split("\t"))) for line in lines[1:] if line.strip()]
        self.assertGreaterEqual(len(rows), 100)
        env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3")
        worker = Worker([sys.executable, "-c", _XLA_WORKER], ready=True, env=env)
        wrong = []
        try:
            for row in rows:
                got = xla_verdict(worker, str(SAMPLE / row["file"]), 120.0)
                if got["xla"] != row["xla"]:
                    wrong.append(f"{row['file']}: manifest {row['xla']}, XLA {got['xla']} "
                                 f"({got.get('xla_error')})")
        finally:
            worker.kill()
        self.assertEqual(wrong, [])


if __name__ == "__main__":
    unittest.main()
