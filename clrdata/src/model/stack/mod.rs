//! Managed stack walking without the DAC: typed frames, no printing.
//!
//! The approach (the DAC's own frame iterator, reduced to what a dump needs):
//! - Start from the thread's registers in the dump. While the IP is managed code (the
//!   RangeSectionMap knows it, [`codeman`]), report the method and unwind one frame with the
//!   code's Windows x64 UNWIND_INFO ([`unwind`]), which the runtime uses on every OS.
//! - When the IP is native code (libc, the runtime itself), take the next explicit Frame of
//!   the thread's `m_pFrame` chain: report it (its kind from its vtable, compared with the
//!   `__vtAddr` entries of g_dacTable; its method from the frame), and resume from the
//!   managed context it saved: a HelperMethodFrame's MachState (the FCALL's managed caller),
//!   an active InlinedCallFrame's call site. Frames that save no context (the
//!   DebuggerU2MCatchHandlerFrame at the bottom of a thread) are reported and passed.
//! - Before a managed frame, explicit Frames lying below its SP are reported first.
//!
//! A HelperMethodFrame whose lazy machine state the runtime never computed (a thread that
//! was not walked by a GC since) is resumed as the runtime's unwindLazyState does: from the
//! state captured in the FCALL, unwinding native frames of the runtime ([`native`]: its
//! `.eh_frame` on Linux, its `.pdata` on Windows) until the IP is managed; its method comes
//! from the FCALL hash (`gFCallMethods`).
//!
//! [`StackWalker::walk_mixed`] (`stack`) unwinds every frame instead: native frames with their
//! module's unwind tables, managed frames as above, explicit Frames placed by address; where a
//! native frame cannot be unwound it goes on from the next explicit Frame's saved context.
//! [`walk_native`] does the native part alone (a dump without a CLR the walker can read).
//! Every loop is bounded; a stack that cannot be walked further ends with the reason.

pub mod aot;
pub mod codeman;
mod eh;
mod gcerror;
pub mod gcrefs;
pub mod image_file;
pub mod native;
mod r2r;
pub mod source;
pub mod unwind;
pub mod vars;

pub use codeman::{CodeIndex, CodeInfo, CodeKind, EhClause};
pub use native::{NativeModules, NativeName, Unwound};
pub use unwind::{unwind_frame, Regs, RuntimeFunction, REG_NAMES};

use crate::data::threads::ReadThreads;
use crate::data::threads::ThreadData;
use crate::data::types::ReadTypes;
use crate::discovery::layout::{FrameTypeSource, FRAME_IDENTIFIERS, FRAME_VTABLES};
use crate::discovery::runtime::Runtime;
use crate::model::names::TypeNames;
use dumpreader::Memory;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Mutex;

/// Bound on the frames of one thread.
pub const MAX_FRAMES: usize = 4096;
/// The end of a thread's Frame chain.
const FRAME_TOP: u64 = u64::MAX;

/// What a stack frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FrameKind {
    /// Managed code (JIT'd or ReadyToRun).
    Managed,
    /// An explicit runtime Frame (HelperMethodFrame, InlinedCallFrame, ...).
    Explicit,
    /// Native code (the mixed walk of [`StackWalker::walk_mixed`] only).
    Native,
}

/// One frame of a managed stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StackFrame {
    /// Managed code or an explicit Frame.
    pub kind: FrameKind,
    /// The stack pointer of the frame (for an explicit Frame: the registers' SP when the walk
    /// reached it, as the DAC reports).
    pub sp: u64,
    /// The instruction pointer (a return address except for the innermost frame).
    pub ip: u64,
    /// The explicit Frame's address.
    pub frame: Option<u64>,
    /// The explicit Frame's class (`HelperMethodFrame`, ...).
    pub frame_name: Option<String>,
    /// The MethodDesc, when known (JIT'd code, explicit Frames).
    pub method_desc: Option<u64>,
    /// The method's Module, when known.
    pub module: Option<u64>,
    /// The method's MethodDef token, when known.
    pub token: Option<u32>,
    /// The method as the DAC names it: `System.Threading.Monitor.Wait(System.Object, Int32)`.
    pub method: Option<String>,
    /// Why the method could not be named, when it could not.
    pub method_error: Option<String>,
    /// JIT'd or ReadyToRun (managed frames).
    pub code: Option<CodeKind>,
    /// Where a native frame's code is (`module!symbol+offset`).
    pub native: Option<NativeName>,
    /// A managed frame's IL offset and source line, when asked for
    /// ([`source::SourceLines::annotate`]); absent until then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<FrameSource>,
    /// A managed frame's registers and how the runtime's GC stack walk sees it (what its GC
    /// info is asked with); not serialized.
    #[serde(skip)]
    pub context: Option<FrameContext>,
}

/// A managed frame's place in its method's IL and source, as SOS's `clrstack` finds it
/// ([`source::SourceLines`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FrameSource {
    /// The IL offset of the frame's native offset (for a frame that is not the innermost, of
    /// the byte before its return address: inside the call), by the method's debug info;
    /// `None` when the code maps to no IL offset.
    pub il_offset: Option<u32>,
    /// The source document (as the PDB names it) of the sequence point governing the offset.
    pub file: Option<String>,
    /// The sequence point's start line.
    pub line: Option<u32>,
    /// Why there is no line, when there is none (no PDB found, no debug info, ...).
    pub note: Option<String>,
}

/// What the GC stack walk needs of a managed frame beyond its SP and IP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FrameContext {
    /// The registers at the frame: the thread's own for the frame it stopped in, else what
    /// unwinding the frames below restored (the callee-saved registers) or an explicit
    /// Frame's saved context set.
    pub regs: Regs,
    /// The caller's SP (this frame unwound), when the unwind succeeded.
    pub caller_sp: Option<u64>,
    /// The active frame (`CrawlFrame::IsActiveFunc`): the thread stopped in it, at `ip`
    /// itself rather than at a call's return address; scratch registers and the outgoing
    /// argument area are live only there.
    pub active: bool,
    /// Reached through an exception Frame (`isInterrupted`: a FaultingExceptionFrame, a
    /// SoftwareExceptionFrame, a HelperMethodFrame with `FRAME_ATTR_EXCEPTION`): the frame
    /// will not resume at `ip`, the GC info is asked with `ExecutionAborted`.
    pub interrupted: bool,
    /// With `interrupted`: the Frame saved a faulting context (`hasFaulted`: a hardware
    /// fault at `ip` itself), else `ip` is the return address of the throwing call
    /// (`AbortingCall`).
    pub faulted: bool,
}

