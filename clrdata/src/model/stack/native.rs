//! Native frames: unwinding with DWARF CFI (ELF `.eh_frame`, found through `.eh_frame_hdr`) or
//! the PE exception directory (`.pdata` RUNTIME_FUNCTIONs with x64 UNWIND_INFO, decoded by
//! [`super::unwind`]), and naming code addresses from ELF symbols and PE exports.
//!
//! Used by the mixed native+managed walk (`stack`) and by a lazily captured
//! HelperMethodFrame, which reaches its managed caller by unwinding the FCALL's native frames
//! as the runtime's own LazyMachState::unwindLazyState does (PAL_VirtualUnwind on Linux,
//! RtlVirtualUnwind on Windows).

use super::unwind::{unwind_frame, Regs, RuntimeFunction, RSP};
use dumpreader::{ImageFormat, Memory, ModuleImage, Target};
use gimli::{
    BaseAddresses, CfaRule, EhFrame, EhFrameHdr, LittleEndian, RegisterRule, UnwindContext,
    UnwindSection,
};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

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
    ) -> crate::Result<EhFrameInfo> {
        let hdr_bytes = mem.read_bytes(hdr.0, hdr.1.min(MAX_EH_FRAME as u64) as usize);
        if (hdr_bytes.len() as u64) < hdr.1 {
            return Err(crate::ClrError::read(".eh_frame_hdr", hdr.0));
        }
        let len = (end.saturating_sub(eh) as usize).min(MAX_EH_FRAME);
        let eh_bytes = mem.read_bytes(eh, len);
        if eh_bytes.is_empty() {
            return Err(crate::ClrError::read(".eh_frame", eh));
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
    ) -> crate::Result<()> {
        let bases = BaseAddresses::default()
            .set_eh_frame_hdr(self.hdr_addr)
            .set_eh_frame(self.eh_addr);
        let hdr = EhFrameHdr::new(&self.hdr, LittleEndian)
            .parse(&bases, 8)
            .map_err(|e| crate::ClrError::corrupt(".eh_frame_hdr", self.hdr_addr, e.to_string()))?;
        let table = hdr.table().ok_or_else(|| {
            crate::ClrError::unsupported(
                ".eh_frame_hdr",
                Some(self.hdr_addr),
                "it has no search table",
            )
        })?;
        let eh = EhFrame::new(&self.eh, LittleEndian);
        let mut ctx = UnwindContext::new();
        let pc = if is_return {
            regs.rip.wrapping_sub(1)
        } else {
            regs.rip
        };
        let row = table
            .unwind_info_for_address(&eh, &bases, &mut ctx, pc, |s, b, o| s.cie_from_offset(b, o))
            .map_err(|e| crate::ClrError::unwind(regs.rip, format!("no CFI: {e}")))?;
        let get = |dw: u16| -> u64 { regs.gpr[DWARF_TO_WIN[dw as usize]] };
        let cfa = match row.cfa() {
            CfaRule::RegisterAndOffset { register, offset } if register.0 < 16 => {
                get(register.0).wrapping_add(*offset as u64)
            }
            _ => return Err(crate::ClrError::unwind(regs.rip, "unsupported CFA rule")),
        };
        let rd = |a: u64| {
            mem.read_u64(a)
                .map_err(|_| crate::ClrError::read("stack slot", a))
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
            // The thread's first frame (clone's, _start's): no return address.
            Some(RegisterRule::Undefined) => 0,
            _ => rd(cfa.wrapping_sub(8))?,
        };
        out.gpr[RSP] = cfa;
        *regs = out;
        Ok(())
    }
}

// ------------------------------------------------------------------------------------------
// Native modules: unwind tables (ELF `.eh_frame`, PE `.pdata`) and symbol names

/// Bound on a `.pdata` table's entries (ntdll has about 5,000; coreclr.dll 15,000).
const MAX_PDATA: u32 = 1 << 20;

/// A PE image's exception directory (`.pdata`): RUNTIME_FUNCTIONs sorted by address.
pub struct PdataTable {
    base: u64,
    functions: Vec<(u32, u32, u32)>,
}

