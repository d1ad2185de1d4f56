//! proptest strategies for random small RCPSPs, modal problems and training-step graphs.
//!
//! Every strategy draws the ingredients of a valid instance (durations, demands, arcs as
//! flags over ordered pairs, so that every precedence goes forward and the result is acyclic)
//! and builds it, so proptest shrinks the ingredients: durations towards 0, arcs away,
//! demands down. A shrunk counter-example is small and still valid.

use concerto_graph::lower::lower;
use concerto_graph::{CollectiveKind, ComputeClass, Graph, GraphBuilder, LinkClass, Op, OpId};
use concerto_rcpsp::{ActivityId, ModalProblem, Problem, ProblemBuilder, Region, Time};
use proptest::prelude::*;

/// The size of random RCPSPs ([`ProblemShape::strategy`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ProblemShape {
    /// Fewest and most activities (inclusive).
    pub activities: (usize, usize),
    /// Fewest and most renewable resources (inclusive, at least 1).
    pub resources: (usize, usize),
    /// Durations are drawn in `0..=max_duration`.
    pub max_duration: Time,
    /// Capacities are drawn in `1..=max_capacity`; demands in `0..=capacity`.
    pub max_capacity: u32,
    /// Probability of the arc `i -> j` for each pair `i < j`.
    pub arc_probability: f64,
    /// Whether an arc may carry a lag (1 to 3, on a third of the arcs).
    pub lags: bool,
}

impl Default for ProblemShape {
    /// 3 to 8 activities, 1 to 3 resources of capacity 1 to 4, durations 0 to 9, arcs with
    /// probability 0.3, some with lags: small enough for [`super::Exhaustive`] to take
    /// milliseconds and for MILP backends to prove them quickly.
    fn default() -> Self {
        Self {
            activities: (3, 8),
            resources: (1, 3),
            max_duration: 9,
            max_capacity: 4,
            arc_probability: 0.3,
            lags: true,
        }
    }
}

/// The ingredients of a random valid problem, kept as drawn so that proptest can shrink them
/// (see the module docs): any values describe a valid problem.
#[derive(Clone, Debug)]
pub struct ProblemSpec {
    /// Capacity per resource.
    pub capacities: Vec<u32>,
    /// Duration per activity.
    pub durations: Vec<Time>,
    /// Per activity and resource a raw draw, taken modulo `capacity + 1`.
    pub demands: Vec<Vec<u32>>,
    /// Per pair `i < j` (row-major): whether the arc `i -> j` exists, and its lag.
    pub arcs: Vec<(bool, Time)>,
}

impl ProblemSpec {
    /// The problem this spec describes, its activities named `a0`, `a1`, ...
    pub fn build(&self) -> Problem {
        self.build_named(&|i| format!("a{i}"))
    }

    /// The problem this spec describes, activity `i` named `names(i)`. O(n² + n r).
    pub fn build_named(&self, names: &dyn Fn(usize) -> String) -> Problem {
        let mut b = ProblemBuilder::new();
        let resources: Vec<_> = self
            .capacities
            .iter()
            .enumerate()
            .map(|(r, &c)| b.resource(format!("r{r}"), c))
            .collect();
        let ids: Vec<_> = self
            .durations
            .iter()
            .enumerate()
            .map(|(i, &d)| b.activity(names(i), d))
            .collect();
        for (i, row) in self.demands.iter().enumerate() {
            for (r, &raw) in row.iter().enumerate() {
                let q = raw % (self.capacities[r] + 1);
                if q > 0 {
                    b.demand(ids[i], resources[r], q);
                }
            }
        }
        let n = ids.len();
        let mut k = 0;
        for i in 0..n {
            for j in i + 1..n {
                let (present, lag) = self.arcs[k];
                k += 1;
                if present {
                    b.precedence_with_lag(ids[i], ids[j], lag);
                }
            }
        }
        b.build().expect("a spec always describes a valid problem")
    }
}

/// Random ingredients of `n` activities on `r` resources.
fn spec(shape: &ProblemShape, n: usize, r: usize) -> impl Strategy<Value = ProblemSpec> {
    let lag = if shape.lags {
        prop_oneof![2 => Just(0 as Time), 1 => 1..=3 as Time].boxed()
    } else {
        Just(0 as Time).boxed()
    };
    let arc = (prop::bool::weighted(shape.arc_probability), lag);
    (
        prop::collection::vec(1..=shape.max_capacity.max(1), r),
        prop::collection::vec(0..=shape.max_duration.max(0), n),
        prop::collection::vec(prop::collection::vec(0..=shape.max_capacity, r), n),
        prop::collection::vec(arc, n * n.saturating_sub(1) / 2),
    )
        .prop_map(|(capacities, durations, demands, arcs)| ProblemSpec {
            capacities,
            durations,
            demands,
            arcs,
        })
}

