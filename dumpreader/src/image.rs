//! Module images (ELF and PE) parsed by hand from the dump's memory, or from a matching file
//! on disk when the dump lacks the pages.
//!
//! The parsers read through [`Memory`] at the module's load address, so the same code serves
//! an image in the dump and an image file on disk (presented as a [`Memory`] laid out the way
//! the loader mapped it).

use crate::check::ImageGap;
use crate::memory::{Memory, MAX_READ_BYTES};
use crate::types::{FileMapping, ModuleIdentity};
use crate::Error;
use std::path::PathBuf;

/// Most ELF program headers read from an image.
const MAX_IMAGE_PHNUM: u64 = 512;
/// Most PE sections read.
const MAX_SECTIONS: u64 = 256;
/// Most symbols or exports read from one image.
pub const MAX_SYMBOLS: u64 = 2_000_000;
/// Most `.dynamic` entries read.
const MAX_DYNAMIC: u64 = 8192;

/// Where a [`ModuleImage`]'s bytes came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageSource {
    /// The dump's own memory.
    DumpMemory,
    /// A file on disk (whose identity matched, or could not be checked: see the note).
    File(PathBuf),
}

/// An ELF symbol (dynamic symbol table, or `.symtab` when read from a file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// Symbol name.
    pub name: String,
    /// Absolute address in the dumped process.
    pub address: u64,
    /// Size in bytes (0 when unknown).
    pub size: u64,
    /// Whether it is a function (STT_FUNC / STT_GNU_IFUNC).
    pub is_function: bool,
}

/// An ELF program header of an image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct ProgramHeader {
    pub p_type: u32,
    pub p_flags: u32,
    pub p_offset: u64,
    pub p_vaddr: u64,
    pub p_filesz: u64,
    pub p_memsz: u64,
}

/// A parsed ELF image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElfImage {
    /// Difference between run-time and link-time addresses.
    pub load_bias: u64,
    /// Program headers.
    pub program_headers: Vec<ProgramHeader>,
    /// GNU build id, if the image has one.
    pub build_id: Option<Vec<u8>>,
    /// Run-time address of `.dynamic`.
    pub dynamic: Option<u64>,
    /// `DT_SONAME`, if any.
    pub soname: Option<String>,
    /// Symbols sorted by address (defined functions and objects).
    pub symbols: Vec<Symbol>,
    /// `.eh_frame_hdr` (PT_GNU_EH_FRAME): run-time address and size.
    pub eh_frame_hdr: Option<(u64, u64)>,
    /// `.eh_frame` run-time address (decoded from `.eh_frame_hdr`).
    pub eh_frame: Option<u64>,
}

/// A PE section header.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct PeSection {
    pub name: String,
    pub virtual_address: u32,
    pub virtual_size: u32,
    pub raw_offset: u32,
    pub raw_size: u32,
    pub characteristics: u32,
}

/// A PE export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Export {
    /// Export name (None for ordinal-only exports).
    pub name: Option<String>,
    /// Ordinal (biased by the directory's `Base`).
    pub ordinal: u32,
    /// Absolute address in the dumped process (0 for forwarders).
    pub address: u64,
    /// Forwarder string ("DLL.Func") when the export is forwarded.
    pub forwarder: Option<String>,
}

/// How a PE file is laid out in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeLayout {
    /// Sections at their RVAs (the Windows loader, or PAL's `MAPMapPEFile`).
    Mapped,
    /// The file mapped as is (RVA translated through the section table).
    Flat,
}

/// A parsed PE image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeImage {
    /// COFF machine.
    pub machine: u16,
    /// COFF TimeDateStamp.
    pub timestamp: u32,
    /// SizeOfImage.
    pub size_of_image: u32,
    /// Whether the optional header is PE32+ (64-bit).
    pub pe32_plus: bool,
    /// Preferred ImageBase from the header.
    pub image_base: u64,
    /// Entry point (absolute, 0 if none).
    pub entry_point: u64,
    /// Layout in memory.
    pub layout: PeLayout,
    /// Sections.
    pub sections: Vec<PeSection>,
    /// Exports, in directory order.
    pub exports: Vec<Export>,
    /// The DLL name from the export directory.
    pub dll_name: Option<String>,
    /// Exception directory (.pdata): absolute address and size.
    pub pdata: Option<(u64, u32)>,
    /// CLI (COR20) header: absolute address and size. Present for managed assemblies.
    pub cli_header: Option<(u64, u32)>,
    /// Data directories (RVA, size) as in the header, up to 16.
    pub data_directories: Vec<(u32, u32)>,
}

impl PeImage {
    /// Translates an RVA to an absolute address under this image's layout.
    pub fn rva_to_addr(&self, base: u64, rva: u32) -> Option<u64> {
        rva_to_addr(self.layout, &self.sections, base, rva)
    }
}

