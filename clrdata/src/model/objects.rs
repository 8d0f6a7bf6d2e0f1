//! Objects and their fields: what `dumpobj`, `dumpvc`, `dumparray`, `objsize`, `gcwhere` and
//! `verifyheap` need.
//!
//! - [`ObjectReader::object`] decodes the object at an address: type, size, string value,
//!   array shape, and every field with its value ([`FieldData`]): instance fields along the
//!   parent chain (most basic type first, as SOS prints them), then the type's statics.
//! - [`ObjectReader::value_type`] does the same for a value type stored at an address.
//! - Field names come from the declaring type's metadata (the FieldDef row of the FieldDesc's
//!   token); field types from the field signature; the MethodTable of a field's type from the
//!   module's TypeDef→MethodTable map (`Module::m_TypeDefToMethodTableMap`), TypeRefs being
//!   resolved by name in the referenced module (CoreLib for the framework's facades).
//! - Statics of .NET 8: `Module::m_ModuleID` is the DomainLocalModule; non-GC statics live at
//!   `DomainLocalModule + FieldDesc offset`, GC statics (references, and boxed structs) at
//!   `DomainLocalModule::m_pGCStatics + offset`. Types with dynamic statics (generics) and
//!   thread statics are listed without a value, saying so.
//! - [`ObjectReader::references`] enumerates an object's references from the GCDesc that sits
//!   before its MethodTable (the GC's own description), used by `objsize` and `verifyheap`.

use crate::data::types::{FieldInfo, MethodTableInfo};
use crate::discovery::layout::ObjectLayout;
use crate::discovery::layout::{mt_flags, StaticsScheme};
use crate::discovery::runtime::Runtime;
use crate::error::{ClrError, Result};
use crate::metadata::{names::MetadataNames, sig::SigType, SigStyle, TableId, Token};
use crate::model::heap::{GcHeap, Segment};
use crate::model::names::TypeNames;
use dumpreader::Memory;
use serde::Serialize;
use std::cell::RefCell;
use std::collections::HashMap;

/// Bound on parent chains (a corrupt parent pointer must not loop).
const MAX_PARENTS: usize = 64;
/// Longest string value read (characters).
pub const MAX_STRING_CHARS: usize = 1 << 20;
/// The first element type of a field signature (the caller strips custom modifiers: SOS names
/// a `volatile` field's class, as the DAC's GetFieldDescData reads past them).
fn sig_first_element_type(s: &SigType) -> u8 {
    use crate::metadata::sig::element_type as et;
    match s {
        SigType::Primitive(p) => p.element_type(),
        SigType::Class(_) => et::CLASS,
        SigType::ValueType(_) => et::VALUETYPE,
        SigType::Ptr(_) => et::PTR,
        SigType::ByRef(_) => et::BYREF,
        SigType::SzArray(_) => et::SZARRAY,
        SigType::Array { .. } => et::ARRAY,
        SigType::GenericInst { .. } | SigType::GenericInstOfHandle { .. } => et::GENERICINST,
        SigType::Var(_) => et::VAR,
        SigType::MVar(_) => et::MVAR,
        SigType::FnPtr(_) => et::FNPTR,
        SigType::Modified { required: true, .. } => et::CMOD_REQD,
        SigType::Modified {
            required: false, ..
        } => et::CMOD_OPT,
        SigType::Pinned(_) => et::PINNED,
        SigType::Internal(_) => et::INTERNAL,
    }
}

/// `ThreadLocalModule::m_pDataBlob` (.NET 8: after m_pDynamicClassTable, m_aDynamicEntries and
/// m_pGCStatics): the per-class flag bytes.
const TLM_DATA_BLOB: u64 = 0x18;
/// Bound on GCDesc series.
const MAX_SERIES: i64 = 4096;

use crate::data::statics::ReadStatics;
use crate::data::threads::ReadThreads;
use crate::data::types::ReadTypes;
/// CorElementType values (the metadata reader's table).
pub use crate::metadata::sig::element_type as elem;

/// The name SOS gives a CorElementType in `dumparray` (`CLASS`, `VALUETYPE`, `I4`, ...).
pub fn element_type_name(et: u8) -> &'static str {
    match et {
        0x01 => "VOID",
        elem::BOOLEAN => "BOOLEAN",
        elem::CHAR => "CHAR",
        elem::I1 => "I1",
        elem::U1 => "U1",
        elem::I2 => "I2",
        elem::U2 => "U2",
        elem::I4 => "I4",
        elem::U4 => "U4",
        elem::I8 => "I8",
        elem::U8 => "U8",
        elem::R4 => "R4",
        elem::R8 => "R8",
        elem::STRING => "STRING",
        elem::PTR => "PTR",
        elem::BYREF => "BYREF",
        elem::VALUETYPE => "VALUETYPE",
        elem::CLASS => "CLASS",
        elem::VAR => "VAR",
        elem::ARRAY => "ARRAY",
        elem::GENERICINST => "GENERICINST",
        elem::I => "I",
        elem::U => "U",
        elem::FNPTR => "FNPTR",
        elem::OBJECT => "OBJECT",
        elem::SZARRAY => "SZARRAY",
        _ => "UNKNOWN",
    }
}

/// Size in bytes of a primitive element type's storage (0 for non-primitives).
pub fn primitive_size(et: u8) -> u64 {
    match et {
        elem::BOOLEAN | elem::I1 | elem::U1 => 1,
        elem::CHAR | elem::I2 | elem::U2 => 2,
        elem::I4 | elem::U4 | elem::R4 => 4,
        elem::I8 | elem::U8 | elem::R8 | elem::I | elem::U | elem::PTR | elem::FNPTR => 8,
        _ => 0,
    }
}

pub use crate::data::statics::is_gc_static;

/// A field's value.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FieldValue {
    /// `bool`.
    Bool {
        /// The value.
        value: bool,
    },
    /// `char` (a UTF-16 code unit).
    Char {
        /// The code unit.
        value: u16,
    },
    /// A signed integer (`sbyte`, `short`, `int`, `long`).
    Int {
        /// The value.
        value: i64,
    },
    /// An unsigned integer (`byte`, `ushort`, `uint`, `ulong`).
    UInt {
        /// The value.
        value: u64,
    },
    /// `float` or `double`.
    Float {
        /// The value.
        value: f64,
    },
    /// `nint`, `nuint`, pointers, function pointers.
    Pointer {
        /// The value.
        value: u64,
    },
    /// An object reference (0 = null).
    Object {
        /// The referenced object's address (0 for null).
        address: u64,
        /// Its MethodTable, when readable.
        mt: Option<u64>,
        /// For a string, its value.
        string: Option<String>,
    },
    /// A value type stored inline (embedded struct) at `address`.
    ValueType {
        /// Where the struct's fields start.
        address: u64,
        /// Its MethodTable, when resolved.
        mt: Option<u64>,
    },
    /// The value could not be read; the text says why.
    Unavailable {
        /// Why.
        reason: String,
    },
}

impl FieldValue {
    /// The address of a referenced object or embedded struct.
    pub fn address(&self) -> Option<u64> {
        match self {
            FieldValue::Object { address, .. } | FieldValue::ValueType { address, .. } => {
                Some(*address)
            }
            _ => None,
        }
    }

    /// The value as SOS prints it in a field table (`Value` column).
    pub fn display(&self) -> String {
        match self {
            FieldValue::Bool { value } => (*value as u8).to_string(),
            FieldValue::Char { value } => format!("{value}"),
            FieldValue::Int { value } => value.to_string(),
            FieldValue::UInt { value } => value.to_string(),
            FieldValue::Float { value } => format!("{value}"),
            FieldValue::Pointer { value } => format!("{value:016x}"),
            FieldValue::Object { address, .. } | FieldValue::ValueType { address, .. } => {
                format!("{address:016x}")
            }
            FieldValue::Unavailable { reason } => format!("<{reason}>"),
        }
    }
}

