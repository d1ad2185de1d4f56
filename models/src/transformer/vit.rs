//! ViT: the vision transformer encoder on the shared layer.

use serde::{Deserialize, Serialize};

use super::{check_layer, head_start, layer_blocks, Layer};
use crate::parallel::{check_fits, check_graph_size, check_positive, invalid, Parallel};
use crate::program::{act, compute, Pb, Weights};
use crate::step::Block;
use concerto_graph::ir::{ComputeClass, DType, Tensor};
use concerto_graph::GraphError;

/// A vision transformer (Dosovitskiy et al., 2021): patch embedding, class token and position
/// embeddings, pre-LN encoder layers, a final LayerNorm and a linear classifier on the class
/// token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct VitConfig {
    /// Encoder layers.
    pub layers: u32,
    /// Hidden size.
    pub hidden: u64,
    /// Attention heads.
    pub heads: u64,
    /// Image side in pixels.
    pub image: u64,
    /// Patch side in pixels.
    pub patch: u64,
    /// Images per microbatch.
    pub micro_batch: u64,
    /// Classes.
    pub classes: u64,
}

impl Default for VitConfig {
    /// ViT-H/14's width (hidden 1280, 16 heads, 14-pixel patches of 224-pixel images) with 8
    /// layers, 32 images per microbatch, 1000 classes.
    fn default() -> Self {
        Self {
            layers: 8,
            hidden: 1280,
            heads: 16,
            image: 224,
            patch: 14,
            micro_batch: 32,
            classes: 1000,
        }
    }
}

impl VitConfig {
    /// Tokens per image: the patches and the class token.
    pub fn seq(&self) -> u64 {
        let side = self.image / self.patch.max(1);
        side * side + 1
    }

    pub(crate) fn validate(&self, par: &Parallel) -> Result<(), GraphError> {
        check_positive(
            "vit",
            &[
                ("layers", u64::from(self.layers)),
                ("hidden", self.hidden),
                ("heads", self.heads),
                ("image", self.image),
                ("patch", self.patch),
                ("micro_batch", self.micro_batch),
                ("classes", self.classes),
            ],
        )?;
        if self.image % self.patch != 0 {
            return Err(invalid(format!(
                "vit: patch = {} must divide image = {}",
                self.patch, self.image
            )));
        }
        check_layer("vit", self.layers, self.hidden, self.heads, par)?;
        let side = self.image / self.patch;
        let (b, h) = (self.micro_batch, self.hidden);
        check_fits("vit", "the patch count", &[side, side, 2])?;
        let s = self.seq();
        check_fits("vit", "attention (b s^2 h)", &[b, s, s, h])?;
        check_fits("vit", "the MLP (4 b s h^2)", &[4, b, s, h, h])?;
        check_fits(
            "vit",
            "the patch embedding (3 b s p^2 h)",
            &[3, b, s, self.patch, self.patch, h],
        )?;
        check_fits("vit", "the classifier (b classes h)", &[b, self.classes, h])?;
        check_graph_size("vit", u64::from(self.layers / par.pp) + 2, par)
    }

    /// Stage 0's blocks: `patch_embed`, `layer0..`, and `head` when there is no pipeline. The
    /// patch embedding and the classifier are replicated over the TP group (as in Megatron's
    /// ViT).
    pub(crate) fn blocks(&self, par: &Parallel) -> Vec<Block> {
        let pl = par.placement();
        let tp = u64::from(par.tp);
        let (b, h, p) = (self.micro_batch, self.hidden, self.patch);
        let s = self.seq();
        let patches = s - 1;
        let d = Layer {
            b,
            s,
            h,
            heads: self.heads,
            tp,
            sp: false,
        };
        let mut blocks = Vec::new();

        let mut pb = Pb::new(par.tp, pl.tp);
        let img = pb.data("image", act([b, patches, 3 * p * p]));
        let x = pb.linear("proj", img, h, Weights::Own { bias: true });
        let x = pb.param_add("cls_pos", x, act([s + 1, h]), act([b, s, h]));
        pb.output(x);
        blocks.push(Block::new("patch_embed", pb.finish()));
        blocks.extend(layer_blocks(self.layers, par, d));

        if par.pp == 1 {
            let (mut pb, ln) = head_start(par, d);
            let full = pb.tensor(ln).clone();
            let cls = act([b, h]);
            let fwd = compute(
                ComputeClass::Other,
                0,
                2 * cls.bytes(),
                None,
                vec![cls.clone()],
            );
            let bwd = compute(
                ComputeClass::Other,
                0,
                full.bytes() + cls.bytes(),
                None,
                vec![full],
            );
            let c = pb.custom("cls", ln, fwd, bwd, &[]);
            let logits = pb.linear("fc", c, self.classes, Weights::Own { bias: true });
            pb.cross_entropy("loss", logits, Tensor::new(vec![b], DType::F32));
            blocks.push(Block::new("head", pb.finish()));
        }
        blocks
    }
}
