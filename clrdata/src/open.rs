//! Opening a runtime: [`crate::discovery`] finds it and chooses its layout; what only the model
//! can read (CoreLib's own version, for a build whose image names none) completes it.

use crate::discovery::runtime::{DiscoverOptions, Runtime};
use crate::error::Result;
use dumpreader::{Memory, Target};

impl<M: Memory + Target> Runtime<M> {
    /// Finds the runtime, chooses its layout, resolves the globals and runs the sanity checks.
    ///
    /// Errors: [`crate::ClrError::NoRuntime`], [`crate::ClrError::UnsupportedRuntime`] (e.g.
    /// "found .NET Core 3.1.23 (libcoreclr.so at 0x7f...); this build reads .NET 8, 9, 10
    /// and 11"), [`crate::ClrError::NoLayout`], [`crate::ClrError::SanityCheck`].
    pub fn discover(target: M) -> Result<Runtime<M>> {
        Runtime::discover_with_options(target, &DiscoverOptions::default())
    }

    /// [`Runtime::discover`] with what discovery may read besides the dump's memory (the
    /// build index, image files: [`DiscoverOptions`]).
    pub fn discover_with_options(target: M, opts: &DiscoverOptions) -> Result<Runtime<M>> {
        Runtime::discover_with(
            target,
            crate::model::version::corelib_informational_version,
            opts,
        )
    }
}
