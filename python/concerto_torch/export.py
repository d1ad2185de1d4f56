"""An aten-level FX graph (``make_fx``, AOTAutograd or Inductor's post-grad graph) to
Concerto's native graph JSON (``Graph::from_json`` in ``graph/src/ir.rs``).

One Concerto op per FX node that does work, named as the node (so :mod:`concerto_torch.reorder`
maps a plan back by name):

- ``torch.ops._c10d_functional.{all_reduce, all_gather_into_tensor, reduce_scatter_tensor,
  all_to_all_single, broadcast}``: a collective op with its kind, group size (the process
  group's size, or the op's own ``group_size`` argument), the bytes of its result on one rank,
  and ``intra-node`` when the group fits in ``gpus_per_node`` ranks (``inter-node`` otherwise).
  Its ``wait_tensor`` is folded into it: consumers of the wait read the collective.
- view-only nodes (``view``, ``reshape``, ``t``, ``transpose``, ``permute``, ``expand``,
  ``unbind``, ``getitem``, ``detach``, ...) are bypassed, not emitted: their consumers read
  their producer (the tensor index through ``getitem`` of a multi-output op is kept). The
  reorder puts each of them right before its first user.
- every other ``call_function`` node producing tensors: a compute op with its output shapes and
  dtypes, bytes read plus written, and flops from ``torch.utils.flop_counter``'s formulas
  (matmuls, convolutions, attention; class ``gemm`` with its ``b, m, n, k`` for ``mm``,
  ``addmm``, ``bmm``, ``baddbmm``; ``attention``) or one per output element (pointwise:
  ``elementwise``) / per input element (``reduction``, ``norm``); ``other`` otherwise.

Placeholders and constants are not ops: their bytes are the graph's ``resident_bytes``
(parameters, optimizer state and the batch). The ops whose results are graph outputs carry
``"live_out": true``.
"""

from __future__ import annotations

import argparse
import json
import math
import operator
import sys

import torch
import torch.fx as fx

aten = torch.ops.aten
c10d = torch.ops._c10d_functional

COLLECTIVES = {
    "all_reduce": "all-reduce",
    "all_gather_into_tensor": "all-gather",
    "reduce_scatter_tensor": "reduce-scatter",
    "all_to_all_single": "all-to-all",
    "broadcast": "broadcast",
}
WAIT = "wait_tensor"

