//! An open dump and what the commands share about it.

use dumpreader::{Dump, OpenOptions};
use std::path::{Path, PathBuf};

/// One open dump.
pub struct Session {
    /// The dump as opened.
    pub dump: Dump,
    /// The path the user gave.
    pub path: PathBuf,
}

impl Session {
    /// Opens the dump at `path` (a `.zst` file is decompressed once into the cache).
    pub fn open(path: &Path) -> Result<Session, dumpreader::Error> {
        Session::open_with(path, &OpenOptions::default())
    }

    /// Opens the dump at `path` with options (cache folder, image search path, ...).
    pub fn open_with(path: &Path, opts: &OpenOptions) -> Result<Session, dumpreader::Error> {
        Ok(Session {
            dump: Dump::open_with(path, opts)?,
            path: path.to_path_buf(),
        })
    }
}
