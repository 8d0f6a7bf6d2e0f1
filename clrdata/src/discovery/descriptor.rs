//! The runtime's own contract descriptor (`DotNetRuntimeContractDescriptor`, .NET 9 and later):
//! the types with their sizes and field offsets, the globals and the data-contract versions the
//! runtime publishes about itself (dotnet/runtime `docs/design/datacontracts/
//! contract-descriptor.md` and `data_descriptor.md`).
//!
//! Header (40 bytes on 64-bit): `u64 magic "DNCCDAC\0"; u32 flags (bit 0 always set, bit 1 set
//! for 32-bit pointers); u32 descriptor_size; char* descriptor (UTF-8 JSON); u32
//! pointer_data_count; u32 pad; uintptr_t* pointer_data`.
//!
//! The JSON: `{"version", "baseline", "types": {"Type": {"!": size, "Field": offset | [offset,
//! "type"]}}, "globals": {"Name": value | [idx] | [value, "type"] | [[idx], "type"]},
//! "contracts": {"Name": int | "string"}, "subDescriptors": {"Name": [[idx], ...]}}`. A global's
//! `[idx]` is an index into the pointer_data array; values are numbers, decimal or hex strings,
//! or plain strings. Sub-descriptors are pointers to further full descriptors, merged.
//!
//! Everything read from the dump is bounded before allocation, and a malformed descriptor is a
//! [`DescriptorError`], never a panic.

use dumpreader::{Memory, ModuleInfo, Target};
use std::collections::BTreeMap;
use thiserror::Error;

/// The exported symbol holding the descriptor header.
pub const EXPORT_NAME: &str = "DotNetRuntimeContractDescriptor";
/// "DNCCDAC\0" read as a little-endian u64.
pub const MAGIC: u64 = u64::from_le_bytes(*b"DNCCDAC\0");
/// The largest JSON accepted (.NET 10's is about 11 KB).
pub const MAX_JSON: u32 = 4 << 20;
/// The most pointer_data entries accepted (.NET 10 has 24).
pub const MAX_POINTER_DATA: u32 = 1 << 16;
/// The deepest JSON nesting accepted.
const MAX_DEPTH: usize = 32;
/// How deep sub-descriptors may nest.
const MAX_SUB_DEPTH: usize = 4;

/// Why a contract descriptor could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DescriptorError {
    /// A part of the descriptor is not in the dump.
    #[error("contract descriptor: cannot read {what} at {addr:#x}: not in the dump")]
    Read {
        /// What was being read.
        what: &'static str,
        /// Where.
        addr: u64,
    },
    /// The header's magic is not "DNCCDAC\0".
    #[error("contract descriptor at {addr:#x}: magic {found:#018x}, expected \"DNCCDAC\\0\"")]
    BadMagic {
        /// The header's address.
        addr: u64,
        /// The magic found.
        found: u64,
    },
    /// A size or count in the header is out of bounds.
    #[error("contract descriptor at {addr:#x}: {what} {value} exceeds the limit {limit}")]
    TooLarge {
        /// The header's address.
        addr: u64,
        /// Which size.
        what: &'static str,
        /// Its value.
        value: u64,
        /// The limit.
        limit: u64,
    },
    /// The flags say something this reader does not read (a 32-bit target...).
    #[error("contract descriptor at {addr:#x}: flags {flags:#x}: {detail}")]
    Flags {
        /// The header's address.
        addr: u64,
        /// The flags.
        flags: u32,
        /// What is not supported.
        detail: &'static str,
    },
    /// The JSON text is not valid JSON, or not UTF-8.
    #[error("contract descriptor JSON, byte {at}: {detail}")]
    Json {
        /// Byte offset in the JSON text.
        at: usize,
        /// What was wrong.
        detail: String,
    },
    /// The JSON is valid but its shape is not a descriptor's.
    #[error("contract descriptor: {0}")]
    Shape(String),
}

/// A data contract's version: an integer, or (since 2026) a string such as "c1".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContractVersion {
    /// An integer version.
    Int(i64),
    /// A string version.
    Str(String),
}

impl std::fmt::Display for ContractVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ContractVersion::Int(i) => write!(f, "{i}"),
            ContractVersion::Str(s) => write!(f, "\"{s}\""),
        }
    }
}

/// One runtime type: its size (when fixed) and its fields' offsets.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TypeInfo {
    /// The `"!"` size, when the type has a fixed size.
    pub size: Option<u64>,
    /// Field name → offset.
    pub fields: BTreeMap<String, u64>,
}

/// A global's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GlobalValue {
    /// A number (direct, or an indirect `[idx]` resolved through pointer_data).
    Number(u64),
    /// A string value (e.g. `"Architecture": "x64"`).
    Str(String),
}

