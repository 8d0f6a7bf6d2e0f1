//! Shared by the whole-dump targets: one real corpus dump, loaded once, damaged by the fuzz
//! input through `tests::damage::Overlay` (patches aimed at the structures of the case's
//! classes, or planted cycles), then the case's commands run through the command registry.
//! A panic, a hang (`-timeout`) or a memory blow-up (`-rss_limit_mb`) is a finding.

use commands::Session;
use std::sync::{Arc, OnceLock};
use tests::damage::{apply_fuzz, fuzz_case, FuzzCase, Landmarks, Overlay};

struct Fixture {
    case: FuzzCase,
    dump: Arc<dyn dumpreader::Target>,
    lm: Landmarks,
    lines: Vec<String>,
}

static FIXTURE: OnceLock<Fixture> = OnceLock::new();

pub fn run(target: &str, data: &[u8]) {
    let f = FIXTURE.get_or_init(|| {
        let case = fuzz_case(target).expect("known case");
        let name = std::env::var("DUMPSHELL_FUZZ_DUMP").unwrap_or(case.dump.to_string());
        let e = tests::entry(&name);
        let dump: Arc<dyn dumpreader::Target> = Arc::new(e.open());
        let lm = Landmarks::find(dump.clone(), &name);
        let lines = (case.lines)(&lm);
        Fixture {
            case,
            dump,
            lm,
            lines,
        }
    });
    let mut ov = Overlay::new(f.dump.clone());
    apply_fuzz(&mut ov, &f.lm, f.case.classes, data);
    let s = Session::new(ov.into_target(), "fuzz".into());
    for l in &f.lines {
        let _ = commands::execute(&s, l);
    }
}
