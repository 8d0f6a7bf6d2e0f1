//! NativeAOT thread stacks: native unwinding from each thread's registers (the OS thread
//! context the dump holds) through the modules' own unwind tables ([`NativeModules`]: the
//! executable's `.eh_frame`, where ILC writes DWARF CFI for every managed method, and libc's),
//! each frame in the executable named from its symbol file ([`AotSymbolFile`], the `<app>.dbg`
//! the heap's type names come from; ILC's mangled names as written, `hang_Hang_Program__Main`)
//! or said `<stripped>`.
//!
//! The runtime's own C++ code linked into the executable (the GC, the thread waits, the crash
//! dump launch) has no `.eh_frame` entry in the 8, 10 and 11 builds (dumps/README.md, "The
//! NativeAOT corpus"): it keeps frame pointers (`push rbp; mov rbp, rsp`), so a frame there with
//! no CFI is left by its frame pointer, only where the result is checked: rbp lies above the
//! frame's sp on the stack and the saved return address follows a call instruction. Such a
//! frame says so ([`AotFrame::caller_by_frame_pointer`]).

use super::native::{NativeModules, Unwound};
use super::unwind::{Regs, RSP};
use crate::discovery::nativeaot::{AotSymbolFile, AotThread, NativeAot};
use dumpreader::Target;
use serde::Serialize;

/// The most frames one walk takes.
const MAX_FRAMES: usize = 4096;
/// rbp = Windows unwind register 5.
const RBP: usize = 5;
/// How far above sp a frame pointer may lie (a thread's stack is at most this big here).
const MAX_FRAME_POINTER_DISTANCE: u64 = 64 << 20;

/// Where a frame's code is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AotFrameKind {
    /// The app's executable: managed methods, and the runtime's code linked into it.
    App,
    /// Another module (libc, libstdc++, ...): native code.
    Native,
    /// No module of the dump holds the address.
    Unknown,
}

/// One frame of a NativeAOT thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AotFrame {
    /// The frame's stack pointer.
    #[serde(serialize_with = "dumpreader::json::hex")]
    pub sp: u64,
    /// Its instruction pointer (a return address past the innermost frame).
    #[serde(serialize_with = "dumpreader::json::hex")]
    pub ip: u64,
    /// Where the code is.
    pub kind: AotFrameKind,
    /// The module's file name.
    pub module: Option<String>,
    /// `ip`'s offset in the module.
    #[serde(serialize_with = "dumpreader::json::hex")]
    pub module_offset: u64,
    /// The function's symbol: in the executable from its symbol file (ILC's mangled name for a
    /// managed method), elsewhere the module's own symbols. None: `<stripped>`.
    pub symbol: Option<String>,
    /// `ip`'s offset in the symbol.
    pub symbol_offset: Option<u64>,
    /// Whether this frame's caller was found by its frame pointer (the code has no CFI).
    pub caller_by_frame_pointer: bool,
}

impl AotFrame {
    /// `module!symbol+0x..`, `<stripped> module+0x..`, or the bare address.
    pub fn call_site(&self) -> String {
        match (&self.module, &self.symbol) {
            (Some(m), Some(s)) => match self.symbol_offset {
                Some(0) | None => format!("{m}!{s}"),
                Some(o) => format!("{m}!{s}+{o:#x}"),
            },
            (Some(m), None) if self.kind == AotFrameKind::App => {
                format!("<stripped> {m}+{:#x}", self.module_offset)
            }
            (Some(m), None) => format!("{m}+{:#x}", self.module_offset),
            (None, _) => format!("{:#x}", self.ip),
        }
    }

    /// The frame's name as `pstacks` groups it: the symbol, or `<stripped> module+0x..`.
    pub fn method(&self) -> String {
        match &self.symbol {
            Some(s) => s.clone(),
            None => self.call_site(),
        }
    }
}

/// How a walk ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AotStackEnd {
    /// At the thread's first frame: its unwind information has no return address (`_start`,
    /// `clone3`).
    ThreadStart,
    /// Stopped before: why.
    Stopped {
        /// What stopped it.
        reason: String,
    },
}