/// One thread's managed stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadStack {
    /// The Thread.
    pub thread: u64,
    /// Managed thread id.
    pub managed_id: u32,
    /// OS thread id.
    pub os_id: u64,
    /// Frames, innermost first.
    pub frames: Vec<StackFrame>,
    /// Why the walk stopped before the thread's bottom, if it did.
    pub incomplete: Option<String>,
}

impl ThreadStack {
    /// The frames that have a method (what pstacks and the DAC comparison use).
    pub fn methods(&self) -> impl Iterator<Item = &str> {
        self.frames.iter().filter_map(|f| f.method.as_deref())
    }

    /// The methods of [`ThreadStack::methods`], outermost (the thread's root) first: the order
    /// merged stacks (`pstacks`) are built in.
    pub fn methods_root_first(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.methods().collect();
        v.reverse();
        v
    }
}

/// Walks stacks with caches (code lookups, names); one per command or session.
pub struct StackWalker<'a, M> {
    pub(crate) rt: &'a Runtime<M>,
    pub(crate) names: &'a TypeNames,
    pub(crate) code: CodeIndex,
    method_names: Mutex<HashMap<(u64, u32), crate::Result<String>>>,
    vtables: HashMap<u64, &'static str>,
    contexts: HashMap<u64, Regs>,
    pub(crate) native: Option<NativeModules<'a>>,
    /// Decoded GC info blobs by address ([`StackWalker::decoded_gc_info`]).
    gc_infos:
        Mutex<HashMap<u64, Result<std::sync::Arc<clrcodeinfo::GcInfo>, gcerror::FrameRefsError>>>,
}

/// A MethodDesc's owner and token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MethodDescInfo {
    /// The MethodDesc.
    pub address: u64,
    /// Its MethodTable.
    pub method_table: u64,
    /// Its MethodDef token.
    pub token: u32,
}

impl<'a, M: Memory> StackWalker<'a, M> {
    /// A walker over `rt`, naming with `names`; the threads' registers are the target's.
    pub fn for_target(rt: &'a Runtime<M>, names: &'a TypeNames) -> StackWalker<'a, M>
    where
        M: dumpreader::Target,
    {
        let t = rt.memory();
        let contexts = t
            .threads()
            .iter()
            .map(|t| (t.id as u64, Regs::from_context(&t.context)))
            .collect();
        let mut w = StackWalker::new(rt, names, contexts);
        // Native unwind tables and symbols: for lazily captured HelperMethodFrames and the
        // mixed walk.
        w.native = Some(NativeModules::new(t));
        w
    }

