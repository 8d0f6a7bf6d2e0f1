//! What the code manager keeps beside a method's native code: `ehinfo` (its EH clauses, as
//! SOS's ehinfo prints them) and `gcinfo` (its GC info decoded, as SOS's gcinfo prints it).
//! Checked against SOS's own output on the corpus (dumps/tools/sos_ehinfo.py,
//! tests/tests/sos_ehinfo.rs; clrcodeinfo/tests/data, tests/tests/sos_gcinfo.rs).

use crate::addr::{hex, parse_address};
use crate::output::{CommandError, Output, Render};
use crate::session::{clr, Clr};
use crate::spec::CommandSpec;
use clap::{Arg, ArgMatches, Command};
use clrdata::model::inspect::{method_desc_view, MethodDescView};
use clrdata::model::objects::ObjectReader;
use clrdata::model::stack::{CodeInfo, StackFrame, StackWalker};
use clrdata::prelude::ReadTypes;
use serde::Serialize;

/// The commands of this module.
pub static SPECS: &[CommandSpec] = &[
    CommandSpec {
        name: "ip2md",
        aliases: &[],
        about: "the managed method containing a code address: its MethodDesc as SOS's DumpMD \
                prints it, and the source line of the address (the app's PDB)",
        grammar: || Command::new("ip2md").arg(Arg::new("ip").required(true).help("code address")),
        run: ip2md,
    },
    CommandSpec {
        name: "ehinfo",
        aliases: &[],
        about: "a method's EH clauses (try, catch, finally, fault, filter): offsets and addresses",
        grammar: || {
            Command::new("ehinfo").arg(
                Arg::new("address")
                    .required(true)
                    .help("a MethodDesc, or a code address inside the method"),
            )
        },
        run: ehinfo,
    },
    CommandSpec {
        name: "gcinfo",
        aliases: &[],
        about: "a method's GC info decoded: header, slot table, interruptible ranges, safe \
                points and the slots live at each",
        grammar: || {
            Command::new("gcinfo").arg(
                Arg::new("address")
                    .required(true)
                    .help("a MethodDesc, or a code address inside the method"),
            )
        },
        run: gcinfo,
    },
];

/// The method a MethodDesc or code address names, and its code.
struct Method {
    code: CodeInfo,
    frame: StackFrame,
    /// The MethodDesc's view (its name, class, module, current code), when there is one.
    view: Option<MethodDescView>,
    /// What SOS's DumpMD prints as `Class:`: the DAC's GetMethodTableData `Class`, the
    /// EEClass on .NET 8, the canonical MethodTable from .NET 9 on (that DAC gives no EEClass;
    /// dumps/*.sos-ehinfo.txt).
    sos_class: Option<u64>,
}

impl Method {
    /// The method's name: the MethodDesc's, else the one the code's frame gives.
    fn name(&self) -> Option<String> {
        self.view
            .as_ref()
            .map(|v| v.name.clone())
            .or_else(|| self.frame.method.clone())
    }
}

/// Resolves `a`: a code address inside a managed method, else a MethodDesc with native code
/// (its current code).
fn method(
    c: &Clr,
    w: &StackWalker<'_, std::sync::Arc<dyn dumpreader::Target>>,
    a: u64,
) -> Result<Method, CommandError> {
    let r = ObjectReader::new(&c.rt, &c.names);
    let (code, frame) = match w.ip_to_method(a)? {
        Some(x) => x,
        None => {
            let v = method_desc_view(&r, a).map_err(|e| {
                CommandError::not_found(
                    format!("{a:#x}"),
                    format!(
                        "neither managed code (no RangeSection holds it) nor a MethodDesc: {e}"
                    ),
                )
            })?;
            let Some(ip) = v.code else {
                return Err(CommandError::not_found(
                    format!("MethodDesc {a:#x}"),
                    "the method has no native code (not JITTED yet)",
                ));
            };
            w.ip_to_method(ip)?.ok_or_else(|| {
                CommandError::not_found(
                    format!("{ip:#x}"),
                    "the MethodDesc's code is not in a RangeSection",
                )
            })?
        }
    };
    Ok(method_of(c, &r, code, frame))
}