/// The format-specific part of a [`ModuleImage`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageFormat {
    /// An ELF image.
    Elf(ElfImage),
    /// A PE image.
    Pe(PeImage),
}

/// A module's image: headers, symbols/exports and unwind-table locations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleImage {
    /// The module's path as recorded in the dump.
    pub module_path: String,
    /// Load address.
    pub base: u64,
    /// Where the bytes came from.
    pub source: ImageSource,
    /// A human-readable note on the source ("from dump memory", "from file X: build id
    /// matches", "from file X: identity not in dump, not verified", and what was refused).
    pub note: String,
    /// The parsed image.
    pub format: ImageFormat,
}

impl ModuleImage {
    /// The image's identity (build id or PE timestamp+size), if it has one.
    pub fn identity(&self) -> Option<ModuleIdentity> {
        match &self.format {
            ImageFormat::Elf(e) => e.build_id.clone().map(ModuleIdentity::BuildId),
            ImageFormat::Pe(p) => Some(ModuleIdentity::Pe {
                timestamp: p.timestamp,
                size_of_image: p.size_of_image,
            }),
        }
    }

    /// Address of an exported symbol (ELF dynamic symbol or PE export) by exact name.
    pub fn find_export(&self, name: &str) -> Option<u64> {
        match &self.format {
            ImageFormat::Elf(e) => e.symbols.iter().find(|s| s.name == name).map(|s| s.address),
            ImageFormat::Pe(p) => p
                .exports
                .iter()
                .find(|x| x.name.as_deref() == Some(name) && x.forwarder.is_none())
                .map(|x| x.address),
        }
    }

    /// The nearest symbol/export at or below `addr`: `(name, offset)`. For ELF symbols with a
    /// known size, `addr` must fall inside the symbol.
    pub fn symbolize(&self, addr: u64) -> Option<(&str, u64)> {
        match &self.format {
            ImageFormat::Elf(e) => {
                let i = e.symbols.partition_point(|s| s.address <= addr);
                // Walk back over zero-sized / non-containing symbols at most a few steps.
                for s in e.symbols[..i].iter().rev().take(16) {
                    if s.size == 0 || addr - s.address < s.size {
                        return Some((s.name.as_str(), addr - s.address));
                    }
                }
                None
            }
            ImageFormat::Pe(p) => p
                .exports
                .iter()
                .filter(|x| x.forwarder.is_none() && x.address <= addr && x.name.is_some())
                .max_by_key(|x| x.address)
                .map(|x| (x.name.as_deref().unwrap_or(""), addr - x.address)),
        }
    }
}

// ---------------------------------------------------------------------------------------
// ELF

fn bad(structure: &str, address: u64, reason: impl Into<String>) -> Error {
    Error::BadImage {
        structure: structure.to_string(),
        address,
        reason: reason.into(),
    }
}

/// Reads the ELF build id of the image at `base` (headers and PT_NOTE must be in `mem`).
pub fn elf_build_id(mem: &dyn Memory, base: u64) -> Option<Vec<u8>> {
    let (phdrs, bias) = elf_headers(mem, base).ok()?;
    build_id_from(mem, &phdrs, bias)
}

pub(crate) fn elf_headers(mem: &dyn Memory, base: u64) -> Result<(Vec<ProgramHeader>, u64), Error> {
    let mut eh = [0u8; 64];
    mem.read_exact(base, &mut eh)?;
    if &eh[..4] != b"\x7fELF" {
        return Err(bad("ELF header", base, "no ELF magic"));
    }
    if eh[4] != 2 || eh[5] != 1 {
        return Err(bad("ELF header", base, "not a 64-bit little-endian ELF"));
    }
    let phoff = u64::from_le_bytes(eh[0x20..0x28].try_into().unwrap_or_default());
    let phentsize = u16::from_le_bytes([eh[0x36], eh[0x37]]) as u64;
    let phnum = u16::from_le_bytes([eh[0x38], eh[0x39]]) as u64;
    if !(56..=256).contains(&phentsize) {
        return Err(bad(
            "ELF header",
            base,
            format!("e_phentsize {phentsize} not in 56..=256"),
        ));
    }
    if phnum > MAX_IMAGE_PHNUM {
        return Err(bad(
            "ELF header",
            base,
            format!("e_phnum {phnum} > {MAX_IMAGE_PHNUM}"),
        ));
    }
    let mut table = vec![0u8; (phnum * phentsize) as usize];
    let pha = base
        .checked_add(phoff)
        .ok_or_else(|| bad("program headers", base, "e_phoff overflows"))?;
    mem.read_exact(pha, &mut table)?;
    let mut phdrs = Vec::with_capacity(phnum as usize);
    for c in table.chunks_exact(phentsize as usize) {
        let q = |o: usize| crate::bytes::le_u64(c, o);
        phdrs.push(ProgramHeader {
            p_type: crate::bytes::le_u32(c, 0),
            p_flags: crate::bytes::le_u32(c, 4),
            p_offset: q(8),
            p_vaddr: q(16),
            p_filesz: q(32),
            p_memsz: q(40),
        });
    }
    let min_vaddr = phdrs
        .iter()
        .filter(|p| p.p_type == 1)
        .map(|p| p.p_vaddr & !0xfff)
        .min()
        .unwrap_or(0);
    Ok((phdrs, base.wrapping_sub(min_vaddr)))
}

