//! Which method a delegate calls, and on which object: what `timerinfo`, `threadpoolqueue`,
//! `pstacks --async` and causality views print for a callback.
//!
//! A .NET 8 `System.Delegate` holds `_target`, `_methodBase`, `_methodPtr` and
//! `_methodPtrAux` (`MulticastDelegate` adds `_invocationList` and `_invocationCount`). The
//! runtime binds them (COMDelegate::BindToMethod) as:
//! - closed instance (and closed static) delegates: `_target` = the object, `_methodPtr` = the
//!   method's entry point, `_methodPtrAux` = 0;
//! - open static delegates (a delegate to a static method): `_target` = the delegate itself,
//!   `_methodPtr` = a shuffle thunk, `_methodPtrAux` = the method's entry point;
//! - multicast delegates: `_invocationList` = an `object[]` of the delegates and
//!   `_invocationCount` their number; `_methodPtr` is an invoke stub.
//!
//! An entry point is either the method's JIT'd or ReadyToRun code (named through the code
//! manager, [`StackWalker::ip_to_method`]) or, for methods never called or with tiering, a
//! precode whose data names the MethodDesc. x64 .NET 8 precodes (dotnet/runtime v8.0.4
//! `src/coreclr/vm/precode.h`, `amd64/thunktemplates.S`), code in one page, data in the next:
//! - FixupPrecode: `jmp [rip+Target]; mov r10, [rip+MethodDesc]; jmp [rip+PrecodeFixupThunk]`
//!   (`FF 25 d32 4C 8B 15 d32 FF 25 d32`), data `{Target, MethodDesc, PrecodeFixupThunk}`;
//! - StubPrecode: `mov r10, [rip+SecretParam]; jmp [rip+Target]` (`4C 8B 15 d32 FF 25 d32`),
//!   data `{SecretParam (the MethodDesc for a method's precode), Target, Type}`.
//!
//! The `mov r10` displacement is decoded rather than assuming the stub page size, and every
//! MethodDesc found is checked (its chunk's MethodTable must decode) before it is named.
//! `_methodBase` (a `RuntimeMethodInfo` whose `m_handle` is the MethodDesc) is the last resort;
//! it is usually null.

use crate::error::ClrError;
use crate::model::objects::{FieldData, FieldValue, ObjectReader};
use crate::model::precode::precode_method_desc;
use crate::model::stack::StackWalker;
use dumpreader::Memory;
use serde::Serialize;

/// The method a (single-cast) delegate calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DelegateMethod {
    /// The delegate object.
    pub delegate: u64,
    /// The delegate's type (`System.Threading.TimerCallback`).
    pub delegate_type: String,
    /// The object the method is called on (0: none, a static method).
    pub target: u64,
    /// That object's type.
    pub target_type: Option<String>,
    /// Whether the delegate is bound to a static method (open: `_target` is the delegate).
    pub is_static: bool,
    /// The code pointer the method was found from.
    pub code: u64,
    /// Which field held it: `_methodPtr`, `_methodPtrAux` or `_methodBase`.
    pub code_field: &'static str,
    /// How the MethodDesc was found: `code` (JIT'd or ReadyToRun code), `FixupPrecode`,
    /// `StubPrecode` or `MethodInfo` (`_methodBase.m_handle`).
    pub resolved_by: &'static str,
    /// The MethodDesc.
    pub method_desc: u64,
    /// The method's name with its parameters, as the DAC names it
    /// (`Threadpool.Program.OnHeartbeat(System.Object)`).
    pub method: String,
}

impl DelegateMethod {
    /// The method's name without its parameter list (`Threadpool.Program.OnHeartbeat`).
    pub fn short_name(&self) -> &str {
        short_method_name(&self.method)
    }
}

/// A method name cut at its parameter list.
pub fn short_method_name(name: &str) -> &str {
    name.split('(').next().unwrap_or(name)
}

