//! Native-level commands: they need only the dump (no CLR): `info`, `threads`, `modules`, and
//! memory display (`db`, `dw`, `dd`, `dq`).

use crate::addr::hex;
use crate::addr::{fmt_addr, parse_address, parse_count};
use crate::output::{CommandError, Output};
use crate::session::Session;
use crate::spec::CommandSpec;
use crate::text::{render, table};
use clap::{Arg, ArgAction, ArgMatches, Command};
use comfy_table::{CellAlignment, Table};
use dumpreader::{Arch, DumpFormat, Memory, ModuleIdentity, ModuleKind, Os};
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
        about: "display memory as bytes and ASCII",
        grammar: || memory_grammar("db", 128),
        run: |s, m| display_memory(s, m, 1, "db"),
    },
    CommandSpec {
        name: "dw",
        aliases: &[],
        about: "display memory as 16-bit words",
        grammar: || memory_grammar("dw", 64),
        run: |s, m| display_memory(s, m, 2, "dw"),
    },
    CommandSpec {
        name: "dd",
        aliases: &[],
        about: "display memory as 32-bit words",
        grammar: || memory_grammar("dd", 32),
        run: |s, m| display_memory(s, m, 4, "dd"),
    },
    CommandSpec {
        name: "dq",
        aliases: &["dp"],
        about: "display memory as 64-bit words",
        grammar: || memory_grammar("dq", 16),
        run: |s, m| display_memory(s, m, 8, "dq"),
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
    pub dump_kind: Option<DumpKindOut>,
    /// How the app was published: single-file, framework-dependent, self-contained.
    pub app_shape: Option<AppShapeOut>,
    pub warnings: Vec<String>,
}

#[derive(Serialize)]
pub struct DumpKindOut {
    /// "createdump", "gcore", "kernel", "minidump".
    pub producer: &'static str,
    /// One line for people.
    pub description: String,
    pub evidence: Vec<String>,
    pub full_memory: bool,
    /// ELF: bytes of mapped files in the process, and how many the dump holds.
    pub file_bytes_mapped: u64,
    pub file_bytes_present: u64,
    /// Minidump: the MINIDUMP_TYPE flags recorded in the header, by name.
    pub minidump_type: Option<String>,
    pub minidump_type_flags: Vec<&'static str>,
    pub streams: Vec<String>,
    /// Whether the runtime module's writable data is in the dump (None: no runtime found).
    pub runtime_data_present: Option<bool>,
}

#[derive(Serialize)]
pub struct AppShapeOut {
    /// "single-file", "single-file-compressed", "single-file-self-extract",
    /// "framework-dependent", "self-contained", or "none" (no .NET runtime found).
    pub shape: &'static str,
    pub description: String,
    /// The single-file host's path.
    pub host: Option<String>,
    /// The runtime module's path.
    pub runtime_module: Option<String>,
    pub runtime_version: Option<String>,
    /// The folder the runtime was loaded from (framework-dependent: the shared framework's).
    pub runtime_dir: Option<String>,
    pub bundle: Option<BundleOut>,
}

#[derive(Serialize)]
pub struct BundleOut {
    pub header_offset: u64,
    pub version: Option<String>,
    pub bundle_id: Option<String>,
    pub files: Option<usize>,
    pub compressed_files: Option<usize>,
    pub mapped_files: usize,
    pub manifest_source: String,
    /// Why the manifest could not be read, if so.
    pub manifest_error: Option<String>,
}

