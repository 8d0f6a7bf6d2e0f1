//! The one memory abstraction ([`Memory`]) and the sorted segment index that serves a dump's
//! memory zero-copy from its file bytes.

use crate::error::ReadError;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Largest read [`Memory::read_bytes`] will allocate for (16 MiB).
pub const MAX_READ_BYTES: usize = 16 << 20;

/// A target's virtual memory, as every higher layer reads it.
///
/// Implemented by [`crate::Dump`]; a WinDbg-backed implementation lives in dbgext. Only
/// [`Memory::read`] must be written; the typed helpers are provided. All values are
/// little-endian (x86-64).
pub trait Memory: Send + Sync {
    /// Copies bytes from `addr` onward into `buf` and returns how many were copied.
    ///
    /// Stops at the first byte that is not available (a partial read), so `0` means nothing is
    /// mapped at `addr`. Reads may span adjacent ranges.
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize;

    /// The `len` bytes at `addr` without a copy, where the implementation holds them
    /// contiguously (a dump's file bytes); None where it does not, or does not say: then
    /// [`Memory::read`] them. Where given, they are the bytes `read` would copy.
    fn slice(&self, addr: u64, len: usize) -> Option<&[u8]> {
        let _ = (addr, len);
        None
    }

    /// Fills `buf` completely or fails with a [`ReadError`] telling how much was there.
    fn read_exact(&self, addr: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        let got = self.read(addr, buf);
        if got == buf.len() {
            Ok(())
        } else {
            Err(ReadError {
                addr,
                wanted: buf.len(),
                got,
            })
        }
    }

    /// Reads one byte.
    fn read_u8(&self, addr: u64) -> Result<u8, ReadError> {
        let mut b = [0u8; 1];
        self.read_exact(addr, &mut b)?;
        Ok(b[0])
    }

    /// Reads a little-endian `u16`.
    fn read_u16(&self, addr: u64) -> Result<u16, ReadError> {
        let mut b = [0u8; 2];
        self.read_exact(addr, &mut b)?;
        Ok(u16::from_le_bytes(b))
    }

    /// Reads a little-endian `u32`.
    fn read_u32(&self, addr: u64) -> Result<u32, ReadError> {
        let mut b = [0u8; 4];
        self.read_exact(addr, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// Reads a little-endian `i32`.
    fn read_i32(&self, addr: u64) -> Result<i32, ReadError> {
        self.read_u32(addr).map(|v| v as i32)
    }

    /// Reads a little-endian `u64`.
    fn read_u64(&self, addr: u64) -> Result<u64, ReadError> {
        let mut b = [0u8; 8];
        self.read_exact(addr, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// Reads a pointer (8 bytes on x86-64).
    fn read_ptr(&self, addr: u64) -> Result<u64, ReadError> {
        self.read_u64(addr)
    }

    /// Reads up to `len` bytes (capped at [`MAX_READ_BYTES`]) from `addr`; the result is
    /// shorter when memory ends early (possibly empty).
    fn read_bytes(&self, addr: u64, len: usize) -> Vec<u8> {
        let len = len.min(MAX_READ_BYTES);
        let mut v = vec![0u8; len];
        let got = self.read(addr, &mut v);
        v.truncate(got);
        v
    }

    /// Reads a NUL-terminated byte string of at most `max` bytes (lossy UTF-8). Returns the
    /// bytes up to the NUL, or all readable bytes up to `max` when there is none; an error only
    /// when nothing at all is readable at `addr`.
    fn read_cstr(&self, addr: u64, max: usize) -> Result<String, ReadError> {
        let max = max.min(MAX_READ_BYTES);
        let mut out = Vec::new();
        let mut chunk = [0u8; 256];
        let mut a = addr;
        while out.len() < max {
            let want = (max - out.len()).min(chunk.len());
            let got = self.read(a, &mut chunk[..want]);
            if got == 0 {
                if out.is_empty() {
                    return Err(ReadError {
                        addr,
                        wanted: 1,
                        got: 0,
                    });
                }
                break;
            }
            if let Some(nul) = chunk[..got].iter().position(|&b| b == 0) {
                out.extend_from_slice(&chunk[..nul]);
                return Ok(String::from_utf8_lossy(&out).into_owned());
            }
            out.extend_from_slice(&chunk[..got]);
            a = a.wrapping_add(got as u64);
            if got < want {
                break;
            }
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// Reads exactly `chars` UTF-16LE code units (lossy decoding; stops early at nothing).
    fn read_utf16(&self, addr: u64, chars: usize) -> Result<String, ReadError> {
        let bytes = chars.saturating_mul(2);
        if bytes > MAX_READ_BYTES {
            return Err(ReadError {
                addr,
                wanted: bytes,
                got: 0,
            });
        }
        let mut v = vec![0u8; bytes];
        self.read_exact(addr, &mut v)?;
        let units: Vec<u16> = v
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        Ok(String::from_utf16_lossy(&units))
    }
}

impl<M: Memory + ?Sized> Memory for &M {
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        (**self).read(addr, buf)
    }

    fn slice(&self, addr: u64, len: usize) -> Option<&[u8]> {
        (**self).slice(addr, len)
    }
}

impl<M: Memory + ?Sized> Memory for std::sync::Arc<M> {
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        (**self).read(addr, buf)
    }

    fn slice(&self, addr: u64, len: usize) -> Option<&[u8]> {
        (**self).slice(addr, len)
    }
}

impl<M: Memory + ?Sized> Memory for Box<M> {
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        (**self).read(addr, buf)
    }

    fn slice(&self, addr: u64, len: usize) -> Option<&[u8]> {
        (**self).slice(addr, len)
    }
}

/// One contiguous range of the target's address space that the dump describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryRange {
    /// First address.
    pub address: u64,
    /// Size in bytes (addresses `address..address+size` read successfully).
    pub size: u64,
    /// How many bytes from the start are backed by file bytes; the rest (`size - file_size`)
    /// reads as zeros (ELF `PT_LOAD` with `p_filesz < p_memsz`, as createdump writes for
    /// pages it did not save).
    pub file_size: u64,
    /// Protection when the format records it (ELF `p_flags`): readable, writable, executable.
    pub perms: Option<Perms>,
}

impl MemoryRange {
    /// One past the last address (saturating).
    pub fn end(&self) -> u64 {
        self.address.saturating_add(self.size)
    }
    /// Whether every byte is backed by file bytes.
    pub fn fully_backed(&self) -> bool {
        self.file_size >= self.size
    }
    /// Number of trailing bytes that read as zeros because the file holds no bytes for them.
    pub fn zero_filled(&self) -> u64 {
        self.size.saturating_sub(self.file_size)
    }
}

/// Page protection of a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Perms {
    /// Readable.
    pub read: bool,
    /// Writable.
    pub write: bool,
    /// Executable.
    pub exec: bool,
}

/// A segment of the index: `mem_size` bytes at `addr`, the first `file_size` of them at
/// `file_off` in the dump file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Segment {
    pub addr: u64,
    pub mem_size: u64,
    pub file_off: u64,
    pub file_size: u64,
    pub perms: Option<Perms>,
}