impl PdataTable {
    /// Reads the table at `pdata` (address, size in bytes) of the image at `base`.
    pub fn read<M: Memory + ?Sized>(
        mem: &M,
        base: u64,
        pdata: (u64, u32),
    ) -> crate::Result<PdataTable> {
        let n = (pdata.1 / 12).min(MAX_PDATA) as usize;
        let b = mem.read_bytes(pdata.0, n * 12);
        if b.len() < n * 12 {
            return Err(crate::ClrError::read(
                format!(".pdata ({} bytes)", pdata.1),
                pdata.0,
            ));
        }
        let w = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
        let mut functions: Vec<(u32, u32, u32)> = (0..n)
            .map(|i| (w(12 * i), w(12 * i + 4), w(12 * i + 8)))
            .filter(|f| f.0 < f.1)
            .collect();
        functions.sort_unstable();
        Ok(PdataTable { base, functions })
    }

    /// The RUNTIME_FUNCTION covering `addr`, with an indirect entry (UnwindData with bit 0
    /// set: the RVA of another RUNTIME_FUNCTION) resolved.
    pub fn lookup<M: Memory + ?Sized>(&self, mem: &M, addr: u64) -> Option<RuntimeFunction> {
        let rva = u32::try_from(addr.checked_sub(self.base)?).ok()?;
        let i = self
            .functions
            .partition_point(|f| f.0 <= rva)
            .checked_sub(1)?;
        let (begin, end, mut unwind) = self.functions[i];
        if rva >= end {
            return None;
        }
        if unwind & 1 != 0 {
            unwind = mem.read_u32(self.base + (unwind & !1) as u64 + 8).ok()?;
        }
        Some(RuntimeFunction {
            base: self.base,
            begin,
            end,
            unwind,
        })
    }
}

/// How a native module's frames are unwound.
enum UnwindTable {
    Cfi(EhFrameInfo),
    Pdata(PdataTable),
    /// Why there is none.
    Missing(String),
}

/// One native module: its name, image (symbols, exports) and unwind table.
struct NativeModule {
    base: u64,
    name: String,
    image: Option<Arc<ModuleImage>>,
    table: UnwindTable,
}

/// Where a native code address is: `module!symbol+offset`, or `module+offset`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NativeName {
    /// The module's file name (none: the address is in no module).
    pub module: Option<String>,
    /// The exported/dynamic symbol the address lies in, when known.
    pub symbol: Option<String>,
    /// Offset from the symbol, or from the module's base when there is no symbol.
    pub offset: u64,
}

impl std::fmt::Display for NativeName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.module, &self.symbol) {
            (Some(m), Some(s)) if self.offset == 0 => write!(f, "{m}!{s}"),
            (Some(m), Some(s)) => write!(f, "{m}!{s}+{:#x}", self.offset),
            (Some(m), None) => write!(f, "{m}+{:#x}", self.offset),
            (None, _) => write!(f, "{:#x}", self.offset),
        }
    }
}

/// The result of unwinding one native frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unwound {
    /// The caller's registers were computed.
    Caller,
    /// The unwind information marks this frame as the thread's first (no return address).
    Bottom,
}

/// Why an unwind that computed the caller's registers (`after`, from `before`) made no
/// progress: the stack pointer did not grow, or the return address is 0. A walk stops there
/// rather than loop. `None` when it moved on.
pub fn went_nowhere(before: &Regs, after: &Regs) -> Option<String> {
    (after.sp() <= before.sp() || after.rip == 0).then(|| {
        format!(
            "unwinding at ip {:#x} went nowhere (sp {:#x} -> {:#x}, ip {:#x})",
            before.rip,
            before.sp(),
            after.sp(),
            after.rip
        )
    })
}

/// The native modules of a target, read lazily (one per walker).
pub struct NativeModules<'t> {
    target: &'t dyn Target,
    cache: Mutex<HashMap<u64, Arc<NativeModule>>>,
}

