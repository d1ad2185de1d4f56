"""The PyTorch adapter end to end: a GPT block's training step traced under the fake process
group (DP, Megatron TP, FSDP-style; 8 ranks), written as Concerto's graph JSON, scheduled by
``concerto optimize``, and the plan applied back to the FX graph and inside ``torch.compile``.

Run from the repository root:
``$(scripts/pyenv-torch | tail -n1) -m unittest discover -s python/tests_torch`` after
``scripts/pyenv-wheel`` installed the package (engine included) into that venv; without it the
adapters come from ``python/`` and the Inductor pass runs the binary. Nothing is skipped: torch
comes from the venv ``scripts/pyenv-torch`` makes, and the concerto binary (for the command
line steps) that :func:`concerto.binary.find` finds (``CONCERTO_BIN``, the workspace's cargo
target directory, ``PATH``);
without either the suite fails.
"""

from __future__ import annotations

import collections
import copy
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = os.path.dirname(HERE)
try:
    import concerto_torch  # noqa: F401  (the installed package, with the engine)
except ImportError:
    sys.path.insert(0, PYTHON)

import torch  # noqa: E402
import torch.fx as fx  # noqa: E402

from concerto_torch import examples  # noqa: E402
from concerto_torch.export import COLLECTIVES, collective_nodes, op_name, to_concerto  # noqa: E402
from concerto_torch.inductor import ConcertoPass, concerto_bin, inductor_config  # noqa: E402
from concerto_torch.reorder import ReorderError, check_order, merge, reorder  # noqa: E402
from concerto_torch.trace import trace_example  # noqa: E402
from concerto_torch.verify import same_outputs  # noqa: E402

RANKS = 8
CFG = examples.Config()  # 2 layers, d_model 64, 8 heads, 32 tokens x 4
# Collectives per example at 2 layers: DP one all-reduce per gradient (12 per block); TP two
# all-reduces in the forward and two in the backward per block; FSDP per block one all-gather
# forward, one backward and one reduce-scatter.
EXPECTED = {
    "dp": {"all-reduce": 24},
    "tp": {"all-reduce": 8},
    "fsdp": {"all-gather": 4, "reduce-scatter": 2},
}
#: The command line (set by :func:`setUpModule`: :func:`concerto.binary.find`).
BIN = ""


