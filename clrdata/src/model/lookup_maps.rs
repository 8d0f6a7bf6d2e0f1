//! A Module's LookupMaps (TypeDefToMethodTable, MethodDefToDesc): the runtime's tables from a
//! metadata token's row to what it loaded for it. Below both the type names and the object
//! reader, which each look a TypeDef up.

use crate::discovery::runtime::Runtime;
use dumpreader::Memory;

/// The loaded MethodTable of TypeDef `rid` of `module` (TypeDefToMethodTable map).
pub fn typedef_mt<M: Memory>(rt: &Runtime<M>, module: u64, rid: u32) -> Option<u64> {
    lookup_map_entry(rt.memory(), module + rt.layout.objects.typedef_map, rid)
}

/// The MethodDesc of MethodDef `rid` of `module` (MethodDefToDesc map), when the method's
/// MethodDesc exists; `None` also where the layout does not know the map
/// ([`crate::discovery::layout::ImageRecordsLayout::methoddef_map`]).
pub fn methoddef_md<M: Memory>(rt: &Runtime<M>, module: u64, rid: u32) -> Option<u64> {
    let off = rt.layout.image_records?.methoddef_map;
    lookup_map_entry(rt.memory(), module + off, rid)
}

/// Entry `rid` of the Module's `LookupMap` at `map` (pNext at 0, pTable at 8, dwCount at
/// 0x10, supportedFlags at 0x18; a map continues in the next when `rid` is past its
/// count), its flag bits cleared; `None` when empty or unreadable.
fn lookup_map_entry<M: Memory>(m: &M, map: u64, rid: u32) -> Option<u64> {
    let mut map = map;
    let mut index = rid as u64;
    for _ in 0..64 {
        let table = m.read_u64(map + 8).ok()?;
        let count = m.read_u32(map + 0x10).ok()? as u64;
        let flags = m.read_u64(map + 0x18).ok()?;
        if index < count {
            let v = m.read_u64(table + 8 * index).ok()?;
            let mask = if flags < 8 { flags } else { 3 };
            let e = v & !mask;
            return (e != 0).then_some(e);
        }
        index -= count;
        map = m.read_u64(map).ok()?;
        if map == 0 {
            return None;
        }
    }
    None
}
