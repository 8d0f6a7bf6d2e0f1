//! Source lines of managed frames, as SOS's `clrstack` prints them (`[file @ line]`).
//!
//! A frame's IL offset comes from its method's debug info (the JIT's native-to-IL bounds,
//! [`super::CodeIndex::debug_info`]), its line from the app's portable PDB (the sequence
//! point at or before that offset, [`crate::metadata::PortablePdb::source_line`]). SOS's rules
//! (dotnet/diagnostics `src/SOS/Strike/strike.cpp` ClrStackImpl, `util.cpp`
//! `ConvertNativeToIlOffset`):
//! - every frame but the first one listed is looked up at IP − 1 (a return address is after
//!   the call; `bAdjustIPForLineNumber = frameNumber > 0 || internalFrames > 0`);
//! - the IL offset is the first one the DAC's `GetILOffsetsByAddress` gives
//!   ([`clrcodeinfo::debuginfo::DebugInfo::il_offset_at`]); a prolog counts as IL offset 0, an
//!   epilog as the method's highest mapped IL offset, code that maps to no IL has no line.
//!
//! That is SOS's rule for a runtime it knows to be .NET 5 or later (`IsRuntimeVersionAtLeast(5)`,
//! the version of the runtime module's file). When SOS cannot read that version (its `runtimes`
//! prints `runtime 0.0`: a core whose runtime file is not where it was recorded nor in a symbol
//! directory) it takes its pre-.NET 5 fallback `GetILOffsetFromAddressMap` instead, which walks
//! `GetILAddressMap` (the map of the method's current native code, not of the frame's code
//! version) and treats an empty range (two bounds entries at one native offset: a call
//! instruction and its statement, an IL offset and an epilog) as open-ended: every frame after
//! such an entry gets its line (the first call's statement, the catch's closing brace). Those are
//! not where the frame is; this module does not reproduce them (the corpus's SOS truths are
//! recorded with the version known: dumps/tools/sos_pdb.py).
//!
//! The PDB of a module is found by the module's CodeView entry and taken only when its id is
//! the entry's ([`crate::metadata::find_pdb`]): the image's embedded portable PDB when it has
//! one, else a file in the folders given (PDB folders, then image folders, searched below
//! them), beside the module's recorded path, or at the path the CodeView entry records (the
//! last two only when recorded paths may be read).

use super::{CodeInfo, FrameKind, FrameSource, StackFrame, StackWalker, ThreadStack};
use crate::data::types::ReadTypes;
use crate::discovery::runtime::Runtime;
use crate::metadata::{
    embedded_pdb_from_memory, find_pdb, read_debug_info_from_memory, PdbFile, PdbSource, Token,
};
use clrcodeinfo::debuginfo::{DebugInfo, EPILOG, NO_MAPPING, PROLOG};
use dumpreader::Memory;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Finds frames' source lines, with per-module PDB and per-method debug info caches; one per
/// command or session.
pub struct SourceLines {
    dirs: Vec<PathBuf>,
    recorded_paths: bool,
    files: bool,
    pdbs: Mutex<HashMap<u64, crate::Result<Arc<PdbFile>>>>,
    infos: Mutex<HashMap<u64, crate::Result<Arc<DebugInfo>>>>,
}

impl SourceLines {
    /// Searches `dirs` (and below them) for PDB files; `recorded_paths`: also beside the
    /// module's recorded path and at the CodeView entry's path; `files`: read PDB files at all
    /// (off: only PDBs embedded in the images in memory).
    pub fn new(dirs: Vec<PathBuf>, recorded_paths: bool, files: bool) -> SourceLines {
        SourceLines {
            dirs,
            recorded_paths,
            files,
            pdbs: Mutex::new(HashMap::new()),
            infos: Mutex::new(HashMap::new()),
        }
    }

    /// The search of a target's session: its PDB folders (`DiscoverOptions::pdb_dirs`), then
    /// its image search path; recorded paths as the target allows; no file in the clean room.
    pub fn for_target<M: dumpreader::Target>(rt: &Runtime<M>) -> SourceLines {
        let t = rt.memory();
        let mut dirs = rt.options.pdb_dirs.clone();
        for d in t.image_search_path() {
            if !dirs.contains(&d) {
                dirs.push(d);
            }
        }
        SourceLines::new(dirs, t.use_recorded_paths(), rt.options.files)
    }

    /// Sets [`StackFrame::source`] on every managed frame of `st`.
    pub fn annotate<M: Memory>(&self, w: &StackWalker<'_, M>, st: &mut ThreadStack) {
        for i in 0..st.frames.len() {
            if st.frames[i].kind != FrameKind::Managed {
                continue;
            }
            let s = self.frame_source(w, &st.frames[i], i > 0);
            st.frames[i].source = Some(s);
        }
    }

    /// The IL offset and source line of managed frame `f`; `return_address`: its IP is a
    /// return address (SOS: every frame but the first listed), looked up at IP − 1.
    pub fn frame_source<M: Memory>(
        &self,
        w: &StackWalker<'_, M>,
        f: &StackFrame,
        return_address: bool,
    ) -> FrameSource {
        let at = if return_address {
            f.ip.wrapping_sub(1)
        } else {
            f.ip
        };
        self.code_source(w, f.ip, at, f.module.zip(f.token))
    }

