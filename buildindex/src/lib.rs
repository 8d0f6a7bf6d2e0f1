//! The runtime builds NuGet serves, keyed by the identity a dump records for a module.
//!
//! createdump leaves out of a .NET 9/10 dump the pages of libcoreclr.so that hold the
//! `DotNetRuntimeContractDescriptor` header, its JSON and its pointer_data; the dump alone then
//! cannot be read without the runtime's files. This crate carries, for every runtime module of
//! the packs `gen/packs.txt` lists (libcoreclr.so and coreclr.dll of the runtime packs, the
//! single-file hosts of the host packs), what the image file holds: its identity (ELF build id;
//! PE TimeDateStamp and SizeOfImage), the version strings, the RVAs of its exports, the
//! `DotNetRuntimeInfo` record of a single-file host, and every contract descriptor in the image
//! (flags, JSON text, pointer_data entries as RVAs where a relocation makes them addresses in
//! the module, raw values where nothing relocates them).
//!
//! Lookups are by exact identity only ([`lookup`]): no nearest build, no version guess. The
//! data (`data/builds.bin.zst`, written by `gen/generate.py`, format in README.md) is embedded
//! and decompressed once, on first use.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

mod format;

pub use format::IndexError;

/// The embedded data, as `gen/generate.py` wrote it.
pub static DATA: &[u8] = include_bytes!("../data/builds.bin.zst");

/// What a dump records to identify a module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Identity<'a> {
    /// The GNU build id note of an ELF module (20 bytes for these builds).
    ElfBuildId(&'a [u8]),
    /// A PE module's COFF TimeDateStamp and optional header SizeOfImage (what a minidump's
    /// module list records, and what the Windows symbol server keys files by).
    Pe {
        /// IMAGE_FILE_HEADER.TimeDateStamp.
        timestamp: u32,
        /// IMAGE_OPTIONAL_HEADER64.SizeOfImage.
        size_of_image: u32,
    },
}

impl std::fmt::Display for Identity<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Identity::ElfBuildId(b) => {
                f.write_str("build id ")?;
                b.iter().try_for_each(|x| write!(f, "{x:02x}"))
            }
            Identity::Pe {
                timestamp,
                size_of_image,
            } => write!(f, "PE timestamp {timestamp:08x} size {size_of_image:#x}"),
        }
    }
}

/// The identity as the index stores it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum OwnedIdentity {
    /// An ELF build id.
    ElfBuildId(Vec<u8>),
    /// A PE TimeDateStamp and SizeOfImage.
    Pe {
        /// TimeDateStamp.
        timestamp: u32,
        /// SizeOfImage.
        size_of_image: u32,
    },
}

impl OwnedIdentity {
    /// The borrowed form.
    pub fn as_identity(&self) -> Identity<'_> {
        match self {
            OwnedIdentity::ElfBuildId(b) => Identity::ElfBuildId(b),
            OwnedIdentity::Pe {
                timestamp,
                size_of_image,
            } => Identity::Pe {
                timestamp: *timestamp,
                size_of_image: *size_of_image,
            },
        }
    }
}

impl From<Identity<'_>> for OwnedIdentity {
    fn from(i: Identity<'_>) -> Self {
        match i {
            Identity::ElfBuildId(b) => OwnedIdentity::ElfBuildId(b.to_vec()),
            Identity::Pe {
                timestamp,
                size_of_image,
            } => OwnedIdentity::Pe {
                timestamp,
                size_of_image,
            },
        }
    }
}

/// Which runtime module a build is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModuleKind {
    /// libcoreclr.so of Microsoft.NETCore.App.Runtime.linux-x64.
    LibCoreClr,
    /// coreclr.dll of Microsoft.NETCore.App.Runtime.win-x64.
    CoreClrDll,
    /// singlefilehost (ELF) of Microsoft.NETCore.App.Host.linux-x64: the host with the runtime
    /// linked in, the image of every single-file app (the bundle is appended to it).
    SingleFileHostElf,
    /// singlefilehost.exe of Microsoft.NETCore.App.Host.win-x64.
    SingleFileHostPe,
}

impl ModuleKind {
    /// The module's file name in its pack (a single-file app's image carries the app's name).
    pub fn file_name(self) -> &'static str {
        match self {
            ModuleKind::LibCoreClr => "libcoreclr.so",
            ModuleKind::CoreClrDll => "coreclr.dll",
            ModuleKind::SingleFileHostElf => "singlefilehost",
            ModuleKind::SingleFileHostPe => "singlefilehost.exe",
        }
    }

    /// Whether the module is an ELF file (else PE).
    pub fn is_elf(self) -> bool {
        matches!(self, ModuleKind::LibCoreClr | ModuleKind::SingleFileHostElf)
    }

    /// Whether the module is a single-file host.
    pub fn is_single_file_host(self) -> bool {
        matches!(
            self,
            ModuleKind::SingleFileHostElf | ModuleKind::SingleFileHostPe
        )
    }
}

