//! Lowering and checking on model graphs, without a GPU.

use concerto_cuda::{
    check, compare, lower, CommMode, Command, Commands, CudaError, EventId, Execute, LaunchKind,
    LowerConfig, Measured, StreamCommands,
};
use concerto_graph::{simulate, Graph, Hardware, OpId, Stream, StreamPlan};
use concerto_models::{build, GptConfig, Model, Parallel};
use concerto_pipeline::{schedule, ScheduleConfig};
use concerto_rcpsp::{Heuristic, HeuristicConfig};

/// A small GPT with tensor and data parallelism: compute, TP all-reduces and DP buckets.
fn small_gpt() -> Graph {
    let model = Model::Gpt(GptConfig {
        layers: 2,
        hidden: 64,
        heads: 4,
        seq: 32,
        micro_batch: 2,
        vocab: 500,
    });
    build(&model, &Parallel::new(2, 2, 1)).unwrap()
}

/// Program order, the two list-scheduling baselines and the optimiser's plan (a heuristic
/// inside the odd-even driver, so no exact backend is needed).
fn plans(graph: &Graph) -> Vec<(&'static str, StreamPlan)> {
    let hw = Hardware::h100();
    let config = ScheduleConfig {
        time_limit: Some(std::time::Duration::from_secs(2)),
        ..ScheduleConfig::default()
    };
    let solver = std::sync::Arc::new(Heuristic::new(HeuristicConfig::default()));
    let r = schedule(graph, &hw, solver, &config).unwrap();
    r.results
        .into_iter()
        .map(|s| (s.scheduler.as_str(), s.plan))
        .collect()
}

fn assert_lowered_like_the_plan(graph: &Graph, plan: &StreamPlan, c: &Commands) {
    assert_eq!(c.streams.len(), plan.streams.len());
    for (sc, (stream, ops)) in c.streams.iter().zip(&plan.streams) {
        assert_eq!(sc.stream, *stream);
        assert_eq!(&sc.ops(), ops, "order on {}", stream.name());
        let records = sc
            .commands
            .iter()
            .filter(|x| matches!(x, Command::Record { .. }))
            .count();
        let producers_here = c.producers.iter().filter(|p| ops.contains(p)).count();
        assert_eq!(records, producers_here);
    }
    // The waits are exactly the plan's: same count, same pairs.
    let mut waits = c.waits();
    let mut expected = plan.waits.clone();
    assert_eq!(waits.len(), expected.len());
    waits.sort();
    expected.sort();
    assert_eq!(waits, expected);
    // One event per producer, and only producers record.
    let mut producers: Vec<OpId> = plan.waits.iter().map(|w| w.0).collect();
    producers.sort();
    producers.dedup();
    let mut events = c.producers.clone();
    events.sort();
    assert_eq!(events, producers);
    // Each record follows its producer's launch.
    for sc in &c.streams {
        for pair in sc.commands.windows(2) {
            if let [Command::Launch { op, .. }, Command::Record { event }] = pair {
                assert_eq!(c.producers[event.0], *op);
            }
        }
        for (i, x) in sc.commands.iter().enumerate() {
            if matches!(x, Command::Record { .. }) {
                assert!(i > 0 && matches!(sc.commands[i - 1], Command::Launch { .. }));
            }
        }
    }
    check(graph, c).unwrap();
}

#[test]
fn program_order_and_optimized_plans_lower_and_check() {
    let g = small_gpt();
    assert!(g.collective_count() > 0);
    let d = Hardware::h100().durations(&g);
    let plans = plans(&g);
    let names: Vec<&str> = plans.iter().map(|p| p.0).collect();
    assert_eq!(
        names,
        ["program-order", "lhs", "inductor", "list", "concerto"]
    );
    for (name, plan) in &plans {
        for comm in [CommMode::Spin, CommMode::Copy] {
            let config = LowerConfig {
                comm,
                ..LowerConfig::default()
            };
            let c = lower(&g, plan, &d, &config).unwrap();
            assert_lowered_like_the_plan(&g, plan, &c);
            let order = check(&g, &c).unwrap();
            let total: usize = c.streams.iter().map(|s| s.commands.len()).sum();
            assert_eq!(order.len(), total, "{name}");
            // Launch kinds: compute spins on the compute blocks, collectives per mode.
            for sc in &c.streams {
                for x in &sc.commands {
                    let Command::Launch {
                        op,
                        duration_ns,
                        kind,
                    } = *x
                    else {
                        continue;
                    };
                    assert_eq!(duration_ns, d[op.0]);
                    let expected = match (sc.stream, comm) {
                        (Stream::Compute, _) => LaunchKind::Spin { blocks: 132 },
                        (_, CommMode::Spin) => LaunchKind::Spin { blocks: 2 },
                        (_, CommMode::Copy) => LaunchKind::Copy {
                            bytes: config.copy_bytes(duration_ns),
                        },
                    };
                    assert_eq!(kind, expected, "{name}");
                }
            }
        }
    }
}

