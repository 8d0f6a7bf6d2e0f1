//! ReadyToRun images (`docs/design/coreclr/botr/readytorun-format.md`): the RuntimeFunctions
//! section (102) and MethodDefEntryPoints (103, a NativeFormat NativeArray indexed by MethodDef
//! rid − 1, whose entries name the method's first RUNTIME_FUNCTION).
//!
//! A dump often lacks most pages of the RuntimeFunctions table (createdump saves what the DAC
//! read while enumerating the threads' stacks). Then, without the image file, the lookup replays
//! the runtime's own binary search (NativeUnwindInfoLookupTable::LookupUnwindInfoForMethod,
//! codeman.cpp): for an address on a saved stack, the DAC ran that very search, so the entries
//! it probes are the ones the dump kept. A probe outside the dump ends the lookup with its
//! address. The method is then named as the DAC names it, through the runtime's own
//! `ReadyToRunInfo::m_entryPointToMethodDescMap` (a PtrHashMap: entry point → MethodDesc),
//! whose buckets the DAC's lookups also touched, rather than MethodDefEntryPoints.

use super::image_file::ImageFile;
use super::unwind::RuntimeFunction;
use crate::data::types::ReadTypes;
use crate::discovery::runtime::Runtime;
use crate::metadata::{PeHeaders, PeLayout};
use dumpreader::Memory;
use std::collections::HashMap;
use std::sync::Arc;

const RTR_SIGNATURE: u32 = 0x0052_5452;
const SECTION_RUNTIME_FUNCTIONS: u32 = 102;
const SECTION_METHODDEF_ENTRYPOINTS: u32 = 103;
/// `READYTORUN_SECTION_DEBUG_INFO`: a NativeArray indexed by RUNTIME_FUNCTION index.
const SECTION_DEBUG_INFO: u32 = 105;
/// `READYTORUN_SECTION_EXCEPTION_INFO`: `READYTORUN_EXCEPTION_LOOKUP_TABLE_ENTRY`s
/// (MethodStartRVA, ExceptionInfoRVA) sorted by method, the last a sentinel ending the clauses
/// of the one before; each method's `READYTORUN_EXCEPTION_CLAUSE`s (6 DWORDs) at its RVA.
const SECTION_EXCEPTION_INFO: u32 = 104;
/// Bound on one method's EH clauses.
const MAX_EH_CLAUSES: u32 = 4096;
/// Bound on sections read from an R2R header.
const MAX_SECTIONS: u32 = 256;
/// Bound on RUNTIME_FUNCTIONS (CoreLib has about 100,000).
const MAX_FUNCTIONS: u32 = 4 << 20;
/// Bound on a section's size read at once.
const MAX_SECTION_BYTES: u32 = 64 << 20;
/// Bound on the buckets of the entry point map read.
const MAX_BUCKETS: u64 = 1 << 20;

/// The DebugInfo section as read: `bytes` is all of its `size` bytes, or the prefix the dump
/// holds (from `at`).
struct DebugSection {
    bytes: Vec<u8>,
    size: u32,
    at: u64,
}

/// The RUNTIME_FUNCTIONs: all read, or only where they are (see the module comment).
enum Functions {
    /// (begin, end, unwind) RVAs, sorted by begin.
    Full(Vec<(u32, u32, u32)>),
    /// The table's address and entry count; entries read one by one.
    Sparse { table: u64, count: u32 },
}

/// What a lookup finds: the RUNTIME_FUNCTION covering the address, the method's start, the end
/// of its entry RUNTIME_FUNCTION, and its MethodDef rid when known.
pub type R2rMethod = (RuntimeFunction, u64, u64, Option<u32>);

