//! `concerto._engine`: Concerto's engine as a Python extension module (PyO3, abi3 for CPython
//! >= 3.10), re-exported by the `concerto` package (`python/concerto/__init__.py`).
//!
//! Every function releases the GIL while it works, and turns a Rust error into a Python
//! exception with the same message the command line prints (`ValueError` for bad input,
//! `RuntimeError` for a failing solve). The options and their defaults are the command line's
//! (`concerto optimize --help`), so that `concerto.optimize(path, work_limit=20000)` gives the
//! plan `concerto optimize path --work-limit 20000` gives, and `Report.to_json()` is that
//! command's `--json` output.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use concerto::extract::hlo::ImportOptions;
use concerto::extract::Imported;
use concerto::graph::{Graph, Hardware, StreamPlan};
use concerto::pipeline::{
    Config, MemoryBudget, Pipeline, Scheduler, Silent, Solvers,
};
use concerto::rcpsp::{Limits, Registry};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

/// The command line's default time limit without a work limit (seconds).
const DEFAULT_TIME_LIMIT_S: f64 = 10.0;

fn bad(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// An error with its causes, as the command line prints them (`error: ...: cause`).
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cause = c.source();
    }
    s
}

fn registry() -> Registry {
    concerto::backends::registry()
}

/// A graph argument: a path (HLO, compiled HLO, native JSON, profiler trace) or a dict in the
/// native JSON format.
enum GraphArg {
    Path(PathBuf),
    Json(String),
}

fn graph_arg(py: Python<'_>, graph: &Bound<'_, PyAny>) -> PyResult<GraphArg> {
    if let Ok(s) = graph.cast::<PyString>() {
        return Ok(GraphArg::Path(PathBuf::from(s.to_str()?)));
    }
    if graph.cast::<PyDict>().is_ok() {
        let json = py.import("json")?.call_method1("dumps", (graph,))?;
        return Ok(GraphArg::Json(json.extract()?));
    }
    if let Ok(p) = graph.extract::<PathBuf>() {
        return Ok(GraphArg::Path(p));
    }
    Err(PyValueError::new_err(
        "graph must be a path (str or os.PathLike: .hlo, .txt, .json, .json.gz) or a dict in \
         Concerto's native graph format",
    ))
}

fn read(arg: &GraphArg, options: &ImportOptions) -> Result<Imported, String> {
    let hlo = matches!(arg, GraphArg::Path(p) if concerto::extract::read::is_hlo(p));
    let loops = !options.trip_counts.is_empty() || options.unknown_trip_count.is_some();
    if !hlo && (loops || options.unbounded_dim_size.is_some()) {
        let what = if loops {
            "trip_counts and unknown_trip_count apply to the while loops"
        } else {
            "unbounded_dim_size applies to the shapes"
        };
        return Err(format!("{what} of an HLO module (.hlo, .txt), not to this graph"));
    }
    match arg {
        GraphArg::Path(p) => concerto::extract::read_imported(p, options).map_err(|e| chain(&e)),
        GraphArg::Json(text) => Graph::from_json(text)
            .map(Imported::from_graph)
            .map_err(|e| format!("reading graph (dict): {}", chain(&e))),
    }
}

/// The import options of the keyword arguments every entry point takes (as the CLI's
/// `--gpus-per-node`, `--step`, `--trip-count`, `--unknown-trip-count`,
/// `--unbounded-dim-size`).
fn import_options(
    gpus_per_node: u32,
    step: Option<u64>,
    trip_counts: Option<BTreeMap<String, u64>>,
    unknown_trip_count: Option<u64>,
    unbounded_dim_size: Option<u64>,
) -> PyResult<ImportOptions> {
    if gpus_per_node == 0 {
        return Err(bad("gpus_per_node must be at least 1"));
    }
    Ok(ImportOptions {
        gpus_per_node,
        trace_step: step,
        trip_counts: trip_counts.unwrap_or_default(),
        unknown_trip_count,
        unbounded_dim_size,
        ..ImportOptions::default()
    })
}

