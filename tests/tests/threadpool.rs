//! Tasks, timers, the thread pool's queues and state, ConcurrentQueue contents and delegate
//! methods, read without the DAC, against the truths: the threadpool scenario's manifest
//! (`work_items`, `timers`, `collections`, `thread_pool`, `locks`), its program
//! (dumps/scenarios/threadpool.cs: Order/ReportRequest ids 1..N in queue order, TimerState
//! names, Message sequences and texts), the hang scenario's `Task.Delay(10 h)`
//! (dumps/scenarios/hang.cs) and the DAC's heap census (TimerQueueTimer, DelayPromise counts).

use clrdata::analysis::{tasks, threadpool, timers};
use clrdata::discovery::layout::Capability;
use clrdata::model::delegates;
use clrdata::model::objects::{FieldValue, ObjectReader};
use clrdata::model::stack::StackWalker;
use clrdata::prelude::*;
use clrdata::TypeNames;
use dumpreader::Dump;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

struct Open {
    dump: Dump,
}

impl Open {
    fn new(name: &str) -> (Open, tests::Entry) {
        let e = tests::entry(name);
        let dump = Dump::open_with(&e.dump_path(), &e.open_options()).unwrap();
        (Open { dump }, e)
    }

    /// A corpus entry opened with its own runtime's files ([`tests::Entry::open_options`]).
    fn of(e: &tests::Entry) -> Open {
        let dump = Dump::open_with(&e.dump_path(), &e.open_options())
            .unwrap_or_else(|err| panic!("{}: {err}", e.name));
        Open { dump }
    }
}

/// The dumps of the threadpool scenario the tests claim Statics on (the pool, its queues and
/// the timers are reached from CoreLib statics): .NET 8, 9, 10 and 11.
fn threadpool_dumps() -> Vec<tests::Entry> {
    let v: Vec<_> = tests::readable_for(Capability::Statics)
        .into_iter()
        .filter(|e| e.program() == "threadpool")
        .collect();
    assert!(
        v.iter().any(|e| e.family() >= 9),
        "no .NET 9/10 threadpool dump claims Statics"
    );
    v
}

fn field(r: &ObjectReader<'_, &Dump>, obj: u64, name: &str) -> FieldValue {
    let (mt, _) = r.object_mt(obj).unwrap();
    r.fields(mt, obj + 8, false)
        .unwrap()
        .into_iter()
        .rev()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("{obj:#x} has no field {name}"))
        .value
}

fn int_field(r: &ObjectReader<'_, &Dump>, obj: u64, name: &str) -> i64 {
    match field(r, obj, name) {
        FieldValue::Int { value } => value,
        v => panic!("{obj:#x}.{name} is {v:?}"),
    }
}

fn string_field(r: &ObjectReader<'_, &Dump>, obj: u64, name: &str) -> String {
    match field(r, obj, name) {
        FieldValue::Object {
            string: Some(s), ..
        } => s,
        v => panic!("{obj:#x}.{name} is {v:?}"),
    }
}

fn dac_count(e: &tests::Entry, type_name: &str) -> u64 {
    e.dac["heap_stat"]["types"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["type"] == type_name)
        .map(|t| t["count"].as_u64().unwrap())
        .sum()
}

#[test]
fn queued_work_items_are_the_manifests_with_callbacks_states_and_order() {
    for e in threadpool_dumps() {
        eprintln!("checking {}", e.name);
        queued_work_items_on(&e);
    }
}