/// The method of `code` (its frame as the stack walk names it) with its MethodDesc's view.
fn method_of(
    c: &Clr,
    r: &ObjectReader<'_, std::sync::Arc<dyn dumpreader::Target>>,
    code: CodeInfo,
    frame: StackFrame,
) -> Method {
    let view = frame
        .method_desc
        .and_then(|md| method_desc_view(r, md).ok());
    let sos_class = view.as_ref().and_then(|v| {
        if c.rt.info.major()? >= 9 {
            c.rt.method_table(v.desc.method_table)
                .ok()
                .map(|i| i.canonical)
        } else {
            Some(v.ee_class)
        }
    });
    Method {
        code,
        frame,
        view,
        sos_class,
    }
}

/// One EH clause of `ehinfo`: offsets from the method's start and addresses.
#[derive(Serialize)]
pub struct EhClauseView {
    /// `TYPED`, `FILTER`, `FINALLY`, `FAULT` (null: another flag value).
    pub kind: Option<&'static str>,
    /// `CorExceptionFlag` as the clause holds it.
    pub flags: u32,
    /// A duplicate the JIT made for a handler moved out of line.
    pub duplicate: bool,
    /// `[start, end)` offsets of the protected range.
    pub try_offsets: [u32; 2],
    pub try_addresses: [String; 2],
    pub handler_offsets: [u32; 2],
    pub handler_addresses: [String; 2],
    /// A filter clause's filter funclet offset.
    pub filter_offset: Option<u32>,
    /// A typed clause's class token (null once the runtime cached its TypeHandle).
    pub class_token: Option<String>,
    /// The TypeHandle the runtime cached in a typed clause.
    pub cached_type: Option<String>,
    /// The type a typed clause catches, named.
    pub catch_type: Option<String>,
    /// Why it could not be named.
    pub catch_type_error: Option<String>,
}

/// `ehinfo`'s result.
#[derive(Serialize)]
pub struct EhInfo {
    pub method_desc: Option<String>,
    pub method: Option<String>,
    pub method_start: String,
    /// `jit` or `ready_to_run`.
    pub code_kind: clrdata::model::stack::CodeKind,
    pub clauses: Vec<EhClauseView>,
    #[serde(skip)]
    header: String,
    #[serde(skip)]
    start: u64,
}

/// WinDbg's address spelling: `00007f02`72a36860`.
fn tick(a: u64) -> String {
    format!("{:08x}`{:08x}", a >> 32, a & 0xFFFF_FFFF)
}

/// The DumpMD lines SOS prints before a method's EH clauses (`MethodDesc:` to `Current
/// CodeAddr:`; SOS's version history after them is not printed).
fn header(m: &Method) -> String {
    let mut t = String::new();
    if let Some(md) = m.frame.method_desc {
        t.push_str(&format!("MethodDesc:   {md:016x}\n"));
    }
    match &m.view {
        Some(v) => {
            t.push_str(&format!("Method Name:          {}\n", v.name));
            if let Some(class) = m.sos_class {
                t.push_str(&format!("Class:                {class:016x}\n"));
            }
            t.push_str(&format!(
                "MethodTable:          {:016x}\n",
                v.desc.method_table
            ));
            t.push_str(&format!("mdToken:              {:016X}\n", v.desc.token));
            match v.module {
                Some(mo) => t.push_str(&format!("Module:               {mo:016x}\n")),
                None => t.push_str("Module:               <module override, not read>\n"),
            }
            t.push_str(&format!(
                "IsJitted:             {}\n",
                if v.code.is_some() { "yes" } else { "no" }
            ));
            t.push_str(&format!(
                "Current CodeAddr:     {:016x}\n",
                v.code.unwrap_or(u64::MAX)
            ));
        }
        None => {
            let name = m.frame.method.as_deref().unwrap_or("<unknown>");
            t.push_str(&format!("Method Name:          {name}\n"));
            if let Some(mo) = m.frame.module {
                t.push_str(&format!("Module:               {mo:016x}\n"));
            }
            if let Some(tok) = m.frame.token {
                t.push_str(&format!("mdToken:              {:016X}\n", tok));
            }
        }
    }
    t
}

