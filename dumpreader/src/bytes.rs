//! Little-endian field access that never panics (out-of-range fields read as 0; callers
//! check lengths first).

#[inline]
pub(crate) fn le_u16(b: &[u8], off: usize) -> u16 {
    off.checked_add(2)
        .and_then(|e| b.get(off..e))
        .map(|s| u16::from_le_bytes([s[0], s[1]]))
        .unwrap_or(0)
}

#[inline]
pub(crate) fn le_u32(b: &[u8], off: usize) -> u32 {
    off.checked_add(4)
        .and_then(|e| b.get(off..e))
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .unwrap_or(0)
}

#[inline]
pub(crate) fn le_u64(b: &[u8], off: usize) -> u64 {
    off.checked_add(8)
        .and_then(|e| b.get(off..e))
        .map(|s| u64::from_le_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]]))
        .unwrap_or(0)
}
