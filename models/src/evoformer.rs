//! AlphaFold 2's Evoformer stack (Jumper et al., Nature 2021, Algorithm 6) with dynamic axial
//! parallelism (DAP; Cheng et al., "FastFold: Reducing AlphaFold Training Time from 11 Days to
//! 67 Hours", 2022) of degree `tp`.
//!
//! Each block updates the MSA representation `m` (`s x r x c_m`) and the pair representation
//! `z` (`r x r x c_z`). Under DAP every rank holds `1/tp` of one axis of each:
//!
//! | step | `m` sharded on | `z` sharded on | communication (forward; backward) |
//! |---|---|---|---|
//! | MSA row attention with pair bias | `s` | rows | all-gather of the pair bias (reduce-scatter) |
//! | `m`: row to column | | | all-to-all (all-to-all) |
//! | MSA column attention, MSA transition | `r` | | |
//! | outer product mean | `r` | rows | all-gather of the right projection (reduce-scatter) |
//! | `m`: column to row | | | all-to-all (all-to-all) |
//! | triangle multiplication outgoing, incoming | | rows | all-gather of a projection each (reduce-scatter) |
//! | triangle attention, starting node | | rows | all-gather of the triangle bias (reduce-scatter) |
//! | `z`: row to column | | | all-to-all (all-to-all) |
//! | triangle attention, ending node; pair transition | | columns | all-gather of the triangle bias (reduce-scatter) |
//! | `z`: column to row | | | all-to-all (all-to-all) |
//!
//! Hidden sizes are AlphaFold 2's: 32 channels per head (the head count is `heads`, its dimension
//! `c_m / heads` in the MSA and `c_z / heads` in the pair stack), 32 in the outer product mean,
//! `c_z` in the triangle multiplications, transitions 4x. Masks and dropout are left out. The
//! stack ends with a distogram head on `z` and a masked-MSA head on `m`, each with a
//! cross-entropy loss.

use serde::{Deserialize, Serialize};

use super::parallel::{check_fits, check_graph_size, check_positive, invalid, Parallel, Placement};
use super::program::{act, NormKind, Pb, Pointwise, Weights, V};
use super::step::Block;
use concerto_graph::ir::{ComputeClass, DType, GemmShape, LinkClass, Tensor};
use concerto_graph::GraphError;

/// An Evoformer stack.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct EvoformerConfig {
    /// Evoformer blocks.
    pub blocks: u32,
    /// MSA sequences `s`.
    pub msa_seqs: u64,
    /// Residues `r`.
    pub residues: u64,
    /// MSA channels `c_m`.
    pub c_m: u64,
    /// Pair channels `c_z`.
    pub c_z: u64,
    /// Attention heads.
    pub heads: u64,
}

impl Default for EvoformerConfig {
    /// AlphaFold 2's training sizes (`s = 128`, `r = 256`, `c_m = 256`, `c_z = 128`, 8 heads)
    /// with 4 blocks.
    fn default() -> Self {
        Self {
            blocks: 4,
            msa_seqs: 128,
            residues: 256,
            c_m: 256,
            c_z: 128,
            heads: 8,
        }
    }
}

/// Channels of the outer product mean's projections.
const OPM_C: u64 = 32;
/// Distogram bins.
const DISTOGRAM_BINS: u64 = 64;
/// Masked-MSA classes (20 amino acids, unknown, gap, mask).
const MSA_CLASSES: u64 = 23;

/// Sigmoid gating `sigmoid(g) * x`.
const GATE: Pointwise = Pointwise {
    class: ComputeClass::Elementwise,
    fwd_flops: 5,
    bwd_class: ComputeClass::Elementwise,
    bwd_flops: 8,
};
/// ReLU.
const RELU: Pointwise = Pointwise {
    class: ComputeClass::Elementwise,
    fwd_flops: 1,
    bwd_class: ComputeClass::Elementwise,
    bwd_flops: 1,
};

/// Per-device sizes and the DAP group.
#[derive(Clone, Copy, Debug)]
struct Dims {
    s: u64,
    r: u64,
    c_m: u64,
    c_z: u64,
    heads: u64,
    d: u64,
    group: u32,
    link: LinkClass,
}

