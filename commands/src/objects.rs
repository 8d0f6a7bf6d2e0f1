//! Object inspection commands: `dumpobj`, `dumpvc`, `dumparray`, `dumpmt`, `dumpclass`,
//! `dumpmd`, `name2ee`, `dumpmodule`, `objsize`, `gcwhere`, `verifyheap`.

use crate::addr::hex;
use crate::addr::{fmt_addr, parse_address, parse_count};
use crate::output::{CommandError, Output};
use crate::session::clr;
use crate::session::{Clr, Session};
use crate::spec::CommandSpec;
use crate::text::{render, table};
use clap::{Arg, ArgAction, ArgMatches, Command};
use clrdata::model::objects::{
    elem, element_type_name, gc_where, primitive_size, verify_heap, FieldData, FieldValue,
    ObjectReader,
};
use clrdata::prelude::*;
use serde::Serialize;
use serde_json::{json, Value};
use std::sync::Arc;

/// The object commands.
pub static SPECS: &[CommandSpec] =
    &[
        CommandSpec {
            name: "dumpobj",
            aliases: &["do"],
            about: "an object: type, size, and every field with its value",
            grammar: || {
                Command::new("dumpobj")
                    .arg(addr_arg("address", "the object's address"))
                    .arg(flag("nofields", "only the header, no fields"))
            },
            run: dumpobj,
        },
        CommandSpec {
            name: "dumpvc",
            aliases: &[],
            about: "a value type's fields, given its MethodTable and address",
            grammar: || {
                Command::new("dumpvc")
                    .arg(addr_arg("mt", "the value type's MethodTable"))
                    .arg(addr_arg("address", "where the value is stored"))
            },
            run: dumpvc,
        },
        CommandSpec {
            name: "dumparray",
            aliases: &["da"],
            about: "an array's shape and elements",
            grammar: || {
                Command::new("dumparray")
                    .arg(addr_arg("address", "the array's address"))
                    .arg(
                        Arg::new("start")
                            .long("start")
                            .value_name("N")
                            .help("first element listed"),
                    )
                    .arg(
                        Arg::new("length")
                            .long("length")
                            .value_name("N")
                            .help("number of elements listed"),
                    )
                    .arg(flag(
                        "details",
                        "the fields of each element (dumpobj / dumpvc)",
                    ))
                    .arg(flag("nofields", "with -details: no fields"))
            },
            run: dumparray,
        },
        CommandSpec {
            name: "dumpmt",
            aliases: &[],
            about: "a MethodTable: name, sizes, flags, module",
            grammar: || {
                Command::new("dumpmt")
                    .arg(addr_arg("mt", "the MethodTable"))
                    .arg(flag(
                        "md",
                        "its methods: entry point, MethodDesc, JIT state, slot, name",
                    ))
            },
            run: dumpmt,
        },
        CommandSpec {
            name: "dumpclass",
            aliases: &[],
            about: "an EEClass: name, parent, field counts, fields with static values",
            grammar: || Command::new("dumpclass").arg(addr_arg("eeclass", "the EEClass")),
            run: dumpclass,
        },
        CommandSpec {
            name: "dumpmd",
            aliases: &[],
            about: "a MethodDesc: method name, token, class, MethodTable",
            grammar: || Command::new("dumpmd").arg(addr_arg("md", "the MethodDesc")),
            run: dumpmd,
        },
        CommandSpec {
            name: "name2ee",
            aliases: &[],
            about: "finds a type by name in a module (or * for all): token, MethodTable, EEClass",
            grammar: || {
                Command::new("name2ee")
                    .arg(Arg::new("module").required(true).help(
                        "module file or assembly name (heap.dll, heap), or *; or module!Type",
                    ))
                    .arg(Arg::new("type").help("full type name (Namespace.Outer+Inner`1)"))
            },
            run: name2ee,
        },
        CommandSpec {
            name: "dumpmodule",
            aliases: &[],
            about: "a Module: name, image, metadata",
            grammar: || Command::new("dumpmodule").arg(addr_arg("module", "the Module")),
            run: dumpmodule,
        },
        CommandSpec {
            name: "objsize",
            aliases: &[],
            about: "the size of an object and everything it references (retained graph)",
            grammar: || Command::new("objsize").arg(addr_arg("address", "the object's address")),
            run: objsize,
        },
        CommandSpec {
            name: "gcwhere",
            aliases: &[],
            about: "which GC heap, segment and generation an address is in",
            grammar: || Command::new("gcwhere").arg(addr_arg("address", "an address")),
            run: gcwhere,
        },
        CommandSpec {
            name: "verifyheap",
            aliases: &[],
            about: "checks every object's MethodTable and that every reference points at an object",
            grammar: || {
                Command::new("verifyheap").arg(
                    Arg::new("max")
                        .long("max")
                        .value_name("N")
                        .help("stop after N problems (default 100)"),
                )
            },
            run: verifyheap,
        },
    ];

fn addr_arg(name: &'static str, help: &'static str) -> Arg {
    Arg::new(name).required(true).help(help)
}

fn flag(name: &'static str, help: &'static str) -> Arg {
    Arg::new(name)
        .long(name)
        .action(ArgAction::SetTrue)
        .help(help)
}

fn addr(m: &ArgMatches, name: &str) -> Result<u64, CommandError> {
    let t = m
        .get_one::<String>(name)
        .ok_or_else(|| CommandError::Usage {
            message: format!("missing <{name}>"),
        })?;
    parse_address(t)
}

type Reader<'a> = ObjectReader<'a, Arc<dyn dumpreader::Target>>;

fn reader(c: &Clr) -> Reader<'_> {
    ObjectReader::new(&c.rt, &c.names)
}

// ------------------------------------------------------------------------------ field output

