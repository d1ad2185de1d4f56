//! Wide ResNets with bottleneck blocks (Zagoruyko and Komodakis, 2016; torchvision's
//! `wide_resnet50_2`): He et al.'s ResNet-50/101/152 with the 3x3 convolutions' width
//! multiplied by `width`. Convolutions are implicit GEMMs, each followed by BatchNorm (class
//! Norm) and ReLU (Elementwise); blocks are named as torchvision names its modules
//! (`layer2.0`).

use serde::{Deserialize, Serialize};

use super::parallel::{check_fits, check_graph_size, check_positive, invalid, Parallel};
use super::program::{act, compute, dims4, NormKind, Pb, Pointwise, Weights, V};
use super::step::Block;
use concerto_graph::ir::{ComputeClass, DType, Tensor};
use concerto_graph::GraphError;

/// A wide ResNet with bottleneck blocks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct WideResNetConfig {
    /// Depth: 50, 101 or 152.
    pub depth: u32,
    /// Widening factor of the bottleneck (2 for WRN-50-2; 1 is the plain ResNet).
    pub width: u64,
    /// Image side in pixels.
    pub image: u64,
    /// Images per microbatch.
    pub micro_batch: u64,
    /// Classes.
    pub classes: u64,
}

impl Default for WideResNetConfig {
    /// WRN-50-2 on 224-pixel ImageNet images, 64 per microbatch.
    fn default() -> Self {
        Self {
            depth: 50,
            width: 2,
            image: 224,
            micro_batch: 64,
            classes: 1000,
        }
    }
}

/// ReLU: one flop per element each way.
const RELU: Pointwise = Pointwise {
    class: ComputeClass::Elementwise,
    fwd_flops: 1,
    bwd_class: ComputeClass::Elementwise,
    bwd_flops: 1,
};

impl WideResNetConfig {
    /// Bottleneck blocks per stage.
    fn stages(&self) -> Option<[u32; 4]> {
        match self.depth {
            50 => Some([3, 4, 6, 3]),
            101 => Some([3, 4, 23, 3]),
            152 => Some([3, 8, 36, 3]),
            _ => None,
        }
    }

    pub(crate) fn validate(&self, par: &Parallel) -> Result<(), GraphError> {
        check_positive(
            "wide-resnet",
            &[
                ("depth", u64::from(self.depth)),
                ("width", self.width),
                ("image", self.image),
                ("micro_batch", self.micro_batch),
                ("classes", self.classes),
            ],
        )?;
        if self.stages().is_none() {
            return Err(invalid(format!(
                "wide-resnet: depth = {} is not a bottleneck ResNet depth (50, 101 or 152)",
                self.depth
            )));
        }
        if par.tp > 1 || par.pp > 1 {
            return Err(invalid(format!(
                "wide-resnet supports data parallelism (and ZeRO) only, not tp = {} or pp = {}",
                par.tp, par.pp
            )));
        }
        // Every stage's convolutions do about n image^2 256 width^2 multiply-adds per 3x3.
        let (n, i, w) = (self.micro_batch, self.image, self.width);
        check_fits(
            "wide-resnet",
            "the convolutions (n image^2 width^2)",
            &[n, i, i, 256 * 9 * 16, w, w],
        )?;
        check_fits(
            "wide-resnet",
            "the classifier (n classes)",
            &[n, self.classes, 2048, w],
        )?;
        let blocks = self.stages().map_or(0, |s| s.iter().sum::<u32>()) + 2;
        check_graph_size("wide-resnet", u64::from(blocks), par)
    }

