//! # concerto-cuda
//!
//! A thin executor that runs Concerto's stream plans on a GPU with CUDA streams and events,
//! and measures them, so that the simulator's makespans can be checked against a real
//! device. It runs no model code: every op becomes a kernel or a copy that takes the op's
//! modelled duration, so what is measured is the plan's structure (FIFO orders, cross-stream
//! waits, overlap) executed by the CUDA runtime, not the cost model.
//!
//! ## What is lowered ([`lower()`], module [`mod@lower`])
//!
//! A [`StreamPlan`] and one duration per op become [`Commands`]: one command list per stream
//! of the plan (the compute stream, each compute lane of a graph that has lanes, such as one
//! imported from a profiler trace, and each communication channel, in the plan's order),
//! each a sequence of `Wait { event }`, `Launch { op, duration_ns, kind }` and
//! `Record { event }`. Each stream's launches follow the plan's FIFO order. The waits are
//! exactly the plan's waits (producer, consumer), which [`StreamPlan::new`] keeps minimal:
//! one `Wait` before the consumer, on an event recorded right after the producer; an op gets
//! an event only when some wait names it as producer. Same-stream dependencies need nothing:
//! FIFO order implies them. [`check`] runs the commands abstractly before any GPU work: it
//! rejects deadlocks (naming the stuck streams) and commands that leave a data dependency of
//! the graph unordered, and yields the order in which the host enqueues them.
//!
//! ## Spin or copy
//!
//! A compute op is a spin kernel on as many blocks as the GPU has SMs (one warp each): every
//! block reads the `%globaltimer` nanosecond clock when it starts and spins until the op's
//! duration has passed, so the kernel takes its modelled duration without calibrating clock
//! rates. A collective, per [`CommMode`]:
//!
//! * `spin` (default): the same kernel on 2 blocks, as NCCL's kernels take a few SMs. It
//!   overlaps a compute spin kernel as long as the GPU has room for both grids (a compute
//!   grid of one warp per SM leaves plenty).
//! * `copy`: a host-to-device `cuMemcpyHtoDAsync` from pinned memory on a copy engine, using
//!   no SM. The executor times 4 copies of 64 MiB when it starts, and sizes each op's copy as
//!   `duration x bytes per ns` so that it takes the modelled duration; copies above 256 MiB
//!   are issued as several. Two channels copying at once share the link, so each then runs
//!   slower than modelled.
//!
//! ## How a run is timed ([`Executor`])
//!
//! One non-blocking stream per plan stream. A run first launches a "gate" spin kernel on the
//! first stream and records a start event after it; every other stream waits for the start
//! event. The host then enqueues every command in [`check`]'s order while the gate holds the
//! GPU (the gate lasts 1.5 times the warm-up run's enqueue time, at least 1 ms), so the host's
//! launch rate does not delay the ops; [`Measured::host_bound`] says when the gate ended
//! before the host was done. Each op is bracketed by two timing events on its stream
//! (recorded just before and just after its launch), and the cross-stream waits use separate
//! events without timing (`cuStreamWaitEvent`). After synchronising, an op's start and end are
//! the elapsed times from the start event to its two events (`cuEventElapsedTime`, about
//! 0.5 µs resolution). One warm-up run, then [`ExecutorConfig::repeats`] measured runs; the
//! run of median makespan is kept, as a [`Timeline`] with the plan's stream names.
//!
//! ## Reading measured vs simulated
//!
//! [`compare`] simulates each plan ([`concerto_graph::simulate()`]) and runs it, and reports
//! `diff % = (measured - simulated) / simulated x 100`. A positive difference is time the
//! simulator does not model: kernel launch and event overheads (a few µs per op, which
//! dominate graphs of many short ops), the gaps a cross-stream wait adds, blocks that could
//! not all be resident at once. A negative difference usually comes from contention: the
//! simulator slows compute by the profile's factor while a collective runs, but spin kernels
//! do not slow each other down; simulate with contention 1 to compare the executor with the
//! plain event model. The comparison checks that plans the simulator ranks better also run
//! faster on a GPU (overlap actually happens), not that the cost model's durations are right.
//!
//! The crate builds without CUDA: the driver and NVRTC are loaded at run time (cudarc's
//! dynamic loading), and [`Executor::new`] returns [`CudaError::NoDevice`] when they or a GPU
//! are missing. Without NVRTC, the spin kernel's embedded PTX is loaded instead.
//!
//! ```
//! use concerto_cuda::{check, lower, LowerConfig};
//! use concerto_models::{build, GptConfig, Model, Parallel};
//! use concerto_graph::{Hardware, StreamPlan};
//!
//! let model = Model::Gpt(GptConfig { layers: 1, hidden: 64, heads: 4, seq: 32, micro_batch: 1, vocab: 512 });
//! let graph = build(&model, &Parallel::new(2, 2, 1))?;
//! let plan = StreamPlan::program_order(&graph)?;
//! let durations = Hardware::h100().durations(&graph);
//! let commands = lower(&graph, &plan, &durations, &LowerConfig::default())?;
//! assert_eq!(commands.waits().len(), plan.waits.len());
//! let order = check(&graph, &commands)?; // the host's enqueue order
//! assert_eq!(order.len(), commands.streams.iter().map(|s| s.commands.len()).sum::<usize>());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod device;
mod error;
pub mod lower;