pub(crate) fn build_id_from(
    mem: &dyn Memory,
    phdrs: &[ProgramHeader],
    bias: u64,
) -> Option<Vec<u8>> {
    for p in phdrs.iter().filter(|p| p.p_type == 4) {
        let notes = mem.read_bytes(bias.wrapping_add(p.p_vaddr), p.p_filesz.min(65536) as usize);
        let mut o = 0usize;
        while o + 12 <= notes.len() {
            let namesz = crate::bytes::le_u32(&notes, o) as usize;
            let descsz = crate::bytes::le_u32(&notes, o + 4) as usize;
            let t = crate::bytes::le_u32(&notes, o + 8);
            let name_start = o + 12;
            let desc_start = name_start.checked_add(namesz.next_multiple_of(4))?;
            let end = desc_start.checked_add(descsz.next_multiple_of(4))?;
            if t == 3 && notes.get(name_start..name_start + namesz) == Some(b"GNU\0".as_slice()) {
                return notes
                    .get(desc_start..desc_start + descsz)
                    .map(|d| d.to_vec());
            }
            o = end;
        }
    }
    None
}

/// Parses an ELF image at `base`. `relocated`: whether `.dynamic` pointers may already have
/// been relocated by the dynamic loader (true for dump memory, false for a file on disk).
pub(crate) fn parse_elf(
    mem: &dyn Memory,
    base: u64,
    relocated: bool,
) -> Result<(ElfImage, Vec<ImageGap>), Error> {
    let mut problems = Vec::new();
    let (phdrs, bias) = elf_headers(mem, base)?;
    let build_id = build_id_from(mem, &phdrs, bias);
    let mut img = ElfImage {
        load_bias: bias,
        program_headers: phdrs.clone(),
        build_id,
        dynamic: None,
        soname: None,
        symbols: Vec::new(),
        eh_frame_hdr: None,
        eh_frame: None,
    };
    if let Some(p) = phdrs.iter().find(|p| p.p_type == 0x6474_e550) {
        let a = bias.wrapping_add(p.p_vaddr);
        img.eh_frame_hdr = Some((a, p.p_memsz));
        let mut h = [0u8; 12];
        if mem.read(a, &mut h) >= 8 && h[0] == 1 {
            img.eh_frame = decode_eh_ptr(h[1], &h[4..], a + 4, a);
        } else {
            problems.push(ImageGap::EhFrameHdr { address: a });
        }
    }
    let Some(dynp) = phdrs.iter().find(|p| p.p_type == 2) else {
        return Ok((img, problems));
    };
    let dyn_addr = bias.wrapping_add(dynp.p_vaddr);
    img.dynamic = Some(dyn_addr);
    let n = (dynp.p_memsz / 16).min(MAX_DYNAMIC) as usize;
    let raw = mem.read_bytes(dyn_addr, n * 16);
    if raw.is_empty() {
        problems.push(ImageGap::Dynamic { address: dyn_addr });
        return Ok((img, problems));
    }
    let fix = |v: u64| {
        if !relocated || v < base {
            v.wrapping_add(bias)
        } else {
            v
        }
    };
    let (mut symtab, mut strtab, mut strsz, mut syment, mut hash, mut gnu_hash, mut soname) =
        (None, None, 0u64, 24u64, None, None, None);
    for c in raw.chunks_exact(16) {
        let tag = crate::bytes::le_u64(c, 0);
        let val = crate::bytes::le_u64(c, 8);
        match tag {
            0 => break,
            4 => hash = Some(fix(val)),
            5 => strtab = Some(fix(val)),
            6 => symtab = Some(fix(val)),
            10 => strsz = val,
            11 => syment = val,
            14 => soname = Some(val),
            0x6fff_fef5 => gnu_hash = Some(fix(val)),
            _ => {}
        }
    }
    let (Some(symtab), Some(strtab)) = (symtab, strtab) else {
        return Ok((img, problems));
    };
    if !(24..=64).contains(&syment) {
        problems.push(ImageGap::SymbolEntrySize { syment });
        return Ok((img, problems));
    }
    let strs = mem.read_bytes(strtab, strsz.min(MAX_READ_BYTES as u64) as usize);
    if (strs.len() as u64) < strsz.min(MAX_READ_BYTES as u64) {
        problems.push(ImageGap::PartialTable {
            table: ".dynstr",
            address: strtab,
            got: strs.len() as u64,
            wanted: strsz,
        });
    }
    if let Some(off) = soname {
        img.soname = cstr_at(&strs, off);
    }
    // Symbol count: DT_HASH nchain, else walk DT_GNU_HASH, else assume .dynstr follows .dynsym.
    let count = if let Some(h) = hash {
        mem.read_u32(h.wrapping_add(4)).ok().map(|v| v as u64)
    } else if let Some(g) = gnu_hash {
        gnu_hash_count(mem, g)
    } else if strtab > symtab {
        Some((strtab - symtab) / syment)
    } else {
        None
    };
    let Some(count) = count else {
        problems.push(ImageGap::SymbolCount);
        return Ok((img, problems));
    };
    let count = count.min(MAX_SYMBOLS).min(MAX_READ_BYTES as u64 / syment);
    let table = mem.read_bytes(symtab, (count * syment) as usize);
    if (table.len() as u64) < count * syment {
        problems.push(ImageGap::PartialTable {
            table: ".dynsym",
            address: symtab,
            got: table.len() as u64,
            wanted: count * syment,
        });
    }
    for c in table.chunks_exact(syment as usize) {
        let st_name = crate::bytes::le_u32(c, 0) as u64;
        let info = c[4];
        let shndx = crate::bytes::le_u16(c, 6);
        let value = crate::bytes::le_u64(c, 8);
        let size = crate::bytes::le_u64(c, 16);
        let typ = info & 0xf;
        if shndx == 0 || value == 0 || !matches!(typ, 0..=2 | 10) {
            continue;
        }
        let Some(name) = cstr_at(&strs, st_name) else {
            continue;
        };
        if name.is_empty() {
            continue;
        }
        img.symbols.push(Symbol {
            name,
            address: value.wrapping_add(bias),
            size,
            is_function: typ == 2 || typ == 10,
        });
    }
    img.symbols.sort_by_key(|s| s.address);
    Ok((img, problems))
}