impl Render for EhInfo {
    fn render(&self) -> String {
        let mut t = self.header.clone();
        t.push('\n');
        let at = |o: u32| tick(self.start + u64::from(o));
        for (i, c) in self.clauses.iter().enumerate() {
            let mut head = format!("EHHandler {i}: {} ", c.kind.unwrap_or("UNKNOWN"));
            if c.kind == Some("TYPED") {
                match (&c.catch_type, &c.catch_type_error) {
                    (Some(n), _) => head.push_str(&format!("catch({n}) ")),
                    (None, Some(e)) => head.push_str(&format!("catch(<{e}>) ")),
                    (None, None) => head.push_str("catch() "),
                }
            }
            if c.duplicate {
                // SOS's IsClonedFinally: a duplicate finally whose empty protected range starts
                // where its handler does (a finally the JIT cloned into the normal path).
                let [ts, te] = c.try_offsets;
                let cloned = c.kind == Some("FINALLY") && ts == te && ts == c.handler_offsets[0];
                head.push_str(if cloned {
                    "(cloned finally)"
                } else {
                    "(duplicate)"
                });
            }
            t.push_str(&head);
            t.push('\n');
            if let Some(f) = c.filter_offset {
                t.push_str(&format!("Filter:  [{}] [{f:x}]\n", at(f)));
            }
            let [ts, te] = c.try_offsets;
            let [hs, he] = c.handler_offsets;
            t.push_str(&format!(
                "Clause:  [{}, {}] [{ts:x}, {te:x}]\n",
                at(ts),
                at(te)
            ));
            t.push_str(&format!(
                "Handler: [{}, {}] [{hs:x}, {he:x}]\n\n",
                at(hs),
                at(he)
            ));
        }
        t
    }
}

fn ehinfo(s: &crate::session::Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let a = parse_address(m.get_one::<String>("address").map_or("", |s| s))?;
    let w = StackWalker::for_target(&c.rt, &c.names);
    let me = method(&c, &w, a)?;
    let clauses = w.eh_clauses(&me.code)?;
    let start = me.code.method_start;
    let module = me.view.as_ref().and_then(|v| v.module).or(me.frame.module);
    let addr2 = |a: u32, b: u32| [hex(start + u64::from(a)), hex(start + u64::from(b))];
    let views = clauses
        .iter()
        .map(|cl| {
            let (catch_type, catch_type_error) = if cl.is_typed() {
                match w.catch_type_name(module, cl) {
                    Ok(n) => (Some(n), None),
                    Err(e) => (None, Some(e.to_string())),
                }
            } else {
                (None, None)
            };
            EhClauseView {
                kind: cl.kind_name(),
                flags: cl.flags,
                duplicate: cl.is_duplicate(),
                try_offsets: [cl.try_start, cl.try_end],
                try_addresses: addr2(cl.try_start, cl.try_end),
                handler_offsets: [cl.handler_start, cl.handler_end],
                handler_addresses: addr2(cl.handler_start, cl.handler_end),
                filter_offset: cl.is_filter().then_some(cl.filter_or_class),
                class_token: (cl.is_typed() && cl.cached_type.is_none())
                    .then(|| format!("{:08x}", cl.filter_or_class)),
                cached_type: cl.cached_type.map(hex),
                catch_type,
                catch_type_error,
            }
        })
        .collect();
    let out = EhInfo {
        method_desc: me.frame.method_desc.map(hex),
        method: me.name(),
        method_start: hex(start),
        code_kind: me.code.kind,
        clauses: views,
        header: header(&me),
        start,
    };
    Ok(Output::rendered("ehinfo", out))
}

// -------------------------------------------------------------------------------------- gcinfo

/// The generics instantiation context of `gcinfo`'s header.
#[derive(Serialize)]
pub struct GenericsContextView {
    /// Its slot's offset (as SOS prints it, from the caller's SP).
    pub offset: i32,
    /// `method_desc`, `method_table` or `this`.
    pub kind: &'static str,
}

