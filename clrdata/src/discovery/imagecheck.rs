//! Image files for a core that lacks the PE headers of the assemblies it maps.
//!
//! gdb's `gcore` leaves out the never-written pages of file mappings: for a framework
//! assembly or an IL-only app dll that is every page but the few the runtime wrote (its
//! relocated data), headers included. dumpreader reads such missing pages from the mapped file
//! once the file's identity is anchored; without the PE headers in the dump there is no
//! timestamp to compare, so the anchor comes from the runtime's own records of the image,
//! which live in its (saved) heap memory, read through the layout's
//! [`ImageRecordsLayout`] (from the contract descriptor on .NET 10 and 11; .NET 8's table on
//! Linux):
//! - `PEImageLayout.Size` of the loaded layout equals the file's SizeOfImage (mapped layout)
//!   or its length (flat layout);
//! - the Module's lookup maps were sized from the image's metadata when it was loaded
//!   (`Module::AllocateMaps`: TypeDefs but the global `<Module>` type + 2; TypeRef, MemberRef,
//!   MethodDef, FieldDef and AssemblyRef rows + 1): the six counts equal the file's metadata
//!   tables';
//! - a ReadyToRun image's `ReadyToRunInfo` points at its READYTORUN_HEADER (base + the file's
//!   RVA) and counts its RUNTIME_FUNCTIONs: both equal the file's.
//!
//! A file passes only when every record that the dump holds agrees; then it is accepted with
//! the list of what was compared, else refused with the first difference. An image the
//! runtime keeps no record of (a layout that does not know the records: .NET 9, 8 on
//! Windows; a module not in the AppDomain's list) stays unverified and is not read.

use crate::discovery::layout::{ImageRecordsLayout, Layout, ModuleLayout};
use crate::metadata::{locate_in_pe, Metadata, PeHeaders, PeLayout, TableId};
use dumpreader::{Memory, Target};
use std::path::PathBuf;

/// Most assemblies walked in the AppDomain's list.
const MAX_ASSEMBLIES: u64 = 1 << 16;
/// Largest image file compared.
const MAX_FILE: u64 = 1 << 30;

/// One image the runtime loaded, as its own records describe it: the Module of an Assembly of
/// the AppDomain's list, its PEAssembly, the loaded PEImageLayout, the lookup maps sized from
/// the image's metadata and, for a ReadyToRun image, its ReadyToRunInfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedImage {
    /// The Assembly.
    pub assembly: u64,
    /// Its Module.
    pub module: u64,
    /// `Module::m_pPEAssembly`.
    pub pe_assembly: u64,
    /// The loaded layout's base (`PEImageLayout` / PEDecoder `m_base`).
    pub base: u64,
    /// Its size: SizeOfImage when mapped, the file's length when flat.
    pub size: u32,
    /// Whether the layout is mapped (RVA addressing; `m_flags` bit 0).
    pub mapped: bool,
    /// A dynamic (Reflection.Emit) module: no PEImage, so no image (base and size 0, no maps
    /// compared).
    pub dynamic: bool,
    /// The six lookup maps the comparison uses.
    pub maps: Vec<LookupMapRecord>,
    /// (READYTORUN_HEADER address, RUNTIME_FUNCTION count), for a ReadyToRun image whose
    /// layout knows the ReadyToRunInfo.
    pub ready_to_run: Option<(u64, u32)>,
}

/// One of a Module's lookup maps (a `LookupMap`: `pTable` at 8, `dwCount` after it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LookupMapRecord {
    /// The metadata table whose tokens it maps.
    pub table: TableId,
    /// `pTable`: the map's first table.
    pub table_address: u64,
    /// `dwCount`: the rows it was sized for (`Module::AllocateMaps`).
    pub count: u32,
}

impl LookupMapRecord {
    /// What `Module::AllocateMaps` adds to the table's row count: TypeDefs without the global
    /// `<Module>` type + 2 (`MDInternalRO::GetCountWithTokenKind` leaves it out), the others + 1.
    fn extra(&self) -> u32 {
        if self.table == TableId::TypeDef {
            2
        } else {
            1
        }
    }
}

/// The offsets this reads, from the runtime's layout.
struct Offsets {
    list: ImageRecordsLayout,
    module_pe_assembly: u64,
    pe_assembly_image: u64,
    /// The loaded layout's slot in the PEImage (`m_pLayouts[IMAGE_LOADED]` on .NET 8, the
    /// descriptor's `PEImage.LoadedImageLayout` later): the last of [`ModuleLayout`]'s.
    pe_image_loaded: u64,
    layout_base: u64,
    layout_size: u64,
    layout_flags: u64,
    maps: [(TableId, u64); 6],
    /// (Module::m_pReadyToRunInfo, ReadyToRunInfo's header, its RUNTIME_FUNCTION count).
    r2r: Option<(u64, u64, u64)>,
}

