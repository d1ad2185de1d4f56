//! Running lowered commands on a GPU, through the CUDA driver API loaded at run time.
//!
//! [`Executor::new`] loads `libcuda` with `dlopen` (cudarc's dynamic loading), so a program
//! built with this crate runs on machines without CUDA and gets [`CudaError::NoDevice`] there.
//! It retains the device's primary context, builds the spin kernel (NVRTC when `libnvrtc`
//! loads, else the same kernel's embedded PTX) and, in [`CommMode::Copy`], calibrates the
//! host-to-device copy rate. See the crate docs for what a run does and measures.
//!
//! The only module of the crate with `unsafe` code: kernel launches, raw asynchronous copies
//! and the checks that the driver libraries exist. Each block says why it is sound.

#![allow(unsafe_code)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{
    result, sys, CudaContext, CudaEvent, CudaFunction, CudaSlice, CudaStream, DevicePtr,
    DriverError, LaunchConfig, PinnedHostSlice, PushKernelArg,
};
use cudarc::nvrtc;

use concerto_graph::{Graph, StreamPlan, Timeline};

use crate::error::CudaError;
use crate::lower::{
    check, lower, CommMode, Command, Commands, Issue, LaunchKind, LowerConfig, DEFAULT_COMM_BLOCKS,
    DEFAULT_COPY_BYTES_PER_NS,
};
use crate::{Execute, Measured};

/// The spin kernel: every block reads the global nanosecond timer when it starts and spins
/// until `duration_ns` have passed, so its duration needs no clock calibration.
pub const SPIN_KERNEL_SOURCE: &str = r#"
extern "C" __global__ void concerto_spin(unsigned long long duration_ns) {
    unsigned long long start;
    unsigned long long now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < duration_ns);
}
"#;

/// [`SPIN_KERNEL_SOURCE`] written in PTX (ISA 6.0, sm_50 and later), for drivers without
/// NVRTC beside them; the driver compiles it for the GPU when the module loads.
const SPIN_KERNEL_PTX: &str = "\
.version 6.0
.target sm_50
.address_size 64

.visible .entry concerto_spin(
\t.param .u64 concerto_spin_param_0
)
{
\t.reg .pred \t%p<2>;
\t.reg .b64 \t%rd<5>;

\tld.param.u64 \t%rd1, [concerto_spin_param_0];
\tmov.u64 \t%rd2, %globaltimer;
$L__spin:
\tmov.u64 \t%rd3, %globaltimer;
\tsub.s64 \t%rd4, %rd3, %rd2;
\tsetp.lt.u64 \t%p1, %rd4, %rd1;
\t@%p1 bra \t$L__spin;
\tret;
}
";

const SPIN_KERNEL_NAME: &str = "concerto_spin";

/// Largest single copy in [`CommMode::Copy`]; longer copies are issued as several.
const COPY_CHUNK_BYTES: usize = 256 << 20;
/// Bytes of each copy of the calibration.
const CALIBRATION_BYTES: usize = 64 << 20;
/// Copies timed by the calibration.
const CALIBRATION_COPIES: usize = 4;

/// Options of an [`Executor`].
#[derive(Clone, Debug, PartialEq)]
pub struct ExecutorConfig {
    /// How collectives run.
    pub comm: CommMode,
    /// Blocks of a compute op's spin kernel; `None`: the GPU's SM count.
    pub compute_blocks: Option<u32>,
    /// Blocks of a collective's spin kernel in [`CommMode::Spin`].
    pub comm_blocks: u32,
    /// Threads per block of the spin kernel.
    pub threads_per_block: u32,
    /// Measured runs after the warm-up run (at least 1); the run of median makespan is kept.
    pub repeats: usize,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        Self {
            comm: CommMode::Spin,
            compute_blocks: None,
            comm_blocks: DEFAULT_COMM_BLOCKS,
            threads_per_block: 32,
            repeats: 5,
        }
    }
}

