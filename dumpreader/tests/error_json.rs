//! The JSON shape of dumpreader's errors (docs/json.md, "Errors"): `{"kind", ...fields,
//! "message"}`, addresses and file offsets as "0x..." strings, nested errors as objects of the
//! same shape, each key once.

use dumpreader::{
    Error, Evidence, FileCheck, FileSourceState, ImageGap, ModuleIdentity, NoFile, ReadError,
    Refusal, Refusals,
};
use serde_json::{json, Value};
use std::path::PathBuf;

/// The JSON text and its parsed value; fails when a key appears twice in one object (a parsed
/// value would keep only the last).
fn to_json<T: serde::Serialize>(v: &T) -> Value {
    let text = serde_json::to_string(v).unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    fn count_keys(v: &Value) -> usize {
        match v {
            Value::Object(m) => m.len() + m.values().map(count_keys).sum::<usize>(),
            Value::Array(a) => a.iter().map(count_keys).sum(),
            _ => 0,
        }
    }
    // Every key of the text is a key of the value: count the `"key":` of the text.
    let mut in_str = false;
    let mut escaped = false;
    let mut keys = 0;
    let b = text.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if in_str {
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_str = false;
                if b.get(i + 1) == Some(&b':') {
                    keys += 1;
                }
            }
        } else if c == b'"' {
            in_str = true;
        }
    }
    assert_eq!(keys, count_keys(&value), "a key appears twice: {text}");
    value
}

#[test]
fn an_error_is_kind_fields_and_message() {
    let e = Error::Truncated {
        structure: "program header 5".into(),
        offset: 0x40,
        needed: 56,
        file_len: 0x60,
    };
    assert_eq!(
        to_json(&e),
        json!({
            "kind": "truncated",
            "structure": "program header 5",
            "offset": "0x40",
            "needed": 56,
            "file_len": 96,
            "message": "program header 5 at file offset 0x40 needs 56 bytes but the file is \
                        only 0x60 bytes long",
        })
    );
    let e = Error::Io {
        path: PathBuf::from("/tmp/x.core"),
        message: "No such file or directory (os error 2)".into(),
    };
    assert_eq!(
        to_json(&e),
        json!({"kind": "io", "path": "/tmp/x.core",
               "os_error": "No such file or directory (os error 2)",
               "message": "/tmp/x.core: No such file or directory (os error 2)"})
    );
}

