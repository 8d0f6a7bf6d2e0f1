//! The runtime's version as CoreLib's own metadata states it: for a runtime whose image and
//! path name none (a single-file host whose read-only data is not in the dump), discovery asks
//! this once a layout's sanity checks passed ([`crate::discovery::runtime::CoreLibVersion`]).

use crate::discovery::runtime::Runtime;
use dumpreader::Memory;

/// The product version in CoreLib's `AssemblyInformationalVersionAttribute`
/// (`8.0.4+2d7eea25...` → `8.0.4`), read from its metadata in the dump.
pub fn corelib_informational_version<M: Memory>(rt: &Runtime<M>) -> Option<String> {
    let names = crate::model::names::TypeNames::new();
    let r = crate::model::objects::ObjectReader::new(rt, &names);
    let module = r.corelib_module()?;
    let md = names.module_metadata(rt, module).ok()?;
    let m = md.metadata().ok()?;
    let assembly = crate::metadata::Token::new(crate::metadata::TableId::Assembly, 1);
    for rid in m.custom_attributes(assembly).ok()? {
        let Ok(ca) = m.custom_attribute(rid) else {
            continue;
        };
        // The attribute's type: CoreLib defines it, so the constructor is a MethodDef.
        if ca.constructor.table() != Some(crate::metadata::TableId::MethodDef) {
            continue;
        }
        let Some(owner) = m.method_owner(ca.constructor.rid()).ok().flatten() else {
            continue;
        };
        let is_info = m.type_def(owner).is_ok_and(|t| {
            t.namespace == "System.Reflection" && t.name == "AssemblyInformationalVersionAttribute"
        });
        if !is_info {
            continue;
        }
        // Blob: prolog 01 00, then a SerString (compressed length, UTF-8).
        let v = ca.value;
        if v.len() < 3 || v[0] != 1 || v[1] != 0 {
            return None;
        }
        let (len, n) = crate::metadata::read_compressed_u32(v, 2)?;
        let at = 2 + n;
        let text = std::str::from_utf8(v.get(at..at + len as usize)?).ok()?;
        let product = text.split(['+', '-', ' ']).next()?;
        let parts: Vec<&str> = product.split('.').collect();
        if parts.len() == 3
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        {
            return Some(product.to_owned());
        }
        return None;
    }
    None
}
