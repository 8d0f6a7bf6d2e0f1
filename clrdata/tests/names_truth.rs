//! Type names from MethodTables and metadata equal the names the runtime's own DAC gave every
//! type of the heap census, on every .NET 8 corpus dump.

use clrdata::TypeNames;
use dumpreader::Dump;

#[test]
fn every_census_type_is_named_as_the_dac_names_it() {
    let mut checked = 0;
    let mut generic = 0;
    for e in tests::readable() {
        let d = Dump::open_with(&e.dump_path(), &e.open_options()).unwrap();
        let rt = tests::discover(&d).unwrap_or_else(|err| panic!("{}: {err}", e.name));
        let names = TypeNames::new();
        let mut wrong = Vec::new();
        for t in e.dac["heap_stat"]["types"].as_array().unwrap() {
            let mt = u64::from_str_radix(t["mt"].as_str().unwrap().trim_start_matches("0x"), 16)
                .unwrap();
            let want = e.census_type_name(mt, t["type"].as_str().unwrap());
            let want = want.as_str();
            match names.name(&rt, mt) {
                Ok(got) if &*got == want => {}
                Ok(got) => wrong.push(format!("{mt:#x}: ours {got:?}, DAC {want:?}")),
                Err(why) => wrong.push(format!("{mt:#x}: no name ({why}), DAC {want:?}")),
            }
            checked += 1;
            generic += usize::from(want.contains("[["));
        }
        assert!(
            wrong.is_empty(),
            "{}: {} of the census names differ:\n{}",
            e.name,
            wrong.len(),
            wrong.join("\n")
        );
    }
    assert!(
        checked > 1000 && generic > 50,
        "checked {checked} names, {generic} generic"
    );
}

#[test]
fn free_and_string_have_their_sos_names() {
    let e = tests::entry("heap");
    let d = Dump::open_with(&e.dump_path(), &e.open_options()).unwrap();
    let rt = tests::discover(&d).unwrap();
    let names = TypeNames::new();
    assert_eq!(&*names.name(&rt, rt.globals.free_mt).unwrap(), "Free");
    assert_eq!(
        &*names.name(&rt, rt.globals.string_mt).unwrap(),
        "System.String"
    );
    // An address that is not a MethodTable gets an error naming it, not a name.
    let note = names.name_or_note(&rt, 0x10);
    assert!(
        note.starts_with("<unknown type: MethodTable 0x10:"),
        "{note}"
    );
}
