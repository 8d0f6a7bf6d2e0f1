//! SOS's thread and runtime commands that dumpshell had not: `setthread` (the session's current
//! thread, which `clrstack`, `pe`, `dso`, `stack` and `registers` then act on), `threadstate`,
//! `registers`, `clrmodules`, `dumpassembly` and `token2ee` (`soshelp` is `help`, in the front ends). Each prints what SOS 10.0.750501 prints, checked against SOS's
//! own output on the corpus (dumps/tools/sos_runtime.sh, tests/tests/sos_runtime.rs).

use crate::addr::hex;
use crate::output::{CommandError, Output, Render};
use crate::session::Session;
use crate::spec::CommandSpec;
use clap::{Arg, ArgMatches, Command};
use clrdata::data::threads::thread_state_descriptions;
use serde::Serialize;

/// The commands of this module.
pub static SPECS: &[CommandSpec] = &[
    CommandSpec {
        name: "setthread",
        aliases: &[],
        about:
            "set the current thread by debugger index (or -t OS id); without one, list the threads",
        grammar: || {
            Command::new("setthread")
                .arg(Arg::new("index").help(
                    "the thread's debugger index (its position in the dump's thread list, from 0: \
                     the DBG column of clrthreads)",
                ))
                .arg(
                    Arg::new("tid")
                        .short('t')
                        .long("tid")
                        .help("the thread's OS id (decimal, or hex with 0x) instead of an index"),
                )
        },
        run: setthread,
    },
    CommandSpec {
        name: "threadstate",
        aliases: &[],
        about: "decode a Thread's state flags (the State column of clrthreads, hex)",
        grammar: || {
            Command::new("threadstate").arg(
                Arg::new("state")
                    .required(true)
                    .help("the state, hexadecimal (with or without 0x)"),
            )
        },
        run: threadstate,
    },
    CommandSpec {
        name: "registers",
        aliases: &[],
        about: "the current thread's registers (setthread chooses it)",
        grammar: || Command::new("registers"),
        run: registers,
    },
    CommandSpec {
        name: "clrmodules",
        aliases: &["assemblies"],
        about: "the runtime's loaded modules: image base, size and file (SOS's clrmodules)",
        grammar: || Command::new("clrmodules"),
        run: clrmodules,
    },
    CommandSpec {
        name: "dumpassembly",
        aliases: &[],
        about: "an Assembly: its AppDomain, file and Module (the addresses clrmodules lists)",
        grammar: || {
            Command::new("dumpassembly").arg(
                Arg::new("address")
                    .required(true)
                    .help("the Assembly's address (hex)"),
            )
        },
        run: dumpassembly,
    },
    CommandSpec {
        name: "dumpdomain",
        aliases: &[],
        about: "the domains: loader heaps, stage, name, and the AppDomain's assemblies and modules",
        grammar: || {
            Command::new("dumpdomain").arg(Arg::new("address").help(
                "a domain's address (hex): only that domain (the SystemDomain or the AppDomain)",
            ))
        },
        run: dumpdomain,
    },
    CommandSpec {
        name: "token2ee",
        aliases: &[],
        about: "the MethodTable or MethodDesc of a TypeDef or MethodDef token in a module (or *)",
        grammar: || {
            Command::new("token2ee")
                .arg(
                    Arg::new("module")
                        .required(true)
                        .help("the module's file name (hang.dll or hang, any case), or * for all"),
                )
                .arg(
                    Arg::new("token")
                        .required(true)
                        .help("the token, hex (with or without 0x): 02xxxxxx or 06xxxxxx"),
                )
        },
        run: token2ee,
    },
];

// ----------------------------------------------------------------------------------- setthread

/// One thread of the dump as `setthread` lists it.
#[derive(Serialize)]
pub struct DebuggerThread {
    /// The debugger's index (the position in the dump's thread list).
    pub index: usize,
    pub os_id: u32,
    /// Whether it is the current thread.
    pub current: bool,
}

/// `setthread`'s result: the dump's threads with the current one marked, and whether this
/// invocation chose it (SOS prints the list only when no thread is named).
#[derive(Serialize)]
pub struct SetThread {
    /// The thread made current by this command (`None`: none was named, the list is shown).
    pub selected: Option<DebuggerThread>,
    pub threads: Vec<DebuggerThread>,
}