impl EvoformerConfig {
    pub(crate) fn validate(&self, par: &Parallel) -> Result<(), GraphError> {
        check_positive(
            "evoformer",
            &[
                ("blocks", u64::from(self.blocks)),
                ("msa_seqs", self.msa_seqs),
                ("residues", self.residues),
                ("c_m", self.c_m),
                ("c_z", self.c_z),
                ("heads", self.heads),
            ],
        )?;
        if self.c_m % self.heads != 0 || self.c_z % self.heads != 0 {
            return Err(invalid(format!(
                "evoformer: heads = {} must divide c_m = {} and c_z = {}",
                self.heads, self.c_m, self.c_z
            )));
        }
        let d = u64::from(par.tp);
        if self.msa_seqs % d != 0 || self.residues % d != 0 {
            return Err(invalid(format!(
                "evoformer: the DAP degree tp = {d} must divide msa_seqs = {} and residues = {}",
                self.msa_seqs, self.residues
            )));
        }
        if self.blocks % par.pp != 0 {
            return Err(invalid(format!(
                "evoformer: pp = {} must divide blocks = {}",
                par.pp, self.blocks
            )));
        }
        let (s, r, cm, cz) = (self.msa_seqs, self.residues, self.c_m, self.c_z);
        check_fits("evoformer", "MSA row attention (s r^2 c_m)", &[s, r, r, cm])?;
        check_fits(
            "evoformer",
            "MSA column attention (r s^2 c_m)",
            &[r, s, s, cm],
        )?;
        check_fits(
            "evoformer",
            "the MSA transition (4 s r c_m^2)",
            &[4, s, r, cm, cm],
        )?;
        check_fits(
            "evoformer",
            "the triangle updates (r^3 c_z)",
            &[r, r, r, cz],
        )?;
        check_fits(
            "evoformer",
            "the outer product mean (1024 s r^2)",
            &[1024, s, r, r],
        )?;
        check_fits(
            "evoformer",
            "the pair transition (4 r^2 c_z^2)",
            &[4, r, r, cz, cz],
        )?;
        check_graph_size("evoformer", u64::from(self.blocks / par.pp) + 1, par)
    }

    fn dims(&self, par: &Parallel, pl: &Placement) -> Dims {
        Dims {
            s: self.msa_seqs,
            r: self.residues,
            c_m: self.c_m,
            c_z: self.c_z,
            heads: self.heads,
            d: u64::from(par.tp),
            group: par.tp,
            link: pl.tp,
        }
    }

    /// `block0..` and, without a pipeline, `head`.
    pub(crate) fn blocks(&self, par: &Parallel) -> Vec<Block> {
        let pl = par.placement();
        let dm = self.dims(par, &pl);
        let Dims {
            s, r, c_m, c_z, d, ..
        } = dm;
        let m_shape = act([s / d, r, c_m]);
        let z_shape = act([r / d, r, c_z]);
        let mut blocks = Vec::new();
        for l in 0..self.blocks / par.pp {
            let mut pb = Pb::new(par.tp, pl.tp);
            let (m, z) = if l == 0 {
                (
                    pb.data("input.m", m_shape.clone()),
                    pb.data("input.z", z_shape.clone()),
                )
            } else {
                (
                    pb.input("input.m", m_shape.clone()),
                    pb.input("input.z", z_shape.clone()),
                )
            };
            let (m, z) = block(&mut pb, m, z, dm);
            pb.output(m);
            pb.output(z);
            blocks.push(Block::new(format!("block{l}"), pb.finish()));
        }
        if par.pp == 1 {
            let mut pb = Pb::new(par.tp, pl.tp);
            let m = pb.input("input.m", m_shape);
            let z = pb.input("input.z", z_shape);
            let dl = pb.linear("distogram", z, DISTOGRAM_BINS, Weights::Own { bias: true });
            cross_entropy(&mut pb, "distogram.loss", dl);
            let ml = pb.linear("masked_msa", m, MSA_CLASSES, Weights::Own { bias: true });
            cross_entropy(&mut pb, "masked_msa.loss", ml);
            blocks.push(Block::new("head", pb.finish()));
        }
        blocks
    }
}

