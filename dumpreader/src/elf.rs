//! Linux x86-64 ELF core files: program headers, PT_LOAD memory, PT_NOTE notes.

use crate::bytes::{le_u16, le_u32, le_u64};
use crate::memory::{Perms, RawSegment, Segment};
use crate::types::*;
use crate::{Error, Parsed};

const PT_LOAD: u32 = 1;
const PT_NOTE: u32 = 4;
const NT_PRSTATUS: u32 = 1;
const NT_PRFPREG: u32 = 2;
const NT_PRPSINFO: u32 = 3;
const NT_AUXV: u32 = 6;
const NT_SIGINFO: u32 = 0x5349_4749;
const NT_FILE: u32 = 0x4649_4c45;
const NT_X86_XSTATE: u32 = 0x202;

/// Most program headers accepted (createdump writes one per region; big dumps have tens of
/// thousands).
pub const MAX_PHNUM: u64 = 4_000_000;
/// Most NT_FILE entries accepted.
pub const MAX_FILE_ENTRIES: u64 = 1_000_000;
/// Most threads accepted.
pub const MAX_THREADS: usize = 100_000;

/// Size of an x86-64 `struct elf_prstatus` up to and including `pr_reg`.
const PRSTATUS_MIN: usize = 112 + 27 * 8;

fn get(data: &[u8], off: u64, len: u64) -> Option<&[u8]> {
    let st = usize::try_from(off).ok()?;
    let l = usize::try_from(len).ok()?;
    data.get(st..st.checked_add(l)?)
}

