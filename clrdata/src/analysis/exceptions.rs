//! Managed exception objects: type, message, HResult, inner exception and the stack trace the
//! runtime recorded in `Exception._stackTrace` (what SOS `printexception` shows).
//!
//! .NET 8 keeps the trace as a `byte[]` (`StackTraceArray`, vm/clrex.h): a header
//! `{size_t m_size; Thread* m_thread}` then `m_size` `StackTraceElement`s
//! `{UINT_PTR ip; UINT_PTR sp; MethodDesc* pFunc; INT flags}` (32 bytes on x64). Verified on the
//! corpus: crash.dmp's InvalidOperationException holds 2 elements whose MethodDescs name
//! `ProcessOrder` and `CrashWorker`, and whose header thread is the crashing Thread.
//! Flags: 1 = last frame of a foreign (rethrown) trace, 2 = `ip` already decremented.

use crate::data::types::ReadTypes;
use crate::error::{ClrError, Result};
use crate::model::heap::GcHeap;
use crate::model::objects::{FieldData, FieldValue, ObjectReader};
use crate::model::stack::source::SourceLines;
use crate::model::stack::{FrameSource, StackWalker};
use dumpreader::Memory;
use serde::Serialize;

/// Bound on the elements read from one trace (a corrupt count must not run away).
pub const MAX_TRACE_ELEMENTS: u64 = 10_000;
/// Bound on an inner-exception chain.
pub const MAX_NESTED: usize = 64;
/// Bound on the characters of a message read.
const MAX_MESSAGE: usize = 16_384;

/// `StackTraceArray` header size (`m_size`, `m_thread`).
const TRACE_HEADER: u64 = 16;
/// sizeof(StackTraceElement) on 64-bit.
const TRACE_ELEMENT: u64 = 32;
/// `STEF_LAST_FRAME_FROM_FOREIGN_STACK_TRACE`.
pub const STEF_LAST_FRAME_FROM_FOREIGN_STACK_TRACE: u32 = 1;
/// `STEF_IP_ADJUSTED`.
pub const STEF_IP_ADJUSTED: u32 = 2;
/// `STEF_CONTINUATION` (.NET 11, `clrex.h`; the cDAC's `Exception_1.cs` at v11.0.0 keeps the
/// same value): a runtime-async method's frame the runtime appended while the exception
/// unwound through its continuation chain (`AsyncHelpers_AddContinuationToExInternal` →
/// `StackTraceInfo::AppendElement` with no crawl frame): `ip` is the continuation's
/// `ResumeInfo.DiagnosticIP` (not adjusted), `sp` 0, the MethodDesc the code's
/// (docs/clr-layout-net11.md 4.6). Named as any element, by its MethodDesc.
pub const STEF_CONTINUATION: u32 = 8;

/// One element of an exception's recorded stack trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceElement {
    /// The instruction pointer as recorded.
    pub ip: u64,
    /// The stack pointer of the frame.
    pub sp: u64,
    /// The MethodDesc.
    pub method_desc: u64,
    /// StackTraceElementFlags.
    pub flags: u32,
    /// The method as the DAC names it (`Crash.Program.ProcessOrder(Crash.Order)`).
    pub method: Option<String>,
    /// The method's module (simple name: `crash`, `System.Private.CoreLib`).
    pub module: Option<String>,
    /// The module's image file name (`crash.dll`), as SOS names the module in a trace; None
    /// for an in-memory image.
    pub module_file: Option<String>,
    /// `ip` minus the start of the method's code.
    pub offset: Option<u64>,
    /// The method's Module and MethodDef token (what its source line is looked up by).
    pub method_token: Option<(u64, u32)>,
    /// Why the method or offset is unknown, when it is.
    pub error: Option<String>,
}