#[test]
fn the_issue_order_puts_every_wait_after_its_record() {
    let g = small_gpt();
    let d = Hardware::h100().durations(&g);
    for (_, plan) in plans(&g) {
        let c = lower(&g, &plan, &d, &LowerConfig::default()).unwrap();
        let order = check(&g, &c).unwrap();
        let mut recorded = vec![false; c.events()];
        let mut next = vec![0usize; c.streams.len()];
        for issue in order {
            // Each stream's commands are issued in their order.
            assert_eq!(issue.index, next[issue.stream]);
            next[issue.stream] += 1;
            match c.streams[issue.stream].commands[issue.index] {
                Command::Record { event } => recorded[event.0] = true,
                Command::Wait { event } => assert!(recorded[event.0]),
                Command::Launch { .. } => {}
            }
        }
    }
}

#[test]
fn a_cyclic_command_set_deadlocks_and_names_the_streams() {
    let g = small_gpt();
    let plan = StreamPlan::program_order(&g).unwrap();
    let d = Hardware::h100().durations(&g);
    let mut c = lower(&g, &plan, &d, &LowerConfig::default()).unwrap();
    // The compute stream's first command now waits for the last event the channel records,
    // which the channel records only after waiting for compute ops: a cycle.
    let last = c.streams[1]
        .commands
        .iter()
        .rev()
        .find_map(|x| match x {
            Command::Record { event } => Some(*event),
            _ => None,
        })
        .unwrap();
    c.streams[0]
        .commands
        .insert(0, Command::Wait { event: last });
    let e = check(&g, &c).unwrap_err();
    assert!(matches!(e, CudaError::Deadlock { .. }), "{e}");
    let text = e.to_string();
    assert!(text.contains("`compute` waits for event"), "{text}");
    assert!(text.contains("`comm.intra-node` waits for event"), "{text}");
}

#[test]
fn a_hand_made_two_stream_cycle_deadlocks() {
    // compute: wait e1, launch a, record e0; channel: wait e0, launch b, record e1.
    let mut b = concerto_graph::GraphBuilder::new("pair");
    b.add(
        concerto_graph::Op::compute("a", concerto_graph::ComputeClass::Other, 1, 1),
        &[],
    );
    b.add(
        concerto_graph::Op::collective(
            "b",
            concerto_graph::CollectiveKind::AllReduce,
            8,
            2,
            concerto_graph::LinkClass::IntraNode,
        ),
        &[],
    );
    let g = b.finish();
    let launch = |op| Command::Launch {
        op: OpId(op),
        duration_ns: 1,
        kind: LaunchKind::Spin { blocks: 1 },
    };
    let c = Commands {
        streams: vec![
            StreamCommands {
                stream: Stream::Compute,
                commands: vec![
                    Command::Wait { event: EventId(1) },
                    launch(0),
                    Command::Record { event: EventId(0) },
                ],
            },
            StreamCommands {
                stream: Stream::Comm(concerto_graph::LinkClass::IntraNode),
                commands: vec![
                    Command::Wait { event: EventId(0) },
                    launch(1),
                    Command::Record { event: EventId(1) },
                ],
            },
        ],
        producers: vec![OpId(0), OpId(1)],
    };
    let e = check(&g, &c).unwrap_err();
    assert!(matches!(e, CudaError::Deadlock { .. }), "{e}");
    assert!(e.to_string().contains("before `a`"), "{e}");
    assert!(e.to_string().contains("before `b`"), "{e}");
    // A wait for an event no stream records is a deadlock too.
    let mut dangling = c.clone();
    dangling.streams[1].commands.pop();
    dangling.streams[0].commands.remove(0);
    dangling.streams[0]
        .commands
        .push(Command::Wait { event: EventId(1) });
    let e = check(&g, &dangling).unwrap_err();
    assert!(e.to_string().contains("which no stream records"), "{e}");
}

