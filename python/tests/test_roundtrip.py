"""The JAX side of the XLA round trip: real train-step dumps, XLA's parser and schedule
verifier, and bitwise comparison of two modules compiled and run by XLA on 8 CPU devices.

Run: ``$(scripts/pyenv | tail -n1) -m unittest discover -s python/tests`` from the repository
root. Nothing is skipped: jax comes from the virtual environment ``scripts/pyenv`` makes.
"""

from __future__ import annotations

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
sys.path.insert(0, PYTHON)
sys.path.insert(0, HERE)

from concerto_jax.hlo_text import (  # noqa: E402
    collective_counts,
    configure_xla,
    expand_mesh_replica_groups,
    manual_shardings,
    mesh_replica_groups,
    opcodes,
)

configure_xla(8)  # before anything imports jax
# XLA logs a failed RET_CHECK with a stack trace (test_verify_rejects_a_bad_sequence provokes
# one) and warns that GSPMD propagation is deprecated on every compile: keep the output quiet.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from hlo_edit import asyncify, move_independent  # noqa: E402

DATA = os.path.join(HERE, "data")
SIZES = ["--layers", "2", "--d-model", "64", "--heads", "8", "--seq", "32", "--batch", "16",
         "--vocab", "128"]  # fmt: skip
STEPS = {
    "dp": ["--parallel", "dp"],
    "tp": ["--parallel", "tp"],
    "fsdp": ["--parallel", "fsdp"],
    "mix": ["--parallel", "mix"],
    "dp_scan": ["--parallel", "dp", "--scan"],
}
NAMES = {
    "dp": "gpt_dp8_l2",
    "tp": "gpt_tp8_l2",
    "fsdp": "gpt_fsdp8_l2",
    "mix": "gpt_mix2x4_l2",
    "dp_scan": "gpt_dp8_l2_scan",
}


def py(*args: str, cwd: str | None = None) -> subprocess.CompletedProcess:
    """Runs ``python -m ...`` with this interpreter and ``python/`` on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON
    env.pop("XLA_FLAGS", None)
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600
    )


def json_lines(out: str) -> list[dict]:
    return [json.loads(s) for s in out.splitlines() if s.startswith("{")]


def read(path: str) -> str:
    with open(path) as f:
        return f.read()


_TMP: tempfile.TemporaryDirectory | None = None
OUT = ""


def setUpModule() -> None:  # noqa: N802 (unittest's name)
    global _TMP, OUT
    _TMP = tempfile.TemporaryDirectory(prefix="concerto-jax-test-")
    OUT = _TMP.name

    def dump(key: str) -> tuple[str, subprocess.CompletedProcess]:
        return key, py("-m", "concerto_jax.dump", *STEPS[key], "--out", OUT, *SIZES)

    with ThreadPoolExecutor(2) as pool:
        for key, p in pool.map(dump, STEPS):
            if p.returncode != 0:
                raise RuntimeError(f"dump {key} failed ({p.returncode}): {p.stderr[-3000:]}")


def tearDownModule() -> None:  # noqa: N802
    if _TMP is not None:
        _TMP.cleanup()


def path(key: str, kind: str) -> str:
    return os.path.join(OUT, f"{NAMES[key]}.{kind}")


class MeshReplicaGroups(unittest.TestCase):
    """The mesh form against the expectations of XLA's own tests (replica_group_test.cc)."""

    def test_full_axes(self):
        mesh = "mesh['x'=2,'y'=2]"
        self.assertEqual(mesh_replica_groups(mesh, None, "'x'"), [[0, 2], [1, 3]])
        self.assertEqual(mesh_replica_groups(mesh, None, "'y'"), [[0, 1], [2, 3]])
        self.assertEqual(mesh_replica_groups(mesh, None, "'x','y'"), [[0, 1, 2, 3]])
        self.assertEqual(mesh_replica_groups(mesh, None, "'y','x'"), [[0, 2, 1, 3]])

    def test_sub_axes(self):
        mesh = "mesh['a'=6,'b'=6]"
        g = mesh_replica_groups(mesh, None, "'a':(1)2")
        self.assertEqual(g, [[k, k + 18] for k in range(18)])
        g = mesh_replica_groups(mesh, None, "'a':(3)2")
        self.assertEqual(g[:3], [[0, 6], [1, 7], [2, 8]])
        self.assertEqual(len(g), 18)
        self.assertEqual(sorted(sum(g, [])), list(range(36)))

    def test_jax_forms(self):
        # What jax 0.10.2 writes for dp=8 and for the data axis of the 2x4 mix.
        g = mesh_replica_groups("mesh['axis_0'=8,'axis_1'=1,'axis_2'=1]", None, "'axis_0'")
        self.assertEqual(g, [list(range(8))])
        g = mesh_replica_groups("mesh['axis_0'=2,'axis_1'=1,'axis_2'=1,'axis_3'=4]", None,
                                "'axis_0'")  # fmt: skip
        self.assertEqual(g, [[0, 4], [1, 5], [2, 6], [3, 7]])
        g = mesh_replica_groups("mesh['axis_0'=2,'axis_1'=1,'axis_2'=4]", None, "'axis_2'")
        self.assertEqual(g, [[0, 1, 2, 3], [4, 5, 6, 7]])

    def test_device_ids_and_text(self):
        text = (
            "  %a = f32[] all-reduce(%p), replica_groups=mesh['ooo'=4], "
            "device_ids=(3,1,2,0) {'ooo':(2)2}, to_apply=%add\n"
            "  %b = f32[] all-reduce(%p), replica_groups=mesh['a'=2,'b'=2], "
            "device_ids=([2,2]T(1,0)) {'b'}, to_apply=%add\n"
            "  %c = f32[] all-reduce(%p), replica_groups=maximal_mesh[device_id=5] {}, "
            "to_apply=%add\n"
            "  %d = f32[] all-reduce(%p), replica_groups={{0,1}}, to_apply=%add\n"
        )
        out, n = expand_mesh_replica_groups(text)
        self.assertEqual(n, 3)
        lines = out.splitlines()
        self.assertIn("replica_groups={{3,1},{2,0}}, to_apply", lines[0])
        # device array [[0,2],[1,3]]; grouping over 'b' keeps 'a' fixed: rows.
        self.assertIn("replica_groups={{0,2},{1,3}}, to_apply", lines[1])
        self.assertIn("replica_groups={{5}}, to_apply", lines[2])
        self.assertEqual(lines[3], text.splitlines()[3])

    def test_errors(self):
        with self.assertRaisesRegex(ValueError, "'z'"):
            mesh_replica_groups("mesh['x'=2]", None, "'z'")
        with self.assertRaisesRegex(ValueError, "does not divide"):
            mesh_replica_groups("mesh['x'=6]", None, "'x':(1)4")
        with self.assertRaisesRegex(ValueError, "3 devices"):
            mesh_replica_groups("mesh['x'=2]", "0,1,2", "'x'")