/// One exception object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExceptionData {
    /// The object's address.
    pub address: u64,
    /// Its MethodTable.
    pub mt: u64,
    /// Its type name.
    pub type_name: String,
    /// `_message` (None when null).
    pub message: Option<String>,
    /// `_HResult`.
    pub hresult: i32,
    /// `_xcode`: the SEH exception code the exception was raised with (`EXCEPTION_COMPLUS`
    /// for a managed throw, the OS's code for a hardware fault); None when not readable.
    pub xcode: Option<u32>,
    /// `_innerException` (0 when null).
    pub inner: u64,
    /// The inner exception's type name.
    pub inner_type: Option<String>,
    /// The `_stackTrace` array (0 when none was recorded).
    pub stack_trace_array: u64,
    /// The Thread recorded in the trace's header.
    pub stack_trace_thread: Option<u64>,
    /// The decoded stack trace, innermost (throw site) first.
    pub stack_trace: Vec<TraceElement>,
    /// `_stackTraceString`.
    pub stack_trace_string: Option<String>,
    /// `_remoteStackTraceString`.
    pub remote_stack_trace_string: Option<String>,
    /// Problems met while reading (missing memory, implausible values).
    pub notes: Vec<String>,
}

/// `EXCEPTION_COMPLUS`: the SEH code of a managed throw (`_xcode`'s initial value).
pub const EXCEPTION_COMPLUS: u32 = 0xE043_4352;

/// The HResults SOS takes for an exception the runtime raised from a hardware fault
/// (dotnet/diagnostics `strike.cpp` `AsyncHResultValues`, after the runtime's
/// `MapWin32FaultToCOMPlusException`): COR_E_ARITHMETIC, COR_E_OVERFLOW, COR_E_DIVIDEBYZERO,
/// COR_E_FORMAT, COR_E_NULLREFERENCE (= E_POINTER, corerror.h), COR_E_DATAMISALIGNED.
const HARDWARE_HRESULTS: [u32; 6] = [
    0x8007_0216,
    0x8013_1516,
    0x8002_0012,
    0x8013_1537,
    0x8000_4003,
    0x8013_1541,
];

impl ExceptionData {
    /// Whether SOS takes the exception for a hardware ("async") one (`IsAsyncException`):
    /// `_xcode` is not `EXCEPTION_COMPLUS`, or `_HResult` is one a fault maps to.
    pub fn is_hardware(&self) -> bool {
        self.xcode.is_some_and(|x| x != EXCEPTION_COMPLUS)
            || HARDWARE_HRESULTS.contains(&(self.hresult as u32))
    }

    /// The IP SOS shows for a recorded trace element's `ip` (dotnet/diagnostics `strike.cpp`
    /// `FormatGeneratedException`, x64): one more for a hardware exception (SOS's counter to
    /// an IP adjustment the runtime made long ago), the recorded one otherwise. SOS prints it
    /// with `printexception` and `-lines` alike, and its `+0x` offset from it.
    pub fn shown_ip(&self, ip: u64) -> u64 {
        if self.is_hardware() {
            ip.wrapping_add(1)
        } else {
            ip
        }
    }

    /// The IL offset and source line of each element of the recorded trace, as SOS's
    /// `printexception -lines` finds them (dotnet/diagnostics `strike.cpp`
    /// `FormatGeneratedException`): on x64 SOS adds 1 to every IP of a hardware exception
    /// (its counter to an IP adjustment the runtime made long ago), then looks the line up at
    /// that IP − 1 for every element of a software exception and for every element but the
    /// first of a hardware one. So a thrown exception's throw site (the return address of the
    /// call to the throw helper) and every caller's return address are looked up inside their
    /// call instruction, a fault's own instruction at the faulting IP + 1 (still inside it),
    /// and a hardware exception's callers at their recorded IP. The recorded IPs are the
    /// runtime's: a caller's may already be one less than its return address (flag
    /// `STEF_IP_ADJUSTED`), which SOS does not look at, and neither does this.
    pub fn trace_sources<M: Memory>(
        &self,
        lines: &SourceLines,
        w: &StackWalker<'_, M>,
    ) -> Vec<FrameSource> {
        let hardware = self.is_hardware();
        self.stack_trace
            .iter()
            .enumerate()
            .map(|(i, el)| {
                let shown = self.shown_ip(el.ip);
                let at = if !hardware || i > 0 {
                    shown.wrapping_sub(1)
                } else {
                    shown
                };
                lines.code_source(w, el.ip, at, el.method_token)
            })
            .collect()
    }
}

