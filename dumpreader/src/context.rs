//! The x64 Windows `CONTEXT` record (winnt.h, 1232 bytes, 16-byte aligned), decoded in one
//! place for both its readers: a minidump's thread list and dbgeng's
//! `IDebugAdvanced::GetThreadContext` (the WinDbg extension), into [`X64Context`]. Offsets are
//! those of the SDK's `struct _CONTEXT` for AMD64.

use crate::X64Context;

/// Size of the AMD64 `CONTEXT`.
pub const CONTEXT_SIZE: usize = 1232;

/// `CONTEXT_AMD64`.
pub const CONTEXT_AMD64: u32 = 0x0010_0000;
/// `CONTEXT_CONTROL` (SegSs, Rsp, SegCs, Rip, EFlags).
pub const CONTEXT_CONTROL: u32 = CONTEXT_AMD64 | 0x1;
/// `CONTEXT_INTEGER` (Rax..R15 except Rsp).
pub const CONTEXT_INTEGER: u32 = CONTEXT_AMD64 | 0x2;
/// `CONTEXT_SEGMENTS` (SegDs, SegEs, SegFs, SegGs).
pub const CONTEXT_SEGMENTS: u32 = CONTEXT_AMD64 | 0x4;
/// `CONTEXT_FLOATING_POINT` (FltSave: the FXSAVE area).
pub const CONTEXT_FLOATING_POINT: u32 = CONTEXT_AMD64 | 0x8;
/// Control, integer, segments and floating point.
pub const CONTEXT_ALL_WE_READ: u32 =
    CONTEXT_CONTROL | CONTEXT_INTEGER | CONTEXT_SEGMENTS | CONTEXT_FLOATING_POINT;

/// Offset of `ContextFlags`.
pub const OFF_CONTEXT_FLAGS: usize = 0x30;
/// Offset of `MxCsr`.
pub const OFF_MXCSR: usize = 0x34;
const OFF_SEG_CS: usize = 0x38;
const OFF_SEG_DS: usize = 0x3a;
const OFF_SEG_ES: usize = 0x3c;
const OFF_SEG_FS: usize = 0x3e;
const OFF_SEG_GS: usize = 0x40;
const OFF_SEG_SS: usize = 0x42;
const OFF_EFLAGS: usize = 0x44;
/// Offset of `Rax`; Rcx, Rdx, Rbx, Rsp, Rbp, Rsi, Rdi, R8..R15, Rip follow, 8 bytes each.
const OFF_RAX: usize = 0x78;
/// Offset of `FltSave` (`XMM_SAVE_AREA32`, the 512-byte FXSAVE image).
pub const OFF_FLTSAVE: usize = 0x100;

/// The general registers in CONTEXT order starting at `Rax`.
const GPR_ORDER: [&str; 17] = [
    "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13",
    "r14", "r15", "rip",
];

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap_or([0; 4]))
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or([0; 8]))
}

/// The bytes a record must have to hold the general registers ([`decode`]): through `Rip`.
/// The FXSAVE area that follows is read when the record holds it.
pub const CONTEXT_MIN_SIZE: usize = OFF_FLTSAVE;

/// Rax..R15 (in CONTEXT order, which is the Windows unwind numbering) and Rip of a `CONTEXT`
/// record, whatever its `ContextFlags` say: what the runtime copies out of a CONTEXT it saved
/// in a Frame (`FaultingExceptionFrame::UpdateRegDisplay` copies all of it). `None` when
/// `bytes` is shorter than [`CONTEXT_MIN_SIZE`].
pub fn integer_registers(bytes: &[u8]) -> Option<([u64; 16], u64)> {
    if bytes.len() < CONTEXT_MIN_SIZE {
        return None;
    }
    let mut gpr = [0u64; 16];
    for (i, g) in gpr.iter_mut().enumerate() {
        *g = u64_at(bytes, OFF_RAX + 8 * i);
    }
    Some((gpr, u64_at(bytes, OFF_RAX + 8 * 16)))
}