impl Render for SetThread {
    fn render(&self) -> String {
        if self.selected.is_some() {
            // SOS prints nothing when it sets the thread.
            return String::new();
        }
        self.threads
            .iter()
            .map(|t| {
                format!(
                    "{}{} 0x{:04X} ({})\n",
                    if t.current { "*" } else { " " },
                    t.index,
                    t.os_id,
                    t.os_id
                )
            })
            .collect()
    }
}

/// `12` or `0x1f`.
fn parse_number(t: &str, what: &str) -> Result<u64, CommandError> {
    let t = t.trim();
    let r = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => t.parse(),
    };
    r.map_err(|_| CommandError::bad_argument(format!("'{t}'"), format!("not {what}")))
}

fn setthread(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let threads = s.target.threads();
    let chosen = match (m.get_one::<String>("index"), m.get_one::<String>("tid")) {
        (Some(_), Some(_)) => {
            return Err(CommandError::Usage {
                message: "setthread takes an index or -t <OS id>, not both".into(),
            })
        }
        (Some(i), None) => {
            let i = parse_number(i, "a thread index")?;
            let t = usize::try_from(i)
                .ok()
                .and_then(|i| threads.get(i))
                .ok_or_else(|| {
                    CommandError::not_found(
                        format!("thread index {i}"),
                        format!(
                            "the dump has {} threads (indexes 0 to {})",
                            threads.len(),
                            threads.len().saturating_sub(1)
                        ),
                    )
                })?;
            Some(t.id)
        }
        (None, Some(t)) => {
            let id = parse_number(t, "an OS thread id")?;
            let t = threads
                .iter()
                .find(|t| u64::from(t.id) == id)
                .ok_or_else(|| {
                    CommandError::not_found(format!("OS thread {id} (0x{id:x})"), "not in the dump")
                })?;
            Some(t.id)
        }
        (None, None) => None,
    };
    if let Some(id) = chosen {
        s.select_os_thread(id);
    }
    let current = s.current_os_thread();
    let list: Vec<DebuggerThread> = threads
        .iter()
        .enumerate()
        .map(|(index, t)| DebuggerThread {
            index,
            os_id: t.id,
            current: Some(u64::from(t.id)) == current,
        })
        .collect();
    let selected = chosen.and_then(|id| {
        list.iter().find(|t| t.os_id == id).map(|t| DebuggerThread {
            index: t.index,
            os_id: t.os_id,
            current: true,
        })
    });
    Ok(Output::rendered(
        "setthread",
        SetThread {
            selected,
            threads: list,
        },
    ))
}

// --------------------------------------------------------------------------------- threadstate

/// `threadstate`'s result.
#[derive(Serialize)]
pub struct ThreadState {
    /// The value decoded, hex.
    pub state: String,
    /// SOS's description of each bit set, in bit order.
    pub descriptions: Vec<&'static str>,
}

impl Render for ThreadState {
    fn render(&self) -> String {
        if self.descriptions.is_empty() {
            return format!(
                "    No thread states for '{}'\n",
                self.state.trim_start_matches("0x")
            );
        }
        self.descriptions
            .iter()
            .map(|d| format!("    {d}\n"))
            .collect()
    }
}

fn threadstate(_: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let t = m.get_one::<String>("state").map(|s| s.trim()).unwrap_or("");
    let digits = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    let v = u32::from_str_radix(digits, 16)
        .map_err(|_| CommandError::bad_argument(format!("'{t}'"), "not a hexadecimal state"))?;
    Ok(Output::rendered(
        "threadstate",
        ThreadState {
            state: hex(u64::from(v)),
            descriptions: thread_state_descriptions(v),
        },
    ))
}

// ----------------------------------------------------------------------------------- registers

/// SOS's registers in its order, with their width in hex digits and the context's name of each.
const SOS_REGISTERS: &[(&str, usize, &str)] = &[
    ("cs", 4, "cs"),
    ("ds", 4, "ds"),
    ("es", 4, "es"),
    ("fs", 4, "fs"),
    ("gs", 4, "gs"),
    ("ss", 4, "ss"),
    ("eflags", 8, "rflags"),
    ("rax", 16, "rax"),
    ("rcx", 16, "rcx"),
    ("rdx", 16, "rdx"),
    ("rbx", 16, "rbx"),
    ("rsp", 16, "rsp"),
    ("rbp", 16, "rbp"),
    ("rsi", 16, "rsi"),
    ("rdi", 16, "rdi"),
    ("r8", 16, "r8"),
    ("r9", 16, "r9"),
    ("r10", 16, "r10"),
    ("r11", 16, "r11"),
    ("r12", 16, "r12"),
    ("r13", 16, "r13"),
    ("r14", 16, "r14"),
    ("r15", 16, "r15"),
    ("rip", 16, "rip"),
];

