"""Compiles two partitioned HLO modules with XLA's CPU client, runs both, compares bitwise.

Usage::

    PYTHONPATH=python python -m concerto_jax.compare ORIGINAL.hlo RESCHEDULED.hlo \\
        [--seed 0] [--devices N]

Both modules are per-device programs, as XLA writes them right after SPMD partitioning (and
as Concerto writes them back with ``--emit-hlo``: the same program, reordered, collectives as
async pairs, ``is_scheduled=true``). Each is compiled for ``N`` partitions (the header's
``num_partitions``, else 8) and run on the same inputs: for every device ``d`` and entry
parameter ``i`` an array of the parameter's (per-device) shape drawn from
``numpy.random.default_rng([seed, d, i])`` (floats uniform in [0, 1), so that square roots and
logarithms stay finite; integers in [0, 16); booleans fair). Devices get different data, so a
collective that reads the wrong peer changes the result. Every output of every device is
compared bit for bit; the result is one JSON line::

    {"original": ..., "rescheduled": ..., "devices": N, "outputs": K, "identical": bool,
     "max_abs_diff": float, "first_difference": str|null, "compile_s": [a, b], "run_s": [a, b],
     "error": str|null}

The exit status is 0 only when every output is identical.

How a module is compiled (jaxlib 0.10.2; each step is XLA's own code):

1. ``hlo.hlo_module_from_text(text)`` (``jax._src.lib.hlo``), after two textual rewrites of
   what jaxlib 0.10.2 cannot compile from an after-partitioning dump:
   mesh-form replica groups are expanded into the list form
   (:func:`concerto_jax.hlo_text.expand_mesh_replica_groups`; the StableHLO import refers
   them to a mesh it never defines), and the shardings are replaced by ``{manual}`` on the
   entry's parameters and root (:func:`concerto_jax.hlo_text.manual_shardings`; otherwise
   the required SPMD partitioner would split the per-device shapes again);
2. ``module.as_serialized_hlo_module_proto()`` and
   ``jax._src.lib._jax.mlir.hlo_to_stablehlo(proto)``: StableHLO bytecode (the schedule is
   not carried: XLA schedules the module again while compiling, so this checks that the
   reordered program computes the same values, not how XLA runs the given order);
3. ``backend.compile_and_load(bytecode, DeviceList(devices), options)`` with
   ``num_replicas=1``, ``num_partitions=N``, device assignment ``[[0..N-1]]`` and
   ``use_spmd_partitioning=True``;
4. per parameter, ``jax.make_array_from_single_device_arrays`` over the N devices (one
   buffer per device, each the per-device array), ``executable.execute_sharded(args)`` and
   ``disassemble_into_single_device_arrays()`` for the per-device outputs.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time

from concerto_jax.hlo_text import configure_xla, expand_mesh_replica_groups, manual_shardings

DEFAULT_DEVICES = 8


def header_partitions(text: str) -> int | None:
    """``num_partitions=`` of the module header, if written."""
    first = text.split("\n", 1)[0]
    m = re.search(r"\bnum_partitions=(\d+)", first)
    return int(m.group(1)) if m else None


def prepare(text: str) -> str:
    """The textual rewrites of step 1 in the module docs."""
    text, _ = expand_mesh_replica_groups(text)
    return manual_shardings(text)


def compile_module(text: str, devices: list):
    """Compiles one after-partitioning HLO module text for ``len(devices)`` partitions.

    Returns ``(executable, parameter shapes)``; raises on XLA's errors.
    """
    import numpy as np
    from jax._src import xla_bridge
    from jax._src.lib import _jax, hlo, xla_client

    module = hlo.hlo_module_from_text(prepare(text))
    proto = module.as_serialized_hlo_module_proto()
    shapes = hlo.XlaComputation(proto).program_shape().parameter_shapes()
    bytecode = _jax.mlir.hlo_to_stablehlo(proto)
    n = len(devices)
    opts = xla_client.CompileOptions()
    opts.num_replicas = 1
    opts.num_partitions = n
    opts.device_assignment = xla_client.DeviceAssignment.create(np.arange(n).reshape(1, n))
    opts.executable_build_options.use_spmd_partitioning = True
    backend = xla_bridge.get_backend("cpu")
    exe = backend.compile_and_load(bytecode, _jax.DeviceList(tuple(devices)), opts)
    return exe, shapes


def make_inputs(shapes, n: int, seed: int) -> list[list]:
    """``inputs[i][d]``: the numpy array of parameter ``i`` on device ``d`` (module docs)."""
    import numpy as np

    out = []
    for i, sh in enumerate(shapes):
        if sh.is_tuple():
            raise ValueError(f"entry parameter {i} has a tuple shape {sh}: not supported")
        dims = tuple(sh.dimensions())
        dtype = np.dtype(sh.numpy_dtype())
        per = []
        for d in range(n):
            rng = np.random.default_rng([seed, d, i])
            if dtype == np.bool_:
                x = rng.integers(0, 2, size=dims).astype(np.bool_)
            elif np.issubdtype(dtype, np.integer):
                x = rng.integers(0, 16, size=dims).astype(dtype)
            elif np.issubdtype(dtype, np.complexfloating):
                x = (rng.random(dims) + 1j * rng.random(dims)).astype(dtype)
            else:
                x = rng.random(dims, dtype=np.float64).astype(dtype)
            per.append(x)
        out.append(per)
    return out


def run(exe, inputs: list[list]) -> list[list]:
    """Runs ``exe`` on per-device inputs; returns ``outputs[k][d]`` as numpy arrays."""
    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    devices = list(exe.local_devices())
    sharding = NamedSharding(Mesh(np.array(devices), ("d",)), PartitionSpec())
    args = []
    for per in inputs:
        bufs = [jax.device_put(x, dev) for x, dev in zip(per, devices)]
        args.append(jax.make_array_from_single_device_arrays(per[0].shape, sharding, bufs))
    results = exe.execute_sharded(args)
    outs = results.disassemble_into_single_device_arrays()
    return [[np.asarray(a) for a in per] for per in outs]


def compare_outputs(a: list[list], b: list[list]) -> tuple[bool, float, str | None]:
    """Bitwise comparison of two runs: ``(identical, max abs diff, first difference)``.

    The max abs diff is over the float (and integer) outputs, in float64; a NaN in one run
    only counts as ``inf``. Cost: O(output bytes).
    """
    import numpy as np

    if len(a) != len(b):
        return False, float("inf"), f"{len(a)} outputs against {len(b)}"
    identical, worst, first = True, 0.0, None
    for k, (pa, pb) in enumerate(zip(a, b)):
        for d, (x, y) in enumerate(zip(pa, pb)):
            if x.shape != y.shape or x.dtype != y.dtype:
                return False, float("inf"), (
                    f"output {k} device {d}: {x.dtype}{list(x.shape)} against "
                    f"{y.dtype}{list(y.shape)}"
                )
            same = x.tobytes() == y.tobytes()
            if not same:
                identical = False
                first = first or f"output {k} device {d}"
            if x.size and (np.issubdtype(x.dtype, np.number)):
                xf, yf = x.astype(np.float64), y.astype(np.float64)
                nan = np.isnan(xf) != np.isnan(yf)
                if nan.any():
                    worst = float("inf")
                else:
                    diff = np.abs(np.nan_to_num(xf - yf, nan=0.0))
                    worst = max(worst, float(diff.max()))
    return identical, worst, first


def compare_files(original: str, rescheduled: str, seed: int, devices: int | None) -> dict:
    """Compiles, runs and compares two module files (module docs); never raises on XLA's errors."""
    import jax

    r = {
        "original": original,
        "rescheduled": rescheduled,
        "devices": None,
        "outputs": 0,
        "identical": False,
        "max_abs_diff": None,
        "first_difference": None,
        "compile_s": [],
        "run_s": [],
        "seed": seed,
        "error": None,
    }
    try:
        texts = []
        for path in (original, rescheduled):
            with open(path) as f:
                texts.append(f.read())
        n = devices or header_partitions(texts[0]) or DEFAULT_DEVICES
        r["devices"] = n
        devs = jax.devices("cpu")
        if len(devs) < n:
            raise RuntimeError(f"jax sees {len(devs)} CPU devices, {n} needed")
        devs = devs[:n]
        results, shapes0 = [], None
        for path, text in zip((original, rescheduled), texts):
            t = time.perf_counter()
            try:
                exe, shapes = compile_module(text, devs)
            except Exception as e:
                raise RuntimeError(f"compiling {path}: {e}") from e
            r["compile_s"].append(round(time.perf_counter() - t, 3))
            sig = [str(s) for s in shapes]
            if shapes0 is None:
                shapes0, inputs = sig, make_inputs(shapes, n, seed)
            elif sig != shapes0:
                raise RuntimeError(
                    f"the entry parameters differ: {path} has {len(sig)} ({sig[:4]}...), "
                    f"{original} {len(shapes0)} ({shapes0[:4]}...)"
                )
            t = time.perf_counter()
            results.append(run(exe, inputs))
            r["run_s"].append(round(time.perf_counter() - t, 3))
        r["outputs"] = len(results[0])
        same, worst, first = compare_outputs(results[0], results[1])
        r["identical"], r["max_abs_diff"], r["first_difference"] = same, worst, first
    except Exception as e:
        msg = " | ".join(s.strip() for s in str(e).strip().splitlines() if s.strip())
        r["error"] = msg[:4000] if msg else repr(e)
    return r


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns 0 when the outputs are identical, 1 otherwise."""
    p = argparse.ArgumentParser(prog="concerto_jax.compare", description=__doc__.split("\n")[0])
    p.add_argument("original")
    p.add_argument("rescheduled")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--devices", type=int, default=None, help="default: num_partitions or 8")
    a = p.parse_args(argv)
    n = a.devices
    if n is None:
        try:
            with open(a.original) as f:
                n = header_partitions(f.readline())
        except OSError:
            n = None
    configure_xla(n or DEFAULT_DEVICES)
    r = compare_files(a.original, a.rescheduled, a.seed, a.devices)
    print(json.dumps(r), flush=True)
    return 0 if r["identical"] and r["error"] is None else 1


if __name__ == "__main__":
    sys.exit(main())
