//! Method bodies (ECMA-335 II.25.4): the tiny or fat header, the IL instructions and the
//! exception-handling sections; and the names SOS's `dumpil` gives an instruction's token
//! (its ILDASM-style printer, `sildasm.cpp` of dotnet/diagnostics).
//!
//! Every read is checked against the bytes given; an opcode that is not one of ECMA-335's ends
//! the decoding with an error naming it and its offset.

use super::reader::{read_compressed_u32, Metadata, Token};
use super::tables::TableId;

/// Largest method body read (the fat header's code size is a u32; real bodies are far smaller).
pub const MAX_IL_BYTES: u32 = 16 << 20;

/// Why a method body does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IlError {
    /// The bytes end before what the header (or an instruction) says follows.
    #[error("the method body ends at byte {available} where {needed} bytes are needed ({what})")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Bytes needed from the body's start.
        needed: usize,
        /// Bytes there are.
        available: usize,
    },
    /// The header's first byte is neither a tiny nor a fat header.
    #[error("method header byte {0:#04x} is neither a tiny (..10) nor a fat (..11) header")]
    BadHeader(u8),
    /// The body is larger than [`MAX_IL_BYTES`].
    #[error("code size {0:#x} is larger than {MAX_IL_BYTES:#x} bytes")]
    TooLarge(u32),
    /// An extra data section is not an exception-handling table.
    #[error("extra data section kind {kind:#04x} at body offset {offset:#x} is not an EH table")]
    BadSection {
        /// The section's kind byte.
        kind: u8,
        /// Its offset in the body.
        offset: usize,
    },
    /// A byte that is not an opcode.
    #[error("IL offset {offset:#06x}: {code:#x} is not an opcode")]
    BadOpcode {
        /// Its IL offset.
        offset: u32,
        /// The byte (0xfexx for two-byte opcodes).
        code: u16,
    },
}

/// A method header (II.25.4.2/3).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MethodHeader {
    /// A fat header (else tiny).
    pub fat: bool,
    /// The header's size in bytes (1, or 4 × the fat header's size field).
    pub header_size: u32,
    /// Flags (fat: the 12 bits; tiny: the 2 format bits).
    pub flags: u16,
    /// MaxStack (8 for a tiny header).
    pub max_stack: u16,
    /// CodeSize.
    pub code_size: u32,
    /// LocalVarSigTok (0: none).
    pub local_sig: u32,
    /// The body's whole size: header, code and extra data sections.
    pub total_size: u32,
}

const CORILMETHOD_TINY: u8 = 0x2;
const CORILMETHOD_FAT: u8 = 0x3;
const CORILMETHOD_MORE_SECTS: u16 = 0x8;
const SECT_EH_TABLE: u8 = 0x1;
const SECT_FAT_FORMAT: u8 = 0x40;
const SECT_MORE_SECTS: u8 = 0x80;

/// EH clause flags (II.25.4.6).
pub const EH_CLAUSE_EXCEPTION: u32 = 0;
/// A filter clause.
pub const EH_CLAUSE_FILTER: u32 = 1;
/// A finally clause.
pub const EH_CLAUSE_FINALLY: u32 = 2;
/// A fault clause.
pub const EH_CLAUSE_FAULT: u32 = 4;

/// One exception-handling clause of a method body.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EhClause {
    /// Flags ([`EH_CLAUSE_FINALLY`], ...).
    pub flags: u32,
    pub try_offset: u32,
    pub try_length: u32,
    pub handler_offset: u32,
    pub handler_length: u32,
    /// The catch type token, or the filter's offset.
    pub class_token_or_filter: u32,
}

/// A decoded method body.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MethodBody {
    pub header: MethodHeader,
    /// The IL code bytes.
    #[serde(skip)]
    pub code: Vec<u8>,
    /// The exception-handling clauses, in table order.
    pub eh: Vec<EhClause>,
}