/// One register's value.
#[derive(Serialize)]
pub struct Register {
    pub name: &'static str,
    pub value: String,
    /// Hex digits SOS prints.
    #[serde(skip)]
    width: usize,
    #[serde(skip)]
    raw: u64,
}

/// `registers`'s result: the current thread's registers as the dump saved them.
#[derive(Serialize)]
pub struct Registers {
    pub index: Option<usize>,
    pub os_id: u32,
    pub registers: Vec<Register>,
}

impl Render for Registers {
    fn render(&self) -> String {
        self.registers
            .iter()
            .map(|r| format!("{} = 0x{:0w$X}\n", r.name, r.raw, w = r.width))
            .collect()
    }
}

fn registers(s: &Session, _: &ArgMatches) -> Result<Output, CommandError> {
    let id = s
        .current_os_thread()
        .ok_or_else(|| CommandError::not_found("the dump has no threads", ""))?;
    let threads = s.target.threads();
    let (index, t) = threads
        .iter()
        .enumerate()
        .find(|(_, t)| u64::from(t.id) == id)
        .ok_or_else(|| CommandError::not_found(format!("OS thread {id:#x}"), "not in the dump"))?;
    let registers = SOS_REGISTERS
        .iter()
        .map(|&(name, width, ctx)| {
            let raw = t.context.get(ctx).unwrap_or(0);
            // SOS prints eflags as its 32 bits.
            let raw = if width == 8 { raw & 0xffff_ffff } else { raw };
            Register {
                name,
                value: hex(raw),
                width,
                raw,
            }
        })
        .collect();
    Ok(Output::rendered(
        "registers",
        Registers {
            index: Some(index),
            os_id: t.id,
            registers,
        },
    ))
}

// ---------------------------------------------------------------------------------- clrmodules

/// One module of `clrmodules`.
#[derive(Serialize)]
pub struct ClrModule {
    /// The Module.
    pub module: Option<String>,
    /// Its Assembly.
    pub assembly: Option<String>,
    /// The loaded layout's base (the image SOS lists).
    pub base: Option<String>,
    /// Its size: SizeOfImage when mapped, the file's length when flat.
    pub size: Option<u32>,
    /// `"mapped"` (RVA addressing) or `"flat"` (the file as it is on disk); null for a
    /// dynamic module.
    pub layout: Option<&'static str>,
    /// The file the dump maps at `base`.
    pub path: Option<String>,
    /// A dynamic (Reflection.Emit) module: no image (base and size 0), SOS's `(Dynamic)`.
    pub dynamic: bool,
    /// Why the module's records do not read.
    pub error: Option<String>,
    #[serde(skip)]
    raw: (u64, u32),
}

/// `clrmodules`'s result: the AppDomain's modules in its order.
#[derive(Serialize)]
pub struct ClrModules {
    pub modules: Vec<ClrModule>,
}

impl Render for ClrModules {
    fn render(&self) -> String {
        self.modules
            .iter()
            .map(|m| match &m.error {
                Some(e) => format!("<error: {e}>\n"),
                None => format!(
                    "{:016X} {:08X} {}\n",
                    m.raw.0,
                    m.raw.1,
                    if m.dynamic {
                        "(Dynamic)"
                    } else {
                        m.path.as_deref().unwrap_or("<no file mapped at the base>")
                    }
                ),
            })
            .collect()
    }
}

/// The path of the file the dump maps at `base` (a module's base, or a mapping of it from the
/// file's start: the flat copy of an assembly the loader keeps).
fn file_at(s: &Session, base: u64) -> Option<String> {
    let mods = s.target.modules();
    mods.iter()
        .find(|m| m.base == base)
        .map(|m| m.path.clone())
        .or_else(|| {
            mods.iter()
                .flat_map(|m| &m.mappings)
                .find(|f| f.start == base && f.file_offset == 0)
                .map(|f| f.path.clone())
        })
}

