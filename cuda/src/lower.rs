//! Lowering a stream plan to per-stream command lists, and an abstract check that they can run.
//!
//! Pure: no GPU is touched here. [`lower`] turns a [`StreamPlan`] and per-op durations into
//! [`Commands`]: one list per stream of the plan, in the plan's stream order, each a sequence
//! of [`Command::Wait`], [`Command::Launch`] and [`Command::Record`]:
//!
//! * every op of the stream's FIFO order is one `Launch`, in that order;
//! * before an op, one `Wait` per wait `(producer, consumer)` of the plan naming it as
//!   consumer, in the order of [`StreamPlan::waits`]: exactly the plan's waits (which
//!   [`StreamPlan::new`] already keeps minimal), nothing more;
//! * right after an op that some wait names as producer, one `Record` of its event. Events
//!   are numbered by first appearance as producer in [`StreamPlan::waits`], one per producer;
//!   ops that no other stream waits for record nothing.
//!
//! A launch says what to run ([`LaunchKind`]): compute ops spin on
//! [`LowerConfig::compute_blocks`] blocks (the executor uses the GPU's SM count, so a compute
//! op fills the GPU as a real kernel would); collectives, per [`CommMode`], spin on
//! [`LowerConfig::comm_blocks`] blocks (few, as NCCL's kernels use few SMs) or copy
//! `duration x` [`LowerConfig::copy_bytes_per_ns`] bytes (the executor calibrates the rate, so
//! the copy takes the modelled duration).
//!
//! [`check`] runs the command lists abstractly, as a GPU would: a stream advances while its
//! next command is a launch, a record, or a wait for an event already recorded; it fails with
//! [`CudaError::Deadlock`] naming the stuck streams when none can advance. It also checks
//! that the commands order every data dependency of the graph (through FIFO order and
//! event chains, with vector clocks) and returns an issue order: an interleaving of all
//! commands in which every wait comes after the record it waits for, which is the order a
//! host must enqueue them in (`cuStreamWaitEvent` waits for the event's most recent record at
//! the time of the call). Cost: O(commands x streams + dependencies).

use serde::{Deserialize, Serialize};

use concerto_graph::{Graph, OpId, Stream, StreamPlan};

use crate::error::CudaError;

/// The H100 SXM's SM count: [`LowerConfig::compute_blocks`] by default (the executor uses
/// the count of the GPU it runs on).
pub const DEFAULT_COMPUTE_BLOCKS: u32 = 132;
/// Blocks of a collective's spin kernel by default: NCCL's ring kernels take a few SMs.
pub const DEFAULT_COMM_BLOCKS: u32 = 2;
/// Copy rate assumed when none was calibrated (bytes per ns, i.e. GB/s): about PCIe 4.0 x16.
pub const DEFAULT_COPY_BYTES_PER_NS: f64 = 25.0;

/// How collectives run on the GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CommMode {
    /// A spin kernel on [`LowerConfig::comm_blocks`] blocks: takes a few SMs, no bandwidth.
    #[default]
    Spin,
    /// A host-to-device copy from pinned memory, sized to take the modelled duration: takes a
    /// copy engine and memory bandwidth, no SM.
    Copy,
}

impl CommMode {
    /// `spin` or `copy`.
    pub fn as_str(self) -> &'static str {
        match self {
            CommMode::Spin => "spin",
            CommMode::Copy => "copy",
        }
    }

    /// The inverse of [`CommMode::as_str`].
    pub fn parse(name: &str) -> Option<CommMode> {
        match name {
            "spin" => Some(CommMode::Spin),
            "copy" => Some(CommMode::Copy),
            _ => None,
        }
    }
}

/// Options of [`lower`].
#[derive(Clone, Debug, PartialEq)]
pub struct LowerConfig {
    /// How collectives run.
    pub comm: CommMode,
    /// Blocks of a compute op's spin kernel (the executor sets the GPU's SM count).
    pub compute_blocks: u32,
    /// Blocks of a collective's spin kernel in [`CommMode::Spin`].
    pub comm_blocks: u32,
    /// Bytes a copy moves per ns in [`CommMode::Copy`] (the executor sets its calibration).
    pub copy_bytes_per_ns: f64,
}

