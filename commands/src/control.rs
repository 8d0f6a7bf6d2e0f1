//! What a front end controls while a command runs: cancellation (Ctrl-C in the interactive
//! session) and progress reporting. Each [`crate::Session`] holds its own [`Control`]; the
//! library knows no terminal and no signal: the `dumpshell` binary installs its Ctrl-C handler
//! and its progress bar on the session's control, the WinDbg extension nothing.
//!
//! Long-running commands poll [`Control::requested`] (directly, or through the stop callback
//! they hand to clrdata's walks, [`Progress::advance`]) and return
//! [`crate::CommandError::Cancelled`]. The request is cleared before each command.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

/// Where progress goes: the front end's bar (the `dumpshell` binary draws one on a terminal).
pub trait ProgressSink: Send + Sync {
    /// Starts a bar over `total` bytes of work called `what` ("walking the heap").
    fn start(&self, total: u64, what: &str) -> Box<dyn ProgressBar>;
}

/// One running bar.
pub trait ProgressBar: Send + Sync {
    /// Records `n` more bytes done.
    fn advance(&self, n: u64);
}

/// A session's cancellation flag and progress sink.
#[derive(Default)]
pub struct Control {
    cancel: AtomicBool,
    progress: RwLock<Option<Arc<dyn ProgressSink>>>,
}

impl Control {
    /// Asks the running command to stop.
    pub fn request(&self) {
        self.cancel.store(true, Ordering::SeqCst);
    }

    /// Whether the running command has been asked to stop.
    pub fn requested(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// Clears the request (done before each command starts).
    pub fn reset(&self) {
        self.cancel.store(false, Ordering::SeqCst);
    }

    /// Where progress goes from now on.
    pub fn set_progress(&self, sink: Arc<dyn ProgressSink>) {
        *self.progress.write().unwrap_or_else(|e| e.into_inner()) = Some(sink);
    }

    /// A progress report over `total` bytes of work called `what`.
    pub fn progress(&self, total: u64, what: &str) -> Progress<'_> {
        let sink = self
            .progress
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        Progress {
            bar: sink.map(|s| s.start(total, what)),
            control: self,
        }
    }
}

/// A running progress report (finished when dropped).
pub struct Progress<'a> {
    bar: Option<Box<dyn ProgressBar>>,
    control: &'a Control,
}

impl Progress<'_> {
    /// Records `n` more bytes done. Returns false when the user asked to stop.
    pub fn advance(&self, n: u64) -> bool {
        if let Some(b) = &self.bar {
            b.advance(n);
        }
        !self.control.requested()
    }
}
