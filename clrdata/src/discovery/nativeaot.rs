//! NativeAOT apps (`PublishAot`): the runtime linked into the app's executable, with no DAC,
//! no libcoreclr.so and no CoreCLR structures (docs/nativeaot-layout.md).
//!
//! Found from the dump alone: the executable's `.dynsym` export `DotNetRuntimeDebugHeader`
//! (.NET 8: header major 3; .NET 10: major 5) or `DotNetRuntimeContractDescriptor` (.NET 11),
//! read through the dump's own pages of the executable (or its image file, matched by build
//! id, for a gcore core). The layout comes from the header's (type, field, offset) entries or
//! from the descriptor's types; this module knows only which entry names each fact
//! ([`FIELDS`]) and which header versions were verified ([`HEADER_VERSIONS`]). What it reads:
//! the runtime's identity ([`NativeAot::find`]), the thread list ([`NativeAot::threads`]) and
//! the crash info buffer ([`NativeAot::crash_info`]) and the GC heap's census by MethodTable
//! ([`NativeAot::heap_census`], 8 and 10). Everything else CoreCLR's structures serve (objects,
//! stacks, type names) is refused by [`crate::error::ClrError::NativeAot`].

use crate::discovery::descriptor::{self, ContractDescriptor};
use crate::error::{ClrError, Result};
use dumpreader::{Memory, ModuleInfo, Target};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// The debug header's export (.NET 8, 9, 10).
pub const DEBUG_HEADER_EXPORT: &str = "DotNetRuntimeDebugHeader";
/// The debug header's cookie.
const DEBUG_HEADER_COOKIE: [u8; 4] = *b"DNDH";

/// The debug header major versions this build reads, each with the release it was verified on
/// (observed in the corpus: dumps/*-aot*.symbols.json). Another version is refused, named.
pub const HEADER_VERSIONS: &[(u16, u32)] = &[(3, 8), (5, 10)];

/// The debug header's type entries are 24 bytes (`char* TypeName; char* FieldName; u32
/// FieldOffset; u32 Padding`), its globals 16 (`char* Name; void* Address`); both arrays end
/// at a null name. More than these many is a corrupt header.
const MAX_ENTRIES: usize = 4096;

/// A fact of the layout, named by where each source states it.
#[derive(Debug, Clone, Copy)]
pub struct FieldName {
    /// Our name for it (error messages).
    pub what: &'static str,
    /// The debug header's (type, field) pairs that give it, the first found taken (the thread
    /// type is `ThreadBuffer` in 8, `RuntimeThreadLocals` in 10).
    pub header: &'static [(&'static str, &'static str)],
    /// The contract descriptor's (type, field).
    pub descriptor: (&'static str, &'static str),
}

/// Every field this module reads, as the header and the descriptor name it.
pub mod fields {
    use super::FieldName;
    /// `ThreadStore::m_ThreadList`: the first thread.
    pub const THREAD_LIST: FieldName = FieldName {
        what: "ThreadStore.m_ThreadList",
        header: &[("ThreadStore", "m_ThreadList")],
        descriptor: ("ThreadStore", "FirstThreadLink"),
    };
    /// `RuntimeInstance::m_pThreadStore` (header versions; .NET 11 has a ThreadStore global).
    pub const THREAD_STORE: FieldName = FieldName {
        what: "RuntimeInstance.m_pThreadStore",
        header: &[("RuntimeInstance", "m_pThreadStore")],
        descriptor: ("", ""),
    };
    /// The next thread in the list.
    pub const THREAD_NEXT: FieldName = FieldName {
        what: "Thread.m_pNext",
        header: &[
            ("RuntimeThreadLocals", "m_pNext"),
            ("ThreadBuffer", "m_pNext"),
        ],
        descriptor: ("Thread", "LinkNext"),
    };
    /// The thread's OS id (the Linux tid).
    pub const THREAD_OS_ID: FieldName = FieldName {
        what: "Thread.m_threadId",
        header: &[
            ("RuntimeThreadLocals", "m_threadId"),
            ("ThreadBuffer", "m_threadId"),
        ],
        descriptor: ("Thread", "OSId"),
    };
    /// The head of the thread's chain of exceptions in flight.
    pub const THREAD_EXINFO: FieldName = FieldName {
        what: "Thread.m_pExInfoStackHead",
        header: &[
            ("RuntimeThreadLocals", "m_pExInfoStackHead"),
            ("ThreadBuffer", "m_pExInfoStackHead"),
        ],
        descriptor: ("Thread", "ExceptionTracker"),
    };
    /// `ExInfo::m_pPrevExInfo`.
    pub const EXINFO_PREV: FieldName = FieldName {
        what: "ExInfo.m_pPrevExInfo",
        header: &[("ExInfo", "m_pPrevExInfo")],
        descriptor: ("ExInfo", "PreviousNestedInfo"),
    };
    /// `ExInfo::m_exception`: the exception object.
    pub const EXINFO_EXCEPTION: FieldName = FieldName {
        what: "ExInfo.m_exception",
        header: &[("ExInfo", "m_exception")],
        descriptor: ("ExInfo", "ThrownObject"),
    };
    /// The thread's state flags (`m_ThreadStateFlags`). The header does not list it: see
    /// [`super::HEADER_STATE_BEFORE_NEXT`].
    pub const THREAD_STATE: FieldName = FieldName {
        what: "Thread.m_ThreadStateFlags",
        header: &[],
        descriptor: ("Thread", "State"),
    };
    /// The thread's transition frame (`m_pTransitionFrame`); not listed by the header: see
    /// [`super::HEADER_FRAME_BEFORE_NEXT`].
    pub const THREAD_FRAME: FieldName = FieldName {
        what: "Thread.m_pTransitionFrame",
        header: &[],
        descriptor: ("Thread", "TransitionFrame"),
    };
}

/// Where the header versions (3, 5) keep the thread's `u32 m_ThreadStateFlags` and
/// `m_pTransitionFrame`, which their entries do not list: 32 and 24 bytes before `m_pNext`
/// (thread.h's field order: `m_eeAllocContext`, `m_ThreadStateFlags`, `m_pTransitionFrame`,
/// `m_pDeferredTransitionFrame`, `m_pCachedTransitionFrame`, `m_pNext`; checked on every 8 and
/// 10 corpus dump: each frame found so points back at its thread, docs/nativeaot-layout.md
/// section 4; .NET 11's descriptor states the same offsets, State 64 / TransitionFrame 72 /
/// LinkNext 96).
pub const HEADER_STATE_BEFORE_NEXT: u64 = 32;
/// See [`HEADER_STATE_BEFORE_NEXT`].
pub const HEADER_FRAME_BEFORE_NEXT: u64 = 24;

/// Thread state flags (`TSF_*`, thread.h) named in the output.
pub const THREAD_STATE_FLAGS: &[(u32, &str)] = &[
    (0x1, "Attached"),
    (0x2, "Detached"),
    (0x4, "SavedRedirectContext"),
    (0x8, "SuppressGcStress"),
    (0x10, "DoNotTriggerGc"),
];

/// Where the layout was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AotLayoutSource {
    /// `DotNetRuntimeDebugHeader` (8, 9, 10).
    DebugHeader {
        /// The header's address.
        #[serde(serialize_with = "dumpreader::json::hex")]
        address: u64,
        /// Its major version.
        major: u16,
        /// Its minor version.
        minor: u16,
        /// How many (type, field, offset) entries.
        type_entries: usize,
        /// How many globals.
        globals: usize,
    },
    /// `DotNetRuntimeContractDescriptor` (11).
    ContractDescriptor {
        /// The descriptor's address.
        #[serde(serialize_with = "dumpreader::json::hex")]
        address: u64,
        /// How many sub-descriptors were merged (ManagedTypes, GC).
        sub_descriptors: usize,
    },
}

