"""Tracing a training step into one aten-level FX graph on a CPU, with no GPU and no peers.

:func:`fake_world` starts the ``fake`` process-group backend
(``torch.testing._internal.distributed.fake_pg.FakeStore``) as rank 0 of ``ranks``: collectives
trace with their real group size and shapes, and run eagerly as no-ops. :func:`trace` runs
``make_fx`` under ``FakeTensorMode`` (``tracing_mode="fake"``): no tensor is materialised,
every node carries its output's fake tensor in ``node.meta["val"]`` (the shapes and dtypes the
exporter writes), and ``torch.autograd.grad`` inside the step traces the backward as aten ops.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch.fx.experimental.proxy_tensor import make_fx


def fake_world(ranks: int) -> None:
    """Makes the default process group a fake one of ``ranks`` ranks (this process is rank 0);
    replaces a default group of another size or backend."""
    from torch.testing._internal.distributed.fake_pg import FakeStore

    if dist.is_initialized():
        if dist.get_world_size() == ranks and dist.get_backend() == "fake":
            return
        dist.destroy_process_group()
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=ranks)


def trace(fn, args, fake: bool = True) -> torch.fx.GraphModule:
    """The aten graph of ``fn(*args)``: forward, backward (where ``fn`` calls
    ``torch.autograd.grad``) and optimizer, with functional collectives and ``wait_tensor``."""
    return make_fx(fn, tracing_mode="fake" if fake else "real")(*args)


def trace_example(parallel: str, ranks: int, cfg=None, seed: int = 0):
    """Traces :func:`concerto_torch.examples.make_step` under a fake world of ``ranks``:
    ``(graph module, step)``."""
    from . import examples

    fake_world(ranks)
    step = examples.make_step(parallel, ranks, cfg or examples.Config(), seed)
    gm = trace(step.fn, step.args)
    gm.meta["concerto_params"] = step.params
    return gm, step