fn need(b: &[u8], end: usize, what: &'static str) -> Result<(), IlError> {
    if b.len() < end {
        Err(IlError::Truncated {
            what,
            needed: end,
            available: b.len(),
        })
    } else {
        Ok(())
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The size of the method body starting at `b` (header, code and sections), reading only
/// what is needed: `Err(Truncated)` says how many bytes are needed to know more, so a caller
/// reading from a dump can read that many and ask again.
pub fn body_size(b: &[u8]) -> Result<u32, IlError> {
    Ok(parse_header(b)?.total_size)
}

fn parse_header(b: &[u8]) -> Result<MethodHeader, IlError> {
    need(b, 1, "the method header")?;
    match b[0] & 0x3 {
        CORILMETHOD_TINY => {
            let code_size = (b[0] >> 2) as u32;
            Ok(MethodHeader {
                fat: false,
                header_size: 1,
                flags: (b[0] & 0x3) as u16,
                max_stack: 8,
                code_size,
                local_sig: 0,
                total_size: 1 + code_size,
            })
        }
        CORILMETHOD_FAT => {
            need(b, 12, "the fat method header")?;
            let fs = u16_at(b, 0);
            let flags = fs & 0xfff;
            let header_size = ((fs >> 12) as u32) * 4;
            if header_size < 12 {
                return Err(IlError::BadHeader(b[0]));
            }
            let code_size = u32_at(b, 4);
            if code_size > MAX_IL_BYTES {
                return Err(IlError::TooLarge(code_size));
            }
            let mut total = header_size as usize + code_size as usize;
            if flags & CORILMETHOD_MORE_SECTS != 0 {
                loop {
                    let at = (total + 3) & !3;
                    need(b, at + 4, "an extra data section's header")?;
                    let kind = b[at];
                    let size = if kind & SECT_FAT_FORMAT != 0 {
                        (u32_at(b, at) >> 8) as usize
                    } else {
                        b[at + 1] as usize
                    };
                    if kind & SECT_EH_TABLE == 0 || size < 4 {
                        return Err(IlError::BadSection { kind, offset: at });
                    }
                    total = at + size;
                    if kind & SECT_MORE_SECTS == 0 {
                        break;
                    }
                    if total > MAX_IL_BYTES as usize {
                        return Err(IlError::TooLarge(total as u32));
                    }
                }
            }
            Ok(MethodHeader {
                fat: true,
                header_size,
                flags,
                max_stack: u16_at(b, 2),
                code_size,
                local_sig: u32_at(b, 8),
                total_size: total as u32,
            })
        }
        _ => Err(IlError::BadHeader(b[0])),
    }
}

/// Decodes the method body at the start of `b` (at least [`body_size`] bytes).
pub fn parse_body(b: &[u8]) -> Result<MethodBody, IlError> {
    let header = parse_header(b)?;
    need(b, header.total_size as usize, "the method body")?;
    let start = header.header_size as usize;
    let code = b[start..start + header.code_size as usize].to_vec();
    let mut eh = Vec::new();
    if header.fat && header.flags & CORILMETHOD_MORE_SECTS != 0 {
        let mut at = start + header.code_size as usize;
        loop {
            at = (at + 3) & !3;
            let kind = b[at];
            let fat = kind & SECT_FAT_FORMAT != 0;
            let size = if fat {
                (u32_at(b, at) >> 8) as usize
            } else {
                b[at + 1] as usize
            };
            let (n, each) = if fat {
                ((size - 4) / 24, 24)
            } else {
                ((size - 4) / 12, 12)
            };
            for i in 0..n {
                let c = at + 4 + i * each;
                eh.push(if fat {
                    EhClause {
                        flags: u32_at(b, c),
                        try_offset: u32_at(b, c + 4),
                        try_length: u32_at(b, c + 8),
                        handler_offset: u32_at(b, c + 12),
                        handler_length: u32_at(b, c + 16),
                        class_token_or_filter: u32_at(b, c + 20),
                    }
                } else {
                    EhClause {
                        flags: u16_at(b, c) as u32,
                        try_offset: u16_at(b, c + 2) as u32,
                        try_length: b[c + 4] as u32,
                        handler_offset: u16_at(b, c + 5) as u32,
                        handler_length: b[c + 7] as u32,
                        class_token_or_filter: u32_at(b, c + 8),
                    }
                });
            }
            at += size;
            if kind & SECT_MORE_SECTS == 0 {
                break;
            }
        }
    }
    Ok(MethodBody { header, code, eh })
}

/// The operand an opcode takes (opcode.def's `Inline*` kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OperandKind {
    None,
    ShortVar,
    Var,
    ShortI,
    I,
    I8,
    ShortR,
    R,
    ShortBrTarget,
    BrTarget,
    Method,
    Field,
    Type,
    Tok,
    Sig,
    String,
    Switch,
}

use OperandKind as K;

/// One-byte opcodes 0x00..=0xe0 (ECMA-335 III; opcode.def), `None` where no opcode is.
const ONE_BYTE: [Option<(&str, OperandKind)>; 0xe1] = {
    let mut t: [Option<(&str, OperandKind)>; 0xe1] = [None; 0xe1];
    macro_rules! op {
        ($c:expr, $n:expr, $k:expr) => {
            t[$c] = Some(($n, $k));
        };
    }
    op!(0x00, "nop", K::None);
    op!(0x01, "break", K::None);
    op!(0x02, "ldarg.0", K::None);
    op!(0x03, "ldarg.1", K::None);
    op!(0x04, "ldarg.2", K::None);
    op!(0x05, "ldarg.3", K::None);
    op!(0x06, "ldloc.0", K::None);
    op!(0x07, "ldloc.1", K::None);
    op!(0x08, "ldloc.2", K::None);
    op!(0x09, "ldloc.3", K::None);
    op!(0x0a, "stloc.0", K::None);
    op!(0x0b, "stloc.1", K::None);
    op!(0x0c, "stloc.2", K::None);
    op!(0x0d, "stloc.3", K::None);
    op!(0x0e, "ldarg.s", K::ShortVar);
    op!(0x0f, "ldarga.s", K::ShortVar);
    op!(0x10, "starg.s", K::ShortVar);
    op!(0x11, "ldloc.s", K::ShortVar);
    op!(0x12, "ldloca.s", K::ShortVar);
    op!(0x13, "stloc.s", K::ShortVar);
    op!(0x14, "ldnull", K::None);
    op!(0x15, "ldc.i4.m1", K::None);
    op!(0x16, "ldc.i4.0", K::None);
    op!(0x17, "ldc.i4.1", K::None);
    op!(0x18, "ldc.i4.2", K::None);
    op!(0x19, "ldc.i4.3", K::None);
    op!(0x1a, "ldc.i4.4", K::None);
    op!(0x1b, "ldc.i4.5", K::None);
    op!(0x1c, "ldc.i4.6", K::None);
    op!(0x1d, "ldc.i4.7", K::None);
    op!(0x1e, "ldc.i4.8", K::None);
    op!(0x1f, "ldc.i4.s", K::ShortI);
    op!(0x20, "ldc.i4", K::I);
    op!(0x21, "ldc.i8", K::I8);
    op!(0x22, "ldc.r4", K::ShortR);
    op!(0x23, "ldc.r8", K::R);
    op!(0x25, "dup", K::None);
    op!(0x26, "pop", K::None);
    op!(0x27, "jmp", K::Method);
    op!(0x28, "call", K::Method);
    op!(0x29, "calli", K::Sig);
    op!(0x2a, "ret", K::None);
    op!(0x2b, "br.s", K::ShortBrTarget);
    op!(0x2c, "brfalse.s", K::ShortBrTarget);
    op!(0x2d, "brtrue.s", K::ShortBrTarget);
    op!(0x2e, "beq.s", K::ShortBrTarget);
    op!(0x2f, "bge.s", K::ShortBrTarget);
    op!(0x30, "bgt.s", K::ShortBrTarget);
    op!(0x31, "ble.s", K::ShortBrTarget);
    op!(0x32, "blt.s", K::ShortBrTarget);
    op!(0x33, "bne.un.s", K::ShortBrTarget);
    op!(0x34, "bge.un.s", K::ShortBrTarget);
    op!(0x35, "bgt.un.s", K::ShortBrTarget);
    op!(0x36, "ble.un.s", K::ShortBrTarget);
    op!(0x37, "blt.un.s", K::ShortBrTarget);
    op!(0x38, "br", K::BrTarget);
    op!(0x39, "brfalse", K::BrTarget);
    op!(0x3a, "brtrue", K::BrTarget);
    op!(0x3b, "beq", K::BrTarget);
    op!(0x3c, "bge", K::BrTarget);
    op!(0x3d, "bgt", K::BrTarget);
    op!(0x3e, "ble", K::BrTarget);
    op!(0x3f, "blt", K::BrTarget);
    op!(0x40, "bne.un", K::BrTarget);
    op!(0x41, "bge.un", K::BrTarget);
    op!(0x42, "bgt.un", K::BrTarget);
    op!(0x43, "ble.un", K::BrTarget);
    op!(0x44, "blt.un", K::BrTarget);
    op!(0x45, "switch", K::Switch);
    op!(0x46, "ldind.i1", K::None);
    op!(0x47, "ldind.u1", K::None);
    op!(0x48, "ldind.i2", K::None);
    op!(0x49, "ldind.u2", K::None);
    op!(0x4a, "ldind.i4", K::None);
    op!(0x4b, "ldind.u4", K::None);
    op!(0x4c, "ldind.i8", K::None);
    op!(0x4d, "ldind.i", K::None);
    op!(0x4e, "ldind.r4", K::None);
    op!(0x4f, "ldind.r8", K::None);
    op!(0x50, "ldind.ref", K::None);
    op!(0x51, "stind.ref", K::None);
    op!(0x52, "stind.i1", K::None);
    op!(0x53, "stind.i2", K::None);
    op!(0x54, "stind.i4", K::None);
    op!(0x55, "stind.i8", K::None);
    op!(0x56, "stind.r4", K::None);
    op!(0x57, "stind.r8", K::None);
    op!(0x58, "add", K::None);
    op!(0x59, "sub", K::None);
    op!(0x5a, "mul", K::None);
    op!(0x5b, "div", K::None);
    op!(0x5c, "div.un", K::None);
    op!(0x5d, "rem", K::None);
    op!(0x5e, "rem.un", K::None);
    op!(0x5f, "and", K::None);
    op!(0x60, "or", K::None);
    op!(0x61, "xor", K::None);
    op!(0x62, "shl", K::None);
    op!(0x63, "shr", K::None);
    op!(0x64, "shr.un", K::None);
    op!(0x65, "neg", K::None);
    op!(0x66, "not", K::None);
    op!(0x67, "conv.i1", K::None);
    op!(0x68, "conv.i2", K::None);
    op!(0x69, "conv.i4", K::None);
    op!(0x6a, "conv.i8", K::None);
    op!(0x6b, "conv.r4", K::None);
    op!(0x6c, "conv.r8", K::None);
    op!(0x6d, "conv.u4", K::None);
    op!(0x6e, "conv.u8", K::None);
    op!(0x6f, "callvirt", K::Method);
    op!(0x70, "cpobj", K::Type);
    op!(0x71, "ldobj", K::Type);
    op!(0x72, "ldstr", K::String);
    op!(0x73, "newobj", K::Method);
    op!(0x74, "castclass", K::Type);
    op!(0x75, "isinst", K::Type);
    op!(0x76, "conv.r.un", K::None);
    op!(0x79, "unbox", K::Type);
    op!(0x7a, "throw", K::None);
    op!(0x7b, "ldfld", K::Field);
    op!(0x7c, "ldflda", K::Field);
    op!(0x7d, "stfld", K::Field);
    op!(0x7e, "ldsfld", K::Field);
    op!(0x7f, "ldsflda", K::Field);
    op!(0x80, "stsfld", K::Field);
    op!(0x81, "stobj", K::Type);
    op!(0x82, "conv.ovf.i1.un", K::None);
    op!(0x83, "conv.ovf.i2.un", K::None);
    op!(0x84, "conv.ovf.i4.un", K::None);
    op!(0x85, "conv.ovf.i8.un", K::None);
    op!(0x86, "conv.ovf.u1.un", K::None);
    op!(0x87, "conv.ovf.u2.un", K::None);
    op!(0x88, "conv.ovf.u4.un", K::None);
    op!(0x89, "conv.ovf.u8.un", K::None);
    op!(0x8a, "conv.ovf.i.un", K::None);
    op!(0x8b, "conv.ovf.u.un", K::None);
    op!(0x8c, "box", K::Type);
    op!(0x8d, "newarr", K::Type);
    op!(0x8e, "ldlen", K::None);
    op!(0x8f, "ldelema", K::Type);
    op!(0x90, "ldelem.i1", K::None);
    op!(0x91, "ldelem.u1", K::None);
    op!(0x92, "ldelem.i2", K::None);
    op!(0x93, "ldelem.u2", K::None);
    op!(0x94, "ldelem.i4", K::None);
    op!(0x95, "ldelem.u4", K::None);
    op!(0x96, "ldelem.i8", K::None);
    op!(0x97, "ldelem.i", K::None);
    op!(0x98, "ldelem.r4", K::None);
    op!(0x99, "ldelem.r8", K::None);
    op!(0x9a, "ldelem.ref", K::None);
    op!(0x9b, "stelem.i", K::None);
    op!(0x9c, "stelem.i1", K::None);
    op!(0x9d, "stelem.i2", K::None);
    op!(0x9e, "stelem.i4", K::None);
    op!(0x9f, "stelem.i8", K::None);
    op!(0xa0, "stelem.r4", K::None);
    op!(0xa1, "stelem.r8", K::None);
    op!(0xa2, "stelem.ref", K::None);
    op!(0xa3, "ldelem", K::Type);
    op!(0xa4, "stelem", K::Type);
    op!(0xa5, "unbox.any", K::Type);
    op!(0xb3, "conv.ovf.i1", K::None);
    op!(0xb4, "conv.ovf.u1", K::None);
    op!(0xb5, "conv.ovf.i2", K::None);
    op!(0xb6, "conv.ovf.u2", K::None);
    op!(0xb7, "conv.ovf.i4", K::None);
    op!(0xb8, "conv.ovf.u4", K::None);
    op!(0xb9, "conv.ovf.i8", K::None);
    op!(0xba, "conv.ovf.u8", K::None);
    op!(0xc2, "refanyval", K::Type);
    op!(0xc3, "ckfinite", K::None);
    op!(0xc6, "mkrefany", K::Type);
    op!(0xd0, "ldtoken", K::Tok);
    op!(0xd1, "conv.u2", K::None);
    op!(0xd2, "conv.u1", K::None);
    op!(0xd3, "conv.i", K::None);
    op!(0xd4, "conv.ovf.i", K::None);
    op!(0xd5, "conv.ovf.u", K::None);
    op!(0xd6, "add.ovf", K::None);
    op!(0xd7, "add.ovf.un", K::None);
    op!(0xd8, "mul.ovf", K::None);
    op!(0xd9, "mul.ovf.un", K::None);
    op!(0xda, "sub.ovf", K::None);
    op!(0xdb, "sub.ovf.un", K::None);
    op!(0xdc, "endfinally", K::None);
    op!(0xdd, "leave", K::BrTarget);
    op!(0xde, "leave.s", K::ShortBrTarget);
    op!(0xdf, "stind.i", K::None);
    op!(0xe0, "conv.u", K::None);
    t
};

/// Two-byte opcodes 0xfe00..=0xfe1e.
const TWO_BYTE: [Option<(&str, OperandKind)>; 0x1f] = {
    let mut t: [Option<(&str, OperandKind)>; 0x1f] = [None; 0x1f];
    macro_rules! op {
        ($c:expr, $n:expr, $k:expr) => {
            t[$c] = Some(($n, $k));
        };
    }
    op!(0x00, "arglist", K::None);
    op!(0x01, "ceq", K::None);
    op!(0x02, "cgt", K::None);
    op!(0x03, "cgt.un", K::None);
    op!(0x04, "clt", K::None);
    op!(0x05, "clt.un", K::None);
    op!(0x06, "ldftn", K::Method);
    op!(0x07, "ldvirtftn", K::Method);
    op!(0x09, "ldarg", K::Var);
    op!(0x0a, "ldarga", K::Var);
    op!(0x0b, "starg", K::Var);
    op!(0x0c, "ldloc", K::Var);
    op!(0x0d, "ldloca", K::Var);
    op!(0x0e, "stloc", K::Var);
    op!(0x0f, "localloc", K::None);
    op!(0x11, "endfilter", K::None);
    op!(0x12, "unaligned.", K::ShortI);
    op!(0x13, "volatile.", K::None);
    op!(0x14, "tail.", K::None);
    op!(0x15, "initobj", K::Type);
    op!(0x16, "constrained.", K::Type);
    op!(0x17, "cpblk", K::None);
    op!(0x18, "initblk", K::None);
    op!(0x19, "no.", K::ShortI);
    op!(0x1a, "rethrow", K::None);
    op!(0x1c, "sizeof", K::Type);
    op!(0x1d, "refanytype", K::None);
    op!(0x1e, "readonly.", K::None);
    t
};

/// An instruction's operand, its value as the IL holds it (branch targets resolved to IL
/// offsets).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Operand {
    None,
    /// A local's or argument's index.
    Var(u16),
    /// An integer constant (ldc.i4.s's and no.'s / unaligned.'s byte sign-extended only for
    /// ldc.i4.s).
    Int(i64),
    /// A floating-point constant.
    Float(f64),
    /// A branch target (an IL offset; may lie outside the method when the IL is wrong).
    Target(i64),
    /// A metadata token.
    Token(u32),
    /// A switch's targets.
    Switch(Vec<i64>),
}

