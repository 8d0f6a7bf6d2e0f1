//! Image files for a core that lacks the PE headers of the assemblies it maps.
//!
//! gdb's `gcore` leaves out the never-written pages of file mappings: for a framework
//! assembly or an IL-only app dll that is every page but the few the runtime wrote (its
//! relocated data), headers included. dumpreader reads such missing pages from the mapped file
//! once the file's identity is anchored; without the PE headers in the dump there is no
//! timestamp to compare, so the anchor comes from the runtime's own records of the image,
//! which live in its (saved) heap memory:
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
//! runtime keeps no record of (no descriptor, a module not in the AppDomain's list) stays
//! unverified and is not read.

use crate::metadata::{locate_in_pe, Metadata, PeHeaders, PeLayout, TableId};
use dumpreader::{Memory, Target};
use std::path::PathBuf;

/// Most assemblies walked in the AppDomain's list.
const MAX_ASSEMBLIES: u64 = 1 << 16;
/// Largest image file compared.
const MAX_FILE: u64 = 1 << 30;

/// The runtime's records of one loaded image.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Records {
    base: u64,
    size: u32,
    mapped: bool,
    /// (table, map count) of the six lookup maps.
    counts: Vec<(TableId, u32, u32)>,
    /// (R2R header address, RUNTIME_FUNCTION count), for a ReadyToRun image.
    r2r: Option<(u64, u32)>,
}

/// Offsets this needs from the contract descriptor.
struct Offsets {
    domain_assemblies: u64,
    list_count: u64,
    list_first: u64,
    block_next: u64,
    block_size: u64,
    block_start: u64,
    assembly_module: u64,
    module_assembly: u64,
    module_pe_assembly: u64,
    pe_assembly_image: u64,
    pe_image_loaded: u64,
    layout_base: u64,
    layout_size: u64,
    layout_flags: u64,
    map_count: u64,
    maps: Vec<(TableId, u64, u32)>,
    module_r2r: Option<u64>,
    r2r_header: Option<u64>,
    r2r_functions: Option<u64>,
}

/// The offsets, when the runtime's descriptor publishes every one (else no image is checked).
fn offsets(d: &crate::discovery::descriptor::ContractDescriptor) -> Option<Offsets> {
    let f = |t: &str, n: &str| d.field(t, n);
    let maps = [
        ("TypeDefToMethodTableMap", TableId::TypeDef, 2),
        ("TypeRefToMethodTableMap", TableId::TypeRef, 1),
        ("MemberRefToDescMap", TableId::MemberRef, 1),
        ("MethodDefToDescMap", TableId::MethodDef, 1),
        ("FieldDefToDescMap", TableId::Field, 1),
        ("ManifestModuleReferencesMap", TableId::AssemblyRef, 1),
    ]
    .iter()
    .map(|&(n, t, extra)| f("Module", n).map(|o| (t, o, extra)))
    .collect::<Option<Vec<_>>>()?;
    Some(Offsets {
        domain_assemblies: f("AppDomain", "DomainAssemblyList")?,
        list_count: f("ArrayListBase", "Count")?,
        list_first: f("ArrayListBase", "FirstBlock")?,
        block_next: f("ArrayListBlock", "Next")?,
        block_size: f("ArrayListBlock", "Size")?,
        block_start: f("ArrayListBlock", "ArrayStart")?,
        assembly_module: f("Assembly", "Module")?,
        module_assembly: f("Module", "Assembly")?,
        module_pe_assembly: f("Module", "PEAssembly")?,
        pe_assembly_image: f("PEAssembly", "PEImage")?,
        pe_image_loaded: f("PEImage", "LoadedImageLayout")?,
        layout_base: f("PEImageLayout", "Base")?,
        layout_size: f("PEImageLayout", "Size")?,
        layout_flags: f("PEImageLayout", "Flags")?,
        map_count: f("ModuleLookupMap", "Count")?,
        maps,
        module_r2r: d.field("Module", "ReadyToRunInfo"),
        r2r_header: d.field("ReadyToRunInfo", "ReadyToRunHeader"),
        r2r_functions: d.field("ReadyToRunInfo", "NumRuntimeFunctions"),
    })
}