/// One field of an object, value type or type (statics).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldData {
    /// The field's name (FieldDef row).
    pub name: String,
    /// The FieldDef token.
    pub token: u32,
    /// The FieldDesc's address.
    pub field_desc: u64,
    /// The offset: from the first field of the object (instance) or in the statics block.
    pub offset: u32,
    /// The CorElementType of its storage.
    pub element_type: u8,
    /// Its declared type, from the field signature (`System.Int32`, `Heap.Address`).
    pub type_name: String,
    /// The MethodTable of the declared type, when known (SOS's `MT` column).
    pub type_mt: Option<u64>,
    /// Whether the storage is an embedded value type (SOS's `VT` column).
    pub is_value_type: bool,
    /// `instance`, `static` or `TLstatic`.
    pub attr: &'static str,
    /// The type that declares it.
    pub declaring_mt: u64,
    /// Where the value lives, when known.
    pub address: Option<u64>,
    /// Its value.
    pub value: FieldValue,
    /// The first element type of its signature after its custom modifiers (`GENERICINST`,
    /// `SZARRAY`, `CLASS` also for a `volatile` field ...): what the DAC's GetFieldDescData
    /// reports as `sigType` and SOS names a field's type by when its MethodTable is unknown.
    pub sig_element_type: u8,
    /// When the signature is `CLASS <TypeDef>`: that TypeDef's name as the metadata gives it
    /// (`Ns.Outer+Inner`), SOS's name for a field whose type is not loaded.
    pub sig_typedef_name: Option<String>,
}

/// A reference an object holds and the field holding it ([`ObjectReader::references_with_fields`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldRef {
    /// The slot's address.
    pub slot: u64,
    /// The slot's offset from the object's first field (object + 8): ClrMD's
    /// `ClrReference.Offset` (an array's first element is at 8, after the length).
    pub offset: u64,
    /// The object referenced.
    pub target: u64,
    /// The field, through embedded structs (`_value._items`); None for an array element.
    pub field: Option<String>,
}

/// An array's shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArrayData {
    /// Rank.
    pub rank: u32,
    /// Number of elements (all dimensions).
    pub length: u64,
    /// Per dimension lengths (for SZ arrays: `[length]`).
    pub bounds: Vec<u32>,
    /// Per dimension lower bounds.
    pub lower_bounds: Vec<i32>,
    /// Element TypeHandle.
    pub element_mt: u64,
    /// Element CorElementType (CLASS for references, VALUETYPE for structs, I4 ...).
    pub element_type: u8,
    /// Bytes per element.
    pub component_size: u32,
    /// Address of element 0.
    pub data: u64,
}

/// An object decoded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObjectData {
    /// Its address.
    pub address: u64,
    /// Its MethodTable.
    pub mt: u64,
    /// Its type's name.
    pub name: String,
    /// The EEClass.
    pub ee_class: u64,
    /// Its size in bytes (as the heap walk counts it: aligned).
    pub size: u64,
    /// Its size unaligned: base size + components × component size (the DAC's
    /// GetObjectData `Size`, what SOS's dumpobj prints).
    pub unaligned_size: u64,
    /// Whether it is a free block (the GC's Free MethodTable).
    pub is_free: bool,
    /// The module's image path.
    pub file: String,
    /// For strings: the value (at most [`MAX_STRING_CHARS`] characters) and the length.
    pub string: Option<(String, u32)>,
    /// For arrays: the shape.
    pub array: Option<ArrayData>,
    /// For a boxed value type: its MethodTable is a value type, fields follow the MT pointer.
    pub is_boxed_value: bool,
    /// Fields, instance ones first (most basic type's first), then statics.
    pub fields: Vec<FieldData>,
}

/// GC reference layout of a type (its GCDesc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GcLayout {
    /// No references.
    None,
    /// Series `(offset from the object start, byte length adjustment)`: pointers from
    /// `obj + offset` for `size_adj + object size` bytes.
    Series(Vec<(u64, i64)>),
    /// An array of value types: from `obj + start`, repeat `(nptrs, skip)` items until the
    /// object's end.
    Repeating {
        /// First pointer's offset.
        start: u64,
        /// Items: pointers then bytes to skip.
        items: Vec<(u32, u32)>,
    },
}

/// Reads objects, fields and type facts; holds per-command caches. Create one per command.
pub struct ObjectReader<'r, M> {
    /// The runtime.
    pub rt: &'r Runtime<M>,
    /// The session's name caches.
    pub names: &'r TypeNames,
    /// The layout of this layer.
    pub layout: ObjectLayout,
    mt_cache: RefCell<HashMap<u64, Option<MethodTableInfo>>>,
    typedef_index: RefCell<HashMap<u64, HashMap<String, u32>>>,
    gc_layout: RefCell<HashMap<u64, crate::Result<GcLayout>>>,
    fields_cache: RefCell<HashMap<u64, Vec<(u64, FieldInfo)>>>,
}

fn align8(x: u64) -> u64 {
    (x + 7) & !7
}

impl<'r, M: Memory> ObjectReader<'r, M> {
    /// A reader over `rt` using the session's name caches.
    pub fn new(rt: &'r Runtime<M>, names: &'r TypeNames) -> Self {
        let layout = rt.layout.objects;
        ObjectReader {
            rt,
            names,
            layout,
            mt_cache: RefCell::new(HashMap::new()),
            typedef_index: RefCell::new(HashMap::new()),
            gc_layout: RefCell::new(HashMap::new()),
            fields_cache: RefCell::new(HashMap::new()),
        }
    }

    fn mem(&self) -> &M {
        self.rt.memory()
    }

    /// The decoded MethodTable (cached), or None when it is not one.
    pub fn mt(&self, mt: u64) -> Option<MethodTableInfo> {
        if let Some(v) = self.mt_cache.borrow().get(&mt) {
            return v.clone();
        }
        let v = self.rt.method_table(mt).ok();
        self.mt_cache.borrow_mut().insert(mt, v.clone());
        v
    }

    /// The type name of `mt` (or a note why it is unknown).
    pub fn type_name(&self, mt: u64) -> String {
        self.names.name_or_note(self.rt, mt)
    }

    /// Validates `addr` as an object start: its MethodTable must decode. The error names both.
    pub fn object_mt(&self, addr: u64) -> Result<(u64, MethodTableInfo)> {
        let w = self
            .mem()
            .read_u64(addr)
            .map_err(|_| ClrError::read("object header (MethodTable pointer)", addr))?;
        let mt = crate::model::heap::method_table_of(w);
        if mt == 0 {
            return Err(ClrError::corrupt(
                "object",
                addr,
                "is not an object: its MethodTable pointer is null",
            ));
        }
        match self.rt.method_table(mt) {
            Ok(i) => Ok((mt, i)),
            Err(e) => Err(ClrError::corrupt(
                "object",
                addr,
                format!("is not an object: its MethodTable {mt:#x} is not readable ({e})"),
            )),
        }
    }

    /// The object's size as the GC counts it (aligned), from its MethodTable and component count.
    pub fn object_size(&self, addr: u64, mt: &MethodTableInfo) -> Result<u64> {
        Ok(align8(self.unaligned_object_size(addr, mt)?))
    }

    /// The object's size unaligned (base size + components × component size), as the DAC's
    /// GetObjectData gives it.
    pub fn unaligned_object_size(&self, addr: u64, mt: &MethodTableInfo) -> Result<u64> {
        let count = if mt.component_size != 0 {
            self.mem()
                .read_u32(addr + 8)
                .map_err(|_| ClrError::read("array/string component count", addr + 8))?
                as u64
        } else {
            0
        };
        Ok(mt.base_size as u64 + count * mt.component_size as u64)
    }

    /// A string object's value (at most `max` characters) and its length.
    pub fn string_value(&self, addr: u64, max: usize) -> Result<(String, u32)> {
        let len = self
            .mem()
            .read_u32(addr + 8)
            .map_err(|_| ClrError::read("String::m_stringLength", addr + 8))?;
        let n = (len as usize).min(max);
        let s = self
            .mem()
            .read_utf16(addr + 12, n)
            .map_err(|_| ClrError::read("String characters", addr + 12))?;
        Ok((s, len))
    }

    /// The path of the module's image (empty when unknown).
    pub fn module_file(&self, mt: &MethodTableInfo) -> String {
        let m = match mt.array {
            Some(a) if a.element & 2 == 0 => self.mt(a.element).and_then(|e| e.module),
            _ => mt.module,
        };
        m.and_then(|m| self.rt.module(m).ok())
            .map(|d| d.path)
            .unwrap_or_default()
    }

    /// The element CorElementType of a TypeHandle stored in an array or a field: CLASS for
    /// reference types, VALUETYPE for structs, the primitive type for primitives and enums
    /// (EEClass::m_NormType).
    pub fn norm_type(&self, th: u64) -> u8 {
        if th & 2 != 0 {
            // A TypeDesc (pointer, function pointer...): pointer-sized.
            return elem::I;
        }
        let Some(info) = self.mt(th) else {
            return elem::CLASS;
        };
        if !info.is_value_type() {
            return elem::CLASS;
        }
        match self
            .mem()
            .read_u8(info.ee_class + self.rt.layout.ee_class.norm_type)
        {
            Ok(b) if b != 0 => b,
            _ => elem::VALUETYPE,
        }
    }

