//! Finding the metadata of a managed PE image: the CLI header (data directory 14) and its
//! MetaData directory, in either layout.

use super::error::{Error, Result};
use super::reader::METADATA_SIGNATURE;
pub use dumpreader::PeLayout;
use std::ops::Range;

/// Most section headers accepted (the PE format allows 96).
const MAX_SECTIONS: u16 = 96;

/// One section header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Section {
    /// VirtualAddress (RVA of the section).
    pub virtual_address: u32,
    /// VirtualSize.
    pub virtual_size: u32,
    /// PointerToRawData (file offset).
    pub raw_offset: u32,
    /// SizeOfRawData.
    pub raw_size: u32,
}

/// The parts of a PE header the metadata locator needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeHeaders {
    /// Section headers.
    pub sections: Vec<Section>,
    /// SectionAlignment from the optional header.
    pub section_alignment: u32,
    /// FileAlignment from the optional header.
    pub file_alignment: u32,
    /// The CLI header directory (data directory 14): RVA and size.
    pub cli_header: (u32, u32),
}

fn bad(reason: impl Into<String>) -> Error {
    Error::BadPe {
        reason: reason.into(),
    }
}

fn u16_at(d: &[u8], off: usize) -> Result<u16> {
    d.get(off..off.checked_add(2).ok_or_else(|| bad("offset overflow"))?)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .ok_or_else(|| bad(format!("headers truncated at {off:#x}")))
}

fn u32_at(d: &[u8], off: usize) -> Result<u32> {
    d.get(off..off.checked_add(4).ok_or_else(|| bad("offset overflow"))?)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or_else(|| bad(format!("headers truncated at {off:#x}")))
}

impl PeHeaders {
    /// Parses the DOS, COFF and optional headers and the section table. `headers` needs only
    /// the image's first bytes (its first page is enough for any real image).
    pub fn parse(headers: &[u8]) -> Result<PeHeaders> {
        if u16_at(headers, 0)? != 0x5A4D {
            return Err(bad("no MZ signature"));
        }
        let pe = u32_at(headers, 0x3C)? as usize;
        if u32_at(headers, pe)? != 0x0000_4550 {
            return Err(bad(format!("no PE signature at e_lfanew {pe:#x}")));
        }
        let coff = pe + 4;
        let nsections = u16_at(headers, coff + 2)?;
        if nsections > MAX_SECTIONS {
            return Err(bad(format!(
                "{nsections} sections (at most {MAX_SECTIONS})"
            )));
        }
        let opt_size = u16_at(headers, coff + 16)? as usize;
        let opt = coff + 20;
        let magic = u16_at(headers, opt)?;
        let (dd_count_off, dd_off) = match magic {
            0x10b => (opt + 92, opt + 96),
            0x20b => (opt + 108, opt + 112),
            m => return Err(bad(format!("optional header magic {m:#x}"))),
        };
        let section_alignment = u32_at(headers, opt + 32)?;
        let file_alignment = u32_at(headers, opt + 36)?;
        let dd_count = u32_at(headers, dd_count_off)?;
        if dd_count <= 14 || dd_off + 15 * 8 > opt + opt_size {
            return Err(bad("no CLI header directory (not a managed image)"));
        }
        let cli_header = (
            u32_at(headers, dd_off + 14 * 8)?,
            u32_at(headers, dd_off + 14 * 8 + 4)?,
        );
        if cli_header.0 == 0 {
            return Err(bad("CLI header directory is empty (not a managed image)"));
        }
        let sec = opt + opt_size;
        let mut sections = Vec::with_capacity(nsections as usize);
        for i in 0..nsections as usize {
            let s = sec + i * 40;
            sections.push(Section {
                virtual_size: u32_at(headers, s + 8)?,
                virtual_address: u32_at(headers, s + 12)?,
                raw_size: u32_at(headers, s + 16)?,
                raw_offset: u32_at(headers, s + 20)?,
            });
        }
        Ok(PeHeaders {
            sections,
            section_alignment,
            file_alignment,
            cli_header,
        })
    }

    /// Translates an RVA to an offset from the image base under `layout`.
    pub fn rva_to_offset(&self, rva: u32, layout: PeLayout) -> Option<usize> {
        match layout {
            PeLayout::Mapped => Some(rva as usize),
            PeLayout::Flat => {
                for s in &self.sections {
                    let span = s.virtual_size.max(s.raw_size);
                    if rva >= s.virtual_address && rva - s.virtual_address < span {
                        let d = rva - s.virtual_address;
                        return (d < s.raw_size).then(|| s.raw_offset as usize + d as usize);
                    }
                }
                let first = self
                    .sections
                    .iter()
                    .map(|s| s.virtual_address)
                    .min()
                    .unwrap_or(u32::MAX);
                (rva < first).then_some(rva as usize)
            }
        }
    }
}

/// Reads the MetaData directory (RVA, size) out of a CLI header (`IMAGE_COR20_HEADER`).
pub fn cli_metadata_directory(cli_header: &[u8]) -> Result<(u32, u32)> {
    let cb = u32_at(cli_header, 0)?;
    if cb < 16 {
        return Err(bad(format!("CLI header size {cb} is too small")));
    }
    Ok((u32_at(cli_header, 8)?, u32_at(cli_header, 12)?))
}