#[derive(Serialize)]
pub struct FieldOut {
    pub name: String,
    pub token: String,
    pub offset: u32,
    #[serde(rename = "type")]
    pub type_name: String,
    pub type_mt: Option<String>,
    pub element_type: &'static str,
    pub vt: bool,
    pub attr: &'static str,
    pub address: Option<String>,
    pub declaring_mt: String,
    /// The value: a number, bool, "0x.." pointer, null, or an object
    /// `{address, mt, type, string?}` / struct `{address, mt, type}` / `{unavailable}`.
    pub value: Value,
    /// The value as the text table prints it.
    pub value_text: String,
    /// A thread-static's value on each thread that has one: `[{thread (managed id),
    /// thread_address, address, value}]`; null for other fields.
    pub thread_values: Option<Vec<Value>>,
}

pub(crate) fn value_json(r: &Reader<'_>, v: &FieldValue) -> Value {
    match v {
        FieldValue::Bool { value } => json!(value),
        FieldValue::Char { value } => json!(value),
        FieldValue::Int { value } => json!(value),
        FieldValue::UInt { value } => json!(value),
        FieldValue::Float { value } => json!(value),
        FieldValue::Pointer { value } => json!(hex(*value)),
        FieldValue::Object { address: 0, .. } => Value::Null,
        FieldValue::Object {
            address,
            mt,
            string,
        } => {
            let mut o = json!({
                "address": hex(*address),
                "mt": mt.map(hex),
                "type": mt.map(|m| r.type_name(m)),
            });
            if let Some(s) = string {
                o["string"] = json!(s);
            }
            o
        }
        FieldValue::ValueType { address, mt } => json!({
            "address": hex(*address),
            "mt": mt.map(hex),
            "type": mt.map(|m| r.type_name(m)),
        }),
        FieldValue::Unavailable { reason } => json!({ "unavailable": reason }),
    }
}

fn field_out(r: &Reader<'_>, f: &FieldData) -> FieldOut {
    let mut out = field_out_plain(r, f);
    if f.attr == "TLstatic" {
        // As SOS: `>> Thread:Value <managed id>:<value> ... <<`.
        match r.thread_static_addresses(f.declaring_mt, f.offset, f.element_type) {
            Ok(list) => {
                let mut text = String::from(">> Thread:Value");
                let mut values = Vec::new();
                for (id, thread, a) in list {
                    let v = r.read_value(a, f.element_type, f.type_mt);
                    let vt = match &v {
                        FieldValue::Object { address: 0, .. } => "0000000000000000".into(),
                        v => v.display(),
                    };
                    text.push_str(&format!(" {id:x}:{vt}"));
                    values.push(json!({
                        "thread": id,
                        "thread_address": hex(thread),
                        "address": hex(a),
                        "value": value_json(r, &v),
                    }));
                }
                text.push_str(" <<");
                out.value = json!({
                    "unavailable": "thread-static: one value per thread (see thread_values)"
                });
                out.value_text = text;
                out.thread_values = Some(values);
            }
            Err(e) => {
                out.value = json!({ "unavailable": e });
                out.value_text = format!("<{e}>");
            }
        }
    }
    out
}

/// The MethodTables of array and generic instantiation field types still unknown (a null
/// value, an embedded struct, or no instance, as in `dumpclass`): the loaded type of exactly
/// that name, when exactly one has it, among the constructed types (EETypeHashTable) loaded by
/// CoreLib and by the modules of the declaring types and their type arguments; the DAC looks
/// the field's type up in such tables. Where a table is not read (Windows) they stay 0.
fn fill_type_mts(c: &Clr, fields: &mut [FieldOut]) {
    let wanted = |f: &FieldOut| f.type_mt.is_none() && f.type_name.ends_with(']');
    if !fields.iter().any(wanted) {
        return;
    }
    let r = reader(c);
    let mut mods: Vec<u64> = r.corelib_module().into_iter().collect();
    for f in fields.iter() {
        let Some(decl) = parse_address(&f.declaring_mt).ok().and_then(|m| r.mt(m)) else {
            continue;
        };
        let args = decl
            .type_args
            .iter()
            .filter_map(|&a| r.mt(a))
            .filter_map(|i| i.module);
        for m in decl.module.into_iter().chain(args) {
            if !mods.contains(&m) {
                mods.push(m);
            }
        }
    }
    let mut candidates: Vec<u64> = Vec::new();
    for m in mods {
        if let Ok(ths) = clrdata::model::methods::available_param_types(&r, m) {
            candidates.extend(ths.into_iter().filter(|th| th & 2 == 0));
        }
    }
    candidates.sort_unstable();
    candidates.dedup();
    let mut by_name: std::collections::HashMap<String, Option<u64>> =
        std::collections::HashMap::new();
    for mt in candidates {
        by_name
            .entry(unqualified_name(&c.type_name(mt)))
            .and_modify(|v| *v = None)
            .or_insert(Some(mt));
    }
    for f in fields.iter_mut().filter(|f| wanted(f)) {
        if let Some(Some(mt)) = by_name.get(&unqualified_name(&f.type_name)) {
            f.type_mt = Some(hex(*mt));
        }
    }
}

/// A type name without its generic arguments' assembly names, in one bracket style:
/// `List`1[[Heap.Person, heap]]` and `List`1[Heap.Person]` both give `List`1[Heap.Person]`
/// (field signatures name arguments either way, and a facade's `mscorlib` where the runtime
/// says `System.Private.CoreLib`).
fn unqualified_name(name: &str) -> String {
    // Drop ", Assembly" before a closing bracket (an assembly qualifier; argument lists and
    // array ranks have no space after their commas).
    let mut s = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(at) = rest.find(", ") {
        let after = &rest[at + 2..];
        let end = after.find([']', '[', ',']).unwrap_or(after.len());
        s.push_str(&rest[..at]);
        if after[end..].starts_with(']') {
            rest = &after[end..];
        } else {
            s.push_str(", ");
            rest = after;
        }
    }
    s.push_str(rest);
    // Then `[[A],[B]]` → `[A,B]`.
    s.replace("],[", ",").replace("[[", "[").replace("]]", "]")
}

