//! Arguments and locals of managed frames, as SOS's `clrstack -p/-l/-a` shows them.
//!
//! SOS's DAC path (dotnet/diagnostics `src/SOS/Strike/strike.cpp` `ShowArgs`/`ShowLocals`)
//! asks the DAC's `IXCLRDataFrame` for each IL argument (`this` first when the signature has
//! one, then the signature's fixed parameters) and each IL local (the IL body's
//! `LocalVarSigTok`; none when the body is tiny or has no token). The DAC
//! (dotnet/runtime `src/coreclr/debug/daccess/stack.cpp` `ClrDataFrame::ValueFromDebugInfo`,
//! `src/coreclr/vm/util.cpp` `NativeVarLocations`, `inspect.cpp` `ClrDataValue`) places a
//! variable with the first entry of the method's native var info ([`DebugInfo::vars`]) of its
//! number (arguments `0..n`, locals `n + i`) whose `[start, end]` holds the frame's native
//! offset (its IP, a return address above the leaf, not moved back):
//! - `VLT_REG`: the register of the frame's context (one location, a register);
//! - `VLT_STK`: `[base + offset]` (one location, that address); `VLT_STK_BYREF`: the address
//!   stored there; `VLT_STK2`: 16 bytes there;
//! - `VLT_REG_REG`, `VLT_REG_STK`, `VLT_STK_REG`: two locations of 8 bytes each;
//! - anything else (`VLT_REG_FP`, `VLT_FPSTK`, `VLT_FIXED_VA`), or no entry: no location, and
//!   SOS prints `<no data>`.
//!
//! The value's size is the locations' total, except that a reference type's is the pointer
//! size and a primitive's (with one location) is the primitive's size when smaller; SOS shows
//! the bytes as a number when there are 1, 2, 4 or 8 of them (zero-extended), else 0.
//! Argument names are the metadata's (the Param row of the sequence; `this`), local names the
//! portable PDB's (SOS's DAC path shows none; its ICorDebug path, `clrstack -i`, does).

use super::source::SourceLines;
use super::unwind::REG_NAMES;
use super::{FrameKind, StackFrame, StackWalker};
use crate::data::types::ReadTypes;
use crate::discovery::runtime::Runtime;
use crate::metadata::{Metadata, Primitive, SigType, Token};
use clrcodeinfo::debuginfo::{VarLoc, VarNumber};
use dumpreader::Memory;
use serde::Serialize;

/// Where (part of) a variable is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum VarPlace {
    /// In the frame's register (`<CLR reg>` to SOS).
    Register { register: &'static str },
    /// In memory at `address` (a stack slot, or what a by-reference slot points to).
    Memory { address: u64 },
}

/// One argument or local of a frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FrameVar {
    /// The IL argument or local index.
    pub index: u32,
    /// The argument's name (metadata) or the local's (the app's PDB), when known.
    pub name: Option<String>,
    /// Where the variable is at the frame's IP: none when the JIT's var info places it nowhere
    /// there (SOS: `<no data>`), else one or two locations.
    pub locations: Vec<VarPlace>,
    /// The bytes of the value as read (little-endian), when there is a location and they
    /// could be read.
    pub bytes: Option<Vec<u8>>,
    /// The value as SOS prints it: the bytes as a number when there are 1, 2, 4 or 8 of them,
    /// else 0.
    pub value: Option<u64>,
    /// Why there is no value: no location at the IP, or the read failed.
    pub error: Option<String>,
}

/// The arguments and locals of one managed frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct FrameVars {
    pub arguments: Vec<FrameVar>,
    pub locals: Vec<FrameVar>,
    /// Why the variables have no locations (the method's debug info not read), or why the
    /// locals are not listed, when so.
    pub notes: Vec<String>,
}

/// How the DAC sizes a value of a signature type (`GetTypeFieldValueFlags`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ValueKind {
    /// An object reference: the pointer size.
    Reference,
    /// A primitive of this many bytes.
    Primitive(u32),
    /// Anything else (value types, enums, pointers, byrefs, generic parameters): the
    /// locations' size.
    Other,
}