pub(crate) fn parse(data: &[u8], strict: bool) -> Result<Parsed, Error> {
    let file_len = data.len() as u64;
    let hdr = get(data, 0, 64).ok_or_else(|| Error::truncated("ELF header", 0, 64, file_len))?;
    if &hdr[0..4] != b"\x7fELF" {
        return Err(Error::BadMagic {
            found: hdr[..8].to_vec(),
        });
    }
    if hdr[4] != 2 {
        return Err(Error::Unsupported {
            what: format!("ELF class {} (only 64-bit cores)", hdr[4]),
        });
    }
    if hdr[5] != 1 {
        return Err(Error::Unsupported {
            what: format!("ELF data encoding {} (only little-endian)", hdr[5]),
        });
    }
    let e_type = le_u16(hdr, 0x10);
    if e_type != 4 {
        return Err(Error::malformed(
            "ELF header",
            0x10,
            format!("e_type {e_type} is not ET_CORE (4)"),
        ));
    }
    let machine = le_u16(hdr, 0x12);
    if machine != 62 {
        return Err(Error::Unsupported {
            what: format!("ELF machine {machine} (only x86-64, 62)"),
        });
    }
    let phoff = le_u64(hdr, 0x20);
    let shoff = le_u64(hdr, 0x28);
    let phentsize = le_u16(hdr, 0x36) as u64;
    let mut phnum = le_u16(hdr, 0x38) as u64;
    if phentsize < 56 {
        return Err(Error::malformed(
            "ELF header",
            0x36,
            format!("e_phentsize {phentsize} < 56"),
        ));
    }
    if phnum == 0xffff {
        // PN_XNUM: the real count is in section header 0's sh_info.
        let sh = get(data, shoff, 64)
            .ok_or_else(|| Error::truncated("section header 0 (PN_XNUM)", shoff, 64, file_len))?;
        phnum = le_u32(sh, 44) as u64;
    }
    if phnum > MAX_PHNUM {
        return Err(Error::AbsurdCount {
            structure: "ELF e_phnum".into(),
            offset: 0x38,
            count: phnum,
            max: MAX_PHNUM,
        });
    }
    let mut warnings = Vec::new();
    let mut segs = Vec::new();
    let mut notes: Vec<(u64, u64)> = Vec::new();
    for i in 0..phnum {
        let off = phoff.checked_add(i * phentsize).ok_or_else(|| {
            Error::truncated(format!("program header {i}"), u64::MAX, 56, file_len)
        })?;
        let ph = get(data, off, 56)
            .ok_or_else(|| Error::truncated(format!("program header {i}"), off, 56, file_len))?;
        let p_type = le_u32(ph, 0);
        let p_flags = le_u32(ph, 4);
        let p_offset = le_u64(ph, 8);
        let p_vaddr = le_u64(ph, 16);
        let p_filesz = le_u64(ph, 32);
        let p_memsz = le_u64(ph, 40);
        match p_type {
            PT_LOAD => {
                let mut file_size = p_filesz.min(p_memsz);
                let mut mem_size = p_memsz;
                let avail = file_len.saturating_sub(p_offset);
                if file_size > avail {
                    let e = Error::SegmentOutsideFile {
                        index: i as usize,
                        address: p_vaddr,
                        offset: p_offset,
                        size: p_filesz,
                        file_len,
                    };
                    crate::error::recoverable(e, strict, &mut warnings)?;
                    // What the file lacks is unknown, not zero: keep only the bytes present.
                    file_size = avail;
                    mem_size = avail;
                }
                segs.push(RawSegment {
                    index: i as usize,
                    quiet: false,
                    seg: Segment {
                        addr: p_vaddr,
                        mem_size,
                        file_off: p_offset,
                        file_size,
                        perms: Some(Perms {
                            read: p_flags & 4 != 0,
                            write: p_flags & 2 != 0,
                            exec: p_flags & 1 != 0,
                        }),
                    },
                });
            }
            PT_NOTE => {
                let avail = file_len.saturating_sub(p_offset);
                let mut size = p_filesz;
                if size > avail {
                    let e = Error::SegmentOutsideFile {
                        index: i as usize,
                        address: p_vaddr,
                        offset: p_offset,
                        size: p_filesz,
                        file_len,
                    };
                    crate::error::recoverable(e, strict, &mut warnings)?;
                    size = avail;
                }
                notes.push((p_offset, size));
            }
            _ => {}
        }
    }

    let mut st = NoteState::default();
    let osabi = hdr[7];
    let shnum = le_u16(hdr, 0x3c);
    for (off, size) in notes {
        parse_notes(data, off, size, strict, &mut st, &mut warnings)?;
    }

    let NoteState {
        threads,
        mappings,
        auxv,
        prpsinfo,
        siginfo_first,
        gdb_notes,
        xstate_notes,
        ..
    } = st;
    let producer = {
        let mut ev = Vec::new();
        let p = if gdb_notes > 0 || shnum > 0 {
            if gdb_notes > 0 {
                ev.push(format!("{gdb_notes} notes owned by \"GDB\""));
            }
            if shnum > 0 {
                ev.push(format!(
                    "{shnum} section headers (gdb writes them; the kernel and createdump do not)"
                ));
            }
            DumpProducer::Gcore
        } else if osabi == 3 && xstate_notes == 0 {
            ev.push(
                "EI_OSABI 3 (GNU/Linux) and no NT_X86_XSTATE notes, as createdump writes".into(),
            );
            DumpProducer::Createdump
        } else {
            ev.push(format!(
                "EI_OSABI {osabi}, {xstate_notes} NT_X86_XSTATE notes, no GDB notes: the kernel's layout"
            ));
            DumpProducer::Kernel
        };
        (p, ev, None, Vec::new())
    };
    let pid = prpsinfo
        .as_ref()
        .map(|p| p.pid)
        .or_else(|| threads.first().map(|t| t.0.id));
    let main_thread = pid
        .and_then(|p| threads.iter().find(|t| t.0.id == p).map(|t| t.0.id))
        .or_else(|| threads.first().map(|t| t.0.id));
    // The crashing thread: the first whose pr_cursig / pr_info.si_signo holds a fatal signal
    // (createdump marks the crash thread so, wherever it is in the list); else, when the
    // process-level NT_SIGINFO holds one, the first thread (the kernel writes the dumping thread
    // first).
    // Job-control and informational signals (SIGSTOP from gcore, say) are not exceptions.
    let fatal = |s: u32| s != 0 && !matches!(s, 17 | 18 | 19 | 20 | 21 | 22 | 23 | 28);
    let sig = siginfo_first.filter(|s| fatal(s.signo));
    let mut exception = None;
    let mut crashing_thread = None;
    // .NET Core 3.1's createdump writes SIGABRT into every thread's status, crash or not: a
    // signal that every thread carries, with no NT_SIGINFO, singles out no thread.
    let same_on_all = threads.len() > 1
        && siginfo_first.is_none()
        && threads.iter().all(|(t, _)| t.signal == threads[0].0.signal);
    if same_on_all {
        // no exception recorded
    } else if let Some((t, _)) = threads.iter().find(|(t, _)| fatal(t.signal)) {
        let (address, flags) = match sig {
            Some(s) if s.signo == t.signal => (s.addr, s.code),
            _ => (0, 0),
        };
        exception = Some(ExceptionInfo {
            code: t.signal,
            address,
            thread_id: t.id,
            flags,
            parameters: vec![],
        });
        crashing_thread = Some(t.id);
    } else if let (Some(s), Some((t, _))) = (sig, threads.first()) {
        exception = Some(ExceptionInfo {
            code: s.signo,
            address: s.addr,
            thread_id: t.id,
            flags: s.code,
            parameters: vec![],
        });
        crashing_thread = Some(t.id);
    }
    let info = DumpInfo {
        format: DumpFormat::ElfCore,
        os: Os::Linux,
        arch: Arch::X86_64,
        pid,
        exception,
        crashing_thread,
        main_thread,
        process_name: prpsinfo.as_ref().map(|p| p.fname.clone()),
        command_line: prpsinfo.as_ref().map(|p| p.psargs.clone()),
        auxv,
        written_at: None,
        warnings,
    };
    Ok(Parsed {
        info,
        threads: threads.into_iter().map(|t| t.0).collect(),
        segments: segs,
        mappings,
        modules: None,
        regions: Vec::new(),
        producer,
    })
}

