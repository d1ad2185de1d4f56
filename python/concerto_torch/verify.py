"""Running a traced step for real on one CPU, to compare two orders of the same graph.

The fake process group performs no communication (an all-gather leaves its result
uninitialised), so the collectives are replaced by local stand-ins with the semantics of ``N``
ranks that all hold this rank's data: ``all_reduce`` (sum) multiplies by ``N``,
``all_gather_into_tensor`` concatenates ``N`` copies, ``reduce_scatter_tensor`` (sum) keeps
``N`` times the first chunk, ``all_to_all_single`` and ``broadcast`` copy, ``wait_tensor`` is
the identity. Both graphs get the same stand-ins, so their outputs depend only on the data flow,
which a reorder must not change: on a CPU the results are bitwise equal.
"""

from __future__ import annotations

import copy

import torch
import torch.fx as fx

from .export import group_size, is_collective, is_wait, op_name


def _stand_in(node: fx.Node):
    name = op_name(node).rstrip("_")
    n = group_size(node)
    if name == "all_reduce":
        return lambda x, op, *rest: x * n if op in ("sum", "SUM") else x.clone()
    if name == "all_gather_into_tensor":
        return lambda x, *rest: torch.cat([x] * n)
    if name == "reduce_scatter_tensor":
        return lambda x, op, *rest: x.chunk(n)[0] * (n if op in ("sum", "SUM") else 1)
    return lambda x, *rest: x.clone()


def local_collectives(gm: fx.GraphModule) -> fx.GraphModule:
    """A copy of ``gm`` whose collectives and waits are the local stand-ins above."""
    out = fx.GraphModule(gm, copy.deepcopy(gm.graph))
    for node in out.graph.nodes:
        if is_collective(node):
            node.target = _stand_in(node)
        elif is_wait(node):
            node.target = _identity
    out.recompile()
    return out


def _identity(x):
    return x


def same_outputs(a: fx.GraphModule, b: fx.GraphModule, args) -> tuple[int, float]:
    """Runs both graphs (collectives replaced by :func:`local_collectives`) on ``args`` and
    raises ``AssertionError`` unless every output is bitwise equal; returns (number of output
    tensors, max abs difference)."""
    with torch.no_grad():
        ya = local_collectives(a)(*args)
        yb = local_collectives(b)(*args)
    ya, yb = list(ya), list(yb)
    if len(ya) != len(yb):
        raise AssertionError(f"{len(ya)} outputs against {len(yb)}")
    worst = 0.0
    for i, (x, y) in enumerate(zip(ya, yb)):
        if not torch.equal(x, y):
            raise AssertionError(f"output {i} differs (max abs {(x - y).abs().max().item()})")
        if x.numel():
            worst = max(worst, (x - y).abs().max().item())
    return len(ya), worst