/// An "executor" that replays the simulator without contention.
struct Simulator;

impl Execute for Simulator {
    fn execute_plan(
        &mut self,
        graph: &Graph,
        plan: &StreamPlan,
        durations: &[u64],
    ) -> Result<Measured, CudaError> {
        let timeline = simulate(graph, plan, durations, 1.0)?;
        Ok(Measured {
            makespans_ns: vec![timeline.makespan],
            timeline,
            host_bound: false,
        })
    }
}

#[test]
fn compare_reports_both_makespans_and_the_difference() {
    let g = small_gpt();
    let hw = Hardware::h100();
    let d = hw.durations(&g);
    let plans = plans(&g);
    let named: Vec<(&str, &StreamPlan)> = plans.iter().map(|(n, p)| (*n, p)).collect();
    let rows = compare(&g, &named, &d, 1.0, &mut Simulator).unwrap();
    assert_eq!(rows.len(), 5);
    for r in &rows {
        assert_eq!(r.simulated_ns, r.measured_ns);
        assert_eq!(r.diff_pct, 0.0);
        assert_eq!(r.measured.streams, r.simulated.streams);
    }
    // With contention the simulation is slower than the contention-free "measurement".
    let rows = compare(&g, &named, &d, 2.0, &mut Simulator).unwrap();
    assert!(rows.iter().all(|r| r.diff_pct <= 0.0));
    assert!(rows.iter().any(|r| r.diff_pct < 0.0));
    let json = serde_json::to_value(&rows[0]).unwrap();
    for key in ["scheduler", "simulated_ns", "measured_ns", "diff_pct"] {
        assert!(json.get(key).is_some(), "{key} missing in {json}");
    }
}

/// A trace-like graph: compute on the default lane and on lanes 1 and 2 (side streams of a
/// profiler trace), a collective between them, and cross-lane dependencies.
fn laned() -> Graph {
    use concerto_graph::{CollectiveKind, ComputeClass, GraphBuilder, LinkClass, Op};
    let compute = |name: &str| Op::compute(name, ComputeClass::Other, 0, 0);
    let mut b = GraphBuilder::new("lanes");
    let a = b.add(compute("a"), &[]);
    let side = b.add(compute("side").on_lane(1), &[a]);
    let other = b.add(compute("other").on_lane(2), &[a]);
    let ar = b.add(
        Op::collective(
            "ar",
            CollectiveKind::AllReduce,
            1 << 20,
            8,
            LinkClass::IntraNode,
        ),
        &[side],
    );
    b.add(compute("b"), &[a]);
    b.add(compute("join"), &[ar, other]);
    b.finish()
}

#[test]
fn each_compute_lane_lowers_to_a_stream_of_its_own() {
    let g = laned();
    let plan = StreamPlan::program_order(&g).unwrap();
    let names: Vec<String> = plan.streams.iter().map(|(s, _)| s.name()).collect();
    assert_eq!(
        names,
        ["compute", "compute.1", "compute.2", "comm.intra-node"]
    );
    let d = [5, 7, 3, 4, 6, 1];
    let c = lower(&g, &plan, &d, &LowerConfig::default()).unwrap();
    // One command list (one CUDA stream of the executor) per lane, none merged.
    assert_eq!(c.stream_names(), names);
    assert_lowered_like_the_plan(&g, &plan, &c);
    let on = |s: usize| -> Vec<&str> {
        c.streams[s]
            .ops()
            .iter()
            .map(|o| g.op(*o).name.as_str())
            .collect()
    };
    assert_eq!(on(0), ["a", "b", "join"]);
    assert_eq!(on(1), ["side"]);
    assert_eq!(on(2), ["other"]);
    // Lane ops are compute: they spin on the compute blocks, like the default lane's.
    for s in 0..3 {
        for x in &c.streams[s].commands {
            if let Command::Launch { kind, .. } = x {
                assert_eq!(*kind, LaunchKind::Spin { blocks: 132 });
            }
        }
    }
    // The lanes overlap in the timeline the executor reports: `side` and `other` beside `b`.
    let rows = compare(&g, &[("plan", &plan)], &d, 1.0, &mut Simulator).unwrap();
    let t = &rows[0].measured;
    assert_eq!(t.streams, names);
    assert_eq!((t.start[1], t.start[2], t.start[4]), (5, 5, 5));
    assert_eq!(rows[0].measured_ns, 5 + 7 + 4 + 1);
}
