"""Where the adapters find the ``concerto`` binary (:mod:`concerto.binary`): ``CONCERTO_BIN``,
then the workspace's cargo target directory from ``cargo metadata``, then ``PATH``; an error
listing every place tried. Each route is checked with stand-ins (a fake ``cargo`` and fake
binaries in temporary folders), and the real workspace's answer against ``cargo metadata``.

Run with the other Python tests (``python/tests``): standard library only, no engine needed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = os.path.dirname(HERE)
ROOT = os.path.dirname(PYTHON)
sys.path.insert(0, PYTHON)

import concerto  # noqa: E402
from concerto import binary  # noqa: E402


def executable(path: str, text: str = "#!/bin/sh\nexit 0\n") -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return path


class Find(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="concerto-binary-")
        self.cwd = os.getcwd()

    def tearDown(self):
        os.chdir(self.cwd)
        shutil.rmtree(self.tmp)

    def env(self, **values):
        env = {k: v for k, v in os.environ.items() if k != "CONCERTO_BIN"}
        env.update(values)
        return mock.patch.dict(os.environ, env, clear=True)

    def test_concerto_bin_is_used_as_given_and_must_be_executable(self):
        fake = executable(os.path.join(self.tmp, "bin", "my-concerto"))
        with self.env(CONCERTO_BIN=fake):
            self.assertEqual(binary.find(), fake)
        missing = os.path.join(self.tmp, "nowhere", "concerto")
        with self.env(CONCERTO_BIN=missing):
            with self.assertRaises(binary.BinaryNotFound) as e:
                binary.find()
            self.assertIn(missing, str(e.exception))

    def test_the_target_directory_cargo_metadata_reports(self):
        # A workspace whose `cargo metadata` (a stand-in on PATH) names concerto-cli and a target
        # directory outside it, as CARGO_TARGET_DIR or a .cargo/config.toml would.
        ws, target = os.path.join(self.tmp, "ws"), os.path.join(self.tmp, "elsewhere")
        os.makedirs(ws)
        open(os.path.join(ws, "Cargo.toml"), "w").close()
        meta = {"packages": [{"name": "concerto-cli"}], "target_directory": target}
        tools = os.path.join(self.tmp, "tools")
        executable(os.path.join(tools, "cargo"), f"#!/bin/sh\necho '{json.dumps(meta)}'\n")
        os.chdir(ws)
        with self.env(PATH=tools):
            with self.assertRaises(binary.BinaryNotFound) as e:
                binary.find()
            self.assertIn(os.path.join(target, "release", "concerto"), str(e.exception))
            self.assertIn("not built", str(e.exception))
            built = executable(os.path.join(target, "release", "concerto"))
            self.assertEqual(binary.find(), built)

    def test_a_workspace_without_the_cli_is_passed_over_for_path(self):
        ws = os.path.join(self.tmp, "other")
        os.makedirs(ws)
        open(os.path.join(ws, "Cargo.toml"), "w").close()
        meta = {"packages": [{"name": "something-else"}], "target_directory": self.tmp}
        tools = os.path.join(self.tmp, "tools")
        executable(os.path.join(tools, "cargo"), f"#!/bin/sh\necho '{json.dumps(meta)}'\n")
        installed = executable(os.path.join(tools, "concerto"))
        os.chdir(ws)
        with self.env(PATH=tools):
            self.assertEqual(binary.find(), installed)

    def test_the_error_lists_every_place_tried(self):
        empty = os.path.join(self.tmp, "empty")
        os.makedirs(empty)
        os.chdir(empty)
        with self.env(PATH=empty):
            with self.assertRaises(binary.BinaryNotFound) as e:
                binary.find()
        msg = str(e.exception)
        for part in ("$CONCERTO_BIN: not set", "no `cargo` on PATH", "PATH: no `concerto`"):
            self.assertIn(part, msg)

    def test_this_workspace_gives_cargos_own_answer(self):
        meta = json.loads(subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--no-deps", "--offline"],
            cwd=ROOT, capture_output=True, text=True, check=True).stdout)  # fmt: skip
        want = os.path.join(meta["target_directory"], "release", "concerto")
        self.assertEqual(binary.workspace_target_dir(ROOT), meta["target_directory"])
        # From a subfolder with its own Cargo workspace (python/), the CLI's workspace still wins.
        self.assertEqual(binary.workspace_target_dir(PYTHON), meta["target_directory"])
        os.chdir(ROOT)
        with self.env():
            if os.path.exists(want):  # the test command builds it before these tests
                self.assertEqual(binary.find(), want)
            else:
                with self.assertRaises(binary.BinaryNotFound) as e:
                    binary.find()
                self.assertIn(want, str(e.exception))


class Package(unittest.TestCase):
    def test_a_checkout_without_the_engine_says_how_to_build_it(self):
        # python/ on sys.path, the engine not built there: the package imports, its engine's
        # names say how to get them.
        self.assertEqual(os.path.dirname(concerto.__file__), os.path.join(PYTHON, "concerto"))
        self.assertFalse(hasattr(concerto, "optimize"))
        with self.assertRaises(AttributeError) as e:
            concerto.optimize  # noqa: B018
        self.assertIn("pip install ./python", str(e.exception))


if __name__ == "__main__":
    unittest.main()