impl std::fmt::Display for AotLayoutSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AotLayoutSource::DebugHeader {
                address,
                major,
                minor,
                type_entries,
                globals,
            } => write!(
                f,
                "DotNetRuntimeDebugHeader {major}.{minor} at {address:#x} ({type_entries} \
                 field entries, {globals} globals)"
            ),
            AotLayoutSource::ContractDescriptor {
                address,
                sub_descriptors,
            } => write!(
                f,
                "DotNetRuntimeContractDescriptor at {address:#x} ({sub_descriptors} \
                 sub-descriptors)"
            ),
        }
    }
}

/// Where the version was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AotVersionSource {
    /// The contract descriptor's `RuntimeProductVersionString` (11).
    ContractDescriptor,
    /// The crash info buffer's `runtime_version` (a crashed app).
    CrashInfo,
    /// The string the runtime's `RhGetRuntimeVersion` returns, the function found by the
    /// executable's symbol file ([`NativeAot::version_from_symbol_file`]).
    SymbolFile,
    /// Only the family, from the debug header's major version ([`HEADER_VERSIONS`]).
    HeaderVersion,
}

/// A NativeAOT runtime found in the dump.
#[derive(Debug, Clone)]
pub struct NativeAot {
    /// The executable's path as the dump records it.
    pub module_path: String,
    /// Its file name.
    pub module_name: String,
    /// Its load address.
    pub base: u64,
    /// The release family (8, 10, 11).
    pub family: u32,
    /// The exact product version ("10.0.12"), when the dump states it.
    pub version: Option<String>,
    /// Where [`NativeAot::family`] / [`NativeAot::version`] were read.
    pub version_source: AotVersionSource,
    /// Where the layout was read.
    pub layout: AotLayoutSource,
    /// (type, field) → offset, from the header's entries or the descriptor's types.
    fields: BTreeMap<(String, String), u64>,
    /// Header globals (name → address of the thing), or the descriptor's pointer globals.
    globals: BTreeMap<String, u64>,
    /// Whether the layout is the descriptor's (field names of [`FieldName::descriptor`]).
    from_descriptor: bool,
    /// The GC sub-descriptor's `GCIdentifiers` ("workstation, regions, background,"), 11.
    gc_identifiers: Option<String>,
    /// The GC sub-descriptor's GC contract version (`"c1"`), 11.
    gc_contract: Option<String>,
}

/// What is said of a NativeAOT runtime (`info`, `eeversion`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AotSummary {
    /// The executable's path.
    pub executable: String,
    /// Its load address.
    #[serde(serialize_with = "dumpreader::json::hex")]
    pub base: u64,
    /// The release family (8, 10, 11).
    pub family: u32,
    /// The exact version, when the dump states it.
    pub version: Option<String>,
    /// Where the version was read.
    pub version_source: AotVersionSource,
    /// Where the layout was read.
    pub layout: AotLayoutSource,
}

/// One thread of the ThreadStore.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AotThread {
    /// The runtime's Thread.
    #[serde(serialize_with = "dumpreader::json::hex")]
    pub address: u64,
    /// The OS thread id.
    pub os_id: u64,
    /// `m_ThreadStateFlags`.
    pub state: u32,
    /// The state's flag names.
    pub state_names: Vec<&'static str>,
    /// `m_pTransitionFrame` (0: in managed code or none; -1 top of stack; -2 interrupted).
    #[serde(serialize_with = "dumpreader::json::hex")]
    pub transition_frame: u64,
    /// The exceptions in flight (the ExInfo chain's objects), most recent first.
    #[serde(serialize_with = "hex_vec")]
    pub exceptions: Vec<u64>,
    /// Whether the dump holds an OS thread of this id.
    pub in_dump: bool,
}

fn hex_vec<S: serde::Serializer>(v: &[u64], s: S) -> std::result::Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    let mut q = s.serialize_seq(Some(v.len()))?;
    for a in v {
        q.serialize_element(&format!("{a:#x}"))?;
    }
    q.end()
}

/// The crash info buffer (`g_CrashInfoBuffer`): the JSON the runtime wrote before aborting.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CrashInfo {
    /// The buffer's address.
    #[serde(serialize_with = "dumpreader::json::hex")]
    pub address: u64,
    /// The JSON as written.
    pub json: serde_json::Value,
}

/// How many bytes of the crash info buffer are read at most: SOS's `MAX_CRASHINFOBUFFER_SIZE`
/// (dotnet/diagnostics `CrashInfoService.cs`); the JSON ends at its NUL.
const MAX_CRASH_INFO: usize = 8192;

/// The modules that may be a NativeAOT executable: images, the main executable first; not a
/// CoreCLR single-file host (it exports `DotNetRuntimeInfo` or `g_dacTable`, and on 9+ a
/// CoreCLR contract descriptor of the same export name).
fn candidates<T: Target + ?Sized>(target: &T) -> Vec<&ModuleInfo> {
    let mods: Vec<&ModuleInfo> = target
        .modules()
        .iter()
        .filter(|m| m.kind != dumpreader::ModuleKind::Other)
        .filter(|m| {
            target.find_export(m, "DotNetRuntimeInfo").is_none()
                && target.find_export(m, "g_dacTable").is_none()
        })
        .collect();
    let exe = target.info().process_name.clone();
    let (mut first, rest): (Vec<&ModuleInfo>, Vec<&ModuleInfo>) = mods
        .into_iter()
        .partition(|m| exe.as_deref() == Some(m.name()));
    first.extend(rest);
    first
}

/// The runtime function returning its version string.
const RH_GET_RUNTIME_VERSION: &str = "RhGetRuntimeVersion";
/// `RhGetRuntimeVersion`'s code (amd64): `push rbp; mov rbp, rsp; mov dword [rdi], <length>;
/// lea rax, [rip + <string>]; pop rbp; ret` (None: the length and displacement bytes). Read
/// from RuntimeInstance.cpp.o of the 10.0.12 runtime pack's libRuntime.WorkstationGC.a and
/// seen at the same shape in the 8.0.31, 10.0.12 and 11.0.0 corpus executables.
const RH_GET_RUNTIME_VERSION_CODE: [Option<u8>; 19] = [
    Some(0x55),
    Some(0x48),
    Some(0x89),
    Some(0xe5),
    Some(0xc7),
    Some(0x07),
    None,
    None,
    None,
    None,
    Some(0x48),
    Some(0x8d),
    Some(0x05),
    None,
    None,
    None,
    None,
    Some(0x5d),
    Some(0xc3),
];

fn read_err(what: impl Into<String>, addr: u64) -> ClrError {
    ClrError::Read {
        what: what.into(),
        addr,
    }
}

impl NativeAot {
    /// The NativeAOT runtime of the dump: `Ok(None)` when no module exports the debug header
    /// or the contract descriptor; an error when one does but it cannot be read, or is of a
    /// version not verified here (named).
    pub fn find<T: Target + ?Sized>(target: &T) -> Result<Option<NativeAot>> {
        for m in candidates(target) {
            if let Some(addr) = target.find_export(m, descriptor::EXPORT_NAME) {
                // A CoreCLR (9+) exports the same symbol: only a descriptor whose
                // RuntimeFlavor says NativeAot is one.
                let d = descriptor::read_at(target, addr).map_err(|e| ClrError::Descriptor {
                    runtime: format!("NativeAOT executable {}", m.name()),
                    detail: e.to_string(),
                })?;
                if d.global_str("RuntimeFlavor") != Some("NativeAot") {
                    continue;
                }
                return Self::from_descriptor(m, d).map(Some);
            }
            if let Some(addr) = target.find_export(m, DEBUG_HEADER_EXPORT) {
                return Self::from_header(target, m, addr).map(Some);
            }
        }
        Ok(None)
    }

