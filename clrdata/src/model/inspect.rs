//! One runtime structure at an address, as the inspection commands show it: an object with its
//! fields (`dumpobj`), a value type stored somewhere (`dumpvc`), an array's elements
//! (`dumparray`), a MethodTable (`dumpmt`), an EEClass (`dumpclass`), a MethodDesc (`dumpmd`), a
//! Module (`dumpmodule`), the graph an object keeps alive (`objsize`).
//!
//! Each view is typed: addresses are numbers, the names of the types met are resolved, a
//! thread-static field's value is read on every thread that has one. The front ends render
//! them; nothing here prints. What could not be read is said in the view (a field's value
//! [`FieldValue::Unavailable`], a thread-static's [`Shown::ThreadsUnread`]); what makes the
//! address not the structure asked for is an [`InspectError`].

use crate::data::types::{MethodTableInfo, ModuleData, ReadTypes};
use crate::error::ClrError;
use crate::metadata::TableId;
use crate::model::methods::{self, JitState, MethodDescData, MethodTableMethods};
use crate::model::objects::{
    elem, primitive_size, ArrayData, FieldData, FieldValue, ObjectData, ObjectReader,
};
use crate::model::stack::StackWalker;
use dumpreader::Memory;
use std::collections::HashMap;

/// Why an inspection gave no view.
#[derive(Debug, Clone, thiserror::Error)]
pub enum InspectError {
    /// Reading the structure failed; `context` says what the address was read as.
    #[error("{context}: {error}")]
    While {
        /// What was being read (`0x1234 is not a MethodTable`).
        context: String,
        /// The runtime's error.
        error: ClrError,
    },
    /// The structure was read, and it is not what was asked for (an EEClass whose MethodTable
    /// names another EEClass, an object that is not an array).
    #[error("{what}: {detail}")]
    Refused {
        /// What was asked for (the address).
        what: String,
        /// Why it is not that.
        detail: String,
    },
    /// A read failed on the way (a field's type, an element's object).
    #[error(transparent)]
    Clr(#[from] ClrError),
    /// The caller's stop callback asked to stop.
    #[error("interrupted")]
    Cancelled,
}

fn while_reading(context: impl Into<String>) -> impl FnOnce(ClrError) -> InspectError {
    let context = context.into();
    move |error| InspectError::While { context, error }
}

// ------------------------------------------------------------------------------------- values

/// A value with the name of the type it holds, for a non-null reference or an embedded struct
/// whose MethodTable is known.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedValue {
    /// The value.
    pub value: FieldValue,
    /// The type name of the referenced object's or the struct's MethodTable.
    pub type_name: Option<String>,
}

/// `value` with the name of its type resolved.
pub fn named_value<M: Memory>(r: &ObjectReader<'_, M>, value: FieldValue) -> NamedValue {
    let type_name = match &value {
        FieldValue::Object { address: 0, .. } => None,
        FieldValue::Object { mt, .. } | FieldValue::ValueType { mt, .. } => {
            mt.map(|m| r.type_name(m))
        }
        _ => None,
    };
    NamedValue { value, type_name }
}

/// A thread-static field's value on one thread.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadValue {
    /// The thread's managed id.
    pub thread: u32,
    /// Its Thread object (the runtime's).
    pub thread_address: u64,
    /// Its OS thread id (`Thread::m_OSThreadId`; 0 when the thread list does not have it).
    pub os_thread_id: u64,
    /// Where its value lives.
    pub address: u64,
    /// The value.
    pub value: NamedValue,
}

/// What a field shows.
#[derive(Debug, Clone, PartialEq)]
pub enum Shown {
    /// Its value (for a static, the one value; for an instance field, the instance's).
    Value(NamedValue),
    /// A thread-static: its value on each thread that has one.
    PerThread(Vec<ThreadValue>),
    /// A thread-static whose per-thread storage could not be read.
    ThreadsUnread(ClrError),
    /// An instance field listed without an instance (`dumpclass`): offset, no value.
    NoInstance,
}

/// A field as the field table shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldView {
    /// The field as read (its `type_mt` completed by [`resolve_field_type_mts`]).
    pub field: FieldData,
    /// Its value(s).
    pub shown: Shown,
}