VIEWS = {
    "view", "_unsafe_view", "reshape", "_reshape_alias", "view_as", "t", "transpose",
    "permute", "expand", "expand_as", "squeeze", "unsqueeze", "slice", "select", "alias",
    "detach", "as_strided", "split", "split_with_sizes", "unbind", "chunk", "narrow",
    "unflatten", "flatten", "diagonal", "lift_fresh", "_unsafe_split", "numpy_T", "movedim",
    "view_as_real", "view_as_complex", "unfold",
}  # fmt: skip
GEMM = {"mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "_scaled_mm"}
ATTENTION = ("scaled_dot_product", "flash_attention", "efficient_attention", "cudnn_attention")
NORM = ("layer_norm", "batch_norm", "group_norm", "rms_norm", "instance_norm")
REDUCTIONS = {
    "sum", "mean", "amax", "amin", "max", "min", "var", "var_mean", "std", "prod",
    "logsumexp", "argmax", "argmin", "norm", "linalg_vector_norm", "_softmax",
    "_log_softmax", "_softmax_backward_data", "_log_softmax_backward_data", "any", "all",
    "cumsum",
}  # fmt: skip

DTYPES = {
    torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16", torch.float64: "f64",
    torch.int32: "s32", torch.int64: "s64", torch.int8: "s8", torch.uint8: "s8",
    torch.bool: "pred",
}  # fmt: skip
for _n in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"):
    if hasattr(torch, _n):
        DTYPES[getattr(torch, _n)] = "f8"


class ExportError(ValueError):
    """An FX node the exporter cannot write (named in the message)."""


def op_name(node: fx.Node) -> str:
    """The aten overload packet's name of a ``call_function`` node (``mm`` for
    ``aten.mm.default``), the function's name otherwise."""
    t = node.target
    if isinstance(t, torch._ops.OpOverload):
        return t._overloadpacket.__name__
    if isinstance(t, torch._ops.OpOverloadPacket):
        return t.__name__
    return getattr(t, "__name__", str(t))


def op_namespace(node: fx.Node) -> str:
    t = node.target
    if isinstance(t, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return t.namespace
    return ""


def is_collective(node: fx.Node) -> bool:
    """A ``_c10d_functional`` collective (not its ``wait_tensor``)."""
    return (node.op == "call_function" and op_namespace(node) == "_c10d_functional"
            and op_name(node).rstrip("_") in COLLECTIVES)  # fmt: skip


def is_wait(node: fx.Node) -> bool:
    return node.op == "call_function" and op_namespace(node) == "_c10d_functional" \
        and op_name(node) == WAIT


def is_view(node: fx.Node) -> bool:
    """A node that only reshapes, views or picks an output (bypassed by the export)."""
    if node.op != "call_function":
        return False
    if node.target is operator.getitem:
        return True
    return op_namespace(node) in ("aten", "prims") and op_name(node) in VIEWS


def tensors(val) -> list[torch.Tensor]:
    """The tensors of a node's ``meta["val"]`` (a tensor, or a tuple/list of them)."""
    if isinstance(val, torch.Tensor):
        return [val]
    if isinstance(val, (list, tuple)):
        return [t for v in val for t in tensors(v)]
    return []


def nbytes(t: torch.Tensor) -> int:
    return int(t.numel()) * t.element_size()


def tensor_json(t: torch.Tensor, node: fx.Node) -> dict:
    if t.dtype not in DTYPES:
        raise ExportError(f"node `{node.name}`: dtype {t.dtype} has no Concerto dtype")
    return {"shape": [int(s) for s in t.shape], "dtype": DTYPES[t.dtype]}


def group_size(node: fx.Node) -> int:
    """The group size of a collective node: its ``group_size`` argument, or the size of the
    process group it names."""
    name = op_name(node).rstrip("_")
    if name in ("all_gather_into_tensor", "reduce_scatter_tensor"):
        return int(node.args[-2] if name == "all_gather_into_tensor" else node.args[2])
    group = node.args[-1]
    import torch.distributed as dist
    from torch.distributed.distributed_c10d import _resolve_process_group

    try:
        return _resolve_process_group(group).size()
    except Exception:  # noqa: BLE001 -- a graph traced elsewhere: fall back to the world
        if dist.is_initialized():
            return dist.get_world_size()
        raise ExportError(f"node `{node.name}`: cannot resolve process group `{group}`")


def _flops(node: fx.Node, outs: list[torch.Tensor]) -> int | None:
    """Flops from ``torch.utils.flop_counter``'s registry (shape formulas), or None."""
    from torch.utils.flop_counter import flop_registry

    t = node.target
    packet = getattr(t, "_overloadpacket", None)
    if packet not in flop_registry:
        return None

    def val(a):
        return a.meta.get("val") if isinstance(a, fx.Node) else a

    args = torch.fx.node.map_aggregate(node.args, val)
    kwargs = torch.fx.node.map_aggregate(node.kwargs, val)
    out = node.meta.get("val")
    return int(flop_registry[packet](*args, out_val=out, **kwargs))


def _gemm_dims(node: fx.Node) -> dict | None:
    name = op_name(node)
    a = [x.meta.get("val") for x in node.args if isinstance(x, fx.Node)]
    try:
        if name == "mm":
            (m, k), (_, n) = a[0].shape, a[1].shape
            return {"b": 1, "m": int(m), "n": int(n), "k": int(k)}
        if name == "addmm":
            (m, k), (_, n) = a[1].shape, a[2].shape
            return {"b": 1, "m": int(m), "n": int(n), "k": int(k)}
        if name == "bmm":
            (b, m, k), (_, _, n) = a[0].shape, a[1].shape
            return {"b": int(b), "m": int(m), "n": int(n), "k": int(k)}
        if name == "baddbmm":
            (b, m, k), (_, _, n) = a[1].shape, a[2].shape
            return {"b": int(b), "m": int(m), "n": int(n), "k": int(k)}
    except (AttributeError, IndexError, ValueError):
        return None
    return None


def compute_kind(node: fx.Node, outs: list[torch.Tensor]) -> dict:
    """The ``kind`` record of a compute node."""
    name = op_name(node)
    ins = [t for a in node.all_input_nodes for t in tensors(a.meta.get("val"))]
    read = sum(nbytes(t) for t in ins)
    written = sum(nbytes(t) for t in outs)
    in_elems = sum(int(t.numel()) for t in ins)
    out_elems = sum(int(t.numel()) for t in outs)
    flops = _flops(node, outs)
    tags = getattr(node.target, "tags", ())
    kind = {"type": "compute"}
    if name in GEMM or (flops is not None and "conv" in name):
        kind["class"] = "gemm"
        dims = _gemm_dims(node)
        if dims:
            kind["gemm"] = dims
    elif any(a in name for a in ATTENTION):
        kind["class"] = "attention"
    elif any(n in name for n in NORM):
        kind["class"] = "norm"
        flops = flops if flops is not None else 5 * in_elems
    elif name in REDUCTIONS:
        kind["class"] = "reduction"
        flops = flops if flops is not None else in_elems
    elif torch.Tag.pointwise in tags:
        kind["class"] = "elementwise"
        flops = flops if flops is not None else out_elems
    else:
        kind["class"] = "other"
    kind["flops"] = int(flops or 0)
    kind["bytes"] = int(read + written)
    return kind


def to_concerto(graph: fx.Graph, name: str, gpus_per_node: int = 8) -> dict:
    """The native graph record of ``graph`` (nodes need ``meta["val"]``, as ``make_fx`` and
    AOTAutograd leave them)."""
    ops: list[dict] = []
    # node -> list of (op index, tensor index) per output tensor, or [] (resident / no op)
    src: dict[fx.Node, list[tuple[int, int]] | None] = {}
    resident = 0
    for node in graph.nodes:
        val = node.meta.get("val")
        if node.op in ("placeholder", "get_attr"):
            if node.op == "get_attr" and val is None:
                val = getattr(graph.owning_module, node.target, None)
            resident += sum(nbytes(t) for t in tensors(val))
            src[node] = None
            continue
        if node.op == "output":
            for a in node.all_input_nodes:
                for i, _ in src.get(a) or []:
                    ops[i]["live_out"] = True
            continue
        if node.op != "call_function":
            raise ExportError(f"node `{node.name}`: {node.op} nodes are not supported")
        if node.target is operator.getitem:
            prod = src.get(node.args[0])
            idx = node.args[1]
            src[node] = [prod[idx]] if prod and isinstance(idx, int) and idx < len(prod) else prod
            continue
        if is_view(node) or is_wait(node):
            first = node.all_input_nodes[0] if node.all_input_nodes else None
            prod = src.get(first) if first is not None else None
            if prod and len(tensors(val)) > 1 and len(prod) == 1:
                prod = prod * len(tensors(val))  # split/unbind: every piece reads the one tensor
            src[node] = prod
            continue
        outs = tensors(val)
        inputs: list = []
        for a in node.all_input_nodes:
            for i, t in src.get(a) or []:
                ref = i if t == 0 else [i, t]
                if ref not in inputs:
                    inputs.append(ref)
        if is_collective(node):
            kind = {
                "type": "collective",
                "kind": COLLECTIVES[op_name(node).rstrip("_")],
                "bytes": int(sum(nbytes(t) for t in outs)),
                "group": group_size(node),
            }
            kind["link"] = "intra-node" if kind["group"] <= gpus_per_node else "inter-node"
        elif not outs:
            src[node] = None  # no tensor: nothing to schedule (a symbolic size, say)
            continue
        else:
            kind = compute_kind(node, outs)
        op = {"name": node.name, "kind": kind, "outputs": [tensor_json(t, node) for t in outs]}
        if inputs:
            op["inputs"] = sorted(inputs, key=lambda r: r if isinstance(r, list) else [r, 0])
        src[node] = [(len(ops), i) for i in range(len(outs))]
        ops.append(op)
    return {"format": "concerto-graph", "version": 1, "name": name,
            "resident_bytes": int(resident), "ops": ops}  # fmt: skip


def collective_nodes(graph: fx.Graph) -> list[fx.Node]:
    """The graph's ``_c10d_functional`` collective nodes (not the waits)."""
    return [n for n in graph.nodes if is_collective(n)]


def write(record: dict, path: str) -> None:
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")


def main(argv: list[str] | None = None) -> int:
    from . import examples
    from .trace import trace_example

    ap = argparse.ArgumentParser(
        prog="python -m concerto_torch.export",
        description="Trace an example training step under the fake process group and write "
                    "Concerto's graph JSON.")  # fmt: skip
    ap.add_argument("example", choices=examples.PARALLEL, help="the GPT block's parallelism")
    add_example_arguments(ap)
    ap.add_argument("--gpus-per-node", type=int, default=8)
    ap.add_argument("--fx-code", help="also write the traced FX graph's Python code here")
    ap.add_argument("-o", "--output", required=True, help="the graph JSON to write")
    a = ap.parse_args(argv)
    cfg = config_of(a)
    gm, step = trace_example(a.example, a.ranks, cfg)
    rec = to_concerto(gm.graph, step.name, a.gpus_per_node)
    write(rec, a.output)
    if a.fx_code:
        with open(a.fx_code, "w") as f:
            f.write(gm.code)
    ncoll = sum(1 for o in rec["ops"] if o["kind"]["type"] == "collective")
    nodes = sum(1 for n in gm.graph.nodes if n.op == "call_function")
    print(f"{a.output}: {step.name}, {nodes} FX nodes -> {len(rec['ops'])} ops, "
          f"{ncoll} collectives, resident {rec['resident_bytes']} bytes")  # fmt: skip
    return 0


def add_example_arguments(ap) -> None:
    """The options both command lines take to build an example step: ranks and its sizes."""
    from . import examples

    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--layers", type=int, default=examples.Config.layers)
    ap.add_argument("--d-model", type=int, default=examples.Config.d_model)
    ap.add_argument("--heads", type=int, default=examples.Config.heads)
    ap.add_argument("--seq", type=int, default=examples.Config.seq)
    ap.add_argument("--batch", type=int, default=examples.Config.batch)


def config_of(a):
    from . import examples

    return examples.Config(layers=a.layers, d_model=a.d_model, heads=a.heads, seq=a.seq,
                           batch=a.batch)  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