/// Runs stream plans on one GPU (see the module and crate docs).
pub struct Executor {
    ctx: Arc<CudaContext>,
    spin: CudaFunction,
    kernel_origin: &'static str,
    name: String,
    sm_count: u32,
    config: ExecutorConfig,
    copy_bytes_per_ns: Option<f64>,
    /// One non-blocking stream per plan stream, created when first needed.
    streams: Vec<Arc<CudaStream>>,
    /// Copy mode: the pinned source and one device destination per stream.
    copy: Option<CopyBuffers>,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("device", &self.ctx.ordinal())
            .field("name", &self.name)
            .field("sm_count", &self.sm_count)
            .field("kernel", &self.kernel_origin)
            .field("config", &self.config)
            .field("copy_bytes_per_ns", &self.copy_bytes_per_ns)
            .finish_non_exhaustive()
    }
}

/// Buffers of [`CommMode::Copy`].
struct CopyBuffers {
    bytes: usize,
    source: PinnedHostSlice<u8>,
    destinations: Vec<CudaSlice<u8>>,
}

/// The events of one plan's runs: reused by every run (a record replaces the previous one).
struct RunEvents {
    /// Recorded on the first stream when the gate kernel ends: time zero.
    start: CudaEvent,
    /// Before and after each op's launch, by op id (timing events).
    begin: Vec<CudaEvent>,
    end: Vec<CudaEvent>,
    /// The commands' events (no timing).
    sync: Vec<CudaEvent>,
}

/// One run's op times and whether the host was still enqueueing when the GPU started.
struct RunTimes {
    start: Vec<u64>,
    end: Vec<u64>,
    host_bound: bool,
    enqueue: Duration,
}

fn driver(call: &'static str) -> impl Fn(DriverError) -> CudaError {
    move |e| CudaError::Driver {
        call,
        message: e.to_string(),
    }
}

/// Runs `f`, turning a panic inside cudarc (a missing library or symbol) into an error.
fn guard<T>(what: &'static str, f: impl FnOnce() -> Result<T, CudaError>) -> Result<T, CudaError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic without a message".to_string());
            Err(CudaError::Driver {
                call: what,
                message: format!("panicked: {message}"),
            })
        }
    }
}

impl Executor {
    /// The executor of GPU `device` with the default options ([`ExecutorConfig::default`]).
    /// Errors with [`CudaError::NoDevice`] when the driver library cannot be loaded or the
    /// GPU does not exist; never panics.
    pub fn new(device: usize) -> Result<Executor, CudaError> {
        Executor::with_config(device, ExecutorConfig::default())
    }

    /// The executor of GPU `device` with `config` (see [`Executor::new`]). In
    /// [`CommMode::Copy`], it calibrates the copy rate.
    pub fn with_config(device: usize, config: ExecutorConfig) -> Result<Executor, CudaError> {
        if config.repeats == 0 || config.threads_per_block == 0 || config.comm_blocks == 0 {
            return Err(CudaError::Config {
                reason: "repeats, threads per block and collective blocks must be at least 1"
                    .into(),
            });
        }
        if config.compute_blocks == Some(0) {
            return Err(CudaError::Config {
                reason: "compute ops need at least one block".into(),
            });
        }
        // SAFETY: `is_culib_present` only tries to dlopen the driver library under its usual
        // names and closes it again; it has no precondition.
        if !unsafe { sys::is_culib_present() } {
            return Err(CudaError::NoDevice {
                reason: "the CUDA driver library (libcuda.so) cannot be loaded; is an NVIDIA \
                         driver installed and on the library path?"
                    .into(),
            });
        }
        let no_device = |reason: String| CudaError::NoDevice { reason };
        let count = match catch_unwind(CudaContext::device_count) {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => return Err(no_device(format!("cuInit/cuDeviceGetCount: {e}"))),
            Err(_) => {
                return Err(no_device(
                    "the CUDA driver library lacks an entry point (cuInit)".into(),
                ))
            }
        };
        if count <= 0 {
            return Err(no_device("the CUDA driver sees no GPU".into()));
        }
        if device >= count as usize {
            return Err(no_device(format!(
                "there is no GPU {device}: the driver sees {count}"
            )));
        }
        guard("opening the device", || Executor::open(device, config))
    }

