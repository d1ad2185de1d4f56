"""Concerto's plan back onto the FX graph: one node order that follows the plan's streams.

``concerto optimize GRAPH.json --plan PLAN.json`` writes the plan (``graph/src/plan.rs``): each
stream (``compute``, ``comm.intra-node``, ``comm.inter-node``) with its ops in launch order,
and the cross-stream waits ``[producer, consumer]``. An FX graph has one order, so
:func:`merge` interleaves the streams (a topological merge): at each step it takes the head of
a stream whose waits are all met, a communication stream's head first, so that a collective is
issued as early as the plan's order allows and the compute after it overlaps it. The merge
keeps every stream's order and every wait; it fails (``ReorderError``) on a plan that
deadlocks.

:func:`reorder` then lays the graph out in that order: placeholders first; before each plan
op, the nodes not in the plan that it reads and that are not placed yet (each ``wait_tensor``,
view and ``getitem``), so each of these lands right before its first user; nodes nobody reads
before the output last. It checks the order (``graph.lint()``, and that no plan op is placed
before an op it reads) and recompiles the module. Cost: O(nodes + edges + waits * streams).
"""

from __future__ import annotations

import argparse
import json
import sys

import torch.fx as fx

from .export import is_collective, is_view, is_wait


class ReorderError(ValueError):
    """A plan that does not fit the graph (names the op) or cannot be merged."""


def load_plan(plan) -> dict:
    """A plan record from a dict, a JSON string or a file path."""
    if isinstance(plan, dict):
        return plan
    if isinstance(plan, str) and plan.lstrip().startswith("{"):
        return json.loads(plan)
    with open(plan) as f:
        return json.load(f)


def merge(plan) -> list[str]:
    """One launch order of every op of ``plan`` that keeps each stream's order and every wait;
    among ready stream heads, communication streams go first."""
    plan = load_plan(plan)
    if plan.get("format") != "concerto-plan":
        raise ReorderError(f"not a Concerto plan (format {plan.get('format')!r})")
    streams = [(s["stream"], list(s["ops"])) for s in plan["streams"]]
    # communication streams before compute: collectives are issued as early as allowed
    streams.sort(key=lambda s: s[0] == "compute")
    needs: dict[str, list[str]] = {}
    for p, c in plan.get("waits", []):
        needs.setdefault(c, []).append(p)
    done: set[str] = set()
    heads = [0] * len(streams)
    order: list[str] = []
    total = sum(len(ops) for _, ops in streams)
    while len(order) < total:
        for i, (_, ops) in enumerate(streams):
            if heads[i] < len(ops) and all(p in done for p in needs.get(ops[heads[i]], ())):
                op = ops[heads[i]]
                heads[i] += 1
                order.append(op)
                done.add(op)
                break
        else:
            stuck = [ops[h] for (_, ops), h in zip(streams, heads) if h < len(ops)]
            raise ReorderError(f"the plan deadlocks: no stream head is ready ({', '.join(stuck)})")
    return order


def plan_nodes(graph: fx.Graph) -> list[fx.Node]:
    """The nodes the export writes as ops (so the plan must name): every ``call_function``
    that is not a view, a ``getitem`` or a ``wait_tensor`` and produces a tensor."""
    from .export import tensors

    return [n for n in graph.nodes if n.op == "call_function" and not is_view(n)
            and not is_wait(n) and (is_collective(n) or tensors(n.meta.get("val")))]  # fmt: skip