fn field<'f>(fields: &'f [FieldData], name: &str) -> Option<&'f FieldData> {
    // The first match: System.Exception's own fields come before a derived class's.
    fields.iter().find(|f| f.name == name)
}

fn object_of(fields: &[FieldData], name: &str) -> u64 {
    match field(fields, name).map(|f| &f.value) {
        Some(FieldValue::Object { address, .. }) => *address,
        _ => 0,
    }
}

fn int_of(fields: &[FieldData], name: &str) -> Option<i64> {
    match field(fields, name).map(|f| &f.value) {
        Some(FieldValue::Int { value }) => Some(*value),
        Some(FieldValue::UInt { value }) => Some(*value as i64),
        _ => None,
    }
}

/// Whether `mt` is System.Exception or derives from it (the parent chain, bounded).
pub fn is_exception_mt<M: Memory>(r: &ObjectReader<'_, M>, mt: u64) -> bool {
    let ex = r.rt.globals.exception_mt;
    let mut cur = mt;
    for _ in 0..64 {
        if cur == 0 {
            return false;
        }
        if cur == ex {
            return true;
        }
        match r.mt(cur) {
            Some(i) if !i.is_array() => cur = i.parent,
            _ => return false,
        }
    }
    false
}

fn string_of<M: Memory>(
    r: &ObjectReader<'_, M>,
    fields: &[FieldData],
    name: &str,
    notes: &mut Vec<String>,
) -> Option<String> {
    let a = object_of(fields, name);
    if a == 0 {
        return None;
    }
    match r.string_value(a, MAX_MESSAGE) {
        Ok((s, len)) => {
            if len as usize > MAX_MESSAGE {
                notes.push(format!(
                    "{name}: {len} characters, the first {MAX_MESSAGE} read"
                ));
            }
            Some(s)
        }
        Err(e) => {
            notes.push(format!("{name} at {a:#x}: {e}"));
            None
        }
    }
}

/// Reads the exception object at `addr`. Fails only when `addr` is not an exception object;
/// parts that cannot be read become notes.
pub fn read_exception<M: Memory>(
    r: &ObjectReader<'_, M>,
    walker: &StackWalker<'_, M>,
    addr: u64,
) -> Result<ExceptionData> {
    let (mt, _) = r.object_mt(addr)?;
    if !is_exception_mt(r, mt) {
        return Err(ClrError::corrupt(
            "exception object",
            addr,
            format!(
                "is a {}, which does not derive from System.Exception",
                r.type_name(mt)
            ),
        ));
    }
    let fields = r.fields(mt, addr.wrapping_add(8), false)?;
    let mut notes = Vec::new();
    let message = string_of(r, &fields, "_message", &mut notes);
    let stack_trace_string = string_of(r, &fields, "_stackTraceString", &mut notes);
    let remote_stack_trace_string = string_of(r, &fields, "_remoteStackTraceString", &mut notes);
    let hresult = int_of(&fields, "_HResult").unwrap_or_else(|| {
        notes.push("_HResult: not readable".into());
        0
    }) as i32;
    let inner = object_of(&fields, "_innerException");
    let inner_type = (inner != 0).then(|| match r.object_mt(inner) {
        Ok((imt, _)) => r.type_name(imt),
        Err(e) => {
            notes.push(format!("_innerException: {e}"));
            "<unreadable>".to_string()
        }
    });
    let arr = object_of(&fields, "_stackTrace");
    let mut stack_trace = Vec::new();
    let mut stack_trace_thread = None;
    if arr != 0 {
        match read_trace(r, walker, arr) {
            Ok((t, els)) => {
                stack_trace_thread = Some(t);
                stack_trace = els;
            }
            Err(e) => notes.push(format!("_stackTrace {arr:#x}: {e}")),
        }
    }
    Ok(ExceptionData {
        address: addr,
        mt,
        type_name: r.type_name(mt),
        message,
        hresult,
        xcode: int_of(&fields, "_xcode").map(|x| x as u32),
        inner,
        inner_type,
        stack_trace_array: arr,
        stack_trace_thread,
        stack_trace,
        stack_trace_string,
        remote_stack_trace_string,
        notes,
    })
}