/// The parts of an R2R image the stack walk needs.
pub struct R2rImage {
    base: u64,
    functions: Functions,
    /// RUNTIME_FUNCTION index of a method's entry → MethodDef rid.
    entry_to_rid: HashMap<u32, u32>,
    /// Entry point → MethodDesc from the runtime's map (when MethodDefEntryPoints is not
    /// available), or why it could not be read.
    entry_to_md: crate::Result<HashMap<u64, u64>>,
    /// The image file, when the dump lacks the image's pages (see [`ImageFile`]).
    pub file: Option<Arc<ImageFile>>,
    /// The DebugInfo section's bytes (those the dump holds: a prefix of it), or why none were
    /// read.
    debug_info: crate::Result<DebugSection>,
    /// READYTORUN_HEADER::MajorVersion (which GC info version the image's code carries).
    pub major: u16,
    /// The ExceptionInfo section: its address and entry count (None: the image has no EH
    /// clause), or why it could not be placed.
    exception_info: crate::Result<Option<(u64, u32)>>,
    /// The image's headers and layout (RVAs of the exception clauses).
    pe: PeHeaders,
    layout: PeLayout,
}

impl R2rImage {
    /// Reads the R2R header of the Module at `module`.
    pub fn read<M: Memory>(rt: &Runtime<M>, module: u64) -> crate::Result<R2rImage> {
        let md = rt.module(module)?;
        let m = rt.memory();
        let base = md.image_base;
        let layout = if md.mapped {
            PeLayout::Mapped
        } else {
            PeLayout::Flat
        };
        // A core whose target reads the missing pages from the image files itself (gcore)
        // needs no file here.
        let file = if rt.image_search.target_reads_files {
            None
        } else {
            rt.image_search
                .candidates(&md.path)
                .iter()
                .find_map(|p| ImageFile::open(m, base, layout, &p.to_string_lossy()).ok())
                .map(Arc::new)
        };
        let ov = super::image_file::Overlay {
            inner: m,
            files: file.iter().cloned().collect(),
        };
        let m = &ov;
        let headers = m.read_bytes(base, 4096);
        let pe = PeHeaders::parse(&headers).map_err(|e| {
            // Headers absent from the dump (a gcore core) whose file was not read: say which
            // image and why, as type names do.
            match rt.unread_file_at(base).filter(|_| headers.is_empty()) {
                Some(why) => crate::ClrError::not_found_at(
                    format!(
                        "the PE headers of module {} ({}) at {base:#x}",
                        md.simple_name, md.path
                    ),
                    base,
                    format!("not in the dump, and its file is not read ({why})"),
                ),
                None => crate::ClrError::metadata(format!("the PE headers at {base:#x}"), e),
            }
        })?;
        let at = |rva: u32| -> crate::Result<u64> {
            pe.rva_to_offset(rva, layout)
                .map(|o| base + o as u64)
                .ok_or_else(|| {
                    crate::ClrError::corrupt("image", base, format!("RVA {rva:#x} outside it"))
                })
        };
        let cor = md.cor_header;
        let rva = m
            .read_u32(cor + 0x40)
            .map_err(|_| crate::ClrError::read("CLI header", cor))?;
        if rva == 0 {
            return Err(crate::ClrError::not_found_at(
                "ReadyToRun header",
                base,
                "the image has none",
            ));
        }
        let h = at(rva)?;
        let sig = m
            .read_u32(h)
            .map_err(|_| crate::ClrError::read("ReadyToRun header", h))?;
        if sig != RTR_SIGNATURE {
            return Err(crate::ClrError::corrupt(
                "ReadyToRun header",
                h,
                format!("signature {sig:#x}"),
            ));
        }
        let major = m
            .read_u16(h + 4)
            .map_err(|_| crate::ClrError::read("ReadyToRun header", h + 4))?;
        let n = m
            .read_u32(h + 12)
            .map_err(|_| crate::ClrError::read("ReadyToRun header", h + 12))?;
        if n > MAX_SECTIONS {
            return Err(crate::ClrError::corrupt(
                "ReadyToRun header",
                h,
                format!("claims {n} sections"),
            ));
        }
        let mut sections = HashMap::new();
        for i in 0..n as u64 {
            let s = h + 16 + 12 * i;
            let ty = m
                .read_u32(s)
                .map_err(|_| crate::ClrError::read("ReadyToRun section", s))?;
            let r = m
                .read_u32(s + 4)
                .map_err(|_| crate::ClrError::read("ReadyToRun section", s))?;
            let sz = m
                .read_u32(s + 8)
                .map_err(|_| crate::ClrError::read("ReadyToRun section", s))?;
            sections.insert(ty, (r, sz));
        }
        let read_section = |ty: u32| -> crate::Result<Vec<u8>> {
            let (r, sz) = *sections.get(&ty).ok_or_else(|| {
                crate::ClrError::not_found_at(
                    format!("ReadyToRun section {ty}"),
                    base,
                    "the image has none",
                )
            })?;
            if sz > MAX_SECTION_BYTES {
                return Err(crate::ClrError::corrupt(
                    format!("ReadyToRun section {ty}"),
                    base,
                    format!("claims {sz} bytes"),
                ));
            }
            let a = at(r)?;
            let b = m.read_bytes(a, sz as usize);
            if b.len() < sz as usize {
                return Err(crate::ClrError::read(
                    format!("ReadyToRun section {ty} ({sz} bytes)"),
                    a + b.len() as u64,
                ));
            }
            Ok(b)
        };
        let functions = match read_section(SECTION_RUNTIME_FUNCTIONS) {
            Ok(rf) => {
                let count = (rf.len() / 12).min(MAX_FUNCTIONS as usize);
                Functions::Full(
                    (0..count)
                        .map(|i| {
                            let w = |k: usize| {
                                u32::from_le_bytes(
                                    rf[12 * i + k..12 * i + k + 4].try_into().unwrap(),
                                )
                            };
                            (w(0), w(4), w(8))
                        })
                        .collect(),
                )
            }
            Err(_) => {
                let (r, sz) = *sections.get(&SECTION_RUNTIME_FUNCTIONS).ok_or_else(|| {
                    crate::ClrError::not_found_at(
                        "ReadyToRun RuntimeFunctions section",
                        base,
                        "the image has none",
                    )
                })?;
                Functions::Sparse {
                    table: at(r)?,
                    count: (sz / 12).min(MAX_FUNCTIONS),
                }
            }
        };
        let mut entry_to_rid = HashMap::new();
        let entry_points = read_section(SECTION_METHODDEF_ENTRYPOINTS);
        // Read in all cases: MethodDefEntryPoints has no generic instantiation.
        let entry_to_md = match &entry_points {
            Ok(_) => entry_point_map(rt, module, h),
            Err(e) => entry_point_map(rt, module, h).map_err(|m| m.context(e.to_string())),
        };
        if let Ok(ep) = entry_points {
            let arr = NativeArray::new(&ep);
            if let Some(arr) = arr {
                for idx in 0..arr.count.min(1 << 24) {
                    if let Some(off) = arr.get(idx) {
                        if let Some((id, _)) = decode_unsigned(&ep, off) {
                            let f = if id & 1 != 0 { id >> 2 } else { id >> 1 };
                            entry_to_rid.entry(f).or_insert(idx + 1);
                        }
                    }
                }
            }
        }
        // The runtime reads only the entries and blobs it looks up: a dump may hold the
        // section's first pages only (hang-net10-r2r), which serve the methods whose entries
        // are there.
        let debug_info = read_section(SECTION_DEBUG_INFO)
            .map(|bytes| DebugSection {
                size: bytes.len() as u32,
                bytes,
                at: 0,
            })
            .or_else(|e| {
                let &(r, size) = sections
                    .get(&SECTION_DEBUG_INFO)
                    .filter(|&&(_, sz)| sz <= MAX_SECTION_BYTES)
                    .ok_or_else(|| e.clone())?;
                let a = at(r)?;
                let bytes = m.read_bytes(a, size as usize);
                if bytes.is_empty() {
                    return Err(e);
                }
                Ok(DebugSection { bytes, size, at: a })
            });
        // Entries are read one by one, as the runtime's search reads them (a dump holds the
        // pages it touched).
        let exception_info = match sections.get(&SECTION_EXCEPTION_INFO) {
            Some(&(r, sz)) => at(r).map(|a| Some((a, sz / 8))),
            None => Ok(None),
        };
        Ok(R2rImage {
            base,
            functions,
            entry_to_rid,
            entry_to_md,
            file,
            debug_info,
            major,
            exception_info,
            pe,
            layout,
        })
    }

