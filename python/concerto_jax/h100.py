"""The H100 target a deviceless compile needs: the ``GpuTargetConfigProto`` of an H100 SXM and the
8-GPU PJRT topology (``jax.experimental.topologies.get_topology_desc(platform="cuda",
topology_name=TOPOLOGY_NAME, target_config=h100_target_config(), topology=TOPOLOGY)``).

:func:`concerto_jax.compile` (:mod:`concerto_jax.aot`) compiles concerto's module for this
target when the step's devices are H100s, :mod:`concerto_jax.pjrt_gpu` by default, and
:func:`concerto_jax.steer.h100_devices` gives the topology's compile-only devices. No jax
import here.
"""

from __future__ import annotations

TOPOLOGY = "1x1x8"
TOPOLOGY_NAME = "h100x8"


def h100_target_config() -> str:
    """The ``GpuTargetConfigProto`` text of an H100 SXM (80 GB HBM3), for a deviceless
    compile.

    The values are those of XLA's ``xla/backends/gpu/target_config/specs/h100_sxm.txtpb``
    (openxla/xla, Apache-2.0): 132 SMs at 1.98 GHz, compute capability 9.0a, 3.35 TB/s HBM,
    50 MiB L2, 228 KiB shared memory per SM, the scalar and tensor-core rates per element
    type (``rate_infos`` keys are ``xla::PrimitiveType`` numbers) that XLA's cost models use.
    Four fields of that file are left out because jaxlib 0.10.2's proto does not know them
    (its text parser rejects the whole config): ``mem_clock_ghz``,
    ``reserved_shared_memory_per_block``, ``max_blocks_per_multiprocessor``,
    ``collective_memory_granularity``.
    """
    dev = [
        ("threads_per_block_limit", 1024), ("threads_per_warp", 32),
        ("shared_memory_per_block", 49152), ("shared_memory_per_core", 233472),
        ("threads_per_core_limit", 2048), ("core_count", 132), ("fpus_per_core", 128),
        ("block_dim_limit_x", 2147483647), ("block_dim_limit_y", 65535),
        ("block_dim_limit_z", 65535), ("memory_bandwidth", 3352320000000),
        ("l2_cache_size", 52428800), ("clock_rate_ghz", 1.98),
        ("device_memory_size", 84942979072), ("shared_memory_per_block_optin", 232448),
    ]  # fmt: skip
    lines = ["gpu_device_info {"]
    lines += [f"  {k}: {v}" for k, v in dev]
    lines.append("  cuda_compute_capability { major: 9 feature_extension: ACCELERATED_FEATURES }")
    lines += ["  registers_per_core_limit: 65536", "  registers_per_block_limit: 65536"]

    def unit(name: str, rows: list[tuple[int, float, int, int]]) -> list[str]:
        out = [f"  {name} {{"]
        for key, ghz, units, ops in rows:
            out.append(f"    rate_infos {{ key: {key} value {{ clock_rate_ghz: {ghz} "
                       f"units_per_core: {units} ops_per_clock: {ops} }} }}")  # fmt: skip
        return out + ["  }"]

    sm, tc = 1.98, 1.8295201  # SM clock; the tensor cores' sustained clock
    lines += unit("scalar_unit_description", [
        (4, sm, 64, 1), (8, sm, 64, 1), (10, sm, 128, 2), (11, sm, 128, 1), (12, sm, 64, 1),
        (16, sm, 128, 2),
    ])  # fmt: skip
    lines += unit("matrix_unit_description", [
        (2, tc, 4, 1024), (6, tc, 4, 1024), (10, tc, 4, 512), (11, tc, 4, 256),
        (12, sm, 4, 32), (16, tc, 4, 512),
    ] + [(k, tc, 4, 1024) for k in (19, 20, 23, 24, 25, 28, 29, 33, 35, 36)])  # fmt: skip
    lines += [
        "  thread_dim_limit_x: 1024", "  thread_dim_limit_y: 1024", "  thread_dim_limit_z: 64",
        '  device_vendor: "NVIDIA Corporation"',
        '  platform_version: "Compute Capability 9.0a"',
        '  model_str: "sm_9.0a with 84942979072B RAM, 132 cores, 1980000KHz clock, '
        '2619000KHz mem clock, 52428800B L2$"',
        "  device_address_bits: 64", "  pcie_bandwidth: 34359738368", "  ecc_enabled: true",
        '  name: "NVIDIA H100 80GB HBM3"', '  driver_version: "13.0.0"',
        '  runtime_version: "12.8.0"', '  compile_time_toolkit_version: "12.8.0"',
        '  dnn_version: "9.10.0"', '  cub_version: "3.1.2"',
        "  device_interconnect_info { active_links: 18 }",
        "}",
        'platform_name: "CUDA"',
        "dnn_version_info { major: 8 minor: 9 patch: 4 }",
        'device_description_str: "NVIDIA H100 80GB HBM3"',
    ]  # fmt: skip
    return "\n".join(lines) + "\n"