/// One thread's stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AotStack {
    /// The OS thread id.
    pub os_id: u64,
    /// The runtime's Thread.
    #[serde(serialize_with = "dumpreader::json::hex")]
    pub thread: u64,
    /// The frames, innermost first.
    pub frames: Vec<AotFrame>,
    /// How the walk ended.
    pub end: AotStackEnd,
    /// Where the native walk from the registers stopped before the thread's transition
    /// frame and went on from that frame: the frames between are missing.
    pub gap: Option<AotGap>,
}

/// Native frames not unwound: the walk went on from the thread's transition frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AotGap {
    /// Why the walk from the registers stopped.
    pub reason: String,
    /// The transition frame (`PInvokeTransitionFrame`) it went on from.
    #[serde(serialize_with = "dumpreader::json::hex")]
    pub transition_frame: u64,
}

/// `PInvokeTransitionFrame` (nativeaot/Runtime/inc/rhbinder.h, amd64): `m_RIP` (the managed
/// caller's return address), `m_FramePointer` (its rbp), `m_pThread`, `u32 m_Flags`,
/// `m_PreservedRegs[]`; RhpPInvoke (amd64 PInvoke.S) sets the flags to `PTFF_SAVE_RSP` and
/// the first preserved register to the caller's rsp. Checked on every 8, 10 and 11 corpus dump:
/// each waiting thread's frame points back at its thread with flags 0x8000.
const PTF_RIP: u64 = 0;
const PTF_FRAME_POINTER: u64 = 8;
const PTF_THREAD: u64 = 16;
const PTF_FLAGS: u64 = 24;
const PTF_PRESERVED: u64 = 32;
/// `PTFF_SAVE_RSP` (amd64): the first preserved register is the caller's rsp.
const PTFF_SAVE_RSP: u32 = 0x8000;

impl AotStack {
    /// The frames in the executable, named (symbol or `<stripped> module+0x..`), root first.
    pub fn app_methods_root_first(&self) -> Vec<String> {
        self.frames
            .iter()
            .rev()
            .filter(|f| f.kind == AotFrameKind::App)
            .map(AotFrame::method)
            .collect()
    }
}

/// Where the executable's frames are named from, or why they are not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AotFrameNames {
    /// The function symbols of the executable's symbol file (its build id checked).
    Symbols {
        /// The file.
        file: String,
        /// How many function symbols it holds.
        functions: usize,
    },
    /// None: the executable's frames are `<stripped>` (its `.dynsym` exports aside).
    Unnamed {
        /// Why.
        reason: String,
        /// The files looked for, and what was wrong with each that exists.
        looked_for: Vec<String>,
    },
}

/// Walks NativeAOT threads.
pub struct AotStackWalker<'t> {
    target: &'t dyn Target,
    modules: NativeModules<'t>,
    base: u64,
    symbols: Option<AotSymbolFile>,
    /// Where the names come from.
    pub names: AotFrameNames,
}