fn field_out_plain(r: &Reader<'_>, f: &FieldData) -> FieldOut {
    FieldOut {
        name: f.name.clone(),
        token: format!("{:x}", f.token),
        offset: f.offset,
        type_name: f.type_name.clone(),
        type_mt: f.type_mt.map(hex),
        element_type: element_type_name(f.element_type),
        vt: f.is_value_type,
        attr: f.attr,
        address: f.address.map(hex),
        declaring_mt: hex(f.declaring_mt),
        value: value_json(r, &f.value),
        value_text: match &f.value {
            FieldValue::Object { address: 0, .. } => "0000000000000000".into(),
            v => v.display(),
        },
        thread_values: None,
    }
}

/// The SOS field table: MT Field Offset Type VT Attr Value Name. Instance offsets are shown
/// from the object start (+8), as SOS does.
fn fields_text(fields: &[FieldOut], instance_base: u32) -> String {
    if fields.is_empty() {
        return "Fields:\nNone\n".into();
    }
    let mut tb = table(&[
        "MT", "Field", "Offset", "Type", "VT", "Attr", "Value", "Name",
    ]);
    for f in fields {
        let off = if f.attr == "instance" {
            f.offset + instance_base
        } else {
            f.offset
        };
        let mut ty = f.type_name.clone();
        if ty.len() > 40 {
            ty = format!("...{}", &ty[ty.len() - 37..]);
        }
        let mut value = f.value_text.clone();
        if let Some(s) = f.value.get("string").and_then(Value::as_str) {
            let short: String = s.chars().take(40).flat_map(char::escape_debug).collect();
            value = format!("{value} \"{short}\"");
        }
        tb.add_row(vec![
            f.type_mt
                .as_deref()
                .map_or("0000000000000000".to_string(), |m| {
                    format!("{:0>16}", m.trim_start_matches("0x"))
                }),
            f.token.clone(),
            format!("{off:x}"),
            ty,
            (f.vt as u8).to_string(),
            f.attr.to_string(),
            value,
            f.name.clone(),
        ]);
    }
    for c in [2, 4, 6] {
        if let Some(col) = tb.column_mut(c) {
            col.set_cell_alignment(comfy_table::CellAlignment::Right);
        }
    }
    format!("Fields:\n{}", render(&tb))
}

// ------------------------------------------------------------------------------------ dumpobj

#[derive(Serialize)]
pub struct DumpObj {
    pub address: String,
    pub name: String,
    pub mt: String,
    pub ee_class: String,
    pub size: u64,
    pub file: String,
    pub string: Option<String>,
    pub string_length: Option<u32>,
    pub array: Option<ArrayOut>,
    pub fields: Vec<FieldOut>,
}

#[derive(Serialize)]
pub struct ArrayOut {
    pub rank: u32,
    pub length: u64,
    pub bounds: Vec<u32>,
    pub lower_bounds: Vec<i32>,
    pub element_mt: String,
    pub element_type: &'static str,
    pub element_type_name: String,
    pub component_size: u32,
    pub data: String,
}

fn array_out(r: &Reader<'_>, a: &clrdata::model::objects::ArrayData) -> ArrayOut {
    ArrayOut {
        rank: a.rank,
        length: a.length,
        bounds: a.bounds.clone(),
        lower_bounds: a.lower_bounds.clone(),
        element_mt: hex(a.element_mt),
        element_type: element_type_name(a.element_type),
        element_type_name: if a.element_mt & 2 != 0 {
            format!("<TypeDesc {:#x}>", a.element_mt)
        } else {
            r.type_name(a.element_mt)
        },
        component_size: a.component_size,
        data: hex(a.data),
    }
}

fn dumpobj(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let r = reader(&c);
    let a = addr(m, "address")?;
    let o = r.object(a, m.get_flag("nofields"))?;
    let mut res = DumpObj {
        address: hex(o.address),
        name: o.name.clone(),
        mt: hex(o.mt),
        ee_class: hex(o.ee_class),
        size: o.size,
        file: o.file.clone(),
        string: o.string.as_ref().map(|s| s.0.clone()),
        string_length: o.string.as_ref().map(|s| s.1),
        array: o.array.as_ref().map(|x| array_out(&r, x)),
        fields: o.fields.iter().map(|f| field_out(&r, f)).collect(),
    };
    fill_type_mts(&c, &mut res.fields);
    let mut t = String::new();
    t.push_str(&format!("Name:        {}\n", res.name));
    t.push_str(&format!("MethodTable: {}\n", fmt_addr(o.mt)));
    t.push_str(&format!("EEClass:     {}\n", fmt_addr(o.ee_class)));
    t.push_str(&format!("Size:        {}(0x{:x}) bytes\n", o.size, o.size));
    t.push_str(&format!("File:        {}\n", res.file));
    if let Some(st) = &res.string {
        let shown: String = st.chars().take(4096).collect();
        t.push_str(&format!("String:      {shown}\n"));
    }
    if let Some(a) = &res.array {
        t.push_str(&format!(
            "Array:       Rank {}, Number of elements {}, Type {}\n",
            a.rank, a.length, a.element_type
        ));
        t.push_str(&format!("Element Type:{}\n", a.element_type_name));
    }
    if !m.get_flag("nofields") && res.array.is_none() {
        t.push_str(&fields_text(&res.fields, 8));
    }
    Ok(Output::new("dumpobj", &res, t))
}

