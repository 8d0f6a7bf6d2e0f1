//! ReadyToRun images (`docs/design/coreclr/botr/readytorun-format.md`): the RuntimeFunctions
//! section (102) and MethodDefEntryPoints (103, a NativeFormat NativeArray indexed by MethodDef
//! rid − 1, whose entries name the method's first RUNTIME_FUNCTION).

use super::image_file::ImageFile;
use super::unwind::RuntimeFunction;
use crate::metadata::{PeHeaders, PeLayout};
use crate::runtime::Runtime;
use dumpreader::Memory;
use std::collections::HashMap;
use std::sync::Arc;

const RTR_SIGNATURE: u32 = 0x0052_5452;
const SECTION_RUNTIME_FUNCTIONS: u32 = 102;
const SECTION_METHODDEF_ENTRYPOINTS: u32 = 103;
/// Bound on sections read from an R2R header.
const MAX_SECTIONS: u32 = 256;
/// Bound on RUNTIME_FUNCTIONS (CoreLib has about 100,000).
const MAX_FUNCTIONS: u32 = 4 << 20;
/// Bound on a section's size read at once.
const MAX_SECTION_BYTES: u32 = 64 << 20;

/// The parts of an R2R image the stack walk needs.
pub struct R2rImage {
    base: u64,
    /// (begin, end, unwind) RVAs, sorted by begin.
    functions: Vec<(u32, u32, u32)>,
    /// RUNTIME_FUNCTION index of a method's entry → MethodDef rid.
    entry_to_rid: HashMap<u32, u32>,
    /// The image file, when the dump lacks the image's pages (see [`ImageFile`]).
    pub file: Option<Arc<ImageFile>>,
}

impl R2rImage {
    /// Reads the R2R header of the Module at `module`.
    pub fn read<M: Memory>(rt: &Runtime<M>, module: u64) -> Result<R2rImage, String> {
        let md = rt.module(module).map_err(|e| e.to_string())?;
        let m = rt.memory();
        let base = md.image_base;
        let layout = if md.mapped {
            PeLayout::Mapped
        } else {
            PeLayout::Flat
        };
        let file = rt
            .image_search
            .candidates(&md.path)
            .iter()
            .find_map(|p| ImageFile::open(m, base, layout, &p.to_string_lossy()).ok())
            .map(Arc::new);
        let ov = super::image_file::Overlay {
            inner: m,
            files: file.iter().cloned().collect(),
        };
        let m = &ov;
        let headers = m.read_bytes(base, 4096);
        let pe = PeHeaders::parse(&headers).map_err(|e| format!("image at {base:#x}: {e}"))?;
        let at = |rva: u32| -> Result<u64, String> {
            pe.rva_to_offset(rva, layout)
                .map(|o| base + o as u64)
                .ok_or_else(|| format!("RVA {rva:#x} outside the image at {base:#x}"))
        };
        let cor = md.cor_header;
        let rva = m
            .read_u32(cor + 0x40)
            .map_err(|_| format!("CLI header at {cor:#x} is not in the dump"))?;
        if rva == 0 {
            return Err(format!("image at {base:#x} has no ReadyToRun header"));
        }
        let h = at(rva)?;
        let sig = m
            .read_u32(h)
            .map_err(|_| format!("ReadyToRun header at {h:#x} is not in the dump"))?;
        if sig != RTR_SIGNATURE {
            return Err(format!(
                "ReadyToRun header at {h:#x} has signature {sig:#x}"
            ));
        }
        let n = m.read_u32(h + 12).map_err(|_| "R2R header".to_string())?;
        if n > MAX_SECTIONS {
            return Err(format!("ReadyToRun header at {h:#x} claims {n} sections"));
        }
        let mut sections = HashMap::new();
        for i in 0..n as u64 {
            let s = h + 16 + 12 * i;
            let ty = m
                .read_u32(s)
                .map_err(|_| format!("R2R section at {s:#x}"))?;
            let r = m
                .read_u32(s + 4)
                .map_err(|_| format!("R2R section at {s:#x}"))?;
            let sz = m
                .read_u32(s + 8)
                .map_err(|_| format!("R2R section at {s:#x}"))?;
            sections.insert(ty, (r, sz));
        }
        let read_section = |ty: u32| -> Result<Vec<u8>, String> {
            let (r, sz) = *sections
                .get(&ty)
                .ok_or_else(|| format!("R2R image at {base:#x} has no section {ty}"))?;
            if sz > MAX_SECTION_BYTES {
                return Err(format!("R2R section {ty} claims {sz} bytes"));
            }
            let a = at(r)?;
            let b = m.read_bytes(a, sz as usize);
            if b.len() < sz as usize {
                return Err(format!(
                    "R2R section {ty} at {a:#x} is not (all) in the dump"
                ));
            }
            Ok(b)
        };
        let rf = read_section(SECTION_RUNTIME_FUNCTIONS)?;
        let count = (rf.len() / 12).min(MAX_FUNCTIONS as usize);
        let functions: Vec<(u32, u32, u32)> = (0..count)
            .map(|i| {
                let w = |k: usize| {
                    u32::from_le_bytes(rf[12 * i + k..12 * i + k + 4].try_into().unwrap())
                };
                (w(0), w(4), w(8))
            })
            .collect();
        let mut entry_to_rid = HashMap::new();
        if let Ok(ep) = read_section(SECTION_METHODDEF_ENTRYPOINTS) {
            let arr = NativeArray::new(&ep);
            if let Some(arr) = arr {
                for idx in 0..arr.count.min(1 << 24) {
                    if let Some(off) = arr.get(idx) {
                        if let Some((id, _)) = decode_unsigned(&ep, off) {
                            let f = if id & 1 != 0 { id >> 2 } else { id >> 1 };
                            entry_to_rid.entry(f).or_insert(idx + 1);
                        }
                    }
                }
            }
        }
        Ok(R2rImage {
            base,
            functions,
            entry_to_rid,
            file,
        })
    }

