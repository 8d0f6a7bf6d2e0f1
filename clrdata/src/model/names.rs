//! Type names from MethodTables, spelled as SOS and the DAC spell them in heap listings:
//! `System.Collections.Generic.Dictionary`2[[System.String, System.Private.CoreLib],[Heap.Person, heap]]`,
//! `Hang.Program+<DelayC>c__async2`, `System.Int32[,]`, `Free`.
//!
//! A name comes from the type's module's ECMA-335 metadata (read from the dump), its TypeDef
//! token, and for generic instantiations the type arguments' names, recursively. When something
//! needed is not in the dump the result is an error saying what, never a guessed name.

use crate::data::types::MethodTableInfo;
use crate::data::types::ReadTypes;
use crate::discovery::runtime::Runtime;
use crate::error::{ClrError, Result};
use crate::metadata::Metadata;
use dumpreader::Memory;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Largest metadata blob read from a dump (CoreLib's is about 5 MB).
const MAX_METADATA: u32 = 64 << 20;
/// Deepest generic nesting followed (`List<List<...>>`); deeper is reported, not followed.
const MAX_DEPTH: usize = 16;

/// The metadata of one module, read out of the dump once.
pub struct ModuleMetadata {
    /// The metadata bytes (`BSJB` root first).
    pub bytes: Vec<u8>,
    /// The assembly's simple name from its Assembly row (`System.Private.CoreLib`, `heap`).
    pub assembly: String,
}

impl ModuleMetadata {
    /// Parses the bytes (cheap: computes the table layout).
    pub fn metadata(&self) -> Result<Metadata<'_>> {
        Metadata::parse(&self.bytes)
            .map_err(|e| ClrError::metadata(format!("metadata of {}", self.assembly), e))
    }
}

/// Caches of module metadata and type names, shared by every command of a session.
#[derive(Default)]
pub struct TypeNames {
    modules: Mutex<HashMap<u64, crate::Result<Arc<ModuleMetadata>>>>,
    names: Mutex<HashMap<u64, crate::Result<Arc<str>>>>,
}

impl TypeNames {
    /// Empty caches.
    pub fn new() -> TypeNames {
        TypeNames::default()
    }

    /// The metadata of the Module at `module` (cached; the error says what is missing).
    pub fn module_metadata<M: Memory>(
        &self,
        rt: &Runtime<M>,
        module: u64,
    ) -> crate::Result<Arc<ModuleMetadata>> {
        if let Some(r) = lock(&self.modules).get(&module) {
            return r.clone();
        }
        let r = read_module_metadata(rt, module).map(Arc::new);
        lock(&self.modules).insert(module, r.clone());
        r
    }

    /// The name of the type whose MethodTable is at `mt`.
    pub fn name<M: Memory>(&self, rt: &Runtime<M>, mt: u64) -> crate::Result<Arc<str>> {
        self.name_at_depth(rt, mt, 0)
    }

    /// The name, or `<unknown type: MethodTable 0x..: why>` when it cannot be known.
    pub fn name_or_note<M: Memory>(&self, rt: &Runtime<M>, mt: u64) -> String {
        match self.name(rt, mt) {
            Ok(n) => n.to_string(),
            Err(why) => format!("<unknown type: MethodTable {mt:#x}: {why}>"),
        }
    }

    fn name_at_depth<M: Memory>(
        &self,
        rt: &Runtime<M>,
        mt: u64,
        depth: usize,
    ) -> crate::Result<Arc<str>> {
        if let Some(r) = lock(&self.names).get(&mt) {
            return r.clone();
        }
        if depth > MAX_DEPTH {
            return Err(ClrError::unsupported(
                "type name",
                Some(mt),
                format!("generic arguments nested deeper than {MAX_DEPTH}"),
            ));
        }
        let r = self.compute(rt, mt, depth).map(Arc::<str>::from);
        lock(&self.names).insert(mt, r.clone());
        r
    }

