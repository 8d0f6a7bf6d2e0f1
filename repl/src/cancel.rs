//! Cancellation of the running command (Ctrl-C in the interactive session).
//!
//! The binary sets the flag from its SIGINT handler; long-running commands poll
//! [`requested`] (directly, or through the stop callback they hand to clrdata's walks) and
//! return [`crate::CommandError::Cancelled`]. The flag is cleared before each command.

use std::sync::atomic::{AtomicBool, Ordering};

static CANCEL: AtomicBool = AtomicBool::new(false);

/// Asks the running command to stop.
pub fn request() {
    CANCEL.store(true, Ordering::SeqCst);
}

/// Whether the running command has been asked to stop.
pub fn requested() -> bool {
    CANCEL.load(Ordering::Relaxed)
}

/// Clears the request (done before each command starts).
pub fn reset() {
    CANCEL.store(false, Ordering::SeqCst);
}