/// A pointer-sized value of the image as the loader leaves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ptr {
    /// Relocated (ELF R_X86_64_RELATIVE or a symbol relocation against a symbol the module
    /// defines; a PE DIR64 base relocation): the address is module base + this RVA.
    Rva(u64),
    /// Nothing relocates it: the value as the file holds it (0 for an unused entry).
    Raw(u64),
    /// The location has no file bytes (.bss, or past a PE section's raw data): zero in the
    /// image, whatever the runtime stores there at run time.
    Unfilled,
}

impl Ptr {
    /// The address in a module loaded at `base`: an RVA plus base, a raw value as it is,
    /// `None` for an unfilled location (only the dump's memory knows it).
    pub fn resolve(self, base: u64) -> Option<u64> {
        match self {
            Ptr::Rva(r) => Some(base.wrapping_add(r)),
            Ptr::Raw(v) => Some(v),
            Ptr::Unfilled => None,
        }
    }
}

/// How a descriptor was found in the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DescriptorRole {
    /// The `DotNetRuntimeContractDescriptor` export.
    Main,
    /// Reached from another descriptor's `subDescriptors` slot through the file's bytes.
    Sub,
    /// A header in the image that no file bytes point at. On .NET 11 these are the GC's
    /// descriptors (workstation and server: `GCIdentifiers` in their JSON says which); the
    /// main descriptor's `GC` sub-descriptor slot is in .bss and the runtime stores the
    /// address of one of them there at startup.
    InImage,
}

/// A sub-descriptor slot of a descriptor (`"subDescriptors": {"GC": [[45], "pointer"]}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubDescriptor {
    /// Its name ("GC").
    pub name: String,
    /// Its index into the descriptor's pointer_data.
    pub index: u32,
    /// What the image holds at the slot pointer_data\[index\] points at: the address of the
    /// sub-descriptor's header (dotnet/runtime docs/design/datacontracts/contract-descriptor.md).
    pub content: Ptr,
    /// The descriptor (index into [`Build::descriptors`]) the slot's file content points at,
    /// when it does; `None` when the slot is filled at run time.
    pub target: Option<usize>,
}

/// One contract descriptor of the image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Descriptor {
    /// The RVA of its 40-byte header ("DNCCDAC\0", flags, size, JSON, count, pointer_data).
    pub rva: u64,
    /// How it was found.
    pub role: DescriptorRole,
    /// The header's flags (bit 0 always set; bit 1: 32-bit pointers).
    pub flags: u32,
    /// The header's descriptor_size: the JSON's length in bytes, as the header says.
    pub descriptor_size: u32,
    /// The header's JSON pointer (an RVA for every indexed build).
    pub json_ptr: Ptr,
    /// The `descriptor_size` bytes at the JSON pointer, exactly (shared between builds). The
    /// size does not count the NUL the image has after the text.
    pub json: Arc<str>,
    /// The header's pointer_data pointer.
    pub pointer_data_ptr: Ptr,
    /// The pointer_data entries, each as the image holds it (`pointer_data_count` of them).
    pub pointer_data: Vec<Ptr>,
    /// The sub-descriptor slots its JSON names.
    pub sub_descriptors: Vec<SubDescriptor>,
}

impl Descriptor {
    /// The JSON text.
    pub fn json_text(&self) -> &str {
        &self.json
    }

    /// The pointer_data entries as addresses in a module loaded at `base` (what the array
    /// holds in the process; `None` for an entry without file bytes, which only the dump
    /// knows): for `clrdata::discovery::descriptor::parse(json, pointer_data)`.
    pub fn pointer_data_at(&self, base: u64) -> Vec<Option<u64>> {
        self.pointer_data.iter().map(|p| p.resolve(base)).collect()
    }
}

/// A single-file host's `DotNetRuntimeInfo` export (dotnet/runtime
/// src/coreclr/debug/inc/runtimeinfo.h): the indexes of the runtime module it was built with
/// and of that build's DAC and DBI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeInfo {
    /// The record's bytes as in the image.
    pub raw: Vec<u8>,
    /// Its version field (2 for every indexed host).
    pub version: i32,
    /// The runtime module's index: on Linux the build id of the libcoreclr.so of the same
    /// build (not the host's own), on Windows coreclr.dll's TimeDateStamp and SizeOfImage
    /// (little-endian, 8 bytes).
    pub runtime_module_index: Vec<u8>,
    /// The DAC's (libmscordaccore.so / mscordaccore.dll) index.
    pub dac_module_index: Vec<u8>,
    /// The DBI's index.
    pub dbi_module_index: Vec<u8>,
    /// The runtime's file version (version 2 and later).
    pub runtime_version: Option<[u32; 4]>,
}

/// One export of the module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Export {
    /// Its name.
    pub name: String,
    /// Its RVA.
    pub rva: u64,
    /// The ELF symbol's size (0 for PE, which records none).
    pub size: u64,
}

