//! Memory-budgeted scheduling on random training steps: the S step under a budget returns a
//! plan that the independent checker (`memory::check_memory`) accepts and that replays as
//! reported, or the `MemoryBudget` error with a smallest peak over the budget and the proven
//! floor; a budget under the floor is always that error and one at program order's peak or
//! above never is. The list portfolio under a budget reports, for every candidate, the peak
//! and makespan its plan simulates to, within-budget candidates first. `MemoryBudget::parse`.

use std::sync::Arc;
use std::time::Duration;

use concerto_graph::list::{self, ListConfig};
use concerto_graph::{
    memory, simulate, CollectiveKind, ComputeClass, DType, Graph, GraphBuilder, Hardware,
    LinkClass, Op, OpId, StreamPlan, Tensor,
};
use concerto_pipeline::{schedule, MemoryBudget, PipelineError, ScheduleConfig};
use concerto_rcpsp::{OddEvenConfig, Solver};
use proptest::prelude::*;

/// One op of a random step.
#[derive(Clone)]
struct OpSpec {
    /// 0 compute, 1 intra-node collective, 2 inter-node collective.
    kind: u8,
    /// Duration override (ns).
    duration: u64,
    /// Output bytes (compute: 0 for none; collectives: the result buffer, at least 1).
    bytes: u64,
    /// Kept to the end of the step.
    kept: bool,
    /// Earlier ops it reads.
    inputs: Vec<usize>,
}

/// A random training step: its ops and resident bytes; `Debug` prints one line per op.
#[derive(Clone)]
struct Step {
    resident: u64,
    ops: Vec<OpSpec>,
}

impl std::fmt::Debug for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "resident {} B", self.resident)?;
        for (i, o) in self.ops.iter().enumerate() {
            let kind = ["compute", "ar intra", "ar inter"][o.kind as usize];
            let declared = if o.kind > 0 && o.bytes % 3 == 0 {
                " (declared)"
            } else {
                ""
            };
            let kept = if o.kept { " kept" } else { "" };
            writeln!(
                f,
                "  {i}: {kind} {} ns {} B{declared}{kept} <- {:?}",
                o.duration, o.bytes, o.inputs
            )?;
        }
        Ok(())
    }
}

impl Step {
    fn graph(&self) -> Graph {
        let mut b = GraphBuilder::new("memory-step");
        b.set_resident_bytes(self.resident);
        for (i, spec) in self.ops.iter().enumerate() {
            let mut op = match spec.kind {
                0 => {
                    let op = Op::compute(format!("c{i}"), ComputeClass::Gemm, 1, 1);
                    if spec.bytes > 0 {
                        op.with_output(Tensor::new(vec![spec.bytes], DType::S8))
                    } else {
                        op
                    }
                }
                k => {
                    let link = if k == 1 {
                        LinkClass::IntraNode
                    } else {
                        LinkClass::InterNode
                    };
                    let op = Op::collective(
                        format!("x{i}"),
                        CollectiveKind::AllReduce,
                        spec.bytes,
                        8,
                        link,
                    );
                    // Some collectives declare their output (the same bytes), most do not.
                    if spec.bytes % 3 == 0 {
                        op.with_output(Tensor::new(vec![spec.bytes], DType::S8))
                    } else {
                        op
                    }
                }
            };
            op.duration_ns = Some(spec.duration);
            if spec.kept {
                op = op.kept_to_end();
            }
            let inputs: Vec<OpId> = spec.inputs.iter().map(|&p| OpId(p)).collect();
            b.add(op, &inputs);
        }
        b.finish()
    }
}