/// Decodes a `StackTraceArray` (a byte[]): the recorded Thread and the elements.
fn read_trace<M: Memory>(
    r: &ObjectReader<'_, M>,
    walker: &StackWalker<'_, M>,
    arr: u64,
) -> crate::Result<(u64, Vec<TraceElement>)> {
    let m = r.rt.memory();
    let (mt, _) = r.object_mt(arr)?;
    let mut arr = arr;
    // .NET 9+: an object[] whose element 0 is the trace (the others keep the methods' loader
    // allocators alive); see ExceptionNative_GetMethodFromStackTrace in excep.cpp.
    if mt == r.rt.globals.object_array_mt && mt != 0 {
        let first = arr.wrapping_add(16);
        arr = m
            .read_u64(first)
            .map_err(|_| crate::ClrError::read("the object[]'s element 0", first))?;
        if arr == 0 {
            return Err(crate::ClrError::corrupt(
                "_stackTrace",
                arr,
                "an object[] whose element 0 (the trace) is null",
            ));
        }
    }
    let (_, info) = r.object_mt(arr)?;
    if info.component_size != 1 {
        return Err(crate::ClrError::corrupt(
            "_stackTrace",
            arr,
            format!("expected a byte[], found a {}", r.type_name(info.address)),
        ));
    }
    let len = m
        .read_u32(arr.wrapping_add(8))
        .map_err(|_| crate::ClrError::read("the stack trace array's length", arr.wrapping_add(8)))?
        as u64;
    let data = arr.wrapping_add(16);
    if len < TRACE_HEADER {
        return Err(crate::ClrError::corrupt(
            "stack trace array",
            arr,
            format!("{len} bytes, shorter than the 16-byte header"),
        ));
    }
    let count = m
        .read_u64(data)
        .map_err(|_| crate::ClrError::read("the stack trace array's header", data))?;
    let thread = m.read_u64(data.wrapping_add(8)).unwrap_or(0);
    let room = (len - TRACE_HEADER) / TRACE_ELEMENT;
    if count > room || count > MAX_TRACE_ELEMENTS {
        return Err(crate::ClrError::corrupt(
            "stack trace array",
            arr,
            format!("the header says {count} elements, but the array holds room for {room}"),
        ));
    }
    let mut out = Vec::with_capacity(count as usize);
    for i in 0..count {
        let e = data.wrapping_add(TRACE_HEADER + i * TRACE_ELEMENT);
        let rd = |off: u64| {
            m.read_u64(e.wrapping_add(off))
                .map_err(|_| crate::ClrError::read(format!("stack trace element {i}"), e))
        };
        let ip = rd(0)?;
        let sp = rd(8)?;
        let md = rd(16)?;
        let flags = m.read_u32(e.wrapping_add(24)).unwrap_or(0);
        out.push(describe_element(r, walker, ip, sp, md, flags));
    }
    Ok((thread, out))
}

