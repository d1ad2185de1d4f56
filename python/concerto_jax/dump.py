"""Dumps the HLO of a real GPT-style decoder train step, SPMD-partitioned over 8 CPU devices.

Usage::

    PYTHONPATH=python python -m concerto_jax.dump --parallel dp|tp|fsdp|mix --out DIR \\
        [--layers 2 --d-model 256 --heads 8 --seq 128 --batch 16 --vocab 1024 --mlp 4 \\
         --devices 8 --tp 4 --optimizer adam|sgd --scan --dtype float32|bfloat16 --seed 0 \\
         --name NAME]

The train step: token and position embeddings, ``layers`` pre-norm decoder blocks (layer norm,
causal multi-head self-attention, layer norm, GELU MLP, residuals), a final layer norm, an
untied output projection, the mean token cross-entropy, ``jax.grad`` of it and an Adam (or SGD)
update; it returns the new parameters, the new optimiser state and the loss. Everything is f32
(``--dtype bfloat16``: parameters, optimiser moments and activations in bf16; the Adam step
count and its bias corrections stay f32, updated parameters are cast back to bf16).
With ``--scan`` the layers' parameters are stacked and the blocks run under ``jax.lax.scan``,
so XLA keeps a ``while`` loop.

Parallelism (a ``jax.sharding.Mesh`` of the CPU devices; sharding by ``in_shardings`` /
``out_shardings`` and, for FSDP, explicit collectives in a ``shard_map``):

- ``dp``: mesh ``data=devices``; batch sharded, parameters replicated: the gradients are
  all-reduced.
- ``tp``: mesh ``model=devices``; Megatron-style: Q/K/V and the MLP's first weight sharded by
  heads / hidden units (column parallel), the attention output and the MLP's second weight
  by rows (row parallel); the batch replicated: all-reduces in the forward and the backward
  pass. ``heads`` and ``mlp * d_model`` must divide by the devices.
- ``fsdp``: mesh ``data=devices``; ZeRO-3 style, written with ``jax.shard_map``: every
  weight (and its optimiser state) sharded over the data axis on its largest divisible
  dimension and ``all_gather``-ed where it is used; batch sharded: all-gathers in the forward
  (and, where XLA does not keep the gathered weight, the backward) pass, reduce-scatters of
  the gradients (the transpose of the gathers), each device updating its own shard.
- ``mix``: a 2-D mesh ``data=devices/tp`` x ``model=tp``: ``tp`` specs on the model axis and
  the batch sharded on the data axis.

XLA runs with ``--xla_dump_to=TMP --xla_dump_hlo_as_text --xla_dump_hlo_pass_re=spmd-partitioning``
and the script copies, for the train step's module:

- ``<name>.spmd.hlo``: the module right after the ``spmd-partitioning`` pass (per-device
  shapes, collectives, before CPU optimisations);
- ``<name>.opt.hlo``: the final optimised module (``*after_optimizations.txt``,
  ``is_scheduled=true``);
- ``<name>.json``: the jax and jaxlib versions, the options, the mesh, and the collective
  counts by opcode of each file.

``<name>`` defaults to ``gpt_<parallel><devices>_l<layers>`` (``_scan`` appended with
``--scan``, ``_gspmd`` with ``--partitioner gspmd``), e.g. ``gpt_dp8_l2``; the mix is
``gpt_mix<dp>x<tp>_l<layers>``.

Partitioner: jax 0.10 partitions with Shardy by default. Shardy writes a ``shard_map`` body
(the whole FSDP step) into the after-partitioning module as a separate computation
``xla.sdy.inlinable_manual_computation_body*`` that the entry ``call``s (XLA's call inliner
inlines it later; the optimised module has no call). ``--partitioner gspmd`` uses the older
GSPMD partitioner, which writes the same collectives inline in the entry computation.
Only lowering and compilation run (abstract inputs): no train step is executed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile

from concerto_jax.hlo_text import collective_counts, configure_xla

PARALLEL = ("dp", "tp", "fsdp", "mix")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (see the module docs)."""
    p = argparse.ArgumentParser(prog="concerto_jax.dump", description=__doc__.split("\n")[0])
    p.add_argument("--parallel", choices=PARALLEL, required=True)
    p.add_argument("--out", required=True, help="directory for <name>.spmd.hlo/.opt.hlo/.json")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--vocab", type=int, default=1024)
    p.add_argument("--mlp", type=int, default=4, help="MLP hidden size = mlp * d_model")
    p.add_argument("--devices", type=int, default=8)
    p.add_argument("--tp", type=int, default=4, help="model-axis size of the mix")
    p.add_argument("--optimizer", choices=("adam", "sgd"), default="adam")
    p.add_argument("--scan", action="store_true", help="run the layers under lax.scan")
    p.add_argument(
        "--dtype",
        choices=("float32", "bfloat16"),
        default="float32",
        help="parameters, optimiser moments and activations",
    )
    p.add_argument(
        "--partitioner",
        choices=("shardy", "gspmd"),
        default="shardy",
        help="jax's partitioner: shardy (jax's default) or the older GSPMD",
    )
    p.add_argument("--seed", type=int, default=0, help="recorded; inputs are abstract")
    p.add_argument("--name", default=None)
    return p.parse_args(argv)


