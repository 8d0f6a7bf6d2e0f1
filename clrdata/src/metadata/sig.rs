//! Signature blobs (ECMA-335 II.23.2): fields, methods, properties, locals, type specs and
//! method specs, decoded into [`SigType`] trees with a depth bound and counts bounded by the
//! blob's length.

use super::error::{Error, Result};
use super::reader::{read_compressed_u32, Metadata, Token};
use super::tables::TableId;

/// Deepest nesting of types a signature may have (a `List<List<...>>` chain, pointers,
/// arrays, modifiers); deeper signatures are refused as malformed.
pub const MAX_SIG_DEPTH: u32 = 64;

/// ELEMENT_TYPE_* values (II.23.1.16).
#[allow(missing_docs)]
pub mod element_type {
    pub const END: u8 = 0x00;
    pub const VOID: u8 = 0x01;
    pub const BOOLEAN: u8 = 0x02;
    pub const CHAR: u8 = 0x03;
    pub const I1: u8 = 0x04;
    pub const U1: u8 = 0x05;
    pub const I2: u8 = 0x06;
    pub const U2: u8 = 0x07;
    pub const I4: u8 = 0x08;
    pub const U4: u8 = 0x09;
    pub const I8: u8 = 0x0a;
    pub const U8: u8 = 0x0b;
    pub const R4: u8 = 0x0c;
    pub const R8: u8 = 0x0d;
    pub const STRING: u8 = 0x0e;
    pub const PTR: u8 = 0x0f;
    pub const BYREF: u8 = 0x10;
    pub const VALUETYPE: u8 = 0x11;
    pub const CLASS: u8 = 0x12;
    pub const VAR: u8 = 0x13;
    pub const ARRAY: u8 = 0x14;
    pub const GENERICINST: u8 = 0x15;
    pub const TYPEDBYREF: u8 = 0x16;
    pub const I: u8 = 0x18;
    pub const U: u8 = 0x19;
    pub const FNPTR: u8 = 0x1b;
    pub const OBJECT: u8 = 0x1c;
    pub const SZARRAY: u8 = 0x1d;
    pub const MVAR: u8 = 0x1e;
    pub const CMOD_REQD: u8 = 0x1f;
    pub const CMOD_OPT: u8 = 0x20;
    pub const INTERNAL: u8 = 0x21;
    pub const SENTINEL: u8 = 0x41;
    pub const PINNED: u8 = 0x45;
}

use element_type as et;

/// A primitive (built-in) type of a signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Primitive {
    /// `void`.
    Void,
    /// `bool`.
    Boolean,
    /// `char`.
    Char,
    /// `sbyte`.
    I1,
    /// `byte`.
    U1,
    /// `short`.
    I2,
    /// `ushort`.
    U2,
    /// `int`.
    I4,
    /// `uint`.
    U4,
    /// `long`.
    I8,
    /// `ulong`.
    U8,
    /// `float`.
    R4,
    /// `double`.
    R8,
    /// `nint`.
    I,
    /// `nuint`.
    U,
    /// `string`.
    String,
    /// `object`.
    Object,
    /// `TypedReference`.
    TypedByRef,
}

impl Primitive {
    fn from_byte(b: u8) -> Option<Primitive> {
        Some(match b {
            et::VOID => Primitive::Void,
            et::BOOLEAN => Primitive::Boolean,
            et::CHAR => Primitive::Char,
            et::I1 => Primitive::I1,
            et::U1 => Primitive::U1,
            et::I2 => Primitive::I2,
            et::U2 => Primitive::U2,
            et::I4 => Primitive::I4,
            et::U4 => Primitive::U4,
            et::I8 => Primitive::I8,
            et::U8 => Primitive::U8,
            et::R4 => Primitive::R4,
            et::R8 => Primitive::R8,
            et::I => Primitive::I,
            et::U => Primitive::U,
            et::STRING => Primitive::String,
            et::OBJECT => Primitive::Object,
            et::TYPEDBYREF => Primitive::TypedByRef,
            _ => return None,
        })
    }