    fn open(device: usize, config: ExecutorConfig) -> Result<Executor, CudaError> {
        let ctx = CudaContext::new(device).map_err(driver("cuDevicePrimaryCtxRetain"))?;
        // SAFETY: turning cudarc's automatic cross-stream synchronisation of buffers off is
        // sound as long as no buffer is used on two streams without our own ordering: the
        // executor's only buffers are the copy buffers, each written on one stream only, read
        // (the pinned source) by copies only, and freed after a context synchronisation.
        unsafe { ctx.disable_event_tracking() };
        let name = ctx.name().map_err(driver("cuDeviceGetName"))?;
        let sms = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(driver("cuDeviceGetAttribute"))?;
        let (spin, kernel_origin) = load_spin(&ctx)?;
        let mut executor = Executor {
            ctx,
            spin,
            kernel_origin,
            name,
            sm_count: sms.max(1) as u32,
            config,
            copy_bytes_per_ns: None,
            streams: Vec::new(),
            copy: None,
        };
        if executor.config.comm == CommMode::Copy {
            executor.copy_bytes_per_ns = Some(executor.calibrate_copy()?);
        }
        Ok(executor)
    }

    /// The GPU's name (e.g. `NVIDIA H100 80GB HBM3`).
    pub fn device_name(&self) -> &str {
        &self.name
    }

    /// The GPU's streaming multiprocessors.
    pub fn sm_count(&self) -> u32 {
        self.sm_count
    }