def check_sizes(a: argparse.Namespace) -> tuple[int, int]:
    """Validates the sizes against the mesh; returns ``(data, model)`` axis sizes.

    Raises ``ValueError`` naming the size that does not divide.
    """
    for field in ("layers", "d_model", "heads", "seq", "batch", "vocab", "mlp", "devices", "tp"):
        if getattr(a, field) <= 0:
            raise ValueError(f"--{field.replace('_', '-')} must be positive")
    if a.d_model % a.heads:
        raise ValueError(f"--d-model {a.d_model} is not a multiple of --heads {a.heads}")
    if a.parallel == "dp":
        data, model = a.devices, 1
    elif a.parallel == "tp":
        data, model = 1, a.devices
    elif a.parallel == "fsdp":
        data, model = a.devices, 1
    else:
        if a.devices % a.tp:
            raise ValueError(f"--devices {a.devices} is not a multiple of --tp {a.tp}")
        data, model = a.devices // a.tp, a.tp
    if a.batch % data:
        raise ValueError(f"--batch {a.batch} is not a multiple of the data axis ({data})")
    if model > 1:
        if a.heads % model:
            raise ValueError(f"--heads {a.heads} is not a multiple of the model axis ({model})")
        if (a.mlp * a.d_model) % model:
            raise ValueError(f"the MLP width {a.mlp * a.d_model} does not divide by {model}")
    return data, model


def default_name(a: argparse.Namespace, data: int, model: int) -> str:
    """``gpt_dp8_l2``, ``gpt_tp8_l2``, ``gpt_fsdp8_l2``, ``gpt_mix2x4_l2`` (+ ``_scan``)."""
    if a.parallel == "mix":
        par = f"mix{data}x{model}"
    else:
        par = f"{a.parallel}{a.devices}"
    name = f"gpt_{par}_l{a.layers}" + ("_scan" if a.scan else "")
    return name + ("_gspmd" if a.partitioner == "gspmd" else "")


def param_shapes(a: argparse.Namespace) -> dict:
    """Shapes of the parameters: a dict of tuples; ``layers`` is a list of per-layer dicts, or
    one dict of stacked ``[layers, ...]`` shapes with ``--scan``."""
    d, h, v, s = a.d_model, a.heads, a.vocab, a.seq
    dh, f = d // h, a.mlp * d
    layer = {
        "ln1_g": (d,), "ln1_b": (d,),
        "wq": (d, h, dh), "wk": (d, h, dh), "wv": (d, h, dh),
        "wo": (h, dh, d),
        "ln2_g": (d,), "ln2_b": (d,),
        "w1": (d, f), "b1": (f,),
        "w2": (f, d), "b2": (d,),
    }  # fmt: skip
    if a.scan:
        layers = {k: (a.layers,) + sh for k, sh in layer.items()}
    else:
        layers = [dict(layer) for _ in range(a.layers)]
    return {
        "embed": (v, d), "pos": (s, d),
        "layers": layers,
        "lnf_g": (d,), "lnf_b": (d,),
        "unembed": (d, v),
    }  # fmt: skip