/// A module's simple name and image file name (None where not read or in memory).
fn module_names<M: Memory>(
    r: &ObjectReader<'_, M>,
    module: u64,
) -> (Option<String>, Option<String>) {
    match r.rt.module(module) {
        Ok(d) => {
            let file = d.file_name().map(str::to_owned);
            (Some(d.simple_name), file)
        }
        Err(_) => (None, None),
    }
}

fn describe_element<M: Memory>(
    r: &ObjectReader<'_, M>,
    walker: &StackWalker<'_, M>,
    ip: u64,
    sp: u64,
    md: u64,
    flags: u32,
) -> TraceElement {
    let mut el = TraceElement {
        ip,
        sp,
        method_desc: md,
        flags,
        method: None,
        module: None,
        module_file: None,
        offset: None,
        method_token: None,
        error: None,
    };
    match walker.method_desc_name(md) {
        Ok((module, token, n)) => {
            (el.module, el.module_file) = module_names(r, module);
            el.method = Some(n);
            el.method_token = Some((module, token));
        }
        Err((module, token, e)) => {
            el.method_token = module.zip(token);
            if let Some(m) = module {
                (el.module, el.module_file) = module_names(r, m);
            }
            el.error = Some(e.to_string());
        }
    }
    match walker.ip_to_method(ip) {
        Ok(Some((ci, _))) => el.offset = ip.checked_sub(ci.method_start),
        Ok(None) => {
            el.error
                .get_or_insert_with(|| format!("{ip:#x} is not in managed code"));
        }
        Err(e) => {
            el.error.get_or_insert(e.to_string());
        }
    }
    el
}

/// The exception and its inner exceptions, outermost first (bounded, cycle-safe).
pub fn exception_chain<M: Memory>(
    r: &ObjectReader<'_, M>,
    walker: &StackWalker<'_, M>,
    addr: u64,
) -> Result<Vec<ExceptionData>> {
    let first = read_exception(r, walker, addr)?;
    let mut next = first.inner;
    let mut out = vec![first];
    while next != 0 && out.len() < MAX_NESTED {
        if out.iter().any(|e| e.address == next) {
            if let Some(last) = out.last_mut() {
                last.notes
                    .push(format!("the inner exception {next:#x} closes a cycle"));
            }
            break;
        }
        match read_exception(r, walker, next) {
            Ok(e) => {
                next = e.inner;
                out.push(e);
            }
            Err(e) => {
                if let Some(last) = out.last_mut() {
                    last.notes.push(format!("inner exception: {e}"));
                }
                break;
            }
        }
    }
    Ok(out)
}

/// Every exception object on the heap (free objects skipped), in heap order, with the walk's
/// errors.
pub fn heap_exceptions<M: Memory>(
    r: &ObjectReader<'_, M>,
    heap: &GcHeap,
) -> (Vec<(u64, u64)>, Vec<String>) {
    let mut is_ex = std::collections::HashMap::new();
    let mut out = Vec::new();
    let mut iter = heap.objects(r.rt);
    for o in iter.by_ref() {
        if o.is_free {
            continue;
        }
        let hit = *is_ex
            .entry(o.mt)
            .or_insert_with(|| is_exception_mt(r, o.mt));
        if hit {
            out.push((o.address, o.mt));
        }
    }
    let errors = iter.errors().iter().map(|e| e.to_string()).collect();
    (out, errors)
}

/// The current thread of a dump, as `printexception` without an address uses it: the faulting
/// thread (the dump's crashing OS thread id) when it is a managed thread, else the first started
/// managed thread of the ThreadStore list.
pub fn current_thread(
    crashing_os_id: Option<u32>,
    threads: &[crate::data::threads::ThreadData],
) -> Option<&crate::data::threads::ThreadData> {
    crashing_os_id
        .and_then(|id| threads.iter().find(|t| t.os_id == id as u64))
        .or_else(|| threads.iter().find(|t| t.os_id != 0))
}

