//! Hardware profiles and the cost model: integer nanoseconds for every op of a [`Graph`](crate::ir::Graph).
//!
//! A [`Hardware`] profile turns what an op carries (flops, bytes moved, GEMM shape, collective
//! bytes, group size, link class) into a duration. The profiles ([`Hardware::NAMES`]) include:
//!
//! - **`h100`** (measured): one NVIDIA H100 SXM 80GB per rank, DGX H100 nodes of 8 GPUs on
//!   NVSwitch. GEMMs and intra-node collectives are interpolated in tables XLA measured on
//!   `sm_90`; everything else is a roofline or an alpha-beta model over datasheet figures.
//! - **`h200`** (measured): the H100's die and tables with HBM3e at 4.8 TB/s and the memory
//!   efficiencies measured on an H200 (below).
//! - **`a800`** (roofline): the Concerto paper's setting (Cheng et al., ASPLOS 2025): 32 NVIDIA
//!   A800 80GB SXM, 4 nodes of 8, NVLink 400 GB/s, 800 Gb/s between nodes. Every formula is a
//!   roofline or an alpha-beta model over published peaks.
//! - **`a800-pcie`** (roofline): the same GPUs without NVLink, the paper's "without NVLink"
//!   setting: intra-node collectives run over PCIe 4.0.
//! - **`a100`**, **`v100`** (datasheet peaks, tiled GEMMs): the GPUs of the repository's
//!   PyTorch profiler traces. GEMMs are tile- and wave-quantised over the SMs as XLA's
//!   analytical dot model does (below), and memory-bound kernels run at the efficiencies
//!   measured on the H200.
//!
//! ```
//! use concerto_graph::hardware::Hardware;
//! use concerto_graph::ir::{CollectiveKind, DType, GemmShape, LinkClass};
//!
//! let a800 = Hardware::by_name("a800")?;
//! // 64 MiB all-reduce over the 8 GPUs of a node: 2·7/8 · 64 MiB / 200 GB/s + 14 · 5 µs.
//! let ar = CollectiveKind::AllReduce;
//! assert_eq!(a800.collective_ns(ar, 64 << 20, 8, LinkClass::IntraNode), 657_203);
//! // The same over 32 GPUs in 4 nodes: 12.5 GB/s per GPU, 8 µs per step.
//! assert!(a800.collective_ns(ar, 64 << 20, 32, LinkClass::InterNode) > 9_000_000);
//!
//! let h100 = Hardware::h100();
//! let shape = GemmShape { b: 1, m: 4096, n: 4096, k: 4096 };
//! // On XLA's grid: 2 · 4096³ flop at the measured 780.2 TFLOP/s.
//! assert_eq!(h100.gemm_ns(shape, DType::Bf16), 176_161);
//! # Ok::<(), concerto_graph::GraphError>(())
//! ```
//!
//! Every duration is rounded **up** to whole nanoseconds and is at least 1 ns. An op's own
//! `duration_ns` (measured, or imported with the graph) overrides the model
//! ([`Hardware::op_ns`]). Formulas work in `f64`; the integer result saturates at `u64::MAX`.
//!
//! # Compute ops
//!
//! An op `Compute { class, flops, bytes, gemm }` costs
//! `max(compute_time, bytes / HBM bandwidth, min_kernel_ns)`, where `compute_time` is:
//!
//! - with a GEMM shape (`gemm: Some(shape)`): `flops / throughput(shape, dtype)`. On `h100`
//!   the throughput is the measured table's at that shape (below); on `a100` and `v100` the
//!   tensor peak after tile and wave quantisation (below); on `a800` the tensor peak for the
//!   dtype. The op's *total* flops are charged at the shape's throughput, so an
//!   attention op doing two matmuls of that shape costs twice one of them.
//! - without a shape, for `Gemm` and `Attention` ops: `flops / tensor peak(dtype)`;
//! - for every other class (elementwise, reduction, norm, other): `flops / fp32 vector peak`
//!   (a conservative rate: these kernels are almost always memory-bound, so the HBM term
//!   decides).
//!
//! The dtype of a compute op is the dtype of its first output (`bf16` if it declares none).
//! Dtypes pick the tables and peaks: `f32` uses the `f32` table (XLA runs f32 GEMMs on TF32
//! tensor cores) and the TF32 peak; `f8` uses the `f8e4m3fn x f8e4m3fn -> bf16` table and the
//! FP8 peak (`a800`: Ampere has no FP8, the bf16 peak); `bf16`, `f16` and every other dtype use
//! the `bf16` table and peak.
//!
//! `min_kernel_ns` = 1 000 ns is an **assumption**: the launch latency and tail of one CUDA
//! kernel, which no kernel beats however little it does; calibrate it with the CUDA executor.
//! Every compute op costs at least that. [`Hardware::memory_bound_ns`] is
//! `max(bytes / HBM, min_kernel_ns)`.
//!
//! ## `h100` GEMM table
//!
//! `h100_gemm.csv` (embedded) holds the `sm_90` rows of XLA's matmul table for three types:
//! b ∈ {1, 2, 4}, m, n, k ∈ {256, 512, 1024, 2048, 4096}; `flops_per_sec = 2 b m n k` per second
//! of measured run time. For a shape (b, m, n, k):
//!
//! - the throughput is interpolated between the 16 surrounding grid points, multilinearly in
//!   log2 m, log2 n, log2 k (trilinear) and log2 b, each coordinate clamped to the grid;
//!   time = `2 b m' n' k' / throughput`. The interpolation is geometric (of log throughput,
//!   log-log like the collective tables): linear interpolation of the throughput itself makes
//!   time *fall* with size where throughput nearly doubles per doubling (small, latency-bound
//!   GEMMs: in the bf16 table 256 x 256 x 700 came out faster than 256 x 256 x 512);
//! - a dimension below 256 is raised to 256 (`m' = max(m, 256)`, ...): **tile quantisation**,
//!   a GEMM is no faster than one 256-wide tile of the table, so it costs what the GEMM with
//!   that dimension at 256 costs;
//! - a dimension above 4096 keeps the throughput at the grid's edge (saturated tensor cores),
//!   so time grows with the flops;
//! - a batch above the grid's (b > 4): see "Batched GEMMs" below;
//! - a shape with a zero dimension computes nothing (only the HBM term and the floor apply).
//!
//! ## Batched GEMMs
//!
//! The table's small products are latency-bound: at (4, 1024, 128, 1024) the table measured
//! 9.5 µs for 1.07 GFLOP, 113 TFLOP/s. Keeping that throughput for a larger batch, as a clamp
//! of b to 4 would, charges every further batch the same fixed latency, although one launch
//! runs all batches at once on the SMs the small product leaves idle: an attention product of
//! b = 128 heads x batches, 1024 x 128 x 1024, came out at 285-317 µs where cuBLAS and Triton
//! took 83-94 µs on an H200 (`docs/fidelity-data/step_kernels.json`; 370-414 TFLOP/s, and
//! 335 MB of operands and result, so HBM-bound). A batch above 4 therefore costs
//! `max(t(4, m, n, k), 2 b m' n' k' / saturated)`, `saturated` the table's throughput at its
//! largest point (4, 4096, 4096, 4096; 789 TFLOP/s in bf16): no less than the four-batch product
//! and no less than its flops on fully busy tensor cores. Time stays non-decreasing in b, m, n
//! and k. The HBM term (operands and result at the stream bandwidth) then decides for such
//! thin products: 87 µs on `h200`, 100 µs on `h100`.
//!
//! **Padding envelope.** The raw table is not monotone: 26 of the 1 150 grid steps of the bf16
//! table (24 for f32, 110 for f8, nearly all among the smallest, latency-bound shapes) make a
//! *larger* GEMM faster. A smaller GEMM can always be run as the larger one padded with zeros,
//! so at load time each grid point's time is replaced by the least time of every grid point
//! that dominates it (`t(p) = min over q >= p of t(q)`, one suffix-minimum pass per axis) and
//! its throughput by `flops(p) / t(p)`. This lowers 12 of the 375 bf16 points, 26 f32 and 53
//! f8; every other point keeps its measured value exactly. On a monotone grid a step at most
//! doubles the throughput per doubling of a coordinate, so log time is non-decreasing along
//! every axis of the geometric interpolation: a bigger GEMM never takes less time. Lookup:
//! O(1) (16 grid points).
//!
//! ## Tiled GEMMs (`a100`, `v100`)
//!
//! Without a measured table a GEMM costs what XLA's analytical dot model
//! (`xla/service/gpu/model/gpu_dot_fusion_cost_model.cc`,
//! `CalculateComputeTimeWithTileAndWaveQuantization`) charges: the result is cut into output
//! tiles `tm x tn` (each a power of two from 32 to 256, with `tm tn · size(dtype)` at most
//! 0.8 · 65 536, the accumulator budget of `TileFitsInRegisters`), one tile per SM at a time.
//! With `tiles = b · ceil(m / tm) · ceil(n / tn)` and `waves = ceil(tiles / SMs)`, the compute
//! time is `waves · SMs · 2 tm tn k / tensor peak`: a GEMM of fewer tiles than SMs leaves SMs
//! idle, the last wave of a larger one runs partly empty, and the padding of the edge tiles
//! is paid for. Each tile reads its `(tm + tn) k` operand elements through L2
//! (`CalculateL2Time`): `tiles · (tm + tn) k · size(dtype) / L2 bandwidth`, so small tiles,
//! which quantise better, re-read more. A tile costs the larger of the two terms, and the
//! GEMM the least over the tiles (an autotuner picks the fastest; XLA's
//! `FindBestBlockLevelParameters` is not written yet). A batched product is batch-aware this
//! way: its `b` products share the waves. The HBM term is XLA's too: operands and result at
//! 0.8 of the paper bandwidth (`CalculateHbmTime`'s `hbm_bandwidth_utilization_rate`), the
//! stream efficiency below. Two departures from XLA's code, which hard-codes an H100's
//! measured L2 bandwidth (6.65 TB/s) and divides elements by it: the L2 term counts bytes, at
//! each GPU's own L2 read bandwidth (A100: 5 120 B/clock at 1 410 MHz, 7.2 TB/s; V100: 2 048
//! B/clock at 1 530 MHz, 3.1 TB/s; NVIDIA's A100 whitepaper). `a100`: 108 SMs, `v100`: 80
//! SMs (datasheets). O(16) per GEMM.
//!
//! # Memory efficiency
//!
//! The HBM term is `bytes / (paper bandwidth · efficiency)`, the efficiency by what the kernel
//! does. On `h200` the three figures are measured on the H200 of `docs/fidelity-data`
//! (`docs/src/fidelity.md`):
//!
//! - **stream, 0.80**: kernels that read and write (elementwise and loop fusions, reductions,
//!   copies, the operands of GEMMs). A 2 GiB device-to-device copy moved 3.84 TB/s, read plus
//!   write (`contention.json`), against 4.8 TB/s on paper;
//! - **row normalisations, 0.46**: ops of class [`Norm`](crate::ir::ComputeClass::Norm) (the
//!   HLO importer gives it to fusions that broadcast a reduction's result back over the rows
//!   it reduced: softmax, layer norm and their gradients). The step's 29 such kernels, most
//!   of them Triton block-level fusions over rows of 1 024 to 2 048 elements, moved their
//!   operands and results at 2.20 TB/s, time-weighted (`step_kernels.json`): they recompute
//!   the row statistics in f32 and hold a row per program, so fewer loads are in flight than
//!   in a streaming kernel;
//! - **fills, 0.35**: ops that only write (bytes equal to their outputs' bytes: a broadcast of
//!   a constant, an iota). The step's two zero-fills wrote 134 and 537 MB at 1.70 TB/s, below
//!   the 1.92 TB/s of writes in the copy above.
//!
//! `a100` and `v100` carry the same three shares. The stream share is the one XLA's own dot
//! model assumes for every GPU (0.8, above); the row-normalisation and fill shares come from
//! what the kernels do (XLA's row-reduction emitter holds a row per program and recomputes
//! its statistics in f32; a fill only writes), the same emitters on every NVIDIA GPU, and are
//! to be measured on an A100 and a V100. `h100`, `a800` and `a800-pcie` use the paper
//! bandwidth for every kernel (efficiency 1): `h100` keeps the figures of its XLA tables,
//! `a800` the Concerto paper's roofline.
//!
//! # Collectives
//!
//! `bytes` is the size of the collective's result buffer on one device (for a reduce-scatter,
//! the shard), `n` the group size. A collective is **inter-node** when its link class is
//! `InterNode` or `n > gpus_per_node`, **intra-node** otherwise. A collective with `n < 2`
//! (other than a send-recv, whose group does not matter) moves nothing and costs 1 ns.
//!
//! ## Alpha-beta ring model
//!
//! With bus bandwidth `bw` per GPU and per-step latency `alpha`:
//!
//! | kind | time |
//! |---|---|
//! | all-reduce | `2 (n-1)/n · B/bw + 2 (n-1) · alpha` |
//! | all-gather, all-to-all | `(n-1)/n · B/bw + (n-1) · alpha` |
//! | reduce-scatter (result is the shard `B`) | `(n-1) · B/bw + (n-1) · alpha` |
//! | send-recv | `B/bw + alpha` |
//! | broadcast (pipelined tree) | `B/bw + ceil(log2 n) · alpha` |
//!
//! Inter-node, `bw` = node NIC bandwidth / `gpus_per_node`: every GPU of a node communicates
//! at once (the usual data- and pipeline-parallel pattern) and they share the node's NICs.
//! Lookup: O(1).
//!
//! ## `h100` intra-node table
//!
//! `h100_collectives.csv` (embedded) holds XLA's `sm_90` collective measurements on one
//! 8-GPU node: all-reduce, all-gather, reduce-scatter and all-to-all for groups of 2, 4 and 8
//! devices, and collective-permute (three samples per size, the median is used); 22 sizes each,
//! element counts per device, F32 so bytes = 4 · elements; throughput = bytes of the result
//! shape per second. Kinds map to table opcodes one-to-one; send-recv uses collective-permute
//! and **broadcast uses all-gather's throughput** (an approximation: NCCL's broadcast moves
//! the same bytes per device through the same ring as an all-gather's result). Then:
//!
//! - in bytes, log(throughput) is interpolated linearly in log(bytes) between the two
//!   neighbouring sizes; below the smallest size the time is the smallest
//!   size's (the latency floor); above the largest, the largest size's throughput;
//! - a group of 2, 4 or 8 uses that table; 3, 5, 6, 7 interpolate the neighbouring tables'
//!   times geometrically in log2(group) (3 lies between 2 and 4 at weight log2 3 - 1); a group
//!   above 8 (possible only after [`Hardware::with_gpus_per_node`] raised the node size)
//!   scales the group-8 time by the ring model's bandwidth factor (`2(n-1)/n`, `(n-1)/n` or
//!   `n-1`) relative to n = 8;
//! - time = bytes / throughput. Lookup: O(log s) for s = 22 sizes (binary search).
//!
//! The same padding envelope as for GEMMs makes each series' time non-decreasing in bytes
//! (a smaller buffer can be sent as a larger one; geometric interpolation between monotone
//! points stays monotone). The raw tables' small sizes are noisy and carry warm-up outliers
//! (an 8-GPU all-reduce measured 49 µs at 1 KiB and 36 µs at 2 KiB but 26 µs at 256 KiB, so
//! every size below 256 KiB now costs 26 µs): 94 of the 286 sizes of the 13 series are
//! lowered, 90 of them below 1 MiB.
//!
//! Inter-node on `h100` uses the ring model with 8 × 400 Gb/s ConnectX-7 NICs per DGX H100
//! node = 400 GB/s per node (50 GB/s per GPU at 8 per node) and alpha = 8 µs per ring step
//! (an **assumption**: a few µs of InfiniBand and NCCL protocol latency per step), floored at
//! the measured intra-node time of the same collective (at `min(n, gpus_per_node)` ranks): a
//! collective that crosses nodes is never faster than one inside a node. The floor matters
//! only for small send-recvs and broadcasts (the measured intra-node send-recv takes 11.7 µs
//! at 1 KiB and 32 µs at 1 MiB, above the ring's 8 µs and 29 µs).
//!
//! ## `a800`
//!
//! Ring model on both link classes. Intra-node: NVLink 400 GB/s per GPU is the bidirectional
//! figure the paper quotes, so the ring runs at **200 GB/s per direction**, alpha = 5 µs
//! (assumption). Inter-node: 800 Gb/s per node = 100 GB/s per node, 12.5 GB/s per GPU at 8 per
//! node, alpha = 8 µs (assumption).
//!
//!
//! ## `a800-pcie`
//!
//! `a800` with the intra-node link replaced by PCIe 4.0 x16: 32 GB/s per direction on paper;
//! NCCL's ring through the PCIe switches and the CPU root complex reaches a bus bandwidth of
//! about 20-25 GB/s on such servers, so the ring runs at **24 GB/s per direction** with alpha
//! = 10 µs (both **assumptions**; calibrate with `nccl-tests` on the machine). Inter-node as
//! `a800`. Use it with `concerto model ... --precision f32` for the paper's fp32 setting
//! (f32 GEMMs run at the TF32 tensor peak, see above).