/// A local cross-entropy over the last dimension (its scalar DAP all-reduce is left out).
fn cross_entropy(pb: &mut Pb, name: &str, logits: V) {
    let t = pb.tensor(logits).clone();
    let classes = t.shape.last().copied().unwrap_or(1);
    let rows = t.elements() / classes;
    pb.cross_entropy(name, logits, Tensor::new(vec![rows], DType::F32));
}

/// Which axis of `[a, b, c]` a gated attention attends over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Along {
    /// The middle axis: `a` independent rows of `b` positions.
    Rows,
    /// The first axis: `b` independent columns of `a` positions.
    Columns,
}

/// Gated self-attention along an axis of `x` (`[a, b, c]`), optionally biased by `bias`
/// (`[n, n, heads]` for `n` positions), as AlphaFold 2's MSA row / column attention and
/// triangle attention: LayerNorm'd input, Q K V and gate projections, fused attention, sigmoid
/// gate, output projection. Returns the residual output.
fn gated_attention(
    pb: &mut Pb,
    name: &str,
    x: V,
    ln: V,
    bias: Option<V>,
    heads: u64,
    along: Along,
) -> V {
    let t = pb.tensor(x).clone();
    let (a, b, c) = (t.shape[0], t.shape[1], t.shape[2]);
    let (a, b) = match along {
        Along::Rows => (a, b),
        Along::Columns => (b, a),
    };
    let qkv = pb.linear(
        &format!("{name}.qkv"),
        ln,
        3 * c,
        Weights::Own { bias: false },
    );
    let g = pb.linear(
        &format!("{name}.gate_proj"),
        ln,
        c,
        Weights::Own { bias: true },
    );
    let o = pb.attention(
        &format!("{name}.attn"),
        qkv,
        bias,
        a * heads,
        b,
        b,
        c / heads,
    );
    let o = pb.unary(&format!("{name}.gate"), &[o, g], GATE);
    let o = pb.linear(&format!("{name}.out"), o, c, Weights::Own { bias: true });
    pb.add(&format!("{name}.residual"), x, o)
}

/// A 4x transition (LayerNorm, linear, ReLU, linear) with its residual.
fn transition(pb: &mut Pb, name: &str, x: V) -> V {
    let c = pb.tensor(x).shape[2];
    let ln = pb.norm(&format!("{name}.ln"), x, NormKind::Layer);
    let h = pb.linear(
        &format!("{name}.fc1"),
        ln,
        4 * c,
        Weights::Own { bias: true },
    );
    let h = pb.unary(&format!("{name}.relu"), &[h], RELU);
    let h = pb.linear(&format!("{name}.fc2"), h, c, Weights::Own { bias: true });
    pb.add(&format!("{name}.residual"), x, h)
}

/// A triangle multiplicative update on row-sharded `z` (`[r/d, r, c_z]`): gated projections
/// `a`, `b` (`c_z` channels each), an all-gather of `b`, the channel-batched product
/// `(c, r/d, r, r)`, LayerNorm, output projection and gate.
fn triangle_multiplication(pb: &mut Pb, name: &str, z: V, dm: Dims) -> V {
    let Dims {
        r,
        c_z,
        d,
        group,
        link,
        ..
    } = dm;
    let rl = r / d;
    let c = c_z;
    let ln = pb.norm(&format!("{name}.ln_in"), z, NormKind::Layer);
    let ab = pb.linear(
        &format!("{name}.proj"),
        ln,
        4 * c,
        Weights::Own { bias: true },
    );
    let g = pb.linear(
        &format!("{name}.gate_proj"),
        ln,
        c_z,
        Weights::Own { bias: true },
    );
    let half = act([rl, r, c]);
    let glu = pb.pointwise(
        &format!("{name}.glu"),
        &[ab],
        vec![half.clone(), half],
        GATE,
    );
    let (a, b) = (glu[0], glu[1]);
    let b = pb.all_gather(&format!("{name}.allgather"), b, act([r, r, c]), group, link);
    let p = pb.matmul(
        &format!("{name}.product"),
        a,
        b,
        GemmShape {
            b: c,
            m: rl,
            n: r,
            k: r,
        },
        act([rl, r, c]),
    );
    let p = pb.norm(&format!("{name}.ln_out"), p, NormKind::Layer);
    let o = pb.linear(&format!("{name}.out"), p, c_z, Weights::Own { bias: true });
    let o = pb.unary(&format!("{name}.gate"), &[o, g], GATE);
    pb.add(&format!("{name}.residual"), z, o)
}

