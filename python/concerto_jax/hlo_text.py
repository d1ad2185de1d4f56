"""Small helpers shared by the scripts: XLA flags, opcode counts of HLO text, subprocess runs.

Nothing here imports jax, so :func:`configure_xla` can run before jax starts.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter

#: Collective opcodes (and their async forms) counted by :func:`collective_counts`.
#: ``async-start``/``async-done`` count only when they wrap a collective, under the name of
#: the wrapped op (``reduce-scatter-start`` ...), as XLA's printer writes them.
COLLECTIVES = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
    "ragged-all-to-all",
    "collective-permute",
    "collective-broadcast",
)

_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
_HEADER = re.compile(r"^\s*(?:ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$")


def configure_xla(devices: int, extra: list[str] | None = None) -> None:
    """Sets ``XLA_FLAGS`` for ``devices`` host (CPU) devices plus ``extra`` flags.

    Must run before ``jax`` is imported in this process; flags already in ``XLA_FLAGS`` are
    kept (ours come last, so they win).
    """
    flags = [f"--xla_force_host_platform_device_count={devices}"] + list(extra or [])
    old = os.environ.get("XLA_FLAGS", "").strip()
    os.environ["XLA_FLAGS"] = " ".join(([old] if old else []) + flags)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")


def _skip_shape(rest: str) -> str:
    """Returns ``rest`` after the leading result shape (a tuple in parentheses or a token)."""
    rest = rest.lstrip()
    if rest.startswith("("):
        depth = 0
        for i, ch in enumerate(rest):
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    return rest[i + 1 :].lstrip()
        return ""
    parts = rest.split(None, 1)
    return parts[1] if len(parts) > 1 else ""


def opcodes(text: str) -> list[tuple[str, str, str]]:
    """Every instruction of an HLO module text as ``(computation, name, opcode)``, text order.

    A light scan of XLA's printed form (one instruction per line), not a parser: XLA's own
    parser (:mod:`concerto_jax.xla_check`) is the judge of validity. Cost: O(len(text)).
    """
    out = []
    comp = ""
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("//") or s.startswith("HloModule"):
            continue
        m = _INSTR.match(line)
        if m and "(" in m.group(2):
            after = _skip_shape(m.group(2))
            op = after.split("(", 1)[0].strip()
            if op:
                out.append((comp, m.group(1), op))
            continue
        # A computation header: unindented, ending with `{` (its parameter list may hold
        # `/*index=5*/` comments, so `=` does not tell it from an instruction).
        if line[:1].strip() and s.endswith("{"):
            h = _HEADER.match(line)
            comp = h.group(1) if h else comp
    return out


def collective_counts(text: str) -> dict[str, int]:
    """Counts of collective instructions by opcode, over every computation of the module.

    A loop body's collectives count once (not once per iteration). ``async-start`` ops count
    as ``<wrapped>-start`` when the wrapped computation's root is a collective (the wrapped
    computation itself is then not counted again); other async ops count as ``async-start``.
    Cost: O(len(text)).
    """
    ops = opcodes(text)
    # The wrapped computation of an async-start: `calls=NAME`.
    comp_ops: dict[str, list[str]] = {}
    for comp, _, op in ops:
        comp_ops.setdefault(comp, []).append(op)
    wrapped = set()
    counts: Counter[str] = Counter()
    for line in text.splitlines():
        m = _INSTR.match(line)
        if not m:
            continue
        op = _skip_shape(m.group(2)).split("(", 1)[0].strip()
        if op in ("async-start", "async-done"):
            c = re.search(r"calls=%?([\w.\-]+)", line)
            inner = None
            if c:
                wrapped.add(c.group(1))
                inner = next((o for o in comp_ops.get(c.group(1), []) if o in COLLECTIVES), None)
            suffix = op.split("-", 1)[1]
            counts[f"{inner}-{suffix}" if inner else op] += 1
    for comp, _, op in ops:
        if comp in wrapped or op in ("async-start", "async-done"):
            continue
        base = op[: -len("-start")] if op.endswith("-start") else op
        base = base[: -len("-done")] if base.endswith("-done") else base
        if base in COLLECTIVES:
            counts[op] += 1
    return dict(sorted(counts.items()))


def run_json_subprocess(args: list[str], timeout: float | None = None) -> tuple[int, str, str]:
    """Runs ``python -m ...`` style ``args`` with this interpreter; returns (rc, stdout, stderr).

    Used where XLA may abort the process (a ``CHECK`` failure), which Python cannot catch.
    """
    env = dict(os.environ)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    p = subprocess.run(
        [sys.executable] + args, capture_output=True, text=True, env=env, timeout=timeout
    )
    return p.returncode, p.stdout, p.stderr


def last_json_line(stdout: str) -> dict | None:
    """The last line of ``stdout`` that parses as a JSON object, or ``None``."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    return None


