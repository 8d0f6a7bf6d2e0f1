//! The data format (README.md, "The data format"): a string table, then the builds. Every
//! integer little-endian; a string is a u32 index into the table.

use crate::{
    Build, Descriptor, DescriptorRole, Export, ModuleKind, OwnedIdentity, Ptr, RuntimeInfo,
    SubDescriptor,
};
use std::collections::HashMap;
use std::sync::Arc;

/// The first 8 bytes of the uncompressed data (format version 1).
pub const MAGIC: &[u8; 8] = b"DSBIDX\x00\x01";

/// Why the data could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexError {
    /// The data is not what the format says.
    Format(String),
}

impl std::fmt::Display for IndexError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IndexError::Format(s) => write!(f, "build index data: {s}"),
        }
    }
}

impl std::error::Error for IndexError {}

const NO_RVA: u64 = u64::MAX;
// Bounds on counts, so that corrupt data fails instead of allocating wildly.
const MAX_COUNT: u32 = 1 << 20;

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
    strings: Vec<Arc<str>>,
}

fn err<T>(s: impl Into<String>) -> Result<T, IndexError> {
    Err(IndexError::Format(s.into()))
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], IndexError> {
        match self.b.get(self.at..self.at.saturating_add(n)) {
            Some(s) => {
                self.at += n;
                Ok(s)
            }
            None => err(format!("truncated at byte {}", self.at)),
        }
    }
    fn u8(&mut self) -> Result<u8, IndexError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, IndexError> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().unwrap_or([0; 4]),
        ))
    }
    fn i32(&mut self) -> Result<i32, IndexError> {
        Ok(i32::from_le_bytes(
            self.take(4)?.try_into().unwrap_or([0; 4]),
        ))
    }
    fn u64(&mut self) -> Result<u64, IndexError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().unwrap_or([0; 8]),
        ))
    }
    fn count(&mut self, what: &str) -> Result<usize, IndexError> {
        let n = self.u32()?;
        if n > MAX_COUNT {
            return err(format!("{what}: count {n} at byte {}", self.at - 4));
        }
        Ok(n as usize)
    }
    fn blob(&mut self) -> Result<&'a [u8], IndexError> {
        let n = self.count("blob")?;
        self.take(n)
    }
    fn str(&mut self) -> Result<Arc<str>, IndexError> {
        let i = self.u32()? as usize;
        match self.strings.get(i) {
            Some(s) => Ok(s.clone()),
            None => err(format!("string {i} of {}", self.strings.len())),
        }
    }
    fn string(&mut self) -> Result<String, IndexError> {
        Ok(self.str()?.to_string())
    }
    fn ptr(&mut self) -> Result<Ptr, IndexError> {
        let tag = self.u8()?;
        let v = self.u64()?;
        match (tag, v) {
            (0, v) => Ok(Ptr::Raw(v)),
            (1, v) => Ok(Ptr::Rva(v)),
            (2, 0) => Ok(Ptr::Unfilled),
            _ => err(format!("pointer kind {tag} value {v:#x}")),
        }
    }
}

pub(crate) fn decode(bytes: &[u8]) -> Result<Vec<Build>, IndexError> {
    if bytes.get(..8) != Some(&MAGIC[..]) {
        return err("no DSBIDX version 1 magic");
    }
    let mut r = Reader {
        b: bytes,
        at: 8,
        strings: Vec::new(),
    };
    let n = r.count("strings")?;
    for _ in 0..n {
        let b = r.blob()?;
        let s = std::str::from_utf8(b).map_err(|e| IndexError::Format(format!("string: {e}")))?;
        r.strings.push(Arc::from(s));
    }
    let n = r.count("builds")?;
    let mut builds = Vec::with_capacity(n);
    for _ in 0..n {
        builds.push(build(&mut r)?);
    }
    if r.at != bytes.len() {
        return err(format!("{} bytes after the last build", bytes.len() - r.at));
    }
    Ok(builds)
}

