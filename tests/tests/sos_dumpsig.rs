//! `dumpsig` and `dumpsigelem` against SOS: the truth `dumps/<name>.sos-dumpsig.txt`, written
//! by dumps/tools/sos_dumpsig.py with dotnet-dump 10.0.750501 and each build's own DAC, on
//! real signatures: System.Private.CoreLib's MethodDef and Field signature blobs in the dump's
//! memory (generic methods with generic instantiations and MVARs, instance methods of generic
//! types with VARs, by-ref and array parameters, classes and value types; fields of a generic
//! instantiation, a class, a value type, an array and a primitive type), and `dumpsigelem` of
//! a field's type and of a method's first parameter. Every line is compared exactly (SOS's
//! field signatures end in a space: its printer appends the empty member name after one).

use commands::Session;

#[test]
fn dumpsig_is_sos() {
    let truths = tests::sos::dumps_with("sos-dumpsig");
    assert!(truths.len() >= 4, "the sos-dumpsig truths are missing");
    let mut families = std::collections::BTreeSet::new();
    let (mut methods, mut fields, mut elems) = (0, 0, 0);
    for (e, secs) in truths {
        let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
        for (cmd, text) in &secs {
            // The runner's `#` line says what the signature is.
            let want: String = text
                .lines()
                .filter(|l| !l.starts_with("# "))
                .map(|l| format!("{l}\n"))
                .collect();
            let (out, _) = commands::execute(&s, cmd)
                .unwrap_or_else(|err| panic!("{}: {cmd}: {err}", e.name))
                .unwrap();
            assert_eq!(out.text, want, "{}: {cmd}", e.name);
            if cmd.starts_with("dumpsigelem ") {
                elems += 1;
            } else if want.starts_with("[FIELD] ") {
                fields += 1;
            } else {
                methods += 1;
            }
            assert_eq!(
                out.json_document()["result"]["text"].as_str(),
                Some(want.trim_end_matches('\n')),
                "{}: {cmd}",
                e.name
            );
        }
        families.insert(e.family());
    }
    assert_eq!(
        families.into_iter().collect::<Vec<_>>(),
        [8, 9, 10, 11],
        "every family's truth"
    );
    assert!(
        methods >= 20 && fields >= 16 && elems >= 30,
        "too few signatures: {methods} methods, {fields} fields, {elems} elements"
    );
}

#[test]
fn dumpsig_refuses_unreadable_memory() {
    let (e, _) = tests::sos::dumps_with("sos-dumpsig").remove(0);
    let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
    let err = commands::execute(&s, "dumpsig 10").unwrap_err();
    assert!(err.to_string().contains("0x10"), "{err}");
}
