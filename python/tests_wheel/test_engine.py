"""The engine in the wheel: ``pip install ./python`` in a fresh venv, then ``import concerto``.

Every in-process result is compared with the command line's on the same input (the binary
that :func:`concerto.binary.find` finds: ``CONCERTO_BIN``, the workspace's cargo target
directory, ``PATH``; the test command builds it): the same plan, the same JSON (bar wall-clock times), the same errors. Run:
``python -m unittest discover -s python/tests_wheel`` with the venv's interpreter and the
repository as the working directory. Missing engine or binary is a failure, not a skip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import unittest

import concerto
import concerto.binary

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HLO = os.path.join(ROOT, "fixtures", "hlo", "dp.opt.hlo")
COMPILED = os.path.join(ROOT, "fixtures", "hlo_gpu", "gpt_mix2x4_l1_cublas.gpu.hlo")
TRACE = os.path.join(ROOT, "fixtures", "kineto", "ddp_3steps.json")
J30 = os.path.join(ROOT, "fixtures", "psplib", "j30", "j301_1.sm")
#: A decode loop: its bound is carried in the state from a parameter of the step.
DECODE = os.path.join(ROOT, "fixtures", "tiny", "decode_loop.hlo")
#: An unbounded dimension (StableHLO's unbounded dynamism): no size, no cost.
UNBOUNDED = os.path.join(ROOT, "fixtures", "tiny", "unbounded.hlo")
H200_STEP = os.path.join(ROOT, "docs", "fidelity-data", "step.opt.hlo.gz")
H200_TRACE = os.path.join(ROOT, "docs", "fidelity-data", "step_trace.json.gz")



def cli(*args: str) -> subprocess.CompletedProcess:
    # The wheel's finder: an error listing every place tried when there is no binary.
    return subprocess.run([concerto.binary.find(), *args], capture_output=True, text=True)


def cli_json(*args: str) -> dict:
    r = cli(*args)
    if r.returncode:
        raise RuntimeError(f"concerto {' '.join(args)}: {r.stderr}")
    return json.loads(r.stdout)


def timeless(v):
    """The JSON without wall-clock readings (``time_s`` and the like)."""
    if isinstance(v, dict):
        return {k: timeless(x) for k, x in v.items() if not k.endswith("time_s")}
    if isinstance(v, list):
        return [timeless(x) for x in v]
    return v


class Engine(unittest.TestCase):
    def test_the_wheel_ships_the_engine_and_its_stubs(self):
        pkg = os.path.dirname(concerto.__file__)
        self.assertFalse(pkg.startswith(ROOT), f"imported from the checkout, not the wheel: {pkg}")
        for f in ("_engine.pyi", "py.typed"):
            self.assertTrue(os.path.exists(os.path.join(pkg, f)), f)
        self.assertTrue(any(n.startswith("_engine") and n.endswith(".so") for n in os.listdir(pkg)))
        names = [n for n, _, compiled in concerto.solvers() if compiled]
        self.assertIn("pumpkin", names)

    def test_optimize_gives_the_command_lines_plan_and_json(self):
        for path in (HLO, COMPILED, TRACE):
            with self.subTest(path=os.path.basename(path)):
                ours = concerto.optimize(path, work_limit=20000)
                theirs = cli_json("optimize", path, "--work-limit", "20000", "--json")
                self.assertEqual(ours.optimized_ns, theirs["optimized_ns"])
                self.assertEqual(timeless(json.loads(ours.to_json())), timeless(theirs))
                self.assertEqual(ours.lower_bound_ns, theirs["lower_bound_ns"])
                self.assertEqual(ours.bound_kind, theirs["bound_kind"])
                self.assertLessEqual(ours.lower_bound_ns, ours.optimized_ns)
                self.assertEqual([r[0] for r in ours.rows][0], "program-order")
                # The plan simulates to the reported makespan, here and in the binary.
                sim = concerto.simulate(path, ours.plan)
                self.assertEqual(sim["makespan_ns"], ours.optimized_ns)

    def test_a_profile_costs_the_module_as_on_the_command_line(self):
        ours = concerto.optimize(H200_STEP, work_limit=2000, profile=H200_TRACE,
                                 profile_strict=True)  # fmt: skip
        theirs = cli_json("optimize", H200_STEP, "--work-limit", "2000", "--profile", H200_TRACE,
                          "--profile-strict", "--json")  # fmt: skip
        self.assertEqual(timeless(json.loads(ours.to_json())), timeless(theirs))
        p = json.loads(ours.to_json())["profile"]
        self.assertEqual((p["ops"], p["measured_ops"]), (337, 337))
        # The measured costs, not the model's: XLA's own order sums to the kernel time.
        plain = concerto.optimize(H200_STEP, work_limit=2000)
        self.assertNotEqual(plain.program_order_ns, ours.program_order_ns)
        with self.assertRaises(ValueError) as e:
            concerto.optimize(HLO, work_limit=2000, profile=H200_TRACE)
        self.assertIn("another module", str(e.exception))
        with self.assertRaises(ValueError) as e:
            concerto.optimize(HLO, profile_strict=True)
        self.assertIn("profile_strict needs profile=", str(e.exception))

    def test_a_dict_graph_is_the_native_format(self):
        g = concerto.import_graph(HLO)
        g.pop("warnings")
        a = concerto.optimize(g, work_limit=2000)
        b = concerto.optimize(HLO, work_limit=2000)
        self.assertEqual(a.optimized_ns, b.optimized_ns)
        self.assertEqual(a.plan["ops"] if "ops" in a.plan else a.plan["streams"],
                         b.plan["ops"] if "ops" in b.plan else b.plan["streams"])  # fmt: skip

    def test_a_trace_imports_with_its_step(self):
        g = concerto.import_graph(TRACE, step=2)
        self.assertEqual(g["trace"]["step"], "ProfilerStep#2")
        self.assertEqual(g["trace"]["measured_step_ns"], 260600)
        r = concerto.optimize(TRACE, work_limit=2000)
        self.assertEqual(json.loads(r.to_json())["contention"], 1.0)

    def test_loop_and_shape_options_are_the_command_lines(self):
        # A decode loop whose bound is a parameter of the step, and an unbounded dimension.
        with self.assertRaises(ValueError) as e:
            concerto.import_graph(DECODE)
        self.assertIn("--unknown-trip-count", str(e.exception))
        g = concerto.import_graph(DECODE, unknown_trip_count=3)
        cli_g = cli_json("import", DECODE, "--unknown-trip-count", "3", "--json")
        self.assertEqual(len(g["ops"]), cli_g["ops"])
        self.assertEqual(len(g["warnings"]), 1)
        self.assertIn("counted as 3 iteration(s)", g["warnings"][0])
        once = concerto.import_graph(DECODE, unknown_trip_count=3, trip_counts={"decode": 1})
        self.assertLess(len(once["ops"]), len(g["ops"]))
        self.assertEqual(once["warnings"], [])
        r = concerto.optimize(DECODE, work_limit=2000, unknown_trip_count=3)
        theirs = cli_json("optimize", DECODE, "--work-limit", "2000", "--unknown-trip-count", "3", "--json")
        self.assertEqual(timeless(json.loads(r.to_json())), timeless(theirs))
        with self.assertRaises(ValueError) as e:
            concerto.import_graph(UNBOUNDED)
        self.assertIn("--unbounded-dim-size", str(e.exception))
        small = concerto.simulate(UNBOUNDED, concerto.optimize(UNBOUNDED, unbounded_dim_size=8,
                                                               work_limit=100).plan,
                                  unbounded_dim_size=8)  # fmt: skip
        big = concerto.simulate(UNBOUNDED, concerto.optimize(UNBOUNDED, unbounded_dim_size=4096,
                                                             work_limit=100).plan,
                                unbounded_dim_size=4096)  # fmt: skip
        self.assertLess(small["peak_memory_bytes"], big["peak_memory_bytes"])
        with self.assertRaises(ValueError) as e:
            concerto.import_graph(TRACE, unknown_trip_count=1)
        self.assertIn("apply to the while loops of an HLO module", str(e.exception))

    def test_solve_gives_the_command_lines_result(self):
        ours = concerto.solve(J30, work_limit=2000)
        theirs = cli_json("solve", J30, "--work-limit", "2000", "--json")
        self.assertEqual(timeless({k: v for k, v in ours.items() if k != "starts"}),
                         timeless(theirs))  # fmt: skip
        self.assertEqual(max(ours["starts"].values()), ours["makespan"])

    def test_errors_carry_the_command_lines_message(self):
        missing = os.path.join(ROOT, "no-such-graph.json")
        with self.assertRaises(ValueError) as e:
            concerto.optimize(missing)
        r = cli("optimize", missing)
        self.assertEqual(r.returncode, 2)
        self.assertIn(str(e.exception).split(":")[0], r.stderr)
        self.assertIn("no-such-graph.json", str(e.exception))
        with self.assertRaises(ValueError) as e:
            concerto.optimize(HLO, work_limit=0)
        self.assertIn("work_limit must be at least 1", str(e.exception))
        with self.assertRaises(ValueError) as e:
            concerto.optimize(HLO, hardware="tpu")
        self.assertIn("tpu", str(e.exception))
        with self.assertRaises(ValueError) as e:
            concerto.optimize(HLO, memory_budget="lots")
        with self.assertRaises(ValueError):
            concerto.optimize(42)
        with self.assertRaises(ValueError) as e:
            concerto.simulate(HLO, "{")
        self.assertIn("plan", str(e.exception))

    def test_the_gil_is_released_while_solving(self):
        # The solve runs in a thread; this thread counts while it is alive. Were the GIL held
        # by the solve, this thread could not run at all until the call returned.
        done = {}

        def solve():
            started = time.monotonic()
            concerto.optimize(COMPILED, time_limit=1.5)
            done["elapsed"] = time.monotonic() - started

        t = threading.Thread(target=solve)
        t.start()
        ticks = 0
        while t.is_alive():
            ticks += 1
        t.join()
        self.assertGreater(done["elapsed"], 0.05, "the solve was too short to tell")
        self.assertGreater(ticks, 10_000, f"{ticks} loops beside a {done['elapsed']:.2f} s solve")

if __name__ == "__main__":
    unittest.main()
