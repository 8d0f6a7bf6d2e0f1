//! A method's IL body as the loaded image holds it (SOS's `dumpil <MethodDesc>`): the
//! MethodDef's RVA from the module's metadata, the body at that RVA in the image's layout
//! (mapped: base + RVA; flat: the section's file offset), its header, EH clauses and
//! instructions ([`crate::metadata::il`]).
//!
//! Not read: IL a profiler replaced (`ISOSDacInterface7::GetProfilerModifiedILInformation`,
//! which SOS asks first) and Edit-and-Continue bodies; methods of Reflection.Emit modules and
//! dynamic (LCG) methods, whose IL is not in an image.

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
