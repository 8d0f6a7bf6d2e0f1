//! The GC references of a walked stack, as the runtime's own GC stack walk reports them
//! (`GcStackCrawlCallBack` over `StackFrameIterator`, what the DAC's `GetStackReferences` and
//! the cDAC's `WalkStackReferences` return):
//!
//! - a managed frame: the slots its GC info names live at its IP (`EECodeManager::EnumGcRefs`,
//!   decoded by clrcodeinfo::gcinfo), asked the way the stack walk asks
//!   ([`FrameContext`]: the active frame, a frame interrupted by an exception, a funclet's
//!   parent), stack slots placed with the frame's SP, frame register and caller's SP,
//!   register slots read from the registers the unwind restored;
//! - an explicit Frame: the references it protects (`Frame::GcScanRoots`): a
//!   HelperMethodFrame_1OBJ/2OBJ/3OBJ's `gcPtrs`, a HelperMethodFrame_PROTECTOBJ's array;
//! - funclets (`StackFrameIterator::Filter` in GC reporting mode): a catch, finally or fault
//!   funclet reports its own slots; the frames between it and its parent frame (the same
//!   method's main body, sharing its frame register) are skipped, and the parent reports
//!   only what the funclet does not ([`LivenessQuery::parent_of_funclet`]).
//!
//! Where a managed frame's GC info cannot be found or decoded, that frame alone is scanned
//! conservatively (every word of `[SP, caller's SP)` and, for the active frame, every
//! register, that points into the GC heap), and so is the rest of the stack where the walk
//! stopped early: each such range is listed in [`StackRefs::conservative`] with the reason,
//! and its references carry [`RefSource::Conservative`].
//!
//! Null slots are reported too (the DAC does; ClrMD leaves them out): a root is a non-null one.

use super::codeman::CodeInfo;
use super::{FrameContext, FrameKind, StackFrame, StackWalker, ThreadStack, REG_NAMES};
use crate::model::dso::for_each_word;
use clrcodeinfo::gcinfo::{Abi, FrameAddresses, GcInfo, LivenessQuery, SlotLocation, StackBase};
use clrcodeinfo::GcInfoError;
use dumpreader::Memory;
use serde::Serialize;
use std::sync::Arc;

/// How much of a GC info blob is read first (most are a few dozen bytes); a blob that does not
/// fit is read again with [`GC_INFO_MAX`].
const GC_INFO_FIRST_READ: usize = 4 << 10;
/// The largest GC info blob read.
const GC_INFO_MAX: usize = 1 << 20;
/// Bound on a HelperMethodFrame_PROTECTOBJ's references.
const MAX_PROTECTED: u32 = 1024;
/// Bound on the bytes of one conservatively scanned range.
const MAX_CONSERVATIVE_BYTES: u64 = 64 << 20;

/// Where a stack reference was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RefSource {
    /// A managed frame's GC info: a slot live at the frame's IP.
    GcInfo,
    /// An explicit Frame's protected references (`Frame::GcScanRoots`).
    Frame,
    /// A conservative scan of a frame (or of the stack beyond the walk) whose GC info could not
    /// be read: a word pointing into the GC heap, live or stale.
    Conservative,
}

/// One reference on a thread's stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StackRef {
    /// The reporting frame's index in [`ThreadStack::frames`] (None: the stack beyond the
    /// walk's end, scanned conservatively).
    pub frame: Option<usize>,
    /// The reporting frame's SP (for an explicit Frame: the registers' SP when the walk
    /// reached it, as the DAC reports).
    pub frame_sp: u64,
    /// The reporting frame's IP.
    pub frame_ip: u64,
    /// The explicit Frame reporting it, if one does.
    pub explicit_frame: Option<u64>,
    /// The stack slot holding the reference; None for a register.
    pub address: Option<u64>,
    /// The register holding it (`address` None), or the register its slot is relative to
    /// (`rsp`, `rbp`; `caller_sp` for the caller's SP), as the DAC names them.
    pub register: Option<&'static str>,
    /// The slot's offset from `register`.
    pub offset: i32,
    /// The value: an object, an interior pointer, or null.
    pub value: u64,
    /// The GC info calls it an interior pointer (a byref): it may point into an object, or
    /// outside the GC heap (then it keeps nothing alive).
    pub interior: bool,
    /// The GC info calls it pinned.
    pub pinned: bool,
    /// How it was found.
    pub source: RefSource,
}