fn dir_of(path: &str) -> &str {
    match path.rfind(['/', '\\']) {
        Some(i) => &path[..i],
        None => "",
    }
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

/// Whether the runtime module's writable PT_LOAD pages are in the dump (ELF only).
fn runtime_data_present(s: &Session, rt: &clrdata::RuntimeInfo) -> Option<bool> {
    let m = s.target.modules().iter().find(|m| m.base == rt.base)?;
    let img = s.target.module_image(m).ok()?;
    let dumpreader::ImageFormat::Elf(e) = &img.format else {
        return None;
    };
    let (mut pages, mut present) = (0u64, 0u64);
    for p in e
        .program_headers
        .iter()
        .filter(|p| p.p_type == 1 && p.p_flags & 2 != 0)
    {
        let start = e.load_bias.wrapping_add(p.p_vaddr) & !0xfff;
        // The initialised data (p_filesz: .data, .got): createdump leaves it out without the
        // DAC; the zero-initialised rest is anonymous memory, dumped with the heap.
        let end = e
            .load_bias
            .wrapping_add(p.p_vaddr)
            .saturating_add(p.p_filesz);
        let mut a = start;
        while a < end && pages < 1 << 16 {
            pages += 1;
            let mut b = [0u8; 1];
            if s.target
                .read(a.max(e.load_bias.wrapping_add(p.p_vaddr)), &mut b)
                == 1
            {
                present += 1;
            }
            a += 0x1000;
        }
    }
    // With the DAC, createdump writes the globals the DAC names (some pages); without it,
    // none.
    (pages > 0).then_some(present > 0)
}

fn dump_kind_out(s: &Session, rt: Option<&clrdata::RuntimeInfo>) -> Option<DumpKindOut> {
    let k = s.target.dump_kind()?;
    let data = rt.and_then(|rt| runtime_data_present(s, rt));
    let pct = |a: u64, b: u64| {
        if b == 0 {
            0.0
        } else {
            a as f64 * 100.0 / b as f64
        }
    };
    let mut description = match k.producer {
        dumpreader::DumpProducer::Createdump if k.full_memory => {
            "createdump, every page of the mapped files too (--full; or a .NET Core 3.x \
             createdump, whose dumps hold them all)"
                .to_string()
        }
        dumpreader::DumpProducer::Createdump => format!(
            "createdump (--withheap, --normal or --triage: memory it chose; {:.0}% of the mapped \
             files' pages)",
            pct(k.file_bytes_present, k.file_bytes_mapped)
        ),
        dumpreader::DumpProducer::Gcore => format!(
            "gdb gcore: every written page, no DAC-curated memory; unmodified file pages left \
             out ({:.0}% of the mapped files' pages held)",
            pct(k.file_bytes_present, k.file_bytes_mapped)
        ),
        dumpreader::DumpProducer::Kernel => format!(
            "kernel core (core_pattern / systemd-coredump): pages chosen by coredump_filter \
             ({:.0}% of the mapped files' pages held)",
            pct(k.file_bytes_present, k.file_bytes_mapped)
        ),
        dumpreader::DumpProducer::Minidump => {
            let names = k.minidump_type_names();
            let what = if k.full_memory {
                "full memory"
            } else if names.contains(&"WithPrivateReadWriteMemory") {
                "with heap (private read/write memory)"
            } else if names.contains(&"FilterTriage") {
                "triage"
            } else {
                "mini (no heap)"
            };
            format!(
                "Windows minidump, {what}: MINIDUMP_TYPE {}",
                names.join("|")
            )
        }
    };
    let single_file_host = rt
        .is_some_and(|r| r.host == clrdata::discovery::runtime::RuntimeHost::SingleFile)
        || !s.target.bundles().is_empty();
    if data == Some(false) {
        description.push_str(
            "; none of the runtime's initialised data pages is in the dump: CLR commands \
             cannot read the runtime's state",
        );
    } else if k.producer == dumpreader::DumpProducer::Createdump && single_file_host {
        // Seen with the createdump of .NET 8.0.33 and 10.0.12: "InitializeDAC: coreclr not
        // found; not using DAC".
        description.push_str(
            "; createdump finds no libcoreclr in a single-file app and works without the DAC: \
             the runtime's globals are missing unless the heap holds them (gcore has them all)",
        );
    }
    Some(DumpKindOut {
        producer: k.producer.name(),
        description,
        evidence: k.evidence.clone(),
        full_memory: k.full_memory,
        file_bytes_mapped: k.file_bytes_mapped,
        file_bytes_present: k.file_bytes_present,
        minidump_type: k.minidump_type.map(|t| format!("{t:#x}")),
        minidump_type_flags: k.minidump_type_names(),
        streams: k.streams.clone(),
        runtime_data_present: data,
    })
}

fn app_shape_out(s: &Session, rt: Option<&clrdata::RuntimeInfo>) -> AppShapeOut {
    let bundle = s.target.bundles().first();
    let version = rt.and_then(|r| runtime_version(s, r));
    let ver_text = version
        .clone()
        .unwrap_or_else(|| "of unknown version".into());
    if let Some(hb) = bundle {
        let man = hb.manifest.as_ref().ok();
        let compressed = man.map(|m| m.entries.iter().filter(|e| e.is_compressed()).count());
        let host_name = hb
            .host_path
            .rsplit(['/', '\\'])
            .next()
            .unwrap_or(&hb.host_path);
        let inside = match rt {
            Some(r) if r.base == hb.host_base => format!(".NET {ver_text} inside"),
            Some(r) => format!("the runtime from {}", r.module_path),
            None => "no .NET runtime found in it".to_string(),
        };
        // A self-extracting bundle (IncludeAllContentForSelfExtract): the host extracted its
        // files to a folder and the runtime maps the assemblies from there, CoreLib first.
        let extracted_to = s
            .target
            .modules()
            .iter()
            .find(|m| {
                m.name().eq_ignore_ascii_case("System.Private.CoreLib.dll")
                    && m.path != hb.host_path
                    && !m.path.is_empty()
            })
            .map(|m| dir_of(&m.path).to_string());
        // Without the manifest: a compressed bundle maps none of its files from the host.
        let is_compressed = match compressed {
            Some(c) => c > 0,
            None => hb.bundle_mappings == 0,
        };
        let shape = if extracted_to.is_some() {
            "single-file-self-extract"
        } else if is_compressed {
            "single-file-compressed"
        } else {
            "single-file"
        };
        let mut description = format!("single-file host {host_name} with {inside}");
        if let Some(dir) = &extracted_to {
            description.push_str(&format!(
                "; self-extracting: its files were extracted to {dir} and are mapped from there"
            ));
        }
        match man {
            Some(m) => description.push_str(&format!(
                "; bundle of {} files ({} compressed), {} mapped",
                m.entries.len(),
                compressed.unwrap_or(0),
                hb.placements.len()
            )),
            None if extracted_to.is_some() => {}
            None if is_compressed => description.push_str(
                "; compressed bundle (none of its files is mapped from the host; manifest not \
                 readable: give the host file with --image-path)",
            ),
            None => description.push_str(&format!(
                "; {} mappings of bundled files (manifest not readable: give the host file with \
                 --image-path)",
                hb.bundle_mappings
            )),
        }
        return AppShapeOut {
            shape,
            description,
            host: Some(hb.host_path.clone()),
            runtime_module: rt.map(|r| r.module_path.clone()),
            runtime_version: version,
            runtime_dir: rt.map(|r| dir_of(&r.module_path).to_string()),
            bundle: Some(BundleOut {
                header_offset: hb.header_offset,
                version: man.map(|m| format!("{}.{}", m.major_version, m.minor_version)),
                bundle_id: man.map(|m| m.bundle_id.clone()),
                files: man.map(|m| m.entries.len()),
                compressed_files: compressed,
                mapped_files: hb.placements.len(),
                manifest_source: hb.manifest_source.clone(),
                manifest_error: hb.manifest.as_ref().err().map(|e| e.to_string()),
            }),
        };
    }
    let Some(r) = rt else {
        return AppShapeOut {
            shape: "none",
            description: "no .NET runtime found".into(),
            host: None,
            runtime_module: None,
            runtime_version: None,
            runtime_dir: None,
            bundle: None,
        };
    };
    let dir = dir_of(&r.module_path).to_string();
    let norm = dir.replace('\\', "/").to_ascii_lowercase();
    let (shape, description) = if norm.contains("/shared/microsoft.netcore.app/") {
        (
            "framework-dependent",
            format!("framework-dependent, .NET {ver_text} from the shared framework at {dir}"),
        )
    } else if r.host == clrdata::discovery::runtime::RuntimeHost::SingleFile {
        (
            "single-file",
            format!(
                "single-file host {} with .NET {ver_text} inside (no bundle marker found)",
                r.module_name
            ),
        )
    } else {
        (
            "self-contained",
            format!("self-contained, .NET {ver_text} next to the app in {dir}"),
        )
    };
    AppShapeOut {
        shape,
        description,
        host: None,
        runtime_module: Some(r.module_path.clone()),
        runtime_version: version,
        runtime_dir: Some(dir),
        bundle: None,
    }
}

#[derive(Serialize, Clone, Debug)]
pub struct ExceptionOut {
    pub code: String,
    pub address: String,
    pub thread_id: u32,
    pub flags: u32,
    pub parameters: Vec<String>,
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
    let res = InfoResult {
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
        warnings: i.warnings.iter().map(|w| w.to_string()).collect(),
    };
    let rt = clrdata::find_runtime(&*s.target).ok();
    let res = InfoResult {
        dump_kind: dump_kind_out(s, rt.as_ref()),
        app_shape: Some(app_shape_out(s, rt.as_ref())),
        ..res
    };
    let mut t = String::new();
    let line = |t: &mut String, k: &str, v: String| t.push_str(&format!("{k:<16}{v}\n"));
    line(&mut t, "Dump:", res.path.clone());
    if let Some(src) = &res.source {
        line(&mut t, "Source:", src.clone());
    }
    line(&mut t, "Format:", res.format.to_string());
    line(&mut t, "OS / arch:", format!("{} / {}", res.os, res.arch));
    line(
        &mut t,
        "Process id:",
        res.pid.map_or("unknown".into(), |p| p.to_string()),
    );
    if let Some(name) = &res.process_name {
        line(&mut t, "Process name:", name.clone());
    }
    if let Some(cl) = &res.command_line {
        line(&mut t, "Command line:", cl.clone());
    }
    line(&mut t, "Threads:", res.threads.to_string());
    if let Some(m) = res.main_thread {
        line(&mut t, "Main thread:", m.to_string());
    }
    line(&mut t, "Modules:", res.modules.to_string());
    line(
        &mut t,
        "Memory:",
        format!(
            "{} ranges, {} bytes ({} held in the file, the rest reads as zeros)",
            res.memory_ranges, res.memory_bytes, res.memory_bytes_in_file
        ),
    );
    match &res.exception {
        Some(e) => line(
            &mut t,
            "Exception:",
            format!("code {} at {} on thread {}", e.code, e.address, e.thread_id),
        ),
        None => line(&mut t, "Exception:", "none recorded".into()),
    }
    if let Some(k) = &res.dump_kind {
        line(&mut t, "Dump kind:", k.description.clone());
    }
    if let Some(a) = &res.app_shape {
        line(&mut t, "App shape:", a.description.clone());
    }
    for w in &res.warnings {
        line(&mut t, "Warning:", w.clone());
    }
    Ok(Output::of("info", res, t))
}

// ------------------------------------------------------------------------------------- threads

#[derive(Serialize)]
pub struct ThreadsResult {
    pub threads: Vec<ThreadOut>,
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

fn parse_tid(text: &str) -> Result<u32, CommandError> {
    let v = if let Some(h) = text.strip_prefix("0x") {
        u32::from_str_radix(h, 16).ok()
    } else {
        text.parse::<u32>().ok()
    };
    v.ok_or_else(|| CommandError::bad_argument(format!("\'{text}\'"), "not a thread id"))
}

fn threads(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let only = m
        .get_one::<String>("id")
        .map(|t| parse_tid(t))
        .transpose()?;
    let all_regs = m.get_flag("registers");
    let mut out = Vec::new();
    for (index, th) in s.target.threads().iter().enumerate() {
        if only.is_some_and(|id| id != th.id) {
            continue;
        }
        let c = &th.context;
        out.push(ThreadOut {
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
                .map(|&r| (r, hex(c.get(r).unwrap_or(0))))
                .collect(),
        });
    }
    if let Some(id) = only {
        if out.is_empty() {
            return Err(CommandError::not_found(
                format!("the dump has no thread with OS id {id} (0x{id:x})"),
                "",
            ));
        }
    }
    let res = ThreadsResult { threads: out };
    let text = if all_regs || only.is_some() {
        let mut t = String::new();
        for th in &res.threads {
            t.push_str(&format!(
                "Thread {} (OS id {} = 0x{:x})",
                th.index, th.os_id, th.os_id
            ));
            if let Some(n) = &th.name {
                t.push_str(&format!(" \"{n}\""));
            }
            t.push('\n');
            for (i, r) in REGS.iter().enumerate() {
                let v = s.target.threads()[th.index].context.get(r).unwrap_or(0);
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
        for th in &res.threads {
            let c = &s.target.threads()[th.index].context;
            t.add_row(vec![
                th.index.to_string(),
                format!("{} (0x{:x})", th.os_id, th.os_id),
                fmt_addr(c.rip),
                fmt_addr(c.rsp),
                th.stack
                    .as_ref()
                    .map_or(String::new(), |r| format!("{}-{}", r.start, r.end)),
            ]);
        }
        right(&mut t, &[0, 1]);
        format!("{}{} threads\n", render(&t), res.threads.len())
    };
    Ok(Output::new("threads", &res, text))
}

// ------------------------------------------------------------------------------------- modules

#[derive(Serialize)]
pub struct ModulesResult {
    pub modules: Vec<ModuleOut>,
    /// Single-file hosts and their bundles.
    pub bundles: Vec<BundleListOut>,
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

fn pe_layout(s: &Session, md: &dumpreader::ModuleInfo) -> Option<&'static str> {
    if md.kind != ModuleKind::Pe {
        return None;
    }
    match s.target.module_image(md).ok()?.format {
        dumpreader::ImageFormat::Pe(ref pe) => Some(match pe.layout {
            dumpreader::PeLayout::Mapped => "mapped",
            dumpreader::PeLayout::Flat => "flat",
        }),
        _ => None,
    }
}

/// One row per file: where a file is mapped several times, the loaded (mapped-layout) image
/// is the module and the other mappings are listed under it.
fn modules(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let all = m.get_flag("all");
    let mut groups: Vec<Vec<&dumpreader::ModuleInfo>> = Vec::new();
    // Mappings of a single-file host's bundled files that no manifest names are still shown.
    let unnamed_bundled = |md: &dumpreader::ModuleInfo| {
        s.target
            .bundles()
            .iter()
            .any(|hb| hb.manifest.is_err() && hb.host_path == md.path && hb.host_base != md.base)
    };
    for md in s.target.modules() {
        if !all && md.kind == ModuleKind::Other && !unnamed_bundled(md) {
            continue;
        }
        if unnamed_bundled(md) {
            // Each its own file of the bundle (which, no manifest tells).
            groups.push(vec![md]);
            continue;
        }
        match groups
            .iter_mut()
            .find(|g| g[0].path == md.path && g[0].kind == md.kind && !unnamed_bundled(g[0]))
        {
            Some(g) => g.push(md),
            None => groups.push(vec![md]),
        }
    }
    // The runtime's records settle the files of images whose headers the dump lacks.
    let _ = s.clr();
    let sources = s.target.file_sources();
    let mut rows = Vec::new();
    for g in groups {
        let layouts: Vec<Option<&'static str>> = g.iter().map(|md| pe_layout(s, md)).collect();
        let primary = layouts
            .iter()
            .position(|l| *l == Some("mapped"))
            .unwrap_or(0);
        let md = g[primary];
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
        rows.push((
            md,
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
                bundle: s.target.bundles().iter().find_map(|hb| {
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
                missing: sources
                    .iter()
                    .find(|f| f.recorded == md.path && f.missing_bytes > 0)
                    .map(MissingOut::of),
            },
        ));
    }
    rows.sort_by_key(|(md, _)| md.base);
    let mut t = table(&["base", "end", "kind", "identity", "path"]);
    for (md, mo) in &rows {
        let mut path = mo.path.clone();
        if mo.bundle.is_none() && unnamed_bundled(md) {
            path.push_str(&format!(
                "\n  a bundled file, from host file offset {:#x} (unnamed: no manifest)",
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
        if let Some(f) = sources
            .iter()
            .find(|f| f.recorded == md.path && f.missing_bytes > 0)
        {
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
    let list_files = m.get_flag("bundle");
    let bundles: Vec<BundleListOut> = s
        .target
        .bundles()
        .iter()
        .map(|hb| {
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
                compressed_count: man
                    .map(|m| m.entries.iter().filter(|e| e.is_compressed()).count()),
                mapped_count: hb.placements.len(),
            }
        })
        .collect();
    let res = ModulesResult {
        modules: rows.into_iter().map(|(_, mo)| mo).collect(),
        bundles,
    };
    let mut text = format!("{}{} modules\n", render(&t), res.modules.len());
    for b in &res.bundles {
        let host = b.host.rsplit(['/', '\\']).next().unwrap_or(&b.host);
        match (b.file_count, &b.manifest_error) {
            (Some(n), _) => {
                text.push_str(&format!(
                "{host} is a .NET single-file host: bundle v{} of {n} files ({} compressed, {} \
                 mapped), manifest at file offset {:#x}, read from {}{}\n",
                b.version.as_deref().unwrap_or("?"),
                b.compressed_count.unwrap_or(0),
                b.mapped_count,
                b.header_offset,
                b.manifest_source,
                if list_files { "" } else { " (modules -b lists them)" }
            ))
            }
            (None, Some(e)) => text.push_str(&format!(
                "{host} is a .NET single-file host (bundle manifest at file offset {:#x}), but \
                 the manifest could not be read: {e}\n",
                b.header_offset
            )),
            (None, None) => {}
        }
        if list_files && !b.files.is_empty() {
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
    Ok(Output::new("modules", &res, text))
}

// -------------------------------------------------------------------------------------- memory

fn memory_grammar(name: &'static str, default_units: u64) -> Command {
    Command::new(name)
        .arg(
            Arg::new("address")
                .required(true)
                .help("start address (hex; 0x and ` allowed)"),
        )
        .arg(Arg::new("length").help(format!(
            "how many units to show: decimal, 0x hex, or WinDbg's L<hex> (default {default_units})"
        )))
        .arg(
            Arg::new("count")
                .short('c')
                .long("count")
                .help("same as the length argument"),
        )
}

#[derive(Serialize)]
pub struct MemoryResult {
    pub address: String,
    pub unit: usize,
    pub requested: u64,
    pub read: usize,
    pub values: Vec<String>,
    pub missing_from: Option<String>,
}

/// Most units one display command will read (1 MiB of bytes).
const MAX_DISPLAY_BYTES: u64 = 1 << 20;

fn display_memory(
    s: &Session,
    m: &ArgMatches,
    unit: usize,
    name: &'static str,
) -> Result<Output, CommandError> {
    let addr = parse_address(
        m.get_one::<String>("address")
            .map(String::as_str)
            .unwrap_or(""),
    )
    ?;
    let default = [128u64, 64, 0, 32, 0, 0, 0, 16][unit - 1];
    let units = match m
        .get_one::<String>("count")
        .or(m.get_one::<String>("length"))
    {
        Some(c) => parse_count(c)?,
        None => default,
    };
    let bytes = units.saturating_mul(unit as u64);
    if bytes > MAX_DISPLAY_BYTES {
        return Err(CommandError::bad_argument(
            format!("{units} units of {unit} bytes"),
            format!("more than the {MAX_DISPLAY_BYTES} bytes one display shows"),
        ));
    }
    let mut buf = vec![0u8; bytes as usize];
    let got = s.target.read(addr, &mut buf);
    let whole = got - got % unit;
    let values: Vec<String> = buf[..whole]
        .chunks(unit)
        .map(|c| {
            let mut v = [0u8; 8];
            v[..unit].copy_from_slice(c);
            format!("0x{:0w$x}", u64::from_le_bytes(v), w = unit * 2)
        })
        .collect();
    let missing = (got < buf.len()).then(|| addr.wrapping_add(got as u64));
    let res = MemoryResult {
        address: hex(addr),
        unit,
        requested: units,
        read: got,
        values,
        missing_from: missing.map(hex),
    };
    let mut t = String::new();
    let per_line = 16 / unit;
    for (li, chunk) in buf[..whole].chunks(16).enumerate() {
        let a = addr.wrapping_add((li * 16) as u64);
        t.push_str(&format!("{a:016x} "));
        for (i, c) in chunk.chunks(unit).enumerate() {
            let mut v = [0u8; 8];
            v[..unit].copy_from_slice(c);
            let sep = if unit == 1 && i == 8 { '-' } else { ' ' };
            t.push(sep);
            t.push_str(&format!("{:0w$x}", u64::from_le_bytes(v), w = unit * 2));
        }
        if unit == 1 {
            let pad = (per_line - chunk.len()) * 3;
            t.push_str(&" ".repeat(pad + 2));
            t.extend(chunk.iter().map(|&b| {
                if (0x20..0x7f).contains(&b) {
                    b as char
                } else {
                    '.'
                }
            }));
        }
        t.push('\n');
    }
    if let Some(mf) = missing {
        t.push_str(&format!(
            "{mf:016x} ?? the dump holds no memory from here ({got} of {bytes} bytes read)\n"
        ));
    }
    Ok(Output::new(name, &res, t))
}

#[derive(Serialize)]
pub struct Slept {
    pub requested_ms: u64,
    pub slept_ms: u64,
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
    Ok(Output::new(
        "sleep",
        &Slept {
            requested_ms: want,
            slept_ms,
        },
        String::new(),
    ))
}