/// One IL instruction.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Instruction {
    /// Its IL offset.
    pub offset: u32,
    /// Its opcode (`0xfexx` for two-byte opcodes).
    pub opcode: u16,
    /// The opcode's name (`ldarg.0`, `constrained.`).
    pub name: &'static str,
    /// The operand's kind.
    pub kind: OperandKind,
    pub operand: Operand,
    /// The operand's raw bytes' first byte for one-byte operands (SOS prints it unsigned).
    #[serde(skip)]
    pub raw_byte: Option<u8>,
}

/// Decodes IL code into instructions; an unknown opcode or an operand cut off by the code's
/// end stops the decoding with an error (the instructions before it are returned with it).
pub fn decode_il(code: &[u8]) -> (Vec<Instruction>, Option<IlError>) {
    let mut out = Vec::new();
    let mut p = 0usize;
    let trunc = |end: usize| IlError::Truncated {
        what: "an instruction's operand",
        needed: end,
        available: code.len(),
    };
    while p < code.len() {
        let offset = p as u32;
        let (opcode, entry) = if code[p] == 0xfe {
            if p + 1 >= code.len() {
                return (out, Some(trunc(p + 2)));
            }
            let c = code[p + 1];
            p += 2;
            (
                0xfe00 | c as u16,
                TWO_BYTE.get(c as usize).copied().flatten(),
            )
        } else {
            let c = code[p];
            p += 1;
            (c as u16, ONE_BYTE.get(c as usize).copied().flatten())
        };
        let Some((name, kind)) = entry else {
            return (
                out,
                Some(IlError::BadOpcode {
                    offset,
                    code: opcode,
                }),
            );
        };
        let size = match kind {
            K::None => 0,
            K::ShortVar | K::ShortI | K::ShortBrTarget => 1,
            K::Var => 2,
            K::I
            | K::ShortR
            | K::BrTarget
            | K::Method
            | K::Field
            | K::Type
            | K::Tok
            | K::Sig
            | K::String
            | K::Switch => 4,
            K::I8 | K::R => 8,
        };
        if p + size > code.len() {
            return (out, Some(trunc(p + size)));
        }
        let o = &code[p..p + size];
        p += size;
        let mut raw_byte = None;
        let operand = match kind {
            K::None => Operand::None,
            K::ShortVar => Operand::Var(o[0] as u16),
            K::Var => Operand::Var(u16_at(o, 0)),
            K::ShortI => {
                raw_byte = Some(o[0]);
                Operand::Int(if opcode == 0x1f {
                    o[0] as i8 as i64
                } else {
                    o[0] as i64
                })
            }
            K::I => Operand::Int(u32_at(o, 0) as i32 as i64),
            K::I8 => Operand::Int(i64::from_le_bytes(o.try_into().unwrap_or([0; 8]))),
            K::ShortR => Operand::Float(f32::from_le_bytes([o[0], o[1], o[2], o[3]]) as f64),
            K::R => Operand::Float(f64::from_le_bytes(o.try_into().unwrap_or([0; 8]))),
            K::ShortBrTarget => {
                raw_byte = Some(o[0]);
                Operand::Target(p as i64 + o[0] as i8 as i64)
            }
            K::BrTarget => Operand::Target(p as i64 + u32_at(o, 0) as i32 as i64),
            K::Method | K::Field | K::Type | K::Tok | K::Sig | K::String => {
                Operand::Token(u32_at(o, 0))
            }
            K::Switch => {
                let n = u32_at(o, 0) as usize;
                let end = p.saturating_add(n.saturating_mul(4));
                if n > code.len() / 4 || end > code.len() {
                    return (out, Some(trunc(end)));
                }
                let deltas: Vec<i32> = (0..n).map(|i| u32_at(code, p + 4 * i) as i32).collect();
                p = end;
                Operand::Switch(deltas.iter().map(|&d| p as i64 + d as i64).collect())
            }
        };
        out.push(Instruction {
            offset,
            opcode,
            name,
            kind,
            operand,
            raw_byte,
        });
    }
    (out, None)
}

