//! Shared by the truth tests: loading `tests/data/*.json` (made by `tools/make_testdata.py`
//! from corpus dumps) and rendering decoded GC info the way SOS's `gcinfo` prints it.

#![allow(dead_code)]

use clrcodeinfo::debuginfo::DebugInfoFormat;
use clrcodeinfo::gcinfo::{GcInfo, GenericsContextKind, LiveSlot, SlotLocation, StackBase};
use serde_json::Value;
use std::path::PathBuf;

pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// Every data file, by name; a test that finds none fails (the data is committed).
pub fn data_files() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(data_dir())
        .expect("tests/data")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    for p in paths {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        out.push((p.file_stem().unwrap().to_string_lossy().to_string(), v));
    }
    assert!(!out.is_empty(), "no test data in {}", data_dir().display());
    out
}

pub fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

pub fn addr(v: &Value) -> u64 {
    let s = v.as_str().unwrap();
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
}

pub fn format_of(s: &str) -> DebugInfoFormat {
    match s {
        "net8-jit" => DebugInfoFormat::Net8 { flag_byte: true },
        "net8-r2r" => DebugInfoFormat::Net8 { flag_byte: false },
        "net10-jit" => DebugInfoFormat::Net10 { flag_byte: true },
        "net10-r2r" => DebugInfoFormat::Net10 { flag_byte: false },
        "net11" => DebugInfoFormat::Net11,
        other => panic!("unknown debug info format {other}"),
    }
}

const REG_NAMES: [&str; 16] = [
    "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13",
    "r14", "r15",
];

/// `ReturnKindToString` (gcinfotypes.h, non-x86).
fn return_kind(k: u8) -> &'static str {
    match k {
        0 => "Scalar",
        1 => "Object",
        2 => "ByRef",
        3 => "UNSET",
        4 => "{Scalar, Object}",
        8 => "{Scalar, ByRef}",
        5 => "{Object, Object}",
        9 => "{Object, ByRef}",
        6 => "{ByRef, Object}",
        10 => "{ByRef, ByRef}",
        0xFF => "<Illegal>",
        _ => "!Impossible!",
    }
}

fn signed(o: i64) -> String {
    if o < 0 {
        format!("-{:x}", -o)
    } else {
        format!("+{:x}", o)
    }
}

/// What SOS's `gcinfo` prints after "Pointer table:" (dotnet/diagnostics
/// `src/shared/gcdump/gcdumpnonx86.cpp` `GCDump::DumpGCTable` and its callbacks, over
/// `GcInfoDumper::EnumerateStateChanges` in `src/shared/gcinfo/gcinfodumper.cpp`), rendered
/// from the decoded GC info. Empty lines are dropped, as in the saved truth.
pub fn sos_text(g: &GcInfo) -> String {
    let h = &g.header;
    let mut o = String::new();
    if h.generics_inst_context.is_some() || h.gs_cookie.is_none() {
        o += &format!(
            "Prolog size: {}\n",
            h.prolog_size
                .filter(|_| h.gs_cookie.is_some() || h.generics_inst_context.is_some())
                .unwrap_or(0)
        );
    }
    match &h.gs_cookie {
        None => o += "GS cookie: <none>\n",
        Some(c) => {
            o += &format!(
                "GS cookie: caller.sp{}\n",
                signed(c.caller_sp_offset as i64)
            );
            o += &format!(
                "GS cookie valid range: [{:x};{:x})\n",
                c.valid_range.start, c.valid_range.end
            );
        }
    }
    match h.psp_sym {
        None => o += "PSPSym: <none>\n",
        Some(p) => o += &format!("PSPSym: initial.sp{}\n", signed(p as i64)),
    }
    match &h.generics_inst_context {
        None => o += "Generics inst context: <none>\n",
        Some(c) => {
            o += &format!(
                "Generics inst context: caller.sp{}\n",
                signed(c.offset as i64)
            )
        }
    }
    match h.psp_sym {
        None => o += "PSP slot: <none>\n",
        Some(p) => o += &format!("PSP slot: caller.sp{}\n", signed(p as i64)),
    }
    match &h.generics_inst_context {
        None => o += "GenericInst slot: <none>\n",
        Some(c) => {
            let kind = match c.kind {
                GenericsContextKind::MethodDesc => "GENERIC_PARAM_CONTEXT_METHODDESC",
                GenericsContextKind::MethodTable => "GENERIC_PARAM_CONTEXT_METHODHANDLE",
                GenericsContextKind::This => "GENERIC_PARAM_CONTEXT_THIS",
            };
            o += &format!(
                "GenericInst slot: caller.sp{} ({kind})\n",
                signed(c.offset as i64)
            );
        }
    }
    o += &format!("Varargs: {}\n", h.is_vararg() as u32);
    o += &format!(
        "Frame pointer: {}\n",
        h.stack_base_register
            .map(|r| REG_NAMES[r as usize])
            .unwrap_or("<none>")
    );
    o += &format!(
        "Wants Report Only Leaf: {}\n",
        h.flags
            .has(clrcodeinfo::gcinfo::HeaderFlags::WANTS_REPORT_ONLY_LEAF) as u32
    );
    o += &format!(
        "Size of parameter area: {:x}\n",
        h.size_of_stack_outgoing_and_scratch_area
    );
    if let Some(k) = h.return_kind {
        o += &format!("Return Kind: {}\n", return_kind(k));
    }
    o += &format!("Code size: {:x}\n", h.code_length);
    o += &sos_states(g);
    o.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| format!("{}\n", l.trim_end()))
        .collect()
}