    /// `stem`, `layer1.0` .. `layer4.N`, `head`.
    pub(crate) fn blocks(&self, par: &Parallel) -> Vec<Block> {
        let pl = par.placement();
        let stages = self.stages().unwrap_or([3, 4, 6, 3]);
        let n = self.micro_batch;
        let mut blocks = Vec::new();

        let mut pb = Pb::new(1, pl.tp);
        let img = pb.data("image", act([n, 3, self.image, self.image]));
        let x = pb.conv("conv1", img, 64, 7, 2, 3);
        let x = pb.norm("bn1", x, NormKind::Batch);
        let x = pb.unary("relu", &[x], RELU);
        let x = maxpool(&mut pb, "maxpool", x);
        let mut shape = pb.tensor(x).clone();
        pb.output(x);
        blocks.push(Block::new("stem", pb.finish()));

        let mut cin = 64;
        for (si, &count) in stages.iter().enumerate() {
            let planes = 64u64 << si;
            let width = planes * self.width;
            let cout = planes * 4;
            for bi in 0..count {
                let stride = if si > 0 && bi == 0 { 2 } else { 1 };
                let mut pb = Pb::new(1, pl.tp);
                let x = pb.input("input", shape.clone());
                let y = bottleneck(&mut pb, x, cin, width, cout, stride);
                shape = pb.tensor(y).clone();
                pb.output(y);
                blocks.push(Block::new(format!("layer{}.{bi}", si + 1), pb.finish()));
                cin = cout;
            }
        }

        let mut pb = Pb::new(1, pl.tp);
        let x = pb.input("input", shape.clone());
        let [_, c, _, _] = dims4(&shape);
        let pooled = act([n, c]);
        let fwd = compute(
            ComputeClass::Reduction,
            shape.elements(),
            shape.bytes() + pooled.bytes(),
            None,
            vec![pooled.clone()],
        );
        let bwd = compute(
            ComputeClass::Elementwise,
            shape.elements(),
            shape.bytes() + pooled.bytes(),
            None,
            vec![shape.clone()],
        );
        let x = pb.custom("avgpool", x, fwd, bwd, &[]);
        let logits = pb.linear("fc", x, self.classes, Weights::Own { bias: true });
        pb.cross_entropy("loss", logits, Tensor::new(vec![n], DType::F32));
        blocks.push(Block::new("head", pb.finish()));
        blocks
    }
}

/// 3x3 max pooling with stride 2 and padding 1.
fn maxpool(pb: &mut Pb, name: &str, x: V) -> V {
    let xt = pb.tensor(x).clone();
    let [n, c, h, w] = dims4(&xt);
    let out = act([n, c, (h + 2 - 3) / 2 + 1, (w + 2 - 3) / 2 + 1]);
    let fwd = compute(
        ComputeClass::Reduction,
        9 * out.elements(),
        xt.bytes() + out.bytes(),
        None,
        vec![out.clone()],
    );
    let bwd = compute(
        ComputeClass::Elementwise,
        xt.elements(),
        2 * xt.bytes() + out.bytes(),
        None,
        vec![xt],
    );
    pb.custom(name, x, fwd, bwd, &[x])
}

