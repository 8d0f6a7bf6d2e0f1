//! Unit tests on small hand-built ELF cores and minidumps.

use crate::*;

// ---------------------------------------------------------------------------------------
// Builders

fn p16(v: &mut Vec<u8>, x: u16) {
    v.extend_from_slice(&x.to_le_bytes());
}
fn p32(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_le_bytes());
}
fn p64(v: &mut Vec<u8>, x: u64) {
    v.extend_from_slice(&x.to_le_bytes());
}
fn pad_to(v: &mut Vec<u8>, align: usize) {
    while !v.len().is_multiple_of(align) {
        v.push(0);
    }
}
fn put32(v: &mut [u8], off: usize, x: u32) {
    v[off..off + 4].copy_from_slice(&x.to_le_bytes());
}
fn put64(v: &mut [u8], off: usize, x: u64) {
    v[off..off + 8].copy_from_slice(&x.to_le_bytes());
}

/// One PT_LOAD: address, bytes in the file, memsz (>= bytes.len()), flags.
struct Load {
    vaddr: u64,
    bytes: Vec<u8>,
    memsz: u64,
    flags: u32,
}

#[derive(Default)]
struct CoreBuilder {
    loads: Vec<Load>,
    notes: Vec<(&'static str, u32, Vec<u8>)>,
}

const PH0: usize = 64; // program headers start
const PHSZ: usize = 56;

impl CoreBuilder {
    fn load(mut self, vaddr: u64, bytes: Vec<u8>) -> Self {
        let memsz = bytes.len() as u64;
        self.loads.push(Load {
            vaddr,
            bytes,
            memsz,
            flags: 6,
        });
        self
    }
    fn load_zero_tail(mut self, vaddr: u64, bytes: Vec<u8>, memsz: u64) -> Self {
        self.loads.push(Load {
            vaddr,
            bytes,
            memsz,
            flags: 4,
        });
        self
    }
    fn note(mut self, name: &'static str, ty: u32, desc: Vec<u8>) -> Self {
        self.notes.push((name, ty, desc));
        self
    }
    /// ELF header, PT_NOTE first, then PT_LOADs; note data; load data.
    fn build(&self) -> Vec<u8> {
        let phnum = 1 + self.loads.len();
        let mut notes = Vec::new();
        for (name, ty, desc) in &self.notes {
            p32(&mut notes, name.len() as u32 + 1);
            p32(&mut notes, desc.len() as u32);
            p32(&mut notes, *ty);
            notes.extend_from_slice(name.as_bytes());
            notes.push(0);
            pad_to(&mut notes, 4);
            notes.extend_from_slice(desc);
            pad_to(&mut notes, 4);
        }
        let notes_off = PH0 + PHSZ * phnum;
        let mut data_off = notes_off + notes.len();
        data_off = data_off.next_multiple_of(16);
        let mut v = Vec::new();
        v.extend_from_slice(b"\x7fELF\x02\x01\x01\0");
        v.resize(16, 0);
        p16(&mut v, 4); // ET_CORE
        p16(&mut v, 62); // x86-64
        p32(&mut v, 1);
        p64(&mut v, 0); // entry
        p64(&mut v, PH0 as u64); // phoff
        p64(&mut v, 0); // shoff
        p32(&mut v, 0); // flags
        p16(&mut v, 64); // ehsize
        p16(&mut v, PHSZ as u16);
        p16(&mut v, phnum as u16);
        p16(&mut v, 64); // shentsize
        p16(&mut v, 0);
        p16(&mut v, 0);
        assert_eq!(v.len(), 64);
        // PT_NOTE
        p32(&mut v, 4);
        p32(&mut v, 4);
        p64(&mut v, notes_off as u64);
        p64(&mut v, 0);
        p64(&mut v, 0);
        p64(&mut v, notes.len() as u64);
        p64(&mut v, 0);
        p64(&mut v, 4);
        let mut off = data_off;
        let mut offs = Vec::new();
        for l in &self.loads {
            offs.push(off);
            p32(&mut v, 1);
            p32(&mut v, l.flags);
            p64(&mut v, off as u64);
            p64(&mut v, l.vaddr);
            p64(&mut v, 0);
            p64(&mut v, l.bytes.len() as u64);
            p64(&mut v, l.memsz);
            p64(&mut v, 0x1000);
            off += l.bytes.len().next_multiple_of(16);
        }
        v.extend_from_slice(&notes);
        v.resize(data_off, 0);
        for (l, o) in self.loads.iter().zip(offs) {
            v.resize(o, 0);
            v.extend_from_slice(&l.bytes);
        }
        pad_to(&mut v, 16);
        v
    }
}

/// NT_PRSTATUS for thread `tid` with user_regs_struct[i] = base + i.
fn prstatus(tid: u32, regs_base: u64, cursig: u16) -> Vec<u8> {
    let mut d = vec![0u8; 336];
    d[12..14].copy_from_slice(&cursig.to_le_bytes());
    put32(&mut d, 32, tid);
    for i in 0..27 {
        put64(&mut d, 112 + 8 * i, regs_base + i as u64);
    }
    d
}

fn fxsave(marker: u8) -> Vec<u8> {
    let mut d = vec![0u8; 512];
    put32(&mut d, 24, 0x1f80);
    for (i, b) in d[160..176].iter_mut().enumerate() {
        *b = marker.wrapping_add(i as u8);
    }
    d
}

fn prpsinfo(pid: u32, fname: &str, args: &str) -> Vec<u8> {
    let mut d = vec![0u8; 136];
    put32(&mut d, 24, pid);
    d[40..40 + fname.len()].copy_from_slice(fname.as_bytes());
    d[56..56 + args.len()].copy_from_slice(args.as_bytes());
    d
}

fn nt_file(entries: &[(u64, u64, u64, &str)]) -> Vec<u8> {
    let mut d = Vec::new();
    p64(&mut d, entries.len() as u64);
    p64(&mut d, 0x1000);
    for (s, e, pg, _) in entries {
        p64(&mut d, *s);
        p64(&mut d, *e);
        p64(&mut d, *pg);
    }
    for (_, _, _, n) in entries {
        d.extend_from_slice(n.as_bytes());
        d.push(0);
    }
    d
}

fn siginfo(signo: u32, code: u32, addr: u64) -> Vec<u8> {
    let mut d = vec![0u8; 128];
    put32(&mut d, 0, signo);
    put32(&mut d, 8, code);
    put64(&mut d, 16, addr);
    d
}

/// A tiny ELF shared object laid out with vaddr == file offset: build id note, eh_frame_hdr,
/// .dynamic with DT_HASH/DT_SYMTAB/DT_STRTAB, and the given symbols (name, value, size).
fn tiny_elf(build_id: &[u8], syms: &[(&str, u64, u64)]) -> Vec<u8> {
    let mut v = vec![0u8; 64 + 4 * PHSZ];
    // note
    let note_off = v.len();
    p32(&mut v, 4);
    p32(&mut v, build_id.len() as u32);
    p32(&mut v, 3);
    v.extend_from_slice(b"GNU\0");
    v.extend_from_slice(build_id);
    pad_to(&mut v, 4);
    let note_len = v.len() - note_off;
    pad_to(&mut v, 8);
    // eh_frame_hdr: version 1, eh_frame_ptr pcrel|sdata4 pointing at 0x40 past the field
    let ehh = v.len();
    v.extend_from_slice(&[1, 0x1b, 0x03, 0x3b]);
    p32(&mut v, 0x40);
    p32(&mut v, 0);
    pad_to(&mut v, 8);
    // dynstr
    let strtab = v.len();
    v.push(0);
    let mut name_offs = Vec::new();
    for (n, _, _) in syms {
        name_offs.push(v.len() - strtab);
        v.extend_from_slice(n.as_bytes());
        v.push(0);
    }
    let soname_off = v.len() - strtab;
    v.extend_from_slice(b"libtiny.so\0");
    let strsz = v.len() - strtab;
    pad_to(&mut v, 8);
    // dynsym
    let symtab = v.len();
    v.extend_from_slice(&[0u8; 24]);
    for ((_, val, size), no) in syms.iter().zip(&name_offs) {
        p32(&mut v, *no as u32);
        v.push(0x12); // GLOBAL FUNC
        v.push(0);
        p16(&mut v, 1); // shndx
        p64(&mut v, *val);
        p64(&mut v, *size);
    }
    // hash: nbucket 1, nchain n+1
    let hash = v.len();
    let n = syms.len() as u32 + 1;
    p32(&mut v, 1);
    p32(&mut v, n);
    p32(&mut v, n - 1);
    for i in 0..n {
        p32(&mut v, i.saturating_sub(1));
    }
    pad_to(&mut v, 8);
    // dynamic
    let dynamic = v.len();
    for (t, val) in [
        (4u64, hash),
        (5, strtab),
        (6, symtab),
        (10, strsz),
        (11, 24),
        (14, soname_off),
        (0, 0),
    ] {
        p64(&mut v, t);
        p64(&mut v, val as u64);
    }
    let dyn_len = v.len() - dynamic;
    v.resize(v.len().next_multiple_of(0x1000).max(0x1000), 0);
    let total = v.len() as u64;
    // header
    v[0..8].copy_from_slice(b"\x7fELF\x02\x01\x01\0");
    v[16..18].copy_from_slice(&3u16.to_le_bytes()); // ET_DYN
    v[18..20].copy_from_slice(&62u16.to_le_bytes());
    put64(&mut v, 0x20, 64);
    v[0x36..0x38].copy_from_slice(&(PHSZ as u16).to_le_bytes());
    v[0x38..0x3a].copy_from_slice(&4u16.to_le_bytes());
    let ph = |v: &mut Vec<u8>, i: usize, t: u32, off: u64, sz: u64| {
        let o = 64 + PHSZ * i;
        put32(v, o, t);
        put32(v, o + 4, 5);
        put64(v, o + 8, off);
        put64(v, o + 16, off);
        put64(v, o + 24, off);
        put64(v, o + 32, sz);
        put64(v, o + 40, sz);
    };
    ph(&mut v, 0, 1, 0, total);
    ph(&mut v, 1, 2, dynamic as u64, dyn_len as u64);
    ph(&mut v, 2, 4, note_off as u64, note_len as u64);
    ph(&mut v, 3, 0x6474_e550, ehh as u64, 12);
    v
}

const LIB_BASE: u64 = 0x7f00_0000_0000;
const STACK: u64 = 0x7ffd_0000_0000;

/// A core with two threads, a stack, a tiny library mapped via NT_FILE and a data file.
fn sample_core() -> CoreBuilder {
    let lib = tiny_elf(
        &[0xab; 20],
        &[("alpha", 0x100, 0x10), ("beta", 0x200, 0x20)],
    );
    let lib_len = lib.len() as u64;
    let mut stack = vec![0u8; 0x2000];
    for (i, c) in stack.chunks_exact_mut(8).enumerate() {
        c.copy_from_slice(&(0x1111_0000_0000_0000u64 + i as u64).to_le_bytes());
    }
    let mut regs1 = prstatus(100, 0, 11);
    put64(&mut regs1, 112 + 19 * 8, STACK + 0x100); // rsp
    put64(&mut regs1, 112 + 16 * 8, LIB_BASE + 0x105); // rip
    let mut regs2 = prstatus(101, 1000, 0);
    put64(&mut regs2, 112 + 19 * 8, STACK + 0x1800);
    CoreBuilder::default()
        .note("CORE", 3, prpsinfo(100, "app", "app --flag"))
        .note("CORE", 1, regs1)
        .note("CORE", 2, fxsave(0x40))
        .note("CORE", 0x5349_4749, siginfo(11, 1, 0xdead))
        .note("CORE", 1, regs2)
        .note("CORE", 2, fxsave(0x80))
        .note("CORE", 6, {
            let mut a = Vec::new();
            for (t, x) in [(6u64, 4096u64), (33, 0x7fff_0000), (0, 0)] {
                p64(&mut a, t);
                p64(&mut a, x);
            }
            a
        })
        .note(
            "CORE",
            0x4649_4c45,
            nt_file(&[
                (LIB_BASE, LIB_BASE + lib_len, 0, "/nonexistent/libtiny.so"),
                (
                    LIB_BASE + lib_len,
                    LIB_BASE + lib_len + 0x1000,
                    lib_len / 0x1000,
                    "/nonexistent/libtiny.so",
                ),
                (0x6000_0000, 0x6000_1000, 0, "/usr/share/data.bin"),
            ]),
        )
        .load(LIB_BASE, lib)
        .load(STACK, stack[..0x1000].to_vec())
        .load(STACK + 0x1000, stack[0x1000..].to_vec())
        .load(0x6000_0000, vec![7u8; 0x1000])
}

// ---------------------------------------------------------------------------------------
// ELF core tests

#[test]
fn elf_basic_threads_and_info() {
    let d = Dump::from_bytes(sample_core().build()).unwrap();
    assert_eq!(d.format(), DumpFormat::ElfCore);
    let i = d.info();
    assert_eq!(i.os, Os::Linux);
    assert_eq!(i.arch, Arch::X86_64);
    assert_eq!(i.pid, Some(100));
    assert_eq!(i.process_name.as_deref(), Some("app"));
    assert_eq!(i.command_line.as_deref(), Some("app --flag"));
    assert_eq!(i.main_thread, Some(100));
    assert_eq!(i.crashing_thread, Some(100));
    let ex = i.exception.as_ref().unwrap();
    assert_eq!(
        (ex.code, ex.address, ex.thread_id, ex.flags),
        (11, 0xdead, 100, 1)
    );
    assert_eq!(i.auxv, vec![(6, 4096), (33, 0x7fff_0000)]);
    assert!(i.warnings.is_empty(), "{:?}", i.warnings);
    let t = d.threads();
    assert_eq!(t.len(), 2);
    let c = &t[1].context;
    // user_regs_struct order: r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax
    // rip cs eflags rsp ss fs_base gs_base ds es fs gs
    assert_eq!(t[1].id, 101);
    assert_eq!(
        (c.r15, c.r14, c.r13, c.r12, c.rbp, c.rbx),
        (1000, 1001, 1002, 1003, 1004, 1005)
    );
    assert_eq!(
        (c.r11, c.r10, c.r9, c.r8, c.rax, c.rcx, c.rdx),
        (1006, 1007, 1008, 1009, 1010, 1011, 1012)
    );
    assert_eq!(
        (c.rsi, c.rdi, c.orig_rax, c.rip, c.cs),
        (1013, 1014, 1015, 1016, 1017)
    );
    assert_eq!(
        (c.rflags, c.rsp, c.ss, c.fs_base, c.gs_base),
        (1018, STACK + 0x1800, 1020, 1021, 1022)
    );
    assert_eq!((c.ds, c.es, c.fs, c.gs), (1023, 1024, 1025, 1026));
    assert_eq!(c.dwarf_reg(7), Some(c.rsp));
    assert_eq!(c.get("eflags"), Some(1018));
    assert_eq!(c.mxcsr(), Some(0x1f80));
    assert_eq!(
        c.xmm(0),
        Some(u128::from_le_bytes(
            core::array::from_fn(|i| 0x80 + i as u8)
        ))
    );
    assert_eq!(t[0].context.xmm(0).map(|x| x as u8), Some(0x40));
    assert_eq!(t[0].signal, 11);
    // stack = the range containing rsp
    assert_eq!(t[0].stack, Some((STACK, STACK + 0x1000)));
    assert_eq!(t[1].stack, Some((STACK + 0x1000, STACK + 0x2000)));
}

#[test]
fn elf_reads_and_partial_reads_spanning_ranges() {
    let d = Dump::from_bytes(sample_core().build()).unwrap();
    assert_eq!(d.read_u64(STACK).unwrap(), 0x1111_0000_0000_0000);
    // Spanning the two adjacent stack segments.
    let mut b = [0u8; 16];
    assert_eq!(d.read(STACK + 0x1000 - 8, &mut b), 16);
    assert_eq!(
        u64::from_le_bytes(b[..8].try_into().unwrap()),
        0x1111_0000_0000_0000 + 0x1ff
    );
    assert_eq!(
        u64::from_le_bytes(b[8..].try_into().unwrap()),
        0x1111_0000_0000_0000 + 0x200
    );
    // Partial at the end of the stack.
    assert_eq!(d.read(STACK + 0x2000 - 4, &mut b), 4);
    let e = d.read_exact(STACK + 0x2000 - 4, &mut b).unwrap_err();
    assert_eq!(
        e,
        ReadError {
            addr: STACK + 0x2000 - 4,
            wanted: 16,
            got: 4
        }
    );
    // Nothing mapped.
    assert_eq!(d.read(0x1000, &mut b), 0);
    assert!(d.read_u32(u64::MAX - 1).is_err());
    assert_eq!(d.read_bytes(STACK + 0x1ffc, 100).len(), 4);
    assert_eq!(d.slice_at(STACK + 8).map(|s| s.len()), Some(0x1000 - 8));
    assert_eq!(d.read_cstr(LIB_BASE + 1, 3).unwrap(), "ELF");
    assert_eq!(d.read_cstr(LIB_BASE + 1, 10).unwrap(), "ELF\u{2}\u{1}\u{1}");
    let ranges: Vec<_> = d.memory_ranges().collect();
    assert_eq!(ranges.len(), 4);
    assert!(ranges.windows(2).all(|w| w[0].end() <= w[1].address));
}

#[test]
fn elf_modules_from_nt_file() {
    let d = Dump::from_bytes(sample_core().build()).unwrap();
    assert_eq!(d.file_mappings().len(), 3);
    let mods = d.modules();
    assert_eq!(mods.len(), 2);
    let data = &mods[0];
    assert_eq!(
        (data.base, data.kind, data.identity.clone()),
        (0x6000_0000, ModuleKind::Other, None)
    );
    let lib = &mods[1];
    assert_eq!(lib.name(), "libtiny.so");
    assert_eq!(lib.kind, ModuleKind::Elf);
    assert_eq!(lib.base, LIB_BASE);
    assert_eq!(lib.mappings.len(), 2);
    assert_eq!(lib.identity, Some(ModuleIdentity::BuildId(vec![0xab; 20])));
    assert_eq!(d.module_at(LIB_BASE + 0x10).map(|m| m.base), Some(LIB_BASE));
    assert_eq!(
        d.module_by_name("LIBTINY.SO").map(|m| m.base),
        Some(LIB_BASE)
    );
}

#[test]
fn elf_image_from_memory_exports_and_symbolize() {
    let d = Dump::from_bytes(sample_core().build()).unwrap();
    let lib = d.module_by_name("libtiny.so").unwrap().clone();
    let img = d.module_image(&lib).unwrap();
    assert_eq!(img.source, ImageSource::DumpMemory, "{}", img.note);
    let ImageFormat::Elf(e) = &img.format else {
        panic!()
    };
    assert_eq!(e.load_bias, LIB_BASE);
    assert_eq!(e.soname.as_deref(), Some("libtiny.so"));
    assert_eq!(e.build_id.as_deref(), Some(&[0xab; 20][..]));
    assert!(e.eh_frame_hdr.is_some());
    assert_eq!(e.eh_frame, Some(e.eh_frame_hdr.unwrap().0 + 4 + 0x40));
    assert_eq!(d.find_export(&lib, "alpha"), Some(LIB_BASE + 0x100));
    assert_eq!(d.find_export(&lib, "beta"), Some(LIB_BASE + 0x200));
    assert_eq!(d.find_export(&lib, "gamma"), None);
    let s = d.symbolize(LIB_BASE + 0x105).unwrap();
    assert_eq!(
        (s.module.as_str(), s.symbol.as_str(), s.offset),
        ("libtiny.so", "alpha", 5)
    );
    assert_eq!(s.to_string(), "libtiny.so!alpha+0x5");
    // Outside any symbol's extent.
    assert!(d.symbolize(LIB_BASE + 0x150).is_none());
}

#[test]
fn elf_image_from_disk_matched_by_identity() {
    // The core holds only the header page of the library (text/dynamic missing)...
    let lib = tiny_elf(&[0xcd; 20], &[("alpha", 0x100, 0x10)]);
    let core = CoreBuilder::default()
        .note("CORE", 1, prstatus(5, 0, 0))
        .note(
            "CORE",
            0x4649_4c45,
            nt_file(&[(
                LIB_BASE,
                LIB_BASE + lib.len() as u64,
                0,
                "/elsewhere/libtiny.so",
            )]),
        )
        .load(LIB_BASE, lib[..0x150].to_vec())
        .build();
    let dir = std::env::temp_dir().join(format!("dumpreader-test-{}", std::process::id()));
    let good = dir.join("good");
    let bad = dir.join("bad");
    std::fs::create_dir_all(&good).unwrap();
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(good.join("libtiny.so"), &lib).unwrap();
    std::fs::write(
        bad.join("libtiny.so"),
        tiny_elf(&[0xee; 20], &[("alpha", 0x100, 0x10)]),
    )
    .unwrap();
    let opts = OpenOptions {
        image_search_path: vec![bad.clone(), good.clone()],
        ..Default::default()
    };
    let d = Dump::from_bytes_with(core.clone(), &opts).unwrap();
    let m = d.modules()[0].clone();
    assert_eq!(m.identity, Some(ModuleIdentity::BuildId(vec![0xcd; 20])));
    let img = d.module_image(&m).unwrap();
    assert_eq!(
        img.source,
        ImageSource::File(good.join("libtiny.so")),
        "{}",
        img.note
    );
    assert!(img.note.contains("matches"), "{}", img.note);
    assert!(
        img.note.contains("mismatch"),
        "the refused file is named: {}",
        img.note
    );
    assert_eq!(d.find_export(&m, "alpha"), Some(LIB_BASE + 0x100));
    // Only the mismatched file: refused, and the memory image is incomplete (no symbols).
    let opts = OpenOptions {
        image_search_path: vec![bad.clone()],
        ..Default::default()
    };
    let d = Dump::from_bytes_with(core, &opts).unwrap();
    let m = d.modules()[0].clone();
    let img = d.module_image(&m).unwrap();
    assert_eq!(img.source, ImageSource::DumpMemory);
    assert!(
        img.note.contains("incomplete") && img.note.contains("mismatch"),
        "{}",
        img.note
    );
    assert_eq!(d.find_export(&m, "alpha"), None);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn elf_zero_filled_tail() {
    let core = CoreBuilder::default()
        .note("CORE", 1, prstatus(1, 0, 0))
        .load_zero_tail(0x10000, vec![0xaa; 0x100], 0x1000)
        .build();
    let d = Dump::from_bytes(core.clone()).unwrap();
    let r: Vec<_> = d.memory_ranges().collect();
    assert_eq!(r.len(), 1);
    assert_eq!(
        (r[0].address, r[0].size, r[0].file_size, r[0].zero_filled()),
        (0x10000, 0x1000, 0x100, 0xf00)
    );
    assert!(!r[0].fully_backed());
    assert_eq!(
        r[0].perms,
        Some(Perms {
            read: true,
            write: false,
            exec: false
        })
    );
    let mut b = [0xffu8; 8];
    assert_eq!(d.read(0x100fc, &mut b), 8);
    assert_eq!(b, [0xaa, 0xaa, 0xaa, 0xaa, 0, 0, 0, 0]);
    assert_eq!(d.read_u64(0x10ff8).unwrap(), 0);
    assert_eq!(d.read(0x10ffc, &mut b), 4);
    // zero_fill off: the tail is absent.
    let d = Dump::from_bytes_with(
        core,
        &OpenOptions {
            zero_fill: false,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(d.read(0x100fc, &mut b), 4);
}

#[test]
fn elf_overlapping_ranges_keep_first() {
    let core = CoreBuilder::default()
        .note("CORE", 1, prstatus(1, 0, 0))
        .load(0x10000, vec![1; 0x1000])
        .load(0x10800, vec![2; 0x1000]) // overlaps the first's second half
        .load(0xf000, vec![3; 0x2000]) // overlaps the first entirely, from below
        .build();
    let d = Dump::from_bytes(core).unwrap();
    let w = &d.info().warnings;
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(
        matches!(
            w[0],
            Error::OverlappingSegment {
                index: 2,
                other: 1,
                ..
            }
        ),
        "{w:?}"
    );
    assert_eq!(d.read_u8(0x10900).unwrap(), 1);
    assert_eq!(d.read_u8(0x11100).unwrap(), 2);
    assert_eq!(d.read_u8(0xf100).unwrap(), 3);
    assert_eq!(d.read_u8(0x10000).unwrap(), 1);
    let mut b = vec![0u8; 0x2800];
    assert_eq!(d.read(0xf000, &mut b), 0x2800);
    assert_eq!((b[0xfff], b[0x1000], b[0x1fff], b[0x2000]), (3, 1, 1, 2));
    let r: Vec<_> = d.memory_ranges().collect();
    assert!(r.windows(2).all(|w| w[0].end() <= w[1].address), "{r:?}");
}

#[test]
fn elf_bad_magic_and_unsupported() {
    assert!(matches!(
        Dump::from_bytes(b"hello world, not a dump".to_vec()),
        Err(Error::BadMagic { .. })
    ));
    assert!(matches!(
        Dump::from_bytes(vec![]),
        Err(Error::BadMagic { .. })
    ));
    let mut c = sample_core().build();
    c[4] = 1; // 32-bit
    assert!(matches!(
        Dump::from_bytes(c),
        Err(Error::Unsupported { .. })
    ));
    let mut c = sample_core().build();
    c[0x10] = 2; // ET_EXEC
    assert!(matches!(
        Dump::from_bytes(c),
        Err(Error::Malformed { offset: 0x10, .. })
    ));
    let mut c = sample_core().build();
    c[0x12] = 183; // aarch64
    assert!(matches!(
        Dump::from_bytes(c),
        Err(Error::Unsupported { .. })
    ));
}

#[test]
fn elf_truncated_at_each_structure() {
    let c = sample_core().build();
    // ELF header
    match Dump::from_bytes(c[..40].to_vec()) {
        Err(Error::Truncated {
            structure,
            offset: 0,
            needed: 64,
            file_len: 40,
        }) => assert_eq!(structure, "ELF header"),
        r => panic!("{r:?}"),
    }
    // Program header 3 cut in the middle.
    let cut = PH0 + PHSZ * 3 + 10;
    match Dump::from_bytes(c[..cut].to_vec()) {
        Err(Error::Truncated {
            structure,
            offset,
            needed: 56,
            ..
        }) => {
            assert_eq!(structure, "program header 3");
            assert_eq!(offset, (PH0 + PHSZ * 3) as u64);
        }
        r => panic!("{r:?}"),
    }
    // Notes cut: lenient opens with warnings, strict refuses.
    let notes_off = PH0 + PHSZ * 5;
    let cut = notes_off + 100;
    let d = Dump::from_bytes(c[..cut].to_vec()).unwrap();
    assert!(
        d.info()
            .warnings
            .iter()
            .any(|w| matches!(w, Error::SegmentOutsideFile { index: 0, .. })),
        "{:?}",
        d.info().warnings
    );
    assert!(
        d.info()
            .warnings
            .iter()
            .any(|w| matches!(w, Error::Truncated { .. })),
        "{:?}",
        d.info().warnings
    );
    let strict = OpenOptions {
        strict: true,
        ..Default::default()
    };
    assert!(matches!(
        Dump::from_bytes_with(c[..cut].to_vec(), &strict),
        Err(Error::SegmentOutsideFile { index: 0, .. })
    ));
    // Last PT_LOAD's data cut: the bytes present stay readable, the rest is absent.
    let cut = c.len() - 0x800;
    let d = Dump::from_bytes(c[..cut].to_vec()).unwrap();
    assert!(
        matches!(
            d.info().warnings[..],
            [Error::SegmentOutsideFile {
                index: 4,
                address: 0x6000_0000,
                ..
            }]
        ),
        "{:?}",
        d.info().warnings
    );
    assert_eq!(d.read_u8(0x6000_0000 + 0x7ff).unwrap(), 7);
    assert!(d.read_u8(0x6000_0000 + 0x800).is_err());
    assert!(matches!(
        Dump::from_bytes_with(c[..cut].to_vec(), &strict),
        Err(Error::SegmentOutsideFile { index: 4, .. })
    ));
}

#[test]
fn elf_truncated_anywhere_never_panics() {
    let c = sample_core().build();
    for len in 0..c.len() {
        if let Ok(d) = Dump::from_bytes(c[..len].to_vec()) {
            exercise(&d);
        }
    }
}

#[test]
fn elf_segment_outside_file() {
    let mut c = sample_core().build();
    // PT_LOAD 1 (program header index 1): offset far beyond the end.
    put64(&mut c, PH0 + PHSZ + 8, 0x10_0000_0000);
    let d = Dump::from_bytes(c.clone()).unwrap();
    assert!(d.info().warnings.iter().any(|w| matches!(
        w,
        Error::SegmentOutsideFile {
            index: 1,
            offset: 0x10_0000_0000,
            ..
        }
    )));
    assert!(d.read_u8(LIB_BASE).is_err());
    let strict = OpenOptions {
        strict: true,
        ..Default::default()
    };
    assert!(matches!(
        Dump::from_bytes_with(c.clone(), &strict),
        Err(Error::SegmentOutsideFile { index: 1, .. })
    ));
    // Offset + size overflowing u64.
    put64(&mut c, PH0 + PHSZ + 8, u64::MAX - 5);
    let d = Dump::from_bytes(c).unwrap();
    assert!(d.read_u8(LIB_BASE).is_err());
    // Address + memsz overflowing u64.
    let core = CoreBuilder::default()
        .note("CORE", 1, prstatus(1, 0, 0))
        .load_zero_tail(u64::MAX - 0xff, vec![1; 0x10], u64::MAX)
        .build();
    let d = Dump::from_bytes(core).unwrap();
    assert_eq!(d.read_u8(u64::MAX - 0xff).unwrap(), 1);
    let mut b = [0u8; 0x200];
    assert_eq!(d.read(u64::MAX - 0xff, &mut b), 0xff);
}

#[test]
fn elf_absurd_counts() {
    // PN_XNUM with a huge count in section header 0.
    let mut c = sample_core().build();
    c[0x38..0x3a].copy_from_slice(&0xffffu16.to_le_bytes());
    let shoff = c.len() as u64;
    put64(&mut c, 0x28, shoff);
    let mut sh = vec![0u8; 64];
    put32(&mut sh, 44, 0xffff_fff0);
    c.extend_from_slice(&sh);
    assert!(matches!(
        Dump::from_bytes(c.clone()),
        Err(Error::AbsurdCount {
            count: 0xffff_fff0,
            ..
        })
    ));
    // PN_XNUM with the real count works.
    put32(&mut c, shoff as usize + 44, 5);
    let d = Dump::from_bytes(c).unwrap();
    assert_eq!(d.threads().len(), 2);
    // NT_FILE claiming more entries than it holds.
    let mut f = nt_file(&[(0x1000, 0x2000, 0, "/a")]);
    put64(&mut f, 0, 1 << 40);
    let core = CoreBuilder::default()
        .note("CORE", 1, prstatus(1, 0, 0))
        .note("CORE", 0x4649_4c45, f)
        .build();
    let d = Dump::from_bytes(core.clone()).unwrap();
    assert!(
        matches!(
            d.info().warnings[..],
            [Error::AbsurdCount {
                count: 0x100_0000_0000,
                ..
            }]
        ),
        "{:?}",
        d.info().warnings
    );
    assert!(d.modules().is_empty());
    let strict = OpenOptions {
        strict: true,
        ..Default::default()
    };
    assert!(matches!(
        Dump::from_bytes_with(core, &strict),
        Err(Error::AbsurdCount { .. })
    ));
    // A note whose descsz runs past its segment.
    let mut c = sample_core().build();
    let notes_off = PH0 + PHSZ * 5;
    put32(&mut c, notes_off + 4, 0xffff_fff0);
    let d = Dump::from_bytes(c).unwrap();
    assert!(d.threads().is_empty());
    assert!(
        matches!(d.info().warnings[..], [Error::Truncated { .. }]),
        "{:?}",
        d.info().warnings
    );
}

#[test]
fn elf_mutations_never_panic() {
    let c = sample_core().build();
    mutate_and_open(&c, 3000);
}

// ---------------------------------------------------------------------------------------
// zstd

#[test]
fn zst_input_from_bytes_and_file() {
    let c = sample_core().build();
    let z = zstd::encode_all(c.as_slice(), 3).unwrap();
    let d = Dump::from_bytes(z.clone()).unwrap();
    assert_eq!(d.threads().len(), 2);
    let dir = std::env::temp_dir().join(format!("dumpreader-zst-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("core.dmp.zst");
    std::fs::write(&p, &z).unwrap();
    let opts = OpenOptions {
        cache_dir: Some(dir.join("cache")),
        ..Default::default()
    };
    let d = Dump::open_with(&p, &opts).unwrap();
    assert_eq!(d.threads().len(), 2);
    assert_eq!(d.read_u64(STACK).unwrap(), 0x1111_0000_0000_0000);
    assert!(d.source_note().unwrap().contains("decompressed"));
    let cached: Vec<_> = std::fs::read_dir(dir.join("cache")).unwrap().collect();
    assert_eq!(cached.len(), 1);
    // Second open reuses the cache file.
    let d2 = Dump::open_with(&p, &opts).unwrap();
    assert_eq!(d2.threads().len(), 2);
    assert_eq!(std::fs::read_dir(dir.join("cache")).unwrap().count(), 1);
    // Plain file, and a missing file.
    let raw = dir.join("core.dmp");
    std::fs::write(&raw, &c).unwrap();
    assert_eq!(Dump::open(&raw).unwrap().threads().len(), 2);
    assert!(matches!(
        Dump::open(&dir.join("missing")),
        Err(Error::Io { .. })
    ));
    // Corrupt zstd.
    let bad = dir.join("bad.zst");
    let mut zz = z.clone();
    zz.truncate(zz.len() / 2);
    std::fs::write(&bad, &zz).unwrap();
    assert!(Dump::open_with(&bad, &opts).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_cache_keeps_within_its_limit_evicting_the_least_recently_opened() {
    let c = sample_core().build();
    let z = zstd::encode_all(&c[..], 3).unwrap();
    let dir = std::env::temp_dir().join(format!("dumpreader-evict-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cache = dir.join("cache");
    let paths: Vec<_> = (0..3).map(|i| dir.join(format!("d{i}.dmp.zst"))).collect();
    for p in &paths {
        std::fs::write(p, &z).unwrap();
    }
    // The limit counts the bytes on disk (decompressed dumps are sparse): one dump's, measured.
    let probe = OpenOptions {
        cache_dir: Some(dir.join("probe")),
        ..Default::default()
    };
    Dump::open_with(&paths[0], &probe).unwrap();
    let one: u64 = std::fs::read_dir(dir.join("probe"))
        .unwrap()
        .map(|e| crate::disk_usage(&e.unwrap().metadata().unwrap()))
        .sum();
    assert!(one > 0);
    // Room for two decompressed dumps, not three.
    let opts = OpenOptions {
        cache_dir: Some(cache.clone()),
        cache_limit: 2 * one + one / 2,
        ..Default::default()
    };
    let entries = || -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&cache)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    Dump::open_with(&paths[0], &opts).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    Dump::open_with(&paths[1], &opts).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    // Reopening d0 makes d1 the least recently opened.
    Dump::open_with(&paths[0], &opts).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(entries().len(), 2);
    Dump::open_with(&paths[2], &opts).unwrap();
    let left = entries();
    assert_eq!(left.len(), 2, "{left:?}");
    assert!(left.iter().any(|n| n.starts_with("d0.dmp-")), "{left:?}");
    assert!(left.iter().any(|n| n.starts_with("d2.dmp-")), "{left:?}");
    // A limit smaller than one dump still keeps the dump just opened.
    let tiny = OpenOptions {
        cache_limit: 1,
        ..opts.clone()
    };
    Dump::open_with(&paths[1], &tiny).unwrap();
    assert_eq!(entries().len(), 1);
    assert!(entries()[0].starts_with("d1.dmp-"));
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------
// Minidump builder and tests

struct MdBuilder {
    streams: Vec<(u32, Vec<u8>)>,
}

const CTX_SIZE: usize = 0x4d0;

fn context(rip: u64, rsp: u64) -> Vec<u8> {
    let mut c = vec![0u8; CTX_SIZE];
    put32(&mut c, 0x30, 0x0010_000b);
    put32(&mut c, 0x44, 0x246);
    c[0x38..0x3a].copy_from_slice(&0x33u16.to_le_bytes());
    for i in 0..16 {
        put64(&mut c, 0x78 + 8 * i, 0x100 + i as u64); // rax..r15
    }
    put64(&mut c, 0x98, rsp);
    put64(&mut c, 0xf8, rip);
    put32(&mut c, 0x100 + 24, 0x1f80);
    c
}

/// A minidump with: SystemInfo (AMD64, Windows), MiscInfo (pid 4242), two threads (one with
/// Rva-0 stack found in Memory64List), an exception, a module list with one PE image (in
/// memory, with exports), and a Memory64List of three ranges (two adjacent).
fn sample_minidump() -> Vec<u8> {
    sample_minidump_with(|_| {})
}

const MD_STACK: u64 = 0x50_0000;
const PE_BASE: u64 = 0x7ff6_0000_0000;

/// A tiny PE32+ image (mapped layout, 0x3000 bytes): .text at 0x1000 with two exports,
/// export directory in .rdata at 0x2000, pdata and CLI header directory entries.
fn tiny_pe(timestamp: u32, size_of_image: u32) -> Vec<u8> {
    let mut v = vec![0u8; 0x3000];
    v[0..2].copy_from_slice(b"MZ");
    put32(&mut v, 0x3c, 0x80);
    v[0x80..0x84].copy_from_slice(b"PE\0\0");
    v[0x84..0x86].copy_from_slice(&0x8664u16.to_le_bytes());
    v[0x86..0x88].copy_from_slice(&2u16.to_le_bytes()); // sections
    put32(&mut v, 0x88, timestamp);
    v[0x94..0x96].copy_from_slice(&240u16.to_le_bytes()); // SizeOfOptionalHeader
    let opt = 0x98;
    v[opt..opt + 2].copy_from_slice(&0x20bu16.to_le_bytes());
    put32(&mut v, opt + 16, 0x1000); // entry
    put64(&mut v, opt + 24, 0x1_4000_0000);
    put32(&mut v, opt + 56, size_of_image);
    put32(&mut v, opt + 60, 0x400);
    put32(&mut v, opt + 108, 16);
    let dirs = opt + 112;
    put32(&mut v, dirs, 0x2000); // export
    put32(&mut v, dirs + 4, 0x100);
    put32(&mut v, dirs + 3 * 8, 0x2800); // exception
    put32(&mut v, dirs + 3 * 8 + 4, 24);
    put32(&mut v, dirs + 14 * 8, 0x2900); // CLI
    put32(&mut v, dirs + 14 * 8 + 4, 72);
    let sec = opt + 240;
    for (i, (name, va)) in [(b".text\0\0\0", 0x1000u32), (b".rdata\0\0", 0x2000)]
        .iter()
        .enumerate()
    {
        let s = sec + 40 * i;
        v[s..s + 8].copy_from_slice(*name);
        put32(&mut v, s + 8, 0x1000);
        put32(&mut v, s + 12, *va);
        put32(&mut v, s + 16, 0x1000);
        put32(&mut v, s + 20, *va);
    }
    // export directory at 0x2000
    let e = 0x2000;
    put32(&mut v, e + 12, 0x2080); // name
    put32(&mut v, e + 16, 1); // base
    put32(&mut v, e + 20, 3); // functions
    put32(&mut v, e + 24, 2); // names
    put32(&mut v, e + 28, 0x2040);
    put32(&mut v, e + 32, 0x2050);
    put32(&mut v, e + 36, 0x2060);
    put32(&mut v, 0x2040, 0x1010);
    put32(&mut v, 0x2044, 0x1020);
    put32(&mut v, 0x2048, 0x2090); // forwarder (inside the export dir)
    put32(&mut v, 0x2050, 0x20a0); // names sorted: "First", "Second"
    put32(&mut v, 0x2054, 0x20b0);
    v[0x2060..0x2062].copy_from_slice(&0u16.to_le_bytes());
    v[0x2062..0x2064].copy_from_slice(&1u16.to_le_bytes());
    v[0x2080..0x2089].copy_from_slice(b"tiny.dll\0");
    v[0x2090..0x209b].copy_from_slice(b"other.Func\0");
    v[0x20a0..0x20a6].copy_from_slice(b"First\0");
    v[0x20b0..0x20b7].copy_from_slice(b"Second\0");
    v
}

fn sample_minidump_with(tweak: impl FnOnce(&mut MdBuilder)) -> Vec<u8> {
    let mut b = MdBuilder {
        streams: Vec::new(),
    };
    // SystemInfo
    let mut si = vec![0u8; 56];
    si[0..2].copy_from_slice(&9u16.to_le_bytes());
    put32(&mut si, 20, 2);
    b.streams.push((7, si));
    // MiscInfo
    let mut mi = vec![0u8; 24];
    put32(&mut mi, 0, 24);
    put32(&mut mi, 4, 1);
    put32(&mut mi, 8, 4242);
    b.streams.push((15, mi));
    tweak(&mut b);
    b.build()
}

impl MdBuilder {
    fn build(self) -> Vec<u8> {
        // Layout: header, directory, fixed streams, contexts, module name, memory data.
        let nstreams = self.streams.len() + 4;
        let mut v = Vec::new();
        v.extend_from_slice(b"MDMP");
        p32(&mut v, 0xa793);
        p32(&mut v, nstreams as u32);
        p32(&mut v, 32);
        p32(&mut v, 0);
        p32(&mut v, 0);
        p64(&mut v, 0);
        let dir_at = v.len();
        v.resize(dir_at + 12 * nstreams, 0);
        let mut dir = Vec::new();
        let mut add = |v: &mut Vec<u8>, t: u32, data: &[u8]| {
            pad_to(v, 8);
            dir.push((t, data.len() as u32, v.len() as u32));
            v.extend_from_slice(data);
            v.len() - data.len()
        };
        for (t, s) in &self.streams {
            add(&mut v, *t, s);
        }
        // contexts
        pad_to(&mut v, 16);
        let ctx1 = v.len();
        v.extend_from_slice(&context(PE_BASE + 0x1015, MD_STACK + 0x80));
        let ctx2 = v.len();
        v.extend_from_slice(&context(0x1234, MD_STACK + 0x1100));
        // thread list: thread 7 (stack Rva 0 -> Memory64List), thread 8 (stack with Rva)
        let mut tl = Vec::new();
        p32(&mut tl, 2);
        for (tid, sstart, ssize, ctx) in [
            (7u32, MD_STACK, 0x1000u32, ctx1),
            (8, MD_STACK + 0x1000, 0x1000, ctx2),
        ] {
            p32(&mut tl, tid);
            p32(&mut tl, 0);
            p32(&mut tl, 0);
            p32(&mut tl, 0);
            p64(&mut tl, 0x7ffa_0000 + tid as u64); // teb
            p64(&mut tl, sstart);
            p32(&mut tl, ssize);
            p32(&mut tl, 0); // rva patched below for thread 8
            p32(&mut tl, CTX_SIZE as u32);
            p32(&mut tl, ctx as u32);
        }
        let stack2_rva_pos = 4 + 48 + 36;
        let tl_at = add(&mut v, 3, &tl);
        // exception
        let mut ex = Vec::new();
        p32(&mut ex, 7);
        p32(&mut ex, 0);
        p32(&mut ex, 0xc000_0005);
        p32(&mut ex, 0);
        p64(&mut ex, 0);
        p64(&mut ex, PE_BASE + 0x1015);
        p32(&mut ex, 2);
        p32(&mut ex, 0);
        p64(&mut ex, 1);
        p64(&mut ex, 0xbad);
        ex.resize(8 + 152, 0);
        p32(&mut ex, CTX_SIZE as u32);
        p32(&mut ex, ctx1 as u32);
        add(&mut v, 6, &ex);
        // module name
        pad_to(&mut v, 4);
        let name_at = v.len();
        let name: Vec<u16> = "C:\\app\\tiny.dll".encode_utf16().collect();
        p32(&mut v, (name.len() * 2) as u32);
        for u in &name {
            p16(&mut v, *u);
        }
        p16(&mut v, 0);
        let mut ml = Vec::new();
        p32(&mut ml, 1);
        p64(&mut ml, PE_BASE);
        p32(&mut ml, 0x3000);
        p32(&mut ml, 0);
        p32(&mut ml, 0x5eed_1234);
        p32(&mut ml, name_at as u32);
        ml.resize(4 + 108, 0);
        add(&mut v, 4, &ml);
        // memory64: stack (0x2000 = two adjacent ranges of 0x1000), PE image
        let mut stack = vec![0u8; 0x2000];
        for (i, c) in stack.chunks_exact_mut(8).enumerate() {
            c.copy_from_slice(&(0x2222_0000_0000_0000u64 + i as u64).to_le_bytes());
        }
        let pe = tiny_pe(0x5eed_1234, 0x3000);
        let ranges: [(u64, &[u8]); 3] = [
            (MD_STACK, &stack[..0x1000]),
            (MD_STACK + 0x1000, &stack[0x1000..]),
            (PE_BASE, &pe),
        ];
        let mut m64 = Vec::new();
        p64(&mut m64, ranges.len() as u64);
        let base_rva_pos = m64.len();
        p64(&mut m64, 0);
        for (a, d) in &ranges {
            p64(&mut m64, *a);
            p64(&mut m64, d.len() as u64);
        }
        let m64_at = add(&mut v, 9, &m64);
        pad_to(&mut v, 16);
        let data_at = v.len();
        put64(&mut v, m64_at + base_rva_pos, data_at as u64);
        for (_, d) in &ranges {
            v.extend_from_slice(d);
        }
        // thread 8's stack descriptor points at the second stack range's bytes
        put32(&mut v, tl_at + stack2_rva_pos, (data_at + 0x1000) as u32);
        for (i, (t, size, rva)) in dir.iter().enumerate() {
            let o = dir_at + 12 * i;
            put32(&mut v, o, *t);
            put32(&mut v, o + 4, *size);
            put32(&mut v, o + 8, *rva);
        }
        v
    }
}

#[test]
fn minidump_basic() {
    let d = Dump::from_bytes(sample_minidump()).unwrap();
    assert_eq!(d.format(), DumpFormat::Minidump);
    let i = d.info();
    assert!(i.warnings.is_empty(), "{:?}", i.warnings);
    assert_eq!(
        (i.os, i.arch, i.pid),
        (Os::Windows, Arch::X86_64, Some(4242))
    );
    let ex = i.exception.as_ref().unwrap();
    assert_eq!(
        (ex.code, ex.address, ex.thread_id, ex.parameters.clone()),
        (0xc000_0005, PE_BASE + 0x1015, 7, vec![1, 0xbad])
    );
    assert_eq!(i.crashing_thread, Some(7));
    assert_eq!(i.main_thread, Some(7));
    let t = d.threads();
    assert_eq!(t.len(), 2);
    assert_eq!(t[0].id, 7);
    let c = &t[0].context;
    assert_eq!((c.rax, c.rcx, c.rdx, c.rbx), (0x100, 0x101, 0x102, 0x103));
    assert_eq!(
        (c.rsp, c.rbp, c.rsi, c.rdi),
        (MD_STACK + 0x80, 0x105, 0x106, 0x107)
    );
    assert_eq!(
        (c.r8, c.r15, c.rip, c.rflags, c.cs),
        (0x108, 0x10f, PE_BASE + 0x1015, 0x246, 0x33)
    );
    assert_eq!(c.mxcsr(), Some(0x1f80));
    assert_eq!(t[0].teb, Some(0x7ffa_0007));
    assert_eq!(t[0].stack, Some((MD_STACK, MD_STACK + 0x1000)));
    // Stack with Rva 0: its bytes come from Memory64List by address.
    assert_eq!(d.read_u64(t[0].context.rsp).unwrap(), 0x2222_0000_0000_0010);
    assert_eq!(
        d.read_u64(MD_STACK + 0x1100).unwrap(),
        0x2222_0000_0000_0220
    );
    // Partial read spanning the two adjacent ranges, and stopping at the end.
    let mut b = [0u8; 16];
    assert_eq!(d.read(MD_STACK + 0xff8, &mut b), 16);
    assert_eq!(d.read(MD_STACK + 0x1ffc, &mut b), 4);
    assert_eq!(d.memory_ranges().count(), 3);
    // Modules and the PE image in memory.
    let m = &d.modules()[0];
    assert_eq!(
        (m.name(), m.base, m.size(), m.kind),
        ("tiny.dll", PE_BASE, 0x3000, ModuleKind::Pe)
    );
    assert_eq!(
        m.identity,
        Some(ModuleIdentity::Pe {
            timestamp: 0x5eed_1234,
            size_of_image: 0x3000
        })
    );
    let img = d.module_image(m).unwrap();
    assert_eq!(img.source, ImageSource::DumpMemory, "{}", img.note);
    let ImageFormat::Pe(p) = &img.format else {
        panic!()
    };
    assert_eq!(p.dll_name.as_deref(), Some("tiny.dll"));
    assert_eq!(p.sections.len(), 2);
    assert_eq!(p.exports.len(), 3);
    assert_eq!(p.exports[2].forwarder.as_deref(), Some("other.Func"));
    assert_eq!(p.pdata, Some((PE_BASE + 0x2800, 24)));
    assert_eq!(p.cli_header, Some((PE_BASE + 0x2900, 72)));
    assert_eq!(p.entry_point, PE_BASE + 0x1000);
    assert_eq!(img.identity(), m.identity);
    assert_eq!(d.find_export(m, "First"), Some(PE_BASE + 0x1010));
    assert_eq!(d.find_export(m, "Second"), Some(PE_BASE + 0x1020));
    let s = d.symbolize(PE_BASE + 0x1015).unwrap();
    assert_eq!(s.to_string(), "tiny.dll!First+0x5");
}

#[test]
fn minidump_bad_magic_truncated_and_absurd() {
    let md = sample_minidump();
    let mut bad = md.clone();
    bad[0] = b'X';
    assert!(matches!(Dump::from_bytes(bad), Err(Error::BadMagic { .. })));
    match Dump::from_bytes(md[..20].to_vec()) {
        Err(Error::Truncated {
            structure,
            offset: 0,
            needed: 32,
            ..
        }) => assert_eq!(structure, "minidump header"),
        r => panic!("{r:?}"),
    }
    // Directory entry 3 cut.
    match Dump::from_bytes(md[..32 + 12 * 3 + 5].to_vec()) {
        Err(Error::Truncated {
            structure, offset, ..
        }) => {
            assert_eq!(structure, "stream directory entry 3");
            assert_eq!(offset, 32 + 36);
        }
        r => panic!("{r:?}"),
    }
    // Absurd stream count.
    let mut bad = md.clone();
    put32(&mut bad, 8, 1 << 30);
    assert!(matches!(
        Dump::from_bytes(bad),
        Err(Error::AbsurdCount { offset: 8, .. })
    ));
    // Memory64List claiming absurdly many ranges: lenient keeps what fits, strict refuses.
    let m64_rva = dir_rva(&md, 9);
    let mut bad = md.clone();
    put64(&mut bad, m64_rva, 1 << 50);
    let d = Dump::from_bytes(bad.clone()).unwrap();
    assert!(d
        .info()
        .warnings
        .iter()
        .any(|w| matches!(w, Error::AbsurdCount { .. })));
    assert_eq!(d.memory_ranges().count(), 3);
    let strict = OpenOptions {
        strict: true,
        ..Default::default()
    };
    assert!(matches!(
        Dump::from_bytes_with(bad, &strict),
        Err(Error::AbsurdCount { .. })
    ));
    // Data cut in the last memory range: SegmentOutsideFile; earlier ranges still read.
    let cut = md.len() - 0x800;
    let d = Dump::from_bytes(md[..cut].to_vec()).unwrap();
    assert!(
        d.info().warnings.iter().any(|w| matches!(
            w,
            Error::SegmentOutsideFile {
                index: 2,
                address: PE_BASE,
                ..
            }
        )),
        "{:?}",
        d.info().warnings
    );
    assert!(d.read_u64(MD_STACK).is_ok());
    assert!(d.read_u8(PE_BASE + 0x27ff).is_ok());
    assert!(d.read_u8(PE_BASE + 0x2800).is_err());
    assert!(matches!(
        Dump::from_bytes_with(md[..cut].to_vec(), &strict),
        Err(Error::SegmentOutsideFile { .. })
    ));
}

fn dir_rva(md: &[u8], stype: u32) -> usize {
    let n = u32::from_le_bytes(md[8..12].try_into().unwrap()) as usize;
    (0..n)
        .map(|i| 32 + 12 * i)
        .find(|&o| u32::from_le_bytes(md[o..o + 4].try_into().unwrap()) == stype)
        .map(|o| u32::from_le_bytes(md[o + 8..o + 12].try_into().unwrap()) as usize)
        .unwrap()
}

#[test]
fn minidump_memory_list_and_overlap() {
    // An extra MemoryList whose range overlaps the Memory64List stack: the first (Memory64) wins.
    let md = sample_minidump_with(|b| {
        let mut ml = Vec::new();
        p32(&mut ml, 1);
        p64(&mut ml, MD_STACK + 0x800);
        p32(&mut ml, 0x10);
        p32(&mut ml, 0); // rva 0: bytes of the header
        b.streams.push((5, ml));
    });
    let d = Dump::from_bytes(md).unwrap();
    assert!(
        d.info()
            .warnings
            .iter()
            .any(|w| matches!(w, Error::OverlappingSegment { .. })),
        "{:?}",
        d.info().warnings
    );
    assert_eq!(d.read_u64(MD_STACK + 0x800).unwrap(), 0x2222_0000_0000_0100);
}

#[test]
fn minidump_truncated_anywhere_never_panics() {
    let md = sample_minidump();
    for len in 0..md.len().min(0x1200) {
        if let Ok(d) = Dump::from_bytes(md[..len].to_vec()) {
            exercise(&d);
        }
    }
    for len in (0x1200..md.len()).step_by(61) {
        if let Ok(d) = Dump::from_bytes(md[..len].to_vec()) {
            exercise(&d);
        }
    }
}

#[test]
fn minidump_mutations_never_panic() {
    mutate_and_open(&sample_minidump(), 3000);
}

// ---------------------------------------------------------------------------------------
// Shared helpers

/// Touches everything a caller might: threads, modules, images, ranges, reads.
fn exercise(d: &Dump) {
    let _ = d.info();
    for t in d.threads() {
        let mut b = [0u8; 64];
        let _ = d.read(t.context.rsp, &mut b);
        let _ = d.symbolize(t.context.rip);
    }
    for m in d.modules().to_vec() {
        let _ = d.module_image(&m);
        let _ = d.find_export(&m, "alpha");
    }
    for r in d.memory_ranges().take(64) {
        let mut b = [0u8; 32];
        let _ = d.read(r.address, &mut b);
        let _ = d.read(r.end().saturating_sub(8), &mut b);
        let _ = d.read_cstr(r.address, 100);
    }
}

/// Deterministic random byte mutations (xorshift), each opened and exercised.
fn mutate_and_open(orig: &[u8], rounds: usize) {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..rounds {
        let mut c = orig.to_vec();
        let n = 1 + next() % 8;
        for _ in 0..n {
            let pos = (next() % c.len() as u64) as usize;
            match next() % 4 {
                0 => c[pos] = next() as u8,
                1 => c[pos] ^= 0x80,
                2 => {
                    let w = (next() as u32).to_le_bytes();
                    let end = (pos + 4).min(c.len());
                    c[pos..end].copy_from_slice(&w[..end - pos]);
                }
                _ => c[pos] = 0xff,
            }
        }
        if let Ok(d) = Dump::from_bytes(c) {
            exercise(&d);
        }
    }
}

#[test]
fn dump_is_send_sync() {
    fn check<T: Send + Sync>() {}
    check::<Dump>();
    fn mem(_: &dyn Memory) {}
    let d = Dump::from_bytes(sample_core().build()).unwrap();
    mem(&d);
    let arc: std::sync::Arc<dyn Memory> = std::sync::Arc::new(d);
    assert_eq!(arc.read_u64(STACK).unwrap(), 0x1111_0000_0000_0000);
}

#[test]
fn memory_helpers() {
    let bytes = b"hi\0\x41\x00\x42\x00\xff\xff\xff\xff";
    let m = SliceMemory {
        base: 0x1000,
        bytes,
    };
    assert_eq!(m.read_cstr(0x1000, 10).unwrap(), "hi");
    assert_eq!(m.read_cstr(0x1000, 1).unwrap(), "h");
    assert_eq!(m.read_utf16(0x1003, 2).unwrap(), "AB");
    assert_eq!(m.read_i32(0x1007).unwrap(), -1);
    assert_eq!(m.read_u16(0x1003).unwrap(), 0x41);
    assert!(m.read_u64(0x1008).is_err());
    assert!(m.read_cstr(0x2000, 10).is_err());
    assert_eq!(m.read_bytes(0x1009, 100).len(), 2);
    assert!(m.read_utf16(0x1000, usize::MAX).is_err());
}

/// Writes the sample dumps as fuzz seeds when `DUMPREADER_WRITE_SEEDS` names a directory
/// (`DUMPREADER_WRITE_SEEDS=fuzz/corpus cargo test -p dumpreader write_fuzz_seeds`).
#[test]
fn write_fuzz_seeds() {
    let Some(dir) = std::env::var_os("DUMPREADER_WRITE_SEEDS") else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    let elf = dir.join("elf_core");
    let md = dir.join("minidump");
    std::fs::create_dir_all(&elf).unwrap();
    std::fs::create_dir_all(&md).unwrap();
    std::fs::write(elf.join("sample"), sample_core().build()).unwrap();
    let tail = CoreBuilder::default()
        .note("CORE", 1, prstatus(1, 0, 0))
        .load_zero_tail(0x10000, vec![0xaa; 0x100], 0x1000)
        .build();
    std::fs::write(elf.join("zero_tail"), tail).unwrap();
    std::fs::write(md.join("sample"), sample_minidump()).unwrap();
}

#[test]
fn elf_crash_thread_marked_by_cursig_createdump_style() {
    // createdump: NT_SIGINFO after all threads, crash thread (not first) has pr_cursig set.
    let core = CoreBuilder::default()
        .note("CORE", 1, prstatus(10, 0, 0))
        .note("CORE", 1, prstatus(11, 0, 6))
        .note("CORE", 1, prstatus(12, 0, 0))
        .note("CORE", 0x5349_4749, siginfo(6, 0, 0))
        .build();
    let d = Dump::from_bytes(core).unwrap();
    assert_eq!(d.info().crashing_thread, Some(11));
    let e = d.info().exception.as_ref().unwrap();
    assert_eq!((e.code, e.thread_id), (6, 11));
    assert_eq!(d.info().main_thread, Some(10));
    // gcore: SIGSTOP is no exception.
    let core = CoreBuilder::default()
        .note("CORE", 1, prstatus(10, 0, 19))
        .note("CORE", 0x5349_4749, siginfo(19, 0, 0))
        .build();
    let d = Dump::from_bytes(core).unwrap();
    assert_eq!(d.info().exception, None);
    assert_eq!(d.threads()[0].signal, 19);
}

// ---------------------------------------------------------------------------------------
// .NET single-file bundles

fn sample_manifest(major: u32) -> crate::BundleManifest {
    use crate::{BundleEntry, BundleFileType};
    let e = |offset, size, compressed_size, file_type, p: &str| BundleEntry {
        offset,
        size,
        compressed_size,
        file_type,
        relative_path: p.to_string(),
    };
    crate::BundleManifest {
        header_offset: 0x20000,
        major_version: major,
        minor_version: 0,
        bundle_id: "AbCdEfGhIjKl".into(),
        deps_json: (major >= 2).then_some((0x16000, 0x100)),
        runtimeconfig_json: None,
        flags: 0,
        entries: vec![
            e(0x10000, 0x3000, 0, BundleFileType::Assembly, "A.dll"),
            e(0x13800, 0x1000, 0, BundleFileType::Assembly, "B.dll"),
            e(
                0x15000,
                0x2000,
                if major >= 6 { 0x800 } else { 0 },
                BundleFileType::Assembly,
                "sub/C.dll",
            ),
            e(0x16000, 0x100, 0, BundleFileType::DepsJson, "app.deps.json"),
        ],
        manifest_size: 0,
    }
}

#[test]
fn bundle_manifest_round_trips_in_every_version() {
    for major in [1u32, 2, 6] {
        let m = sample_manifest(major);
        let bytes = crate::write_bundle_manifest(&m);
        let got = crate::parse_bundle_manifest(&bytes, 0x20000, 0x20000, Some(0x30000)).unwrap();
        assert_eq!(got.manifest_size, bytes.len() as u64, "v{major}");
        assert_eq!(
            crate::BundleManifest {
                manifest_size: 0,
                ..got.clone()
            },
            m,
            "v{major}"
        );
        assert_eq!(got.entry_at_offset(0x12fff).unwrap().relative_path, "A.dll");
        assert_eq!(got.entry_at_offset(0x13000), None, "between A and B");
        assert_eq!(got.entry("SUB/c.DLL").unwrap().is_compressed(), major >= 6);
    }
    // v6 entries carry the compressed size: 8 bytes more each than v2.
    let v2 = crate::write_bundle_manifest(&sample_manifest(2)).len();
    let v6 = crate::write_bundle_manifest(&sample_manifest(6)).len();
    assert_eq!(v6 - v2, 4 * 8);
}

#[test]
fn bundle_manifest_known_bytes() {
    // A v6 manifest written out by hand: 1 file "a.dll" at 0x100, 0x80 bytes, stored as is.
    let mut b = Vec::new();
    p32(&mut b, 6);
    p32(&mut b, 0);
    p32(&mut b, 1);
    b.push(3);
    b.extend_from_slice(b"xyz");
    for v in [0u64, 0, 0x180, 0x20, 0] {
        p64(&mut b, v);
    }
    p64(&mut b, 0x100);
    p64(&mut b, 0x80);
    p64(&mut b, 0);
    b.push(1);
    b.push(5);
    b.extend_from_slice(b"a.dll");
    let m = crate::parse_bundle_manifest(&b, 0x200, 0x200, None).unwrap();
    assert_eq!((m.major_version, m.bundle_id.as_str()), (6, "xyz"));
    assert_eq!(m.deps_json, None);
    assert_eq!(m.runtimeconfig_json, Some((0x180, 0x20)));
    assert_eq!(m.entries.len(), 1);
    assert_eq!(
        (
            m.entries[0].offset,
            m.entries[0].size,
            m.entries[0].file_type
        ),
        (0x100, 0x80, crate::BundleFileType::Assembly)
    );
    // A 2-byte length prefix: 200 chars.
    let mut long = b.clone();
    let name = "n".repeat(200);
    long.truncate(long.len() - 6);
    long.extend_from_slice(&[0xc8, 0x01]);
    long.extend_from_slice(name.as_bytes());
    let m = crate::parse_bundle_manifest(&long, 0, 0, None).unwrap();
    assert_eq!(m.entries[0].relative_path, name);
}

#[test]
fn bundle_manifest_bad_bytes_give_precise_errors() {
    let good = crate::write_bundle_manifest(&sample_manifest(6));
    // Truncated anywhere: an error, never a panic.
    for n in 0..good.len() {
        let e = crate::parse_bundle_manifest(&good[..n], 0x20000, 0x20000, None).unwrap_err();
        assert!(e.to_string().contains("bundle manifest"), "{n}: {e}");
    }
    // Absurd and negative counts.
    let mut b = good.clone();
    put32(&mut b, 8, 0xffff_fff0);
    let e = crate::parse_bundle_manifest(&b, 0, 0, None).unwrap_err();
    assert!(matches!(e, Error::AbsurdCount { .. }), "{e}");
    let mut b = good.clone();
    put32(&mut b, 8, 100_000);
    let e = crate::parse_bundle_manifest(&b, 0, 0, None).unwrap_err();
    assert!(e.to_string().contains("100000 entries need"), "{e}");
    // Not a bundle version.
    let mut b = good.clone();
    put32(&mut b, 0, 0x4d5a_0000);
    assert!(crate::parse_bundle_manifest(&b, 0, 0, None).is_err());
    // An entry past the end of the file.
    let e = crate::parse_bundle_manifest(&good, 0x20000, 0x20000, Some(0x14000)).unwrap_err();
    assert!(e.to_string().contains("past the end of the file"), "{e}");
    // The header outside the bytes at hand.
    assert!(crate::parse_bundle_manifest(&good, 0x20000, 0x10, None).is_err());
    // Every single-byte mutation: no panic.
    for i in 0..good.len() {
        for x in [0u8, 0x7f, 0x80, 0xff] {
            let mut b = good.clone();
            b[i] = x;
            let _ = crate::parse_bundle_manifest(&b, 0x20000, 0x20000, Some(0x30000));
        }
    }
}

#[test]
fn bundle_marker_is_found_after_its_offset() {
    let mut b = vec![0u8; 100];
    b.extend_from_slice(&0x1234_5678u64.to_le_bytes());
    b.extend_from_slice(&crate::BUNDLE_SIGNATURE);
    b.extend_from_slice(&[0u8; 7]);
    assert_eq!(crate::find_bundle_marker(&b), Some((100, 0x1234_5678)));
    // A signature without room for its offset is not a marker.
    assert_eq!(crate::find_bundle_marker(&crate::BUNDLE_SIGNATURE), None);
    assert_eq!(crate::find_bundle_marker(&[0x8b; 64]), None);
}

const HOST_BASE: u64 = 0x5555_0000_0000;

/// A core of a single-file host "/app/host": the host image with the bundle marker in its data,
/// A.dll mapped (as an image, page-aligned), B.dll mapped from the page before its start,
/// and the manifest mapped (when `manifest_in_memory`).
fn single_file_core(manifest_in_memory: bool) -> (CoreBuilder, u64) {
    let mut host = tiny_elf(&[0xcd; 20], &[("DotNetRuntimeInfo", 0x100, 8)]);
    let total = host.len();
    let at = total - 64;
    host[at..at + 8].copy_from_slice(&0x20000u64.to_le_bytes());
    host[at + 8..at + 40].copy_from_slice(&crate::BUNDLE_SIGNATURE);
    let man = crate::write_bundle_manifest(&sample_manifest(6));
    let mut a = vec![0u8; 0x3000];
    a[..2].copy_from_slice(b"MZ");
    let mut b = vec![0u8; 0x2000];
    b[0x800..0x802].copy_from_slice(b"MZ");
    let mut files = vec![
        (HOST_BASE, HOST_BASE + total as u64, 0, "/app/host"),
        (0x5000_0000, 0x5000_3000, 0x10, "/app/host"),
        (0x5100_0000, 0x5100_2000, 0x13, "/app/host"),
        (0x7000_0000, 0x7000_1000, 0x10, "/app/host"), // A.dll again, flat
    ];
    if manifest_in_memory {
        files.push((0x5200_0000, 0x5200_1000, 0x20, "/app/host"));
    }
    let mut c = CoreBuilder::default()
        .note("CORE", 3, prpsinfo(7, "host", "/app/host"))
        .note("CORE", 1, prstatus(7, 0, 0))
        .note("CORE", 0x4649_4c45, nt_file(&files))
        .load(HOST_BASE, host)
        .load(0x5000_0000, a.clone())
        .load(0x5100_0000, b)
        .load(0x7000_0000, a[..0x1000].to_vec());
    if manifest_in_memory {
        let mut page = man.clone();
        page.resize(0x1000, 0);
        c = c.load(0x5200_0000, page);
    }
    (c, total as u64)
}

fn no_files() -> OpenOptions {
    OpenOptions {
        recorded_paths: false,
        ..OpenOptions::default()
    }
}

#[test]
fn single_file_host_listed_once_with_its_bundled_files_named() {
    let (c, total) = single_file_core(true);
    let d = Dump::from_bytes_with(c.build(), &no_files()).unwrap();
    let hosts: Vec<_> = d
        .modules()
        .iter()
        .filter(|m| m.name() == "host" && m.kind == ModuleKind::Elf)
        .collect();
    assert_eq!(hosts.len(), 1, "{:#?}", d.modules());
    let h = hosts[0];
    assert_eq!((h.base, h.end), (HOST_BASE, HOST_BASE + total));
    assert_eq!(h.identity, Some(ModuleIdentity::BuildId(vec![0xcd; 20])));
    assert_eq!(h.mappings.len(), 1);

    let bundles = d.bundles();
    assert_eq!(bundles.len(), 1);
    let hb = &bundles[0];
    assert_eq!(hb.header_offset, 0x20000);
    assert_eq!(hb.marker_address, Some(HOST_BASE + total - 64));
    assert!(
        hb.manifest_source.starts_with("dump memory"),
        "{}",
        hb.manifest_source
    );
    let man = hb.manifest.as_ref().unwrap();
    assert_eq!(man.entries.len(), 4);

    let a = d.module_at(0x5000_0010).unwrap();
    assert_eq!(
        (a.path.as_str(), a.base, a.kind),
        ("/app/A.dll", 0x5000_0000, ModuleKind::Pe)
    );
    let b = d.module_at(0x5100_0900).unwrap();
    assert_eq!((b.path.as_str(), b.base), ("/app/B.dll", 0x5100_0800));
    let flat = d.module_at(0x7000_0010).unwrap();
    assert_eq!((flat.path.as_str(), flat.base), ("/app/A.dll", 0x7000_0000));
    assert_eq!(hb.placements.len(), 3);
    let (_, e) = d.bundled(b).unwrap();
    assert_eq!((e.offset, e.size), (0x13800, 0x1000));
    // Nothing of the host spans the bundle's mappings.
    assert!(
        d.modules().iter().all(|m| m.size() < 0x1000_0000),
        "{:#?}",
        d.modules()
    );
    // The host is found by name before any other mapping of its file.
    assert_eq!(d.module_by_name("host").map(|m| m.base), Some(HOST_BASE));
    // The producer: createdump's EI_OSABI is not set by this builder, and no XSTATE notes.
    assert_eq!(d.dump_kind().producer, DumpProducer::Kernel);
}

#[test]
fn single_file_host_without_its_manifest_still_splits_its_mappings() {
    let (c, total) = single_file_core(false);
    let d = Dump::from_bytes_with(c.build(), &no_files()).unwrap();
    let hb = &d.bundles()[0];
    assert!(hb.manifest.is_err());
    assert_eq!(hb.bundle_mappings, 3);
    let h = d.module_by_name("host").unwrap();
    assert_eq!(
        (h.base, h.end, h.kind),
        (HOST_BASE, HOST_BASE + total, ModuleKind::Elf)
    );
    // Each placement is its own module; none spans the others.
    assert!(
        d.modules().iter().all(|m| m.size() < 0x1000_0000),
        "{:#?}",
        d.modules()
    );
    assert_eq!(d.module_at(0x5000_0010).map(|m| m.base), Some(0x5000_0000));
    // (No valid PE header at 0x5100_0800 to place it by: the run starts with its mapping.)
    assert_eq!(d.module_at(0x5100_0900).map(|m| m.base), Some(0x5100_0000));
    assert_eq!(d.module_at(0x6000_0000), None);
}

#[test]
fn single_file_manifest_from_the_host_file_matched_by_build_id() {
    let (c, total) = single_file_core(false);
    // The host file: the image, then the bundled bytes, then the manifest at 0x20000.
    let (mut file, _) = single_file_core(true);
    let host = std::mem::take(&mut file.loads[0].bytes);
    assert_eq!(host.len() as u64, total);
    let mut bytes = host.clone();
    bytes.resize(0x20000, 0);
    // A.dll's bytes in the bundle: a PE image, read from the file when the dump lacks them.
    let pe = tiny_pe(0x5eed_1234, 0x3000);
    assert_eq!(pe.len(), 0x3000);
    bytes[0x10000..0x13000].copy_from_slice(&pe);
    bytes.extend_from_slice(&crate::write_bundle_manifest(&sample_manifest(6)));
    let dir = std::env::temp_dir().join(format!("dumpreader-sf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("host"), &bytes).unwrap();
    let opts = OpenOptions {
        image_search_path: vec![dir.clone()],
        ..no_files()
    };
    let d = Dump::from_bytes_with(c.build(), &opts).unwrap();
    let hb = &d.bundles()[0];
    assert!(
        hb.manifest_source.contains("build-id cdcd"),
        "{}",
        hb.manifest_source
    );
    assert_eq!(
        d.module_at(0x5100_0900).map(|m| m.path.as_str()),
        Some("/app/B.dll")
    );
    let a = d.module_at(0x5000_0010).unwrap().clone();
    let img = d.module_image(&a).unwrap();
    assert!(
        img.note.contains("from bundle entry A.dll at 0x10000"),
        "{}",
        img.note
    );
    assert_eq!(
        img.identity(),
        Some(ModuleIdentity::Pe {
            timestamp: 0x5eed_1234,
            size_of_image: 0x3000
        })
    );
    // A file of another build is refused.
    let mut other = bytes.clone();
    let id = other.windows(20).position(|w| w == [0xcd; 20]).unwrap();
    other[id] = 0xce;
    std::fs::write(dir.join("host"), &other).unwrap();
    let d = Dump::from_bytes_with(c.build(), &opts).unwrap();
    let err = d.bundles()[0].manifest.clone().unwrap_err();
    assert!(err.to_string().contains("dump has build-id cdcd"), "{err}");
    let Error::NoManifest { refusals, .. } = &err else {
        panic!("{err:?}")
    };
    assert!(
        refusals.iter().any(|r| matches!(
            r,
            crate::Refusal::IdentityMismatch { dump: ModuleIdentity::BuildId(id), .. }
                if id[..] == [0xcd; 20]
        )),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mappings_of_one_file_far_apart_are_separate_modules() {
    // gcore leaves out a PE file's unmodified pages: the runtime's flat mapping of an assembly
    // and its image mapping far above (sections near the head) are two modules known by the
    // file's name, neither spanning what lies between.
    let c = CoreBuilder::default()
        .note("CORE", 1, prstatus(7, 0, 0))
        .note(
            "CORE",
            0x4649_4c45,
            nt_file(&[
                (
                    0x1000_0000,
                    0x1010_0000,
                    0,
                    "/fx/System.Private.CoreLib.dll",
                ),
                (
                    0x7000_0000,
                    0x7000_1000,
                    0,
                    "/fx/System.Private.CoreLib.dll",
                ),
                (
                    0x7001_0000,
                    0x7008_0000,
                    0,
                    "/fx/System.Private.CoreLib.dll",
                ),
                (
                    0x7009_0000,
                    0x700a_0000,
                    0x80,
                    "/fx/System.Private.CoreLib.dll",
                ),
                (0x2000_0000, 0x2000_1000, 0, "/data/file.bin"),
                (0x6000_0000, 0x6000_1000, 0x5, "/data/file.bin"),
            ]),
        )
        .load(0x3000_0000, vec![1u8; 0x1000]);
    let d = Dump::from_bytes_with(c.build(), &no_files()).unwrap();
    let corelib: Vec<_> = d
        .modules()
        .iter()
        .filter(|m| m.name() == "System.Private.CoreLib.dll")
        .map(|m| (m.base, m.end, m.kind))
        .collect();
    assert_eq!(
        corelib,
        vec![
            (0x1000_0000, 0x1010_0000, ModuleKind::Pe),
            (0x7000_0000, 0x700a_0000, ModuleKind::Pe)
        ]
    );
    let data: Vec<_> = d
        .modules()
        .iter()
        .filter(|m| m.name() == "file.bin")
        .map(|m| (m.base, m.end))
        .collect();
    assert_eq!(
        data,
        vec![(0x2000_0000, 0x2000_1000), (0x6000_0000, 0x6000_1000)]
    );
    assert_eq!(
        d.module_at(0x3000_0000),
        None,
        "the heap between is no module's"
    );
}