/// One global: its value and its declared type name (release builds often omit it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Global {
    /// The value.
    pub value: GlobalValue,
    /// The type name, when given.
    pub type_name: Option<String>,
    /// Whether the value came from pointer_data (an address in the target).
    pub indirect: bool,
}

/// A parsed (and merged) contract descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ContractDescriptor {
    /// Where the header was (0 for a descriptor built from bytes).
    pub address: u64,
    /// Pointer size in bytes (8, or 4 when flags bit 1 is set).
    pub pointer_size: u8,
    /// The JSON `version`.
    pub version: i64,
    /// The JSON `baseline`.
    pub baseline: String,
    /// Types by name.
    pub types: BTreeMap<String, TypeInfo>,
    /// Globals by name.
    pub globals: BTreeMap<String, Global>,
    /// Contracts by name.
    pub contracts: BTreeMap<String, ContractVersion>,
    /// The pointer_data array of the main descriptor.
    pub pointer_data: Vec<u64>,
    /// How many sub-descriptors were merged.
    pub sub_descriptors: usize,
}

impl ContractDescriptor {
    /// A field's offset.
    pub fn field(&self, ty: &str, field: &str) -> Option<u64> {
        self.types.get(ty)?.fields.get(field).copied()
    }

    /// A type's fixed size.
    pub fn type_size(&self, ty: &str) -> Option<u64> {
        self.types.get(ty)?.size
    }

    /// A numeric global (for an indirect global: the address pointer_data holds).
    pub fn global_number(&self, name: &str) -> Option<u64> {
        match self.globals.get(name)?.value {
            GlobalValue::Number(n) => Some(n),
            GlobalValue::Str(_) => None,
        }
    }

    /// A string global.
    pub fn global_str(&self, name: &str) -> Option<&str> {
        match &self.globals.get(name)?.value {
            GlobalValue::Str(s) => Some(s),
            GlobalValue::Number(_) => None,
        }
    }

    /// A contract's version.
    pub fn contract(&self, name: &str) -> Option<&ContractVersion> {
        self.contracts.get(name)
    }
}

/// The fixed part of the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// flags.
    pub flags: u32,
    /// The JSON's size in bytes.
    pub descriptor_size: u32,
    /// The JSON's address.
    pub descriptor: u64,
    /// The pointer_data count.
    pub pointer_data_count: u32,
    /// The pointer_data array's address.
    pub pointer_data: u64,
}

impl Header {
    /// Pointer size in bytes.
    pub fn pointer_size(&self) -> u8 {
        if self.flags & 2 != 0 {
            4
        } else {
            8
        }
    }
}

/// Parses a 64-bit header (40 bytes) at `addr`, checking magic, flags and bounds.
pub fn parse_header(bytes: &[u8], addr: u64) -> Result<Header, DescriptorError> {
    let u32_at = |o: usize| {
        bytes
            .get(o..o + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap_or([0; 4])))
    };
    let u64_at = |o: usize| {
        bytes
            .get(o..o + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
    };
    let read = |what| DescriptorError::Read { what, addr };
    let magic = u64_at(0).ok_or(read("the header"))?;
    if magic != MAGIC && magic.swap_bytes() != MAGIC {
        return Err(DescriptorError::BadMagic { addr, found: magic });
    }
    if magic != MAGIC {
        return Err(DescriptorError::Flags {
            addr,
            flags: 0,
            detail: "a big-endian target (not read)",
        });
    }
    let flags = u32_at(8).ok_or(read("the header"))?;
    if flags & 1 == 0 {
        return Err(DescriptorError::Flags {
            addr,
            flags,
            detail: "bit 0 must be set",
        });
    }
    if flags & 2 != 0 {
        return Err(DescriptorError::Flags {
            addr,
            flags,
            detail: "a 32-bit target (pointer size 4; not read yet)",
        });
    }
    let h = Header {
        flags,
        descriptor_size: u32_at(12).ok_or(read("the header"))?,
        descriptor: u64_at(16).ok_or(read("the header"))?,
        pointer_data_count: u32_at(24).ok_or(read("the header"))?,
        pointer_data: u64_at(32).ok_or(read("the header"))?,
    };
    if h.descriptor_size == 0 || h.descriptor_size > MAX_JSON {
        return Err(DescriptorError::TooLarge {
            addr,
            what: "descriptor_size",
            value: h.descriptor_size as u64,
            limit: MAX_JSON as u64,
        });
    }
    if h.pointer_data_count > MAX_POINTER_DATA {
        return Err(DescriptorError::TooLarge {
            addr,
            what: "pointer_data_count",
            value: h.pointer_data_count as u64,
            limit: MAX_POINTER_DATA as u64,
        });
    }
    Ok(h)
}

