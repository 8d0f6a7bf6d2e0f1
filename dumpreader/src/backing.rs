//! Bytes a core lacks inside a file-backed mapping, read from that file (what gdb does for a
//! core).
//!
//! gdb's `gcore` and the kernel leave out the pages of a private file mapping that were never
//! written (a mapping with a written page is saved whole): an image's headers, text, read-only
//! data and metadata. Those bytes are the file's, at the mapping's file offset. A file is used
//! only once its identity is anchored to the dump:
//! - an ELF file: its GNU build id equals the one the dump holds for that module;
//! - a .NET single-file host: the build id, and the bundle marker pointing at the dump's
//!   manifest (the build id names the runtime's singlefilehost, not the app);
//! - a PE file whose headers the dump holds: PE TimeDateStamp and SizeOfImage equal;
//! - a PE file whose headers the dump lacks: the layer that knows the loader (clrdata) checks
//!   it against the runtime's own records and accepts it through [`crate::Target`]; until
//!   then it is not read.
//!
//! Only misses of the dump's own memory come here (the hot read path is untouched), and only
//! for dumps whose producer leaves out nothing but unwritten file pages (gcore, kernel):
//! createdump also leaves out written pages (relocated data...), which a file cannot stand in
//! for.

use crate::check::{Evidence, FileCheck, Refusal, Refusals};
use crate::types::*;
use crate::{elfmods, image, Dump};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Where a mapped file's missing bytes come from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(remote = "Self", tag = "kind", rename_all = "snake_case")]
pub enum FileSourceState {
    /// The file is read for what the dump lacks; `check` says what accepted it.
    Used {
        /// The file read.
        #[serde(serialize_with = "crate::json::path")]
        file: PathBuf,
        /// The identity check that accepted it ("build id ... matches", ...).
        check: FileCheck,
    },
    /// A file was found, but nothing in the dump anchors its identity yet: not read.
    Unverified {
        /// The files found, in search order.
        #[serde(serialize_with = "crate::json::paths")]
        candidates: Vec<PathBuf>,
        /// Why it is not verified.
        why: Unanchored,
    },
    /// No file is read: none found, a check failed, or the dump's producer forbids it.
    NotUsed {
        /// Why.
        why: NoFile,
    },
}

impl FileSourceState {
    /// One line: "file X (build id ... matches)", "not verified: ...", "none: ...".
    pub fn describe(&self) -> String {
        match self {
            FileSourceState::Used { file, check } => {
                format!("file {} ({check})", file.display())
            }
            FileSourceState::Unverified { why, .. } => format!("not verified: {why}"),
            FileSourceState::NotUsed { why } => format!("none: {why}"),
        }
    }
}

impl std::fmt::Display for FileSourceState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

crate::serialize_with_message!(FileSourceState);

/// Why a file found for a mapping is not verified (not read until a layer above settles it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize)]
#[serde(remote = "Self", tag = "kind", rename_all = "snake_case")]
pub enum Unanchored {
    /// A PE file whose headers the dump lacks: the runtime's records of the image (clrdata)
    /// are what can verify it.
    #[error(
        "the dump lacks the PE headers; the runtime's records of the image were not (yet) \
         compared"
    )]
    NoPeHeaders,
}

crate::serialize_with_message!(Unanchored);

