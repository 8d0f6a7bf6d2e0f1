//! Entry points shared by the fuzz targets (clrdata/fuzz) and the regression tests: they run
//! every reader entry point over untrusted bytes and discard the results.

use super::names::{format_method_params, type_to_string, MetadataNames, SigStyle};
use super::pe::{locate_in_pe, PeLayout};
use super::reader::{Metadata, Token};
use super::sig;
use super::tables::TableId;

/// Most rows visited per table, so one input stays fast (bounds are the reader's job; this
/// only keeps the fuzzer's iterations short).
const ROW_BUDGET: u32 = 4096;

/// Parses `data` as a PE image (both layouts) and as metadata, and reads everything.
pub fn fuzz_exercise(data: &[u8]) {
    for layout in [PeLayout::Mapped, PeLayout::Flat] {
        if let Ok(r) = locate_in_pe(data, layout) {
            if let Some(md) = data.get(r) {
                exercise_metadata(md);
            }
        }
    }
    exercise_metadata(data);
}

fn exercise_metadata(data: &[u8]) {
    let Ok(md) = Metadata::parse(data) else {
        return;
    };
    let names = MetadataNames::new(&md);
    let _ = md.mvid();
    for &t in TableId::ALL {
        for rid in 1..=md.row_count(t).min(ROW_BUDGET) {
            let _ = md.raw_row(t, rid);
        }
    }
    let n = |t| md.row_count(t).min(ROW_BUDGET);
    for rid in 1..=n(TableId::TypeDef) {
        let _ = md.type_def(rid);
        let _ = md.type_name(rid);
        let _ = md.type_def_fields(rid);
        let _ = md.type_def_methods(rid);
        let _ = md.enclosing_class(rid);
        let _ = md.generic_params(Token::new(TableId::TypeDef, rid));
        let _ = md.interface_impls(rid);
        let _ = md.class_layout_of(rid);
    }
    for rid in 1..=n(TableId::TypeRef) {
        let _ = md.type_ref_name(rid);
        let _ = md.type_ref_assembly(rid);
    }
    for rid in 1..=n(TableId::Field).min(512) {
        let _ = md.field_owner(rid);
        if let Ok(t) = md.field_sig(rid) {
            let _ = type_to_string(&t, SigStyle::TypeName, &names);
            let _ = type_to_string(&t, SigStyle::Dac, &names);
        }
    }
    for rid in 1..=n(TableId::MethodDef).min(512) {
        let _ = md.method_display_name(rid);
        let _ = md.method_params(rid);
    }
    for rid in 1..=n(TableId::TypeSpec) {
        let _ = md.token_type_name(Token::new(TableId::TypeSpec, rid));
    }
    for rid in 1..=n(TableId::MemberRef) {
        if let Ok(m) = md.member_ref(rid) {
            if let Ok(s) = sig::decode_method_sig(m.signature) {
                let _ = format_method_params(&s, &names);
            }
        }
    }
    for rid in 1..=n(TableId::StandAloneSig) {
        if let Ok(s) = md.stand_alone_sig(rid) {
            let _ = sig::decode_local_sig(s.signature);
        }
    }
    for rid in 1..=n(TableId::MethodSpec) {
        let _ = md.method_spec_sig(rid);
    }
    for rid in 1..=n(TableId::Property) {
        let _ = md.property_sig(rid);
    }
    for rid in 1..=n(TableId::PropertyMap) {
        let _ = md.property_map_properties(rid);
    }
    for rid in 1..=n(TableId::EventMap) {
        let _ = md.event_map_events(rid);
    }
    for rid in 1..=n(TableId::AssemblyRef) {
        let _ = md.assembly_ref(rid);
    }
    for rid in 1..=n(TableId::CustomAttribute) {
        let _ = md.custom_attribute(rid);
    }
    for rid in 1..=n(TableId::GenericParam) {
        let _ = md.generic_param(rid);
    }
    let _ = md.assembly(1);
    let mut us = 0u32;
    for _ in 0..64 {
        match md.user_string(us) {
            Ok(s) => us = us.saturating_add(1 + 2 * s.len() as u32),
            Err(_) => break,
        }
    }
}

/// Runs every signature decoder over `data` and formats what decodes.
pub fn fuzz_signature(data: &[u8]) {
    struct NoNames;
    impl super::names::SigResolver for NoNames {
        fn type_name(&self, token: Token, _style: SigStyle, out: &mut String) {
            out.push_str(&token.to_string());
        }
    }
    if let Ok(m) = sig::decode_method_sig(data) {
        let _ = format_method_params(&m, &NoNames);
    }
    for t in [sig::decode_field_sig(data), sig::decode_type_spec(data)]
        .into_iter()
        .flatten()
    {
        let _ = type_to_string(&t, SigStyle::Dac, &NoNames);
        let _ = type_to_string(&t, SigStyle::TypeName, &NoNames);
    }
    let _ = sig::decode_local_sig(data);
    let _ = sig::decode_method_spec(data);
    let _ = sig::decode_property_sig(data);
}