/// A range of a stack taken conservatively, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConservativeRange {
    /// The frame's index in [`ThreadStack::frames`] (None: the stack beyond the walk's end).
    pub frame: Option<usize>,
    /// The range's first byte.
    pub from: u64,
    /// Its end (exclusive).
    pub to: u64,
    /// Why the frame's references could not be read precisely.
    pub reason: String,
}

/// The references of one thread's stack.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StackRefs {
    /// In stack-walk order: each frame's slots (tracked ones by slot number, then untracked
    /// ones), innermost frame first.
    pub refs: Vec<StackRef>,
    /// The ranges taken conservatively.
    pub conservative: Vec<ConservativeRange>,
    /// What else could not be read (a live slot outside the dump, ...).
    pub notes: Vec<String>,
}

pub use super::gcerror::FrameRefsError;

/// A managed frame's code and GC info, as the funclet pass needs them.
struct ManagedCode {
    info: CodeInfo,
    funclet: bool,
}

impl<'a, M: Memory> StackWalker<'a, M> {
    /// The GC references of `stack` (walked by [`StackWalker::walk`]). `stack_end` is the end
    /// of the thread's stack memory (for the conservative scan of the part the walk did not
    /// reach); `in_heap` says whether a value points into the GC heap (what a conservative scan
    /// keeps).
    pub fn gc_refs(
        &self,
        stack: &ThreadStack,
        stack_end: Option<u64>,
        in_heap: &dyn Fn(u64) -> bool,
    ) -> StackRefs {
        let mut out = StackRefs::default();
        let frames = &stack.frames;
        let code: Vec<Option<ManagedCode>> = frames
            .iter()
            .map(|f| {
                if f.kind != FrameKind::Managed {
                    return None;
                }
                let info = self.code.lookup(self.rt, f.ip).ok().flatten()?;
                let funclet = info.unwind.start() != info.method_start;
                Some(ManagedCode { info, funclet })
            })
            .collect();
        // Funclets: a catch/finally/fault funclet's parent is the next frame of the same
        // method's main body sharing its frame register (funclets run on their parent's frame:
        // the JIT gives methods with funclets a frame pointer and passes it to them); the
        // frames between are skipped. A filter runs in the first pass, the frames between it
        // and its parent still live: only its untracked slots are left to the parent.
        let mut skipped = vec![false; frames.len()];
        let mut parent_of_funclet = vec![false; frames.len()];
        let mut filter = vec![false; frames.len()];
        let mut i = 0;
        while i < frames.len() {
            let Some(c) = code[i].as_ref().filter(|c| c.funclet) else {
                i += 1;
                continue;
            };
            match self.code.is_filter_funclet(self.rt, &c.info) {
                Ok(true) => {
                    filter[i] = true;
                    i += 1;
                    continue;
                }
                Ok(false) => {}
                Err(e) => out.notes.push(format!(
                    "frame {i} ({:#x}) is a funclet whose EH clauses could not be read ({e}): \
                     taken as a catch, finally or fault funclet",
                    frames[i].ip
                )),
            }
            let fp = frame_pointer(&frames[i]);
            let parent = (i + 1..frames.len()).find(|&j| {
                code[j].as_ref().is_some_and(|p| {
                    !p.funclet
                        && p.info.method_start == c.info.method_start
                        && frame_pointer(&frames[j]) == fp
                })
            });
            match parent {
                Some(j) => {
                    skipped[i + 1..j].iter_mut().for_each(|s| *s = true);
                    parent_of_funclet[j] = true;
                    i = j;
                }
                None => {
                    out.notes.push(format!(
                        "frame {i} ({:#x}) is a funclet whose parent frame is not on the \
                         stack walked: the frames after it are reported as they are",
                        frames[i].ip
                    ));
                    i += 1;
                }
            }
        }
        for (i, f) in frames.iter().enumerate() {
            if skipped[i] {
                continue;
            }
            match f.kind {
                FrameKind::Explicit => {
                    // Where a Frame's references lie when they cannot be read precisely: from
                    // the Frame to the next managed frame's SP (its transition block).
                    let next_sp = frames[i + 1..]
                        .iter()
                        .find(|n| n.kind == FrameKind::Managed)
                        .map(|n| n.sp);
                    self.frame_refs(i, f, next_sp, in_heap, &mut out)
                }
                FrameKind::Managed => {
                    let Some(c) = code[i].as_ref() else {
                        self.fallback(i, f, FrameRefsError::CodeNotFound, in_heap, &mut out);
                        continue;
                    };
                    let flags = Flags {
                        parent_of_funclet: parent_of_funclet[i],
                        filter: filter[i],
                    };
                    if let Err(why) = self.managed_refs(i, f, &c.info, flags, &mut out) {
                        self.fallback(i, f, why, in_heap, &mut out);
                    }
                }
                FrameKind::Native => {}
            }
        }
        // The part of the stack the walk did not reach.
        if stack.incomplete.is_some() {
            let from = frames
                .iter()
                .rev()
                .find_map(|f| f.context.and_then(|c| c.caller_sp).or(Some(f.sp)))
                .or_else(|| self.registers(stack.os_id).map(|r| r.sp()));
            if frames.is_empty() {
                // Nothing walked: the thread's registers too.
                if let Some(regs) = self.registers(stack.os_id) {
                    let f = StackFrame {
                        sp: regs.sp(),
                        ip: regs.rip,
                        context: Some(FrameContext {
                            regs,
                            active: true,
                            ..FrameContext::default()
                        }),
                        ..self.blank_frame()
                    };
                    self.register_scan(None, &f, in_heap, &mut out);
                }
            }
            if let (Some(from), Some(to)) = (from, stack_end) {
                if to > from {
                    let reason = format!(
                        "the stack walk stopped: {}",
                        stack.incomplete.as_deref().unwrap_or_default()
                    );
                    self.scan(None, (0, 0), from, to, reason, in_heap, &mut out);
                }
            }
        }
        out
    }