    fn from_descriptor(m: &ModuleInfo, d: ContractDescriptor) -> Result<NativeAot> {
        let runtime = format!("NativeAOT executable {}", m.name());
        let version = d
            .global_str("RuntimeProductVersionString")
            .map(str::to_owned)
            .ok_or_else(|| ClrError::Descriptor {
                runtime: runtime.clone(),
                detail: "the contract descriptor has no RuntimeProductVersionString".into(),
            })?;
        let family = version
            .split('.')
            .next()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| ClrError::Descriptor {
                runtime: runtime.clone(),
                detail: format!("RuntimeProductVersionString {version:?} is not a version"),
            })?;
        // The contracts this reader relies on, at the versions it was verified with (n1: the
        // NativeAOT versions of 11.0.0).
        for c in ["Thread", "Exception"] {
            match d.contract(c).map(|v| v.to_string()) {
                Some(v) if v == "\"n1\"" => {}
                other => {
                    return Err(ClrError::Descriptor {
                        runtime,
                        detail: format!(
                            "contract {c} is {}, this build reads NativeAOT's \"n1\" only",
                            other.unwrap_or_else(|| "absent".into())
                        ),
                    })
                }
            }
        }
        let mut fields = BTreeMap::new();
        for (t, ti) in &d.types {
            for (f, o) in &ti.fields {
                fields.insert((t.clone(), f.clone()), *o);
            }
            // The type's size, as the descriptor spells it ("!").
            if let Some(size) = ti.size {
                fields.insert((t.clone(), "!".to_owned()), size);
            }
        }
        // Every number global of the merged descriptor (the GC sub-descriptor's included):
        // addresses (ThreadStore, FreeObjectMethodTable, GCHeapGenerationTable...) and
        // constants (TotalGenerationCount...).
        let globals: BTreeMap<String, u64> = d
            .globals
            .keys()
            .filter_map(|n| d.global_number(n).map(|v| (n.clone(), v)))
            .collect();
        let gc_identifiers = d.global_str("GCIdentifiers").map(str::to_owned);
        let gc_contract = d.contract("GC").map(|v| v.to_string());
        Ok(NativeAot {
            module_path: m.path.clone(),
            module_name: m.name().to_owned(),
            base: m.base,
            family,
            version: Some(version),
            version_source: AotVersionSource::ContractDescriptor,
            layout: AotLayoutSource::ContractDescriptor {
                address: d.address,
                sub_descriptors: d.sub_descriptors,
            },
            fields,
            globals,
            from_descriptor: true,
            gc_identifiers,
            gc_contract,
        })
    }

    fn from_header<T: Target + ?Sized>(target: &T, m: &ModuleInfo, addr: u64) -> Result<NativeAot> {
        let what = |s: &str| format!("DotNetRuntimeDebugHeader {s}");
        let mut raw = [0u8; 32];
        target
            .read_exact(addr, &mut raw)
            .map_err(|_| read_err(what("(its 32 bytes)"), addr))?;
        if raw[..4] != DEBUG_HEADER_COOKIE {
            return Err(ClrError::Corrupt {
                what: what("of the NativeAOT executable"),
                addr,
                detail: format!(
                    "cookie {:02x?}, expected \"DNDH\" (the runtime fills it at startup: a \
                     dump taken before that holds zeros)",
                    &raw[..4]
                ),
            });
        }
        let u16_at = |o: usize| u16::from_le_bytes([raw[o], raw[o + 1]]);
        let u32_at = |o: usize| u32::from_le_bytes(raw[o..o + 4].try_into().unwrap_or([0; 4]));
        let u64_at = |o: usize| u64::from_le_bytes(raw[o..o + 8].try_into().unwrap_or([0; 8]));
        let (major, minor, flags) = (u16_at(4), u16_at(6), u32_at(8));
        if flags & 1 == 0 || flags & 2 != 0 {
            return Err(ClrError::Corrupt {
                what: what("flags"),
                addr: addr + 8,
                detail: format!(
                    "{flags:#x}: this build reads 64-bit little-endian targets only (bit 0 set, \
                     bit 1 clear)"
                ),
            });
        }
        let Some(&(_, family)) = HEADER_VERSIONS.iter().find(|(v, _)| *v == major) else {
            return Err(ClrError::UnsupportedRuntime {
                found: format!(
                    "a NativeAOT runtime with debug header version {major}.{minor} (this build \
                     reads NativeAOT headers {})",
                    HEADER_VERSIONS
                        .iter()
                        .map(|(v, f)| format!("{v} of .NET {f}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                module: m.name().to_owned(),
                base: m.base,
            });
        };
        let (types_at, globals_at) = (u64_at(16), u64_at(24));
        let cstr = |a: u64, w: &str| {
            target
                .read_cstr(a, 256)
                .map_err(|_| read_err(what(&format!("{w} name")), a))
        };
        let mut fields = BTreeMap::new();
        let mut n = 0;
        loop {
            let e = types_at + 24 * n as u64;
            let tname = target
                .read_u64(e)
                .map_err(|_| read_err(what("type entry"), e))?;
            if tname == 0 {
                break;
            }
            if n >= MAX_ENTRIES {
                return Err(ClrError::Corrupt {
                    what: what("type entries"),
                    addr: types_at,
                    detail: format!("more than {MAX_ENTRIES} entries without the null end"),
                });
            }
            let fname = target
                .read_u64(e + 8)
                .map_err(|_| read_err(what("type entry"), e + 8))?;
            let off = target
                .read_u32(e + 16)
                .map_err(|_| read_err(what("type entry"), e + 16))?;
            fields.insert((cstr(tname, "type")?, cstr(fname, "field")?), off as u64);
            n += 1;
        }
        let mut globals = BTreeMap::new();
        let mut g = 0;
        loop {
            let e = globals_at + 16 * g as u64;
            let name = target
                .read_u64(e)
                .map_err(|_| read_err(what("global entry"), e))?;
            if name == 0 {
                break;
            }
            if g >= MAX_ENTRIES {
                return Err(ClrError::Corrupt {
                    what: what("globals"),
                    addr: globals_at,
                    detail: format!("more than {MAX_ENTRIES} entries without the null end"),
                });
            }
            let a = target
                .read_u64(e + 8)
                .map_err(|_| read_err(what("global entry"), e + 8))?;
            globals.insert(cstr(name, "global")?, a);
            g += 1;
        }
        let mut rt = NativeAot {
            module_path: m.path.clone(),
            module_name: m.name().to_owned(),
            base: m.base,
            family,
            version: None,
            version_source: AotVersionSource::HeaderVersion,
            layout: AotLayoutSource::DebugHeader {
                address: addr,
                major,
                minor,
                type_entries: n,
                globals: g,
            },
            fields,
            globals,
            from_descriptor: false,
            gc_identifiers: None,
            gc_contract: None,
        };
        // A crashed app's buffer names the exact version; it must agree with the family.
        if let Ok(Some(ci)) = rt.crash_info(target) {
            if let Some(v) = ci.json["runtime_version"].as_str() {
                if v.split('.').next() == Some(&family.to_string()) {
                    rt.version = Some(v.to_owned());
                    rt.version_source = AotVersionSource::CrashInfo;
                }
            }
        }
        // Else the runtime's own version string, where the symbol file names its function.
        if rt.version.is_none() {
            if let Ok(v) = rt.version_from_symbol_file(target) {
                rt.version = Some(v);
                rt.version_source = AotVersionSource::SymbolFile;
            }
        }
        Ok(rt)
    }

    /// The runtime's version as its `RhGetRuntimeVersion(int* length)` returns it
    /// (nativeaot/Runtime/RuntimeInstance.cpp: the build's version literal, the one the crash
    /// info's `runtime_version` is written from), the function located by the executable's
    /// symbol file. Nothing the runtime publishes (the debug header, its globals) points at
    /// the string, and a stripped executable does not name the function: without the symbol
    /// file, the error says so. The function's code must be the shape the 8, 10 and 11
    /// runtimes compile it to ([`RH_GET_RUNTIME_VERSION_CODE`]), the string as long as the
    /// length it stores, a version of the debug header's family; anything else is refused.
    pub fn version_from_symbol_file<T: Target + ?Sized>(&self, target: &T) -> Result<String> {
        let what = RH_GET_RUNTIME_VERSION;
        let not_found = |detail: String| ClrError::NotFound {
            what: what.into(),
            detail,
            addr: None,
        };
        let f = self
            .symbol_file(target)
            .map_err(|(reason, _)| not_found(reason))?;
        let (start, size, _) = f
            .functions
            .iter()
            .find(|x| x.2 == what)
            .ok_or_else(|| not_found(format!("{} does not name it", f.path.display())))?;
        let corrupt = |addr: u64, detail: String| ClrError::Corrupt {
            what: format!("{what} (named by the symbol file)"),
            addr,
            detail,
        };
        let mut code = [0u8; RH_GET_RUNTIME_VERSION_CODE.len()];
        if *size < code.len() as u64 {
            return Err(corrupt(*start, format!("the function is {size} bytes")));
        }
        target
            .read_exact(*start, &mut code)
            .map_err(|_| read_err(format!("{what}'s code"), *start))?;
        let shaped = code
            .iter()
            .zip(RH_GET_RUNTIME_VERSION_CODE)
            .all(|(b, want)| want.is_none_or(|w| *b == w));
        if !shaped {
            return Err(corrupt(
                *start,
                format!("its code is not the shape this reader knows: {code:02x?}"),
            ));
        }
        let len = u32::from_le_bytes([code[6], code[7], code[8], code[9]]) as u64;
        let rel = i32::from_le_bytes([code[13], code[14], code[15], code[16]]) as i64;
        let at = start.wrapping_add(17).wrapping_add_signed(rel);
        if len == 0 || len > 64 {
            return Err(corrupt(*start, format!("it states a length of {len}")));
        }
        let mut text = vec![0u8; len as usize + 1];
        target
            .read_exact(at, &mut text)
            .map_err(|_| read_err(format!("the version string {what} returns"), at))?;
        let ok = text[len as usize] == 0
            && text[..len as usize]
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'+'));
        let v = String::from_utf8_lossy(&text[..len as usize]).into_owned();
        if !ok || v.split('.').next() != Some(&self.family.to_string()) {
            return Err(corrupt(
                at,
                format!(
                    "the string it returns ({v:?}) is not a .NET {} version of {len} characters",
                    self.family
                ),
            ));
        }
        Ok(v)
    }

    /// What `info` and `eeversion` say of it.
    pub fn summary(&self) -> AotSummary {
        AotSummary {
            executable: self.module_path.clone(),
            base: self.base,
            family: self.family,
            version: self.version.clone(),
            version_source: self.version_source,
            layout: self.layout.clone(),
        }
    }

    /// The runtime named for people: "NativeAOT .NET 10.0.12", "NativeAOT .NET 8".
    pub fn display_name(&self) -> String {
        match &self.version {
            Some(v) => format!("NativeAOT .NET {v}"),
            None => format!(
                "NativeAOT .NET {} (patch not stated in the dump)",
                self.family
            ),
        }
    }

    /// The version as far as it is known: "10.0.12", or the family "10".
    pub fn version_text(&self) -> String {
        self.version
            .clone()
            .unwrap_or_else(|| self.family.to_string())
    }

    /// A field's offset, or the error naming it and the layout that lacks it.
    pub fn field(&self, f: &FieldName) -> Result<u64> {
        let found = if self.from_descriptor {
            self.fields
                .get(&(f.descriptor.0.to_owned(), f.descriptor.1.to_owned()))
                .copied()
        } else {
            f.header
                .iter()
                .find_map(|(t, n)| self.fields.get(&((*t).to_owned(), (*n).to_owned())))
                .copied()
        };
        found.ok_or_else(|| ClrError::NotFound {
            what: format!("NativeAOT field {}", f.what),
            detail: format!("not in the {}", self.layout),
            addr: None,
        })
    }

    /// A field the header does not list but places `before` bytes ahead of `m_pNext`.
    fn field_before_next(&self, f: &FieldName, before: u64) -> Result<u64> {
        if self.from_descriptor {
            return self.field(f);
        }
        Ok(self.field(&fields::THREAD_NEXT)? - before)
    }

    fn global(&self, name: &str) -> Result<u64> {
        self.globals
            .get(name)
            .copied()
            .filter(|&a| a != 0)
            .ok_or_else(|| ClrError::NotFound {
                what: format!("NativeAOT global {name}"),
                detail: format!("not in the {}", self.layout),
                addr: None,
            })
    }

    /// The ThreadStore's address.
    pub fn thread_store<M: Memory + ?Sized>(&self, mem: &M) -> Result<u64> {
        if self.from_descriptor {
            // The ThreadStore global is the address of the `ThreadStore*` variable.
            let var = self.global("ThreadStore")?;
            return mem
                .read_u64(var)
                .map_err(|_| read_err("the ThreadStore pointer", var));
        }
        // The header's g_pTheRuntimeInstance is the address of the RuntimeInstance itself.
        let inst = self.global("g_pTheRuntimeInstance")?;
        let at = inst + self.field(&fields::THREAD_STORE)?;
        mem.read_u64(at)
            .map_err(|_| read_err("RuntimeInstance.m_pThreadStore", at))
    }

    /// The ThreadStore's threads in list order. Each thread's OS id is checked against the
    /// dump's threads ([`AotThread::in_dump`]); a list longer than 65,536 or looping is
    /// corrupt.
    pub fn threads<T: Target + ?Sized>(&self, target: &T) -> Result<Vec<AotThread>> {
        let store = self.thread_store(target)?;
        let next_off = self.field(&fields::THREAD_NEXT)?;
        let id_off = self.field(&fields::THREAD_OS_ID)?;
        let ex_off = self.field(&fields::THREAD_EXINFO)?;
        let prev_off = self.field(&fields::EXINFO_PREV)?;
        let exc_off = self.field(&fields::EXINFO_EXCEPTION)?;
        let state_off = self.field_before_next(&fields::THREAD_STATE, HEADER_STATE_BEFORE_NEXT)?;
        let frame_off = self.field_before_next(&fields::THREAD_FRAME, HEADER_FRAME_BEFORE_NEXT)?;
        let list = store + self.field(&fields::THREAD_LIST)?;
        let mut t = target
            .read_u64(list)
            .map_err(|_| read_err("ThreadStore.m_ThreadList", list))?;
        let os_ids: std::collections::HashSet<u64> =
            target.threads().iter().map(|t| t.id as u64).collect();
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        while t != 0 {
            if !seen.insert(t) || out.len() >= 1 << 16 {
                return Err(ClrError::Corrupt {
                    what: "the NativeAOT thread list".into(),
                    addr: list,
                    detail: format!("loops or exceeds 65536 threads (at thread {t:#x})"),
                });
            }
            let os_id = target
                .read_u64(t + id_off)
                .map_err(|_| read_err("Thread.m_threadId", t + id_off))?;
            let state = target
                .read_u32(t + state_off)
                .map_err(|_| read_err("Thread.m_ThreadStateFlags", t + state_off))?;
            let transition_frame = target
                .read_u64(t + frame_off)
                .map_err(|_| read_err("Thread.m_pTransitionFrame", t + frame_off))?;
            let mut exceptions = Vec::new();
            let mut x = target
                .read_u64(t + ex_off)
                .map_err(|_| read_err("Thread.m_pExInfoStackHead", t + ex_off))?;
            while x != 0 && exceptions.len() < 1024 {
                let o = target
                    .read_u64(x + exc_off)
                    .map_err(|_| read_err("ExInfo.m_exception", x + exc_off))?;
                exceptions.push(o);
                x = target
                    .read_u64(x + prev_off)
                    .map_err(|_| read_err("ExInfo.m_pPrevExInfo", x + prev_off))?;
            }
            out.push(AotThread {
                address: t,
                os_id,
                state,
                state_names: THREAD_STATE_FLAGS
                    .iter()
                    .filter(|(b, _)| state & b != 0)
                    .map(|&(_, n)| n)
                    .collect(),
                transition_frame,
                exceptions,
                in_dump: os_ids.contains(&os_id),
            });
            t = target
                .read_u64(t + next_off)
                .map_err(|_| read_err("Thread.m_pNext", t + next_off))?;
        }
        Ok(out)
    }

    /// The crash info buffer's JSON: `Ok(None)` when the buffer is empty (no crash). Read from
    /// the debug header's `g_CrashInfoBuffer` (8, 9, 10), or, where the layout names no buffer
    /// (.NET 11's descriptor), from the exception record createdump saves in the dump
    /// ([`special_diag_info_crash_buffer`]).
    pub fn crash_info<M: Memory + ?Sized>(&self, mem: &M) -> Result<Option<CrashInfo>> {
        if self.from_descriptor {
            let Some((at, size)) = special_diag_info_crash_buffer(mem)? else {
                return Ok(None);
            };
            let mut buf = vec![0u8; size.min(MAX_CRASH_INFO as u64) as usize];
            mem.read_exact(at, &mut buf)
                .map_err(|_| read_err("the crash info buffer", at))?;
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            let text = String::from_utf8_lossy(&buf[..end]).into_owned();
            return Self::parse_crash_info(at, &text);
        }
        let at = self.global("g_CrashInfoBuffer")?;
        let text = mem
            .read_cstr(at, MAX_CRASH_INFO)
            .map_err(|_| read_err("g_CrashInfoBuffer", at))?;
        Self::parse_crash_info(at, &text)
    }

    fn parse_crash_info(at: u64, text: &str) -> Result<Option<CrashInfo>> {
        if text.is_empty() {
            return Ok(None);
        }
        let json = serde_json::from_str(text).map_err(|e| ClrError::Corrupt {
            what: "the crash info buffer".into(),
            addr: at,
            detail: format!(
                "not JSON ({e}): {:?}",
                text.chars().take(80).collect::<String>()
            ),
        })?;
        Ok(Some(CrashInfo { address: at, json }))
    }
}