fn value_kind(t: &SigType) -> ValueKind {
    match t.unmodified() {
        SigType::Primitive(p) => match p {
            Primitive::Boolean | Primitive::I1 | Primitive::U1 => ValueKind::Primitive(1),
            Primitive::Char | Primitive::I2 | Primitive::U2 => ValueKind::Primitive(2),
            Primitive::I4 | Primitive::U4 | Primitive::R4 => ValueKind::Primitive(4),
            Primitive::I8 | Primitive::U8 | Primitive::R8 | Primitive::I | Primitive::U => {
                ValueKind::Primitive(8)
            }
            Primitive::String | Primitive::Object => ValueKind::Reference,
            Primitive::Void | Primitive::TypedByRef => ValueKind::Other,
        },
        SigType::Class(_) | SigType::SzArray(_) | SigType::Array { .. } => ValueKind::Reference,
        SigType::GenericInst {
            value_type: false, ..
        } => ValueKind::Reference,
        _ => ValueKind::Other,
    }
}

/// The arguments and locals of managed frame `f` at its IP (`lines`: the session's debug
/// info and PDB caches).
pub fn frame_vars<M: Memory>(
    lines: &SourceLines,
    w: &StackWalker<'_, M>,
    f: &StackFrame,
) -> crate::Result<FrameVars> {
    let this = lines;
    {
        if f.kind != FrameKind::Managed {
            return Err(crate::ClrError::not_found(
                "the frame's variables",
                "not a managed frame",
            ));
        }
        let (Some(module), Some(token)) = (f.module, f.token) else {
            return Err(crate::ClrError::not_found(
                "the frame's variables",
                "the frame's module and token are not known",
            ));
        };
        let rt = w.rt;
        if let Some(md) = f.method_desc {
            let r = crate::model::objects::ObjectReader::new(rt, w.names);
            // (A MethodDesc that cannot be read is left to the metadata path, as before.)
            let d = crate::model::methods::method_desc(&r, md).ok();
            if d.is_some_and(|d| d.classification == crate::model::dynamic::CLASSIFICATION_DYNAMIC)
            {
                return dynamic_frame_vars(this, w, f, md);
            }
        }
        let mm = w.names.module_metadata(rt, module)?;
        let md = mm.metadata()?;
        let rid = token & 0x00FF_FFFF;
        let what = || format!("MethodDef {token:#x}");
        let def = md
            .method_def(rid)
            .map_err(|e| crate::ClrError::metadata(what(), e))?;
        let sig = crate::metadata::decode_method_sig(def.signature)
            .map_err(|e| crate::ClrError::metadata(what(), e))?;
        let has_this = sig.has_this();
        let fixed = sig.sentinel.unwrap_or(sig.params.len());
        let mut out = FrameVars::default();

        // Kinds and names of the arguments.
        let params: Vec<(u16, String)> = md
            .method_params(rid)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|p| md.param(p).ok())
            .map(|p| (p.sequence, p.name.to_string()))
            .collect();
        let mut args: Vec<(ValueKind, Option<String>)> = Vec::new();
        if has_this {
            args.push((ValueKind::Reference, Some("this".into())));
        }
        for (i, t) in sig.params[..fixed].iter().enumerate() {
            let seq = (i + 1) as u16;
            let name = params
                .iter()
                .find(|(s, _)| *s == seq)
                .map(|(_, n)| n.clone())
                .filter(|n| !n.is_empty());
            args.push((value_kind(t), name));
        }

        // The locals, named by the PDB when there is one.
        let locals_sig = match locals_sig(w, module, &md, def.rva) {
            Ok(l) => l,
            Err(e) => {
                out.notes.push(format!("the locals: {e}"));
                Vec::new()
            }
        };
        let pdb = (!locals_sig.is_empty())
            .then(|| this.pdb(w, module).ok())
            .flatten();
        let reader = pdb.as_ref().and_then(|p| p.reader().ok());
        let locals: Vec<(ValueKind, Option<String>)> = locals_sig
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let name = reader.as_ref().and_then(|r| {
                    r.local_name(Token(token), i as u16)
                        .ok()
                        .flatten()
                        .map(str::to_string)
                });
                (value_kind(t), name)
            })
            .collect();

        place_all(this, w, f, out, args, locals)
    }
}

