//! Monitors (`syncblk`, `deadlock`) read without the DAC, against the truths: the scenarios'
//! manifests (`locks`: the lock object's type, owner and waiters; `deadlock_cycles`; the
//! threads' own frames) and the DAC's own GetSyncBlockData (`dumps/<name>.locks.dac.json`,
//! from `dumps/tools/dacprobe/lockprobe.py`). The Windows dump has the manifest only.

use clrdata::analysis::locks::{find_deadlocks, monitors, read_managed_lock, WaitSource};
use clrdata::data::syncblocks::{object_header, Header, SyncTable, WaitKind};
use clrdata::data::threads::ThreadData;
use clrdata::model::objects::ObjectReader;
use clrdata::model::stack::{StackWalker, ThreadStack};
use clrdata::prelude::*;
use clrdata::{Runtime, TypeNames};
use dumpreader::{Dump, Memory};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

fn hex(v: &Value) -> u64 {
    let s = v
        .as_str()
        .unwrap_or_else(|| panic!("not a hex string: {v}"));
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
}

struct Open {
    rt: Runtime<Arc<Dump>>,
    names: TypeNames,
    threads: Vec<ThreadData>,
    table: SyncTable,
}

impl Open {
    fn new(e: &tests::Entry) -> Open {
        let d = Arc::new(e.open());
        let rt = tests::discover(d).unwrap_or_else(|err| panic!("{}: {err}", e.name));
        let threads = rt.threads().unwrap();
        let names = TypeNames::new();
        let table = monitors(&rt, &names).unwrap_or_else(|err| panic!("{}: {err}", e.name));
        Open {
            rt,
            names,
            threads,
            table,
        }
    }

    fn type_of(&self, obj: u64) -> String {
        let mt = self.rt.memory().read_u64(obj).unwrap() & !7;
        self.names.name_or_note(&self.rt, mt)
    }

    fn managed_id(&self, thread: u64) -> u64 {
        self.threads
            .iter()
            .find(|t| t.address == thread)
            .map(|t| t.managed_id as u64)
            .unwrap_or_else(|| panic!("Thread {thread:#x} is not in the thread list"))
    }

    /// The threads' stacks where the tests claim the stack walk (.NET 8), else none: the
    /// debugger's blocking items name the awaited locks without them.
    fn stacks(&self, e: &tests::Entry) -> HashMap<u64, ThreadStack> {
        if !tests::claims(e, tests::Capability::Stacks) {
            return HashMap::new();
        }
        let w = StackWalker::for_target(&self.rt, &self.names);
        self.threads
            .iter()
            .filter(|t| t.os_id != 0)
            .map(|t| (t.address, w.walk(t)))
            .collect()
    }
}

/// The DAC's sync blocks of an entry, checked to belong to the committed dump.
fn dac_locks(e: &tests::Entry) -> Option<Value> {
    let p = tests::dumps_dir().join(format!("{}.locks.dac.json", e.name));
    let text = std::fs::read_to_string(p).ok()?;
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        v["dump_sha256"], e.dac["dump_file"]["sha256"],
        "{}.locks.dac.json was written for another dump: regenerate it",
        e.name
    );
    Some(v)
}

fn ids(v: &Value) -> BTreeSet<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

/// ClrMD's view of an entry (`dumps/<name>.clrmd.json`), when committed.
fn clrmd(e: &tests::Entry) -> Option<Value> {
    let p = tests::dumps_dir().join(format!("{}.clrmd.json", e.name));
    let text = std::fs::read_to_string(p).ok()?;
    Some(serde_json::from_str(&text).unwrap())
}

/// The dumps whose locks the tests claim (.NET 8, 9, 10 and 11).
fn locks_claimed() -> Vec<tests::Entry> {
    tests::readable_for(tests::Capability::Locks)
}