    /// A walker over `rt`, naming with `names`, with the registers of the OS threads
    /// (`os id → registers`).
    pub fn new(
        rt: &'a Runtime<M>,
        names: &'a TypeNames,
        contexts: HashMap<u64, Regs>,
    ) -> StackWalker<'a, M> {
        let l = rt.layout.stack();
        // The values a Frame's first field may hold, by class: vtables from g_dacTable, or
        // the FrameIdentifier values the descriptor publishes.
        let mut vtables = HashMap::new();
        match l.frame_type {
            FrameTypeSource::Vtable => {
                for (i, name) in FRAME_VTABLES.iter().enumerate() {
                    if let Ok(a) = rt.dac_global_address(l.frame_vtables_index + i) {
                        vtables.insert(a, *name);
                    }
                }
            }
            FrameTypeSource::Identifier { ids } => {
                for (name, &v) in FRAME_IDENTIFIERS.iter().zip(ids.iter()) {
                    if v != 0 {
                        vtables.insert(v, *name);
                    }
                }
            }
        }
        StackWalker {
            rt,
            names,
            code: CodeIndex::new(),
            method_names: Mutex::new(HashMap::new()),
            vtables,
            contexts,
            native: None,
            gc_infos: Mutex::new(HashMap::new()),
        }
    }

    /// The code index (for `ip2md` and native/managed tests).
    pub fn code(&self) -> &CodeIndex {
        &self.code
    }

    /// The explicit Frame class of the Frame at `frame`, from its vtable or FrameIdentifier.
    pub fn frame_name(&self, frame: u64) -> Option<&'static str> {
        let vt = self.rt.memory().read_u64(frame).ok()?;
        self.vtables.get(&vt).copied()
    }

    /// A MethodDesc's MethodTable and token (through its MethodDescChunk).
    pub fn method_desc_info(&self, md: u64) -> crate::Result<MethodDescInfo> {
        let l = self.rt.layout.stack();
        let m = self.rt.memory();
        let idx = m
            .read_u8(md + l.md_chunk_index)
            .map_err(|_| crate::ClrError::read("MethodDesc", md))?;
        let chunk = md
            .wrapping_sub(idx as u64 * l.md_alignment)
            .wrapping_sub(l.method_desc_chunk_size);
        let mt = m
            .read_u64(chunk + l.chunk_method_table)
            .map_err(|_| crate::ClrError::read("MethodDescChunk", chunk))?;
        let range = m
            .read_u16(chunk + l.chunk_token_range)
            .map_err(|_| crate::ClrError::read("MethodDescChunk", chunk))?;
        let rem = m
            .read_u16(md)
            .map_err(|_| crate::ClrError::read("MethodDesc", md))?;
        let bits = l.md_token_remainder_bits;
        let mask = (1u32 << bits) - 1;
        let range_mask = (1u32 << (24 - bits)) - 1;
        let rid = ((range as u32 & range_mask) << bits) | (rem as u32 & mask);
        Ok(MethodDescInfo {
            address: md,
            method_table: mt,
            token: 0x0600_0000 | rid,
        })
    }

    /// The name of MethodDef `token` of the Module at `module`, in the DAC's style.
    pub fn method_name(&self, module: u64, token: u32) -> crate::Result<String> {
        let key = (module, token);
        if let Some(r) = self
            .method_names
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return r.clone();
        }
        let r = (|| {
            let mm = self.names.module_metadata(self.rt, module)?;
            let md = mm.metadata()?;
            md.method_display_name(token & 0x00FF_FFFF)
                .map_err(|e| crate::ClrError::metadata(format!("MethodDef {token:#x}"), e))
        })();
        self.method_names
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, r.clone());
        r
    }

    /// Names the method of a MethodDesc: (module, token, name or error).
    pub(crate) fn name_method_desc(&self, md: u64, f: &mut StackFrame) {
        f.method_desc = Some(md);
        if let Some(e) = self.names_refused() {
            f.method_error = Some(e.to_string());
            return;
        }
        match self.method_desc_name(md) {
            Ok((module, token, n)) => {
                f.module = Some(module);
                f.token = Some(token);
                f.method = Some(n);
            }
            Err((module, token, e)) => {
                f.module = module;
                f.token = token;
                f.method_error = Some(e.to_string());
            }
        }
    }

    /// The method of a MethodDesc as the DAC names it (a method of a generic instantiation
    /// with the type's arguments: `Task`1[[System.Int32, ...]].GetResultCore()`), with its
    /// module and token; on error, what was learnt of those.
    #[allow(clippy::type_complexity)]
    pub fn method_desc_name(
        &self,
        md: u64,
    ) -> std::result::Result<(u64, u32, String), (Option<u64>, Option<u32>, crate::ClrError)> {
        let info = self.method_desc_info(md).map_err(|e| (None, None, e))?;
        let mt = self
            .rt
            .method_table(info.method_table)
            .map_err(|e| (None, Some(info.token), e))?;
        let module = mt
            .require_module()
            .map_err(|e| (None, Some(info.token), e))?;
        // A dynamic method (an LCG method or an IL stub): no metadata, its own stored name.
        let flags = self.rt.memory().read_u16(md.wrapping_add(6)).map_err(|_| {
            (
                None,
                None,
                crate::ClrError::read("MethodDesc::m_wFlags", md + 6),
            )
        })?;
        if (flags & 7) as u8 == crate::model::dynamic::CLASSIFICATION_DYNAMIC {
            let r = crate::model::objects::ObjectReader::new(self.rt, self.names);
            return crate::model::dynamic::dynamic_method_name(&r, md)
                .map(|n| (module, info.token, n))
                .map_err(|e| (Some(module), Some(info.token), e));
        }
        let named = (|| {
            let method_args =
                crate::model::instantiation::method_instantiation(self.rt, md, (flags & 7) as u8)?;
            if mt.type_args.is_empty() && method_args.is_empty() {
                return self.method_name(module, info.token);
            }
            // A method of a generic instantiation, or a generic method's instantiation: the
            // type's name with its arguments, the method's arguments after its name, the
            // signature's generic parameters replaced by them, as the DAC prints it
            // (`HttpProtocol.ProcessRequests[[System.__Canon, System.Private.CoreLib]](...
            // IHttpApplication`1<System.__Canon>)`: the 11.0.0 DAC on aspnethang-net11).
            let ty = self.names.name(self.rt, info.method_table)?;
            let short = |v: &[u64]| -> Vec<String> {
                v.iter()
                    .map(|&a| {
                        crate::model::instantiation::signature_type_name(self.rt, self.names, a, 0)
                    })
                    .collect()
            };
            let mm = self.names.module_metadata(self.rt, module)?;
            let mdm = mm.metadata()?;
            let member = mdm
                .method_member_display(
                    info.token & 0x00FF_FFFF,
                    short(&mt.type_args),
                    short(&method_args),
                )
                .map_err(|e| {
                    crate::ClrError::metadata(format!("MethodDef {:#x}", info.token), e)
                })?;
            if method_args.is_empty() {
                return Ok(format!("{ty}.{member}"));
            }
            let inst = crate::model::instantiation::instantiation_suffix(
                self.rt,
                self.names,
                &method_args,
            )?;
            let (name, params) = member.split_at(member.find('(').unwrap_or(member.len()));
            Ok(format!("{ty}.{name}{inst}{params}"))
        })();
        named
            .map(|n| (module, info.token, n))
            .map_err(|e| (Some(module), Some(info.token), e))
    }

    /// Why frames get no method names: MethodDescs (their chunk, MethodTable and token) are
    /// read by the Methods capability, which the family may not have verified.
    fn names_refused(&self) -> Option<String> {
        self.rt
            .require(crate::discovery::layout::Capability::Methods)
            .err()
            .map(|e| e.to_string())
    }

    /// A managed frame at `regs` described by `ci`.
    fn managed_frame(&self, regs: &Regs, ci: &CodeInfo) -> StackFrame {
        let mut f = StackFrame {
            kind: FrameKind::Managed,
            sp: regs.sp(),
            ip: regs.rip,
            frame: None,
            frame_name: None,
            method_desc: None,
            module: None,
            token: None,
            method: None,
            method_error: None,
            code: Some(ci.kind),
            native: None,
            source: None,
            context: Some(FrameContext {
                regs: *regs,
                ..FrameContext::default()
            }),
        };
        if let Some(md) = ci.method_desc {
            self.name_method_desc(md, &mut f);
        } else if let (Some(module), Some(token)) = (ci.module, ci.token) {
            f.module = Some(module);
            f.token = Some(token);
            if let Some(e) = self.names_refused() {
                f.method_error = Some(e);
                return f;
            }
            match self.method_name(module, token) {
                Ok(n) => f.method = Some(n),
                Err(e) => f.method_error = Some(e.to_string()),
            }
        } else {
            f.method_error = Some(match &ci.method_note {
                Some(n) => format!("the code at {:#x}: {n}", ci.method_start),
                None => format!("no method entry for the code at {:#x}", ci.method_start),
            });
        }
        f
    }

    /// The method and code of a managed code address (`ip2md`): `Ok(None)` if not managed.
    pub fn ip_to_method(&self, ip: u64) -> crate::Result<Option<(CodeInfo, StackFrame)>> {
        let Some(ci) = self.code.lookup(self.rt, ip)? else {
            return Ok(None);
        };
        let regs = Regs {
            rip: ip,
            ..Regs::default()
        };
        let f = self.managed_frame(&regs, &ci);
        Ok(Some((ci, f)))
    }

    /// The EH clauses of the method whose code `ci` describes (`ehinfo`): JIT'd code's
    /// `EE_ILEXCEPTION`, ReadyToRun code's image ExceptionInfo section.
    pub fn eh_clauses(&self, ci: &CodeInfo) -> crate::Result<Vec<EhClause>> {
        self.code.eh_clauses(self.rt, ci)
    }

    /// Where the GC info of the method whose code `ci` describes starts (JIT'd code:
    /// `RealCodeHeader::phdrJitGCInfo`; ReadyToRun code: after its unwind info).
    pub fn gc_info_address(&self, ci: &CodeInfo) -> crate::Result<u64> {
        self.code.gc_info(self.rt, ci)
    }

    /// The name of the type a typed clause of a method of `module` catches: the TypeHandle the
    /// runtime cached in the clause, else its class token (TypeDef, TypeRef or TypeSpec) in the
    /// module's metadata.
    pub fn catch_type_name(&self, module: Option<u64>, c: &EhClause) -> crate::Result<String> {
        if let Some(th) = c.cached_type {
            return self.names.name(self.rt, th).map(|n| n.to_string());
        }
        let module = module.ok_or_else(|| {
            crate::ClrError::not_found_at(
                "the clause's module",
                0,
                "the method's module is not known",
            )
        })?;
        let md = self.names.module_metadata(self.rt, module)?;
        let meta = md.metadata()?;
        meta.token_type_name(crate::metadata::Token(c.filter_or_class))
            .map_err(|e| {
                crate::ClrError::metadata(format!("class token {:08x}", c.filter_or_class), e)
            })
    }

    /// Reports the explicit Frame at `frame`, and the context it resumes, if any.
    fn explicit_frame(&self, frame: u64, regs: &Regs) -> (StackFrame, Resume) {
        let l = self.rt.layout.stack();
        let m = self.rt.memory();
        let name = self.frame_name(frame);
        let mut f = StackFrame {
            kind: FrameKind::Explicit,
            sp: regs.sp(),
            ip: regs.rip,
            frame: Some(frame),
            frame_name: Some(name.unwrap_or("Frame").to_string()),
            method_desc: None,
            module: None,
            token: None,
            method: None,
            method_error: None,
            code: None,
            native: None,
            source: None,
            context: None,
        };
        let mut resume = Resume::Nothing;
        let runtime = || format!("{} ({})", self.rt.info.display_name(), self.rt.info.os);
        let unread = |what: &str, e: &dyn std::fmt::Display| {
            Resume::Unread(format!(
                "{} {frame:#x}: {what}: {e}; the managed frames it would resume are not walked",
                name.unwrap_or("Frame")
            ))
        };
        // The walk takes the offsets from the descriptor where the runtime has one (9+),
        // else from dumpshell's own tables (8): say which one lacks it.
        let unpublished = |field: &str| {
            let lacking = if self.rt.layout_source.what
                == crate::discovery::runtime::LayoutSource::DESCRIPTOR
            {
                format!("the runtime's descriptor does not publish {field}")
            } else {
                format!("no context offset: dumpshell's tables for it do not hold {field}")
            };
            Resume::Unread(format!(
                "{} {frame:#x}: where it saved its context is not known for {} ({lacking}); the \
                 managed frames it would resume are not walked",
                name.unwrap_or("Frame"),
                runtime()
            ))
        };
        let cl = &l.context_frames;
        match name {
            Some(n) if n.starts_with("HelperMethodFrame") => {
                let ms = frame + l.hmf_mach_state;
                let valid = m.read_u64(ms + l.ms_ret_addr_ptr).unwrap_or(0) != 0;
                // m_pMD is set when the lazy state is computed; before, the FCALL's entry
                // names the method through the runtime's FCALL hash.
                let md = if valid {
                    m.read_u64(frame + l.hmf_method_desc).unwrap_or(0)
                } else {
                    m.read_u64(frame + l.hmf_fcall_entry)
                        .ok()
                        .and_then(|e| self.fcall_method(e))
                        .unwrap_or(0)
                };
                if md != 0 {
                    self.name_method_desc(md, &mut f);
                }
                if valid {
                    let mut r = *regs;
                    r.rip = m.read_u64(ms + l.ms_rip).unwrap_or(0);
                    r.gpr[unwind::RSP] = m.read_u64(ms + l.ms_rsp).unwrap_or(0);
                    for (i, &reg) in l.callee_saved.iter().enumerate() {
                        let i = i as u64;
                        let through_ptr = m
                            .read_u64(ms + l.ms_ptrs + 8 * i)
                            .ok()
                            .filter(|&p| p != 0)
                            .and_then(|p| m.read_u64(p).ok());
                        let v = through_ptr
                            .or_else(|| l.ms_unwound.and_then(|u| m.read_u64(ms + u + 8 * i).ok()));
                        if let Some(v) = v {
                            r.gpr[reg as usize] = v;
                        }
                    }
                    resume = Resume::At(r);
                } else {
                    match self.unwind_lazy_state(ms, regs) {
                        Ok(r) => resume = Resume::At(r),
                        Err(e) => f.method_error = Some(format!("cannot resume: {e}")),
                    }
                }
            }
            Some("InlinedCallFrame") => {
                let ret = m.read_u64(frame + l.icf_return_address).unwrap_or(0);
                if ret != 0 {
                    let mut r = *regs;
                    r.rip = ret;
                    r.gpr[unwind::RSP] = m.read_u64(frame + l.icf_call_site_sp).unwrap_or(0);
                    r.gpr[unwind::RBP] = m.read_u64(frame + l.icf_callee_saved_fp).unwrap_or(0);
                    resume = Resume::At(r);
                    if let Some(Ok(d)) = l.icf_datum.map(|o| m.read_u64(frame + o)) {
                        // m_Datum is the MethodDesc of the P/Invoke when its low bits are clear.
                        if d != 0 && d & 7 == 0 && self.method_desc_info(d).is_ok() {
                            self.name_method_desc(d, &mut f);
                        }
                    }
                }
            }
            Some("SoftwareExceptionFrame") => {
                // The CONTEXT it holds: IP, SP and the callee-saved registers.
                resume = match l.sef_target_context {
                    Some(ctx) => match context_at(m, frame + ctx) {
                        Ok(c) => {
                            let mut r = *regs;
                            r.rip = c.rip;
                            r.gpr[unwind::RSP] = c.sp();
                            for &reg in l.callee_saved {
                                r.gpr[reg as usize] = c.gpr[reg as usize];
                            }
                            Resume::At(r)
                        }
                        Err(e) => unread("its saved context", &e),
                    },
                    None => unpublished("SoftwareExceptionFrame.TargetContext"),
                };
            }
            // A hardware fault's context (m_ctx), copied whole as the runtime's
            // UpdateRegDisplay does: the faulting instruction's IP and every register.
            Some("FaultingExceptionFrame") => {
                resume = match cl.faulting_context {
                    Some(ctx) => match context_at(m, frame + ctx) {
                        Ok(c) => Resume::At(c),
                        Err(e) => unread("its saved context", &e),
                    },
                    None => unpublished("FaultingExceptionFrame.TargetContext"),
                };
            }
            // A context the Frame points at (a redirected or suspended thread's), copied whole.
            Some("ResumableFrame") | Some("RedirectedThreadFrame") => {
                resume = match cl.resumable_context_ptr {
                    Some(p) => match m
                        .read_u64(frame + p)
                        .map_err(|_| crate::ClrError::read("ResumableFrame::m_Regs", frame + p))
                        .and_then(|c| context_at(m, c))
                    {
                        Ok(c) => Resume::At(c),
                        Err(e) => unread("its saved context", &e),
                    },
                    None => unpublished("ResumableFrame.TargetContextPtr"),
                };
            }
            // A hijacked return: the return address, the callee-saved registers the trip
            // function saved in its HijackArgs, the SP above them (Windows: saved).
            Some("HijackFrame") => {
                resume = match &cl.hijack {
                    Some(h) => match self.hijack_context(frame, h, regs) {
                        Ok(r) => Resume::At(r),
                        Err(e) => unread("its saved registers", &e),
                    },
                    None => unpublished("HijackFrame, HijackArgs and CalleeSavedRegisters"),
                };
            }
            _ => {}
        }
        (f, resume)
    }

    /// The registers a HijackFrame resumes (the runtime's `HijackFrame::UpdateRegDisplay`).
    fn hijack_context(
        &self,
        frame: u64,
        h: &crate::discovery::layout::HijackLayout,
        regs: &Regs,
    ) -> crate::Result<Regs> {
        let m = self.rt.memory();
        let rd = |what: &str, a: u64| m.read_u64(a).map_err(|_| crate::ClrError::read(what, a));
        let mut r = *regs;
        r.rip = rd("HijackFrame::m_ReturnAddress", frame + h.return_address)?;
        let args = rd("HijackFrame::m_Args", frame + h.args_ptr)?;
        for (reg, off) in h.callee_saved_regs.iter().enumerate() {
            if let Some(off) = off {
                r.gpr[reg] = rd("HijackArgs", args + h.args_callee_saved + off)?;
            }
        }
        r.gpr[unwind::RSP] = match h.args_rsp {
            Some(o) => rd("HijackArgs::Rsp", args + o)?,
            None => args + h.args_size,
        };
        Ok(r)
    }

    /// Whether the explicit Frame at `frame` (of class `name`) is an exception Frame whose
    /// managed caller was interrupted (`FRAME_ATTR_EXCEPTION`): `Some(faulted)`, where
    /// `faulted` says it saved a hardware fault's context (`FRAME_ATTR_FAULTED`), not a
    /// throwing call's. A SoftwareExceptionFrame (9+'s managed throw) is one, not faulted; a
    /// HelperMethodFrame says so in its `m_Attribs` (8's and 9's `IL_Throw`).
    fn exception_frame(&self, frame: u64, name: Option<&str>) -> Option<bool> {
        const FRAME_ATTR_EXCEPTION: u32 = 1;
        const FRAME_ATTR_FAULTED: u32 = 4;
        match name {
            Some("SoftwareExceptionFrame") => Some(false),
            Some("FaultingExceptionFrame") => Some(true),
            Some(n) if n.starts_with("HelperMethodFrame") => {
                let l = self.rt.layout.stack();
                let a = self.rt.memory().read_u32(frame + l.hmf_attribs).ok()?;
                (a & FRAME_ATTR_EXCEPTION != 0).then_some(a & FRAME_ATTR_FAULTED != 0)
            }
            _ => None,
        }
    }

    /// The MethodDesc of the FCALL whose entry is `entry` (ECall::MapTargetBackToMethod).
    pub fn fcall_method(&self, entry: u64) -> Option<u64> {
        const FCALL_HASH_SIZE: u64 = 127;
        let l = self.rt.layout.stack();
        let m = self.rt.memory();
        let table = self.rt.dac_global_address(l.fcall_methods_index).ok()?;
        let mut p = m.read_u64(table + 8 * (entry % FCALL_HASH_SIZE)).ok()?;
        for _ in 0..4096 {
            if p == 0 {
                return None;
            }
            if m.read_u64(p + 8).ok()? == entry {
                return m.read_u64(p + 16).ok().filter(|&md| md != 0);
            }
            p = m.read_u64(p).ok()?;
        }
        None
    }

    /// A HelperMethodFrame whose MachState was never computed: from the state captured in the
    /// FCALL, unwind native frames (the runtime's CFI) until the IP is managed code, as the
    /// runtime's LazyMachState::unwindLazyState does.
    fn unwind_lazy_state(&self, ms: u64, regs: &Regs) -> crate::Result<Regs> {
        let l = self.rt.layout.stack();
        let m = self.rt.memory();
        let native = self.native.as_ref().ok_or_else(|| {
            crate::ClrError::not_found_at(
                "LazyMachState",
                ms,
                "its machine state was never computed and the runtime's unwind tables are \
                 not available",
            )
        })?;
        let (start, end) = (self.rt.info.base, self.rt.info.base + self.rt.info.size);
        let rd = |a: u64| {
            m.read_u64(a)
                .map_err(|_| crate::ClrError::read("LazyMachState", a))
        };
        let mut r = *regs;
        r.rip = rd(ms + l.ms_capture_rip)?;
        r.gpr[unwind::RSP] = rd(ms + l.ms_capture_rsp)? + 8;
        for (i, &reg) in l.callee_saved.iter().enumerate() {
            r.gpr[reg as usize] = rd(ms + l.ms_capture + 8 * i as u64)?;
        }
        for _ in 0..8 {
            if r.rip < start || r.rip >= end {
                return Err(crate::ClrError::corrupt(
                    "LazyMachState",
                    ms,
                    format!("unwound to {:#x}, outside the runtime", r.rip),
                ));
            }
            native.unwind(&mut r, true)?;
            if self.code.is_managed(self.rt, r.rip) {
                return Ok(r);
            }
        }
        Err(crate::ClrError::not_found_at(
            "LazyMachState",
            ms,
            "no managed caller within 8 native frames",
        ))
    }

    /// Walks one thread's managed stack.
    pub fn walk(&self, thread: &ThreadData) -> ThreadStack {
        let mut st = ThreadStack {
            thread: thread.address,
            managed_id: thread.managed_id,
            os_id: thread.os_id,
            frames: Vec::new(),
            incomplete: None,
        };
        if let Err(e) = self.require() {
            st.incomplete = Some(e.to_string());
            return st;
        }
        let m = self.rt.memory();
        let l = self.rt.layout.stack();
        let ctx = self.contexts.get(&thread.os_id).copied();
        let mut regs = ctx.unwrap_or_default();
        let mut in_managed = ctx.is_some();
        let mut frame = thread.frame;
        let mut seen_frames = std::collections::HashSet::new();
        // InlinedCallFrames kept as the next Frame once (each at most once: no loop).
        let mut kept_icfs = std::collections::HashSet::new();
        let mut last_sp = 0u64;
        // The GC stack walk's view of the next managed frame (`CrawlFrame::isFirst`,
        // `isInterrupted`, `hasFaulted`): the thread's own context is the active frame when it
        // is managed code; a Frame the walk resumes from decides for the frame after it.
        let mut first = in_managed;
        let mut interrupted: Option<bool> = None;
        while st.frames.len() < MAX_FRAMES {
            if in_managed {
                let ci = match self.code.lookup(self.rt, regs.rip) {
                    Ok(Some(ci)) => Some(ci),
                    Ok(None) => None,
                    Err(e) => {
                        st.incomplete = Some(format!("at ip {:#x}: {e}", regs.rip));
                        break;
                    }
                };
                let Some(ci) = ci else {
                    in_managed = false;
                    first = false;
                    continue;
                };
                // The caller's context first: its SP bounds this managed frame.
                let before = regs;
                let mut caller = regs;
                let um = self.code.memory(m);
                let unwound = unwind_frame(&um, &mut caller, ci.unwind);
                let bound = if unwound.is_ok() {
                    caller.sp()
                } else {
                    regs.sp()
                };
                // Explicit Frames below the caller's SP (deeper than this managed frame, or
                // inside it, as an inlined P/Invoke's InlinedCallFrame) come first, with this
                // frame's context: the DAC's skipped Frames.
                while frame != FRAME_TOP && frame != 0 && frame < bound {
                    if !seen_frames.insert(frame) {
                        break;
                    }
                    let (f, _) = self.explicit_frame(frame, &regs);
                    st.frames.push(f);
                    frame = m.read_u64(frame + l.frame_next).unwrap_or(FRAME_TOP);
                }
                let mut mf = self.managed_frame(&regs, &ci);
                if let Some(c) = &mut mf.context {
                    c.caller_sp = unwound.is_ok().then(|| caller.sp());
                    c.active = first;
                    c.interrupted = interrupted.is_some();
                    c.faulted = interrupted == Some(true);
                }
                st.frames.push(mf);
                (first, interrupted) = (false, None);
                if let Err(e) = unwound {
                    st.incomplete = Some(format!("unwinding at ip {:#x}: {e}", before.rip));
                    break;
                }
                regs = caller;
                if regs.sp() <= before.sp() || regs.rip == 0 {
                    st.incomplete = Some(format!(
                        "unwinding at ip {:#x} went nowhere (sp {:#x} -> {:#x})",
                        before.rip,
                        before.sp(),
                        regs.sp()
                    ));
                    break;
                }
                last_sp = regs.sp();
            } else {
                if frame == FRAME_TOP || frame == 0 {
                    break;
                }
                if !seen_frames.insert(frame) {
                    st.incomplete = Some(format!("the Frame chain loops at {frame:#x}"));
                    break;
                }
                let this = frame;
                let (f, resume) = self.explicit_frame(frame, &regs);
                let next = match m.read_u64(frame + l.frame_next) {
                    Ok(n) => n,
                    Err(_) => {
                        st.frames.push(f);
                        st.incomplete =
                            Some(format!("Frame {frame:#x}: m_Next is not in the dump"));
                        break;
                    }
                };
                let lazy_hmf = matches!(resume, Resume::Nothing)
                    && f.frame_name
                        .as_deref()
                        .is_some_and(|n| n.starts_with("HelperMethodFrame"));
                let is_icf = f.frame_name.as_deref() == Some("InlinedCallFrame");
                let exception = self.exception_frame(this, f.frame_name.as_deref());
                let resumable = matches!(
                    f.frame_name.as_deref(),
                    Some("ResumableFrame") | Some("RedirectedThreadFrame")
                );
                st.frames.push(f);
                frame = next;
                if let Resume::At(r) = resume {
                    if r.sp() >= last_sp {
                        regs = r;
                        in_managed = true;
                        // A resumable Frame (`FRAME_ATTR_RESUMABLE`: ResumableFrame,
                        // RedirectedThreadFrame) makes the next frame the active one, as if it
                        // were the top of the stack; after the others it is at a call (or, after
                        // a FaultingExceptionFrame, at the faulting instruction: `faulted`).
                        first = resumable;
                        interrupted = exception;
                        // An active InlinedCallFrame lies inside the managed frame it resumes:
                        // it stays the next Frame, reported again (with that frame's context)
                        // before it, as the DAC does.
                        if is_icf && kept_icfs.insert(this) {
                            seen_frames.remove(&this);
                            frame = this;
                        }
                    }
                } else if let Resume::Unread(why) = resume {
                    st.incomplete = Some(why);
                    break;
                } else if lazy_hmf {
                    let fr = st.frames.last();
                    st.incomplete = Some(format!(
                        "HelperMethodFrame {:#x}: {}",
                        fr.and_then(|f| f.frame).unwrap_or(0),
                        fr.and_then(|f| f.method_error.clone()).unwrap_or_default()
                    ));
                    break;
                }
            }
        }
        if st.frames.len() >= MAX_FRAMES && st.incomplete.is_none() {
            st.incomplete = Some(format!("more than {MAX_FRAMES} frames"));
        }
        st
    }

    /// Every managed thread's stack, in thread-list order.
    pub fn walk_all(&self) -> crate::Result<Vec<ThreadStack>> {
        self.require()?;
        Ok(self.rt.threads()?.iter().map(|t| self.walk(t)).collect())
    }

    /// The walk is verified on the family and its table complete.
    fn require(&self) -> crate::Result<()> {
        self.rt
            .require(crate::discovery::layout::Capability::Stacks)?;
        match self.rt.layout.stack().missing {
            Some((ty, field)) => Err(crate::ClrError::MissingField {
                ty,
                field,
                runtime: format!("{} ({})", self.rt.info.display_name(), self.rt.info.os),
            }),
            None => Ok(()),
        }
    }
}