    /// The EH clauses of the method whose entry RUNTIME_FUNCTION begins at `method_rva`
    /// (`ReadyToRunJitManager::GetEHInfo`): the runtime's search of the ExceptionInfo lookup
    /// table (`NativeExceptionInfoLookupTable::LookupExceptionInfoRVAForMethod`: binary down
    /// to 10 entries, then linear; the last entry is a sentinel whose ExceptionInfoRVA ends the
    /// clauses of the one before), each entry read as the search reaches it.
    pub fn eh_clauses<M: Memory + ?Sized>(
        &self,
        mem: &M,
        method_rva: u32,
    ) -> crate::Result<Vec<super::eh::EhClause>> {
        let what = "the ReadyToRun ExceptionInfo lookup table";
        let Some((table, n)) = *self.exception_info.as_ref().map_err(|e| e.clone())? else {
            return Ok(Vec::new());
        };
        if n < 2 {
            return Ok(Vec::new());
        }
        let entry = |i: u32| -> crate::Result<(u32, u32)> {
            let a = table + 8 * i as u64;
            let m = mem
                .read_u32(a)
                .map_err(|_| crate::ClrError::read(what, a))?;
            let e = mem
                .read_u32(a + 4)
                .map_err(|_| crate::ClrError::read(what, a + 4))?;
            Ok((m, e))
        };
        let (mut start, mut end) = (0u32, n - 2);
        while end - start > 10 {
            let middle = start + (end - start) / 2;
            if method_rva < entry(middle)?.0 {
                end = middle - 1;
            } else {
                start = middle;
            }
        }
        let mut found = None;
        for i in start..=end {
            if entry(i)?.0 == method_rva {
                found = Some(i);
                break;
            }
        }
        let Some(k) = found else {
            return Ok(Vec::new());
        };
        let (start, end) = (entry(k)?.1, entry(k + 1)?.1);
        let count = end
            .checked_sub(start)
            .map(|b| b / 24)
            .filter(|&c| c <= MAX_EH_CLAUSES)
            .ok_or_else(|| {
                crate::ClrError::corrupt(
                    what,
                    self.base,
                    format!("method RVA {method_rva:#x}: clauses {start:#x}..{end:#x}"),
                )
            })?;
        let at = self
            .pe
            .rva_to_offset(start, self.layout)
            .map(|o| self.base + o as u64)
            .ok_or_else(|| {
                crate::ClrError::corrupt("image", self.base, format!("RVA {start:#x} outside it"))
            })?;
        let b = mem.read_bytes(at, count as usize * 24);
        if b.len() < count as usize * 24 {
            return Err(crate::ClrError::read(
                format!("{count} ReadyToRun EH clauses"),
                at + b.len() as u64,
            ));
        }
        Ok(b.chunks_exact(24)
            .map(|c| {
                let w = |k: usize| u32::from_le_bytes(c[k..k + 4].try_into().unwrap());
                super::eh::EhClause::new(w(0), w(4), w(8), w(12), w(16), w(20))
            })
            .collect())
    }