    fn compute<M: Memory>(&self, rt: &Runtime<M>, mt: u64, depth: usize) -> crate::Result<String> {
        rt.require(crate::discovery::layout::Capability::TypeNames)?;
        if mt == rt.globals.free_mt {
            return Ok("Free".into());
        }
        if mt == rt.globals.string_mt {
            return Ok("System.String".into());
        }
        let info = rt.method_table(mt)?;
        if let Some(arr) = info.array {
            let elem = self.handle_name(rt, arr.element, depth + 1)?;
            let sz = info.flags & 0x000F_0000 == 0x000A_0000; // SzArray category
            let dims = if sz {
                "[]".to_string()
            } else if arr.rank == 1 {
                "[*]".to_string()
            } else {
                format!("[{}]", ",".repeat(arr.rank.saturating_sub(1) as usize))
            };
            return Ok(format!("{elem}{dims}"));
        }
        // A runtime-made continuation type: Continuation's subclass with no TypeDef (CoreLib's
        // own subclasses, RuntimeAsyncTaskContinuation..., have theirs).
        if info.parent != 0 && info.parent == rt.globals.continuation_mt && info.token.is_none() {
            return continuation_name(rt, &info);
        }
        let (md, rid) = self.typedef_of(rt, &info)?;
        let m = md.metadata()?;
        let mut name = m
            .type_name(rid)
            .map_err(|e| ClrError::metadata(format!("TypeDef {rid:#x} of {}", md.assembly), e))?;
        // A generic type's definition: its own MethodTable (the typical instantiation, the one
        // its module's TypeDefToMethodTable map holds) has its generic variables as arguments
        // (TypeDescs). The DAC names it by its TypeDef alone, `Heap.Node`1` (dumpmt;
        // dumps/*.sos-dumpmt.txt).
        if info.type_args.iter().any(|&a| a & 2 != 0) {
            let module = info.require_module()?;
            if crate::model::lookup_maps::typedef_mt(rt, module, rid) == Some(mt) {
                return Ok(name);
            }
        }
        if !info.type_args.is_empty() && info.canonical != 0 {
            name.push('[');
            for (i, &arg) in info.type_args.iter().enumerate() {
                if i > 0 {
                    name.push(',');
                }
                let an = self.handle_name(rt, arg, depth + 1)?;
                let asm = self.handle_assembly(rt, arg)?;
                name.push_str(&format!("[{an}, {asm}]"));
            }
            name.push(']');
        }
        Ok(name)
    }

    /// The name of a (non-array) type's TypeDef alone, without type arguments: what a
    /// generic type definition's MethodTable is named as the head of an instantiation.
    pub fn definition_name<M: Memory>(&self, rt: &Runtime<M>, mt: u64) -> crate::Result<String> {
        let info = rt.method_table(mt)?;
        let (md, rid) = self.typedef_of(rt, &info)?;
        let m = md.metadata()?;
        m.type_name(rid)
            .map_err(|e| ClrError::metadata(format!("TypeDef {rid:#x} of {}", md.assembly), e))
    }

    /// The module metadata and TypeDef row of a (non-array) type.
    fn typedef_of<M: Memory>(
        &self,
        rt: &Runtime<M>,
        info: &MethodTableInfo,
    ) -> crate::Result<(Arc<ModuleMetadata>, u32)> {
        let token = info.token.ok_or_else(|| {
            ClrError::unsupported(
                "MethodTable",
                Some(info.address),
                "its TypeDef token is kept in an optional member (not read yet)",
            )
        })?;
        if token >> 24 != 0x02 {
            return Err(ClrError::corrupt(
                "MethodTable",
                info.address,
                format!("token {token:#x} is not a TypeDef"),
            ));
        }
        let module = info.require_module()?;
        let md = self.module_metadata(rt, module)?;
        Ok((md, token & 0x00FF_FFFF))
    }

    /// The name of a TypeHandle (a MethodTable, or with bit 1 set a TypeDesc).
    fn handle_name<M: Memory>(
        &self,
        rt: &Runtime<M>,
        th: u64,
        depth: usize,
    ) -> crate::Result<String> {
        if th & 2 != 0 {
            return Err(ClrError::unsupported(
                "type argument",
                Some(th),
                "a TypeDesc (pointer, byref or generic variable), not named yet",
            ));
        }
        self.name_at_depth(rt, th, depth).map(|s| s.to_string())
    }

