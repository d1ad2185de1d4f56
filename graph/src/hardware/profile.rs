//! The hardware profiles (`h100`, `h200`, `a800`, `a800-pcie`, `a100`, `v100`) and the cost of
//! one op on a profile.

use std::fmt;
use std::sync::Arc;

use super::ring::Ring;
use super::tables::{h100_tables, CollectiveTables, GemmTables, GemmType};
use super::tiled::TiledGemm;
use super::{ceil_ns, NS_PER_S};
use crate::error::GraphError;
use crate::ir::{CollectiveKind, ComputeClass, DType, GemmShape, Graph, LinkClass, Op, OpKind};

/// Launch latency and tail of one kernel (assumption, see the module docs).
const MIN_KERNEL_NS: u64 = 1_000;
/// Default compute slowdown while a collective runs (assumption, see the module docs): the
/// `a800` profiles.
const DEFAULT_CONTENTION: f64 = 1.1;
/// Compute slowdown while a collective runs on the `h100` profile, measured: on an NVIDIA H100
/// 80GB HBM3 (driver 580.159.04, torch 2.11.0+cu130, `scripts/gpu-measure`
/// `PARTS=contention`) a bf16 GEMM (`torch.mm`, 8192³ and 4096³) ran 1.448 and 1.458 times
/// slower beside an SM-based copy on 16 CTAs (an NCCL-like transfer of 1.33 TB/s) on another
/// stream; 1.45 is the mean. On an H200 the same run gave 1.427 and 1.461.
/// `docs/src/fidelity.md` (section 2) has the method, every transfer (2 to 32 CTAs: 1.12-2.05;
/// copy engine: 1.02-1.06) and the raw data.
const H100_CONTENTION: f64 = 1.45;

/// The share of the paper HBM bandwidth that memory-bound kernels reach, by what they do (see
/// the module docs, "Memory efficiency"). 1 everywhere on profiles without a measurement.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct MemoryEfficiency {
    /// Kernels that read and write (elementwise, reductions, copies, GEMM operands): the
    /// measured device-to-device copy rate.
    pub(super) stream: f64,
    /// Row normalisations ([`ComputeClass::Norm`]: softmax, layer norm and their gradients).
    pub(super) norm: f64,
    /// Kernels that only write (an op whose bytes are its outputs' bytes: a broadcast of a
    /// constant, an iota).
    pub(super) fill: f64,
}

impl MemoryEfficiency {
    /// The paper bandwidth for every kernel.
    const PAPER: MemoryEfficiency = MemoryEfficiency {
        stream: 1.0,
        norm: 1.0,
        fill: 1.0,
    };
}

/// Measured on the NVIDIA H200 of `docs/fidelity-data` (HBM3e, 4.8 TB/s on paper): a 2 GiB
/// device-to-device copy moved 3.84 TB/s read + write (`contention.json`, `d2d_memcpy`); the
/// 29 row-normalisation kernels of the bf16 GPT step (`step_kernels.json`) moved their
/// operands and results at 2.20 TB/s, time-weighted; its two zero-fills (134 and 537 MB, the
/// only kernels that only write) wrote at 1.70 TB/s. The `a100` and `v100` profiles carry the
/// same shares (see the module docs, "Memory efficiency").
const MEASURED_MEMORY: MemoryEfficiency = MemoryEfficiency {
    stream: 0.80,
    norm: 0.46,
    fill: 0.35,
};

/// L2 read bandwidth of the A100: 5 120 bytes per clock at the 1 410 MHz boost clock (NVIDIA
/// A100 Tensor Core GPU architecture whitepaper).
const A100_L2: f64 = 5120.0 * 1.41e9;
/// L2 read bandwidth of the V100: 2 048 bytes per clock (the same whitepaper's comparison) at
/// the V100 SXM2's 1 530 MHz boost clock.
const V100_L2: f64 = 2048.0 * 1.53e9;

/// Dense tensor-core peaks (flop/s) by dtype family.
#[derive(Clone, Copy, Debug, PartialEq)]
struct TensorPeaks {
    bf16: f64,
    tf32: f64,
    f8: f64,
}

impl TensorPeaks {
    fn for_dtype(&self, dtype: DType) -> f64 {
        match GemmType::of(dtype) {
            GemmType::Bf16 => self.bf16,
            GemmType::F32 => self.tf32,
            GemmType::F8 => self.f8,
        }
    }
}