impl Default for LowerConfig {
    fn default() -> Self {
        Self {
            comm: CommMode::Spin,
            compute_blocks: DEFAULT_COMPUTE_BLOCKS,
            comm_blocks: DEFAULT_COMM_BLOCKS,
            copy_bytes_per_ns: DEFAULT_COPY_BYTES_PER_NS,
        }
    }
}

impl LowerConfig {
    /// Checks the values: at least one block each, a positive finite copy rate.
    pub fn validate(&self) -> Result<(), CudaError> {
        let reason = if self.compute_blocks == 0 {
            "compute ops need at least one block"
        } else if self.comm_blocks == 0 {
            "collectives need at least one block"
        } else if !(self.copy_bytes_per_ns.is_finite() && self.copy_bytes_per_ns > 0.0) {
            "the copy rate must be a positive number of bytes per ns"
        } else {
            return Ok(());
        };
        Err(CudaError::Config {
            reason: reason.to_string(),
        })
    }

    /// Bytes a copy of `duration_ns` moves: `duration x rate`, at least 1.
    pub fn copy_bytes(&self, duration_ns: u64) -> u64 {
        ((duration_ns as f64 * self.copy_bytes_per_ns).round() as u64).max(1)
    }
}

/// An event of a command set: an index into [`Commands::producers`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct EventId(pub usize);

/// What a launch runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LaunchKind {
    /// A kernel whose blocks each spin until the op's duration has passed.
    Spin {
        /// Blocks of the grid.
        blocks: u32,
    },
    /// A host-to-device copy of this many bytes from pinned memory.
    Copy {
        /// Bytes copied.
        bytes: u64,
    },
}

/// One command of a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Command {
    /// The stream waits until the event's record has completed (`cuStreamWaitEvent`).
    Wait {
        /// The event.
        event: EventId,
    },
    /// The stream runs an op.
    Launch {
        /// The op.
        op: OpId,
        /// Its modelled duration (ns).
        duration_ns: u64,
        /// What runs.
        kind: LaunchKind,
    },
    /// The stream records the event: it completes when the work before it on the stream has
    /// (`cuEventRecord`).
    Record {
        /// The event.
        event: EventId,
    },
}

/// The commands of one stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamCommands {
    /// The plan's stream.
    pub stream: Stream,
    /// Its commands, in issue order.
    pub commands: Vec<Command>,
}

impl StreamCommands {
    /// The ops launched, in order.
    pub fn ops(&self) -> Vec<OpId> {
        self.commands
            .iter()
            .filter_map(|c| match c {
                Command::Launch { op, .. } => Some(*op),
                _ => None,
            })
            .collect()
    }
}

/// A stream plan lowered to command lists (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Commands {
    /// One command list per stream, in the plan's stream order.
    pub streams: Vec<StreamCommands>,
    /// The op after which each event is recorded, indexed by [`EventId`].
    pub producers: Vec<OpId>,
}

impl Commands {
    /// Number of events.
    pub fn events(&self) -> usize {
        self.producers.len()
    }

    /// Number of launches.
    pub fn launches(&self) -> usize {
        self.streams
            .iter()
            .flat_map(|s| &s.commands)
            .filter(|c| matches!(c, Command::Launch { .. }))
            .count()
    }

    /// The cross-stream waits the commands express, as `(producer, consumer)` pairs: each
    /// `Wait` with the op its event follows and the next op launched on its stream (waits
    /// after a stream's last launch are left out), stream by stream.
    pub fn waits(&self) -> Vec<(OpId, OpId)> {
        let mut out = Vec::new();
        for s in &self.streams {
            let mut pending: Vec<EventId> = Vec::new();
            for c in &s.commands {
                match *c {
                    Command::Wait { event } => pending.push(event),
                    Command::Launch { op, .. } => {
                        out.extend(
                            pending
                                .drain(..)
                                .filter_map(|e| self.producers.get(e.0).map(|&p| (p, op))),
                        );
                    }
                    Command::Record { .. } => {}
                }
            }
        }
        out
    }

    /// The stream names, in order (those of the plan).
    pub fn stream_names(&self) -> Vec<String> {
        self.streams.iter().map(|s| s.stream.name()).collect()
    }
}