    /// The assembly simple name of a TypeHandle's type (for arrays, the element's).
    fn handle_assembly<M: Memory>(&self, rt: &Runtime<M>, th: u64) -> crate::Result<String> {
        let mut cur = th;
        for _ in 0..MAX_DEPTH {
            if cur & 2 != 0 {
                return Err(ClrError::unsupported(
                    "type argument",
                    Some(cur),
                    "a TypeDesc (pointer, byref or generic variable), not named yet",
                ));
            }
            let info = rt.method_table(cur)?;
            match info.array {
                Some(a) => cur = a.element,
                None => {
                    let module = info.require_module()?;
                    return Ok(self.module_metadata(rt, module)?.assembly.clone());
                }
            }
        }
        Err(ClrError::unsupported(
            "array type",
            Some(th),
            format!("element types nested deeper than {MAX_DEPTH}"),
        ))
    }
}

/// Where a continuation's own data starts (`ContinuationObject` size on 11.0.0: the object
/// header's MethodTable pointer, `Next`, `ResumeInfo`, `Flags`, `State`).
const CONTINUATION_DATA_START: u64 = 32;

/// The name the runtime gives a continuation type it made for a runtime-async method's saved
/// state (.NET 11): such types have no metadata (no TypeDef, one EEClass shared by all), so
/// the name tells the layout: `Continuation_<data size>` and, for each series of object
/// references in the data, `_<its offset in the data>_<its length in references>`, in
/// ascending offset (vm/asynccontinuations.cpp `PrintContinuationName`, v11.0.0; the 11.0.0
/// DAC's heap census names them so, e.g. `Continuation_64_8_3_40_2`: docs/clr-layout-net11.md
/// 4.2). The data size is BaseSize less the object header and the Continuation fields.
fn continuation_name<M: Memory>(rt: &Runtime<M>, info: &MethodTableInfo) -> crate::Result<String> {
    let m = rt.memory();
    let mt = info.address;
    let data_size = (info.base_size as u64)
        .checked_sub(8 + CONTINUATION_DATA_START)
        .ok_or_else(|| {
            ClrError::corrupt(
                "continuation MethodTable",
                mt,
                format!("BaseSize {} is below a Continuation's", info.base_size),
            )
        })?;
    let mut name = format!("Continuation_{data_size}");
    if info.contains_pointers() {
        let n = m
            .read_u64(mt.wrapping_sub(8))
            .map_err(|_| ClrError::read("GCDesc series count", mt.wrapping_sub(8)))?
            as i64;
        if !(1..=64).contains(&n) {
            return Err(ClrError::corrupt(
                "continuation MethodTable",
                mt,
                format!("{n} GCDesc series; a continuation type has ordinary series"),
            ));
        }
        let mut series = Vec::new();
        for i in 0..n as u64 {
            let s = mt.wrapping_sub(8 + 16 * (i + 1));
            let size = m
                .read_u64(s)
                .map_err(|_| ClrError::read("GCDesc series", s))?;
            let off = m
                .read_u64(s + 8)
                .map_err(|_| ClrError::read("GCDesc series", s + 8))?;
            // The series size is stored less the object's BaseSize.
            let bytes = size.wrapping_add(info.base_size as u64);
            series.push((off, bytes / 8));
        }
        series.sort_unstable();
        for (off, refs) in series {
            if off >= CONTINUATION_DATA_START {
                name.push_str(&format!("_{}_{refs}", off - CONTINUATION_DATA_START));
            }
        }
    }
    Ok(name)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn read_module_metadata<M: Memory>(rt: &Runtime<M>, module: u64) -> Result<ModuleMetadata> {
    if let Some(md) = dynamic_module_metadata(rt, module)? {
        return Ok(md);
    }
    let data = rt.module(module)?;
    let (addr, size) = data.metadata.ok_or_else(|| {
        // Say why: absent pages, or present but not metadata (damaged: no BSJB root...).
        let why = rt
            .metadata_location(data.image_base, data.mapped, data.cor_header)
            .err();
        ClrError::Corrupt {
            what: format!("module {} ({})", data.simple_name, data.path),
            addr: module,
            detail: match why {
                Some(w) if !matches!(w.root(), ClrError::Read { .. }) => {
                    format!("its metadata cannot be used: {w}")
                }
                _ => match rt.unread_file_at(data.image_base) {
                    Some(file) => format!(
                        "its metadata is not in the dump, and its file is not read ({file})"
                    ),
                    None => "its metadata is not in the dump".into(),
                },
            },
        }
    })?;
    metadata_at(
        rt,
        addr,
        size,
        &format!("metadata of {}", data.simple_name),
        |_| Ok(data.simple_name.clone()),
    )
}

/// The metadata of a Reflection.Emit module, from the copy the runtime keeps for the debugger
/// ([`crate::discovery::layout::DynamicMetadataLayout`]): `None` for a module that has none
/// (every module loaded from an image) or where the family's layout does not say where it is.
fn dynamic_module_metadata<M: Memory>(
    rt: &Runtime<M>,
    module: u64,
) -> Result<Option<ModuleMetadata>> {
    let Some(l) = rt.layout.module.dynamic_metadata else {
        return Ok(None);
    };
    use crate::discovery::layout::DynamicMetadataLayout;
    let m = rt.memory();
    let word = |a: u64, what: &str| m.read_u64(a).map_err(|_| ClrError::read(what, a));
    let dword = |a: u64, what: &str| m.read_u32(a).map_err(|_| ClrError::read(what, a));
    let (size, addr) = match l {
        DynamicMetadataLayout::Published {
            module_field,
            size,
            data,
        } => {
            let p = word(module.wrapping_add(module_field), "Module.DynamicMetadata")?;
            if p == 0 {
                return Ok(None);
            }
            (
                dword(p.wrapping_add(size), "DynamicMetadata.Size")?,
                p.wrapping_add(data),
            )
        }
        DynamicMetadataLayout::ReflectionModuleSBuffer {
            module_field,
            buffer,
        } => {
            // Only a Reflection.Emit module is a ReflectionModule: its PEAssembly has no
            // PEImage. Any other Module ends before that field.
            let ml = &rt.layout.module;
            let pe_assembly = word(module.wrapping_add(ml.pe_assembly), "Module::m_pPEAssembly")?;
            let image = word(
                pe_assembly.wrapping_add(ml.pe_assembly_image),
                "PEAssembly::m_PEImage",
            )?;
            if image != 0 {
                return Ok(None);
            }
            let p = word(
                module.wrapping_add(module_field),
                "ReflectionModule::m_pDynamicMetadata",
            )?;
            if p == 0 {
                return Ok(None);
            }
            (
                dword(p, "SBuffer::m_size")?,
                word(p.wrapping_add(buffer), "SBuffer::m_buffer")?,
            )
        }
    };
    metadata_at(
        rt,
        addr,
        size,
        "a Reflection.Emit module's metadata",
        |md| {
            md.module(1)
                .map(|r| r.name.to_string())
                .map_err(|e| ClrError::metadata("a Reflection.Emit module's Module row", e))
        },
    )
    .map(Some)
}

/// The `size` bytes of metadata at `addr` (`what` names them in errors) and the name of its
/// assembly: its Assembly row's, else what `no_assembly` says.
fn metadata_at<M: Memory>(
    rt: &Runtime<M>,
    addr: u64,
    size: u32,
    what: &str,
    no_assembly: impl FnOnce(&Metadata<'_>) -> Result<String>,
) -> Result<ModuleMetadata> {
    if size == 0 || size > MAX_METADATA {
        return Err(ClrError::Corrupt {
            what: what.to_owned(),
            addr,
            detail: format!("implausible size {size:#x}"),
        });
    }
    let mut bytes = vec![0u8; size as usize];
    let got = rt.memory().read(addr, &mut bytes);
    if got < bytes.len() {
        return Err(ClrError::Read {
            what: format!("{what} ({size:#x} bytes, {got:#x} present)"),
            addr: addr + got as u64,
        });
    }
    let assembly = {
        let m = Metadata::parse(&bytes)
            .map_err(|e| ClrError::metadata(format!("{what} at {addr:#x}"), e))?;
        match m.assembly(1) {
            Ok(a) => a.name.to_string(),
            Err(_) => no_assembly(&m)?,
        }
    };
    Ok(ModuleMetadata { bytes, assembly })
}