    /// Its element type byte (the inverse of reading it from a signature).
    pub fn element_type(self) -> u8 {
        match self {
            Primitive::Void => et::VOID,
            Primitive::Boolean => et::BOOLEAN,
            Primitive::Char => et::CHAR,
            Primitive::I1 => et::I1,
            Primitive::U1 => et::U1,
            Primitive::I2 => et::I2,
            Primitive::U2 => et::U2,
            Primitive::I4 => et::I4,
            Primitive::U4 => et::U4,
            Primitive::I8 => et::I8,
            Primitive::U8 => et::U8,
            Primitive::R4 => et::R4,
            Primitive::R8 => et::R8,
            Primitive::I => et::I,
            Primitive::U => et::U,
            Primitive::String => et::STRING,
            Primitive::Object => et::OBJECT,
            Primitive::TypedByRef => et::TYPEDBYREF,
        }
    }

    /// The type's name in `System` (`Int32`, `String`, `TypedReference`).
    pub fn short_name(self) -> &'static str {
        match self {
            Primitive::Void => "Void",
            Primitive::Boolean => "Boolean",
            Primitive::Char => "Char",
            Primitive::I1 => "SByte",
            Primitive::U1 => "Byte",
            Primitive::I2 => "Int16",
            Primitive::U2 => "UInt16",
            Primitive::I4 => "Int32",
            Primitive::U4 => "UInt32",
            Primitive::I8 => "Int64",
            Primitive::U8 => "UInt64",
            Primitive::R4 => "Single",
            Primitive::R8 => "Double",
            Primitive::I => "IntPtr",
            Primitive::U => "UIntPtr",
            Primitive::String => "String",
            Primitive::Object => "Object",
            Primitive::TypedByRef => "TypedReference",
        }
    }
}

/// A type in a signature.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SigType {
    /// A built-in type.
    Primitive(Primitive),
    /// `CLASS` TypeDefOrRef: a reference type.
    Class(Token),
    /// `VALUETYPE` TypeDefOrRef: a value type.
    ValueType(Token),
    /// `PTR` type (`void*` is `Ptr(Primitive(Void))`).
    Ptr(Box<SigType>),
    /// `BYREF` type.
    ByRef(Box<SigType>),
    /// `SZARRAY`: a single-dimension zero-based array.
    SzArray(Box<SigType>),
    /// `ARRAY`: a general array.
    Array {
        /// Element type.
        element: Box<SigType>,
        /// Rank (number of dimensions).
        rank: u32,
        /// Declared sizes (may be fewer than `rank`).
        sizes: Vec<u32>,
        /// Declared lower bounds (may be fewer than `rank`).
        lower_bounds: Vec<i32>,
    },
    /// `GENERICINST`: an instantiated generic type.
    GenericInst {
        /// Whether the generic type is a value type.
        value_type: bool,
        /// The generic type definition (TypeDef or TypeRef).
        generic: Token,
        /// Type arguments.
        args: Vec<SigType>,
    },
    /// `GENERICINST INTERNAL <handle>`: an instantiated generic type whose definition is a
    /// runtime TypeHandle (runtime-generated signatures only: a dynamic method's, as
    /// SignatureHelper writes them for types of a dynamic scope).
    GenericInstOfHandle {
        /// The generic type definition's TypeHandle.
        handle: u64,
        /// Type arguments.
        args: Vec<SigType>,
    },
    /// `VAR n`: the type's generic parameter `n`.
    Var(u32),
    /// `MVAR n`: the method's generic parameter `n`.
    MVar(u32),
    /// `FNPTR`: a function pointer.
    FnPtr(Box<MethodSig>),
    /// A custom modifier (`modreq`/`modopt`) applied to `inner`.
    Modified {
        /// `CMOD_REQD` (true) or `CMOD_OPT`.
        required: bool,
        /// The modifier type (TypeDef, TypeRef or TypeSpec).
        modifier: Token,
        /// The modified type.
        inner: Box<SigType>,
    },
    /// `PINNED` (local variables only).
    Pinned(Box<SigType>),
    /// `INTERNAL`: a runtime TypeHandle pointer (runtime-generated signatures only).
    Internal(u64),
}

impl SigType {
    /// The type with custom modifiers and `PINNED` removed.
    pub fn unmodified(&self) -> &SigType {
        let mut t = self;
        loop {
            match t {
                SigType::Modified { inner, .. } | SigType::Pinned(inner) => t = inner,
                _ => return t,
            }
        }
    }
}