/// One slot of the GC info's slot table.
#[derive(Serialize)]
pub struct GcSlotView {
    /// A register (`rbx`) or stack slot (`sp+10`, `caller.sp+8`, `rbp-20`: base and offset as
    /// encoded).
    pub location: String,
    pub interior: bool,
    pub pinned: bool,
    /// Live throughout the method body.
    pub untracked: bool,
}

/// `gcinfo`'s result.
#[derive(Serialize)]
pub struct GcInfoOut {
    pub method_desc: Option<String>,
    pub method: Option<String>,
    pub method_start: String,
    pub code_kind: clrdata::model::stack::CodeKind,
    /// Where the GC info starts.
    pub gc_info: String,
    /// The bytes it occupies.
    pub size: usize,
    pub code_length: u32,
    pub prolog_size: Option<u32>,
    /// The GS cookie's offset from the caller's SP.
    pub gs_cookie: Option<i32>,
    pub psp_sym: Option<i32>,
    pub generics_context: Option<GenericsContextView>,
    pub varargs: bool,
    pub frame_register: Option<String>,
    pub wants_report_only_leaf: bool,
    /// The outgoing argument and scratch area.
    pub parameter_area: u32,
    /// `ReturnKind` (GC info versions before 4).
    pub return_kind: Option<u8>,
    /// Fully interruptible `[start, end)` offsets.
    pub interruptible_ranges: Vec<[u32; 2]>,
    /// Call sites' return-address offsets.
    pub safe_points: Vec<u32>,
    pub slots: Vec<GcSlotView>,
    /// Whether the dump held the whole blob (else the live states past what it holds are not
    /// listed).
    pub complete: bool,
    /// Why the per-offset live states are not listed.
    pub states_error: Option<String>,
    #[serde(skip)]
    text: String,
}

impl Render for GcInfoOut {
    fn render(&self) -> String {
        self.text.clone()
    }
}

/// A slot's location as SOS's gcinfo prints it in its slot lines, without the +/- sign.
fn slot_location(l: clrcodeinfo::gcinfo::SlotLocation, frame_reg: Option<u8>) -> String {
    use clrcodeinfo::gcinfo::{SlotLocation, StackBase};
    match l {
        SlotLocation::Register(r) => clrcodeinfo::gcdump::reg(r),
        SlotLocation::Stack { base, offset } => {
            let b = match base {
                StackBase::CallerSp => "caller.sp".to_string(),
                StackBase::Sp => "sp".to_string(),
                StackBase::Frame => {
                    frame_reg.map_or_else(|| "<frame>".into(), clrcodeinfo::gcdump::reg)
                }
            };
            if offset < 0 {
                format!("{b}-{:x}", -i64::from(offset))
            } else {
                format!("{b}+{offset:x}")
            }
        }
    }
}

