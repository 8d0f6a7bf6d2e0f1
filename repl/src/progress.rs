//! The binary's progress bar on standard error for long walks (the library's
//! [`commands::control::ProgressSink`]): shown only on a terminal, and only once the work has
//! taken more than a second (quick commands print nothing extra).

use commands::control::{ProgressBar as Bar, ProgressSink};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Draws bars on standard error when it is a terminal.
pub struct Stderr;

impl ProgressSink for Stderr {
    fn start(&self, total: u64, what: &str) -> Box<dyn Bar> {
        Box::new(Progress::bytes(total, what))
    }
}

/// A bar over a known number of bytes.
struct Progress {
    bar: ProgressBar,
    start: Instant,
    shown: AtomicBool,
    enabled: bool,
}

impl Progress {
    /// A bar for `total` bytes of work called `what` ("walking the heap").
    fn bytes(total: u64, what: &str) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template("{msg} [{bar:40}] {bytes}/{total_bytes} ({eta} left)")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        bar.set_message(what.to_owned());
        Progress {
            bar,
            start: Instant::now(),
            shown: AtomicBool::new(false),
            enabled: std::io::stderr().is_terminal(),
        }
    }
}

impl Bar for Progress {
    fn advance(&self, n: u64) {
        self.bar.inc(n);
        if self.enabled
            && !self.shown.load(Ordering::Relaxed)
            && self.start.elapsed() > Duration::from_secs(1)
            && !self.shown.swap(true, Ordering::Relaxed)
        {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}