#[test]
fn sync_blocks_equal_the_dacs() {
    let (mut checked, mut with_clrmd, mut values) = (0, 0, 0);
    let mut families = BTreeSet::new();
    for e in locks_claimed() {
        let o = Open::new(&e);
        // ClrMD (the build's DAC underneath): every sync block in use, .NET 9 and 10. On 11.0.0
        // ClrMD's EnumerateSyncBlocks() lists none where the DAC's GetSyncBlockData and SOS
        // list them (dumps/README.md, "Where the truths disagree on .NET 11").
        if let Some(cm) = clrmd(&e).filter(|_| (9..=10).contains(&e.family())) {
            let theirs = cm["sync_blocks"].as_array().unwrap();
            assert_eq!(
                o.table.sync_blocks.len(),
                theirs.len(),
                "{}: sync blocks",
                e.name
            );
            for c in theirs {
                let i = c["index"].as_u64().unwrap() as u32;
                let what = format!("{}: sync block {i} (ClrMD)", e.name);
                let s = o.table.sync_blocks.iter().find(|s| s.index == i).unwrap();
                assert_eq!(s.object, hex(&c["object"]), "{what}");
                assert_eq!(s.locked, c["monitor_held"].as_bool().unwrap(), "{what}");
                let owner = c["owner_thread"].as_str().map(|_| hex(&c["owner_thread"]));
                assert_eq!(s.locked.then_some(s.holding_thread), owner, "{what}");
                assert_eq!(
                    s.recursion as u64,
                    c["recursion"].as_u64().unwrap(),
                    "{what}"
                );
                let waiting = c["waiting_count"].as_u64().unwrap();
                if s.wait_threads.is_empty() {
                    assert_eq!(s.enter_waiters as u64, waiting, "{what}: waiters");
                } else {
                    assert!(waiting > 0, "{what}: threads in Monitor.Wait");
                }
                values += 6;
            }
            with_clrmd += 1;
        }
        let Some(dac) = dac_locks(&e) else { continue };
        families.insert(e.family());
        let count = dac["sync_blocks"]["count"].as_u64().unwrap();
        assert_eq!(
            o.table.used_entries.saturating_sub(1) as u64,
            count,
            "{}: sync table entries in use",
            e.name
        );
        for d in dac["sync_blocks"]["sync_blocks"].as_array().unwrap() {
            if d["free"].as_bool().unwrap() {
                continue;
            }
            let i = d["index"].as_u64().unwrap() as u32;
            let what = format!("{}: sync block {i}", e.name);
            let s = o
                .table
                .sync_blocks
                .iter()
                .find(|s| s.index == i)
                .unwrap_or_else(|| panic!("{what}: not found"));
            assert_eq!(s.object, hex(&d["object"]), "{what}");
            assert_eq!(s.sync_block, hex(&d["sync_block"]), "{what}");
            assert_eq!(
                s.monitor_held as u64,
                d["monitor_held"].as_u64().unwrap(),
                "{what}"
            );
            let dac_recursion = d["recursion"].as_u64().unwrap();
            if e.family() >= 11 && !s.locked {
                // The 11.0.0 DAC reports a managed Lock's `_recursionCount + 1` whether or not
                // it is held (hang-net11's Gate, released by its Monitor.Wait threads: 1); a
                // lock nobody holds has no recursion of ours.
                let r = ObjectReader::new(&o.rt, &o.names);
                let lk = read_managed_lock(&r, s.lock_object).unwrap();
                assert_eq!(dac_recursion, lk.recursion_count as u64 + 1, "{what}");
                assert_eq!(s.recursion, 0, "{what}");
            } else {
                assert_eq!(s.recursion as u64, dac_recursion, "{what}");
            }
            assert_eq!(s.holding_thread, hex(&d["holding_thread"]), "{what}");
            if e.family() >= 11 {
                // The 11.0.0 DAC counts no thread waiting on a managed Lock (hang-net11's Gate:
                // 4 threads in Monitor.Wait, the manifest's, checked below; the DAC's count 0).
                assert_eq!(d["additional_thread_count"].as_u64(), Some(0), "{what}");
            } else {
                // The 8.0 DAC counts a non-empty Monitor.Wait list as 1000 (lockprobe's README).
                assert_eq!(
                    !s.wait_threads.is_empty(),
                    d["additional_thread_count"].as_u64().unwrap() > 0,
                    "{what}: threads in Monitor.Wait"
                );
            }
            assert!(s.notes.is_empty(), "{what}: {:?}", s.notes);
            // The object's header names the same index.
            assert_eq!(
                object_header(o.rt.memory(), s.object).unwrap(),
                Header::SyncBlock { index: i },
                "{what}: the object header"
            );
            values += 7;
            checked += 1;
        }
    }
    eprintln!(
        "sync blocks: {checked} against the DAC, {with_clrmd} dumps against ClrMD, {values} values"
    );
    assert!(checked >= 10, "only {checked} sync blocks checked");
    for f in [8, 9, 10, 11] {
        assert!(
            families.contains(&f),
            "no .NET {f} dump's sync blocks checked"
        );
    }
    assert!(
        with_clrmd >= 10,
        "ClrMD sync blocks of only {with_clrmd} dumps"
    );
}

