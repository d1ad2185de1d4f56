"""Where the ``concerto`` command line is: :func:`find`.

The adapters run the binary when asked to (``CONCERTO_BIN``, a ``binary=`` argument, or an
option the in-process engine does not take). It is looked for, in order:

1. ``$CONCERTO_BIN``: used as given; an error when it names no executable file.
2. ``release/concerto`` in the ``target_directory`` that ``cargo metadata`` reports for the
   Concerto workspace: the one above the current directory, else the one this package was
   imported from (a checkout on ``PYTHONPATH``). That is where ``cargo build --release -p
   concerto-cli`` put it, whatever ``CARGO_TARGET_DIR`` or ``.cargo/config.toml`` say.
3. ``concerto`` on ``PATH`` (``cargo install --path cli``).

When none is there, the error lists every place tried and why each failed. This module imports
nothing but the standard library, so it works without the engine built.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

__all__ = ["BinaryNotFound", "find", "workspace_target_dir"]

#: The package of the command line in Concerto's workspace (``cli/Cargo.toml``).
CLI_PACKAGE = "concerto-cli"


class BinaryNotFound(FileNotFoundError):
    """No ``concerto`` binary was found; the message lists the places tried."""


def _workspace_manifests(start: str) -> list[str]:
    """``Cargo.toml`` files at ``start`` and above, nearest first."""
    out, d = [], os.path.abspath(start)
    while True:
        m = os.path.join(d, "Cargo.toml")
        if os.path.isfile(m):
            out.append(m)
        parent = os.path.dirname(d)
        if parent == d:
            return out
        d = parent


def workspace_target_dir(start: str | None = None, tried: list[str] | None = None) -> str | None:
    """The ``target_directory`` of the nearest Cargo workspace at or above ``start`` (default:
    the current directory, then this file's checkout) that has the ``concerto-cli`` package,
    from ``cargo metadata``; ``None`` when there is none, with why in ``tried``."""
    tried = [] if tried is None else tried
    starts = [start] if start else [os.getcwd(), os.path.dirname(__file__)]
    cargo = shutil.which("cargo")
    if cargo is None:
        tried.append("cargo metadata: no `cargo` on PATH")
        return None
    seen: set[str] = set()
    for s in starts:
        for manifest in _workspace_manifests(s):
            if manifest in seen:
                continue
            seen.add(manifest)
            r = subprocess.run(
                [cargo, "metadata", "--format-version", "1", "--no-deps", "--offline",
                 "--manifest-path", manifest],
                capture_output=True, text=True,
            )  # fmt: skip
            if r.returncode != 0:
                tried.append(f"cargo metadata --manifest-path {manifest}: {r.stderr.strip()[-300:]}")
                continue
            meta = json.loads(r.stdout)
            if any(p.get("name") == CLI_PACKAGE for p in meta.get("packages", [])):
                return meta["target_directory"]
            tried.append(f"{manifest}: a workspace without {CLI_PACKAGE}")
    if not seen:
        tried.append(f"cargo metadata: no Cargo.toml at or above {', '.join(starts)}")
    return None


def find() -> str:
    """The path of the ``concerto`` binary (see the module docs); :class:`BinaryNotFound`
    listing what was tried when there is none."""
    env = os.environ.get("CONCERTO_BIN")
    if env:
        path = os.path.expanduser(env)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
        raise BinaryNotFound(f"CONCERTO_BIN={env} is not an executable file")
    tried = ["$CONCERTO_BIN: not set"]
    target = workspace_target_dir(tried=tried)
    if target is not None:
        path = os.path.join(target, "release", "concerto")
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
        tried.append(f"{path}: not built (cargo build --release -p {CLI_PACKAGE})")
    on_path = shutil.which("concerto")
    if on_path:
        return on_path
    tried.append("PATH: no `concerto`")
    raise BinaryNotFound("no concerto binary; tried:\n  " + "\n  ".join(tried))