# --- Mesh-form replica groups -------------------------------------------------------------

_MESH_RG = re.compile(
    r"replica_groups=(?P<mesh>maximal_mesh\[[^\]]*\]|mesh\[[^\]]*\](?:,\s*device_ids=\((?P<ids>[^)]*(?:\)[^)]*)?)\))?)"
    r"\s*\{(?P<axes>[^}]*)\}"
)
_AXIS_DEF = re.compile(r"""['"]([^'"]+)['"]\s*=\s*(\d+)""")
_AXIS_REF = re.compile(r"""['"]([^'"]+)['"](?:\s*:\s*\(\s*(\d+)\s*\)\s*(\d+))?""")


def _device_ids(text: str | None, n: int) -> list[int]:
    """The mesh's device array, row-major: ``iota(n)``, ``[r..]T(p..)`` or an explicit list."""
    import numpy as np

    if text is None:
        return list(range(n))
    text = text.strip()
    m = re.fullmatch(r"\[([\d,\s]+)\](?:T\(([\d,\s]+)\))?", text)
    if m:
        dims = [int(x) for x in m.group(1).split(",")]
        arr = np.arange(int(np.prod(dims))).reshape(dims)
        if m.group(2):
            arr = arr.transpose([int(x) for x in m.group(2).split(",")])
        ids = [int(x) for x in arr.reshape(-1)]
    else:
        ids = [int(x) for x in text.split(",") if x.strip()]
    if len(ids) != n:
        raise ValueError(f"device_ids=({text}) has {len(ids)} devices, the mesh {n}")
    return ids