def concerto(*args: str) -> subprocess.CompletedProcess:
    r = subprocess.run([BIN, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"concerto {' '.join(args)} exited {r.returncode}: {r.stderr}")
    return r


def random_args(args, seed: int) -> list[torch.Tensor]:
    """Fresh inputs of the example's shapes, uniform in [0, 1) (so Adam's second moment and
    the step counter stay valid) plus 1 on the step counter."""
    g = torch.Generator().manual_seed(seed)
    out = [torch.rand(a.shape, generator=g, dtype=a.dtype) for a in args]
    out[-1] = out[-1] + 1
    return out


def setUpModule():
    global BIN
    BIN = concerto_bin()  # an error listing every place tried when there is none


class RoundTrip(unittest.TestCase):
    """Trace, export, optimize, reorder: the three examples."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.gm, cls.step, cls.rec, cls.plan, cls.report = {}, {}, {}, {}, {}
        for ex in EXPECTED:
            gm, step = trace_example(ex, RANKS, CFG)
            cls.gm[ex], cls.step[ex] = gm, step
            cls.rec[ex] = to_concerto(gm.graph, step.name)

        def optimize(ex):
            g = os.path.join(cls.tmp.name, f"{ex}.json")
            p = os.path.join(cls.tmp.name, f"{ex}.plan.json")
            with open(g, "w") as f:
                json.dump(cls.rec[ex], f)
            r = concerto("optimize", g, "--work-limit", "500", "--plan", p, "--json")
            imported = json.loads(concerto("import", g, "--json").stdout)
            with open(p) as f:
                return ex, json.load(f), json.loads(r.stdout), imported

        cls.imported = {}
        with ThreadPoolExecutor(3) as pool:
            for ex, plan, report, imported in pool.map(optimize, EXPECTED):
                cls.plan[ex], cls.report[ex], cls.imported[ex] = plan, report, imported

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_collective_counts_match_the_fx_graph(self):
        for ex, want in EXPECTED.items():
            with self.subTest(ex):
                fx_kinds = collections.Counter(
                    COLLECTIVES[op_name(n).rstrip("_")] for n in collective_nodes(self.gm[ex].graph))
                ops = self.rec[ex]["ops"]
                json_kinds = collections.Counter(
                    o["kind"]["kind"] for o in ops if o["kind"]["type"] == "collective")
                self.assertEqual(dict(fx_kinds), want)
                self.assertEqual(json_kinds, fx_kinds)
                self.assertEqual(self.report[ex]["collectives"], sum(want.values()))
                # `concerto import` reads the native graph and counts the same collectives.
                self.assertEqual(self.imported[ex]["collectives"], dict(fx_kinds))
                self.assertEqual(self.imported[ex]["ops"], len(ops))
                self.assertEqual(self.report[ex]["ops"], len(ops))
                for o in ops:
                    if o["kind"]["type"] == "collective":
                        self.assertEqual(o["kind"]["group"], RANKS)
                        self.assertEqual(o["kind"]["link"], "intra-node")

    def test_graph_records(self):
        for ex in EXPECTED:
            with self.subTest(ex):
                gm, rec = self.gm[ex], self.rec[ex]
                names = [o["name"] for o in rec["ops"]]
                nodes = {n.name: n for n in gm.graph.nodes}
                self.assertEqual(len(names), len(set(names)))
                self.assertTrue(set(names) <= set(nodes))
                for i, o in enumerate(rec["ops"]):
                    for ref in o.get("inputs", []):
                        self.assertLess(ref if isinstance(ref, int) else ref[0], i)
                    self.assertNotIn("wait", o["name"])
                    self.assertNotEqual(op_name(nodes[o["name"]]), "view")
                # the batch, parameters and optimizer state are resident
                placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
                self.assertEqual(len(placeholders), len(self.step[ex].args))
                self.assertEqual(rec["resident_bytes"],
                                 sum(a.numel() * a.element_size() for a in self.step[ex].args))
                self.assertTrue(any(o.get("live_out") for o in rec["ops"]))
                gemms = [o for o in rec["ops"] if o["kind"].get("class") == "gemm"]
                self.assertTrue(gemms and all(o["kind"]["flops"] > 0 for o in gemms))
                self.assertTrue(any(o["kind"].get("class") == "attention" for o in rec["ops"]))
                # each wait is folded: a consumer of a wait reads the collective
                colls = {i for i, o in enumerate(rec["ops"]) if o["kind"]["type"] == "collective"}
                readers = [o for o in rec["ops"]
                           if any((r if isinstance(r, int) else r[0]) in colls
                                  for r in o.get("inputs", []))]  # fmt: skip
                self.assertTrue(readers)

    def reordered(self, ex) -> fx.GraphModule:
        gm = self.gm[ex]
        return reorder(fx.GraphModule(gm, copy.deepcopy(gm.graph)), self.plan[ex])

    def test_reorder_keeps_streams_waits_and_values(self):
        for ex in EXPECTED:
            with self.subTest(ex):
                gm = self.gm[ex]
                re_gm = self.reordered(ex)
                check_order(re_gm, self.plan[ex])
                before = [n.name for n in gm.graph.nodes]
                after = [n.name for n in re_gm.graph.nodes]
                self.assertEqual(sorted(before), sorted(after))
                self.assertNotEqual(before, after)  # the plan does move nodes
                comm = [s["ops"] for s in self.plan[ex]["streams"] if s["stream"] != "compute"]
                issued = [n.name for n in re_gm.graph.nodes if n.name in set(comm[0])]
                self.assertEqual(issued, comm[0])
                n, diff = same_outputs(gm, re_gm, random_args(self.step[ex].args, seed=7))
                self.assertEqual(n, len(list(gm.graph.nodes)[-1].args[0]))
                self.assertEqual(diff, 0.0)

    def test_original_order_is_not_the_plans(self):
        # the checker is not vacuous: the traced order breaks the plan somewhere
        for ex in EXPECTED:
            with self.subTest(ex), self.assertRaises(ReorderError):
                check_order(self.gm[ex], self.plan[ex])

    def test_bad_plans_are_refused(self):
        plan = copy.deepcopy(self.plan["tp"])
        bad = copy.deepcopy(plan)
        bad["streams"][0]["ops"].append("no_such_node")
        with self.assertRaisesRegex(ReorderError, "no_such_node"):
            reorder(fx.GraphModule(self.gm["tp"], copy.deepcopy(self.gm["tp"].graph)), bad)
        bad = copy.deepcopy(plan)
        compute = bad["streams"][0]["ops"]
        compute.reverse()  # consumers before producers
        bad["waits"] = []
        with self.assertRaisesRegex(ReorderError, "which it reads"):
            reorder(fx.GraphModule(self.gm["tp"], copy.deepcopy(self.gm["tp"].graph)), bad)
        cyc = {"format": "concerto-plan", "streams": [
            {"stream": "compute", "ops": ["a"]}, {"stream": "comm.intra-node", "ops": ["b"]}],
            "waits": [["a", "b"], ["b", "a"]]}  # fmt: skip
        with self.assertRaisesRegex(ReorderError, "deadlocks"):
            merge(cyc)


class Cli(unittest.TestCase):
    """The round trip as the README runs it: export, concerto optimize, reorder."""

    def test_export_optimize_reorder(self):
        env = {**os.environ, "PYTHONPATH": PYTHON}
        with tempfile.TemporaryDirectory() as d:
            g, p = os.path.join(d, "tp.json"), os.path.join(d, "tp.plan.json")
            r = subprocess.run([sys.executable, "-m", "concerto_torch.export", "tp", "--ranks",
                                "8", "--layers", "1", "-o", g],
                               capture_output=True, text=True, env=env)  # fmt: skip
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("4 collectives", r.stdout)
            concerto("optimize", g, "--work-limit", "500", "--plan", p)
            r = subprocess.run([sys.executable, "-m", "concerto_torch.reorder", "tp", "--ranks",
                                "8", "--layers", "1", "--plan", p],
                               capture_output=True, text=True, env=env)  # fmt: skip
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("all equal to the original's", r.stdout)


class Inductor(unittest.TestCase):
    """The post-grad pass inside torch.compile (CPU, fake process group of 8 ranks: its
    all-reduce leaves the data as it is, so the compiled DP step equals the eager one)."""

    def test_pass_runs_and_keeps_the_order(self):
        gm, step = trace_example("dp", RANKS, examples.Config(layers=1))
        p = ConcertoPass()
        torch._dynamo.reset()
        from torch._inductor.utils import run_and_get_code

        with torch._inductor.config.patch(inductor_config(p)):
            out, code = run_and_get_code(torch.compile(gm, fullgraph=True), *step.args)
        self.assertEqual(len(p.applied), 1)
        # The test command installs the wheel here and sets no CONCERTO_BIN: the pass ran the
        # engine in process, not the binary.
        import concerto_torch.inductor as ind

        if not os.environ.get("CONCERTO_BIN"):
            self.assertEqual(ind.LAST_BACKEND, "engine")
        applied = p.applied[0]
        self.assertEqual(
            sum(1 for o in applied["graph"]["ops"] if o["kind"]["type"] == "collective"), 12)
        # the post-grad graph the pass left keeps the plan
        order = {n: i for i, n in enumerate(applied["nodes"])}
        for s in applied["plan"]["streams"]:
            self.assertEqual([order[o] for o in s["ops"]], sorted(order[o] for o in s["ops"]))
        # Inductor's code issues the collectives in the plan's order: each call follows a
        # comment that names its source nodes
        comm = next(s["ops"] for s in applied["plan"]["streams"] if s["stream"] != "compute")
        issued, sources = [], []
        for line in code[0].splitlines():
            m = re.search(r"Source Nodes: \[([^\]]*)\]", line)
            if m:
                sources = [x.strip() for x in m.group(1).split(",")]
            elif re.search(r"_c10d_functional\.all_reduce_?\.default", line):
                issued += [s for s in sources if s in comm]
        self.assertEqual(issued, comm)
        eager = gm(*step.args)
        for a, b in zip(out, eager):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


if __name__ == "__main__":
    unittest.main()
