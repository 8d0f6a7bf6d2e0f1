//! Dynamic methods (MethodDesc classification 7): LightWeight Code Generation methods
//! (`DynamicMethod`, expression trees) and the runtime's IL stubs. They have no metadata: the
//! MethodDesc stores its name and a runtime-made signature (`StoredSigMethodDesc`,
//! `DynamicMethodDesc`, method.hpp), whose types are TypeHandles.

use crate::model::objects::ObjectReader;
use dumpreader::Memory;

/// The dynamic classification (m_wFlags & 7): LCG methods and IL stubs.
pub const CLASSIFICATION_DYNAMIC: u8 = 7;
/// `DynamicMethodDesc` extended flags (method.hpp `StoredSigMethodDesc::m_dwExtendedFlags`).
const DYNAMIC_IS_LCG: u32 = 0x4000;
const DYNAMIC_IS_IL_STUB: u32 = 0x8000;

/// A dynamic method's name as the DAC prints it (no metadata behind it): the class the DAC
/// gives such methods (`DynamicClass` for a LightWeight Code Generation method, `ILStubClass`
/// for an IL stub), its stored UTF-8 name and the parameters of its stored signature, whose
/// types are runtime TypeHandles (`ILStubClass.IL_STUB_AsyncResume(System.Object, Byte
/// ByRef)`, `DynamicClass.lambda_method2(System.Runtime.CompilerServices.Closure, ...)`:
/// the 11.0.0 DAC's names on aspnethang-net11).
pub fn dynamic_method_name<M: Memory>(r: &ObjectReader<'_, M>, md: u64) -> crate::Result<String> {
    let l =
        r.rt.layout
            .methods
            .dynamic
            .ok_or_else(|| crate::ClrError::NotVerified {
                runtime: r.rt.layout.name.to_owned(),
                capability: "dynamic methods' names (StoredSigMethodDesc, DynamicMethodDesc)",
            })?;
    let m = r.rt.memory();
    let rd64 = |off: u64, what: &str| {
        m.read_u64(md.wrapping_add(off))
            .map_err(|_| crate::ClrError::read(what, md.wrapping_add(off)))
    };
    let rd32 = |off: u64, what: &str| {
        m.read_u32(md.wrapping_add(off))
            .map_err(|_| crate::ClrError::read(what, md.wrapping_add(off)))
    };
    let flags = rd32(l.extended_flags, "StoredSigMethodDesc::m_dwExtendedFlags")?;
    let class = if flags & DYNAMIC_IS_LCG != 0 {
        "DynamicClass"
    } else if flags & DYNAMIC_IS_IL_STUB != 0 {
        "ILStubClass"
    } else {
        return Err(crate::ClrError::unsupported(
            "dynamic MethodDesc",
            Some(md),
            format!("extended flags {flags:#x}: neither an LCG method nor an IL stub"),
        ));
    };
    let name_at = rd64(l.name, "DynamicMethodDesc::m_pszMethodName")?;
    let name_bytes = m.read_bytes(name_at, 1024);
    let end = name_bytes.iter().position(|&b| b == 0).ok_or_else(|| {
        crate::ClrError::read("DynamicMethodDesc::m_pszMethodName (its string)", name_at)
    })?;
    let name = String::from_utf8_lossy(&name_bytes[..end]).into_owned();
    let sig = dynamic_method_sig(r.rt, md)?;
    let params = crate::metadata::format_method_params(&sig, &HandleNames { r });
    Ok(format!("{class}.{name}{params}"))
}

/// The stored signature of the dynamic MethodDesc at `md` (`StoredSigMethodDesc::m_pSig`,
/// `m_cSig`): runtime-made, its types TypeHandles (`ELEMENT_TYPE_INTERNAL`). What the DAC's
/// `MetaSig(MethodDesc*)` reads for a method without metadata (`GetNumArguments`).
pub fn dynamic_method_sig<M: Memory>(
    rt: &crate::discovery::runtime::Runtime<M>,
    md: u64,
) -> crate::Result<crate::metadata::MethodSig> {
    let l = rt
        .layout
        .methods
        .dynamic
        .ok_or_else(|| crate::ClrError::NotVerified {
            runtime: rt.layout.name.to_owned(),
            capability: "dynamic methods' signatures (StoredSigMethodDesc)",
        })?;
    let m = rt.memory();
    let sig_at = m.read_u64(md.wrapping_add(l.sig)).map_err(|_| {
        crate::ClrError::read("StoredSigMethodDesc::m_pSig", md.wrapping_add(l.sig))
    })?;
    let sig_len = m.read_u32(md.wrapping_add(l.sig_len)).map_err(|_| {
        crate::ClrError::read("StoredSigMethodDesc::m_cSig", md.wrapping_add(l.sig_len))
    })? as usize;
    if sig_len == 0 || sig_len > 0x10000 {
        return Err(crate::ClrError::corrupt(
            "StoredSigMethodDesc",
            md,
            format!("a signature of {sig_len} bytes"),
        ));
    }
    let mut blob = vec![0u8; sig_len];
    m.read_exact(sig_at, &mut blob)
        .map_err(|_| crate::ClrError::read("the dynamic method's signature", sig_at))?;
    crate::metadata::decode_method_sig(&blob)
        .map_err(|e| crate::ClrError::metadata("the dynamic method's signature", e))
}

/// Names the TypeHandles of a runtime-made signature (no module's tokens in it).
struct HandleNames<'a, 'r, M: Memory> {
    r: &'a ObjectReader<'r, M>,
}

impl<M: Memory> crate::metadata::SigResolver for HandleNames<'_, '_, M> {
    fn type_name(
        &self,
        token: crate::metadata::Token,
        _style: crate::metadata::SigStyle,
        out: &mut String,
    ) {
        out.push_str(&format!("<token {:#x}>", token.0));
    }

    fn type_handle_name(&self, handle: u64, _style: crate::metadata::SigStyle) -> Option<String> {
        (handle & 2 == 0).then(|| self.r.type_name(handle))
    }

    fn generic_definition_name(
        &self,
        handle: u64,
        _style: crate::metadata::SigStyle,
    ) -> Option<String> {
        (handle & 2 == 0).then(|| {
            self.r
                .names
                .definition_name(self.r.rt, handle)
                .unwrap_or_else(|e| format!("<unknown type: {e}>"))
        })
    }
}