/// Finds the runtime module's `DotNetRuntimeContractDescriptor` export and reads it, with its
/// sub-descriptors merged. `Ok(None)`: the module has no such export (.NET 8 and older, or an
/// export table the dump lacks).
pub fn read_from_module<T: Target + ?Sized>(
    target: &T,
    module: &ModuleInfo,
) -> Result<Option<ContractDescriptor>, DescriptorError> {
    let Some(addr) = target.find_export(module, EXPORT_NAME) else {
        return Ok(None);
    };
    read_at(target, addr).map(Some)
}

/// Finds the descriptor without the symbol table (createdump dumps often lack `.dynsym`'s
/// pages): the 8-aligned "DNCCDAC\0" headers in the image's extent `start..end` that parse as
/// a descriptor. `Ok(None)` when there is none; an error when the candidates disagree.
pub fn find_in_image<M: Memory + ?Sized>(
    mem: &M,
    start: u64,
    end: u64,
) -> Result<Option<ContractDescriptor>, DescriptorError> {
    const MAX_IMAGE: u64 = 256 << 20;
    const CHUNK: usize = 1 << 20;
    if end <= start || end - start > MAX_IMAGE {
        return Ok(None);
    }
    let mut found: Option<ContractDescriptor> = None;
    let mut buf = vec![0u8; CHUNK];
    let mut a = start & !7;
    while a < end {
        let want = ((end - a) as usize).min(CHUNK);
        let got = mem.read(a, &mut buf[..want]);
        if got == 0 {
            a = (a | 0xFFF) + 1;
            continue;
        }
        for o in (0..got.saturating_sub(7)).step_by(8) {
            if buf[o..o + 8] == MAGIC.to_le_bytes() {
                if let Ok(d) = read_at(mem, a + o as u64) {
                    match &found {
                        Some(f) if f.types != d.types || f.globals != d.globals => {
                            return Err(DescriptorError::Shape(format!(
                                "two different descriptors in the image, at {:#x} and {:#x}",
                                f.address, d.address
                            )))
                        }
                        Some(_) => {}
                        None => found = Some(d),
                    }
                }
            }
        }
        a += (got as u64 & !7).max(8);
    }
    Ok(found)
}

/// Reads the descriptor whose header is at `addr`.
pub fn read_at<M: Memory + ?Sized>(
    mem: &M,
    addr: u64,
) -> Result<ContractDescriptor, DescriptorError> {
    let mut out = ContractDescriptor {
        address: addr,
        ..ContractDescriptor::default()
    };
    read_into(mem, addr, &mut out, 0)?;
    Ok(out)
}

fn read_into<M: Memory + ?Sized>(
    mem: &M,
    addr: u64,
    out: &mut ContractDescriptor,
    depth: usize,
) -> Result<(), DescriptorError> {
    let mut raw = [0u8; 40];
    mem.read_exact(addr, &mut raw)
        .map_err(|_| DescriptorError::Read {
            what: "the header",
            addr,
        })?;
    let h = parse_header(&raw, addr)?;
    let mut json = vec![0u8; h.descriptor_size as usize];
    mem.read_exact(h.descriptor, &mut json)
        .map_err(|_| DescriptorError::Read {
            what: "the JSON descriptor",
            addr: h.descriptor,
        })?;
    let mut ptr_bytes = vec![0u8; 8 * h.pointer_data_count as usize];
    mem.read_exact(h.pointer_data, &mut ptr_bytes)
        .map_err(|_| DescriptorError::Read {
            what: "pointer_data",
            addr: h.pointer_data,
        })?;
    let pointers: Vec<u64> = ptr_bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect();
    let subs = merge_json(&json, &pointers, out, depth == 0)?;
    if depth == 0 {
        out.pointer_size = h.pointer_size();
        out.pointer_data = pointers;
    }
    for sub in subs {
        if sub == 0 {
            continue; // a sub-descriptor the runtime did not fill (a GC without one)
        }
        if depth + 1 > MAX_SUB_DEPTH {
            return Err(DescriptorError::Shape(format!(
                "sub-descriptors nested deeper than {MAX_SUB_DEPTH}"
            )));
        }
        // The pointer_data slot holds the address of a pointer to the sub-descriptor.
        let p = mem.read_u64(sub).map_err(|_| DescriptorError::Read {
            what: "a sub-descriptor pointer",
            addr: sub,
        })?;
        if p != 0 {
            read_into(mem, p, out, depth + 1)?;
            out.sub_descriptors += 1;
        }
    }
    Ok(())
}

