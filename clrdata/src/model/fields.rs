//! Named fields out of a decoded field list ([`ObjectReader::fields`]): what the readers of
//! runtime objects (tasks, timers, the thread pool, async boxes) share.
//!
//! A derived class's field of the same name comes after its base's in the list, so the last
//! match is the most derived (the base's, when wanted, is the first match).

use crate::model::objects::{FieldData, FieldValue, ObjectReader};
use dumpreader::Memory;

/// The field named `name` (the most derived one).
pub fn field<'f>(fields: &'f [FieldData], name: &str) -> Option<&'f FieldData> {
    fields.iter().rev().find(|f| f.name == name)
}

/// The object a reference field holds (0: null, absent, or not a reference).
pub fn obj(fields: &[FieldData], name: &str) -> u64 {
    match field(fields, name).map(|f| &f.value) {
        Some(FieldValue::Object { address, .. }) => *address,
        _ => 0,
    }
}

/// An integer, bool or pointer field's value.
pub fn int(fields: &[FieldData], name: &str) -> Option<i64> {
    match field(fields, name).map(|f| &f.value) {
        Some(FieldValue::Int { value }) => Some(*value),
        Some(FieldValue::UInt { value }) => Some(*value as i64),
        Some(FieldValue::Bool { value }) => Some(*value as i64),
        Some(FieldValue::Pointer { value }) => Some(*value as i64),
        _ => None,
    }
}

/// The MethodTable and instance fields of the object at `addr`; the error names `what` it was.
pub fn object_fields<M: Memory>(
    r: &ObjectReader<'_, M>,
    addr: u64,
    what: &str,
) -> crate::Result<(u64, Vec<FieldData>)> {
    let (mt, _) = r.object_mt(addr).map_err(|e| e.context(what))?;
    let f = r
        .fields(mt, addr + 8, false)
        .map_err(|e| e.context(format!("the fields of {what} {addr:#x}")))?;
    Ok((mt, f))
}

/// The fields of the struct field `f` holds inline; the error names `what` it was.
pub fn struct_fields<M: Memory>(
    r: &ObjectReader<'_, M>,
    f: &FieldData,
    what: &str,
) -> crate::Result<Vec<FieldData>> {
    match &f.value {
        FieldValue::ValueType {
            address,
            mt: Some(mt),
        } => r
            .fields(*mt, *address, false)
            .map_err(|e| e.context(format!("{what} at {address:#x}"))),
        v => Err(crate::ClrError::not_found(
            what,
            format!("not a readable struct ({})", v.display()),
        )),
    }
}
