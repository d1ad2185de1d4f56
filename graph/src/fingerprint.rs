//! A graph's fingerprint: a stable 64-bit hash of what a stream plan depends on, so that a
//! plan file can say which graph it was made for ([`StreamPlan::to_json`]).
//!
//! The hash is 64-bit FNV-1a (Fowler, Noll and Vo; the parameters of
//! <http://www.isthe.com/chongo/tech/comp/fnv/>: offset basis `0xcbf29ce484222325`, prime
//! `0x100000001b3`), written out here rather than taken from `std`, whose `DefaultHasher` may
//! change between Rust releases and platforms. It runs over a byte encoding fixed by this
//! module, in program order:
//!
//! - the number of ops, then for each op:
//! - its name;
//! - its kind: `compute` with the class (the names of the JSON format: `gemm`, `attention`,
//!   ...), flops, bytes and the GEMM shape if any (`b`, `m`, `n`, `k`); or `collective` with
//!   the collective kind (`all-reduce`, ...), bytes, group size and link class;
//! - its lane ([`crate::Op::lane`]) when it is not 0: `lane` and the number (graphs without
//!   lanes hash as they did before lanes existed);
//! - its dependency list: the number of inputs, then each `(producer, output index)` in
//!   [`Graph::inputs`] order.
//!
//! Integers are written as 8 little-endian bytes, strings as their length then their UTF-8
//! bytes, so no two different graphs share an encoding. The graph's name, the ops' declared
//! output tensors, their duration overrides and release times are left out: they change neither which plans
//! are valid nor what a plan's op names mean. Same graph, same fingerprint, on any machine.
//! Cost: O(ops + dependencies).
//!
//! [`StreamPlan::to_json`]: crate::StreamPlan::to_json

use crate::ir::{CollectiveKind, ComputeClass, Graph, LinkClass, OpKind};

/// FNV-1a 64-bit offset basis.
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV-1a 64-bit prime.
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// A 64-bit FNV-1a hasher over the encoding of the module docs.
struct Fnv1a(u64);

impl Fnv1a {
    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(FNV_PRIME);
        }
    }

    fn u64(&mut self, x: u64) {
        self.bytes(&x.to_le_bytes());
    }

    fn usize(&mut self, x: usize) {
        self.u64(x as u64);
    }

    fn str(&mut self, s: &str) {
        self.usize(s.len());
        self.bytes(s.as_bytes());
    }
}

/// The JSON format's name of a compute class (also the hardware fit file's).
pub(crate) fn class_name(class: ComputeClass) -> &'static str {
    match class {
        ComputeClass::Gemm => "gemm",
        ComputeClass::Attention => "attention",
        ComputeClass::Elementwise => "elementwise",
        ComputeClass::Reduction => "reduction",
        ComputeClass::Norm => "norm",
        ComputeClass::Other => "other",
    }
}

impl Graph {
    /// The graph's fingerprint: 64-bit FNV-1a over its ops' names, kinds and dependency lists
    /// in program order (see the [`fingerprint`](crate::fingerprint) module for the exact
    /// encoding). Stable across machines and Rust releases. O(ops + dependencies).
    pub fn fingerprint(&self) -> u64 {
        let mut h = Fnv1a(FNV_OFFSET);
        h.usize(self.len());
        for id in self.ids() {
            let op = self.op(id);
            h.str(&op.name);
            match op.kind {
                OpKind::Compute {
                    class,
                    flops,
                    bytes,
                    gemm,
                } => {
                    h.str("compute");
                    h.str(class_name(class));
                    h.u64(flops);
                    h.u64(bytes);
                    match gemm {
                        None => h.bytes(&[0]),
                        Some(g) => {
                            h.bytes(&[1]);
                            for x in [g.b, g.m, g.n, g.k] {
                                h.u64(x);
                            }
                        }
                    }
                }
                OpKind::Collective {
                    kind,
                    bytes,
                    group,
                    link,
                } => {
                    h.str("collective");
                    h.str(collective_name(kind));
                    h.u64(bytes);
                    h.u64(u64::from(group));
                    h.str(link_name(link));
                }
            }
            if op.lane != 0 {
                // Only when set, so that graphs without lanes keep their fingerprints.
                h.str("lane");
                h.u64(u64::from(op.lane));
            }
            let inputs = self.inputs(id);
            h.usize(inputs.len());
            for (p, t) in inputs {
                h.usize(p.0);
                h.usize(t);
            }
        }
        h.0
    }
}