fn hardware(name: &str, gpus_per_node: u32, contention: Option<f64>) -> Result<Hardware, String> {
    let hw = Hardware::load(name)
        .and_then(|h| h.with_gpus_per_node(gpus_per_node))
        .map_err(|e| e.to_string())?;
    match contention {
        Some(c) => hw.with_contention(c).map_err(|e| e.to_string()),
        None => Ok(hw),
    }
}

fn seconds(name: &str, s: Option<f64>) -> Result<Option<Duration>, String> {
    match s {
        None => Ok(None),
        Some(x) if x.is_finite() && x > 0.0 => Ok(Some(Duration::from_secs_f64(x))),
        Some(x) => Err(format!(
            "{name} must be a positive number of seconds, got {x}"
        )),
    }
}

fn memory_budget(budget: Option<&Bound<'_, PyAny>>) -> PyResult<Option<MemoryBudget>> {
    let Some(b) = budget else { return Ok(None) };
    if b.is_none() {
        return Ok(None);
    }
    if let Ok(n) = b.extract::<u64>() {
        return Ok(Some(MemoryBudget::Bytes(n)));
    }
    let text: String = b
        .extract()
        .map_err(|_| bad("memory_budget must be bytes (int) or a string (`72GiB`, `90%`)"))?;
    MemoryBudget::parse(&text).map(Some).map_err(bad)
}

/// The result of [`optimize`]: the command line's `--json` report, concerto's plan and the
/// numbers a caller reads most.
#[pyclass(module = "concerto", frozen)]
struct Report {
    json: String,
    plan: String,
    /// The simulated makespan of concerto's plan (ns).
    #[pyo3(get)]
    optimized_ns: u64,
    /// The program order's (the recorded order for a trace, the module's order for HLO).
    #[pyo3(get)]
    program_order_ns: u64,
    /// The proven lower bound (ns).
    #[pyo3(get)]
    lower_bound_ns: u64,
    /// Which bound binds.
    #[pyo3(get)]
    bound_kind: String,
    /// Per scheduler: (name, simulated makespan ns, exposed communication ns, peak bytes).
    #[pyo3(get)]
    rows: Vec<(String, u64, u64, u64)>,
}

#[pymethods]
impl Report {
    /// Exactly `concerto optimize --json`'s output for the same call.
    fn to_json(&self) -> String {
        self.json.clone()
    }

    /// Concerto's plan in the plan file format (`concerto optimize --plan`), as a dict.
    #[getter]
    fn plan<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("json")?
            .call_method1("loads", (self.plan.as_str(),))
    }

    /// The plan file's text.
    fn plan_json(&self) -> String {
        self.plan.clone()
    }

    fn __repr__(&self) -> String {
        format!(
            "Report(optimized_ns={}, program_order_ns={}, lower_bound_ns={}, bound_kind='{}')",
            self.optimized_ns, self.program_order_ns, self.lower_bound_ns, self.bound_kind
        )
    }
}