impl<'t> AotStackWalker<'t> {
    /// For the app `aot` of `target`, its symbol file looked for once.
    pub fn new(target: &'t dyn Target, aot: &NativeAot) -> AotStackWalker<'t> {
        let (symbols, names) = match aot.symbol_file(target) {
            Ok(f) => {
                let names = AotFrameNames::Symbols {
                    file: f.path.display().to_string(),
                    functions: f.functions.len(),
                };
                (Some(f), names)
            }
            Err((reason, looked_for)) => (None, AotFrameNames::Unnamed { reason, looked_for }),
        };
        AotStackWalker {
            target,
            modules: NativeModules::new(target),
            base: aot.base,
            symbols,
            names,
        }
    }

    fn is_app(&self, addr: u64) -> bool {
        self.target
            .modules()
            .iter()
            .filter(|m| m.contains(addr))
            .max_by_key(|m| m.base)
            .is_some_and(|m| m.base == self.base)
    }

    fn frame(&self, regs: &Regs, is_return: bool) -> AotFrame {
        let look = if is_return {
            regs.rip.wrapping_sub(1)
        } else {
            regs.rip
        };
        let n = self.modules.name(regs.rip, is_return);
        let module_base = self
            .target
            .modules()
            .iter()
            .filter(|m| m.contains(look))
            .max_by_key(|m| m.base)
            .map(|m| m.base);
        let kind = match module_base {
            Some(b) if b == self.base => AotFrameKind::App,
            Some(_) => AotFrameKind::Native,
            None => AotFrameKind::Unknown,
        };
        let (mut symbol, mut symbol_offset) =
            (n.symbol.clone(), n.symbol.as_ref().map(|_| n.offset));
        if kind == AotFrameKind::App {
            if let Some((s, off)) = self.symbols.as_ref().and_then(|f| f.function_at(look)) {
                symbol = Some(s.to_string());
                symbol_offset = Some(off + (regs.rip - look));
            }
        }
        AotFrame {
            sp: regs.sp(),
            ip: regs.rip,
            kind,
            module: n.module,
            module_offset: module_base.map_or(regs.rip, |b| regs.rip - b),
            symbol,
            symbol_offset,
            caller_by_frame_pointer: false,
        }
    }

    /// Leaves a frame of the executable that has no CFI by its frame pointer: the caller's rip
    /// is at rbp+8, its rsp rbp+16, its rbp at rbp. Refused (saying why) unless rbp lies above
    /// sp on the stack and the return address follows a call instruction in a module.
    fn by_frame_pointer(&self, regs: &Regs) -> std::result::Result<Regs, FramePointerRefused> {
        use FramePointerRefused as R;
        let (sp, fp) = (regs.sp(), regs.gpr[RBP]);
        if fp < sp || fp - sp > MAX_FRAME_POINTER_DISTANCE || fp % 8 != 0 {
            return Err(R::OffStack { fp, sp });
        }
        let (Ok(saved_fp), Ok(ra)) = (self.target.read_u64(fp), self.target.read_u64(fp + 8))
        else {
            return Err(R::Unreadable { fp });
        };
        let module = self.modules.module_name(ra).ok_or(R::NoModule { ra })?;
        match follows_call(self.target, ra) {
            Some(true) => {}
            Some(false) => return Err(R::NotAfterCall { ra, module }),
            None => return Err(R::Unchecked { ra, module }),
        }
        let mut out = *regs;
        out.rip = ra;
        out.gpr[RSP] = fp + 16;
        out.gpr[RBP] = saved_fp;
        Ok(out)
    }

    /// Walks one thread from the registers the dump holds for it.
    pub fn walk(&self, thread: &AotThread) -> AotStack {
        let mut st = AotStack {
            os_id: thread.os_id,
            thread: thread.address,
            frames: Vec::new(),
            end: AotStackEnd::ThreadStart,
            gap: None,
        };
        let Some(regs) = self
            .target
            .threads()
            .iter()
            .find(|t| t.id as u64 == thread.os_id)
            .map(|t| Regs::from_context(&t.context))
        else {
            st.end = AotStackEnd::Stopped {
                reason: format!("the dump has no registers of thread {:#x}", thread.os_id),
            };
            return st;
        };
        self.run(&mut st, regs, true);
        // Stopped before the thread's transition frame: go on from it.
        if let AotStackEnd::Stopped { reason } = &st.end {
            if let Some((caller, at)) = self.transition_frame(thread) {
                let below = st.frames.last().is_none_or(|f| f.sp < caller.sp());
                if below {
                    st.gap = Some(AotGap {
                        reason: reason.clone(),
                        transition_frame: at,
                    });
                    st.end = AotStackEnd::ThreadStart;
                    self.run(&mut st, caller, false);
                }
            }
        }
        st
    }

    /// The managed caller's registers that the thread's transition frame saved (rip, rbp,
    /// rsp; the others unknown, zero), when it is one RhpPInvoke wrote: it points back at the
    /// thread, its flags are `PTFF_SAVE_RSP`, its rip is in the executable.
    fn transition_frame(&self, thread: &AotThread) -> Option<(Regs, u64)> {
        let f = thread.transition_frame;
        if f == 0 || f >= 0xffff_ffff_ffff_fffe {
            return None;
        }
        let t = self.target;
        if t.read_u64(f + PTF_THREAD).ok()? != thread.address
            || t.read_u32(f + PTF_FLAGS).ok()? != PTFF_SAVE_RSP
        {
            return None;
        }
        let rip = t.read_u64(f + PTF_RIP).ok()?;
        if !self.is_app(rip.wrapping_sub(1)) {
            return None;
        }
        let mut r = Regs { gpr: [0; 16], rip };
        r.gpr[RBP] = t.read_u64(f + PTF_FRAME_POINTER).ok()?;
        r.gpr[RSP] = t.read_u64(f + PTF_PRESERVED).ok()?;
        Some((r, f))
    }

    /// Unwinds from `regs` until the thread's first frame or a frame that cannot be left.
    fn run(&self, st: &mut AotStack, mut regs: Regs, mut innermost: bool) {
        let stop = |st: &mut AotStack, reason: String| st.end = AotStackEnd::Stopped { reason };
        loop {
            if st.frames.len() >= MAX_FRAMES {
                stop(st, format!("more than {MAX_FRAMES} frames"));
                break;
            }
            st.frames.push(self.frame(&regs, !innermost));
            if regs.rip == 0 {
                stop(st, "the instruction pointer is 0".to_string());
                break;
            }
            let before = regs;
            match self.modules.unwind(&mut regs, !innermost) {
                Ok(Unwound::Bottom) => break,
                Ok(Unwound::Caller) => {
                    if let Some(why) = super::native::went_nowhere(&before, &regs) {
                        stop(st, why);
                        break;
                    }
                }
                Err(e) => {
                    // The runtime's C++ code has no CFI; past the innermost frame it is at a
                    // call, its frame set up.
                    if innermost || !self.is_app(before.rip.wrapping_sub(1)) {
                        stop(st, e.to_string());
                        break;
                    }
                    match self.by_frame_pointer(&before) {
                        Ok(r) => {
                            regs = r;
                            if let Some(f) = st.frames.last_mut() {
                                f.caller_by_frame_pointer = true;
                            }
                        }
                        Err(why) => {
                            stop(st, format!("{e}; {why}"));
                            break;
                        }
                    }
                }
            }
            innermost = false;
        }
    }
}

/// Why a frame was not left by its frame pointer.
#[derive(Debug, thiserror::Error)]
enum FramePointerRefused {
    #[error("its frame pointer {fp:#x} is not on the stack above sp {sp:#x}")]
    OffStack { fp: u64, sp: u64 },
    #[error("its frame pointer {fp:#x} points at memory not in the dump")]
    Unreadable { fp: u64 },
    #[error("its frame pointer's return address {ra:#x} is in no module")]
    NoModule { ra: u64 },
    #[error("its frame pointer's return address {ra:#x} ({module}) does not follow a call")]
    NotAfterCall { ra: u64, module: String },
    #[error(
        "its frame pointer's return address {ra:#x} ({module}) cannot be checked: the code \
         before it is not in the dump"
    )]
    Unchecked { ra: u64, module: String },
}

/// Whether the bytes before `ra` end in a call instruction (`e8 rel32`, or `ff /2` with a
/// register, memory or displacement operand).
/// None: the bytes are not in the dump.
fn follows_call(mem: &dyn Target, ra: u64) -> Option<bool> {
    let start = ra.checked_sub(7)?;
    let b = mem.read_bytes(start, 7);
    if b.len() < 7 {
        return None;
    }
    if b[2] == 0xe8 {
        return Some(true);
    }
    // ff /2: modrm's reg field is 2; the instruction is 2 (register, [reg]), 3 (disp8, sib),
    // 4 (sib+disp8), 6 (disp32, rip-relative) or 7 (sib+disp32) bytes long, with an optional
    // REX prefix before the ff.
    Some([2usize, 3, 4, 6, 7].iter().any(|&len| {
        let i = 7 - len;
        b[i] == 0xff && (b[i + 1] >> 3) & 7 == 2
    }))
}