// ------------------------------------------------------------------------------------- dumpvc

#[derive(Serialize)]
pub struct DumpVc {
    pub address: String,
    pub name: String,
    pub mt: String,
    pub fields: Vec<FieldOut>,
}

fn dumpvc(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let r = reader(&c);
    let mt = addr(m, "mt")?;
    let a = addr(m, "address")?;
    let fields = r.value_type(mt, a)?;
    let mut res = DumpVc {
        address: hex(a),
        name: r.type_name(mt),
        mt: hex(mt),
        fields: fields.iter().map(|f| field_out(&r, f)).collect(),
    };
    fill_type_mts(&c, &mut res.fields);
    let mut t = format!("Name:        {}\nMethodTable: {}\n", res.name, fmt_addr(mt));
    t.push_str(&fields_text(&res.fields, 0));
    Ok(Output::new("dumpvc", &res, t))
}

// ---------------------------------------------------------------------------------- dumparray

#[derive(Serialize)]
pub struct DumpArray {
    pub address: String,
    pub name: String,
    pub mt: String,
    pub size: u64,
    pub array: ArrayOut,
    pub elements: Vec<ElementOut>,
}

#[derive(Serialize)]
pub struct ElementOut {
    pub index: u64,
    /// The indices per dimension (multi-dimensional arrays), in row-major order.
    pub indices: Vec<i64>,
    pub address: String,
    pub value: Value,
    pub fields: Option<Vec<FieldOut>>,
}

fn dumparray(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let r = reader(&c);
    let a = addr(m, "address")?;
    let (mt, info) = r.object_mt(a)?;
    let arr = r.array(a, &info)?.ok_or_else(|| {
        CommandError::not_found(
            format!("{a:#x}"),
            format!("not an array: it is a {}", r.type_name(mt)),
        )
    })?;
    let count = |n: &str| {
        m.get_one::<String>(n)
            .map(|v| parse_count(v))
            .transpose()
            
    };
    let start = count("start")?.unwrap_or(0);
    let length = count("length")?.unwrap_or(arr.length.saturating_sub(start));
    let end = start.saturating_add(length).min(arr.length);
    let details = m.get_flag("details");
    let comp = arr.component_size as u64;
    let et = arr.element_type;
    let elem_mt = (arr.element_mt & 2 == 0).then_some(arr.element_mt);
    let mut elements = Vec::new();
    for i in start..end {
        if i % 4096 == 0 && s.control.requested() {
            return Err(CommandError::Cancelled);
        }
        let ea = arr.data + i * comp;
        // Row-major indices from the flat index.
        let mut indices = vec![0i64; arr.bounds.len()];
        let mut rest = i;
        for d in (0..arr.bounds.len()).rev() {
            let b = arr.bounds[d].max(1) as u64;
            indices[d] = (rest % b) as i64 + arr.lower_bounds[d] as i64;
            rest /= b;
        }
        let v = if et == elem::VALUETYPE {
            FieldValue::ValueType {
                address: ea,
                mt: elem_mt,
            }
        } else if primitive_size(et) != 0 && primitive_size(et) == comp {
            r.read_value(ea, et, elem_mt)
        } else {
            r.read_value(ea, elem::CLASS, elem_mt)
        };
        let fields = if details {
            match &v {
                FieldValue::ValueType {
                    address,
                    mt: Some(vm),
                } => Some(r.value_type(*vm, *address)?),
                FieldValue::Object { address, .. } if *address != 0 => {
                    let o = r.object(*address, m.get_flag("nofields"))?;
                    Some(o.fields)
                }
                _ => None,
            }
        } else {
            None
        };
        elements.push(ElementOut {
            index: i,
            indices,
            address: hex(ea),
            value: value_json(&r, &v),
            fields: fields.map(|fs| fs.iter().map(|f| field_out(&r, f)).collect()),
        });
    }
    let res = DumpArray {
        address: hex(a),
        name: r.type_name(mt),
        mt: hex(mt),
        size: r.object_size(a, &info)?,
        array: array_out(&r, &arr),
        elements,
    };
    let mut t = String::new();
    t.push_str(&format!("Name:        {}\n", res.name));
    t.push_str(&format!("MethodTable: {}\n", fmt_addr(mt)));
    t.push_str(&format!("EEClass:     {}\n", fmt_addr(info.ee_class)));
    t.push_str(&format!(
        "Size:        {}(0x{:x}) bytes\n",
        res.size, res.size
    ));
    t.push_str(&format!(
        "Array:       Rank {}, Number of elements {}, Type {}\n",
        arr.rank,
        arr.length,
        element_type_name(et)
    ));
    if arr.rank > 1 {
        t.push_str(&format!(
            "Bounds:      [{}], lower bounds [{}]\n",
            arr.bounds
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(","),
            arr.lower_bounds
                .iter()
                .map(i32::to_string)
                .collect::<Vec<_>>()
                .join(",")
        ));
    }
    t.push_str(&format!(
        "Element Methodtable: {} ({})\n",
        fmt_addr(arr.element_mt),
        res.array.element_type_name
    ));
    for e in &res.elements {
        let idx = if e.indices.len() > 1 {
            e.indices
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(",")
        } else {
            e.index.to_string()
        };
        let v = match &e.value {
            Value::Null => "null".to_string(),
            Value::Object(o) => {
                let mut s = o
                    .get("address")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .trim_start_matches("0x")
                    .to_string();
                s = format!("{s:0>16}");
                if let Some(st) = o.get("string").and_then(Value::as_str) {
                    let short: String = st.chars().take(60).flat_map(char::escape_debug).collect();
                    s.push_str(&format!(" \"{short}\""));
                }
                s
            }
            other => other.to_string(),
        };
        t.push_str(&format!("[{idx}] {v}\n"));
        if let Some(fs) = &e.fields {
            for line in fields_text(fs, 0).lines() {
                t.push_str(&format!("    {line}\n"));
            }
        }
    }
    Ok(Output::new("dumparray", &res, t))
}

