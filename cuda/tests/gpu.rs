//! On a GPU: two independent ops on two streams overlap. Without a driver or GPU the tests
//! print `skipped: no GPU (<reason>)` and pass.

use std::sync::{Mutex, MutexGuard};

use concerto_cuda::{CommMode, CudaError, Executor, ExecutorConfig};
use concerto_graph::{
    CollectiveKind, ComputeClass, Graph, GraphBuilder, LinkClass, Op, Stream, StreamPlan,
};

/// One compute op and one independent collective.
fn pair() -> Graph {
    let mut b = GraphBuilder::new("pair");
    b.add(Op::compute("compute", ComputeClass::Other, 1, 1), &[]);
    b.add(
        Op::collective(
            "allreduce",
            CollectiveKind::AllReduce,
            8 << 20,
            8,
            LinkClass::IntraNode,
        ),
        &[],
    );
    b.finish()
}

/// One test on the GPU at a time: concurrent runs would share its SMs and copy engines.
static GPU: Mutex<()> = Mutex::new(());

fn executor(comm: CommMode) -> Option<(MutexGuard<'static, ()>, Executor)> {
    let lock = GPU.lock().unwrap_or_else(|e| e.into_inner());
    let config = ExecutorConfig {
        comm,
        ..ExecutorConfig::default()
    };
    match Executor::with_config(0, config) {
        Ok(e) => Some((lock, e)),
        Err(e @ CudaError::NoDevice { .. }) => {
            println!("skipped: no GPU ({e})");
            None
        }
        Err(e) => panic!("a GPU is present but the executor failed: {e}"),
    }
}

fn overlap(comm: CommMode) {
    let Some((_gpu, mut ex)) = executor(comm) else {
        return;
    };
    let g = pair();
    let plan = StreamPlan::program_order(&g).unwrap();
    assert!(plan.waits.is_empty());
    assert_eq!(plan.streams[1].0, Stream::Comm(LinkClass::IntraNode));
    let two_ms = 2_000_000;
    let m = ex.run(&g, &plan, &[two_ms, two_ms]).unwrap();
    let t = &m.timeline;
    println!(
        "{} ({} SMs, kernel from {}, {:?}): start {:?} end {:?} makespan {} ns, runs {:?}",
        ex.device_name(),
        ex.sm_count(),
        ex.kernel_origin(),
        comm,
        t.start,
        t.end,
        t.makespan,
        m.makespans_ns
    );
    assert_eq!(t.streams, ["compute", "comm.intra-node"]);
    assert_eq!(m.makespans_ns.len(), ExecutorConfig::default().repeats);
    // Each op takes about its 2 ms...
    for o in 0..2 {
        let d = t.end[o] - t.start[o];
        assert!((1_900_000..3_000_000).contains(&d), "op {o} took {d} ns");
    }
    // ...and they overlap: well under the 4 ms of running one after the other.
    assert!(t.makespan < 3_000_000, "makespan {} ns", t.makespan);
}

#[test]
fn independent_compute_and_collective_overlap_with_spin_kernels() {
    overlap(CommMode::Spin);
}

#[test]
fn independent_compute_and_collective_overlap_with_a_copy() {
    overlap(CommMode::Copy);
}

#[test]
fn a_wait_serialises_the_two_streams() {
    let Some((_gpu, mut ex)) = executor(CommMode::Spin) else {
        return;
    };
    let mut b = GraphBuilder::new("chain");
    let c = b.add(Op::compute("compute", ComputeClass::Other, 1, 1), &[]);
    b.add(
        Op::collective(
            "ar",
            CollectiveKind::AllReduce,
            8 << 20,
            8,
            LinkClass::IntraNode,
        ),
        &[c],
    );
    let g = b.finish();
    let plan = StreamPlan::program_order(&g).unwrap();
    assert_eq!(plan.waits.len(), 1);
    let m = ex.run(&g, &plan, &[1_000_000, 1_000_000]).unwrap();
    let t = &m.timeline;
    assert!(t.start[1] >= t.end[0], "{:?} {:?}", t.start, t.end);
    assert!(t.makespan >= 2_000_000, "makespan {} ns", t.makespan);
}