class TextHelpers(unittest.TestCase):
    def test_counts_of_async_forms(self):
        sync = collective_counts(read(os.path.join(DATA, "collectives.hlo")))
        self.assertEqual(sync, {"all-gather": 1, "all-reduce": 2, "all-to-all": 1,
                                "collective-permute": 1, "reduce-scatter": 1})  # fmt: skip
        asy = collective_counts(read(os.path.join(DATA, "collectives_async.hlo")))
        self.assertEqual(asy, {
            "all-gather-done": 1, "all-gather-start": 1,
            "all-reduce-done": 2, "all-reduce-start": 2,
            "all-to-all-done": 1, "all-to-all-start": 1,
            "collective-permute-done": 1, "collective-permute-start": 1,
            "reduce-scatter-done": 1, "reduce-scatter-start": 1,
        })  # fmt: skip

    def test_manual_shardings(self):
        text = (
            "HloModule m\n\nENTRY %e (p: s32[2,32]) -> (s32[2,32], s32[2,32]) {\n"
            "  %p = s32[2,32]{1,0} parameter(0), sharding={devices=[8,1]<=[8]}, metadata={op_name=\"x\"}\n"
            "  %n = s32[2,32]{1,0} negate(%p), sharding={{replicated}, {maximal device=1}}\n"
            "  ROOT %t = (s32[2,32]{1,0}, s32[2,32]{1,0}) tuple(%p, %n), sharding={{replicated}, {replicated}}\n"
            "}\n"
        )  # fmt: skip
        lines = manual_shardings(text).splitlines()
        self.assertEqual(
            lines[3],
            '  %p = s32[2,32]{1,0} parameter(0), metadata={op_name="x"}, sharding={manual}',
        )
        self.assertEqual(lines[4], "  %n = s32[2,32]{1,0} negate(%p)")
        self.assertTrue(lines[5].endswith("tuple(%p, %n), sharding={manual}"))