/// Lowers `plan` (validated against `graph`) with one duration per op (ns) to command lists
/// (see the module docs). O(ops + waits).
pub fn lower(
    graph: &Graph,
    plan: &StreamPlan,
    durations: &[u64],
    config: &LowerConfig,
) -> Result<Commands, CudaError> {
    if durations.len() != graph.len() {
        return Err(CudaError::Durations {
            durations: durations.len(),
            ops: graph.len(),
        });
    }
    config.validate()?;
    plan.validate(graph)?;
    let n = graph.len();
    let mut event_of: Vec<Option<EventId>> = vec![None; n];
    let mut producers = Vec::new();
    let mut waits_of: Vec<Vec<EventId>> = vec![Vec::new(); n];
    for &(p, c) in &plan.waits {
        let e = *event_of[p.0].get_or_insert_with(|| {
            producers.push(p);
            EventId(producers.len() - 1)
        });
        waits_of[c.0].push(e);
    }
    let streams = plan
        .streams
        .iter()
        .map(|(stream, ops)| {
            let mut commands = Vec::with_capacity(ops.len());
            for &op in ops {
                commands.extend(waits_of[op.0].iter().map(|&event| Command::Wait { event }));
                let duration_ns = durations[op.0];
                let kind = match (graph.op(op).is_collective(), config.comm) {
                    (false, _) => LaunchKind::Spin {
                        blocks: config.compute_blocks,
                    },
                    (true, CommMode::Spin) => LaunchKind::Spin {
                        blocks: config.comm_blocks,
                    },
                    (true, CommMode::Copy) => LaunchKind::Copy {
                        bytes: config.copy_bytes(duration_ns),
                    },
                };
                commands.push(Command::Launch {
                    op,
                    duration_ns,
                    kind,
                });
                if let Some(event) = event_of[op.0] {
                    commands.push(Command::Record { event });
                }
            }
            StreamCommands {
                stream: *stream,
                commands,
            }
        })
        .collect();
    Ok(Commands { streams, producers })
}

/// One step of an issue order: command `index` of stream `stream` (indices into
/// [`Commands::streams`] and [`StreamCommands::commands`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Issue {
    /// The stream.
    pub stream: usize,
    /// The command's position in its stream.
    pub index: usize,
}

