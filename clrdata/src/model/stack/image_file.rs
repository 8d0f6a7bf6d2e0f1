//! Image bytes the dump lacks, read from the image file on disk.
//!
//! createdump saves only the pages of a ReadyToRun image that were touched; its
//! RuntimeFunctions table and unwind data are mostly absent. The runtime's own DAC reads them
//! from the image file, and so does this: from the path the runtime recorded for the image
//! (PEImage::m_path), accepted only when the file's PE timestamp and SizeOfImage equal the
//! headers in the dump. [`Overlay`] reads such an image's bytes from its file (a dump may
//! zero-fill pages it did not save, so the file is the better witness of read-only tables)
//! and everything else from the dump.
//!
//! A gcore or kernel core does not need this: its target (dumpreader) reads the pages it lacks
//! from identity-checked files itself, and a page such a core holds is the process's own
//! (relocated, written). createdump dumps still do: createdump may also leave out pages the
//! process wrote, so dumpreader serves no file for them, and only the read-only tables this
//! overlay is used for are safe to take from the file.

use crate::metadata::{PeHeaders, PeLayout};
use dumpreader::Memory;
use std::sync::Arc;

/// Largest image file read.
const MAX_IMAGE_FILE: u64 = 1 << 30;

/// An image file's bytes, placed at the address where the dump has the image.
pub struct ImageFile {
    /// The image's base in the target.
    pub base: u64,
    /// Its extent in the target.
    pub size: u64,
    layout: PeLayout,
    headers: PeHeaders,
    bytes: Vec<u8>,
}

/// The PE identity (TimeDateStamp, SizeOfImage) of headers at `base` in `mem`.
fn pe_identity<M: Memory + ?Sized>(mem: &M, base: u64) -> Option<(u32, u32)> {
    match dumpreader::pe_identity(&mem, base)? {
        dumpreader::ModuleIdentity::Pe {
            timestamp,
            size_of_image,
        } => Some((timestamp, size_of_image)),
        dumpreader::ModuleIdentity::BuildId(_) => None,
    }
}

impl ImageFile {
    /// Opens `path` as the image mapped at `base` (in `layout`), if the file's identity equals
    /// the headers read from `mem`.
    pub fn open<M: Memory + ?Sized>(
        mem: &M,
        base: u64,
        layout: PeLayout,
        path: &str,
    ) -> crate::Result<ImageFile> {
        let want = pe_identity(mem, base)
            .ok_or_else(|| crate::ClrError::read("the image headers", base))?;
        let len = std::fs::metadata(path)
            .map_err(|e| crate::ClrError::image_file(path, e.to_string()))?
            .len();
        if len > MAX_IMAGE_FILE {
            return Err(crate::ClrError::image_file(
                path,
                format!("{len} bytes is too large for an image"),
            ));
        }
        let bytes =
            std::fs::read(path).map_err(|e| crate::ClrError::image_file(path, e.to_string()))?;
        let have = pe_identity(
            &dumpreader::SliceMemory {
                base: 0,
                bytes: &bytes,
            },
            0,
        )
        .ok_or_else(|| crate::ClrError::image_file(path, "not a PE file"))?;
        if have != want {
            return Err(crate::ClrError::image_file(
                path,
                format!(
                    "timestamp/size {:#x}/{:#x} differ from the dump's {:#x}/{:#x}",
                    have.0, have.1, want.0, want.1
                ),
            ));
        }
        let headers = PeHeaders::parse(&bytes)
            .map_err(|e| crate::ClrError::metadata(format!("the PE headers of {path}"), e))?;
        let size = match layout {
            PeLayout::Mapped => want.1 as u64,
            PeLayout::Flat => bytes.len() as u64,
        };
        Ok(ImageFile {
            base,
            size,
            layout,
            headers,
            bytes,
        })
    }

    /// The file's preferred load address (the PE32+ OptionalHeader.ImageBase): what its
    /// absolute addresses are relative to before the loader relocates them.
    pub fn preferred_base(&self) -> Option<u64> {
        let b = &self.bytes;
        let e_lfanew = u32::from_le_bytes(b.get(0x3C..0x40)?.try_into().ok()?) as usize;
        let opt = e_lfanew.checked_add(24)?;
        // PE32+ (magic 0x20B): ImageBase is a u64 at +24 of the optional header.
        if b.get(opt..opt + 2)? != [0x0B, 0x02] {
            return None;
        }
        Some(u64::from_le_bytes(
            b.get(opt + 24..opt + 32)?.try_into().ok()?,
        ))
    }

    /// A pointer-sized value the file holds at target address `addr`, relocated to where the
    /// image is mapped (the file holds it relative to [`ImageFile::preferred_base`]); `None`
    /// when the file has no such bytes or the value is not an address inside the image.
    pub fn relocated_pointer(&self, addr: u64) -> Option<u64> {
        let mut b = [0u8; 8];
        if self.read(addr, &mut b) != 8 {
            return None;
        }
        let v = u64::from_le_bytes(b);
        let rva = v.checked_sub(self.preferred_base()?)?;
        (rva < self.size).then(|| self.base + rva)
    }

    /// Reads target bytes at `addr` from the file; returns how many were read.
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        if addr < self.base || addr >= self.base + self.size {
            return 0;
        }
        let off = addr - self.base;
        let file_off = match self.layout {
            PeLayout::Flat => Some(off as usize),
            PeLayout::Mapped => u32::try_from(off)
                .ok()
                .and_then(|rva| self.headers.rva_to_offset(rva, PeLayout::Flat)),
        };
        let Some(fo) = file_off else { return 0 };
        let Some(src) = self.bytes.get(fo..) else {
            return 0;
        };
        // Stay within the section holding the first byte (the mapped layout is not contiguous
        // in the file).
        let n = buf.len().min(src.len());
        let n = match self.layout {
            PeLayout::Flat => n,
            PeLayout::Mapped => {
                let rva = off as u32;
                let limit = self
                    .headers
                    .sections
                    .iter()
                    .find(|s| rva >= s.virtual_address && rva - s.virtual_address < s.raw_size)
                    .map(|s| (s.virtual_address + s.raw_size - rva) as usize)
                    .unwrap_or(n);
                n.min(limit)
            }
        };
        buf[..n].copy_from_slice(&src[..n]);
        n
    }
}

/// The dump's memory, with image files filling what it lacks.
pub struct Overlay<'a, M: ?Sized> {
    /// The dump.
    pub inner: &'a M,
    /// Image files.
    pub files: Vec<Arc<ImageFile>>,
}

impl<M: Memory + ?Sized> Memory for Overlay<'_, M> {
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        for f in &self.files {
            let k = f.read(addr, buf);
            if k == buf.len() {
                return k;
            }
        }
        self.inner.read(addr, buf)
    }
}