/// The byte range of the metadata (from `BSJB`) inside `image`, a PE image laid out as
/// `layout` (`Mapped`: sections at their RVAs; `Flat`: the file as is). Checks the signature.
pub fn locate_in_pe(image: &[u8], layout: PeLayout) -> Result<Range<usize>> {
    let h = PeHeaders::parse(image)?;
    let (cli_rva, _) = h.cli_header;
    let cli_off = h
        .rva_to_offset(cli_rva, layout)
        .ok_or_else(|| bad(format!("CLI header RVA {cli_rva:#x} maps to no section")))?;
    let cli = image.get(cli_off..).ok_or_else(|| {
        bad(format!(
            "CLI header at {cli_off:#x} is beyond the image ({:#x} bytes)",
            image.len()
        ))
    })?;
    let (md_rva, md_size) = cli_metadata_directory(cli)?;
    let md_off = h
        .rva_to_offset(md_rva, layout)
        .ok_or_else(|| bad(format!("metadata RVA {md_rva:#x} maps to no section")))?;
    let end = md_off
        .checked_add(md_size as usize)
        .ok_or_else(|| bad("metadata range overflows"))?;
    if end > image.len() {
        return Err(Error::Truncated {
            what: "metadata (per the CLI header)",
            offset: md_off,
            needed: md_size as usize,
            available: image.len().saturating_sub(md_off),
        });
    }
    let sig = u32_at(image, md_off)?;
    if sig != METADATA_SIGNATURE {
        return Err(Error::BadSignature {
            what: "metadata root (via CLI header)",
            offset: md_off,
            found: sig,
            expected: METADATA_SIGNATURE,
        });
    }
    Ok(md_off..end)
}

/// Like [`locate_in_pe`] when the layout is unknown: tries the mapped layout, then the flat
/// one, and returns the first whose metadata starts with `BSJB`.
pub fn locate_in_pe_any(image: &[u8]) -> Result<(PeLayout, Range<usize>)> {
    match locate_in_pe(image, PeLayout::Mapped) {
        Ok(r) => Ok((PeLayout::Mapped, r)),
        Err(e) => match locate_in_pe(image, PeLayout::Flat) {
            Ok(r) => Ok((PeLayout::Flat, r)),
            Err(_) => Err(e),
        },
    }
}

/// Largest metadata [`read_metadata`] will copy out of memory (256 MiB; CoreLib's is 2.6 MB).
pub const MAX_METADATA_BYTES: u32 = 256 << 20;

/// Metadata copied out of a target's memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataBytes {
    /// The layout the image was found in.
    pub layout: PeLayout,
    /// Address of the metadata root (`BSJB`) in the target.
    pub address: u64,
    /// The metadata bytes (parse with [`super::Metadata::parse`]).
    pub bytes: Vec<u8>,
}

/// Reads the metadata of the managed PE image at `base` out of `mem`, in whichever layout the
/// image is (tries `Mapped`, then `Flat`; a layout is accepted only when its metadata is fully
/// present, starts with `BSJB` and parses). `image_size`, when known (the module's mapped
/// size), bounds the metadata's position and size.
pub fn read_metadata(
    mem: &dyn dumpreader::Memory,
    base: u64,
    image_size: Option<u64>,
) -> Result<MetadataBytes> {
    let mut hdr = vec![0u8; 4096];
    let got = mem.read(base, &mut hdr);
    hdr.truncate(got);
    let h = PeHeaders::parse(&hdr)?;
    let mut first_err = None;
    for layout in [PeLayout::Mapped, PeLayout::Flat] {
        match read_in_layout(mem, base, image_size, &h, layout) {
            Ok(m) => return Ok(m),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    Err(first_err.unwrap_or_else(|| bad("no layout")))
}

fn read_in_layout(
    mem: &dyn dumpreader::Memory,
    base: u64,
    image_size: Option<u64>,
    h: &PeHeaders,
    layout: PeLayout,
) -> Result<MetadataBytes> {
    let limit = image_size.unwrap_or(u64::MAX);
    let cli_off = h
        .rva_to_offset(h.cli_header.0, layout)
        .filter(|o| (*o as u64) < limit)
        .ok_or_else(|| {
            bad(format!(
                "{layout:?}: CLI header RVA {:#x} maps outside the image",
                h.cli_header.0
            ))
        })?;
    let mut cli = [0u8; 72];
    let n = mem.read(base.wrapping_add(cli_off as u64), &mut cli);
    let (md_rva, md_size) = cli_metadata_directory(&cli[..n])?;
    let md_off = h.rva_to_offset(md_rva, layout).ok_or_else(|| {
        bad(format!(
            "{layout:?}: metadata RVA {md_rva:#x} maps to no section"
        ))
    })?;
    if md_size > MAX_METADATA_BYTES || md_off as u64 + md_size as u64 > limit || md_size < 16 {
        return Err(bad(format!(
            "{layout:?}: metadata at offset {md_off:#x} size {md_size:#x} does not fit the image ({limit:#x} bytes)"
        )));
    }
    let address = base.wrapping_add(md_off as u64);
    let mut bytes = vec![0u8; md_size as usize];
    let got = mem.read(address, &mut bytes);
    if got < bytes.len() {
        return Err(Error::Truncated {
            what: "metadata in memory",
            offset: md_off,
            needed: md_size as usize,
            available: got,
        });
    }
    super::Metadata::parse(&bytes)?;
    Ok(MetadataBytes {
        layout,
        address,
        bytes,
    })
}
