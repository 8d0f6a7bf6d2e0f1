//! The dumps committed before dumpshell reads them ([`tests::pending`]): each still falls short
//! as its entry says. When one does not, the issue's work has made it readable (or broken it
//! another way): remove it from `tests::pending()`, and every corpus test then holds it to its
//! truths. Also: each pending dump is in the corpus with its manifest and DAC truth, and the
//! list names no dump twice.

use clrdata::prelude::*;
use tests::Shortfall;

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
        let d = e.open();
        let short: Result<String, String> = match (p.shortfall, clrdata::Runtime::discover(&d)) {
            (Shortfall::NoRuntime, Err(err)) => Ok(format!("not read: {err}")),
            (Shortfall::NoRuntime, Ok(rt)) => {
                Err(format!("its runtime {} is found", rt.info.version))
            }
            (_, Err(err)) => Err(format!("no longer read at all: {err}")),
            (_, Ok(rt)) if rt.info.version != e.runtime_version() => Err(format!(
                "runtime version {}, the manifest says {}",
                rt.info.version,
                e.runtime_version()
            )),
            (Shortfall::HeapRefused, Ok(rt)) => match rt.gc_heap() {
                Err(err) => Ok(format!("heap refused: {err}")),
                Ok(_) => Err("its GC heap is read".to_owned()),
            },
            (Shortfall::ImagesUnread, Ok(_)) => {
                drop(d);
                let unread = e.unread_images();
                if unread.is_empty() {
                    Err("every image file it lacks is read".to_owned())
                } else {
                    Ok(format!(
                        "{} image files unread: {}",
                        unread.len(),
                        unread[0]
                    ))
                }
            }
            (Shortfall::StackWalk, Ok(_)) => {
                drop(d);
                let c = tests::stack_truth(&e, &e.open_options());
                if c.diffs.is_empty() {
                    Err(format!("its {} threads' stacks equal the DAC's", c.threads))
                } else {
                    Ok(format!(
                        "{} of {} threads differ from the DAC's: {}",
                        c.threads - c.equal_threads,
                        c.threads,
                        c.diffs[0].lines().take(3).collect::<Vec<_>>().join(" / ")
                    ))
                }
            }
        };
        checked += 1;
        match short {
            Ok(how) => println!(
                "{} (issue {}, {:?}): still falls short: {how}",
                p.name, p.issue, p.shortfall
            ),
            Err(why) => gone.push(format!(
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