    /// The RUNTIME_FUNCTION covering `ip`, the method's start, and its MethodDef rid (when the
    /// method is in MethodDefEntryPoints; generic instantiations are not).
    pub fn lookup(&self, ip: u64) -> Option<(RuntimeFunction, u64, Option<u32>)> {
        let rva = u32::try_from(ip.checked_sub(self.base)?).ok()?;
        let i = self
            .functions
            .partition_point(|f| f.0 <= rva)
            .checked_sub(1)?;
        let (b, e, u) = self.functions[i];
        if rva >= e {
            return None;
        }
        let rf = RuntimeFunction {
            base: self.base,
            begin: b,
            end: e,
            unwind: u,
        };
        // Funclets and cold parts follow their method: walk back to an entry point.
        let mut j = i;
        for _ in 0..64 {
            if let Some(&rid) = self.entry_to_rid.get(&(j as u32)) {
                return Some((rf, self.base + self.functions[j].0 as u64, Some(rid)));
            }
            if j == 0 {
                break;
            }
            j -= 1;
        }
        Some((rf, self.base + b as u64, None))
    }
}

/// NativeFormat's variable-length unsigned integer at `off`: (value, next offset).
fn decode_unsigned(b: &[u8], off: u32) -> Option<(u32, u32)> {
    let o = off as usize;
    let v = *b.get(o)? as u32;
    let g = |k: usize| b.get(o + k).map(|&x| x as u32);
    Some(if v & 1 == 0 {
        (v >> 1, off + 1)
    } else if v & 2 == 0 {
        ((v >> 2) | g(1)? << 6, off + 2)
    } else if v & 4 == 0 {
        ((v >> 3) | g(1)? << 5 | g(2)? << 13, off + 3)
    } else if v & 8 == 0 {
        ((v >> 4) | g(1)? << 4 | g(2)? << 12 | g(3)? << 20, off + 4)
    } else if v & 16 == 0 {
        (g(1)? | g(2)? << 8 | g(3)? << 16 | g(4)? << 24, off + 5)
    } else {
        return None;
    })
}

/// NativeFormat's NativeArray (NativeFormatReader.h), at offset 0 of its section.
struct NativeArray<'a> {
    b: &'a [u8],
    base: u32,
    count: u32,
    entry_size: u32,
}

const BLOCK_SIZE: u32 = 16;

impl<'a> NativeArray<'a> {
    fn new(b: &'a [u8]) -> Option<NativeArray<'a>> {
        let (val, base) = decode_unsigned(b, 0)?;
        Some(NativeArray {
            b,
            base,
            count: val >> 2,
            entry_size: val & 3,
        })
    }

    fn rd(&self, off: u32, size: u32) -> Option<u32> {
        let o = off as usize;
        let s = self.b.get(o..o + size as usize)?;
        Some(match size {
            1 => s[0] as u32,
            2 => u16::from_le_bytes([s[0], s[1]]) as u32,
            _ => u32::from_le_bytes([s[0], s[1], s[2], s[3]]),
        })
    }

    fn get(&self, index: u32) -> Option<u32> {
        if index >= self.count {
            return None;
        }
        let size = 1u32 << self.entry_size.min(2);
        let mut offset = self.rd(self.base + size * (index / BLOCK_SIZE), size)? + self.base;
        let mut bit = BLOCK_SIZE >> 1;
        while bit > 0 {
            let (val, offset2) = decode_unsigned(self.b, offset)?;
            if index & bit != 0 {
                if val & 2 != 0 {
                    offset += val >> 2;
                    bit >>= 1;
                    continue;
                }
            } else if val & 1 != 0 {
                offset = offset2;
                bit >>= 1;
                continue;
            }
            if val & 3 == 0 && (val >> 2) == (index & (BLOCK_SIZE - 1)) {
                offset = offset2;
                break;
            }
            return None;
        }
        Some(offset)
    }
}
