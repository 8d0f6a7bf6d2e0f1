//! Disassembly of a managed method (`u`), with call and jump targets named.
//!
//! The method's code range comes from the code manager ([`CodeInfo::code_end`]): JIT'd code
//! from the method's start (the nibble map) to the largest EndAddress of the RUNTIME_FUNCTIONs
//! of its RealCodeHeader (body and funclets, the GC info after them excluded); ReadyToRun code
//! the entry point's RUNTIME_FUNCTION. The bytes are the dump's (or, for a ReadyToRun image
//! the dump lacks pages of, the image file's, accepted only when its identity matches).
//!
//! Targets of `call`/`jmp` (direct, or through a `[rip+disp]` slot read from the dump) are
//! named: managed code by its method, a FixupPrecode/StubPrecode by its MethodDesc's method,
//! native code by `module!symbol+offset` (or `module+offset`). JIT'd code calls a method not
//! yet compiled through its FixupPrecode's data, `call [Target]` with the slot being
//! `FixupPrecodeData {Target, MethodDesc, PrecodeFixupThunk}` (precode.h): createdump does not
//! save the precode's code page, but the data page is in the dump, so such a slot whose
//! second word is a valid MethodDesc and whose third points into the runtime names the callee.

use crate::data::types::ReadTypes;
use crate::model::stack::{CodeInfo, CodeKind, StackWalker};
use capstone::arch::x86::{ArchMode, ArchSyntax, X86OperandType, X86Reg};
use capstone::arch::{ArchOperand, BuildsCapstone, BuildsCapstoneSyntax};
use capstone::{Capstone, RegId};
use dumpreader::Memory;
use serde::Serialize;

/// MethodDesc `m_wFlags` (UINT16 at +6; .NET 8 x64, both OSes, verified on the corpus: the
/// slots found this way hold the code the stack walk finds for the same MethodDesc).
const MD_FLAGS: u64 = 6;
/// `m_wFlags`: classification bits (mcIL 0, mcFCall 1: both `sizeof(MethodDesc)` = 8).
const MDC_CLASSIFICATION: u16 = 7;
/// `m_wFlags`: mdcHasNonVtableSlot (an 8-byte slot follows the MethodDesc).
const MDC_HAS_NON_VTABLE_SLOT: u16 = 0x08;
/// `m_wFlags`: mdcMethodImpl (a 16-byte MethodImpl follows).
const MDC_METHOD_IMPL: u16 = 0x10;
/// `m_wFlags`: mdcHasNativeCodeSlot (then the native code slot).
const MDC_HAS_NATIVE_CODE_SLOT: u16 = 0x20;

/// Largest method disassembled (1 MB).
pub const MAX_METHOD_BYTES: u64 = 1 << 20;

/// One instruction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Instruction {
    /// Its address.
    pub address: u64,
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// Mnemonic (`call`, `mov`...), Intel syntax.
    pub mnemonic: String,
    /// Operands as capstone prints them.
    pub operands: String,
    /// The target of a call or jump, when known (through a `[rip+disp]` slot: the slot's value).
    pub target: Option<u64>,
    /// The `[rip+disp]` slot an indirect call or jump goes through.
    pub slot: Option<u64>,
    /// What the target is: a managed method, a precode's method, or native code.
    pub target_name: Option<String>,
}

/// A disassembled managed method.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MethodCode {
    /// JIT'd or ReadyToRun.
    pub kind: CodeKind,
    /// The method's name, when known.
    pub method: Option<String>,
    /// Its MethodDesc (JIT'd code).
    pub method_desc: Option<u64>,
    /// First byte of its code.
    pub start: u64,
    /// End of its code (exclusive).
    pub end: u64,
    /// The instructions.
    pub instructions: Vec<Instruction>,
    /// Why the listing is shorter than the range, if it is.
    pub note: Option<String>,
}

/// Disassembly and code-address naming over a stack walker's code lookup.
pub trait Disassemble {
    /// Names a code address: `Some(name)` for managed code (with `+offset` inside a method), a
    /// precode of a method, or native code in a module.
    fn name_code_address(&self, target: u64) -> Option<String>;

    /// The method whose FixupPrecodeData holds the slot at `slot` (see the module comment).
    fn fixup_precode_slot_method(&self, slot: u64) -> Option<String>;