#[test]
fn owners_and_waiters_are_the_manifests() {
    let mut checked = 0;
    for e in locks_claimed() {
        let Some(locks) = e.manifest["locks"].as_array() else {
            continue;
        };
        let o = Open::new(&e);
        let stacks = o.stacks(&e);
        let d = find_deadlocks(&o.rt, &o.threads, &o.table, &stacks);
        assert!(d.notes.is_empty(), "{}: {:?}", e.name, d.notes);
        for l in locks {
            let ty = l["type"].as_str().unwrap();
            let what = format!("{}: lock {} ({ty})", e.name, l["name"]);
            if l["kind"] == "thin-lock" {
                // Never contended: no sync block, only the owner's id in the object's header.
                let heap = o.rt.gc_heap().unwrap();
                let (thin, errors) = clrdata::analysis::locks::thin_locks(&o.rt, &heap, &o.threads);
                assert!(errors.is_empty(), "{what}: {errors:?}");
                let mine: Vec<_> = thin.iter().filter(|t| o.type_of(t.object) == ty).collect();
                assert_eq!(mine.len(), 1, "{what}: one thin lock");
                assert_eq!(
                    Some(mine[0].thread_id as u64),
                    l["owner_managed_id"].as_u64()
                );
                assert_eq!(Some(mine[0].recursion as u64), l["acquisitions"].as_u64());
                assert!(
                    !o.table
                        .sync_blocks
                        .iter()
                        .any(|s| s.object == mine[0].object),
                    "{what}: a thin lock has no sync block"
                );
                checked += 1;
                continue;
            }
            let sbs: Vec<_> = o
                .table
                .sync_blocks
                .iter()
                .filter(|s| o.type_of(s.object) == ty)
                .collect();
            assert_eq!(sbs.len(), 1, "{what}: one sync block");
            let sb = sbs[0];
            let owner = sb.locked.then(|| o.managed_id(sb.holding_thread));
            assert_eq!(owner, l["owner_managed_id"].as_u64(), "{what}: owner");
            let kind = match l["kind"].as_str().unwrap() {
                "monitor-enter" => WaitKind::MonitorEnter,
                "monitor-wait" => WaitKind::MonitorWait,
                k => panic!("{what}: kind {k}"),
            };
            let waiters: BTreeSet<u64> = d
                .waits
                .iter()
                .filter(|w| w.object == sb.object)
                .map(|w| {
                    assert_eq!(w.kind, kind, "{what}: thread {}", w.managed_id);
                    assert_eq!(w.source, WaitSource::BlockingInfo, "{what}");
                    assert_eq!(w.sync_block, sb.sync_block, "{what}");
                    w.managed_id as u64
                })
                .collect();
            assert_eq!(waiters, ids(&l["waiter_managed_ids"]), "{what}: waiters");
            match kind {
                WaitKind::MonitorWait => {
                    let list: BTreeSet<u64> =
                        sb.wait_threads.iter().map(|&t| o.managed_id(t)).collect();
                    assert_eq!(list, waiters, "{what}: the Monitor.Wait list");
                    assert_eq!(sb.enter_waiters, 0, "{what}");
                }
                WaitKind::MonitorEnter => {
                    assert!(sb.wait_threads.is_empty(), "{what}");
                    assert_eq!(sb.enter_waiters as usize, waiters.len(), "{what}");
                }
            }
            // Each waiter blocks in the manifest's method, below its own innermost frame
            // (where the stack walk is claimed).
            for w in d.waits.iter().filter(|w| w.object == sb.object) {
                checked += 1;
                let Some(st) = stacks.get(&w.thread) else {
                    continue;
                };
                let mt = e.manifest["threads"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|t| t["managed_id"].as_u64() == Some(w.managed_id as u64))
                    .unwrap();
                let blocked = mt["blocked_in"].as_str().unwrap();
                assert!(
                    st.methods().any(|m| m.starts_with(&format!("{blocked}("))),
                    "{what}: thread {} not in {blocked}",
                    w.managed_id
                );
            }
        }
    }
    assert!(checked >= 15, "only {checked} waiters checked");
}