// ------------------------------------------------------------------------------------------
// SOS's token names (sildasm.cpp: DisassembleToken, PrettyPrintType, PrettyPrintClass with
// FormatILDasm).

/// The first `n` characters of `s` (SOS copies names into fixed buffers).
fn clip(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

fn full_name(namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        name.to_string()
    } else {
        format!("{namespace}.{name}")
    }
}

fn table_valid(md: &Metadata<'_>, t: Token) -> bool {
    match t.table() {
        Some(table) => t.rid() >= 1 && t.rid() <= md.row_count(table),
        None => false,
    }
}

/// A TypeDef's name as `GetTypeDefProps` gives it (namespace-qualified).
fn type_def_name(md: &Metadata<'_>, rid: u32) -> Option<String> {
    md.type_def(rid)
        .ok()
        .map(|r| full_name(r.namespace, r.name))
}

fn type_ref_name(md: &Metadata<'_>, rid: u32) -> Option<(Token, String)> {
    md.type_ref(rid)
        .ok()
        .map(|r| (r.resolution_scope, full_name(r.namespace, r.name)))
}

/// PrettyPrintClass (FormatILDasm): `[*]Ns.Outer/Inner`, `[System.Runtime]System.Object`.
fn pretty_class(md: &Metadata<'_>, tk: u32, out: &mut String, depth: u32) {
    if tk == 0 {
        // A null resolution scope: "somewhere here".
        out.push_str("[*]");
        return;
    }
    let t = Token(tk);
    if depth > 32 || !table_valid(md, t) {
        out.push_str(&format!(" [ERROR: INVALID TOKEN 0x{tk:08X}] "));
        return;
    }
    match t.table() {
        Some(TableId::TypeRef) | Some(TableId::TypeDef) => {
            let (encloser, name) = if t.table() == Some(TableId::TypeRef) {
                match type_ref_name(md, t.rid()) {
                    Some((scope, n)) => (scope.0, n),
                    None => {
                        out.push_str(&format!(" [ERROR: Invalid TypeRef record 0x{tk:08X}] "));
                        return;
                    }
                }
            } else {
                let Ok(r) = md.type_def(t.rid()) else {
                    out.push_str(&format!(" [ERROR: Invalid TypeDef record 0x{tk:08X}] "));
                    return;
                };
                let enc = if r.is_nested() {
                    match md.enclosing_class(t.rid()) {
                        Ok(Some(e)) => Token::new(TableId::TypeDef, e).0,
                        _ => TableId::TypeDef as u32 * 0x100_0000,
                    }
                } else {
                    0
                };
                (enc, full_name(r.namespace, r.name))
            };
            let name = if name.is_empty() {
                format!("${}${:X}", name_prefix(tk >> 24), tk & 0xff_ffff)
            } else {
                name
            };
            if encloser == 0 || encloser & 0xff_ffff != 0 {
                let et = encloser >> 24;
                if et == TableId::TypeRef as u32 || et == TableId::TypeDef as u32 {
                    pretty_class(md, encloser, out, depth + 1);
                    out.push('/');
                } else {
                    pretty_class(md, encloser, out, depth + 1);
                }
            }
            out.push_str(&name);
        }
        Some(TableId::AssemblyRef) => {
            if let Ok(r) = md.assembly_ref(t.rid()) {
                out.push('[');
                out.push_str(r.name);
                out.push(']');
            }
        }
        Some(TableId::Assembly) => {
            if let Ok(r) = md.assembly(t.rid()) {
                out.push('[');
                out.push_str(r.name);
                out.push(']');
            }
        }
        Some(TableId::ModuleRef) => {
            if let Ok(r) = md.module_ref(t.rid()) {
                out.push_str("[.module ");
                out.push_str(r.name);
                out.push(']');
            }
        }
        Some(TableId::TypeSpec) => match md.type_spec(t.rid()) {
            Ok(r) => {
                pretty_type(md, r.signature, 0, out, depth + 1);
            }
            Err(_) => out.push_str(&format!(" [ERROR: Invalid token 0x{tk:08X}] ")),
        },
        Some(TableId::Module) => {}
        _ => out.push_str(&format!(" [ERROR: INVALID TOKEN TYPE 0x{tk:08X}] ")),
    }
}