// ------------------------------------------------------------------------------------- dumpmt

#[derive(Serialize)]
pub struct DumpMt {
    pub mt: String,
    pub name: String,
    pub ee_class: String,
    pub module: Option<String>,
    pub token: Option<String>,
    pub file: String,
    pub parent: String,
    pub canonical: String,
    pub base_size: u32,
    pub component_size: u32,
    pub flags: String,
    pub flags2: String,
    pub dynamic_statics: bool,
    pub contains_pointers: bool,
    pub is_value_type: bool,
    pub is_array: bool,
    pub is_interface: bool,
    pub has_finalizer: bool,
    pub vtable_slots: u16,
    pub interfaces: u16,
    pub type_args: Vec<String>,
    pub num_methods: Option<u32>,
    pub methods: Option<DumpMtMethods>,
}

#[derive(Serialize)]
pub struct DumpMtMethods {
    pub num_virtuals: u16,
    pub num_vtable_slots: u16,
    pub num_methods: u32,
    pub slots: Vec<DumpMtSlot>,
}

#[derive(Serialize)]
pub struct DumpMtSlot {
    pub slot: u32,
    pub entry: String,
    pub method_desc: Option<String>,
    pub jit: &'static str,
    pub name: Option<String>,
    pub error: Option<String>,
}

fn dumpmt(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let r = reader(&c);
    let mt = addr(m, "mt")?;
    let i =
        c.rt.method_table(mt)
            .map_err(|e| CommandError::clr(format!("{mt:#x} is not a MethodTable"), e))?;
    let mut res = DumpMt {
        mt: hex(mt),
        name: r.type_name(mt),
        ee_class: hex(i.ee_class),
        module: i.module.map(hex),
        token: i.token.map(|t| format!("{t:016x}")),
        file: r.module_file(&i),
        parent: hex(i.parent),
        canonical: hex(i.canonical),
        base_size: i.base_size,
        component_size: i.component_size,
        flags: format!("{:#x}", i.flags),
        flags2: format!("{:#x}", i.flags2),
        dynamic_statics: r.has_dynamic_statics(&i),
        contains_pointers: i.contains_pointers(),
        is_value_type: i.is_value_type(),
        is_array: i.is_array(),
        is_interface: i.is_interface(),
        has_finalizer: i.has_finalizer(),
        vtable_slots: i.num_virtuals,
        interfaces: i.num_interfaces,
        type_args: i.type_args.iter().map(|&a| hex(a)).collect(),
        num_methods: clrdata::model::methods::slot_counts(&r, mt)
            .ok()
            .map(|c| c.2),
        methods: None,
    };
    let mut md_text = None;
    if m.get_flag("md") {
        let w = clrdata::model::stack::StackWalker::for_target(&c.rt, &c.names);
        let mm = clrdata::model::methods::method_table_methods(&r, &w, mt)
            .map_err(|e| CommandError::clr(format!("the methods of MethodTable {mt:#x}"), e))?;
        let mut tb = table(&["Entry", "MethodDesc", "JIT", "Slot", "Name"]);
        for s in &mm.slots {
            tb.add_row(vec![
                fmt_addr(s.entry),
                s.method_desc
                    .map_or_else(|| "0000000000000000".into(), fmt_addr),
                s.jit.as_str().to_string(),
                format!("{:x}", s.slot),
                match (&s.name, &s.error) {
                    (Some(n), _) => n.clone(),
                    (None, Some(e)) => format!("<{e}>"),
                    (None, None) => String::new(),
                },
            ]);
        }
        md_text = Some(render(&tb));
        res.methods = Some(DumpMtMethods {
            num_virtuals: mm.num_virtuals,
            num_vtable_slots: mm.num_vtable_slots,
            num_methods: mm.num_methods,
            slots: mm
                .slots
                .iter()
                .map(|s| DumpMtSlot {
                    slot: s.slot,
                    entry: hex(s.entry),
                    method_desc: s.method_desc.map(hex),
                    jit: s.jit.as_str(),
                    name: s.name.clone(),
                    error: s.error.clone(),
                })
                .collect(),
        });
    }
    let mut t = String::new();
    t.push_str(&format!("EEClass:         {}\n", fmt_addr(i.ee_class)));
    t.push_str(&format!(
        "Module:          {}\n",
        i.module
            .map_or("<module override, not read>".into(), fmt_addr)
    ));
    t.push_str(&format!("Name:            {}\n", res.name));
    t.push_str(&format!(
        "mdToken:         {}\n",
        res.token.as_deref().unwrap_or("<none>")
    ));
    t.push_str(&format!("File:            {}\n", res.file));
    t.push_str(&format!("BaseSize:        {:#x}\n", i.base_size));
    t.push_str(&format!("ComponentSize:   {:#x}\n", i.component_size));
    t.push_str(&format!("DynamicStatics:  {}\n", res.dynamic_statics));
    t.push_str(&format!("ContainsPointers: {}\n", res.contains_pointers));
    // SOS prints the type's slot count (the DAC's wNumMethods) here.
    t.push_str(&format!(
        "Slots in VTable: {}\n",
        res.num_methods.map_or_else(
            || format!("<unknown> ({} virtual)", i.num_virtuals),
            |n| n.to_string()
        )
    ));
    t.push_str(&format!(
        "Number of IFaces in IFaceMap: {}\n",
        i.num_interfaces
    ));
    if let Some(md) = md_text {
        t.push_str("--------------------------------------\n");
        t.push_str("MethodDesc Table\n");
        t.push_str(&md);
    }
    Ok(Output::new("dumpmt", &res, t))
}