    /// The GC info of the method at `info`, decoded (cached by the blob's address).
    pub fn decoded_gc_info(&self, info: &CodeInfo) -> Result<Arc<GcInfo>, FrameRefsError> {
        let addr = self
            .code
            .gc_info(self.rt, info)
            .map_err(FrameRefsError::GcInfoNotFound)?;
        if let Some(r) = self
            .gc_infos
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&addr)
        {
            return r.clone();
        }
        let r = (|| {
            let version = self
                .code
                .gc_info_version(self.rt, info)
                .map_err(FrameRefsError::GcInfoVersion)?;
            let mem = self.code.memory(self.rt.memory());
            let mut want = GC_INFO_FIRST_READ;
            let (bytes, g) = loop {
                let bytes = mem.read_bytes(addr, want);
                let g = GcInfo::decode(&bytes, version);
                match g {
                    Err(clrcodeinfo::GcInfoError::Truncated { .. })
                        if bytes.len() == want && want < GC_INFO_MAX =>
                    {
                        want = GC_INFO_MAX;
                    }
                    // The dump ends inside the blob (it keeps the pages the runtime's own
                    // reads touched): what is there, the live states a query needs may be.
                    Err(clrcodeinfo::GcInfoError::Truncated { .. }) if bytes.len() < want => {
                        let g = GcInfo::decode_available(&bytes, version);
                        break (bytes, g);
                    }
                    g => break (bytes, g),
                }
            };
            g.map(Arc::new).map_err(|error| {
                if bytes.is_empty() {
                    FrameRefsError::GcInfoNotInDump { addr }
                } else {
                    FrameRefsError::GcInfoDecode { addr, error }
                }
            })
        })();
        self.gc_infos
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(addr, r.clone());
        r
    }

    /// A managed frame's live slots (`EECodeManager::EnumGcRefs`); Err: why its GC info could
    /// not be read (the caller scans the frame conservatively instead).
    fn managed_refs(
        &self,
        index: usize,
        f: &StackFrame,
        info: &CodeInfo,
        flags: Flags,
        out: &mut StackRefs,
    ) -> Result<(), FrameRefsError> {
        let ctx = f.context.ok_or(FrameRefsError::NoRegisters)?;
        let g = self.decoded_gc_info(info)?;
        let offset = u32::try_from(f.ip.wrapping_sub(info.method_start))
            .ok()
            .filter(|&o| o <= g.header.code_length)
            .ok_or(FrameRefsError::IpBeyondCode {
                ip: f.ip,
                length: g.header.code_length,
            })?;
        let frame_register = g.header.stack_base_register;
        let caller_sp = ctx.caller_sp.ok_or(FrameRefsError::NotUnwound)?;
        let addrs = FrameAddresses {
            sp: ctx.regs.sp(),
            frame_register: frame_register.map(|r| ctx.regs.gpr[r as usize]),
            caller_sp,
        };
        let needs_range = GcInfo::aborted_needs_range(self.rt.layout.family.major());
        let q = query(&ctx, flags, self.abi(), addrs, needs_range);
        let live = g.live_slots_at(offset, &q).map_err(|error| {
            if !g.is_complete() && matches!(error, GcInfoError::Truncated { .. }) {
                FrameRefsError::LiveSlotsNotInDump { offset, error }
            } else {
                FrameRefsError::LiveSlots(error)
            }
        })?;
        let mem = self.rt.memory();
        for l in live {
            let (address, register, off, value) = match l.slot.location {
                SlotLocation::Register(r) => {
                    (None, REG_NAMES[r as usize], 0, ctx.regs.gpr[r as usize])
                }
                SlotLocation::Stack { base, offset } => {
                    let Some(a) = g.slot_address(&l.slot, &addrs) else {
                        continue; // frame-relative without a frame register: refused at decode
                    };
                    let reg = match base {
                        StackBase::Sp => "rsp",
                        StackBase::CallerSp => "caller_sp",
                        StackBase::Frame => REG_NAMES[frame_register.unwrap_or(5) as usize],
                    };
                    let Ok(v) = mem.read_u64(a) else {
                        out.notes.push(format!(
                            "frame {index} ({:#x}): live slot {a:#x} ({reg}{offset:+}) is not in \
                             the dump",
                            f.ip
                        ));
                        continue;
                    };
                    (Some(a), reg, offset, v)
                }
            };
            out.refs.push(StackRef {
                frame: Some(index),
                frame_sp: f.sp,
                frame_ip: f.ip,
                explicit_frame: None,
                address,
                register: Some(register),
                offset: off,
                value,
                interior: l.slot.flags.interior(),
                pinned: l.slot.flags.pinned(),
                source: RefSource::GcInfo,
            });
        }
        Ok(())
    }

    /// An explicit Frame's protected references (`Frame::GcScanRoots`): a HelperMethodFrame
    /// with objects (`gcPtrs[]`, or PROTECTOBJ's array) reports the OBJECTREFs those point at.
    /// The Frames that hold a context, mark a transition or a debugger's place report nothing;
    /// the transition Frames of stubs (PrestubMethodFrame and the like: the call's arguments,
    /// by its signature or GCRefMap) and any Frame not known here are scanned conservatively
    /// from the Frame to the next managed frame's SP (the arguments passed in registers, which
    /// their transition block holds; those passed on the stack, in the caller's outgoing area,
    /// are not covered), and so is a HelperMethodFrame whose `gcPtrs` offset is not known.
    fn frame_refs(
        &self,
        index: usize,
        f: &StackFrame,
        next_sp: Option<u64>,
        in_heap: &dyn Fn(u64) -> bool,
        out: &mut StackRefs,
    ) {
        let (Some(frame), Some(name)) = (f.frame, f.frame_name.as_deref()) else {
            return;
        };
        let l = self.rt.layout.stack();
        const REPORT_NOTHING: &[&str] = &[
            "InlinedCallFrame",
            "HelperMethodFrame",
            "SoftwareExceptionFrame",
            "FaultingExceptionFrame",
            "ResumableFrame",
            "RedirectedThreadFrame",
            "HijackFrame",
            "DebuggerClassInitMarkFrame",
            "DebuggerSecurityCodeMarkFrame",
            "DebuggerExitFrame",
            "DebuggerU2MCatchHandlerFrame",
            "ExceptionFilterFrame",
        ];
        let with_objects = name.starts_with("HelperMethodFrame_");
        if REPORT_NOTHING.contains(&name) {
            return;
        }
        if !with_objects || l.hmf_gc_refs == crate::discovery::supplement::NOT_PUBLISHED {
            let why = if with_objects {
                format!("{name} {frame:#x}: where it keeps its protected references is not known for this runtime")
            } else {
                format!(
                    "{name} {frame:#x}: the references it reports (its call's arguments) are not \
                     decoded; the arguments passed on the stack are not covered"
                )
            };
            match next_sp {
                Some(to) if to > frame => {
                    self.scan(Some(index), (f.sp, f.ip), frame, to, why, in_heap, out)
                }
                _ => out.notes.push(format!(
                    "{why}; no managed frame after it bounds it: not scanned"
                )),
            }
            return;
        }
        let mem = self.rt.memory();
        let report = |slot: u64, out: &mut StackRefs| match mem.read_u64(slot) {
            Ok(v) => out.refs.push(StackRef {
                frame: Some(index),
                frame_sp: f.sp,
                frame_ip: f.ip,
                explicit_frame: Some(frame),
                address: Some(slot),
                register: None,
                offset: 0,
                value: v,
                interior: false,
                pinned: false,
                source: RefSource::Frame,
            }),
            Err(_) => out.notes.push(format!(
                "{name} {frame:#x}: the reference it protects at {slot:#x} is not in the dump"
            )),
        };
        let count = match name {
            "HelperMethodFrame_1OBJ" => 1,
            "HelperMethodFrame_2OBJ" => 2,
            "HelperMethodFrame_3OBJ" => 3,
            "HelperMethodFrame_PROTECTOBJ" => {
                let at = frame.wrapping_add(l.hmf_gc_refs);
                match (mem.read_u64(at), mem.read_u32(at.wrapping_add(8))) {
                    (Ok(refs), Ok(n)) if n <= MAX_PROTECTED => {
                        for k in 0..n as u64 {
                            report(refs.wrapping_add(8 * k), out);
                        }
                    }
                    _ => out.notes.push(format!(
                        "{name} {frame:#x}: its protected references are not readable"
                    )),
                }
                return;
            }
            _ => 0,
        };
        for k in 0..count {
            let at = frame.wrapping_add(l.hmf_gc_refs + 8 * k);
            match mem.read_u64(at) {
                // GCPROTECT leaves a pointer null while it protects nothing.
                Ok(0) => {}
                Ok(p) => report(p, out),
                Err(_) => out
                    .notes
                    .push(format!("{name} {frame:#x}: gcPtrs[{k}] is not in the dump")),
            }
        }
    }

    /// Scans a managed frame whose GC info could not be read conservatively: its stack
    /// `[SP, caller's SP)` (to the next frame's SP when it was not unwound), and its registers:
    /// every one when it is the active frame, else the callee-saved ones (what the unwind
    /// restored: a reference the frame keeps in one lives in no slot of its own).
    fn fallback(
        &self,
        index: usize,
        f: &StackFrame,
        why: FrameRefsError,
        in_heap: &dyn Fn(u64) -> bool,
        out: &mut StackRefs,
    ) {
        let ctx = f.context.unwrap_or_default();
        self.register_scan(Some(index), f, in_heap, out);
        let to = ctx.caller_sp.unwrap_or(f.sp);
        self.scan(
            Some(index),
            (f.sp, f.ip),
            f.sp,
            to,
            format!("frame {index} ({:#x}): {why}", f.ip),
            in_heap,
            out,
        );
        if to <= f.sp {
            out.notes.push(format!(
                "frame {index} ({:#x}): {why}; its extent is not known, no slot of it is read",
                f.ip
            ));
        }
    }

    /// Takes the registers of frame `f` pointing into the GC heap as conservative references:
    /// all but rsp for the active frame, the callee-saved ones for any other.
    fn register_scan(
        &self,
        index: Option<usize>,
        f: &StackFrame,
        in_heap: &dyn Fn(u64) -> bool,
        out: &mut StackRefs,
    ) {
        let Some(ctx) = f.context else { return };
        let abi = self.abi();
        for (r, &v) in ctx.regs.gpr.iter().enumerate() {
            let live = if ctx.active {
                r != super::unwind::RSP
            } else {
                !abi.is_scratch_register(r as u8) && r != super::unwind::RSP
            };
            if live && in_heap(v) {
                out.refs.push(StackRef {
                    frame: index,
                    frame_sp: f.sp,
                    frame_ip: f.ip,
                    explicit_frame: None,
                    address: None,
                    register: Some(REG_NAMES[r]),
                    offset: 0,
                    value: v,
                    interior: false,
                    pinned: false,
                    source: RefSource::Conservative,
                });
            }
        }
    }

    /// Takes every word of `[from, to)` pointing into the GC heap, as a conservative
    /// reference of frame `index` (at `sp_ip`).
    #[allow(clippy::too_many_arguments)]
    fn scan(
        &self,
        index: Option<usize>,
        sp_ip: (u64, u64),
        from: u64,
        to: u64,
        reason: String,
        in_heap: &dyn Fn(u64) -> bool,
        out: &mut StackRefs,
    ) {
        let from = from & !7;
        let to = to.min(from.saturating_add(MAX_CONSERVATIVE_BYTES));
        if to <= from {
            return;
        }
        let stopped = for_each_word(self.rt.memory(), from, to, |slot, v| {
            if in_heap(v) {
                out.refs.push(StackRef {
                    frame: index,
                    frame_sp: sp_ip.0,
                    frame_ip: sp_ip.1,
                    explicit_frame: None,
                    address: Some(slot),
                    register: None,
                    offset: 0,
                    value: v,
                    interior: false,
                    pinned: false,
                    source: RefSource::Conservative,
                });
            }
        });
        if stopped < to {
            out.notes.push(format!(
                "the stack {from:#x}..{to:#x} is readable only to {stopped:#x}"
            ));
        }
        out.conservative.push(ConservativeRange {
            frame: index,
            from,
            to,
            reason,
        });
    }

    /// The calling convention of the target (which registers a call preserves).
    fn abi(&self) -> Abi {
        match self.rt.layout.os {
            crate::discovery::layout::TargetOs::Windows => Abi::Windows,
            crate::discovery::layout::TargetOs::Linux => Abi::Unix,
        }
    }
}