/// ILDASM's prefixes for nameless records (`$TD$5`).
fn name_prefix(table: u32) -> &'static str {
    const P: [&str; 41] = [
        "MO", "TR", "TD", "", "FD", "", "MD", "", "PA", "II", "MR", "", "CA", "", "PE", "", "",
        "SG", "", "", "EV", "", "", "PR", "", "", "MOR", "TS", "", "", "", "", "AS", "", "", "AR",
        "", "", "FL", "ET", "MAR",
    ];
    P.get(table as usize).copied().unwrap_or("")
}

fn sig_u32(sig: &[u8], p: &mut usize) -> u32 {
    match read_compressed_u32(sig, *p) {
        Some((v, n)) => {
            *p += n;
            v
        }
        None => {
            *p = sig.len() + 1;
            0
        }
    }
}

fn sig_i32(sig: &[u8], p: &mut usize) -> i32 {
    // II.23.2: a signed compressed integer is rotated left by one, its sign in bit 0.
    let start = *p;
    let Some((v, n)) = read_compressed_u32(sig, start) else {
        *p = sig.len() + 1;
        return 0;
    };
    *p += n;
    let mask = match n {
        1 => 0xffff_ffc0u32,
        2 => 0xffff_e000,
        _ => 0xf000_0000,
    };
    if v & 1 != 0 {
        ((v >> 1) | mask) as i32
    } else {
        (v >> 1) as i32
    }
}

