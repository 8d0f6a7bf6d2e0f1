//! The text SOS's `gcinfo` prints for a method's GC info after its "Pointer table:" line
//! (dotnet/diagnostics `GCDump::DumpGCTable` over `GcInfoDumper::EnumerateStateChanges`, the
//! runtime's own dumper), rendered from the decoded [`GcInfo`]: the header (prolog size, GS
//! cookie, PSPSym, generics instantiation context, varargs, frame pointer, report-only-leaf,
//! parameter area, return kind, code size), the untracked slots, then per offset the
//! interruptible ranges, safe points and slot births and deaths. Checked line for line against
//! SOS's text on every method of `tests/data` (tests/gcinfo_truth.rs).

use crate::gcinfo::{GcInfo, GenericsContextKind, LiveSlot, Result, SlotLocation, StackBase};

/// x64 register names by number (`GetRegName`).
const REG_NAMES: [&str; 16] = [
    "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13",
    "r14", "r15",
];

/// `ReturnKindToString` (gcinfotypes.h, non-x86).
/// A register's name as SOS prints it (`rax`...`r15`); a number past the table (corrupt
/// info) as `r<n>?`.
pub fn reg(r: u8) -> String {
    REG_NAMES
        .get(r as usize)
        .map_or_else(|| format!("r{r}?"), |n| n.to_string())
}

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
pub fn sos_text(g: &GcInfo) -> Result<String> {
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
            .map_or_else(|| "<none>".to_string(), reg)
    );
    o += &format!(
        "Wants Report Only Leaf: {}\n",
        h.flags
            .has(crate::gcinfo::HeaderFlags::WANTS_REPORT_ONLY_LEAF) as u32
    );
    o += &format!(
        "Size of parameter area: {:x}\n",
        h.size_of_stack_outgoing_and_scratch_area
    );
    if let Some(k) = h.return_kind {
        o += &format!("Return Kind: {}\n", return_kind(k));
    }
    o += &format!("Code size: {:x}\n", h.code_length);
    o += &sos_states(g)?;
    Ok(o.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| format!("{}\n", l.trim_end()))
        .collect())
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
            SlotLocation::Register(r) => self.out += &format!(" {d}{}", reg(r)),
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
                    StackBase::CallerSp => "caller.sp".to_string(),
                    StackBase::Sp => "sp".to_string(),
                    StackBase::Frame => self.frame_reg.map_or_else(|| "???".to_string(), reg),
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

fn sos_states(g: &GcInfo) -> Result<String> {
    let mut p = Printer {
        out: String::new(),
        last: u32::MAX,
        any: false,
        safe_point: false,
        frame_reg: g.header.stack_base_register,
    };
    let untracked: Vec<LiveSlot> = g.untracked_slots().collect();
    diff(&mut p, u32::MAX - 1, &[], &untracked);
    let states = g.enumerate_states()?;
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
    Ok(p.out)
}