    /// RUNTIME_FUNCTION `i` (read from `mem` when the table is sparse).
    fn function<M: Memory + ?Sized>(&self, mem: &M, i: u32) -> crate::Result<(u32, u32, u32)> {
        match &self.functions {
            Functions::Full(v) => v.get(i as usize).copied().ok_or_else(|| {
                crate::ClrError::not_found_at(
                    format!("RUNTIME_FUNCTION {i}"),
                    self.base,
                    "past the image's table",
                )
            }),
            Functions::Sparse { table, .. } => {
                let a = table + 12 * i as u64;
                let mut b = [0u8; 12];
                mem.read_exact(a, &mut b).map_err(|_| {
                    crate::ClrError::read(
                        format!(
                            "RUNTIME_FUNCTION {i} (the image file would have it: --image-path)"
                        ),
                        a,
                    )
                })?;
                let w = |k: usize| u32::from_le_bytes(b[k..k + 4].try_into().unwrap());
                Ok((w(0), w(4), w(8)))
            }
        }
    }

    /// The index of the RUNTIME_FUNCTION that may cover `rva`.
    fn search<M: Memory + ?Sized>(&self, mem: &M, rva: u32) -> crate::Result<Option<u32>> {
        match &self.functions {
            Functions::Full(v) => Ok(v
                .partition_point(|f| f.0 <= rva)
                .checked_sub(1)
                .map(|i| i as u32)),
            Functions::Sparse { count, .. } => {
                // LookupUnwindInfoForMethod, probe for probe.
                if *count == 0 {
                    return Ok(None);
                }
                let (mut low, mut high) = (0i64, *count as i64 - 1);
                while high - low > 10 {
                    let mid = low + (high - low) / 2;
                    if rva < self.function(mem, mid as u32)?.0 {
                        high = mid - 1;
                    } else {
                        low = mid;
                    }
                }
                let mut i = low;
                while i <= high {
                    if i == high || rva < self.function(mem, (i + 1) as u32)?.0 {
                        return Ok((rva >= self.function(mem, i as u32)?.0).then_some(i as u32));
                    }
                    i += 1;
                }
                Ok(None)
            }
        }
    }