impl ProblemShape {
    /// Random valid problems of this shape, activities named `a0`, `a1`, ... and resources
    /// `r0`, `r1`, ...
    pub fn strategy(&self) -> BoxedStrategy<Problem> {
        let shape = self.clone();
        let (lo, hi) = (self.activities.0.max(1), self.activities.1.max(1));
        let (rlo, rhi) = (self.resources.0.max(1), self.resources.1.max(1));
        (lo..=hi.max(lo), rlo..=rhi.max(rlo))
            .prop_flat_map(move |(n, r)| spec(&shape, n, r))
            .prop_map(|s| s.build())
            .boxed()
    }
}

/// Random small RCPSPs of the default [`ProblemShape`]: 3 to 8 activities, 1 to 3
/// resources, durations 0 to 9, acyclic precedences (some with lags).
///
/// ```
/// use concerto::testing::{problems, Exhaustive};
/// use concerto::{check, Limits, Solver};
/// use proptest::prelude::*;
///
/// proptest!(ProptestConfig::with_cases(8), |(p in problems())| {
///     let o = Exhaustive.solve(&p, &Limits::default()).unwrap();
///     prop_assert!(check(&p, o.schedule.as_ref().unwrap()).is_ok());
/// });
/// ```
pub fn problems() -> BoxedStrategy<Problem> {
    ProblemShape::default().strategy()
}

/// The size of random training-step graphs ([`GraphShape::strategy`]).
#[derive(Clone, Debug, PartialEq)]
pub struct GraphShape {
    /// Fewest and most ops (inclusive).
    pub ops: (usize, usize),
    /// Probability that an op is a collective.
    pub collective_probability: f64,
    /// Probability that a collective crosses nodes (its own channel).
    pub inter_node_probability: f64,
    /// Probability that an op reads the output of each earlier op.
    pub dependency_probability: f64,
    /// Each op's `duration_ns` is drawn in `1..=max_duration_ns`.
    pub max_duration_ns: u64,
}

impl Default for GraphShape {
    /// 3 to 8 ops, 40 % collectives (30 % of them inter-node), dependencies with probability
    /// 0.35, durations 1 to 9 ns.
    fn default() -> Self {
        Self {
            ops: (3, 8),
            collective_probability: 0.4,
            inter_node_probability: 0.3,
            dependency_probability: 0.35,
            max_duration_ns: 9,
        }
    }
}

/// The ingredients of one op.
#[derive(Clone, Debug)]
struct OpSpec {
    collective: bool,
    inter_node: bool,
    /// Index into the compute classes or the collective kinds.
    kind: usize,
    group: u32,
    bytes: u64,
    duration_ns: u64,
}

const CLASSES: [ComputeClass; 6] = [
    ComputeClass::Gemm,
    ComputeClass::Attention,
    ComputeClass::Elementwise,
    ComputeClass::Reduction,
    ComputeClass::Norm,
    ComputeClass::Other,
];

fn class_name(class: ComputeClass) -> &'static str {
    match class {
        ComputeClass::Gemm => "gemm",
        ComputeClass::Attention => "attention",
        ComputeClass::Elementwise => "elementwise",
        ComputeClass::Reduction => "reduction",
        ComputeClass::Norm => "norm",
        _ => "other",
    }
}

impl OpSpec {
    fn op(&self, index: usize) -> Op {
        let mut op = if self.collective {
            let kind = CollectiveKind::ALL[self.kind % CollectiveKind::ALL.len()];
            let link = if self.inter_node {
                LinkClass::InterNode
            } else {
                LinkClass::IntraNode
            };
            Op::collective(
                format!("{index}.{}", kind.as_str()),
                kind,
                self.bytes,
                self.group,
                link,
            )
        } else {
            let class = CLASSES[self.kind % CLASSES.len()];
            Op::compute(
                format!("{index}.{}", class_name(class)),
                class,
                self.bytes.saturating_mul(64),
                self.bytes,
            )
        };
        op.duration_ns = Some(self.duration_ns);
        op
    }
}