/// Everything [`optimize`] does without the GIL.
#[allow(clippy::too_many_arguments)]
fn optimize_inner(
    arg: GraphArg,
    hardware_name: &str,
    options: ImportOptions,
    contention: Option<f64>,
    time_limit: Option<f64>,
    work_limit: Option<u64>,
    memory_budget: Option<MemoryBudget>,
    seed: u64,
    threads: usize,
    solver: &str,
    profile: Option<(PathBuf, bool)>,
) -> Result<Report, (bool, String)> {
    let input_err = |e: String| (true, e);
    let started = Instant::now();
    let gpus_per_node = options.gpus_per_node;
    if threads == 0 {
        return Err(input_err("threads must be at least 1".into()));
    }
    if work_limit == Some(0) {
        return Err(input_err("work_limit must be at least 1".into()));
    }
    let mut input = read(&arg, &options).map_err(input_err)?;
    let hw = hardware(hardware_name, gpus_per_node, contention).map_err(input_err)?;
    // Profile-guided costs, as `concerto optimize MODULE --profile TRACE`.
    let profiled = match (profile, &arg) {
        (None, _) => None,
        (Some((trace, strict)), GraphArg::Path(module)) => {
            let (g, r) = concerto::extract::profile::apply_imported(
                &input, module, &trace, &hw, strict,
            )
            .map_err(input_err)?;
            input.graph = g;
            Some(r)
        }
        (Some(_), GraphArg::Json(_)) => {
            return Err(input_err(
                "profile= costs the ops of an HLO module given by its path, not a graph dict"
                    .into(),
            ))
        }
    };
    let mut config = Config::new(hw);
    config.select = concerto::pipeline::Families::All.select_config(None);
    config.schedule.time_limit = match (time_limit, work_limit) {
        (Some(_), _) => seconds("time_limit", time_limit).map_err(input_err)?,
        (None, Some(_)) => None,
        (None, None) => Some(Duration::from_secs_f64(DEFAULT_TIME_LIMIT_S)),
    };
    config.schedule.work_limit = work_limit;
    config.schedule.seed = seed;
    config.schedule.threads = threads;
    config.memory_budget = memory_budget;
    config.started = Some(started);
    let solver: Arc<dyn concerto::rcpsp::Solver> = registry()
        .get(solver)
        .map_err(|e| input_err(e.to_string()))?
        .into();
    let solvers = Solvers::new(solver).with_selector(concerto::backends::default_selector().into());
    let c = concerto::configure(input, Pipeline::new(config, solvers), contention)
        .map_err(|e| input_err(e.to_string()))?;
    let r = c
        .pipeline
        .run(&c.input.graph, &Silent)
        .map_err(|e| (false, format!("optimizing: {}", chain(&e))))?;
    let summary = r.summary();
    let mut value = serde_json::to_value(&summary).map_err(|e| (false, e.to_string()))?;
    if let (Some(p), Some(map)) = (&profiled, value.as_object_mut()) {
        let p = serde_json::to_value(p).map_err(|e| (false, e.to_string()))?;
        map.insert("profile".into(), p);
    }
    let json = value.to_string();
    let s = &r.schedule;
    let (kept_graph, kept) = r.result();
    let ns = |k: Scheduler| s.get(k).map_or(0, |x| x.makespan_ns());
    Ok(Report {
        json,
        plan: kept.plan.to_json(kept_graph),
        optimized_ns: kept.makespan_ns(),
        program_order_ns: ns(Scheduler::ProgramOrder),
        lower_bound_ns: s.lower_bound_ns,
        bound_kind: s.bound_kind.to_string(),
        rows: s
            .results
            .iter()
            .map(|x| {
                (
                    x.scheduler.as_str().to_string(),
                    x.makespan_ns(),
                    x.exposed_comm_ns,
                    x.peak_memory_bytes,
                )
            })
            .collect(),
    })
}

fn raise((input, msg): (bool, String)) -> PyErr {
    if input {
        PyValueError::new_err(msg)
    } else {
        PyRuntimeError::new_err(msg)
    }
}

/// Concerto's plan for a graph: `concerto optimize` in process (see the module docs).
#[pyfunction]
#[pyo3(signature = (graph, hardware="h100", time_limit=None, work_limit=None, memory_budget=None,
                    contention=None, seed=0, threads=1, solver="pumpkin", gpus_per_node=8,
                    step=None, profile=None, profile_strict=false, trip_counts=None,
                    unknown_trip_count=None, unbounded_dim_size=None))]