/// A bottleneck block (torchvision v1.5: stride on the 3x3 convolution), with a 1x1
/// projection shortcut when the shape changes.
fn bottleneck(pb: &mut Pb, x: V, cin: u64, width: u64, cout: u64, stride: u64) -> V {
    let y = pb.conv("conv1", x, width, 1, 1, 0);
    let y = pb.norm("bn1", y, NormKind::Batch);
    let y = pb.unary("relu1", &[y], RELU);
    let y = pb.conv("conv2", y, width, 3, stride, 1);
    let y = pb.norm("bn2", y, NormKind::Batch);
    let y = pb.unary("relu2", &[y], RELU);
    let y = pb.conv("conv3", y, cout, 1, 1, 0);
    let y = pb.norm("bn3", y, NormKind::Batch);
    let shortcut = if stride != 1 || cin != cout {
        let s = pb.conv("downsample.conv", x, cout, 1, stride, 0);
        pb.norm("downsample.bn", s, NormKind::Batch)
    } else {
        x
    };
    let y = pb.add("residual", y, shortcut);
    pb.unary("relu3", &[y], RELU)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::collectives;
    use crate::{build, parameters, Model, Zero};
    use concerto_graph::ir::{CollectiveKind, LinkClass, OpKind};

    #[test]
    fn wrn50_2_matches_torchvision() {
        let m = Model::WideResNet(WideResNetConfig {
            micro_batch: 1,
            ..WideResNetConfig::default()
        });
        assert_eq!(parameters(&m, &Parallel::default()).unwrap(), 68_883_240);
        let g = build(&m, &Parallel::default()).unwrap();
        let convs = g
            .ops()
            .filter(|o| o.name.contains(".fwd.conv") || o.name.contains(".fwd.downsample.conv"))
            .count();
        assert_eq!(convs, 1 + 16 * 3 + 4);
        // torchvision reports 11.40 GFLOPS (multiply-adds) for wide_resnet50_2.
        let macs: u64 = g
            .ops()
            .filter(|o| o.name.contains(".fwd."))
            .filter_map(|o| match o.kind {
                OpKind::Compute {
                    class: ComputeClass::Gemm,
                    flops,
                    ..
                } => Some(flops / 2),
                _ => None,
            })
            .sum();
        assert!((macs as f64 / 11.40e9 - 1.0).abs() < 0.005, "{macs}");
        // The stem convolution has no dgrad: nothing needs the image's gradient.
        assert!(g.find("stem.bwd.conv1.wgrad").is_some());
        assert!(g.find("stem.bwd.conv1.dgrad").is_none());
        // A resnet-50 (width 1) has 25.6 M parameters.
        let r50 = Model::WideResNet(WideResNetConfig {
            width: 1,
            ..WideResNetConfig::default()
        });
        assert_eq!(parameters(&r50, &Parallel::default()).unwrap(), 25_557_032);
    }

    #[test]
    fn wrn_data_parallel_and_zero() {
        let m = Model::WideResNet(WideResNetConfig::default());
        let params = parameters(&m, &Parallel::default()).unwrap();
        let g = build(&m, &Parallel::new(8, 1, 1)).unwrap();
        let ar: Vec<u64> = collectives(&g, CollectiveKind::AllReduce)
            .map(|(_, bytes)| bytes)
            .collect();
        assert_eq!(ar.iter().sum::<u64>(), 2 * params);
        // 138 MB of gradients in buckets of at least 25 MiB.
        assert!(ar.len() >= 4 && ar.len() <= 6, "{}", ar.len());
        assert_eq!(g.link_classes(), vec![LinkClass::IntraNode]);
        let g = build(&m, &Parallel::new(16, 1, 1).with_zero(Zero::Stage3)).unwrap();
        let blocks = 1 + 16 + 1;
        let ags = g
            .ops()
            .filter(|o| o.name.contains(".zero3.allgather."))
            .count();
        assert_eq!(ags, 2 * blocks);
        assert_eq!(g.link_classes(), vec![LinkClass::InterNode]);
        let g = build(
            &m,
            &Parallel::new(2, 1, 1)
                .with_zero(Zero::Stage2)
                .with_microbatches(2),
        )
        .unwrap();
        // ZeRO-2 reduces every microbatch.
        assert!(g.find("mb0.grad_bucket0.reducescatter").is_some());
        assert!(g.find("mb1.grad_bucket0.reducescatter").is_some());
        assert!(g.find("grad_bucket0.allgather").is_some());
    }

    #[test]
    fn invalid_resnets_are_named() {
        let err = |c: WideResNetConfig, p: Parallel| {
            build(&Model::WideResNet(c), &p).unwrap_err().to_string()
        };
        let d = WideResNetConfig::default;
        assert!(
            err(WideResNetConfig { depth: 34, ..d() }, Parallel::default()).contains("depth = 34")
        );
        assert!(err(WideResNetConfig { width: 0, ..d() }, Parallel::default()).contains("width"));
        assert!(err(d(), Parallel::new(1, 2, 1)).contains("data parallelism"));
        assert!(err(d(), Parallel::new(1, 1, 2)).contains("data parallelism"));
        let huge = WideResNetConfig {
            image: 1 << 30,
            ..d()
        };
        assert!(err(huge, Parallel::default()).contains("too large"));
        let many = Parallel::default().with_microbatches(1 << 20);
        assert!(err(d(), many).contains("block instances"));
    }
}