    /// Through the runtime's entry point map: the MethodDesc of the method whose code holds
    /// RUNTIME_FUNCTION `i` (walking back over funclets, as the runtime does), with its
    /// entry RUNTIME_FUNCTION's start and end. `Err`: why the method is unknown.
    pub fn method_desc_of<M: Memory + ?Sized>(
        &self,
        mem: &M,
        i: u32,
    ) -> crate::Result<(u64, u64, u64)> {
        let map = self.entry_to_md.as_ref().map_err(Clone::clone)?;
        let mut j = i;
        for _ in 0..64 {
            let (b, e, _) = self.function(mem, j)?;
            if let Some(&md) = map.get(&(self.base + b as u64)) {
                return Ok((md, self.base + b as u64, self.base + e as u64));
            }
            if j == 0 {
                break;
            }
            j -= 1;
        }
        Err(crate::ClrError::not_found_at(
            format!("the method of RUNTIME_FUNCTION {i}"),
            self.base,
            "the runtime's entry point map has none for it (or the 64 before it)",
        ))
    }

    /// The debug info blob of the method whose code starts at `method_start`
    /// (`ReadyToRunInfo::GetDebugInfo`: the DebugInfo section's NativeArray entry at the
    /// method's RUNTIME_FUNCTION index is a NativeFormat unsigned `lookBack`; the blob is
    /// `lookBack` bytes before the entry when non-zero, else right after it). The slice runs
    /// to the section's end: the blob decodes its own size.
    pub fn debug_info<M: Memory + ?Sized>(
        &self,
        mem: &M,
        method_start: u64,
    ) -> crate::Result<&[u8]> {
        let ds = self.debug_info.as_ref().map_err(|e| e.clone())?;
        let sec = &ds.bytes[..];
        let what = "the ReadyToRun DebugInfo section";
        // Past the part the dump holds: not in the dump (not a corrupt section).
        let partial = |i: u32| {
            (sec.len() < ds.size as usize).then(|| {
                crate::ClrError::read(
                    format!(
                        "{what} ({} bytes; the dump holds its first {}): entry {i}",
                        ds.size,
                        sec.len()
                    ),
                    ds.at + sec.len() as u64,
                )
            })
        };
        let i = self.function_index(mem, method_start)?.ok_or_else(|| {
            crate::ClrError::not_found_at(
                "RUNTIME_FUNCTION",
                method_start,
                "none covers the method",
            )
        })?;
        let arr = NativeArray::new(sec).ok_or_else(|| {
            partial(i).unwrap_or_else(|| {
                crate::ClrError::corrupt(what, self.base, "no NativeArray header")
            })
        })?;
        let off = arr.get(i).ok_or_else(|| {
            partial(i).unwrap_or_else(|| {
                crate::ClrError::not_found_at(
                    "debug info",
                    method_start,
                    format!("{what} has no entry {i} (of {})", arr.count),
                )
            })
        })?;
        let (look_back, next) = decode_unsigned(sec, off).ok_or_else(|| {
            partial(i).unwrap_or_else(|| {
                crate::ClrError::corrupt(what, self.base, format!("entry {i} truncated"))
            })
        })?;
        let at = if look_back != 0 {
            off.checked_sub(look_back).ok_or_else(|| {
                crate::ClrError::corrupt(
                    what,
                    self.base,
                    format!("entry {i} looks back {look_back} bytes"),
                )
            })?
        } else {
            next
        };
        match sec.get(at as usize..) {
            Some(b) if !b.is_empty() => Ok(b),
            _ => Err(partial(i).unwrap_or_else(|| {
                crate::ClrError::corrupt(what, self.base, format!("entry {i} at {at}"))
            })),
        }
    }