/// What an explicit Frame gives the walk to go on from.
#[derive(Debug, Clone)]
enum Resume {
    /// Nothing: the Frame saved no context (a marker Frame, an InlinedCallFrame with no
    /// active call).
    Nothing,
    /// The registers of the managed code it interrupted or called from.
    At(Regs),
    /// It saved a context the walk cannot read (its layout not published, its memory not in
    /// the dump): why.
    Unread(String),
}

impl Resume {
    fn regs(&self) -> Option<Regs> {
        match self {
            Resume::At(r) => Some(*r),
            _ => None,
        }
    }
}

/// One thread's mixed native and managed stack (`stack`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MixedStack {
    /// OS thread id.
    pub os_id: u64,
    /// The managed Thread, when the OS thread has one.
    pub thread: Option<u64>,
    /// Its managed thread id.
    pub managed_id: Option<u32>,
    /// Frames, innermost first: native, managed and explicit Frames in stack order.
    pub frames: Vec<StackFrame>,
    /// Places where native unwinding failed and the walk went on from the next explicit
    /// Frame's saved context (the native frames in between are missing).
    pub gaps: Vec<String>,
    /// Why the walk stopped before the thread's first frame, if it did.
    pub incomplete: Option<String>,
}

impl MixedStack {
    /// The return address into the caller of frame `i`: the IP of the next frame that is not
    /// an explicit Frame (none for an explicit Frame, nor for the outermost frame).
    pub fn return_address(&self, i: usize) -> Option<u64> {
        if self.frames.get(i)?.kind == FrameKind::Explicit {
            return None;
        }
        self.frames[i + 1..]
            .iter()
            .find(|f| f.kind != FrameKind::Explicit)
            .map(|f| f.ip)
    }
}

