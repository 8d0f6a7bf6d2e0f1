//! The bundled build index (crate `buildindex`) at discovery: what the runtime's image file
//! holds, for every runtime build NuGet serves, keyed by the identity the dump records for the
//! module (ELF build id; PE TimeDateStamp and SizeOfImage).
//!
//! createdump leaves out of a .NET 9/10 dump the pages of libcoreclr.so holding the contract
//! descriptor's header, its JSON and its pointer_data, and often the `.dynsym` pages that
//! locate g_dacTable. The index carries those bytes as the loaded image has them (pointers as
//! RVAs), so [`IndexOverlay`] can present them at their run-time addresses where the dump
//! lacks them, and the descriptor is then read exactly as from the dump's memory
//! ([`crate::discovery::descriptor::read_at`]). What only the process knows (a sub-descriptor
//! slot in `.bss`, which the .NET 11 runtime fills with its GC descriptor's address at
//! startup) is read from the dump.
//!
//! Exact identity only: a module whose identity is not in the index gets nothing from it, never
//! a nearest build.

use dumpreader::{Memory, ModuleIdentity, ModuleInfo};

pub use buildindex::{Build, ModuleKind, Ptr};

/// The module's identity as the index keys it, when the dump records one.
pub fn identity_of(module: &ModuleInfo) -> Option<buildindex::Identity<'_>> {
    match module.identity.as_ref()? {
        ModuleIdentity::BuildId(b) => Some(buildindex::Identity::ElfBuildId(b)),
        ModuleIdentity::Pe {
            timestamp,
            size_of_image,
        } => Some(buildindex::Identity::Pe {
            timestamp: *timestamp,
            size_of_image: *size_of_image,
        }),
    }
}

/// Why the index gave nothing for a module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexMiss {
    /// The dump records no identity for the module (no build id note, no PE headers).
    NoIdentity,
    /// The identity is not in the index (a build NuGet does not serve, or newer than the
    /// index).
    NotIndexed(String),
    /// The identity is indexed, but as another kind of module (e.g. a single-file host where
    /// a libcoreclr.so was expected).
    OtherKind(String),
    /// The embedded data does not decode (a damaged build of dumpshell).
    Unreadable(String),
}

impl std::fmt::Display for IndexMiss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IndexMiss::NoIdentity => f.write_str("the dump records no identity for the module"),
            IndexMiss::NotIndexed(id) => write!(
                f,
                "{id} is not among the {} indexed builds",
                buildindex::index().map_or(0, |i| i.builds().len())
            ),
            IndexMiss::OtherKind(what) => f.write_str(what),
            IndexMiss::Unreadable(e) => write!(f, "the embedded index does not decode: {e}"),
        }
    }
}

/// The indexed build of `module`, by exact identity, when it is one of `kinds`.
pub fn build_of(module: &ModuleInfo, kinds: &[ModuleKind]) -> Result<&'static Build, IndexMiss> {
    let id = identity_of(module).ok_or(IndexMiss::NoIdentity)?;
    let b = buildindex::lookup(id)
        .map_err(|e| IndexMiss::Unreadable(e.to_string()))?
        .ok_or_else(|| IndexMiss::NotIndexed(id.to_string()))?;
    if kinds.contains(&b.kind) {
        Ok(b)
    } else {
        Err(IndexMiss::OtherKind(format!(
            "{id} is the indexed {} of {} {}, not a runtime module of this kind",
            b.file_name, b.package, b.package_version
        )))
    }
}

/// How a build is named in notes: "libcoreclr.so of Microsoft.NETCore.App.Runtime.linux-x64
/// 10.0.14 (build id ...)".
pub fn describe(b: &Build) -> String {
    format!(
        "{} of {} {} ({})",
        b.file_name,
        b.package,
        b.package_version,
        b.identity()
    )
}

/// The memory of a module loaded at `base`, with what the index holds of its image (every
/// contract descriptor's header, JSON and pointer_data; the sub-descriptor slots the file
/// fills; the version text) standing in for the bytes the dump lacks. Bytes the dump holds are
/// read from the dump.
pub struct IndexOverlay<'a, M: ?Sized> {
    mem: &'a M,
    /// (address, bytes), sorted by address, not overlapping.
    regions: Vec<(u64, Vec<u8>)>,
}

