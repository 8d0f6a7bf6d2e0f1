//! The fleet store: an embedded SQLite database (by default `<cache>/triage.sqlite`) that keeps,
//! for each dump file seen, its size, modification time and content hash, and for each content
//! (size and SHA-256) what triage made of it (its [`commands::buckets::Record`]). A dump whose
//! content was read before, under any name, is not read again; a file whose path, size and
//! modification time are unchanged is not even hashed again. docs/buckets.md describes the
//! tables.

use commands::buckets::{Record, RULES_VERSION};
use rusqlite::{params, Connection, OptionalExtension};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::Path;

/// Why the store could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite's own error.
    #[error("triage store {path}: {source}")]
    Sql {
        path: String,
        #[source]
        source: rusqlite::Error,
    },
    /// Its folder could not be made.
    #[error("triage store {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A stored record is not one this build reads.
    #[error("triage store {path}: a stored record is not valid JSON: {source}")]
    Record {
        path: String,
        #[source]
        source: serde_json::Error,
    },
}

/// An open store.
pub struct Store {
    conn: Connection,
    path: String,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS files (
    path      TEXT PRIMARY KEY,   -- the dump file, canonical path
    size      INTEGER NOT NULL,   -- bytes
    mtime_ns  INTEGER NOT NULL,   -- modification time, ns since 1970
    sha256    TEXT NOT NULL,      -- of its bytes (as stored: a .zst file's compressed bytes)
    time      INTEGER,            -- when the dump was written (s since 1970, UTC)
    added     INTEGER NOT NULL    -- when the store first met this path (s since 1970)
);
CREATE TABLE IF NOT EXISTS contents (
    sha256    TEXT NOT NULL,
    size      INTEGER NOT NULL,
    rules     INTEGER NOT NULL,   -- commands::buckets::RULES_VERSION that signed it
    bucket    TEXT,               -- the signature's id (null: not readable)
    kind      TEXT,               -- crash | deadlock | hang | runtime_not_read
    signature TEXT,               -- the signature in words
    app       TEXT,
    app_version TEXT,
    runtime   TEXT,
    error     TEXT,
    record    TEXT NOT NULL,      -- the whole record (JSON) as first read
    read_at   INTEGER NOT NULL,   -- when it was read (s since 1970)
    PRIMARY KEY (sha256, size)
);
CREATE INDEX IF NOT EXISTS files_by_content ON files (sha256, size);
CREATE INDEX IF NOT EXISTS contents_by_bucket ON contents (bucket);
";

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// A file's size and modification time (ns).
pub fn stat(p: &Path) -> std::io::Result<(u64, i64)> {
    let m = std::fs::metadata(p)?;
    let mtime = m
        .modified()?
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    Ok((m.len(), mtime))
}

/// The SHA-256 of a file's bytes (hex).
pub fn sha256_file(p: &Path) -> std::io::Result<String> {
    let mut f = std::fs::File::open(p)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

impl Store {
    /// Opens (or makes) the store at `path`.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let ps = path.display().to_string();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
                path: ps.clone(),
                source,
            })?;
        }
        let sql = |source| StoreError::Sql {
            path: ps.clone(),
            source,
        };
        let conn = Connection::open(path).map_err(sql)?;
        conn.busy_timeout(std::time::Duration::from_secs(30))
            .map_err(sql)?;
        // One writer at a time; a crash loses at most the last records, never the file.
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")
            .map_err(sql)?;
        conn.execute_batch(SCHEMA).map_err(sql)?;
        Ok(Store { conn, path: ps })
    }

    fn sql(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sql {
            path: self.path.clone(),
            source,
        }
    }

    /// The content hash recorded for `path` when its size and modification time are unchanged.
    pub fn known_hash(
        &self,
        path: &str,
        size: u64,
        mtime_ns: i64,
    ) -> Result<Option<String>, StoreError> {
        self.conn
            .query_row(
                "SELECT sha256 FROM files WHERE path = ?1 AND size = ?2 AND mtime_ns = ?3",
                params![path, size as i64, mtime_ns],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.sql(e))
    }

    /// What was read of this content, when it was read by the current rules.
    pub fn known_content(&self, sha256: &str, size: u64) -> Result<Option<Record>, StoreError> {
        let json: Option<String> = self
            .conn
            .query_row(
                "SELECT record FROM contents WHERE sha256 = ?1 AND size = ?2 AND rules = ?3",
                params![sha256, size as i64, RULES_VERSION],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        json.map(|j| serde_json::from_str(&j))
            .transpose()
            .map_err(|source| StoreError::Record {
                path: self.path.clone(),
                source,
            })
    }

    /// Records a file (its path, size, modification time, hash and time).
    pub fn put_file(
        &self,
        path: &str,
        size: u64,
        mtime_ns: i64,
        sha256: &str,
        time: Option<u64>,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO files (path, size, mtime_ns, sha256, time, added)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT(path) DO UPDATE SET size = ?2, mtime_ns = ?3, sha256 = ?4, time = ?5",
                params![
                    path,
                    size as i64,
                    mtime_ns,
                    sha256,
                    time.map(|t| t as i64),
                    now()
                ],
            )
            .map(drop)
            .map_err(|e| self.sql(e))
    }

    /// Records what was read of a content.
    pub fn put_content(&self, r: &Record) -> Result<(), StoreError> {
        let Some(sha) = &r.sha256 else { return Ok(()) };
        let json = serde_json::to_string(r).map_err(|source| StoreError::Record {
            path: self.path.clone(),
            source,
        })?;
        let s = r.signature.as_ref();
        self.conn
            .execute(
                "INSERT OR REPLACE INTO contents
                 (sha256, size, rules, bucket, kind, signature, app, app_version, runtime, error, record, read_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                params![
                    sha,
                    r.size as i64,
                    RULES_VERSION,
                    s.map(|s| s.id.clone()),
                    s.map(|s| serde_json::to_value(s.kind).ok().and_then(|v| v.as_str().map(str::to_owned))),
                    s.map(|s| s.text.clone()),
                    r.app,
                    r.app_version,
                    r.runtime,
                    r.error,
                    json,
                    now()
                ],
            )
            .map(drop)
            .map_err(|e| self.sql(e))
    }

    /// Every dump file the store knows with what was read of its content (by the current
    /// rules): one record per file, under the file's own path and time.
    pub fn records(&self) -> Result<Vec<Record>, StoreError> {
        let mut st = self
            .conn
            .prepare(
                "SELECT f.path, f.size, f.sha256, f.time, c.record FROM files f
                 JOIN contents c ON c.sha256 = f.sha256 AND c.size = f.size AND c.rules = ?1
                 ORDER BY f.path",
            )
            .map_err(|e| self.sql(e))?;
        let rows = st
            .query_map(params![RULES_VERSION], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<i64>>(3)?,
                    r.get::<_, String>(4)?,
                ))
            })
            .map_err(|e| self.sql(e))?;
        let mut v = Vec::new();
        for row in rows {
            let (path, size, sha, time, json) = row.map_err(|e| self.sql(e))?;
            let mut rec: Record =
                serde_json::from_str(&json).map_err(|source| StoreError::Record {
                    path: self.path.clone(),
                    source,
                })?;
            rec.dump = path;
            rec.size = size as u64;
            rec.sha256 = Some(sha);
            rec.time = time.map(|t| t as u64);
            v.push(rec);
        }
        Ok(v)
    }
}