fn clrmodules(s: &Session, _: &ArgMatches) -> Result<Output, CommandError> {
    let c = crate::session::clr(s)?;
    let images =
        c.rt.loaded_images()
            .map_err(|e| CommandError::clr("reading the runtime's loaded modules", e))?;
    let modules = images
        .into_iter()
        .map(|r| match r {
            Ok(i) => ClrModule {
                module: Some(hex(i.module)),
                assembly: Some(hex(i.assembly)),
                base: Some(hex(i.base)),
                size: Some(i.size),
                layout: (!i.dynamic).then_some(if i.mapped { "mapped" } else { "flat" }),
                path: if i.dynamic { None } else { file_at(s, i.base) },
                dynamic: i.dynamic,
                error: None,
                raw: (i.base, i.size),
            },
            Err(e) => ClrModule {
                module: None,
                assembly: None,
                base: None,
                size: None,
                layout: None,
                path: None,
                dynamic: false,
                error: Some(e.to_string()),
                raw: (0, 0),
            },
        })
        .collect();
    Ok(Output::rendered("clrmodules", ClrModules { modules }))
}

// -------------------------------------------------------------------------------- dumpassembly

/// `dumpassembly`'s result.
#[derive(Serialize)]
pub struct DumpAssembly {
    pub assembly: String,
    /// The AppDomain holding it (SOS's Parent Domain).
    pub parent_domain: String,
    /// Its file (the file the dump maps at its image's base).
    pub name: Option<String>,
    /// Its Module.
    pub module: String,
    /// A dynamic (Reflection.Emit) module (SOS: `Unknown`, `Dynamic Module`).
    pub dynamic: bool,
    #[serde(skip)]
    raw: (u64, u64),
}

impl Render for DumpAssembly {
    fn render(&self) -> String {
        let (name, module_name) = if self.dynamic {
            ("Unknown", "Dynamic Module")
        } else {
            let n = self
                .name
                .as_deref()
                .unwrap_or("<no file mapped at the image's base>");
            (n, n)
        };
        format!(
            "Parent Domain:      {:016x}\nName:               {name}\n  Module\n  {:016x}    {module_name}\n",
            self.raw.0, self.raw.1
        )
    }
}

fn dumpassembly(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = crate::session::clr(s)?;
    let a = crate::addr::parse_address(m.get_one::<String>("address").map_or("", |s| s))?;
    let domain =
        c.rt.app_domain()
            .map_err(|e| CommandError::clr("reading the AppDomain", e))?;
    let images =
        c.rt.loaded_images()
            .map_err(|e| CommandError::clr("reading the runtime's loaded modules", e))?;
    let i = images
        .into_iter()
        .flatten()
        .find(|i| i.assembly == a)
        .ok_or_else(|| {
            CommandError::not_found(
                format!("Assembly {a:#x}"),
                "not an Assembly of the AppDomain's list (clrmodules --json lists them)",
            )
        })?;
    Ok(Output::rendered(
        "dumpassembly",
        DumpAssembly {
            assembly: hex(a),
            parent_domain: hex(domain),
            name: if i.dynamic { None } else { file_at(s, i.base) },
            module: hex(i.module),
            dynamic: i.dynamic,
            raw: (domain, i.module),
        },
    ))
}

// ---------------------------------------------------------------------------------- dumpdomain

/// The AppDomain's id (`DefaultADID`: CoreCLR's only AppDomain).
const DEFAULT_ADID: u32 = 1;

/// One Assembly of a domain as `dumpdomain` lists it.
#[derive(Serialize)]
pub struct DomainAssembly {
    pub assembly: String,
    /// A dynamic (Reflection.Emit) assembly (SOS: `(Dynamic)`, no name, `Dynamic Module`).
    pub dynamic: bool,
    /// Its file as the runtime opened it (the PEAssembly's path); null for a dynamic one.
    pub path: Option<String>,
    /// Its Module.
    pub module: String,
    /// Why its Module's records do not read.
    pub error: Option<String>,
    #[serde(skip)]
    raw: (u64, u64),
}

/// One domain of `dumpdomain`.
#[derive(Serialize)]
pub struct DomainView {
    /// `"system"` or `"app"`.
    pub kind: &'static str,
    /// SOS's id (1 for the AppDomain; null for the SystemDomain).
    pub id: Option<u32>,
    #[serde(flatten)]
    pub data: clrdata::data::domains::DomainData,
    /// Its assemblies, in the DAC's order (none for the SystemDomain).
    pub assemblies: Vec<DomainAssembly>,
}