impl<'t> NativeModules<'t> {
    /// Over `target`'s modules.
    pub fn new(target: &'t dyn Target) -> NativeModules<'t> {
        NativeModules {
            target,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The module holding `addr`: of those whose extent contains it, the one with the highest
    /// base (a mapping such as `/memfd:doublemapper` may span other modules). A linear scan:
    /// a minidump's module list is not sorted.
    fn module_info(&self, addr: u64) -> Option<&'t dumpreader::ModuleInfo> {
        self.target
            .modules()
            .iter()
            .filter(|m| m.contains(addr))
            .max_by_key(|m| m.base)
    }

    fn module(&self, addr: u64) -> Option<Arc<NativeModule>> {
        let m = self.module_info(addr)?;
        if let Some(n) = self
            .cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&m.base)
        {
            return Some(n.clone());
        }
        let t = self.target;
        let (image, table) = match t.module_image(m) {
            Ok(img) => {
                let table = match &img.format {
                    ImageFormat::Elf(e) => match (e.eh_frame_hdr, e.eh_frame) {
                        (Some(h), Some(eh)) => match EhFrameInfo::read(t, m.base, m.end, h, eh) {
                            Ok(c) => UnwindTable::Cfi(c),
                            Err(e) => UnwindTable::Missing(e.to_string()),
                        },
                        _ => UnwindTable::Missing("it has no .eh_frame_hdr".to_string()),
                    },
                    ImageFormat::Pe(p) => match p.pdata {
                        Some(pd) => match PdataTable::read(t, m.base, pd) {
                            Ok(p) => UnwindTable::Pdata(p),
                            Err(e) => UnwindTable::Missing(e.to_string()),
                        },
                        None => UnwindTable::Missing("it has no .pdata".to_string()),
                    },
                };
                (Some(img), table)
            }
            Err(e) => (None, UnwindTable::Missing(format!("its image: {e}"))),
        };
        let n = Arc::new(NativeModule {
            base: m.base,
            name: m.name().to_string(),
            image,
            table,
        });
        self.cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(m.base, n.clone());
        Some(n)
    }

    /// The module file name holding `addr`.
    pub fn module_name(&self, addr: u64) -> Option<String> {
        self.module_info(addr).map(|m| m.name().to_string())
    }

    /// Names `addr` (`is_return`: a return address, looked up at `addr - 1`) from the ELF
    /// symbols (.dynsym, and .symtab of an image read from its file) or the PE exports. A PE
    /// export names the address only when it lies in the same RUNTIME_FUNCTION (an export far
    /// below would name another function).
    pub fn name(&self, addr: u64, is_return: bool) -> NativeName {
        let look = if is_return {
            addr.wrapping_sub(1)
        } else {
            addr
        };
        let Some(m) = self.module(look) else {
            return NativeName {
                module: None,
                symbol: None,
                offset: addr,
            };
        };
        let mut out = NativeName {
            module: Some(m.name.clone()),
            symbol: None,
            offset: addr - m.base,
        };
        if let Some(img) = &m.image {
            if let Some((sym, off)) = img.symbolize(look) {
                let same_function = match (&img.format, &m.table) {
                    (ImageFormat::Pe(_), UnwindTable::Pdata(p)) => {
                        match p.lookup(self.target, look) {
                            Some(rf) => off <= look - rf.start(),
                            None => true,
                        }
                    }
                    _ => true,
                };
                if same_function {
                    out.symbol = Some(sym.to_string());
                    out.offset = off + (addr - look);
                }
            }
        }
        out
    }

    /// Unwinds one native frame: `regs` (rip in a module; `is_return` when rip is a return
    /// address) becomes the caller's. The error says why not (no module, no table, no entry,
    /// a stack slot missing).
    pub fn unwind(&self, regs: &mut Regs, is_return: bool) -> crate::Result<Unwound> {
        let look = if is_return {
            regs.rip.wrapping_sub(1)
        } else {
            regs.rip
        };
        let m = self.module(look).ok_or_else(|| {
            crate::ClrError::unwind(regs.rip, "no unwind info: no module of the dump holds it")
        })?;
        match &m.table {
            UnwindTable::Cfi(c) => {
                c.unwind(self.target, regs, is_return)?;
                Ok(if regs.rip == 0 {
                    Unwound::Bottom
                } else {
                    Unwound::Caller
                })
            }
            UnwindTable::Pdata(p) => {
                match p.lookup(self.target, look) {
                    Some(rf) => unwind_frame(self.target, regs, rf)?,
                    None => {
                        // No RUNTIME_FUNCTION: a leaf function (the return address is at rsp).
                        let sp = regs.gpr[RSP];
                        regs.rip = self
                            .target
                            .read_u64(sp)
                            .map_err(|_| crate::ClrError::read("stack slot", sp))?;
                        regs.gpr[RSP] = sp + 8;
                    }
                }
                Ok(if regs.rip == 0 {
                    Unwound::Bottom
                } else {
                    Unwound::Caller
                })
            }
            UnwindTable::Missing(why) => Err(crate::ClrError::unwind(
                regs.rip,
                format!("no unwind info in {}: {why}", m.name),
            )),
        }
    }

    /// Whether `addr` lies in a module of the target.
    pub fn in_module(&self, addr: u64) -> bool {
        self.module_info(addr).is_some()
    }
}
