//! A method's IL body as the loaded image holds it (SOS's `dumpil <MethodDesc>`): the
//! MethodDef's RVA from the module's metadata, the body at that RVA in the image's layout
//! (mapped: base + RVA; flat: the section's file offset), its header, EH clauses and
//! instructions ([`crate::metadata::il`]).
//!
//! A DynamicMethod object's IL (SOS's `dumpil <object>`): its resolver's code array and its
//! scope's token table ([`dynamic_il`]).
//!
//! Not read: IL a profiler replaced (`ISOSDacInterface7::GetProfilerModifiedILInformation`,
//! which SOS asks first) and Edit-and-Continue bodies; methods of Reflection.Emit modules; a
//! dynamic (LCG) MethodDesc's IL (SOS reaches its DynamicMethod through the runtime's
//! LCGMethodResolver).

use crate::data::types::ReadTypes;
use crate::error::{ClrError, Result};
use crate::metadata::il::{decode_il, parse_body, IlError, Instruction, MethodBody};
use crate::metadata::{PeHeaders, PeLayout};
use crate::model::methods;
use crate::model::objects::ObjectReader;
use dumpreader::Memory;

/// Where a method's IL is, or why it has none.
#[derive(Debug, Clone)]
pub enum IlLocation {
    /// The MethodDesc's token is nil (an IL stub, an array method): no IL body.
    NoToken,
    /// The MethodDef's RVA is 0 (abstract, runtime-implemented, P/Invoke).
    NoRva,
    /// A dynamic (LCG or IL stub) MethodDesc.
    Dynamic,
    /// The body's address.
    At(u64),
}

/// A MethodDesc's IL.
#[derive(Debug, Clone)]
pub struct MethodIl {
    pub method_desc: u64,
    pub module: u64,
    /// The MethodDef token.
    pub token: u32,
    /// The MethodDef's RVA.
    pub rva: u32,
    pub location: IlLocation,
    /// The body (with `location` `At`).
    pub body: Option<MethodBody>,
    pub instructions: Vec<Instruction>,
    /// Why decoding stopped before the code's end.
    pub decode_error: Option<IlError>,
}

/// The IL body of the MethodDesc at `md`.
pub fn method_il<M: Memory>(r: &ObjectReader<'_, M>, md: u64) -> Result<MethodIl> {
    let d = methods::method_desc(r, md)?;
    let mt = r.rt.method_table(d.method_table)?;
    let module = mt.module.ok_or_else(|| {
        ClrError::unsupported(
            format!("the module of MethodDesc {md:#x}"),
            Some(d.method_table),
            "its MethodTable has a module override, which is not read",
        )
    })?;
    let mut out = MethodIl {
        method_desc: md,
        module,
        token: d.token,
        rva: 0,
        location: IlLocation::NoToken,
        body: None,
        instructions: Vec::new(),
        decode_error: None,
    };
    if d.classification == crate::model::dynamic::CLASSIFICATION_DYNAMIC {
        out.location = IlLocation::Dynamic;
        return Ok(out);
    }
    if d.token & 0xff_ffff == 0 {
        return Ok(out);
    }
    let meta = r.names.module_metadata(r.rt, module)?;
    let m = meta.metadata()?;
    let row = m.method_def(d.token & 0xff_ffff).map_err(|e| {
        ClrError::metadata(
            format!("MethodDef {:#010x} of {}", d.token, meta.assembly),
            e,
        )
    })?;
    out.rva = row.rva;
    if row.rva == 0 {
        out.location = IlLocation::NoRva;
        return Ok(out);
    }
    let data = r.rt.module(module)?;
    if data.image_base == 0 {
        return Err(ClrError::unsupported(
            format!("IL of MethodDef {:#010x} of {}", d.token, meta.assembly),
            Some(module),
            "the module has no image (a Reflection.Emit module): its IL is not read",
        ));
    }
    let mem = r.rt.memory();
    let offset = if data.mapped {
        row.rva as u64
    } else {
        let mut hdr = vec![0u8; 4096];
        let got = mem.read(data.image_base, &mut hdr);
        hdr.truncate(got);
        let h = PeHeaders::parse(&hdr)
            .map_err(|e| ClrError::metadata(format!("PE headers of {}", meta.assembly), e))?;
        h.rva_to_offset(row.rva, PeLayout::Flat).ok_or_else(|| {
            ClrError::corrupt(
                format!("MethodDef {:#010x} of {}", d.token, meta.assembly),
                data.image_base,
                format!("its RVA {:#x} lies in no section of the image", row.rva),
            )
        })? as u64
    };
    let at = data.image_base.wrapping_add(offset);
    out.location = IlLocation::At(at);
    // Read what the header says the body needs, growing until it parses.
    let mut want = 64usize;
    let body = loop {
        let mut b = vec![0u8; want];
        let got = mem.read(at, &mut b);
        b.truncate(got);
        match parse_body(&b) {
            Ok(body) => break body,
            Err(IlError::Truncated { needed, .. }) if got == want && needed > want => {
                want = needed;
            }
            Err(e) => {
                return Err(ClrError::corrupt(
                    format!(
                        "the IL body of MethodDef {:#010x} of {}",
                        d.token, meta.assembly
                    ),
                    at,
                    if got < want {
                        format!("{e} (the dump holds {got} bytes there)")
                    } else {
                        e.to_string()
                    },
                ))
            }
        }
    };
    let (ins, err) = decode_il(&body.code);
    out.instructions = ins;
    out.decode_error = err;
    out.body = Some(body);
    Ok(out)
}