impl<'a, M: Memory> StackWalker<'a, M> {
    /// Walks the OS threads `os_ids` as [`StackWalker::walk_mixed`] does, each with its
    /// managed Thread when it has one; fails only when the thread list cannot be read.
    pub fn walk_mixed_threads(&self, os_ids: &[u64]) -> crate::Result<Vec<MixedStack>> {
        let managed = self.rt.threads()?;
        Ok(os_ids
            .iter()
            .map(|&id| {
                let td = managed.iter().find(|t| t.os_id == id && id != 0);
                self.walk_mixed(id, td)
            })
            .collect())
    }

    /// A frame with nothing known yet (kind Native).
    pub(crate) fn blank_frame(&self) -> StackFrame {
        StackFrame {
            kind: FrameKind::Native,
            sp: 0,
            ip: 0,
            frame: None,
            frame_name: None,
            method_desc: None,
            module: None,
            token: None,
            method: None,
            method_error: None,
            code: None,
            native: None,
            source: None,
            context: None,
        }
    }

    fn native_frame(&self, regs: &Regs, is_return: bool) -> StackFrame {
        let name = self
            .native
            .as_ref()
            .map(|n| n.name(regs.rip, is_return))
            .unwrap_or(NativeName {
                module: None,
                symbol: None,
                offset: regs.rip,
            });
        StackFrame {
            kind: FrameKind::Native,
            sp: regs.sp(),
            ip: regs.rip,
            frame: None,
            frame_name: None,
            method_desc: None,
            module: None,
            token: None,
            method: None,
            method_error: None,
            code: None,
            native: Some(name),
            source: None,
            context: None,
        }
    }

