//! `ConcurrentDictionary<TKey, TValue>` contents (`dumpconcurrentdictionary`).
//!
//! Read by field name, as the BCL's sources name them (dotnet/runtime
//! System.Collections.Concurrent; .NET Framework's names start `m_`):
//! - the dictionary's `_tables` is a `Tables` whose `_buckets` is an array of buckets: since
//!   .NET 8 `VolatileNode` structs (one field, `_node`), before that the `Node` references
//!   themselves (told apart by the array's element type, never by the runtime's version);
//! - each bucket heads a chain of `Node`s (`_key`, `_value`, `_next`).
//!
//! Entries come in bucket order, each chain from its head: the order SOS lists them in.

use crate::model::fields::{field, obj, object_fields};
use crate::model::objects::{FieldData, ObjectReader};
use crate::ClrError;
use dumpreader::Memory;
use serde::Serialize;
use std::collections::HashSet;

/// Bound on the entries read from one dictionary.
pub const MAX_ENTRIES: usize = 1_000_000;

/// One key/value pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DictionaryEntry {
    /// Its bucket's index.
    pub bucket: u64,
    /// The `Node`.
    pub node: u64,
    /// Its `_key` field (declared type, value, address).
    pub key: FieldData,
    /// Its `_value` field.
    pub value: FieldData,
}

/// A ConcurrentDictionary's contents.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConcurrentDictionaryData {
    /// The dictionary.
    pub address: u64,
    /// Its MethodTable.
    pub mt: u64,
    /// Its type.
    pub type_name: String,
    /// `_tables`.
    pub tables: u64,
    /// `_tables._buckets`.
    pub buckets: u64,
    /// The bucket count.
    pub bucket_count: u64,
    /// The entries, in bucket order.
    pub entries: Vec<DictionaryEntry>,
    /// Whether reading stopped at the limit asked for.
    pub cut: bool,
    /// What could not be read.
    pub errors: Vec<String>,
}

/// Whether `type_name` (the DAC's form) is a `ConcurrentDictionary<TKey, TValue>` itself (not
/// one of its nested types).
pub fn is_concurrent_dictionary(type_name: &str) -> bool {
    type_name
        .strip_prefix("System.Collections.Concurrent.ConcurrentDictionary`2[[")
        .is_some()
}

/// The first of `names` that `f` has, and its field.
fn either<'f>(f: &'f [FieldData], names: &[&'static str]) -> Option<(&'static str, &'f FieldData)> {
    names.iter().find_map(|n| field(f, n).map(|d| (*n, d)))
}

/// Reads the entries of the `ConcurrentDictionary<TKey, TValue>` at `addr` (at most `limit`).
pub fn concurrent_dictionary<M: Memory>(
    r: &ObjectReader<'_, M>,
    addr: u64,
    limit: usize,
) -> crate::Result<ConcurrentDictionaryData> {
    let (mt, f) = object_fields(r, addr, "ConcurrentDictionary")?;
    let type_name = r.type_name(mt);
    if !is_concurrent_dictionary(&type_name) {
        return Err(ClrError::not_found_at(
            "a ConcurrentDictionary",
            addr,
            format!("the object is a {type_name}"),
        ));
    }
    let no_field = |t: &str, n: &str| ClrError::NoSuchField {
        type_name: t.into(),
        field: n.into(),
        is_static: false,
    };
    let (_, tf) =
        either(&f, &["_tables", "m_tables"]).ok_or_else(|| no_field(&type_name, "_tables"))?;
    let tables = tf.value.address().unwrap_or(0);
    if tables == 0 {
        return Err(ClrError::not_found_at("_tables", addr, "null"));
    }
    let (_, t) = object_fields(r, tables, "the dictionary's Tables")?;
    let (_, bf) =
        either(&t, &["_buckets", "m_buckets"]).ok_or_else(|| no_field("Tables", "_buckets"))?;
    let buckets = bf.value.address().unwrap_or(0);
    if buckets == 0 {
        return Err(ClrError::not_found_at("_tables._buckets", tables, "null"));
    }
    let (bmt, binfo) = r.object_mt(buckets).map_err(|e| e.context("_buckets"))?;
    let arr = r
        .array(buckets, &binfo)
        .map_err(|e| e.context("_buckets"))?
        .ok_or_else(|| {
            ClrError::corrupt(
                "_buckets",
                buckets,
                format!("a {}, not an array", r.type_name(bmt)),
            )
        })?;
    let mut out = ConcurrentDictionaryData {
        address: addr,
        mt,
        type_name,
        tables,
        buckets,
        bucket_count: arr.length,
        entries: Vec::new(),
        cut: false,
        errors: Vec::new(),
    };
    // .NET 8+: VolatileNode structs, the node in their `_node` field; before: Node references.
    let node_offset = if arr.element_type == crate::model::objects::elem::VALUETYPE {
        let first = r
            .value_type(arr.element_mt, arr.data)
            .map_err(|e| e.context("_buckets' VolatileNode"))?;
        let n = field(&first, "_node").ok_or_else(|| no_field("VolatileNode", "_node"))?;
        u64::from(n.offset)
    } else {
        0
    };
    let mem = r.rt.memory();
    let mut seen = HashSet::new();
    for i in 0..arr.length {
        let slot = arr.data + i * u64::from(arr.component_size) + node_offset;
        let mut node = match mem.read_u64(slot) {
            Ok(n) => n,
            Err(_) => {
                out.errors
                    .push(format!("bucket {i}: not in the dump at {slot:#x}"));
                continue;
            }
        };
        while node != 0 {
            if out.entries.len() >= limit {
                out.cut = true;
                return Ok(out);
            }
            if !seen.insert(node) {
                out.errors.push(format!(
                    "bucket {i}: node {node:#x} met twice (a cycle): stopped"
                ));
                break;
            }
            let nf = match object_fields(r, node, "Node") {
                Ok((_, nf)) => nf,
                Err(e) => {
                    out.errors.push(format!(
                        "bucket {i}: node {node:#x}: {e}; the rest of its chain is lost"
                    ));
                    break;
                }
            };
            let (Some((_, key)), Some((_, value))) = (
                either(&nf, &["_key", "m_key"]),
                either(&nf, &["_value", "m_value"]),
            ) else {
                return Err(no_field("ConcurrentDictionary Node", "_key and _value"));
            };
            out.entries.push(DictionaryEntry {
                bucket: i,
                node,
                key: key.clone(),
                value: value.clone(),
            });
            node = either(&nf, &["_next", "m_next"]).map_or(0, |(n, _)| obj(&nf, n));
        }
    }
    Ok(out)
}
