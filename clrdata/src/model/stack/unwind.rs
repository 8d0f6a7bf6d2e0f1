//! Virtual unwinding with the Windows x64 `UNWIND_INFO` format, which the runtime uses for JIT'd
//! and ReadyToRun code on every OS (and Windows for all native code, in `.pdata`).
//!
//! Follows `RtlVirtualUnwind` (as Wine and the runtime's own unwinder do) without epilog
//! detection: the frames walked are at call sites, never inside an epilog.

use dumpreader::Memory;

/// Windows x64 unwind register numbers: 0 rax, 1 rcx, 2 rdx, 3 rbx, 4 rsp, 5 rbp, 6 rsi,
/// 7 rdi, 8-15 r8-r15.
pub const RSP: usize = 4;
/// rbp's number.
pub const RBP: usize = 5;
/// The registers' names by Windows unwind number (the numbering of [`Regs::gpr`], of the GC
/// info's register slots and of the DAC's `SOSStackRefData::Register`).
pub const REG_NAMES: [&str; 16] = [
    "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13",
    "r14", "r15",
];

/// A register set being unwound: the 16 integer registers (Windows numbering) and rip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Regs {
    /// rax..r15 by Windows unwind number.
    pub gpr: [u64; 16],
    /// The instruction pointer.
    pub rip: u64,
}

impl Regs {
    /// rsp.
    pub fn sp(&self) -> u64 {
        self.gpr[RSP]
    }

    /// From a `CONTEXT` record the runtime saved in the target's memory (a Frame's): every
    /// integer register and rip, whatever its `ContextFlags` say (the layout is
    /// `dumpreader::context`'s).
    pub fn from_context_record(bytes: &[u8]) -> Option<Regs> {
        let (gpr, rip) = dumpreader::context::integer_registers(bytes)?;
        Some(Regs { gpr, rip })
    }

    /// From a dump thread's context.
    pub fn from_context(c: &dumpreader::X64Context) -> Regs {
        Regs {
            gpr: [
                c.rax, c.rcx, c.rdx, c.rbx, c.rsp, c.rbp, c.rsi, c.rdi, c.r8, c.r9, c.r10, c.r11,
                c.r12, c.r13, c.r14, c.r15,
            ],
            rip: c.rip,
        }
    }
}

/// One `RUNTIME_FUNCTION`, with the base its RVAs are relative to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct RuntimeFunction {
    /// The base of the RVAs (image base, or the code heap's module base).
    pub base: u64,
    /// BeginAddress.
    pub begin: u32,
    /// EndAddress.
    pub end: u32,
    /// UnwindData (RVA of the UNWIND_INFO).
    pub unwind: u32,
}

impl RuntimeFunction {
    /// Absolute start address.
    pub fn start(&self) -> u64 {
        self.base + self.begin as u64
    }
}

const UWOP_PUSH_NONVOL: u8 = 0;
const UWOP_ALLOC_LARGE: u8 = 1;
const UWOP_ALLOC_SMALL: u8 = 2;
const UWOP_SET_FPREG: u8 = 3;
const UWOP_SAVE_NONVOL: u8 = 4;
const UWOP_SAVE_NONVOL_FAR: u8 = 5;
const UWOP_EPILOG: u8 = 6;
const UWOP_SPARE: u8 = 7;
const UWOP_SAVE_XMM128: u8 = 8;
const UWOP_SAVE_XMM128_FAR: u8 = 9;
const UWOP_PUSH_MACHFRAME: u8 = 10;
const UNW_FLAG_CHAININFO: u8 = 4;
/// Bound on chained unwind infos followed.
const MAX_CHAIN: usize = 32;