#[derive(Clone, Copy)]
struct SigInfo {
    signo: u32,
    code: u32,
    addr: u64,
}

struct PrPsInfo {
    pid: u32,
    fname: String,
    psargs: String,
}

#[derive(Default)]
struct NoteState {
    /// Threads, each with whether its FXSAVE came from NT_PRFPREG (preferred over XSTATE).
    threads: Vec<(ThreadInfo, bool)>,
    mappings: Vec<FileMapping>,
    auxv: Vec<(u64, u64)>,
    prpsinfo: Option<PrPsInfo>,
    siginfo_first: Option<SigInfo>,
    /// Notes owned by "GDB" (gcore writes NT_GDB_TDESC).
    gdb_notes: usize,
    /// NT_X86_XSTATE notes (the kernel and gcore write them; createdump does not).
    xstate_notes: usize,
}

fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

fn parse_notes(
    data: &[u8],
    off: u64,
    size: u64,
    strict: bool,
    st: &mut NoteState,
    warnings: &mut Vec<Error>,
) -> Result<(), Error> {
    let file_len = data.len() as u64;
    let Some(seg) = get(data, off, size) else {
        return Ok(());
    };
    let mut p: usize = 0;
    let mut n = 0usize;
    while p < seg.len() {
        let note_off = off + p as u64;
        let Some(h) = seg.get(p..p + 12) else {
            let e = Error::truncated(
                format!("note header {n}"),
                note_off,
                12,
                file_len.min(off + size),
            );
            crate::error::recoverable(e, strict, warnings)?;
            break;
        };
        let namesz = le_u32(h, 0) as usize;
        let descsz = le_u32(h, 4) as usize;
        let ntype = le_u32(h, 8);
        let name_start = p + 12;
        let desc_start = name_start.checked_add(namesz.next_multiple_of(4));
        let end = desc_start.and_then(|d| d.checked_add(descsz.next_multiple_of(4)));
        let (Some(desc_start), Some(end)) = (desc_start, end) else {
            break;
        };
        // The last note's padding may be missing; only the desc itself must fit.
        let (Some(name), Some(desc)) = (
            seg.get(name_start..name_start + namesz),
            seg.get(desc_start..desc_start.saturating_add(descsz)),
        ) else {
            let e = Error::truncated(
                format!("note {n} (type {ntype:#x})"),
                note_off,
                (end - p) as u64,
                file_len.min(off + size),
            );
            crate::error::recoverable(e, strict, warnings)?;
            break;
        };
        let name = cstr(name);
        let desc_off = off + desc_start as u64;
        if name == "GDB" {
            st.gdb_notes += 1;
        }
        if name == "LINUX" && ntype == NT_X86_XSTATE {
            st.xstate_notes += 1;
        }
        if name == "CORE" || name == "LINUX" {
            if let Err(e) = handle_note(ntype, &name, desc, desc_off, st) {
                crate::error::recoverable(e, strict, warnings)?;
            }
        }
        p = end;
        n += 1;
    }
    Ok(())
}