/// One value of every variant: each serializes with one `kind` (snake_case), no key twice,
/// and its `Display` as `message`.
#[test]
fn every_variant_has_the_shape() {
    let id = || ModuleIdentity::Pe {
        timestamp: 0x5eed_1234,
        size_of_image: 0x3000,
    };
    let err = || {
        Box::new(Error::BadImage {
            structure: "PE header".into(),
            address: 0x1000,
            reason: "magic 0x0".into(),
        })
    };
    let file = || PathBuf::from("/f/A.dll");
    let evidence = || Evidence::Identity { identity: id() };
    let errors = vec![
        Error::Io {
            path: file(),
            message: "denied".into(),
        },
        Error::BadMagic { found: vec![1, 2] },
        Error::Truncated {
            structure: "s".into(),
            offset: 1,
            needed: 2,
            file_len: 3,
        },
        Error::SegmentOutsideFile {
            index: 1,
            address: 2,
            offset: 3,
            size: 4,
            file_len: 5,
        },
        Error::AbsurdCount {
            structure: "s".into(),
            offset: 1,
            count: u64::MAX,
            max: 3,
        },
        Error::OverlappingSegment {
            index: 1,
            address: 2,
            end: 3,
            other: 0,
        },
        Error::Malformed {
            structure: "s".into(),
            offset: 1,
            reason: "r".into(),
        },
        Error::Unsupported { what: "w".into() },
        *err(),
        Error::Read(ReadError {
            addr: 1,
            wanted: 2,
            got: 0,
        }),
        Error::NoImage {
            module: "m".into(),
            refusals: Refusals::default(),
        },
        Error::NoManifest {
            host: "h".into(),
            header_offset: 0x20000,
            refusals: Refusals(vec![Refusal::ManifestNotMapped]),
        },
    ];
    let refusals = vec![
        Refusal::Incomplete {
            gaps: vec![
                ImageGap::EhFrameHdr { address: 1 },
                ImageGap::Dynamic { address: 2 },
                ImageGap::SymbolEntrySize { syment: 3 },
                ImageGap::PartialTable {
                    table: ".dynsym",
                    address: 4,
                    got: 5,
                    wanted: 6,
                },
                ImageGap::SymbolCount,
                ImageGap::Exports { error: err() },
            ],
        },
        Refusal::DumpMemory { error: err() },
        Refusal::DebuggerMemory { error: err() },
        Refusal::ManifestMappingAbsent { address: 1 },
        Refusal::ManifestInMemory {
            address: 1,
            error: err(),
        },
        Refusal::ManifestNotMapped,
        Refusal::HostFileNotFound { name: "h".into() },
        Refusal::BundleHost {
            refusals: Refusals(vec![Refusal::HostFileNotFound { name: "h".into() }]),
        },
        Refusal::CompressedEntry {
            entry: "A.dll".into(),
        },
        Refusal::EntryOutsideFile {
            file: file(),
            entry: "A.dll".into(),
            offset: 1,
            size: 2,
            file_len: 3,
        },
        Refusal::Unreadable {
            file: file(),
            message: "denied".into(),
        },
        Refusal::IdentityMismatch {
            file: file(),
            dump: id(),
            found: id(),
        },
        Refusal::NoIdentity {
            file: file(),
            dump: id(),
        },
        Refusal::OtherBundle {
            file: file(),
            evidence: evidence(),
            found: 1,
            expected: 2,
        },
        Refusal::NoBundleMarker {
            file: file(),
            evidence: Evidence::Unverified,
        },
        Refusal::NotVerified {
            file: file(),
            state: Box::new(FileSourceState::Unverified {
                candidates: vec![file()],
                why: dumpreader::Unanchored::NoPeHeaders,
            }),
        },
        Refusal::Unparsable {
            file: file(),
            error: err(),
        },
        Refusal::Records {
            file: file(),
            difference: "its length is 0x10, the runtime's layout is 0x20 bytes".into(),
        },
    ];
    let why = vec![
        NoFile::ProducerOmitsWrittenPages {
            producer: "createdump",
        },
        NoFile::NotAFile,
        NoFile::NothingMissing,
        NoFile::NotFound {
            name: "n".into(),
            recorded_path: true,
        },
        NoFile::Refused {
            refusals: Refusals(refusals.clone()),
        },
        NoFile::NoIdentity {
            recorded: "r".into(),
        },
        NoFile::Unreadable {
            file: file(),
            message: "denied".into(),
        },
        NoFile::NotACandidate { file: file() },
        NoFile::NotResolved,
    ];
    let mut values: Vec<(Value, String)> = Vec::new();
    values.extend(errors.iter().map(|e| (to_json(e), e.to_string())));
    values.extend(refusals.iter().map(|e| (to_json(e), e.to_string())));
    values.extend(why.iter().map(|e| (to_json(e), e.to_string())));
    for e in [
        evidence(),
        Evidence::IdentityAndBundle {
            identity: id(),
            header_offset: 1,
        },
        Evidence::Unverified,
        Evidence::Records {
            compared: "c".into(),
        },
    ] {
        values.push((to_json(&e), e.to_string()));
    }
    for (v, text) in values {
        let kind = v["kind"].as_str().unwrap_or_else(|| panic!("no kind: {v}"));
        assert!(
            !kind.is_empty() && kind.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
            "{v}"
        );
        assert_eq!(v["message"], text, "{v}");
        for (k, x) in v.as_object().unwrap() {
            // Addresses and offsets as "0x..".
            if [
                "address",
                "offset",
                "addr",
                "header_offset",
                "found",
                "expected",
                "end",
            ]
            .contains(&k.as_str())
                && !x.is_object()
                && !x.is_array()
            {
                assert!(
                    x.as_str().is_some_and(|s| s.starts_with("0x")) || k == "found",
                    "{k}: {v}"
                );
            }
        }
    }
}

#[test]
fn a_read_error_has_one_kind_and_one_message() {
    let r = ReadError {
        addr: 0x7fff_0000_1000,
        wanted: 8,
        got: 0,
    };
    let want = json!({
        "kind": "read",
        "addr": "0x7fff00001000",
        "wanted": 8,
        "got": 0,
        "message": "memory read at 0x7fff00001000: wanted 8 bytes, got 0",
    });
    assert_eq!(to_json(&r), want);
    assert_eq!(to_json(&Error::Read(r)), want);
}

