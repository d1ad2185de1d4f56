"""Training steps to trace: a GPT-style block (layer norm, causal attention, MLP) with a
functional Adam step, under data, tensor (Megatron) and FSDP-style parallelism.

Every step is a pure function ``step(*tensors) -> tuple of tensors`` (loss, new parameters,
new optimizer state): no module state and no in-place update, so ``make_fx`` writes one flat
aten graph with the forward, the backward and the optimizer, and every result is a graph
output. Collectives are the functional ones (``torch.distributed._functional_collectives``),
which trace as ``torch.ops._c10d_functional.*`` followed by ``wait_tensor``.

- ``dp``: parameters replicated; every gradient all-reduced (averaged) before Adam.
- ``tp``: Megatron: QKV and the first MLP linear column-parallel, the attention output and the
  second MLP linear row-parallel; ``f`` (identity forward, all-reduce backward) before each
  column-parallel pair and ``g`` (all-reduce forward, identity backward) after each
  row-parallel linear: two all-reduces in the forward, two in the backward per block.
- ``fsdp``: each block's parameters flattened into one buffer sharded over the ranks; the
  block all-gathers it in the forward, again in the backward (the full parameters are not
  kept between the two, as FSDP frees them), and reduce-scatters its gradient; Adam on the
  local shard.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn.functional as F

PARALLEL = ("dp", "tp", "fsdp")


@dataclass(frozen=True)
class Config:
    """Sizes of the example: ``layers`` GPT blocks of width ``d_model`` on ``batch x seq``
    tokens (per rank), ``heads`` attention heads, MLP width ``4 * d_model``."""

    layers: int = 2
    d_model: int = 64
    heads: int = 8
    seq: int = 32
    batch: int = 4
    lr: float = 1e-3


def group() -> dist.ProcessGroup:
    """The default (world) process group."""
    return dist.group.WORLD


# --- the block ------------------------------------------------------------------------------

def block_shapes(cfg: Config, tp: int = 1) -> dict[str, tuple[int, ...]]:
    """Parameter shapes of one block, with the tensor-parallel shard of ``tp`` ranks."""
    d, h = cfg.d_model, 4 * cfg.d_model
    return {
        "ln1_w": (d,), "ln1_b": (d,),
        "qkv_w": (3 * d // tp, d), "qkv_b": (3 * d // tp,),
        "proj_w": (d, d // tp), "proj_b": (d,),
        "ln2_w": (d,), "ln2_b": (d,),
        "fc1_w": (h // tp, d), "fc1_b": (h // tp,),
        "fc2_w": (d, h // tp), "fc2_b": (d,),
    }  # fmt: skip


class _CopyToTP(torch.autograd.Function):
    """Megatron's ``f``: identity forward, all-reduce of the gradient backward."""

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return funcol.all_reduce(g, "sum", group())


class _ReduceFromTP(torch.autograd.Function):
    """Megatron's ``g``: all-reduce forward, identity backward."""

    @staticmethod
    def forward(ctx, x):
        return funcol.all_reduce(x, "sum", group())

    @staticmethod
    def backward(ctx, g):
        return g


def block(p: dict[str, torch.Tensor], x: torch.Tensor, cfg: Config, tp: int = 1) -> torch.Tensor:
    """One pre-norm GPT block on ``x`` of shape ``[batch, seq, d_model]``; with ``tp > 1`` the
    linears are Megatron's column/row-parallel shards and the heads are split over the ranks."""
    b, s, d = x.shape
    heads = cfg.heads // tp
    hd = d // cfg.heads
    y = F.layer_norm(x, (d,), p["ln1_w"], p["ln1_b"])
    if tp > 1:
        y = _CopyToTP.apply(y)
    qkv = F.linear(y, p["qkv_w"], p["qkv_b"])
    q, k, v = qkv.view(b, s, 3, heads, hd).permute(2, 0, 3, 1, 4).unbind(0)
    a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    a = a.transpose(1, 2).reshape(b, s, heads * hd)
    a = F.linear(a, p["proj_w"])
    if tp > 1:
        a = _ReduceFromTP.apply(a)
    x = x + a + p["proj_b"]
    y = F.layer_norm(x, (d,), p["ln2_w"], p["ln2_b"])
    if tp > 1:
        y = _CopyToTP.apply(y)
    y = F.gelu(F.linear(y, p["fc1_w"], p["fc1_b"]))
    y = F.linear(y, p["fc2_w"])
    if tp > 1:
        y = _ReduceFromTP.apply(y)
    return x + y + p["fc2_b"]