fn queued_work_items_on(e: &tests::Entry) {
    let o = Open::of(e);
    let rt = tests::discover(&o.dump).unwrap();
    let names = TypeNames::new();
    let r = ObjectReader::new(&rt, &names);
    let w = StackWalker::new(&rt, &names, HashMap::new());
    let q = threadpool::work_queue(&r, &w);
    assert!(q.errors.is_empty(), "{:?}", q.errors);
    assert_ne!(q.work_queue, 0);

    // Group what we found as the manifest does: (kind, callback, state type, queue).
    let mut found: BTreeMap<(String, String, String, String), usize> = BTreeMap::new();
    for i in &q.items {
        let m = i
            .method
            .as_ref()
            .unwrap_or_else(|| panic!("work item {:#x} has no callback", i.address))
            .as_ref()
            .unwrap_or_else(|e| panic!("work item {:#x}: {e}", i.address));
        let kind = match i.kind {
            "QueueUserWorkItem" => "QueueUserWorkItem",
            "Task" => "Task",
            k => panic!("unexpected work item kind {k} ({})", i.type_name),
        };
        *found
            .entry((
                kind.to_string(),
                m.short_name().to_string(),
                i.state_type.clone().unwrap_or_default(),
                i.queue.clone(),
            ))
            .or_default() += 1;
    }
    let mut want: BTreeMap<(String, String, String, String), usize> = BTreeMap::new();
    for wi in e.manifest["work_items"].as_array().unwrap() {
        want.insert(
            (
                wi["kind"].as_str().unwrap().to_string(),
                wi["callback"].as_str().unwrap().to_string(),
                wi["state_type"].as_str().unwrap().to_string(),
                wi["queue"].as_str().unwrap().to_string(),
            ),
            wi["count"].as_u64().unwrap() as usize,
        );
    }
    assert_eq!(found, want);

    // Tasks: the manifest's status; their flags decoded by taskstate say the same.
    let status = e.manifest["work_items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["kind"] == "Task")
        .unwrap()["task_status"]
        .as_str()
        .unwrap();
    for i in q.items.iter().filter(|i| i.kind == "Task") {
        assert_eq!(i.task_status, Some(status));
        let t = tasks::read_task(&r, &w, i.address).unwrap();
        assert_eq!(t.status, status);
        assert!(
            t.flags.iter().any(|f| f == "TASK_STATE_STARTED"),
            "{:?}",
            t.flags
        );
        assert_eq!(t.state_object, i.state);
    }

    // Queue order: Orders #1..#10 then ReportRequests #1..#5 (threadpool.cs queues them so).
    let ids = |ty: &str| -> Vec<i64> {
        q.items
            .iter()
            .filter(|i| i.state_type.as_deref() == Some(ty))
            .map(|i| int_field(&r, i.state, "Id"))
            .collect()
    };
    assert_eq!(ids("Threadpool.Order"), (1..=10).collect::<Vec<_>>());
    assert_eq!(ids("Threadpool.ReportRequest"), (1..=5).collect::<Vec<_>>());
    let first_task = q.items.iter().position(|i| i.kind == "Task").unwrap();
    assert!(q.items[..first_task]
        .iter()
        .all(|i| i.kind == "QueueUserWorkItem"));
}

#[test]
fn timers_are_the_manifests_with_callbacks_due_times_periods_and_states() {
    for e in threadpool_dumps() {
        eprintln!("checking {}", e.name);
        timers_on(&e);
    }
}

fn timers_on(e: &tests::Entry) {
    let o = Open::of(e);
    let rt = tests::discover(&o.dump).unwrap();
    let names = TypeNames::new();
    let r = ObjectReader::new(&rt, &names);
    let w = StackWalker::new(&rt, &names, HashMap::new());
    let all = timers::timers(&r, &w);
    assert!(all.errors.is_empty(), "{:?}", all.errors);
    let want = e.manifest["timers"].as_array().unwrap();
    assert_eq!(all.timers.len(), want.len());
    assert_eq!(
        all.timers.len() as u64,
        dac_count(e, "System.Threading.TimerQueueTimer")
    );
    for t in want {
        let name = t["name"].as_str().unwrap();
        let found: Vec<&timers::TimerInfo> = all
            .timers
            .iter()
            .filter(|x| {
                x.state != 0
                    && x.state_type.as_deref() == t["state_type"].as_str()
                    && string_field(&r, x.state, "Name") == name
            })
            .collect();
        assert_eq!(found.len(), 1, "timer {name}");
        let x = found[0];
        let m = x.method.as_ref().unwrap().as_ref().unwrap();
        assert_eq!(m.short_name(), t["callback"].as_str().unwrap(), "{name}");
        assert!(m.is_static, "{name}: a static method's delegate");
        assert_eq!(m.target, 0);
        assert_eq!(x.due_ms as u64, t["due_ms"].as_u64().unwrap(), "{name}");
        assert_eq!(
            x.period_ms.map(u64::from),
            t["period_ms"].as_u64(),
            "{name}"
        );
        assert!(!x.canceled);
        assert_eq!(x.due_at_ticks, x.start_ticks + x.due_ms as i64);
    }
}

/// hang.cs: `DelayC` awaits `Task.Delay(TimeSpan.FromHours(10))`.
const TEN_HOURS_MS: u32 = 10 * 3600 * 1000;

#[test]
fn task_delay_timers_of_the_hang_dumps_linux_and_windows() {
    // Every readable dump of the hang program (server GC, Windows, Roslyn-compiled ones too).
    let hangs: Vec<_> = tests::readable_for(Capability::Statics)
        .into_iter()
        .filter(|e| e.program() == "hang")
        .collect();
    assert!(!hangs.is_empty(), "no readable hang dump");
    for e in hangs {
        let name = e.name.as_str();
        let o = Open::of(&e);
        let rt = tests::discover(&o.dump).unwrap();
        let names = TypeNames::new();
        let r = ObjectReader::new(&rt, &names);
        let w = StackWalker::new(&rt, &names, HashMap::new());
        let all = timers::timers(&r, &w);
        assert!(all.errors.is_empty(), "{name}: {:?}", all.errors);
        assert_eq!(
            all.timers.len() as u64,
            dac_count(&e, "System.Threading.TimerQueueTimer"),
            "{name}"
        );
        let delays: Vec<&timers::TimerInfo> = all
            .timers
            .iter()
            .filter(|t| t.state_type.as_deref() == Some("System.Threading.Tasks.Task+DelayPromise"))
            .collect();
        assert_eq!(
            delays.len() as u64,
            dac_count(&e, "System.Threading.Tasks.Task+DelayPromise"),
            "{name}"
        );
        assert_eq!(delays.len(), 1, "{name}: one chain awaits Task.Delay");
        let t = delays[0];
        assert_eq!(t.due_ms, TEN_HOURS_MS, "{name}");
        assert_eq!(t.period_ms, None, "{name}");
        let m = t.method.as_ref().unwrap().as_ref().unwrap();
        assert!(
            m.short_name()
                .starts_with("System.Threading.Tasks.Task+DelayPromise."),
            "{name}: {}",
            m.method
        );
        // The DelayPromise is the task the innermost async method awaits (manifest
        // awaited_type), found independently by the heap walk.
        let heap = rt.gc_heap().unwrap();
        let promise = heap
            .objects(&rt)
            .filter(|x| !x.is_free)
            .find(|x| r.type_name(x.mt) == "System.Threading.Tasks.Task+DelayPromise")
            .unwrap();
        assert_eq!(t.state, promise.address, "{name}");
        let chain = e.manifest["async_chains"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["awaits"] == "System.Threading.Tasks.Task.Delay")
            .unwrap();
        assert_eq!(
            chain["awaited_type"],
            Value::from("System.Threading.Tasks.Task+DelayPromise")
        );
    }
}

#[test]
fn concurrent_queue_items_are_the_messages_in_order() {
    let (o, e) = Open::new("threadpool");
    let rt = tests::discover(&o.dump).unwrap();
    let names = TypeNames::new();
    let r = ObjectReader::new(&rt, &names);
    let c = &e.manifest["collections"][0];
    let ty = c["type"].as_str().unwrap();
    let heap = rt.gc_heap().unwrap();
    let queues: Vec<u64> = heap
        .objects(&rt)
        .filter(|x| !x.is_free && r.type_name(x.mt) == ty)
        .map(|x| x.address)
        .collect();
    assert_eq!(queues.len(), 1);
    let d = threadpool::concurrent_queue(&r, queues[0], threadpool::MAX_ITEMS).unwrap();
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    let n = c["count"].as_u64().unwrap();
    assert_eq!(d.items.len() as u64, n);
    assert_eq!(d.segments.iter().map(|s| s.count).sum::<u64>(), n);
    let mut seqs = Vec::new();
    for it in &d.items {
        assert!(it.published);
        assert_eq!(it.type_name.as_deref(), c["element_type"].as_str());
        let FieldValue::Object { address, .. } = it.value else {
            panic!("{:?}", it.value)
        };
        let s = int_field(&r, address, "Sequence");
        assert_eq!(string_field(&r, address, "Text"), format!("message {s}"));
        seqs.push(s);
    }
    let first = c["first_sequence"].as_i64().unwrap();
    let last = c["last_sequence"].as_i64().unwrap();
    assert_eq!(seqs, (first..=last).collect::<Vec<_>>());

    // Not a queue: a precise error.
    let err = threadpool::concurrent_queue(&r, d.items[0].slot_address, 10);
    assert!(err.is_err());
}

#[test]
fn thread_pool_limits_counts_and_blocked_workers() {
    for e in threadpool_dumps() {
        eprintln!("checking {}", e.name);
        thread_pool_on(&e);
    }
}

fn thread_pool_on(e: &tests::Entry) {
    let o = Open::of(e);
    let rt = tests::discover(&o.dump).unwrap();
    let names = TypeNames::new();
    let r = ObjectReader::new(&rt, &names);
    let w = StackWalker::for_target(&rt, &names);
    let p = threadpool::thread_pool(&r, Some(&w));
    assert!(p.errors.is_empty(), "{:?}", p.errors);
    let tp = &e.manifest["thread_pool"];
    assert_eq!(p.min_threads, tp["min_worker_threads"].as_i64());
    assert_eq!(p.max_threads, tp["max_worker_threads"].as_i64());
    let blocked = tp["blocked_workers"].as_i64().unwrap();
    // Both workers are inside a work item (BlockWorker), none idle.
    assert_eq!(p.processing_work, Some(blocked));
    assert_eq!(p.existing_threads, Some(blocked));
    let mut want: Vec<u64> = e.manifest["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["role"] == "pool-worker-blocked")
        .map(|t| t["managed_id"].as_u64().unwrap())
        .collect();
    want.sort();
    // The blocked workers carry the runtime's pool-worker thread state (no stack walk needed).
    for id in &want {
        assert!(
            p.workers.iter().any(|wk| wk.managed_id as u64 == *id),
            "{}: worker {id} not among the pool's threads",
            e.name
        );
    }
    if !tests::claims(e, Capability::Stacks) {
        // What each worker runs comes from its stack: not claimed on this family.
        return;
    }
    let mut running: Vec<u64> = p
        .workers
        .iter()
        .filter(|wk| {
            let a = wk.activity.as_ref().unwrap();
            a.role == "worker" && a.activity == "running a work item"
        })
        .map(|wk| {
            let a = wk.activity.as_ref().unwrap();
            assert_eq!(
                a.work_item_method
                    .as_deref()
                    .map(delegates::short_method_name),
                Some("Threadpool.Program.BlockWorker")
            );
            wk.managed_id as u64
        })
        .collect();
    running.sort();
    assert_eq!(running.len() as i64, blocked);
    assert_eq!(running, want);
}

#[test]
fn delegate_resolution_names_a_precode_method_and_refuses_non_delegates() {
    let (o, _) = Open::new("threadpool");
    let rt = tests::discover(&o.dump).unwrap();
    let names = TypeNames::new();
    let r = ObjectReader::new(&rt, &names);
    let w = StackWalker::new(&rt, &names, HashMap::new());
    let all = timers::timers(&r, &w);
    let t = &all.timers[0];
    let m = delegates::delegate_method(&r, &w, t.callback).unwrap();
    // OnHeartbeat/OnDeadline never ran: their entry point is still a FixupPrecode.
    assert_eq!(m.resolved_by, "FixupPrecode");
    assert_eq!(m.code_field, "_methodPtrAux");
    assert_eq!(
        delegates::method_desc_name(&r, &w, m.method_desc).unwrap(),
        m.method
    );
    assert!(m.method.ends_with("(System.Object)"), "{}", m.method);
    // The state object is no delegate.
    let e = delegates::delegate_method(&r, &w, t.state).unwrap_err();
    assert!(e.to_string().contains("not a delegate"), "{e}");
    // Nor is a non-object.
    assert!(delegates::delegate_method(&r, &w, 0x10).is_err());
}

#[test]
fn every_single_cast_delegate_on_the_heaps_names_its_method() {
    for e in tests::readable() {
        let d = Dump::open_with(&e.dump_path(), &e.open_options()).unwrap();
        let rt = tests::discover(&d).unwrap();
        let names = TypeNames::new();
        let r = ObjectReader::new(&rt, &names);
        let w = StackWalker::new(&rt, &names, HashMap::new());
        let heap = rt.gc_heap().unwrap();
        let mut by: BTreeMap<String, usize> = BTreeMap::new();
        let mut failures = Vec::new();
        let mut is_delegate: HashMap<u64, bool> = HashMap::new();
        for o in heap.objects(&rt).filter(|o| !o.is_free) {
            let yes = *is_delegate.entry(o.mt).or_insert_with(|| {
                r.fields(o.mt, 0, false)
                    .is_ok_and(|f| f.iter().any(|f| f.name == "_methodPtr"))
            });
            if !yes {
                continue;
            }
            match delegates::delegate_method(&r, &w, o.address) {
                Ok(m) => *by.entry(m.resolved_by.to_string()).or_default() += 1,
                Err(why) if why.to_string().contains("multicast") => {
                    *by.entry("multicast".into()).or_default() += 1
                }
                Err(why) => failures.push(why),
            }
        }
        eprintln!("{}: {by:?}", e.name);
        assert!(failures.is_empty(), "{}: {failures:#?}", e.name);
        assert!(by.values().sum::<usize>() > 0, "{}", e.name);
    }
}

/// Every delegate the DAC finds among the heap's objects (dumps/<name>.delegates.dac.json,
/// from dumps/tools/dacdelegates.py): ours are the same objects, and the method we name is the
/// one the DAC names for the same code pointer (`_methodPtrAux` for a static method, else
/// `_methodPtr`), precodes included.
#[test]
fn delegate_methods_equal_the_dacs_names() {
    // Every readable dump that has the DAC's delegates.
    let mut checked = 0;
    for e in tests::readable() {
        let name = e.name.as_str();
        let path = tests::dumps_dir().join(format!("{name}.delegates.dac.json"));
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let truth: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            truth["dump_sha256"], e.dac["dump_file"]["sha256"],
            "{name}: the DAC delegate file belongs to another dump"
        );
        checked += 1;
        let d = Open::of(&e).dump;
        let rt = tests::discover(&d).unwrap();
        let names = TypeNames::new();
        let r = ObjectReader::new(&rt, &names);
        let w = StackWalker::new(&rt, &names, HashMap::new());
        let hexv = |v: &Value| {
            u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
        };
        let dac = truth["delegates"].as_array().unwrap();
        assert!(dac.len() >= 10, "{name}: {} delegates", dac.len());
        // The same set of delegate objects.
        let heap = rt.gc_heap().unwrap();
        let mut ours: Vec<u64> = heap
            .objects(&rt)
            .filter(|o| !o.is_free && delegates::delegate_fields(&r, o.address).is_ok())
            .map(|o| o.address)
            .collect();
        ours.sort();
        let theirs: Vec<u64> = dac.iter().map(|x| hexv(&x["address"])).collect();
        assert_eq!(ours, theirs, "{name}");
        for x in dac {
            let a = hexv(&x["address"]);
            let m = delegates::delegate_method(&r, &w, a).unwrap_or_else(|e| panic!("{name}: {e}"));
            let key = if hexv(&x["method_ptr_aux"]) != 0 {
                "method_ptr_aux_name"
            } else {
                "method_ptr_name"
            };
            assert_eq!(
                Some(m.method.as_str()),
                x[key].as_str(),
                "{name}: delegate {a:#x}"
            );
            assert_eq!(
                m.delegate_type,
                x["type"].as_str().unwrap(),
                "{name}: {a:#x}"
            );
            let target = hexv(&x["target"]);
            if m.is_static {
                assert_eq!(target, a, "{name}: an open static delegate targets itself");
            } else {
                assert_eq!(m.target, target, "{name}: {a:#x}");
            }
        }
    }
    assert!(checked >= 2, "DAC delegate truth for only {checked} dumps");
}

/// The dynamic methods (LCG) behind aspnethang-net11's reflection invokers, named as the
/// 11.0.0 DAC names them (dumps/aspnethang-net11.lcg-delegates.dac.json, dacdelegates.py
/// --net11 over the delegates whose `_methodPtrAux` the DAC names `DynamicClass.*`): one
/// signature instantiates a generic type given by a runtime TypeHandle (`GENERICINST INTERNAL
/// <handle>`, `System.Span`1<System.Object>`), which the signature reader once refused.
#[test]
fn dynamic_methods_of_reflection_invokers_are_named_as_the_dac_names_them() {
    let e = tests::entry("aspnethang-net11");
    let path = tests::dumps_dir().join("aspnethang-net11.lcg-delegates.dac.json");
    let truth: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(truth["dump_sha256"], e.dac["dump_file"]["sha256"]);
    let d = Open::of(&e).dump;
    let rt = tests::discover(&d).unwrap();
    let names = TypeNames::new();
    let r = ObjectReader::new(&rt, &names);
    let w = StackWalker::new(&rt, &names, HashMap::new());
    let dac = truth["delegates"].as_array().unwrap();
    assert!(dac.len() >= 2);
    for x in dac {
        let a = u64::from_str_radix(x["address"].as_str().unwrap().trim_start_matches("0x"), 16)
            .unwrap();
        let m = delegates::delegate_method(&r, &w, a).unwrap_or_else(|e| panic!("{a:#x}: {e}"));
        assert_eq!(
            Some(m.method.as_str()),
            x["method_ptr_aux_name"].as_str(),
            "delegate {a:#x}"
        );
    }
}