/// One runtime module file of one pack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Build {
    /// Which module.
    pub kind: ModuleKind,
    /// Its identity.
    pub identity: OwnedIdentity,
    /// Its file name in the pack.
    pub file_name: String,
    /// The NuGet package it came from ("Microsoft.NETCore.App.Runtime.linux-x64").
    pub package: String,
    /// The package's version ("10.0.14").
    pub package_version: String,
    /// Its path in the package ("runtimes/linux-x64/native/libcoreclr.so").
    pub path: String,
    /// The file's size.
    pub file_size: u64,
    /// The file's SHA-256.
    pub sha256: [u8; 32],
    /// The mapped extent: ELF, the end of the last PT_LOAD's memory; PE, SizeOfImage.
    pub image_size: u64,
    /// The version text as the image holds it: ELF `@(#)Version 10.0.1426.52326 @Commit:
    /// <sha>` (UTF-8), PE `10,0,1426,52326 @Commit: <sha>` (UTF-16 in the image).
    pub version_text: String,
    /// The file version ("10.0.1426.52326").
    pub file_version: String,
    /// The dotnet/runtime commit the build is from (40 hex digits).
    pub commit: String,
    /// ELF: the RVA of the build id bytes (in the note, on the first page).
    pub build_id_rva: Option<u64>,
    /// The RVAs of every copy of `version_text` in the image (ELF: NUL-terminated UTF-8; PE:
    /// NUL-terminated UTF-16LE), for checking a candidate build against a dump's memory.
    pub version_text_rvas: Vec<u64>,
    /// Every named export (defined dynamic symbols of ELF; named, not forwarded, PE exports),
    /// sorted by name.
    pub exports: Vec<Export>,
    /// A single-file host's `DotNetRuntimeInfo`.
    pub runtime_info: Option<RuntimeInfo>,
    /// Every contract descriptor of the image: the main one first (.NET 9 and later), then
    /// those reached through sub-descriptor slots, then the other headers in the image, each
    /// group by RVA. Empty for .NET 8.
    pub descriptors: Vec<Descriptor>,
}

impl Build {
    /// The identity.
    pub fn identity(&self) -> Identity<'_> {
        self.identity.as_identity()
    }

    /// An export's RVA.
    pub fn export(&self, name: &str) -> Option<u64> {
        self.exports
            .binary_search_by(|e| e.name.as_str().cmp(name))
            .ok()
            .map(|i| self.exports[i].rva)
    }

    /// The exported descriptor (`DotNetRuntimeContractDescriptor`), .NET 9 and later.
    pub fn main_descriptor(&self) -> Option<&Descriptor> {
        self.descriptors
            .iter()
            .find(|d| d.role == DescriptorRole::Main)
    }
}

/// The whole index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Index {
    builds: Vec<Build>,
    by_identity: HashMap<OwnedIdentity, usize>,
}

impl Index {
    /// Decodes the uncompressed data.
    pub fn decode(bytes: &[u8]) -> Result<Index, IndexError> {
        let builds = format::decode(bytes)?;
        let mut by_identity = HashMap::new();
        for (i, b) in builds.iter().enumerate() {
            if by_identity.insert(b.identity.clone(), i).is_some() {
                return Err(IndexError::Format(format!(
                    "{} is the identity of two builds",
                    b.identity()
                )));
            }
        }
        Ok(Index {
            builds,
            by_identity,
        })
    }

    /// Decompresses and decodes zstd-compressed data.
    pub fn from_compressed(compressed: &[u8]) -> Result<Index, IndexError> {
        let raw =
            zstd::decode_all(compressed).map_err(|e| IndexError::Format(format!("zstd: {e}")))?;
        Index::decode(&raw)
    }

    /// Encodes the index as `gen/generate.py` does (the same bytes for the same builds).
    pub fn encode(&self) -> Vec<u8> {
        format::encode(&self.builds)
    }

    /// Every build, in the data's order (by module kind, then version).
    pub fn builds(&self) -> &[Build] {
        &self.builds
    }

    /// The build with exactly this identity.
    pub fn lookup(&self, id: Identity<'_>) -> Option<&Build> {
        self.by_identity
            .get(&OwnedIdentity::from(id))
            .map(|&i| &self.builds[i])
    }
}

/// The embedded index, decompressed and decoded on first use.
pub fn index() -> Result<&'static Index, &'static IndexError> {
    static INDEX: OnceLock<Result<Index, IndexError>> = OnceLock::new();
    INDEX.get_or_init(|| Index::from_compressed(DATA)).as_ref()
}

/// The build with exactly this identity, from the embedded index (`Ok(None)`: not indexed).
pub fn lookup(id: Identity<'_>) -> Result<Option<&'static Build>, &'static IndexError> {
    Ok(index()?.lookup(id))
}

#[cfg(test)]
mod tests;