/// Random training steps of `lo..=hi` ops: compute ops with an output tensor of 1 to 4000 B
/// (a few with none), collectives (two in seven, a third of them inter-node) with a result
/// buffer of 1 to 4000 B (declared as an output when a multiple of 3), each op reading up to
/// 3 earlier ops, about one in eight kept to the end of the step, and 0 to 20000 resident
/// bytes. Durations (1 to 20 ns) are overrides, so every hardware profile costs the ops the
/// same.
fn steps(lo: usize, hi: usize) -> impl Strategy<Value = Step> {
    let op = (
        prop_oneof![4 => Just(0u8), 2 => Just(1u8), 1 => Just(2u8)],
        1u64..=20,
        prop_oneof![1 => Just(0u64), 9 => 1u64..=4000],
        prop::bool::weighted(0.125),
        prop::collection::vec(any::<prop::sample::Index>(), 0..=3),
    );
    (prop::collection::vec(op, lo..=hi), 0u64..=20_000).prop_map(|(specs, resident)| {
        let ops = specs
            .into_iter()
            .enumerate()
            .map(|(i, (kind, duration, bytes, kept, inputs))| {
                let mut inputs: Vec<usize> = if i == 0 {
                    Vec::new()
                } else {
                    inputs.iter().map(|x| x.index(i)).collect()
                };
                inputs.sort_unstable();
                inputs.dedup();
                OpSpec {
                    kind,
                    duration,
                    bytes: if kind == 0 { bytes } else { bytes.max(1) },
                    kept,
                    inputs,
                }
            })
            .collect();
        Step { resident, ops }
    })
}

/// Which budget a case tries, between the floor and 1.5 times program order's peak.
#[derive(Clone, Copy, Debug)]
enum Pick {
    /// Under the proven floor by `1 + k % floor` bytes (0 when the floor is 0).
    BelowFloor(u64),
    /// Exactly program order's peak.
    ProgramPeak,
    /// `floor + (1.5 po - floor) * k / 1000`.
    Between(u64),
}

fn picks() -> impl Strategy<Value = Pick> {
    prop_oneof![
        1 => any::<u64>().prop_map(Pick::BelowFloor),
        1 => Just(Pick::ProgramPeak),
        4 => (0u64..=1000).prop_map(Pick::Between),
    ]
}

/// The budget in bytes of `pick` for a graph with proven floor `floor` and program order's
/// peak `po` (`floor <= po`).
fn budget_of(pick: Pick, floor: u64, po: u64) -> u64 {
    match pick {
        Pick::BelowFloor(k) => floor.saturating_sub(1 + k % floor.max(1)),
        Pick::ProgramPeak => po,
        Pick::Between(k) => {
            let top = po + po / 2;
            floor + (top - floor) * k / 1000
        }
    }
}

fn sgs() -> Arc<dyn Solver> {
    concerto_backends::registry().get("sgs").unwrap().into()
}

fn pumpkin() -> Arc<dyn Solver> {
    concerto_backends::registry().get("pumpkin").unwrap().into()
}