fn cstr_at(strs: &[u8], off: u64) -> Option<String> {
    let s = strs.get(usize::try_from(off).ok()?..)?;
    let end = s.iter().position(|&c| c == 0)?;
    Some(String::from_utf8_lossy(&s[..end]).into_owned())
}

fn gnu_hash_count(mem: &dyn Memory, g: u64) -> Option<u64> {
    let nbuckets = mem.read_u32(g).ok()? as u64;
    let symoffset = mem.read_u32(g.wrapping_add(4)).ok()? as u64;
    let bloom_size = mem.read_u32(g.wrapping_add(8)).ok()? as u64;
    if nbuckets > 1 << 24 || bloom_size > 1 << 24 {
        return None;
    }
    let buckets_at = g.wrapping_add(16 + bloom_size * 8);
    let b = mem.read_bytes(buckets_at, (nbuckets * 4) as usize);
    if (b.len() as u64) < nbuckets * 4 {
        return None;
    }
    let max_bucket = b
        .chunks_exact(4)
        .map(|c| crate::bytes::le_u32(c, 0) as u64)
        .max()
        .unwrap_or(0);
    if max_bucket < symoffset {
        return Some(symoffset);
    }
    let chains_at = buckets_at.wrapping_add(nbuckets * 4);
    (max_bucket..max_bucket.saturating_add(MAX_SYMBOLS)).find_map(|idx| {
        let v = mem
            .read_u32(chains_at.wrapping_add((idx - symoffset).wrapping_mul(4)))
            .ok();
        match v {
            None => Some(None),
            Some(v) if v & 1 != 0 => Some(Some(idx + 1)),
            Some(_) => None,
        }
    })?
}