/// The arguments of a dynamic (LCG or IL stub) frame: no metadata row, so the count and kinds
/// come from the MethodDesc's stored signature, and no names (the DAC's
/// `GetArgumentByIndex` gives a method without metadata an empty name); no locals (the DAC's
/// `GetLocalSig` reads an IL header, which a dynamic method does not keep after JIT time:
/// `GetNumLocalVariables` fails and SOS prints no LOCALS). Their places come from the
/// method's var info as for any frame; the runtime records none for a dynamic method
/// (`CEEJitInfo::CompressDebugInfo` skips them unless `TrackDynamicMethodDebugInfo` is set), so
/// every argument is usually without a location (SOS: `<no data>`).
fn dynamic_frame_vars<M: Memory>(
    lines: &SourceLines,
    w: &StackWalker<'_, M>,
    f: &StackFrame,
    md: u64,
) -> crate::Result<FrameVars> {
    let sig = crate::model::dynamic::dynamic_method_sig(w.rt, md)?;
    let fixed = sig.sentinel.unwrap_or(sig.params.len());
    let mut args: Vec<(ValueKind, Option<String>)> = Vec::new();
    if sig.has_this() {
        // The DAC names index 0 of a signature with `this` so, metadata or not.
        args.push((ValueKind::Reference, Some("this".into())));
    }
    for t in &sig.params[..fixed] {
        let kind = match t.unmodified() {
            // A TypeHandle of the stored signature: a reference type unless its MethodTable
            // is a value type's (a TypeDesc handle, bit 1, is left as its locations' size).
            SigType::Internal(h) if h & 2 == 0 => match w.rt.method_table(*h) {
                Ok(mt) if !mt.is_value_type() => ValueKind::Reference,
                _ => ValueKind::Other,
            },
            t => value_kind(t),
        };
        args.push((kind, None));
    }
    place_all(lines, w, f, FrameVars::default(), args, Vec::new())
}

/// Places each argument and local of frame `f` with its method's var info at the frame's IP.
fn place_all<M: Memory>(
    this: &SourceLines,
    w: &StackWalker<'_, M>,
    f: &StackFrame,
    mut out: FrameVars,
    args: Vec<(ValueKind, Option<String>)>,
    locals: Vec<(ValueKind, Option<String>)>,
) -> crate::Result<FrameVars> {
    let rt = w.rt;
    {
        // Where each is at the frame's IP.
        let info = w
            .code()
            .lookup(rt, f.ip)
            .and_then(|ci| {
                let ci = ci.ok_or_else(|| {
                    crate::ClrError::not_found_at("the frame's method", f.ip, "not managed code")
                })?;
                Ok((this.debug_info(w, &ci)?, f.ip.wrapping_sub(ci.method_start)))
            })
            .map_err(|e| out.notes.push(format!("the method's debug info: {e}")))
            .ok();
        let regs = f.context.map(|c| c.regs);
        let n_args = args.len() as u32;
        let var = |num: u32, index: u32, kind: ValueKind, name: Option<String>| {
            let loc = info.as_ref().and_then(|(di, off)| {
                (*off <= u32::MAX as u64)
                    .then(|| di.var_location(VarNumber::Il(num), *off as u32))
                    .flatten()
                    .map(|v| v.loc)
            });
            place(rt, regs.as_ref(), index, kind, name, loc)
        };
        for (i, (kind, name)) in args.into_iter().enumerate() {
            out.arguments.push(var(i as u32, i as u32, kind, name));
        }
        for (i, (kind, name)) in locals.into_iter().enumerate() {
            out.locals
                .push(var(n_args + i as u32, i as u32, kind, name));
        }
        Ok(out)
    }
}

/// One location as the DAC's `NativeVarLocations` makes it: a register or an address, and its
/// size.
enum Loc {
    Reg(usize),
    Mem(u64),
}

/// Why a variable's location cannot be read.
#[derive(Debug, thiserror::Error)]
enum Unplaced {
    #[error("register number {0} is not an x64 integer register")]
    NotAnIntegerRegister(u32),
    #[error("the by-reference slot at {0:#x} is not in the dump")]
    ByRefSlotMissing(u64),
    #[error("a by-reference register variable (the DAC's own read of it is not defined)")]
    ByRefRegister,
}

