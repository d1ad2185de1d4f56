//! Progress bars for long commands: the library reports progress through
//! [`concerto_pipeline::Progress`]; this draws it with `indicatif` on standard error.
//!
//! The bar shows only where it helps: on a terminal (indicatif's standard-error target hides
//! itself when standard error is redirected) and never with `--json`, so that scripted runs
//! stay quiet.

use std::time::Duration;

use concerto_pipeline::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The progress of a long command: a bar drawn on standard error when it is a terminal and
/// `json` is false, else nothing.
pub(crate) fn bar(json: bool) -> Box<dyn Progress> {
    let target = if json {
        ProgressDrawTarget::hidden()
    } else {
        ProgressDrawTarget::stderr()
    };
    Box::new(Bar(ProgressBar::with_draw_target(None, target)))
}

/// An indicatif bar behind [`Progress`]: one phase at a time, a counted bar when the phase's
/// total is known, else a spinner.
struct Bar(ProgressBar);

impl Progress for Bar {
    fn start(&self, phase: &str, total: Option<u64>) {
        let bar = &self.0;
        bar.disable_steady_tick();
        let template = match total {
            Some(_) => "{prefix} {bar:40} {pos}/{len} [{elapsed_precise} < {eta}] {msg}",
            None => "{prefix} {spinner} {pos} [{elapsed_precise}] {msg}",
        };
        // Everything the template shows is set before the length, whose change draws.
        bar.set_style(ProgressStyle::with_template(template).expect("a valid template"));
        bar.set_prefix(phase.to_owned());
        bar.set_message("");
        bar.reset();
        match total {
            Some(n) => bar.set_length(n),
            None => bar.unset_length(),
        }
        if total.is_none() {
            bar.enable_steady_tick(Duration::from_millis(120));
        }
    }

    fn advance(&self, done: u64, message: &str) {
        self.0.set_message(message.to_owned());
        self.0.inc(done);
    }

    fn finish(&self) {
        self.0.disable_steady_tick();
        self.0.finish_and_clear();
    }
}