    /// The array's shape; `None` when `mt` is not an array type.
    pub fn array(&self, addr: u64, mt: &MethodTableInfo) -> Result<Option<ArrayData>> {
        self.rt
            .require(crate::discovery::layout::Capability::Fields)?;
        let Some(a) = mt.array else { return Ok(None) };
        let length = self
            .mem()
            .read_u32(addr + 8)
            .map_err(|_| ClrError::read("array length", addr + 8))? as u64;
        let (bounds, lower_bounds, data) = if a.is_sz {
            (vec![length as u32], vec![0], addr + 0x10)
        } else {
            let r = a.rank.min(32) as u64;
            let mut b = Vec::new();
            let mut lb = Vec::new();
            for i in 0..r {
                b.push(
                    self.mem()
                        .read_u32(addr + 0x10 + 4 * i)
                        .map_err(|_| ClrError::read("array bound", addr + 0x10 + 4 * i))?,
                );
            }
            for i in 0..r {
                lb.push(
                    self.mem()
                        .read_i32(addr + 0x10 + 4 * r + 4 * i)
                        .map_err(|_| ClrError::read("array lower bound", addr + 0x10))?,
                );
            }
            (b, lb, addr + 0x10 + 8 * r)
        };
        Ok(Some(ArrayData {
            rank: a.rank,
            length,
            bounds,
            lower_bounds,
            element_mt: a.element,
            element_type: self.norm_type(a.element),
            component_size: mt.component_size,
            data,
        }))
    }

    /// Decodes the object at `addr`: header facts and, unless `no_fields`, every field.
    pub fn object(&self, addr: u64, no_fields: bool) -> Result<ObjectData> {
        self.rt
            .require(crate::discovery::layout::Capability::Fields)?;
        let (mt, info) = self.object_mt(addr)?;
        let size = self.object_size(addr, &info)?;
        let unaligned_size = self.unaligned_object_size(addr, &info)?;
        let is_free = mt == self.rt.globals.free_mt;
        let string = if mt == self.rt.globals.string_mt {
            Some(self.string_value(addr, MAX_STRING_CHARS)?)
        } else {
            None
        };
        let array = if is_free {
            None
        } else {
            self.array(addr, &info)?
        };
        let fields = if is_free {
            Vec::new()
        } else if no_fields || array.is_some() || string.is_some() {
            // SOS lists a string's fields; ours are its length and first char, shown above.
            if string.is_some() && !no_fields {
                self.fields(mt, addr + 8, true)?
            } else {
                Vec::new()
            }
        } else {
            self.fields(mt, addr + 8, true)?
        };
        Ok(ObjectData {
            address: addr,
            mt,
            name: self.type_name(mt),
            ee_class: info.ee_class,
            size,
            unaligned_size,
            is_free,
            file: self.module_file(&info),
            string,
            array,
            is_boxed_value: info.is_value_type(),
            fields,
        })
    }

    /// The fields of a value type of MethodTable `mt` whose data is at `addr`.
    pub fn value_type(&self, mt: u64, addr: u64) -> Result<Vec<FieldData>> {
        let info = self.rt.method_table(mt)?;
        if !info.is_value_type() {
            return Err(ClrError::corrupt(
                "MethodTable",
                mt,
                format!("{} is not a value type", self.type_name(mt)),
            ));
        }
        self.fields(mt, addr, false)
    }

    /// The instance fields of `mt` and its parents, most basic type first, each with its
    /// declaring MethodTable.
    pub fn instance_fields(&self, mt: u64) -> Result<Vec<(u64, FieldInfo)>> {
        if let Some(v) = self.fields_cache.borrow().get(&mt) {
            return Ok(v.clone());
        }
        let mut chain = Vec::new();
        let mut cur = mt;
        while cur != 0 {
            if chain.len() >= MAX_PARENTS {
                return Err(ClrError::corrupt(
                    "MethodTable",
                    mt,
                    format!("parent chain longer than {MAX_PARENTS} (or a cycle)"),
                ));
            }
            let info = self.rt.method_table(cur)?;
            chain.push(cur);
            cur = info.parent;
        }
        let mut out = Vec::new();
        for &m in chain.iter().rev() {
            let info = self.rt.method_table(m)?;
            for f in self.rt.fields(&info)? {
                if !f.is_static {
                    out.push((m, f));
                }
            }
        }
        self.fields_cache.borrow_mut().insert(mt, out.clone());
        Ok(out)
    }

    /// Every field of `mt` with its value: instance fields read from `base` (the address of
    /// the first field: object + 8, or a value type's address). When `with_statics`, in SOS's
    /// order (DisplayFields): for each type of the parent chain, most basic first, its own
    /// instance fields then its own statics, each in FieldDesc order; else the instance fields
    /// only, most basic type's first.
    pub fn fields(&self, mt: u64, base: u64, with_statics: bool) -> Result<Vec<FieldData>> {
        let mut out = Vec::new();
        let instance = self.instance_fields(mt)?;
        if !with_statics {
            for (decl, f) in instance {
                out.push(self.field_data(mt, decl, &f, Some(base + f.offset as u64)));
            }
            return Ok(out);
        }
        let mut chain = Vec::new();
        let mut cur = mt;
        while cur != 0 && chain.len() < MAX_PARENTS {
            let info = self.rt.method_table(cur)?;
            chain.push((cur, info.parent));
            cur = info.parent;
        }
        for &(m, _) in chain.iter().rev() {
            for (decl, f) in instance.iter().filter(|(d, _)| *d == m) {
                out.push(self.field_data(mt, *decl, f, Some(base + f.offset as u64)));
            }
            let info = self.rt.method_table(m)?;
            for f in self.rt.fields(&info)? {
                if f.is_static {
                    let addr = self.static_address(&info, &f);
                    let mut d = match addr {
                        Ok(a) => self.field_data(mt, m, &f, Some(a)),
                        Err(why) => {
                            let mut d = self.field_data(mt, m, &f, None);
                            d.value = FieldValue::Unavailable {
                                reason: why.to_string(),
                            };
                            d
                        }
                    };
                    if f.is_thread_static {
                        d.attr = "TLstatic";
                    } else {
                        d.attr = "static";
                    }
                    out.push(d);
                }
            }
        }
        Ok(out)
    }

    /// The DomainLocalModule of a module (`Module::m_ModuleID`); .NET 9+ has none (statics
    /// are per type).
    pub fn domain_local_module(&self, module: u64) -> Result<u64> {
        self.rt
            .require(crate::discovery::layout::Capability::Statics)?;
        if self.rt.layout.statics != StaticsScheme::DomainLocalModule {
            return Err(ClrError::MissingField {
                ty: "Module",
                field: "m_ModuleID (no DomainLocalModule: statics are per type since .NET 9)",
                runtime: self.rt.layout.name.to_owned(),
            });
        }
        let a = module + self.layout.module_id;
        let dlm = self
            .mem()
            .read_u64(a)
            .map_err(|_| ClrError::read("Module::m_ModuleID", a))?;
        if dlm == 0 {
            return Err(ClrError::corrupt(
                "Module",
                module,
                "m_ModuleID (DomainLocalModule) is null",
            ));
        }
        Ok(dlm)
    }

    /// Where a static field's value lives (for GC statics: the slot holding the reference;
    /// for a struct static, the slot holding its box).
    pub fn static_address(&self, info: &MethodTableInfo, f: &FieldInfo) -> crate::Result<u64> {
        self.rt
            .require(crate::discovery::layout::Capability::Statics)?;
        if f.is_thread_static {
            return Err(ClrError::unsupported(
                "thread-static",
                Some(info.address),
                "a per-thread value (dumpobj of the thread statics' holder)",
            ));
        }
        if f.is_rva {
            return Err(ClrError::unsupported(
                "RVA static",
                Some(info.address),
                "its value is in the image's data, not read",
            ));
        }
        match &self.rt.layout.statics {
            StaticsScheme::DomainLocalModule => {}
            StaticsScheme::PerType(p) => return self.rt.per_type_static_address(p, info, f),
            StaticsScheme::Unresolved { ty, field } => return Err(self.unresolved(ty, field)),
        }
        // m_dwFlags low bits: StaticsMask (2 dynamic, 4 generics, 6 cross-module generics).
        if !info.has_component_size() && info.flags & 6 != 0 {
            return self.generic_static_address(info, f);
        }
        let module = info.require_module()?;
        let dlm = self.domain_local_module(module)?;
        if is_gc_static(f.element_type) {
            let p = dlm + self.layout.dlm_gc_statics;
            let gc = self
                .mem()
                .read_u64(p)
                .map_err(|_| ClrError::read("DomainLocalModule::m_pGCStatics", p))?;
            if gc == 0 {
                return Err(ClrError::not_found_at(
                    "GC statics",
                    info.address,
                    "not allocated (class not initialised)",
                ));
            }
            Ok(gc + f.offset as u64)
        } else {
            Ok(dlm + f.offset as u64)
        }
    }