    /// The IL offset and source line of the code at `at` in the method whose code holds `ip`
    /// (`ip` and `at` differ when a return address is looked up inside its call), the method
    /// being MethodDef `token` of the Module at `module` (`method`). The one lookup behind
    /// every listing's lines: `clrstack`'s frames, an exception's recorded trace.
    pub fn code_source<M: Memory>(
        &self,
        w: &StackWalker<'_, M>,
        ip: u64,
        at: u64,
        method: Option<(u64, u32)>,
    ) -> FrameSource {
        let mut out = FrameSource {
            il_offset: None,
            file: None,
            line: None,
            note: None,
        };
        match self.il_offset(w, ip, at) {
            Ok(Some(il)) => out.il_offset = Some(il),
            Ok(None) => {
                out.note = Some("the code maps to no IL offset".into());
                return out;
            }
            Err(e) => {
                out.note = Some(e.to_string());
                return out;
            }
        }
        let Some((module, token)) = method else {
            out.note = Some("the frame's module and token are not known".into());
            return out;
        };
        let pdb = match self.pdb(w, module) {
            Ok(p) => p,
            Err(e) => {
                out.note = Some(e.to_string());
                return out;
            }
        };
        let line = pdb
            .reader()
            .and_then(|r| r.source_line(Token(token), out.il_offset.unwrap_or(0)));
        match line {
            Ok(Some(l)) => {
                out.file = Some(l.document);
                out.line = Some(l.start_line);
            }
            Ok(None) => out.note = Some("no sequence point at or before the IL offset".into()),
            Err(e) => out.note = Some(format!("the PDB: {e}")),
        }
        out
    }

    /// The IL offset of the code at `at` in the method whose code holds `ip`, by SOS's rule.
    fn il_offset<M: Memory>(
        &self,
        w: &StackWalker<'_, M>,
        ip: u64,
        at: u64,
    ) -> crate::Result<Option<u32>> {
        let ci = w.code().lookup(w.rt, ip)?.ok_or_else(|| {
            crate::ClrError::not_found_at("the frame's method", ip, "not managed code")
        })?;
        let di = self.debug_info(w, &ci)?;
        let native = at.wrapping_sub(ci.method_start);
        if native > u32::MAX as u64 {
            return Err(crate::ClrError::corrupt(
                "the frame's IP",
                at,
                format!("before its method's code at {:#x}", ci.method_start),
            ));
        }
        Ok(match di.il_offset_at(native as u32) {
            None | Some(NO_MAPPING) => None,
            Some(PROLOG) => Some(0),
            Some(EPILOG) => Some(
                di.bounds
                    .iter()
                    .map(|b| b.il_offset)
                    .filter(|o| ![NO_MAPPING, PROLOG, EPILOG].contains(o))
                    .max()
                    .unwrap_or(0),
            ),
            Some(o) => Some(o),
        })
    }

    pub(crate) fn debug_info<M: Memory>(
        &self,
        w: &StackWalker<'_, M>,
        ci: &CodeInfo,
    ) -> crate::Result<Arc<DebugInfo>> {
        let mut cache = self.infos.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .entry(ci.method_start)
            .or_insert_with(|| w.code().debug_info(w.rt, ci).map(|(d, _)| Arc::new(d)))
            .clone()
    }

    /// The portable PDB of the Module at `module`, or why there is none.
    pub fn pdb<M: Memory>(
        &self,
        w: &StackWalker<'_, M>,
        module: u64,
    ) -> crate::Result<Arc<PdbFile>> {
        if let Some(r) = self
            .pdbs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&module)
        {
            return r.clone();
        }
        let r = self.find(w.rt, module).map(Arc::new);
        self.pdbs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(module, r.clone());
        r
    }

    fn find<M: Memory>(&self, rt: &Runtime<M>, module: u64) -> crate::Result<PdbFile> {
        let data = rt.module(module)?;
        let mem = rt.memory();
        let size = (data.image_size != 0).then_some(data.image_size as u64);
        let info = read_debug_info_from_memory(mem, data.image_base, size).map_err(|e| {
            crate::ClrError::corrupt(
                format!("the debug directory of {}", data.simple_name),
                data.image_base,
                e.to_string(),
            )
        })?;
        if info.embedded_pdb.is_some() {
            if let Ok(Some(bytes)) = embedded_pdb_from_memory(mem, data.image_base, &info) {
                if let Ok(p) = PdbFile::from_bytes(bytes, PdbSource::Embedded) {
                    return Ok(p);
                }
            }
        }
        let cv = info.codeview.ok_or_else(|| {
            crate::ClrError::not_found_at(
                format!("the PDB of {}", data.simple_name),
                data.image_base,
                "the image has no CodeView entry",
            )
        })?;
        if !cv.is_portable() {
            return Err(crate::ClrError::not_found_at(
                format!("the PDB of {}", data.simple_name),
                data.image_base,
                "not a portable PDB",
            ));
        }
        if !self.files {
            return Err(crate::ClrError::not_found(
                format!("the PDB of {}", data.simple_name),
                "PDB files are not read (the clean room)",
            ));
        }
        let s = find_pdb(&cv, &self.dirs, false);
        if let Some(f) = s.found {
            return Ok(f);
        }
        if self.recorded_paths {
            // Beside the module's recorded file, then where the CodeView entry says.
            let beside = std::path::Path::new(&data.path)
                .parent()
                .map(|d| d.join(cv.file_name()));
            for p in beside.into_iter().chain([PathBuf::from(&cv.path)]) {
                if let Ok(f) = PdbFile::open(&p) {
                    if f.id() == cv.pdb_id() {
                        return Ok(f);
                    }
                }
            }
        }
        Err(crate::ClrError::not_found(
            format!("the PDB of {}", data.simple_name),
            format!(
                "no {} with id {} found{}",
                cv.file_name(),
                cv.pdb_id(),
                if s.refused.is_empty() {
                    String::new()
                } else {
                    format!(" ({} of another build refused)", s.refused.len())
                }
            ),
        ))
    }
}