fn build(r: &mut Reader<'_>) -> Result<Build, IndexError> {
    let kind = match r.u8()? {
        1 => ModuleKind::LibCoreClr,
        2 => ModuleKind::CoreClrDll,
        3 => ModuleKind::SingleFileHostElf,
        4 => ModuleKind::SingleFileHostPe,
        k => return err(format!("module kind {k}")),
    };
    let identity = match r.u8()? {
        1 => OwnedIdentity::ElfBuildId(r.blob()?.to_vec()),
        2 => OwnedIdentity::Pe {
            timestamp: r.u32()?,
            size_of_image: r.u32()?,
        },
        k => return err(format!("identity kind {k}")),
    };
    if matches!(identity, OwnedIdentity::ElfBuildId(_)) != kind.is_elf() {
        return err(format!("{kind:?} with identity {identity:?}"));
    }
    let file_name = r.string()?;
    let package = r.string()?;
    let package_version = r.string()?;
    let path = r.string()?;
    let file_size = r.u64()?;
    let sha256: [u8; 32] = r.take(32)?.try_into().unwrap_or([0; 32]);
    let image_size = r.u64()?;
    let version_text = r.string()?;
    let file_version = r.string()?;
    let commit = r.string()?;
    let build_id_rva = match r.u64()? {
        NO_RVA => None,
        v => Some(v),
    };
    let n = r.count("version text RVAs")?;
    let version_text_rvas = (0..n).map(|_| r.u64()).collect::<Result<_, _>>()?;
    let n = r.count("exports")?;
    let mut exports: Vec<Export> = Vec::with_capacity(n);
    for _ in 0..n {
        let e = Export {
            name: r.string()?,
            rva: r.u64()?,
            size: r.u64()?,
        };
        if exports.last().is_some_and(|l| l.name >= e.name) {
            return err(format!("exports not sorted at {}", e.name));
        }
        exports.push(e);
    }
    let runtime_info = match r.u8()? {
        0 => None,
        1 => Some(runtime_info(r.blob()?)?),
        k => return err(format!("runtime info flag {k}")),
    };
    let n = r.count("descriptors")?;
    let mut descriptors = Vec::with_capacity(n);
    for _ in 0..n {
        descriptors.push(descriptor(r)?);
    }
    for d in &descriptors {
        for s in &d.sub_descriptors {
            if s.target.is_some_and(|t| t >= descriptors.len()) {
                return err(format!(
                    "sub-descriptor {} targets descriptor {:?}",
                    s.name, s.target
                ));
            }
        }
    }
    Ok(Build {
        kind,
        identity,
        file_name,
        package,
        package_version,
        path,
        file_size,
        sha256,
        image_size,
        version_text,
        file_version,
        commit,
        build_id_rva,
        version_text_rvas,
        exports,
        runtime_info,
        descriptors,
    })
}

fn descriptor(r: &mut Reader<'_>) -> Result<Descriptor, IndexError> {
    let rva = r.u64()?;
    let role = match r.u8()? {
        1 => DescriptorRole::Main,
        2 => DescriptorRole::Sub,
        3 => DescriptorRole::InImage,
        k => return err(format!("descriptor role {k}")),
    };
    let flags = r.u32()?;
    let descriptor_size = r.u32()?;
    let json_ptr = r.ptr()?;
    let json = r.str()?;
    if json.len() != descriptor_size as usize {
        return err(format!(
            "descriptor at {rva:#x}: {} JSON bytes, header says {descriptor_size}",
            json.len()
        ));
    }
    let count = r.count("pointer_data")?;
    let pointer_data_ptr = r.ptr()?;
    let pointer_data = (0..count).map(|_| r.ptr()).collect::<Result<Vec<_>, _>>()?;
    let n = r.count("sub-descriptors")?;
    let mut sub_descriptors = Vec::with_capacity(n);
    for _ in 0..n {
        let name = r.string()?;
        let index = r.u32()?;
        let content = r.ptr()?;
        let target = match r.i32()? {
            -1 => None,
            t if t >= 0 => Some(t as usize),
            t => return err(format!("sub-descriptor target {t}")),
        };
        if index as usize >= pointer_data.len() {
            return err(format!(
                "sub-descriptor {name}: index {index} of {}",
                pointer_data.len()
            ));
        }
        sub_descriptors.push(SubDescriptor {
            name,
            index,
            content,
            target,
        });
    }
    Ok(Descriptor {
        rva,
        role,
        flags,
        descriptor_size,
        json_ptr,
        json,
        pointer_data_ptr,
        pointer_data,
        sub_descriptors,
    })
}