/// `f` with its value named and, for a thread-static, its value on each thread (as SOS's
/// `>> Thread:Value .. <<`).
pub fn field_view<M: Memory>(r: &ObjectReader<'_, M>, f: FieldData) -> FieldView {
    let shown = if f.attr == "TLstatic" {
        match r.thread_static_addresses(f.declaring_mt, f.offset, f.element_type) {
            Ok(list) => Shown::PerThread(
                list.into_iter()
                    .map(|(thread, thread_address, address)| ThreadValue {
                        thread,
                        thread_address,
                        os_thread_id: os_thread_id(r, thread_address),
                        address,
                        value: named_value(r, r.read_value(address, f.element_type, f.type_mt)),
                    })
                    .collect(),
            ),
            Err(e) => Shown::ThreadsUnread(e),
        }
    } else {
        Shown::Value(named_value(r, f.value.clone()))
    };
    FieldView { field: f, shown }
}

/// The OS thread id of the Thread at `thread` (0 when not in the thread list).
fn os_thread_id<M: Memory>(r: &ObjectReader<'_, M>, thread: u64) -> u64 {
    use crate::data::threads::ReadThreads;
    r.rt.threads()
        .ok()
        .and_then(|ts| ts.into_iter().find(|t| t.address == thread))
        .map_or(0, |t| t.os_id)
}

fn field_views<M: Memory>(r: &ObjectReader<'_, M>, fields: Vec<FieldData>) -> Vec<FieldView> {
    let mut v: Vec<FieldView> = fields.into_iter().map(|f| field_view(r, f)).collect();
    resolve_field_type_mts(r, &mut v);
    v
}