/// A DynamicMethod's IL as SOS's `dumpil <DynamicMethod object>` reads it (strike.cpp
/// `GatherDynamicInfo`): the object's resolver (`_resolver`, `m_resolver` before), the
/// resolver's `m_code` byte array (the IL, no header: dynamic IL keeps its locals and EH
/// clauses elsewhere) and its scope's token table (`m_scope.m_tokens._items`, an `object[]`
/// whose element `rid` a token of the dynamic scope names).
#[derive(Debug, Clone)]
pub struct DynamicIl {
    /// The DynamicMethod object.
    pub object: u64,
    /// Its DynamicResolver.
    pub resolver: u64,
    /// The `byte[]` holding the IL.
    pub code_array: u64,
    /// The IL.
    pub code: Vec<u8>,
    /// The token table: the scope's `List<object>`'s `_items` array.
    pub token_array: u64,
    /// The table's length (its capacity, as SOS bounds a token's row by it).
    pub token_count: u64,
    /// Address of the table's element 0.
    token_data: u64,
    pub instructions: Vec<Instruction>,
    /// Why decoding stopped before the code's end.
    pub decode_error: Option<IlError>,
}

/// What a token of a dynamic scope names, as SOS resolves it (sildasm.cpp
/// `DisassembleToken(DacpObjectData&, DWORD)`): by the token's type, from the token table's
/// element at the token's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DynamicToken {
    /// A TypeDef token: a boxed RuntimeTypeHandle (its `m_type`'s `m_handle`).
    Type {
        entry: u64,
        method_table: u64,
        name: String,
    },
    /// A MethodDef token: a boxed RuntimeMethodHandle (its `m_value`'s `m_handle`).
    Method {
        entry: u64,
        method_desc: u64,
        name: String,
    },
    /// A string token: the String.
    String { entry: u64, value: String },
    /// A TypeRef, FieldDef, MemberRef or Signature token: SOS shows the entry's address only.
    Entry { entry: u64 },
    /// A token type SOS does not resolve.
    UnknownType,
    /// The entry is not what the token's type says SOS reads (a generic method's
    /// `GenericMethodInfo`, another DynamicMethod, an entry out of the table, ...): why.
    Unresolved { entry: u64, reason: String },
}