/// Decodes a `DotNetRuntimeInfo` record (runtimeinfo.h: char Signature[18]; int Version;
/// three SYMBOL_INDEX[24] whose first byte is the count of bytes; version 2 adds the runtime's
/// four-part version as ints).
fn runtime_info(raw: &[u8]) -> Result<RuntimeInfo, IndexError> {
    if raw.len() < 96 || &raw[..18] != b"DotNetRuntimeInfo\0" {
        return err("DotNetRuntimeInfo: no signature");
    }
    let version = i32::from_le_bytes(raw[20..24].try_into().unwrap_or([0; 4]));
    let index = |i: usize| -> Result<Vec<u8>, IndexError> {
        let at = 24 + 24 * i;
        let n = raw[at] as usize;
        if n > 23 {
            return err(format!("DotNetRuntimeInfo: index of {n} bytes"));
        }
        Ok(raw[at + 1..at + 1 + n].to_vec())
    };
    let runtime_version = if version >= 2 {
        let v = raw.get(96..112).ok_or_else(|| {
            IndexError::Format("DotNetRuntimeInfo version 2 without its runtime version".into())
        })?;
        let w = |i: usize| u32::from_le_bytes(v[4 * i..4 * i + 4].try_into().unwrap_or([0; 4]));
        Some([w(0), w(1), w(2), w(3)])
    } else {
        None
    };
    Ok(RuntimeInfo {
        raw: raw.to_vec(),
        version,
        runtime_module_index: index(0)?,
        dac_module_index: index(1)?,
        dbi_module_index: index(2)?,
        runtime_version,
    })
}

struct Writer {
    strings: Vec<Arc<str>>,
    index: HashMap<Arc<str>, u32>,
    out: Vec<u8>,
}

impl Writer {
    fn s(&mut self, s: &str) {
        let i = match self.index.get(s) {
            Some(&i) => i,
            None => {
                let a: Arc<str> = Arc::from(s);
                let i = self.strings.len() as u32;
                self.strings.push(a.clone());
                self.index.insert(a, i);
                i
            }
        };
        self.u32(i);
    }
    fn u8(&mut self, v: u8) {
        self.out.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }
    fn blob(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.out.extend_from_slice(b);
    }
    fn ptr(&mut self, p: Ptr) {
        let (t, v) = match p {
            Ptr::Raw(v) => (0, v),
            Ptr::Rva(v) => (1, v),
            Ptr::Unfilled => (2, 0),
        };
        self.u8(t);
        self.u64(v);
    }
}

pub(crate) fn encode(builds: &[Build]) -> Vec<u8> {
    let mut w = Writer {
        strings: Vec::new(),
        index: HashMap::new(),
        out: Vec::new(),
    };
    w.u32(builds.len() as u32);
    for b in builds {
        w.u8(match b.kind {
            ModuleKind::LibCoreClr => 1,
            ModuleKind::CoreClrDll => 2,
            ModuleKind::SingleFileHostElf => 3,
            ModuleKind::SingleFileHostPe => 4,
        });
        match &b.identity {
            OwnedIdentity::ElfBuildId(id) => {
                w.u8(1);
                w.blob(id);
            }
            OwnedIdentity::Pe {
                timestamp,
                size_of_image,
            } => {
                w.u8(2);
                w.u32(*timestamp);
                w.u32(*size_of_image);
            }
        }
        w.s(&b.file_name);
        w.s(&b.package);
        w.s(&b.package_version);
        w.s(&b.path);
        w.u64(b.file_size);
        w.out.extend_from_slice(&b.sha256);
        w.u64(b.image_size);
        w.s(&b.version_text);
        w.s(&b.file_version);
        w.s(&b.commit);
        w.u64(b.build_id_rva.unwrap_or(NO_RVA));
        w.u32(b.version_text_rvas.len() as u32);
        for &v in &b.version_text_rvas {
            w.u64(v);
        }
        w.u32(b.exports.len() as u32);
        for e in &b.exports {
            w.s(&e.name);
            w.u64(e.rva);
            w.u64(e.size);
        }
        match &b.runtime_info {
            None => w.u8(0),
            Some(ri) => {
                w.u8(1);
                w.blob(&ri.raw);
            }
        }
        w.u32(b.descriptors.len() as u32);
        for d in &b.descriptors {
            w.u64(d.rva);
            w.u8(match d.role {
                DescriptorRole::Main => 1,
                DescriptorRole::Sub => 2,
                DescriptorRole::InImage => 3,
            });
            w.u32(d.flags);
            w.u32(d.descriptor_size);
            w.ptr(d.json_ptr);
            w.s(&d.json);
            w.u32(d.pointer_data.len() as u32);
            w.ptr(d.pointer_data_ptr);
            for &p in &d.pointer_data {
                w.ptr(p);
            }
            w.u32(d.sub_descriptors.len() as u32);
            for s in &d.sub_descriptors {
                w.s(&s.name);
                w.u32(s.index);
                w.ptr(s.content);
                w.u32(s.target.map_or(u32::MAX, |t| t as u32));
            }
        }
    }
    let mut head = MAGIC.to_vec();
    head.extend_from_slice(&(w.strings.len() as u32).to_le_bytes());
    for s in &w.strings {
        head.extend_from_slice(&(s.len() as u32).to_le_bytes());
        head.extend_from_slice(s.as_bytes());
    }
    head.extend_from_slice(&w.out);
    head
}