#: Megatron specs on the model axis, by parameter name (dimension index sharded), per layer.
_TP_DIM = {"wq": 1, "wk": 1, "wv": 1, "wo": 0, "w1": 1, "b1": 0, "w2": 0}


def param_specs(a: argparse.Namespace, shapes: dict, data: int):
    """``PartitionSpec`` tree matching :func:`param_shapes` for the chosen parallelism."""
    from jax.sharding import PartitionSpec as P

    lead = 1 if a.scan else 0

    def spec(name: str, shape: tuple, in_layer: bool):
        axes = [None] * len(shape)
        if a.parallel in ("tp", "mix") and in_layer and name in _TP_DIM:
            axes[_TP_DIM[name] + lead] = "model"
        elif a.parallel == "fsdp":
            first = lead if in_layer else 0
            best = None
            for i in range(first, len(shape)):
                if shape[i] % data == 0 and (best is None or shape[i] > shape[best]):
                    best = i
            if best is not None:
                axes[best] = "data"
        return P(*axes)

    def layer_specs(layer: dict):
        return {k: spec(k, sh, True) for k, sh in layer.items()}

    out = {k: spec(k, sh, False) for k, sh in shapes.items() if k != "layers"}
    if a.scan:
        out["layers"] = layer_specs(shapes["layers"])
    else:
        out["layers"] = [layer_specs(layer) for layer in shapes["layers"]]
    return out


def fsdp_dims(specs) -> dict[str, int]:
    """For FSDP: the sharded dimension of each parameter by name, counted without the
    stacked layer dimension (what a scan body sees); a replicated parameter is absent."""
    dims = {}

    def visit(tree, lead):
        for name, spec in tree.items():
            for i, ax in enumerate(spec):
                if ax == "data":
                    dims[name] = i - lead

    top = {k: v for k, v in specs.items() if k != "layers"}
    visit(top, 0)
    layers = specs["layers"]
    if isinstance(layers, list):
        for layer in layers:
            visit(layer, 0)
    else:
        visit(layers, 1)
    return dims