/// Parses a descriptor from its JSON text and pointer_data (no sub-descriptors followed):
/// for tests and tools.
pub fn parse(json: &[u8], pointer_data: &[u64]) -> Result<ContractDescriptor, DescriptorError> {
    let mut out = ContractDescriptor {
        pointer_size: 8,
        pointer_data: pointer_data.to_vec(),
        ..ContractDescriptor::default()
    };
    merge_json(json, pointer_data, &mut out, true)?;
    Ok(out)
}

/// Merges one descriptor's JSON into `out`; returns the sub-descriptor pointer slots' values.
fn merge_json(
    json: &[u8],
    pointers: &[u64],
    out: &mut ContractDescriptor,
    main: bool,
) -> Result<Vec<u64>, DescriptorError> {
    // The runtime NUL-terminates the text; the size may include the terminator.
    let end = json.iter().position(|&b| b == 0).unwrap_or(json.len());
    let text = std::str::from_utf8(&json[..end]).map_err(|e| DescriptorError::Json {
        at: e.valid_up_to(),
        detail: "not UTF-8".into(),
    })?;
    let root = Json::parse(text)?;
    let Json::Object(root) = root else {
        return Err(DescriptorError::Shape("the JSON is not an object".into()));
    };
    let shape = |s: String| DescriptorError::Shape(s);
    let resolve_idx = |v: &Json, what: &str| -> Result<u64, DescriptorError> {
        let i = v
            .as_u64()
            .ok_or_else(|| shape(format!("{what}: index {v:?} is not a number")))?;
        pointers.get(i as usize).copied().ok_or_else(|| {
            shape(format!(
                "{what}: index {i} outside pointer_data ({} entries)",
                pointers.len()
            ))
        })
    };
    let mut subs = Vec::new();
    for (key, val) in &root {
        match key.as_str() {
            "version" if main => {
                out.version = val
                    .as_i64()
                    .ok_or_else(|| shape(format!("version {val:?} is not a number")))?
            }
            "baseline" if main => {
                out.baseline = val
                    .as_str()
                    .ok_or_else(|| shape("baseline is not a string".into()))?
                    .to_owned()
            }
            "types" => {
                let Json::Object(types) = val else {
                    return Err(shape("types is not an object".into()));
                };
                for (tname, tval) in types {
                    let Json::Object(fields) = tval else {
                        return Err(shape(format!("type {tname} is not an object")));
                    };
                    let t = out.types.entry(tname.clone()).or_default();
                    for (fname, fval) in fields {
                        // An offset, or [offset, "type"].
                        let num = match fval {
                            Json::Array(a) if !a.is_empty() => a[0].as_u64(),
                            v => v.as_u64(),
                        }
                        .ok_or_else(|| {
                            shape(format!("{tname}.{fname}: {fval:?} is not an offset"))
                        })?;
                        if fname == "!" {
                            t.size = Some(num);
                        } else {
                            t.fields.insert(fname.clone(), num);
                        }
                    }
                }
            }
            "globals" => {
                let Json::Object(globals) = val else {
                    return Err(shape("globals is not an object".into()));
                };
                for (gname, gval) in globals {
                    let what = format!("global {gname}");
                    let (v, type_name) = match gval {
                        // [value, "type"] or [[idx], "type"] or [idx] (indirect, untyped).
                        Json::Array(a) if a.len() == 2 && a[1].as_str().is_some() => {
                            (&a[0], a[1].as_str().map(str::to_owned))
                        }
                        v => (v, None),
                    };
                    let global = match v {
                        Json::Array(a) if a.len() == 1 => Global {
                            value: GlobalValue::Number(resolve_idx(&a[0], &what)?),
                            type_name,
                            indirect: true,
                        },
                        Json::Number(_) => Global {
                            value: GlobalValue::Number(
                                v.as_u64().ok_or_else(|| shape(format!("{what}: {v:?}")))?,
                            ),
                            type_name,
                            indirect: false,
                        },
                        Json::String(s) => Global {
                            value: match parse_number(s) {
                                Some(n) if type_name.as_deref() != Some("string") => {
                                    GlobalValue::Number(n)
                                }
                                _ => GlobalValue::Str(s.clone()),
                            },
                            type_name,
                            indirect: false,
                        },
                        other => return Err(shape(format!("{what}: unexpected value {other:?}"))),
                    };
                    out.globals.insert(gname.clone(), global);
                }
            }
            "contracts" => {
                let Json::Object(contracts) = val else {
                    return Err(shape("contracts is not an object".into()));
                };
                for (cname, cval) in contracts {
                    let v = match cval {
                        Json::String(s) => ContractVersion::Str(s.clone()),
                        v => ContractVersion::Int(
                            v.as_i64()
                                .ok_or_else(|| shape(format!("contract {cname}: version {v:?}")))?,
                        ),
                    };
                    out.contracts.insert(cname.clone(), v);
                }
            }
            "subDescriptors" => {
                let Json::Object(s) = val else {
                    return Err(shape("subDescriptors is not an object".into()));
                };
                for (sname, sval) in s {
                    let what = format!("sub-descriptor {sname}");
                    let idx = match sval {
                        Json::Array(a) if !a.is_empty() => match &a[0] {
                            Json::Array(b) if b.len() == 1 => &b[0],
                            x => x,
                        },
                        x => x,
                    };
                    subs.push(resolve_idx(idx, &what)?);
                }
            }
            _ => {}
        }
    }
    Ok(subs)
}