/// `dumpdomain`'s result.
#[derive(Serialize)]
pub struct DumpDomain {
    /// The domains shown: with no address the SystemDomain (when the DAC reports one) then the
    /// AppDomain.
    pub domains: Vec<DomainView>,
    /// .NET 11: the DAC reports no SystemDomain (address 0) and SOS 10.0.750501, which does not
    /// expect that, prints a `System Domain: 0` section holding what the DAC answers for
    /// address 0, the AppDomain's records; the text repeats that section.
    pub no_system_domain: bool,
}

fn domain_info(t: &mut String, d: &DomainView) {
    let x = &d.data;
    t.push_str(&format!(
        "LowFrequencyHeap:   {:016X}\n",
        x.low_frequency_heap
    ));
    t.push_str(&format!(
        "HighFrequencyHeap:  {:016X}\n",
        x.high_frequency_heap
    ));
    t.push_str(&format!("StubHeap:           {:016X}\n", x.stub_heap));
    t.push_str(&format!("Stage:              {}\n", x.stage));
    t.push_str(&format!(
        "Name:               {}\n",
        if x.name.is_empty() { "None" } else { &x.name }
    ));
    if d.assemblies.is_empty() {
        return;
    }
    for (n, a) in d.assemblies.iter().enumerate() {
        if n != 0 {
            t.push('\n');
        }
        if a.raw.0 == 0 {
            t.push_str(&format!(
                "Assembly:           <error: {}>\n",
                a.error.as_deref().unwrap_or("")
            ));
            continue;
        }
        t.push_str(&format!("Assembly:           {:016x}", a.raw.0));
        if a.dynamic {
            t.push_str(" (Dynamic)");
        }
        t.push_str(&format!(" [{}]\n", a.path.as_deref().unwrap_or("")));
        t.push_str("  Module\n");
        let file = match (&a.error, a.dynamic, &a.path) {
            (Some(e), _, _) => format!("<error: {e}>"),
            (None, true, _) => "Dynamic Module".to_string(),
            (None, false, Some(p)) if !p.is_empty() => p.clone(),
            _ => "Unknown Module".to_string(),
        };
        t.push_str(&format!("  {:016x}    {file}\n", a.raw.1));
    }
    t.push('\n');
}

impl Render for DumpDomain {
    fn render(&self) -> String {
        const RULE: &str = "--------------------------------------\n";
        let mut t = String::new();
        if self.no_system_domain {
            if let Some(app) = self.domains.iter().find(|d| d.kind == "app") {
                t.push_str(RULE);
                t.push_str(&format!("System Domain:      {:016x}\n", 0));
                domain_info(&mut t, app);
            }
        }
        for d in &self.domains {
            t.push_str(RULE);
            match d.id {
                None => t.push_str(&format!("System Domain:      {:016x}\n", d.data.address)),
                Some(id) => t.push_str(&format!(
                    "Domain {id}:{}          {:016x}\n",
                    if id >= 10 { "" } else { " " },
                    d.data.address
                )),
            }
            domain_info(&mut t, d);
        }
        t
    }
}