    /// A static of a generic instantiation: its MethodTable's GenericsStaticsInfo
    /// {m_pFieldDescs, m_DynamicTypeID} (the first optional member) names its entry in its
    /// loader module's DomainLocalModule dynamic class table; a NormalDynamicEntry starts with
    /// the pointer to its GC statics. Non-GC statics of such types are not read (their base is
    /// not verified against a dump).
    fn generic_static_address(&self, info: &MethodTableInfo, f: &FieldInfo) -> crate::Result<u64> {
        if info.flags & 6 != 4 && info.flags & 6 != 6 {
            return Err(ClrError::unsupported(
                "statics of a dynamic (non-generic) type",
                Some(info.address),
                "not read",
            ));
        }
        if !is_gc_static(f.element_type) {
            return Err(ClrError::unsupported(
                "non-GC static of a generic instantiation",
                Some(info.address),
                "not read",
            ));
        }
        let m = self.mem();
        let rd = |a: u64, what: &str| m.read_u64(a).map_err(|_| crate::ClrError::read(what, a));
        let l = &self.rt.layout.method_table;
        let gsi = info.address
            + crate::data::types::optional_members_offset(l, info.flags2, info.num_virtuals);
        let id = rd(gsi + 8, "GenericsStaticsInfo::m_DynamicTypeID")?;
        if id == u64::MAX {
            return Err(ClrError::not_found_at(
                "statics",
                info.address,
                "no statics of its own (a shared canonical instantiation; each exact \
                 instantiation has its own)",
            ));
        }
        let dlm = self.domain_local_module(info.loader_module)?;
        let table = rd(
            dlm + self.layout.dlm_dynamic_class_table,
            "DomainLocalModule::m_pDynamicClassTable",
        )?;
        let count = rd(
            dlm + self.layout.dlm_dynamic_class_table + 8,
            "DomainLocalModule::m_aDynamicEntries",
        )?;
        if table == 0 || id >= count {
            return Err(ClrError::not_found_at(
                "statics",
                info.address,
                format!("not allocated (DynamicTypeID {id}, {count} dynamic entries)"),
            ));
        }
        let entry = rd(table + 16 * id, "DynamicClassInfo::m_pDynamicEntry")?;
        if entry == 0 {
            return Err(ClrError::not_found_at(
                "statics",
                info.address,
                "not allocated (class not initialised)",
            ));
        }
        let gc = rd(entry, "DynamicEntry::m_pGCStatics")?;
        if gc == 0 {
            return Err(ClrError::not_found_at(
                "GC statics",
                info.address,
                "not allocated (class not initialised)",
            ));
        }
        Ok(gc + f.offset as u64)
    }

    /// Where each thread keeps its value of the thread-static field at `offset` of `mt`
    /// (element type `et`): the thread's ThreadLocalModule for the type's module (its
    /// Thread's table, indexed by the module's index); GC thread statics live in an object[]
    /// whose handle is at +0x10 of the ThreadLocalModule, others in the ThreadLocalModule
    /// itself. Threads whose ThreadLocalModule has not allocated the class's thread statics,
    /// or whose class is not initialised, are left out (as SOS does). Returns (managed thread
    /// id, Thread, address).
    pub fn thread_static_addresses(
        &self,
        mt: u64,
        offset: u32,
        et: u8,
    ) -> crate::Result<Vec<(u32, u64, u64)>> {
        self.rt
            .require(crate::discovery::layout::Capability::Statics)?;
        let info = self.rt.method_table(mt)?;
        match &self.rt.layout.statics {
            StaticsScheme::DomainLocalModule => {}
            StaticsScheme::PerType(p) => {
                return self
                    .rt
                    .per_type_thread_static_addresses(p, &info, offset, et)
            }
            StaticsScheme::Unresolved { ty, field } => return Err(self.unresolved(ty, field)),
        }
        if !info.has_component_size() && info.flags & 6 != 0 {
            return Err(ClrError::unsupported(
                "thread statics of a generic or dynamic type",
                Some(mt),
                "not read",
            ));
        }
        let tlm_table = self
            .layout
            .thread_tlm_table
            .ok_or_else(|| ClrError::NotVerified {
                runtime: self.rt.layout.name.to_owned(),
                capability: "thread statics (the Thread's ThreadLocalBlock)",
            })?;
        let module = info.require_module()?;
        let m = self.mem();
        let dlm = self.domain_local_module(module)?;
        let index = m
            .read_u64(dlm + self.layout.dlm_module_index)
            .map_err(|_| {
                ClrError::read(
                    "DomainLocalModule::m_ModuleIndex",
                    dlm + self.layout.dlm_module_index,
                )
            })?;
        let rid = info.token.map_or(0, |t| (t & 0x00FF_FFFF) as u64);
        if rid == 0 {
            return Err(ClrError::corrupt(
                "MethodTable",
                mt,
                "has no TypeDef token (its class flags cannot be found)",
            ));
        }
        let threads = self.rt.threads()?;
        let mut out = Vec::new();
        for t in threads {
            if t.os_id == 0 {
                continue;
            }
            let (Ok(table), Ok(size)) = (
                m.read_u64(t.address + tlm_table),
                m.read_u64(t.address + tlm_table + 8),
            ) else {
                continue;
            };
            if table == 0 || index >= size {
                continue;
            }
            let Ok(tlm) = m.read_u64(table + 8 * index) else {
                continue;
            };
            if tlm == 0 {
                continue;
            }
            // The class's flags: in the ThreadLocalModule's data blob (after its dynamic class
            // table, entry count and GC statics handle), ALLOCATECLASS_FLAG (4) once this
            // thread allocated the class's thread statics; in the DomainLocalModule's (after
            // its GC statics pointer and module index), INITIALIZED_FLAG (1). The DAC's
            // GetThreadLocalModuleData / GetDomainLocalModuleData give SOS these blobs
            // (DisplayThreadStatic skips a thread without both).
            let (Ok(tflags), Ok(dflags)) = (
                m.read_u8(tlm + TLM_DATA_BLOB + rid - 1),
                m.read_u8(dlm + self.layout.dlm_module_index + 8 + rid - 1),
            ) else {
                continue;
            };
            if tflags & 4 == 0 || dflags & 1 == 0 {
                continue;
            }
            let base = if is_gc_static(et) {
                let Some(arr) = m
                    .read_u64(tlm + 0x10)
                    .ok()
                    .filter(|&h| h != 0)
                    .and_then(|h| m.read_u64(h).ok())
                    .filter(|&a| a != 0)
                else {
                    continue;
                };
                arr + 0x10
            } else {
                tlm
            };
            out.push((t.managed_id, t.address, base + offset as u64));
        }
        Ok(out)
    }

    /// The statics scheme's missing field, said as [`ClrError::MissingField`] says it.
    fn unresolved(&self, ty: &'static str, field: &'static str) -> ClrError {
        ClrError::MissingField {
            ty,
            field,
            runtime: self.rt.layout.name.to_owned(),
        }
    }

    /// Whether the type keeps its statics apart from its module's (.NET 8: the DomainLocalModule
    /// flags, dynamic or generic statics; .NET 9+: every type with statics does, the
    /// MethodTable's DynamicStatics flag).
    pub fn has_dynamic_statics(&self, info: &MethodTableInfo) -> bool {
        match self.rt.layout.statics {
            StaticsScheme::DomainLocalModule => !info.has_component_size() && info.flags & 6 != 0,
            _ => info.flags2 & crate::discovery::layout::mt_flags::FLAGS2_NET9_DYNAMIC_STATICS != 0,
        }
    }