fn sig_token(sig: &[u8], p: &mut usize) -> u32 {
    let v = sig_u32(sig, p);
    const TABLES: [u32; 4] = [0x0200_0000, 0x0100_0000, 0x1b00_0000, 0x7200_0000];
    (v >> 2) | TABLES[(v & 3) as usize]
}

/// PrettyPrintType (FormatILDasm) of the type at `sig[p]`; returns the position after it.
fn pretty_type(md: &Metadata<'_>, sig: &[u8], mut p: usize, out: &mut String, depth: u32) -> usize {
    let mut appendix = String::new();
    loop {
        let Some(&typ) = sig.get(p) else {
            return p + 1;
        };
        p += 1;
        let simple = match typ {
            0x01 => Some("void"),
            0x02 => Some("bool"),
            0x03 => Some("char"),
            0x04 => Some("int8"),
            0x05 => Some("uint8"),
            0x06 => Some("int16"),
            0x07 => Some("uint16"),
            0x08 => Some("int32"),
            0x09 => Some("uint32"),
            0x0a => Some("int64"),
            0x0b => Some("uint64"),
            0x0c => Some("float32"),
            0x0d => Some("float64"),
            0x19 => Some("native uint"),
            0x18 => Some("native int"),
            0x1c => Some("object"),
            0x0e => Some("string"),
            0x16 => Some("typedref"),
            _ => None,
        };
        if let Some(s) = simple {
            out.push_str(s);
            break;
        }
        match typ {
            0x11 | 0x12 => {
                out.push_str(if typ == 0x11 { "valuetype " } else { "class " });
                let tk = sig_token(sig, &mut p);
                if tk & 0xff_ffff == 0 {
                    out.push_str("[ERROR! NIL TOKEN]");
                } else {
                    pretty_class(md, tk, out, depth + 1);
                }
                break;
            }
            0x1d => {
                appendix.insert_str(0, "[]");
            }
            0x14 => {
                p = if depth > 32 {
                    sig.len() + 1
                } else {
                    pretty_type(md, sig, p, out, depth + 1)
                };
                let rank = sig_u32(sig, &mut p);
                if rank == 0 {
                    out.push_str("[BAD: RANK == 0!]");
                } else {
                    let rank = rank.min(64) as usize;
                    let mut lower = vec![0i32; rank];
                    let mut sizes = vec![0u32; rank];
                    let nsizes = sig_u32(sig, &mut p) as usize;
                    for i in 0..nsizes {
                        let v = sig_u32(sig, &mut p);
                        if i < rank {
                            sizes[i] = v;
                        }
                    }
                    let nlow = sig_u32(sig, &mut p) as usize;
                    for i in 0..nlow {
                        let v = sig_i32(sig, &mut p);
                        if i < rank {
                            lower[i] = v;
                        }
                    }
                    out.push('[');
                    if rank == 1 && nsizes == 0 && nlow == 0 {
                        out.push_str("...");
                    } else {
                        for i in 0..rank {
                            if i < nsizes && lower[i] == 0 {
                                out.push_str(&(sizes[i] as i32).to_string());
                            } else if i < nlow {
                                out.push_str(&lower[i].to_string());
                                out.push_str("...");
                                if i < nsizes {
                                    out.push_str(
                                        &(lower[i].wrapping_add(sizes[i] as i32) - 1).to_string(),
                                    );
                                }
                            }
                            if i + 1 < rank {
                                out.push(',');
                            }
                        }
                    }
                    out.push(']');
                }
                break;
            }
            0x13 => {
                out.push('!');
                out.push_str(&sig_u32(sig, &mut p).to_string());
                break;
            }
            0x1e => {
                out.push_str("!!");
                out.push_str(&sig_u32(sig, &mut p).to_string());
                break;
            }
            0x1b => {
                out.push_str("method METHOD");
                break;
            }
            0x15 => {
                p = if depth > 32 {
                    sig.len() + 1
                } else {
                    pretty_type(md, sig, p, out, depth + 1)
                };
                out.push('<');
                let n = sig_u32(sig, &mut p);
                for i in 0..n {
                    if i > 0 {
                        out.push(',');
                    }
                    if p >= sig.len() || depth > 32 {
                        break;
                    }
                    p = pretty_type(md, sig, p, out, depth + 1);
                }
                out.push('>');
                break;
            }
            0x45 => appendix.insert_str(0, " pinned"),
            0x0f => appendix.insert_str(0, "*"),
            0x10 => appendix.insert_str(0, "&"),
            0x1f | 0x20 => {
                out.push_str(if typ == 0x1f {
                    " mod req "
                } else {
                    " mod opt "
                });
                let tk = sig_token(sig, &mut p);
                if tk & 0xff_ffff == 0 {
                    out.push_str("[ERROR! NIL TOKEN]");
                } else {
                    pretty_class(md, tk, out, depth + 1);
                }
            }
            _ => {
                if typ != 0 {
                    out.push_str(&format!("/* UNKNOWN TYPE (0x{typ:X})*/"));
                }
                break;
            }
        }
    }
    out.push_str(&appendix);
    p
}