impl<'a, M: Memory + ?Sized> IndexOverlay<'a, M> {
    /// The overlay of `build` loaded at `base` over `mem`.
    pub fn new(mem: &'a M, build: &Build, base: u64) -> Self {
        let mut parts: Vec<(u64, Vec<u8>)> = Vec::new();
        let ptr = |p: buildindex::Ptr| p.resolve(base);
        for d in &build.descriptors {
            // The header: magic, flags, size, JSON pointer, count, padding, pointer_data.
            if let (Some(json), Some(pd)) = (ptr(d.json_ptr), ptr(d.pointer_data_ptr)) {
                let mut h = Vec::with_capacity(40);
                h.extend_from_slice(&crate::discovery::descriptor::MAGIC.to_le_bytes());
                h.extend_from_slice(&d.flags.to_le_bytes());
                h.extend_from_slice(&d.descriptor_size.to_le_bytes());
                h.extend_from_slice(&json.to_le_bytes());
                h.extend_from_slice(&(d.pointer_data.len() as u32).to_le_bytes());
                h.extend_from_slice(&0u32.to_le_bytes());
                h.extend_from_slice(&pd.to_le_bytes());
                parts.push((base.wrapping_add(d.rva), h));
                // The JSON and the NUL the image has after it.
                let mut text = d.json.as_bytes().to_vec();
                text.push(0);
                parts.push((json, text));
                // pointer_data, entry by entry (an unfilled entry is the dump's alone).
                for (i, p) in d.pointer_data.iter().enumerate() {
                    if let Some(v) = ptr(*p) {
                        parts.push((pd.wrapping_add(8 * i as u64), v.to_le_bytes().to_vec()));
                    }
                }
            }
            // A sub-descriptor slot the file fills (a slot in .bss is the dump's alone).
            for s in &d.sub_descriptors {
                let slot = d.pointer_data.get(s.index as usize).and_then(|p| ptr(*p));
                if let (Some(slot), Some(v)) = (slot, ptr(s.content)) {
                    parts.push((slot, v.to_le_bytes().to_vec()));
                }
            }
        }
        // The version text: ELF NUL-terminated UTF-8, PE NUL-terminated UTF-16LE.
        for &rva in &build.version_text_rvas {
            let bytes: Vec<u8> = if build.kind.is_elf() {
                build.version_text.bytes().chain([0]).collect()
            } else {
                build
                    .version_text
                    .encode_utf16()
                    .chain([0])
                    .flat_map(u16::to_le_bytes)
                    .collect()
            };
            parts.push((base.wrapping_add(rva), bytes));
        }
        parts.sort_by_key(|p| p.0);
        // Merge adjacent and overlapping parts (the same image's bytes agree where they
        // overlap; the later part wins where they would not).
        let mut regions: Vec<(u64, Vec<u8>)> = Vec::new();
        for (a, b) in parts {
            if let Some((la, lb)) = regions.last_mut() {
                let end = la.wrapping_add(lb.len() as u64);
                if a <= end {
                    let off = (a - *la) as usize;
                    let keep = off + b.len();
                    if keep > lb.len() {
                        lb.resize(keep, 0);
                    }
                    lb[off..keep].copy_from_slice(&b);
                    continue;
                }
            }
            regions.push((a, b));
        }
        IndexOverlay { mem, regions }
    }

    /// The index's bytes at `addr`, at most `max`, up to the end of its region or the next
    /// page (where the dump may hold the bytes again).
    fn index_bytes(&self, addr: u64, max: usize) -> &[u8] {
        let i = self.regions.partition_point(|(a, _)| *a <= addr);
        let Some((a, b)) = i.checked_sub(1).and_then(|i| self.regions.get(i)) else {
            return &[];
        };
        let off = (addr - a) as usize;
        if off >= b.len() {
            return &[];
        }
        let to_page = (((addr | 0xFFF) + 1) - addr) as usize;
        &b[off..(off + max.min(to_page)).min(b.len())]
    }
}

impl<M: Memory + ?Sized> Memory for IndexOverlay<'_, M> {
    /// The dump's bytes come first ([`Memory::read`] below), so where it holds them all they
    /// are the answer.
    fn slice(&self, addr: u64, len: usize) -> Option<&[u8]> {
        self.mem.slice(addr, len)
    }

    fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        let mut n = 0;
        while n < buf.len() {
            let a = addr.wrapping_add(n as u64);
            let got = self.mem.read(a, &mut buf[n..]);
            if got > 0 {
                n += got;
                continue;
            }
            let src = self.index_bytes(a, buf.len() - n);
            if src.is_empty() {
                break;
            }
            buf[n..n + src.len()].copy_from_slice(src);
            n += src.len();
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Holes(Vec<(u64, Vec<u8>)>);
    impl Memory for Holes {
        fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
            for (a, b) in &self.0 {
                if addr >= *a && addr < a + b.len() as u64 {
                    let o = (addr - a) as usize;
                    let n = buf.len().min(b.len() - o);
                    buf[..n].copy_from_slice(&b[o..o + n]);
                    return n;
                }
            }
            0
        }
    }

    /// The dump's bytes win (dumps hold whole pages); the index fills only the pages the dump
    /// lacks, across page boundaries in both directions.
    #[test]
    fn the_dump_first_the_index_for_the_holes() {
        let overlay = IndexOverlay {
            mem: &Holes(vec![(0x2000, vec![0xAA; 0x10])]),
            regions: vec![(0x1000, vec![0x11; 0x2000])],
        };
        let mut buf = vec![0u8; 0x2000];
        assert_eq!(overlay.read(0x1000, &mut buf), 0x2000);
        assert!(buf[..0x1000].iter().all(|&b| b == 0x11));
        assert!(buf[0x1000..0x1010].iter().all(|&b| b == 0xAA));
        assert!(buf[0x1010..].iter().all(|&b| b == 0x11));
        // Past the region: nothing.
        assert_eq!(overlay.read(0x3000, &mut buf[..8]), 0);
        assert_eq!(overlay.read(0x2ffc, &mut buf[..8]), 4);
    }
}