/// Calling convention low nibble values.
#[allow(missing_docs)]
pub mod calling_convention {
    pub const DEFAULT: u8 = 0x0;
    pub const C: u8 = 0x1;
    pub const STDCALL: u8 = 0x2;
    pub const THISCALL: u8 = 0x3;
    pub const FASTCALL: u8 = 0x4;
    pub const VARARG: u8 = 0x5;
    pub const FIELD: u8 = 0x6;
    pub const LOCAL_SIG: u8 = 0x7;
    pub const PROPERTY: u8 = 0x8;
    pub const UNMANAGED: u8 = 0x9;
    pub const GENERICINST: u8 = 0xa;
    pub const NATIVEVARARG: u8 = 0xb;
    pub const MASK: u8 = 0x0f;
    pub const GENERIC: u8 = 0x10;
    pub const HASTHIS: u8 = 0x20;
    pub const EXPLICITTHIS: u8 = 0x40;
}

use calling_convention as cc;

/// A method signature (MethodDefSig, MethodRefSig, StandAloneMethodSig, FNPTR).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MethodSig {
    /// The raw calling convention byte.
    pub calling_convention: u8,
    /// Generic parameter count (0 unless the GENERIC flag is set).
    pub generic_param_count: u32,
    /// The return type.
    pub ret: SigType,
    /// The parameters, including any after the sentinel.
    pub params: Vec<SigType>,
    /// Index in `params` of the first variable argument (after `SENTINEL`), for vararg call
    /// sites.
    pub sentinel: Option<usize>,
}

impl MethodSig {
    /// Whether the method has a `this` parameter.
    pub fn has_this(&self) -> bool {
        self.calling_convention & cc::HASTHIS != 0
    }

    /// Whether `this` is explicitly the first parameter.
    pub fn explicit_this(&self) -> bool {
        self.calling_convention & cc::EXPLICITTHIS != 0
    }

    /// Whether the method is generic.
    pub fn is_generic(&self) -> bool {
        self.calling_convention & cc::GENERIC != 0
    }

    /// Whether the calling convention is VARARG.
    pub fn is_vararg(&self) -> bool {
        self.calling_convention & cc::MASK == cc::VARARG
    }
}

/// A property signature (II.23.2.5).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PropertySig {
    /// Whether the property is an instance property.
    pub has_this: bool,
    /// The property's type.
    pub ty: SigType,
    /// Index parameters (for indexers).
    pub params: Vec<SigType>,
}

/// A cursor over one signature blob.
struct Decoder<'b> {
    blob: &'b [u8],
    pos: usize,
}

impl<'b> Decoder<'b> {
    fn new(blob: &'b [u8]) -> Self {
        Decoder { blob, pos: 0 }
    }

    fn err(&self, reason: impl Into<String>) -> Error {
        Error::BadSignatureBlob {
            offset: self.pos,
            len: self.blob.len(),
            reason: reason.into(),
        }
    }

    fn remaining(&self) -> usize {
        self.blob.len().saturating_sub(self.pos)
    }

    fn byte(&mut self) -> Result<u8> {
        let b = *self
            .blob
            .get(self.pos)
            .ok_or_else(|| self.err("unexpected end"))?;
        self.pos += 1;
        Ok(b)
    }

    fn peek(&self) -> Option<u8> {
        self.blob.get(self.pos).copied()
    }

    fn uint(&mut self) -> Result<u32> {
        let (v, n) = read_compressed_u32(self.blob, self.pos)
            .ok_or_else(|| self.err("bad compressed integer"))?;
        self.pos += n;
        Ok(v)
    }

    fn int(&mut self) -> Result<i32> {
        let first = self.peek().ok_or_else(|| self.err("unexpected end"))?;
        let raw = self.uint()?;
        let (bits, v) = if first & 0x80 == 0 {
            (7, raw)
        } else if first & 0xC0 == 0x80 {
            (14, raw)
        } else {
            (29, raw)
        };
        let mag = (v >> 1) as i32;
        Ok(if v & 1 != 0 {
            mag - (1i32 << (bits - 1))
        } else {
            mag
        })
    }

    /// A count that each counted item needs at least one byte for: refuse counts larger than
    /// the rest of the blob (so a hostile count never drives an allocation).
    fn count(&mut self, what: &str) -> Result<u32> {
        let n = self.uint()?;
        if n as usize > self.remaining() {
            return Err(self.err(format!(
                "{what} count {n} exceeds the {} bytes left",
                self.remaining()
            )));
        }
        Ok(n)
    }

    fn type_def_or_ref(&mut self) -> Result<Token> {
        let v = self.uint()?;
        let table = match v & 3 {
            0 => TableId::TypeDef,
            1 => TableId::TypeRef,
            2 => TableId::TypeSpec,
            _ => return Err(self.err(format!("TypeDefOrRefOrSpecEncoded {v:#x} has tag 3"))),
        };
        Ok(Token::new(table, v >> 2))
    }

