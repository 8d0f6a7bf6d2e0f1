//! Native-level commands: they need only the dump (no CLR): `info`, `threads`, `modules`, and
//! memory display (`db`, `dw`, `dd`, `dq`).

use super::CommandSpec;
use crate::addr::hex;
use crate::addr::{fmt_addr, parse_address, parse_count};
use crate::output::{CommandError, Output};
use crate::session::Session;
use clap::{Arg, ArgAction, ArgMatches, Command};
use comfy_table::{presets, Cell, CellAlignment, ContentArrangement, Table};
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
            Command::new("modules").arg(
                Arg::new("all")
                    .short('a')
                    .long("all")
                    .action(ArgAction::SetTrue)
                    .help("include mapped files that are not images"),
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

/// A table in the style every command uses: no borders, header underlined, fitted to the
/// terminal when there is one.
pub fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    // Fit the table to the terminal, but only to one wide enough to fit into: a terminal that
    // reports no size or a tiny one (a fresh pseudo-terminal says 0 columns) would squeeze
    // every column to one character.
    let fits = t.width().is_some_and(|w| w >= 60);
    t.load_style(presets::NOTHING)
        .set_content_arrangement(if fits {
            ContentArrangement::Dynamic
        } else {
            ContentArrangement::Disabled
        })
        .set_header(header.iter().map(Cell::new).collect::<Vec<_>>());
    t
}

/// The table as text, each line without trailing blanks (a piped table stays tidy).
pub fn render(t: &Table) -> String {
    let mut out = String::new();
    for line in t.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

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
struct InfoResult {
    path: String,
    /// How the file was read (e.g. decompressed into the cache), when not directly.
    source: Option<String>,
    format: &'static str,
    os: String,
    arch: String,
    pid: Option<u32>,
    process_name: Option<String>,
    command_line: Option<String>,
    threads: usize,
    main_thread: Option<u32>,
    crashing_thread: Option<u32>,
    modules: usize,
    memory_ranges: usize,
    memory_bytes: u64,
    memory_bytes_in_file: u64,
    exception: Option<ExceptionOut>,
    warnings: Vec<String>,
}

#[derive(Serialize)]
struct ExceptionOut {
    code: String,
    address: String,
    thread_id: u32,
    flags: u32,
    parameters: Vec<String>,
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
        warnings: i.warnings.iter().map(|w| w.to_string()).collect(),
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
    for w in &res.warnings {
        line(&mut t, "Warning:", w.clone());
    }
    Ok(Output::new("info", &res, t))
}

// ------------------------------------------------------------------------------------- threads

#[derive(Serialize)]
struct ThreadsResult {
    threads: Vec<ThreadOut>,
}

#[derive(Serialize)]
struct ThreadOut {
    index: usize,
    os_id: u32,
    rip: String,
    rsp: String,
    stack: Option<Range>,
    teb: Option<String>,
    name: Option<String>,
    signal: u32,
    registers: std::collections::BTreeMap<&'static str, String>,
}

#[derive(Serialize)]
struct Range {
    start: String,
    end: String,
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
    v.ok_or_else(|| CommandError::Usage(format!("'{text}' is not a thread id")))
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
            return Err(CommandError::Failed(format!(
                "the dump has no thread with OS id {id} (0x{id:x})"
            )));
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
struct ModulesResult {
    modules: Vec<ModuleOut>,
}

#[derive(Serialize)]
struct ModuleOut {
    base: String,
    end: String,
    size: u64,
    kind: &'static str,
    /// For PE images: "mapped" (sections at their RVAs, as loaded) or "flat" (the file as is).
    layout: Option<&'static str>,
    path: String,
    build_id: Option<String>,
    pe_timestamp: Option<u32>,
    pe_image_size: Option<u32>,
    debug_file: Option<String>,
    /// Other places the same file is mapped as a whole (the .NET runtime on Linux maps each
    /// assembly twice: flat for its metadata and as a loaded image).
    also_mapped_at: Vec<AlsoMapped>,
}

#[derive(Serialize)]
struct AlsoMapped {
    base: String,
    end: String,
    layout: Option<&'static str>,
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
    for md in s.target.modules() {
        if !all && md.kind == ModuleKind::Other {
            continue;
        }
        match groups
            .iter_mut()
            .find(|g| g[0].path == md.path && g[0].kind == md.kind)
        {
            Some(g) => g.push(md),
            None => groups.push(vec![md]),
        }
    }
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
                also_mapped_at: also,
            },
        ));
    }
    rows.sort_by_key(|(md, _)| md.base);
    let mut t = table(&["base", "end", "kind", "identity", "path"]);
    for (md, mo) in &rows {
        let mut path = mo.path.clone();
        for a in &mo.also_mapped_at {
            path.push_str(&format!(
                "\n  also mapped at {} ({})",
                a.base,
                a.layout.unwrap_or("?")
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
    let res = ModulesResult {
        modules: rows.into_iter().map(|(_, mo)| mo).collect(),
    };
    let text = format!("{}{} modules\n", render(&t), res.modules.len());
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
struct MemoryResult {
    address: String,
    unit: usize,
    requested: u64,
    read: usize,
    values: Vec<String>,
    missing_from: Option<String>,
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
    .map_err(CommandError::Usage)?;
    let default = [128u64, 64, 0, 32, 0, 0, 0, 16][unit - 1];
    let units = match m
        .get_one::<String>("count")
        .or(m.get_one::<String>("length"))
    {
        Some(c) => parse_count(c).map_err(CommandError::Usage)?,
        None => default,
    };
    let bytes = units.saturating_mul(unit as u64);
    if bytes > MAX_DISPLAY_BYTES {
        return Err(CommandError::Usage(format!(
            "{units} units of {unit} bytes is more than the {MAX_DISPLAY_BYTES} bytes one display shows"
        )));
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
struct Slept {
    requested_ms: u64,
    slept_ms: u64,
}

fn sleep(_: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let want = *m.get_one::<u64>("ms").unwrap_or(&0);
    let start = std::time::Instant::now();
    loop {
        let done = start.elapsed().as_millis() as u64;
        if done >= want {
            break;
        }
        if crate::cancel::requested() {
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
