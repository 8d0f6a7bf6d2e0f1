//! commands' errors as JSON (docs/json.md, "Errors"): `{kind, ...fields, message}`, the
//! message being the error's sentence, the cause nested as an object of the same shape.

use commands::CommandError;
use serde_json::Value;

fn json(e: &CommandError) -> Value {
    serde_json::to_value(e).unwrap()
}

#[test]
fn every_kind_has_its_fields_and_its_sentence() {
    let clr = clrdata::ClrError::Read {
        what: "the thread list".into(),
        addr: 0x7f00_1234_5000,
    };
    let cases = [
        (
            CommandError::UnknownCommand {
                name: "frob".into(),
                did_you_mean: vec![],
            },
            "unknown_command",
            vec!["name", "did_you_mean"],
        ),
        (
            CommandError::UnknownOption {
                command: "dumpheap".into(),
                option: "-stats".into(),
                sos: false,
                did_you_mean: vec!["-stat".into()],
            },
            "unknown_option",
            vec!["command", "option", "sos", "did_you_mean"],
        ),
        (
            CommandError::Usage {
                message: "missing <address>".into(),
            },
            "usage",
            vec!["text"],
        ),
        (
            CommandError::bad_argument("'zz'", "not an address"),
            "bad_argument",
            vec!["what", "detail"],
        ),
        (
            CommandError::NoClr { error: clr.clone() },
            "no_clr",
            vec!["error"],
        ),
        (
            CommandError::NoHeap {
                message: "a mini dump holds no GC heap".into(),
                error: Some(clr.clone()),
            },
            "no_heap",
            vec!["statement", "error"],
        ),
        (
            CommandError::clr("reading the sync table", clr.clone()),
            "clr",
            vec!["context", "error"],
        ),
        (
            CommandError::not_found("thread 0x99", "no such thread"),
            "not_found",
            vec!["what", "detail"],
        ),
        (CommandError::Cancelled, "cancelled", vec![]),
    ];
    for (e, kind, fields) in cases {
        let v = json(&e);
        assert_eq!(v["kind"], kind, "{v}");
        assert_eq!(
            v["message"],
            e.to_string(),
            "{v}: the message is the sentence"
        );
        for f in &fields {
            assert!(v.get(*f).is_some(), "{kind}: no field {f} in {v}");
        }
        let keys = v.as_object().unwrap().len();
        assert_eq!(keys, fields.len() + 2, "{kind}: unexpected fields in {v}");
    }
}

#[test]
fn a_runtime_error_nests_as_an_object_with_hex_addresses() {
    let e = CommandError::clr(
        "reading the sync table",
        clrdata::ClrError::Read {
            what: "SyncTableEntry 3".into(),
            addr: 0x7f00_1234_5000,
        },
    );
    let v = json(&e);
    assert_eq!(v["error"]["kind"], "read", "{v}");
    assert_eq!(v["error"]["addr"], "0x7f0012345000", "{v}");
    let m = v["message"].as_str().unwrap();
    assert!(m.starts_with("reading the sync table: "), "{m}");
    assert!(m.contains("0x7f0012345000"), "{m}: addresses in hex");
    let doc = e.json_document("syncblk");
    assert_eq!(doc["error"]["kind"], "clr");
    assert_eq!(doc["command"], "syncblk");
}