fn field_obj<M: Memory>(
    r: &ObjectReader<'_, M>,
    addr: u64,
    what: &'static str,
    names: &[&'static str],
) -> Result<u64> {
    let (_, fs) = crate::model::fields::object_fields(r, addr, what)?;
    for &n in names {
        if crate::model::fields::field(&fs, n).is_some() {
            let v = crate::model::fields::obj(&fs, n);
            if v == 0 {
                return Err(ClrError::not_found(
                    what,
                    format!("its field {n} (object {addr:#x}) is null"),
                ));
            }
            return Ok(v);
        }
    }
    Err(ClrError::not_found(
        what,
        format!("object {addr:#x} has no field {}", names.join(" or ")),
    ))
}

/// The IL and token table of the DynamicMethod object at `obj`.
pub fn dynamic_il<M: Memory>(r: &ObjectReader<'_, M>, obj: u64) -> Result<DynamicIl> {
    let resolver = field_obj(r, obj, "the DynamicMethod", &["_resolver", "m_resolver"])?;
    let code_array = field_obj(r, resolver, "the DynamicResolver", &["m_code"])?;
    let scope = field_obj(r, resolver, "the DynamicResolver", &["m_scope"])?;
    let tokens = field_obj(r, scope, "the DynamicScope", &["m_tokens"])?;
    let token_array = field_obj(r, tokens, "the token list", &["_items"])?;
    let array = |a: u64, what: &'static str, expected: &'static str, size: u32| {
        let (_, mt) = r.object_mt(a)?;
        match r.array(a, &mt)? {
            Some(d) if d.rank == 1 && d.component_size == size => Ok(d),
            _ => Err(ClrError::corrupt(
                what,
                a,
                format!("is not a one-dimensional array of {expected}"),
            )),
        }
    };
    let code_data = array(code_array, "the IL (m_code)", "bytes", 1)?;
    let token_data = array(token_array, "the token table", "references", 8)?;
    if code_data.length > 0x100_0000 {
        return Err(ClrError::corrupt(
            "the IL (m_code)",
            code_array,
            format!("{} bytes", code_data.length),
        ));
    }
    let mut code = vec![0u8; code_data.length as usize];
    r.rt.memory()
        .read_exact(code_data.data, &mut code)
        .map_err(|_| ClrError::read("the dynamic method's IL", code_data.data))?;
    let (instructions, decode_error) = decode_il(&code);
    Ok(DynamicIl {
        object: obj,
        resolver,
        code_array,
        code,
        token_array,
        token_count: token_data.length,
        token_data: token_data.data,
        instructions,
        decode_error,
    })
}

impl DynamicIl {
    /// The token table's element `rid` (0: out of the table, or null).
    pub fn entry<M: Memory>(&self, r: &ObjectReader<'_, M>, rid: u32) -> Result<u64> {
        if rid as u64 >= self.token_count {
            return Ok(0);
        }
        let at = self.token_data + 8 * rid as u64;
        r.rt.memory()
            .read_u64(at)
            .map_err(|_| ClrError::read("the token table's element", at))
    }

    /// What `token` names (SOS's rules, [`DynamicToken`]).
    pub fn token<M: Memory>(&self, r: &ObjectReader<'_, M>, token: u32) -> DynamicToken {
        let entry = match self.entry(r, token & 0xff_ffff) {
            Ok(e) => e,
            Err(e) => {
                return DynamicToken::Unresolved {
                    entry: 0,
                    reason: e.to_string(),
                }
            }
        };
        let unresolved = |reason: String| DynamicToken::Unresolved { entry, reason };
        match token >> 24 {
            0x01 | 0x04 | 0x0a | 0x11 => DynamicToken::Entry { entry },
            0x02 => match handle_of(r, entry, "RuntimeTypeHandle", "m_type") {
                Ok(mt) => match r.names.name(r.rt, mt) {
                    Ok(name) => DynamicToken::Type {
                        entry,
                        method_table: mt,
                        name: name.to_string(),
                    },
                    Err(e) => unresolved(format!("MethodTable {mt:#x}: {e}")),
                },
                Err(e) => unresolved(e.to_string()),
            },
            0x06 => match handle_of(r, entry, "RuntimeMethodHandle", "m_value") {
                Ok(md) => match methods::method_desc(r, md)
                    .and_then(|d| methods::method_desc_name(r, &d))
                {
                    Ok(name) => DynamicToken::Method {
                        entry,
                        method_desc: md,
                        name,
                    },
                    Err(e) => unresolved(format!("MethodDesc {md:#x}: {e}")),
                },
                Err(e) => unresolved(e.to_string()),
            },
            0x70 => match r.object_mt(entry).and_then(|(mt, _)| {
                if mt != r.rt.globals.string_mt {
                    return Err(ClrError::corrupt(
                        "the token table's element",
                        entry,
                        format!("is a {}, not a String", r.type_name(mt)),
                    ));
                }
                r.string_value(entry, 0x20_0000)
            }) {
                Ok((value, _)) => DynamicToken::String { entry, value },
                Err(e) => unresolved(e.to_string()),
            },
            _ => DynamicToken::UnknownType,
        }
    }
}

/// The runtime handle a boxed `RuntimeTypeHandle` / `RuntimeMethodHandle` entry holds: its
/// reference field `inner` (a RuntimeType, a RuntimeMethodInfo), that object's `m_handle`
/// (the MethodTable, the MethodDesc).
fn handle_of<M: Memory>(
    r: &ObjectReader<'_, M>,
    entry: u64,
    boxed: &'static str,
    inner: &'static str,
) -> Result<u64> {
    if entry == 0 {
        return Err(ClrError::not_found(
            "the token table's element",
            "null or beyond the table",
        ));
    }
    let (mt, fs) = crate::model::fields::object_fields(r, entry, "the token table's element")?;
    let name = r.type_name(mt);
    if name != format!("System.{boxed}") {
        return Err(ClrError::unsupported(
            "the token table's element",
            Some(entry),
            format!("a {name}, not a boxed {boxed}"),
        ));
    }
    let o = crate::model::fields::obj(&fs, inner);
    if o == 0 {
        return Err(ClrError::not_found(
            "the token table's element",
            format!("its {inner} is null"),
        ));
    }
    let (_, fs) = crate::model::fields::object_fields(r, o, "the handle's runtime object")?;
    match crate::model::fields::int(&fs, "m_handle") {
        Some(h) if h != 0 => Ok(h as u64),
        _ => Err(ClrError::not_found(
            "the handle's runtime object",
            format!("{} {o:#x} has no m_handle", r.type_name(r.object_mt(o)?.0)),
        )),
    }
}