/// Decodes a DWARF EH pointer (`.eh_frame_hdr` `eh_frame_ptr`).
fn decode_eh_ptr(enc: u8, b: &[u8], field_addr: u64, hdr_addr: u64) -> Option<u64> {
    if enc == 0xff {
        return None;
    }
    let v: u64 = match enc & 0x0f {
        0x00 | 0x04 | 0x0c => crate::bytes::le_u64(b, 0),
        0x03 => crate::bytes::le_u32(b, 0) as u64,
        0x0b => crate::bytes::le_u32(b, 0) as i32 as i64 as u64,
        0x02 => crate::bytes::le_u16(b, 0) as u64,
        0x0a => crate::bytes::le_u16(b, 0) as i16 as i64 as u64,
        _ => return None,
    };
    match enc & 0x70 {
        0x00 => Some(v),
        0x10 => Some(field_addr.wrapping_add(v)),
        0x30 => Some(hdr_addr.wrapping_add(v)),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------
// PE

struct PeHeaders {
    machine: u16,
    timestamp: u32,
    size_of_image: u32,
    size_of_headers: u32,
    pe32_plus: bool,
    image_base: u64,
    entry_rva: u32,
    sections: Vec<PeSection>,
    dirs: Vec<(u32, u32)>,
}

/// Reads the PE identity (TimeDateStamp, SizeOfImage) of the image at `base`.
pub fn pe_identity(mem: &dyn Memory, base: u64) -> Option<ModuleIdentity> {
    let h = pe_headers(mem, base).ok()?;
    Some(ModuleIdentity::Pe {
        timestamp: h.timestamp,
        size_of_image: h.size_of_image,
    })
}

fn pe_headers(mem: &dyn Memory, base: u64) -> Result<PeHeaders, Error> {
    let mut dos = [0u8; 64];
    mem.read_exact(base, &mut dos)?;
    if &dos[..2] != b"MZ" {
        return Err(bad("DOS header", base, "no MZ magic"));
    }
    let lfanew = crate::bytes::le_u32(&dos, 0x3c) as u64;
    if lfanew > 0x10_0000 {
        return Err(bad(
            "DOS header",
            base,
            format!("e_lfanew {lfanew:#x} too large"),
        ));
    }
    let pe = base
        .checked_add(lfanew)
        .ok_or_else(|| bad("DOS header", base, "e_lfanew overflows"))?;
    let mut nt = [0u8; 24 + 240];
    let got = mem.read(pe, &mut nt);
    if got < 24 + 96 {
        return Err(Error::Read(crate::ReadError {
            addr: pe,
            wanted: 24 + 96,
            got,
        }));
    }
    if &nt[..4] != b"PE\0\0" {
        return Err(bad("PE header", pe, "no PE signature"));
    }
    let machine = crate::bytes::le_u16(&nt, 4);
    let nsec = crate::bytes::le_u16(&nt, 6) as u64;
    let timestamp = crate::bytes::le_u32(&nt, 8);
    let size_opt = crate::bytes::le_u16(&nt, 20) as u64;
    let opt = &nt[24..got];
    let magic = crate::bytes::le_u16(opt, 0);
    let (pe32_plus, image_base, ndirs_off, dirs_off) = match magic {
        0x20b => (true, crate::bytes::le_u64(opt, 24), 108usize, 112usize),
        0x10b => (false, crate::bytes::le_u32(opt, 28) as u64, 92, 96),
        m => {
            return Err(bad(
                "PE optional header",
                pe.wrapping_add(24),
                format!("magic {m:#x}"),
            ))
        }
    };
    let entry_rva = crate::bytes::le_u32(opt, 16);
    let size_of_image = crate::bytes::le_u32(opt, 56);
    let size_of_headers = crate::bytes::le_u32(opt, 60);
    let ndirs = (crate::bytes::le_u32(opt, ndirs_off) as usize).min(16);
    let mut dirs = Vec::with_capacity(ndirs);
    for i in 0..ndirs {
        let o = dirs_off + 8 * i;
        if o + 8 > opt.len() || (o + 8) as u64 > size_opt {
            break;
        }
        dirs.push((
            crate::bytes::le_u32(opt, o),
            crate::bytes::le_u32(opt, o + 4),
        ));
    }
    if nsec > MAX_SECTIONS {
        return Err(bad(
            "COFF header",
            pe.wrapping_add(4),
            format!("NumberOfSections {nsec} > {MAX_SECTIONS}"),
        ));
    }
    let sec_at = pe.wrapping_add(24 + size_opt);
    let mut st = vec![0u8; (nsec * 40) as usize];
    mem.read_exact(sec_at, &mut st)?;
    let sections = st
        .chunks_exact(40)
        .map(|c| PeSection {
            name: {
                let e = c[..8].iter().position(|&b| b == 0).unwrap_or(8);
                String::from_utf8_lossy(&c[..e]).into_owned()
            },
            virtual_size: crate::bytes::le_u32(c, 8),
            virtual_address: crate::bytes::le_u32(c, 12),
            raw_size: crate::bytes::le_u32(c, 16),
            raw_offset: crate::bytes::le_u32(c, 20),
            characteristics: crate::bytes::le_u32(c, 36),
        })
        .collect();
    Ok(PeHeaders {
        machine,
        timestamp,
        size_of_image,
        size_of_headers,
        pe32_plus,
        image_base,
        entry_rva,
        sections,
        dirs,
    })
}

fn rva_to_addr(layout: PeLayout, sections: &[PeSection], base: u64, rva: u32) -> Option<u64> {
    match layout {
        PeLayout::Mapped => base.checked_add(rva as u64),
        PeLayout::Flat => {
            for s in sections {
                let span = s.virtual_size.max(s.raw_size);
                if rva >= s.virtual_address && rva - s.virtual_address < span {
                    let d = rva - s.virtual_address;
                    if d >= s.raw_size {
                        return None;
                    }
                    return base.checked_add(s.raw_offset as u64 + d as u64);
                }
            }
            // Headers (before the first section) are at the same offset in both layouts.
            let first = sections
                .iter()
                .map(|s| s.virtual_address)
                .min()
                .unwrap_or(u32::MAX);
            if rva < first {
                base.checked_add(rva as u64)
            } else {
                None
            }
        }
    }
}

/// Decides how a PE file is laid out in memory from the process's file mappings of it.
pub(crate) fn guess_pe_layout(mem: &dyn Memory, base: u64, mappings: &[FileMapping]) -> PeLayout {
    let Ok(h) = pe_headers(mem, base) else {
        return PeLayout::Mapped;
    };
    pe_layout_from(&h.sections, base, mappings)
}

fn pe_layout_from(sections: &[PeSection], base: u64, mappings: &[FileMapping]) -> PeLayout {
    if mappings.is_empty() {
        return PeLayout::Mapped;
    }
    for s in sections
        .iter()
        .filter(|s| s.raw_size > 0 && s.raw_offset != s.virtual_address)
    {
        let mapped_at = base.saturating_add(s.virtual_address as u64);
        let flat_at = base.saturating_add(s.raw_offset as u64);
        let file_off_at = |a: u64| {
            mappings
                .iter()
                .find(|m| a >= m.start && a < m.end)
                .map(|m| m.file_offset + (a - m.start))
        };
        if file_off_at(mapped_at) == Some(s.raw_offset as u64) {
            return PeLayout::Mapped;
        }
        if file_off_at(flat_at) == Some(s.raw_offset as u64) {
            return PeLayout::Flat;
        }
    }
    PeLayout::Mapped
}

pub(crate) fn parse_pe(
    mem: &dyn Memory,
    base: u64,
    layout: PeLayout,
) -> Result<(PeImage, Vec<ImageGap>), Error> {
    let mut problems = Vec::new();
    let h = pe_headers(mem, base)?;
    let dir = |i: usize| {
        h.dirs
            .get(i)
            .copied()
            .filter(|&(rva, size)| rva != 0 && size != 0)
    };
    let to_addr = |rva: u32| rva_to_addr(layout, &h.sections, base, rva);
    let mut img = PeImage {
        machine: h.machine,
        timestamp: h.timestamp,
        size_of_image: h.size_of_image,
        pe32_plus: h.pe32_plus,
        image_base: h.image_base,
        entry_point: if h.entry_rva != 0 {
            to_addr(h.entry_rva).unwrap_or(0)
        } else {
            0
        },
        layout,
        sections: h.sections.clone(),
        exports: Vec::new(),
        dll_name: None,
        pdata: dir(3).and_then(|(rva, size)| Some((to_addr(rva)?, size))),
        cli_header: dir(14).and_then(|(rva, size)| Some((to_addr(rva)?, size))),
        data_directories: h.dirs.clone(),
    };
    let _ = h.size_of_headers;
    if let Some((erva, esize)) = dir(0) {
        match read_exports(mem, &h, layout, base, erva, esize) {
            Ok((name, exports)) => {
                img.dll_name = name;
                img.exports = exports;
            }
            Err(e) => problems.push(ImageGap::Exports { error: Box::new(e) }),
        }
    }
    Ok((img, problems))
}

fn read_exports(
    mem: &dyn Memory,
    h: &PeHeaders,
    layout: PeLayout,
    base: u64,
    erva: u32,
    esize: u32,
) -> Result<(Option<String>, Vec<Export>), Error> {
    let to_addr = |rva: u32| {
        rva_to_addr(layout, &h.sections, base, rva).ok_or_else(|| {
            bad(
                "export directory",
                base,
                format!("RVA {rva:#x} outside the image"),
            )
        })
    };
    let ed = to_addr(erva)?;
    let mut d = [0u8; 40];
    mem.read_exact(ed, &mut d)?;
    let q = |o: usize| crate::bytes::le_u32(&d, o);
    let name_rva = q(12);
    let ord_base = q(16);
    let nfuncs = q(20) as u64;
    let nnames = q(24) as u64;
    let (funcs_rva, names_rva, ords_rva) = (q(28), q(32), q(36));
    if nfuncs > 65536 * 4 || nnames > nfuncs.max(65536) {
        return Err(bad(
            "export directory",
            ed,
            format!("NumberOfFunctions {nfuncs}, NumberOfNames {nnames}: absurd"),
        ));
    }
    let dll_name = to_addr(name_rva)
        .ok()
        .and_then(|a| mem.read_cstr(a, 512).ok());
    let funcs = mem.read_bytes(to_addr(funcs_rva)?, (nfuncs * 4) as usize);
    let names = if nnames > 0 {
        mem.read_bytes(to_addr(names_rva)?, (nnames * 4) as usize)
    } else {
        Vec::new()
    };
    let ords = if nnames > 0 {
        mem.read_bytes(to_addr(ords_rva)?, (nnames * 2) as usize)
    } else {
        Vec::new()
    };
    let mut fnames: Vec<Option<String>> = vec![None; (funcs.len() / 4).min(nfuncs as usize)];
    for (i, c) in names.chunks_exact(4).enumerate() {
        let Some(o) = ords.get(i * 2..i * 2 + 2) else {
            break;
        };
        let ord = u16::from_le_bytes([o[0], o[1]]) as usize;
        let nrva = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        if let (Some(slot), Ok(a)) = (fnames.get_mut(ord), to_addr(nrva)) {
            if let Ok(s) = mem.read_cstr(a, 1024) {
                *slot = Some(s);
            }
        }
    }
    let mut out = Vec::with_capacity(fnames.len());
    for (i, c) in funcs.chunks_exact(4).enumerate() {
        let frva = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        if frva == 0 {
            continue;
        }
        let name = fnames.get_mut(i).and_then(|n| n.take());
        let ordinal = ord_base.wrapping_add(i as u32);
        if frva >= erva && frva - erva < esize {
            let fw = to_addr(frva).ok().and_then(|a| mem.read_cstr(a, 512).ok());
            out.push(Export {
                name,
                ordinal,
                address: 0,
                forwarder: fw,
            });
        } else {
            out.push(Export {
                name,
                ordinal,
                address: to_addr(frva).unwrap_or(0),
                forwarder: None,
            });
        }
    }
    Ok((dll_name, out))
}

// ---------------------------------------------------------------------------------------
// Images from files on disk

/// A file on disk presented as memory laid out the way the loader mapped it.
pub(crate) struct FileImageMemory<'a> {
    bytes: &'a [u8],
    /// (address, length, file offset, file bytes) sorted by address.
    pieces: Vec<(u64, u64, u64, u64)>,
}

impl Memory for FileImageMemory<'_> {
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        let mut done = 0usize;
        let mut a = addr;
        while done < buf.len() {
            let Some(&(pa, plen, foff, fsz)) =
                self.pieces.iter().find(|p| a >= p.0 && a - p.0 < p.1)
            else {
                break;
            };
            let off_in = a - pa;
            let take = (plen - off_in).min((buf.len() - done) as u64) as usize;
            let dst = &mut buf[done..done + take];
            let fpart = if off_in < fsz {
                (fsz - off_in).min(take as u64) as usize
            } else {
                0
            };
            if fpart > 0 {
                let st = (foff + off_in) as usize;
                match self.bytes.get(st..st + fpart) {
                    Some(src) => dst[..fpart].copy_from_slice(src),
                    None => break,
                }
            }
            dst[fpart..].fill(0);
            done += take;
            a = match a.checked_add(take as u64) {
                Some(v) => v,
                None => break,
            };
        }
        done
    }
}

