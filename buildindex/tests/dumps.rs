//! The index against the corpus's real dumps (dumps/*.dmp.zst): for every dump of a runtime
//! build the index holds, the runtime module's identity as the dump records it (the build id
//! note in the mapped image's first page; a minidump's module list) finds its build, of the
//! manifest's version, and wherever the dump holds the pages, the index's facts equal the
//! dump's memory: the dump's own .dynsym / export table gives each export's RVA, the
//! descriptor header, its pointer_data and JSON are where and what the index says (with the
//! module's base added to each RVA entry), the version text is at its RVAs, and g_dacTable
//! holds the descriptor's pointer_data addresses.
//!
//! The dumps are read with a reader of this file's own (no other project crate), streamed out
//! of zstd. `BUILDINDEX_DUMPS=hang-net10,hang-net9` restricts the run to those dumps. Run with
//! `--nocapture` to see, per dump, which pages of the runtime module the dump holds.

use buildindex::{Build, DescriptorRole, Identity, ModuleKind, Ptr};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../dumps")
}

/// Sparse memory: pieces of the dump's memory by address.
#[derive(Default)]
struct Memory {
    pieces: BTreeMap<u64, Vec<u8>>,
}

impl Memory {
    fn read(&self, addr: u64, n: usize) -> Option<&[u8]> {
        let (start, bytes) = self.pieces.range(..=addr).next_back()?;
        let off = (addr - start) as usize;
        bytes.get(off..off.checked_add(n)?)
    }
    fn u16(&self, a: u64) -> Option<u16> {
        Some(u16::from_le_bytes(self.read(a, 2)?.try_into().ok()?))
    }
    fn u32(&self, a: u64) -> Option<u32> {
        Some(u32::from_le_bytes(self.read(a, 4)?.try_into().ok()?))
    }
    fn u64(&self, a: u64) -> Option<u64> {
        Some(u64::from_le_bytes(self.read(a, 8)?.try_into().ok()?))
    }
    fn cstr(&self, a: u64, max: usize) -> Option<String> {
        let mut out = Vec::new();
        for i in 0..max as u64 {
            let b = self.read(a + i, 1)?[0];
            if b == 0 {
                return String::from_utf8(out).ok();
            }
            out.push(b);
        }
        None
    }
    fn present(&self, a: u64) -> bool {
        self.read(a, 1).is_some()
    }
}