/// The Modules of the AppDomain's assembly list (each element, or the pointer it holds, is an
/// Assembly whose Module points back to it).
fn loader_modules<M: Memory>(m: &M, app_domain: u64, o: &Offsets) -> Vec<u64> {
    let list = app_domain + o.domain_assemblies;
    let Ok(count) = m.read_u32(list + o.list_count) else {
        return Vec::new();
    };
    let module_of = |asm: u64| -> Option<u64> {
        let module = m.read_u64(asm + o.assembly_module).ok()?;
        (module != 0 && m.read_u64(module + o.module_assembly).ok()? == asm).then_some(module)
    };
    let mut out = Vec::new();
    let mut block = list + o.list_first;
    let mut left = u64::from(count).min(MAX_ASSEMBLIES);
    let mut blocks = 0;
    while left > 0 && block != 0 && blocks < 1024 {
        blocks += 1;
        let Ok(size) = m.read_u32(block + o.block_size) else {
            break;
        };
        for i in 0..u64::from(size).min(left) {
            if let Ok(e) = m.read_u64(block + o.block_start + 8 * i) {
                let module = module_of(e).or_else(|| m.read_u64(e).ok().and_then(&module_of));
                out.extend(module);
            }
        }
        left = left.saturating_sub(u64::from(size));
        block = m.read_u64(block + o.block_next).unwrap_or(0);
    }
    out
}

fn records<M: Memory>(m: &M, module: u64, o: &Offsets) -> crate::Result<Records> {
    let r64 = |a: u64, what: &str| m.read_u64(a).map_err(|_| crate::ClrError::read(what, a));
    let r32 = |a: u64, what: &str| m.read_u32(a).map_err(|_| crate::ClrError::read(what, a));
    let pa = r64(module + o.module_pe_assembly, "Module.PEAssembly")?;
    let img = r64(pa + o.pe_assembly_image, "PEAssembly.PEImage")?;
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
    let mut counts = Vec::new();
    for &(t, off, extra) in &o.maps {
        counts.push((
            t,
            r32(module + off + o.map_count, "ModuleLookupMap.Count")?,
            extra,
        ));
    }
    let r2r = match (o.module_r2r, o.r2r_header, o.r2r_functions) {
        (Some(mr), Some(h), Some(n)) => {
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
        _ => None,
    };
    Ok(Records {
        base,
        size,
        mapped: flags & 1 != 0,
        counts,
        r2r,
    })
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
fn compare(bytes: &[u8], r: &Records) -> Result<String, Mismatch> {
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
    for &(t, count, extra) in &r.counts {
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
    if let Some((hdr, nfun)) = r.r2r {
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
/// images, and settles each one the runtime records (accepted, or refused with the
/// difference). Files of images the runtime keeps no record of stay unverified.
pub(crate) fn settle_image_files<M: Memory + Target>(
    target: &M,
    descriptor: Option<&crate::discovery::descriptor::ContractDescriptor>,
) {
    let pending = target.unverified_image_files();
    if pending.is_empty() {
        return;
    }
    let Some(d) = descriptor else { return };
    let Some(o) = offsets(d) else { return };
    let Some(app_domain) = d
        .global_number("AppDomain")
        .and_then(|g| target.read_u64(g).ok())
        .filter(|&a| a != 0)
    else {
        return;
    };
    let mut left = pending;
    for module in loader_modules(target, app_domain, &o) {
        if left.is_empty() {
            break;
        }
        let Ok(r) = records(target, module, &o) else {
            continue;
        };
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

fn check_file(path: &PathBuf, r: &Records) -> Result<String, Mismatch> {
    let io = |e: std::io::Error| Mismatch::Io(e.to_string());
    let len = std::fs::metadata(path).map_err(io)?.len();
    if len > MAX_FILE {
        return Err(Mismatch::TooLarge(len));
    }
    let bytes = std::fs::read(path).map_err(io)?;
    compare(&bytes, r)
}