fn handle_note(
    ntype: u32,
    name: &str,
    desc: &[u8],
    desc_off: u64,
    st: &mut NoteState,
) -> Result<(), Error> {
    match (ntype, name) {
        (NT_PRSTATUS, "CORE") => {
            if desc.len() < PRSTATUS_MIN {
                return Err(Error::malformed(
                    "NT_PRSTATUS",
                    desc_off,
                    format!("size {} < {PRSTATUS_MIN}", desc.len()),
                ));
            }
            if st.threads.len() >= MAX_THREADS {
                return Err(Error::AbsurdCount {
                    structure: "NT_PRSTATUS notes".into(),
                    offset: desc_off,
                    count: st.threads.len() as u64 + 1,
                    max: MAX_THREADS as u64,
                });
            }
            let cursig = match le_u16(desc, 12) as u32 {
                0 => le_u32(desc, 0), // pr_info.si_signo
                c => c,
            };
            let tid = le_u32(desc, 32);
            let r = |i: usize| le_u64(desc, 112 + 8 * i);
            let ctx = X64Context {
                r15: r(0),
                r14: r(1),
                r13: r(2),
                r12: r(3),
                rbp: r(4),
                rbx: r(5),
                r11: r(6),
                r10: r(7),
                r9: r(8),
                r8: r(9),
                rax: r(10),
                rcx: r(11),
                rdx: r(12),
                rsi: r(13),
                rdi: r(14),
                orig_rax: r(15),
                rip: r(16),
                cs: r(17) as u16,
                rflags: r(18),
                rsp: r(19),
                ss: r(20) as u16,
                fs_base: r(21),
                gs_base: r(22),
                ds: r(23) as u16,
                es: r(24) as u16,
                fs: r(25) as u16,
                gs: r(26) as u16,
                fxsave: None,
            };
            st.threads.push((
                ThreadInfo {
                    id: tid,
                    context: ctx,
                    stack: None,
                    teb: None,
                    name: None,
                    signal: cursig,
                    start_address: None,
                },
                false,
            ));
        }
        (NT_PRFPREG, "CORE") => {
            if let Some((t, from_prfpreg)) = st.threads.last_mut() {
                if let Some(fx) = desc.get(..512) {
                    let mut b = Box::new([0u8; 512]);
                    b.copy_from_slice(fx);
                    t.context.fxsave = Some(b);
                    *from_prfpreg = true;
                }
            }
        }
        (NT_X86_XSTATE, "LINUX") => {
            if let Some((t, from_prfpreg)) = st.threads.last_mut() {
                if !*from_prfpreg {
                    if let Some(fx) = desc.get(..512) {
                        let mut b = Box::new([0u8; 512]);
                        b.copy_from_slice(fx);
                        t.context.fxsave = Some(b);
                    }
                }
            }
        }
        (NT_PRPSINFO, "CORE") => {
            if desc.len() < 136 {
                return Err(Error::malformed(
                    "NT_PRPSINFO",
                    desc_off,
                    format!("size {} < 136", desc.len()),
                ));
            }
            st.prpsinfo = Some(PrPsInfo {
                pid: le_u32(desc, 24),
                fname: cstr(&desc[40..56]),
                psargs: cstr(&desc[56..136]).trim_end().to_string(),
            });
        }
        (NT_AUXV, "CORE") => {
            st.auxv = desc
                .chunks_exact(16)
                .map(|c| (le_u64(c, 0), le_u64(c, 8)))
                .take_while(|&(t, _)| t != 0)
                .collect();
        }
        (NT_SIGINFO, "CORE") if desc.len() >= 24 => {
            {
                let signo = le_u32(desc, 0);
                let code = le_u32(desc, 8);
                // si_addr is meaningful for the fault signals only.
                let addr = if matches!(signo, 4 | 5 | 7 | 8 | 11) {
                    le_u64(desc, 16)
                } else {
                    0
                };
                let s = SigInfo { signo, code, addr };
                // One per process (kernel: after the first thread's NT_PRSTATUS; createdump:
                // after all threads). The first one wins.
                if st.siginfo_first.is_none() {
                    st.siginfo_first = Some(s);
                }
            }
        }
        (NT_FILE, "CORE") => {
            if desc.len() < 16 {
                return Err(Error::malformed(
                    "NT_FILE",
                    desc_off,
                    format!("size {} < 16", desc.len()),
                ));
            }
            let count = le_u64(desc, 0);
            let page = le_u64(desc, 8);
            let max = ((desc.len() as u64 - 16) / 24).min(MAX_FILE_ENTRIES);
            if count > max {
                return Err(Error::AbsurdCount {
                    structure: "NT_FILE count".into(),
                    offset: desc_off,
                    count,
                    max,
                });
            }
            let names_start = 16 + 24 * count as usize;
            let mut names = desc[names_start..].split(|&c| c == 0);
            let mut out = Vec::with_capacity(count as usize);
            for i in 0..count as usize {
                let e = &desc[16 + 24 * i..16 + 24 * i + 24];
                let Some(name) = names.next() else {
                    return Err(Error::malformed(
                        "NT_FILE",
                        desc_off,
                        format!("{count} entries but only {i} names"),
                    ));
                };
                out.push(FileMapping {
                    start: le_u64(e, 0),
                    end: le_u64(e, 8),
                    file_offset: le_u64(e, 16).saturating_mul(page),
                    path: String::from_utf8_lossy(name).into_owned(),
                });
            }
            out.sort_by_key(|m| m.start);
            st.mappings = out;
        }
        _ => {}
    }
    Ok(())
}