/// Where createdump keeps its "special diagnostic info" in ELF dumps (64-bit Linux):
/// `{char Signature[16] = "DIAGINFOHEADER"; int Version; u64 ExceptionRecordAddress}`
/// (dotnet/runtime `src/coreclr/debug/createdump/specialdiaginfo.h`; dotnet/diagnostics
/// `SpecialDiagInfo.cs`, what SOS `crashinfo` reads on .NET 11 NativeAOT dumps).
pub const SPECIAL_DIAG_INFO_ADDRESS: u64 = 0x0000_7fff_fff1_0000;
const SPECIAL_DIAG_INFO_SIGNATURE: &[u8] = b"DIAGINFOHEADER";
/// The NativeAOT fail-fast record: `STATUS_STACK_BUFFER_OVERRUN` with subcode
/// `FAST_FAIL_EXCEPTION_DOTNET_AOT` (0x48) in `ExceptionInformation[0]`, the HRESULT in [1],
/// the crash info buffer's address and size in [2] and [3] (NativeAOT's
/// `RaiseFailFastException`; SOS `CrashInfoService`).
const STATUS_STACK_BUFFER_OVERRUN: u32 = 0xC000_0409;
const FAST_FAIL_EXCEPTION_DOTNET_AOT: u64 = 0x48;