    /// Name, type and value of one field.
    fn field_data(&self, obj_mt: u64, decl: u64, f: &FieldInfo, addr: Option<u64>) -> FieldData {
        let (name, sig) = self.field_meta(decl, f.token);
        let (sig_element_type, sig_typedef_name) = match &sig {
            Some(s) => (
                sig_first_element_type(s.unmodified()),
                self.sig_typedef_name(decl, s.unmodified()),
            ),
            None => (f.element_type, None),
        };
        let (type_name, type_mt) = match &sig {
            Some(s) => (
                self.sig_type_name(obj_mt, decl, s),
                self.sig_type_mt(obj_mt, decl, s),
            ),
            None => (element_type_name(f.element_type).to_string(), None),
        };
        let mut type_mt = type_mt;
        let is_struct_static = f.is_static && f.element_type == elem::VALUETYPE;
        let value = match addr {
            None => FieldValue::Unavailable {
                reason: "no address".into(),
            },
            Some(a) if is_struct_static => {
                // The runtime keeps a struct static boxed: the slot holds the box.
                match self.mem().read_u64(a) {
                    Ok(0) => FieldValue::Unavailable {
                        reason: "box not allocated".into(),
                    },
                    Ok(b) => {
                        let mt = crate::model::heap::read_method_table(self.mem(), b).ok();
                        if type_mt.is_none() {
                            type_mt = mt;
                        }
                        FieldValue::ValueType { address: b + 8, mt }
                    }
                    Err(_) => FieldValue::Unavailable {
                        reason: format!("not in the dump at {a:#x}"),
                    },
                }
            }
            Some(a) => self.read_value(a, f.element_type, type_mt),
        };
        // A field of an array or generic instantiation type: its MethodTable (what the DAC's
        // GetFieldDescData reports when the type is loaded) is the referenced object's when
        // that object's type is exactly the declared one.
        if type_mt.is_none() {
            if let FieldValue::Object {
                address,
                mt: Some(m),
                ..
            } = &value
            {
                if *address != 0 && self.type_name(*m) == type_name {
                    type_mt = Some(*m);
                }
            }
        }
        FieldData {
            name,
            token: f.token,
            field_desc: f.address,
            offset: f.offset,
            element_type: f.element_type,
            type_name,
            type_mt,
            is_value_type: f.element_type == elem::VALUETYPE,
            attr: "instance",
            declaring_mt: decl,
            address: addr,
            value,
            sig_element_type,
            sig_typedef_name,
        }
    }

    /// When `sig` is `CLASS <TypeDef>`, the TypeDef's metadata name (`Ns.Outer+Inner`) in the
    /// module of `decl`.
    fn sig_typedef_name(&self, decl: u64, sig: &SigType) -> Option<String> {
        let SigType::Class(t) = sig else {
            return None;
        };
        if t.table()? != TableId::TypeDef {
            return None;
        }
        let module = self.mt(decl)?.module?;
        let md = self.names.module_metadata(self.rt, module).ok()?;
        let m = md.metadata().ok()?;
        let mut rid = t.rid();
        let mut name = String::new();
        for _ in 0..MAX_PARENTS {
            let row = m.type_def(rid).ok()?;
            let own = if row.namespace.is_empty() {
                row.name.to_string()
            } else {
                format!("{}.{}", row.namespace, row.name)
            };
            name = if name.is_empty() {
                own
            } else {
                format!("{own}+{name}")
            };
            match m.enclosing_class(rid).ok()? {
                Some(e) => rid = e,
                None => return Some(name),
            }
        }
        None
    }

    /// Reads a value of storage type `et` at `a`.
    pub fn read_value(&self, a: u64, et: u8, type_mt: Option<u64>) -> FieldValue {
        let m = self.mem();
        let bad = || FieldValue::Unavailable {
            reason: format!("not in the dump at {a:#x}"),
        };
        let u = |n: u64| -> Option<u64> {
            match n {
                1 => m.read_u8(a).ok().map(u64::from),
                2 => m.read_u16(a).ok().map(u64::from),
                4 => m.read_u32(a).ok().map(u64::from),
                _ => m.read_u64(a).ok(),
            }
        };
        match et {
            elem::BOOLEAN => u(1).map_or_else(bad, |v| FieldValue::Bool { value: v != 0 }),
            elem::CHAR => u(2).map_or_else(bad, |v| FieldValue::Char { value: v as u16 }),
            elem::I1 => u(1).map_or_else(bad, |v| FieldValue::Int {
                value: v as u8 as i8 as i64,
            }),
            elem::I2 => u(2).map_or_else(bad, |v| FieldValue::Int {
                value: v as u16 as i16 as i64,
            }),
            elem::I4 => u(4).map_or_else(bad, |v| FieldValue::Int {
                value: v as u32 as i32 as i64,
            }),
            elem::I8 => u(8).map_or_else(bad, |v| FieldValue::Int { value: v as i64 }),
            elem::U1 => u(1).map_or_else(bad, |v| FieldValue::UInt { value: v }),
            elem::U2 => u(2).map_or_else(bad, |v| FieldValue::UInt { value: v }),
            elem::U4 => u(4).map_or_else(bad, |v| FieldValue::UInt { value: v }),
            elem::U8 => u(8).map_or_else(bad, |v| FieldValue::UInt { value: v }),
            elem::R4 => u(4).map_or_else(bad, |v| FieldValue::Float {
                value: f32::from_bits(v as u32) as f64,
            }),
            elem::R8 => u(8).map_or_else(bad, |v| FieldValue::Float {
                value: f64::from_bits(v),
            }),
            elem::I | elem::U | elem::PTR | elem::FNPTR | elem::BYREF => {
                u(8).map_or_else(bad, |v| FieldValue::Pointer { value: v })
            }
            elem::VALUETYPE => FieldValue::ValueType {
                address: a,
                mt: type_mt,
            },
            _ => match u(8) {
                None => bad(),
                Some(0) => FieldValue::Object {
                    address: 0,
                    mt: None,
                    string: None,
                },
                Some(p) => {
                    let mt = crate::model::heap::read_method_table(m, p).ok();
                    let string = if mt == Some(self.rt.globals.string_mt) {
                        self.string_value(p, 4096).ok().map(|s| s.0)
                    } else {
                        None
                    };
                    FieldValue::Object {
                        address: p,
                        mt,
                        string,
                    }
                }
            },
        }
    }

    /// The FieldDef's name and signature, from the declaring type's module metadata.
    fn field_meta(&self, decl: u64, token: u32) -> (String, Option<SigType>) {
        let unknown = || (format!("<field {token:#x}>"), None);
        let Some(info) = self.mt(decl) else {
            return unknown();
        };
        let Some(module) = info.module else {
            return unknown();
        };
        let Ok(md) = self.names.module_metadata(self.rt, module) else {
            return unknown();
        };
        let Ok(m) = md.metadata() else {
            return unknown();
        };
        let rid = token & 0x00FF_FFFF;
        match m.field(rid) {
            Ok(row) => (row.name.to_string(), m.field_sig(rid).ok()),
            Err(_) => unknown(),
        }
    }

    /// The declared type's name in SOS's spelling, generic parameters resolved from the
    /// object's instantiation.
    fn sig_type_name(&self, obj_mt: u64, decl: u64, sig: &SigType) -> String {
        let Some(info) = self.mt(decl) else {
            return "<unknown>".into();
        };
        let Some(module) = info.module else {
            return "<unknown>".into();
        };
        let Ok(md) = self.names.module_metadata(self.rt, module) else {
            return "<unknown>".into();
        };
        let Ok(m) = md.metadata() else {
            return "<unknown>".into();
        };
        let args = self.decl_type_args(obj_mt, decl);
        let arg_names: Vec<String> = args.iter().map(|&a| self.type_name(a)).collect();
        let names = MetadataNames::new(&m).with_generic_args(arg_names, Vec::new());
        crate::metadata::type_to_string(sig, SigStyle::TypeName, &names)
    }

    /// The type arguments of `decl` as instantiated in `obj_mt`'s parent chain.
    fn decl_type_args(&self, obj_mt: u64, decl: u64) -> Vec<u64> {
        // The declaring MT in the chain of obj_mt has the exact instantiation.
        let mut cur = obj_mt;
        for _ in 0..MAX_PARENTS {
            let Some(i) = self.mt(cur) else { break };
            if cur == decl || (i.canonical == decl) {
                return i.type_args;
            }
            if i.parent == 0 {
                break;
            }
            cur = i.parent;
        }
        self.mt(decl).map(|i| i.type_args).unwrap_or_default()
    }

