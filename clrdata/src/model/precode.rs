//! Precode stubs: the small thunks a method's slot points at before (or instead of) its code.
//! x64 FixupPrecode and StubPrecode hold the MethodDesc in a data slot beside them.

use crate::data::types::ReadTypes;
use crate::discovery::runtime::Runtime;
use crate::error::ClrError;
use crate::model::stack::StackWalker;
use dumpreader::Memory;

/// The type byte of a method's StubPrecode (`StubPrecodeData.Type`): the runtime's own
/// `PrecodeMachineDescriptor.StubPrecodeType` where it publishes one (.NET 10, through the
/// descriptor's `PlatformMetadata` global) and the dump holds it, else `StubPrecode::Type`.
pub fn stub_precode_type<M: Memory>(rt: &Runtime<M>) -> u8 {
    let ml = &rt.layout.methods;
    ml.stub_precode_type_offset
        .and_then(|off| {
            let pm = rt.descriptor()?.global_number("PlatformMetadata")?;
            rt.memory().read_u8(pm + off).ok()
        })
        .unwrap_or(ml.stub_precode_type)
}

/// The size of a stub code page (`GetStubCodePageSize()`), the distance from an interleaved
/// stub's code to its data: the runtime's own `PrecodeMachineDescriptor.StubCodePageSize`
/// where it publishes one (.NET 10) and the dump holds it, else the layout's.
pub fn stub_code_page_size<M: Memory>(rt: &Runtime<M>) -> u64 {
    let ml = &rt.layout.methods;
    ml.stub_code_page_size_offset
        .and_then(|off| {
            let pm = rt.descriptor()?.global_number("PlatformMetadata")?;
            rt.memory().read_u32(pm + off).ok()
        })
        .filter(|&p| p.is_power_of_two() && p >= 0x1000)
        .map_or(ml.stub_code_page_size, u64::from)
}

/// Where a call counting stub at `stub` sends the method's calls: its
/// `CallCountingStubData {RemainingCallCountCell, TargetForMethod, TargetForThresholdReached}`
/// a stub code page on (callcounting.h). Tiered compilation puts such a stub in front of the
/// method's active code version while it counts calls to it, so the target is that version's
/// code. `None` unless the data is one: a count cell, and a threshold target inside the runtime
/// module (the runtime's OnCallCountThresholdReached stub). The caller checks that the target
/// is the method's own code.
pub fn call_counting_stub_target<M: Memory>(rt: &Runtime<M>, stub: u64) -> Option<u64> {
    let m = rt.memory();
    let data = stub.checked_add(stub_code_page_size(rt))?;
    let cell = m.read_u64(data).ok()?;
    let target = m.read_u64(data + 8).ok()?;
    let threshold = m.read_u64(data + 16).ok()?;
    let rti = &rt.info;
    let in_runtime = threshold >= rti.base && threshold < rti.base + rti.size;
    (cell != 0 && target != 0 && in_runtime).then_some(target)
}

/// Decodes an x64 .NET 8 FixupPrecode or StubPrecode at `code`: (MethodDesc, kind).
pub fn precode_method_desc<M: Memory>(
    rt: &Runtime<M>,
    w: &StackWalker<'_, M>,
    code: u64,
) -> crate::Result<(u64, &'static str)> {
    let m = rt.memory();
    let mut b = [0u8; 16];
    m.read_exact(code, &mut b)
        .map_err(|_| ClrError::read("16 bytes of what is not managed code (a precode?)", code))?;
    let disp = |at: usize| i32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]) as i64;
    let mov_r10 = |at: usize| b[at..at + 3] == [0x4C, 0x8B, 0x15];
    let jmp_ind = |at: usize| b[at..at + 2] == [0xFF, 0x25];
    // (address of the `mov r10, [rip+d]` instruction, kind)
    let (mov_at, kind) = if jmp_ind(0) && mov_r10(6) {
        (6usize, "FixupPrecode")
    } else if mov_r10(0) && jmp_ind(7) {
        (0usize, "StubPrecode")
    } else {
        return Err(ClrError::not_found_at(
            "code",
            code,
            format!(
                "neither managed code nor a FixupPrecode/StubPrecode (bytes {})",
                b[..8]
                    .iter()
                    .map(|x| format!("{x:02x}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        ));
    };
    let slot = (code + mov_at as u64 + 7).wrapping_add_signed(disp(mov_at + 3));
    let md = m
        .read_u64(slot)
        .map_err(|_| ClrError::read(format!("the data slot of the {kind} at {code:#x}"), slot))?;
    if kind == "StubPrecode" {
        // StubPrecodeData {SecretParam, Target, Type}: only a method's precode (its type is
        // StubPrecode::Type, 0x4C on x64, or what the runtime publishes) holds a MethodDesc.
        let ty = m.read_u8(slot + 16).unwrap_or(0);
        if ty != stub_precode_type(rt) {
            return Err(ClrError::not_found_at(
                "StubPrecode",
                code,
                format!("of type {ty:#x}: not a method's precode (no MethodDesc)"),
            ));
        }
    }
    if md == 0 {
        return Err(ClrError::corrupt(kind, code, "holds a null MethodDesc"));
    }
    let info = w
        .method_desc_info(md)
        .map_err(|e| e.context(format!("the MethodDesc {md:#x} of the {kind} at {code:#x}")))?;
    rt.method_table(info.method_table).map_err(|e| {
        e.context(format!(
            "the MethodDesc {md:#x} of the {kind} at {code:#x}, whose MethodTable"
        ))
    })?;
    Ok((md, kind))
}