/// Triangle attention on `z` along `along`: around the starting node on row-sharded `z`
/// (`[r/d, r, c_z]`, attention over rows), around the ending node on column-sharded `z`
/// (`[r, r/d, c_z]`, attention over columns); the bias is gathered as [`gathered_bias`] does.
fn triangle_attention(pb: &mut Pb, name: &str, z: V, dm: Dims, along: Along) -> V {
    let ln = pb.norm(&format!("{name}.ln"), z, NormKind::Layer);
    let bias = gathered_bias(pb, name, "bias_proj", ln, dm);
    gated_attention(pb, name, z, ln, Some(bias), dm.heads, along)
}

/// The attention bias `{name}.{proj}` projected from the sharded `ln` (`[r/d, r, heads]`) and
/// all-gathered over the DAP group to `[r, r, heads]` (`{name}.bias.allgather`).
fn gathered_bias(pb: &mut Pb, name: &str, proj: &str, ln: V, dm: Dims) -> V {
    let Dims {
        r,
        heads,
        group,
        link,
        ..
    } = dm;
    let bias = pb.linear(
        &format!("{name}.{proj}"),
        ln,
        heads,
        Weights::Own { bias: false },
    );
    pb.all_gather(
        &format!("{name}.bias.allgather"),
        bias,
        act([r, r, heads]),
        group,
        link,
    )
}

