//! Signature decoding on hand-built blobs (II.23.2 encodings the corpus lacks), hostile
//! input, and the fuzzers' findings kept as regression inputs.

use clrdata::metadata::sig::*;
use clrdata::metadata::*;

struct Names;
impl SigResolver for Names {
    fn type_name(&self, token: Token, _style: SigStyle, out: &mut String) {
        out.push_str(match (token.table(), token.rid()) {
            (Some(TableId::TypeRef), 1) => "System.Collections.Generic.List`1",
            (Some(TableId::TypeRef), 2) => "System.Runtime.CompilerServices.IsVolatile",
            (Some(TableId::TypeDef), 3) => "My.Point",
            _ => "?",
        });
    }
    fn assembly_of(&self, _token: Token) -> Option<String> {
        Some("lib".into())
    }
    fn core_assembly(&self) -> Option<String> {
        Some("System.Private.CoreLib".into())
    }
}

fn dac(t: &SigType) -> String {
    type_to_string(t, SigStyle::Dac, &Names)
}
fn tn(t: &SigType) -> String {
    type_to_string(t, SigStyle::TypeName, &Names)
}

#[test]
fn method_sig_with_generics_byref_and_instantiation() {
    // GENERIC HASTHIS, 1 generic param, 3 params: ret void; (!!0 ByRef, List<int>, object[])
    let blob = [
        0x30, 1, 3, 0x01, 0x10, 0x1e, 0, 0x15, 0x12, 0x05, 1, 0x08, 0x1d, 0x1c,
    ];
    let m = decode_method_sig(&blob).unwrap();
    assert!(m.has_this() && m.is_generic() && !m.explicit_this());
    assert_eq!(m.generic_param_count, 1);
    assert_eq!(m.ret, SigType::Primitive(Primitive::Void));
    assert_eq!(m.params.len(), 3);
    assert_eq!(
        format_method_params(&m, &Names),
        "(!!0 ByRef, System.Collections.Generic.List`1<Int32>, System.Object[])"
    );
    assert_eq!(
        tn(&m.params[1]),
        "System.Collections.Generic.List`1[[System.Int32, System.Private.CoreLib]]"
    );
}