/// Checks that `commands` can complete and order every data dependency of `graph`, and
/// returns an issue order (see the module docs): round-robin over the streams, each issuing
/// commands up to and including its next launch and the records right after it, or until it
/// is blocked.
///
/// Errors: [`CudaError::InvalidCommands`] when an op of the graph is launched twice or never,
/// or an event is out of range or recorded twice; [`CudaError::Deadlock`] naming the stuck
/// streams (a wait for an event never recorded is one); [`CudaError::MissingDependency`]
/// naming a producer and consumer the commands leave unordered.
pub fn check(graph: &Graph, commands: &Commands) -> Result<Vec<Issue>, CudaError> {
    let n = graph.len();
    let events = commands.events();
    let invalid = |reason: String| Err(CudaError::InvalidCommands { reason });
    // Where each op is launched: (stream, position among the stream's launches).
    let mut at: Vec<Option<(usize, usize)>> = vec![None; n];
    let mut recorded = vec![false; events];
    for (s, sc) in commands.streams.iter().enumerate() {
        let mut launches = 0;
        for c in &sc.commands {
            match *c {
                Command::Launch { op, .. } => {
                    if op.0 >= n {
                        return invalid(format!("op #{} is not in the graph ({n} ops)", op.0));
                    }
                    if at[op.0].is_some() {
                        return invalid(format!("`{}` is launched twice", graph.op(op).name));
                    }
                    at[op.0] = Some((s, launches));
                    launches += 1;
                }
                Command::Record { event } | Command::Wait { event } if event.0 >= events => {
                    return invalid(format!(
                        "event {} does not exist ({events} events)",
                        event.0
                    ));
                }
                Command::Record { event } => {
                    if std::mem::replace(&mut recorded[event.0], true) {
                        return invalid(format!("event {} is recorded twice", event.0));
                    }
                }
                Command::Wait { .. } => {}
            }
        }
    }
    if let Some(o) = (0..n).find(|&o| at[o].is_none()) {
        return invalid(format!("`{}` is never launched", graph.op(OpId(o)).name));
    }
    if let Some(p) = commands.producers.iter().find(|p| p.0 >= n) {
        return invalid(format!("event producer op #{} is not in the graph", p.0));
    }

    // Abstract run with vector clocks: clock[s][t] = launches of stream t known complete
    // before stream s's next command runs.
    let ns = commands.streams.len();
    let mut clock: Vec<Vec<usize>> = vec![vec![0; ns]; ns];
    let mut event_clock: Vec<Option<Vec<usize>>> = vec![None; events];
    let mut known: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut head = vec![0usize; ns];
    let total: usize = commands.streams.iter().map(|s| s.commands.len()).sum();
    let mut order = Vec::with_capacity(total);
    while order.len() < total {
        let mut progress = false;
        for s in 0..ns {
            let list = &commands.streams[s].commands;
            let mut launched = false;
            while let Some(c) = list.get(head[s]) {
                match *c {
                    Command::Wait { event } => {
                        if launched {
                            break;
                        }
                        let Some(ec) = &event_clock[event.0] else {
                            break;
                        };
                        for (mine, theirs) in clock[s].iter_mut().zip(ec) {
                            *mine = (*mine).max(*theirs);
                        }
                    }
                    Command::Launch { op, .. } => {
                        if launched {
                            break;
                        }
                        known[op.0] = clock[s].clone();
                        clock[s][s] += 1;
                        launched = true;
                    }
                    Command::Record { event } => {
                        event_clock[event.0] = Some(clock[s].clone());
                    }
                }
                order.push(Issue {
                    stream: s,
                    index: head[s],
                });
                head[s] += 1;
                progress = true;
            }
        }
        if !progress {
            return Err(CudaError::Deadlock {
                stuck: stuck(graph, commands, &head, &recorded),
            });
        }
    }

    for (p, c) in graph.dependencies() {
        let (t, i) = at[p.0].expect("every op is launched");
        if known[c.0][t] <= i {
            return Err(CudaError::MissingDependency {
                producer: graph.op(p).name.clone(),
                consumer: graph.op(c).name.clone(),
            });
        }
    }
    Ok(order)
}

