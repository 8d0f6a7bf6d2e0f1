//! Writing decompressed dumps as sparse files.
//!
//! A core dump is mostly zero pages (reserved GC regions, untouched stacks: 84–99% of the 4 KiB
//! blocks of the corpus's dumps). Leaving those blocks as holes keeps a decompressed 1.1 GB
//! gcore core at a few tens of MB on disk; reading (and memory-mapping) a hole gives zeros, so
//! the file reads the same as a dense one.

use std::io::{self, Read, Seek, SeekFrom, Write};

/// The unit left as a hole when all its bytes are zero (the page size of the dumps' machines
/// and the block size of common file systems).
const BLOCK: usize = 4096;

/// Copies `src` to `dst` (from its start; `dst` is expected empty) and returns the number of
/// bytes copied. Every all-zero 4 KiB block (at a multiple of 4 KiB) is skipped by seeking
/// rather than written, and the file's length is set at the end, so the file system stores
/// those blocks as holes where it can.
pub fn copy_sparse(mut src: impl Read, dst: &mut std::fs::File) -> io::Result<u64> {
    let mut buf = vec![0u8; 1 << 20];
    let mut pos = 0u64; // bytes of `src` consumed
    let mut cursor = 0u64; // `dst`'s file position
    loop {
        let n = fill(&mut src, &mut buf)?;
        if n == 0 {
            break;
        }
        // Runs of non-zero blocks are written with one call.
        let mut i = 0;
        while i < n {
            let end = (i + BLOCK).min(n);
            if is_zero(&buf[i..end]) {
                i = end;
                continue;
            }
            let mut j = end;
            while j < n {
                let e = (j + BLOCK).min(n);
                if is_zero(&buf[j..e]) {
                    break;
                }
                j = e;
            }
            let at = pos + i as u64;
            if cursor != at {
                dst.seek(SeekFrom::Start(at))?;
            }
            dst.write_all(&buf[i..j])?;
            cursor = pos + j as u64;
            i = j;
        }
        pos += n as u64;
        if n < buf.len() {
            break;
        }
    }
    dst.set_len(pos)?;
    Ok(pos)
}

/// Reads until `buf` is full or `src` ends; returns the bytes read.
fn fill(src: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match src.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Whether a block (at most [`BLOCK`] bytes) is all zero: compared with a zero block, which is
/// one `memcmp` (fast in debug builds too, where the tests decompress the corpus).
fn is_zero(b: &[u8]) -> bool {
    static ZEROS: [u8; BLOCK] = [0; BLOCK];
    b == &ZEROS[..b.len()]
}

/// The bytes `meta`'s file occupies on disk (its allocated blocks where the platform says,
/// else its length).
pub fn disk_usage(meta: &std::fs::Metadata) -> u64 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        meta.blocks().saturating_mul(512)
    }
    #[cfg(not(unix))]
    {
        meta.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_exactly_and_leaves_zero_blocks_as_holes() {
        // 3 MiB + 100 bytes: data, a long zero run, data straddling a buffer boundary, a zero
        // tail shorter than a block.
        let mut data = vec![0u8; (3 << 20) + 100];
        data[..5000]
            .iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = (i % 251) as u8 + 1);
        data[(1 << 20) - 10..(1 << 20) + 10].fill(7);
        data[(2 << 20) + 4096 * 3 + 1] = 9;
        let dir = std::env::temp_dir().join(format!("dumpreader-sparse-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("out");
        let mut f = std::fs::File::create(&p).unwrap();
        let n = copy_sparse(&data[..], &mut f).unwrap();
        drop(f);
        assert_eq!(n, data.len() as u64);
        assert_eq!(std::fs::read(&p).unwrap(), data);
        let used = disk_usage(&std::fs::metadata(&p).unwrap());
        let _ = std::fs::remove_dir_all(&dir);
        // Written: 2 blocks at the start, 2 around the 1 MiB mark, 1 after 2 MiB. File systems
        // without holes store it whole; tmpfs and ext4 store far less.
        if used < data.len() as u64 {
            assert!(used <= 64 * 4096, "{used} bytes on disk");
        }
    }

    #[test]
    fn an_all_zero_source_is_one_hole_of_its_length() {
        let data = vec![0u8; 10_000];
        let dir = std::env::temp_dir().join(format!("dumpreader-sparse0-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("out");
        let mut f = std::fs::File::create(&p).unwrap();
        assert_eq!(copy_sparse(&data[..], &mut f).unwrap(), 10_000);
        drop(f);
        assert_eq!(std::fs::read(&p).unwrap(), data);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
