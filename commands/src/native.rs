//! Native-level commands: they need only the dump (no CLR): `info`, `threads`, `modules`, and
//! memory display (`db`, `dw`, `dd`, `dq`, `dp`, `dc`, `da`, `du`).

use crate::addr::hex;
use crate::addr::{fmt_addr, parse_address, parse_count};
use crate::output::{CommandError, Output, Render};
use crate::session::Session;
use crate::spec::CommandSpec;
use crate::text::{render, table};
use clap::{Arg, ArgAction, ArgMatches, Command};
use clrdata::discovery::appshape;
use comfy_table::{CellAlignment, Table};
use dumpreader::{Arch, DumpFormat, Memory, ModuleIdentity, ModuleInfo, ModuleKind, Os, Target};
use serde::Serialize;

/// The native commands.
pub static SPECS: &[CommandSpec] = &[
    CommandSpec {
        name: "info",
        aliases: &["dumpinfo"],
        about: "what the dump is: format, OS, architecture, process id, exception",
        grammar: || Command::new("info"),
        run: info,
    },
    CommandSpec {
        name: "threads",
        aliases: &["osthreads"],
        about: "OS threads with their registers (managed threads: clrthreads)",
        grammar: || {
            Command::new("threads")
                .arg(Arg::new("id").help("show only this OS thread id (decimal, or hex with 0x)"))
                .arg(
                    Arg::new("registers")
                        .short('r')
                        .long("registers")
                        .action(ArgAction::SetTrue)
                        .help("print every general register of each thread"),
                )
        },
        run: threads,
    },
    CommandSpec {
        name: "modules",
        aliases: &["lm"],
        about: "loaded modules: base, size, identity, path",
        grammar: || {
            Command::new("modules")
                .arg(
                    Arg::new("all")
                        .short('a')
                        .long("all")
                        .action(ArgAction::SetTrue)
                        .help("include mapped files that are not images"),
                )
                .arg(
                    Arg::new("bundle")
                        .short('b')
                        .long("bundle")
                        .action(ArgAction::SetTrue)
                        .help("list every file of a single-file app's bundle, mapped or not"),
                )
        },
        run: modules,
    },
    CommandSpec {
        name: "db",
        aliases: &["memory", "m"],
        about: MEMORY_FORMATS[0].about,
        grammar: || memory_grammar("db"),
        run: |s, m| display_memory(s, m, "db"),
    },
    CommandSpec {
        name: "dw",
        aliases: &[],
        about: MEMORY_FORMATS[1].about,
        grammar: || memory_grammar("dw"),
        run: |s, m| display_memory(s, m, "dw"),
    },
    CommandSpec {
        name: "dd",
        aliases: &[],
        about: MEMORY_FORMATS[2].about,
        grammar: || memory_grammar("dd"),
        run: |s, m| display_memory(s, m, "dd"),
    },
    CommandSpec {
        name: "dq",
        aliases: &[],
        about: MEMORY_FORMATS[3].about,
        grammar: || memory_grammar("dq"),
        run: |s, m| display_memory(s, m, "dq"),
    },
    CommandSpec {
        name: "dp",
        aliases: &[],
        about: MEMORY_FORMATS[4].about,
        grammar: || memory_grammar("dp"),
        run: |s, m| display_memory(s, m, "dp"),
    },
    CommandSpec {
        name: "dc",
        aliases: &[],
        about: MEMORY_FORMATS[5].about,
        grammar: || memory_grammar("dc"),
        run: |s, m| display_memory(s, m, "dc"),
    },
    CommandSpec {
        name: "da",
        aliases: &[],
        about: MEMORY_FORMATS[6].about,
        grammar: || memory_grammar("da"),
        run: |s, m| display_memory(s, m, "da"),
    },
    CommandSpec {
        name: "du",
        aliases: &[],
        about: MEMORY_FORMATS[7].about,
        grammar: || memory_grammar("du"),
        run: |s, m| display_memory(s, m, "du"),
    },
    CommandSpec {
        name: "sleep",
        aliases: &[],
        about: "wait N milliseconds (as WinDbg's .sleep; Ctrl-C ends it): for scripts that pace \
                themselves, and to check that Ctrl-C reaches a running command",
        grammar: || {
            Command::new("sleep").arg(
                Arg::new("ms")
                    .required(true)
                    .value_parser(clap::value_parser!(u64))
                    .help("milliseconds"),
            )
        },
        run: sleep,
    },
];

fn right(t: &mut Table, cols: &[usize]) {
    for &c in cols {
        if let Some(col) = t.column_mut(c) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
}

fn format_name(f: DumpFormat) -> &'static str {
    match f {
        DumpFormat::ElfCore => "elf-core",
        DumpFormat::Minidump => "minidump",
    }
}

fn os_name(o: Os) -> String {
    match o {
        Os::Linux => "linux".into(),
        Os::Windows => "windows".into(),
        Os::Other(n) => format!("other({n})"),
    }
}

fn arch_name(a: Arch) -> String {
    match a {
        Arch::X86_64 => "x86_64".into(),
        Arch::Other(n) => format!("other({n})"),
    }
}

// ---------------------------------------------------------------------------------------- info