fn place<M: Memory>(
    rt: &Runtime<M>,
    regs: Option<&super::Regs>,
    index: u32,
    kind: ValueKind,
    name: Option<String>,
    loc: Option<VarLoc>,
) -> FrameVar {
    let mut v = FrameVar {
        index,
        name,
        locations: Vec::new(),
        bytes: None,
        value: None,
        error: None,
    };
    let Some(loc) = loc else {
        v.error = Some("no location at the frame's IP".into());
        return v;
    };
    let Some(regs) = regs else {
        v.error = Some("the frame's registers are not known".into());
        return v;
    };
    let m = rt.memory();
    let reg = |r: u32| -> Result<usize, Unplaced> {
        if (r as usize) < REG_NAMES.len() {
            Ok(r as usize)
        } else {
            Err(Unplaced::NotAnIntegerRegister(r))
        }
    };
    let stk = |base: u32, offset: i32| -> Result<u64, Unplaced> {
        Ok(regs.gpr[reg(base)?].wrapping_add(offset as i64 as u64))
    };
    let locs: Result<Vec<(Loc, u32)>, Unplaced> = (|| {
        Ok(match loc {
            VarLoc::Reg(r) => vec![(Loc::Reg(reg(r)?), 8)],
            VarLoc::Stack { base, offset } => vec![(Loc::Mem(stk(base, offset)?), 8)],
            VarLoc::StackByRef { base, offset } => {
                let slot = stk(base, offset)?;
                let a = m
                    .read_u64(slot)
                    .map_err(|_| Unplaced::ByRefSlotMissing(slot))?;
                vec![(Loc::Mem(a), 8)]
            }
            VarLoc::Stack2 { base, offset } => vec![(Loc::Mem(stk(base, offset)?), 16)],
            VarLoc::RegReg(a, b) => vec![(Loc::Reg(reg(a)?), 8), (Loc::Reg(reg(b)?), 8)],
            VarLoc::RegStack {
                reg: r,
                base,
                offset,
            } => vec![(Loc::Reg(reg(r)?), 8), (Loc::Mem(stk(base, offset)?), 8)],
            VarLoc::StackReg {
                base,
                offset,
                reg: r,
            } => vec![(Loc::Mem(stk(base, offset)?), 8), (Loc::Reg(reg(r)?), 8)],
            VarLoc::RegByRef(_) => return Err(Unplaced::ByRefRegister),
            // NativeVarLocations gives no location for these: SOS prints `<no data>`.
            VarLoc::RegFp(_) | VarLoc::FpStack(_) | VarLoc::FixedVarArg(_) => Vec::new(),
        })
    })();
    let mut locs = match locs {
        Ok(l) => l,
        Err(e) => {
            v.error = Some(e.to_string());
            return v;
        }
    };
    if locs.is_empty() {
        v.error = Some(format!("no location the DAC reads ({loc:?})"));
        return v;
    }
    v.locations = locs
        .iter()
        .map(|(l, _)| match l {
            Loc::Reg(r) => VarPlace::Register {
                register: REG_NAMES[*r],
            },
            Loc::Mem(a) => VarPlace::Memory { address: *a },
        })
        .collect();
    // The value's size (ClrDataValue's m_totalSize).
    if let (ValueKind::Primitive(n), 1) = (kind, locs.len()) {
        if n < locs[0].1 {
            locs[0].1 = n;
        }
    }
    let total: u32 = match kind {
        ValueKind::Reference => 8,
        _ => locs.iter().map(|(_, s)| s).sum(),
    };
    let mut bytes = Vec::with_capacity(16);
    for (l, size) in &locs {
        match l {
            Loc::Reg(r) => bytes.extend_from_slice(&regs.gpr[*r].to_le_bytes()[..*size as usize]),
            Loc::Mem(a) => {
                let mut buf = vec![0u8; *size as usize];
                if m.read_exact(*a, &mut buf).is_err() {
                    v.error = Some(format!("{size} bytes at {a:#x} are not in the dump"));
                    return v;
                }
                bytes.extend_from_slice(&buf);
            }
        }
    }
    bytes.truncate(total as usize);
    let mut le = [0u8; 8];
    v.value = Some(match bytes.len() {
        1 | 2 | 4 | 8 => {
            le[..bytes.len()].copy_from_slice(&bytes);
            u64::from_le_bytes(le)
        }
        _ => 0,
    });
    v.bytes = Some(bytes);
    v
}