/// Why no file stands in for the bytes a mapping lacks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize)]
#[serde(remote = "Self", tag = "kind", rename_all = "snake_case")]
pub enum NoFile {
    /// The dump's producer (createdump, minidump) may also leave out written pages.
    #[error("a {producer} dump may lack written pages too, which no file can stand in for")]
    ProducerOmitsWrittenPages {
        /// The producer's name ([`DumpProducer::name`]).
        producer: &'static str,
    },
    /// The mapping is not of a file on disk (`[vdso]`, `/memfd:`...).
    #[error("not a file on disk")]
    NotAFile,
    /// Nothing is missing.
    #[error("the dump holds every mapped byte")]
    NothingMissing,
    /// No file of the name was found.
    #[error(
        "no file {name} on the image path{}",
        if *recorded_path { " or at its recorded path" } else { "" }
    )]
    NotFound {
        /// The file name looked for.
        name: String,
        /// Whether the recorded path was tried too ([`crate::OpenOptions::recorded_paths`]).
        recorded_path: bool,
    },
    /// Every file found was refused.
    #[error("refused: {refusals}")]
    Refused {
        /// Each file and why.
        refusals: Refusals,
    },
    /// The dump holds no identity of the file (and it is no PE file a layer above could
    /// verify).
    #[error("the dump holds no identity (build id or PE headers) of {recorded}")]
    NoIdentity {
        /// The path the dump records.
        recorded: String,
    },
    /// The file accepted by a layer above cannot be opened or mapped.
    #[error("{}: {message}", file.display())]
    Unreadable {
        /// The file.
        #[serde(serialize_with = "crate::json::path")]
        file: PathBuf,
        /// The operating system's message.
        #[serde(rename = "os_error")]
        message: String,
    },
    /// A layer above accepted a file that was not one of the candidates.
    #[error("{} was not a candidate", file.display())]
    NotACandidate {
        /// The file.
        #[serde(serialize_with = "crate::json::path")]
        file: PathBuf,
    },
    /// Not looked at.
    #[error("not resolved")]
    NotResolved,
}

crate::serialize_with_message!(NoFile);

/// A layer's verdict on the unverified candidate files of a mapping ([`Dump::settle_file`]):
/// the file accepted with how it was checked, or why each candidate was refused.
pub type FileVerdict = Result<(PathBuf, FileCheck), Refusals>;

/// What is known of one mapped file's source (public view).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSource {
    /// The path the dump records for the mapping.
    pub recorded: String,
    /// How many of its mapped bytes the dump lacks.
    pub missing_bytes: u64,
    /// Where those bytes come from.
    pub state: FileSourceState,
}

struct Accepted {
    map: memmap2::Mmap,
}

enum Slot {
    Unresolved,
    Resolved {
        state: FileSourceState,
        file: Option<Arc<Accepted>>,
    },
}

/// The per-file state of one dump.
pub(crate) struct Backing {
    /// Whether files may stand in for missing pages at all (gcore, kernel).
    enabled: bool,
    /// Distinct recorded paths.
    paths: Vec<String>,
    /// Per mapping (in the dump's order): index into `paths`.
    by_mapping: Vec<usize>,
    slots: Vec<Mutex<Slot>>,
}

impl Backing {
    pub(crate) fn new(mappings: &[FileMapping], producer: DumpProducer) -> Backing {
        let mut paths: Vec<String> = Vec::new();
        let mut index = std::collections::HashMap::new();
        let by_mapping = mappings
            .iter()
            .map(|m| {
                *index.entry(m.path.clone()).or_insert_with(|| {
                    paths.push(m.path.clone());
                    paths.len() - 1
                })
            })
            .collect();
        let slots = paths.iter().map(|_| Mutex::new(Slot::Unresolved)).collect();
        Backing {
            enabled: matches!(producer, DumpProducer::Gcore | DumpProducer::Kernel),
            paths,
            by_mapping,
            slots,
        }
    }

    fn slot_of(&self, recorded: &str) -> Option<usize> {
        self.paths.iter().position(|p| p == recorded)
    }
}

