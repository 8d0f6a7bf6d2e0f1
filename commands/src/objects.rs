//! Object inspection commands: `dumpobj`, `dumpvc`, `dumparray`, `dumpmt`, `dumpclass`,
//! `dumpmd`, `name2ee`, `dumpmodule`, `objsize`, `gcwhere`, `verifyheap`.

use crate::addr::hex;
use crate::addr::{fmt_addr, parse_address, parse_count};
use crate::output::{CommandError, Output, Render};
use crate::session::clr;
use crate::session::{Clr, Session};
use crate::spec::CommandSpec;
use crate::text::{render, table};
use clap::{Arg, ArgAction, ArgMatches, Command};
use clrdata::analysis::reach::Reached;
use clrdata::analysis::typesearch::{self, TypeSearch};
use clrdata::model::inspect::{
    self, ArrayListing, ArrayView, EeClassView, ElementRange, FieldView, InspectError,
    MethodDescView, MethodTableView, ModuleView, NamedValue, ObjectView, Shown, ValueView,
};
use clrdata::model::objects::{
    self, element_type_name, FieldValue, HeapVerification, ObjectReader,
};
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
            name: "dumpalc",
            aliases: &[],
            about: "the AssemblyLoadContext of an object's type (SOS's dumpalc): the managed \
                    AssemblyLoadContext object its module's assembly binder holds, shown as \
                    dumpobj shows it",
            grammar: || Command::new("dumpalc").arg(addr_arg("address", "the object's address")),
            run: dumpalc,
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
            aliases: &[],
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
            about: "every object an object keeps reachable (itself included, each once), per type",
            grammar: || {
                Command::new("objsize")
                    .arg(addr_arg("address", "the object's address"))
                    .arg(
                        Arg::new("stat")
                            .long("stat")
                            .visible_alias("summary")
                            .action(ArgAction::SetTrue)
                            .help("per-type statistics (the only form shown; SOS's -stat)"),
                    )
            },
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
        CommandSpec {
            name: "verifyobj",
            aliases: &[],
            about: "checks one object: on the heap, its MethodTable, that the heap walk starts an \
                    object there, and that every reference points at an object",
            grammar: || Command::new("verifyobj").arg(addr_arg("address", "the object's address")),
            run: verifyobj,
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

/// A required address argument of `m`.
pub(crate) fn addr(m: &ArgMatches, name: &str) -> Result<u64, CommandError> {
    let t = m
        .get_one::<String>(name)
        .ok_or_else(|| CommandError::Usage {
            message: format!("missing <{name}>"),
        })?;
    parse_address(t)
}

fn count(m: &ArgMatches, name: &str) -> Result<Option<u64>, CommandError> {
    m.get_one::<String>(name)
        .map(|v| parse_count(v))
        .transpose()
}

type Reader<'a> = ObjectReader<'a, Arc<dyn dumpreader::Target>>;

fn reader(c: &Clr) -> Reader<'_> {
    ObjectReader::new(&c.rt, &c.names)
}

impl From<InspectError> for CommandError {
    fn from(e: InspectError) -> CommandError {
        match e {
            InspectError::While { context, error } => CommandError::clr(context, error),
            InspectError::Refused { what, detail } => CommandError::not_found(what, detail),
            InspectError::Clr(error) => error.into(),
            InspectError::Cancelled => CommandError::Cancelled,
        }
    }
}

/// `impl Serialize` for a result whose JSON form is its `to_json()`.
macro_rules! serialize_as_json_form {
    ($($t:ty),*) => {$(
        impl Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                self.to_json().serialize(s)
            }
        }
    )*};
}

serialize_as_json_form!(
    DumpObj, DumpAlc, DumpVc, DumpArray, DumpMt, DumpClass, DumpMd, Name2Ee, DumpModule, ObjSize,
    GcWhere, VerifyHeap
);

// ------------------------------------------------------------------------------ field output

/// A value as JSON: a number, bool, "0x.." pointer, null, or an object `{address, mt, type,
/// string?}` / struct `{address, mt, type}` / `{unavailable}`.
fn named_json(v: &NamedValue) -> Value {
    match &v.value {
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
                "type": v.type_name,
            });
            if let Some(s) = string {
                o["string"] = json!(s);
            }
            o
        }
        FieldValue::ValueType { address, mt } => json!({
            "address": hex(*address),
            "mt": mt.map(hex),
            "type": v.type_name,
        }),
        FieldValue::Unavailable { reason } => json!({ "unavailable": reason }),
    }
}

/// `v` as JSON, the type it holds named (see `named_json`).
pub(crate) fn value_json(r: &Reader<'_>, v: &FieldValue) -> Value {
    named_json(&inspect::named_value(r, v.clone()))
}

/// A value as the field table's `Value` column shows it.
fn value_text(v: &FieldValue) -> String {
    match v {
        FieldValue::Object { address: 0, .. } => "0000000000000000".into(),
        v => v.display(),
    }
}

#[derive(Serialize)]
pub struct FieldJson {
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
    /// The first element type of the field's signature (the DAC's `sigType`).
    pub sig_element_type: &'static str,
    /// The TypeDef's metadata name when the signature is `CLASS <TypeDef>`.
    pub sig_typedef_name: Option<String>,
}

/// The `Value` column of a field: its value, a thread-static's `>> Thread:Value <managed
/// id>:<value> ... <<` (as SOS), or nothing without an instance.
fn field_value_text(v: &FieldView) -> String {
    match &v.shown {
        Shown::Value(nv) => value_text(&nv.value),
        Shown::PerThread(list) => {
            let mut text = String::from(">> Thread:Value");
            for t in list {
                text.push_str(&format!(" {:x}:{}", t.thread, value_text(&t.value.value)));
            }
            text.push_str(" <<");
            text
        }
        Shown::ThreadsUnread(e) => format!("<{e}>"),
        Shown::NoInstance => String::new(),
    }
}

fn field_json(v: &FieldView) -> FieldJson {
    let f = &v.field;
    let (value, thread_values) = match &v.shown {
        Shown::Value(nv) => (named_json(nv), None),
        Shown::PerThread(list) => (
            json!({ "unavailable": "thread-static: one value per thread (see thread_values)" }),
            Some(
                list.iter()
                    .map(|t| {
                        json!({
                            "thread": t.thread,
                            "thread_address": hex(t.thread_address),
                            "os_thread_id": t.os_thread_id,
                            "address": hex(t.address),
                            "value": named_json(&t.value),
                        })
                    })
                    .collect(),
            ),
        ),
        Shown::ThreadsUnread(e) => (json!({ "unavailable": e }), None),
        Shown::NoInstance => (Value::Null, None),
    };
    FieldJson {
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
        value,
        value_text: field_value_text(v),
        thread_values,
        sig_element_type: element_type_name(f.sig_element_type),
        sig_typedef_name: f.sig_typedef_name.clone(),
    }
}