/// The JSON format's name of a collective kind (spelled out here so that a renamed
/// [`CollectiveKind::as_str`] cannot change fingerprints).
fn collective_name(kind: CollectiveKind) -> &'static str {
    match kind {
        CollectiveKind::AllReduce => "all-reduce",
        CollectiveKind::AllGather => "all-gather",
        CollectiveKind::ReduceScatter => "reduce-scatter",
        CollectiveKind::AllToAll => "all-to-all",
        CollectiveKind::SendRecv => "send-recv",
        CollectiveKind::Broadcast => "broadcast",
    }
}

/// The JSON format's name of a link class.
fn link_name(link: LinkClass) -> &'static str {
    match link {
        LinkClass::IntraNode => "intra-node",
        LinkClass::InterNode => "inter-node",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{DType, GemmShape, GraphBuilder, Op};

    /// The FNV-1a reference vectors (empty string, "a", "foobar").
    #[test]
    fn fnv1a_matches_the_reference_values() {
        for (input, expected) in [
            ("", 0xcbf2_9ce4_8422_2325_u64),
            ("a", 0xaf63_dc4c_8601_ec8c),
            ("foobar", 0x8594_4171_f739_67e8),
        ] {
            let mut h = Fnv1a(FNV_OFFSET);
            h.bytes(input.as_bytes());
            assert_eq!(h.0, expected, "{input:?}");
        }
    }

    fn graph(dep_on_first: bool) -> Graph {
        let mut b = GraphBuilder::new("g");
        let shape = GemmShape {
            b: 1,
            m: 64,
            n: 64,
            k: 64,
        };
        let a = b.add(Op::gemm("a", shape, DType::Bf16), &[]);
        let c = b.add(Op::gemm("c", shape, DType::Bf16), &[]);
        let ar = b.add(
            Op::collective(
                "ar",
                CollectiveKind::AllReduce,
                8192,
                8,
                LinkClass::IntraNode,
            ),
            &[if dep_on_first { a } else { c }],
        );
        b.add(
            Op::compute("add", ComputeClass::Elementwise, 10, 10),
            &[ar, c],
        );
        b.finish()
    }

    #[test]
    fn same_graph_same_fingerprint_and_a_changed_dependency_changes_it() {
        let g = graph(true);
        assert_eq!(g.fingerprint(), graph(true).fingerprint());
        // Through the JSON format, and under another name: still the same.
        let back = Graph::from_json(&g.to_json().replace("\"g\"", "\"renamed\"")).unwrap();
        assert_eq!(back.name(), "renamed");
        assert_eq!(back.fingerprint(), g.fingerprint());
        // One dependency moved: another fingerprint.
        assert_ne!(graph(false).fingerprint(), g.fingerprint());
        // A duration override does not count; a changed kind does.
        let mut timed = GraphBuilder::new("g");
        let mut changed = GraphBuilder::new("g");
        for id in g.ids() {
            let inputs: Vec<_> = g.inputs(id);
            let mut op = g.op(id).clone();
            op.duration_ns = Some(5);
            timed.try_add(op.clone(), &inputs).unwrap();
            if let OpKind::Collective { group, .. } = &mut op.kind {
                *group = 4;
            }
            changed.try_add(op, &inputs).unwrap();
        }
        assert_eq!(timed.finish().fingerprint(), g.fingerprint());
        assert_ne!(changed.finish().fingerprint(), g.fingerprint());
    }

    /// The encoding is fixed: this value, computed apart from this code (a few lines of Python
    /// following the module docs' encoding), may only change with a documented format change.
    #[test]
    fn the_fingerprint_of_a_known_graph_is_pinned() {
        let g = graph(true);
        assert_eq!(format!("{:016x}", g.fingerprint()), PINNED);
    }

    const PINNED: &str = "31beaf3a84610b86";
}
