"""scripts/docs-outputs: what it masks, how it cuts, and that --check names the page and line
of an output that changed (the guide's staleness check, which the test command runs)."""

import importlib.machinery
import importlib.util
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "docs-outputs"


def load():
    """The script as a module (it has no .py suffix)."""
    loader = importlib.machinery.SourceFileLoader("docs_outputs", str(SCRIPT))
    spec = importlib.util.spec_from_loader("docs_outputs", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


D = load()


class Masking(unittest.TestCase):
    def test_the_clock_is_masked_and_nothing_else(self):
        lines = [
            "time         2.51 s (import 0.00, windows 2.35)",
            "makespan     11.574 ms (+0.4% above the lower bound 11.484 ms)",
            '{"makespan":12,"time_s":0.000112797,"median_time_s":0.17}',
            "config   ops  concerto_ms  time_s",
            "-------  ---  -----------  ------",
            "gpt-tp8  254       11.574     3.4",
            "",
            "took 0.93 s in all",
        ]
        m = D.masked(lines)
        self.assertEqual(m[0], "time <t>")
        self.assertEqual(m[1], lines[1].replace("     ", " "))  # makespans are never masked
        self.assertEqual(m[2], '{"makespan":12,"time_s":<t>,"median_time_s":<t>}')
        self.assertEqual(m[5], "gpt-tp8 254 11.574 <t>")
        self.assertEqual(m[7], "took <t> s in all")

    def test_a_changed_makespan_is_a_difference(self):
        a = ["gpt-tp8  254  11.574", "time         2.51 s"]
        b = ["gpt-tp8  254  11.575", "time         9.99 s"]
        self.assertNotEqual(D.masked(a), D.masked(b))
        self.assertEqual(D.masked(a[1:]), D.masked(b[1:]))


class Elision(unittest.TestCase):
    def test_head_middle_and_tail(self):
        got = ["graph g", "bound 1", "scheduler  ms", "----  --", "a  1", "b  2", "kept S", "time 1 s"]
        self.assertEqual(D.elided(["graph g", "..."], got), ["graph g", "..."])
        self.assertEqual(D.elided(["...", "time 0 s"], got), ["...", "time 1 s"])
        shown = ["...", "scheduler  ms", "----  --", "x  9", "y  9", "..."]
        self.assertEqual(D.elided(shown, got), ["...", "scheduler  ms", "----  --", "a  1", "b  2", "..."])
        self.assertEqual(D.elided(["a", "b"], got), got)


class Check(unittest.TestCase):
    def run_check(self, shown):
        """--check on a one-block page whose command prints two lines; (status, stderr)."""
        with tempfile.TemporaryDirectory() as tmp:
            page = Path(tmp) / "page.md"
            page.write_text("# A page\n\n<!-- docs-outputs: check -->\n```console\n"
                            "$ printf 'makespan 11.574 ms\\ntime 0.5 s\\n'\n" + shown + "```\n")
            r = subprocess.run([sys.executable, str(SCRIPT), "--check", "--page", str(page)],
                               capture_output=True, text=True, timeout=120)
            return r.returncode, r.stderr, str(page)

    def test_the_same_output_passes(self):
        status, err, _ = self.run_check("makespan 11.574 ms\ntime 0.7 s\n")
        self.assertEqual(status, 0, err)

    def test_a_changed_figure_fails_and_names_the_page_and_line(self):
        status, err, page = self.run_check("makespan 11.500 ms\ntime 0.5 s\n")
        self.assertEqual(status, 1)
        self.assertIn(f"{page}:5: `$ printf", err)
        self.assertIn("-makespan 11.500 ms", err)
        self.assertIn("+makespan 11.574 ms", err)


class Session(unittest.TestCase):
    def test_a_python_session_prints_as_the_interpreter_does(self):
        with tempfile.TemporaryDirectory() as tmp:
            page = Path(tmp) / "page.md"
            page.write_text("<!-- docs-outputs: check python=jax -->\n```text\n"
                            ">>> x = [1, 2]\n>>> x + [3]\n[1, 2, 3]\n>>> for v in x:\n"
                            "...     print(v)\n... \n1\n2\n>>> 1/0\nwrong\n```\n")
            r = subprocess.run([sys.executable, str(SCRIPT), "--no-timed", "--page", str(page)],
                               capture_output=True, text=True, timeout=600)
            self.assertEqual(r.returncode, 0, r.stderr)
            text = page.read_text()
            self.assertIn(">>> x + [3]\n[1, 2, 3]\n>>> for v in x:", text)
            self.assertIn("1\n2\n>>> 1/0\nTraceback (most recent call last):", text)
            self.assertIn("ZeroDivisionError: division by zero\n```", text)


if __name__ == "__main__":
    unittest.main()