// ---------------------------------------------------------------------------------- dumpclass

#[derive(Serialize)]
pub struct DumpClass {
    pub ee_class: String,
    pub name: String,
    pub mt: String,
    pub token: Option<String>,
    pub file: String,
    pub parent_class: Option<String>,
    pub module: Option<String>,
    pub attributes: String,
    pub num_instance_fields: usize,
    pub num_static_fields: usize,
    pub fields: Vec<FieldOut>,
}

fn dumpclass(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let r = reader(&c);
    let ee = addr(m, "eeclass")?;
    let (mt, attr) =
        c.rt.ee_class_header(ee)
            .map_err(|e| CommandError::clr(format!("{ee:#x} is not an EEClass"), e))?;
    let info = c.rt.method_table(mt).map_err(|e| {
        CommandError::clr(format!("{ee:#x} is not an EEClass: its MethodTable {mt:#x}"), e)
    })?;
    if info.ee_class != ee {
        return Err(CommandError::not_found(
            format!("{ee:#x}"),
            format!(
                "not an EEClass: its m_pMethodTable {mt:#x} has EEClass {:#x}",
                info.ee_class
            ),
        ));
    }
    let attr = attr.unwrap_or(0);
    // Instance fields read nothing (no instance): the table lists them with their offsets;
    // statics with their values.
    let own = c.rt.fields(&info)?;
    let all = r.fields(mt, 0, true)?;
    let mut fields: Vec<FieldOut> = Vec::new();
    for f in &all {
        let mut fo = field_out(&r, f);
        if f.attr == "instance" {
            fo.value = Value::Null;
            fo.value_text = String::new();
            fo.address = None;
        }
        fields.push(fo);
    }
    fill_type_mts(&c, &mut fields);
    let parent_class = (info.parent != 0)
        .then(|| c.rt.method_table(info.parent).ok().map(|p| hex(p.ee_class)))
        .flatten();
    let res = DumpClass {
        ee_class: hex(ee),
        name: r.type_name(mt),
        mt: hex(mt),
        token: info.token.map(|t| format!("{t:016x}")),
        file: r.module_file(&info),
        parent_class,
        module: info.module.map(hex),
        attributes: format!("{attr:x}"),
        num_instance_fields: fields.iter().filter(|f| f.attr == "instance").count(),
        num_static_fields: own.iter().filter(|f| f.is_static).count(),
        fields,
    };
    let mut t = String::new();
    t.push_str(&format!("Class Name:      {}\n", res.name));
    t.push_str(&format!(
        "mdToken:         {}\n",
        res.token.as_deref().unwrap_or("<none>")
    ));
    t.push_str(&format!("File:            {}\n", res.file));
    t.push_str(&format!(
        "Parent Class:    {}\n",
        res.parent_class.as_deref().unwrap_or("0000000000000000")
    ));
    t.push_str(&format!(
        "Module:          {}\n",
        res.module.as_deref().unwrap_or("<not read>")
    ));
    t.push_str(&format!("Method Table:    {}\n", fmt_addr(mt)));
    t.push_str(&format!("Class Attributes:    {}\n", res.attributes));
    t.push_str(&format!(
        "NumInstanceFields:   {:x}\n",
        res.num_instance_fields
    ));
    t.push_str(&format!(
        "NumStaticFields:     {:x}\n",
        res.num_static_fields
    ));
    t.push_str(&fields_text(&res.fields, 8));
    Ok(Output::new("dumpclass", &res, t))
}

// ------------------------------------------------------------------------------------- dumpmd

#[derive(Serialize)]
pub struct DumpMd {
    pub method_desc: String,
    pub method_name: String,
    pub class: String,
    pub mt: String,
    pub token: String,
    pub chunk: String,
    pub slot: u16,
    pub classification: u16,
    pub module: Option<String>,
    pub entry_point: Option<String>,
    pub is_jitted: bool,
    pub code_kind: &'static str,
    pub code_address: Option<String>,
}

fn dumpmd(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let r = reader(&c);
    let md = addr(m, "md")?;
    let not_md = format!("{md:#x} is not a MethodDesc");
    let d = clrdata::model::methods::method_desc(&r, md)
        .map_err(|e| CommandError::clr(not_md.clone(), e))?;
    let info = c.rt.method_table(d.method_table).map_err(|e| {
        CommandError::clr(
            format!("{not_md}: its chunk's MethodTable {:#x}", d.method_table),
            e,
        )
    })?;
    if d.classification != 4 && d.token & 0xFF_FFFF == 0 {
        return Err(CommandError::not_found(not_md, "a null MethodDef token"));
    }
    let name = clrdata::model::methods::method_desc_name(&r, &d)
        .map_err(|e| CommandError::clr(not_md.clone(), e))?;
    let w = clrdata::model::stack::StackWalker::for_target(&c.rt, &c.names);
    let entry = clrdata::model::methods::method_entry_point(&r, &d).ok();
    let (code, jit) = entry.map_or((None, clrdata::model::methods::JitState::None), |e| {
        clrdata::model::methods::native_code(&r, &w, &d, e)
    });
    let res = DumpMd {
        method_desc: hex(md),
        method_name: name,
        class: hex(info.ee_class),
        mt: hex(d.method_table),
        token: format!("{:08x}", d.token),
        chunk: hex(d.chunk),
        slot: d.slot,
        classification: d.classification as u16,
        module: info.module.map(hex),
        entry_point: entry.map(hex),
        is_jitted: code.is_some(),
        code_kind: jit.as_str(),
        code_address: code.map(hex),
    };
    let mut t = String::new();
    t.push_str(&format!("Method Name:          {}\n", res.method_name));
    t.push_str(&format!(
        "Class:                {}\n",
        fmt_addr(info.ee_class)
    ));
    t.push_str(&format!(
        "MethodTable:          {}\n",
        fmt_addr(d.method_table)
    ));
    t.push_str(&format!("mdToken:              {:016x}\n", d.token));
    t.push_str(&format!(
        "Module:               {}\n",
        info.module
            .map_or("<module override, not read>".into(), fmt_addr)
    ));
    t.push_str(&format!(
        "IsJitted:             {}\n",
        if res.is_jitted { "yes" } else { "no" }
    ));
    t.push_str(&format!(
        "Current CodeAddr:     {}\n",
        code.map_or("ffffffffffffffff".into(), fmt_addr)
    ));
    t.push_str(&format!("Slot:                 {:x}\n", d.slot));
    Ok(Output::new("dumpmd", &res, t))
}