struct Printer {
    out: String,
    last: u32,
    any: bool,
    safe_point: bool,
    frame_reg: Option<u8>,
}

impl Printer {
    fn slot(&mut self, offset: u32, s: &LiveSlot, live: bool) {
        if self.safe_point && !live {
            return; // "Don't print deaths for safepoints"
        }
        if self.last != offset {
            if self.any {
                self.out.push('\n');
            }
            if offset == u32::MAX - 1 && !self.any {
                self.out += "Untracked:";
            } else {
                self.out += &format!("{offset:08x}");
            }
            self.last = offset;
        }
        let d = if live { '+' } else { '-' };
        match s.slot.location {
            SlotLocation::Register(r) => self.out += &format!(" {d}{}", REG_NAMES[r as usize]),
            SlotLocation::Stack { base, offset } => {
                // The dumper's base fix-ups (GCINFODUMPER_IS_FIXED undefined).
                let mut base = base;
                let mut o = offset as i64;
                let mut sign = '+';
                if o < 0 {
                    o = -o;
                    sign = '-';
                    if base == StackBase::Sp {
                        base = StackBase::CallerSp;
                    }
                } else if base == StackBase::CallerSp {
                    base = StackBase::Sp;
                }
                let b = match base {
                    StackBase::CallerSp => "caller.sp",
                    StackBase::Sp => "sp",
                    StackBase::Frame => self
                        .frame_reg
                        .map(|r| REG_NAMES[r as usize])
                        .unwrap_or("???"),
                };
                self.out += &format!(" {d}{b}{sign}{o:x}");
            }
        }
        if s.slot.flags.pinned() {
            self.out += "(pinned)";
        }
        if s.slot.flags.interior() {
            self.out += "(interior)";
        }
        self.any = true;
    }
}

fn same(a: &LiveSlot, b: &LiveSlot) -> bool {
    a.slot.location == b.slot.location && a.slot.flags == b.slot.flags
}

/// `ReportPointerDifferences`: deaths of the previous state, then births, each in the order
/// of the dumper's record lists (built by prepending: reverse reporting order).
fn diff(p: &mut Printer, offset: u32, prev: &[LiveSlot], now: &[LiveSlot]) {
    for old in prev.iter().rev() {
        if !now.iter().any(|n| same(n, old)) {
            p.slot(offset, old, false);
        }
    }
    for new in now.iter().rev() {
        if !prev.iter().any(|o| same(o, new)) {
            p.slot(offset, new, true);
        }
    }
}

fn sos_states(g: &GcInfo) -> String {
    let mut p = Printer {
        out: String::new(),
        last: u32::MAX,
        any: false,
        safe_point: false,
        frame_reg: g.header.stack_base_register,
    };
    let untracked: Vec<LiveSlot> = g.untracked_slots().collect();
    diff(&mut p, u32::MAX - 1, &[], &untracked);
    let states = g.enumerate_states().expect("enumerate_states");
    let mut prev: Vec<LiveSlot> = Vec::new();
    let mut prev_int = false;
    for s in states {
        if s.interruptible != prev_int {
            if p.any {
                p.out.push('\n');
                p.any = false;
                p.safe_point = false;
            }
            p.out += &format!(
                "{:08x}{} interruptible\n",
                s.offset,
                if s.interruptible { "" } else { " not" }
            );
            p.last = u32::MAX;
            prev_int = s.interruptible;
        }
        if let Some(sp) = s.safe_point {
            if p.any {
                p.out.push('\n');
            }
            p.out += &format!("{sp:08x} is a safepoint: ");
            p.last = sp;
            p.any = true;
            p.safe_point = true;
        }
        diff(&mut p, s.offset, &prev, &s.live);
        prev = s.live;
    }
    if p.any {
        p.out.push('\n');
    }
    p.out
}