/// What the funclet pass decided of a managed frame.
#[derive(Debug, Clone, Copy, Default)]
struct Flags {
    parent_of_funclet: bool,
    filter: bool,
}

/// How the runtime asks a frame's GC info (`CrawlFrame::GetCodeManagerFlags`), and how its
/// decoder answers an aborted frame outside interruptible ranges (`aborted_needs_range`:
/// `GcInfo::aborted_needs_range` of the runtime's major version).
fn query(
    ctx: &FrameContext,
    flags: Flags,
    abi: Abi,
    frame: FrameAddresses,
    aborted_needs_range: bool,
) -> LivenessQuery {
    LivenessQuery {
        active_frame: ctx.active,
        execution_aborted: ctx.interrupted,
        // A Frame that saved a throwing call's context (not a fault's): the IP is that call's
        // return address.
        aborting_call: ctx.interrupted && !ctx.faulted && !ctx.active,
        parent_of_funclet: flags.parent_of_funclet,
        no_report_untracked: flags.filter,
        aborted_needs_range,
        abi,
        frame: Some(frame),
    }
}

/// A frame's rbp (the frame register of methods with funclets).
fn frame_pointer(f: &StackFrame) -> Option<u64> {
    f.context.map(|c| c.regs.gpr[super::unwind::RBP])
}