    /// The MethodTable of a field's declared type, when it can be found.
    fn sig_type_mt(&self, obj_mt: u64, decl: u64, sig: &SigType) -> Option<u64> {
        let info = self.mt(decl)?;
        let module = info.module?;
        match sig.unmodified() {
            SigType::Primitive(p) => {
                use crate::metadata::Primitive as P;
                match p {
                    P::String => Some(self.rt.globals.string_mt),
                    P::Object => Some(self.rt.globals.object_mt),
                    _ => self.corelib_type(&format!("System.{}", p.short_name())),
                }
            }
            SigType::Class(t) | SigType::ValueType(t) => self.token_mt(module, *t),
            SigType::Var(n) => {
                let args = self.decl_type_args(obj_mt, decl);
                args.get(*n as usize).copied().filter(|a| a & 2 == 0)
            }
            _ => None,
        }
    }

    /// The module of System.Private.CoreLib (String's module).
    pub fn corelib_module(&self) -> Option<u64> {
        self.mt(self.rt.globals.string_mt)?.module
    }

    /// The MethodTable of a CoreLib type by full name, if loaded.
    pub fn corelib_type(&self, name: &str) -> Option<u64> {
        let m = self.corelib_module()?;
        let rid = self.find_typedef(m, name)?;
        self.typedef_mt(m, rid)
    }

    /// The loaded MethodTable of TypeDef `rid` of `module` (TypeDefToMethodTable map).
    pub fn typedef_mt(&self, module: u64, rid: u32) -> Option<u64> {
        crate::model::lookup_maps::typedef_mt(self.rt, module, rid)
    }

    /// The MethodDesc of MethodDef `rid` of `module` (MethodDefToDesc map), when the method's
    /// MethodDesc exists; `None` also where the layout does not know the map
    /// ([`crate::discovery::layout::ImageRecordsLayout::methoddef_map`]).
    pub fn methoddef_md(&self, module: u64, rid: u32) -> Option<u64> {
        crate::model::lookup_maps::methoddef_md(self.rt, module, rid)
    }

    /// Finds a TypeDef of `module` by its full name (`Namespace.Outer+Inner`).
    pub fn find_typedef(&self, module: u64, name: &str) -> Option<u32> {
        if let Some(ix) = self.typedef_index.borrow().get(&module) {
            return ix.get(name).copied();
        }
        let md = self.names.module_metadata(self.rt, module).ok()?;
        let m = md.metadata().ok()?;
        let mut ix = HashMap::new();
        for rid in 1..=m.row_count(TableId::TypeDef) {
            if let Ok(n) = m.type_name(rid) {
                ix.insert(n, rid);
            }
        }
        let r = ix.get(name).copied();
        self.typedef_index.borrow_mut().insert(module, ix);
        r
    }

    /// Every TypeDef name of a module (for `name2ee`).
    pub fn typedef_names(&self, module: u64) -> Vec<(String, u32)> {
        let _ = self.find_typedef(module, "");
        let mut v: Vec<(String, u32)> = self
            .typedef_index
            .borrow()
            .get(&module)
            .map(|ix| ix.iter().map(|(k, v)| (k.clone(), *v)).collect())
            .unwrap_or_default();
        v.sort_by_key(|x| x.1);
        v
    }

    /// The MethodTable of a TypeDef or TypeRef token of `module`.
    fn token_mt(&self, module: u64, t: Token) -> Option<u64> {
        match t.table()? {
            TableId::TypeDef => self.typedef_mt(module, t.rid()),
            TableId::TypeRef => {
                let md = self.names.module_metadata(self.rt, module).ok()?;
                let m = md.metadata().ok()?;
                let name = m.type_ref_name(t.rid()).ok()?;
                // TypeRefs of the corpus point at CoreLib or at a facade forwarding to it.
                let corelib = self.corelib_module()?;
                let rid = self.find_typedef(corelib, &name)?;
                self.typedef_mt(corelib, rid)
            }
            _ => None,
        }
    }

    // ---------------------------------------------------------------------------- GC layout

    /// The GC reference layout of `mt` (its GCDesc), cached.
    pub fn gc_layout(&self, mt: u64) -> crate::Result<GcLayout> {
        self.rt
            .require(crate::discovery::layout::Capability::Roots)?;
        if let Some(v) = self.gc_layout.borrow().get(&mt) {
            return v.clone();
        }
        let v = self.read_gc_layout(mt);
        self.gc_layout.borrow_mut().insert(mt, v.clone());
        v
    }

    fn read_gc_layout(&self, mt: u64) -> crate::Result<GcLayout> {
        // The cached decode; when it failed, the decode again for its error.
        let info = match self.mt(mt) {
            Some(i) => i,
            None => self.rt.method_table(mt)?,
        };
        if !info.contains_pointers() {
            return Ok(GcLayout::None);
        }
        let m = self.mem();
        let n = m
            .read_u64(mt - 8)
            .map_err(|_| ClrError::read("GCDesc series count", mt - 8))? as i64;
        if n > 0 {
            if n > MAX_SERIES {
                return Err(ClrError::corrupt("GCDesc", mt, format!("{n} series")));
            }
            let mut v = Vec::new();
            for i in 0..n as u64 {
                let s = mt - 8 - 16 * (i + 1);
                let size = m
                    .read_u64(s)
                    .map_err(|_| ClrError::read("GCDesc series", s))?
                    as i64;
                let off = m
                    .read_u64(s + 8)
                    .map_err(|_| ClrError::read("GCDesc series", s + 8))?;
                v.push((off, size));
            }
            Ok(GcLayout::Series(v))
        } else if n < 0 {
            // i64::MIN has no negation: compare magnitudes.
            let cnt = n.unsigned_abs();
            if cnt > MAX_SERIES as u64 {
                return Err(ClrError::corrupt(
                    "GCDesc",
                    mt,
                    format!("{cnt} repeating items"),
                ));
            }
            let start = m
                .read_u64(mt - 16)
                .map_err(|_| ClrError::read("GCDesc start offset", mt - 16))?;
            let mut items = Vec::new();
            for i in 0..cnt {
                let a = mt.wrapping_sub(24 + 8 * i);
                let nptrs = m
                    .read_u32(a)
                    .map_err(|_| ClrError::read("GCDesc item", a))?;
                let skip = m
                    .read_u32(a + 4)
                    .map_err(|_| ClrError::read("GCDesc item", a + 4))?;
                items.push((nptrs, skip));
            }
            Ok(GcLayout::Repeating { start, items })
        } else {
            Err(ClrError::corrupt(
                "GCDesc",
                mt,
                "ContainsPointers but the GCDesc has no series",
            ))
        }
    }