/// Small windows and a deterministic work budget; the clock is only a safety net.
fn config(budget: u64, seed: u64) -> ScheduleConfig {
    ScheduleConfig {
        oddeven: OddEvenConfig {
            block: 4,
            rounds: 2,
            window_time_limit: Duration::from_millis(200),
            ..OddEvenConfig::default()
        },
        time_limit: Some(Duration::from_secs(20)),
        work_limit: Some(600),
        seed,
        max_block: 8,
        list: ListConfig {
            samples: 4,
            ..ListConfig::default()
        },
        memory_budget: Some(budget),
        ..ScheduleConfig::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// The S step under a budget: a plan within it that replays as reported, or the
    /// MemoryBudget error with a smallest peak over it and the floor; never a plan over it.
    #[test]
    fn schedule_keeps_the_budget_or_says_why_not(
        step in steps(10, 60),
        pick in picks(),
        contention in prop_oneof![Just(1.0), Just(1.3)],
        exact in prop::bool::weighted(0.25),
        seed in 0u64..4,
    ) {
        let g = step.graph();
        let hw = Hardware::h100().with_contention(contention).unwrap();
        let d = hw.durations(&g);
        let floor = memory::peak_lower_bound(&g, &d).unwrap();
        let po = simulate(&g, &StreamPlan::program_order(&g).unwrap(), &d, contention)
            .unwrap()
            .peak_memory_bytes(&g);
        prop_assert!(floor <= po, "floor {} above program order's peak {}", floor, po);
        let budget = budget_of(pick, floor, po);
        let solver = if exact { pumpkin() } else { sgs() };
        match schedule(&g, &hw, solver, &config(budget, seed)) {
            Ok(r) => {
                prop_assert!(budget >= floor, "a plan under the floor {} at {}", floor, budget);
                prop_assert_eq!(r.memory_budget_bytes, Some(budget));
                prop_assert_eq!(r.peak_lower_bound_bytes, floor);
                let c = r.concerto();
                let p = memory::check_memory(&g, &c.timeline, budget)
                    .map_err(|e| TestCaseError::fail(format!("concerto's plan: {e}")))?;
                prop_assert_eq!(p.peak_bytes, c.peak_memory_bytes);
                // The plan replays as reported.
                let again = simulate(&g, &c.plan, &r.durations, r.contention).unwrap();
                prop_assert_eq!(again.makespan, c.makespan_ns());
                prop_assert_eq!(again.peak_memory_bytes(&g), c.peak_memory_bytes);
                prop_assert_eq!(&again, &c.timeline);
                // Every row's peak is the checker's on its timeline.
                for s in &r.results {
                    let p = memory::profile(&g, &s.timeline).unwrap();
                    prop_assert_eq!(p.peak_bytes, s.peak_memory_bytes, "{}", s.scheduler);
                    let again = simulate(&g, &s.plan, &r.durations, r.contention).unwrap();
                    prop_assert_eq!(&again, &s.timeline, "{}", s.scheduler);
                }
                let p = memory::profile(&g, &r.solver_plan.timeline).unwrap();
                prop_assert_eq!(p.peak_bytes, r.solver_plan.peak_memory_bytes);
            }
            Err(PipelineError::MemoryBudget { budget_bytes, smallest_bytes, by, lower_bound_bytes }) => {
                prop_assert_eq!(budget_bytes, budget);
                prop_assert!(
                    smallest_bytes > budget,
                    "the smallest peak {} ({}) keeps the budget {}", smallest_bytes, by, budget
                );
                prop_assert_eq!(lower_bound_bytes, floor);
                prop_assert!(
                    budget < po,
                    "no plan at {} though program order peaks at {}", budget, po
                );
            }
            Err(e) => return Err(TestCaseError::fail(format!("budget {budget}: {e}"))),
        }
    }

    /// The portfolio under a budget: each candidate's peak and makespan are those of its
    /// plan, simulated (its memory waits make it replay as scheduled), and candidates within
    /// the budget come first, each part shortest first.
    #[test]
    fn portfolio_candidates_replay_as_scheduled_under_a_budget(
        step in steps(10, 60),
        share in 0u64..=1000,
        contention in prop_oneof![Just(1.0), Just(1.3)],
        seed in 0u64..4,
    ) {
        let g = step.graph();
        let d: Vec<u64> = g.ops().map(|o| o.duration_ns.unwrap()).collect();
        let floor = memory::peak_lower_bound(&g, &d).unwrap();
        let po = simulate(&g, &StreamPlan::program_order(&g).unwrap(), &d, contention)
            .unwrap()
            .peak_memory_bytes(&g);
        let budget = budget_of(Pick::Between(share), floor, po);
        let config = ListConfig {
            contention,
            seed,
            samples: 4,
            rules: list::Rule::ALL.to_vec(),
            memory_budget: Some(budget),
        };
        let c = list::portfolio(&g, &d, &config, &|| false).unwrap();
        for k in &c {
            k.plan.validate(&g).unwrap();
            let t = simulate(&g, &k.plan, &d, contention).unwrap();
            let p = memory::profile(&g, &t).unwrap();
            prop_assert_eq!(
                (k.makespan_ns, k.peak_bytes),
                (t.makespan, p.peak_bytes),
                "{} (budget {}, waits {:?})", k.rule, budget, k.plan.waits
            );
        }
        let keys: Vec<(bool, u64)> = c.iter().map(|k| (k.peak_bytes > budget, k.makespan_ns)).collect();
        prop_assert!(keys.windows(2).all(|w| w[0] <= w[1]), "not sorted: {:?}", keys);
    }
}

#[test]
fn memory_budgets_parse() {
    assert_eq!(
        MemoryBudget::parse("100%"),
        Ok(MemoryBudget::Percent(100.0))
    );
    assert_eq!(
        MemoryBudget::parse("72GiB"),
        Ok(MemoryBudget::Bytes(72 << 30))
    );
    assert_eq!(MemoryBudget::parse("1024"), Ok(MemoryBudget::Bytes(1024)));
    for bad in ["0", "abc", "-5%"] {
        let e = MemoryBudget::parse(bad).unwrap_err();
        assert!(e.contains(bad), "`{bad}`: {e}");
    }
    assert!(MemoryBudget::parse("0").unwrap_err().contains("positive"));
    assert!(MemoryBudget::parse("-5%").unwrap_err().contains("positive"));
}

/// 1000 resident bytes; on compute c1 (1 ns, 100 B) -> c2 (1 ns, 10 B, kept to the end); on
/// the channel an independent all-reduce ar (5 ns, 100 B). Every plan without a memory wait
/// starts ar at 0 beside c1 and c2 (1210 B); the only plans within 1150 B hold ar back until
/// c2's end frees c1's tensor (1110 B, the floor), which takes a wait the data do not give.
#[test]
fn the_s_step_keeps_a_budget_that_needs_a_memory_wait() {
    let mut b = GraphBuilder::new("starved");
    b.set_resident_bytes(1000);
    let out = |bytes: u64| Tensor::new(vec![bytes], DType::S8);
    let mut c1 = Op::compute("c1", ComputeClass::Other, 0, 0).with_output(out(100));
    c1.duration_ns = Some(1);
    let c1 = b.add(c1, &[]);
    let mut c2 = Op::compute("c2", ComputeClass::Other, 0, 0)
        .with_output(out(10))
        .kept_to_end();
    c2.duration_ns = Some(1);
    let c2 = b.add(c2, &[c1]);
    let mut ar = Op::collective(
        "ar",
        CollectiveKind::AllReduce,
        100,
        8,
        LinkClass::IntraNode,
    );
    ar.duration_ns = Some(5);
    let ar = b.add(ar, &[]);
    let g = b.finish();
    let hw = Hardware::h100().with_contention(1.0).unwrap();
    let d = hw.durations(&g);
    assert_eq!(memory::peak_lower_bound(&g, &d).unwrap(), 1110);
    let po = simulate(&g, &StreamPlan::program_order(&g).unwrap(), &d, 1.0).unwrap();
    assert_eq!(po.peak_memory_bytes(&g), 1210);
    for solver in [sgs(), pumpkin()] {
        let r = match schedule(&g, &hw, solver, &config(1150, 0)) {
            Ok(r) => r,
            Err(e) => panic!("{e}"),
        };
        let c = r.concerto();
        assert_eq!(
            memory::check_memory(&g, &c.timeline, 1150)
                .unwrap()
                .peak_bytes,
            1110
        );
        assert!(c.plan.waits.contains(&(c2, ar)), "{:?}", c.plan);
        assert_eq!(c.timeline.start[ar.0], 2);
        assert_eq!(c.makespan_ns(), 7);
        assert_eq!(simulate(&g, &c.plan, &d, 1.0).unwrap(), c.timeline);
    }
}