/// The exception at `addr` (`inner`: with its inner exceptions, outermost first), its trace
/// named by a walker of `rt` (no native unwinding).
pub fn exceptions_at<M: Memory>(
    rt: &crate::discovery::runtime::Runtime<M>,
    names: &crate::model::names::TypeNames,
    addr: u64,
    inner: bool,
) -> Result<Vec<ExceptionData>> {
    let r = ObjectReader::new(rt, names);
    let w = StackWalker::new(rt, names, Default::default());
    if inner {
        exception_chain(&r, &w, addr)
    } else {
        read_exception(&r, &w, addr).map(|e| vec![e])
    }
}

/// One exception object of the heap, as `dumpexceptions` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeapException {
    /// The object's address.
    pub address: u64,
    /// Its MethodTable.
    pub mt: u64,
    /// Its type name.
    pub type_name: String,
    /// `_message` (None when null).
    pub message: Option<String>,
    /// `_HResult`.
    pub hresult: i32,
    /// `_innerException` (0 when null).
    pub inner: u64,
    /// How many frames its recorded stack trace holds.
    pub stack_frames: usize,
}

/// Exceptions of one type with one message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExceptionGroup {
    /// The type name.
    pub type_name: String,
    /// The message (None when null).
    pub message: Option<String>,
    /// The exceptions, in heap order.
    pub addresses: Vec<u64>,
}

/// The heap's exception objects and their groups.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeapExceptions {
    /// Every exception object read (of the type asked for), in heap order.
    pub exceptions: Vec<HeapException>,
    /// Grouped by type and message: the largest group first, then by type name (then by
    /// message).
    pub groups: Vec<ExceptionGroup>,
    /// The heap walk's errors, then the objects that could not be read as exceptions.
    pub errors: Vec<String>,
}

/// Every exception object of the heap whose type name contains `type_contains` (ignoring
/// case), read and grouped by type and message. `stop` is asked every 256 objects whether to
/// give up (then None).
pub fn list_heap_exceptions<M: Memory>(
    rt: &crate::discovery::runtime::Runtime<M>,
    names: &crate::model::names::TypeNames,
    heap: &GcHeap,
    type_contains: Option<&str>,
    stop: &dyn Fn() -> bool,
) -> Option<HeapExceptions> {
    let r = ObjectReader::new(rt, names);
    let w = StackWalker::new(rt, names, Default::default());
    let filter = type_contains.map(str::to_lowercase);
    let (found, mut errors) = heap_exceptions(&r, heap);
    let mut exceptions = Vec::new();
    let mut groups: std::collections::BTreeMap<(String, Option<String>), Vec<u64>> =
        std::collections::BTreeMap::new();
    for (i, &(addr, mt)) in found.iter().enumerate() {
        if i % 256 == 0 && stop() {
            return None;
        }
        if let Some(f) = &filter {
            if !r.type_name(mt).to_lowercase().contains(f) {
                continue;
            }
        }
        match read_exception(&r, &w, addr) {
            Ok(e) => {
                groups
                    .entry((e.type_name.clone(), e.message.clone()))
                    .or_default()
                    .push(e.address);
                exceptions.push(HeapException {
                    address: e.address,
                    mt: e.mt,
                    type_name: e.type_name,
                    message: e.message,
                    hresult: e.hresult,
                    inner: e.inner,
                    stack_frames: e.stack_trace.len(),
                });
            }
            Err(e) => errors.push(format!("{addr:#x}: {e}")),
        }
    }
    let mut groups: Vec<ExceptionGroup> = groups
        .into_iter()
        .map(|((type_name, message), addresses)| ExceptionGroup {
            type_name,
            message,
            addresses,
        })
        .collect();
    groups.sort_by(|a, b| {
        b.addresses
            .len()
            .cmp(&a.addresses.len())
            .then(a.type_name.cmp(&b.type_name))
    });
    Some(HeapExceptions {
        exceptions,
        groups,
        errors,
    })
}
