"""Concerto's order inside ``torch.compile``: an Inductor ``post_grad_custom_post_pass``.

:class:`ConcertoPass` runs on Inductor's post-grad graph (aten ops, functional collectives
and their ``wait_tensor``, ``meta["val"]`` on every node): it writes the graph in Concerto's
format (:mod:`concerto_torch.export`), asks Concerto's engine for a plan in process
(:func:`concerto.optimize`, from ``pip install ./python``; the GIL is released while it
solves), and puts the graph in the plan's order (:func:`concerto_torch.reorder.reorder_graph`).
With ``CONCERTO_BIN`` set, a ``binary`` given, or options the engine does not take, it runs
``concerto optimize GRAPH --plan PLAN`` instead (the binary that :func:`concerto.binary.find`
finds: ``CONCERTO_BIN``, the workspace's cargo target directory, ``PATH``). A plan given to the
constructor is applied as is instead (its op names must be the post-grad graph's).

:func:`inductor_config` is the ``torch._inductor.config.patch`` that installs the pass and
switches off what else in Inductor moves nodes: the comm/compute overlap reorder, the locality
and peak-memory reorders of the scheduler, the simple overlap pass (collectives earlier, waits
later), overlap scheduling and FX bucketing of collectives. Inductor's fusion still groups
nodes into kernels; the post-pass ``stable_topological_sort`` leaves a valid order as it is.

    with torch._inductor.config.patch(inductor_config(ConcertoPass())):
        compiled = torch.compile(step)
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile

import torch
from torch._inductor.custom_graph_pass import CustomGraphPass

from .export import to_concerto
from .reorder import reorder_graph


def concerto_bin() -> str:
    """The concerto binary (:func:`concerto.binary.find`: ``$CONCERTO_BIN``, the workspace's
    cargo target directory, ``PATH``); an error listing what was tried when there is none."""
    from concerto.binary import find

    return find()


#: How the last :func:`optimize` ran: ``"engine"`` (in process) or ``"cli"``.
LAST_BACKEND: str | None = None


def engine():
    """The in-process engine (:mod:`concerto`), or ``None`` when it is not installed."""
    try:
        import concerto
    except ImportError:
        return None
    return concerto if hasattr(concerto, "optimize") else None


def optimize(record: dict, args=("--work-limit", "500"), binary: str | None = None) -> dict:
    """Concerto's plan for a graph record: :func:`concerto.optimize` in process, or
    ``concerto optimize GRAPH --plan PLAN ARGS`` with ``binary``, ``CONCERTO_BIN`` or options
    the engine does not take (see the module docs)."""
    global LAST_BACKEND
    eng = engine()
    if binary is None and not os.environ.get("CONCERTO_BIN") and eng is not None:
        from concerto._args import kwargs_from_args

        kwargs = kwargs_from_args(args)
        if kwargs is not None:
            LAST_BACKEND = "engine"
            return eng.optimize(record, **kwargs).plan
    LAST_BACKEND = "cli"
    with tempfile.TemporaryDirectory() as d:
        g, p = os.path.join(d, "graph.json"), os.path.join(d, "plan.json")
        with open(g, "w") as f:
            json.dump(record, f)
        r = subprocess.run([binary or concerto_bin(), "optimize", g, "--plan", p, *args],
                           capture_output=True, text=True)  # fmt: skip
        if r.returncode != 0:
            raise RuntimeError(f"concerto optimize failed ({r.returncode}): {r.stderr.strip()}")
        with open(p) as f:
            return json.load(f)


class ConcertoPass(CustomGraphPass):
    """The post-grad pass (see the module docs). ``applied`` records, per graph it ran on,
    the plan and the node order it left."""

    def __init__(self, plan=None, args=("--work-limit", "500"), gpus_per_node: int = 8,
                 binary: str | None = None, name: str = "inductor"):  # fmt: skip
        self.plan = plan
        self.args = tuple(args)
        self.gpus_per_node = gpus_per_node
        self.binary = binary
        self.name = name
        self.applied: list[dict] = []

    def __call__(self, graph: torch.fx.Graph) -> None:
        plan = self.plan
        record = None
        if plan is None:
            record = to_concerto(graph, f"{self.name}_{len(self.applied)}", self.gpus_per_node)
            plan = optimize(record, self.args, self.binary)
        order = reorder_graph(graph, plan)
        self.applied.append({"plan": plan, "graph": record, "merged": order,
                             "nodes": [n.name for n in graph.nodes]})  # fmt: skip

    def uuid(self):
        # None: Inductor's FX graph cache is bypassed, so the pass always runs (its plan
        # comes from the engine or a binary the cache key cannot see).
        return None


def inductor_config(pass_: ConcertoPass) -> dict:
    """``torch._inductor.config.patch`` settings: the pass installed, Inductor's own
    reorderings off (the keys this torch has)."""
    import torch._inductor.config as c

    want = {
        "post_grad_custom_post_pass": pass_,
        "reorder_for_compute_comm_overlap": False,
        "reorder_for_locality": False,
        "reorder_for_peak_memory": False,
        "_fuse_ddp_communication": False,
        "bucket_all_gathers_fx": "none",
        "bucket_all_reduces_fx": "none",
        "bucket_reduce_scatters_fx": "none",
        "aten_distributed_optimizations.enable_overlap_scheduling": False,
        "aten_distributed_optimizations.enable_simple_overlap": False,
        "aten_distributed_optimizations.pre_bucketing_fsdp_collectives": False,
    }
    keys = c.get_config_copy().keys()
    return {k: v for k, v in want.items() if k in keys}