    /// The addresses of the reference slots of the object at `addr` (of MethodTable `mt`
    /// and size `size`, the unaligned size), from its GCDesc; at most `limit` slots.
    pub fn reference_slots(
        &self,
        addr: u64,
        mt: u64,
        size: u64,
        limit: usize,
    ) -> crate::Result<Vec<u64>> {
        let mut out = Vec::new();
        match self.gc_layout(mt)? {
            GcLayout::None => {}
            GcLayout::Series(series) => {
                // As the GC walks them (`go_through_object`): from the highest series (the
                // first read, next to the MethodTable) down, each slot by slot upwards; SOS's
                // dumpobjgcrefs lists them in this order.
                for (off, sz) in series.iter() {
                    // Wrapping arithmetic: a damaged GCDesc may hold any numbers; no slot lies
                    // past the object's end.
                    let start = addr.wrapping_add(*off);
                    let stop = ((addr as i64)
                        .wrapping_add(*off as i64)
                        .wrapping_add(*sz)
                        .wrapping_add(size as i64) as u64)
                        .min(addr.saturating_add(size));
                    let mut p = start;
                    while p < stop {
                        if out.len() >= limit {
                            return Err(ClrError::corrupt(
                                "object",
                                addr,
                                format!("more than {limit} references"),
                            ));
                        }
                        out.push(p);
                        p += 8;
                    }
                }
            }
            GcLayout::Repeating { start, items } => {
                let stop = addr.saturating_add(size).saturating_sub(8);
                let mut p = addr.saturating_add(start);
                let mut guard = 0u64;
                'outer: while p < stop {
                    for &(nptrs, skip) in &items {
                        let end = p.saturating_add(8 * nptrs.max(1) as u64);
                        while p < end {
                            if out.len() >= limit {
                                return Err(ClrError::corrupt(
                                    "object",
                                    addr,
                                    format!("more than {limit} references"),
                                ));
                            }
                            out.push(p);
                            p += 8;
                        }
                        p = p.saturating_add(skip as u64);
                        guard += 1;
                        if guard > 1 << 28 {
                            break 'outer;
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    /// The unaligned size of the object at `addr` (what the GCDesc walk adds to series sizes).
    pub fn raw_size(&self, addr: u64, info: &MethodTableInfo) -> Result<u64> {
        let count = if info.component_size != 0 {
            self.mem()
                .read_u32(addr + 8)
                .map_err(|_| ClrError::read("component count", addr + 8))? as u64
        } else {
            0
        };
        Ok(info.base_size as u64 + count * info.component_size as u64)
    }

    /// The non-null references held by the object at `addr`: `(slot address, target)`.
    pub fn references(&self, addr: u64) -> Result<Vec<(u64, u64)>> {
        let (mt, info) = self.object_mt(addr)?;
        let size = self.raw_size(addr, &info)?;
        // A damaged length must not make us list billions of slots: the whole object has to
        // be in the dump (a heap dump holds every object completely).
        let mut last = [0u8; 1];
        if self
            .mem()
            .read(addr.saturating_add(size.max(1) - 1), &mut last)
            != 1
        {
            return Err(ClrError::corrupt(
                "object",
                addr,
                format!(
                    "its size {size:#x} (MethodTable {mt:#x}) runs past the memory the dump \
                     holds; expected an object wholly in the dump"
                ),
            ));
        }
        let slots = self
            .reference_slots(addr, mt, size, 1 << 26)
            .map_err(|e| e.context(format!("the GCDesc of MethodTable {mt:#x}")))?;
        let mut out = Vec::with_capacity(slots.len());
        for s in slots {
            let v = self
                .mem()
                .read_u64(s)
                .map_err(|_| ClrError::read("reference slot", s))?;
            if v != 0 {
                out.push((s, v));
            }
        }
        Ok(out)
    }

    /// The non-null references held by the object at `addr`, in the GCDesc walk's order (as
    /// [`Self::references`]), each with the field holding it: ClrMD's
    /// `EnumerateReferencesWithFields` (no dependent handles), which SOS's `dumpobjgcrefs` lists.
    pub fn references_with_fields(&self, addr: u64) -> Result<Vec<FieldRef>> {
        let (mt, info) = self.object_mt(addr)?;
        let refs = self.references(addr)?;
        // An array's elements have no field (ClrMD: an array type has no fields).
        let fields = if info.component_size != 0 {
            Vec::new()
        } else {
            self.fields(mt, addr + 8, false)?
        };
        Ok(refs
            .into_iter()
            .map(|(slot, target)| {
                let offset = slot.wrapping_sub(addr).wrapping_sub(8);
                FieldRef {
                    slot,
                    offset,
                    target,
                    field: self.field_path(&fields, offset),
                }
            })
            .collect())
    }

    /// The name of the field holding the slot at `offset` (from the first field) among
    /// `fields`, through embedded structs (`a.b.c`, `???` for a nameless one): ClrMD's
    /// `ClrReference.Field`/`InnerField`. The field is the first containing the offset, else
    /// the one starting closest below it; None when there is none, or no name on the way.
    fn field_path(&self, fields: &[FieldData], offset: u64) -> Option<String> {
        let mut names: Vec<String> = Vec::new();
        let mut list: Vec<FieldData> = fields.to_vec();
        let mut off = offset;
        // The field whose struct is being looked into (ClrMD stops at `m_value` found inside
        // itself: a primitive type's field is of its own type).
        let mut outer: Option<u64> = None;
        for _ in 0..MAX_PARENTS {
            let Some(f) = self.find_field(&list, off).cloned() else {
                break;
            };
            if f.name == "m_value" && outer == Some(f.field_desc) {
                break;
            }
            names.push(if f.name.trim().is_empty() {
                "???".into()
            } else {
                f.name.clone()
            });
            let (
                FieldValue::ValueType {
                    address,
                    mt: Some(vmt),
                },
                true,
            ) = (&f.value, f.is_value_type)
            else {
                break;
            };
            off -= f.offset as u64;
            outer = Some(f.field_desc);
            list = match self.fields(*vmt, *address, false) {
                Ok(v) => v,
                Err(_) => break,
            };
        }
        // "???.???" says nothing: no name then.
        names.iter().any(|n| n != "???").then(|| names.join("."))
    }

    /// ClrMD's `FindField`: the first field whose storage holds `offset`, else the one
    /// starting closest below it (the first such).
    fn find_field<'f>(&self, fields: &'f [FieldData], offset: u64) -> Option<&'f FieldData> {
        let mut best: Option<&FieldData> = None;
        for f in fields {
            let start = f.offset as u64;
            if start <= offset && offset < start + self.field_size(f) {
                return Some(f);
            }
            if start <= offset && best.is_none_or(|b| (b.offset as u64) < start) {
                best = Some(f);
            }
        }
        best
    }

    /// The bytes a field's storage takes: its element type's size, an embedded struct's
    /// unboxed size.
    fn field_size(&self, f: &FieldData) -> u64 {
        match f.element_type {
            0x02 | 0x04 | 0x05 => 1,
            0x03 | 0x06 | 0x07 => 2,
            0x08 | 0x09 | 0x0c => 4,
            0x11 => f
                .type_mt
                .and_then(|m| self.rt.method_table(m).ok())
                .map_or(0, |i| (i.base_size as u64).saturating_sub(16)),
            _ => 8,
        }
    }

    /// `objsize`: the objects reachable from `addr` (itself included) and their total size.
    /// Returns (object count, total bytes, errors met).
    pub fn retained_size(&self, addr: u64, limit: usize) -> Result<(u64, u64, Vec<String>)> {
        self.object_mt(addr)?;
        let mut seen = std::collections::HashSet::new();
        let mut stack = vec![addr];
        let mut total = 0u64;
        let mut errors = Vec::new();
        seen.insert(addr);
        while let Some(o) = stack.pop() {
            if seen.len() > limit {
                errors.push(format!("stopped after {limit} objects"));
                break;
            }
            let (_, info) = match self.object_mt(o) {
                Ok(v) => v,
                Err(e) => {
                    errors.push(e.to_string());
                    continue;
                }
            };
            total += self.object_size(o, &info).unwrap_or(0);
            match self.references(o) {
                Ok(refs) => {
                    for (_, t) in refs {
                        if seen.insert(t) {
                            stack.push(t);
                        }
                    }
                }
                Err(e) => errors.push(e.to_string()),
            }
        }
        Ok((seen.len() as u64, total, errors))
    }
}

/// Where an address lies in the GC heap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GcWhere {
    /// The address asked about.
    pub address: u64,
    /// The GC heap's index.
    pub heap: usize,
    /// The segment (region).
    pub segment: u64,
    /// Its kind: gen0, gen1, gen2, ephemeral, loh, poh, frozen.
    pub kind: &'static str,
    /// The generation number SOS prints (0-2, 3 LOH, 4 POH; frozen: None).
    pub generation: Option<u32>,
    /// The segment's first object.
    pub begin: u64,
    /// The end of its objects.
    pub allocated: u64,
    /// Its committed end.
    pub committed: u64,
    /// Whether the address is past `allocated` (in reserved/committed but unused memory).
    pub beyond_allocated: bool,
}

/// The segment holding `addr`, if any (`mem <= addr < reserved`).
pub fn gc_where(heap: &GcHeap, addr: u64) -> Option<GcWhere> {
    let seg: &Segment = heap
        .segments
        .iter()
        .find(|s| s.mem <= addr && addr < s.walk_end)
        .or_else(|| {
            heap.segments
                .iter()
                .find(|s| s.mem <= addr && addr < s.reserved.max(s.committed))
        })?;
    use crate::model::heap::SegmentKind as K;
    let generation = match seg.kind {
        K::Gen0 => Some(0),
        K::Gen1 => Some(1),
        K::Gen2 => Some(2),
        K::Ephemeral => None,
        K::Loh => Some(3),
        K::Poh => Some(4),
        K::Frozen => None,
    };
    Some(GcWhere {
        address: addr,
        heap: seg.heap,
        segment: seg.address,
        kind: seg.kind.name(),
        generation,
        begin: seg.mem,
        allocated: seg.walk_end,
        committed: seg.committed,
        beyond_allocated: addr >= seg.walk_end,
    })
}

/// One problem `verifyheap` found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeapProblem {
    /// The object with the problem.
    pub object: u64,
    /// Its MethodTable (0 when unreadable).
    pub mt: u64,
    /// The reference slot, for a bad reference.
    pub slot: Option<u64>,
    /// The bad reference's value.
    pub target: Option<u64>,
    /// What is wrong.
    pub detail: String,
}

/// What `verifyheap` found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeapVerification {
    /// Objects checked (free ones excluded).
    pub objects: u64,
    /// References checked.
    pub references: u64,
    /// Problems (walk errors, bad MethodTables, references to no object start).
    pub problems: Vec<HeapProblem>,
}