// ------------------------------------------------------------------------------------ name2ee

#[derive(Serialize)]
pub struct Name2Ee {
    pub query: String,
    pub matches: Vec<Name2EeMatch>,
    pub modules_searched: Vec<String>,
}

#[derive(Serialize)]
pub struct Name2EeMatch {
    pub module: String,
    pub assembly: String,
    pub file: String,
    pub token: String,
    pub name: String,
    pub mt: Option<String>,
    pub ee_class: Option<String>,
}

/// The modules the session knows: those of the heap's types, plus CoreLib's.
fn known_modules(c: &Clr, r: &Reader<'_>) -> Result<Vec<u64>, CommandError> {
    let heap = c.heap()?;
    let mts: Vec<u64> = heap.census(&c.rt).types.iter().map(|t| t.mt).collect();
    Ok(clrdata::analysis::roots::modules_of_types(r, &mts))
}

fn name2ee(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let r = reader(&c);
    let first = m.get_one::<String>("module").cloned().unwrap_or_default();
    let (module_q, type_q) = match m.get_one::<String>("type") {
        Some(t) => (first, t.clone()),
        None => match first.split_once('!') {
            Some((a, b)) => (a.to_string(), b.to_string()),
            None => {
                return Err(CommandError::Usage {
                    message: "usage: name2ee <module|*> <type name>  or  name2ee \
                              <module>!<type name>"
                        .into(),
                })
            }
        },
    };
    let mods = known_modules(&c, &r)?;
    let mut matches = Vec::new();
    let mut searched = Vec::new();
    let want = module_q.to_ascii_lowercase();
    for &md in &mods {
        let Ok(data) = c.rt.module(md) else { continue };
        let file = data
            .path
            .rsplit(['/', '\\'])
            .next()
            .unwrap_or("")
            .to_string();
        let asm = c
            .names
            .module_metadata(&c.rt, md)
            .map(|x| x.assembly.clone())
            .unwrap_or_else(|_| data.simple_name.clone());
        let ok = want == "*"
            || file.to_ascii_lowercase() == want
            || asm.to_ascii_lowercase() == want
            || data.simple_name.to_ascii_lowercase() == want;
        if !ok {
            continue;
        }
        searched.push(data.path.clone());
        if let Some(rid) = r.find_typedef(md, &type_q) {
            let mt = r.typedef_mt(md, rid);
            let ee = mt.and_then(|x| r.mt(x)).map(|i| hex(i.ee_class));
            matches.push(Name2EeMatch {
                module: hex(md),
                assembly: asm,
                file: data.path.clone(),
                token: format!("{:08x}", 0x0200_0000 | rid),
                name: type_q.clone(),
                mt: mt.map(hex),
                ee_class: ee,
            });
        }
    }
    if searched.is_empty() {
        return Err(CommandError::not_found(
            format!("module '{module_q}'"),
            "no loaded module is named so (modules known from the heap's types and CoreLib)",
        ));
    }
    let mut t = String::new();
    for mm in &matches {
        t.push_str(&format!(
            "Module:      {}\n",
            mm.module.trim_start_matches("0x")
        ));
        t.push_str(&format!("Assembly:    {}\n", mm.assembly));
        t.push_str(&format!("Token:       {}\n", mm.token));
        t.push_str(&format!(
            "MethodTable: {}\n",
            mm.mt
                .as_deref()
                .map_or("<not loaded>".to_string(), |x| format!(
                    "{:0>16}",
                    x.trim_start_matches("0x")
                ))
        ));
        t.push_str(&format!(
            "EEClass:     {}\n",
            mm.ee_class
                .as_deref()
                .map_or("<not loaded>".to_string(), |x| format!(
                    "{:0>16}",
                    x.trim_start_matches("0x")
                ))
        ));
        t.push_str(&format!("Name:        {}\n", mm.name));
        t.push_str("--------------------------------------\n");
    }
    if matches.is_empty() {
        t.push_str(&format!(
            "'{type_q}' is not a TypeDef of the {} module(s) searched\n",
            searched.len()
        ));
    }
    let res = Name2Ee {
        query: format!("{module_q}!{type_q}"),
        matches,
        modules_searched: searched,
    };
    Ok(Output::new("name2ee", &res, t))
}

// --------------------------------------------------------------------------------- dumpmodule

#[derive(Serialize)]
pub struct DumpModule {
    pub module: String,
    pub name: String,
    pub assembly: Option<String>,
    pub path: String,
    pub pe_assembly: String,
    pub pe_image: String,
    pub image_base: String,
    pub image_size: u32,
    pub mapped: bool,
    pub metadata: Option<String>,
    pub metadata_size: Option<u32>,
    pub domain_local_module: Option<String>,
    pub type_defs: Option<u32>,
}