def build_step(a: argparse.Namespace, mesh, specs):
    """The train step ``(params, opt_state, tokens, targets) -> (params, opt_state, loss)``.

    ``dp``, ``tp`` and ``mix`` are global-view functions that XLA's SPMD partitioner splits
    by the shardings; ``fsdp`` is a ``jax.shard_map`` over the data axis (ZeRO-3 as written by
    hand): each weight is ``all_gather``-ed where it is used, so the gradient arrives through
    the transpose of that gather, a ``psum_scatter`` (XLA ``reduce-scatter``), and each
    device updates its own shard.
    """
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    fsdp = a.parallel == "fsdp"
    dims = fsdp_dims(specs) if fsdp else {}
    dt = jnp.dtype(getattr(a, "dtype", "float32"))

    def use(p, name):
        if name in dims:
            return jax.lax.all_gather(p[name], "data", axis=dims[name], tiled=True)
        return p[name]

    def layer_norm(x, p, g, b):
        mu = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(x - mu), axis=-1, keepdims=True)
        return (x - mu) * jax.lax.rsqrt(var + 1e-5) * use(p, g) + use(p, b)

    def block(x, p):
        s = x.shape[1]
        y = layer_norm(x, p, "ln1_g", "ln1_b")
        q = jnp.einsum("bsd,dhk->bhsk", y, use(p, "wq"))
        k = jnp.einsum("bsd,dhk->bhsk", y, use(p, "wk"))
        v = jnp.einsum("bsd,dhk->bhsk", y, use(p, "wv"))
        scale = jnp.sqrt(jnp.float32(q.shape[-1])).astype(dt)
        scores = jnp.einsum("bhqk,bhsk->bhqs", q, k) / scale
        causal = jnp.tril(jnp.ones((s, s), dtype=bool))
        scores = jnp.where(causal, scores, jnp.asarray(-1e9, dt))
        att = jax.nn.softmax(scores, axis=-1)
        o = jnp.einsum("bhqs,bhsk->bhqk", att, v)
        x = x + jnp.einsum("bhqk,hkd->bqd", o, use(p, "wo"))
        y = layer_norm(x, p, "ln2_g", "ln2_b")
        y = jax.nn.gelu(y @ use(p, "w1") + use(p, "b1"))
        return x + y @ use(p, "w2") + use(p, "b2")

    def loss_fn(params, tokens, targets, scale):
        x = use(params, "embed")[tokens] + use(params, "pos")[None, : tokens.shape[1]]
        if a.scan:
            x, _ = jax.lax.scan(lambda c, p: (block(c, p), None), x, params["layers"])
        else:
            for p in params["layers"]:
                x = block(x, p)
        x = layer_norm(x, params, "lnf_g", "lnf_b")
        logits = x @ use(params, "unembed")
        logp = jax.nn.log_softmax(logits, axis=-1)
        nll = -jnp.take_along_axis(logp, targets[..., None], axis=-1)[..., 0]
        return jnp.mean(nll) * scale

    lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-8

    def update(params, opt, grads):
        if a.optimizer == "sgd":
            return jax.tree.map(lambda p, g: p - lr * g, params, grads), opt
        count = opt["count"] + 1
        t = count.astype(jnp.float32)
        m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, opt["m"], grads)
        v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, opt["v"], grads)
        c1, c2 = 1 - b1**t, 1 - b2**t
        new = jax.tree.map(
            lambda p, m, v: (p - lr * (m / c1) / (jnp.sqrt(v / c2) + eps)).astype(p.dtype),
            params, m, v,
        )  # fmt: skip
        return new, {"count": count, "m": m, "v": v}

    def step(params, opt, tokens, targets):
        loss, grads = jax.value_and_grad(loss_fn)(params, tokens, targets, 1.0)
        new, opt = update(params, opt, grads)
        return new, opt, loss

    if not fsdp:
        return step

    n = mesh.shape["data"]

    def local_step(params, opt, tokens, targets):
        # The local loss is scaled by 1/n so that the reduce-scattered (summed) gradient is
        # the gradient of the global mean; the loss itself is summed over the data axis.
        loss, grads = jax.value_and_grad(loss_fn)(params, tokens, targets, 1.0 / n)
        new, opt = update(params, opt, grads)
        return new, opt, jax.lax.psum(loss, "data")

    local_step.__name__ = local_step.__qualname__ = "step"  # the module is jit_step
    o_specs = {"count": P(), "m": specs, "v": specs} if a.optimizer == "adam" else {}
    tok = P("data", None)
    return jax.shard_map(
        local_step,
        mesh=mesh,
        in_specs=(specs, o_specs, tok, tok),
        out_specs=(specs, o_specs, P()),
    )


def make_mesh(a: argparse.Namespace, data: int, model: int, devices):
    """The step's ``jax.sharding.Mesh`` over the first ``a.devices`` of ``devices`` (CPU
    devices here; compile-only GPU devices of a topology: :mod:`concerto_jax.h100`)."""
    import numpy as np
    from jax.sharding import Mesh

    if len(devices) < a.devices:
        raise RuntimeError(f"jax sees {len(devices)} devices, {a.devices} wanted")
    devs = np.array(list(devices)[: a.devices])
    if a.parallel == "mix":
        return Mesh(devs.reshape(data, model), ("data", "model"))
    if a.parallel == "tp":
        return Mesh(devs, ("model",))
    return Mesh(devs, ("data",))


