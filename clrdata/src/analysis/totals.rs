//! Per-type totals of a set of objects (`dumpheap -stat`, `objsize`): one row per MethodTable,
//! ordered as SOS users read them.

use crate::discovery::runtime::Runtime;
use crate::model::names::TypeNames;
use dumpreader::Memory;
use serde::Serialize;
use std::collections::HashMap;

/// The objects of one type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TypeTotal {
    /// The MethodTable.
    pub mt: u64,
    /// Objects counted.
    pub count: u64,
    /// Their total size.
    pub total_size: u64,
    /// The type's name (or why it is unknown).
    pub name: String,
}

/// The rows of `by` (MethodTable → (count, total size)), named, largest total size first,
/// then count, then name.
pub fn type_totals<M: Memory>(
    rt: &Runtime<M>,
    names: &TypeNames,
    by: &HashMap<u64, (u64, u64)>,
) -> Vec<TypeTotal> {
    let mut types: Vec<TypeTotal> = by
        .iter()
        .map(|(&mt, &(count, total_size))| TypeTotal {
            mt,
            count,
            total_size,
            name: names.name_or_note(rt, mt),
        })
        .collect();
    types.sort_by(|a, b| {
        b.total_size
            .cmp(&a.total_size)
            .then(b.count.cmp(&a.count))
            .then(a.name.cmp(&b.name))
            // Two MethodTables may share a name (one type loaded twice, e.g. by two
            // contexts): their order must not depend on the hash map's.
            .then(a.mt.cmp(&b.mt))
    });
    types
}