    /// Walks one OS thread's stack through native and managed code: native frames with the
    /// modules' unwind tables, managed frames as [`StackWalker::walk`] does, explicit Frames
    /// of the thread's chain placed by their address. Where a native frame cannot be unwound,
    /// the walk resumes from the next explicit Frame that saved a managed context (noted in
    /// `gaps`), or stops with the reason.
    pub fn walk_mixed(&self, os_id: u64, thread: Option<&ThreadData>) -> MixedStack {
        let mut st = MixedStack {
            os_id,
            thread: thread.map(|t| t.address),
            managed_id: thread.map(|t| t.managed_id),
            frames: Vec::new(),
            gaps: Vec::new(),
            incomplete: None,
        };
        if let Err(e) = self.require() {
            st.incomplete = Some(e.to_string());
            return st;
        }
        let Some(mut regs) = self.contexts.get(&os_id).copied() else {
            st.incomplete = Some(format!("the dump has no registers of thread {os_id:#x}"));
            return st;
        };
        let m = self.rt.memory();
        let l = self.rt.layout.stack();
        let mut frame = thread.map(|t| t.frame).unwrap_or(FRAME_TOP);
        let mut seen_frames = std::collections::HashSet::new();
        let mut innermost = true;
        while st.frames.len() < MAX_FRAMES {
            // Explicit Frames deeper than the current frame come first.
            while frame != FRAME_TOP && frame != 0 && frame < regs.sp() {
                if !seen_frames.insert(frame) {
                    frame = FRAME_TOP;
                    break;
                }
                let (f, _) = self.explicit_frame(frame, &regs);
                st.frames.push(f);
                frame = m.read_u64(frame + l.frame_next).unwrap_or(FRAME_TOP);
            }
            let before = regs;
            let ci = match self.code.lookup(self.rt, regs.rip) {
                Ok(ci) => ci,
                Err(e) => {
                    st.incomplete = Some(format!("at ip {:#x}: {e}", regs.rip));
                    break;
                }
            };
            let failure = if let Some(ci) = ci {
                st.frames.push(self.managed_frame(&regs, &ci));
                let um = self.code.memory(m);
                match unwind_frame(&um, &mut regs, ci.unwind) {
                    Ok(()) => None,
                    Err(e) => Some(format!("unwinding at ip {:#x}: {e}", before.rip)),
                }
            } else {
                st.frames.push(self.native_frame(&regs, !innermost));
                if regs.rip == 0 {
                    st.incomplete = Some("the instruction pointer is 0".to_string());
                    break;
                }
                match self
                    .native
                    .as_ref()
                    .map(|n| n.unwind(&mut regs, !innermost))
                {
                    None => Some("no native unwind tables (not a dump target)".to_string()),
                    Some(Ok(Unwound::Bottom)) => break,
                    Some(Ok(Unwound::Caller)) => None,
                    Some(Err(e)) => Some(e.to_string()),
                }
            };
            innermost = false;
            let failure = failure.or_else(|| native::went_nowhere(&before, &regs));
            let Some(why) = failure else { continue };
            // Go on from the next explicit Frame that saved a managed context.
            let mut resumed = false;
            while frame != FRAME_TOP && frame != 0 && st.frames.len() < MAX_FRAMES {
                if !seen_frames.insert(frame) {
                    break;
                }
                let (f, resume) = self.explicit_frame(frame, &before);
                st.frames.push(f);
                frame = m.read_u64(frame + l.frame_next).unwrap_or(FRAME_TOP);
                if let Some(r) = resume.regs().filter(|r| r.sp() > before.sp()) {
                    st.gaps.push(format!(
                        "{why}; went on from Frame {:#x}",
                        st.frames.last().and_then(|f| f.frame).unwrap_or(0)
                    ));
                    regs = r;
                    resumed = true;
                    break;
                }
            }
            if !resumed {
                st.incomplete = Some(why);
                break;
            }
        }
        if st.frames.len() >= MAX_FRAMES && st.incomplete.is_none() {
            st.incomplete = Some(format!("more than {MAX_FRAMES} frames"));
        }
        st
    }