impl<'a> FileImageMemory<'a> {
    /// Lays out an ELF file at `base` by its PT_LOAD headers.
    pub(crate) fn elf(bytes: &'a [u8], base: u64) -> Result<FileImageMemory<'a>, Error> {
        let flat = crate::memory::SliceMemory { base, bytes };
        // Program headers are read from the flat file: e_phoff is a file offset.
        let (phdrs, _) = elf_headers(&flat, base)?;
        let min_vaddr = phdrs
            .iter()
            .filter(|p| p.p_type == 1)
            .map(|p| p.p_vaddr & !0xfff)
            .min()
            .unwrap_or(0);
        let bias = base.wrapping_sub(min_vaddr);
        let flen = bytes.len() as u64;
        let mut pieces: Vec<_> = phdrs
            .iter()
            .filter(|p| p.p_type == 1 && p.p_offset < flen)
            .map(|p| {
                // Pages are mapped whole: extend down to the page boundary.
                let pad = (p.p_vaddr & 0xfff).min(p.p_offset);
                let fsz = p
                    .p_filesz
                    .saturating_add(pad)
                    .min(flen - (p.p_offset - pad));
                (
                    bias.wrapping_add(p.p_vaddr - pad),
                    p.p_memsz.saturating_add(pad),
                    p.p_offset - pad,
                    fsz,
                )
            })
            .collect();
        pieces.sort_by_key(|p| p.0);
        Ok(FileImageMemory { bytes, pieces })
    }

    /// Lays out a PE file at `base` under `layout`.
    pub(crate) fn pe(
        bytes: &'a [u8],
        base: u64,
        layout: PeLayout,
    ) -> Result<FileImageMemory<'a>, Error> {
        let flen = bytes.len() as u64;
        if layout == PeLayout::Flat {
            return Ok(FileImageMemory {
                bytes,
                pieces: vec![(base, flen, 0, flen)],
            });
        }
        let flat = crate::memory::SliceMemory { base, bytes };
        let h = pe_headers(&flat, base)?;
        let hdr = (h.size_of_headers as u64).min(flen);
        let mut pieces = vec![(base, hdr, 0, hdr)];
        for s in &h.sections {
            let off = s.raw_offset as u64;
            if off >= flen {
                continue;
            }
            let fsz = (s.raw_size as u64).min(flen - off);
            let len = (s.virtual_size as u64).max(fsz);
            pieces.push((
                base.wrapping_add(s.virtual_address as u64),
                len,
                off,
                fsz.min(len),
            ));
        }
        pieces.sort_by_key(|p| p.0);
        Ok(FileImageMemory { bytes, pieces })
    }
}