/// How GEMMs with a shape are costed.
#[derive(Clone, Debug, PartialEq)]
enum GemmModel {
    /// Interpolated in measured tables.
    Measured(Arc<GemmTables>),
    /// At the tensor peak.
    Peak,
    /// At the tensor peak, tile- and wave-quantised over the SMs (XLA's analytical dot model).
    Tiled(TiledGemm),
}

/// How intra-node collectives are costed.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum IntraModel {
    /// Interpolated in measured tables.
    Measured(Arc<CollectiveTables>),
    /// Alpha-beta ring.
    Ring(Ring),
}

/// A hardware profile: the cost model that turns ops into integer nanoseconds (see the module
/// docs for every formula, constant and source).
///
/// With the `serde` feature a profile serialises as what makes it: `{"name": "h100",
/// "gpus_per_node": 8, "contention": 1.45}`; reading one rebuilds the named profile
/// ([`Hardware::by_name`]) with those settings, checked as [`Hardware::with_gpus_per_node`] and
/// [`Hardware::with_contention`] check them. Every other constant follows from the name.
#[derive(Clone, Debug, PartialEq)]
pub struct Hardware {
    /// The profile's name (one of [`Hardware::NAMES`]).
    pub name: String,
    /// GPUs per node: a collective of a larger group is inter-node, and the node's NIC
    /// bandwidth is shared by this many GPUs.
    pub gpus_per_node: u32,
    /// How many times slower compute ops run while a collective runs (>= 1; the simulator
    /// applies it). `h100`: 1.45, measured on a GPU (`docs/src/fidelity.md`); `a800` and
    /// `a800-pcie`: 1.1, an assumption. See the module docs.
    pub contention: f64,
    description: &'static str,
    hbm_bytes_per_sec: f64,
    hbm_name: &'static str,
    memory: MemoryEfficiency,
    vector_flops_per_sec: f64,
    tensor: TensorPeaks,
    gemm: GemmModel,
    pub(super) min_kernel_ns: u64,
    pub(super) intra: IntraModel,
    /// NIC bandwidth of one node, bytes/s.
    inter_node_bytes_per_sec: f64,
    inter_alpha_ns: f64,
    /// Per compute class ([`class_index`]): a factor on the modelled duration, fitted from
    /// measurements ([`crate::hardware::Fit`]); 1 in the built-in profiles.
    pub(super) compute_scale: [f64; 6],
    /// Per collective kind (in [`CollectiveKind::ALL`] order): a factor on the modelled
    /// duration, fitted from measurements; 1 in the built-in profiles.
    pub(super) collective_scale: [f64; 6],
}

