//! What the CLR layer reads is what the tests hold it to. On every corpus dump: the runtime
//! is found and its version equals the manifest's (or, for a family it does not read, it is
//! refused naming that version); and for every capability, clrdata's own gate
//! (`Runtime::require`) agrees with the tests' claim for the family
//! ([`tests::family_claims`]): a capability the code opens without the truth tests running on
//! it fails, and so does one the tests claim while the code refuses it. A refused capability
//! names the runtime and its version.

use clrdata::ClrError;

#[test]
fn every_dump_is_read_or_refused_as_the_tests_claim() {
    let mut wrong = Vec::new();
    let mut read = 0;
    for e in tests::all() {
        let v = e.runtime_version();
        let d = e.open();
        let rt = match tests::discover(&d) {
            Ok(rt) => rt,
            Err(err @ ClrError::UnsupportedRuntime { .. })
                if tests::CAPABILITIES
                    .iter()
                    .all(|&c| !tests::family_claims(e.family(), c)) =>
            {
                let text = err.to_string();
                if !text.contains(v) {
                    wrong.push(format!("{}: the refusal does not name {v}: {text}", e.name));
                }
                continue;
            }
            Err(err) => {
                wrong.push(format!(
                    "{} (.NET {v}, {}, {}): {err}",
                    e.name,
                    e.shape(),
                    e.kind()
                ));
                continue;
            }
        };
        read += 1;
        if rt.info.version != v {
            wrong.push(format!(
                "{}: runtime version {:?}, the manifest says {v}",
                e.name, rt.info.version
            ));
        }
        for &cap in tests::CAPABILITIES {
            let claimed = tests::family_claims(e.family(), cap);
            match rt.require(cap) {
                Ok(()) if claimed => {}
                Ok(()) => wrong.push(format!(
                    "{} (.NET {v}): clrdata opens {cap:?}, which no truth test holds it to on \
                     .NET {}: claim it in tests::family_claims",
                    e.name,
                    e.family()
                )),
                Err(err) if claimed => wrong.push(format!(
                    "{} (.NET {v}): {cap:?} is claimed by the tests but refused: {err}",
                    e.name
                )),
                Err(err @ ClrError::NotVerified { .. }) => {
                    let text = err.to_string();
                    if !text.contains(v) {
                        wrong.push(format!("{}: the refusal does not name {v}: {text}", e.name));
                    }
                }
                Err(err) => wrong.push(format!(
                    "{}: {cap:?} refused without naming the runtime: {err}",
                    e.name
                )),
            }
        }
    }
    assert!(read > 0, "no corpus dump was read");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