#[allow(clippy::too_many_arguments)]
fn optimize(
    py: Python<'_>,
    graph: &Bound<'_, PyAny>,
    hardware: &str,
    time_limit: Option<f64>,
    work_limit: Option<u64>,
    memory_budget: Option<&Bound<'_, PyAny>>,
    contention: Option<f64>,
    seed: u64,
    threads: usize,
    solver: &str,
    gpus_per_node: u32,
    step: Option<u64>,
    profile: Option<PathBuf>,
    profile_strict: bool,
    trip_counts: Option<BTreeMap<String, u64>>,
    unknown_trip_count: Option<u64>,
    unbounded_dim_size: Option<u64>,
) -> PyResult<Report> {
    let arg = graph_arg(py, graph)?;
    let options = import_options(
        gpus_per_node,
        step,
        trip_counts,
        unknown_trip_count,
        unbounded_dim_size,
    )?;
    if profile.is_none() && profile_strict {
        return Err(bad("profile_strict needs profile="));
    }
    let profile = profile.map(|p| (p, profile_strict));
    let budget = self::memory_budget(memory_budget)?;
    let (hardware, solver) = (hardware.to_string(), solver.to_string());
    py.detach(move || {
        optimize_inner(
            arg,
            &hardware,
            options,
            contention,
            time_limit,
            work_limit,
            budget,
            seed,
            threads,
            &solver,
            profile,
        )
    })
    .map_err(raise)
}

/// A stream plan of a graph simulated: `concerto simulate GRAPH --plan PLAN --json` as a dict
/// (`plan`: the plan file's text, or a dict of it).
#[pyfunction]
#[pyo3(signature = (graph, plan, hardware="h100", contention=None, gpus_per_node=8, step=None,
                    trip_counts=None, unknown_trip_count=None, unbounded_dim_size=None))]
#[allow(clippy::too_many_arguments)]
fn simulate<'py>(
    py: Python<'py>,
    graph: &Bound<'py, PyAny>,
    plan: &Bound<'py, PyAny>,
    hardware: &str,
    contention: Option<f64>,
    gpus_per_node: u32,
    step: Option<u64>,
    trip_counts: Option<BTreeMap<String, u64>>,
    unknown_trip_count: Option<u64>,
    unbounded_dim_size: Option<u64>,
) -> PyResult<Bound<'py, PyAny>> {
    let arg = graph_arg(py, graph)?;
    let options = import_options(
        gpus_per_node,
        step,
        trip_counts,
        unknown_trip_count,
        unbounded_dim_size,
    )?;
    let plan_text: String = if plan.cast::<PyDict>().is_ok() {
        py.import("json")?
            .call_method1("dumps", (plan,))?
            .extract()?
    } else {
        plan.extract()
            .map_err(|_| bad("plan must be the plan file's text or a dict of it"))?
    };
    let hardware = hardware.to_string();
    let out = py
        .detach(move || -> Result<String, String> {
            let input = read(&arg, &options)?;
            let hw = self::hardware(&hardware, options.gpus_per_node, contention)?;
            let hw = input
                .costed_on(hw, contention)
                .map_err(|e| e.to_string())?;
            let plan = StreamPlan::from_json(&input.graph, &plan_text)
                .map_err(|e| format!("reading plan: {e}"))?;
            let e = concerto::pipeline::evaluate(&input.graph, &hw, &plan)
                .map_err(|e| format!("simulating: {}", chain(&e)))?;
            Ok(serde_json::json!({
                "graph": input.graph.name(),
                "hardware": hw.name,
                "contention": hw.contention,
                "ops": input.graph.len(),
                "makespan_ns": e.makespan_ns,
                "exposed_comm_ns": e.exposed_comm_ns,
                "peak_memory_bytes": e.peak_memory_bytes,
                "lower_bound_ns": e.lower_bound_ns,
                "bound_kind": e.bound_kind.as_str(),
            })
            .to_string())
        })
        .map_err(PyValueError::new_err)?;
    py.import("json")?.call_method1("loads", (out,))
}