/// The locals signature of a method's IL body (its `LocalVarSigTok`): empty for a method
/// without IL (RVA 0), a tiny body, or a fat body without the token. The body is read from
/// the image in memory, the image's file standing in for pages the dump lacks.
pub(crate) fn locals_sig<M: Memory>(
    w: &StackWalker<'_, M>,
    module: u64,
    meta: &Metadata<'_>,
    rva: u32,
) -> crate::Result<Vec<SigType>> {
    if rva == 0 {
        return Ok(Vec::new());
    }
    let data = w.rt.module(module)?;
    let body = rva_address(w.rt, data.image_base, data.mapped, rva)?;
    let m = w.code().memory(w.rt.memory());
    let first = m
        .read_u8(body)
        .map_err(|_| crate::ClrError::read("the method's IL header", body))?;
    if first & 3 != 3 {
        return Ok(Vec::new()); // tiny: no locals
    }
    let tok = m
        .read_u32(body + 8)
        .map_err(|_| crate::ClrError::read("the method's LocalVarSigTok", body + 8))?;
    if tok == 0 {
        return Ok(Vec::new());
    }
    let what = || format!("the locals signature {tok:#x}");
    let s = meta
        .stand_alone_sig(tok & 0x00FF_FFFF)
        .map_err(|e| crate::ClrError::metadata(what(), e))?;
    crate::metadata::sig::decode_local_sig(s.signature)
        .map_err(|e| crate::ClrError::metadata(what(), e))
}

/// The address of `rva` in the image at `base` (mapped: base + rva; flat: through the
/// section headers).
fn rva_address<M: Memory>(
    rt: &Runtime<M>,
    base: u64,
    mapped: bool,
    rva: u32,
) -> crate::Result<u64> {
    if mapped {
        return Ok(base + rva as u64);
    }
    let m = rt.memory();
    let r32 = |a: u64| {
        m.read_u32(a)
            .map_err(|_| crate::ClrError::read("the PE headers", a))
    };
    let r16 = |a: u64| {
        m.read_u16(a)
            .map_err(|_| crate::ClrError::read("the PE headers", a))
    };
    let nt = base + r32(base + 0x3C)? as u64;
    let nsec = r16(nt + 6)? as u64;
    let sec = nt + 24 + r16(nt + 20)? as u64;
    for i in 0..nsec.min(96) {
        let s = sec + 40 * i;
        let (vsize, va, rsize, raw) = (r32(s + 8)?, r32(s + 12)?, r32(s + 16)?, r32(s + 20)?);
        if rva >= va && rva < va + vsize.max(rsize) {
            return Ok(base + (rva - va + raw) as u64);
        }
    }
    Err(crate::ClrError::corrupt(
        "PE image",
        base,
        format!("no section holds RVA {rva:#x}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_sizes_follow_the_dacs_type_flags() {
        use crate::metadata::Token;
        assert_eq!(
            value_kind(&SigType::Primitive(Primitive::I4)),
            ValueKind::Primitive(4)
        );
        assert_eq!(
            value_kind(&SigType::Primitive(Primitive::Boolean)),
            ValueKind::Primitive(1)
        );
        assert_eq!(
            value_kind(&SigType::Primitive(Primitive::String)),
            ValueKind::Reference
        );
        assert_eq!(
            value_kind(&SigType::Pinned(Box::new(SigType::SzArray(Box::new(
                SigType::Primitive(Primitive::U1)
            ))))),
            ValueKind::Reference
        );
        assert_eq!(
            value_kind(&SigType::ValueType(Token(0x0100_0001))),
            ValueKind::Other
        );
        assert_eq!(value_kind(&SigType::MVar(0)), ValueKind::Other);
    }
}