    /// Where the spin kernel came from: `nvrtc` or `embedded ptx`.
    pub fn kernel_origin(&self) -> &'static str {
        self.kernel_origin
    }

    /// The options.
    pub fn config(&self) -> &ExecutorConfig {
        &self.config
    }

    /// The calibrated host-to-device copy rate (bytes per ns), in [`CommMode::Copy`].
    pub fn copy_bytes_per_ns(&self) -> Option<f64> {
        self.copy_bytes_per_ns
    }

    /// The lowering options this executor runs with: its SM count (or the configured
    /// blocks), its collective blocks, mode and calibrated copy rate.
    pub fn lower_config(&self) -> LowerConfig {
        LowerConfig {
            comm: self.config.comm,
            compute_blocks: self.config.compute_blocks.unwrap_or(self.sm_count),
            comm_blocks: self.config.comm_blocks,
            copy_bytes_per_ns: self.copy_bytes_per_ns.unwrap_or(DEFAULT_COPY_BYTES_PER_NS),
        }
    }

    /// Lowers `plan` with [`Executor::lower_config`], checks the commands and runs them
    /// (see [`Executor::execute`]).
    pub fn run(
        &mut self,
        graph: &Graph,
        plan: &StreamPlan,
        durations: &[u64],
    ) -> Result<Measured, CudaError> {
        let commands = lower(graph, plan, durations, &self.lower_config())?;
        self.execute(graph, &commands)
    }

    /// Checks `commands` ([`check`]), then runs them once to warm up and
    /// [`ExecutorConfig::repeats`] times measured, and returns the run of median makespan.
    pub fn execute(&mut self, graph: &Graph, commands: &Commands) -> Result<Measured, CudaError> {
        let order = check(graph, commands)?;
        guard("running the plan", || {
            self.execute_checked(graph, commands, &order)
        })
    }

    fn execute_checked(
        &mut self,
        graph: &Graph,
        commands: &Commands,
        order: &[Issue],
    ) -> Result<Measured, CudaError> {
        let n = graph.len();
        self.ensure_streams(commands.streams.len().max(1))?;
        let copy_bytes = commands
            .streams
            .iter()
            .flat_map(|s| &s.commands)
            .filter_map(|c| match c {
                Command::Launch {
                    kind: LaunchKind::Copy { bytes },
                    ..
                } => Some(*bytes),
                _ => None,
            })
            .max();
        if let Some(bytes) = copy_bytes {
            let bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
            self.ensure_copy_buffers(commands.streams.len(), bytes.min(COPY_CHUNK_BYTES))?;
        }
        let timing = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let new_events = |count: usize, flags| {
            (0..count)
                .map(|_| self.ctx.new_event(flags))
                .collect::<Result<Vec<_>, _>>()
                .map_err(driver("cuEventCreate"))
        };
        let events = RunEvents {
            start: self
                .ctx
                .new_event(timing)
                .map_err(driver("cuEventCreate"))?,
            begin: new_events(n, timing)?,
            end: new_events(n, timing)?,
            sync: new_events(commands.events(), None)?,
        };
        // Warm-up: a gate long enough for the host to enqueue a few µs per launch.
        let launches = commands.launches() as u64;
        let warm_gate = 1_000_000 + 10_000 * launches.min(100_000);
        let warm = self.run_once(commands, order, &events, warm_gate, n)?;
        // Measured runs: a gate 1.5 x the warm-up's enqueue time (at least 1 ms), so that
        // every command is enqueued before the first op starts.
        let gate = (warm.enqueue.as_nanos() as u64)
            .saturating_mul(3)
            .div_ceil(2)
            .max(1_000_000);
        let mut runs = Vec::with_capacity(self.config.repeats);
        for _ in 0..self.config.repeats {
            runs.push(self.run_once(commands, order, &events, gate, n)?);
        }
        let makespans: Vec<u64> = runs
            .iter()
            .map(|r| r.end.iter().copied().max().unwrap_or(0))
            .collect();
        let mut by_makespan: Vec<usize> = (0..runs.len()).collect();
        by_makespan.sort_by_key(|&i| (makespans[i], i));
        let median = by_makespan[(runs.len() - 1) / 2];
        let host_bound = runs.iter().any(|r| r.host_bound);
        let kept = runs.swap_remove(median);
        let mut stream = vec![0usize; n];
        for (s, sc) in commands.streams.iter().enumerate() {
            for op in sc.ops() {
                stream[op.0] = s;
            }
        }
        Ok(Measured {
            timeline: Timeline {
                makespan: makespans[median],
                start: kept.start,
                end: kept.end,
                stream,
                streams: commands.stream_names(),
            },
            makespans_ns: makespans,
            host_bound,
        })
    }

    /// One run: the gate kernel and the start event on the first stream, every other stream
    /// waiting for the start, then every command in issue order; then synchronise and read
    /// each op's begin and end events relative to the start.
    fn run_once(
        &self,
        commands: &Commands,
        order: &[Issue],
        events: &RunEvents,
        gate_ns: u64,
        n: usize,
    ) -> Result<RunTimes, CudaError> {
        let first = &self.streams[0];
        self.launch_spin(first, 1, gate_ns)?;
        let record = driver("cuEventRecord");
        let wait = driver("cuStreamWaitEvent");
        events.start.record(first).map_err(&record)?;
        for s in &self.streams[1..commands.streams.len().max(1)] {
            s.wait(&events.start).map_err(&wait)?;
        }
        let began = Instant::now();
        for issue in order {
            let stream = &self.streams[issue.stream];
            match commands.streams[issue.stream].commands[issue.index] {
                Command::Wait { event } => stream.wait(&events.sync[event.0]).map_err(&wait)?,
                Command::Record { event } => {
                    events.sync[event.0].record(stream).map_err(&record)?
                }
                Command::Launch {
                    op,
                    duration_ns,
                    kind,
                } => {
                    events.begin[op.0].record(stream).map_err(&record)?;
                    match kind {
                        LaunchKind::Spin { blocks } => {
                            self.launch_spin(stream, blocks, duration_ns)?
                        }
                        LaunchKind::Copy { bytes } => {
                            self.launch_copy(stream, issue.stream, bytes)?
                        }
                    }
                    events.end[op.0].record(stream).map_err(&record)?;
                }
            }
        }
        let enqueue = began.elapsed();
        // The start event completes when the gate ends: if it already has, the GPU may have
        // waited for the host.
        let host_bound = events
            .start
            .try_is_complete()
            .map_err(driver("cuEventQuery"))?;
        for s in &self.streams[..commands.streams.len().max(1)] {
            s.synchronize().map_err(driver("cuStreamSynchronize"))?;
        }
        let elapsed = driver("cuEventElapsedTime");
        let ns = |e: &CudaEvent| -> Result<u64, CudaError> {
            let ms = events.start.elapsed_ms(e).map_err(&elapsed)?;
            Ok((f64::from(ms) * 1e6).round().max(0.0) as u64)
        };
        let mut start = vec![0u64; n];
        let mut end = vec![0u64; n];
        for o in 0..n {
            start[o] = ns(&events.begin[o])?;
            end[o] = ns(&events.end[o])?.max(start[o]);
        }
        Ok(RunTimes {
            start,
            end,
            host_bound,
            enqueue,
        })
    }

    fn launch_spin(
        &self,
        stream: &CudaStream,
        blocks: u32,
        duration_ns: u64,
    ) -> Result<(), CudaError> {
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (self.config.threads_per_block, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = stream.launch_builder(&self.spin);
        launch.arg(&duration_ns);
        // SAFETY: `concerto_spin` takes exactly one `unsigned long long` parameter, the `u64`
        // pushed above, and reads or writes no memory; the grid and block sizes are at least 1
        // (checked by the configuration) and 32 threads per block fit every GPU.
        unsafe { launch.launch(cfg) }
            .map(drop)
            .map_err(driver("cuLaunchKernel"))
    }

    fn launch_copy(&self, stream: &CudaStream, s: usize, bytes: u64) -> Result<(), CudaError> {
        let buffers = self.copy.as_ref().ok_or_else(|| CudaError::Config {
            reason: "copy buffers were not allocated".into(),
        })?;
        let source = buffers
            .source
            .as_slice()
            .map_err(driver("cuEventSynchronize"))?;
        let (destination, _no_sync) = buffers.destinations[s].device_ptr(stream);
        let mut left = usize::try_from(bytes).unwrap_or(usize::MAX);
        while left > 0 {
            let chunk = left.min(buffers.bytes);
            // SAFETY: `source[..chunk]` is pinned host memory of at least `chunk` bytes, and
            // `destination` a device allocation of `buffers.bytes >= chunk` bytes; both live
            // until the executor is dropped, after the context has synchronised (buffers are
            // only replaced after a synchronisation). Only this stream writes `destination`;
            // nothing writes `source` after its allocation.
            unsafe { result::memcpy_htod_async(destination, &source[..chunk], stream.cu_stream()) }
                .map_err(driver("cuMemcpyHtoDAsync"))?;
            left -= chunk;
        }
        Ok(())
    }

    fn ensure_streams(&mut self, count: usize) -> Result<(), CudaError> {
        while self.streams.len() < count {
            let s = self.ctx.new_stream().map_err(driver("cuStreamCreate"))?;
            self.streams.push(s);
        }
        Ok(())
    }

    /// Pinned source and per-stream device destinations of at least `bytes` bytes each.
    fn ensure_copy_buffers(&mut self, streams: usize, bytes: usize) -> Result<(), CudaError> {
        let bytes = bytes.max(1);
        self.ensure_streams(streams.max(1))?;
        let fits = self
            .copy
            .as_ref()
            .is_some_and(|c| c.bytes >= bytes && c.destinations.len() >= streams);
        if fits {
            return Ok(());
        }
        let bytes = bytes.max(self.copy.as_ref().map_or(0, |c| c.bytes));
        self.ctx.synchronize().map_err(driver("cuCtxSynchronize"))?;
        self.copy = None;
        // SAFETY: the pinned memory is left uninitialised; it is only ever read as raw bytes
        // by copies, so any content is valid.
        let source = unsafe { self.ctx.alloc_pinned_with_flags::<u8>(bytes, 0) }
            .map_err(driver("cuMemHostAlloc"))?;
        let mut destinations = Vec::with_capacity(streams);
        for s in 0..streams.max(1) {
            // SAFETY: the device memory is left uninitialised; it is only written by copies
            // and never read.
            let d = unsafe { self.streams[s].alloc::<u8>(bytes) }.map_err(driver("cuMemAlloc"))?;
            destinations.push(d);
        }
        // Allocations may be stream-ordered: make them visible to every stream.
        self.ctx.synchronize().map_err(driver("cuCtxSynchronize"))?;
        self.copy = Some(CopyBuffers {
            bytes,
            source,
            destinations,
        });
        Ok(())
    }

    /// Times [`CALIBRATION_COPIES`] copies of [`CALIBRATION_BYTES`] on the first stream after
    /// one untimed copy, and returns bytes per ns.
    fn calibrate_copy(&mut self) -> Result<f64, CudaError> {
        self.ensure_copy_buffers(1, CALIBRATION_BYTES)?;
        let stream = self.streams[0].clone();
        let bytes = CALIBRATION_BYTES as u64;
        self.launch_copy(&stream, 0, bytes)?;
        let timing = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let create = driver("cuEventCreate");
        let a = self.ctx.new_event(timing).map_err(&create)?;
        let b = self.ctx.new_event(timing).map_err(&create)?;
        let record = driver("cuEventRecord");
        a.record(&stream).map_err(&record)?;
        for _ in 0..CALIBRATION_COPIES {
            self.launch_copy(&stream, 0, bytes)?;
        }
        b.record(&stream).map_err(&record)?;
        let ms = a.elapsed_ms(&b).map_err(driver("cuEventElapsedTime"))?;
        let ns = f64::from(ms) * 1e6;
        if !(ns.is_finite() && ns > 0.0) {
            return Err(CudaError::Driver {
                call: "cuEventElapsedTime",
                message: format!("the copy calibration timed {ms} ms"),
            });
        }
        Ok((CALIBRATION_COPIES as u64 * bytes) as f64 / ns)
    }
}