/// Index of a compute class in [`Hardware`]'s per-class arrays.
pub(super) fn class_index(class: ComputeClass) -> usize {
    match class {
        ComputeClass::Gemm => 0,
        ComputeClass::Attention => 1,
        ComputeClass::Elementwise => 2,
        ComputeClass::Reduction => 3,
        ComputeClass::Norm => 4,
        ComputeClass::Other => 5,
    }
}
impl Hardware {
    /// Names of the known profiles, for [`Hardware::by_name`].
    pub const NAMES: &'static [&'static str] =
        &["h100", "h200", "a800", "a800-pcie", "a100", "v100"];

    /// NVIDIA H100 SXM 80GB in DGX H100 nodes of 8: measured GEMM and intra-node collective
    /// tables (XLA, sm_90), datasheet roofline otherwise, 400 GB/s NICs per node. The embedded
    /// tables are parsed on the first call (about 1 500 lines), then shared.
    pub fn h100() -> Hardware {
        let (gemm, coll) = h100_tables();
        Hardware {
            name: "h100".into(),
            gpus_per_node: 8,
            contention: H100_CONTENTION,
            description: "NVIDIA H100 SXM 80GB, DGX H100 nodes (measured XLA tables, sm_90)",
            hbm_bytes_per_sec: 3.35e12,
            hbm_name: "HBM3",
            memory: MemoryEfficiency::PAPER,
            vector_flops_per_sec: 67e12,
            tensor: TensorPeaks {
                bf16: 989e12,
                tf32: 494.5e12,
                f8: 1979e12,
            },
            gemm: GemmModel::Measured(gemm),
            min_kernel_ns: MIN_KERNEL_NS,
            intra: IntraModel::Measured(coll),
            inter_node_bytes_per_sec: 400e9,
            inter_alpha_ns: 8_000.0,
            compute_scale: [1.0; 6],
            collective_scale: [1.0; 6],
        }
    }

    /// NVIDIA H200 SXM 141GB in nodes of 8: the H100's die (132 SMs, the same tensor peaks,
    /// GEMM and collective tables) with HBM3e at 4.8 TB/s on paper, and the memory
    /// efficiencies measured on one (see the module docs, "Memory efficiency").
    pub fn h200() -> Hardware {
        Hardware {
            name: "h200".into(),
            description: "NVIDIA H200 SXM 141GB, HGX H200 nodes (H100 tables, measured HBM3e)",
            hbm_bytes_per_sec: 4.8e12,
            hbm_name: "HBM3e",
            memory: MEASURED_MEMORY,
            ..Hardware::h100()
        }
    }

    /// NVIDIA A800 80GB SXM, nodes of 8: the Concerto paper's setting, datasheet roofline for
    /// compute, alpha-beta rings over NVLink (200 GB/s per direction) and 800 Gb/s per node.
    pub fn a800() -> Hardware {
        Hardware {
            name: "a800".into(),
            gpus_per_node: 8,
            contention: DEFAULT_CONTENTION,
            description: "NVIDIA A800 80GB SXM, nodes of 8 (roofline; Concerto, ASPLOS 2025)",
            hbm_bytes_per_sec: 2.039e12,
            hbm_name: "HBM2e",
            memory: MemoryEfficiency::PAPER,
            vector_flops_per_sec: 19.5e12,
            tensor: TensorPeaks {
                bf16: 312e12,
                tf32: 156e12,
                f8: 312e12,
            },
            gemm: GemmModel::Peak,
            min_kernel_ns: MIN_KERNEL_NS,
            intra: IntraModel::Ring(Ring {
                bytes_per_sec: 200e9,
                alpha_ns: 5_000.0,
            }),
            inter_node_bytes_per_sec: 100e9,
            inter_alpha_ns: 8_000.0,
            compute_scale: [1.0; 6],
            collective_scale: [1.0; 6],
        }
    }

    /// [`Hardware::a800`] without NVLink: intra-node rings over PCIe 4.0 at 24 GB/s per
    /// direction, alpha 10 µs (assumptions, see the module docs).
    pub fn a800_pcie() -> Hardware {
        Hardware {
            name: "a800-pcie".into(),
            description: "NVIDIA A800 80GB, nodes of 8 without NVLink (PCIe 4.0; roofline)",
            intra: IntraModel::Ring(Ring {
                bytes_per_sec: 24e9,
                alpha_ns: 10_000.0,
            }),
            ..Hardware::a800()
        }
    }

    /// NVIDIA A100 SXM4 80GB, nodes of 8 (DGX A100): the `a800`'s datasheet peaks with NVLink 3
    /// at its full 300 GB/s per direction (the A800 caps it at 200) and 8 x 200 Gb/s NICs per
    /// node; GEMMs tile- and wave-quantised over its 108 SMs, and the measured memory
    /// efficiencies (see the module docs). The profile to compare the A100 profiler traces with.
    pub fn a100() -> Hardware {
        Hardware {
            name: "a100".into(),
            description: "NVIDIA A100 SXM4 80GB, DGX A100 nodes of 8 (datasheet, tiled GEMMs)",
            memory: MEASURED_MEMORY,
            gemm: GemmModel::Tiled(TiledGemm {
                sms: 108,
                l2_bytes_per_sec: A100_L2,
            }),
            intra: IntraModel::Ring(Ring {
                bytes_per_sec: 300e9,
                alpha_ns: 5_000.0,
            }),
            inter_node_bytes_per_sec: 200e9,
            ..Hardware::a800()
        }
    }

    /// NVIDIA V100 SXM2 32GB, DGX-1 nodes of 8 (datasheet figures): HBM2 900 GB/s, fp32 15.7
    /// TFLOP/s (no TF32: f32 GEMMs run on the CUDA cores), fp16 tensor cores 125 TFLOP/s (also
    /// used for bf16, which Volta lacks), NVLink 2 rings at 150 GB/s per direction, 4 x 100
    /// Gb/s NICs per node; GEMMs tile- and wave-quantised over its 80 SMs, and the measured
    /// memory efficiencies (see the module docs). The profile to compare the V100 profiler
    /// trace with.
    pub fn v100() -> Hardware {
        Hardware {
            name: "v100".into(),
            gpus_per_node: 8,
            contention: DEFAULT_CONTENTION,
            description: "NVIDIA V100 SXM2 32GB, DGX-1 nodes of 8 (datasheet, tiled GEMMs)",
            hbm_bytes_per_sec: 0.9e12,
            hbm_name: "HBM2",
            memory: MEASURED_MEMORY,
            vector_flops_per_sec: 15.7e12,
            tensor: TensorPeaks {
                bf16: 125e12,
                tf32: 15.7e12,
                f8: 125e12,
            },
            gemm: GemmModel::Tiled(TiledGemm {
                sms: 80,
                l2_bytes_per_sec: V100_L2,
            }),
            min_kernel_ns: MIN_KERNEL_NS,
            intra: IntraModel::Ring(Ring {
                bytes_per_sec: 150e9,
                alpha_ns: 5_000.0,
            }),
            inter_node_bytes_per_sec: 50e9,
            inter_alpha_ns: 8_000.0,
            compute_scale: [1.0; 6],
            collective_scale: [1.0; 6],
        }
    }

    /// The profile named `name` (ASCII case ignored); [`GraphError::UnknownHardware`] lists the
    /// known names otherwise.
    pub fn by_name(name: &str) -> Result<Hardware, GraphError> {
        match name.trim().to_ascii_lowercase().as_str() {
            "h100" => Ok(Hardware::h100()),
            "h200" => Ok(Hardware::h200()),
            "a800" => Ok(Hardware::a800()),
            "a800-pcie" => Ok(Hardware::a800_pcie()),
            "a100" => Ok(Hardware::a100()),
            "v100" => Ok(Hardware::v100()),
            _ => Err(GraphError::UnknownHardware {
                name: name.to_string(),
                known: Hardware::NAMES.join(", "),
            }),
        }
    }

    /// The same profile with compute slowed `factor` times while a collective runs;
    /// `factor` must be finite and at least 1 ([`GraphError::InvalidModel`] otherwise).
    pub fn with_contention(mut self, factor: f64) -> Result<Hardware, GraphError> {
        if !(factor.is_finite() && factor >= 1.0) {
            return Err(GraphError::InvalidModel {
                reason: format!(
                    "the contention factor must be finite and at least 1, not {factor}"
                ),
            });
        }
        self.contention = factor;
        Ok(self)
    }

    /// The same profile with `n` GPUs per node (at least 1, [`GraphError::InvalidModel`]
    /// otherwise): groups above `n` become inter-node, and each GPU's share of the node's NIC
    /// bandwidth is 1/n.
    pub fn with_gpus_per_node(mut self, n: u32) -> Result<Hardware, GraphError> {
        if n == 0 {
            return Err(GraphError::InvalidModel {
                reason: "a node needs at least 1 GPU".into(),
            });
        }
        self.gpus_per_node = n;
        Ok(self)
    }

    /// Duration of `op` in ns: its `duration_ns` if set, else the cost model; at least 1.
    /// O(1) for compute, O(log s) for a collective over a table of s sizes.
    pub fn op_ns(&self, op: &Op) -> u64 {
        match op.duration_ns {
            Some(d) => d.max(1),
            None => self.model_ns(op),
        }
    }

    /// Duration of `op` in ns by the cost model alone, whatever `duration_ns` it carries: what
    /// a measured op is compared with. At least 1; cost as [`Hardware::op_ns`].
    pub fn model_ns(&self, op: &Op) -> u64 {
        match op.kind {
            OpKind::Compute {
                class,
                flops,
                bytes,
                gemm,
            } => {
                let dtype = op
                    .operand_dtype
                    .or_else(|| op.outputs.first().map(|t| t.dtype))
                    .unwrap_or(DType::Bf16);
                let compute = match gemm {
                    Some(shape) => self.shape_compute_ns(shape, dtype, flops),
                    None => match class {
                        ComputeClass::Gemm | ComputeClass::Attention => {
                            flops as f64 * NS_PER_S / self.tensor.for_dtype(dtype)
                        }
                        _ => flops as f64 * NS_PER_S / self.vector_flops_per_sec,
                    },
                };
                let written = op.output_bytes();
                let efficiency = if bytes > 0 && bytes == written {
                    self.memory.fill
                } else if class == ComputeClass::Norm {
                    self.memory.norm
                } else {
                    self.memory.stream
                };
                self.scaled_kernel_ns(
                    compute,
                    bytes as f64 / efficiency,
                    self.compute_scale[class_index(class)],
                )
            }
            OpKind::Collective {
                kind,
                bytes,
                group,
                link,
            } => self.collective_ns(kind, bytes, group, link),
        }
    }

    /// [`Hardware::op_ns`] of every op of `graph`, in program order.
    pub fn durations(&self, graph: &Graph) -> Vec<u64> {
        graph.ops().map(|op| self.op_ns(op)).collect()
    }

    /// [`Hardware::durations`], checked to fit the horizon ([`crate::horizon`]): what a caller
    /// that sums, simulates or schedules them uses on an untrusted graph. O(ops).
    ///
    /// Errors: [`GraphError::Overflow`] naming the op whose duration (a hand-written
    /// `duration_ns`, or a cost-model time) or release time takes the step past
    /// [`crate::horizon::MAX_HORIZON_NS`].
    pub fn checked_durations(&self, graph: &Graph) -> Result<Vec<u64>, GraphError> {
        let durations = self.durations(graph);
        crate::horizon::horizon(graph, &durations)?;
        Ok(durations)
    }

    /// Duration in ns of one GEMM of `shape` on `dtype` operands and result (the cost of
    /// [`Op::gemm`]`(_, shape, dtype)`): `max(flops / throughput, bytes / HBM, 1 µs)`, bytes =
    /// `b (mk + kn + mn) · size(dtype)`.
    pub fn gemm_ns(&self, shape: GemmShape, dtype: DType) -> u64 {
        let compute = self.shape_compute_ns(shape, dtype, shape.flops());
        let elems = shape.b as f64
            * (shape.m as f64 * shape.k as f64
                + shape.k as f64 * shape.n as f64
                + shape.m as f64 * shape.n as f64);
        let bytes_ns = elems * dtype.size() as f64 * NS_PER_S / self.stream_bytes_per_sec();
        ceil_ns(compute.max(bytes_ns).max(self.min_kernel_ns as f64))
    }

    /// Duration in ns of a collective: `bytes` of result buffer per device, `group` ranks,
    /// over `link` (inter-node as well when `group > gpus_per_node`). See the module docs.
    pub fn collective_ns(
        &self,
        kind: CollectiveKind,
        bytes: u64,
        group: u32,
        link: LinkClass,
    ) -> u64 {
        if group < 2 && kind != CollectiveKind::SendRecv {
            return 1;
        }
        let inter = link == LinkClass::InterNode || group > self.gpus_per_node;
        let ns = if inter {
            let ring = Ring {
                bytes_per_sec: self.inter_node_bytes_per_sec / f64::from(self.gpus_per_node.max(1)),
                alpha_ns: self.inter_alpha_ns,
            }
            .ns(kind, bytes, group);
            match &self.intra {
                // Never faster than the same collective measured inside one node.
                IntraModel::Measured(t) => {
                    ring.max(t.ns(kind, bytes, group.min(self.gpus_per_node)))
                }
                IntraModel::Ring(_) => ring,
            }
        } else {
            match &self.intra {
                IntraModel::Measured(t) => t.ns(kind, bytes, group),
                IntraModel::Ring(r) => r.ns(kind, bytes, group),
            }
        };
        let scale = CollectiveKind::ALL
            .iter()
            .position(|k| *k == kind)
            .map_or(1.0, |i| self.collective_scale[i]);
        ceil_ns(ns * scale)
    }

    /// Duration in ns of a kernel that reads and writes `bytes` through HBM:
    /// `max(bytes / (HBM bandwidth · stream efficiency), 1 µs)`.
    pub fn memory_bound_ns(&self, bytes: u64) -> u64 {
        self.scaled_kernel_ns(0.0, bytes as f64 / self.memory.stream, 1.0)
    }

    /// The bandwidth (bytes/s) a kernel that reads and writes streams at: the paper HBM
    /// bandwidth times the stream efficiency.
    fn stream_bytes_per_sec(&self) -> f64 {
        self.hbm_bytes_per_sec * self.memory.stream
    }

    /// `max(scale * max(compute_ns, paper_bytes / HBM), floor)`, rounded up: `paper_bytes` are
    /// the bytes divided by the kernel's memory efficiency; a fitted class factor
    /// ([`crate::hardware::Fit`]) scales the roofline terms, not the kernel floor.
    fn scaled_kernel_ns(&self, compute_ns: f64, paper_bytes: f64, scale: f64) -> u64 {
        let bytes_ns = paper_bytes * NS_PER_S / self.hbm_bytes_per_sec;
        ceil_ns((compute_ns.max(bytes_ns) * scale).max(self.min_kernel_ns as f64))
    }

    /// Compute time (ns, unrounded) of `flops` done at the throughput of GEMMs of `shape`.
    fn shape_compute_ns(&self, shape: GemmShape, dtype: DType, flops: u64) -> f64 {
        let peak = self.tensor.for_dtype(dtype);
        let one = match &self.gemm {
            GemmModel::Peak => return flops as f64 * NS_PER_S / peak,
            GemmModel::Measured(t) => t.gemm_ns(shape, GemmType::of(dtype)),
            GemmModel::Tiled(t) => t.compute_ns(shape, dtype.size(), peak),
        };
        let shape_flops = shape.flops();
        if flops == shape_flops {
            one
        } else if shape_flops == 0 {
            // A degenerate shape: fall back to the tensor peak.
            flops as f64 * NS_PER_S / peak
        } else {
            one * (flops as f64 / shape_flops as f64)
        }
    }
}