/// The position after the type at `sig[p]` (SigParser::SkipExactlyOne).
fn skip_type(sig: &[u8], mut p: usize, depth: u32) -> usize {
    if depth > 64 {
        return sig.len() + 1;
    }
    loop {
        let Some(&t) = sig.get(p) else {
            return p + 1;
        };
        p += 1;
        match t {
            0x0f | 0x10 | 0x1d | 0x45 => continue,
            0x1f | 0x20 => {
                sig_u32(sig, &mut p);
                continue;
            }
            0x11 | 0x12 => {
                sig_u32(sig, &mut p);
                return p;
            }
            0x13 | 0x1e => {
                sig_u32(sig, &mut p);
                return p;
            }
            0x14 => {
                p = skip_type(sig, p, depth + 1);
                sig_u32(sig, &mut p);
                let n = sig_u32(sig, &mut p);
                for _ in 0..n.min(64) {
                    sig_u32(sig, &mut p);
                }
                let n = sig_u32(sig, &mut p);
                for _ in 0..n.min(64) {
                    sig_i32(sig, &mut p);
                }
                return p;
            }
            0x15 => {
                p = skip_type(sig, p, depth + 1);
                let n = sig_u32(sig, &mut p);
                for _ in 0..n.min(1024) {
                    p = skip_type(sig, p, depth + 1);
                }
                return p;
            }
            0x1b => {
                let cc = sig.get(p).copied().unwrap_or(0);
                p += 1;
                if cc & 0x10 != 0 {
                    sig_u32(sig, &mut p);
                }
                let n = sig_u32(sig, &mut p);
                p = skip_type(sig, p, depth + 1);
                for _ in 0..n.min(1024) {
                    p = skip_type(sig, p, depth + 1);
                }
                return p;
            }
            _ => return p,
        }
    }
}