/// Walks the whole heap: every object's MethodTable must decode, and every reference must
/// point at the start of an object of the heap (frozen segments included). At most
/// `max_problems` problems are kept.
pub fn verify_heap<M: Memory>(
    reader: &ObjectReader<'_, M>,
    heap: &GcHeap,
    max_problems: usize,
) -> HeapVerification {
    let rt = reader.rt;
    let mut starts = Vec::new();
    let mut problems = Vec::new();
    let mut it = heap.objects(rt);
    let mut objs = Vec::new();
    for o in it.by_ref() {
        if !o.is_free {
            starts.push(o.address);
            objs.push((o.address, o.mt));
        }
    }
    for e in it.errors() {
        problems.push(HeapProblem {
            object: e.address,
            mt: e.mt,
            slot: None,
            target: None,
            detail: format!("heap walk: {} ({} bytes skipped)", e.detail, e.skipped),
        });
    }
    starts.sort_unstable();
    let mut references = 0u64;
    for (a, mt) in &objs {
        if problems.len() >= max_problems {
            break;
        }
        references += check_object(reader, *a, *mt, &starts, &mut problems, max_problems);
    }
    HeapVerification {
        objects: objs.len() as u64,
        references,
        problems,
    }
}

/// The problems of the object at `address` whose MethodTable is `mt` ([`check_object`]'s
/// checks: its MethodTable, size and GCDesc, every non-null reference the start of an object
/// of `starts`, sorted), said in words; empty for a sound object.
pub fn object_problems<M: Memory>(
    reader: &ObjectReader<'_, M>,
    address: u64,
    mt: u64,
    starts: &[u64],
) -> Vec<String> {
    let mut found = Vec::new();
    check_object(reader, address, mt, starts, &mut found, 16);
    found.into_iter().map(|p| p.detail).collect()
}

/// One object's checks, shared by [`verify_heap`] and [`verify_object`]: its MethodTable must
/// decode, its size and GCDesc read, and every non-null reference slot hold the start of an
/// object of the heap (`starts`, sorted). Problems go to `problems` (at most `max_problems`
/// in all); returns the non-null references checked.
fn check_object<M: Memory>(
    reader: &ObjectReader<'_, M>,
    a: u64,
    mt: u64,
    starts: &[u64],
    problems: &mut Vec<HeapProblem>,
    max_problems: usize,
) -> u64 {
    let rt = reader.rt;
    let mut references = 0u64;
    let problem = |slot, target, detail| HeapProblem {
        object: a,
        mt,
        slot,
        target,
        detail,
    };
    let Some(info) = reader.mt(mt) else {
        problems.push(problem(
            None,
            None,
            format!("MethodTable {mt:#x} does not decode"),
        ));
        return 0;
    };
    if !info.contains_pointers() {
        return 0;
    }
    let size = match reader.raw_size(a, &info) {
        Ok(s) => s,
        Err(e) => {
            problems.push(problem(None, None, e.to_string()));
            return 0;
        }
    };
    let slots = match reader.reference_slots(a, mt, size, 1 << 26) {
        Ok(s) => s,
        Err(e) => {
            problems.push(problem(None, None, format!("GCDesc: {e}")));
            return 0;
        }
    };
    for s in slots {
        let v = match rt.memory().read_u64(s) {
            Ok(v) => v,
            Err(_) => {
                problems.push(problem(
                    Some(s),
                    None,
                    "reference slot not in the dump".into(),
                ));
                continue;
            }
        };
        if v == 0 {
            continue;
        }
        references += 1;
        if starts.binary_search(&v).is_err() {
            problems.push(problem(
                Some(s),
                Some(v),
                format!(
                    "field at offset {:#x} refers to {v:#x}, which is not the start of an \
                     object of the heap",
                    s - a
                ),
            ));
            if problems.len() >= max_problems {
                break;
            }
        }
    }
    references
}

/// What `verifyobj` found about one address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ObjectVerification {
    /// The address checked.
    pub address: u64,
    /// Its MethodTable word (None when it is not on the heap or unreadable).
    pub mt: Option<u64>,
    /// Non-null references checked.
    pub references: u64,
    /// What is wrong (empty: a valid object).
    pub problems: Vec<ObjectProblem>,
}

/// What is wrong with an object, by kind (SOS's `ObjectCorruptionKind` where SOS has one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ObjectProblemKind {
    /// No segment of the GC heap holds the address.
    ObjectNotOnTheHeap,
    /// The address is not a multiple of 8.
    ObjectNotPointerAligned,
    /// The MethodTable word is unreadable or does not decode as a MethodTable.
    InvalidMethodTable,
    /// A MethodTable decodes there, but the heap walk starts no object at the address.
    NotAnObjectStart,
    /// The object's size or reference map could not be read.
    CouldNotReadObject,
    /// A reference slot holds what is not the start of an object of the heap (or is unread).
    InvalidObjectReference,
}

/// One problem of [`ObjectVerification`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ObjectProblem {
    /// Offset from the object's address (0 for the object itself).
    pub offset: u64,
    /// What kind.
    pub kind: ObjectProblemKind,
    /// Said in words.
    pub detail: String,
}

/// Checks one object as `verifyheap` checks each (and as SOS's `verifyobj` decides): on a
/// segment, aligned, a MethodTable that decodes, the start of an object of the heap walk, and
/// every non-null reference the start of an object. Walks the heap for the object starts.
pub fn verify_object<M: Memory>(
    reader: &ObjectReader<'_, M>,
    heap: &GcHeap,
    address: u64,
) -> ObjectVerification {
    let rt = reader.rt;
    let one = |kind, detail: String| ObjectProblem {
        offset: 0,
        kind,
        detail,
    };
    let mut out = ObjectVerification {
        address,
        mt: None,
        references: 0,
        problems: Vec::new(),
    };
    if gc_where(heap, address).is_none() {
        out.problems.push(one(
            ObjectProblemKind::ObjectNotOnTheHeap,
            format!("{address:#x} is on no segment of the GC heap"),
        ));
        return out;
    }
    if !address.is_multiple_of(8) {
        out.problems.push(one(
            ObjectProblemKind::ObjectNotPointerAligned,
            format!("{address:#x} is not aligned to 8 bytes"),
        ));
        return out;
    }
    let mt = match rt.memory().read_u64(address) {
        Ok(v) => v,
        Err(_) => {
            out.problems.push(one(
                ObjectProblemKind::InvalidMethodTable,
                format!("the MethodTable word at {address:#x} is not in the dump"),
            ));
            return out;
        }
    };
    out.mt = Some(mt);
    if reader.mt(mt).is_none() {
        out.problems.push(one(
            ObjectProblemKind::InvalidMethodTable,
            format!("{mt:#x} is not a MethodTable"),
        ));
        return out;
    }
    let mut starts: Vec<u64> = heap
        .objects(rt)
        .filter(|o| !o.is_free)
        .map(|o| o.address)
        .collect();
    starts.sort_unstable();
    if starts.binary_search(&address).is_err() {
        out.problems.push(one(
            ObjectProblemKind::NotAnObjectStart,
            format!(
                "the heap walk starts no object at {address:#x} (its MethodTable word {mt:#x} \
                 decodes)"
            ),
        ));
        return out;
    }
    let mut found = Vec::new();
    out.references = check_object(reader, address, mt, &starts, &mut found, usize::MAX);
    out.problems = found
        .into_iter()
        .map(|p| ObjectProblem {
            offset: p.slot.map_or(0, |s| s - address),
            kind: if p.slot.is_some() {
                ObjectProblemKind::InvalidObjectReference
            } else {
                ObjectProblemKind::CouldNotReadObject
            },
            detail: p.detail,
        })
        .collect();
    out
}

/// Whether `mt_flags` says the MT is a value type (exposed for commands).
pub fn is_value_type_flags(flags: u32) -> bool {
    matches!(
        flags & mt_flags::CATEGORY_MASK,
        mt_flags::CATEGORY_VALUETYPE
            | mt_flags::CATEGORY_NULLABLE
            | mt_flags::CATEGORY_PRIMITIVE
            | mt_flags::CATEGORY_TRUEPRIMITIVE
    )
}