fn gcinfo(s: &crate::session::Session, m: &ArgMatches) -> Result<Output, CommandError> {
    use clrcodeinfo::gcinfo::{GenericsContextKind, HeaderFlags};
    let c = clr(s)?;
    let a = parse_address(m.get_one::<String>("address").map_or("", |s| s))?;
    let w = StackWalker::for_target(&c.rt, &c.names);
    let me = method(&c, &w, a)?;
    let start = me.code.method_start;
    let addr = w.gc_info_address(&me.code)?;
    let g = w
        .decoded_gc_info(&me.code)
        .map_err(|e| CommandError::not_found(format!("the GC info at {addr:#x}"), e.to_string()))?;
    let h = &g.header;
    let (body, states_error) = match clrcodeinfo::gcdump::sos_text(&g) {
        Ok(t) => (t, None),
        Err(e) => (String::new(), Some(e.to_string())),
    };
    let mut text = format!(
        "entry point {start:016X}\n{}\nGC info {addr:016X}\nPointer table:\n",
        match me.code.kind {
            clrdata::model::stack::CodeKind::Jit => "Normal JIT generated code",
            clrdata::model::stack::CodeKind::ReadyToRun => "preJIT generated code",
        }
    );
    text.push_str(&body);
    if let Some(e) = &states_error {
        text.push_str(&format!("<the live states are not listed: {e}>\n"));
    }
    let frame_reg = h.stack_base_register;
    let out = GcInfoOut {
        method_desc: me.frame.method_desc.map(hex),
        method: me.name(),
        method_start: hex(start),
        code_kind: me.code.kind,
        gc_info: hex(addr),
        size: g.size(),
        code_length: h.code_length,
        prolog_size: h.prolog_size,
        gs_cookie: h.gs_cookie.as_ref().map(|c| c.caller_sp_offset),
        psp_sym: h.psp_sym,
        generics_context: h
            .generics_inst_context
            .as_ref()
            .map(|c| GenericsContextView {
                offset: c.offset,
                kind: match c.kind {
                    GenericsContextKind::MethodDesc => "method_desc",
                    GenericsContextKind::MethodTable => "method_table",
                    GenericsContextKind::This => "this",
                },
            }),
        varargs: h.is_vararg(),
        frame_register: frame_reg.map(clrcodeinfo::gcdump::reg),
        wants_report_only_leaf: h.flags.has(HeaderFlags::WANTS_REPORT_ONLY_LEAF),
        parameter_area: h.size_of_stack_outgoing_and_scratch_area,
        return_kind: h.return_kind,
        interruptible_ranges: g
            .interruptible_ranges
            .iter()
            .map(|r| [r.start, r.end])
            .collect(),
        safe_points: g.safe_points(),
        slots: g
            .slots
            .iter()
            .map(|sl| GcSlotView {
                location: slot_location(sl.location, frame_reg),
                interior: sl.flags.interior(),
                pinned: sl.flags.pinned(),
                untracked: sl.untracked,
            })
            .collect(),
        complete: g.is_complete(),
        states_error,
        text,
    };
    Ok(Output::rendered("gcinfo", out))
}

// ------------------------------------------------------------------------------------- ip2md

/// `ip2md`'s result.
#[derive(Serialize)]
pub struct Ip2Md {
    pub ip: String,
    pub kind: Option<clrdata::model::stack::CodeKind>,
    pub method_start: Option<String>,
    pub method_desc: Option<String>,
    pub module: Option<String>,
    pub token: Option<String>,
    pub method: Option<String>,
    /// Why the method could not be named (it is then the code's frame name, or none).
    pub error: Option<String>,
    /// The IL offset and source line of the address itself (the app's PDB), or why none.
    pub source: clrdata::model::stack::FrameSource,
    #[serde(skip)]
    header: String,
}

impl Render for Ip2Md {
    fn render(&self) -> String {
        let mut text = self.header.clone();
        if self.method_desc.is_none() {
            text.push_str(&format!(
                "Code start:           {}\n",
                self.method_start.as_deref().unwrap_or("?")
            ));
        }
        if let Some(e) = &self.error {
            text.push_str(&format!("Note:                 {e}\n"));
        }
        // SOS's line: the address's own line (not that of a call it returns from).
        if let (Some(f), Some(l)) = (&self.source.file, self.source.line) {
            text.push_str(&format!("Source file:  {f} @ {l}\n"));
        }
        text
    }
}

fn ip2md(s: &crate::Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let ip = parse_address(m.get_one::<String>("ip").map(String::as_str).unwrap_or(""))?;
    let w = StackWalker::for_target(&c.rt, &c.names);
    let Some((code, frame)) = w.ip_to_method(ip)? else {
        return Err(CommandError::not_found(
            format!("{ip:#x}"),
            "not managed code (no RangeSection holds it)",
        ));
    };
    let r = ObjectReader::new(&c.rt, &c.names);
    let m = method_of(&c, &r, code, frame);
    let lines = clrdata::model::stack::source::SourceLines::for_target(&c.rt);
    let source = lines.code_source(&w, ip, ip, m.frame.module.zip(m.frame.token));
    let out = Ip2Md {
        ip: hex(ip),
        kind: Some(m.code.kind),
        method_start: Some(hex(m.code.method_start)),
        method_desc: m.frame.method_desc.map(hex),
        module: m.frame.module.map(hex),
        token: m.frame.token.map(|t| format!("{t:08x}")),
        method: m.name(),
        error: m.frame.method_error.clone(),
        source,
        header: header(&m),
    };
    Ok(Output::rendered("ip2md", out))
}