#[derive(Serialize)]
pub struct InfoResult {
    pub path: String,
    /// How the file was read (e.g. decompressed into the cache), when not directly.
    pub source: Option<String>,
    pub format: &'static str,
    pub os: String,
    pub arch: String,
    pub pid: Option<u32>,
    pub process_name: Option<String>,
    pub command_line: Option<String>,
    pub threads: usize,
    pub main_thread: Option<u32>,
    pub crashing_thread: Option<u32>,
    pub modules: usize,
    pub memory_ranges: usize,
    pub memory_bytes: u64,
    pub memory_bytes_in_file: u64,
    pub exception: Option<ExceptionOut>,
    /// Who wrote the dump and what memory it holds.
    pub dump_kind: Option<appshape::DumpKindInfo>,
    /// How the app was published: single-file, framework-dependent, self-contained.
    pub app_shape: Option<appshape::AppShape>,
    /// Where the runtime's layout (its contract descriptor, or .NET 8's g_dacTable) was read:
    /// the dump, the build index, an image file, a symbol server. `null` when no runtime is
    /// read (`runtime_error` says why).
    pub runtime_layout: Option<clrdata::LayoutSource>,
    /// Why the runtime found is not read (with each source tried and what would serve).
    pub runtime_error: Option<clrdata::ClrError>,
    /// What the runtime is read without, when it is read degraded (a createdump dump of a
    /// single-file app made without the DAC lacks the AppDomain's page): what needs it is
    /// refused with this reason. `null` otherwise.
    pub runtime_degraded: Option<String>,
    /// The NativeAOT runtime, when the app is one (its layout's source, its version).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nativeaot: Option<clrdata::nativeaot::AotSummary>,
    pub warnings: Vec<String>,
}

/// The runtime's version: from the module's own bytes, else from the CLR layer's discovery.
fn runtime_version(s: &Session, rt: &clrdata::RuntimeInfo) -> Option<String> {
    if !rt.version.is_empty() {
        return Some(rt.version.clone());
    }
    s.clr()
        .ok()
        .map(|c| c.rt.info.version.clone())
        .filter(|v| !v.is_empty())
}

#[derive(Serialize, Clone, Debug)]
pub struct ExceptionOut {
    pub code: String,
    pub address: String,
    pub thread_id: u32,
    pub flags: u32,
    pub parameters: Vec<String>,
}

impl Render for InfoResult {
    fn render(&self) -> String {
        let mut t = String::new();
        let line = |t: &mut String, k: &str, v: String| t.push_str(&format!("{k:<16}{v}\n"));
        line(&mut t, "Dump:", self.path.clone());
        if let Some(src) = &self.source {
            line(&mut t, "Source:", src.clone());
        }
        line(&mut t, "Format:", self.format.to_string());
        line(&mut t, "OS / arch:", format!("{} / {}", self.os, self.arch));
        line(
            &mut t,
            "Process id:",
            self.pid.map_or("unknown".into(), |p| p.to_string()),
        );
        if let Some(name) = &self.process_name {
            line(&mut t, "Process name:", name.clone());
        }
        if let Some(cl) = &self.command_line {
            line(&mut t, "Command line:", cl.clone());
        }
        line(&mut t, "Threads:", self.threads.to_string());
        if let Some(m) = self.main_thread {
            line(&mut t, "Main thread:", m.to_string());
        }
        line(&mut t, "Modules:", self.modules.to_string());
        line(
            &mut t,
            "Memory:",
            format!(
                "{} ranges, {} bytes ({} held in the file, the rest reads as zeros)",
                self.memory_ranges, self.memory_bytes, self.memory_bytes_in_file
            ),
        );
        match &self.exception {
            Some(e) => line(
                &mut t,
                "Exception:",
                format!("code {} at {} on thread {}", e.code, e.address, e.thread_id),
            ),
            None => line(&mut t, "Exception:", "none recorded".into()),
        }
        if let Some(k) = &self.dump_kind {
            line(&mut t, "Dump kind:", k.description.clone());
        }
        if let Some(a) = &self.app_shape {
            line(&mut t, "App shape:", a.description.clone());
        }
        if let Some(l) = &self.runtime_layout {
            line(&mut t, "Layout:", l.to_string());
        }
        if let Some(a) = &self.nativeaot {
            line(&mut t, "Layout:", a.layout.to_string());
        }
        if let Some(e) = &self.runtime_error {
            line(&mut t, "Runtime:", format!("not read: {e}"));
        }
        if let Some(e) = &self.runtime_degraded {
            line(&mut t, "Runtime:", format!("read in part: {e}"));
        }
        for w in &self.warnings {
            line(&mut t, "Warning:", w.clone());
        }
        t
    }
}