impl Segment {
    fn end(&self) -> u64 {
        // Guaranteed not to overflow by SegmentIndex::build.
        self.addr + self.mem_size
    }
}

/// Segments sorted by address, non-overlapping, served from `data` with a last-hit cache.
#[derive(Debug, Default)]
pub(crate) struct SegmentIndex {
    segs: Vec<Segment>,
    last: AtomicUsize,
}

/// Candidate segment in file order, with its index for diagnostics.
pub(crate) struct RawSegment {
    pub index: usize,
    /// Overlaps of this segment are expected (minidump thread stacks also in the memory list):
    /// trim without a warning.
    pub quiet: bool,
    pub seg: Segment,
}

impl SegmentIndex {
    /// Builds the index. Segments are taken in the given (file) order; a segment overlapping
    /// one already taken is trimmed to the parts that do not overlap (the earlier one wins) and
    /// an [`crate::Error::OverlappingSegment`] is pushed to `warnings`.
    pub fn build(raw: Vec<RawSegment>, warnings: &mut Vec<crate::Error>) -> SegmentIndex {
        let mut raw = raw;
        // Normalise: clamp so addr+mem_size doesn't overflow; file_size <= mem_size.
        for r in raw.iter_mut() {
            let max = u64::MAX - r.seg.addr;
            if r.seg.mem_size > max {
                r.seg.mem_size = max;
            }
            if r.seg.file_size > r.seg.mem_size {
                r.seg.file_size = r.seg.mem_size;
            }
        }
        raw.retain(|r| r.seg.mem_size > 0);
        // Fast path: already sorted & disjoint (the usual case).
        let mut sorted_disjoint = true;
        for w in raw.windows(2) {
            if w[1].seg.addr < w[0].seg.end() {
                sorted_disjoint = false;
                break;
            }
        }
        if sorted_disjoint {
            return SegmentIndex {
                segs: raw.into_iter().map(|r| r.seg).collect(),
                last: AtomicUsize::new(0),
            };
        }
        // Slow path: insert in file order into a sorted vec, trimming overlaps.
        let mut taken: Vec<(usize, Segment)> = Vec::with_capacity(raw.len());
        for r in raw {
            let mut pieces = vec![r.seg];
            let mut overlapped_with = None;
            // Subtract every taken segment overlapping this one.
            let lo = taken.partition_point(|(_, s)| s.end() <= r.seg.addr);
            let mut k = lo;
            while k < taken.len() && taken[k].1.addr < r.seg.end() {
                let (ti, t) = taken[k];
                let mut next = Vec::new();
                for p in pieces {
                    if t.end() <= p.addr || t.addr >= p.end() {
                        next.push(p);
                        continue;
                    }
                    overlapped_with.get_or_insert(ti);
                    if p.addr < t.addr {
                        next.push(cut(&p, p.addr, t.addr));
                    }
                    if t.end() < p.end() {
                        next.push(cut(&p, t.end(), p.end()));
                    }
                }
                pieces = next;
                k += 1;
            }
            if let (Some(other), false) = (overlapped_with, r.quiet) {
                warnings.push(crate::Error::OverlappingSegment {
                    index: r.index,
                    address: r.seg.addr,
                    end: r.seg.end(),
                    other,
                });
            }
            for p in pieces {
                if p.mem_size == 0 {
                    continue;
                }
                let pos = taken.partition_point(|(_, s)| s.addr < p.addr);
                taken.insert(pos, (r.index, p));
            }
        }
        SegmentIndex {
            segs: taken.into_iter().map(|(_, s)| s).collect(),
            last: AtomicUsize::new(0),
        }
    }