/// The offsets, when the layout knows the runtime's records of its images (else no image is
/// checked).
fn offsets(l: &Layout) -> Option<Offsets> {
    let list = l.image_records?;
    let m: &ModuleLayout = &l.module;
    let slots = u64::try_from(m.pe_image_layout_count.checked_sub(1)?).ok()?;
    let maps = [
        (TableId::TypeDef, m.typedef_map),
        (TableId::TypeRef, list.typeref_map),
        (TableId::MemberRef, list.memberref_map),
        (TableId::MethodDef, list.methoddef_map),
        (TableId::Field, list.fielddef_map),
        (TableId::AssemblyRef, list.assemblyref_map),
    ];
    Some(Offsets {
        list,
        module_pe_assembly: m.pe_assembly,
        pe_assembly_image: m.pe_assembly_image,
        pe_image_loaded: m.pe_image_layouts + 8 * slots,
        layout_base: m.layout_base,
        layout_size: m.layout_size,
        layout_flags: m.layout_flags,
        maps,
        r2r: list
            .r2r_functions
            .map(|n| (l.stack.module_r2r_info, l.stack.r2r_info_header, n)),
    })
}

/// The (Assembly, Module) pairs of the AppDomain's assembly list, in its order (each element,
/// or the pointer it holds first, is an Assembly whose Module points back to it: .NET 8's
/// elements are DomainAssemblies holding their Assembly first, later ones Assemblies).
fn loader_modules<M: Memory>(m: &M, app_domain: u64, o: &Offsets) -> Vec<(u64, u64)> {
    let list = app_domain + o.list.domain_assemblies;
    let Ok(count) = m.read_u32(list + o.list.list_count) else {
        return Vec::new();
    };
    let module_of = |asm: u64| -> Option<(u64, u64)> {
        let module = m.read_u64(asm + o.list.assembly_module).ok()?;
        (module != 0 && m.read_u64(module + o.list.module_assembly).ok()? == asm)
            .then_some((asm, module))
    };
    let mut out = Vec::new();
    let mut block = list + o.list.list_first;
    let mut left = u64::from(count).min(MAX_ASSEMBLIES);
    let mut blocks = 0;
    while left > 0 && block != 0 && blocks < 1024 {
        blocks += 1;
        let Ok(size) = m.read_u32(block + o.list.block_size) else {
            break;
        };
        for i in 0..u64::from(size).min(left) {
            if let Ok(e) = m.read_u64(block + o.list.block_start + 8 * i) {
                let pair = module_of(e).or_else(|| m.read_u64(e).ok().and_then(&module_of));
                out.extend(pair);
            }
        }
        left = left.saturating_sub(u64::from(size));
        block = m.read_u64(block + o.list.block_next).unwrap_or(0);
    }
    out
}

fn records<M: Memory>(
    m: &M,
    assembly: u64,
    module: u64,
    o: &Offsets,
) -> crate::Result<LoadedImage> {
    let r64 = |a: u64, what: &str| m.read_u64(a).map_err(|_| crate::ClrError::read(what, a));
    let r32 = |a: u64, what: &str| m.read_u32(a).map_err(|_| crate::ClrError::read(what, a));
    let pa = r64(module + o.module_pe_assembly, "Module.PEAssembly")?;
    let img = r64(pa + o.pe_assembly_image, "PEAssembly.PEImage")?;
    if img == 0 {
        // A dynamic (Reflection.Emit) module: its PEAssembly has no PEImage
        // (`PEAssembly::IsDynamic`); no image, no layout.
        return Ok(LoadedImage {
            assembly,
            module,
            pe_assembly: pa,
            base: 0,
            size: 0,
            mapped: false,
            dynamic: true,
            maps: Vec::new(),
            ready_to_run: None,
        });
    }
    let layout = r64(img + o.pe_image_loaded, "PEImage.LoadedImageLayout")?;
    if layout == 0 {
        return Err(crate::ClrError::not_found_at(
            "PEImage.LoadedImageLayout",
            img,
            "no loaded image layout",
        ));
    }
    let base = r64(layout + o.layout_base, "PEImageLayout.Base")?;
    let size = r32(layout + o.layout_size, "PEImageLayout.Size")?;
    let flags = r32(layout + o.layout_flags, "PEImageLayout.Flags")?;
    let mut maps = Vec::new();
    for &(table, off) in &o.maps {
        maps.push(LookupMapRecord {
            table,
            table_address: r64(module + off + 8, "ModuleLookupMap.TableData")?,
            count: r32(module + off + o.list.map_count, "ModuleLookupMap.Count")?,
        });
    }
    let ready_to_run = match o.r2r {
        Some((mr, h, n)) => {
            let info = r64(module + mr, "Module.ReadyToRunInfo")?;
            if info == 0 {
                None
            } else {
                Some((
                    r64(info + h, "ReadyToRunInfo.ReadyToRunHeader")?,
                    r32(info + n, "ReadyToRunInfo.NumRuntimeFunctions")?,
                ))
            }
        }
        None => None,
    };
    Ok(LoadedImage {
        assembly,
        module,
        pe_assembly: pa,
        base,
        size,
        mapped: flags & 1 != 0,
        dynamic: false,
        maps,
        ready_to_run,
    })
}