fn info(s: &Session, _: &ArgMatches) -> Result<Output, CommandError> {
    let d = &*s.target;
    let i = d.info();
    let (mut n, mut bytes, mut filed) = (0usize, 0u64, 0u64);
    for r in d.memory_ranges() {
        n += 1;
        bytes = bytes.saturating_add(r.size);
        filed = filed.saturating_add(r.file_size);
    }
    let mut res = InfoResult {
        path: s.path.display().to_string(),
        source: d.source_note(),
        format: format_name(i.format),
        os: os_name(i.os),
        arch: arch_name(i.arch),
        pid: i.pid,
        process_name: i.process_name.clone(),
        command_line: i.command_line.clone(),
        threads: d.threads().len(),
        main_thread: i.main_thread,
        crashing_thread: i.crashing_thread,
        modules: d.modules().len(),
        memory_ranges: n,
        memory_bytes: bytes,
        memory_bytes_in_file: filed,
        exception: i.exception.as_ref().map(|e| ExceptionOut {
            code: format!("0x{:x}", e.code),
            address: hex(e.address),
            thread_id: e.thread_id,
            flags: e.flags,
            parameters: e.parameters.iter().map(|&p| hex(p)).collect(),
        }),
        dump_kind: None,
        app_shape: None,
        runtime_layout: None,
        runtime_error: None,
        runtime_degraded: None,
        nativeaot: None,
        warnings: i.warnings.iter().map(|w| w.to_string()).collect(),
    };
    let found = clrdata::find_runtime(d);
    let rt = found.as_ref().ok().cloned();
    res.dump_kind = appshape::dump_kind(d, rt.as_ref());
    // A NativeAOT app: its runtime is in the executable, described by its own export.
    if let Err(e @ clrdata::ClrError::NativeAot { .. }) = &found {
        match s.nativeaot() {
            Ok(Some(aot)) => {
                res.app_shape = Some(appshape::AppShape {
                    shape: "nativeaot",
                    description: format!(
                        "NativeAOT app {} with {} compiled in ({})",
                        aot.module_name,
                        aot.display_name(),
                        aot.layout
                    ),
                    host: Some(aot.module_path.clone()),
                    runtime_module: Some(aot.module_path.clone()),
                    runtime_version: Some(aot.version_text()),
                    runtime_dir: None,
                    bundle: None,
                });
                res.nativeaot = Some(aot.summary());
            }
            Ok(None) => res.runtime_error = Some(e.clone()),
            Err(why) => res.runtime_error = Some(why),
        }
        return Ok(Output::rendered("info", res));
    }
    // The version may need the CLR's discovery: asked for last, as it always was.
    let version = rt.as_ref().and_then(|r| runtime_version(s, r));
    res.app_shape = Some(appshape::app_shape(d, rt.as_ref(), version));
    // The runtime read (its layout's source), or why not: only where a runtime is found.
    let clr = rt.as_ref().map(|_| s.clr());
    res.runtime_layout = clr
        .as_ref()
        .and_then(|c| c.as_ref().ok())
        .map(|c| c.rt.layout_source.clone());
    res.runtime_degraded = clr
        .as_ref()
        .and_then(|c| c.as_ref().ok())
        .and_then(|c| c.rt.degraded());
    res.runtime_error = clr.and_then(Result::err);
    Ok(Output::rendered("info", res))
}

// ------------------------------------------------------------------------------------- threads

/// `threads`'s result.
#[derive(Serialize)]
pub struct ThreadsResult {
    pub threads: Vec<ThreadOut>,
    /// Whether the text shows every register (`-r`, or one thread asked for).
    #[serde(skip)]
    pub registers_shown: bool,
}

#[derive(Serialize)]
pub struct ThreadOut {
    pub index: usize,
    pub os_id: u32,
    pub rip: String,
    pub rsp: String,
    pub stack: Option<Range>,
    pub teb: Option<String>,
    pub name: Option<String>,
    pub signal: u32,
    pub registers: std::collections::BTreeMap<&'static str, String>,
    /// The register values, in [`REGS`] order (as `registers`, for the text).
    #[serde(skip)]
    pub values: Vec<u64>,
}

#[derive(Serialize)]
pub struct Range {
    pub start: String,
    pub end: String,
}

const REGS: &[&str] = &[
    "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12", "r13",
    "r14", "r15", "rip", "rflags", "cs", "ss", "ds", "es", "fs", "gs", "fs_base", "gs_base",
];

/// The index in [`REGS`] of `rip` and `rsp`.
const RIP: usize = 16;
const RSP: usize = 7;

fn parse_tid(text: &str) -> Result<u32, CommandError> {
    let v = if let Some(h) = text.strip_prefix("0x") {
        u32::from_str_radix(h, 16).ok()
    } else {
        text.parse::<u32>().ok()
    };
    v.ok_or_else(|| CommandError::bad_argument(format!("\'{text}\'"), "not a thread id"))
}

impl ThreadOut {
    fn of(index: usize, th: &dumpreader::ThreadInfo) -> ThreadOut {
        let c = &th.context;
        let values: Vec<u64> = REGS.iter().map(|&r| c.get(r).unwrap_or(0)).collect();
        ThreadOut {
            index,
            os_id: th.id,
            rip: hex(c.rip),
            rsp: hex(c.rsp),
            stack: th.stack.map(|(a, b)| Range {
                start: hex(a),
                end: hex(b),
            }),
            teb: th.teb.map(hex),
            name: th.name.clone(),
            signal: th.signal,
            registers: REGS
                .iter()
                .zip(&values)
                .map(|(&r, &v)| (r, hex(v)))
                .collect(),
            values,
        }
    }
}

impl Render for ThreadsResult {
    fn render(&self) -> String {
        if self.registers_shown {
            let mut t = String::new();
            for th in &self.threads {
                t.push_str(&format!(
                    "Thread {} (OS id {} = 0x{:x})",
                    th.index, th.os_id, th.os_id
                ));
                if let Some(n) = &th.name {
                    t.push_str(&format!(" \"{n}\""));
                }
                t.push('\n');
                for (i, (r, v)) in REGS.iter().zip(&th.values).enumerate() {
                    t.push_str(&format!("  {r:>7}={v:016x}"));
                    if i % 3 == 2 {
                        t.push('\n');
                    }
                }
                t.push('\n');
            }
            t
        } else {
            let mut t = table(&["#", "OS id", "rip", "rsp", "stack"]);
            for th in &self.threads {
                t.add_row(vec![
                    th.index.to_string(),
                    format!("{} (0x{:x})", th.os_id, th.os_id),
                    fmt_addr(th.values[RIP]),
                    fmt_addr(th.values[RSP]),
                    th.stack
                        .as_ref()
                        .map_or(String::new(), |r| format!("{}-{}", r.start, r.end)),
                ]);
            }
            right(&mut t, &[0, 1]);
            format!("{}{} threads\n", render(&t), self.threads.len())
        }
    }
}