/// Describes the streams that did not finish and the wait each is stuck on.
fn stuck(graph: &Graph, commands: &Commands, head: &[usize], recorded: &[bool]) -> String {
    let mut parts = Vec::new();
    for (s, sc) in commands.streams.iter().enumerate() {
        let Some(&Command::Wait { event }) = sc.commands.get(head[s]) else {
            continue;
        };
        let what = match commands.producers.get(event.0) {
            Some(p) if p.0 < graph.len() => format!(" (after `{}`)", graph.op(*p).name),
            _ => String::new(),
        };
        let never = if recorded[event.0] {
            ""
        } else {
            ", which no stream records"
        };
        let next = sc.commands[head[s]..].iter().find_map(|c| match c {
            Command::Launch { op, .. } => Some(format!(" before `{}`", graph.op(*op).name)),
            _ => None,
        });
        parts.push(format!(
            "`{}` waits for event {}{what}{never}{}",
            sc.stream.name(),
            event.0,
            next.unwrap_or_default()
        ));
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use concerto_graph::{CollectiveKind, ComputeClass, GraphBuilder, LinkClass, Op};

    /// bwd1 -> ar1, bwd1 -> bwd0 -> ar0, ar1 -> opt1.
    fn two_layers() -> Graph {
        let mut b = GraphBuilder::new("two");
        let c = |n: &str| Op::compute(n, ComputeClass::Other, 1, 1);
        let ar = |n: &str| {
            Op::collective(
                n,
                CollectiveKind::AllReduce,
                1 << 20,
                8,
                LinkClass::IntraNode,
            )
        };
        let bwd1 = b.add(c("bwd1"), &[]);
        let ar1 = b.add(ar("ar1"), &[bwd1]);
        let bwd0 = b.add(c("bwd0"), &[bwd1]);
        b.add(ar("ar0"), &[bwd0]);
        b.add(c("opt1"), &[ar1]);
        b.finish()
    }

    #[test]
    fn program_order_lowers_to_the_expected_commands() {
        let g = two_layers();
        let plan = StreamPlan::program_order(&g).unwrap();
        let c = lower(&g, &plan, &[3, 4, 3, 2, 1], &LowerConfig::default()).unwrap();
        let spin = |blocks| LaunchKind::Spin { blocks };
        let launch = |op, duration_ns, kind| Command::Launch {
            op: OpId(op),
            duration_ns,
            kind,
        };
        // Waits: bwd1 -> ar1 (event 0), bwd0 -> ar0 (event 1), ar1 -> opt1 (event 2).
        assert_eq!(
            plan.waits,
            vec![(OpId(1), OpId(4)), (OpId(0), OpId(1)), (OpId(2), OpId(3))]
        );
        assert_eq!(c.producers, vec![OpId(1), OpId(0), OpId(2)]);
        assert_eq!(
            c.streams[0].commands,
            vec![
                launch(0, 3, spin(132)),
                Command::Record { event: EventId(1) },
                launch(2, 3, spin(132)),
                Command::Record { event: EventId(2) },
                Command::Wait { event: EventId(0) },
                launch(4, 1, spin(132)),
            ]
        );
        assert_eq!(
            c.streams[1].commands,
            vec![
                Command::Wait { event: EventId(1) },
                launch(1, 4, spin(2)),
                Command::Record { event: EventId(0) },
                Command::Wait { event: EventId(2) },
                launch(3, 2, spin(2)),
            ]
        );
        let order = check(&g, &c).unwrap();
        assert_eq!(order.len(), 11);
    }

    #[test]
    fn copy_mode_sizes_copies_from_the_rate() {
        let g = two_layers();
        let plan = StreamPlan::program_order(&g).unwrap();
        let config = LowerConfig {
            comm: CommMode::Copy,
            copy_bytes_per_ns: 10.0,
            ..LowerConfig::default()
        };
        let c = lower(&g, &plan, &[3, 4, 3, 2, 1], &config).unwrap();
        assert!(c.streams[1].commands.contains(&Command::Launch {
            op: OpId(1),
            duration_ns: 4,
            kind: LaunchKind::Copy { bytes: 40 },
        }));
        assert_eq!(
            CommMode::parse(CommMode::Copy.as_str()),
            Some(CommMode::Copy)
        );
        let bad = LowerConfig {
            comm_blocks: 0,
            ..LowerConfig::default()
        };
        assert!(matches!(
            lower(&g, &plan, &[1; 5], &bad),
            Err(CudaError::Config { .. })
        ));
        assert!(matches!(
            lower(&g, &plan, &[1; 4], &config),
            Err(CudaError::Durations {
                durations: 4,
                ops: 5
            })
        ));
    }

    #[test]
    fn a_missing_wait_is_a_missing_dependency() {
        let g = two_layers();
        let plan = StreamPlan::program_order(&g).unwrap();
        let mut c = lower(&g, &plan, &[1; 5], &LowerConfig::default()).unwrap();
        // Drop opt1's wait for ar1.
        c.streams[0]
            .commands
            .retain(|x| *x != Command::Wait { event: EventId(0) });
        let e = check(&g, &c).unwrap_err();
        assert!(
            matches!(&e, CudaError::MissingDependency { producer, consumer } if producer == "ar1" && consumer == "opt1"),
            "{e}"
        );
    }

    #[test]
    fn malformed_commands_are_rejected() {
        let g = two_layers();
        let plan = StreamPlan::program_order(&g).unwrap();
        let c = lower(&g, &plan, &[1; 5], &LowerConfig::default()).unwrap();
        let mut twice = c.clone();
        twice.streams[0].commands.push(c.streams[0].commands[0]);
        assert!(check(&g, &twice)
            .unwrap_err()
            .to_string()
            .contains("`bwd1` is launched twice"));
        let mut never = c.clone();
        never.streams[1].commands.pop();
        assert!(check(&g, &never)
            .unwrap_err()
            .to_string()
            .contains("`ar0` is never launched"));
        let mut unknown = c;
        unknown.streams[0]
            .commands
            .insert(0, Command::Wait { event: EventId(9) });
        assert!(matches!(
            check(&g, &unknown),
            Err(CudaError::InvalidCommands { .. })
        ));
    }
}