/// The images the runtime loaded, as its own records describe them (read through `layout` from
/// the AppDomain at `app_domain`), in the AppDomain's order: each one's records, or why they
/// do not read. Errors: [`crate::ClrError::Unsupported`] when the layout does not know the
/// records (.NET 8 and 9 on Windows). [`crate::Runtime::loaded_images`] asks it.
pub fn loaded_images<M: Memory>(
    m: &M,
    layout: &Layout,
    app_domain: u64,
) -> crate::Result<Vec<crate::Result<LoadedImage>>> {
    let o = offsets(layout).ok_or_else(|| crate::ClrError::Unsupported {
        what: "the runtime's records of its loaded images".into(),
        detail: format!("not known for {} (not verified)", layout.name),
        addr: None,
    })?;
    Ok(loader_modules(m, app_domain, &o)
        .into_iter()
        .map(|(a, module)| records(m, a, module, &o))
        .collect())
}

/// Why an image file does not stand for the image the runtime loaded: the first difference
/// between the file and the runtime's records of the image.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum Mismatch {
    /// The file could not be read.
    #[error("cannot read it: {0}")]
    Io(String),
    /// Larger than any image.
    #[error("{0} bytes is too large for an image")]
    TooLarge(u64),
    /// Not a PE image.
    #[error("not a PE file: {0}")]
    NotPe(crate::metadata::Error),
    /// No optional header.
    #[error("no PE optional header")]
    NoOptionalHeader,
    /// Its size differs from the runtime's layout's.
    #[error("its {what} is {file:#x}, the runtime's layout is {runtime:#x} bytes")]
    Size {
        /// SizeOfImage (mapped layout) or the file's length (flat layout).
        what: &'static str,
        /// The file's.
        file: u64,
        /// The runtime's layout's.
        runtime: u64,
    },
    /// Its metadata does not read.
    #[error("metadata: {0}")]
    Metadata(crate::metadata::Error),
    /// A table's row count differs from the count the runtime sized its lookup map for.
    #[error("it has {file} {table:?} rows, the runtime sized its map for {runtime}")]
    Rows {
        /// The table.
        table: TableId,
        /// The file's rows.
        file: u32,
        /// What the runtime's map holds.
        runtime: u32,
    },
    /// A header the ReadyToRun comparison needs is not in the file.
    #[error("{0}")]
    MissingHeader(&'static str),
    /// Its ReadyToRun header sits elsewhere than the runtime's.
    #[error("its ReadyToRun header would be at {file:#x}, the runtime's is at {runtime:#x}")]
    ReadyToRunHeader {
        /// Where the file puts it (at the image's base).
        file: u64,
        /// Where the runtime's is.
        runtime: u64,
    },
    /// Its RUNTIME_FUNCTION count differs.
    #[error("it has {file} RUNTIME_FUNCTIONs, the runtime counts {runtime}")]
    Functions {
        /// The file's.
        file: u32,
        /// The runtime's.
        runtime: u32,
    },
}

