//! Tests of the block-program builder: layer costs and shapes.

use super::*;

#[test]
fn linear_costs_are_the_gemm_formulas() {
    let mut pb = Pb::new(1, LinkClass::IntraNode);
    let x = pb.input("x", act([2, 8, 16]));
    let y = pb.linear("fc", x, 32, Weights::Own { bias: true });
    let p = pb.finish();
    assert_eq!(p.values[y.0].tensor.shape, vec![2, 8, 32]);
    let node = &p.nodes[0];
    let OpKind::Compute { flops, gemm, .. } = &node.fwd.as_ref().unwrap().kind else {
        panic!()
    };
    assert_eq!(*flops, 2 * 16 * 32 * 16);
    assert_eq!(
        *gemm,
        Some(GemmShape {
            b: 1,
            m: 16,
            n: 32,
            k: 16
        })
    );
    assert_eq!(p.groups[0].params, 16 * 32 + 32);
    assert_eq!(node.bwd.len(), 2);
    assert_eq!(node.bwd[1].op.outputs[0].shape, vec![16, 32]);
}

#[test]
fn conv_output_geometry() {
    let mut pb = Pb::new(1, LinkClass::IntraNode);
    let x = pb.data("img", act([4, 3, 224, 224]));
    let y = pb.conv("conv1", x, 64, 7, 2, 3);
    let p = pb.finish();
    assert_eq!(p.values[y.0].tensor.shape, vec![4, 64, 112, 112]);
    // No gradient flows into the image: its dgrad is never emitted (the driver skips
    // ops that produce no needed gradient), and the output still needs one.
    assert!(p.values[y.0].grad);
}