fn dumpmodule(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let r = reader(&c);
    let a = addr(m, "module")?;
    let d =
        c.rt.module(a)
            .map_err(|e| CommandError::clr(format!("{a:#x} is not a Module"), e))?;
    let md = c.names.module_metadata(&c.rt, a).ok();
    let res = DumpModule {
        module: hex(a),
        name: d.simple_name.clone(),
        assembly: md.as_ref().map(|x| x.assembly.clone()),
        path: d.path.clone(),
        pe_assembly: hex(d.pe_assembly),
        pe_image: hex(d.pe_image),
        image_base: hex(d.image_base),
        image_size: d.image_size,
        mapped: d.mapped,
        metadata: d.metadata.map(|x| hex(x.0)),
        metadata_size: d.metadata.map(|x| x.1),
        domain_local_module: r.domain_local_module(a).ok().map(hex),
        type_defs: md.as_ref().and_then(|x| {
            x.metadata()
                .ok()
                .map(|m| m.row_count(clrdata::metadata::TableId::TypeDef))
        }),
    };
    let mut t = String::new();
    t.push_str(&format!("Name:            {}\n", res.path));
    t.push_str(&format!(
        "Assembly:        {}\n",
        res.assembly.as_deref().unwrap_or(&res.name)
    ));
    t.push_str(&format!("PEAssembly:      {}\n", fmt_addr(d.pe_assembly)));
    t.push_str(&format!("PEImage:         {}\n", fmt_addr(d.pe_image)));
    t.push_str(&format!(
        "BaseAddress:     {} ({} layout, {:#x} bytes)\n",
        fmt_addr(d.image_base),
        if d.mapped { "mapped" } else { "flat" },
        d.image_size
    ));
    match d.metadata {
        Some((ma, ms)) => t.push_str(&format!(
            "MetaData start address:  {} ({ms} bytes)\n",
            fmt_addr(ma)
        )),
        None => t.push_str("MetaData:        not in the dump\n"),
    }
    if let Some(dlm) = &res.domain_local_module {
        t.push_str(&format!("DomainLocalModule: {dlm}\n"));
    }
    if let Some(n) = res.type_defs {
        t.push_str(&format!("TypeDefs:        {n}\n"));
    }
    Ok(Output::new("dumpmodule", &res, t))
}

// ------------------------------------------------------------------------------------ objsize

#[derive(Serialize)]
pub struct ObjSize {
    pub address: String,
    pub name: String,
    pub objects: u64,
    pub size: u64,
    pub errors: Vec<String>,
}

fn objsize(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let r = reader(&c);
    let a = addr(m, "address")?;
    let (mt, _) = r.object_mt(a)?;
    let (objects, size, errors) = r.retained_size(a, 50_000_000)?;
    let res = ObjSize {
        address: hex(a),
        name: r.type_name(mt),
        objects,
        size,
        errors,
    };
    let mut t = format!(
        "Objects which {} ({}) transitively keeps alive: {}\nTotal size: {} (0x{:x}) bytes\n",
        fmt_addr(a),
        res.name,
        objects,
        size,
        size
    );
    for e in &res.errors {
        t.push_str(&format!("error: {e}\n"));
    }
    Ok(Output::new("objsize", &res, t))
}

// ------------------------------------------------------------------------------------ gcwhere

fn gcwhere(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let heap = c.heap()?;
    let a = addr(m, "address")?;
    let w = gc_where(heap, a).ok_or_else(|| {
        CommandError::not_found(format!("{a:#x}"), "not in the GC heap (no segment holds it)")
    })?;
    let res = json!({
        "address": hex(w.address),
        "heap": w.heap,
        "segment": hex(w.segment),
        "kind": w.kind,
        "generation": w.generation,
        "begin": hex(w.begin),
        "allocated": hex(w.allocated),
        "committed": hex(w.committed),
        "beyond_allocated": w.beyond_allocated,
    });
    let mut tb = table(&[
        "Address",
        "Heap",
        "Segment",
        "Generation",
        "Begin",
        "Allocated",
        "Committed",
    ]);
    tb.add_row(vec![
        fmt_addr(a),
        w.heap.to_string(),
        fmt_addr(w.segment),
        match w.generation {
            Some(g) => format!("{g} ({})", w.kind),
            None => w.kind.to_string(),
        },
        fmt_addr(w.begin),
        fmt_addr(w.allocated),
        fmt_addr(w.committed),
    ]);
    let mut t = render(&tb);
    if w.beyond_allocated {
        t.push_str("(past the segment's allocated end: not inside an object)\n");
    }
    Ok(Output::new("gcwhere", &res, t))
}

// --------------------------------------------------------------------------------- verifyheap

fn verifyheap(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let r = reader(&c);
    let heap = c.heap()?;
    let max = m
        .get_one::<String>("max")
        .map(|v| parse_count(v))
        .transpose()
        ?
        .unwrap_or(100) as usize;
    let v = verify_heap(&r, heap, max);
    let res = json!({
        "objects": v.objects,
        "references": v.references,
        "errors": v.problems.len(),
        "problems": v.problems.iter().map(|p| json!({
            "object": hex(p.object),
            "mt": hex(p.mt),
            "slot": p.slot.map(hex),
            "target": p.target.map(hex),
            "detail": p.detail,
        })).collect::<Vec<_>>(),
    });
    let mut t = String::new();
    for p in &v.problems {
        t.push_str(&format!(
            "object {} (MT {}): {}\n",
            fmt_addr(p.object),
            fmt_addr(p.mt),
            p.detail
        ));
    }
    if v.problems.is_empty() {
        t.push_str(&format!(
            "No heap corruption detected: {} objects and {} references checked.\n",
            v.objects, v.references
        ));
    } else {
        t.push_str(&format!(
            "{} problem(s) found ({} objects, {} references checked).\n",
            v.problems.len(),
            v.objects,
            v.references
        ));
    }
    Ok(Output::new("verifyheap", &res, t))
}