fn threads(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let only = m
        .get_one::<String>("id")
        .map(|t| parse_tid(t))
        .transpose()?;
    let out: Vec<ThreadOut> = s
        .target
        .threads()
        .iter()
        .enumerate()
        .filter(|(_, th)| only.is_none_or(|id| id == th.id))
        .map(|(index, th)| ThreadOut::of(index, th))
        .collect();
    if let Some(id) = only {
        if out.is_empty() {
            return Err(CommandError::not_found(
                format!("the dump has no thread with OS id {id} (0x{id:x})"),
                "",
            ));
        }
    }
    let res = ThreadsResult {
        threads: out,
        registers_shown: m.get_flag("registers") || only.is_some(),
    };
    Ok(Output::rendered("threads", res))
}

// ------------------------------------------------------------------------------------- modules

#[derive(Serialize)]
pub struct ModulesResult {
    pub modules: Vec<ModuleOut>,
    /// Single-file hosts and their bundles.
    pub bundles: Vec<BundleListOut>,
    /// Whether every file of each bundle is listed (`--bundle`).
    #[serde(skip)]
    pub list_files: bool,
}

#[derive(Serialize)]
pub struct BundleListOut {
    pub host: String,
    pub host_base: String,
    pub header_offset: u64,
    pub version: Option<String>,
    pub bundle_id: Option<String>,
    pub manifest_source: String,
    pub manifest_error: Option<String>,
    /// Every file of the bundle (only with --bundle).
    pub files: Vec<BundleFileOut>,
    pub file_count: Option<usize>,
    pub compressed_count: Option<usize>,
    pub mapped_count: usize,
    /// How many of the bundled files createdump named (it renames the mapping of each managed
    /// image's header page to the DAC's name for it, when it ran with the DAC).
    pub named_by_createdump: usize,
}

#[derive(Serialize)]
pub struct BundleFileOut {
    pub relative_path: String,
    pub kind: &'static str,
    pub offset: u64,
    pub size: u64,
    pub compressed_size: u64,
    /// Where the file is mapped (its first byte), if anywhere.
    pub mapped_at: Vec<String>,
}

/// Where a bundled module lies in its host's bundle.
#[derive(Serialize)]
pub struct BundledOut {
    pub host: String,
    pub relative_path: String,
    pub offset: u64,
    pub size: u64,
    pub compressed: bool,
}

#[derive(Serialize)]
pub struct ModuleOut {
    pub base: String,
    pub end: String,
    pub size: u64,
    pub kind: &'static str,
    /// For PE images: "mapped" (sections at their RVAs, as loaded) or "flat" (the file as is).
    pub layout: Option<&'static str>,
    pub path: String,
    pub build_id: Option<String>,
    pub pe_timestamp: Option<u32>,
    pub pe_image_size: Option<u32>,
    pub debug_file: Option<String>,
    /// A file of a single-file bundle: where it lies in the host.
    pub bundle: Option<BundledOut>,
    /// Other places the same file is mapped as a whole (the .NET runtime on Linux maps each
    /// assembly twice: flat for its metadata and as a loaded image).
    pub also_mapped_at: Vec<AlsoMapped>,
    /// Bytes of the file's mappings that the dump lacks (gcore leaves out pages never
    /// written), and where they are read from.
    pub missing: Option<MissingOut>,
    /// The module as the dump reader lists it (for the text).
    #[serde(skip)]
    pub info: dumpreader::ModuleInfo,
    /// A mapping of a single-file host's bundled file that no manifest names.
    #[serde(skip)]
    pub unnamed_bundled: bool,
    /// A bundled file no manifest names, named by createdump (its path is the app's folder
    /// and that name).
    #[serde(skip)]
    pub named_by_createdump: bool,
    /// Where the bytes in `missing` come from (for the text).
    #[serde(skip)]
    pub missing_source: Option<dumpreader::FileSource>,
}

/// Where the bytes a dump lacks in a mapped file come from.
#[derive(Serialize)]
pub struct MissingOut {
    /// Bytes of all the file's mappings that the dump lacks.
    pub bytes: u64,
    /// "file" (read from `file`, accepted by `check`), "not_verified" (a file was found but
    /// nothing anchors its identity: not read) or "none" (`why`).
    pub source: &'static str,
    pub file: Option<String>,
    /// The check that accepted the file: "build id matches (...)", "PE identity matches
    /// (...)", "the runtime's records: ...".
    pub check: Option<String>,
    pub why: Option<String>,
}

impl MissingOut {
    fn of(f: &dumpreader::FileSource) -> MissingOut {
        let (source, file, check, why) = match &f.state {
            dumpreader::FileSourceState::Used { file, check } => (
                "file",
                Some(file.display().to_string()),
                Some(check.to_string()),
                None,
            ),
            dumpreader::FileSourceState::Unverified { candidates, why } => (
                "not_verified",
                candidates.first().map(|c| c.display().to_string()),
                None,
                Some(why.to_string()),
            ),
            dumpreader::FileSourceState::NotUsed { why } => {
                ("none", None, None, Some(why.to_string()))
            }
        };
        MissingOut {
            bytes: f.missing_bytes,
            source,
            file,
            check,
            why,
        }
    }
}

#[derive(Serialize)]
pub struct AlsoMapped {
    pub base: String,
    pub end: String,
    pub layout: Option<&'static str>,
}