    /// The 8-byte TypeHandle after `INTERNAL`.
    fn handle(&mut self) -> Result<u64> {
        let b = self
            .blob
            .get(self.pos..self.pos + 8)
            .ok_or_else(|| self.err("INTERNAL without an 8-byte handle"))?;
        let v = u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
        self.pos += 8;
        Ok(v)
    }

    fn ty(&mut self, depth: u32) -> Result<SigType> {
        if depth > MAX_SIG_DEPTH {
            return Err(self.err(format!("types nested deeper than {MAX_SIG_DEPTH}")));
        }
        let d = depth + 1;
        let b = self.byte()?;
        if let Some(p) = Primitive::from_byte(b) {
            return Ok(SigType::Primitive(p));
        }
        Ok(match b {
            et::CLASS => SigType::Class(self.type_def_or_ref()?),
            et::VALUETYPE => SigType::ValueType(self.type_def_or_ref()?),
            et::PTR => SigType::Ptr(Box::new(self.ty(d)?)),
            et::BYREF => SigType::ByRef(Box::new(self.ty(d)?)),
            et::SZARRAY => SigType::SzArray(Box::new(self.ty(d)?)),
            et::PINNED => SigType::Pinned(Box::new(self.ty(d)?)),
            et::CMOD_REQD | et::CMOD_OPT => {
                let modifier = self.type_def_or_ref()?;
                SigType::Modified {
                    required: b == et::CMOD_REQD,
                    modifier,
                    inner: Box::new(self.ty(d)?),
                }
            }
            et::VAR => SigType::Var(self.uint()?),
            et::MVAR => SigType::MVar(self.uint()?),
            et::ARRAY => {
                let element = Box::new(self.ty(d)?);
                let rank = self.uint()?;
                let nsizes = self.count("array size")?;
                let mut sizes = Vec::with_capacity(nsizes as usize);
                for _ in 0..nsizes {
                    sizes.push(self.uint()?);
                }
                let nlo = self.count("array lower bound")?;
                let mut lower_bounds = Vec::with_capacity(nlo as usize);
                for _ in 0..nlo {
                    lower_bounds.push(self.int()?);
                }
                if sizes.len() > rank as usize || lower_bounds.len() > rank as usize {
                    return Err(self.err(format!(
                        "array of rank {rank} declares {} sizes and {} lower bounds",
                        sizes.len(),
                        lower_bounds.len()
                    )));
                }
                SigType::Array {
                    element,
                    rank,
                    sizes,
                    lower_bounds,
                }
            }
            et::GENERICINST => {
                let kind = self.byte()?;
                let (value_type, handle) = match kind {
                    et::CLASS => (false, None),
                    et::VALUETYPE => (true, None),
                    et::INTERNAL => (false, Some(self.handle()?)),
                    other => {
                        return Err(self.err(format!(
                            "GENERICINST of element type {other:#x} (expected CLASS, VALUETYPE \
                             or INTERNAL)"
                        )))
                    }
                };
                let generic = match handle {
                    None => Some(self.type_def_or_ref()?),
                    Some(_) => None,
                };
                let n = self.count("generic argument")?;
                if n == 0 {
                    return Err(self.err("GENERICINST with no arguments"));
                }
                let mut args = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    args.push(self.ty(d)?);
                }
                match (generic, handle) {
                    (Some(generic), _) => SigType::GenericInst {
                        value_type,
                        generic,
                        args,
                    },
                    (None, handle) => SigType::GenericInstOfHandle {
                        handle: handle.unwrap_or_default(),
                        args,
                    },
                }
            }
            et::FNPTR => SigType::FnPtr(Box::new(self.method(d)?)),
            et::INTERNAL => SigType::Internal(self.handle()?),
            other => return Err(self.err(format!("unexpected element type {other:#x}"))),
        })
    }

    fn method(&mut self, depth: u32) -> Result<MethodSig> {
        let conv = self.byte()?;
        match conv & cc::MASK {
            cc::FIELD | cc::LOCAL_SIG | cc::PROPERTY | cc::GENERICINST => {
                return Err(self.err(format!("calling convention {conv:#x} is not a method's")))
            }
            0xc..=0xf => return Err(self.err(format!("unknown calling convention {conv:#x}"))),
            _ => {}
        }
        let generic_param_count = if conv & cc::GENERIC != 0 {
            self.uint()?
        } else {
            0
        };
        let n = self.count("parameter")?;
        let ret = self.ty(depth)?;
        let mut params = Vec::with_capacity(n as usize);
        let mut sentinel = None;
        for _ in 0..n {
            if self.peek() == Some(et::SENTINEL) {
                if sentinel.is_some() {
                    return Err(self.err("second SENTINEL"));
                }
                self.pos += 1;
                sentinel = Some(params.len());
            }
            params.push(self.ty(depth)?);
        }
        Ok(MethodSig {
            calling_convention: conv,
            generic_param_count,
            ret,
            params,
            sentinel,
        })
    }
}