/// One Evoformer block on `m` (`[s/d, r, c_m]`) and `z` (`[r/d, r, c_z]`).
fn block(pb: &mut Pb, m: V, z: V, dm: Dims) -> (V, V) {
    let Dims {
        s,
        r,
        c_m,
        c_z,
        heads,
        d,
        group,
        link,
    } = dm;
    let (sl, rl) = (s / d, r / d);

    // MSA row attention with pair bias (m sharded along s, z along rows).
    let mln = pb.norm("msa_row.ln", m, NormKind::Layer);
    let zln = pb.norm("msa_row.ln_pair", z, NormKind::Layer);
    let bias = gathered_bias(pb, "msa_row", "pair_bias", zln, dm);
    let m = gated_attention(pb, "msa_row", m, mln, Some(bias), heads, Along::Rows);
    let m = pb.all_to_all("msa.alltoall.row_to_col", m, act([s, rl, c_m]), group, link);

    // MSA column attention and transition (m sharded along r).
    let mln = pb.norm("msa_col.ln", m, NormKind::Layer);
    let m = gated_attention(pb, "msa_col", m, mln, None, heads, Along::Columns);
    let m = transition(pb, "msa_transition", m);

    // Outer product mean: z[i, j] += sum_s a[s, i] (x) b[s, j] / s for local i.
    let ln = pb.norm("opm.ln", m, NormKind::Layer);
    let a = pb.linear("opm.proj_a", ln, OPM_C, Weights::Own { bias: true });
    let b = pb.linear("opm.proj_b", ln, OPM_C, Weights::Own { bias: true });
    let b = pb.all_gather("opm.allgather", b, act([s, r, OPM_C]), group, link);
    let outer = pb.matmul(
        "opm.outer",
        a,
        b,
        GemmShape {
            b: 1,
            m: rl * OPM_C,
            n: r * OPM_C,
            k: s,
        },
        act([rl, r, OPM_C * OPM_C]),
    );
    let o = pb.linear("opm.out", outer, c_z, Weights::Own { bias: true });
    let z = pb.add("opm.residual", z, o);
    let m_out = pb.all_to_all("msa.alltoall.col_to_row", m, act([sl, r, c_m]), group, link);

    // Pair stack (z sharded along rows, then columns, then rows again).
    let z = triangle_multiplication(pb, "tri_mul_out", z, dm);
    let z = triangle_multiplication(pb, "tri_mul_in", z, dm);
    let z = triangle_attention(pb, "tri_att_start", z, dm, Along::Rows);
    let z = pb.all_to_all(
        "pair.alltoall.row_to_col",
        z,
        act([r, rl, c_z]),
        group,
        link,
    );
    let z = triangle_attention(pb, "tri_att_end", z, dm, Along::Columns);
    let z = transition(pb, "pair_transition", z);
    let z = pb.all_to_all(
        "pair.alltoall.col_to_row",
        z,
        act([rl, r, c_z]),
        group,
        link,
    );
    (m_out, z)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::collectives;
    use crate::{build, parameters, Model, Zero};
    use concerto_graph::ir::{CollectiveKind, OpKind};

    fn small() -> EvoformerConfig {
        EvoformerConfig {
            blocks: 2,
            msa_seqs: 16,
            residues: 32,
            c_m: 64,
            c_z: 32,
            heads: 4,
        }
    }

    fn count(g: &concerto_graph::ir::Graph, kind: CollectiveKind, pat: &str) -> usize {
        collectives(g, kind)
            .filter(|(o, _)| o.name.contains(pat))
            .count()
    }

    #[test]
    fn dap_collectives_per_block() {
        let cfg = EvoformerConfig::default();
        let m = Model::Evoformer(cfg.clone());
        let g = build(&m, &Parallel::default()).unwrap();
        assert_eq!(g.collective_count(), 0);
        for dap in [2u32, 4, 16] {
            let g = build(&m, &Parallel::new(1, dap, 1)).unwrap();
            for l in 0..cfg.blocks {
                let f = format!("block{l}.fwd.");
                let b = format!("block{l}.bwd.");
                assert_eq!(count(&g, CollectiveKind::AllGather, &f), 6);
                assert_eq!(count(&g, CollectiveKind::AllToAll, &f), 4);
                assert_eq!(count(&g, CollectiveKind::ReduceScatter, &b), 6);
                // The first block's input MSA needs no gradient, but its row-to-column
                // all-to-all still carries the gradient of the attention output.
                assert_eq!(count(&g, CollectiveKind::AllToAll, &b), 4);
            }
            assert_eq!(g.collective_count(), 20 * cfg.blocks as usize);
            let want = if dap <= 8 {
                LinkClass::IntraNode
            } else {
                LinkClass::InterNode
            };
            assert_eq!(g.link_classes(), vec![want]);
            let id = g.find("block0.fwd.msa.alltoall.row_to_col").unwrap();
            let OpKind::Collective { bytes, group, .. } = g.op(id).kind else {
                panic!()
            };
            assert_eq!(group, dap);
            assert_eq!(
                bytes,
                2 * cfg.msa_seqs * cfg.residues / u64::from(dap) * cfg.c_m
            );
        }
    }

    #[test]
    fn evoformer_flops_by_hand() {
        let cfg = small();
        let (s, r, cm, cz) = (cfg.msa_seqs, cfg.residues, cfg.c_m, cfg.c_z);
        for dap in [1u64, 2] {
            let g = build(
                &Model::Evoformer(cfg.clone()),
                &Parallel::new(1, dap as u32, 1),
            )
            .unwrap();
            let (sl, rl) = (s / dap, r / dap);
            let fl = |name: &str| {
                let OpKind::Compute { flops, .. } = g.op(g.find(name).unwrap()).kind else {
                    panic!()
                };
                flops
            };
            // Row attention: s/d rows of r positions; column attention: r/d columns of s.
            assert_eq!(fl("block1.fwd.msa_row.attn"), 4 * sl * r * r * cm);
            assert_eq!(fl("block1.fwd.msa_col.attn"), 4 * rl * s * s * cm);
            assert_eq!(fl("block1.fwd.tri_att_start.attn"), 4 * rl * r * r * cz);
            assert_eq!(fl("block1.fwd.tri_att_end.attn"), 4 * rl * r * r * cz);
            // Outer product: 2 (r/d 32) (r 32) s.
            assert_eq!(fl("block1.fwd.opm.outer"), 2 * rl * 32 * r * 32 * s);
            // Triangle product: c_z channels of (r/d x r) (r x r).
            assert_eq!(fl("block1.fwd.tri_mul_out.product"), 2 * cz * rl * r * r);
            // MSA transition: two linears of s r/d tokens, c_m <-> 4 c_m.
            assert_eq!(
                fl("block1.fwd.msa_transition.fc1"),
                2 * s * rl * cm * 4 * cm
            );
        }
    }

    #[test]
    fn evoformer_parameters_by_hand() {
        let cfg = small();
        let (cm, cz, h) = (cfg.c_m, cfg.c_z, cfg.heads);
        let ln = |c: u64| 2 * c;
        let lin = |i: u64, o: u64, b: bool| i * o + if b { o } else { 0 };
        let att = |c: u64| lin(c, 3 * c, false) + lin(c, c, true) + lin(c, c, true);
        let trans = |c: u64| ln(c) + lin(c, 4 * c, true) + lin(4 * c, c, true);
        let tri_mul =
            ln(cz) + lin(cz, 4 * cz, true) + lin(cz, cz, true) + ln(cz) + lin(cz, cz, true);
        let tri_att = ln(cz) + lin(cz, h, false) + att(cz);
        let per_block = ln(cm) + ln(cz) + lin(cz, h, false) + att(cm) // row attention
            + ln(cm) + att(cm) // column attention
            + trans(cm)
            + ln(cm) + 2 * lin(cm, 32, true) + lin(32 * 32, cz, true) // outer product mean
            + 2 * tri_mul + 2 * tri_att + trans(cz);
        let head = lin(cz, 64, true) + lin(cm, 23, true);
        let m = Model::Evoformer(cfg.clone());
        assert_eq!(
            parameters(&m, &Parallel::default()).unwrap(),
            2 * per_block + head
        );
        // DAP replicates the parameters.
        assert_eq!(
            parameters(&m, &Parallel::new(1, 4, 1)).unwrap(),
            2 * per_block + head
        );
    }

    #[test]
    fn evoformer_with_dp_zero_and_pipeline() {
        let m = Model::Evoformer(small());
        let g = build(&m, &Parallel::new(4, 2, 1)).unwrap();
        assert!(count(&g, CollectiveKind::AllReduce, "grad_bucket") >= 1);
        let g = build(&m, &Parallel::new(8, 1, 1).with_zero(Zero::Stage3)).unwrap();
        assert_eq!(count(&g, CollectiveKind::AllGather, "zero3"), 2 * 3);
        let g = build(&m, &Parallel::new(1, 2, 2)).unwrap();
        // Stage 0 holds one block and sends both representations per microbatch.
        assert!(g.find("mb0.block0.fwd.msa_row.attn").is_some());
        assert!(g.find("mb0.block1.fwd.msa_row.attn").is_none());
        let send = g.op(g.find("mb3.fwd.send").unwrap());
        let OpKind::Collective { bytes, .. } = send.kind else {
            panic!()
        };
        let c = small();
        assert_eq!(
            bytes,
            2 * (c.msa_seqs / 2 * c.residues * c.c_m + c.residues / 2 * c.residues * c.c_z)
        );
        assert_eq!(g.op(g.find("mb3.bwd.recv").unwrap()).outputs.len(), 2);
    }

    #[test]
    fn invalid_evoformers_are_named() {
        let err = |c: EvoformerConfig, p: Parallel| {
            build(&Model::Evoformer(c), &p).unwrap_err().to_string()
        };
        assert!(err(small(), Parallel::new(1, 3, 1)).contains("DAP degree tp = 3"));
        assert!(err(
            EvoformerConfig {
                heads: 3,
                ..small()
            },
            Parallel::default()
        )
        .contains("heads = 3"));
        assert!(err(
            EvoformerConfig {
                residues: 0,
                ..small()
            },
            Parallel::default()
        )
        .contains("residues"));
        assert!(err(small(), Parallel::new(1, 1, 4)).contains("pp = 4 must divide blocks"));
        let huge = EvoformerConfig {
            residues: 1 << 24,
            ..small()
        };
        assert!(err(huge, Parallel::default()).contains("too large"));
    }
}
