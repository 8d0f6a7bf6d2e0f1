//! The portable-PDB fuzz entry point (beside [`super::fuzz_exercise`]): runs every PDB reader
//! entry point over untrusted bytes and discards the results. Used by the robustness test
//! (clrdata/tests/pdb_robustness.rs) and fit for a cargo-fuzz target.

use super::pdb::PortablePdb;
use super::pdbfile::{decompress_embedded_pdb, read_debug_info, PeLayout};
use super::reader::Token;
use super::tables::TableId;

/// Most rows (methods, documents, scopes) visited, so one input stays fast.
const ROW_BUDGET: u32 = 2048;

/// Parses `data` as a portable PDB, as a PE image's debug directory (both layouts) and as an
/// embedded PDB, and reads everything reachable.
pub fn fuzz_pdb(data: &[u8]) {
    for layout in [PeLayout::Mapped, PeLayout::Flat] {
        let _ = read_debug_info(data, layout);
    }
    if let Ok(b) = decompress_embedded_pdb(data) {
        exercise(&b);
    }
    exercise(data);
}

fn exercise(data: &[u8]) {
    let Ok(p) = PortablePdb::parse(data) else {
        return;
    };
    let _ = p.id();
    let _ = p.entry_point();
    for rid in 1..=p.row_count(TableId::Document).min(ROW_BUDGET) {
        let _ = p.document(rid);
    }
    let methods = p
        .row_count(TableId::MethodDebugInformation)
        .max(p.type_system_rows(TableId::MethodDef))
        .min(ROW_BUDGET);
    for rid in 1..=methods + 1 {
        let m = Token::new(TableId::MethodDef, rid);
        if let Ok(points) = p.sequence_points(m) {
            for sp in points.iter().take(64) {
                let _ = p.source_line(m, sp.il_offset);
                let _ = p.locals(m, sp.il_offset);
                let _ = p.local_constants(m, sp.il_offset);
            }
        }
        let _ = p.source_line(m, u32::MAX);
        let _ = p.local_scopes(m);
        let _ = p.local_name(m, 0);
        let _ = p.kickoff_method(m);
        let _ = p.move_next_method(m);
        let _ = p.hoisted_local_scopes(m);
    }
    for rid in 1..=p.row_count(TableId::LocalScope).min(ROW_BUDGET) {
        let _ = p.local_scope(rid);
    }
    for rid in 1..=p.row_count(TableId::ImportScope).min(ROW_BUDGET) {
        let _ = p.import_scope(rid);
    }
    for rid in 1..=p.row_count(TableId::CustomDebugInformation).min(ROW_BUDGET) {
        if let Ok(c) = p.custom_debug_info(rid) {
            let _ = p.custom_debug_infos_of(c.parent);
        }
    }
    let _ = p.sequence_points(Token(0));
    let _ = p.sequence_points(Token::new(TableId::TypeDef, 1));
}