impl GraphShape {
    /// Random valid training-step graphs of this shape: compute ops (every class) and
    /// collectives (every kind, groups of 2 to 8 ranks, intra- or inter-node) in program
    /// order, each reading the output of earlier ops; op `i` is named `<i>.<class or kind>`
    /// (`0.gemm`, `3.all-reduce`) and carries its `duration_ns`.
    pub fn strategy(&self) -> BoxedStrategy<Graph> {
        let shape = self.clone();
        let (lo, hi) = (self.ops.0.max(1), self.ops.1.max(1));
        (lo..=hi.max(lo))
            .prop_flat_map(move |n| {
                let op = (
                    prop::bool::weighted(shape.collective_probability),
                    prop::bool::weighted(shape.inter_node_probability),
                    0..CLASSES.len().max(CollectiveKind::ALL.len()),
                    2..=8u32,
                    1u64..=(64 << 20),
                    1..=shape.max_duration_ns.max(1),
                )
                    .prop_map(
                        |(collective, inter_node, kind, group, bytes, duration_ns)| OpSpec {
                            collective,
                            inter_node,
                            kind,
                            group,
                            bytes,
                            duration_ns,
                        },
                    );
                (
                    prop::collection::vec(op, n),
                    prop::collection::vec(
                        prop::bool::weighted(shape.dependency_probability),
                        n * n.saturating_sub(1) / 2,
                    ),
                )
            })
            .prop_map(|(ops, deps)| {
                let mut b = GraphBuilder::new("random-step");
                let mut k = 0;
                for (j, spec) in ops.iter().enumerate() {
                    let mut inputs = Vec::new();
                    for i in 0..j {
                        // Pair (i, j), i < j, counted column by column.
                        let present = deps[k + i];
                        if present {
                            inputs.push(OpId(i));
                        }
                    }
                    k += j;
                    b.add(spec.op(j), &inputs);
                }
                b.finish()
            })
            .boxed()
    }
}

/// Random small training-step graphs of the default [`GraphShape`]: 3 to 8 compute and
/// collective ops with data dependencies, each with a `duration_ns` of 1 to 9.
pub fn graphs() -> BoxedStrategy<Graph> {
    GraphShape::default().strategy()
}

/// The durations a graph of [`graphs`] carries (an op without `duration_ns` counts 0).
pub fn durations_of(graph: &Graph) -> Vec<u64> {
    graph.ops().map(|op| op.duration_ns.unwrap_or(0)).collect()
}

/// The RCPSPs of random training steps: [`graphs`] lowered with [`durations_of`]
/// (`concerto_graph::lower`: one unit resource per stream, one precedence per dependency).
pub fn training_steps() -> BoxedStrategy<Problem> {
    graphs()
        .prop_map(|g| {
            lower(&g, &durations_of(&g))
                .expect("a random graph lowers")
                .problem
        })
        .boxed()
}

/// The size of random modal problems ([`ModalShape::strategy`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ModalShape {
    /// Fewest and most mandatory activities (inclusive).
    pub mandatory: (usize, usize),
    /// Fewest and most regions (inclusive).
    pub regions: (usize, usize),
    /// Fewest and most modes per region (inclusive, at least 1).
    pub modes: (usize, usize),
    /// Fewest and most activities of each mode alone (inclusive, at least 1).
    pub activities_per_mode: (usize, usize),
    /// Probability that a region has one more activity shared by a random set of its modes.
    pub shared_probability: f64,
    /// Resources, durations, capacities and arcs, as for RCPSPs (its `activities` is
    /// ignored: the activity count follows from the fields above).
    pub problem: ProblemShape,
}

impl Default for ModalShape {
    /// 2 to 4 mandatory activities, 1 or 2 regions of 2 or 3 modes with 1 or 2 activities
    /// each, a shared activity in a third of the regions; resources, durations and arcs of
    /// the default [`ProblemShape`]. A mode choice keeps at most 10 activities.
    fn default() -> Self {
        Self {
            mandatory: (2, 4),
            regions: (1, 2),
            modes: (2, 3),
            activities_per_mode: (1, 2),
            shared_probability: 0.33,
            problem: ProblemShape::default(),
        }
    }
}

/// Who owns an activity of a random modal problem.
#[derive(Clone, Debug)]
enum Owner {
    Mandatory,
    /// Region, and the mode set (bit `k` for mode `k`).
    Region(usize, u128),
}