/// Decodes a `CONTEXT` record. `None` when `bytes` is shorter than [`CONTEXT_MIN_SIZE`].
/// Registers whose `ContextFlags` group is absent read as 0; the FXSAVE area is kept only when
/// `CONTEXT_FLOATING_POINT` is set. `fs_base`, `gs_base` and `orig_rax` are not part of a
/// Windows CONTEXT and are left 0 (the caller sets `gs_base` from the TEB).
pub fn decode(bytes: &[u8]) -> Option<X64Context> {
    if bytes.len() < CONTEXT_MIN_SIZE {
        return None;
    }
    let flags = u32_at(bytes, OFF_CONTEXT_FLAGS);
    let has = |f: u32| flags & f == f;
    let mut c = X64Context::default();
    let gpr = |i: usize| u64_at(bytes, OFF_RAX + 8 * i);
    if has(CONTEXT_INTEGER) {
        c.rax = gpr(0);
        c.rcx = gpr(1);
        c.rdx = gpr(2);
        c.rbx = gpr(3);
        c.rbp = gpr(5);
        c.rsi = gpr(6);
        c.rdi = gpr(7);
        c.r8 = gpr(8);
        c.r9 = gpr(9);
        c.r10 = gpr(10);
        c.r11 = gpr(11);
        c.r12 = gpr(12);
        c.r13 = gpr(13);
        c.r14 = gpr(14);
        c.r15 = gpr(15);
    }
    if has(CONTEXT_CONTROL) {
        c.rsp = gpr(4);
        c.rip = gpr(16);
        c.rflags = u64::from(u32_at(bytes, OFF_EFLAGS));
        c.cs = u16_at(bytes, OFF_SEG_CS);
        c.ss = u16_at(bytes, OFF_SEG_SS);
    }
    if has(CONTEXT_SEGMENTS) {
        c.ds = u16_at(bytes, OFF_SEG_DS);
        c.es = u16_at(bytes, OFF_SEG_ES);
        c.fs = u16_at(bytes, OFF_SEG_FS);
        c.gs = u16_at(bytes, OFF_SEG_GS);
    }
    if has(CONTEXT_FLOATING_POINT) {
        if let Some(area) = bytes.get(OFF_FLTSAVE..OFF_FLTSAVE + 512) {
            let mut fx = Box::new([0u8; 512]);
            fx.copy_from_slice(area);
            c.fxsave = Some(fx);
        }
    }
    Some(c)
}

/// Encodes a register set as a `CONTEXT` record (what a debugger engine hands out): control,
/// integer and segment registers, and the FXSAVE area when known. Used by the test host and the
/// unit tests; the inverse of [`decode`] for every register a CONTEXT holds.
pub fn encode(c: &X64Context) -> Vec<u8> {
    let mut b = vec![0u8; CONTEXT_SIZE];
    let mut flags = CONTEXT_CONTROL | CONTEXT_INTEGER | CONTEXT_SEGMENTS;
    let put16 = |b: &mut [u8], o: usize, v: u16| b[o..o + 2].copy_from_slice(&v.to_le_bytes());
    put16(&mut b, OFF_SEG_CS, c.cs);
    put16(&mut b, OFF_SEG_DS, c.ds);
    put16(&mut b, OFF_SEG_ES, c.es);
    put16(&mut b, OFF_SEG_FS, c.fs);
    put16(&mut b, OFF_SEG_GS, c.gs);
    put16(&mut b, OFF_SEG_SS, c.ss);
    b[OFF_EFLAGS..OFF_EFLAGS + 4].copy_from_slice(&(c.rflags as u32).to_le_bytes());
    for (i, r) in GPR_ORDER.iter().enumerate() {
        let v = c.get(r).unwrap_or(0);
        b[OFF_RAX + 8 * i..OFF_RAX + 8 * i + 8].copy_from_slice(&v.to_le_bytes());
    }
    if let Some(fx) = &c.fxsave {
        flags |= CONTEXT_FLOATING_POINT;
        b[OFF_FLTSAVE..OFF_FLTSAVE + 512].copy_from_slice(&fx[..]);
        b[OFF_MXCSR..OFF_MXCSR + 4].copy_from_slice(&fx[24..28]);
    }
    b[OFF_CONTEXT_FLAGS..OFF_CONTEXT_FLAGS + 4].copy_from_slice(&flags.to_le_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_offsets() {
        let mut c = X64Context {
            rax: 1,
            rbx: 2,
            rcx: 3,
            rdx: 4,
            rsi: 5,
            rdi: 6,
            rbp: 7,
            rsp: 8,
            r8: 9,
            r9: 10,
            r10: 11,
            r11: 12,
            r12: 13,
            r13: 14,
            r14: 15,
            r15: 16,
            rip: 0x7ff0_1234_5678,
            rflags: 0x246,
            cs: 0x33,
            ss: 0x2b,
            ds: 0x2b,
            es: 0x2b,
            fs: 0x53,
            gs: 0x2b,
            ..Default::default()
        };
        let mut fx = Box::new([0u8; 512]);
        fx[24..28].copy_from_slice(&0x1f80u32.to_le_bytes());
        fx[160] = 0xaa;
        c.fxsave = Some(fx);
        let b = encode(&c);
        // Pinned SDK offsets: Rsp at 0x98, Rip at 0xf8, EFlags at 0x44, Xmm0 at 0x1a0.
        assert_eq!(u64_at(&b, 0x98), 8);
        assert_eq!(u64_at(&b, 0xf8), 0x7ff0_1234_5678);
        assert_eq!(u32_at(&b, 0x44), 0x246);
        assert_eq!(b[0x1a0], 0xaa);
        assert_eq!(decode(&b).unwrap(), c);
        assert!(decode(&b[..100]).is_none());
        // The integer registers are read whatever ContextFlags say (a Frame's saved CONTEXT).
        let mut bare = b.clone();
        bare[OFF_CONTEXT_FLAGS..OFF_CONTEXT_FLAGS + 4].copy_from_slice(&0u32.to_le_bytes());
        let (gpr, rip) = integer_registers(&bare).unwrap();
        assert_eq!(gpr[4], 8);
        assert_eq!(rip, 0x7ff0_1234_5678);
        assert_eq!(decode(&bare).unwrap().rip, 0);
        assert!(integer_registers(&b[..CONTEXT_MIN_SIZE - 1]).is_none());
    }
}