class Fixture(unittest.TestCase):
    """A hand-written per-device module with every collective, its async forms as Concerto's
    exporter writes them (and XLA's generic ``async-start`` with ``calls=``)."""

    def test_compiled_module_computes_the_collectives(self):
        import jax
        import numpy as np

        from concerto_jax import compare

        exe, shapes = compare.compile_module(read(os.path.join(DATA, "collectives.hlo")),
                                             jax.devices()[:8])  # fmt: skip
        inputs = compare.make_inputs(shapes, 8, 3)
        out = compare.run(exe, inputs)
        p0, p1 = inputs
        self.assertEqual(len(out), 7)
        for d in range(8):
            np.testing.assert_array_equal(out[0][d], p0[(d - 1) % 8])  # permute 0->1->...
            a2a = np.concatenate([p1[j][2 * d : 2 * d + 2] for j in range(8)])
            np.testing.assert_array_equal(out[1][d], a2a)
            total = sum(p0[j].astype(np.float64) for j in range(8))
            np.testing.assert_allclose(out[3][d], total[2 * d : 2 * d + 2], rtol=1e-6)
            np.testing.assert_array_equal(out[4][d], np.concatenate(p1))
            y_group = range(4 * (d // 4), 4 * (d // 4) + 4)  # mesh x=2,y=4 {'y'}
            np.testing.assert_allclose(out[5][d], sum(p1[j] for j in y_group), rtol=1e-6)
            np.testing.assert_allclose(out[6][d], p0[d % 4] + p0[d % 4 + 4], rtol=1e-6)

    def test_async_forms_parse_verify_and_compute_the_same(self):
        sync = os.path.join(DATA, "collectives.hlo")
        asy = os.path.join(DATA, "collectives_async.hlo")
        p = py("-m", "concerto_jax.xla_check", asy)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        (r,) = json_lines(p.stdout)
        self.assertTrue(r["parsed"] and r["scheduled"] and r["verified"], r)
        self.assertEqual(r["computations"], 4)  # add, rs_body, entry, all-to-all wrapper
        p = py("-m", "concerto_jax.compare", sync, asy, "--seed", "5")
        (r,) = json_lines(p.stdout)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr[-2000:])
        self.assertTrue(r["identical"])
        self.assertEqual(r["max_abs_diff"], 0.0)
        self.assertEqual(r["outputs"], 7)

    def test_generated_async_forms_match_the_fixture(self):
        text = read(os.path.join(DATA, "collectives.hlo"))
        out, n = asyncify(text, ("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                                 "collective-permute"))  # fmt: skip
        self.assertEqual(n, 6)
        fixture = read(os.path.join(DATA, "collectives_async.hlo"))
        for line in out.splitlines():
            if "-start(" in line and "reduce-scatter" not in line:
                self.assertIn(line, fixture)

    def test_a_different_collective_is_detected(self):
        src = read(os.path.join(DATA, "collectives.hlo"))
        changed = src.replace("replica_groups=mesh['x'=2,'y'=4] {'y'}",
                              "replica_groups=mesh['x'=2,'y'=4] {'x'}")  # fmt: skip
        self.assertNotEqual(src, changed)
        with tempfile.TemporaryDirectory() as tmp:
            f = os.path.join(tmp, "changed.hlo")
            with open(f, "w") as fh:
                fh.write(changed)
            p = py("-m", "concerto_jax.compare", os.path.join(DATA, "collectives.hlo"), f)
        self.assertEqual(p.returncode, 1)
        (r,) = json_lines(p.stdout)
        self.assertFalse(r["identical"])
        self.assertIsNone(r["error"])
        self.assertEqual(r["first_difference"], "output 5 device 0")
        self.assertGreater(r["max_abs_diff"], 0.0)


class XlaCheck(unittest.TestCase):
    def test_verify_rejects_a_bad_sequence(self):
        from jax._src.lib import hlo

        from concerto_jax.xla_check import own_sequence_check

        m = hlo.hlo_module_from_text(read(os.path.join(DATA, "collectives_async.hlo")))
        s = m.schedule()
        s.verify()
        self.assertIsNone(own_sequence_check(m, s)[1])
        entry = max(m.make_nonfusion_computations(), key=lambda c: len(s.sequence(c)))
        s.set_sequence(entry, list(reversed(s.sequence(entry))))
        with self.assertRaisesRegex(Exception, "not scheduled after its operand"):
            s.verify()
        self.assertIn("is not scheduled after its operand", own_sequence_check(m, s)[1])

    def test_parse_errors_and_unscheduled_modules_fail(self):
        text = read(os.path.join(DATA, "collectives_async.hlo"))
        # A user before its operand: the scheduled text order is not a valid order.
        lines = text.splitlines()
        k = next(i for i, s in enumerate(lines) if "%m = " in s)
        j = next(i for i, s in enumerate(lines) if "%cp.done = " in s)
        lines.insert(j, lines.pop(k))
        with tempfile.TemporaryDirectory() as tmp:
            bad = os.path.join(tmp, "bad.hlo")
            with open(bad, "w") as fh:
                fh.write("\n".join(lines) + "\n")
            plain = os.path.join(DATA, "collectives.hlo")
            p = py("-m", "concerto_jax.xla_check", bad, plain)
            self.assertEqual(p.returncode, 1)
            r_bad, r_plain = json_lines(p.stdout)
            self.assertFalse(r_bad["parsed"])
            self.assertIn("cp.done", r_bad["error"])
            self.assertTrue(r_plain["parsed"])
            self.assertFalse(r_plain["scheduled"])
            self.assertIn("no schedule", r_plain["error"])
            p = py("-m", "concerto_jax.xla_check", "--allow-unscheduled", plain)
            self.assertEqual(p.returncode, 0, p.stdout)


class TrainSteps(unittest.TestCase):
    """The four train steps dumped by ``concerto_jax.dump`` (plus dp under ``lax.scan``)."""

    def meta(self, key: str) -> dict:
        return json.loads(read(path(key, "json")))

    def test_collectives_match_the_parallelism(self):
        for key in STEPS:
            m = self.meta(key)
            self.assertEqual(m["name"], NAMES[key])
            self.assertEqual(m["jax"], "0.10.2")
            for kind in ("spmd", "opt"):
                text = read(path(key, f"{kind}.hlo"))
                counts = collective_counts(text)
                self.assertEqual(counts, m[kind]["collectives"], (key, kind))
                if key == "fsdp":
                    self.assertGreater(counts.get("all-gather", 0), 0, (key, kind))
                    self.assertGreater(counts.get("reduce-scatter", 0), 0, (key, kind))
                else:
                    self.assertGreater(counts.get("all-reduce", 0), 0, (key, kind))
                    self.assertNotIn("all-gather", counts, (key, kind))
                    self.assertNotIn("reduce-scatter", counts, (key, kind))
            self.assertIn("is_scheduled=true", read(path(key, "opt.hlo")).split("\n", 1)[0])
            self.assertNotIn("is_scheduled", read(path(key, "spmd.hlo")).split("\n", 1)[0])
        # The mix reduces over both mesh axes: groups of 4 (model) and of 2 (data).
        text, _ = expand_mesh_replica_groups(read(path("mix", "spmd.hlo")))
        sizes = set()
        for line in text.splitlines():
            if " all-reduce(" in line:
                listed = re.search(r"replica_groups=\{\{([\d,]+)\}", line)
                iota = re.search(r"replica_groups=\[(\d+),(\d+)\]<=", line)
                self.assertTrue(listed or iota, line[:200])
                sizes.add(len(listed.group(1).split(",")) if listed else int(iota.group(2)))
        self.assertTrue({2, 4} <= sizes, sizes)
        # lax.scan keeps XLA's while loops.
        for kind in ("spmd", "opt"):
            ops = [op for _, _, op in opcodes(read(path("dp_scan", f"{kind}.hlo")))]
            self.assertIn("while", ops, kind)

    def test_xla_parses_the_dumps_and_verifies_the_optimised_schedules(self):
        spmd = [path(k, "spmd.hlo") for k in STEPS]
        p = py("-m", "concerto_jax.xla_check", "--allow-unscheduled", *spmd)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr[-2000:])
        rs = json_lines(p.stdout)
        self.assertEqual([r["file"] for r in rs], spmd)
        for r in rs:
            self.assertTrue(r["parsed"], r)
            self.assertFalse(r["scheduled"], r)
            self.assertGreater(r["instructions"], 500, r)
        opt = [path(k, "opt.hlo") for k in STEPS]
        p = py("-m", "concerto_jax.xla_check", *opt)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr[-2000:])
        for r in json_lines(p.stdout):
            self.assertTrue(r["parsed"] and r["scheduled"] and r["verified"], r)
            self.assertGreater(r["sequenced"], 100, r)

    def test_reordered_modules_with_async_pairs_compute_identical_outputs(self):
        for key in ("dp", "tp", "fsdp", "mix"):
            with self.subTest(key):
                original = path(key, "spmd.hlo")
                text, pairs = asyncify(read(original), ("all-reduce", "all-gather",
                                                        "reduce-scatter"))  # fmt: skip
                self.assertGreater(pairs, 0)
                text, moved = move_independent(text)
                self.assertNotEqual(text, read(original))
                resched = path(key, "resched.hlo")
                with open(resched, "w") as fh:
                    fh.write(text)
                p = py("-m", "concerto_jax.xla_check", resched)
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr[-2000:])
                # Against itself once (dp), against its reordered copy always.
                for other in ([original] if key == "dp" else []) + [resched]:
                    p = py("-m", "concerto_jax.compare", original, other, "--seed", "1")
                    self.assertEqual(p.returncode, 0, p.stdout + p.stderr[-3000:])
                    (r,) = json_lines(p.stdout)
                    self.assertTrue(r["identical"], r)
                    self.assertEqual(r["max_abs_diff"], 0.0)
                    self.assertEqual(r["devices"], 8)
                    self.assertEqual(r["outputs"], 89)  # 29 params, 2 x 29 Adam moments, count, loss


if __name__ == "__main__":
    unittest.main()