    pub fn ranges(&self) -> impl Iterator<Item = MemoryRange> + '_ {
        self.segs.iter().map(|s| MemoryRange {
            address: s.addr,
            size: s.mem_size,
            file_size: s.file_size,
            perms: s.perms,
        })
    }

    pub fn len(&self) -> usize {
        self.segs.len()
    }

    /// Index of the segment containing `addr`.
    #[inline]
    fn find(&self, addr: u64) -> Option<usize> {
        let last = self.last.load(Ordering::Relaxed);
        if let Some(s) = self.segs.get(last) {
            if addr >= s.addr && addr - s.addr < s.mem_size {
                return Some(last);
            }
        }
        let i = self.segs.partition_point(|s| s.addr <= addr);
        if i == 0 {
            return None;
        }
        let s = &self.segs[i - 1];
        if addr - s.addr < s.mem_size {
            self.last.store(i - 1, Ordering::Relaxed);
            Some(i - 1)
        } else {
            None
        }
    }

    /// Reads from `data` (the dump file's bytes).
    pub fn read(&self, data: &[u8], addr: u64, buf: &mut [u8]) -> usize {
        let mut done = 0usize;
        let mut a = addr;
        let Some(mut i) = self.find(a) else { return 0 };
        while done < buf.len() {
            let Some(s) = self.segs.get(i) else { break };
            if a < s.addr || a - s.addr >= s.mem_size {
                break;
            }
            let off_in = a - s.addr;
            let avail = s.mem_size - off_in;
            let want = (buf.len() - done) as u64;
            let take = avail.min(want) as usize;
            let dst = &mut buf[done..done + take];
            // File-backed part.
            let file_part = if off_in < s.file_size {
                (s.file_size - off_in).min(take as u64) as usize
            } else {
                0
            };
            if file_part > 0 {
                let start = s.file_off.saturating_add(off_in);
                let src = usize::try_from(start)
                    .ok()
                    .and_then(|st| st.checked_add(file_part).map(|e| (st, e)))
                    .and_then(|(st, e)| data.get(st..e));
                match src {
                    Some(src) => dst[..file_part].copy_from_slice(src),
                    None => return done, // cannot happen: segments are clipped to the file
                }
            }
            dst[file_part..].fill(0);
            done += take;
            a = match a.checked_add(take as u64) {
                Some(v) => v,
                None => break,
            };
            i += 1;
        }
        done
    }

    /// The range containing `addr`, if any.
    pub fn range_of(&self, addr: u64) -> Option<MemoryRange> {
        let i = self.find(addr)?;
        let s = self.segs.get(i)?;
        Some(MemoryRange {
            address: s.addr,
            size: s.mem_size,
            file_size: s.file_size,
            perms: s.perms,
        })
    }

    /// The contiguous file-backed slice at `addr` (zero-copy), up to the end of its segment.
    pub fn slice<'d>(&self, data: &'d [u8], addr: u64) -> Option<&'d [u8]> {
        let i = self.find(addr)?;
        let s = self.segs.get(i)?;
        let off_in = addr - s.addr;
        if off_in >= s.file_size {
            return None;
        }
        let st = usize::try_from(s.file_off.checked_add(off_in)?).ok()?;
        let len = usize::try_from(s.file_size - off_in).ok()?;
        data.get(st..st.checked_add(len)?)
    }
}

fn cut(p: &Segment, from: u64, to: u64) -> Segment {
    let delta = from - p.addr;
    let mem_size = to - from;
    let file_size = p.file_size.saturating_sub(delta).min(mem_size);
    Segment {
        addr: from,
        mem_size,
        file_off: p.file_off.saturating_add(delta),
        file_size,
        perms: p.perms,
    }
}

/// A [`Memory`] over a plain byte slice mapped at `base` (handy for tests and for images read
/// from disk).
#[derive(Debug, Clone)]
pub struct SliceMemory<'a> {
    /// Address of `bytes[0]`.
    pub base: u64,
    /// The bytes.
    pub bytes: &'a [u8],
}

impl Memory for SliceMemory<'_> {
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        let Some(off) = addr.checked_sub(self.base) else {
            return 0;
        };
        let Ok(off) = usize::try_from(off) else {
            return 0;
        };
        let Some(src) = self.bytes.get(off..) else {
            return 0;
        };
        let n = src.len().min(buf.len());
        buf[..n].copy_from_slice(&src[..n]);
        n
    }
}