/// Reads the identity of an image file on disk (its bytes).
pub fn file_identity(bytes: &[u8]) -> Option<ModuleIdentity> {
    let flat = crate::memory::SliceMemory { base: 0, bytes };
    if bytes.starts_with(b"\x7fELF") {
        let (phdrs, _) = elf_headers(&flat, 0).ok()?;
        // Notes: read by file offset.
        let fake: Vec<ProgramHeader> = phdrs
            .iter()
            .map(|p| ProgramHeader {
                p_vaddr: p.p_offset,
                ..*p
            })
            .collect();
        build_id_from(&flat, &fake, 0).map(ModuleIdentity::BuildId)
    } else if bytes.starts_with(b"MZ") {
        pe_identity(&flat, 0)
    } else {
        None
    }
}

/// Adds `.symtab` symbols of an ELF file (via the `object` crate) to `img`.
pub(crate) fn add_file_symtab(bytes: &[u8], img: &mut ElfImage) {
    use object::{Object, ObjectSymbol, SymbolKind};
    let Ok(f) = object::File::parse(bytes) else {
        return;
    };
    let mut have: std::collections::HashSet<(u64, String)> = img
        .symbols
        .iter()
        .map(|s| (s.address, s.name.clone()))
        .collect();
    let mut n = 0u64;
    for s in f.symbols() {
        if n >= MAX_SYMBOLS {
            break;
        }
        if !s.is_definition()
            || s.address() == 0
            || !matches!(s.kind(), SymbolKind::Text | SymbolKind::Data)
        {
            continue;
        }
        let Ok(name) = s.name() else { continue };
        if name.is_empty() {
            continue;
        }
        let address = s.address().wrapping_add(img.load_bias);
        if have.insert((address, name.to_string())) {
            img.symbols.push(Symbol {
                name: name.to_string(),
                address,
                size: s.size(),
                is_function: s.kind() == SymbolKind::Text,
            });
            n += 1;
        }
    }
    img.symbols.sort_by_key(|s| s.address);
}

