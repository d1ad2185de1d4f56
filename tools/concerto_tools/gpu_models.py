"""Train steps that :mod:`concerto_jax.dump` does not build, for the compiled GPU corpus.

One model: a mixture-of-experts decoder with expert parallelism (``moe``), the step that
puts ``all-to-all`` into a compiled module.

The step is a ``jax.shard_map`` over a 1-D mesh axis ``expert`` of ``devices`` devices. The
batch is sharded over that axis; attention, layer norms, embeddings and the router are
replicated (their gradients ``psum``-ed: all-reduces); each MoE layer has ``experts`` experts
(a GELU MLP each, ``[experts, d, f]`` weights) sharded over the axis, ``experts / devices`` per
device. Routing is top-1 (Switch Transformer) with a capacity of
``ceil(capacity_factor * tokens_per_device / experts)`` tokens per expert and device: tokens
over capacity are dropped (pass through the residual). Per MoE layer the forward pass runs

1. router logits ``[n, experts]`` (f32), softmax, top-1 expert and its gate;
2. a one-hot dispatch mask ``[n, experts, capacity]``; ``einsum`` to ``[experts, capacity, d]``;
3. ``jax.lax.all_to_all`` over ``expert`` (split the expert dimension, concatenate the
   source devices): each device holds its local experts' tokens from every device;
4. the local experts' MLP; the inverse ``all_to_all``; combine with the gates.

``jax.grad`` transposes each ``all_to_all`` into another: four per MoE layer per step.
With ``dense_every = 2`` (the default) every second layer's MLP is dense (replicated) and the
others are MoE, as in GShard / Switch.

Only the abstract step is built here (no data, nothing runs); :mod:`concerto_tools.compile_gpu`
compiles it.
"""

from __future__ import annotations

import argparse
import math


def add_moe_args(p: argparse.ArgumentParser) -> None:
    """The MoE model's sizes (shared names with :mod:`concerto_jax.dump`'s where they mean
    the same)."""
    g = p.add_argument_group("moe")
    g.add_argument("--experts", type=int, default=16, help="experts per MoE layer")
    g.add_argument("--capacity-factor", type=float, default=1.25)
    g.add_argument(
        "--dense-every", type=int, default=2,
        help="every k-th layer has a dense MLP, the others MoE (1: all MoE)",
    )  # fmt: skip


def check_moe_sizes(a: argparse.Namespace) -> None:
    """Raises ``ValueError`` naming the size that does not fit the expert-parallel mesh."""
    if a.experts % a.devices:
        raise ValueError(f"--experts {a.experts} is not a multiple of --devices {a.devices}")
    if a.batch % a.devices:
        raise ValueError(f"--batch {a.batch} is not a multiple of --devices {a.devices}")
    if a.d_model % a.heads:
        raise ValueError(f"--d-model {a.d_model} is not a multiple of --heads {a.heads}")
    if a.dense_every <= 0:
        raise ValueError("--dense-every must be positive")


def moe_layers(a: argparse.Namespace) -> list[bool]:
    """Per layer: True where its MLP is MoE (layer ``i`` is dense when ``(i + 1) % k == 0``,
    for ``k = dense_every > 1``: dense, MoE, dense, MoE ... from the top)."""
    k = a.dense_every
    return [k == 1 or (i + 1) % k != 0 for i in range(a.layers)]


def moe_param_shapes(a: argparse.Namespace) -> dict:
    """Global parameter shapes: a dict of tuples, ``layers`` a list of per-layer dicts."""
    d, h, v, s, e = a.d_model, a.heads, a.vocab, a.seq, a.experts
    dh, f = d // h, a.mlp * d
    layers = []
    for moe in moe_layers(a):
        layer = {
            "ln1_g": (d,), "ln1_b": (d,),
            "wq": (d, h, dh), "wk": (d, h, dh), "wv": (d, h, dh), "wo": (h, dh, d),
            "ln2_g": (d,), "ln2_b": (d,),
        }  # fmt: skip
        if moe:
            layer.update({"router": (d, e), "e_w1": (e, d, f), "e_w2": (e, f, d)})
        else:
            layer.update({"w1": (d, f), "b1": (f,), "w2": (f, d), "b2": (d,)})
        layers.append(layer)
    return {
        "embed": (v, d), "pos": (s, d), "layers": layers,
        "lnf_g": (d,), "lnf_b": (d,), "unembed": (d, v),
    }  # fmt: skip