/// A number written as a decimal or `0x` hex string.
fn parse_number(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if let Some(d) = s.strip_prefix('-') {
        d.parse::<u64>()
            .ok()
            .map(|v| (v as i64).wrapping_neg() as u64)
    } else {
        s.parse().ok()
    }
}

// ------------------------------------------------------------------ a small, bounded JSON reader

/// A JSON value. Numbers keep their text (offsets and 64-bit masks must not pass through f64).
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn as_u64(&self) -> Option<u64> {
        match self {
            Json::Number(n) => n
                .parse::<u64>()
                .ok()
                .or_else(|| n.parse::<i64>().ok().map(|v| v as u64)),
            Json::String(s) => parse_number(s),
            _ => None,
        }
    }
    fn as_i64(&self) -> Option<i64> {
        match self {
            Json::Number(n) => n.parse().ok(),
            Json::String(s) => parse_number(s).map(|v| v as i64),
            _ => None,
        }
    }
    fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    fn parse(text: &str) -> Result<Json, DescriptorError> {
        let mut p = Parser {
            b: text.as_bytes(),
            i: 0,
        };
        let v = p.value(0)?;
        p.ws();
        if p.i != p.b.len() {
            return Err(p.err("trailing characters after the JSON value"));
        }
        Ok(v)
    }
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn err(&self, d: &str) -> DescriptorError {
        DescriptorError::Json {
            at: self.i,
            detail: d.into(),
        }
    }
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.b.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn value(&mut self, depth: usize) -> Result<Json, DescriptorError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nested too deeply"));
        }
        self.ws();
        match self.b.get(self.i) {
            None => Err(self.err("unexpected end")),
            Some(b'{') => {
                self.i += 1;
                let mut items = Vec::new();
                if self.eat(b'}') {
                    return Ok(Json::Object(items));
                }
                loop {
                    self.ws();
                    let k = self.string()?;
                    if !self.eat(b':') {
                        return Err(self.err("expected ':'"));
                    }
                    let v = self.value(depth + 1)?;
                    items.push((k, v));
                    if self.eat(b',') {
                        continue;
                    }
                    if self.eat(b'}') {
                        return Ok(Json::Object(items));
                    }
                    return Err(self.err("expected ',' or '}'"));
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut items = Vec::new();
                if self.eat(b']') {
                    return Ok(Json::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    if self.eat(b',') {
                        continue;
                    }
                    if self.eat(b']') {
                        return Ok(Json::Array(items));
                    }
                    return Err(self.err("expected ',' or ']'"));
                }
            }
            Some(b'"') => self.string().map(Json::String),
            Some(b't') => self.word("true", Json::Bool(true)),
            Some(b'f') => self.word("false", Json::Bool(false)),
            Some(b'n') => self.word("null", Json::Null),
            Some(c) if *c == b'-' || c.is_ascii_digit() => {
                let s = self.i;
                self.i += 1;
                while self.i < self.b.len()
                    && matches!(
                        self.b[self.i],
                        b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-'
                    )
                {
                    self.i += 1;
                }
                Ok(Json::Number(
                    String::from_utf8_lossy(&self.b[s..self.i]).into_owned(),
                ))
            }
            Some(_) => Err(self.err("unexpected character")),
        }
    }
    fn word(&mut self, w: &str, v: Json) -> Result<Json, DescriptorError> {
        if self.b[self.i..].starts_with(w.as_bytes()) {
            self.i += w.len();
            Ok(v)
        } else {
            Err(self.err("unexpected word"))
        }
    }
    fn string(&mut self) -> Result<String, DescriptorError> {
        if self.b.get(self.i) != Some(&b'"') {
            return Err(self.err("expected a string"));
        }
        self.i += 1;
        let mut out = String::new();
        loop {
            let Some(&c) = self.b.get(self.i) else {
                return Err(self.err("unterminated string"));
            };
            self.i += 1;
            match c {
                b'"' => return Ok(out),
                b'\\' => {
                    let Some(&e) = self.b.get(self.i) else {
                        return Err(self.err("unterminated escape"));
                    };
                    self.i += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let h = self
                                .b
                                .get(self.i..self.i + 4)
                                .and_then(|h| std::str::from_utf8(h).ok())
                                .and_then(|h| u32::from_str_radix(h, 16).ok())
                                .ok_or_else(|| self.err("bad \\u escape"))?;
                            self.i += 4;
                            out.push(char::from_u32(h).unwrap_or('\u{fffd}'));
                        }
                        _ => return Err(self.err("bad escape")),
                    }
                }
                _ => {
                    // Copy the run of plain bytes (the text is UTF-8 already).
                    let s = self.i - 1;
                    while self.i < self.b.len() && !matches!(self.b[self.i], b'"' | b'\\') {
                        self.i += 1;
                    }
                    out.push_str(&String::from_utf8_lossy(&self.b[s..self.i]));
                }
            }
        }
    }
}

