"""Hand edits of HLO text for the tests: collectives into async pairs, reordering, headers.

The async forms are the ones Concerto's exporter writes (``extract/src/hlo/export.rs``):
``all-reduce-start`` (the result's shape), ``all-gather-start`` and
``collective-permute-start`` (``(operand, result)``), ``reduce-scatter-start`` and
``all-to-all-start`` (``((operands...), result)``), each followed by ``<op>-done`` named
``<name>.done``, whose users read it.
"""

from __future__ import annotations

import re

from concerto_jax.hlo_text import _INSTR, _skip_shape

OPERAND_RESULT = ("all-gather", "collective-permute")
WRAPPED = ("reduce-scatter", "all-to-all")
SAME = ("all-reduce",)


class Instr:
    """One line of the entry computation: name, result shape text, opcode, operands, line."""

    def __init__(self, line: str):
        self.line = line
        m = _INSTR.match(line)
        if not m:
            raise ValueError(f"not an instruction: {line[:120]}")
        self.name = m.group(1)
        rest = m.group(2).lstrip()
        after = _skip_shape(rest)
        self.shape = rest[: len(rest) - len(after)].strip()
        self.opcode = after.split("(", 1)[0].strip()
        args = after[len(self.opcode) :]
        depth, end = 0, 0
        for k, ch in enumerate(args):
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    end = k
                    break
        self.args = args[1:end]
        self.attrs = args[end + 1 :]
        self.operands = re.findall(r"%([\w.\-]+)", self.args)
        self.root = line.lstrip().startswith("ROOT ")


def split_entry(text: str) -> tuple[list[str], list[str], list[str]]:
    """``(lines before the entry's instructions, entry instruction lines, lines after)``."""
    lines = text.splitlines()
    start = next(i for i, s in enumerate(lines) if s.startswith("ENTRY "))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("}"))
    return lines[: start + 1], lines[start + 1 : end], lines[end:]


def computations(text: str) -> list[tuple[int, int]]:
    """``(first, end)`` line ranges of every computation's instruction lines."""
    lines = text.splitlines()
    out, k = [], 0
    while k < len(lines):
        s = lines[k]
        if s and not s[0].isspace() and s.rstrip().endswith("{") and not s.startswith("HloModule"):
            end = next(j for j in range(k + 1, len(lines)) if lines[j].startswith("}"))
            out.append((k + 1, end))
            k = end
        k += 1
    return out


def rename_uses(line: str, old: str, new: str) -> str:
    """Replaces operand ``%old`` by ``%new`` (whole names only)."""
    return re.sub(r"%" + re.escape(old) + r"(?![\w.\-])", "%" + new, line)


def scheduled_header(text: str) -> str:
    """Adds ``is_scheduled=true`` to the ``HloModule`` header (once)."""
    head, rest = text.split("\n", 1)
    if "is_scheduled=true" not in head:
        name_end = head.index(",") if "," in head else len(head)
        head = head[:name_end] + ", is_scheduled=true" + head[name_end:]
    return head + "\n" + rest


def asyncify(text: str, opcodes: tuple[str, ...], spread: bool = True) -> tuple[str, int]:
    """Turns the synchronous collectives of ``opcodes`` into async pairs, in every computation
    (the entry, and the bodies of calls and loops).

    With ``spread``, each start moves up to just after its last operand and each done down to
    just before its first user (a real reordering); otherwise the done follows its start.
    Returns ``(text with is_scheduled=true, pairs)``.
    """
    lines = text.splitlines()
    out: list[str] = []
    pairs, prev = 0, 0
    for first, end in computations(text):
        out.extend(lines[prev:first])
        body, n = _asyncify_body(lines[first:end], opcodes)
        out.extend(spread_pairs(body) if spread and n else body)
        pairs += n
        prev = end
    out.extend(lines[prev:])
    return scheduled_header("\n".join(out) + "\n"), pairs


def _asyncify_body(body: list[str], opcodes: tuple[str, ...]) -> tuple[list[str], int]:
    instrs = [Instr(s) for s in body]
    shapes = {i.name: i.shape for i in instrs}
    out: list[str] = []
    converted: dict[str, str] = {}
    for ins in instrs:
        line = ins.line
        for old in ins.operands:
            if old in converted:
                line = rename_uses(line, old, converted[old])
        if ins.opcode not in opcodes or ins.root:
            out.append(line)
            continue
        ops = [shapes[o] for o in ins.operands]
        if ins.opcode in SAME:
            start_shape = ins.shape
        elif ins.opcode in OPERAND_RESULT:
            one = ops[0] if len(ops) == 1 else "(" + ", ".join(ops) + ")"
            start_shape = f"({one}, {ins.shape})"
        elif ins.opcode in WRAPPED:
            start_shape = "((" + ", ".join(ops) + f"), {ins.shape})"
        else:
            raise ValueError(f"no async form for {ins.opcode}")
        indent = line[: len(line) - len(line.lstrip())]
        out.append(
            f"{indent}%{ins.name} = {start_shape} {ins.opcode}-start({ins.args}){ins.attrs}"
        )
        out.append(f"{indent}%{ins.name}.done = {ins.shape} {ins.opcode}-done(%{ins.name})")
        converted[ins.name] = f"{ins.name}.done"
    return out, len(converted)


def spread_pairs(lines: list[str]) -> list[str]:
    """Moves every ``-start`` up after its last operand and every ``-done`` down before its
    first user, keeping every other line in place (a valid order stays valid)."""
    instrs = [Instr(s) for s in lines]
    order = [i.name for i in instrs]
    by_name = {i.name: i for i in instrs}
    for ins in instrs:
        if ins.opcode.endswith("-start"):
            order.remove(ins.name)
            last = max((order.index(o) for o in ins.operands if o in by_name), default=-1)
            order.insert(last + 1, ins.name)
    for ins in instrs:
        if ins.opcode.endswith("-done"):
            order.remove(ins.name)
            users = [k for k, n in enumerate(order) if ins.name in by_name[n].operands]
            order.insert(users[0] if users else len(order) - 1, ins.name)
    return [by_name[n].line for n in order]


def move_independent(text: str) -> tuple[str, str]:
    """In the largest computation, moves the instruction (not a parameter, constant or root)
    whose first user is farthest from it to just before that user. Returns
    ``(text, moved name)``; raises ``ValueError`` when nothing can move."""
    lines = text.splitlines()
    first, end = max(computations(text), key=lambda r: r[1] - r[0])
    instrs = [Instr(s) for s in lines[first:end]]
    users: dict[str, int] = {}
    for j, u in enumerate(instrs):
        for o in u.operands:
            users.setdefault(o, j)
    best, gap = None, 1
    for k, ins in enumerate(instrs):
        if ins.opcode in ("parameter", "constant") or ins.root or ins.name not in users:
            continue
        if users[ins.name] - k > gap:
            best, gap = k, users[ins.name] - k
    if best is None:
        raise ValueError("no instruction can move")
    ins = instrs.pop(best)
    instrs.insert(users[ins.name] - 1, ins)
    body = [i.line for i in instrs]
    return "\n".join(lines[:first] + body + lines[end:]) + "\n", ins.name