use serde::Serialize;

use concerto_graph::{simulate, Graph, StreamPlan, Timeline};

pub use device::{Executor, ExecutorConfig, SPIN_KERNEL_SOURCE};
pub use error::CudaError;
pub use lower::{
    check, lower, CommMode, Command, Commands, EventId, Issue, LaunchKind, LowerConfig,
    StreamCommands,
};

/// A measured run of a plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Measured {
    /// The run of median makespan: op start and end times (ns from the start event).
    pub timeline: Timeline,
    /// The makespan of every measured run (ns), in run order.
    pub makespans_ns: Vec<u64>,
    /// Whether, in some run, the GPU may have waited for the host to enqueue commands (the
    /// gate kernel ended before the last command was enqueued).
    pub host_bound: bool,
}

/// Something that runs a stream plan and measures it: [`Executor`] on a GPU.
pub trait Execute {
    /// Runs `plan` of `graph` with one duration per op (ns).
    fn execute_plan(
        &mut self,
        graph: &Graph,
        plan: &StreamPlan,
        durations: &[u64],
    ) -> Result<Measured, CudaError>;
}

/// One plan's simulated and measured makespans.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The plan's name.
    pub scheduler: String,
    /// The simulated makespan (ns).
    pub simulated_ns: u64,
    /// The measured makespan (ns): the median run's.
    pub measured_ns: u64,
    /// `(measured - simulated) / simulated x 100`.
    pub diff_pct: f64,
    /// Every measured run's makespan (ns).
    pub runs_ns: Vec<u64>,
    /// See [`Measured::host_bound`].
    pub host_bound: bool,
    /// The simulated timeline.
    #[serde(skip)]
    pub simulated: Timeline,
    /// The measured timeline (the median run).
    #[serde(skip)]
    pub measured: Timeline,
}

/// Simulates each named plan with `durations` and `contention` and runs it on `executor`
/// (see the crate docs for how to read the difference). The plans are run in the order given.
pub fn compare<E: Execute + ?Sized>(
    graph: &Graph,
    plans: &[(&str, &StreamPlan)],
    durations: &[u64],
    contention: f64,
    executor: &mut E,
) -> Result<Vec<Row>, CudaError> {
    let mut rows = Vec::with_capacity(plans.len());
    for (name, plan) in plans {
        let simulated = simulate(graph, plan, durations, contention)?;
        let measured = executor.execute_plan(graph, plan, durations)?;
        let (s, m) = (simulated.makespan, measured.timeline.makespan);
        rows.push(Row {
            scheduler: (*name).to_string(),
            simulated_ns: s,
            measured_ns: m,
            diff_pct: diff_pct(m, s),
            runs_ns: measured.makespans_ns,
            host_bound: measured.host_bound,
            simulated,
            measured: measured.timeline,
        });
    }
    Ok(rows)
}

/// `(measured - simulated) / simulated x 100`, 0 when both are 0.
pub fn diff_pct(measured_ns: u64, simulated_ns: u64) -> f64 {
    if simulated_ns == 0 {
        if measured_ns == 0 {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        (measured_ns as f64 - simulated_ns as f64) / simulated_ns as f64 * 100.0
    }
}