// ------------------------------------------------- the descriptor from the runtime's image file

/// The runtime image file's bytes as the loader would have placed them: for descriptors whose
/// pages the dump lacks (createdump saves neither `.rodata` nor the descriptor's relro page on
/// .NET 9/10). Reads come from the dump first; what it lacks comes from the file's PT_LOAD
/// ranges, with the file's dynamic relocations (`R_X86_64_RELATIVE`, `R_X86_64_64`,
/// `R_X86_64_GLOB_DAT`) applied, so pointers read as they did in the process. Only used with a
/// file whose identity (build id) dumpreader has matched to the dump's module.
pub struct ElfFileOverlay<'a, M: ?Sized> {
    mem: &'a M,
    bias: u64,
    file: Vec<u8>,
    /// (vaddr, filesz, offset) of each PT_LOAD.
    loads: Vec<(u64, u64, u64)>,
    /// (run-time address of a relocated 8-byte slot, its value), sorted by address (the last
    /// relocation of a slot wins, as the loader applies them in order).
    relocs: Vec<(u64, u64)>,
}

/// The largest image file read.
const MAX_IMAGE_FILE: u64 = 512 << 20;

impl<'a, M: Memory + ?Sized> ElfFileOverlay<'a, M> {
    /// Reads the ELF64 x86-64 file at `path` for a module loaded with `bias`. `None` when the
    /// file cannot be read or is not such an ELF file.
    pub fn new(mem: &'a M, path: &std::path::Path, bias: u64) -> Option<Self> {
        let len = std::fs::metadata(path).ok()?.len();
        if len > MAX_IMAGE_FILE {
            return None;
        }
        let file = std::fs::read(path).ok()?;
        let u16_at = |o: u64| -> Option<u16> {
            Some(u16::from_le_bytes(
                file.get(o as usize..o as usize + 2)?.try_into().ok()?,
            ))
        };
        let u32_at = |o: u64| -> Option<u32> {
            Some(u32::from_le_bytes(
                file.get(o as usize..o as usize + 4)?.try_into().ok()?,
            ))
        };
        let u64_at = |o: u64| -> Option<u64> {
            Some(u64::from_le_bytes(
                file.get(o as usize..o as usize + 8)?.try_into().ok()?,
            ))
        };
        if file.get(..5)? != b"\x7fELF\x02" || u16_at(18)? != 62 {
            return None; // not ELF64 x86-64
        }
        let (phoff, phnum) = (u64_at(0x20)?, u16_at(0x38)? as u64);
        let (shoff, shentsize, shnum) = (u64_at(0x28)?, u16_at(0x3A)? as u64, u16_at(0x3C)? as u64);
        let mut loads = Vec::new();
        for i in 0..phnum.min(256) {
            let p = phoff + 56 * i;
            if u32_at(p)? == 1 {
                loads.push((u64_at(p + 16)?, u64_at(p + 32)?, u64_at(p + 8)?));
            }
        }
        let mut relocs: Vec<(u64, u64)> = Vec::new();
        if shentsize == 64 {
            for i in 0..shnum.min(4096) {
                let sh = shoff + 64 * i;
                if u32_at(sh + 4)? != 4 {
                    continue; // SHT_RELA only
                }
                let (off, size, link) =
                    (u64_at(sh + 24)?, u64_at(sh + 32)?, u32_at(sh + 40)? as u64);
                // The linked symbol table (for symbol relocations).
                let symtab = {
                    let l = shoff + 64 * link;
                    (u64_at(l + 24).unwrap_or(0), u64_at(l + 32).unwrap_or(0))
                };
                let n = (size / 24).min(1 << 22);
                for k in 0..n {
                    let r = off + 24 * k;
                    let (r_offset, r_info, addend) = (u64_at(r)?, u64_at(r + 8)?, u64_at(r + 16)?);
                    let (ty, sym) = (r_info & 0xFFFF_FFFF, r_info >> 32);
                    let value = match ty {
                        8 => bias.wrapping_add(addend), // R_X86_64_RELATIVE
                        1 | 6 => {
                            // R_X86_64_64 / GLOB_DAT: a symbol defined in this image.
                            let s = symtab.0 + 24 * sym;
                            if sym == 0 || 24 * sym >= symtab.1 || u16_at(s + 6)? == 0 {
                                continue; // undefined: resolved in another module
                            }
                            let v = u64_at(s + 8)?;
                            bias.wrapping_add(v)
                                .wrapping_add(if ty == 1 { addend } else { 0 })
                        }
                        _ => continue,
                    };
                    relocs.push((bias.wrapping_add(r_offset), value));
                }
            }
        }
        // Stable: of two relocations of one slot, the later stays last.
        relocs.sort_by_key(|&(a, _)| a);
        Some(ElfFileOverlay {
            mem,
            bias,
            file,
            loads,
            relocs,
        })
    }

