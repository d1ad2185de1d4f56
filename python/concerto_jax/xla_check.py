"""Parses HLO text with XLA's own parser (as bundled in jaxlib) and verifies its schedule.

Usage::

    PYTHONPATH=python python -m concerto_jax.xla_check [--allow-unscheduled] FILE...

For each file it prints one JSON line::

    {"file": ..., "parsed": bool, "scheduled": bool, "verified": bool,
     "instructions": N, "computations": N, "sequenced": N, "error": str|null}

and exits 1 if any file fails. A file passes when XLA's parser reads it, the module has a
schedule (its header says ``is_scheduled=true``; XLA's parser then takes every non-fusion
computation's instruction order as its schedule) and the schedule verifies. With
``--allow-unscheduled`` a module without a schedule passes on parsing alone (a plain dump);
one with a schedule must still verify.

The XLA calls (jaxlib >= 0.10.2, module ``jax._src.lib.hlo`` = ``jaxlib._hlo``):

- ``hlo.hlo_module_from_text(text)``: ``xla::ParseAndReturnUnverifiedModule`` (no
  ``HloVerifier``, but ``is_scheduled=true`` builds the schedule and ``CHECK``-verifies it);
- ``module.schedule()``: the ``HloSchedule`` or ``None``;
- ``schedule.verify()``: ``HloSchedule::Verify`` (every non-fusion computation has a
  sequence; each sequence holds every instruction of its computation exactly once, each after
  its operands and control predecessors); raises ``XlaRuntimeError`` otherwise.

On top of ``verify()``, the check re-derives the operand half of it from what XLA returns
(``make_nonfusion_computations``, ``sequence``, ``instructions``, ``operands``): each sequence
is a permutation of its computation's instructions with every operand before its user
(``sequenced`` counts the instructions so checked). jaxlib has no binding for control
predecessors, so those are left to ``verify()``.

XLA aborts the process on a failed ``CHECK`` (possible while parsing a scheduled module), so
each file is parsed in a child process; an abort is reported as a failure with the child's
last error lines. Cost: one child process (about 1 s of jax import) per file plus XLA's
linear-time parse and verification.
"""

from __future__ import annotations

import argparse
import json
import sys

from concerto_jax.hlo_text import last_json_line, run_json_subprocess


def _result(path: str) -> dict:
    return {
        "file": path,
        "parsed": False,
        "scheduled": False,
        "verified": False,
        "instructions": 0,
        "computations": 0,
        "sequenced": 0,
        "error": None,
    }


def own_sequence_check(module, schedule) -> tuple[int, str | None]:
    """Checks every non-fusion computation's sequence from XLA's objects alone.

    Returns ``(instructions checked, error or None)``: the sequence must hold each instruction
    of the computation exactly once, each after its operands. Cost: O(instructions + operands).
    """
    checked = 0
    for comp in module.make_nonfusion_computations():
        seq = [i.name for i in schedule.sequence(comp)]
        pos = {}
        for k, name in enumerate(seq):
            if name in pos:
                return checked, f"{comp.name}: {name} appears more than once in the schedule"
            pos[name] = k
        instrs = list(comp.instructions())
        names = {i.name for i in instrs}
        missing = sorted(names - pos.keys())
        if missing:
            return checked, f"{comp.name}: {missing[0]} is not in the schedule"
        extra = sorted(pos.keys() - names)
        if extra:
            return checked, f"{comp.name}: {extra[0]} is scheduled but not in the computation"
        for ins in instrs:
            for op in ins.operands():
                if pos[op.name] >= pos[ins.name]:
                    return checked, (
                        f"{comp.name}: {ins.name} is not scheduled after its operand {op.name}"
                    )
        checked += len(seq)
    return checked, None


def check_text(text: str, path: str, allow_unscheduled: bool) -> dict:
    """Parses and verifies one module in this process (XLA may abort it: see the module docs)."""
    from jax._src.lib import hlo

    r = _result(path)
    try:
        module = hlo.hlo_module_from_text(text)
    except Exception as e:  # XlaRuntimeError: the parser's message
        r["error"] = f"parse: {e}"
        return r
    r["parsed"] = True
    comps = list(module.computations())
    r["computations"] = len(comps)
    r["instructions"] = sum(len(list(c.instructions())) for c in comps)
    schedule = module.schedule()
    if schedule is None:
        if not allow_unscheduled:
            r["error"] = "the module has no schedule (its header lacks is_scheduled=true)"
        return r
    r["scheduled"] = True
    try:
        schedule.verify()
    except Exception as e:
        r["error"] = f"HloSchedule::Verify: {e}"
        return r
    checked, err = own_sequence_check(module, schedule)
    r["sequenced"] = checked
    if err:
        r["error"] = f"sequence check: {err}"
        return r
    r["verified"] = True
    return r


def passed(r: dict, allow_unscheduled: bool) -> bool:
    """Whether one file's result passes."""
    if r["error"] is not None or not r["parsed"]:
        return False
    return r["verified"] or (allow_unscheduled and not r["scheduled"])


def check_file(path: str, allow_unscheduled: bool, timeout: float = 600) -> dict:
    """Checks one file in a child process; an abort or crash becomes a failed result."""
    args = ["-m", "concerto_jax.xla_check", "--in-process"]
    if allow_unscheduled:
        args.append("--allow-unscheduled")
    rc, out, err = run_json_subprocess(args + [path], timeout=timeout)
    r = last_json_line(out)
    if r is None or r.get("file") != path:
        r = _result(path)
        tail = " | ".join(err.strip().splitlines()[-3:])
        r["error"] = f"XLA aborted the parse (exit status {rc}): {tail}"
    return r


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns 0 when every file passes, 1 otherwise."""
    p = argparse.ArgumentParser(prog="concerto_jax.xla_check", description=__doc__.split("\n")[0])
    p.add_argument("files", nargs="+")
    p.add_argument("--allow-unscheduled", action="store_true", help="parse only when unscheduled")
    p.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    ok = True
    for path in a.files:
        if a.in_process:
            try:
                with open(path) as f:
                    text = f.read()
            except OSError as e:
                r = _result(path)
                r["error"] = f"read: {e}"
            else:
                r = check_text(text, path, a.allow_unscheduled)
        else:
            r = check_file(path, a.allow_unscheduled)
        ok &= passed(r, a.allow_unscheduled)
        print(json.dumps(r), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