/// The crash info buffer (address, size) named by the NativeAOT fail-fast exception record
/// createdump saved: `Ok(None)` when the dump holds the header but no such record (no crash);
/// an error when it holds no header (not written by createdump: whether the app crashed is not
/// known from it).
pub fn special_diag_info_crash_buffer<M: Memory + ?Sized>(mem: &M) -> Result<Option<(u64, u64)>> {
    let at = SPECIAL_DIAG_INFO_ADDRESS;
    let mut h = [0u8; 32];
    let header = mem
        .read_exact(at, &mut h)
        .ok()
        .filter(|_| h.starts_with(SPECIAL_DIAG_INFO_SIGNATURE));
    if header.is_none() {
        return Err(ClrError::NotFound {
            what: "the NativeAOT crash info".into(),
            detail: format!(
                "the dump has no createdump diagnostic header at {at:#x} (\"DIAGINFOHEADER\"), \
                 which names the crash info buffer on .NET 11"
            ),
            addr: Some(at),
        });
    }
    let version = i32::from_le_bytes(h[16..20].try_into().unwrap_or_default());
    let record = u64::from_le_bytes(h[24..32].try_into().unwrap_or_default());
    if version < 1 || record == 0 {
        return Ok(None);
    }
    // EXCEPTION_RECORD64: u32 code, u32 flags, u64 record, u64 address, u32 count, u32 pad,
    // u64 information[15].
    let mut r = [0u8; 152];
    mem.read_exact(record, &mut r)
        .map_err(|_| read_err("the diagnostic header's exception record", record))?;
    let code = u32::from_le_bytes(r[0..4].try_into().unwrap_or_default());
    let count = u32::from_le_bytes(r[24..28].try_into().unwrap_or_default());
    let info =
        |i: usize| u64::from_le_bytes(r[32 + 8 * i..40 + 8 * i].try_into().unwrap_or_default());
    if code != STATUS_STACK_BUFFER_OVERRUN || count < 4 || info(0) != FAST_FAIL_EXCEPTION_DOTNET_AOT
    {
        return Ok(None);
    }
    Ok(Some((info(2), info(3))))
}

// ------------------------------------------------------------------------------ the GC heap
//
// Walked from the debug header's `g_gcDacGlobals` (.NET 8, 10): the GC is CoreCLR's (regions,
// workstation), described by its `GcDacVars` and the header's `dac_generation` /
// `dac_heap_segment` entries (docs/nativeaot-layout.md, sections 7 and 12).

/// One type's total in the census.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AotTypeTotal {
    /// The MethodTable.
    #[serde(serialize_with = "dumpreader::json::hex")]
    pub mt: u64,
    /// How many objects.
    pub count: u64,
    /// Their total size in bytes.
    pub total_size: u64,
    /// The type's name from the symbol file ([`AotCensus::names`]), when it names this
    /// MethodTable; without one, the crash info's name of it, when it names it.
    pub name: Option<String>,
}

/// Where a segment's walk stopped early.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AotWalkError {
    /// The segment (`dac_heap_segment`).
    #[serde(serialize_with = "dumpreader::json::hex")]
    pub segment: u64,
    /// The object where the walk stopped.
    #[serde(serialize_with = "dumpreader::json::hex")]
    pub address: u64,
    /// What was wrong.
    pub detail: String,
    /// Bytes of the segment left unwalked.
    pub skipped: u64,
}

/// The heap's census: every object of every generation's segments, by MethodTable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AotCensus {
    /// Per MethodTable, largest total size first (free objects apart).
    pub types: Vec<AotTypeTotal>,
    /// Objects counted (free ones excluded).
    pub total_objects: u64,
    /// Their bytes.
    pub total_size: u64,
    /// Free objects (`g_pFreeObjectEEType`).
    pub free_objects: u64,
    /// Their bytes.
    pub free_size: u64,
    /// Segments walked.
    pub segments: usize,
    /// Objects in read-only (frozen: ILC's preinitialized data) segments, counted in the totals.
    pub frozen_objects: u64,
    /// Where a segment's walk stopped early.
    pub errors: Vec<AotWalkError>,
    /// Where the types' names come from, or why there are none.
    pub names: AotTypeNames,
}

/// `heap_segment_flags_readonly` (gcinterface.h): a frozen segment.
const SEGMENT_READONLY: u64 = 1;
/// `HasComponentSize` in the MethodTable's flags: the low 16 bits are the component size.
const HAS_COMPONENT_SIZE: u32 = 0x8000_0000;
/// Segments per generation at most (a longer chain is corrupt).
const MAX_SEGMENTS: usize = 1 << 16;

/// Where the GC heap is and how its segments are laid out.
struct GcPlan {
    /// sizeof(generation) (the array's stride).
    gen_size: u64,
    /// Generations (5).
    gen_count: u64,
    /// The generations array.
    table: u64,
    /// The ephemeral segment.
    eph: u64,
    /// `alloc_allocated`: the ephemeral segment's end.
    alloc_allocated: u64,
    /// generation::start_segment.
    start_seg: u64,
    /// heap_segment::mem.
    seg_mem: u64,
    /// heap_segment::allocated.
    seg_allocated: u64,
    /// heap_segment::next.
    seg_next: u64,
    /// heap_segment::flags.
    seg_flags: u64,
    /// The smallest object.
    min_obj: u64,
    /// The free object's MethodTable.
    free_mt: u64,
}