/// Unwinds one frame: `regs` (whose rip lies in `rf`) becomes the caller's registers.
/// The error says which read failed or what was malformed.
pub fn unwind_frame<M: Memory + ?Sized>(
    mem: &M,
    regs: &mut Regs,
    rf: RuntimeFunction,
) -> crate::Result<()> {
    let rd64 = |a: u64| {
        mem.read_u64(a)
            .map_err(|_| crate::ClrError::read("stack slot", a))
    };
    let mut ip_off = regs.rip.wrapping_sub(rf.start());
    let mut cur = rf;
    let mut machframe = false;
    for _ in 0..MAX_CHAIN {
        let ui = cur.base + cur.unwind as u64;
        let mut hdr = [0u8; 4];
        mem.read_exact(ui, &mut hdr)
            .map_err(|_| crate::ClrError::read("UNWIND_INFO", ui))?;
        let version = hdr[0] & 7;
        let flags = hdr[0] >> 3;
        if version != 1 && version != 2 {
            return Err(crate::ClrError::unsupported(
                "UNWIND_INFO",
                Some(ui),
                format!("version {version}"),
            ));
        }
        let count = hdr[2] as usize;
        let frame_reg = (hdr[3] & 0xF) as usize;
        let frame_off = (hdr[3] >> 4) as u64;
        let mut codes = vec![0u8; count * 2];
        mem.read_exact(ui + 4, &mut codes)
            .map_err(|_| crate::ClrError::read("unwind codes", ui + 4))?;
        let code = |i: usize| u16::from_le_bytes([codes[2 * i], codes[2 * i + 1]]);
        let mut i = 0;
        while i < count {
            let c = code(i);
            let off = (c & 0xFF) as u64;
            let op = ((c >> 8) & 0xF) as u8;
            let info = (c >> 12) as u8;
            let slots = match op {
                UWOP_ALLOC_LARGE => {
                    if info == 0 {
                        2
                    } else {
                        3
                    }
                }
                UWOP_SAVE_NONVOL | UWOP_SAVE_XMM128 | UWOP_EPILOG => 2,
                UWOP_SAVE_NONVOL_FAR | UWOP_SAVE_XMM128_FAR | UWOP_SPARE => 3,
                _ => 1,
            };
            if i + slots > count {
                return Err(crate::ClrError::corrupt(
                    "UNWIND_INFO",
                    ui,
                    format!("truncated unwind code {i}"),
                ));
            }
            // A prolog operation not yet executed is skipped (offset = end of the instruction).
            if op != UWOP_EPILOG && ip_off < off {
                i += slots;
                continue;
            }
            match op {
                UWOP_PUSH_NONVOL => {
                    regs.gpr[info as usize] = rd64(regs.gpr[RSP])?;
                    regs.gpr[RSP] += 8;
                }
                UWOP_ALLOC_LARGE => {
                    let size = if info == 0 {
                        code(i + 1) as u64 * 8
                    } else {
                        code(i + 1) as u64 | (code(i + 2) as u64) << 16
                    };
                    regs.gpr[RSP] += size;
                }
                UWOP_ALLOC_SMALL => regs.gpr[RSP] += info as u64 * 8 + 8,
                UWOP_SET_FPREG => {
                    regs.gpr[RSP] = regs.gpr[frame_reg].wrapping_sub(frame_off * 16);
                }
                UWOP_SAVE_NONVOL => {
                    let a = regs.gpr[RSP] + code(i + 1) as u64 * 8;
                    regs.gpr[info as usize] = rd64(a)?;
                }
                UWOP_SAVE_NONVOL_FAR => {
                    let a = regs.gpr[RSP] + (code(i + 1) as u64 | (code(i + 2) as u64) << 16);
                    regs.gpr[info as usize] = rd64(a)?;
                }
                UWOP_SAVE_XMM128 | UWOP_SAVE_XMM128_FAR | UWOP_EPILOG | UWOP_SPARE => {}
                UWOP_PUSH_MACHFRAME => {
                    let base = regs.gpr[RSP] + if info != 0 { 8 } else { 0 };
                    regs.rip = rd64(base)?;
                    regs.gpr[RSP] = rd64(base + 24)?;
                    machframe = true;
                }
                _ => {
                    return Err(crate::ClrError::corrupt(
                        "UNWIND_INFO",
                        ui,
                        format!("unknown unwind op {op}"),
                    ))
                }
            }
            i += slots;
        }
        if flags & UNW_FLAG_CHAININFO == 0 {
            break;
        }
        let chained = ui + 4 + (count.div_ceil(2) * 4) as u64;
        let mut b = [0u8; 12];
        mem.read_exact(chained, &mut b)
            .map_err(|_| crate::ClrError::read("chained RUNTIME_FUNCTION", chained))?;
        cur = RuntimeFunction {
            base: cur.base,
            begin: u32::from_le_bytes(b[0..4].try_into().unwrap()),
            end: u32::from_le_bytes(b[4..8].try_into().unwrap()),
            unwind: u32::from_le_bytes(b[8..12].try_into().unwrap()),
        };
        // The chained (parent) prolog has fully executed.
        ip_off = u64::MAX;
    }
    if !machframe {
        let sp = regs.gpr[RSP];
        regs.rip = rd64(sp)?;
        regs.gpr[RSP] = sp + 8;
    }
    Ok(())
}