impl fmt::Display for Hardware {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tf = |x: f64| x / 1e12;
        writeln!(
            f,
            "{}: {}, {} GPUs per node",
            self.name, self.description, self.gpus_per_node
        )?;
        writeln!(
            f,
            "  memory: {} {} TB/s; fp32 vector {} TFLOP/s; kernel floor {} ns",
            self.hbm_name,
            self.hbm_bytes_per_sec / 1e12,
            tf(self.vector_flops_per_sec),
            self.min_kernel_ns
        )?;
        if self.memory != MemoryEfficiency::PAPER {
            writeln!(
                f,
                "  memory efficiency (measured): streams {}, row normalisations {}, fills {} \
                 of the paper bandwidth",
                self.memory.stream, self.memory.norm, self.memory.fill
            )?;
        }
        writeln!(
            f,
            "  tensor peaks (dense): bf16/f16 {} TFLOP/s, tf32 {} TFLOP/s, fp8 {} TFLOP/s",
            tf(self.tensor.bf16),
            tf(self.tensor.tf32),
            tf(self.tensor.f8)
        )?;
        match &self.gemm {
            GemmModel::Measured(t) => writeln!(
                f,
                "  GEMMs: XLA default_matmul_perf_table (sm_90), 3 x 375 points, log2 \
                 interpolation, dims below 256 raised to 256 ({} + {} + {} points lowered by \
                 the padding envelope)",
                t.lowered[0], t.lowered[1], t.lowered[2]
            )?,
            GemmModel::Peak => writeln!(f, "  GEMMs: roofline at the tensor peak")?,
            GemmModel::Tiled(t) => writeln!(
                f,
                "  GEMMs: tensor peak, output tiles of 32-256 quantised in waves over {} SMs, \
                 L2 {} TB/s (XLA's analytical dot model)",
                t.sms,
                t.l2_bytes_per_sec / 1e12
            )?,
        }
        match &self.intra {
            IntraModel::Measured(t) => writeln!(
                f,
                "  intra-node: XLA default_collective_perf_table (sm_90), groups 2/4/8, log-log \
                 interpolation ({} size steps lowered by the padding envelope)",
                t.lowered
            )?,
            IntraModel::Ring(r) => writeln!(
                f,
                "  intra-node: ring, {} GB/s per GPU per direction, alpha {} ns",
                r.bytes_per_sec / 1e9,
                r.alpha_ns
            )?,
        }
        writeln!(
            f,
            "  inter-node: ring, {} GB/s per node = {} GB/s per GPU, alpha {} ns",
            self.inter_node_bytes_per_sec / 1e9,
            self.inter_node_bytes_per_sec / 1e9 / f64::from(self.gpus_per_node.max(1)),
            self.inter_alpha_ns
        )?;
        write!(f, "  contention: {}", self.contention)
    }
}

/// The serde form of a [`Hardware`] profile.
#[cfg(feature = "serde")]
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct HardwareRecord {
    name: String,
    gpus_per_node: u32,
    contention: f64,
}

#[cfg(feature = "serde")]
impl serde::Serialize for Hardware {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        HardwareRecord {
            name: self.name.clone(),
            gpus_per_node: self.gpus_per_node,
            contention: self.contention,
        }
        .serialize(serializer)
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Hardware {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Hardware, D::Error> {
        let r = HardwareRecord::deserialize(deserializer)?;
        Hardware::by_name(&r.name)
            .and_then(|h| h.with_gpus_per_node(r.gpus_per_node))
            .and_then(|h| h.with_contention(r.contention))
            .map_err(serde::de::Error::custom)
    }
}
