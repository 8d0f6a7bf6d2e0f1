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
    let text =
        m.assembly_string_attribute("System.Reflection", "AssemblyInformationalVersionAttribute")?;
    let product = text.split(['+', '-', ' ']).next()?;
    let parts: Vec<&str> = product.split('.').collect();
    (parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())))
    .then(|| product.to_owned())
}