/// The raw fields of a delegate object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct DelegateFields {
    /// `_target`.
    pub target: u64,
    /// `_methodBase`.
    pub method_base: u64,
    /// `_methodPtr`.
    pub method_ptr: u64,
    /// `_methodPtrAux`.
    pub method_ptr_aux: u64,
    /// `_invocationList` (0 when not a multicast delegate or not present).
    pub invocation_list: u64,
    /// `_invocationCount`.
    pub invocation_count: u64,
}

fn field<'f>(fields: &'f [FieldData], name: &str) -> Option<&'f FieldData> {
    fields.iter().rev().find(|f| f.name == name)
}

fn word(fields: &[FieldData], name: &str) -> Option<u64> {
    match &field(fields, name)?.value {
        FieldValue::Object { address, .. } => Some(*address),
        FieldValue::Pointer { value } | FieldValue::UInt { value } => Some(*value),
        FieldValue::Int { value } => Some(*value as u64),
        _ => None,
    }
}

/// Reads a delegate's fields; the error says why `addr` is not a readable delegate.
pub fn delegate_fields<M: Memory>(
    r: &ObjectReader<'_, M>,
    addr: u64,
) -> crate::Result<(u64, DelegateFields)> {
    let (mt, info) = r.object_mt(addr)?;
    if info.component_size != 0 {
        return Err(ClrError::not_found_at(
            "delegate",
            addr,
            format!("a {} (an array or string), not a delegate", r.type_name(mt)),
        ));
    }
    let fields = r
        .fields(mt, addr + 8, false)
        .map_err(|e| e.context(format!("the fields of delegate {addr:#x}")))?;
    let ptr = word(&fields, "_methodPtr").ok_or_else(|| {
        ClrError::not_found_at(
            "delegate",
            addr,
            format!(
                "a {}, not a delegate (no _methodPtr field)",
                r.type_name(mt)
            ),
        )
    })?;
    Ok((
        mt,
        DelegateFields {
            target: word(&fields, "_target").unwrap_or(0),
            method_base: word(&fields, "_methodBase").unwrap_or(0),
            method_ptr: ptr,
            method_ptr_aux: word(&fields, "_methodPtrAux").unwrap_or(0),
            invocation_list: word(&fields, "_invocationList").unwrap_or(0),
            invocation_count: word(&fields, "_invocationCount").unwrap_or(0),
        },
    ))
}

/// Bound on a multicast delegate's invocation list read.
pub const MAX_INVOCATION_LIST: u64 = 4096;

/// The delegates of a multicast delegate's invocation list (`None` when `addr` is not one).
pub fn invocation_list<M: Memory>(
    r: &ObjectReader<'_, M>,
    addr: u64,
) -> crate::Result<Option<Vec<u64>>> {
    let (_, f) = delegate_fields(r, addr)?;
    if f.invocation_list == 0 || f.invocation_count == 0 {
        return Ok(None);
    }
    let (_, info) = r.object_mt(f.invocation_list)?;
    let Some(a) = r.array(f.invocation_list, &info)? else {
        // A wrapper delegate (`_invocationList` holding one delegate): not an invocation list.
        return Ok(None);
    };
    let n = f.invocation_count.min(a.length).min(MAX_INVOCATION_LIST);
    let mut out = Vec::new();
    for i in 0..n {
        let p = a.data + 8 * i;
        let d =
            r.rt.memory()
                .read_u64(p)
                .map_err(|_| ClrError::read(format!("invocation list element {i}"), p))?;
        out.push(d);
    }
    Ok(Some(out))
}