#[test]
fn the_deadlock_cycle_is_the_manifests() {
    for e in locks_of_programs(&["deadlock"]) {
        deadlock_cycle(&e);
    }
}

fn deadlock_cycle(e: &tests::Entry) {
    eprintln!("checking {}", e.name);
    let o = Open::new(e);
    let stacks = o.stacks(e);
    let d = find_deadlocks(&o.rt, &o.threads, &o.table, &stacks);
    let truth = &e.manifest["deadlock_cycles"];
    assert_eq!(d.cycles.len(), truth.as_array().unwrap().len());
    let c = &d.cycles[0];
    let tc = &truth[0];
    let threads: BTreeSet<u64> = c.threads.iter().map(|&t| o.managed_id(t)).collect();
    assert_eq!(threads, ids(&tc["managed_ids"]));
    // Each thread of the cycle waits for the lock the next one holds, as the manifest says.
    let by_name: HashMap<&str, &Value> = e.manifest["locks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["name"].as_str().unwrap(), l))
        .collect();
    let mut types = BTreeSet::new();
    for (i, &t) in c.threads.iter().enumerate() {
        let next = c.threads[(i + 1) % c.threads.len()];
        let ty = o.type_of(c.objects[i]);
        let l = tc["locks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| by_name[n.as_str().unwrap()])
            .find(|l| l["type"] == ty.as_str())
            .unwrap_or_else(|| panic!("{ty} is not a lock of the manifest's cycle"));
        assert_eq!(l["owner_managed_id"].as_u64(), Some(o.managed_id(next)));
        assert!(ids(&l["waiter_managed_ids"]).contains(&o.managed_id(t)));
        types.insert(ty);
        // The frame it waits in is its own innermost frame (manifest `frames[0]`), where the
        // stack walk is claimed.
        let w = d.waits.iter().find(|w| w.thread == t).unwrap();
        if stacks.is_empty() {
            continue;
        }
        let mt = e.manifest["threads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["managed_id"].as_u64() == Some(o.managed_id(t)))
            .unwrap();
        let own = mt["frames"][0].as_str().unwrap();
        assert_eq!(
            w.wait_frame
                .as_deref()
                .map(|f| f.split('(').next().unwrap()),
            Some(own)
        );
    }
    assert_eq!(types.len(), 2, "both locks");
    // The auditor waits on the cycle without being part of it.
    let auditor = e.manifest["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["role"] == "lock-waiter")
        .unwrap();
    let aid = auditor["managed_id"].as_u64().unwrap();
    assert!(!threads.contains(&aid));
    let behind: Vec<_> = d
        .waiting_on_cycles
        .iter()
        .filter(|b| o.managed_id(b.thread) == aid)
        .collect();
    assert_eq!(behind.len(), 1, "the auditor waits on the cycle");
    assert_eq!(behind[0].cycle, 0);
    assert_eq!(d.waiting_on_cycles.len(), 1);
}

#[test]
fn helper_frames_name_the_same_lock_objects() {
    // Two independent paths to the awaited object: the debugger blocking item (through the
    // SyncBlock) and the object the Monitor FCALL's HelperMethodFrame_1OBJ protects (.NET 8:
    // 9's Monitor.Wait has no such Frame, 10 none at all).
    let mut checked = 0;
    for e in tests::readable().into_iter().filter(|e| e.family() == 8) {
        if e.manifest["locks"].as_array().is_none() {
            continue;
        }
        let o = Open::new(&e);
        let stacks = o.stacks(&e);
        let d = find_deadlocks(&o.rt, &o.threads, &o.table, &stacks);
        for w in &d.waits {
            let f = stacks[&w.thread]
                .frames
                .iter()
                .find(|f| f.frame_name.as_deref() == Some("HelperMethodFrame_1OBJ"))
                .unwrap_or_else(|| panic!("{}: thread {}: no HMF_1OBJ", e.name, w.managed_id));
            assert_eq!(
                o.rt.helper_frame_object(f.frame.unwrap()),
                Some(w.object),
                "{}: thread {}",
                e.name,
                w.managed_id
            );
            checked += 1;
        }
    }
    assert!(checked >= 15, "only {checked} checked");
}

/// The dumps of the scenario programs named whose locks the tests claim, at least one.
fn locks_of_programs(programs: &[&str]) -> Vec<tests::Entry> {
    let v: Vec<_> = locks_claimed()
        .into_iter()
        .filter(|e| programs.contains(&e.program()))
        .collect();
    assert!(!v.is_empty(), "no dump of {programs:?} with locks claimed");
    v
}

#[test]
fn no_cycle_where_nobody_deadlocks() {
    for e in locks_of_programs(&["hang", "threadpool"]) {
        let name = e.name.as_str();
        let o = Open::new(&e);
        let d = find_deadlocks(&o.rt, &o.threads, &o.table, &o.stacks(&e));
        assert!(d.cycles.is_empty(), "{name}");
        assert!(d.waiting_on_cycles.is_empty(), "{name}");
    }
}

#[test]
fn unreadable_structures_are_errors_not_panics() {
    let e = tests::entry("deadlock");
    let o = Open::new(&e);
    for bad in [0u64, 8, 0x10, u64::MAX - 3] {
        assert!(o.rt.sync_block(1, bad, 0).is_err(), "SyncBlock at {bad:#x}");
        assert!(o.rt.blocking_items(bad).is_err(), "Thread at {bad:#x}");
        assert_eq!(o.rt.helper_frame_object(bad), None, "Frame at {bad:#x}");
        assert!(
            object_header(o.rt.memory(), bad).is_err(),
            "object at {bad:#x}"
        );
    }
}

#[test]
fn without_blocking_items_the_helper_frames_find_the_same_cycle() {
    // The fallback path: with every Thread's debugger blocking list emptied, the Monitor FCALLs'
    // HelperMethodFrame_1OBJ objects and their headers must give the same graph.
    use dumpreader::Target;
    let e = tests::entry("deadlock");
    let d: Arc<dyn Target> = Arc::new(e.open());
    let rt = tests::discover(d.clone()).unwrap();
    let off = rt.layout.locks.unwrap().thread_first_blocking_item;
    let mut ov = tests::damage::Overlay::new(d.clone());
    for t in rt.threads().unwrap() {
        ov.write_u64(t.address + off, 0);
    }
    let target: Arc<dyn Target> = ov.into_target();
    let rt = tests::discover(target).unwrap();
    let names = TypeNames::new();
    let threads = rt.threads().unwrap();
    for t in &threads {
        assert!(rt.blocking_items(t.address).unwrap().is_empty());
    }
    let table = rt.sync_table().unwrap();
    let w = StackWalker::for_target(&rt, &names);
    let stacks: HashMap<u64, ThreadStack> = threads
        .iter()
        .filter(|t| t.os_id != 0)
        .map(|t| (t.address, w.walk(t)))
        .collect();
    let dl = find_deadlocks(&rt, &threads, &table, &stacks);
    let id = |t: u64| threads.iter().find(|x| x.address == t).unwrap().managed_id as u64;
    assert_eq!(dl.waits.len(), 3);
    assert!(dl.waits.iter().all(|w| w.source == WaitSource::HelperFrame));
    assert_eq!(dl.cycles.len(), 1);
    let ids_found: BTreeSet<u64> = dl.cycles[0].threads.iter().map(|&t| id(t)).collect();
    assert_eq!(
        ids_found,
        ids(&e.manifest["deadlock_cycles"][0]["managed_ids"])
    );
    assert_eq!(dl.waiting_on_cycles.len(), 1);
    let aud = e.manifest["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["role"] == "lock-waiter")
        .unwrap();
    assert_eq!(
        Some(id(dl.waiting_on_cycles[0].thread)),
        aud["managed_id"].as_u64()
    );
}

#[test]
fn thin_lock_ids_name_their_threads() {
    // Object headers (and .NET 10's AwareLock) name an owner by its thin-lock id: the runtime's
    // id dispenser (.NET 10) or the thread list (8, 9) must give back the Thread with that id.
    let mut checked = 0;
    for e in locks_claimed() {
        let o = Open::new(&e);
        for t in o
            .threads
            .iter()
            .filter(|t| t.managed_id != 0 && t.state & 0x800 == 0)
        {
            assert_eq!(
                o.rt.thread_of_thin_lock_id(t.managed_id).unwrap(),
                t.address,
                "{}: thread id {}",
                e.name,
                t.managed_id
            );
            checked += 1;
        }
        let past = o.threads.iter().map(|t| t.managed_id).max().unwrap_or(0) + 1000;
        assert!(o.rt.thread_of_thin_lock_id(past).is_err(), "{}", e.name);
    }
    assert!(checked >= 100, "only {checked} threads");
}