/// The MethodTables of array and generic instantiation field types still unknown (a null
/// value, an embedded struct, or no instance, as in `dumpclass`): the loaded type of exactly
/// that name, when exactly one has it, among the constructed types (EETypeHashTable) loaded by
/// CoreLib and by the modules of the declaring types and their type arguments; the DAC looks
/// the field's type up in such tables. Where a table is not read (Windows) they stay unknown.
pub fn resolve_field_type_mts<M: Memory>(r: &ObjectReader<'_, M>, fields: &mut [FieldView]) {
    let wanted = |f: &FieldView| f.field.type_mt.is_none() && f.field.type_name.ends_with(']');
    if !fields.iter().any(wanted) {
        return;
    }
    let mut mods: Vec<u64> = r.corelib_module().into_iter().collect();
    for f in fields.iter() {
        let Some(decl) = r.mt(f.field.declaring_mt) else {
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
        if let Ok(ths) = methods::available_param_types(r, m) {
            candidates.extend(ths.into_iter().filter(|th| th & 2 == 0));
        }
    }
    candidates.sort_unstable();
    candidates.dedup();
    let mut by_name: HashMap<String, Option<u64>> = HashMap::new();
    for mt in candidates {
        by_name
            .entry(unqualified_name(&r.type_name(mt)))
            .and_modify(|v| *v = None)
            .or_insert(Some(mt));
    }
    for f in fields.iter_mut().filter(|f| wanted(f)) {
        if let Some(Some(mt)) = by_name.get(&unqualified_name(&f.field.type_name)) {
            f.field.type_mt = Some(*mt);
        }
    }
}

/// The MethodTable of the embedded struct `f` holds, when `f`'s value does not say it (a
/// generic instantiation, whose MethodTable the field's signature does not name): the loaded
/// constructed type of exactly the field's declared type name, among the constructed types
/// (EETypeHashTable) of every module the runtime lists as loaded (the instantiation is kept by
/// one of the modules of its definition and arguments, which the declaring type's do not
/// always include). None when it is not found or not unique.
pub fn struct_field_mt<M: Memory>(r: &ObjectReader<'_, M>, f: &FieldData) -> Option<u64> {
    match f.value {
        crate::model::objects::FieldValue::ValueType { mt: Some(mt), .. } => return Some(mt),
        crate::model::objects::FieldValue::ValueType { .. } => {}
        _ => return None,
    }
    if let Some(mt) = f.type_mt {
        return Some(mt);
    }
    let want = unqualified_name(&f.type_name);
    let images = r.rt.loaded_images().ok()?;
    let mut found = None;
    for m in images.into_iter().flatten().map(|i| i.module) {
        let Ok(ths) = methods::available_param_types(r, m) else {
            continue;
        };
        for th in ths.into_iter().filter(|th| th & 2 == 0) {
            if unqualified_name(&r.type_name(th)) == want {
                match found {
                    Some(x) if x != th => return None,
                    _ => found = Some(th),
                }
            }
        }
    }
    found
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

// ------------------------------------------------------------------------------ objects, arrays

/// An array's shape, with its element type's name.
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayView {
    /// The shape.
    pub shape: ArrayData,
    /// The element type's name (`<TypeDesc 0x..>` for a TypeDesc element).
    pub element_type_name: String,
    /// For an array of `sbyte`, `byte` or `char` read by `dumpobj`: its first (at most 128)
    /// elements as text,
    /// each outside ' '..='~' shown as '.' (SOS's dumpobj `Content:` line, CharArrayContent);
    /// empty otherwise.
    pub content: String,
}

/// CharArrayContent as SOS's dumpobj calls it: from the object + 16 (the data of a
/// single-dimension array), the count at object + 8 clamped to 128, bytes or UTF-16 units.
fn array_content<M: Memory>(r: &ObjectReader<'_, M>, obj: u64, a: &ArrayData) -> String {
    use crate::metadata::sig::element_type as e;
    let wide = match a.element_type {
        e::I1 | e::U1 => false,
        e::CHAR => true,
        _ => return String::new(),
    };
    let m = r.rt.memory();
    let Ok(n) = m.read_u32(obj + 8) else {
        return String::new();
    };
    let n = n.min(128) as usize;
    let flat = |c: u32| {
        if (32..=126).contains(&c) {
            char::from(c as u8)
        } else {
            '.'
        }
    };
    if wide {
        let b = m.read_bytes(obj + 16, n * 2);
        b.chunks_exact(2)
            .map(|c| flat(u16::from_le_bytes([c[0], c[1]]) as u32))
            .collect()
    } else {
        m.read_bytes(obj + 16, n)
            .into_iter()
            .map(|c| flat(c as u32))
            .collect()
    }
}

/// `a` with its element type named.
pub fn array_view<M: Memory>(r: &ObjectReader<'_, M>, a: ArrayData) -> ArrayView {
    let element_type_name = if a.element_mt & 2 != 0 {
        format!("<TypeDesc {:#x}>", a.element_mt)
    } else {
        r.type_name(a.element_mt)
    };
    ArrayView {
        shape: a,
        element_type_name,
        content: String::new(),
    }
}

/// An object (`dumpobj`).
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectView {
    /// The object as decoded (its `fields` and `array` moved to this view's).
    pub object: ObjectData,
    /// For an array, its shape.
    pub array: Option<ArrayView>,
    /// Its fields (none when asked for none).
    pub fields: Vec<FieldView>,
    /// Whether the fields were left out on request.
    pub no_fields: bool,
    /// The type's own field count as its EEClass keeps it (NumInstanceFields, the parents'
    /// included, + NumStaticFields, its own): what the DAC's GetMethodTableFieldData gives
    /// and SOS's dumpobj checks before listing fields (0: `None`, even where a parent has
    /// statics or, as for a runtime-async continuation type, the parent's instance fields are
    /// not counted). `None` when the counters are bit-packed (.NET 8) or unreadable.
    pub declared_fields: Option<u32>,
}

/// The object at `addr`, its fields read unless `no_fields`.
pub fn object_view<M: Memory>(
    r: &ObjectReader<'_, M>,
    addr: u64,
    no_fields: bool,
) -> crate::Result<ObjectView> {
    let mut object = r.object(addr, no_fields)?;
    let array = object.array.take().map(|a| {
        let content = array_content(r, addr, &a);
        ArrayView {
            content,
            ..array_view(r, a)
        }
    });
    let fields = field_views(r, std::mem::take(&mut object.fields));
    let declared_fields = {
        use crate::data::types::ReadTypes;
        r.rt.method_table(object.mt)
            .ok()
            .and_then(|i| r.rt.field_counts(i.ee_class).ok().flatten())
            .map(|(inst, stat)| inst + stat)
    };
    Ok(ObjectView {
        object,
        array,
        fields,
        no_fields,
        declared_fields,
    })
}

/// A value type stored at an address (`dumpvc`).
#[derive(Debug, Clone, PartialEq)]
pub struct ValueView {
    /// Where it is stored.
    pub address: u64,
    /// Its MethodTable.
    pub mt: u64,
    /// Its type's name.
    pub name: String,
    /// Its fields.
    pub fields: Vec<FieldView>,
}

/// The value of type `mt` stored at `addr`.
pub fn value_view<M: Memory>(
    r: &ObjectReader<'_, M>,
    mt: u64,
    addr: u64,
) -> crate::Result<ValueView> {
    let fields = r.value_type(mt, addr)?;
    Ok(ValueView {
        address: addr,
        mt,
        name: r.type_name(mt),
        fields: field_views(r, fields),
    })
}

/// An object found to be an array ([`array_at`]), ready for [`array_elements`].
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayAt {
    /// Its address.
    pub address: u64,
    /// Its MethodTable.
    pub mt: u64,
    /// The MethodTable decoded.
    pub info: MethodTableInfo,
    /// Its shape.
    pub shape: ArrayData,
}

/// The array at `addr`; refused when the object there is not one.
pub fn array_at<M: Memory>(r: &ObjectReader<'_, M>, addr: u64) -> Result<ArrayAt, InspectError> {
    let (mt, info) = r.object_mt(addr)?;
    let shape = r.array(addr, &info)?.ok_or_else(|| InspectError::Refused {
        what: format!("{addr:#x}"),
        detail: format!("not an array: it is a {}", r.type_name(mt)),
    })?;
    Ok(ArrayAt {
        address: addr,
        mt,
        info,
        shape,
    })
}

/// An array with some of its elements (`dumparray`).
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayListing {
    /// Its address.
    pub address: u64,
    /// Its MethodTable.
    pub mt: u64,
    /// Its EEClass.
    pub ee_class: u64,
    /// Its type's name.
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its shape.
    pub array: ArrayView,
    /// The elements asked for, in index order.
    pub elements: Vec<ElementView>,
}

/// One element of an array.
#[derive(Debug, Clone, PartialEq)]
pub struct ElementView {
    /// Its flat index.
    pub index: u64,
    /// Its index in each dimension (row-major), lower bounds added.
    pub indices: Vec<i64>,
    /// Where it is stored.
    pub address: u64,
    /// Its value (a reference, a primitive, or an embedded struct's address).
    pub value: NamedValue,
    /// With details: the fields of the struct or of the object it references.
    pub fields: Option<Vec<FieldView>>,
}

/// What [`array_elements`] lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ElementRange {
    /// The first element (default 0).
    pub start: Option<u64>,
    /// How many (default: to the end).
    pub length: Option<u64>,
    /// With each element's fields (the struct's, or the referenced object's).
    pub details: bool,
    /// With `details`: the referenced objects without their fields.
    pub no_fields: bool,
}

/// The elements of `a` in `range`; `stop` is asked every 4096 elements whether to stop.
pub fn array_elements<M: Memory>(
    r: &ObjectReader<'_, M>,
    a: ArrayAt,
    range: ElementRange,
    stop: &dyn Fn() -> bool,
) -> Result<ArrayListing, InspectError> {
    let arr = &a.shape;
    let start = range.start.unwrap_or(0);
    let length = range.length.unwrap_or(arr.length.saturating_sub(start));
    let end = start.saturating_add(length).min(arr.length);
    let comp = arr.component_size as u64;
    let et = arr.element_type;
    let elem_mt = (arr.element_mt & 2 == 0).then_some(arr.element_mt);
    let mut elements = Vec::new();
    for i in start..end {
        if i % 4096 == 0 && stop() {
            return Err(InspectError::Cancelled);
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
        let fields = if range.details {
            match &v {
                FieldValue::ValueType {
                    address,
                    mt: Some(vm),
                } => Some(r.value_type(*vm, *address)?),
                FieldValue::Object { address, .. } if *address != 0 => {
                    Some(r.object(*address, range.no_fields)?.fields)
                }
                _ => None,
            }
        } else {
            None
        };
        elements.push(ElementView {
            index: i,
            indices,
            address: ea,
            value: named_value(r, v),
            fields: fields.map(|fs| fs.into_iter().map(|f| field_view(r, f)).collect()),
        });
    }
    let name = r.type_name(a.mt);
    let size = r.object_size(a.address, &a.info)?;
    Ok(ArrayListing {
        address: a.address,
        mt: a.mt,
        ee_class: a.info.ee_class,
        name,
        size,
        array: array_view(r, a.shape),
        elements,
    })
}

/// What an object keeps alive (`objsize`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retained {
    /// The object.
    pub address: u64,
    /// Its MethodTable.
    pub mt: u64,
    /// Its type's name.
    pub name: String,
    /// Objects reachable from it, itself included.
    pub objects: u64,
    /// Their total size.
    pub size: u64,
    /// What could not be followed.
    pub errors: Vec<String>,
}

/// The objects `addr` keeps alive, and their size (at most 50 million followed).
pub fn retained<M: Memory>(r: &ObjectReader<'_, M>, addr: u64) -> crate::Result<Retained> {
    let (mt, _) = r.object_mt(addr)?;
    let (objects, size, errors) = r.retained_size(addr, 50_000_000)?;
    Ok(Retained {
        address: addr,
        mt,
        name: r.type_name(mt),
        objects,
        size,
        errors,
    })
}

// --------------------------------------------------------------------------------------- types

/// A MethodTable (`dumpmt`).
#[derive(Debug, Clone, PartialEq)]
pub struct MethodTableView {
    /// The MethodTable decoded.
    pub info: MethodTableInfo,
    /// Its type's name.
    pub name: String,
    /// Its module's image path.
    pub file: String,
    /// Whether its statics are dynamic (generic instantiations).
    pub dynamic_statics: bool,
    /// Its slot count (the DAC's wNumMethods), when read.
    pub num_methods: Option<u32>,
    /// Its methods, when asked for.
    pub methods: Option<MethodTableMethods>,
}

/// The MethodTable at `mt`, with its methods (entry point, MethodDesc, code) when `methods`.
pub fn method_table_view<M: dumpreader::Target>(
    r: &ObjectReader<'_, M>,
    mt: u64,
    methods: bool,
) -> Result<MethodTableView, InspectError> {
    let info =
        r.rt.method_table(mt)
            .map_err(while_reading(format!("{mt:#x} is not a MethodTable")))?;
    let mut v = MethodTableView {
        name: r.type_name(mt),
        file: r.module_file(&info),
        dynamic_statics: r.has_dynamic_statics(&info),
        num_methods: methods::slot_counts(r, mt).ok().map(|c| c.2),
        info,
        methods: None,
    };
    if methods {
        let w = StackWalker::for_target(r.rt, r.names);
        v.methods = Some(
            methods::method_table_methods(r, &w, mt)
                .map_err(while_reading(format!("the methods of MethodTable {mt:#x}")))?,
        );
    }
    Ok(v)
}

/// An EEClass (`dumpclass`).
#[derive(Debug, Clone, PartialEq)]
pub struct EeClassView {
    /// The EEClass.
    pub ee_class: u64,
    /// Its MethodTable (m_pMethodTable), decoded.
    pub info: MethodTableInfo,
    /// Its type's name.
    pub name: String,
    /// Its module's image path.
    pub file: String,
    /// The TypeDef's attributes (0 when not read).
    pub attributes: u32,
    /// The parent type's EEClass, when it has a parent and it is read.
    pub parent_class: Option<u64>,
    /// The static fields the type itself declares.
    pub num_static_fields: usize,
    /// Every field along the parent chain: instance ones without a value, statics with theirs.
    pub fields: Vec<FieldView>,
}

impl EeClassView {
    /// The instance fields listed (the parents' included).
    pub fn num_instance_fields(&self) -> usize {
        self.fields
            .iter()
            .filter(|f| f.field.attr == "instance")
            .count()
    }
}

/// The EEClass at `ee`; refused when its MethodTable names another EEClass.
pub fn ee_class_view<M: Memory>(
    r: &ObjectReader<'_, M>,
    ee: u64,
) -> Result<EeClassView, InspectError> {
    let (mt, attr) =
        r.rt.ee_class_header(ee)
            .map_err(while_reading(format!("{ee:#x} is not an EEClass")))?;
    let info = r.rt.method_table(mt).map_err(while_reading(format!(
        "{ee:#x} is not an EEClass: its MethodTable {mt:#x}"
    )))?;
    if info.ee_class != ee {
        return Err(InspectError::Refused {
            what: format!("{ee:#x}"),
            detail: format!(
                "not an EEClass: its m_pMethodTable {mt:#x} has EEClass {:#x}",
                info.ee_class
            ),
        });
    }
    // Instance fields read nothing (no instance): the table lists them with their offsets;
    // statics with their values.
    let own = r.rt.fields(&info)?;
    let all = r.fields(mt, 0, true)?;
    let mut fields: Vec<FieldView> = Vec::new();
    for f in all {
        let mut v = field_view(r, f);
        if v.field.attr == "instance" {
            v.shown = Shown::NoInstance;
            v.field.address = None;
        }
        fields.push(v);
    }
    resolve_field_type_mts(r, &mut fields);
    let parent_class = (info.parent != 0)
        .then(|| r.rt.method_table(info.parent).ok().map(|p| p.ee_class))
        .flatten();
    Ok(EeClassView {
        ee_class: ee,
        name: r.type_name(mt),
        file: r.module_file(&info),
        attributes: attr.unwrap_or(0),
        parent_class,
        num_static_fields: own.iter().filter(|f| f.is_static).count(),
        info,
        fields,
    })
}

/// A MethodDesc (`dumpmd`).
#[derive(Debug, Clone, PartialEq)]
pub struct MethodDescView {
    /// The MethodDesc decoded.
    pub desc: MethodDescData,
    /// The method's name as the DAC spells it.
    pub name: String,
    /// Its MethodTable's EEClass.
    pub ee_class: u64,
    /// Its MethodTable's module (None: a module override, not read).
    pub module: Option<u64>,
    /// Its entry point, when read.
    pub entry_point: Option<u64>,
    /// Its current native code.
    pub code: Option<u64>,
    /// What kind of code that is.
    pub jit: JitState,
}

/// The MethodDesc at `md`; refused when its token is null (not a MethodDesc).
pub fn method_desc_view<M: dumpreader::Target>(
    r: &ObjectReader<'_, M>,
    md: u64,
) -> Result<MethodDescView, InspectError> {
    let not_md = format!("{md:#x} is not a MethodDesc");
    let d = methods::method_desc(r, md).map_err(while_reading(not_md.clone()))?;
    let info =
        r.rt.method_table(d.method_table)
            .map_err(while_reading(format!(
                "{not_md}: its chunk's MethodTable {:#x}",
                d.method_table
            )))?;
    if d.classification != 4 && d.token & 0xFF_FFFF == 0 {
        return Err(InspectError::Refused {
            what: not_md,
            detail: "a null MethodDef token".into(),
        });
    }
    let name = methods::method_desc_name(r, &d).map_err(while_reading(not_md))?;
    let w = StackWalker::for_target(r.rt, r.names);
    let entry_point = methods::method_entry_point(r, &d).ok();
    let (code, jit) = entry_point.map_or((None, JitState::None), |e| {
        methods::native_code(r, &w, &d, e)
    });
    Ok(MethodDescView {
        desc: d,
        name,
        ee_class: info.ee_class,
        module: info.module,
        entry_point,
        code,
        jit,
    })
}

/// A Module (`dumpmodule`).
#[derive(Debug, Clone, PartialEq)]
pub struct ModuleView {
    /// The Module decoded.
    pub data: ModuleData,
    /// Its assembly's name from its metadata, when read.
    pub assembly: Option<String>,
    /// Its DomainLocalModule (.NET 8), when read.
    pub domain_local_module: Option<u64>,
    /// Rows of its TypeDef table, when its metadata is read.
    pub type_defs: Option<u32>,
}

/// The Module at `module`.
pub fn module_view<M: Memory>(
    r: &ObjectReader<'_, M>,
    module: u64,
) -> Result<ModuleView, InspectError> {
    let data =
        r.rt.module(module)
            .map_err(while_reading(format!("{module:#x} is not a Module")))?;
    let md = r.names.module_metadata(r.rt, module).ok();
    Ok(ModuleView {
        data,
        assembly: md.as_ref().map(|x| x.assembly.clone()),
        domain_local_module: r.domain_local_module(module).ok(),
        type_defs: md
            .as_ref()
            .and_then(|x| x.metadata().ok().map(|m| m.row_count(TableId::TypeDef))),
    })
}

#[cfg(test)]
mod tests {
    use super::unqualified_name;

    #[test]
    fn unqualified_names() {
        assert_eq!(
            unqualified_name("System.Collections.Generic.List`1[[Heap.Person, heap]]"),
            "System.Collections.Generic.List`1[Heap.Person]"
        );
        assert_eq!(
            unqualified_name("System.Collections.Generic.List`1[Heap.Person]"),
            "System.Collections.Generic.List`1[Heap.Person]"
        );
        assert_eq!(
            unqualified_name(
                "System.Collections.Generic.Dictionary`2[[System.String, mscorlib],[System.Int32, System.Private.CoreLib]]"
            ),
            "System.Collections.Generic.Dictionary`2[System.String,System.Int32]"
        );
        assert_eq!(unqualified_name("System.Int32[,]"), "System.Int32[,]");
    }
}