/// What an ELF file on disk says of itself for symbolization: its build id, its
/// `.gnu_debuglink` file name, and the symbols of its own `.symtab` whose names start with a
/// prefix (link-time addresses: add the load bias). What a separate debug file
/// (`objcopy --only-keep-debug`, e.g. NativeAOT's `<app>.dbg`) is matched and read by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElfFileSymbols {
    /// `.note.gnu.build-id`'s bytes.
    pub build_id: Option<Vec<u8>>,
    /// `.gnu_debuglink`'s file name.
    pub debuglink: Option<String>,
    /// (name, link-time address) of the `.symtab` symbols with the prefix, defined ones only.
    pub symbols: Vec<(String, u64)>,
    /// The `.symtab`'s defined functions (`STT_FUNC`) of non-zero size, when asked for:
    /// (name, link-time address, size), sorted by address.
    pub functions: Vec<(String, u64, u64)>,
}

/// Reads [`ElfFileSymbols`] from an ELF file's bytes (`.symtab` only: `.dynsym` is what the
/// image in memory already gives); no symbols when `prefix` is `None`, no functions unless
/// `functions`.
pub fn elf_file_symbols(
    bytes: &[u8],
    prefix: Option<&str>,
    functions: bool,
) -> Result<ElfFileSymbols, Error> {
    use object::{Object, ObjectSymbol};
    if !bytes.starts_with(b"\x7fELF") {
        return Err(bad("ELF file", 0, "no ELF magic"));
    }
    let f = object::File::parse(bytes).map_err(|e| bad("ELF file", 0, e.to_string()))?;
    let build_id = f.build_id().ok().flatten().map(<[u8]>::to_vec);
    let debuglink = f
        .gnu_debuglink()
        .ok()
        .flatten()
        .map(|(name, _crc)| String::from_utf8_lossy(name).into_owned());
    let mut symbols = Vec::new();
    let mut funcs = Vec::new();
    if prefix.is_some() || functions {
        for s in f.symbols() {
            if symbols.len() as u64 >= MAX_SYMBOLS || funcs.len() as u64 >= MAX_SYMBOLS {
                break;
            }
            if !s.is_definition() {
                continue;
            }
            let Ok(name) = s.name() else { continue };
            if prefix.is_some_and(|p| name.starts_with(p)) {
                symbols.push((name.to_string(), s.address()));
            }
            if functions && s.kind() == object::SymbolKind::Text && s.size() > 0 {
                funcs.push((name.to_string(), s.address(), s.size()));
            }
        }
    }
    funcs.sort_by_key(|f| f.1);
    Ok(ElfFileSymbols {
        build_id,
        debuglink,
        symbols,
        functions: funcs,
    })
}