fn pe_layout(t: &dyn Target, md: &ModuleInfo) -> Option<&'static str> {
    if md.kind != ModuleKind::Pe {
        return None;
    }
    match t.module_image(md).ok()?.format {
        dumpreader::ImageFormat::Pe(ref pe) => Some(match pe.layout {
            dumpreader::PeLayout::Mapped => "mapped",
            dumpreader::PeLayout::Flat => "flat",
        }),
        _ => None,
    }
}

impl Render for ModulesResult {
    fn render(&self) -> String {
        let mut t = table(&["base", "end", "kind", "identity", "path"]);
        for mo in &self.modules {
            let md = &mo.info;
            let mut path = mo.path.clone();
            if mo.bundle.is_none() && mo.unnamed_bundled {
                path.push_str(&format!(
                    "\n  a bundled file, from host file offset {:#x} (unnamed: no manifest)",
                    md.mappings.first().map_or(0, |x| x.file_offset)
                ));
            }
            if mo.bundle.is_none() && mo.named_by_createdump {
                path.push_str(&format!(
                    "\n  a bundled file, from host file offset {:#x} (no manifest: named by \
                     createdump)",
                    md.mappings.first().map_or(0, |x| x.file_offset)
                ));
            }
            if let Some(b) = &mo.bundle {
                let host = b.host.rsplit(['/', '\\']).next().unwrap_or(&b.host);
                path.push_str(&format!(
                    "\n  in the bundle of {host} at file offset {:#x}, {:#x} bytes",
                    b.offset, b.size
                ));
            }
            for a in &mo.also_mapped_at {
                path.push_str(&format!(
                    "\n  also mapped at {} ({})",
                    a.base,
                    a.layout.unwrap_or("?")
                ));
            }
            if let Some(f) = &mo.missing_source {
                path.push_str(&format!(
                    "\n  {:#x} bytes not in the dump: {}",
                    f.missing_bytes,
                    f.state.describe()
                ));
            }
            t.add_row(vec![
                fmt_addr(md.base),
                fmt_addr(md.end),
                mo.kind.to_string(),
                md.identity.as_ref().map_or("-".into(), |i| i.to_string()),
                path,
            ]);
        }
        let mut text = format!("{}{} modules\n", render(&t), self.modules.len());
        for b in &self.bundles {
            let host = b.host.rsplit(['/', '\\']).next().unwrap_or(&b.host);
            match (b.file_count, &b.manifest_error) {
                (Some(n), _) => text.push_str(&format!(
                "{host} is a .NET single-file host: bundle v{} of {n} files ({} compressed, {} \
                 mapped), manifest at file offset {:#x}, read from {}{}\n",
                b.version.as_deref().unwrap_or("?"),
                b.compressed_count.unwrap_or(0),
                b.mapped_count,
                b.header_offset,
                b.manifest_source,
                if self.list_files { "" } else { " (modules -b lists them)" }
            )),
                (None, Some(e)) => text.push_str(&format!(
                "{host} is a .NET single-file host (bundle manifest at file offset {:#x}), but \
                 the manifest could not be read: {e}{}\n",
                b.header_offset,
                match b.named_by_createdump {
                    0 => String::new(),
                    n => format!(
                        "; createdump named {n} of its files (the names the runtime's DAC gave it)"
                    ),
                }
            )),
                (None, None) => {}
            }
            if self.list_files && !b.files.is_empty() {
                let mut ft = table(&["offset", "size", "stored", "kind", "mapped at", "file"]);
                for f in &b.files {
                    ft.add_row(vec![
                        format!("{:#x}", f.offset),
                        format!("{:#x}", f.size),
                        if f.compressed_size != 0 {
                            format!("{:#x} compressed", f.compressed_size)
                        } else {
                            "as is".to_string()
                        },
                        f.kind.to_string(),
                        if f.mapped_at.is_empty() {
                            "-".to_string()
                        } else {
                            f.mapped_at.join(" ")
                        },
                        f.relative_path.clone(),
                    ]);
                }
                right(&mut ft, &[0, 1]);
                text.push_str(&render(&ft));
            }
        }
        text
    }
}

/// Whether `md` is a mapping of a single-file host's bundled file that no manifest names
/// (still shown, each its own file of the bundle).
fn unnamed_bundled(t: &dyn Target, md: &ModuleInfo) -> bool {
    t.bundles()
        .iter()
        .any(|hb| hb.manifest.is_err() && hb.host_path == md.path && hb.host_base != md.base)
}

/// The dump's modules grouped by file (`all`: with mapped files that are not images), in the
/// dump's order.
fn module_groups(t: &dyn Target, all: bool) -> Vec<Vec<&ModuleInfo>> {
    let mut groups: Vec<Vec<&ModuleInfo>> = Vec::new();
    for md in t.modules() {
        if !all && md.kind == ModuleKind::Other && !unnamed_bundled(t, md) {
            continue;
        }
        if unnamed_bundled(t, md) {
            // Each its own file of the bundle (which, no manifest tells).
            groups.push(vec![md]);
            continue;
        }
        match groups
            .iter_mut()
            .find(|g| g[0].path == md.path && g[0].kind == md.kind && !unnamed_bundled(t, g[0]))
        {
            Some(g) => g.push(md),
            None => groups.push(vec![md]),
        }
    }
    groups
}

