//! Windows minidumps: header and directory checked here (precise errors), memory lists parsed
//! here (zero-copy offsets), other streams through the `minidump` crate.

use crate::bytes::{le_u32, le_u64};
use crate::memory::{RawSegment, Segment};
use crate::types::*;
use crate::{Error, Parsed, RegionInfo};
use minidump::Module as _;

const STREAM_THREAD_LIST: u32 = 3;
const STREAM_MEMORY_LIST: u32 = 5;
const STREAM_MEMORY64_LIST: u32 = 9;

/// Most streams accepted in the directory.
pub const MAX_STREAMS: u64 = 4096;
/// Most memory descriptors accepted in a memory list.
pub const MAX_RANGES: u64 = 10_000_000;

fn get(data: &[u8], off: u64, len: u64) -> Option<&[u8]> {
    let st = usize::try_from(off).ok()?;
    let l = usize::try_from(len).ok()?;
    data.get(st..st.checked_add(l)?)
}

/// Adds one range of a minidump memory list (`(address, size, file offset)`), clipped where
/// the file ends before its bytes (a recoverable problem, said so).
fn push_range(
    segs: &mut Vec<RawSegment>,
    warnings: &mut Vec<Error>,
    strict: bool,
    index: usize,
    (start, size, rva): (u64, u64, u64),
    file_len: u64,
) -> Result<(), Error> {
    let avail = file_len.saturating_sub(rva);
    let mut fsize = size;
    if size > avail {
        let e = Error::SegmentOutsideFile {
            index,
            address: start,
            offset: rva,
            size,
            file_len,
        };
        crate::error::recoverable(e, strict, warnings)?;
        fsize = avail;
    }
    segs.push(RawSegment {
        index,
        quiet: false,
        seg: Segment {
            addr: start,
            mem_size: fsize,
            file_off: rva,
            file_size: fsize,
            perms: None,
        },
    });
    Ok(())
}

fn stream_name(t: u32) -> String {
    let n = match t {
        3 => "ThreadList",
        4 => "ModuleList",
        5 => "MemoryList",
        6 => "Exception",
        7 => "SystemInfo",
        9 => "Memory64List",
        15 => "MiscInfo",
        16 => "MemoryInfoList",
        17 => "ThreadInfoList",
        24 => "ThreadNames",
        _ => return format!("stream type {t}"),
    };
    n.to_string()
}

struct Dir {
    stype: u32,
    size: u64,
    rva: u64,
}