#[test]
fn nested_refusals_are_objects_of_the_same_shape() {
    let id = ModuleIdentity::BuildId(vec![0xcd; 4]);
    let e = Error::NoImage {
        module: "/usr/lib/libx.so".into(),
        refusals: Refusals(vec![
            Refusal::Incomplete {
                gaps: vec![ImageGap::Dynamic { address: 0x1000 }],
            },
            Refusal::IdentityMismatch {
                file: "/syms/libx.so".into(),
                dump: id.clone(),
                found: ModuleIdentity::BuildId(vec![0xee; 4]),
            },
        ]),
    };
    let v = to_json(&e);
    assert_eq!(v["kind"], "no_image");
    assert_eq!(
        v["message"],
        "no image for module /usr/lib/libx.so: dump memory incomplete: .dynamic at 0x1000 not \
         in memory; /syms/libx.so: identity mismatch: dump has build-id cdcdcdcd, file has \
         build-id eeeeeeee"
    );
    let r = &v["refusals"];
    assert_eq!(r[0]["kind"], "incomplete");
    assert_eq!(
        r[0]["gaps"][0],
        json!({"kind": "dynamic", "address": "0x1000",
               "message": ".dynamic at 0x1000 not in memory"})
    );
    assert_eq!(
        r[1],
        json!({"kind": "identity_mismatch", "file": "/syms/libx.so",
               "dump": "build-id cdcdcdcd", "found": "build-id eeeeeeee",
               "message": "/syms/libx.so: identity mismatch: dump has build-id cdcdcdcd, file \
                           has build-id eeeeeeee"})
    );
    // A refusal holding an error: the error is an object too.
    let r = Refusal::DumpMemory {
        error: Box::new(Error::Read(ReadError {
            addr: 0x10,
            wanted: 4,
            got: 0,
        })),
    };
    let v = to_json(&r);
    assert_eq!(v["error"]["kind"], "read");
    assert_eq!(v["error"]["addr"], "0x10");
    assert_eq!(
        v["message"],
        "dump memory: memory read at 0x10: wanted 4 bytes, got 0"
    );
}

#[test]
fn a_file_source_state_and_its_check_serialize_alike() {
    let check = FileCheck {
        evidence: Evidence::IdentityAndBundle {
            identity: ModuleIdentity::BuildId(vec![0xab; 2]),
            header_offset: 0x20000,
        },
        after: Refusals(vec![Refusal::NoIdentity {
            file: "/a/host".into(),
            dump: ModuleIdentity::BuildId(vec![0xab; 2]),
        }]),
    };
    assert_eq!(
        check.to_string(),
        "build id matches (build-id abab), and its bundle marker (after: /a/host: no identity, \
         dump has build-id abab)"
    );
    let st = FileSourceState::Used {
        file: "/b/host".into(),
        check,
    };
    let v = to_json(&st);
    assert_eq!(v["kind"], "used");
    assert_eq!(v["check"]["kind"], "file_check");
    assert_eq!(v["check"]["evidence"]["kind"], "identity_and_bundle");
    assert_eq!(v["check"]["evidence"]["header_offset"], "0x20000");
    assert_eq!(v["check"]["after"][0]["kind"], "no_identity");
    assert_eq!(v["message"], st.describe());
    let st = FileSourceState::NotUsed {
        why: NoFile::NotFound {
            name: "libx.so".into(),
            recorded_path: false,
        },
    };
    assert_eq!(
        to_json(&st),
        json!({"kind": "not_used",
               "why": {"kind": "not_found", "name": "libx.so", "recorded_path": false,
                       "message": "no file libx.so on the image path"},
               "message": "none: no file libx.so on the image path"})
    );
}

#[test]
fn an_error_met_opening_a_dump_serializes() {
    let e = dumpreader::Dump::from_bytes(b"\x7fELF\x01".to_vec()).unwrap_err();
    let v = to_json(&e);
    assert!(v["kind"].is_string(), "{v}");
    assert_eq!(v["message"], e.to_string());
    let e = dumpreader::Dump::from_bytes(b"nope".to_vec()).unwrap_err();
    assert_eq!(
        to_json(&e),
        json!({"kind": "bad_magic", "found": [110, 111, 112, 101], "message": e.to_string()})
    );
}