def moe_param_specs(shapes: dict, axis: str = "expert"):
    """Expert weights (``e_*``) sharded on their expert dimension, everything else replicated."""
    from jax.sharding import PartitionSpec as P

    def spec(name: str, shape: tuple):
        return P(axis, *([None] * (len(shape) - 1))) if name.startswith("e_") else P()

    out = {k: spec(k, sh) for k, sh in shapes.items() if k != "layers"}
    out["layers"] = [{k: spec(k, sh) for k, sh in layer.items()} for layer in shapes["layers"]]
    return out


def build_moe_step(a: argparse.Namespace, mesh, specs, axis: str = "expert"):
    """The expert-parallel train step ``(params, opt, tokens, targets) -> (params, opt, loss)``
    as a ``jax.shard_map`` over ``axis`` (see the module docs). Adam as in
    :func:`concerto_jax.dump.build_step`."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    dt = jnp.dtype(getattr(a, "dtype", "float32"))
    n_dev = mesh.shape[axis]
    e_local = a.experts // n_dev
    n_tok = (a.batch // n_dev) * a.seq
    cap = max(1, math.ceil(a.capacity_factor * n_tok / a.experts))

    def layer_norm(x, g, b):
        mu = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(x - mu), axis=-1, keepdims=True)
        return (x - mu) * jax.lax.rsqrt(var + 1e-5) * g + b

    def attention(x, p):
        s = x.shape[1]
        y = layer_norm(x, p["ln1_g"], p["ln1_b"])
        q = jnp.einsum("bsd,dhk->bhsk", y, p["wq"])
        k = jnp.einsum("bsd,dhk->bhsk", y, p["wk"])
        v = jnp.einsum("bsd,dhk->bhsk", y, p["wv"])
        scale = jnp.sqrt(jnp.float32(q.shape[-1])).astype(dt)
        scores = jnp.einsum("bhqk,bhsk->bhqs", q, k) / scale
        causal = jnp.tril(jnp.ones((s, s), dtype=bool))
        scores = jnp.where(causal, scores, jnp.asarray(-1e9, dt))
        att = jax.nn.softmax(scores.astype(jnp.float32), axis=-1).astype(dt)
        o = jnp.einsum("bhqs,bhsk->bhqk", att, v)
        return x + jnp.einsum("bhqk,hkd->bqd", o, p["wo"])

    def moe_mlp(y, p):
        b, s, d = y.shape
        tokens = y.reshape(b * s, d)
        logits = (tokens @ p["router"]).astype(jnp.float32)
        probs = jax.nn.softmax(logits, axis=-1)
        expert = jnp.argmax(probs, axis=-1)
        gate = jnp.max(probs, axis=-1)
        onehot = jax.nn.one_hot(expert, a.experts, dtype=jnp.int32)  # [n, e]
        slot = jnp.cumsum(onehot, axis=0) * onehot - 1  # position in its expert's queue
        keep = (slot >= 0) & (slot < cap)
        dispatch = (keep[..., None] & (slot[..., None] == jnp.arange(cap))).astype(dt)
        x_e = jnp.einsum("nec,nd->ecd", dispatch, tokens)  # [e, cap, d]
        # Send each expert's slots to the device that holds it; receive the local experts'
        # slots from every device: [n_dev * e_local, cap, d] -> [n_dev(src), e_local, cap, d].
        x_e = x_e.reshape(n_dev, e_local, cap, d)
        x_e = jax.lax.all_to_all(x_e, axis, split_axis=0, concat_axis=0, tiled=True)
        h = jax.nn.gelu(jnp.einsum("secd,edf->secf", x_e, p["e_w1"]))
        out = jnp.einsum("secf,efd->secd", h, p["e_w2"])
        out = jax.lax.all_to_all(out, axis, split_axis=0, concat_axis=0, tiled=True)
        out = out.reshape(a.experts, cap, d)
        combine = dispatch * gate.astype(dt)[:, None, None]
        return jnp.einsum("nec,ecd->nd", combine, out).reshape(b, s, d)

    def block(x, p):
        x = attention(x, p)
        y = layer_norm(x, p["ln2_g"], p["ln2_b"])
        if "router" in p:
            return x + moe_mlp(y, p)
        return x + jax.nn.gelu(y @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]

    def loss_fn(params, tokens, targets):
        x = params["embed"][tokens] + params["pos"][None, : tokens.shape[1]]
        for p in params["layers"]:
            x = block(x, p)
        x = layer_norm(x, params["lnf_g"], params["lnf_b"])
        logits = (x @ params["unembed"]).astype(jnp.float32)
        logp = jax.nn.log_softmax(logits, axis=-1)
        nll = -jnp.take_along_axis(logp, targets[..., None], axis=-1)[..., 0]
        return jnp.mean(nll) / n_dev  # the psum of the local losses is the global mean

    lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-8
    sharded = jax.tree.map(lambda s: any(ax == axis for ax in s), specs)

    def local_step(params, opt, tokens, targets):
        loss, grads = jax.value_and_grad(loss_fn)(params, tokens, targets)
        # Replicated parameters: each device saw its own tokens; sum their gradients.
        # Expert shards: the all-to-all transposes already brought every device's tokens.
        grads = jax.tree.map(
            lambda g, sh: g if sh else jax.lax.psum(g, axis), grads, sharded
        )
        count = opt["count"] + 1
        t = count.astype(jnp.float32)
        m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, opt["m"], grads)
        v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, opt["v"], grads)
        c1, c2 = 1 - b1**t, 1 - b2**t
        new = jax.tree.map(
            lambda p, m, v: (p - lr * (m / c1) / (jnp.sqrt(v / c2) + eps)).astype(p.dtype),
            params, m, v,
        )  # fmt: skip
        return new, {"count": count, "m": m, "v": v}, jax.lax.psum(loss, axis)

    local_step.__name__ = local_step.__qualname__ = "step"  # the module is jit_step
    o_specs = {"count": P(), "m": specs, "v": specs}
    tok = P(axis, None)
    return jax.shard_map(
        local_step,
        mesh=mesh,
        in_specs=(specs, o_specs, tok, tok),
        out_specs=(specs, o_specs, P()),
    )


def jit_moe_step(a: argparse.Namespace, mesh, donate: bool = False, axis: str = "expert"):
    """The jitted MoE step and its abstract arguments, as :func:`concerto_jax.dump.jit_step`."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    dt = jnp.dtype(getattr(a, "dtype", "float32"))
    shapes = moe_param_shapes(a)
    specs = moe_param_specs(shapes, axis)
    is_shape = lambda x: isinstance(x, tuple)  # noqa: E731
    p_sh = jax.tree.map(lambda s: NamedSharding(mesh, s), specs)
    p_abs = jax.tree.map(
        lambda sh, ns: jax.ShapeDtypeStruct(sh, dt, sharding=ns),
        shapes, p_sh, is_leaf=is_shape,
    )  # fmt: skip
    rep = NamedSharding(mesh, P())
    count = jax.ShapeDtypeStruct((), jnp.int32, sharding=rep)
    o_abs = {"count": count, "m": p_abs, "v": p_abs}
    o_sh = {"count": rep, "m": p_sh, "v": p_sh}
    tok_sh = NamedSharding(mesh, P(axis, None))
    tok = jax.ShapeDtypeStruct((a.batch, a.seq), jnp.int32, sharding=tok_sh)
    jitted = jax.jit(
        build_moe_step(a, mesh, specs, axis),
        in_shardings=(p_sh, o_sh, tok_sh, tok_sh),
        out_shardings=(p_sh, o_sh, rep),
        donate_argnums=(0, 1) if donate else (),
    )
    return jitted, (p_abs, o_abs, tok, tok)
