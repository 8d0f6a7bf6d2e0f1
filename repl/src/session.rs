//! An open target (a dump file, or in WinDbg the debugger's target) and what the commands
//! share about it.

use dumpreader::{Dump, OpenOptions, Target};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One open target.
pub struct Session {
    /// Memory, threads and modules, from a dump file or a debugger.
    pub target: Arc<dyn Target>,
    /// What the user opened (a dump's path; a description for other targets).
    pub path: PathBuf,
}

impl Session {
    /// Opens the dump at `path` (a `.zst` file is decompressed once into the cache).
    pub fn open(path: &Path) -> Result<Session, dumpreader::Error> {
        Session::open_with(path, &OpenOptions::default())
    }

    /// Opens the dump at `path` with options (cache folder, image search path, ...).
    pub fn open_with(path: &Path, opts: &OpenOptions) -> Result<Session, dumpreader::Error> {
        Ok(Session::new(
            Arc::new(Dump::open_with(path, opts)?),
            path.to_path_buf(),
        ))
    }

    /// A session over any target (the WinDbg extension passes its dbgeng target).
    pub fn new(target: Arc<dyn Target>, path: PathBuf) -> Session {
        Session { target, path }
    }
}