fn dumpdomain(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    use clrdata::data::domains::ReadDomains;
    use clrdata::prelude::ReadTypes;
    let c = crate::session::clr(s)?;
    let want = m
        .get_one::<String>("address")
        .map(|a| crate::addr::parse_address(a))
        .transpose()?;
    let domains =
        c.rt.domains()
            .map_err(|e| CommandError::clr("reading the domains", e))?;
    let app_wanted = want.is_none_or(|a| a == domains.app_domain.address);
    let system_wanted = |a: u64| want.is_none_or(|w| w == a);
    let mut views = Vec::new();
    let no_system_domain = domains.system.is_none() && want.is_none();
    if let Some(sys) = domains.system.clone().filter(|d| system_wanted(d.address)) {
        views.push(DomainView {
            kind: "system",
            id: None,
            data: sys,
            assemblies: Vec::new(),
        });
    }
    if app_wanted || no_system_domain {
        let images =
            c.rt.loaded_images()
                .map_err(|e| CommandError::clr("reading the AppDomain's assemblies", e))?;
        let assemblies = images
            .into_iter()
            .map(|r| match r {
                Ok(i) => {
                    let (path, error) = if i.dynamic {
                        (None, None)
                    } else {
                        match c.rt.module(i.module) {
                            Ok(md) if md.path.is_empty() => (
                                None,
                                Some("the image has no path (loaded from memory)".to_string()),
                            ),
                            Ok(md) => (Some(md.path), None),
                            Err(e) => (None, Some(CommandError::from(e).to_string())),
                        }
                    };
                    DomainAssembly {
                        assembly: hex(i.assembly),
                        dynamic: i.dynamic,
                        path,
                        module: hex(i.module),
                        error,
                        raw: (i.assembly, i.module),
                    }
                }
                Err(e) => DomainAssembly {
                    assembly: String::new(),
                    dynamic: false,
                    path: None,
                    module: String::new(),
                    error: Some(CommandError::from(e).to_string()),
                    raw: (0, 0),
                },
            })
            .collect();
        if app_wanted {
            views.push(DomainView {
                kind: "app",
                id: Some(DEFAULT_ADID),
                data: domains.app_domain.clone(),
                assemblies,
            });
        }
    }
    if views.is_empty() {
        let a = want.unwrap_or(0);
        return Err(CommandError::not_found(
            format!("domain {a:#x}"),
            "neither the SystemDomain nor the AppDomain (dumpdomain without an address lists them)",
        ));
    }
    Ok(Output::rendered(
        "dumpdomain",
        DumpDomain {
            domains: views,
            no_system_domain,
        },
    ))
}

// ------------------------------------------------------------------------------------ token2ee

/// What a token names in one module (`token2ee`).
#[derive(Serialize)]
pub struct TokenMatch {
    pub module: String,
    /// The module's file name.
    pub assembly: String,
    pub token: String,
    /// A TypeDef's MethodTable (null: not loaded yet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method_table: Option<Option<String>>,
    /// A MethodDef's MethodDesc (null: none exists yet; SOS's `<invalid module token>`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method_desc: Option<Option<String>>,
    /// The type's or method's name, when it is loaded.
    pub name: Option<String>,
    /// A method's native code (null: not JITTED yet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<Option<String>>,
    /// Why the MethodDesc found does not read.
    pub error: Option<String>,
    #[serde(skip)]
    raw: (u64, u32, Option<u64>, Option<u64>),
}

/// `token2ee`'s result.
#[derive(Serialize)]
pub struct Token2Ee {
    /// The module asked for (`*`: every one).
    pub query: String,
    pub matches: Vec<TokenMatch>,
    /// With `*`: the modules where the token named nothing loaded.
    pub modules_without_match: usize,
}

impl Render for Token2Ee {
    fn render(&self) -> String {
        let mut t = String::new();
        for m in &self.matches {
            t.push_str(&format!("Module:      {:016x}\n", m.raw.0));
            t.push_str(&format!("Assembly:    {}\n", m.assembly));
            t.push_str(&format!("Token:       {:08x}\n", m.raw.1));
            if m.method_table.is_some() {
                match m.raw.2 {
                    Some(mt) => {
                        t.push_str(&format!("MethodTable: {mt:016x}\n"));
                        t.push_str(&format!(
                            "Name:        {}\n",
                            m.name.as_deref().unwrap_or("<unknown>")
                        ));
                    }
                    None => t.push_str(
                        "MethodTable: <not loaded yet>\nEEClass:     <not loaded yet>\n\
                         Name:        <unknown>\n",
                    ),
                }
            } else {
                match m.raw.2 {
                    Some(md) if m.error.is_some() => t.push_str(&format!(
                        "MethodDesc:  {md:016x}\n<error: {}>\n",
                        m.error.as_deref().unwrap_or("")
                    )),
                    Some(md) => {
                        t.push_str(&format!("MethodDesc:  {md:016x}\n"));
                        t.push_str(&format!(
                            "Name:        {}\n",
                            m.name.as_deref().unwrap_or("<unknown>")
                        ));
                        match m.raw.3 {
                            Some(code) => {
                                t.push_str(&format!("JITTED Code Address: {code:016x}\n"))
                            }
                            // SOS prints the DAC's code address of a method without
                            // code as it is: -1.
                            None => t.push_str("JITTED Code Address: ffffffffffffffff\n"),
                        }
                    }
                    None => t.push_str("<invalid module token>\n"),
                }
            }
            if self.query == "*" {
                t.push_str("--------------------------------------\n");
            }
        }
        if self.query == "*" {
            t.push_str(&format!(
                "\nScanned {} modules which had no matches.\n",
                self.modules_without_match
            ));
        }
        t
    }
}