def loss_of(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean squared error (a stand-in for the LM head and cross entropy)."""
    return ((out - target) ** 2).mean()


def adam(p, g, m, v, t, lr: float, b1=0.9, b2=0.999, eps=1e-8):
    """One functional Adam update at step ``t`` (a 0-d tensor): new ``(p, m, v)``."""
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    mh = m / (1 - b1 ** t)
    vh = v / (1 - b2 ** t)
    return p - lr * mh / (vh.sqrt() + eps), m, v


# --- FSDP: one flat sharded parameter per block ------------------------------------------------

def _unflatten(flat: torch.Tensor, shapes: dict[str, tuple[int, ...]]) -> dict[str, torch.Tensor]:
    out, off = {}, 0
    for name, shape in shapes.items():
        n = math.prod(shape)
        out[name] = flat[off:off + n].view(shape)
        off += n
    return out


def _all_gather(shard: torch.Tensor) -> torch.Tensor:
    """The flat parameter from every rank's shard (``all_gather_into_tensor`` on dim 0)."""
    if hasattr(funcol, "all_gather_single"):
        return funcol.all_gather_single(shard, 0, group())
    return funcol.all_gather_tensor(shard, 0, group())


def _reduce_scatter(full: torch.Tensor) -> torch.Tensor:
    """This rank's shard of the sum over ranks (``reduce_scatter_tensor`` on dim 0)."""
    if hasattr(funcol, "reduce_scatter_single"):
        return funcol.reduce_scatter_single(full, "sum", 0, group())
    return funcol.reduce_scatter_tensor(full, "sum", 0, group())


class _FsdpBlock(torch.autograd.Function):
    """A block whose parameters are one flat shard per rank: all-gather forward; backward
    all-gathers again, recomputes the block and reduce-scatters the flat gradient."""

    @staticmethod
    def forward(ctx, shard, x, cfg, shapes, ranks):
        full = _all_gather(shard)
        ctx.save_for_backward(shard, x)
        ctx.cfg, ctx.shapes, ctx.ranks = cfg, shapes, ranks
        return block(_unflatten(full, shapes), x, cfg)

    @staticmethod
    def backward(ctx, g):
        shard, x = ctx.saved_tensors
        full = _all_gather(shard)
        with torch.enable_grad():
            full = full.detach().requires_grad_()
            x = x.detach().requires_grad_()
            out = block(_unflatten(full, ctx.shapes), x, ctx.cfg)
            gfull, gx = torch.autograd.grad(out, (full, x), g)
        gshard = _reduce_scatter(gfull) / ctx.ranks
        return gshard, gx, None, None, None


# --- the steps ----------------------------------------------------------------------------------

@dataclass
class Step:
    """A traceable step: ``fn(*args)``, its example inputs (real CPU tensors) and the number
    of leading inputs that are parameters or optimizer state (the rest: the batch, the step
    counter)."""

    name: str
    fn: object
    args: list[torch.Tensor]
    params: int


def _init(shapes: dict[str, tuple[int, ...]], gen: torch.Generator) -> list[torch.Tensor]:
    out = []
    for name, shape in shapes.items():
        if name.endswith("_w") and len(shape) == 1:
            out.append(torch.ones(shape))
        elif name.endswith("_b"):
            out.append(torch.zeros(shape))
        else:
            out.append(torch.randn(shape, generator=gen) * 0.02)
    return out


def make_step(parallel: str, ranks: int, cfg: Config = Config(), seed: int = 0) -> Step:
    """The training step of ``cfg.layers`` GPT blocks under ``parallel`` (``dp``, ``tp`` or
    ``fsdp``) over ``ranks`` ranks, with example inputs drawn from ``seed``."""
    if parallel not in PARALLEL:
        raise ValueError(f"unknown parallelism `{parallel}` (one of {', '.join(PARALLEL)})")
    gen = torch.Generator().manual_seed(seed)
    tp = ranks if parallel == "tp" else 1
    if parallel == "tp" and (cfg.heads % ranks or cfg.d_model % ranks):
        raise ValueError(f"tp over {ranks} ranks needs heads and d_model divisible by it")
    shapes = block_shapes(cfg, tp)
    names = list(shapes)
    L = cfg.layers
    x = torch.randn(cfg.batch, cfg.seq, cfg.d_model, generator=gen)
    target = torch.randn(cfg.batch, cfg.seq, cfg.d_model, generator=gen)
    t = torch.tensor(1.0)

    if parallel == "fsdp":
        numel = sum(math.prod(s) for s in shapes.values())
        shard = -(-numel // ranks)
        flats = []
        for _ in range(L):
            full = torch.cat([p.reshape(-1) for p in _init(shapes, gen)])
            full = F.pad(full, (0, shard * ranks - numel))
            flats.append(full[:shard].clone())  # this rank's shard
        padded = {**shapes, "_pad": (shard * ranks - numel,)}
        params = flats + [torch.zeros(shard) for _ in range(2 * L)]

        def step(*a):
            ps, ms, vs = a[:L], a[L:2 * L], a[2 * L:3 * L]
            x, target, t = a[3 * L:]
            shard_list = [p.detach().requires_grad_() for p in ps]
            with torch.enable_grad():
                h = x
                for p in shard_list:
                    h = _FsdpBlock.apply(p, h, cfg, padded, ranks)
                loss = loss_of(h, target)
                grads = torch.autograd.grad(loss, shard_list)
            new = [adam(p, g, m, v, t, cfg.lr) for p, g, m, v in zip(ps, grads, ms, vs)]
            return (loss.detach(), *[n[0] for n in new], *[n[1] for n in new],
                    *[n[2] for n in new])  # fmt: skip

        return Step(f"gpt_fsdp{ranks}_l{L}", step, params + [x, target, t], len(params))

    weights = [w for _ in range(L) for w in _init(shapes, gen)]
    n = len(weights)
    params = weights + [torch.zeros_like(w) for w in weights] * 2

    def step(*a):
        ws, ms, vs = a[:n], a[n:2 * n], a[2 * n:3 * n]
        x, target, t = a[3 * n:]
        leaves = [w.detach().requires_grad_() for w in ws]
        with torch.enable_grad():
            h = x
            for i in range(L):
                p = dict(zip(names, leaves[i * len(names):(i + 1) * len(names)]))
                h = block(p, h, cfg, tp)
            loss = loss_of(h, target)
            grads = torch.autograd.grad(loss, leaves)
        if parallel == "dp":
            grads = [funcol.all_reduce(g, "sum", group()) / ranks for g in grads]
        new = [adam(w, g, m, v, t, cfg.lr) for w, g, m, v in zip(ws, grads, ms, vs)]
        return (loss.detach(), *[u[0] for u in new], *[u[1] for u in new], *[u[2] for u in new])

    return Step(f"gpt_{parallel}{ranks}_l{L}", step, params + [x, target, t], len(params))
