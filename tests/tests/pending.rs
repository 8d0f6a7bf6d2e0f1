//! The dumps committed before dumpshell reads them ([`tests::pending`]): each still falls short
//! as its entry says. When one does not, the issue's work has made it readable (or broken it
//! another way): remove it from `tests::pending()`, and every corpus test then holds it to its
//! truths. Also: each pending dump is in the corpus with its manifest and DAC and SOS truths,
//! and the list names no dump twice; the dumps made on demand ([`tests::on_demand`]) are checked
//! the same way where they have been made (those listed as read: that they no longer fall
//! short as they did), and named loudly where not.

use clrdata::prelude::*;
use clrdata::ClrError;
use tests::{Entry, OnDemandState, Shortfall};

/// What a listed dump does today against what its entry says.
enum Verdict {
    /// It still falls short as listed: how.
    Short(String),
    /// It no longer does: what it does instead.
    Gone(String),
}
use Verdict::{Gone, Short};

/// Whether `e` falls short as `shortfall` says; `None`: refused naming its runtime's version,
/// as a dump of a family no test claims.
fn falls_short(e: &Entry, shortfall: Option<Shortfall>) -> Verdict {
    let d = e.open();
    let v = e.runtime_version();
    let Some(shortfall) = shortfall else {
        return match clrdata::Runtime::discover(&d) {
            Err(err @ ClrError::UnsupportedRuntime { .. }) if err.to_string().contains(v) => {
                Short(format!("refused: {err}"))
            }
            Err(err) => Gone(format!("not refused as .NET {v}: {err}")),
            Ok(rt) => Gone(format!("read as {}", rt.info.version)),
        };
    };
    match (shortfall, clrdata::Runtime::discover(&d)) {
        (Shortfall::NoRuntime, Err(err)) => Short(format!("not read: {err}")),
        (Shortfall::NoRuntime, Ok(rt)) => Gone(format!("its runtime {} is found", rt.info.version)),
        (_, Err(err)) => Gone(format!("no longer read at all: {err}")),
        (_, Ok(rt)) if rt.info.version != v => Gone(format!(
            "runtime version {}, the manifest says {v}",
            rt.info.version
        )),
        (Shortfall::HeapRefused, Ok(rt)) => match rt.gc_heap() {
            Err(err) => Short(format!("heap refused: {err}")),
            Ok(_) => Gone("its GC heap is read".to_owned()),
        },
        (Shortfall::ImagesUnread, Ok(_)) => {
            drop(d);
            let unread = e.unread_images();
            if unread.is_empty() {
                Gone("every image file it lacks is read".to_owned())
            } else {
                Short(format!(
                    "{} image files unread: {}",
                    unread.len(),
                    unread[0]
                ))
            }
        }
        (Shortfall::AsyncBoxes, Ok(_)) => {
            let s = commands::Session::open_with(&e.dump_path(), &e.open_options())
                .unwrap_or_else(|err| panic!("{}: {err}", e.name));
            let doc = match commands::execute(&s, "dumpasync") {
                Ok(Some((out, _))) => match out.materialize() {
                    Ok(o) => o.json_document(),
                    Err(err) => return Short(format!("dumpasync fails: {err}")),
                },
                Ok(None) => return Gone("dumpasync printed nothing".to_owned()),
                Err(err) => return Short(format!("dumpasync fails: {err}")),
            };
            match doc["result"]["errors"].as_array() {
                Some(errors) if !errors.is_empty() => {
                    Short(format!("dumpasync: {} errors: {}", errors.len(), errors[0]))
                }
                _ => Gone("dumpasync reads every box".to_owned()),
            }
        }
        (Shortfall::ThreadsOnly, Ok(rt)) => match tests::read_in_part(e, &rt) {
            Ok(how) => Short(how),
            Err(why) => Gone(why.0),
        },
        (Shortfall::StackWalk, Ok(rt)) => {
            let names = clrdata::TypeNames::new();
            let walked = clrdata::model::stack::StackWalker::for_target(&rt, &names).walk_all();
            if let Err(err) = walked {
                return Short(format!("the stack walk fails: {err}"));
            }
            let c = tests::stack_truth(e, &e.open_options());
            if c.diffs.is_empty() {
                Gone(format!("its {} threads' stacks equal the DAC's", c.threads))
            } else {
                Short(format!(
                    "{} of {} threads differ from the DAC's: {}",
                    c.threads - c.equal_threads,
                    c.threads,
                    c.diffs[0].lines().take(3).collect::<Vec<_>>().join(" / ")
                ))
            }
        }
    }
}

