//! A generic method's instantiation (MethodDesc classification 5, InstantiatedMethodDesc): the
//! TypeHandles of its method type arguments, and the `[[Arg, assembly],...]` form in which the
//! DAC's GetMethodDescName prints them after the method's name. One place for both the stack
//! walker's frame names and [`crate::model::methods::method_desc_name`].

use crate::data::types::ReadTypes;
use crate::discovery::runtime::Runtime;
use crate::model::names::TypeNames;
use dumpreader::Memory;

/// The InstantiatedMethodDesc classification (`m_wFlags & 7`).
pub const CLASSIFICATION_INSTANTIATED: u8 = 5;
/// Bound on a method's generic arguments read.
const MAX_METHOD_ARGS: u16 = 64;

/// The method instantiation of the MethodDesc at `md` of classification `classification`:
/// for an InstantiatedMethodDesc whose kind (`m_wFlags2 & 7`) is an unshared, shared or
/// wrapper instantiation (2, 3, 4; 1 is the generic definition), the TypeHandles its
/// dictionary (`m_pPerInstInfo`) starts with, `m_wNumGenericArgs` of them (kinds as the cDAC's
/// `InstantiatedMethodDescFlags2`; a wrapper may have none). Empty for any other MethodDesc,
/// and where the family's layout does not say where they are
/// ([`crate::discovery::layout::MethodsLayout::instantiated`]).
pub fn method_instantiation<M: Memory>(
    rt: &Runtime<M>,
    md: u64,
    classification: u8,
) -> crate::Result<Vec<u64>> {
    if classification != CLASSIFICATION_INSTANTIATED {
        return Ok(Vec::new());
    }
    let Some(l) = rt.layout.methods.instantiated else {
        return Ok(Vec::new());
    };
    let m = rt.memory();
    let at = |off: u64| md.wrapping_add(off);
    let kind = m
        .read_u16(at(l.flags2))
        .map_err(|_| crate::ClrError::read("InstantiatedMethodDesc::m_wFlags2", at(l.flags2)))?
        & 7;
    if !(2..=4).contains(&kind) {
        return Ok(Vec::new());
    }
    let n = m.read_u16(at(l.num_generic_args)).map_err(|_| {
        crate::ClrError::read(
            "InstantiatedMethodDesc::m_wNumGenericArgs",
            at(l.num_generic_args),
        )
    })?;
    // An instantiating stub of a generic type's non-generic method is a wrapper with no
    // method arguments of its own (asyncreal-net9-debug's `ContextCallback` targets).
    if n == 0 {
        return Ok(Vec::new());
    }
    if n > MAX_METHOD_ARGS {
        return Err(crate::ClrError::corrupt(
            "InstantiatedMethodDesc::m_wNumGenericArgs",
            at(l.num_generic_args),
            format!("an instantiation of {n} generic arguments"),
        ));
    }
    let dict = m.read_u64(at(l.per_inst_info)).map_err(|_| {
        crate::ClrError::read(
            "InstantiatedMethodDesc::m_pPerInstInfo",
            at(l.per_inst_info),
        )
    })?;
    if dict == 0 {
        return Err(crate::ClrError::corrupt(
            "InstantiatedMethodDesc::m_pPerInstInfo",
            at(l.per_inst_info),
            "an instantiation without a dictionary (null)",
        ));
    }
    (0..u64::from(n))
        .map(|i| {
            let a = dict.wrapping_add(8 * i);
            m.read_u64(a)
                .map_err(|_| crate::ClrError::read("a generic method's dictionary", a))
        })
        .collect()
}

/// The method instantiation as the DAC prints it after the method's name:
/// `[[Names.Slot, names],[System.__Canon, System.Private.CoreLib]]` (each argument's name and
/// its assembly's simple name); empty for no arguments.
pub fn instantiation_suffix<M: Memory>(
    rt: &Runtime<M>,
    names: &TypeNames,
    args: &[u64],
) -> crate::Result<String> {
    if args.is_empty() {
        return Ok(String::new());
    }
    let mut out = String::from("[");
    for (i, &a) in args.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let n = names.name(rt, a)?;
        let asm = rt
            .method_table(a)
            .and_then(|m| m.require_module())
            .and_then(|m| names.module_metadata(rt, m))
            .map(|m| m.assembly.clone())?;
        out.push_str(&format!("[{n}, {asm}]"));
    }
    out.push(']');
    Ok(out)
}

/// The primitive types the DAC names without their namespace in a signature.
const SHORT_NAMED: &[&str] = &[
    "Void",
    "Boolean",
    "Char",
    "SByte",
    "Byte",
    "Int16",
    "UInt16",
    "Int32",
    "UInt32",
    "Int64",
    "UInt64",
    "Single",
    "Double",
    "IntPtr",
    "UIntPtr",
    "TypedReference",
];

/// A type as the DAC spells it inside a method's parameter list: primitives short (`Char`),
/// other types with their namespace, nested types by their own name only, instantiations as
/// `Name`1<Arg,...>`, arrays as `Element[]`.
pub fn signature_type_name<M: Memory>(
    rt: &Runtime<M>,
    names: &TypeNames,
    th: u64,
    depth: u32,
) -> String {
    let name = names.name_or_note(rt, th);
    if let Some(short) = name.strip_prefix("System.") {
        if SHORT_NAMED.contains(&short) {
            return short.to_string();
        }
    }
    if th & 2 != 0 || depth > 8 {
        return name;
    }
    let Ok(info) = rt.method_table(th) else {
        return name;
    };
    if let Some(a) = info.array {
        let dims = if a.is_sz {
            String::new()
        } else {
            ",".repeat(a.rank.saturating_sub(1) as usize)
        };
        return format!(
            "{}[{dims}]",
            signature_type_name(rt, names, a.element, depth + 1)
        );
    }
    let bare = name.split('[').next().unwrap_or(&name);
    let bare = bare.rsplit('+').next().unwrap_or(bare).to_string();
    if info.type_args.is_empty() {
        return bare;
    }
    let args: Vec<String> = info
        .type_args
        .iter()
        .map(|&a| signature_type_name(rt, names, a, depth + 1))
        .collect();
    format!("{bare}<{}>", args.join(","))
}
