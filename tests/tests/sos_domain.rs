//! `dumpdomain` against SOS: the truth `dumps/<name>.sos-domain.txt`, written by
//! dumps/tools/sos_domain.py with dotnet-dump 10.0.750501 and each build's own DAC
//! (`dumpdomain`, then `dumpdomain <address>` of each domain it names). Every corpus dump with
//! the truth (.NET 8, 9, 10 and 11) is compared exactly, text for text (SOS's trailing blank
//! line aside: the recorder trims it):
//! - the SystemDomain's and AppDomain's addresses, the global LoaderAllocator's three heaps
//!   (both domains show the same: `BaseDomain::GetLoaderAllocator`), Stage `OPEN` (the only
//!   stage a published CoreCLR AppDomain has: `clrdata::data::domains::STAGE_OPEN`), the
//!   friendly name (`None` for the SystemDomain);
//! - every Assembly of the AppDomain in the DAC's order, `(Dynamic)` and `Dynamic Module` for a
//!   Reflection.Emit one (aspnethang-net11), each with its Module and the PEAssembly's path;
//! - .NET 11: the DAC reports no SystemDomain (0) and SOS 10.0.750501 prints a
//!   `System Domain: 0000000000000000` section with what the DAC answers for address 0 (the
//!   AppDomain's name and assemblies) and a StubHeap of 0 (11 has none): the text repeats it.

use commands::Session;

fn session(e: &tests::Entry) -> Session {
    Session::open_with(&e.dump_path(), &e.open_options()).unwrap()
}

#[test]
fn dumpdomain_is_sos() {
    let truths = tests::sos::dumps_with("sos-domain");
    assert!(truths.len() >= 10, "the sos-domain truths are missing");
    let mut families = std::collections::BTreeSet::new();
    let mut checked = 0;
    let mut dynamic = 0;
    for (e, secs) in truths {
        let s = session(&e);
        for (cmd, text) in &secs {
            let (out, _) = commands::execute(&s, cmd)
                .unwrap_or_else(|err| panic!("{}: {cmd}: {err}", e.name))
                .unwrap();
            assert_eq!(
                out.text.trim_end(),
                text.trim_end(),
                "{}: {cmd}\n--- ours:\n{}--- SOS:\n{text}",
                e.name,
                out.text
            );
            let json = out.json_document();
            let domains = json["result"]["domains"].as_array().unwrap();
            assert!(!domains.is_empty(), "{}: {cmd}", e.name);
            dynamic += domains
                .iter()
                .flat_map(|d| d["assemblies"].as_array().unwrap())
                .filter(|a| a["dynamic"] == true)
                .count();
            checked += 1;
        }
        families.insert(e.family());
    }
    assert_eq!(
        families.into_iter().collect::<Vec<_>>(),
        [8, 9, 10, 11],
        "every family's truth"
    );
    assert!(checked >= 30, "only {checked} dumpdomain truths");
    assert!(dynamic >= 1, "no dynamic assembly checked");
}

#[test]
fn dumpdomain_refuses_an_address_that_is_no_domain() {
    let (e, _) = tests::sos::dumps_with("sos-domain").remove(0);
    let s = session(&e);
    let err = commands::execute(&s, "dumpdomain 1000").unwrap_err();
    assert!(err.to_string().contains("domain 0x1000"), "{err}");
}