/// Whether a module file named `file` is the one the user named `want` (SOS compares without
/// case, with or without the extension).
fn names_module(file: &str, want: &str) -> bool {
    let stem = file.rsplit_once('.').map_or(file, |(s, _)| s);
    file.eq_ignore_ascii_case(want) || stem.eq_ignore_ascii_case(want)
}

fn token2ee(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = crate::session::clr(s)?;
    let query = m.get_one::<String>("module").cloned().unwrap_or_default();
    let t = m.get_one::<String>("token").map(|t| t.trim()).unwrap_or("");
    let token = u32::from_str_radix(
        t.strip_prefix("0x")
            .or_else(|| t.strip_prefix("0X"))
            .unwrap_or(t),
        16,
    )
    .map_err(|_| CommandError::bad_argument(format!("'{t}'"), "not a hexadecimal token"))?;
    let (kind, rid) = (token >> 24, token & 0xff_ffff);
    if kind != 0x02 && kind != 0x06 {
        return Err(CommandError::bad_argument(
            format!("token {token:08x}"),
            "token2ee reads TypeDef (02xxxxxx) and MethodDef (06xxxxxx) tokens",
        ));
    }
    if kind == 0x06 && c.rt.info.major().is_some_and(|m| m >= 11) {
        // .NET 11's runtime-async methods have two MethodDescs per MethodDef (the
        // Task-returning one and its async variant); the MethodDefToDesc map's entry is not
        // always the one SOS's token2ee gives (aspnethang-net11's GetStockAsync): refused
        // until which one the DAC answers is known.
        return Err(CommandError::clr(
            format!("token2ee {token:08x}"),
            clrdata::ClrError::Unsupported {
                what: "a MethodDef token's MethodDesc".into(),
                detail: format!(
                    "not verified for {} (runtime-async methods have two MethodDescs)",
                    c.rt.info.display_name()
                ),
                addr: None,
            },
        ));
    }
    let images =
        c.rt.loaded_images()
            .map_err(|e| CommandError::clr("reading the runtime's loaded modules", e))?;
    let r = clrdata::model::objects::ObjectReader::new(&c.rt, &c.names);
    let all = query == "*";
    let mut matches = Vec::new();
    let mut named = 0usize;
    let mut without = 0usize;
    for i in images.into_iter().flatten() {
        let file = if i.dynamic {
            // A dynamic (Reflection.Emit) module has no file to name it by: only `*` scans it,
            // and SOS names its assembly `<dynamic>`.
            if !all {
                continue;
            }
            "<dynamic>".to_string()
        } else {
            let Some(path) = file_at(s, i.base) else {
                continue;
            };
            let file = path.rsplit(['/', '\\']).next().unwrap_or(&path).to_string();
            if !all && !names_module(&file, &query) {
                continue;
            }
            file
        };
        named += 1;
        let mut error = None;
        let (found, name, code) = if kind == 0x02 {
            let mt = r.typedef_mt(i.module, rid);
            (mt, mt.map(|mt| c.type_name(mt)), None)
        } else {
            match r.methoddef_md(i.module, rid) {
                Some(md) => match clrdata::model::inspect::method_desc_view(&r, md) {
                    Ok(v) => (Some(md), Some(v.name), v.code),
                    Err(e) => {
                        error = Some(CommandError::from(e).to_string());
                        (Some(md), None, None)
                    }
                },
                None => (None, None, None),
            }
        };
        if all && found.is_none() {
            without += 1;
            continue;
        }
        matches.push(TokenMatch {
            module: hex(i.module),
            assembly: file,
            token: format!("{token:08x}"),
            method_table: (kind == 0x02).then(|| found.map(hex)),
            method_desc: (kind == 0x06).then(|| found.map(hex)),
            name,
            code: (kind == 0x06 && found.is_some()).then(|| code.map(hex)),
            error,
            raw: (i.module, token, found, code),
        });
    }
    if !all && named == 0 {
        return Err(CommandError::not_found(
            format!("module '{query}'"),
            "no module the runtime loaded is named so",
        ));
    }
    Ok(Output::rendered(
        "token2ee",
        Token2Ee {
            query,
            matches,
            modules_without_match: without,
        },
    ))
}