impl NativeAot {
    /// The GC heap's census (.NET 8 and 10: the debug header's GC globals). Refused on .NET 11
    /// (its GC sub-descriptor is not read yet) and on a server GC (no generation table in
    /// `GcDacVars`: per-heap tables not read yet).
    pub fn heap_census<T: Target + ?Sized>(&self, target: &T) -> Result<AotCensus> {
        let GcPlan {
            gen_size,
            gen_count,
            table,
            eph,
            alloc_allocated,
            start_seg,
            seg_mem,
            seg_allocated,
            seg_next,
            seg_flags,
            min_obj,
            free_mt,
        } = self.gc_plan(target)?;
        let u64_at = |a: u64, what: &str| target.read_u64(a).map_err(|_| read_err(what, a));
        // The threads' allocation contexts: [alloc_ptr, alloc_limit) holds no objects.
        let contexts = self.alloc_contexts(target)?;

        let mut totals: HashMap<u64, (u64, u64)> = HashMap::new();
        let mut mts: HashMap<u64, (u32, u32)> = HashMap::new();
        let mut c = AotCensus {
            types: Vec::new(),
            total_objects: 0,
            total_size: 0,
            free_objects: 0,
            free_size: 0,
            segments: 0,
            frozen_objects: 0,
            errors: Vec::new(),
            names: AotTypeNames::Unnamed {
                reason: String::new(),
                looked_for: Vec::new(),
                by_crash_info: 0,
            },
        };
        for g in 0..gen_count {
            let at = table + g * gen_size + start_seg;
            let mut seg = u64_at(at, "dac_generation.start_segment")?;
            let mut n = 0;
            while seg != 0 {
                n += 1;
                if n > MAX_SEGMENTS {
                    return Err(ClrError::Corrupt {
                        what: format!("generation {g}'s segment list"),
                        addr: at,
                        detail: format!("more than {MAX_SEGMENTS} segments"),
                    });
                }
                c.segments += 1;
                let mem = u64_at(seg + seg_mem, "heap_segment.mem")?;
                let end = if seg == eph {
                    alloc_allocated
                } else {
                    u64_at(seg + seg_allocated, "heap_segment.allocated")?
                };
                let frozen = u64_at(seg + seg_flags, "heap_segment.flags")? & SEGMENT_READONLY != 0;
                let mut o = mem;
                while o < end {
                    if let Some(&limit) = contexts.get(&o) {
                        o = limit + min_obj;
                        continue;
                    }
                    let stop = |detail: String| AotWalkError {
                        segment: seg,
                        address: o,
                        detail,
                        skipped: end - o,
                    };
                    let Ok(word) = target.read_u64(o) else {
                        c.errors.push(stop("the object is not in the dump".into()));
                        break;
                    };
                    let mt = word & !self.mt_unmask();
                    let (flags, base) = match mts.get(&mt) {
                        Some(&v) => v,
                        None => match (target.read_u32(mt), target.read_u32(mt + 4)) {
                            (Ok(fl), Ok(b)) if b > 0 => {
                                mts.insert(mt, (fl, b));
                                (fl, b)
                            }
                            _ => {
                                c.errors.push(stop(format!(
                                    "MethodTable {mt:#x} is unreadable or has a base size of 0"
                                )));
                                break;
                            }
                        },
                    };
                    let mut size = base as u64;
                    if flags & HAS_COMPONENT_SIZE != 0 {
                        let Ok(len) = target.read_u32(o + 8) else {
                            c.errors
                                .push(stop("the array's length is not in the dump".into()));
                            break;
                        };
                        size += (flags & 0xffff) as u64 * len as u64;
                    }
                    size = (size + 7) & !7;
                    if o + size > end {
                        c.errors.push(stop(format!(
                            "object of {size} bytes runs past the segment's end {end:#x}"
                        )));
                        break;
                    }
                    if mt == free_mt {
                        c.free_objects += 1;
                        c.free_size += size;
                    } else {
                        let t = totals.entry(mt).or_default();
                        t.0 += 1;
                        t.1 += size;
                        c.total_objects += 1;
                        c.total_size += size;
                        if frozen {
                            c.frozen_objects += 1;
                        }
                    }
                    o += size;
                }
                seg = u64_at(seg + seg_next, "heap_segment.next")?;
            }
        }
        let symbols = self.symbol_file(target);
        let name_of = |mt: u64| {
            symbols
                .as_ref()
                .ok()
                .and_then(|s| s.names.get(&mt).cloned())
        };
        let mut types: Vec<AotTypeTotal> = totals
            .into_iter()
            .map(|(mt, (count, total_size))| AotTypeTotal {
                mt,
                count,
                total_size,
                name: name_of(mt),
            })
            .collect();
        c.names = match symbols {
            Ok(s) => AotTypeNames::Symbols {
                file: s.path.display().to_string(),
                method_tables: s.names.len(),
            },
            Err((reason, looked_for)) => {
                // Without symbols, the types the crash info names by an object of theirs.
                let named = self.crash_info_type_names(target);
                let mut by_crash_info = 0;
                for t in &mut types {
                    if let Some(n) = named.get(&t.mt) {
                        t.name = Some(n.clone());
                        by_crash_info += 1;
                    }
                }
                AotTypeNames::Unnamed {
                    reason,
                    looked_for,
                    by_crash_info,
                }
            }
        };
        types.sort_by(|a, b| b.total_size.cmp(&a.total_size).then(a.mt.cmp(&b.mt)));
        c.types = types;
        Ok(c)
    }

    /// The MethodTables the crash info names: each exception it records (the current one and
    /// its inner ones, recursively) gives its object's address and its type's name as the
    /// runtime wrote it; the object's MethodTable is read from the dump. A MethodTable given
    /// two different names is left out. Empty when the app did not crash or the buffer or an
    /// object is unreadable.
    pub fn crash_info_type_names<T: Target + ?Sized>(&self, target: &T) -> HashMap<u64, String> {
        fn collect(e: &serde_json::Value, out: &mut Vec<(u64, String)>, depth: usize) {
            if depth > 64 {
                return;
            }
            let addr = e["address"].as_str().and_then(|a| {
                u64::from_str_radix(a.trim_start_matches("0x").trim_start_matches("0X"), 16).ok()
            });
            if let (Some(a), Some(t)) = (addr, e["type"].as_str()) {
                if a != 0 && !t.is_empty() {
                    out.push((a, t.to_owned()));
                }
            }
            for i in e["inner"].as_array().into_iter().flatten() {
                collect(i, out, depth + 1);
            }
        }
        let mut found = Vec::new();
        if let Ok(Some(ci)) = self.crash_info(target) {
            collect(&ci.json["exception"], &mut found, 0);
        }
        let mut names: HashMap<u64, String> = HashMap::new();
        let mut conflicts = Vec::new();
        for (obj, ty) in found {
            let Ok(word) = target.read_u64(obj) else {
                continue;
            };
            let mt = word & !self.mt_unmask();
            match names.get(&mt) {
                Some(n) if *n != ty => conflicts.push(mt),
                _ => {
                    names.insert(mt, ty);
                }
            }
        }
        for mt in conflicts {
            names.remove(&mt);
        }
        names
    }

    /// A field of the layout by (type, field) as the header or the descriptor spells it.
    fn raw_field(&self, t: &str, n: &str) -> Result<u64> {
        self.fields
            .get(&(t.to_owned(), n.to_owned()))
            .copied()
            .ok_or_else(|| ClrError::NotFound {
                what: format!("NativeAOT field {t}.{n}"),
                detail: format!("not in the {}", self.layout),
                addr: None,
            })
    }