/// Parses the memory, thread and module streams of a minidump.
pub(crate) fn parse(data: &[u8], strict: bool) -> Result<Parsed, Error> {
    let file_len = data.len() as u64;
    let hdr =
        get(data, 0, 32).ok_or_else(|| Error::truncated("minidump header", 0, 32, file_len))?;
    if &hdr[0..4] != b"MDMP" {
        return Err(Error::BadMagic {
            found: hdr[..8].to_vec(),
        });
    }
    if le_u32(hdr, 4) & 0xffff != 0xa793 {
        return Err(Error::malformed(
            "minidump header",
            4,
            format!("version {:#x} (expected low word 0xa793)", le_u32(hdr, 4)),
        ));
    }
    let count = le_u32(hdr, 8) as u64;
    let dir_rva = le_u32(hdr, 12) as u64;
    if count > MAX_STREAMS {
        return Err(Error::AbsurdCount {
            structure: "minidump stream count".into(),
            offset: 8,
            count,
            max: MAX_STREAMS,
        });
    }
    let mut warnings = Vec::new();
    let mut dirs = Vec::with_capacity(count as usize);
    for i in 0..count {
        let off = dir_rva + 12 * i;
        let d = get(data, off, 12).ok_or_else(|| {
            Error::truncated(format!("stream directory entry {i}"), off, 12, file_len)
        })?;
        let dir = Dir {
            stype: le_u32(d, 0),
            size: le_u32(d, 4) as u64,
            rva: le_u32(d, 8) as u64,
        };
        if dir.stype != 0 && get(data, dir.rva, dir.size).is_none() {
            let e = Error::truncated(
                format!("stream {i} ({})", stream_name(dir.stype)),
                dir.rva,
                dir.size,
                file_len,
            );
            crate::error::recoverable(e, strict, &mut warnings)?;
            continue;
        }
        dirs.push(dir);
    }
    let find = |t: u32| dirs.iter().find(|d| d.stype == t);

    // ---- memory ----------------------------------------------------------------------
    let mut segs: Vec<RawSegment> = Vec::new();
    let mut seg_index = 0usize;
    if let Some(d) = find(STREAM_MEMORY64_LIST) {
        let s = get(data, d.rva, d.size).unwrap_or(&[]);
        if s.len() < 16 {
            let e = Error::truncated("Memory64List header", d.rva, 16, d.rva + d.size);
            crate::error::recoverable(e, strict, &mut warnings)?;
        } else {
            let n = le_u64(s, 0);
            let mut rva = le_u64(s, 8);
            let max = ((s.len() as u64 - 16) / 16).min(MAX_RANGES);
            if n > max {
                let e = Error::AbsurdCount {
                    structure: "Memory64List count".into(),
                    offset: d.rva,
                    count: n,
                    max,
                };
                crate::error::recoverable(e, strict, &mut warnings)?;
            }
            for i in 0..n.min(max) as usize {
                let start = le_u64(s, 16 + 16 * i);
                let size = le_u64(s, 24 + 16 * i);
                push_range(
                    &mut segs,
                    &mut warnings,
                    strict,
                    seg_index,
                    (start, size, rva),
                    file_len,
                )?;
                seg_index += 1;
                rva = rva.saturating_add(size);
            }
        }
    }
    if let Some(d) = find(STREAM_MEMORY_LIST) {
        let s = get(data, d.rva, d.size).unwrap_or(&[]);
        let n = le_u32(s, 0) as u64;
        // Some writers pad the count to 8 bytes.
        let base = if s.len() as u64 == 8 + 16 * n { 8 } else { 4 };
        let max = ((s.len() as u64).saturating_sub(base as u64) / 16).min(MAX_RANGES);
        if s.len() < 4 || n > max {
            let e = Error::AbsurdCount {
                structure: "MemoryList count".into(),
                offset: d.rva,
                count: n,
                max,
            };
            crate::error::recoverable(e, strict, &mut warnings)?;
        }
        for i in 0..n.min(max) as usize {
            let o = base + 16 * i;
            let start = le_u64(s, o);
            let size = le_u32(s, o + 8) as u64;
            let rva = le_u32(s, o + 12) as u64;
            push_range(
                &mut segs,
                &mut warnings,
                strict,
                seg_index,
                (start, size, rva),
                file_len,
            )?;
            seg_index += 1;
        }
    }

    // ---- other streams through the minidump crate --------------------------------------
    let md = match minidump::Minidump::read(data) {
        Ok(m) => Some(m),
        Err(e) => {
            let err = Error::malformed("minidump header", 0, format!("minidump crate: {e}"));
            crate::error::recoverable(err, strict, &mut warnings)?;
            None
        }
    };
    let mut os = Os::Windows;
    let mut arch = Arch::X86_64;
    let mut pid = None;
    let mut exception = None;
    let mut threads = Vec::new();
    let mut modules = Vec::new();
    let mut regions = Vec::new();
    if let Some(md) = &md {
        let soft = |warnings: &mut Vec<Error>, what: &str, e: minidump::Error| {
            // StreamNotFound is normal: the stream is optional.
            if !matches!(e, minidump::Error::StreamNotFound) {
                let off = dirs
                    .iter()
                    .find(|d| stream_name(d.stype) == what)
                    .map(|d| d.rva)
                    .unwrap_or(0);
                warnings.push(Error::malformed(
                    format!("{what} stream"),
                    off,
                    e.to_string(),
                ));
            }
        };
        match md.get_stream::<minidump::MinidumpSystemInfo>() {
            Ok(si) => {
                os = match si.raw.platform_id {
                    0..=2 => Os::Windows,
                    0x8201 => Os::Linux,
                    p => Os::Other(p),
                };
                arch = match si.raw.processor_architecture {
                    9 => Arch::X86_64,
                    a => Arch::Other(a as u32),
                };
            }
            Err(e) => soft(&mut warnings, "SystemInfo", e),
        }
        if arch != Arch::X86_64 {
            return Err(Error::Unsupported {
                what: format!("minidump processor architecture {arch:?} (only AMD64)"),
            });
        }
        match md.get_stream::<minidump::MinidumpMiscInfo>() {
            Ok(mi) => pid = mi.raw.process_id().copied(),
            Err(e) => soft(&mut warnings, "MiscInfo", e),
        }
        match md.get_stream::<minidump::MinidumpException>() {
            Ok(ex) => {
                let r = &ex.raw.exception_record;
                let np = (r.number_parameters as usize).min(r.exception_information.len());
                exception = Some(ExceptionInfo {
                    code: r.exception_code,
                    address: r.exception_address,
                    thread_id: ex.thread_id,
                    flags: r.exception_flags,
                    parameters: r.exception_information[..np].to_vec(),
                })
            }
            Err(e) => soft(&mut warnings, "Exception", e),
        }
        let names = md.get_stream::<minidump::MinidumpThreadNames>().ok();
        let tinfo = md.get_stream::<minidump::MinidumpThreadInfoList>().ok();
        match md.get_stream::<minidump::MinidumpThreadList>() {
            Ok(tl) => {
                for t in &tl.threads {
                    let raw = &t.raw;
                    let loc = &raw.thread_context;
                    let ctx = match get(data, loc.rva as u64, loc.data_size as u64) {
                        Some(b) => match parse_context(b, loc.rva as u64) {
                            Ok(c) => c,
                            Err(e) => {
                                crate::error::recoverable(e, strict, &mut warnings)?;
                                X64Context::default()
                            }
                        },
                        None => {
                            let e = Error::truncated(
                                format!("context of thread {}", raw.thread_id),
                                loc.rva as u64,
                                loc.data_size as u64,
                                file_len,
                            );
                            crate::error::recoverable(e, strict, &mut warnings)?;
                            X64Context::default()
                        }
                    };
                    let sd = &raw.stack;
                    let sstart = sd.start_of_memory_range;
                    let ssize = sd.memory.data_size as u64;
                    let stack = if ssize > 0 {
                        Some((sstart, sstart.saturating_add(ssize)))
                    } else {
                        None
                    };
                    if sd.memory.rva != 0
                        && ssize > 0
                        && get(data, sd.memory.rva as u64, ssize).is_some()
                    {
                        // Stack bytes stored with the thread: serve them too (normally also in the
                        // memory list, in which case the list's copy wins quietly).
                        segs.push(RawSegment {
                            index: seg_index,
                            quiet: true,
                            seg: Segment {
                                addr: sstart,
                                mem_size: ssize,
                                file_off: sd.memory.rva as u64,
                                file_size: ssize,
                                perms: None,
                            },
                        });
                        seg_index += 1;
                    }
                    let name = names
                        .as_ref()
                        .and_then(|n| n.get_name(raw.thread_id))
                        .map(|c| c.into_owned());
                    let start_address = tinfo
                        .as_ref()
                        .and_then(|ti| {
                            ti.thread_infos
                                .iter()
                                .find(|x| x.raw.thread_id == raw.thread_id)
                        })
                        .map(|x| x.raw.start_address);
                    let mut context = ctx;
                    if raw.teb != 0 && context.gs_base == 0 {
                        context.gs_base = raw.teb;
                    }
                    threads.push(ThreadInfo {
                        id: raw.thread_id,
                        context,
                        stack,
                        teb: Some(raw.teb),
                        name,
                        signal: 0,
                        start_address,
                    });
                }
            }
            Err(e) => soft(&mut warnings, "ThreadList", e),
        }
        match md.get_stream::<minidump::MinidumpModuleList>() {
            Ok(ml) => {
                for m in ml.iter() {
                    let r = &m.raw;
                    modules.push(ModuleInfo {
                        path: m.name.clone(),
                        base: r.base_of_image,
                        end: r.base_of_image.saturating_add(r.size_of_image as u64),
                        kind: if os == Os::Windows
                            || m.name.to_ascii_lowercase().ends_with(".dll")
                            || m.name.to_ascii_lowercase().ends_with(".exe")
                        {
                            ModuleKind::Pe
                        } else {
                            ModuleKind::Elf
                        },
                        identity: if os == Os::Windows {
                            Some(ModuleIdentity::Pe {
                                timestamp: r.time_date_stamp,
                                size_of_image: r.size_of_image,
                            })
                        } else {
                            None
                        },
                        mappings: Vec::new(),
                        debug_file: m.debug_file().map(|c| c.into_owned()),
                        debug_id: m.debug_identifier().map(|d| d.breakpad().to_string()),
                    });
                }
            }
            Err(e) => soft(&mut warnings, "ModuleList", e),
        }
        if let Ok(mil) = md.get_stream::<minidump::MinidumpMemoryInfoList>() {
            for r in mil.iter() {
                regions.push(RegionInfo {
                    base: r.raw.base_address,
                    size: r.raw.region_size,
                    allocation_base: r.raw.allocation_base,
                    state: r.raw.state,
                    protect: r.raw.protection,
                    allocation_protect: r.raw.allocation_protection,
                    kind: r.raw._type,
                });
            }
        }
    } else {
        let _ = STREAM_THREAD_LIST;
    }
    let main_thread = threads.first().map(|t| t.id);
    let crashing_thread = exception.as_ref().map(|e| e.thread_id);
    let info = DumpInfo {
        format: DumpFormat::Minidump,
        os,
        arch,
        pid,
        exception,
        crashing_thread,
        main_thread,
        process_name: None,
        command_line: None,
        auxv: Vec::new(),
        // MINIDUMP_HEADER.TimeDateStamp (offset 20); 0 means not recorded.
        written_at: Some(le_u32(data, 20) as u64).filter(|&t| t != 0),
        warnings,
    };
    // Sorted by base, as `Target::modules` promises (a minidump's ModuleList is in load order;
    // `Dump::module_at` searches by base).
    modules.sort_by_key(|m| m.base);
    Ok(Parsed {
        info,
        threads,
        segments: segs,
        mappings: Vec::new(),
        modules: Some(modules),
        regions,
        producer: (
            DumpProducer::Minidump,
            vec!["'MDMP' signature".to_string()],
            Some(le_u64(hdr, 24)),
            dirs.iter()
                .filter(|d| d.stype != 0)
                .map(|d| stream_name(d.stype))
                .collect(),
        ),
    })
}

/// Parses an AMD64 `CONTEXT` record (at least through `Rip`; FXSAVE when flagged), with
/// [`crate::context::decode`]; a record too short or not AMD64 is malformed.
fn parse_context(b: &[u8], off: u64) -> Result<X64Context, Error> {
    use crate::context::{CONTEXT_AMD64, CONTEXT_MIN_SIZE, OFF_CONTEXT_FLAGS};
    if b.len() < CONTEXT_MIN_SIZE {
        return Err(Error::malformed(
            "thread CONTEXT",
            off,
            format!(
                "size {:#x} < {CONTEXT_MIN_SIZE:#x} (not an AMD64 CONTEXT)",
                b.len()
            ),
        ));
    }
    let flags = le_u32(b, OFF_CONTEXT_FLAGS);
    if flags & CONTEXT_AMD64 == 0 {
        return Err(Error::malformed(
            "thread CONTEXT",
            off,
            format!("ContextFlags {flags:#x} lack CONTEXT_AMD64"),
        ));
    }
    crate::context::decode(b).ok_or_else(|| {
        Error::malformed(
            "thread CONTEXT",
            off,
            "shorter than its registers".to_string(),
        )
    })
}