def jit_step(a: argparse.Namespace, mesh, data: int, donate: bool = False):
    """The jitted train step and its abstract arguments (``ShapeDtypeStruct`` with shardings):
    ``(jitted, (params, opt_state, tokens, targets))``. With ``donate`` the parameters and the
    optimiser state are donated (updated in place, as a training loop runs the step)."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    dt = jnp.dtype(getattr(a, "dtype", "float32"))
    shapes = param_shapes(a)
    specs = param_specs(a, shapes, data)
    is_shape = lambda x: isinstance(x, tuple)  # noqa: E731
    p_sh = jax.tree.map(lambda s: NamedSharding(mesh, s), specs)
    p_abs = jax.tree.map(
        lambda sh, ns: jax.ShapeDtypeStruct(sh, dt, sharding=ns),
        shapes, p_sh, is_leaf=is_shape,
    )  # fmt: skip
    rep = NamedSharding(mesh, P())
    if a.optimizer == "adam":
        count = jax.ShapeDtypeStruct((), jnp.int32, sharding=rep)
        o_abs = {"count": count, "m": p_abs, "v": p_abs}
        o_sh = {"count": rep, "m": p_sh, "v": p_sh}
    else:
        o_abs, o_sh = {}, {}
    batch_axis = "data" if data > 1 else None
    tok_sh = NamedSharding(mesh, P(batch_axis, None))
    tok = jax.ShapeDtypeStruct((a.batch, a.seq), jnp.int32, sharding=tok_sh)

    step = build_step(a, mesh, specs)
    jitted = jax.jit(
        step,
        in_shardings=(p_sh, o_sh, tok_sh, tok_sh),
        out_shardings=(p_sh, o_sh, rep),
        donate_argnums=(0, 1) if donate else (),
    )
    return jitted, (p_abs, o_abs, tok, tok)


def lower_and_compile(a: argparse.Namespace, data: int, model: int):
    """Lowers and compiles the step on abstract inputs; returns the mesh description."""
    import jax

    mesh = make_mesh(a, data, model, jax.devices())
    jitted, args = jit_step(a, mesh, data)
    jitted.lower(*args).compile()
    return {name: int(size) for name, size in mesh.shape.items()}


def find_dumps(tmp: str) -> tuple[str, str]:
    """The train step's after-SPMD-partitioning and final optimised module in XLA's dump dir.

    Raises ``RuntimeError`` naming what is missing (with the files found).
    """
    files = sorted(os.listdir(tmp))
    step = [f for f in files if ".jit_step." in f]
    spmd = [f for f in step if f.endswith(".txt") and "after_spmd-partitioning" in f]
    opt = [f for f in step if f.endswith("after_optimizations.txt")]
    if not spmd or not opt:
        raise RuntimeError(
            "XLA's dump has no after_spmd-partitioning / after_optimizations module for "
            f"jit_step in {tmp}: {files[:40]}"
        )
    # One compilation: the last SPMD dump (a partitioner may run more than once) is the input
    # of the CPU pipeline.
    return os.path.join(tmp, spmd[-1]), os.path.join(tmp, opt[-1])


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    a = parse_args(argv)
    try:
        data, model = check_sizes(a)
    except ValueError as e:
        print(f"concerto_jax.dump: {e}", file=sys.stderr)
        return 2
    name = a.name or default_name(a, data, model)
    os.makedirs(a.out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="concerto-xla-dump-")
    try:
        configure_xla(
            a.devices,
            [
                f"--xla_dump_to={tmp}",
                "--xla_dump_hlo_as_text",
                "--xla_dump_hlo_pass_re=spmd-partitioning",
            ],
        )
        import jax
        import jaxlib

        jax.config.update("jax_use_shardy_partitioner", a.partitioner == "shardy")
        mesh = lower_and_compile(a, data, model)
        spmd_src, opt_src = find_dumps(tmp)
        out = {}
        for kind, src in (("spmd", spmd_src), ("opt", opt_src)):
            dst = os.path.join(a.out, f"{name}.{kind}.hlo")
            shutil.copyfile(src, dst)
            with open(dst) as f:
                out[kind] = {"file": os.path.basename(dst), "xla_dump": os.path.basename(src),
                             "collectives": collective_counts(f.read())}  # fmt: skip
        meta = {
            "name": name,
            "jax": jax.__version__,
            "jaxlib": jaxlib.__version__,
            "parallel": a.parallel,
            "mesh": mesh,
            "sizes": {k: getattr(a, k) for k in
                      ("layers", "d_model", "heads", "seq", "batch", "vocab", "mlp", "devices")},
            "optimizer": a.optimizer,
            "scan": a.scan,
            "dtype": a.dtype,
            "partitioner": a.partitioner,
            "seed": a.seed,
            **out,
        }  # fmt: skip
        with open(os.path.join(a.out, f"{name}.json"), "w") as f:
            json.dump(meta, f, indent=1, sort_keys=True)
            f.write("\n")
        print(json.dumps({"name": name, "spmd": out["spmd"]["collectives"],
                          "opt": out["opt"]["collectives"]}, sort_keys=True))  # fmt: skip
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