    /// The file's bytes at `addr..` as loaded, as many as one PT_LOAD range holds (at most
    /// `len`).
    fn file_bytes(&self, addr: u64, len: usize) -> &[u8] {
        let va = addr.wrapping_sub(self.bias);
        let Some(&(v, fs, off)) = self
            .loads
            .iter()
            .find(|(v, fs, _)| va >= *v && va < v.saturating_add(*fs))
        else {
            return &[];
        };
        let start = off.saturating_add(va - v) as usize;
        let end = start
            .saturating_add(len.min((v + fs - va) as usize))
            .min(self.file.len());
        self.file.get(start..end).unwrap_or(&[])
    }
}

impl<M: Memory + ?Sized> Memory for ElfFileOverlay<'_, M> {
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        let got = self.mem.read(addr, buf);
        if got == buf.len() {
            return got;
        }
        // What the dump lacks: the file's bytes, then the relocated slots over them.
        let mut n = got;
        while n < buf.len() {
            let src = self.file_bytes(addr + n as u64, buf.len() - n);
            if src.is_empty() {
                break;
            }
            buf[n..n + src.len()].copy_from_slice(src);
            n += src.len();
        }
        let (lo, hi) = (addr + got as u64, addr + n as u64);
        let first = self
            .relocs
            .partition_point(|&(a, _)| a < lo.saturating_sub(7));
        for &(slot, v) in self.relocs[first..].iter().take_while(|&&(a, _)| a < hi) {
            for (i, b) in v.to_le_bytes().iter().enumerate() {
                let a = slot + i as u64;
                if a >= lo && a < hi {
                    buf[(a - addr) as usize] = *b;
                }
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NET10_LIKE: &str = r#"{"version":0,"baseline":"empty",
        "types":{"MethodTable":{"!":64,"MTFlags":0,"BaseSize":4,"AuxiliaryData":[32,"pointer"]},
                 "Thread":{"LinkNext":[112,"pointer"]}},
        "globals":{"GCInfoVersion":["0x4","uint32"],"ThreadStore":[[1],"pointer"],
                   "Plain":17,"Untyped":[0],"Arch":["x64","string"],"Mask":"0xfffffffffffffffe",
                   "OperatingSystem":["1","string"]},
        "contracts":{"Thread":1,"RuntimeTypeSystem":"c1"}}"#;

    #[test]
    fn parses_types_globals_and_contracts() {
        let d = parse(NET10_LIKE.as_bytes(), &[0x1000, 0x2000]).unwrap();
        assert_eq!(d.type_size("MethodTable"), Some(64));
        assert_eq!(d.field("MethodTable", "AuxiliaryData"), Some(32));
        assert_eq!(d.field("Thread", "LinkNext"), Some(112));
        assert_eq!(d.field("Thread", "Nope"), None);
        assert_eq!(d.global_number("GCInfoVersion"), Some(4));
        assert_eq!(d.global_number("ThreadStore"), Some(0x2000));
        assert!(d.globals["ThreadStore"].indirect);
        assert_eq!(d.global_number("Untyped"), Some(0x1000));
        assert_eq!(d.global_number("Plain"), Some(17));
        assert_eq!(d.global_number("Mask"), Some(0xffff_ffff_ffff_fffe));
        assert_eq!(d.global_str("Arch"), Some("x64"));
        assert_eq!(d.global_str("OperatingSystem"), Some("1"));
        assert_eq!(d.contract("Thread"), Some(&ContractVersion::Int(1)));
        assert_eq!(
            d.contract("RuntimeTypeSystem"),
            Some(&ContractVersion::Str("c1".into()))
        );
    }

    #[test]
    fn malformed_json_is_an_error_not_a_panic() {
        for bad in [
            "",
            "{",
            "[1,2",
            "{\"types\":{\"A\":{\"f\":\"x\"}}}",
            "{\"globals\":{\"G\":[[5],\"pointer\"]}}",
            "{\"types\":[]}",
            "\"\\u12\"",
            &"[".repeat(100),
            "{\"a\":1} x",
        ] {
            assert!(parse(bad.as_bytes(), &[0]).is_err(), "{bad:?} parsed");
        }
        assert!(parse(&[0xff, 0xfe], &[]).is_err());
    }

    struct Bytes(Vec<(u64, Vec<u8>)>);
    impl Memory for Bytes {
        fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
            for (a, b) in &self.0 {
                if addr >= *a && addr < a + b.len() as u64 {
                    let o = (addr - a) as usize;
                    let n = buf.len().min(b.len() - o);
                    buf[..n].copy_from_slice(&b[o..o + n]);
                    return n;
                }
            }
            0
        }
    }

    fn header(flags: u32, size: u32, json: u64, count: u32, ptrs: u64) -> Vec<u8> {
        let mut h = Vec::new();
        h.extend_from_slice(b"DNCCDAC\0");
        h.extend_from_slice(&flags.to_le_bytes());
        h.extend_from_slice(&size.to_le_bytes());
        h.extend_from_slice(&json.to_le_bytes());
        h.extend_from_slice(&count.to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes());
        h.extend_from_slice(&ptrs.to_le_bytes());
        h
    }

    #[test]
    fn reads_a_header_its_json_pointers_and_a_sub_descriptor() {
        let main = r#"{"version":0,"types":{"A":{"x":8}},"globals":{"G":[[0],"pointer"]},
            "contracts":{"Object":1},"subDescriptors":{"GC":[[1],"pointer"]}}"#;
        let sub = r#"{"version":0,"types":{"GCHeap":{"!":16,"y":4}},"contracts":{"GC":1}}"#;
        let mut mj = main.as_bytes().to_vec();
        mj.push(0);
        let mut ptrs = Vec::new();
        ptrs.extend_from_slice(&0xAAAAu64.to_le_bytes());
        ptrs.extend_from_slice(&0x5000u64.to_le_bytes()); // address of the pointer to the sub
        let mem = Bytes(vec![
            (0x1000, header(1, mj.len() as u32, 0x2000, 2, 0x3000)),
            (0x2000, mj),
            (0x3000, ptrs),
            (0x5000, 0x6000u64.to_le_bytes().to_vec()),
            (0x6000, header(1, sub.len() as u32, 0x7000, 0, 0x8000)),
            (0x7000, sub.as_bytes().to_vec()),
            (0x8000, vec![]),
        ]);
        let d = read_at(&mem, 0x1000).unwrap();
        assert_eq!(d.pointer_size, 8);
        assert_eq!(d.field("A", "x"), Some(8));
        assert_eq!(d.field("GCHeap", "y"), Some(4));
        assert_eq!(d.type_size("GCHeap"), Some(16));
        assert_eq!(d.global_number("G"), Some(0xAAAA));
        assert_eq!(d.contract("GC"), Some(&ContractVersion::Int(1)));
        assert_eq!(d.sub_descriptors, 1);
    }

    #[test]
    fn bad_headers_are_typed_errors() {
        let mem = Bytes(vec![(0x1000, header(1, u32::MAX, 0x2000, 0, 0))]);
        assert!(matches!(
            read_at(&mem, 0x1000),
            Err(DescriptorError::TooLarge {
                what: "descriptor_size",
                ..
            })
        ));
        let mem = Bytes(vec![(0x1000, header(1, 10, 0x2000, u32::MAX, 0))]);
        assert!(matches!(
            read_at(&mem, 0x1000),
            Err(DescriptorError::TooLarge {
                what: "pointer_data_count",
                ..
            })
        ));
        let mem = Bytes(vec![(0x1000, header(3, 10, 0x2000, 0, 0))]);
        assert!(matches!(
            read_at(&mem, 0x1000),
            Err(DescriptorError::Flags { .. })
        ));
        let mut h = header(1, 10, 0x2000, 0, 0);
        h[0] = b'X';
        let mem = Bytes(vec![(0x1000, h)]);
        assert!(matches!(
            read_at(&mem, 0x1000),
            Err(DescriptorError::BadMagic { .. })
        ));
        let mem = Bytes(vec![(0x1000, header(1, 10, 0x2000, 0, 0))]);
        assert!(matches!(
            read_at(&mem, 0x1000),
            Err(DescriptorError::Read { .. })
        ));
        assert!(matches!(
            read_at(&mem, 0x9000),
            Err(DescriptorError::Read { .. })
        ));
    }
}