fn le16(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes(b[o..o + 2].try_into().unwrap())
}
fn le32(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
fn le64(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

/// The first `n` bytes of the decompressed dump.
fn prefix(path: &Path, n: usize) -> Vec<u8> {
    let f = std::fs::File::open(path).unwrap();
    let mut d = zstd::stream::read::Decoder::new(f).unwrap();
    let mut out = Vec::new();
    (&mut d).take(n as u64).read_to_end(&mut out).unwrap();
    out
}

/// Streams the decompressed dump once, copying out the file ranges asked for.
fn ranges(path: &Path, want: &[(u64, u64)]) -> Vec<Vec<u8>> {
    let f = std::fs::File::open(path).unwrap();
    let mut d = zstd::stream::read::Decoder::new(f).unwrap();
    let mut out: Vec<Vec<u8>> = want
        .iter()
        .map(|&(_, n)| Vec::with_capacity(n as usize))
        .collect();
    let end = want.iter().map(|&(o, n)| o + n).max().unwrap_or(0);
    let mut buf = vec![0u8; 1 << 20];
    let mut pos = 0u64;
    while pos < end {
        let got = d.read(&mut buf).unwrap();
        if got == 0 {
            break;
        }
        let (a, b) = (pos, pos + got as u64);
        for (i, &(o, n)) in want.iter().enumerate() {
            let (s, e) = (o.max(a), (o + n).min(b));
            if s < e {
                out[i].extend_from_slice(&buf[(s - a) as usize..(e - a) as usize]);
            }
        }
        pos = b;
    }
    out
}

struct Mapping {
    start: u64,
    end: u64,
    file_offset: u64,
    path: String,
}

/// The PT_LOADs of a core: (vaddr, file offset, file size).
type Loads = Vec<(u64, u64, u64)>;

/// Adds to `mem` the dump's bytes of the address ranges asked for.
fn collect(path: &Path, loads: &Loads, ranges_: &[(u64, u64)], mem: &mut Memory) {
    let mut want = Vec::new();
    let mut where_ = Vec::new();
    for &(va, off, fs) in loads {
        for &(start, end) in ranges_ {
            let (s, e) = (va.max(start), (va + fs).min(end));
            if s < e {
                want.push((off + (s - va), e - s));
                where_.push(s);
            }
        }
    }
    for (bytes, addr) in ranges(path, &want).into_iter().zip(where_) {
        mem.pieces.insert(addr, bytes);
    }
}

/// An ELF core: its file-backed mappings (NT_FILE), its PT_LOADs, and the memory the dump
/// holds of the mapped files.
fn read_core(path: &Path) -> (Vec<Mapping>, Loads, Memory) {
    let mut n = 1 << 20;
    let (loads, maps) = loop {
        let p = prefix(path, n);
        assert_eq!(&p[..4], b"\x7fELF", "{}: not an ELF core", path.display());
        let phoff = le64(&p, 0x20) as usize;
        let mut phnum = le16(&p, 0x38) as usize;
        if phnum == 0xffff {
            let shoff = le64(&p, 0x28) as usize;
            phnum = le32(&p, shoff + 44) as usize; // PN_XNUM: section 0's sh_info
        }
        if phoff + 56 * phnum > p.len() {
            n *= 4;
            continue;
        }
        let mut loads = Vec::new();
        let mut notes = Vec::new();
        for i in 0..phnum {
            let h = &p[phoff + 56 * i..phoff + 56 * (i + 1)];
            let (t, off, va, fs) = (le32(h, 0), le64(h, 8), le64(h, 16), le64(h, 32));
            match t {
                1 => loads.push((va, off, fs)),
                4 => notes.push((off as usize, fs as usize)),
                _ => {}
            }
        }
        if notes.iter().any(|&(o, s)| o + s > p.len()) {
            n *= 4;
            continue;
        }
        let mut maps = Vec::new();
        for &(o, s) in &notes {
            let mut at = o;
            while at + 12 <= o + s {
                let (namesz, descsz, typ) = (
                    le32(&p, at) as usize,
                    le32(&p, at + 4) as usize,
                    le32(&p, at + 8),
                );
                let desc = at + 12 + ((namesz + 3) & !3);
                if typ == 0x4649_4c45 {
                    // NT_FILE: count, page size, (start, end, page offset) * count, names.
                    let d = &p[desc..desc + descsz];
                    let (count, page) = (le64(d, 0) as usize, le64(d, 8));
                    let mut names = d[16 + 24 * count..].split(|&b| b == 0);
                    for i in 0..count {
                        let e = 16 + 24 * i;
                        maps.push(Mapping {
                            start: le64(d, e),
                            end: le64(d, e + 8),
                            file_offset: le64(d, e + 16) * page,
                            path: String::from_utf8_lossy(names.next().unwrap_or(b"")).into_owned(),
                        });
                    }
                }
                at = desc + ((descsz + 3) & !3);
            }
        }
        break (loads, maps);
    };
    // The dump's bytes of every file-backed range.
    let mut mem = Memory::default();
    let r: Vec<(u64, u64)> = maps.iter().map(|m| (m.start, m.end)).collect();
    collect(path, &loads, &r, &mut mem);
    (maps, loads, mem)
}

/// The GNU build id of the ELF image mapped at `base`, from the dump's memory.
fn elf_build_id(mem: &Memory, base: u64) -> Option<Vec<u8>> {
    if mem.read(base, 4)? != b"\x7fELF" {
        return None;
    }
    let phoff = mem.u64(base + 0x20)?;
    let phnum = mem.u16(base + 0x38)? as u64;
    for i in 0..phnum {
        let h = base + phoff + 56 * i;
        if mem.u32(h)? != 4 {
            continue;
        }
        let (va, size) = (mem.u64(h + 16)?, mem.u64(h + 32)?);
        let mut at = base + va;
        while at + 12 <= base + va + size {
            let (namesz, descsz, typ) = (
                mem.u32(at)? as u64,
                mem.u32(at + 4)? as u64,
                mem.u32(at + 8)?,
            );
            let desc = at + 12 + ((namesz + 3) & !3);
            if typ == 3 && mem.read(at + 12, 4)? == b"GNU\0" {
                return Some(mem.read(desc, descsz as usize)?.to_vec());
            }
            at = desc + ((descsz + 3) & !3);
        }
    }
    None
}

/// The dump's own dynamic symbols of the ELF image at `base`, where its pages hold them:
/// (defined symbols read with their names, entries not in the dump).
fn elf_dynsym(mem: &Memory, base: u64) -> (BTreeMap<String, u64>, usize) {
    let mut out = BTreeMap::new();
    let Some(phoff) = mem.u64(base + 0x20) else {
        return (out, 0);
    };
    let phnum = mem.u16(base + 0x38).unwrap_or(0) as u64;
    let mut dynamic = None;
    for i in 0..phnum {
        let h = base + phoff + 56 * i;
        if mem.u32(h) == Some(2) {
            dynamic = mem.u64(h + 16);
        }
    }
    let Some(dynamic) = dynamic else {
        return (out, 0);
    };
    let mut tags = BTreeMap::new();
    for i in 0..64 {
        let (Some(t), Some(v)) = (
            mem.u64(base + dynamic + 16 * i),
            mem.u64(base + dynamic + 16 * i + 8),
        ) else {
            break;
        };
        if t == 0 {
            break;
        }
        // ld.so may have added the load bias to the pointers in place.
        tags.entry(t)
            .or_insert(if v >= base { v - base } else { v });
    }
    let (Some(&symtab), Some(&strtab), Some(&versym)) =
        (tags.get(&6), tags.get(&5), tags.get(&0x6fff_fff0))
    else {
        return (out, 0);
    };
    let mut missing = 0;
    for i in 0..versym.saturating_sub(symtab) / 24 {
        let Some(s) = mem.read(base + symtab + 24 * i, 24) else {
            missing += 1;
            continue;
        };
        let (name, info, shndx, value) = (le32(s, 0), s[4], le16(s, 6), le64(s, 8));
        if shndx == 0 || name == 0 || !matches!(info >> 4, 1 | 2) || !matches!(info & 0xf, 1 | 2) {
            continue;
        }
        match mem.cstr(base + strtab + name as u64, 256) {
            Some(n) => {
                out.insert(n, value);
            }
            None => missing += 1,
        }
    }
    (out, missing)
}

/// What a check of one module found, for the report.
#[derive(Default)]
struct Seen {
    exports_checked: usize,
    exports_unreadable: usize,
    notes: Vec<String>,
}

/// The index's facts against the dump's memory of the module at `base`.
fn check_module(mem: &Memory, base: u64, b: &Build, seen: &mut Seen, what: &str) {
    // Version text at each of its RVAs.
    let text: Vec<u8> = if b.kind.is_elf() {
        b.version_text.bytes().chain([0]).collect()
    } else {
        b.version_text
            .encode_utf16()
            .chain([0])
            .flat_map(|c| c.to_le_bytes())
            .collect()
    };
    let mut vt = (0, 0);
    for &r in &b.version_text_rvas {
        match mem.read(base + r, text.len()) {
            Some(got) => {
                assert_eq!(got, &text[..], "{what}: version text at {r:#x}");
                vt.0 += 1;
            }
            None => vt.1 += 1,
        }
    }
    seen.notes.push(format!(
        "version text {}/{} copies in the dump",
        vt.0,
        vt.0 + vt.1
    ));

    // g_dacTable: absolute addresses once the runtime started; the descriptor's relocated
    // pointer_data entries are among them.
    let dac = b.exports.iter().find(|e| e.name == "g_dacTable").unwrap();
    let size = if dac.size != 0 {
        dac.size as usize
    } else {
        8 * 128
    };
    match mem.read(base + dac.rva, size) {
        Some(t) => {
            let vals: Vec<u64> = t.chunks_exact(8).map(|c| le64(c, 0)).collect();
            let inside = vals
                .iter()
                .filter(|&&v| v >= base && v - base < b.image_size)
                .count();
            let nonzero = vals.iter().filter(|&&v| v != 0).count();
            assert!(
                inside * 10 >= nonzero * 9 && nonzero > 50,
                "{what}: g_dacTable at {:#x}: {inside} of {nonzero} entries in the image",
                dac.rva
            );
            let mut note = format!(
                "g_dacTable in the dump ({inside}/{} entries point into the image)",
                vals.len()
            );
            if let Some(d) = b.main_descriptor() {
                let rvas: Vec<u64> = d
                    .pointer_data
                    .iter()
                    .filter_map(|p| match p {
                        Ptr::Rva(r) => Some(*r),
                        _ => None,
                    })
                    .collect();
                let hits = rvas.iter().filter(|&&r| vals.contains(&(base + r))).count();
                assert!(
                    hits * 2 >= rvas.len(),
                    "{what}: {hits} of {} pointer_data RVAs in g_dacTable",
                    rvas.len()
                );
                note += &format!(
                    ", holding {hits} of the descriptor's {} pointer_data addresses",
                    rvas.len()
                );
            }
            seen.notes.push(note);
        }
        None => seen.notes.push("g_dacTable NOT in the dump".into()),
    }

    // Descriptors: header, pointer_data, JSON, wherever the dump holds them.
    for d in &b.descriptors {
        let role = match d.role {
            DescriptorRole::Main => "descriptor",
            DescriptorRole::Sub => "sub-descriptor",
            DescriptorRole::InImage => "other descriptor",
        };
        let at = base + d.rva;
        let mut parts = Vec::new();
        match mem.read(at, 40) {
            Some(h) => {
                assert_eq!(
                    &h[..8],
                    b"DNCCDAC\0",
                    "{what}: {role} magic at {:#x}",
                    d.rva
                );
                assert_eq!(le32(h, 8), d.flags, "{what}: flags");
                assert_eq!(le32(h, 12), d.descriptor_size, "{what}: size");
                assert_eq!(
                    Some(le64(h, 16)),
                    d.json_ptr.resolve(base),
                    "{what}: JSON pointer"
                );
                assert_eq!(le32(h, 24) as usize, d.pointer_data.len(), "{what}: count");
                assert_eq!(
                    Some(le64(h, 32)),
                    d.pointer_data_ptr.resolve(base),
                    "{what}: pointer_data"
                );
                parts.push("header");
            }
            None => parts.push("no header"),
        }
        let pd = d.pointer_data_ptr.resolve(base).unwrap();
        match mem.read(pd, 8 * d.pointer_data.len()) {
            Some(raw) => {
                for (i, p) in d.pointer_data.iter().enumerate() {
                    let v = le64(raw, 8 * i);
                    if let Some(want) = p.resolve(base) {
                        assert_eq!(v, want, "{what}: {role} pointer_data[{i}] = {p:?}");
                    }
                }
                parts.push("pointer_data");
            }
            None => parts.push("no pointer_data"),
        }
        let json = d.json_ptr.resolve(base).unwrap();
        match mem.read(json, d.json.len()) {
            Some(j) => {
                assert_eq!(j, d.json.as_bytes(), "{what}: {role} JSON");
                parts.push("JSON");
            }
            None => parts.push("no JSON"),
        }
        // A sub-descriptor slot filled at run time: the dump knows where it points.
        for s in &d.sub_descriptors {
            let slot = d.pointer_data[s.index as usize].resolve(base).unwrap();
            if let (Some(v), buildindex::Ptr::Unfilled) = (mem.u64(slot), s.content) {
                let to = b.descriptors.iter().position(|x| base + x.rva == v);
                assert!(
                    v == 0 || to.is_some(),
                    "{what}: {} slot holds {v:#x}: no indexed descriptor",
                    s.name
                );
                parts.push("sub-descriptor slot");
            }
        }
        seen.notes
            .push(format!("{role} at {:#x}: {}", d.rva, parts.join(", ")));
    }

    if let Some(ri) = &b.runtime_info {
        let rva = b
            .exports
            .iter()
            .find(|e| e.name == "DotNetRuntimeInfo")
            .unwrap()
            .rva;
        match mem.read(base + rva, ri.raw.len()) {
            Some(got) => {
                assert_eq!(got, &ri.raw[..], "{what}: DotNetRuntimeInfo");
                seen.notes.push("DotNetRuntimeInfo equal".into());
            }
            None => seen.notes.push("DotNetRuntimeInfo NOT in the dump".into()),
        }
    }
}

/// A minidump: module list (name, base, size, timestamp) and memory.
fn read_minidump(path: &Path) -> (Vec<(String, u64, u32, u32)>, Memory) {
    let f = std::fs::File::open(path).unwrap();
    let mut d = Vec::new();
    zstd::stream::read::Decoder::new(f)
        .unwrap()
        .read_to_end(&mut d)
        .unwrap();
    assert_eq!(&d[..4], b"MDMP", "{}", path.display());
    let (n, dir) = (le32(&d, 8) as usize, le32(&d, 12) as usize);
    let mut modules = Vec::new();
    let mut mem = Memory::default();
    for i in 0..n {
        let e = dir + 12 * i;
        let (typ, rva) = (le32(&d, e), le32(&d, e + 8) as usize);
        match typ {
            4 => {
                for m in 0..le32(&d, rva) as usize {
                    let o = rva + 4 + 108 * m;
                    let (base, size, ts, name_rva) = (
                        le64(&d, o),
                        le32(&d, o + 8),
                        le32(&d, o + 16),
                        le32(&d, o + 20) as usize,
                    );
                    let len = le32(&d, name_rva) as usize;
                    let name: Vec<u16> = (0..len / 2)
                        .map(|k| le16(&d, name_rva + 4 + 2 * k))
                        .collect();
                    modules.push((String::from_utf16_lossy(&name), base, size, ts));
                }
            }
            5 => {
                for m in 0..le32(&d, rva) as usize {
                    let o = rva + 4 + 16 * m;
                    let (start, size, at) = (
                        le64(&d, o),
                        le32(&d, o + 8) as usize,
                        le32(&d, o + 12) as usize,
                    );
                    mem.pieces.insert(start, d[at..at + size].to_vec());
                }
            }
            9 => {
                let (count, mut at) = (le64(&d, rva) as usize, le64(&d, rva + 8) as usize);
                for m in 0..count {
                    let o = rva + 16 + 16 * m;
                    let (start, size) = (le64(&d, o), le64(&d, o + 8) as usize);
                    mem.pieces.insert(start, d[at..at + size].to_vec());
                    at += size;
                }
            }
            _ => {}
        }
    }
    (modules, mem)
}

/// The PE export table of the image at `base`, from the dump's memory.
fn pe_exports(mem: &Memory, base: u64) -> Option<(u32, u32, BTreeMap<String, u64>)> {
    let pe = base + mem.u32(base + 0x3c)? as u64;
    if mem.read(pe, 4)? != b"PE\0\0" {
        return None;
    }
    let ts = mem.u32(pe + 8)?;
    let opt = pe + 24;
    let size = mem.u32(opt + 56)?;
    let (erva, esize) = (mem.u32(opt + 112)? as u64, mem.u32(opt + 116)? as u64);
    let e = base + erva;
    let (nfunc, nnames) = (mem.u32(e + 20)? as u64, mem.u32(e + 24)? as u64);
    let (afunc, anames, aords) = (
        mem.u32(e + 28)? as u64,
        mem.u32(e + 32)? as u64,
        mem.u32(e + 36)? as u64,
    );
    let mut out = BTreeMap::new();
    for i in 0..nnames {
        let name = mem.cstr(base + mem.u32(base + anames + 4 * i)? as u64, 256)?;
        let ord = mem.u16(base + aords + 2 * i)? as u64;
        assert!(ord < nfunc);
        let f = mem.u32(base + afunc + 4 * ord)? as u64;
        if !(erva..erva + esize).contains(&f) {
            out.insert(name, f);
        }
    }
    Some((ts, size, out))
}

struct Case {
    name: String,
    version: String,
    os: String,
    shape: String,
    kind: String,
}

fn cases() -> Vec<Case> {
    let only: Option<Vec<String>> = std::env::var("BUILDINDEX_DUMPS")
        .ok()
        .map(|s| s.split(',').map(str::to_owned).collect());
    let index = buildindex::index().expect("index");
    let mut out = Vec::new();
    let mut names: Vec<PathBuf> = std::fs::read_dir(corpus())
        .map(|r| r.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    names.sort();
    for p in names {
        let Some(name) = p
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".manifest.json"))
        else {
            continue;
        };
        if only.as_ref().is_some_and(|o| !o.iter().any(|x| x == name)) {
            continue;
        }
        let m: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        let s = |v: &serde_json::Value| v.as_str().unwrap_or("").to_owned();
        let c = Case {
            name: name.to_owned(),
            version: s(&m["runtime"]["version"]),
            os: s(&m["runtime"]["os"]),
            shape: s(&m["app"]["shape"]),
            kind: s(&m["dump"]["kind"]),
        };
        // NativeAOT apps have no runtime module of their own to look up (the runtime is
        // compiled into the app; dumps/README.md, the NativeAOT corpus).
        if c.shape == "nativeaot" {
            continue;
        }
        // Only dumps of builds the index holds (not the 8.0.4 and 3.1.23 of the first corpus).
        if index
            .builds()
            .iter()
            .any(|b| b.package_version == c.version && b.kind.is_elf() == (c.os == "linux"))
        {
            out.push(c);
        }
    }
    out
}

#[test]
fn corpus_dumps_find_their_build() {
    let cases = cases();
    if cases.is_empty() {
        eprintln!(
            "SKIPPED corpus_dumps_find_their_build: no corpus dump of an indexed build in {}",
            corpus().display()
        );
        return;
    }
    let mut checked = 0;
    for c in &cases {
        let path = corpus().join(format!("{}.dmp.zst", c.name));
        if !path.exists() {
            assert!(
                std::env::var_os("DUMPSHELL_REQUIRE_CORPUS").is_none(),
                "{} is absent",
                path.display()
            );
            eprintln!("SKIPPED {}: {} is absent", c.name, path.display());
            continue;
        }
        let single = c.shape.starts_with("single-file");
        let want_kind = match (c.os.as_str(), single) {
            ("linux", false) => ModuleKind::LibCoreClr,
            ("linux", true) => ModuleKind::SingleFileHostElf,
            (_, false) => ModuleKind::CoreClrDll,
            (_, true) => ModuleKind::SingleFileHostPe,
        };
        let mut seen = Seen::default();
        let what = format!("{} ({} {} {})", c.name, c.version, c.shape, c.kind);
        let (build, base, how) = if c.os == "linux" {
            let (maps, loads, mut mem) = read_core(&path);
            // Every mapped file's identity, from its first page in the dump; the runtime module
            // is the one the index knows.
            let mut found = Vec::new();
            let mut no_first_page = Vec::new();
            for m in maps.iter().filter(|m| m.file_offset == 0) {
                if !mem.present(m.start) {
                    no_first_page.push(m.path.clone());
                    continue;
                }
                if let Some(id) = elf_build_id(&mem, m.start) {
                    if let Some(b) = buildindex::lookup(Identity::ElfBuildId(&id)).unwrap() {
                        found.push((b, m.start, m.path.clone()));
                    }
                }
            }
            assert_eq!(found.len(), 1, "{what}: runtime modules found by build id: {:?}; without a first page: {no_first_page:?}",
                found.iter().map(|f| &f.2).collect::<Vec<_>>());
            let (b, base, file) = found.pop().unwrap();
            // The module's whole extent: .bss (g_dacTable) is an anonymous mapping.
            mem.pieces.clear();
            collect(&path, &loads, &[(base, base + b.image_size)], &mut mem);
            let (syms, missing) = elf_dynsym(&mem, base);
            for (name, value) in &syms {
                assert_eq!(
                    b.export(name),
                    Some(*value),
                    "{what}: export {name} in the dump's .dynsym"
                );
            }
            seen.exports_checked = syms.len();
            seen.exports_unreadable = missing;
            check_module(&mem, base, b, &mut seen, &what);
            (
                b,
                base,
                format!(
                    "build id note of {} (first page in the dump)",
                    file.rsplit('/').next().unwrap_or("")
                ),
            )
        } else {
            let (modules, mem) = read_minidump(&path);
            let mut found = Vec::new();
            for (name, base, size, ts) in &modules {
                if let Some(b) = buildindex::lookup(Identity::Pe {
                    timestamp: *ts,
                    size_of_image: *size,
                })
                .unwrap()
                {
                    found.push((b, *base, name.clone()));
                }
            }
            assert_eq!(
                found.len(),
                1,
                "{what}: runtime modules found by timestamp and size"
            );
            let (b, base, file) = found.pop().unwrap();
            // The image's own headers in memory say the same, and its export table holds the
            // index's RVAs.
            if let Some((ts, size, exports)) = pe_exports(&mem, base) {
                assert_eq!(
                    Identity::Pe {
                        timestamp: ts,
                        size_of_image: size
                    },
                    b.identity(),
                    "{what}: PE headers"
                );
                for (name, rva) in &exports {
                    assert_eq!(b.export(name), Some(*rva), "{what}: export {name}");
                }
                assert_eq!(exports.len(), b.exports.len(), "{what}: export count");
                seen.exports_checked = exports.len();
            } else {
                seen.notes
                    .push("PE headers or export table NOT in the dump".into());
            }
            check_module(&mem, base, b, &mut seen, &what);
            (b, base, format!("module list entry of {file}"))
        };
        assert_eq!(build.package_version, c.version, "{what}: the build found");
        // The runtime's own DAC found the runtime module at the same base (dacprobe's truth).
        let dac = corpus().join(format!("{}.dac.json", c.name));
        if let Ok(bytes) = std::fs::read(&dac) {
            let t: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            if let Some(b) = t["runtime"]["runtime_base"].as_str() {
                let b = u64::from_str_radix(b.trim_start_matches("0x"), 16).unwrap();
                assert_eq!(b, base, "{what}: the DAC's runtime base");
                seen.notes.push("base equal to the DAC's".into());
            }
        }
        assert_eq!(build.kind, want_kind, "{what}: the module found");
        eprintln!(
            "{}: {} {} {} at {base:#x}, by the {how}; exports: {} equal to the dump's symbol table{}; {}",
            c.name,
            build.package,
            build.package_version,
            build.file_name,
            seen.exports_checked,
            if seen.exports_unreadable > 0 { format!(" ({} entries not in the dump)", seen.exports_unreadable) } else { String::new() },
            seen.notes.join("; ")
        );
        checked += 1;
    }
    eprintln!("corpus_dumps_find_their_build: {checked} dumps checked");
    assert!(checked > 0 || std::env::var_os("DUMPSHELL_REQUIRE_CORPUS").is_none());
}