/// The row of one file's mappings: the loaded (mapped-layout) image is the module, the other
/// mappings are listed under it.
fn module_row(t: &dyn Target, g: &[&ModuleInfo], sources: &[dumpreader::FileSource]) -> ModuleOut {
    let layouts: Vec<Option<&'static str>> = g.iter().map(|md| pe_layout(t, md)).collect();
    let primary = layouts
        .iter()
        .position(|l| *l == Some("mapped"))
        .unwrap_or(0);
    let md = g[primary];
    let missing = sources
        .iter()
        .find(|f| f.recorded == md.path && f.missing_bytes > 0);
    let (build_id, ts, sz) = match &md.identity {
        Some(ModuleIdentity::BuildId(b)) => (
            Some(b.iter().map(|x| format!("{x:02x}")).collect::<String>()),
            None,
            None,
        ),
        Some(ModuleIdentity::Pe {
            timestamp,
            size_of_image,
        }) => (None, Some(*timestamp), Some(*size_of_image)),
        None => (None, None, None),
    };
    let also = g
        .iter()
        .zip(&layouts)
        .enumerate()
        .filter(|(i, _)| *i != primary)
        .map(|(_, (o, l))| AlsoMapped {
            base: hex(o.base),
            end: hex(o.end),
            layout: *l,
        })
        .collect();
    ModuleOut {
        base: hex(md.base),
        end: hex(md.end),
        size: md.size(),
        kind: match md.kind {
            ModuleKind::Elf => "elf",
            ModuleKind::Pe => "pe",
            ModuleKind::Other => "other",
        },
        layout: layouts[primary],
        path: md.path.clone(),
        build_id,
        pe_timestamp: ts,
        pe_image_size: sz,
        debug_file: md.debug_file.clone(),
        bundle: t.bundles().iter().find_map(|hb| {
            let (_, e) = hb.placement_at(md.base)?;
            Some(BundledOut {
                host: hb.host_path.clone(),
                relative_path: e.relative_path.clone(),
                offset: e.offset,
                size: e.size,
                compressed: e.is_compressed(),
            })
        }),
        also_mapped_at: also,
        missing: missing.map(MissingOut::of),
        info: md.clone(),
        unnamed_bundled: unnamed_bundled(t, md),
        named_by_createdump: t
            .bundles()
            .iter()
            .any(|hb| hb.manifest.is_err() && hb.recorded_name_of(md).is_some()),
        missing_source: missing.cloned(),
    }
}

/// A single-file host's bundle (`list_files`: with every file of it).
fn bundle_out(hb: &dumpreader::HostBundle, list_files: bool) -> BundleListOut {
    let man = hb.manifest.as_ref().ok();
    let files = match man {
        Some(man) if list_files => man
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| BundleFileOut {
                relative_path: e.relative_path.clone(),
                kind: e.file_type.name(),
                offset: e.offset,
                size: e.size,
                compressed_size: e.compressed_size,
                mapped_at: hb
                    .placements
                    .iter()
                    .filter(|p| p.entry == i)
                    .map(|p| hex(p.base))
                    .collect(),
            })
            .collect(),
        _ => Vec::new(),
    };
    BundleListOut {
        host: hb.host_path.clone(),
        host_base: hex(hb.host_base),
        header_offset: hb.header_offset,
        version: man.map(|m| format!("{}.{}", m.major_version, m.minor_version)),
        bundle_id: man.map(|m| m.bundle_id.clone()),
        manifest_source: hb.manifest_source.clone(),
        manifest_error: hb.manifest.as_ref().err().map(|e| e.to_string()),
        files,
        file_count: man.map(|m| m.entries.len()),
        compressed_count: man.map(|m| m.entries.iter().filter(|e| e.is_compressed()).count()),
        mapped_count: hb.placements.len(),
        named_by_createdump: hb.recorded_names.len(),
    }
}

/// One row per file: where a file is mapped several times, the loaded (mapped-layout) image
/// is the module and the other mappings are listed under it.
fn modules(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let list_files = m.get_flag("bundle");
    let t: &dyn Target = &*s.target;
    let groups = module_groups(t, m.get_flag("all"));
    // The runtime's records settle the files of images whose headers the dump lacks.
    let _ = s.clr();
    let sources = t.file_sources();
    let mut modules: Vec<ModuleOut> = groups.iter().map(|g| module_row(t, g, &sources)).collect();
    modules.sort_by_key(|mo| mo.info.base);
    let res = ModulesResult {
        modules,
        bundles: t
            .bundles()
            .iter()
            .map(|hb| bundle_out(hb, list_files))
            .collect(),
        list_files,
    };
    Ok(Output::rendered("modules", res))
}

// -------------------------------------------------------------------------------------- memory

/// One memory display command, as SOS's `ReadMemoryCommand` (dotnet-dump's `db`, `dw`, `dd`,
/// `dq`, `dp`, `dc`, `da`, `du`) defines it: the unit, how many units by default, how many a
/// row shows and what follows them; or a zero-terminated string.
pub struct MemoryFormat {
    pub name: &'static str,
    pub about: &'static str,
    /// Bytes per unit (`dp`: the pointer's, 8 on the targets read).
    pub unit: usize,
    /// Units shown when no count is given.
    pub count: u64,
    /// Units per row (0: a zero-terminated string, `Text: '...'`).
    pub per_row: usize,
    /// What each row ends with: the units as characters.
    pub chars: MemoryChars,
}

/// The characters a memory row ends with.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum MemoryChars {
    None,
    /// Each byte as an ASCII character (`.` when not printable).
    Ascii,
    /// Each 16-bit unit as a character (`.` when not printable ASCII).
    Unicode,
}