def reorder_graph(graph: fx.Graph, plan) -> list[str]:
    """Reorders ``graph``'s nodes in place to ``plan`` (see the module docs); returns the
    merged plan order of op names."""
    order = merge(plan)
    by_name = {n.name: n for n in graph.nodes}
    planned = set()
    for name in order:
        if name not in by_name:
            raise ReorderError(f"the plan names `{name}`, which is not a node of the graph")
        planned.add(by_name[name])
    missing = [n.name for n in plan_nodes(graph) if n not in planned]
    if missing:
        raise ReorderError(f"the plan misses {len(missing)} ops of the graph: {', '.join(missing[:5])}")

    nodes = list(graph.nodes)
    output = next(n for n in reversed(nodes) if n.op == "output")
    placed: set[fx.Node] = set()
    final: list[fx.Node] = []

    def place(node: fx.Node, user: fx.Node | None) -> None:
        # iterative post-order over not-yet-placed, non-plan inputs
        stack = [(node, False)]
        while stack:
            n, expanded = stack.pop()
            if n in placed:
                continue
            if expanded:
                placed.add(n)
                final.append(n)
                continue
            stack.append((n, True))
            for a in reversed(n.all_input_nodes):
                if a in placed:
                    continue
                if a in planned:
                    who = user.name if user is not None else n.name
                    raise ReorderError(f"the plan puts `{who}` before `{a.name}`, which it reads")
                stack.append((a, False))

    for n in nodes:
        if n.op in ("placeholder", "get_attr"):
            place(n, None)
    for name in order:
        place(by_name[name], by_name[name])
    for n in nodes:  # the rest: nodes read only by the output, or by nobody
        if n is not output and n not in placed:
            place(n, None)
    final.append(output)
    assert len(final) == len(nodes), (len(final), len(nodes))
    for n in final:
        output.prepend(n) if n is not output else None
    graph.lint()
    return order


def reorder(gm: fx.GraphModule, plan) -> fx.GraphModule:
    """``gm`` with its nodes in the order of Concerto's ``plan`` (a dict, JSON text or a path),
    linted and recompiled (the module is changed in place and returned)."""
    reorder_graph(gm.graph, plan)
    gm.recompile()
    return gm


def check_order(graph, plan) -> None:
    """Raises ``ReorderError`` unless the order of ``graph`` (a ``Graph`` or
    ``GraphModule``) keeps every stream's order and every wait of ``plan``, and each
    ``wait_tensor`` comes right before its first consumer (only other waits, views and
    ``getitem`` between)."""
    graph = getattr(graph, "graph", graph)
    plan = load_plan(plan)
    nodes = list(graph.nodes)
    pos = {n.name: i for i, n in enumerate(nodes)}
    for s in plan["streams"]:
        ps = [pos[o] for o in s["ops"]]
        if ps != sorted(ps):
            raise ReorderError(f"stream {s['stream']}'s order is not kept")
    for p, c in plan.get("waits", []):
        if pos[p] >= pos[c]:
            raise ReorderError(f"wait `{p}` -> `{c}` is not kept")
    for n in nodes:
        if not is_wait(n) or not n.users:
            continue
        first = min(pos[u.name] for u in n.users)
        between = nodes[pos[n.name] + 1:first]
        if any(not (is_wait(b) or is_view(b)) for b in between):
            raise ReorderError(f"`{n.name}` is not right before its first consumer")


def main(argv: list[str] | None = None) -> int:
    from . import examples
    from .export import add_example_arguments, config_of
    from .trace import trace_example
    from .verify import same_outputs

    ap = argparse.ArgumentParser(
        prog="python -m concerto_torch.reorder",
        description="Re-trace an example step, put its FX graph in the order of Concerto's "
                    "plan, and check the reordered graph against the original.")  # fmt: skip
    ap.add_argument("example", choices=examples.PARALLEL)
    add_example_arguments(ap)
    ap.add_argument("--plan", required=True, help="the plan `concerto optimize --plan` wrote")
    ap.add_argument("-o", "--output", help="write the reordered graph's Python code here")
    a = ap.parse_args(argv)
    gm, step = trace_example(a.example, a.ranks, config_of(a))
    before = [n.name for n in gm.graph.nodes]
    original = fx.GraphModule(gm, gm.graph.__deepcopy__())
    reorder(gm, a.plan)
    check_order(gm, a.plan)
    after = [n.name for n in gm.graph.nodes]
    moved = sum(1 for x, y in zip(before, after) if x != y)
    colls = [n.name for n in gm.graph.nodes if is_collective(n)]
    print(f"{step.name}: {len(after)} nodes, {moved} at a new position; collectives issued in "
          f"the plan's order: {', '.join(colls[:4])}{', ...' if len(colls) > 4 else ''}")
    diff = same_outputs(original, gm, step.args)
    print(f"outputs: {diff[0]} tensors, all equal to the original's "
          f"(max abs difference {diff[1]:.3g})")
    if a.output:
        with open(a.output, "w") as f:
            f.write(gm.code)
    return 0


if __name__ == "__main__":
    sys.exit(main())