#[test]
fn pending_dumps_still_fall_short_as_listed() {
    let mut gone = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let mut checked = 0;
    for p in tests::pending() {
        assert!(seen.insert(p.name), "{} is listed twice", p.name);
        let dir = tests::dumps_dir();
        if !dir.join(format!("{}.dmp.zst", p.name)).is_file() {
            // A corpus folder of a few dumps (DUMPSHELL_CORPUS) need not hold it; dumps/ must.
            assert!(
                std::env::var_os("DUMPSHELL_CORPUS").is_some(),
                "{}: listed in tests::pending() but not in dumps/",
                p.name
            );
            println!("SKIPPED {}: not in {}", p.name, dir.display());
            continue;
        }
        let e = tests::entry(p.name);
        checked += 1;
        match falls_short(&e, Some(p.shortfall)) {
            Short(how) => println!(
                "{} (issue {}, {:?}): still falls short: {how}",
                p.name, p.issue, p.shortfall
            ),
            Gone(why) => gone.push(format!(
                "{} (issue {}): no longer falls short as listed ({:?}): {why}; remove it from \
                 tests::pending() so that every corpus test holds it",
                p.name, p.issue, p.shortfall
            )),
        }
    }
    assert!(gone.is_empty(), "{}", gone.join("\n"));
    println!("{checked} pending dumps checked");
}

/// A pending dump is left out of every list of the corpus, and its truths are committed.
#[test]
fn pending_dumps_are_left_out_of_the_corpus_lists_and_have_their_truths() {
    let names = tests::names();
    for p in tests::pending() {
        assert!(
            !names.iter().any(|n| n == p.name),
            "{} in tests::names()",
            p.name
        );
        assert!(p.issue > 0 && !p.reason.is_empty(), "{}", p.name);
        if !tests::dumps_dir()
            .join(format!("{}.dmp.zst", p.name))
            .is_file()
        {
            continue;
        }
        let e = tests::entry(p.name);
        assert_eq!(e.manifest["schema"], 1, "{}: manifest schema", p.name);
        assert!(
            e.dac["threads"].is_array(),
            "{}: DAC truth has no threads",
            p.name
        );
        assert!(
            tests::dumps_dir()
                .join(format!("{}.sos.txt", p.name))
                .is_file(),
            "{}: no SOS truth",
            p.name
        );
    }
}

/// The on-demand dumps that have been made fall short as listed (or are refused as a family no
/// test claims, or, listed as read, no longer fall short as they did); each absent one is named
/// with the command that makes it.
#[test]
fn on_demand_dumps_fall_short_as_listed_where_made() {
    let require = std::env::var_os("DUMPSHELL_REQUIRE_ON_DEMAND").is_some();
    let (mut checked, mut absent, mut gone) = (0, Vec::new(), Vec::new());
    for od in tests::on_demand() {
        assert!(
            !tests::is_pending(od.name) && !tests::names().iter().any(|n| n == od.name),
            "{}: on demand and in the corpus",
            od.name
        );
        let Some(e) = od.entry() else {
            eprintln!(
                "SKIPPED {} (issue {}): made on demand, not here: {}",
                od.name, od.issue, od.make
            );
            absent.push(od.name);
            continue;
        };
        checked += 1;
        let (shortfall, read) = match od.state {
            OnDemandState::Short(s) => (Some(s), false),
            OnDemandState::Refused => (None, false),
            OnDemandState::Read(s) => (Some(s), true),
        };
        match (falls_short(&e, shortfall), read) {
            (Short(how), false) | (Gone(how), true) => {
                println!("{} (issue {}): {how}", od.name, od.issue)
            }
            (Gone(why) | Short(why), _) => gone.push(format!(
                "{} (issue {}, on demand): no longer as listed in tests::on_demand() ({:?}): \
                 {why}",
                od.name, od.issue, od.state
            )),
        }
    }
    if !absent.is_empty() {
        eprintln!(
            "\n*** {} of {} on-demand dumps are not in {}: {absent:?} ***\n",
            absent.len(),
            tests::on_demand().len(),
            tests::on_demand_dir().display()
        );
    }
    assert!(
        !require || absent.is_empty(),
        "DUMPSHELL_REQUIRE_ON_DEMAND: absent: {absent:?}"
    );
    assert!(gone.is_empty(), "{}", gone.join("\n"));
    println!("{checked} on-demand dumps checked");
}