    /// The registers the dump holds for OS thread `os_id`.
    pub fn registers(&self, os_id: u64) -> Option<Regs> {
        self.contexts.get(&os_id).copied()
    }

    /// The native modules (names and unwind tables), on a dump target.
    pub fn native(&self) -> Option<&NativeModules<'a>> {
        self.native.as_ref()
    }
}

/// Walks the OS threads `os_ids` of `target` with [`walk_native`] (no CLR needed), each from
/// the registers the dump holds for it.
pub fn walk_native_threads(target: &dyn dumpreader::Target, os_ids: &[u64]) -> Vec<MixedStack> {
    let modules = NativeModules::new(target);
    os_ids
        .iter()
        .map(|&id| {
            let regs = target
                .threads()
                .iter()
                .find(|t| t.id as u64 == id)
                .map(|t| Regs::from_context(&t.context));
            walk_native(&modules, id, regs)
        })
        .collect()
}

/// Walks a thread's native frames only (no CLR needed): from `regs`, with `modules`' unwind
/// tables, until the thread's first frame or the first frame that cannot be unwound.
pub fn walk_native(modules: &NativeModules<'_>, os_id: u64, regs: Option<Regs>) -> MixedStack {
    let mut st = MixedStack {
        os_id,
        thread: None,
        managed_id: None,
        frames: Vec::new(),
        gaps: Vec::new(),
        incomplete: None,
    };
    let Some(mut regs) = regs else {
        st.incomplete = Some(format!("the dump has no registers of thread {os_id:#x}"));
        return st;
    };
    let mut innermost = true;
    while st.frames.len() < MAX_FRAMES {
        st.frames.push(StackFrame {
            kind: FrameKind::Native,
            sp: regs.sp(),
            ip: regs.rip,
            frame: None,
            frame_name: None,
            method_desc: None,
            module: None,
            token: None,
            method: None,
            method_error: None,
            code: None,
            native: Some(modules.name(regs.rip, !innermost)),
            source: None,
            context: None,
        });
        if regs.rip == 0 {
            st.incomplete = Some("the instruction pointer is 0".to_string());
            break;
        }
        let before = regs;
        match modules.unwind(&mut regs, !innermost) {
            Ok(Unwound::Bottom) => break,
            Ok(Unwound::Caller) => {
                if let Some(why) = native::went_nowhere(&before, &regs) {
                    st.incomplete = Some(why);
                    break;
                }
            }
            Err(e) => {
                st.incomplete = Some(e.to_string());
                break;
            }
        }
        innermost = false;
    }
    if st.frames.len() >= MAX_FRAMES && st.incomplete.is_none() {
        st.incomplete = Some(format!("more than {MAX_FRAMES} frames"));
    }
    st
}

/// The registers of the AMD64 `CONTEXT` the runtime saved at `at` (Windows' layout, which the
/// PAL's mirrors: [`Regs::from_context_record`]).
fn context_at<M: Memory + ?Sized>(m: &M, at: u64) -> crate::Result<Regs> {
    let mut b = [0u8; dumpreader::context::CONTEXT_MIN_SIZE];
    m.read_exact(at, &mut b)
        .map_err(|_| crate::ClrError::read("the CONTEXT", at))?;
    Regs::from_context_record(&b).ok_or_else(|| crate::ClrError::read("the CONTEXT", at))
}