/// The method a single-cast delegate calls, on which object; the error says precisely why it
/// could not be found (not a delegate, multicast, code pointer unresolvable, memory missing).
pub fn delegate_method<M: Memory>(
    r: &ObjectReader<'_, M>,
    w: &StackWalker<'_, M>,
    addr: u64,
) -> crate::Result<DelegateMethod> {
    let (mt, f) = delegate_fields(r, addr)?;
    let delegate_type = r.type_name(mt);
    if f.invocation_count != 0 && f.invocation_list != 0 {
        let is_array = r
            .object_mt(f.invocation_list)
            .is_ok_and(|(_, i)| i.component_size != 0);
        if is_array {
            return Err(ClrError::unsupported(
                format!("{delegate_type} {addr:#x}"),
                Some(addr),
                format!(
                    "a multicast delegate of {} delegates (invocation list {:#x}): resolve each",
                    f.invocation_count, f.invocation_list
                ),
            ));
        }
    }
    let (code, code_field) = if f.method_ptr_aux != 0 {
        (f.method_ptr_aux, "_methodPtrAux")
    } else {
        (f.method_ptr, "_methodPtr")
    };
    let is_static = f.target == addr || (f.method_ptr_aux != 0 && f.target == 0);
    let target = if is_static { 0 } else { f.target };
    let target_type = (target != 0).then(|| match r.object_mt(target) {
        Ok((m, _)) => r.type_name(m),
        Err(e) => format!("<unreadable: {e}>"),
    });
    let found = code_method_desc(r, w, code);
    let (md, resolved_by, code_field, code) = match found {
        Ok((md, by)) => (md, by, code_field, code),
        Err(why) => match method_info_handle(r, f.method_base) {
            Some(md) => (md, "MethodInfo", "_methodBase", f.method_base),
            None => {
                return Err(why.context(format!(
                    "{delegate_type} {addr:#x}: {code_field} {code:#x}{}",
                    if f.method_base == 0 {
                        " (and _methodBase is null)"
                    } else {
                        ""
                    }
                )))
            }
        },
    };
    let method = method_desc_name(r, w, md)
        .map_err(|e| e.context(format!("{delegate_type} {addr:#x}: MethodDesc {md:#x}")))?;
    Ok(DelegateMethod {
        delegate: addr,
        delegate_type,
        target,
        target_type,
        is_static,
        code,
        code_field,
        resolved_by,
        method_desc: md,
        method,
    })
}

/// The name of a MethodDesc's method as the DAC spells it (`GetMethodDescName`,
/// `GetRuntimeNameByAddress`): the stack walk's naming ([`StackWalker::method_desc_name`]), so
/// a delegate's target is named as a frame of it would be: its type with the instantiation
/// (`System.Buffers.SharedArrayPool`1+<>c[[System.Byte, System.Private.CoreLib]]`), a generic
/// method's arguments, a dynamic method's stored name.
pub fn method_desc_name<M: Memory>(
    _r: &ObjectReader<'_, M>,
    w: &StackWalker<'_, M>,
    md: u64,
) -> crate::Result<String> {
    w.method_desc_name(md)
        .map(|(_, _, n)| n)
        .map_err(|(_, _, e)| e)
}

/// The MethodDesc of a code pointer: managed code through the code manager, else a precode.
pub fn code_method_desc<M: Memory>(
    r: &ObjectReader<'_, M>,
    w: &StackWalker<'_, M>,
    code: u64,
) -> crate::Result<(u64, &'static str)> {
    if code == 0 {
        return Err(ClrError::not_found_at(
            "code",
            0,
            "the code pointer is null",
        ));
    }
    let managed = w.ip_to_method(code);
    if let Ok(Some((ci, f))) = &managed {
        if let Some(md) = f.method_desc.or(ci.method_desc) {
            return Ok((md, "code"));
        }
    }
    match precode_method_desc(r.rt, w, code) {
        Ok(v) => Ok(v),
        Err(why) => Err(match managed {
            Ok(Some(_)) => why.context("managed code whose MethodDesc is not known"),
            Ok(None) => why,
            Err(e) => why.context(format!("the code manager says: {e}")),
        }),
    }
}

/// `RuntimeMethodInfo.m_handle` (the MethodDesc) of a `_methodBase` object, if it is one.
fn method_info_handle<M: Memory>(r: &ObjectReader<'_, M>, obj: u64) -> Option<u64> {
    if obj == 0 {
        return None;
    }
    let (mt, _) = r.object_mt(obj).ok()?;
    let fields = r.fields(mt, obj + 8, false).ok()?;
    word(&fields, "m_handle").filter(|&h| h != 0)
}