    /// Where the GC's heap is: from the debug header's `g_gcDacGlobals` (8, 10) or the 11
    /// descriptor's GC sub-descriptor.
    fn gc_plan<T: Target + ?Sized>(&self, target: &T) -> Result<GcPlan> {
        let u64_at = |a: u64, what: &str| target.read_u64(a).map_err(|_| read_err(what, a));
        let f = |t: &str, n: &str| self.raw_field(t, n);
        let plan = if self.from_descriptor {
            // The GC sub-descriptor (contract "GC" c1, as CoreCLR 11's): its globals are the
            // addresses of the GC's variables (GCHeapGenerationTable: the generations array
            // itself), its types the offsets (docs/nativeaot-layout.md section 3).
            let what = "the NativeAOT GC heap";
            match self.gc_contract.as_deref() {
                Some("\"c1\"") => {}
                other => {
                    return Err(ClrError::NotFound {
                        what: what.into(),
                        detail: format!(
                            "the GC sub-descriptor's GC contract is {}; this build reads \"c1\"",
                            other.unwrap_or("absent")
                        ),
                        addr: None,
                    })
                }
            }
            let ids = self.gc_identifiers.as_deref().unwrap_or("");
            if !ids.split(',').any(|w| w.trim() == "workstation") {
                return Err(ClrError::NotFound {
                    what: what.into(),
                    detail: format!(
                        "the GC says GCIdentifiers {ids:?}: only the workstation GC's heap is \
                         read (a server GC's per-heap tables are not read yet)"
                    ),
                    addr: None,
                });
            }
            let eph_var = self.global("GCHeapEphemeralHeapSegment")?;
            let aa_var = self.global("GCHeapAllocAllocated")?;
            let free_var = self.global("FreeObjectMethodTable")?;
            GcPlan {
                gen_size: f("Generation", "!")?,
                gen_count: self.constant("TotalGenerationCount")?,
                table: self.global("GCHeapGenerationTable")?,
                eph: u64_at(eph_var, "ephemeral_heap_segment")?,
                alloc_allocated: u64_at(aa_var, "alloc_allocated")?,
                start_seg: f("Generation", "StartSegment")?,
                seg_mem: f("HeapSegment", "Mem")?,
                seg_allocated: f("HeapSegment", "Allocated")?,
                seg_next: f("HeapSegment", "Next")?,
                seg_flags: f("HeapSegment", "Flags")?,
                // Three pointers: the object header, the MethodTable and one field (the
                // header versions' Globals.MinObjectSize, 24 on 8 and 10; CoreCLR 11's
                // descriptor reader takes the same).
                min_obj: 3 * 8,
                // The address of g_pFreeObjectEEType (observed: it holds the MethodTable of
                // flags 0x80020001, base size 24).
                free_mt: u64_at(free_var, "g_pFreeObjectEEType")?,
            }
        } else {
            let vars = self.global("g_gcDacGlobals")?;
            let major = target
                .read_u8(vars)
                .map_err(|_| read_err("GcDacVars.major_version_number", vars))?;
            if major != 2 {
                return Err(ClrError::Corrupt {
                    what: "GcDacVars".into(),
                    addr: vars,
                    detail: format!(
                        "major version {major}; this reader knows 2 (8.0.31: 2.1, 10.0.12: 2.4)"
                    ),
                });
            }
            let var = |n: &str| {
                let at = vars + f("GcDacVars", n)?;
                u64_at(at, &format!("GcDacVars.{n}"))
            };
            let table = var("generation_table")?;
            if table == 0 {
                return Err(ClrError::NotFound {
                    what: "the NativeAOT GC's generation table".into(),
                    detail:
                        "GcDacVars has none: a server GC, whose per-heap tables are not read yet"
                            .into(),
                    addr: Some(vars),
                });
            }
            let eph_var = var("ephemeral_heap_segment")?;
            let aa_var = var("alloc_allocated")?;
            GcPlan {
                gen_size: var("generation_size")?,
                gen_count: var("total_generation_count")?,
                table,
                eph: u64_at(eph_var, "ephemeral_heap_segment")?,
                alloc_allocated: u64_at(aa_var, "alloc_allocated")?,
                start_seg: f("dac_generation", "start_segment")?,
                seg_mem: f("dac_heap_segment", "mem")?,
                seg_allocated: f("dac_heap_segment", "allocated")?,
                seg_next: f("dac_heap_segment", "next")?,
                seg_flags: f("dac_heap_segment", "flags")?,
                min_obj: f("Globals", "MinObjectSize")?,
                free_mt: self.global("g_pFreeObjectEEType")?,
            }
        };
        if !(1..=8).contains(&plan.gen_count) || !(1..=4096).contains(&plan.gen_size) {
            return Err(ClrError::Corrupt {
                what: "the NativeAOT GC's generation table".into(),
                addr: plan.table,
                detail: format!("{} generations of {} bytes", plan.gen_count, plan.gen_size),
            });
        }
        Ok(plan)
    }

    /// A constant global of the descriptor (0 allowed, unlike [`NativeAot::global`]).
    fn constant(&self, name: &str) -> Result<u64> {
        self.globals
            .get(name)
            .copied()
            .ok_or_else(|| ClrError::NotFound {
                what: format!("NativeAOT global {name}"),
                detail: format!("not in the {}", self.layout),
                addr: None,
            })
    }

    /// The low bits of an object's first word that are not the MethodTable's (7: the 11
    /// descriptor's `ObjectToMethodTableUnmask`, the same on 8 and 10).
    fn mt_unmask(&self) -> u64 {
        7
    }

    /// Every thread's allocation context, `alloc_ptr` → `alloc_limit` (empty ones left out).
    fn alloc_contexts<T: Target + ?Sized>(&self, target: &T) -> Result<BTreeMap<u64, u64>> {
        if self.from_descriptor {
            // 11: Thread.AllocContext + EEAllocContext.GCAllocationContext, then
            // GCAllocContext.Pointer / Limit.
            let ctx = self.raw_field("Thread", "AllocContext")?
                + self.raw_field("EEAllocContext", "GCAllocationContext")?;
            let (ptr_off, limit_off) = (
                self.raw_field("GCAllocContext", "Pointer")?,
                self.raw_field("GCAllocContext", "Limit")?,
            );
            return self.contexts_at(target, ctx, ptr_off, limit_off);
        }
        // 10: RuntimeThreadLocals.m_eeAllocContext + ee_alloc_context.m_rgbAllocContextBuffer;
        // 8: ThreadBuffer.m_rgbAllocContextBuffer.
        let ctx_off = [
            ("RuntimeThreadLocals", "m_eeAllocContext"),
            ("ThreadBuffer", "m_rgbAllocContextBuffer"),
        ]
        .iter()
        .find_map(|(t, n)| self.fields.get(&((*t).to_owned(), (*n).to_owned())))
        .copied()
        .ok_or_else(|| ClrError::NotFound {
            what: "NativeAOT field Thread.m_eeAllocContext".into(),
            detail: format!("not in the {}", self.layout),
            addr: None,
        })?;
        let inner = self
            .fields
            .get(&(
                "ee_alloc_context".to_owned(),
                "m_rgbAllocContextBuffer".to_owned(),
            ))
            .copied()
            .unwrap_or(0);
        let ptr_off = self
            .fields
            .get(&("gc_alloc_context".to_owned(), "alloc_ptr".to_owned()))
            .copied()
            .unwrap_or(0);
        let limit_off = self
            .fields
            .get(&("gc_alloc_context".to_owned(), "alloc_limit".to_owned()))
            .copied()
            .ok_or_else(|| ClrError::NotFound {
                what: "NativeAOT field gc_alloc_context.alloc_limit".into(),
                detail: format!("not in the {}", self.layout),
                addr: None,
            })?;
        self.contexts_at(target, ctx_off + inner, ptr_off, limit_off)
    }