/// An RCPSP instance solved: `concerto solve FILE --json` as a dict, with the start times
/// (`starts`, by activity name) of the best schedule.
#[pyfunction]
#[pyo3(signature = (instance, solver="pumpkin", time_limit=None, work_limit=None, seed=0, threads=1))]
fn solve<'py>(
    py: Python<'py>,
    instance: PathBuf,
    solver: &str,
    time_limit: Option<f64>,
    work_limit: Option<u64>,
    seed: u64,
    threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let solver = solver.to_string();
    let out = py.detach(move || -> Result<String, (bool, String)> {
        let problem = concerto::rcpsp::read_problem(&instance).map_err(|e| (true, chain(&e)))?;
        let s = registry().get(&solver).map_err(|e| (true, e.to_string()))?;
        if threads == 0 {
            return Err((true, "threads must be at least 1".into()));
        }
        let limits = Limits {
            time_limit: seconds("time_limit", time_limit).map_err(|e| (true, e))?,
            work_limit,
            seed,
            threads,
            ..Limits::default()
        };
        let name = instance.display().to_string();
        let (outcome, report) = concerto::pipeline::solve::solve(&problem, &name, s, None, &limits)
            .map_err(|e| (false, format!("solving {name}: {}", chain(&e))))?;
        let mut v = serde_json::to_value(&report).map_err(|e| (false, e.to_string()))?;
        if let Some(schedule) = &outcome.schedule {
            let starts: serde_json::Map<String, serde_json::Value> = problem
                .ids()
                .map(|a| {
                    (
                        problem.activity(a).name.clone(),
                        serde_json::json!(schedule.start(a)),
                    )
                })
                .collect();
            v["starts"] = serde_json::Value::Object(starts);
        }
        Ok(v.to_string())
    });
    let out = out.map_err(raise)?;
    py.import("json")?.call_method1("loads", (out,))
}

/// A graph read from a file (HLO, compiled HLO, native JSON, profiler trace) and returned in
/// the native JSON format as a dict; a profiler trace's step report is under `"trace"`.
#[pyfunction]
#[pyo3(signature = (path, gpus_per_node=8, step=None, trip_counts=None, unknown_trip_count=None,
                    unbounded_dim_size=None))]
fn import_graph<'py>(
    py: Python<'py>,
    path: PathBuf,
    gpus_per_node: u32,
    step: Option<u64>,
    trip_counts: Option<BTreeMap<String, u64>>,
    unknown_trip_count: Option<u64>,
    unbounded_dim_size: Option<u64>,
) -> PyResult<Bound<'py, PyAny>> {
    let options = import_options(
        gpus_per_node,
        step,
        trip_counts,
        unknown_trip_count,
        unbounded_dim_size,
    )?;
    let out = py
        .detach(move || -> Result<String, String> {
            let input = read(&GraphArg::Path(path), &options)?;
            let mut v: serde_json::Value =
                serde_json::from_str(&input.graph.to_json()).map_err(|e| e.to_string())?;
            if let Some(t) = &input.trace {
                v["trace"] = serde_json::to_value(t).map_err(|e| e.to_string())?;
            }
            v["warnings"] = serde_json::json!(input.warnings);
            Ok(v.to_string())
        })
        .map_err(PyValueError::new_err)?;
    py.import("json")?.call_method1("loads", (out,))
}

/// The solvers this build knows: (name, description, compiled in).
#[pyfunction]
fn solvers() -> Vec<(String, String, bool)> {
    registry()
        .list()
        .into_iter()
        .map(|i| {
            (
                i.name.to_string(),
                i.description.to_string(),
                i.missing_feature.is_none(),
            )
        })
        .collect()
}

/// The extension module.
#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Report>()?;
    m.add_function(wrap_pyfunction!(optimize, m)?)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(solve, m)?)?;
    m.add_function(wrap_pyfunction!(import_graph, m)?)?;
    m.add_function(wrap_pyfunction!(solvers, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