    /// The index of the RUNTIME_FUNCTION covering `ip`.
    pub fn function_index<M: Memory + ?Sized>(
        &self,
        mem: &M,
        ip: u64,
    ) -> crate::Result<Option<u32>> {
        let Some(rva) = ip
            .checked_sub(self.base)
            .and_then(|r| u32::try_from(r).ok())
        else {
            return Ok(None);
        };
        self.search(mem, rva)
    }

    /// The RUNTIME_FUNCTION covering `ip`, the method's start and the end of its entry
    /// RUNTIME_FUNCTION, and its MethodDef rid (when the method is in MethodDefEntryPoints;
    /// generic instantiations are not).
    pub fn lookup<M: Memory + ?Sized>(&self, mem: &M, ip: u64) -> crate::Result<Option<R2rMethod>> {
        let Some(rva) = ip
            .checked_sub(self.base)
            .and_then(|r| u32::try_from(r).ok())
        else {
            return Ok(None);
        };
        let Some(i) = self.search(mem, rva)? else {
            return Ok(None);
        };
        let (b, e, u) = self.function(mem, i)?;
        if rva >= e {
            return Ok(None);
        }
        let rf = RuntimeFunction {
            base: self.base,
            begin: b,
            end: e,
            unwind: u,
        };
        // Funclets and cold parts follow their method: walk back to an entry point.
        let mut j = i;
        for _ in 0..64 {
            if let Some(&rid) = self.entry_to_rid.get(&j) {
                let (b, e, _) = self.function(mem, j)?;
                return Ok(Some((
                    rf,
                    self.base + b as u64,
                    self.base + e as u64,
                    Some(rid),
                )));
            }
            if j == 0 || self.entry_to_rid.is_empty() {
                break;
            }
            j -= 1;
        }
        Ok(Some((rf, self.base + b as u64, self.base + e as u64, None)))
    }
}

/// `ReadyToRunInfo::m_entryPointToMethodDescMap` of the Module at `module` (whose R2R header
/// is at `header`), read from the pages the dump has: entry point → MethodDesc.
///
/// HashMap (vm/hash.h): `m_rgBuckets[0]` holds the bucket count, the buckets follow, each
/// four keys then four values; PtrHashMap stores a value shifted right by one, and the top bit
/// of a value is HashMap's collision flag.
fn entry_point_map<M: Memory>(
    rt: &Runtime<M>,
    module: u64,
    header: u64,
) -> crate::Result<HashMap<u64, u64>> {
    let m = rt.memory();
    // Module::m_pReadyToRunInfo and the entry point map's buckets (.NET 8: verified on the
    // corpus, the ReadyToRunInfo's `m_pModule` is the Module and its `m_pHeader` the image's
    // READYTORUN_HEADER, both checked on use; .NET 10: the descriptor's, `m_pHeader` checked).
    let l = rt.layout.stack();
    let (info_off, buckets_off) = (l.module_r2r_info, l.r2r_info_entry_map_buckets);
    let rd = |a: u64, what: &str| m.read_u64(a).map_err(|_| crate::ClrError::read(what, a));
    let info = rd(module + info_off, "Module::m_pReadyToRunInfo")?;
    let module_ok = match l.r2r_info_module {
        Some(o) => rd(info + o, "ReadyToRunInfo::m_pModule")? == module,
        None => true,
    };
    if !module_ok || rd(info + l.r2r_info_header, "ReadyToRunInfo::m_pHeader")? != header {
        return Err(crate::ClrError::corrupt(
            "Module",
            module,
            format!("{info:#x} is not its ReadyToRunInfo (m_pModule, m_pHeader differ)"),
        ));
    }
    let buckets = rd(info + buckets_off, "the entry point map's buckets")?;
    let count = rd(buckets, "the entry point map's bucket count")?;
    if count == 0 || count > MAX_BUCKETS {
        return Err(crate::ClrError::corrupt(
            "the entry point map",
            buckets,
            format!("claims {count} buckets"),
        ));
    }
    let mut map = HashMap::new();
    let mut add = |bk: &[u8]| {
        let w = |k: usize| u64::from_le_bytes(bk[8 * k..8 * k + 8].try_into().unwrap());
        for k in 0..4 {
            let (key, v) = (w(k), w(4 + k) & !(1u64 << 63));
            if key > 1 && v != 0 {
                map.insert(key, v << 1);
            }
        }
    };
    // 64 buckets at a time; where the dump lacks some of them, one by one.
    const CHUNK: u64 = 64;
    let mut buf = vec![0u8; (64 * CHUNK) as usize];
    let mut i = 1;
    while i <= count {
        let n = CHUNK.min(count + 1 - i);
        let a = buckets + 64 * i;
        let want = (64 * n) as usize;
        if m.read(a, &mut buf[..want]) == want {
            buf[..want].chunks_exact(64).for_each(&mut add);
        } else {
            for k in 0..n {
                let mut one = [0u8; 64];
                if m.read_exact(a + 64 * k, &mut one).is_ok() {
                    add(&one);
                }
            }
        }
        i += n;
    }
    Ok(map)
}