/// The spin kernel: compiled by NVRTC if its library loads, else the embedded PTX.
fn load_spin(ctx: &Arc<CudaContext>) -> Result<(CudaFunction, &'static str), CudaError> {
    let load = |ptx: nvrtc::Ptx| -> Result<CudaFunction, String> {
        let module = ctx.load_module(ptx).map_err(|e| e.to_string())?;
        module
            .load_function(SPIN_KERNEL_NAME)
            .map_err(|e| e.to_string())
    };
    // SAFETY: `is_culib_present` only tries to dlopen NVRTC under its usual names.
    let nvrtc_error = if unsafe { nvrtc::sys::is_culib_present() } {
        let compiled = catch_unwind(|| nvrtc::compile_ptx(SPIN_KERNEL_SOURCE));
        match compiled {
            Ok(Ok(ptx)) => match load(ptx) {
                Ok(f) => return Ok((f, "nvrtc")),
                Err(e) => format!("loading NVRTC's PTX: {e}"),
            },
            Ok(Err(e)) => format!("NVRTC: {e}"),
            Err(_) => "NVRTC lacks an entry point".to_string(),
        }
    } else {
        "libnvrtc cannot be loaded".to_string()
    };
    match load(nvrtc::Ptx::from_src(SPIN_KERNEL_PTX)) {
        Ok(f) => Ok((f, "embedded ptx")),
        Err(e) => Err(CudaError::Kernel {
            reason: format!("{nvrtc_error}; the embedded PTX: {e}"),
        }),
    }
}

impl Execute for Executor {
    fn execute_plan(
        &mut self,
        graph: &Graph,
        plan: &StreamPlan,
        durations: &[u64],
    ) -> Result<Measured, CudaError> {
        self.run(graph, plan, durations)
    }
}