/// A method or field signature as SOS prints it around a member's name: the return (or
/// field) type before, the parameters after (`None` after for a field).
fn member_sig(md: &Metadata<'_>, sig: &[u8]) -> (String, Option<String>) {
    let Some(&cc) = sig.first() else {
        return (String::new(), None);
    };
    let mut p = 1usize;
    let mut ret = String::new();
    if cc & 0x0f == 0x06 {
        // A field: its type (SOS reads the byte after the type's first as a parameter count
        // and prints the type after it; dumpshell prints the field's own type).
        pretty_type(md, sig, p, &mut ret, 0);
        ret.push(' ');
        return (ret, None);
    }
    if cc & 0x10 != 0 {
        sig_u32(sig, &mut p);
    }
    let n = sig_u32(sig, &mut p);
    pretty_type(md, sig, p, &mut ret, 0);
    ret.push(' ');
    p = skip_type(sig, p, 0);
    let mut args = String::from("(");
    for i in 0..n.min(4096) {
        if p > sig.len() {
            break;
        }
        pretty_type(md, sig, p, &mut args, 0);
        if i + 1 < n {
            args.push(',');
        }
        p = skip_type(sig, p, 0);
    }
    args.push(')');
    (ret, Some(args))
}

/// How SOS's `dumpil` names a token of a method's IL (`DisassembleToken`): member references
/// with their signatures in ILDASM's spelling, strings quoted (79 characters at most,
/// non-ASCII as `.`), other tokens by their table.
///
/// Names are clipped as SOS's fixed buffers clip them: type and member names of a
/// MethodDef/FieldDef/TypeDef at 48 characters, a MemberRef's TypeRef parent at 49, its
/// TypeSpec parent at 50.
pub fn sos_token_text(md: &Metadata<'_>, token: u32) -> String {
    let rid = token & 0xff_ffff;
    match token >> 24 {
        0x02 => match type_def_name(md, rid) {
            Some(n) => clip(&n, 48),
            None => "<unknown type def>".into(),
        },
        0x01 => match type_ref_name(md, rid) {
            Some((_, n)) => clip(&n, 48),
            None => "<unknown type ref>".into(),
        },
        0x04 => {
            let (field, owner) = match md.field(rid) {
                Ok(f) => (
                    clip(f.name, 48),
                    md.field_owner(rid).ok().flatten().unwrap_or(0),
                ),
                Err(_) => ("<unknown field def>".to_string(), 0),
            };
            let class = type_def_name(md, owner)
                .map(|n| clip(&n, 48))
                .unwrap_or_else(|| "<unknown type def>".into());
            format!("{class}::{field}")
        }
        0x06 => {
            let (name, owner, ret, args) = match md.method_def(rid) {
                Ok(m) => {
                    let (ret, args) = member_sig(md, m.signature);
                    (
                        clip(m.name, 48),
                        md.method_owner(rid).ok().flatten().unwrap_or(0),
                        ret,
                        args,
                    )
                }
                Err(_) => ("<unknown method def>".to_string(), 0, String::new(), None),
            };
            let class = type_def_name(md, owner)
                .map(|n| clip(&n, 48))
                .unwrap_or_else(|| "<unknown type def>".into());
            format!("{ret}{class}::{name}{}", args.unwrap_or_default())
        }
        0x0a => {
            let Ok(m) = md.member_ref(rid) else {
                return "<unknown type token>::<unknown member ref>".into();
            };
            let (ret, args) = member_sig(md, m.signature);
            let parent = match m.class.table() {
                Some(TableId::TypeRef) => type_ref_name(md, m.class.rid())
                    .map(|(_, n)| clip(&n, 49))
                    .unwrap_or_else(|| "<unknown type ref>".into()),
                Some(TableId::TypeDef) => type_def_name(md, m.class.rid())
                    .map(|n| clip(&n, 48))
                    .unwrap_or_else(|| "<unknown type def>".into()),
                Some(TableId::TypeSpec) => match md.type_spec(m.class.rid()) {
                    Ok(ts) => {
                        let mut s = String::new();
                        pretty_type(md, ts.signature, 0, &mut s, 0);
                        clip(&s, 50)
                    }
                    Err(_) => "<Invalid record>".into(),
                },
                _ => "<unknown type token>".into(),
            };
            format!(
                "{ret}{parent}::{}{}",
                clip(m.name, 48),
                args.unwrap_or_default()
            )
        }
        0x70 => match md.user_string_utf16(rid) {
            Ok(units) => {
                // SOS's %S stops at a NUL; dumpshell shows it as the `.` of any control character.
                let mut s: String = units
                    .iter()
                    .take(80)
                    .map(|&u| {
                        if (0x20..0x80).contains(&u) {
                            u as u8 as char
                        } else {
                            '.'
                        }
                    })
                    .collect();
                if units.len() >= 79 {
                    s.truncate(79);
                    s.push_str("...");
                }
                format!("\"{s}\"")
            }
            Err(_) => format!("STRING {token:x}"),
        },
        t => format!("<unknown token type {:08x}>", t << 24),
    }
}

/// The type [`sos_token_text`] prints before a MemberRef to a field (`None`: `token` is not
/// one). SOS prints another type there: it reads the field signature as a method's, the byte
/// after the calling convention as a parameter count, and prints the type after that.
pub fn field_member_ref_type(md: &Metadata<'_>, token: u32) -> Option<String> {
    if token >> 24 != 0x0a {
        return None;
    }
    let m = md.member_ref(token & 0xff_ffff).ok()?;
    if m.signature.first()? & 0x0f != 0x06 {
        return None;
    }
    let mut t = String::new();
    pretty_type(md, m.signature, 1, &mut t, 0);
    Some(t)
}