fn lock(m: &Mutex<Slot>) -> std::sync::MutexGuard<'_, Slot> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Dump {
    /// Bytes at `addr..` that the dump lacks, from the accepted file of the mapping holding
    /// `addr` (0 when there is none).
    pub(crate) fn read_from_files(&self, addr: u64, buf: &mut [u8]) -> usize {
        let b = &self.backing;
        if !b.enabled || buf.is_empty() {
            return 0;
        }
        let i = self.mappings.partition_point(|m| m.start <= addr);
        let Some(mi) = i.checked_sub(1) else { return 0 };
        let m = &self.mappings[mi];
        if addr >= m.end {
            return 0;
        }
        let Some(file) = self.accepted_file(b.by_mapping[mi]) else {
            return 0;
        };
        let off = m.file_offset.saturating_add(addr - m.start);
        let avail = (m.end - addr).min(buf.len() as u64) as usize;
        let Some(src) = usize::try_from(off).ok().and_then(|o| file.map.get(o..)) else {
            return 0;
        };
        let n = avail.min(src.len());
        buf[..n].copy_from_slice(&src[..n]);
        n
    }

    fn accepted_file(&self, slot: usize) -> Option<Arc<Accepted>> {
        let mut g = lock(&self.backing.slots[slot]);
        if let Slot::Unresolved = *g {
            *g = self.resolve(&self.backing.paths[slot]);
        }
        match &*g {
            Slot::Resolved { file, .. } => file.clone(),
            Slot::Unresolved => None,
        }
    }

    /// Where the missing bytes of every mapped file come from, in the order the dump records
    /// the files; empty for a dump whose producer may also leave out written pages
    /// (createdump, minidumps), where no file stands in for what is missing.
    pub fn file_sources(&self) -> Vec<FileSource> {
        if !self.backing.enabled {
            return Vec::new();
        }
        (0..self.backing.paths.len())
            .map(|i| self.file_source_at(i))
            .collect()
    }

    /// Where the missing bytes of the file the dump records as `recorded` come from (`None`
    /// for an unknown path, and as [`Dump::file_sources`], for a dump whose producer may leave
    /// out written pages).
    pub fn file_source(&self, recorded: &str) -> Option<FileSource> {
        if !self.backing.enabled {
            return None;
        }
        self.backing
            .slot_of(recorded)
            .map(|i| self.file_source_at(i))
    }

    fn file_source_at(&self, i: usize) -> FileSource {
        self.accepted_file(i);
        let recorded = self.backing.paths[i].clone();
        let state = match &*lock(&self.backing.slots[i]) {
            Slot::Resolved { state, .. } => state.clone(),
            Slot::Unresolved => FileSourceState::NotUsed {
                why: NoFile::NotResolved,
            },
        };
        FileSource {
            missing_bytes: self.missing_bytes_of(&recorded),
            recorded,
            state,
        }
    }

    /// Bytes of the mappings of `recorded` that the dump itself lacks.
    fn missing_bytes_of(&self, recorded: &str) -> u64 {
        let mut missing = 0u64;
        for m in self.mappings.iter().filter(|m| m.path == recorded) {
            let mut a = m.start;
            while a < m.end {
                match self.index.range_of(a) {
                    Some(r) => a = r.end().min(m.end).max(a + 1),
                    None => {
                        // Up to the next range or the mapping's end.
                        let next = self
                            .index
                            .ranges()
                            .find(|r| r.address > a)
                            .map_or(m.end, |r| r.address.min(m.end));
                        missing += next - a;
                        a = next;
                    }
                }
            }
        }
        missing
    }

    /// Files found for `recorded` whose identity the dump does not anchor (a PE file whose
    /// headers the dump lacks): the CLR layer may check them against the loader's records
    /// and accept one with [`Dump::settle_file`].
    pub fn unverified_files(&self) -> Vec<(String, Vec<PathBuf>)> {
        (0..self.backing.paths.len())
            .filter_map(|i| {
                self.accepted_file(i);
                match &*lock(&self.backing.slots[i]) {
                    Slot::Resolved {
                        state: FileSourceState::Unverified { candidates, .. },
                        ..
                    } => Some((self.backing.paths[i].clone(), candidates.clone())),
                    _ => None,
                }
            })
            .collect()
    }

    /// Accepts `file` (one of the unverified candidates of `recorded`) with the check that
    /// verified it, or refuses every candidate with `Err(why each was refused)`. Only a file
    /// left unverified by dumpreader can be settled this way.
    pub fn settle_file(&self, recorded: &str, verdict: FileVerdict) -> bool {
        let Some(i) = self.backing.slot_of(recorded) else {
            return false;
        };
        self.accepted_file(i);
        let mut g = lock(&self.backing.slots[i]);
        let Slot::Resolved {
            state: FileSourceState::Unverified { candidates, .. },
            ..
        } = &*g
        else {
            return false;
        };
        *g = match verdict {
            Ok((file, check)) if candidates.contains(&file) => match open(&file) {
                Ok(map) => Slot::Resolved {
                    state: FileSourceState::Used { file, check },
                    file: Some(Arc::new(Accepted { map })),
                },
                Err(e) => not_used(NoFile::Unreadable {
                    file,
                    message: e.to_string(),
                }),
            },
            Ok((file, _)) => not_used(NoFile::NotACandidate { file }),
            Err(refusals) => not_used(NoFile::Refused { refusals }),
        };
        true
    }

    /// Decides the file of the mappings recorded as `recorded`.
    fn resolve(&self, recorded: &str) -> Slot {
        if !self.backing.enabled {
            return not_used(NoFile::ProducerOmitsWrittenPages {
                producer: self.dump_kind().producer.name(),
            });
        }
        if recorded.starts_with('[') || recorded.starts_with("/memfd:") || recorded.is_empty() {
            return not_used(NoFile::NotAFile);
        }
        if self.missing_bytes_of(recorded) == 0 {
            return not_used(NoFile::NothingMissing);
        }
        let mods: Vec<&ModuleInfo> = self
            .modules()
            .iter()
            .filter(|m| m.path == recorded)
            .collect();
        let host = self.bundles().iter().find(|h| h.host_path == recorded);
        let identity = mods.iter().find_map(|m| m.identity.clone());
        let is_pe = mods.iter().any(|m| m.kind == ModuleKind::Pe);
        let cands: Vec<PathBuf> = elfmods::image_candidates(recorded, &self.opts)
            .into_iter()
            .filter(|c| c.is_file())
            .collect();
        if cands.is_empty() {
            return not_used(NoFile::NotFound {
                name: recorded.rsplit('/').next().unwrap_or(recorded).to_string(),
                recorded_path: self.opts.recorded_paths,
            });
        }
        match identity {
            Some(want) => {
                let mut why = Refusals::default();
                for c in &cands {
                    let map = match open(c) {
                        Ok(m) => m,
                        Err(e) => {
                            why.push(Refusal::Unreadable {
                                file: c.clone(),
                                message: e.to_string(),
                            });
                            continue;
                        }
                    };
                    match image::file_identity(&map) {
                        Some(have) if have == want => {
                            let mut evidence = Evidence::Identity {
                                identity: want.clone(),
                            };
                            if let Some(hb) = host {
                                match elfmods::bundle_in_file(hb, c, &evidence, &map) {
                                    Ok(()) => {
                                        evidence = Evidence::IdentityAndBundle {
                                            identity: want.clone(),
                                            header_offset: hb.header_offset,
                                        }
                                    }
                                    Err(refusal) => {
                                        why.push(refusal);
                                        continue;
                                    }
                                }
                            }
                            return Slot::Resolved {
                                state: FileSourceState::Used {
                                    file: c.clone(),
                                    check: FileCheck {
                                        evidence,
                                        after: why,
                                    },
                                },
                                file: Some(Arc::new(Accepted { map })),
                            };
                        }
                        Some(have) => why.push(Refusal::IdentityMismatch {
                            file: c.clone(),
                            dump: want.clone(),
                            found: have,
                        }),
                        None => why.push(Refusal::NoIdentity {
                            file: c.clone(),
                            dump: want.clone(),
                        }),
                    }
                }
                not_used(NoFile::Refused { refusals: why })
            }
            None if is_pe || recorded.to_ascii_lowercase().ends_with(".dll") => Slot::Resolved {
                state: FileSourceState::Unverified {
                    candidates: cands,
                    why: Unanchored::NoPeHeaders,
                },
                file: None,
            },
            None => not_used(NoFile::NoIdentity {
                recorded: recorded.to_string(),
            }),
        }
    }
}

fn not_used(why: NoFile) -> Slot {
    Slot::Resolved {
        state: FileSourceState::NotUsed { why },
        file: None,
    }
}

fn open(p: &std::path::Path) -> std::io::Result<memmap2::Mmap> {
    let f = std::fs::File::open(p)?;
    crate::map::map(&f)
}