#[test]
fn general_array_with_sizes_and_negative_lower_bounds() {
    // FIELD ARRAY int32 rank 2, 2 sizes (3, 4), 2 lo bounds (0, -1)
    let blob = [0x06, 0x14, 0x08, 2, 2, 3, 4, 2, 0x00, 0x7f];
    let t = decode_field_sig(&blob).unwrap();
    match &t {
        SigType::Array {
            rank,
            sizes,
            lower_bounds,
            ..
        } => {
            assert_eq!(
                (*rank, sizes.as_slice(), lower_bounds.as_slice()),
                (2, &[3, 4][..], &[0, -1][..])
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(dac(&t), "Int32[,]");
    assert_eq!(tn(&t), "System.Int32[,]");
    // Signed compressed integers: 2- and 4-byte forms (II.23.2: -8192 = 0x80 0x01, 268435455 = 0xDF 0xFF 0xFF 0xFE).
    let t = decode_field_sig(&[
        0x06, 0x14, 0x08, 2, 0, 2, 0x80, 0x01, 0xDF, 0xFF, 0xFF, 0xFE,
    ])
    .unwrap();
    let SigType::Array { lower_bounds, .. } = t else {
        panic!()
    };
    assert_eq!(lower_bounds, [-8192, 268435455]);
    // rank-1 general array
    let t = decode_field_sig(&[0x06, 0x14, 0x08, 1, 0, 0]).unwrap();
    assert_eq!(
        (dac(&t), tn(&t)),
        ("Int32[]".into(), "System.Int32[*]".into())
    );
}

#[test]
fn vararg_call_site_with_sentinel() {
    // VARARG, 3 params: ret int32; (string, SENTINEL int32, float64)
    let m = decode_method_sig(&[0x05, 3, 0x08, 0x0e, 0x41, 0x08, 0x0d]).unwrap();
    assert!(m.is_vararg());
    assert_eq!(m.sentinel, Some(1));
    assert_eq!(format_method_params(&m, &Names), "(System.String, ...)");
}

#[test]
fn function_pointers_modifiers_pinned_typedbyref() {
    // FNPTR default: ret void*, (int32, TypedReference)
    let t = decode_field_sig(&[0x06, 0x1b, 0x00, 2, 0x0f, 0x01, 0x08, 0x16]).unwrap();
    assert_eq!(dac(&t), "Void* (Int32, TypedReference)");
    // modreq(IsVolatile) int32: modifiers are skipped when formatting
    let t = decode_field_sig(&[0x06, 0x1f, (2 << 2) | 1, 0x08]).unwrap();
    assert!(matches!(t, SigType::Modified { required: true, .. }));
    assert_eq!(*t.unmodified(), SigType::Primitive(Primitive::I4));
    assert_eq!(dac(&t), "Int32");
    // locals: pinned byref int32, valuetype My.Point, uintptr
    let locals = decode_local_sig(&[0x07, 3, 0x45, 0x10, 0x08, 0x11, 3 << 2, 0x19]).unwrap();
    assert_eq!(locals.len(), 3);
    assert!(matches!(&locals[0], SigType::Pinned(_)));
    assert_eq!(dac(&locals[0]), "Int32 ByRef");
    assert_eq!(tn(&locals[0]), "System.Int32&");
    assert_eq!(dac(&locals[1]), "My.Point");
    assert_eq!(dac(&locals[2]), "UIntPtr");
    // VAR / MVAR without names
    let t = decode_type_spec(&[0x15, 0x12, 0x05, 2, 0x13, 0, 0x1e, 1]).unwrap();
    assert_eq!(dac(&t), "System.Collections.Generic.List`1<!0,!!1>");
    // method spec, property sig
    assert_eq!(decode_method_spec(&[0x0a, 2, 0x08, 0x1c]).unwrap().len(), 2);
    let p = decode_property_sig(&[0x28, 1, 0x0e, 0x08]).unwrap();
    assert!(p.has_this);
    assert_eq!(p.params.len(), 1);
}

#[test]
fn hostile_signatures_fail_cleanly() {
    // A count larger than the blob: refused before any allocation.
    let e = decode_method_sig(&[0x00, 0xDF, 0xFF, 0xFF, 0xFF, 0x01]).unwrap_err();
    assert!(matches!(e, Error::BadSignatureBlob { .. }), "{e}");
    // Deep nesting: SZARRAY x 10000.
    let mut deep = vec![0x06];
    deep.extend(vec![0x1du8; 10_000]);
    deep.push(0x08);
    let e = decode_field_sig(&deep).unwrap_err();
    assert!(e.to_string().contains("nested deeper"), "{e}");
    // Truncated everywhere.
    let blob = [
        0x30, 1, 3, 0x01, 0x10, 0x1e, 0, 0x15, 0x12, 0x05, 1, 0x08, 0x1d, 0x1c,
    ];
    for n in 0..blob.len() {
        assert!(decode_method_sig(&blob[..n]).is_err());
    }
    // Bad element type, tag 3 in a TypeDefOrRef, GENERICINST of a primitive, wrong convention.
    assert!(decode_type_spec(&[0x40]).is_err());
    assert!(decode_type_spec(&[0x12, 0x03]).is_err());
    assert!(decode_type_spec(&[0x15, 0x08, 0x05, 1, 0x08]).is_err());
    assert!(decode_field_sig(&[0x00, 0x08]).is_err());
    assert!(decode_local_sig(&[0x06, 0]).is_err());
}

#[test]
fn hostile_metadata_fails_cleanly() {
    assert!(matches!(Metadata::parse(b""), Err(Error::Truncated { .. })));
    assert!(matches!(
        Metadata::parse(b"XXXXxxxxxxxxxxxxxxxx"),
        Err(Error::BadSignature { .. })
    ));
    // A root claiming 65535 streams.
    let mut root =
        b"BSJB\x01\x00\x01\x00\x00\x00\x00\x00\x04\x00\x00\x00v1\x00\x00\x00\x00\xff\xff".to_vec();
    root.extend([0u8; 16]);
    assert!(matches!(
        Metadata::parse(&root),
        Err(Error::BadStream { .. })
    ));
    // Not a PE.
    assert!(matches!(
        locate_in_pe(b"MZ", PeLayout::Flat),
        Err(Error::BadPe { .. })
    ));
}

/// Real metadata (hang.dll, out of the hang dump), cut at every length and with bytes
/// flipped at a deterministic pseudo-random sample of positions: errors, never panics.
#[test]
fn truncated_and_mutated_real_metadata() {
    let dump = dumpreader::Dump::open(&tests::entry("hang").dump_path()).unwrap();
    let m = dump.module_by_name("hang.dll").unwrap();
    let md = read_metadata(&dump, m.base, Some(m.size())).unwrap().bytes;
    for n in (0..md.len()).step_by(7) {
        fuzz_exercise(&md[..n]);
    }
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..400 {
        let mut b = md.clone();
        for _ in 0..4 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let i = (x as usize) % b.len().min(4096);
            b[i] = (x >> 32) as u8;
        }
        fuzz_exercise(&b);
    }
}

/// Inputs the fuzzers found (clrdata/fuzz), kept as regression tests.
#[test]
fn fuzz_regressions() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/metadata-fuzz");
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let data = std::fs::read(&p).unwrap();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("sig-") {
            fuzz_signature(&data);
        } else if name.starts_with("md-") {
            fuzz_exercise(&data);
        }
    }
}