def mesh_replica_groups(mesh: str, ids: str | None, axes: str) -> list[list[int]]:
    """Expands XLA's mesh form of replica groups (``mesh['a'=2,'b'=4] {'b'}``) into lists.

    Semantics of XLA's ``MeshAxesReplicaGroupList::flattened_replica_groups``
    (``xla/hlo/ir/replica_group.cc``): the device array (``iota(N)`` or ``device_ids=``) is
    row-major over the mesh axes; a sub-axis ``'a':(pre)size`` splits axis ``a`` into
    ``[pre, size, rest]`` (major to minor); the array is transposed to
    ``[axes not listed, in mesh order] + [listed (sub-)axes, in the listed order]`` and cut into
    consecutive groups of the listed sizes' product. ``maximal_mesh[device_id=N] {}`` is the
    single group ``{N}``. Raises ``ValueError`` on an axis the mesh does not have or a sub-axis
    that does not divide it. Cost: O(devices).
    """
    import numpy as np

    mx = re.fullmatch(r"maximal_mesh\[\s*device_id\s*=\s*(\d+)\s*\]", mesh.strip())
    if mx:
        return [[int(mx.group(1))]]
    defs = [(name, int(size)) for name, size in _AXIS_DEF.findall(mesh)]
    names = [d[0] for d in defs]
    n = int(np.prod([d[1] for d in defs])) if defs else 1
    arr_ids = _device_ids(ids, n)
    refs = []  # (axis index, pre, size, listed order)
    for k, (name, pre, size) in enumerate(_AXIS_REF.findall(axes)):
        if name in names:
            i = names.index(name)
        elif name.isdigit() and int(name) < len(names):
            i = int(name)
        else:
            raise ValueError(f"replica groups name axis '{name}', not in {mesh}")
        full = defs[i][1]
        p, s = (int(pre), int(size)) if size else (1, full)
        if p <= 0 or s <= 0 or full % (p * s):
            raise ValueError(f"sub-axis '{name}':({p}){s} does not divide the axis of size {full}")
        refs.append((i, p, s, k))
    dims = []  # (size, listed order or None), major to minor
    for i, (_, full) in enumerate(defs):
        cur = 1
        for _, p, s, k in sorted((r for r in refs if r[0] == i), key=lambda r: r[1]):
            if p % cur:
                raise ValueError(f"overlapping sub-axes of '{names[i]}' in {{{axes}}}")
            if p > cur:
                dims.append((p // cur, None))
            dims.append((s, k))
            cur = p * s
        if full % cur:
            raise ValueError(f"sub-axes of '{names[i]}' do not divide its size {full}")
        if full > cur or not any(r[0] == i for r in refs):
            dims.append((full // cur, None))
    arr = np.array(arr_ids, dtype=np.int64).reshape([d[0] for d in dims] or [1])
    free = [j for j, d in enumerate(dims) if d[1] is None]
    grouped = sorted((j for j, d in enumerate(dims) if d[1] is not None), key=lambda j: dims[j][1])
    if dims:
        arr = arr.transpose(free + grouped)
    per = int(np.prod([dims[j][0] for j in grouped])) if grouped else 1
    flat = [int(x) for x in arr.reshape(-1)]
    return [flat[g : g + per] for g in range(0, len(flat), per)]


def expand_mesh_replica_groups(text: str) -> tuple[str, int]:
    """Rewrites every mesh-form ``replica_groups=`` of an HLO text into the explicit list form.

    Returns ``(text, replacements)``. Needed because jaxlib 0.10.2's HLO -> StableHLO import
    turns a mesh-form group into ``#stablehlo.replica_group_mesh_axes`` naming a mesh that it
    does not define (``'stablehlo.all_reduce' op INVALID_ARGUMENT: Unknown axis axis_0`` when
    compiling). The list form means the same groups (see :func:`mesh_replica_groups`).
    """

    def repl(m: re.Match) -> str:
        groups = mesh_replica_groups(m.group("mesh"), m.group("ids"), m.group("axes"))
        return "replica_groups={" + ",".join("{" + ",".join(map(str, g)) + "}" for g in groups) + "}"

    return _MESH_RG.subn(repl, text)


# --- Shardings of a partitioned module --------------------------------------------------


def _strip_attr(line: str, attr: str) -> str:
    """Removes every ``, attr={...}`` (balanced braces) from one instruction line."""
    key = f", {attr}={{"
    while True:
        i = line.find(key)
        if i < 0:
            return line
        j = i + len(key)
        depth = 1
        while j < len(line) and depth:
            if line[j] == "{":
                depth += 1
            elif line[j] == "}":
                depth -= 1
            j += 1
        line = line[:i] + line[j:]


def manual_shardings(text: str) -> str:
    """Marks a module that XLA already partitioned as all-manual, for compiling it again.

    XLA's CPU client accepts ``num_partitions=8`` only with SPMD partitioning on, and the
    after-partitioning module still carries the shardings of the global program (a
    ``devices=[8,1]`` parameter of per-device shape ``s32[2,32]`` would be split again into
    ``s32[1,32]``). Every ``sharding=`` attribute is removed and the entry computation's
    parameters and root get ``sharding={manual}``, so the partitioner leaves each device's
    program, collectives included, as written. Cost: O(len(text)).
    """
    out = []
    in_entry = False
    for line in text.splitlines():
        line = _strip_attr(line, "sharding")
        s = line.lstrip()
        if s.startswith("ENTRY "):
            in_entry = True
        elif in_entry and s.startswith("}"):
            in_entry = False
        elif in_entry and _INSTR.match(line):
            m = _INSTR.match(line)
            op = _skip_shape(m.group(2)).split("(", 1)[0].strip()
            if op == "parameter" or s.startswith("ROOT "):
                line = line + ", sharding={manual}"
        out.append(line)
    return "\n".join(out) + "\n"
