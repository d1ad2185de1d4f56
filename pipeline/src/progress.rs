//! Progress of long calls (benches, the pipeline's steps), reported to whoever renders it.
//!
//! The library never prints: a long call takes a `&dyn Progress` and tells it what it is doing
//! and how far it is. The command line shows a progress bar on a terminal; a library user may
//! log, or pass [`Silent`].

/// Receives the progress of a long call. Implementations must be cheap: they are called from
/// the solving loop (between items, never inside a solve).
pub trait Progress: Send + Sync {
    /// A new phase starts (`"j30"`, `"schedule"`, `"joint windows"`), with `total` items when
    /// known.
    fn start(&self, phase: &str, total: Option<u64>);
    /// `done` more items of the current phase are finished; `message` says which.
    fn advance(&self, done: u64, message: &str);
    /// The current phase is finished.
    fn finish(&self);
}

/// A [`Progress`] that ignores everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct Silent;

impl Progress for Silent {
    fn start(&self, _phase: &str, _total: Option<u64>) {}
    fn advance(&self, _done: u64, _message: &str) {}
    fn finish(&self) {}
}