impl ModalShape {
    /// Random valid modal problems of this shape. Activities are named after their owner:
    /// `m0`, `m1`, ... mandatory; `x<r>.<k>.<i>` the `i`-th activity of mode `k` of region
    /// `x<r>`; `x<r>.shared` an activity of several modes. Their order (and so the direction
    /// of the random arcs) is shuffled, so regions sit anywhere between mandatory activities.
    pub fn strategy(&self) -> BoxedStrategy<ModalProblem> {
        let shape = self.clone();
        let m = (self.mandatory.0, self.mandatory.1.max(self.mandatory.0));
        let r = (self.regions.0, self.regions.1.max(self.regions.0));
        let k = (self.modes.0.max(1), self.modes.1.max(self.modes.0.max(1)));
        let a = (
            self.activities_per_mode.0.max(1),
            self.activities_per_mode
                .1
                .max(self.activities_per_mode.0.max(1)),
        );
        let region = (
            prop::collection::vec(a.0..=a.1, k.0..=k.1),
            prop::bool::weighted(self.shared_probability),
            1u128..8,
        );
        (m.0..=m.1, prop::collection::vec(region, r.0..=r.1))
            .prop_flat_map(move |(mandatory, regions)| {
                let mut owners: Vec<(String, Owner)> = (0..mandatory)
                    .map(|i| (format!("m{i}"), Owner::Mandatory))
                    .collect();
                for (x, (sizes, shared, mask)) in regions.iter().enumerate() {
                    for (mode, &size) in sizes.iter().enumerate() {
                        for i in 0..size {
                            owners.push((format!("x{x}.{mode}.{i}"), Owner::Region(x, 1 << mode)));
                        }
                    }
                    let all = (1u128 << sizes.len()) - 1;
                    if *shared && (mask & all) != 0 {
                        owners.push((format!("x{x}.shared"), Owner::Region(x, mask & all)));
                    }
                }
                let n = owners.len();
                let rcount = (shape.problem.resources.0.max(1)
                    ..=shape
                        .problem
                        .resources
                        .1
                        .max(shape.problem.resources.0.max(1)))
                    .boxed();
                let shape = shape.clone();
                (
                    Just(owners).prop_shuffle(),
                    Just(regions.len()),
                    rcount.prop_flat_map(move |r| spec(&shape.problem, n, r)),
                )
            })
            .prop_map(|(owners, regions, spec)| {
                let problem = spec.build_named(&|i| owners[i].0.clone());
                let mut modes: Vec<Vec<Vec<ActivityId>>> = vec![Vec::new(); regions];
                for (i, (_, owner)) in owners.iter().enumerate() {
                    if let Owner::Region(x, set) = owner {
                        for mode in 0..128 {
                            if set >> mode & 1 == 1 {
                                let region = &mut modes[*x];
                                if region.len() <= mode {
                                    region.resize(mode + 1, Vec::new());
                                }
                                region[mode].push(ActivityId(i));
                            }
                        }
                    }
                }
                let regions = modes
                    .into_iter()
                    .enumerate()
                    .map(|(x, modes)| Region {
                        name: format!("x{x}"),
                        modes,
                    })
                    .collect();
                ModalProblem::new(problem, regions).expect("a valid random modal problem")
            })
            .boxed()
    }
}

/// Random small modal problems of the default [`ModalShape`].
pub fn modal_problems() -> BoxedStrategy<ModalProblem> {
    ModalShape::default().strategy()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::test_runner::{Config, TestRunner};

    #[test]
    fn random_instances_are_in_shape() {
        let mut runner = TestRunner::new(Config::with_cases(64));
        runner
            .run(&problems(), |p| {
                prop_assert!((3..=8).contains(&p.len()));
                prop_assert!((1..=3).contains(&p.resources().len()));
                prop_assert!(p.activities().iter().all(|a| (0..=9).contains(&a.duration)));
                Ok(())
            })
            .expect("in shape");
        runner
            .run(&graphs(), |g| {
                prop_assert!((3..=8).contains(&g.len()));
                prop_assert!(g.ops().all(|op| op.duration_ns.is_some()));
                Ok(())
            })
            .expect("in shape");
        runner
            .run(&modal_problems(), |m| {
                prop_assert!((1..=2).contains(&m.regions().len()));
                for region in m.regions() {
                    prop_assert!((2..=3).contains(&region.modes.len()));
                    prop_assert!(region.modes.iter().all(|mode| !mode.is_empty()));
                }
                for modes in m.all_choices() {
                    prop_assert!(m.reduce(&modes).expect("valid choice").problem.len() <= 12);
                }
                Ok(())
            })
            .expect("in shape");
    }
}