/// The memory display commands (SOS's defaults: `DefaultOptions` of each `[Command]`).
pub static MEMORY_FORMATS: &[MemoryFormat] = &[
    MemoryFormat {
        name: "db",
        about: "display memory as bytes and ASCII",
        unit: 1,
        count: 128,
        per_row: 16,
        chars: MemoryChars::Ascii,
    },
    MemoryFormat {
        name: "dw",
        about: "display memory as 16-bit words",
        unit: 2,
        count: 128,
        per_row: 16,
        chars: MemoryChars::None,
    },
    MemoryFormat {
        name: "dd",
        about: "display memory as 32-bit words",
        unit: 4,
        count: 64,
        per_row: 8,
        chars: MemoryChars::None,
    },
    MemoryFormat {
        name: "dq",
        about: "display memory as 64-bit words",
        unit: 8,
        count: 32,
        per_row: 4,
        chars: MemoryChars::None,
    },
    MemoryFormat {
        name: "dp",
        about: "display memory as pointers",
        unit: 8,
        count: 32,
        per_row: 4,
        chars: MemoryChars::None,
    },
    MemoryFormat {
        name: "dc",
        about: "display memory as 16-bit characters (UTF-16 code units and the text)",
        unit: 2,
        count: 64,
        per_row: 8,
        chars: MemoryChars::Unicode,
    },
    MemoryFormat {
        name: "da",
        about: "display memory as a zero-terminated byte (ASCII) string",
        unit: 1,
        count: 0,
        per_row: 0,
        chars: MemoryChars::Ascii,
    },
    MemoryFormat {
        name: "du",
        about: "display memory as a zero-terminated 16-bit (UTF-16) string",
        unit: 2,
        count: 0,
        per_row: 0,
        chars: MemoryChars::Unicode,
    },
];

/// The format of the memory command `name` (one of [`MEMORY_FORMATS`]).
pub fn memory_format(name: &str) -> &'static MemoryFormat {
    MEMORY_FORMATS
        .iter()
        .find(|f| f.name == name)
        .unwrap_or(&MEMORY_FORMATS[0])
}

/// Most characters `da`/`du` read looking for the terminating zero, when no count is given.
const MAX_STRING_CHARS: u64 = 64 << 10;

fn memory_grammar(name: &'static str) -> Command {
    let f = memory_format(name);
    let default = if f.per_row == 0 {
        format!("up to the terminating zero, at most {MAX_STRING_CHARS} characters")
    } else {
        f.count.to_string()
    };
    Command::new(name)
        .arg(
            Arg::new("address")
                .required(true)
                .help("start address (hex; 0x and ` allowed)"),
        )
        .arg(Arg::new("length").help(format!(
            "how many units to show: decimal, 0x hex, or WinDbg's L<hex> (default {default})"
        )))
        .arg(
            Arg::new("count")
                .short('c')
                .long("count")
                .help("same as the length argument"),
        )
}

/// A memory display's result (`db`, `dw`, `dd`, `dq`, `dp`, `dc`).
#[derive(Serialize)]
pub struct MemoryResult {
    pub address: String,
    pub unit: usize,
    pub requested: u64,
    pub read: usize,
    pub values: Vec<String>,
    pub missing_from: Option<String>,
    /// The first address (as `address`, for the text).
    #[serde(skip)]
    pub start: u64,
    /// The bytes read, whole units only.
    #[serde(skip)]
    pub bytes: Vec<u8>,
    /// The format shown.
    #[serde(skip)]
    pub format: &'static MemoryFormat,
}

/// A character as SOS's `ReadChar` shows it: printable ASCII as itself, else `.`.
fn shown_char(v: u32) -> char {
    if (0x20..=0x7e).contains(&v) {
        char::from(v as u8)
    } else {
        '.'
    }
}

impl Render for MemoryResult {
    fn render(&self) -> String {
        let f = self.format;
        let (unit, per_row) = (f.unit, f.per_row.max(1));
        let total = self.requested.saturating_mul(unit as u64) as usize;
        let unit_at = |off: usize| -> Option<u64> {
            let c = self.bytes.get(off..off + unit)?;
            let mut v = [0u8; 8];
            v[..unit].copy_from_slice(c);
            Some(u64::from_le_bytes(v))
        };
        // SOS's rows: the address, each unit (`??` where the dump holds no memory, blanks past
        // the count), two blanks and the characters.
        let mut t = String::new();
        let mut off = 0usize;
        while off < total {
            t.push_str(&format!("{:016x}:", self.start.wrapping_add(off as u64)));
            for col in 0..per_row {
                let o = off + col * unit;
                t.push(' ');
                if o >= total {
                    t.push_str(&" ".repeat(unit * 2));
                } else if let Some(v) = unit_at(o) {
                    t.push_str(&format!("{v:0w$x}", w = unit * 2));
                } else {
                    t.push_str(&"?".repeat(unit * 2));
                }
            }
            if f.chars != MemoryChars::None {
                t.push_str("  ");
                let cw = if f.chars == MemoryChars::Unicode {
                    2
                } else {
                    1
                };
                for col in 0..per_row {
                    let o = off + col * unit;
                    if o >= total {
                        break;
                    }
                    let c = self.bytes.get(o..o + cw).map(|b| {
                        if cw == 2 {
                            u16::from_le_bytes([b[0], b[1]]) as u32
                        } else {
                            b[0] as u32
                        }
                    });
                    t.push(c.map_or('?', shown_char));
                }
            }
            t.push('\n');
            off += per_row * unit;
        }
        if self.missing_from.is_some() {
            let got = self.read;
            let mf = self.start.wrapping_add(got as u64);
            t.push_str(&format!(
                "{mf:016x} ?? the dump holds no memory from here ({got} of {total} bytes read)\n"
            ));
        }
        t
    }
}

