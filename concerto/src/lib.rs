//! # concerto
//!
//! Schedule distributed deep-learning training steps as exact optimisation problems: the
//! order of compute and collective ops on a GPU's streams is a resource-constrained project
//! scheduling problem (RCPSP), solved by exact backends, window by window for large graphs,
//! jointly with the decomposition of the computation around collectives (after Cheng et al.,
//! "Concerto", ASPLOS 2025).
//!
//! This crate is the one a user adds: it re-exports every Concerto crate under a short path
//! and the items used most at its root.
//!
//! | path | crate | what |
//! |---|---|---|
//! | [`rcpsp`] | `concerto-rcpsp` | the RCPSP model, the independent [`check`], lower bounds, heuristics, the [`Solver`] trait, the windowed odd-even driver, PSPLIB readers |
//! | [`backends`] | `concerto-backends` | exact solvers by cargo feature: `pumpkin` (CP), `microlp`, `highs`, `cbc` (MILP) |
//! | [`graph`] | `concerto-graph` | the training-step graph IR, hardware cost models, lowering, stream plans, the simulator |
//! | [`models`] | `concerto-models` | model builders (GPT, ViT, Wide ResNet, Evoformer) under parallel plans |
//! | [`decomp`] | `concerto-decomp` | critical collectives, SPMD split rules, decompositions, collective fusion |
//! | [`extract`] | `concerto-extract` | importers (XLA HLO text) |
//! | [`pipeline`] | `concerto-pipeline` | the optimisation pipeline: schedule, decomposition, joint mode, with typed reports |
//! | `testing` | (feature `testing`) | a conformance kit for [`Solver`]s: proptest strategies and one-call checks |
//!
//! ## Walkthrough
//!
//! ### 1. Solve a PSPLIB instance with two backends
//!
//! [`rcpsp::io`] reads PSPLIB `.sm` files (and Patterson `.rcp`, and Concerto's JSON);
//! [`registry()`] finds every backend by name. Every schedule goes through [`check`], which
//! shares no code with any solver. The instance is a small hand-made one in PSPLIB format
//! (`src/walkthrough.sm`: six jobs on two renewable resources): the MILP backend `microlp`
//! is pure Rust and fine on a handful of activities, slow on PSPLIB's j30.
//!
//! ```
//! use concerto::rcpsp::io::psplib;
//! use concerto::{check, lower_bound, registry, Limits, Status};
//! use std::time::Duration;
//!
//! let problem = psplib::parse(include_str!("walkthrough.sm"), "walkthrough.sm")?;
//! assert_eq!(problem.len(), 8); // six jobs and PSPLIB's dummy source and sink
//!
//! let registry = registry();
//! let limits = Limits::with_time_limit(Duration::from_secs(30)).seed(1);
//! let mut optima = Vec::new();
//! for name in ["pumpkin", "microlp"] {
//!     // A build without a backend's feature gets an error naming the feature to enable.
//!     let solver = match registry.get(name) {
//!         Ok(solver) => solver,
//!         Err(not_compiled) => {
//!             eprintln!("{not_compiled}");
//!             continue;
//!         }
//!     };
//!     let outcome = solver.solve(&problem, &limits)?;
//!     let schedule = outcome.schedule.as_ref().expect("a schedule");
//!     let makespan = check(&problem, schedule)?; // the independent check
//!     assert_eq!(outcome.status, Status::Optimal, "{name}");
//!     assert_eq!(Some(makespan), outcome.makespan);
//!     optima.push(makespan);
//! }
//! // Both prove the same optimum, above the critical path (7): the second resource carries
//! // 10 units of work at capacity 1.
//! assert!(optima.windows(2).all(|w| w[0] == w[1]));
//! assert!(optima.iter().all(|&m| m >= lower_bound(&problem).value && m >= 10));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ### 2. Write a stream plan and read it back
//!
//! A stream plan is what a GPU runs: the FIFO order of ops on each stream and the
//! cross-stream waits. Here a training step's graph is lowered to an RCPSP (one unit resource
//! per stream), solved exactly, turned into a plan, written as JSON and read back; the
//! simulator times the plan, and the plan read back times the same.
//!
//! ```
//! use concerto::graph::{lower, CollectiveKind, ComputeClass, DType, GemmShape, LinkClass};
//! use concerto::graph::{Graph, GraphBuilder, Hardware, Op, StreamPlan};
//! use concerto::{check, registry, simulate, Limits, Status};
//! use std::time::Duration;
//!
//! // Backward of two layers: each weight gradient is all-reduced over 8 GPUs of a node.
//! let mut b = GraphBuilder::new("two-layers");
//! let shape = GemmShape { b: 1, m: 4096, n: 4096, k: 4096 };
//! let ar = |name: &str| {
//!     Op::collective(name, CollectiveKind::AllReduce, 32 << 20, 8, LinkClass::IntraNode)
//! };
//! let adam = |name: &str| Op::compute(name, ComputeClass::Elementwise, 0, 256 << 20);
//! let g1 = b.add(Op::gemm("layer1.wgrad", shape, DType::Bf16), &[]);
//! let ar1 = b.add(ar("layer1.allreduce"), &[g1]);
//! let u1 = b.add(adam("layer1.adam"), &[ar1]);
//! let g0 = b.add(Op::gemm("layer0.wgrad", shape, DType::Bf16), &[g1]);
//! let ar0 = b.add(ar("layer0.allreduce"), &[g0]);
//! b.add(adam("layer0.adam"), &[ar0, u1]);
//! let graph: Graph = b.finish();
//!
//! // Durations from the H100 cost model, then an exact schedule of the lowered problem.
//! let hw = Hardware::h100();
//! let durations = hw.durations(&graph);
//! let lowered = lower::lower(&graph, &durations)?;
//! let solver = registry().get("pumpkin").or_else(|_| registry().get("sgs"))?;
//! let outcome = solver.solve(&lowered.problem, &Limits::with_time_limit(Duration::from_secs(10)))?;
//! assert_eq!(outcome.status, Status::Optimal);
//! let schedule = outcome.schedule.expect("an optimal schedule");
//! check(&lowered.problem, &schedule)?;
//! let starts: Vec<u64> = schedule.starts().iter().map(|&s| s as u64).collect();
//! let plan = StreamPlan::from_starts(&graph, &starts)?;
//!
//! // Write it, read it back: the same plan, the same simulated makespan.
//! let path = std::env::temp_dir().join(format!("concerto-plan-{}.json", std::process::id()));
//! std::fs::write(&path, plan.to_json(&graph))?;
//! let back = StreamPlan::from_json(&graph, &std::fs::read_to_string(&path)?)?;
//! std::fs::remove_file(&path)?;
//! assert_eq!(back, plan);
//! let timed = simulate(&graph, &back, &durations, hw.contention)?;
//! assert_eq!(timed.makespan, simulate(&graph, &plan, &durations, hw.contention)?.makespan);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ### 3. Optimise a training step: S, S+AD and joint
//!
//! The pipeline ([`pipeline`]) runs the whole optimisation on a graph: the baselines and the
//! exact windowed schedule (S), decompositions around the critical collectives then a schedule
//! of the rewritten graph (S+AD), and decompositions and order decided together (joint). Each
//! rewrite is kept only when it is not longer ([`pipeline::policy::keep`]), so
//! joint <= S+AD <= S. Solvers come in as trait objects: here from the registry.
//!
//! ```
//! use std::time::Duration;
//! use concerto::models::{self, GptConfig, Model, Parallel};
//! use concerto::graph::Hardware;
//! use concerto::pipeline::{evaluate, Config, Decompose, Pipeline, Silent, Solvers};
//! use concerto::{default_selector, registry};
//!
//! // Two layers of a GPT-3 6.7B-sized model, 8-way tensor parallel: its all-reduces are
//! // exposed, so decompositions have work to do.
//! let gpt = GptConfig { layers: 2, ..GptConfig::default() };
//! let graph = models::build(&Model::Gpt(gpt), &Parallel::new(1, 8, 1))?;
//!
//! let mut config = Config::new(Hardware::h100());
//! config.schedule.time_limit = Some(Duration::from_secs(5));
//! config.decompose = Decompose::Joint;
//! let solver = if cfg!(feature = "pumpkin") { "pumpkin" } else { "sgs" };
//! let mut solvers = Solvers::new(registry().get(solver)?.into())
//!     .with_selector(default_selector().into());
//! if let Ok(modal) = registry().modal(solver) {
//!     solvers = solvers.with_modal(modal.into());
//! } else {
//!     config.decompose = Decompose::Sequential; // `sgs` has no modal encoding
//! }
//! let report = Pipeline::new(config, solvers).run(&graph, &Silent)?;
//!
//! let s = report.s_ns();
//! let sad = report.decomposed.as_ref().expect("decompositions were asked for").makespan_ns;
//! let joint = report.joint.as_ref().map_or(sad, |j| j.makespan_ns);
//! assert!(joint <= sad && sad <= s);
//! // Concerto's plan is never behind a baseline, and every gap is against a proven bound of
//! // the graph it schedules (a rewrite changes the work, so the original's bound says
//! // nothing about S+AD or joint).
//! assert!(s <= report.schedule.best_baseline_ns());
//! assert!(report.schedule.lower_bound_ns <= s);
//! // The kept row's plan (and its graph, rewritten when decompositions were kept) simulates
//! // to the makespan reported.
//! let (kept_graph, kept) = report.result();
//! let replay = evaluate(kept_graph, &Hardware::h100(), &kept.plan)?;
//! assert_eq!(replay.makespan_ns, kept.makespan_ns());
//! println!("S {s} ns, S+AD {sad} ns, joint {joint} ns; kept {}", report.kept.as_str());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ### 4. Import an XLA HLO module and optimise it
//!
//! [`extract`] reads XLA's HLO text (what `XLA_FLAGS=--xla_dump_to=DIR
//! --xla_dump_hlo_as_text` writes for a JAX step); here a module from a string: a matmul
//! whose result is all-reduced over 8 GPUs and then used, and an independent matmul that
//! program order runs only after that use.
//!
//! ```
//! use std::time::Duration;
//! use concerto::extract::hlo::{self, ImportOptions};
//! use concerto::graph::Hardware;
//! use concerto::pipeline::{Config, Pipeline, Silent, Solvers};
//! use concerto::registry;
//!
//! let text = r#"HloModule step
//!
//! %sum (a: bf16[], b: bf16[]) -> bf16[] {
//!   %a = bf16[] parameter(0)
//!   %b = bf16[] parameter(1)
//!   ROOT %s = bf16[] add(%a, %b)
//! }
//!
//! ENTRY %main (x: bf16[8192,8192], w: bf16[8192,8192], v: bf16[8192,8192]) -> bf16[8192,8192] {
//!   %x = bf16[8192,8192]{1,0} parameter(0)
//!   %w = bf16[8192,8192]{1,0} parameter(1)
//!   %v = bf16[8192,8192]{1,0} parameter(2)
//!   %y = bf16[8192,8192]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
//!   %ar = bf16[8192,8192]{1,0} all-reduce(%y), replica_groups={{0,1,2,3,4,5,6,7}}, to_apply=%sum
//!   %u = bf16[8192,8192]{1,0} exponential(%ar)
//!   %z = bf16[8192,8192]{1,0} dot(%x, %v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
//!   ROOT %r = bf16[8192,8192]{1,0} add(%u, %z)
//! }
//! "#;
//! let module = hlo::parse(text)?;
//! let (graph, report) = hlo::lower(&module, &ImportOptions::default())?;
//! assert!(report.warnings.is_empty(), "{:?}", report.warnings);
//! assert_eq!(graph.collective_count(), 1);
//!
//! let mut config = Config::new(Hardware::h100());
//! config.schedule.time_limit = Some(Duration::from_secs(2));
//! let solver = if cfg!(feature = "pumpkin") { "pumpkin" } else { "sgs" };
//! let pipeline = Pipeline::new(config, Solvers::new(registry().get(solver)?.into()));
//! let r = pipeline.run(&graph, &Silent)?;
//! // Program order runs `u` (which waits for the all-reduce) before `z`; concerto runs `z`
//! // during the all-reduce, so the step is shorter.
//! let s = &r.schedule;
//! let program_order = s.get(concerto::pipeline::Scheduler::ProgramOrder).unwrap();
//! assert!(r.s_ns() < program_order.makespan_ns());
//! assert!(s.concerto().exposed_comm_ns < program_order.exposed_comm_ns);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Choosing backends
//!
//! Each backend is one cargo feature of this crate; a solver is then found by name at run
//! time ([`registry()`]: `get` for a solver, `modal` for joint mode; [`default_selector()`] for the
//! decomposition choice), and a build without it answers with an error
//! that names the feature to enable.
//!
//! | feature | backend | needs |
//! |---|---|---|
//! | `pumpkin` (default) | `pumpkin`: lazy-clause-generation CP, the fastest on RCPSP | pure Rust |
//! | `microlp` (default) | `microlp`: MILP, small windows | pure Rust |
//! | `highs` | `highs`: MILP with HiGHS | cmake and libclang (HiGHS is built from C++) |
//! | `cbc` | `cbc`: MILP with the system CBC, serialised by a global mutex | `coinor-libcbc-dev`, `pkg-config` |
//! | `serde` | `Serialize`/`Deserialize` on graphs, plans, schedules, outcomes, reports | |
//! | `testing` | the solver conformance kit `concerto::testing` (proptest) | |
//!
//! ```toml
//! [dependencies]
//! # CP only:
//! concerto = { version = "0.1", default-features = false, features = ["pumpkin"] }
//! # or every backend: features = ["pumpkin", "microlp", "highs", "cbc"]
//! ```
//!
//! The heuristic `sgs` ([`Heuristic`]) is always there: it needs no feature.
//!
//! ## Build settings for downstream crates
//!
//! The solvers are tens of times slower unoptimised, and at opt-level 0 the `cmake` crate
//! builds HiGHS in Debug. Tests and debug builds of a crate that uses Concerto should
//! optimise their dependencies, as this workspace does:
//!
//! ```toml
//! [profile.dev.package."*"]
//! opt-level = 2
//! ```
//!
//! (`"*"` covers every dependency, and not the crate's own code, which stays quick to
//! rebuild.)

mod configure;

pub use concerto_backends as backends;
pub use concerto_decomp as decomp;
pub use concerto_extract as extract;
pub use concerto_graph as graph;
pub use concerto_models as models;
pub use concerto_pipeline as pipeline;
pub use concerto_rcpsp as rcpsp;

pub use concerto_backends::{default_selector, modal_solver, registry};
pub use concerto_extract::read_graph;
pub use concerto_graph::{simulate, Graph, GraphBuilder, Hardware, Op, OpId, StreamPlan, Timeline};
pub use concerto_rcpsp::{
    check, lower_bound, read_problem, ActivityId, CancelFlag, Heuristic, Limits, ModalProblem,
    ModalSolution, ModalSolver, Outcome, Problem, ProblemBuilder, Registry, ResourceId, Schedule,
    SolveError, Solver, Status, StopReason, Time,
};
pub use configure::{configure, ConfigureError, Configured};

#[cfg(feature = "testing")]
pub mod testing;