/// NativeFormat's variable-length unsigned integer at `off`: (value, next offset).
fn decode_unsigned(b: &[u8], off: u32) -> Option<(u32, u32)> {
    let o = off as usize;
    let v = *b.get(o)? as u32;
    let g = |k: usize| b.get(o + k).map(|&x| x as u32);
    Some(if v & 1 == 0 {
        (v >> 1, off + 1)
    } else if v & 2 == 0 {
        ((v >> 2) | g(1)? << 6, off + 2)
    } else if v & 4 == 0 {
        ((v >> 3) | g(1)? << 5 | g(2)? << 13, off + 3)
    } else if v & 8 == 0 {
        ((v >> 4) | g(1)? << 4 | g(2)? << 12 | g(3)? << 20, off + 4)
    } else if v & 16 == 0 {
        (g(1)? | g(2)? << 8 | g(3)? << 16 | g(4)? << 24, off + 5)
    } else {
        return None;
    })
}

/// NativeFormat's NativeArray (NativeFormatReader.h), at offset 0 of its section.
struct NativeArray<'a> {
    b: &'a [u8],
    base: u32,
    count: u32,
    entry_size: u32,
}

const BLOCK_SIZE: u32 = 16;

impl<'a> NativeArray<'a> {
    fn new(b: &'a [u8]) -> Option<NativeArray<'a>> {
        let (val, base) = decode_unsigned(b, 0)?;
        Some(NativeArray {
            b,
            base,
            count: val >> 2,
            entry_size: val & 3,
        })
    }

    fn rd(&self, off: u32, size: u32) -> Option<u32> {
        let o = off as usize;
        let s = self.b.get(o..o + size as usize)?;
        Some(match size {
            1 => s[0] as u32,
            2 => u16::from_le_bytes([s[0], s[1]]) as u32,
            _ => u32::from_le_bytes([s[0], s[1], s[2], s[3]]),
        })
    }

    fn get(&self, index: u32) -> Option<u32> {
        if index >= self.count {
            return None;
        }
        let size = 1u32 << self.entry_size.min(2);
        let mut offset = self.rd(self.base + size * (index / BLOCK_SIZE), size)? + self.base;
        let mut bit = BLOCK_SIZE >> 1;
        while bit > 0 {
            let (val, offset2) = decode_unsigned(self.b, offset)?;
            if index & bit != 0 {
                if val & 2 != 0 {
                    offset += val >> 2;
                    bit >>= 1;
                    continue;
                }
            } else if val & 1 != 0 {
                offset = offset2;
                bit >>= 1;
                continue;
            }
            if val & 3 == 0 && (val >> 2) == (index & (BLOCK_SIZE - 1)) {
                offset = offset2;
                break;
            }
            return None;
        }
        Some(offset)
    }
}
