//! One native frame unwound with DWARF CFI (`.eh_frame`, found through `.eh_frame_hdr`): what a
//! lazily captured HelperMethodFrame needs to reach its managed caller on Linux (the runtime's
//! own LazyMachState::unwindLazyState unwinds the FCALL's frame the same way, with
//! PAL_VirtualUnwind).

use super::unwind::{Regs, RSP};
use dumpreader::Memory;
use gimli::{
    BaseAddresses, CfaRule, EhFrame, EhFrameHdr, LittleEndian, RegisterRule, UnwindContext,
    UnwindSection,
};

/// Largest `.eh_frame` read (libcoreclr's is about 1 MB).
const MAX_EH_FRAME: usize = 32 << 20;

/// A module's `.eh_frame_hdr` and `.eh_frame`, read from the dump.
pub struct EhFrameInfo {
    /// The module's extent.
    pub start: u64,
    /// Its end.
    pub end: u64,
    hdr_addr: u64,
    hdr: Vec<u8>,
    eh_addr: u64,
    eh: Vec<u8>,
}

/// DWARF register number → Windows unwind number (rax rdx rcx rbx rsi rdi rbp rsp r8-r15).
const DWARF_TO_WIN: [usize; 16] = [0, 2, 1, 3, 6, 7, 5, 4, 8, 9, 10, 11, 12, 13, 14, 15];

impl EhFrameInfo {
    /// Reads the tables (`hdr` = `.eh_frame_hdr` address and size, `eh` = `.eh_frame`).
    pub fn read<M: Memory + ?Sized>(
        mem: &M,
        start: u64,
        end: u64,
        hdr: (u64, u64),
        eh: u64,
    ) -> Result<EhFrameInfo, String> {
        let hdr_bytes = mem.read_bytes(hdr.0, hdr.1.min(MAX_EH_FRAME as u64) as usize);
        if (hdr_bytes.len() as u64) < hdr.1 {
            return Err(format!(".eh_frame_hdr at {:#x} is not in the dump", hdr.0));
        }
        let len = (end.saturating_sub(eh) as usize).min(MAX_EH_FRAME);
        let eh_bytes = mem.read_bytes(eh, len);
        if eh_bytes.is_empty() {
            return Err(format!(".eh_frame at {eh:#x} is not in the dump"));
        }
        Ok(EhFrameInfo {
            start,
            end,
            hdr_addr: hdr.0,
            hdr: hdr_bytes,
            eh_addr: eh,
            eh: eh_bytes,
        })
    }

    /// Unwinds one frame: `regs` (rip inside this module; `is_return` when rip is a return
    /// address) becomes the caller's.
    pub fn unwind<M: Memory + ?Sized>(
        &self,
        mem: &M,
        regs: &mut Regs,
        is_return: bool,
    ) -> Result<(), String> {
        let bases = BaseAddresses::default()
            .set_eh_frame_hdr(self.hdr_addr)
            .set_eh_frame(self.eh_addr);
        let hdr = EhFrameHdr::new(&self.hdr, LittleEndian)
            .parse(&bases, 8)
            .map_err(|e| format!(".eh_frame_hdr: {e}"))?;
        let table = hdr
            .table()
            .ok_or_else(|| ".eh_frame_hdr has no search table".to_string())?;
        let eh = EhFrame::new(&self.eh, LittleEndian);
        let mut ctx = UnwindContext::new();
        let pc = if is_return { regs.rip - 1 } else { regs.rip };
        let row = table
            .unwind_info_for_address(&eh, &bases, &mut ctx, pc, |s, b, o| s.cie_from_offset(b, o))
            .map_err(|e| format!("no CFI for {:#x}: {e}", regs.rip))?;
        let get = |dw: u16| -> u64 { regs.gpr[DWARF_TO_WIN[dw as usize]] };
        let cfa = match row.cfa() {
            CfaRule::RegisterAndOffset { register, offset } if register.0 < 16 => {
                get(register.0).wrapping_add(*offset as u64)
            }
            _ => return Err(format!("unsupported CFA rule at {:#x}", regs.rip)),
        };
        let rd = |a: u64| {
            mem.read_u64(a)
                .map_err(|_| format!("stack slot {a:#x} is not in the dump"))
        };
        let mut out = *regs;
        for dw in 0u16..16 {
            if dw == 7 {
                continue;
            }
            match row.register(gimli::Register(dw)) {
                Some(RegisterRule::Offset(o)) => {
                    out.gpr[DWARF_TO_WIN[dw as usize]] = rd(cfa.wrapping_add(o as u64))?;
                }
                Some(RegisterRule::ValOffset(o)) => {
                    out.gpr[DWARF_TO_WIN[dw as usize]] = cfa.wrapping_add(o as u64);
                }
                _ => {}
            }
        }
        out.rip = match row.register(gimli::Register(16)) {
            Some(RegisterRule::Offset(o)) => rd(cfa.wrapping_add(o as u64))?,
            _ => rd(cfa.wrapping_sub(8))?,
        };
        out.gpr[RSP] = cfa;
        *regs = out;
        Ok(())
    }
}