fn fields_json(fields: &[FieldView]) -> Vec<FieldJson> {
    fields.iter().map(field_json).collect()
}

/// The SOS field table: MT Field Offset Type VT Attr Value Name. Instance offsets are shown
/// from the object start (+8), as SOS does.
fn fields_text(fields: &[FieldView], instance_base: u32) -> String {
    if fields.is_empty() {
        return "Fields:\nNone\n".into();
    }
    let mut tb = table(&[
        "MT", "Field", "Offset", "Type", "VT", "Attr", "Value", "Name",
    ]);
    for v in fields {
        let f = &v.field;
        let off = if f.attr == "instance" {
            f.offset + instance_base
        } else {
            f.offset
        };
        let mut ty = f.type_name.clone();
        if ty.len() > 40 {
            ty = format!("...{}", &ty[ty.len() - 37..]);
        }
        let mut value = field_value_text(v);
        if let Shown::Value(NamedValue {
            value:
                FieldValue::Object {
                    address,
                    string: Some(s),
                    ..
                },
            ..
        }) = &v.shown
        {
            if *address != 0 {
                let short: String = s.chars().take(40).flat_map(char::escape_debug).collect();
                value = format!("{value} \"{short}\"");
            }
        }
        tb.add_row(vec![
            f.type_mt.map_or("0000000000000000".to_string(), fmt_addr),
            format!("{:x}", f.token),
            format!("{off:x}"),
            ty,
            (f.is_value_type as u8).to_string(),
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

/// `dumpobj`'s result: the object, and what SOS shows that the view does not name (see
/// [`SosExtras`]).
pub struct DumpObj(pub ObjectView, pub SosExtras);

#[derive(Serialize)]
pub struct DumpObjJson {
    pub address: String,
    pub name: String,
    pub mt: String,
    pub ee_class: String,
    pub size: u64,
    pub unaligned_size: u64,
    pub free: bool,
    pub file: String,
    pub string: Option<String>,
    pub string_length: Option<u32>,
    pub array: Option<ArrayJson>,
    pub fields: Vec<FieldJson>,
}

#[derive(Serialize)]
pub struct ArrayJson {
    pub rank: u32,
    pub length: u64,
    pub bounds: Vec<u32>,
    pub lower_bounds: Vec<i32>,
    pub element_mt: String,
    pub element_type: &'static str,
    pub element_type_name: String,
    pub component_size: u32,
    pub data: String,
    pub content: String,
}

fn array_json(a: &ArrayView) -> ArrayJson {
    let s = &a.shape;
    ArrayJson {
        rank: s.rank,
        length: s.length,
        bounds: s.bounds.clone(),
        lower_bounds: s.lower_bounds.clone(),
        element_mt: hex(s.element_mt),
        element_type: element_type_name(s.element_type),
        element_type_name: a.element_type_name.clone(),
        component_size: s.component_size,
        data: hex(s.data),
        content: a.content.clone(),
    }
}

impl DumpObj {
    /// The JSON form (docs/json.md, `dumpobj`).
    pub fn to_json(&self) -> DumpObjJson {
        let o = &self.0.object;
        DumpObjJson {
            address: hex(o.address),
            name: o.name.clone(),
            mt: hex(o.mt),
            ee_class: hex(o.ee_class),
            size: o.size,
            unaligned_size: o.unaligned_size,
            free: o.is_free,
            file: o.file.clone(),
            string: o.string.as_ref().map(|s| s.0.clone()),
            string_length: o.string.as_ref().map(|s| s.1),
            array: self.0.array.as_ref().map(array_json),
            fields: fields_json(&self.0.fields),
        }
    }
}

impl Render for DumpObj {
    fn render(&self) -> String {
        sos_object_text(&self.0, &self.1)
    }
}

fn dumpobj(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let a = addr(m, "address")?;
    let r = reader(&c);
    let v = inspect::object_view(&r, a, m.get_flag("nofields"))?;
    let extras = sos_extras(&r, &v);
    Ok(Output::rendered("dumpobj", DumpObj(v, extras)))
}

// ------------------------------------------------------------------------------------ dumpalc

/// `dumpalc`'s result (SOS's PrintALC).
pub enum DumpAlc {
    /// The address holds a free block: SOS says so and stops.
    Free {
        /// Its address.
        address: u64,
        /// The free block's size.
        size: u64,
    },
    /// The object's type's module, its binder and the binder's handle (0: the managed
    /// AssemblyLoadContext does not exist yet, SOS names the default one); with the handle's
    /// object, that object as dumpobj shows it.
    Context {
        /// The object asked about.
        object: u64,
        /// Its MethodTable.
        mt: u64,
        /// The MethodTable's module.
        module: u64,
        /// The binder path.
        alc: clrdata::data::types::AlcData,
        /// The AssemblyLoadContext object, when there is one.
        view: Option<Box<(ObjectView, SosExtras)>>,
    },
}

#[derive(Serialize)]
pub struct DumpAlcJson {
    /// The object asked about.
    pub address: String,
    /// Whether it is a free block (nothing else is filled then but `size`).
    pub free: bool,
    /// A free block's size.
    pub size: Option<u64>,
    pub mt: Option<String>,
    pub module: Option<String>,
    pub pe_assembly: Option<String>,
    pub binder: Option<String>,
    /// The binder's GC handle of the managed AssemblyLoadContext ("0x0": none yet).
    pub handle: Option<String>,
    /// The managed AssemblyLoadContext as `dumpobj` gives it; null when it does not exist.
    pub context: Option<DumpObjJson>,
}

impl DumpAlc {
    /// The JSON form (docs/json.md, `dumpalc`).
    pub fn to_json(&self) -> DumpAlcJson {
        match self {
            DumpAlc::Free { address, size } => DumpAlcJson {
                address: hex(*address),
                free: true,
                size: Some(*size),
                mt: None,
                module: None,
                pe_assembly: None,
                binder: None,
                handle: None,
                context: None,
            },
            DumpAlc::Context {
                object,
                mt,
                module,
                alc,
                view,
            } => DumpAlcJson {
                address: hex(*object),
                free: false,
                size: None,
                mt: Some(hex(*mt)),
                module: Some(hex(*module)),
                pe_assembly: Some(hex(alc.pe_assembly)),
                binder: Some(hex(alc.binder)),
                handle: Some(hex(alc.handle)),
                context: view
                    .as_ref()
                    .map(|b| DumpObj(b.0.clone(), b.1.clone()).to_json()),
            },
        }
    }
}

impl Render for DumpAlc {
    fn render(&self) -> String {
        match self {
            DumpAlc::Free { size, .. } => {
                format!("Free Object\nSize:        {size}(0x{size:x}) bytes\n")
            }
            DumpAlc::Context { view: Some(b), .. } => sos_object_text(&b.0, &b.1),
            DumpAlc::Context { view: None, .. } => {
                "Name:        System.Runtime.Loader.DefaultAssemblyLoadContext\n\
                 The managed instance of this context doesn't exist yet\n"
                    .to_string()
            }
        }
    }
}

fn dumpalc(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    use clrdata::data::types::ReadTypes;
    let c = clr(s)?;
    let a = addr(m, "address")?;
    let r = reader(&c);
    let o = inspect::object_view(&r, a, true)?;
    if o.object.is_free {
        let size = o.object.unaligned_size;
        return Ok(Output::rendered(
            "dumpalc",
            DumpAlc::Free { address: a, size },
        ));
    }
    let mt = o.object.mt;
    let info = c.rt.method_table(mt).map_err(CommandError::from)?;
    let module = info.require_module().map_err(CommandError::from)?;
    let alc =
        c.rt.assembly_load_context(module)
            .map_err(CommandError::from)?;
    let view = if alc.object == 0 {
        None
    } else {
        let v = inspect::object_view(&r, alc.object, false)?;
        let x = sos_extras(&r, &v);
        Some(Box::new((v, x)))
    };
    Ok(Output::rendered(
        "dumpalc",
        DumpAlc::Context {
            object: a,
            mt,
            module,
            alc,
            view,
        },
    ))
}

// ------------------------------------------------------------------------------------- dumpvc

/// `dumpvc`'s result.
pub struct DumpVc(pub ValueView);

#[derive(Serialize)]
pub struct DumpVcJson {
    pub address: String,
    pub name: String,
    pub mt: String,
    pub fields: Vec<FieldJson>,
}

impl DumpVc {
    /// The JSON form (docs/json.md, `dumpvc`).
    pub fn to_json(&self) -> DumpVcJson {
        let v = &self.0;
        DumpVcJson {
            address: hex(v.address),
            name: v.name.clone(),
            mt: hex(v.mt),
            fields: fields_json(&v.fields),
        }
    }
}

impl Render for DumpVc {
    fn render(&self) -> String {
        let v = &self.0;
        let mut t = format!("Name:        {}\nMethodTable: {}\n", v.name, fmt_addr(v.mt));
        t.push_str(&fields_text(&v.fields, 0));
        t
    }
}

fn dumpvc(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let mt = addr(m, "mt")?;
    let a = addr(m, "address")?;
    let v = inspect::value_view(&reader(&c), mt, a)?;
    Ok(Output::rendered("dumpvc", DumpVc(v)))
}

// ---------------------------------------------------------------------------------- dumparray

/// `dumparray`'s result.
pub struct DumpArray(pub ArrayListing);

#[derive(Serialize)]
pub struct DumpArrayJson {
    pub address: String,
    pub name: String,
    pub mt: String,
    pub size: u64,
    pub array: ArrayJson,
    pub elements: Vec<ElementJson>,
}

#[derive(Serialize)]
pub struct ElementJson {
    pub index: u64,
    /// The indices per dimension (multi-dimensional arrays), in row-major order.
    pub indices: Vec<i64>,
    pub address: String,
    pub value: Value,
    pub fields: Option<Vec<FieldJson>>,
}

impl DumpArray {
    /// The JSON form (docs/json.md, `dumparray`).
    pub fn to_json(&self) -> DumpArrayJson {
        let l = &self.0;
        DumpArrayJson {
            address: hex(l.address),
            name: l.name.clone(),
            mt: hex(l.mt),
            size: l.size,
            array: array_json(&l.array),
            elements: l
                .elements
                .iter()
                .map(|e| ElementJson {
                    index: e.index,
                    indices: e.indices.clone(),
                    address: hex(e.address),
                    value: named_json(&e.value),
                    fields: e.fields.as_deref().map(fields_json),
                })
                .collect(),
        }
    }
}

/// An element's value as its line shows it: a reference or struct as its address (a string's
/// text quoted after it), `null`, else the value as JSON writes it.
fn element_text(v: &NamedValue) -> String {
    match named_json(v) {
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
    }
}

impl Render for DumpArray {
    fn render(&self) -> String {
        let l = &self.0;
        let arr = &l.array.shape;
        let mut t = String::new();
        t.push_str(&format!("Name:        {}\n", l.name));
        t.push_str(&format!("MethodTable: {}\n", fmt_addr(l.mt)));
        t.push_str(&format!("EEClass:     {}\n", fmt_addr(l.ee_class)));
        t.push_str(&format!("Size:        {}(0x{:x}) bytes\n", l.size, l.size));
        t.push_str(&format!(
            "Array:       Rank {}, Number of elements {}, Type {}\n",
            arr.rank,
            arr.length,
            element_type_name(arr.element_type)
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
            l.array.element_type_name
        ));
        for e in &l.elements {
            let idx = if e.indices.len() > 1 {
                e.indices
                    .iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            } else {
                e.index.to_string()
            };
            t.push_str(&format!("[{idx}] {}\n", element_text(&e.value)));
            if let Some(fs) = &e.fields {
                for line in fields_text(fs, 0).lines() {
                    t.push_str(&format!("    {line}\n"));
                }
            }
        }
        t
    }
}

fn dumparray(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let r = reader(&c);
    let a = addr(m, "address")?;
    let at = inspect::array_at(&r, a)?;
    let range = ElementRange {
        start: count(m, "start")?,
        length: count(m, "length")?,
        details: m.get_flag("details"),
        no_fields: m.get_flag("nofields"),
    };
    let l = inspect::array_elements(&r, at, range, &|| s.control.requested())?;
    Ok(Output::rendered("dumparray", DumpArray(l)))
}

// ------------------------------------------------------------------------------------- dumpmt

/// `dumpmt`'s result.
pub struct DumpMt(pub MethodTableView);

#[derive(Serialize)]
pub struct DumpMtJson {
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
    pub methods: Option<DumpMtMethodsJson>,
}

#[derive(Serialize)]
pub struct DumpMtMethodsJson {
    pub num_virtuals: u16,
    pub num_vtable_slots: u16,
    pub num_methods: u32,
    pub slots: Vec<DumpMtSlotJson>,
}

#[derive(Serialize)]
pub struct DumpMtSlotJson {
    pub slot: u32,
    pub entry: String,
    pub method_desc: Option<String>,
    pub jit: &'static str,
    pub name: Option<String>,
    pub error: Option<String>,
}

impl DumpMt {
    /// The JSON form (docs/json.md, `dumpmt`).
    pub fn to_json(&self) -> DumpMtJson {
        let v = &self.0;
        let i = &v.info;
        DumpMtJson {
            mt: hex(i.address),
            name: v.name.clone(),
            ee_class: hex(i.ee_class),
            module: i.module.map(hex),
            token: i.token.map(|t| format!("{t:016x}")),
            file: v.file.clone(),
            parent: hex(i.parent),
            canonical: hex(i.canonical),
            base_size: i.base_size,
            component_size: i.component_size,
            flags: format!("{:#x}", i.flags),
            flags2: format!("{:#x}", i.flags2),
            dynamic_statics: v.dynamic_statics,
            contains_pointers: i.contains_pointers(),
            is_value_type: i.is_value_type(),
            is_array: i.is_array(),
            is_interface: i.is_interface(),
            has_finalizer: i.has_finalizer(),
            vtable_slots: i.num_virtuals,
            interfaces: i.num_interfaces,
            type_args: i.type_args.iter().map(|&a| hex(a)).collect(),
            num_methods: v.num_methods,
            methods: v.methods.as_ref().map(|mm| DumpMtMethodsJson {
                num_virtuals: mm.num_virtuals,
                num_vtable_slots: mm.num_vtable_slots,
                num_methods: mm.num_methods,
                slots: mm
                    .slots
                    .iter()
                    .map(|s| DumpMtSlotJson {
                        slot: s.slot,
                        entry: hex(s.entry),
                        method_desc: s.method_desc.map(hex),
                        jit: s.jit.as_str(),
                        name: s.name.clone(),
                        error: s.error.clone(),
                    })
                    .collect(),
            }),
        }
    }
}

impl Render for DumpMt {
    fn render(&self) -> String {
        let v = &self.0;
        let i = &v.info;
        let mut t = String::new();
        t.push_str(&format!("EEClass:         {}\n", fmt_addr(i.ee_class)));
        t.push_str(&format!(
            "Module:          {}\n",
            i.module
                .map_or("<module override, not read>".into(), fmt_addr)
        ));
        t.push_str(&format!("Name:            {}\n", v.name));
        t.push_str(&format!(
            "mdToken:         {}\n",
            i.token
                .map_or_else(|| "<none>".to_string(), |t| format!("{t:016x}"))
        ));
        t.push_str(&format!("File:            {}\n", v.file));
        t.push_str(&format!("BaseSize:        {:#x}\n", i.base_size));
        t.push_str(&format!("ComponentSize:   {:#x}\n", i.component_size));
        t.push_str(&format!("DynamicStatics:  {}\n", v.dynamic_statics));
        t.push_str(&format!("ContainsPointers: {}\n", i.contains_pointers()));
        // SOS prints the type's slot count (the DAC's wNumMethods) here.
        t.push_str(&format!(
            "Slots in VTable: {}\n",
            v.num_methods.map_or_else(
                || format!("<unknown> ({} virtual)", i.num_virtuals),
                |n| n.to_string()
            )
        ));
        t.push_str(&format!(
            "Number of IFaces in IFaceMap: {}\n",
            i.num_interfaces
        ));
        if let Some(mm) = &v.methods {
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
            t.push_str("--------------------------------------\n");
            t.push_str("MethodDesc Table\n");
            t.push_str(&render(&tb));
        }
        t
    }
}

fn dumpmt(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let mt = addr(m, "mt")?;
    let v = inspect::method_table_view(&reader(&c), mt, m.get_flag("md"))?;
    Ok(Output::rendered("dumpmt", DumpMt(v)))
}

// ---------------------------------------------------------------------------------- dumpclass

/// `dumpclass`'s result.
pub struct DumpClass(pub EeClassView);

#[derive(Serialize)]
pub struct DumpClassJson {
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
    pub fields: Vec<FieldJson>,
}

impl DumpClass {
    /// The JSON form (docs/json.md, `dumpclass`).
    pub fn to_json(&self) -> DumpClassJson {
        let v = &self.0;
        DumpClassJson {
            ee_class: hex(v.ee_class),
            name: v.name.clone(),
            mt: hex(v.info.address),
            token: v.info.token.map(|t| format!("{t:016x}")),
            file: v.file.clone(),
            parent_class: v.parent_class.map(hex),
            module: v.info.module.map(hex),
            attributes: format!("{:x}", v.attributes),
            num_instance_fields: v.num_instance_fields(),
            num_static_fields: v.num_static_fields,
            fields: fields_json(&v.fields),
        }
    }
}

impl Render for DumpClass {
    fn render(&self) -> String {
        let v = &self.0;
        let mut t = String::new();
        t.push_str(&format!("Class Name:      {}\n", v.name));
        t.push_str(&format!(
            "mdToken:         {}\n",
            v.info
                .token
                .map_or_else(|| "<none>".to_string(), |t| format!("{t:016x}"))
        ));
        t.push_str(&format!("File:            {}\n", v.file));
        t.push_str(&format!(
            "Parent Class:    {}\n",
            v.parent_class
                .map_or_else(|| "0000000000000000".to_string(), hex)
        ));
        t.push_str(&format!(
            "Module:          {}\n",
            v.info.module.map_or_else(|| "<not read>".to_string(), hex)
        ));
        t.push_str(&format!("Method Table:    {}\n", fmt_addr(v.info.address)));
        t.push_str(&format!("Class Attributes:    {:x}\n", v.attributes));
        t.push_str(&format!(
            "NumInstanceFields:   {:x}\n",
            v.num_instance_fields()
        ));
        t.push_str(&format!("NumStaticFields:     {:x}\n", v.num_static_fields));
        t.push_str(&fields_text(&v.fields, 8));
        t
    }
}

fn dumpclass(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let ee = addr(m, "eeclass")?;
    let v = inspect::ee_class_view(&reader(&c), ee)?;
    Ok(Output::rendered("dumpclass", DumpClass(v)))
}

// ------------------------------------------------------------------------------------- dumpmd

/// `dumpmd`'s result.
pub struct DumpMd(pub MethodDescView);

#[derive(Serialize)]
pub struct DumpMdJson {
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

impl DumpMd {
    /// The JSON form (docs/json.md, `dumpmd`).
    pub fn to_json(&self) -> DumpMdJson {
        let v = &self.0;
        let d = &v.desc;
        DumpMdJson {
            method_desc: hex(d.address),
            method_name: v.name.clone(),
            class: hex(v.ee_class),
            mt: hex(d.method_table),
            token: format!("{:08x}", d.token),
            chunk: hex(d.chunk),
            slot: d.slot,
            classification: d.classification as u16,
            module: v.module.map(hex),
            entry_point: v.entry_point.map(hex),
            is_jitted: v.code.is_some(),
            code_kind: v.jit.as_str(),
            code_address: v.code.map(hex),
        }
    }
}

impl Render for DumpMd {
    fn render(&self) -> String {
        let v = &self.0;
        let d = &v.desc;
        let mut t = String::new();
        t.push_str(&format!("Method Name:          {}\n", v.name));
        t.push_str(&format!("Class:                {}\n", fmt_addr(v.ee_class)));
        t.push_str(&format!(
            "MethodTable:          {}\n",
            fmt_addr(d.method_table)
        ));
        t.push_str(&format!("mdToken:              {:016x}\n", d.token));
        t.push_str(&format!(
            "Module:               {}\n",
            v.module
                .map_or("<module override, not read>".into(), fmt_addr)
        ));
        t.push_str(&format!(
            "IsJitted:             {}\n",
            if v.code.is_some() { "yes" } else { "no" }
        ));
        t.push_str(&format!(
            "Current CodeAddr:     {}\n",
            v.code.map_or("ffffffffffffffff".into(), fmt_addr)
        ));
        t.push_str(&format!("Slot:                 {:x}\n", d.slot));
        t
    }
}

fn dumpmd(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let md = addr(m, "md")?;
    let v = inspect::method_desc_view(&reader(&c), md)?;
    Ok(Output::rendered("dumpmd", DumpMd(v)))
}

// ------------------------------------------------------------------------------------ name2ee

/// `name2ee`'s result: the type asked for, and where it was found.
pub struct Name2Ee {
    /// The modules asked for (a name, or `*`).
    pub module: String,
    /// The type asked for.
    pub type_name: String,
    /// What the search found.
    pub search: TypeSearch,
}

#[derive(Serialize)]
pub struct Name2EeJson {
    pub query: String,
    pub matches: Vec<Name2EeMatchJson>,
    pub modules_searched: Vec<String>,
}

#[derive(Serialize)]
pub struct Name2EeMatchJson {
    pub module: String,
    pub assembly: String,
    pub file: String,
    pub token: String,
    pub name: String,
    pub mt: Option<String>,
    pub ee_class: Option<String>,
}

impl Name2Ee {
    /// The JSON form (docs/json.md, `name2ee`).
    pub fn to_json(&self) -> Name2EeJson {
        Name2EeJson {
            query: format!("{}!{}", self.module, self.type_name),
            matches: self
                .search
                .matches
                .iter()
                .map(|mm| Name2EeMatchJson {
                    module: hex(mm.module),
                    assembly: mm.assembly.clone(),
                    file: mm.file.clone(),
                    token: format!("{:08x}", mm.token()),
                    name: mm.name.clone(),
                    mt: mm.mt.map(hex),
                    ee_class: mm.ee_class.map(hex),
                })
                .collect(),
            modules_searched: self.search.modules_searched.clone(),
        }
    }
}

impl Render for Name2Ee {
    fn render(&self) -> String {
        let mut t = String::new();
        let loaded = |a: Option<u64>| a.map_or("<not loaded>".to_string(), fmt_addr);
        for mm in &self.search.matches {
            t.push_str(&format!("Module:      {:x}\n", mm.module));
            t.push_str(&format!("Assembly:    {}\n", mm.assembly));
            t.push_str(&format!("Token:       {:08x}\n", mm.token()));
            t.push_str(&format!("MethodTable: {}\n", loaded(mm.mt)));
            t.push_str(&format!("EEClass:     {}\n", loaded(mm.ee_class)));
            t.push_str(&format!("Name:        {}\n", mm.name));
            t.push_str("--------------------------------------\n");
        }
        if self.search.matches.is_empty() {
            t.push_str(&format!(
                "'{}' is not a TypeDef of the {} module(s) searched\n",
                self.type_name,
                self.search.modules_searched.len()
            ));
        }
        t
    }
}

fn name2ee(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let first = m.get_one::<String>("module").cloned().unwrap_or_default();
    let (module, type_name) = match m.get_one::<String>("type") {
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
    let search = typesearch::find_type(&reader(&c), c.heap()?, &module, &type_name);
    if search.modules_searched.is_empty() {
        return Err(CommandError::not_found(
            format!("module '{module}'"),
            "no loaded module is named so (modules known from the heap's types and CoreLib)",
        ));
    }
    Ok(Output::rendered(
        "name2ee",
        Name2Ee {
            module,
            type_name,
            search,
        },
    ))
}

// --------------------------------------------------------------------------------- dumpmodule

/// `dumpmodule`'s result.
pub struct DumpModule(pub ModuleView);

#[derive(Serialize)]
pub struct DumpModuleJson {
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

impl DumpModule {
    /// The JSON form (docs/json.md, `dumpmodule`).
    pub fn to_json(&self) -> DumpModuleJson {
        let v = &self.0;
        let d = &v.data;
        DumpModuleJson {
            module: hex(d.address),
            name: d.simple_name.clone(),
            assembly: v.assembly.clone(),
            path: d.path.clone(),
            pe_assembly: hex(d.pe_assembly),
            pe_image: hex(d.pe_image),
            image_base: hex(d.image_base),
            image_size: d.image_size,
            mapped: d.mapped,
            metadata: d.metadata.map(|x| hex(x.0)),
            metadata_size: d.metadata.map(|x| x.1),
            domain_local_module: v.domain_local_module.map(hex),
            type_defs: v.type_defs,
        }
    }
}

impl Render for DumpModule {
    fn render(&self) -> String {
        let v = &self.0;
        let d = &v.data;
        let mut t = String::new();
        t.push_str(&format!("Name:            {}\n", d.path));
        t.push_str(&format!(
            "Assembly:        {}\n",
            v.assembly.as_deref().unwrap_or(&d.simple_name)
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
        if let Some(dlm) = v.domain_local_module {
            t.push_str(&format!("DomainLocalModule: {}\n", hex(dlm)));
        }
        if let Some(n) = v.type_defs {
            t.push_str(&format!("TypeDefs:        {n}\n"));
        }
        t
    }
}

fn dumpmodule(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let a = addr(m, "module")?;
    let v = inspect::module_view(&reader(&c), a)?;
    Ok(Output::rendered("dumpmodule", DumpModule(v)))
}

// ------------------------------------------------------------------------------------ objsize

/// `objsize`'s result.
pub struct ObjSize(pub Reached);

#[derive(Serialize)]
pub struct ObjSizeJson {
    pub address: String,
    pub mt: String,
    pub name: String,
    pub objects: u64,
    pub size: u64,
    pub types: Vec<ObjSizeType>,
    pub unreadable: u64,
    pub bitmap_bytes: u64,
    pub errors: Vec<String>,
}

#[derive(Serialize)]
pub struct ObjSizeType {
    pub mt: String,
    pub count: u64,
    pub total_size: u64,
    pub name: String,
}

impl ObjSize {
    /// The JSON form (docs/json.md, `objsize`).
    pub fn to_json(&self) -> ObjSizeJson {
        let v = &self.0;
        ObjSizeJson {
            address: hex(v.address),
            mt: hex(v.mt),
            name: v.name.clone(),
            objects: v.objects,
            size: v.size,
            types: v
                .types
                .iter()
                .map(|t| ObjSizeType {
                    mt: hex(t.mt),
                    count: t.count,
                    total_size: t.total_size,
                    name: t.name.clone(),
                })
                .collect(),
            unreadable: v.unreadable,
            bitmap_bytes: v.bitmap_bytes,
            errors: (v.unreadable > 0)
                .then(|| {
                    format!(
                        "{} reached object(s) whose references or size could not be read",
                        v.unreadable
                    )
                })
                .into_iter()
                .collect(),
        }
    }
}

impl Render for ObjSize {
    fn render(&self) -> String {
        let v = &self.0;
        let mut t = format!(
            "Objects which {} ({}) transitively keeps alive:\n\nStatistics:\n",
            fmt_addr(v.address),
            v.name,
        );
        let mut tb = table(&["MT", "Count", "TotalSize", "Class Name"]);
        // SOS order: smallest total first.
        for r in v.types.iter().rev() {
            tb.add_row(vec![
                format!("{:016x}", r.mt),
                r.count.to_string(),
                r.total_size.to_string(),
                r.name.clone(),
            ]);
        }
        t.push_str(&render(&tb));
        t.push_str(&format!(
            "Total {} objects, {} (0x{:x}) bytes\n",
            v.objects, v.size, v.size
        ));
        if v.unreadable > 0 {
            t.push_str(&format!(
                "error: {} reached object(s) whose references or size could not be read\n",
                v.unreadable
            ));
        }
        t
    }
}

fn objsize(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let a = addr(m, "address")?;
    let heap = c.heap()?;
    let v = clrdata::analysis::reach::reachable_from(&c.rt, heap, &c.names, a)?;
    Ok(Output::rendered("objsize", ObjSize(v)))
}

// ------------------------------------------------------------------------------------ gcwhere

/// `gcwhere`'s result.
pub struct GcWhere(pub objects::GcWhere);

impl GcWhere {
    /// The JSON form (docs/json.md, `gcwhere`).
    pub fn to_json(&self) -> Value {
        let w = &self.0;
        json!({
            "address": hex(w.address),
            "heap": w.heap,
            "segment": hex(w.segment),
            "kind": w.kind,
            "generation": w.generation,
            "begin": hex(w.begin),
            "allocated": hex(w.allocated),
            "committed": hex(w.committed),
            "beyond_allocated": w.beyond_allocated,
        })
    }
}

impl Render for GcWhere {
    fn render(&self) -> String {
        let w = &self.0;
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
            fmt_addr(w.address),
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
        t
    }
}

fn gcwhere(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let heap = c.heap()?;
    let a = addr(m, "address")?;
    let w = objects::gc_where(heap, a).ok_or_else(|| {
        CommandError::not_found(
            format!("{a:#x}"),
            "not in the GC heap (no segment holds it)",
        )
    })?;
    Ok(Output::rendered("gcwhere", GcWhere(w)))
}

// --------------------------------------------------------------------------------- verifyheap

/// `verifyheap`'s result.
pub struct VerifyHeap(pub HeapVerification);

impl VerifyHeap {
    /// The JSON form (docs/json.md, `verifyheap`).
    pub fn to_json(&self) -> Value {
        let v = &self.0;
        json!({
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
        })
    }
}

impl Render for VerifyHeap {
    fn render(&self) -> String {
        let v = &self.0;
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
        t
    }
}

fn verifyheap(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let heap = c.heap()?;
    let max = count(m, "max")?.unwrap_or(100) as usize;
    let v = objects::verify_heap(&reader(&c), heap, max);
    Ok(Output::rendered("verifyheap", VerifyHeap(v)))
}

// ---------------------------------------------------------------------------------- verifyobj

/// `verifyobj`'s result (docs/json.md, `verifyobj`).
#[derive(Serialize)]
pub struct VerifyObj {
    pub address: String,
    pub mt: Option<String>,
    /// No problem found.
    pub valid: bool,
    pub references: u64,
    pub problems: Vec<ObjectProblemOut>,
}

/// One problem of `verifyobj`.
#[derive(Serialize)]
pub struct ObjectProblemOut {
    pub offset: u64,
    pub kind: clrdata::model::objects::ObjectProblemKind,
    pub detail: String,
}

impl Render for VerifyObj {
    /// SOS's words: `object 0x.. is a valid object`, else an Offset / Issue / Description
    /// table and the count of errors.
    fn render(&self) -> String {
        if self.valid {
            return format!("object {} is a valid object\n", self.address);
        }
        let mut t = format!("{:<8} {:<30} Description\n", "Offset", "Issue");
        for p in &self.problems {
            let kind = serde_json::to_value(p.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            t.push_str(&format!(
                "{:<8} {:<30} {}\n",
                format!("{:#04x}", p.offset),
                kind,
                p.detail
            ));
        }
        let n = self.problems.len();
        t.push_str(&format!(
            "\n{n} error{} detected.\n",
            if n == 1 { "" } else { "s" }
        ));
        t
    }
}

fn verifyobj(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let heap = c.heap()?;
    let a = addr(m, "address")?;
    let v = objects::verify_object(&reader(&c), heap, a);
    Ok(Output::rendered(
        "verifyobj",
        VerifyObj {
            address: hex(v.address),
            mt: v.mt.map(hex),
            valid: v.problems.is_empty(),
            references: v.references,
            problems: v
                .problems
                .into_iter()
                .map(|p| ObjectProblemOut {
                    offset: p.offset,
                    kind: p.kind,
                    detail: p.detail,
                })
                .collect(),
        },
    ))
}

// ------------------------------------------------------------------- SOS's dumpobj text
//
// SOS's `dumpobj` is PrintObj (src/SOS/Strike/strike.cpp) and its field table DisplayFields /
// DisplayDataMember (src/SOS/Strike/util.cpp) of dotnet/diagnostics; the text below follows
// their format strings (64-bit: POINTERSIZE is "16").

/// What SOS's dumpobj text needs beyond the [`ObjectView`]: each field's `Type` column and
/// the `Type Name:`/`Type MT:`/`TypeDesc:` lines of a RuntimeType.
#[derive(Clone)]
pub struct SosExtras {
    /// The `Type` column of each field (before SOS's 20-character truncation).
    pub type_columns: Vec<String>,
    /// The lines PrintRuntimeTypeInfo adds for a System.RuntimeType (or its
    /// RuntimeTypeCache's m_runtimeType).
    pub runtime_type_lines: String,
}

/// SOS's names of element types (ElementTypeName and cortypeinfo.h's namespace/name
/// columns, as ComposeName_s joins them).
fn sos_compose_name(et: u8) -> &'static str {
    use clrdata::metadata::sig::element_type as e;
    match et {
        e::VOID => "System.Void",
        e::BOOLEAN => "System.Boolean",
        e::CHAR => "System.Char",
        e::I1 => "System.SByte",
        e::U1 => "System.Byte",
        e::I2 => "System.Int16",
        e::U2 => "System.UInt16",
        e::I4 => "System.Int32",
        e::U4 => "System.UInt32",
        e::I8 => "System.Int64",
        e::U8 => "System.UInt64",
        e::R4 => "System.Single",
        e::R8 => "System.Double",
        e::STRING => "System.String",
        e::TYPEDBYREF => "System.TypedReference",
        e::I => "System.IntPtr",
        e::U => "System.UIntPtr",
        e::OBJECT => "System.Object",
        _ => sos_element_type_name(et),
    }
}

/// SOS's ElementTypeName: the special names, else cortypeinfo.h's name column (no
/// namespace), else empty.
fn sos_element_type_name(et: u8) -> &'static str {
    use clrdata::metadata::sig::element_type as e;
    match et {
        e::PTR => "PTR",
        e::BYREF => "BYREF",
        e::VALUETYPE => "VALUETYPE",
        e::CLASS => "CLASS",
        e::VAR => "VAR",
        e::ARRAY => "ARRAY",
        e::FNPTR => "FNPTR",
        e::SZARRAY => "SZARRAY",
        e::MVAR => "MVAR",
        e::VOID => "Void",
        e::BOOLEAN => "Boolean",
        e::CHAR => "Char",
        e::I1 => "SByte",
        e::U1 => "Byte",
        e::I2 => "Int16",
        e::U2 => "UInt16",
        e::I4 => "Int32",
        e::U4 => "UInt32",
        e::I8 => "Int64",
        e::U8 => "UInt64",
        e::R4 => "Single",
        e::R8 => "Double",
        e::STRING => "String",
        e::TYPEDBYREF => "TypedReference",
        e::I => "IntPtr",
        e::U => "UIntPtr",
        e::OBJECT => "Object",
        _ => "",
    }
}

/// DisplayFields' `Type` column of `f`: the name of the field type's MethodTable when the
/// DAC's GetFieldDescData knows it (a loaded class or struct type); for a class field whose
/// signature names a TypeDef, that TypeDef's metadata name (a TypeRef or TypeSpec token gives
/// SOS no name: NameForToken_s refuses the token TokenFromRid makes of it); else the element
/// type's name (the signature's when the type is not loaded).
fn sos_type_column(r: &Reader<'_>, f: &clrdata::model::objects::FieldData) -> String {
    use clrdata::metadata::sig::element_type as e;
    let et = f.element_type;
    if let (e::VALUETYPE | e::CLASS, Some(mt)) = (et, f.type_mt) {
        return r.type_name(mt);
    }
    let sig = f.sig_element_type;
    if et == e::CLASS && matches!(sig, e::CLASS | e::VALUETYPE) {
        return f.sig_typedef_name.clone().unwrap_or_default();
    }
    let shown = if f.type_mt.is_none() && !matches!(sig, e::CLASS | e::VALUETYPE) {
        sig
    } else {
        et
    };
    sos_compose_name(shown).to_string()
}

/// What [`sos_object_text`] needs that the view does not carry.
pub fn sos_extras(r: &Reader<'_>, v: &ObjectView) -> SosExtras {
    let type_columns = v
        .fields
        .iter()
        .map(|f| sos_type_column(r, &f.field))
        .collect();
    let mut runtime_type_lines = String::new();
    let rt_info = |obj: u64, mt: u64, out: &mut String| {
        // PrintRuntimeTypeInfo: RuntimeType.m_handle, a MethodTable or (bit 2) a TypeDesc.
        let Ok(fields) = r.fields(mt, obj + 8, false) else {
            return;
        };
        let Some(h) = fields.iter().find(|f| f.name == "m_handle") else {
            return;
        };
        let FieldValue::Pointer { value: handle } = h.value else {
            return;
        };
        if handle & 2 != 0 {
            out.push_str(&format!("TypeDesc:    {:016X}\n", handle & !2));
        } else {
            out.push_str(&format!("Type Name:   {}\n", r.type_name(handle)));
            out.push_str(&format!("Type MT:     {handle:016x}\n"));
        }
    };
    let o = &v.object;
    if o.name == "System.RuntimeType" {
        rt_info(o.address, o.mt, &mut runtime_type_lines);
    } else if o.name == "System.RuntimeType+RuntimeTypeCache" {
        if let Ok(fields) = r.fields(o.mt, o.address + 8, false) {
            if let Some(FieldValue::Object {
                address,
                mt: Some(mt),
                ..
            }) = fields
                .iter()
                .find(|f| f.name == "m_runtimeType")
                .map(|f| &f.value)
            {
                rt_info(*address, *mt, &mut runtime_type_lines);
            }
        }
    }
    SosExtras {
        type_columns,
        runtime_type_lines,
    }
}

/// C's `%f`.
fn c_float(v: f64) -> String {
    if v.is_nan() {
        if v.is_sign_negative() { "-nan" } else { "nan" }.to_string()
    } else if v.is_infinite() {
        if v < 0.0 { "-inf" } else { "inf" }.to_string()
    } else {
        format!("{v:.6}")
    }
}

/// DisplayDataMember: a field's value, `aligned` (`%16d`...) in the table, not in a thread
/// static's `Thread:Value` line. `slot` is where a static lives (a struct static shows it).
fn sos_value(f: &clrdata::model::objects::FieldData, v: &FieldValue, aligned: bool) -> String {
    use clrdata::metadata::sig::element_type as e;
    let w = |s: String| {
        if aligned {
            format!("{s:>16}")
        } else {
            s
        }
    };
    let obj = |a: u64| format!("{a:016x}");
    let is_struct_static = f.attr != "instance" && f.element_type == e::VALUETYPE;
    if is_struct_static {
        // A struct static is boxed: SOS shows the slot holding the box (0 when no box).
        return match (v, f.address) {
            (FieldValue::ValueType { .. }, Some(slot)) => obj(slot),
            (FieldValue::Unavailable { .. }, Some(_)) => obj(0),
            _ => " ".repeat(16),
        };
    }
    let raw = match *v {
        FieldValue::Bool { value } => value as u64,
        FieldValue::Char { value } => value as u64,
        FieldValue::Int { value } => value as u64,
        FieldValue::UInt { value } => value,
        FieldValue::Float { value } => return c_float(value),
        FieldValue::Pointer { value } => value,
        FieldValue::Object { address, .. } => address,
        FieldValue::ValueType { address, .. } => return obj(address),
        FieldValue::Unavailable { .. } => return " ".repeat(16),
    };
    match f.element_type {
        e::I1 => w((raw as u8 as i8).to_string()),
        e::I2 => w((raw as u16 as i16).to_string()),
        e::I4 => w((raw as u32 as i32).to_string()),
        e::I8 => w((raw as i64).to_string()),
        // `%hu` of a zero-extended byte aligned; `%u` of a (signed) char unaligned
        e::U1 | e::BOOLEAN if aligned => w((raw as u8).to_string()),
        e::U1 | e::BOOLEAN => (raw as u8 as i8 as i32 as u32).to_string(),
        e::U2 if aligned => w((raw as u16).to_string()),
        e::U2 => (raw as u16 as i16 as i32 as u32).to_string(),
        e::U4 => w((raw as u32).to_string()),
        e::U8 => w(raw.to_string()),
        e::I | e::U => format!("{raw:016X}"),
        e::CHAR if aligned => w(format!("{:x}", raw as u16)),
        e::CHAR => format!("{:x}", raw as u16 as i16 as i32 as u32),
        _ => obj(raw),
    }
}

/// FormatTypeName(name, 20) printed `%20.20S`: a longer name keeps its last 20 characters,
/// the first 3 of them replaced by dots.
fn sos_type_cell(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let shown: String = if chars.len() > 20 {
        let tail = &chars[chars.len() - 20..];
        "...".chars().chain(tail[3..].iter().copied()).collect()
    } else {
        name.to_string()
    };
    format!("{shown:>20}")
}

/// DisplayFields (64-bit): the header, then each field in SOS's order.
fn sos_fields_text(fields: &[FieldView], types: &[String], value_class: bool) -> String {
    use clrdata::metadata::sig::element_type as e;
    let mut t = format!(
        "{:>16} {:>8} {:>8} {:>20} {:>4} {:>8} {:>16} {}\n",
        "MT", "Field", "Offset", "Type", "VT", "Attr", "Value", "Name"
    );
    for (v, ty) in fields.iter().zip(types) {
        let f = &v.field;
        let thread_static = f.attr == "TLstatic";
        let offset = if thread_static || value_class {
            f.offset
        } else {
            f.offset + 8
        };
        let vt = matches!(
            f.element_type,
            e::BOOLEAN..=e::R8 | e::VALUETYPE | e::I | e::U
        );
        t.push_str(&format!(
            "{:016x} {:08x} {:>8x} {} {:>4} {:>8} ",
            f.type_mt.unwrap_or(0),
            f.token,
            offset,
            sos_type_cell(ty),
            if vt { "Yes" } else { "No" },
            f.attr
        ));
        match &v.shown {
            Shown::PerThread(list) => {
                t.push_str(&format!(" {}\n", f.name));
                t.push_str("    Thread static values (Thread:Value)\n");
                for tv in list {
                    t.push_str(&format!(
                        "        {:x}:{}\n",
                        tv.os_thread_id,
                        sos_value(f, &tv.value.value, false)
                    ));
                }
                t.push('\n');
            }
            Shown::ThreadsUnread(_) => {
                t.push_str(&format!(" {}\n", f.name));
                t.push_str("    Thread static values (Thread:Value)\n\n");
            }
            Shown::Value(nv) => {
                t.push_str(&sos_value(f, &nv.value, true));
                t.push_str(&format!(" {}\n", f.name));
            }
            Shown::NoInstance => {
                t.push_str(&" ".repeat(16));
                t.push_str(&format!(" {}\n", f.name));
            }
        }
    }
    t
}

/// The bytes a C `%S` of `s` writes (UTF-8), with SOS's ExtOut limit: a formatted text of
/// 8192 bytes or more does not fit its 8192-byte buffer and nothing is printed.
fn sos_ext_out(s: &str) -> &str {
    if s.len() >= 8192 {
        ""
    } else {
        s
    }
}

/// PrintObj's text.
pub fn sos_object_text(v: &ObjectView, x: &SosExtras) -> String {
    use clrdata::metadata::sig::element_type as e;
    let o = &v.object;
    let size = o.unaligned_size;
    if o.is_free {
        return format!("Free Object\nSize:        {size}(0x{size:x}) bytes\n");
    }
    let mut t = String::new();
    t.push_str(&format!("Name:        {}\n", o.name));
    t.push_str(&format!("MethodTable: {:016x}\n", o.mt));
    t.push_str(&format!("Size:        {size}(0x{size:x}) bytes\n"));
    t.push_str(&x.runtime_type_lines);
    if let Some(a) = &v.array {
        let et = a.shape.element_type;
        t.push_str(&format!(
            "Array:       Rank {}, Number of elements {}, Type {}\n",
            a.shape.rank,
            a.shape.length,
            sos_element_type_name(et)
        ));
        if matches!(et, e::I1 | e::U1 | e::CHAR) {
            t.push_str("Content:     ");
            t.push_str(&a.content);
            t.push('\n');
        }
    } else {
        let file = if o.file.is_empty() {
            "Unknown Module"
        } else {
            &o.file
        };
        t.push_str(&format!("File:        {file}\n"));
    }
    if let Some((st, len)) = &o.string {
        t.push_str("String:      ");
        if size > 0x200000 || *len > 0x200000 {
            t.push_str("<String is invalid or too large to print>\n");
        } else {
            t.push_str(sos_ext_out(st));
        }
        t.push('\n');
    }
    if !v.no_fields {
        t.push_str("Fields:\n");
        if v.fields.is_empty() || v.declared_fields == Some(0) {
            t.push_str("None\n");
        } else {
            t.push_str(&sos_fields_text(&v.fields, &x.type_columns, false));
        }
    }
    t
}