    /// The native code of the MethodDesc at `md`, from its native code slot (IL and FCall
    /// MethodDescs; the optional slots follow the 8-byte MethodDesc in the order non-vtable
    /// slot, MethodImpl, native code slot).
    fn method_desc_code(&self, md: u64) -> crate::Result<u64>;

    /// Disassembles the managed method containing `addr`, or the code of the MethodDesc at
    /// `addr`.
    fn disassemble(&self, addr: u64) -> crate::Result<MethodCode>;
}

impl<M: Memory> Disassemble for StackWalker<'_, M> {
    fn name_code_address(&self, target: u64) -> Option<String> {
        if let Ok(Some((ci, f))) = self.ip_to_method(target) {
            let name = f.method.unwrap_or_else(|| "<unknown method>".to_string());
            return Some(if target == ci.method_start {
                name
            } else {
                format!("{name}+{:#x}", target - ci.method_start)
            });
        }
        if let Ok((md, kind)) = crate::model::precode::precode_method_desc(self.rt, self, target) {
            let mut f = self.blank_frame();
            self.name_method_desc(md, &mut f);
            if let Some(n) = f.method {
                return Some(format!("{n} ({kind} {target:#x})"));
            }
        }
        if self.code.is_managed(self.rt, target) {
            return Some("<runtime stub>".to_string());
        }
        let native = self.native.as_ref()?;
        native
            .in_module(target)
            .then(|| native.name(target, false).to_string())
    }

    fn fixup_precode_slot_method(&self, slot: u64) -> Option<String> {
        let m = self.rt.memory();
        let md = m.read_u64(slot + 8).ok()?;
        let thunk = m.read_u64(slot + 16).ok()?;
        let (lo, hi) = (self.rt.info.base, self.rt.info.base + self.rt.info.size);
        if md == 0 || md & 7 != 0 || thunk < lo || thunk >= hi {
            return None;
        }
        let info = self.method_desc_info(md).ok()?;
        self.rt.method_table(info.method_table).ok()?;
        let mut f = self.blank_frame();
        self.name_method_desc(md, &mut f);
        f.method
            .map(|n| format!("{n} (FixupPrecode, MethodDesc {md:#x})"))
    }

    fn method_desc_code(&self, md: u64) -> crate::Result<u64> {
        let info = self.method_desc_info(md)?;
        self.rt
            .method_table(info.method_table)
            .map_err(|e| e.context(format!("{md:#x} is not a MethodDesc: its MethodTable")))?;
        let m = self.rt.memory();
        let flags = m
            .read_u16(md + MD_FLAGS)
            .map_err(|_| crate::ClrError::read("MethodDesc", md))?;
        let class = flags & MDC_CLASSIFICATION;
        if class > 1 {
            return Err(crate::ClrError::unsupported(
                "MethodDesc",
                Some(md),
                format!(
                    "of classification {class} (not IL or FCall): its code slot is not located"
                ),
            ));
        }
        if flags & MDC_HAS_NATIVE_CODE_SLOT == 0 {
            return Err(crate::ClrError::unsupported(
                "MethodDesc",
                Some(md),
                "it has no native code slot (its code is reached through its entry point, \
                 which is not read)",
            ));
        }
        let mut at = md + 8;
        if flags & MDC_HAS_NON_VTABLE_SLOT != 0 {
            at += 8;
        }
        if flags & MDC_METHOD_IMPL != 0 {
            at += 16;
        }
        let code = m.read_u64(at).map_err(|_| {
            crate::ClrError::read(format!("the native code slot of MethodDesc {md:#x}"), at)
        })? & !1;
        if code == 0 {
            return Err(crate::ClrError::not_found_at(
                "native code",
                md,
                "the MethodDesc has none (not compiled)",
            ));
        }
        Ok(code)
    }

    fn disassemble(&self, addr: u64) -> crate::Result<MethodCode> {
        let found = match self.ip_to_method(addr)? {
            Some(x) => x,
            None => {
                let code = self.method_desc_code(addr).map_err(|e| {
                    e.context(format!(
                        "{addr:#x} is not managed code (no RangeSection holds it), nor a \
                         MethodDesc with code"
                    ))
                })?;
                self.ip_to_method(code)?.ok_or_else(|| {
                    crate::ClrError::corrupt(
                        "MethodDesc",
                        addr,
                        format!("its code {code:#x} is not managed code"),
                    )
                })?
            }
        };
        let (ci, f): (CodeInfo, _) = found;
        let start = ci.method_start;
        let mut end = ci.code_end;
        let mut note = None;
        if end <= start {
            return Err(crate::ClrError::corrupt(
                "the code range of a method",
                start,
                format!("empty (end {end:#x})"),
            ));
        }
        if end - start > MAX_METHOD_BYTES {
            note = Some(format!(
                "only the first {MAX_METHOD_BYTES} bytes of {} are shown",
                end - start
            ));
            end = start + MAX_METHOD_BYTES;
        }
        let m = self.rt.memory();
        let um = self.code.memory(m);
        let bytes = um.read_bytes(start, (end - start) as usize);
        if (bytes.len() as u64) < end - start && note.is_none() {
            note = Some(format!(
                "the code from {:#x} to {end:#x} is not in the dump",
                start + bytes.len() as u64
            ));
        }
        let cs = Capstone::new()
            .x86()
            .mode(ArchMode::Mode64)
            .syntax(ArchSyntax::Intel)
            .detail(true)
            .build()
            .map_err(|e| {
                crate::ClrError::unsupported("disassembly", Some(start), format!("capstone: {e}"))
            })?;
        let insns = cs.disasm_all(&bytes, start).map_err(|e| {
            crate::ClrError::unsupported("disassembly", Some(start), format!("capstone: {e}"))
        })?;
        let mut out = Vec::new();
        for i in insns.iter() {
            let mnemonic = i.mnemonic().unwrap_or("").to_string();
            let mut ins = Instruction {
                address: i.address(),
                bytes: i.bytes().to_vec(),
                mnemonic,
                operands: i.op_str().unwrap_or("").to_string(),
                target: None,
                slot: None,
                target_name: None,
            };
            let branch = ins.mnemonic == "call" || ins.mnemonic.starts_with('j');
            if branch {
                if let Ok(d) = cs.insn_detail(i) {
                    let ops = d.arch_detail().operands();
                    if let Some(ArchOperand::X86Operand(op)) = ops.first() {
                        match op.op_type {
                            X86OperandType::Imm(t) => ins.target = Some(t as u64),
                            X86OperandType::Mem(mem) if mem.index().0 == 0 => {
                                // `[rip+disp]`, or an absolute `[disp32]` (code below 2 GB).
                                let slot = if mem.base() == RegId(X86Reg::X86_REG_RIP as u16) {
                                    Some(
                                        (i.address() + i.len() as u64)
                                            .wrapping_add_signed(mem.disp()),
                                    )
                                } else if mem.base().0 == 0 && mem.segment().0 == 0 {
                                    u64::try_from(mem.disp()).ok()
                                } else {
                                    None
                                };
                                if let Some(slot) = slot {
                                    // The slot is data the runtime writes (an R2R import
                                    // cell, a precode's target): the dump's value, never
                                    // an image file's.
                                    ins.slot = Some(slot);
                                    ins.target = m.read_u64(slot).ok();
                                }
                            }
                            _ => {}
                        }
                    }
                }
                // Jumps inside the method need no name.
                if let Some(t) = ins.target {
                    if ins.mnemonic == "call" || t < start || t >= end {
                        let managed = matches!(self.ip_to_method(t), Ok(Some(_)));
                        ins.target_name = match ins.slot {
                            Some(slot) if !managed => self
                                .fixup_precode_slot_method(slot)
                                .or_else(|| self.name_code_address(t)),
                            _ => self.name_code_address(t),
                        };
                    }
                }
            }
            out.push(ins);
        }
        let decoded: u64 = out.iter().map(|i| i.bytes.len() as u64).sum();
        if decoded < bytes.len() as u64 && note.is_none() {
            note = Some(format!(
                "capstone stopped at {:#x} (an undecodable byte)",
                start + decoded
            ));
        }
        Ok(MethodCode {
            kind: ci.kind,
            method: f.method.clone(),
            method_desc: f.method_desc,
            start,
            end,
            instructions: out,
            note,
        })
    }
}