//! # Contention
//!
//! [`Hardware::contention`] is how many times slower compute ops run while a collective runs;
//! the simulator applies it, this module only carries it. NCCL kernels occupy SMs and HBM
//! bandwidth that concurrent GEMMs lose.
//!
//! `h100`: **1.45, measured** on an NVIDIA H100 80GB HBM3 by
//! `scripts/gpu-measure`: a bf16 GEMM of 8192³ / 4096³ ran 1.448 / 1.458 times slower while an
//! SM-based copy on 16 CTAs (NCCL runs one CTA per channel, 16 to 32 channels on NVLink H100
//! nodes) moved 1.33 TB/s on another stream; 2 CTAs gave 1.12 / 1.29, 32 CTAs 2.05 / 1.96, a
//! copy-engine transfer 1.02 / 1.05 (on an H200: 16 CTAs 1.43 / 1.46).
//! `docs/src/fidelity.md` (section 2) has the method and the data. Still assumed: that real NCCL
//! collectives over NVLink interfere like a local copy
//! on as many CTAs, and one factor for every kernel.
//!
//! `a800`, `a800-pcie`: 1.1, an **assumption**. Published measurements of
//! compute-communication interference (Rashidi et al., "Enabling Compute-Communication Overlap
//! in Distributed Deep Learning Training Platforms", ISCA 2021; Pati et al., "T3: Transparent
//! Tracking & Triggering for Fine-grained Overlap of Compute & Collectives", ASPLOS 2024)
//! report slowdowns of roughly 10-30% depending on the kernel and the SMs the collective takes;
//! 1.1 is the conservative end.
//!
//! # Constants
//!
//! | | `h100` | `h200` | `a800` | `a800-pcie` | `a100` | `v100` |
//! |---|---|---|---|---|---|---|
//! | HBM | HBM3 3.35 TB/s | HBM3e 4.8 TB/s | HBM2e 2.039 TB/s | as `a800` | as `a800` | HBM2 0.9 TB/s |
//! | memory efficiency (stream / norm / fill) | 1 | 0.80 / 0.46 / 0.35 (measured) | 1 | 1 | as `h200` | as `h200` |
//! | fp32 vector | 67 TFLOP/s | as `h100` | 19.5 TFLOP/s | as `a800` | as `a800` | 15.7 TFLOP/s |
//! | bf16 / f16 tensor (dense) | 989 TFLOP/s | as `h100` | 312 TFLOP/s | as `a800` | as `a800` | 125 TFLOP/s |
//! | tf32 tensor (dense, f32 GEMMs) | 494.5 TFLOP/s | as `h100` | 156 TFLOP/s | as `a800` | as `a800` | (none: 15.7 fp32) |
//! | fp8 tensor (dense) | 1 979 TFLOP/s | as `h100` | (none: bf16 rate) | as `a800` | as `a800` | (none: 125) |
//! | GEMMs with a shape | measured table | as `h100` | tensor peak | tensor peak | tiled, 108 SMs | tiled, 80 SMs |
//! | intra-node | measured table | as `h100` | ring, 200 GB/s, alpha 5 µs | ring, 24 GB/s, alpha 10 µs | ring, 300 GB/s, alpha 5 µs | ring, 150 GB/s, alpha 5 µs |
//! | inter-node, per node | 400 GB/s, alpha 8 µs | as `h100` | 100 GB/s, alpha 8 µs | as `a800` | 200 GB/s, alpha 8 µs | 50 GB/s, alpha 8 µs |
//! | GPUs per node | 8 | 8 | 8 | 8 | 8 | 8 |
//! | kernel floor | 1 µs | 1 µs | 1 µs | 1 µs | 1 µs | 1 µs |
//! | contention | 1.45 (measured) | 1.45 (measured on an H200 too) | 1.1 | 1.1 | 1.1 | 1.1 |
//!
//! [`Hardware`] implements `Display`, which prints these.
//!
//! # Sources
//!
//! - Measured tables: openxla/xla, `xla/service/gpu/model/default_matmul_perf_table.txtpb` and
//!   `default_collective_perf_table.txtpb` (Apache-2.0), the `sm_90` rows, converted to CSV
//!   with the source's column meanings (see the header of each CSV file).
//! - NVIDIA H100 Tensor Core GPU datasheet (SXM5: HBM3 3.35 TB/s, FP32 67 TFLOP/s, BF16 1 979,
//!   TF32 989 and FP8 3 958 TFLOP/s with sparsity, halved here for dense); NVIDIA DGX H100
//!   datasheet (8 × ConnectX-7 400 Gb/s).
//! - NVIDIA H200 Tensor Core GPU datasheet (SXM: 141 GB HBM3e at 4.8 TB/s; the H100 SXM's
//!   compute figures).
//! - NVIDIA A100 80GB datasheet for the A800 80GB SXM, which has the A100's compute and memory
//!   (BF16 312, TF32 156, FP32 19.5 TFLOP/s dense, HBM2e 2.039 TB/s) with NVLink limited to
//!   400 GB/s.
//! - openxla/xla, `xla/service/gpu/model/gpu_dot_fusion_cost_model.cc` (Apache-2.0): the tile
//!   and wave quantisation, the accumulator budget and the 0.8 HBM utilisation of the tiled
//!   GEMMs (the `ROCm/xla` mirror).
//! - NVIDIA A100 Tensor Core GPU architecture whitepaper (108 SMs); NVIDIA Tesla V100
//!   datasheet and Volta architecture whitepaper (80 SMs, HBM2 900 GB/s, fp16 tensor 125
//!   TFLOP/s, fp32 15.7 TFLOP/s).
//! - Cheng et al., "Concerto: Automatic Communication Optimization and Scheduling for
//!   Large-Scale Deep Learning", ASPLOS 2025: the 32 × A800 setting (NVLink 400 GB/s,
//!   800 Gb/s between nodes).

mod fit;
mod profile;
mod ring;
mod tables;
#[cfg(test)]
mod tests;
mod tiled;

pub use fit::{class_name, Fit, FitRing};
pub use profile::Hardware;

const NS_PER_S: f64 = 1e9;

/// `ns` rounded up to whole nanoseconds, at least 1 (NaN gives 1, overflow saturates).
fn ceil_ns(ns: f64) -> u64 {
    (ns.ceil() as u64).max(1)
}