    /// Each thread's allocation context at `ctx` in the thread, `alloc_ptr` → `alloc_limit`.
    fn contexts_at<T: Target + ?Sized>(
        &self,
        target: &T,
        ctx: u64,
        ptr_off: u64,
        limit_off: u64,
    ) -> Result<BTreeMap<u64, u64>> {
        let mut out = BTreeMap::new();
        for t in self.threads(target)? {
            let a = t.address + ctx;
            let p = target
                .read_u64(a + ptr_off)
                .map_err(|_| read_err("gc_alloc_context.alloc_ptr", a + ptr_off))?;
            let l = target
                .read_u64(a + limit_off)
                .map_err(|_| read_err("gc_alloc_context.alloc_limit", a + limit_off))?;
            if p != 0 && l >= p {
                out.insert(p, l);
            }
        }
        Ok(out)
    }
}

// ------------------------------------------------------------------------------ type names
//
// A NativeAOT MethodTable holds no name. ILC names each one in the executable's symbol table
// (`_ZTV<length><mangled type>`, docs/nativeaot-layout.md section 6), which PublishAot on
// Linux strips into `<app>.dbg` beside the executable (`StripSymbols`; the executable keeps a
// `.gnu_debuglink` to it). The file is found as gdb finds one: by the debuglink's name (and
// `<app>.dbg`, `<app>.debug`) in the image path's folders and the executable's recorded folder,
// and `.build-id/xx/yyyy.debug` under each; it is taken only when its build id equals the
// executable's in the dump.

/// The prefix of ILC's MethodTable symbols.
const MT_SYMBOL_PREFIX: &str = "_ZTV";

/// The most bytes a symbol file may have (a larger one is not read).
const MAX_SYMBOL_FILE: u64 = 1 << 31;

/// Where the census's type names come from, or why there are none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AotTypeNames {
    /// The MethodTable symbols of the executable's symbol file (its build id checked). The
    /// names are ILC's mangled names less `_ZTV<length>`: `<assembly>_<Namespace_Type>` with
    /// every character that is not a letter or digit spelled `_` (`heap_Heap_Payload`), value
    /// types as their boxed form (`Boxed_heap_Heap_GeoPoint`), arrays `__Array<...>`.
    Symbols {
        /// The symbol file.
        file: String,
        /// How many MethodTable symbols it holds.
        method_tables: usize,
    },
    /// No symbol file: the types are counted by MethodTable, only those the crash info names
    /// named ([`NativeAot::crash_info_type_names`]: its exceptions' types, as the runtime
    /// wrote them, `System.InvalidOperationException`).
    Unnamed {
        /// Why.
        reason: String,
        /// The files looked for, and what was wrong with each that exists.
        looked_for: Vec<String>,
        /// How many of the census's MethodTables the crash info named.
        by_crash_info: usize,
    },
}

/// The executable's symbol file, read: MethodTable address → ILC's name.
#[derive(Debug, Clone)]
pub struct AotSymbolFile {
    /// The file.
    pub path: std::path::PathBuf,
    /// MethodTable (run-time address) → name (`_ZTV<n>` removed).
    pub names: HashMap<u64, String>,
    /// The file's functions (managed methods under ILC's mangled names, the runtime's and the
    /// libraries' native code): (run-time start, size, name), sorted by start.
    pub functions: Vec<(u64, u64, String)>,
}

impl AotSymbolFile {
    /// The function holding `addr`: its name and `addr`'s offset in it (inside its size).
    pub fn function_at(&self, addr: u64) -> Option<(&str, u64)> {
        let i = self.functions.partition_point(|f| f.0 <= addr);
        // Functions may nest or repeat (aliases): look back a few for one that holds it.
        self.functions[..i]
            .iter()
            .rev()
            .take(16)
            .find(|f| addr - f.0 < f.1)
            .map(|f| (f.2.as_str(), addr - f.0))
    }
}

/// ILC's MethodTable symbol `_ZTV<n><name>` → `<name>` (exactly n bytes), else `None`.
pub fn method_table_symbol_name(symbol: &str) -> Option<&str> {
    let rest = symbol.strip_prefix(MT_SYMBOL_PREFIX)?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let n: usize = rest[..digits].parse().ok()?;
    let name = &rest[digits..];
    (name.len() == n && n > 0).then_some(name)
}

fn hex_bytes(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

impl NativeAot {
    /// The executable's symbol file with its MethodTable names, or why there is none (and the
    /// files looked for).
    pub fn symbol_file<T: Target + ?Sized>(
        &self,
        target: &T,
    ) -> std::result::Result<AotSymbolFile, (String, Vec<String>)> {
        let module = target
            .modules()
            .iter()
            .find(|m| m.base == self.base)
            .ok_or_else(|| (format!("no module at {:#x}", self.base), Vec::new()))?;
        let image = target.module_image(module).map_err(|e| {
            (
                format!("the executable's image is not readable: {e}"),
                Vec::new(),
            )
        })?;
        let dumpreader::ImageFormat::Elf(elf) = &image.format else {
            return Err((
                "the executable is not ELF: symbol files are read on Linux only".into(),
                Vec::new(),
            ));
        };
        let Some(build_id) = elf.build_id.clone() else {
            return Err((
                "the executable's build id is not in the dump: no symbol file can be matched"
                    .into(),
                Vec::new(),
            ));
        };
        let id = hex_bytes(&build_id);
        let mut dirs: Vec<std::path::PathBuf> = target.image_search_path();
        if target.use_recorded_paths() {
            if let Some(parent) = std::path::Path::new(&self.module_path).parent() {
                if !parent.as_os_str().is_empty() && !dirs.iter().any(|d| d == parent) {
                    dirs.push(parent.to_path_buf());
                }
            }
        }
        // The debuglink of the executable file, when one of the same build id is at hand.
        let mut names = vec![
            format!("{}.dbg", self.module_name),
            format!("{}.debug", self.module_name),
        ];
        for exe in dumpreader::image_candidates(&self.module_path, &dirs, false) {
            let Ok(bytes) = std::fs::read(&exe) else {
                continue;
            };
            if let Ok(f) = dumpreader::elf_file_symbols(&bytes, None, false) {
                if f.build_id.as_deref() == Some(&build_id[..]) {
                    if let Some(l) = f.debuglink {
                        if !names.contains(&l) {
                            names.insert(0, l);
                        }
                    }
                }
            }
        }
        let mut files = Vec::new();
        for d in &dirs {
            for n in &names {
                files.push(d.join(n));
            }
            if id.len() > 2 {
                files.push(
                    d.join(".build-id")
                        .join(&id[..2])
                        .join(format!("{}.debug", &id[2..])),
                );
            }
        }
        let mut looked = Vec::new();
        for f in files {
            let shown = f.display().to_string();
            let Ok(meta) = std::fs::metadata(&f) else {
                looked.push(shown);
                continue;
            };
            if meta.len() > MAX_SYMBOL_FILE {
                looked.push(format!("{shown} (refused: {} bytes)", meta.len()));
                continue;
            }
            let bytes = match std::fs::read(&f) {
                Ok(b) => b,
                Err(e) => {
                    looked.push(format!("{shown} (unreadable: {e})"));
                    continue;
                }
            };
            let syms = match dumpreader::elf_file_symbols(&bytes, Some(MT_SYMBOL_PREFIX), true) {
                Ok(s) => s,
                Err(e) => {
                    looked.push(format!("{shown} (refused: {e})"));
                    continue;
                }
            };
            match &syms.build_id {
                Some(b) if *b == build_id => {}
                other => {
                    looked.push(format!(
                        "{shown} (refused: build id {}, the executable's is {id})",
                        other.as_deref().map_or("absent".into(), hex_bytes)
                    ));
                    continue;
                }
            }
            let names = syms
                .symbols
                .iter()
                .filter_map(|(s, a)| {
                    method_table_symbol_name(s)
                        .map(|n| (a.wrapping_add(elf.load_bias), n.to_owned()))
                })
                .collect();
            let functions = syms
                .functions
                .into_iter()
                .map(|(n, a, size)| (a.wrapping_add(elf.load_bias), size, n))
                .collect();
            return Ok(AotSymbolFile {
                path: f,
                names,
                functions,
            });
        }
        Err((
            format!(
                "no symbol file of build id {id} was found (PublishAot strips the symbols \
                 into {}.dbg beside the executable: pass its folder with --image-path)",
                self.module_name
            ),
            looked,
        ))
    }
}