/// Decodes a method signature (MethodDefSig, MethodRefSig, StandAloneMethodSig).
pub fn decode_method_sig(blob: &[u8]) -> Result<MethodSig> {
    Decoder::new(blob).method(0)
}

/// Decodes a field signature (`FIELD` then the field's type, custom modifiers kept).
pub fn decode_field_sig(blob: &[u8]) -> Result<SigType> {
    let mut d = Decoder::new(blob);
    let conv = d.byte()?;
    if conv & cc::MASK != cc::FIELD {
        return Err(d.err(format!("calling convention {conv:#x} is not FIELD (0x6)")));
    }
    d.ty(0)
}

/// Decodes a property signature.
pub fn decode_property_sig(blob: &[u8]) -> Result<PropertySig> {
    let mut d = Decoder::new(blob);
    let conv = d.byte()?;
    if conv & cc::MASK != cc::PROPERTY {
        return Err(d.err(format!(
            "calling convention {conv:#x} is not PROPERTY (0x8)"
        )));
    }
    let n = d.count("parameter")?;
    let ty = d.ty(0)?;
    let mut params = Vec::with_capacity(n as usize);
    for _ in 0..n {
        params.push(d.ty(0)?);
    }
    Ok(PropertySig {
        has_this: conv & cc::HASTHIS != 0,
        ty,
        params,
    })
}

/// Decodes a local variable signature (`LOCAL_SIG`, count, then each local; `PINNED` and
/// `BYREF` appear as [`SigType::Pinned`] / [`SigType::ByRef`]).
pub fn decode_local_sig(blob: &[u8]) -> Result<Vec<SigType>> {
    let mut d = Decoder::new(blob);
    let conv = d.byte()?;
    if conv != cc::LOCAL_SIG {
        return Err(d.err(format!(
            "calling convention {conv:#x} is not LOCAL_SIG (0x7)"
        )));
    }
    let n = d.count("local")?;
    let mut locals = Vec::with_capacity(n as usize);
    for _ in 0..n {
        locals.push(d.ty(0)?);
    }
    Ok(locals)
}

/// Decodes a TypeSpec blob (one type).
pub fn decode_type_spec(blob: &[u8]) -> Result<SigType> {
    Decoder::new(blob).ty(0)
}

/// Decodes a MethodSpec instantiation blob (`GENERICINST`, count, types).
pub fn decode_method_spec(blob: &[u8]) -> Result<Vec<SigType>> {
    let mut d = Decoder::new(blob);
    let conv = d.byte()?;
    if conv != cc::GENERICINST {
        return Err(d.err(format!(
            "calling convention {conv:#x} is not GENERICINST (0xa)"
        )));
    }
    let n = d.count("generic argument")?;
    let mut args = Vec::with_capacity(n as usize);
    for _ in 0..n {
        args.push(d.ty(0)?);
    }
    Ok(args)
}

impl Metadata<'_> {
    /// The decoded signature of Field `rid`.
    pub fn field_sig(&self, rid: u32) -> Result<SigType> {
        decode_field_sig(self.field(rid)?.signature)
    }

    /// The decoded signature of MethodDef `rid`.
    pub fn method_sig(&self, rid: u32) -> Result<MethodSig> {
        decode_method_sig(self.method_def(rid)?.signature)
    }

    /// The decoded signature of Property `rid`.
    pub fn property_sig(&self, rid: u32) -> Result<PropertySig> {
        decode_property_sig(self.property(rid)?.signature)
    }

    /// The decoded TypeSpec `rid`.
    pub fn type_spec_sig(&self, rid: u32) -> Result<SigType> {
        decode_type_spec(self.type_spec(rid)?.signature)
    }

    /// The decoded instantiation of MethodSpec `rid`.
    pub fn method_spec_sig(&self, rid: u32) -> Result<Vec<SigType>> {
        decode_method_spec(self.method_spec(rid)?.instantiation)
    }
}
