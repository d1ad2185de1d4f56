"""``concerto_jax.compile``, ``save`` and ``load`` without a GPU (python/concerto_jax/aot.py).

The order check (:func:`concerto_jax.aot.order_problem`) on a small plan; then a ``jax.jit``
step through :func:`concerto_jax.compile` itself, saved and loaded on this CPU-only host, and
payloads and files that are cut or foreign. The same path on every module of the compiled
corpus, and the guide's table, is tools/tests_xla_gpu/test_aot_corpus.py.

Run with the interpreter of ``scripts/pyenv-xla-gpu`` (the test command does); a missing
plugin is a failure, never a skip.
"""

from __future__ import annotations

import os
import pickle
import sys
import tempfile
import unittest
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = os.path.dirname(HERE)
sys.path.insert(0, PYTHON)

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ["JAX_SKIP_CUDA_CONSTRAINTS_CHECK"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from concerto_jax import aot, executable  # noqa: E402


class Order(unittest.TestCase):
    """order_problem: only copies, instructions that launch no kernel and dead ones may be
    missing; only copies and no-kernel ones may be new; the rest keeps its place."""

    PLAN = """HloModule m, is_scheduled=true

ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %a = f32[8]{0} fusion(%p), kind=kLoop, calls=%f
  %copy.7 = f32[8]{0} copy(%a)
  %b = f32[8]{0} all-reduce-start(%copy.7), to_apply=%add
  %c = f32[8]{0} fusion(%a), kind=kLoop, calls=%f
  %dead = s32[] fusion(%c), kind=kLoop, calls=%g
  %t = (f32[8]{0}, s32[]) tuple(%c, %dead)
  %d = f32[8]{0} all-reduce-done(%b)
  ROOT %r = f32[8]{0} add(%d, %c)
}
"""

    def setUp(self):
        self.plan = aot.entry_graph(self.PLAN)
        self.order = self.plan.order

    def test_the_graph_reads_users_and_root(self):
        self.assertEqual(self.plan.root, "r")
        self.assertEqual(self.plan.users["a"], {"copy.7", "c"})
        self.assertEqual(self.plan.users["dead"], {"t"})
        self.assertEqual(self.plan.users["t"], set())
        self.assertEqual([n for n, _ in self.order], ["a", "copy.7", "b", "c", "dead", "t", "d", "r"])

    def test_copies_tuples_and_dead_instructions_may_go_and_copies_come(self):
        self.assertIsNone(aot.order_problem(self.order, self.plan))
        kept = [i for i in self.order if i[0] not in ("copy.7", "dead", "t")]
        self.assertIsNone(aot.order_problem(kept, self.plan))
        renamed = [("copy", "copy") if n == "copy.7" else (n, op) for n, op in self.order]
        self.assertIsNone(aot.order_problem(renamed, self.plan))
        self.assertIsNone(aot.order_problem(kept[:1] + [("copy.9", "copy")] + kept[1:], self.plan))

    def test_a_moved_lost_or_new_instruction_that_works_is_named(self):
        o = self.order
        moved = [o[0], o[1], o[3], o[2]] + o[4:]
        self.assertIn("position 2 of 8 is c in the module, b in the plan",
                      aot.order_problem(moved, self.plan))  # fmt: skip
        lost = [i for i in o if i[0] != "c"]
        self.assertIn("lacks 1 of the plan's instructions that do work (c)",
                      aot.order_problem(lost, self.plan))  # fmt: skip
        # dead's reader t is still there, so dead is not dead.
        self.assertIn("(dead)", aot.order_problem([i for i in o if i[0] != "dead"], self.plan))
        self.assertIn("has 1 the plan has not (e)",
                      aot.order_problem(o + [("e", "fusion")], self.plan))  # fmt: skip


class Api(unittest.TestCase):
    """A jax.jit step through compile(), save() and load() on this CPU-only host."""

    @classmethod
    def setUpClass(cls):
        from concerto_jax import dump
        from concerto_jax.steer import h100_devices

        a = dump.parse_args(["--parallel", "tp", "--out", tempfile.gettempdir(), "--layers", "1",
                             "--d-model", "256", "--heads", "8", "--seq", "128", "--batch", "8",
                             "--vocab", "1024", "--dtype", "bfloat16"])  # fmt: skip
        data, model = dump.check_sizes(a)
        mesh = dump.make_mesh(a, data, model, h100_devices())
        jitted, args = dump.jit_step(a, mesh, data, donate=True)
        with warnings.catch_warnings(record=True) as cls.warned:
            warnings.simplefilter("always")
            cls.c = aot.compile(jitted, *args)
        cls.tmp = tempfile.TemporaryDirectory(prefix="concerto-aot-")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_compile_keeps_concerto_and_says_what_it_simulated(self):
        c = self.c
        self.assertEqual(c.kept, "concerto", c.warnings)
        self.assertEqual(c.warnings, [])
        self.assertEqual([w for w in self.warned if "concerto_jax" in str(w.message)], [])
        self.assertLess(c.concerto_ns, c.xla_ns)
        self.assertLessEqual(c.lower_bound_ns, c.concerto_ns)
        self.assertLessEqual(c.concerto_peak_bytes, c.budget_bytes)
        self.assertEqual(c.budget_bytes, c.xla_peak_bytes + aot.GIB)
        head = c.optimized_hlo().split("\n", 1)[0]
        self.assertTrue(head.startswith("HloModule jit_step, is_scheduled=true"), head[:80])
        payload, in_tree, out_tree = c.serialize()
        self.assertEqual((in_tree, out_tree), (c.in_tree, c.out_tree))
        self.assertEqual(aot.check_payload(payload, c.xla_payload, None).problems, [])
        self.assertNotEqual(payload, c.xla_payload)
        # XLA's payload and concerto's differ only in the executable's bytes.
        xla_blob = executable.exec_blob(c.xla_payload)[0]
        self.assertEqual(executable.replace_exec(payload, xla_blob), c.xla_payload)

    def test_save_writes_serializes_bytes_with_versions_and_topology(self):
        path = os.path.join(self.tmp.name, "step.cjx")
        aot.save(path, self.c)
        header, trees, payload = aot.read_saved(path)
        self.assertEqual(payload, self.c.serialize()[0])
        with open(path, "rb") as f:
            self.assertIn(self.c.serialize()[0], f.read())
        self.assertEqual(header["versions"], aot.versions())
        self.assertEqual(header["versions"]["jaxlib"], "0.10.2")
        self.assertEqual(header["topology"], {"platform": "gpu", "devices": 8,
                                              "device_kind": "NVIDIA H100 80GB HBM3"})  # fmt: skip
        self.assertEqual(header["kept"], "concerto")
        in_tree, out_tree = pickle.loads(trees)
        self.assertEqual(in_tree, self.c.in_tree)

    def test_load_says_the_devices_are_not_here(self):
        path = os.path.join(self.tmp.name, "step.cjx")
        aot.save(path, self.c)
        with self.assertRaises(aot.DevicesMissing) as e:
            aot.load(path)
        self.assertIn("8 'NVIDIA H100 80GB HBM3' (gpu)", str(e.exception))
        self.assertIn("cpu", str(e.exception))
        with self.assertRaises(aot.DevicesMissing):
            self.c(*[None])  # calling it here is the same error, not a crash

    def test_load_refuses_another_version_by_name(self):
        path = os.path.join(self.tmp.name, "old.cjx")
        real = aot.versions
        aot.versions = lambda: {**real(), "jaxlib": "0.9.0"}
        try:
            aot.save(path, self.c)
        finally:
            aot.versions = real
        with self.assertRaises(aot.VersionMismatch) as e:
            aot.load(path)
        self.assertIn("jaxlib 0.9.0", str(e.exception))
        self.assertIn("jaxlib 0.10.2", str(e.exception))

    def test_cut_and_foreign_files_and_payloads_get_clear_errors(self):
        path = os.path.join(self.tmp.name, "step.cjx")
        aot.save(path, self.c)
        with open(path, "rb") as f:
            data = f.read()
        cases = {
            "cut.cjx": data[: len(data) // 2],
            "foreign.cjx": b"PK\x03\x04 not an executable",
            "flipped.cjx": data[:-10] + bytes(10),
        }
        for name, bad in cases.items():
            p = os.path.join(self.tmp.name, name)
            with open(p, "wb") as f:
                f.write(bad)
            with self.subTest(name), self.assertRaises(aot.AotError) as e:
                aot.load(p)
            self.assertIn(p, str(e.exception))
        payload = self.c.payload
        for bad in (payload[: len(payload) // 2], payload[:-100], b"\x80\x04K\x01.",
                    pickle.dumps({"exec": b"x"}), b"garbage"):  # fmt: skip
            with self.assertRaises(executable.ExecutableError):
                executable.read_payload(bad)
        blob = executable.exec_blob(payload)[0]
        with self.assertRaises(executable.ExecutableError):
            executable.read_payload(executable.replace_exec(payload, blob[: len(blob) // 2]))


if __name__ == "__main__":
    unittest.main()