/// Compares a file with the runtime's records: `Ok(what was compared)` or `Err(the first
/// difference)`.
fn compare(bytes: &[u8], r: &LoadedImage) -> Result<String, Mismatch> {
    let h = PeHeaders::parse(bytes).map_err(Mismatch::NotPe)?;
    let soi = match dumpreader::pe_identity(&dumpreader::SliceMemory { base: 0, bytes }, 0) {
        Some(dumpreader::ModuleIdentity::Pe { size_of_image, .. }) => size_of_image,
        _ => return Err(Mismatch::NoOptionalHeader),
    };
    let (want, what) = if r.mapped {
        (soi as u64, "SizeOfImage")
    } else {
        (bytes.len() as u64, "length")
    };
    if want != u64::from(r.size) {
        return Err(Mismatch::Size {
            what,
            file: want,
            runtime: u64::from(r.size),
        });
    }
    let md = locate_in_pe(bytes, PeLayout::Flat).map_err(Mismatch::Metadata)?;
    let md = Metadata::parse(&bytes[md]).map_err(Mismatch::Metadata)?;
    let mut listed = Vec::new();
    for map in &r.maps {
        let (t, count, extra) = (map.table, map.count, map.extra());
        let rows = md.row_count(t);
        // The runtime counts TypeDefs without the global `<Module>` type
        // (MDInternalRO::GetCountWithTokenKind).
        let file = if t == TableId::TypeDef {
            rows.saturating_sub(1)
        } else {
            rows
        };
        if file.checked_add(extra) != Some(count) {
            return Err(Mismatch::Rows {
                table: t,
                file,
                runtime: count.saturating_sub(extra),
            });
        }
        listed.push(format!("{t:?} {rows}"));
    }
    let mut text = format!(
        "the runtime's records: layout {what} {want:#x}, metadata rows {}",
        listed.join(", ")
    );
    if let Some((hdr, nfun)) = r.ready_to_run {
        let layout = if r.mapped {
            PeLayout::Mapped
        } else {
            PeLayout::Flat
        };
        let file_off = |rva: u32| h.rva_to_offset(rva, PeLayout::Flat);
        let cli = file_off(h.cli_header.0)
            .ok_or(Mismatch::MissingHeader("CLI header outside the file"))?;
        let u32_at = |o: usize| -> Option<u32> {
            Some(u32::from_le_bytes(bytes.get(o..o + 4)?.try_into().ok()?))
        };
        let rtr_rva = u32_at(cli + 0x40).ok_or(Mismatch::MissingHeader("CLI header truncated"))?;
        let at = h
            .rva_to_offset(rtr_rva, layout)
            .map(|o| r.base + o as u64)
            .ok_or(Mismatch::MissingHeader("no ReadyToRun header in the file"))?;
        if at != hdr {
            return Err(Mismatch::ReadyToRunHeader {
                file: at,
                runtime: hdr,
            });
        }
        let rtr = file_off(rtr_rva).ok_or(Mismatch::MissingHeader(
            "ReadyToRun header outside the file",
        ))?;
        let n = u32_at(rtr + 12).ok_or(Mismatch::MissingHeader("ReadyToRun header truncated"))?;
        let count = (0..n.min(256) as usize)
            .find_map(|i| {
                let s = rtr + 16 + 12 * i;
                (u32_at(s)? == 102).then(|| u32_at(s + 8).map(|z| z / 12))?
            })
            .ok_or(Mismatch::MissingHeader(
                "no RuntimeFunctions section in the file",
            ))?;
        if count != nfun {
            return Err(Mismatch::Functions {
                file: count,
                runtime: nfun,
            });
        }
        text.push_str(&format!(
            ", ReadyToRun header at RVA {rtr_rva:#x}, {count} RUNTIME_FUNCTIONs"
        ));
    }
    Ok(text)
}

/// Checks the target's unverified image files against the runtime's records of its loaded
/// images (read through `layout` from the AppDomain at `app_domain`), and settles each one the
/// runtime records (accepted, or refused with the difference). Files of images the runtime
/// keeps no record of, or of a runtime whose layout does not know the records, stay
/// unverified.
pub(crate) fn settle_image_files<M: Memory + Target>(target: &M, layout: &Layout, app_domain: u64) {
    let pending = target.unverified_image_files();
    if pending.is_empty() || app_domain == 0 {
        return;
    }
    let Some(o) = offsets(layout) else { return };
    let mut left = pending;
    for (assembly, module) in loader_modules(target, app_domain, &o) {
        if left.is_empty() {
            break;
        }
        let Ok(r) = records(target, assembly, module, &o) else {
            continue;
        };
        if r.dynamic {
            continue;
        }
        let Some(path) = target.module_at(r.base).map(|m| m.path.clone()) else {
            continue;
        };
        let Some(i) = left.iter().position(|(p, _)| *p == path) else {
            continue;
        };
        let (recorded, candidates) = left.swap_remove(i);
        let mut why = Vec::new();
        let mut verdict = None;
        for c in candidates {
            match check_file(&c, &r) {
                Ok(text) => {
                    verdict = Some(Ok((
                        c,
                        dumpreader::Evidence::Records { compared: text }.into(),
                    )));
                    break;
                }
                Err(e) => why.push(dumpreader::Refusal::Records {
                    file: c,
                    difference: e.to_string(),
                }),
            }
        }
        let verdict = verdict.unwrap_or_else(|| Err(why.into()));
        target.settle_image_file(&recorded, verdict);
    }
}

fn check_file(path: &PathBuf, r: &LoadedImage) -> Result<String, Mismatch> {
    let io = |e: std::io::Error| Mismatch::Io(e.to_string());
    let len = std::fs::metadata(path).map_err(io)?.len();
    if len > MAX_FILE {
        return Err(Mismatch::TooLarge(len));
    }
    let bytes = std::fs::read(path).map_err(io)?;
    compare(&bytes, r)
}