/// A string display's result (`da`, `du`).
#[derive(Serialize)]
pub struct StringResult {
    pub address: String,
    /// Bytes per character: 1 (`da`), 2 (`du`).
    pub unit: usize,
    /// The characters before the terminating zero (or before the limit, or the memory's end),
    /// each shown as SOS does: printable ASCII as itself, else `.`.
    pub text: String,
    /// How many characters were read.
    pub length: u64,
    /// Whether the terminating zero was found.
    pub terminated: bool,
    /// The first address the dump does not hold, when the string ran into it.
    pub missing_from: Option<String>,
    /// Most characters read.
    pub limit: u64,
}

impl Render for StringResult {
    fn render(&self) -> String {
        let mut t = format!("Text: '{}'\n", self.text);
        if let Some(m) = &self.missing_from {
            t.push_str(&format!(
                "(the dump holds no memory from {m}: no terminating zero before it)\n"
            ));
        } else if !self.terminated {
            t.push_str(&format!(
                "(no terminating zero in the first {} characters)\n",
                self.limit
            ));
        }
        t
    }
}

/// Most bytes one display command will read (1 MiB).
const MAX_DISPLAY_BYTES: u64 = 1 << 20;

fn display_memory(s: &Session, m: &ArgMatches, name: &'static str) -> Result<Output, CommandError> {
    let f = memory_format(name);
    let addr = parse_address(
        m.get_one::<String>("address")
            .map(String::as_str)
            .unwrap_or(""),
    )?;
    let unit = f.unit;
    let given = m
        .get_one::<String>("count")
        .or(m.get_one::<String>("length"))
        .map(|c| parse_count(c))
        .transpose()?;
    if f.per_row == 0 {
        return Ok(Output::rendered(name, read_string(s, addr, f, given)?));
    }
    let units = given.unwrap_or(f.count);
    let bytes = units.saturating_mul(unit as u64);
    if bytes > MAX_DISPLAY_BYTES {
        return Err(CommandError::bad_argument(
            format!("{units} units of {unit} bytes"),
            format!("more than the {MAX_DISPLAY_BYTES} bytes one display shows"),
        ));
    }
    let mut buf = vec![0u8; bytes as usize];
    let got = s.target.read(addr, &mut buf);
    buf.truncate(got - got % unit);
    let values: Vec<String> = buf
        .chunks(unit)
        .map(|c| {
            let mut v = [0u8; 8];
            v[..unit].copy_from_slice(c);
            format!("0x{:0w$x}", u64::from_le_bytes(v), w = unit * 2)
        })
        .collect();
    let missing = (got < bytes as usize).then(|| addr.wrapping_add(got as u64));
    let res = MemoryResult {
        address: hex(addr),
        unit,
        requested: units,
        read: got,
        values,
        missing_from: missing.map(hex),
        start: addr,
        bytes: buf,
        format: f,
    };
    Ok(Output::rendered(name, res))
}

/// `da`/`du`: the characters from `addr` to the terminating zero (at most `limit`, default
/// [`MAX_STRING_CHARS`]), read in pieces so a string near the end of the memory held is read
/// to there.
fn read_string(
    s: &Session,
    addr: u64,
    f: &'static MemoryFormat,
    limit: Option<u64>,
) -> Result<StringResult, CommandError> {
    let unit = f.unit;
    let limit = limit.unwrap_or(MAX_STRING_CHARS);
    if limit.saturating_mul(unit as u64) > MAX_DISPLAY_BYTES {
        return Err(CommandError::bad_argument(
            format!("{limit} characters of {unit} bytes"),
            format!("more than the {MAX_DISPLAY_BYTES} bytes one display shows"),
        ));
    }
    let mut text = String::new();
    let (mut n, mut terminated, mut missing) = (0u64, false, None);
    let mut buf = [0u8; 512];
    'read: while n < limit {
        let at = addr.wrapping_add(n * unit as u64);
        let want = ((limit - n) as usize * unit).min(buf.len());
        let got = s.target.read(at, &mut buf[..want]);
        let whole = got - got % unit;
        for c in buf[..whole].chunks(unit) {
            let v = if unit == 2 {
                u16::from_le_bytes([c[0], c[1]]) as u32
            } else {
                c[0] as u32
            };
            if v == 0 {
                terminated = true;
                break 'read;
            }
            text.push(shown_char(v));
            n += 1;
        }
        if whole < want {
            missing = Some(hex(addr.wrapping_add(n * unit as u64)));
            break;
        }
    }
    Ok(StringResult {
        address: hex(addr),
        unit,
        text,
        length: n,
        terminated,
        missing_from: missing,
        limit,
    })
}

/// `sleep`'s result (no text).
#[derive(Serialize)]
pub struct Slept {
    pub requested_ms: u64,
    pub slept_ms: u64,
}

impl Render for Slept {
    fn render(&self) -> String {
        String::new()
    }
}

fn sleep(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let want = *m.get_one::<u64>("ms").unwrap_or(&0);
    let start = std::time::Instant::now();
    loop {
        let done = start.elapsed().as_millis() as u64;
        if done >= want {
            break;
        }
        if s.control.requested() {
            return Err(CommandError::Cancelled);
        }
        std::thread::sleep(std::time::Duration::from_millis((want - done).min(20)));
    }
    let slept_ms = start.elapsed().as_millis() as u64;
    Ok(Output::rendered(
        "sleep",
        Slept {
            requested_ms: want,
            slept_ms,
        },
    ))
}
