//! The async chains of `dumpasync` and `causality` joined into one list, and coalesced into
//! groups: chains with the same methods (innermost first), the same kind of cause and the same
//! awaited object (or each an object of its own) are one group with a count.

use crate::html::{arr, short_method, short_type, tid};
use serde_json::Value;
use std::collections::BTreeMap;

/// A thread blocked synchronously on a chain (Task.Wait, .Result, GetResult()).
#[derive(Debug, Clone, PartialEq)]
pub struct Blocked {
    pub os_id: u64,
    pub managed_id: Option<u64>,
    /// The outermost waiting frame.
    pub via: Option<String>,
}

/// One chain, from `causality` (methods, cause) and/or `dumpasync` (boxes, count).
#[derive(Debug, Clone)]
pub struct Chain<'a> {
    /// Method names, innermost first.
    pub methods: Vec<String>,
    /// `dumpasync`'s boxes when given (innermost first).
    pub boxes: Vec<&'a Value>,
    /// Box addresses, innermost first.
    pub box_addrs: Vec<String>,
    /// How many chains this entry stands for (`dumpasync --coalesce` counts; else 1).
    pub count: u64,
    pub cause: Option<&'a Value>,
    pub explanation: Option<&'a str>,
    pub awaited: Option<&'a str>,
    pub awaited_type: Option<&'a str>,
    pub blocked: Vec<Blocked>,
    /// Threads running the innermost method (`running_on_thread`).
    pub running: Vec<(u64, Option<u64>)>,
    /// The box the outermost continues back into (a ring).
    pub cycle_back_to: Option<String>,
}

impl Chain<'_> {
    pub fn cause_kind(&self) -> &str {
        self.cause
            .and_then(|c| c["kind"].as_str())
            .unwrap_or(if self.cause.is_some() {
                "unknown"
            } else {
                "not_read"
            })
    }

    /// The object the chain waits on, as the group key sees it.
    pub fn object_key(&self) -> Option<String> {
        let c = self.cause?;
        let s = |k: &str| c[k].as_str().map(str::to_owned);
        match c["kind"].as_str()? {
            "task_completion_source" => s("tcs").or_else(|| s("task")),
            "semaphore" => s("semaphore"),
            "delay" => s("timer")
                .or_else(|| c["cancellation"]["source"].as_str().map(str::to_owned))
                .or_else(|| s("task")),
            "periodic_timer" => s("timer"),
            "channel" => c["channel"]["address"].as_str().map(str::to_owned),
            "queued" | "running" | "completed_not_resumed" => s("task"),
            "cycle" => arr(&c["ring"])
                .iter()
                .filter_map(Value::as_str)
                .min()
                .map(str::to_owned),
            "running_on_thread" => None,
            "other" => s("object"),
            _ => s("object")
                .or_else(|| s("task"))
                .or(self.awaited.map(str::to_owned)),
        }
    }
}

fn blocked_from(v: &Value) -> Option<Blocked> {
    Some(Blocked {
        os_id: v["os_id"].as_u64()?,
        managed_id: v["managed_id"].as_u64(),
        via: v["via"].as_str().map(str::to_owned),
    })
}

/// Joins the two documents' chains (`result`s). `causality` drives when present; `dumpasync`'s
/// chain with the same boxes adds its boxes, count, cycle and blocked threads.
pub fn chains<'a>(dumpasync: Option<&'a Value>, causality: Option<&'a Value>) -> Vec<Chain<'a>> {
    let da: Vec<&'a Value> = dumpasync
        .map(|d| arr(&d["chains"]).iter().collect())
        .unwrap_or_default();
    let da_addrs: Vec<Vec<String>> = da
        .iter()
        .map(|c| {
            arr(&c["boxes"])
                .iter()
                .filter_map(|b| b["address"].as_str().map(str::to_owned))
                .collect()
        })
        .collect();
    let from_da = |c: &'a Value, addrs: &[String]| -> Chain<'a> {
        let boxes: Vec<&Value> = arr(&c["boxes"]).iter().collect();
        Chain {
            methods: boxes
                .iter()
                .map(|b| b["method"].as_str().unwrap_or("?").to_owned())
                .collect(),
            box_addrs: addrs.to_vec(),
            boxes,
            count: c["count"].as_u64().unwrap_or(1).max(1),
            cause: None,
            explanation: None,
            awaited: None,
            awaited_type: None,
            blocked: arr(&c["blocked_threads"])
                .iter()
                .filter_map(blocked_from)
                .collect(),
            running: Vec::new(),
            cycle_back_to: c["cycle_back_to"].as_str().map(str::to_owned),
        }
    };
    let Some(ca) = causality else {
        return da
            .iter()
            .zip(&da_addrs)
            .map(|(c, a)| {
                let mut ch = from_da(c, a);
                if let Some(aw) = ch.boxes.first().and_then(|b| arr(&b["awaiters"]).first()) {
                    ch.awaited = aw["object"].as_str();
                    ch.awaited_type = aw["object_type"].as_str();
                }
                ch
            })
            .collect();
    };
    // threads linked by causality: os id -> (managed, via), by chain index
    let mut waiters: BTreeMap<usize, Vec<Blocked>> = BTreeMap::new();
    for t in arr(&ca["threads"]) {
        if let Some(b) = blocked_from(t) {
            for i in arr(&t["chains"]).iter().filter_map(Value::as_u64) {
                waiters.entry(i as usize).or_default().push(b.clone());
            }
        }
    }
    let mut used = vec![false; da.len()];
    let mut out = Vec::new();
    for (i, c) in arr(&ca["chains"]).iter().enumerate() {
        let addrs: Vec<String> = arr(&c["boxes"])
            .iter()
            .filter_map(|b| b.as_str().map(str::to_owned))
            .collect();
        let matched = da_addrs
            .iter()
            .enumerate()
            .find(|(j, a)| !used[*j] && !addrs.is_empty() && **a == addrs)
            .map(|(j, _)| j);
        let mut ch = match matched {
            Some(j) => {
                used[j] = true;
                from_da(da[j], &da_addrs[j])
            }
            None => Chain {
                methods: Vec::new(),
                boxes: Vec::new(),
                box_addrs: addrs.clone(),
                count: 1,
                cause: None,
                explanation: None,
                awaited: None,
                awaited_type: None,
                blocked: Vec::new(),
                running: Vec::new(),
                cycle_back_to: None,
            },
        };
        ch.methods = arr(&c["methods"])
            .iter()
            .map(|m| m.as_str().unwrap_or("?").to_owned())
            .collect();
        ch.cause = c.get("cause").filter(|v| !v.is_null());
        ch.explanation = c["explanation"].as_str();
        ch.awaited = c["awaited"].as_str();
        ch.awaited_type = c["awaited_type"].as_str();
        let mut blocked = waiters.remove(&i).unwrap_or_default();
        for os in arr(&c["waited_by_threads"])
            .iter()
            .filter_map(Value::as_u64)
        {
            if !blocked.iter().any(|b| b.os_id == os) {
                blocked.push(Blocked {
                    os_id: os,
                    managed_id: None,
                    via: None,
                });
            }
        }
        for b in std::mem::take(&mut ch.blocked) {
            if !blocked.iter().any(|x| x.os_id == b.os_id) {
                blocked.push(b);
            }
        }
        ch.blocked = blocked;
        if let Some(cause) = ch.cause {
            if cause["kind"] == "running_on_thread" {
                if let Some(os) = cause["os_id"].as_u64() {
                    ch.running.push((os, cause["managed_id"].as_u64()));
                }
            }
        }
        out.push(ch);
    }
    out
}

/// A coalesced group of chains.
#[derive(Debug, Clone)]
pub struct Group {
    /// Indices into the chain list.
    pub chains: Vec<usize>,
    /// Chains it stands for (the sum of their counts).
    pub count: u64,
    pub methods: Vec<String>,
    pub kind: String,
    /// The one object every chain waits on; `None` with `own_objects` > 0 when each waits on
    /// its own; both empty when the cause names no object.
    pub object: Option<String>,
    pub own_objects: usize,
    pub blocked: Vec<Blocked>,
    pub running: Vec<(u64, Option<u64>)>,
}

/// Groups chains (same methods, same cause kind, same shared object or each its own), in the
/// order: groups with blocked or running threads first, then the most chains, then first seen.
pub fn groups(chains: &[Chain]) -> Vec<Group> {
    // First pass: key by (methods, kind) and gather objects.
    let mut order: Vec<(Vec<String>, String)> = Vec::new();
    let mut by: BTreeMap<(Vec<String>, String), Vec<usize>> = BTreeMap::new();
    for (i, c) in chains.iter().enumerate() {
        let k = (c.methods.clone(), c.cause_kind().to_owned());
        if !by.contains_key(&k) {
            order.push(k.clone());
        }
        by.entry(k).or_default().push(i);
    }
    let mut out = Vec::new();
    for k in order {
        let idx = &by[&k];
        // split by shared object: chains whose object is shared with another chain of this
        // key form one group per object; chains with objects of their own form one group.
        let mut per_obj: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        let mut obj_order = Vec::new();
        let mut no_obj = Vec::new();
        for &i in idx {
            match chains[i].object_key() {
                Some(o) => {
                    if !per_obj.contains_key(&o) {
                        obj_order.push(o.clone());
                    }
                    per_obj.entry(o).or_default().push(i);
                }
                None => no_obj.push(i),
            }
        }
        let mut singles = Vec::new();
        for o in obj_order {
            let v = &per_obj[&o];
            if v.len() > 1 || per_obj.len() == 1 {
                out.push(make_group(chains, v.clone(), &k, Some(o), 0));
            } else {
                singles.push(v[0]);
            }
        }
        if !singles.is_empty() {
            let n = singles.len();
            out.push(make_group(chains, singles, &k, None, n));
        }
        if !no_obj.is_empty() {
            out.push(make_group(chains, no_obj, &k, None, 0));
        }
    }
    let mut keyed: Vec<(usize, Group)> = out.into_iter().enumerate().collect();
    keyed.sort_by(|(ia, a), (ib, b)| {
        let wa = !(a.blocked.is_empty() && a.running.is_empty());
        let wb = !(b.blocked.is_empty() && b.running.is_empty());
        wb.cmp(&wa).then(b.count.cmp(&a.count)).then(ia.cmp(ib))
    });
    keyed.into_iter().map(|(_, g)| g).collect()
}

fn make_group(
    chains: &[Chain],
    idx: Vec<usize>,
    k: &(Vec<String>, String),
    object: Option<String>,
    own: usize,
) -> Group {
    let mut blocked: Vec<Blocked> = Vec::new();
    let mut running = Vec::new();
    for &i in &idx {
        for b in &chains[i].blocked {
            if !blocked.iter().any(|x| x.os_id == b.os_id) {
                blocked.push(b.clone());
            }
        }
        for r in &chains[i].running {
            if !running.contains(r) {
                running.push(*r);
            }
        }
    }
    Group {
        count: idx.iter().map(|&i| chains[i].count).sum(),
        chains: idx,
        methods: k.0.clone(),
        kind: k.1.clone(),
        object,
        own_objects: own,
        blocked,
        running,
    }
}

/// "10 h", "1 h 30 min", "45 s", "250 ms".
pub fn duration(ms: u64) -> String {
    if ms < 1000 {
        return format!("{ms} ms");
    }
    let s = ms / 1000;
    if s < 60 {
        return format!("{s} s");
    }
    let m = s / 60;
    if m < 60 {
        return match s % 60 {
            0 => format!("{m} min"),
            r => format!("{m} min {r} s"),
        };
    }
    let h = m / 60;
    match m % 60 {
        0 => format!("{h} h"),
        r => format!("{h} h {r} min"),
    }
}

/// What a group's chains wait on, in words: [`cause_label`] of its first chain, with the
/// threads of a group running on several.
pub fn group_cause_label(chains: &[Chain], g: &Group) -> (String, String, String) {
    let (k, t, d) = cause_label(&chains[g.chains[0]], g.own_objects);
    if g.kind == "running_on_thread" && g.running.len() > 1 {
        let ids: Vec<String> = g.running.iter().take(4).map(|&(os, _)| tid(os)).collect();
        let more = if g.running.len() > 4 { ", …" } else { "" };
        return (
            k,
            t,
            format!("on {} threads: {}{more}", g.running.len(), ids.join(", ")),
        );
    }
    (k, t, d)
}

/// What a chain waits on, in words for a node: (css kind, title, detail line).
pub fn cause_label(c: &Chain, own_objects: usize) -> (String, String, String) {
    let kind = c.cause_kind().to_owned();
    let Some(cause) = c.cause else {
        let t = c
            .awaited_type
            .map(short_type)
            .unwrap_or_else(|| "(not read)".into());
        return (
            "other".into(),
            format!("awaits {t}"),
            c.awaited.unwrap_or("").to_owned(),
        );
    };
    let s = |k: &str| cause[k].as_str().unwrap_or("?").to_owned();
    let each = |t: String| {
        if own_objects > 1 {
            format!("{own_objects} × {t}")
        } else {
            t
        }
    };
    let (title, detail) = match kind.as_str() {
        "task_completion_source" => {
            let arg = c
                .awaited_type
                .map(short_type)
                .and_then(|t| t.strip_prefix("Task").map(str::to_owned))
                .unwrap_or_default();
            (
                each(format!("TaskCompletionSource{arg}")),
                if own_objects > 1 {
                    "each its own; none completed".to_owned()
                } else {
                    format!("{} · never completed", s("tcs"))
                },
            )
        }
        "semaphore" => (
            each("SemaphoreSlim".into()),
            format!(
                "{} · count {} · {} async, {} sync waiters",
                if own_objects > 1 {
                    "each its own".into()
                } else {
                    s("semaphore")
                },
                cause["current_count"],
                cause["async_waiters"],
                cause["sync_waiters"]
            ),
        ),
        "delay" => {
            let when = if cause["infinite"] == true {
                "infinite".to_owned()
            } else if let Some(ms) = cause["due_ms"].as_u64() {
                format!("due {} after it was set", duration(ms))
            } else {
                "no timer".into()
            };
            let tok = match cause["cancellation"]["source"].as_str() {
                Some(src) => format!(
                    " · token {src}{}",
                    if cause["cancellation"]["cancelled"] == true {
                        " (cancelled)"
                    } else {
                        ""
                    }
                ),
                None => String::new(),
            };
            (each("Task.Delay".into()), format!("{when}{tok}"))
        }
        "periodic_timer" => (
            each("PeriodicTimer".into()),
            match cause["period_ms"].as_u64() {
                Some(p) => format!("next tick · period {}", duration(p)),
                None => "next tick".into(),
            },
        ),
        "channel" => {
            let ch = &cause["channel"];
            let ty = ch["type"]
                .as_str()
                .map(short_type)
                .unwrap_or_else(|| "Channel".into());
            let cap = match ch["capacity"].as_u64() {
                Some(n) => format!("capacity {n}"),
                None => "unbounded".into(),
            };
            let items = match ch["items"].as_u64() {
                Some(n) => format!("{n} items"),
                None => "items ?".into(),
            };
            let full = if ch["full"] == true { ", full" } else { "" };
            let role = match cause["role"].as_str() {
                Some("read") => "ReadAsync",
                Some("write") => "WriteAsync",
                Some("wait_to_read") => "WaitToReadAsync",
                Some("wait_to_write") => "WaitToWriteAsync",
                _ => "waits",
            };
            (
                each(ty),
                format!(
                    "{role} · {cap}, {items}{full} · {} readers, {} writers waiting",
                    ch["waiting_readers"], ch["waiting_writers"]
                ),
            )
        }
        "queued" => (
            "queued work item".into(),
            format!(
                "{} · {} queue",
                cause["method"]
                    .as_str()
                    .map(short_method)
                    .unwrap_or_else(|| "?".into()),
                cause["queue"].as_str().unwrap_or("no")
            ),
        ),
        "running" => ("running".into(), format!("task {}", s("task"))),
        "running_on_thread" => (
            "running".into(),
            format!(
                "on thread {}",
                cause["os_id"]
                    .as_u64()
                    .map(tid)
                    .unwrap_or_else(|| "?".into())
            ),
        ),
        "completed_not_resumed" => (
            "completed, not resumed".into(),
            format!("task {} {}", s("task"), s("status")),
        ),
        "cycle" => (
            format!("cycle of {} tasks", arr(&cause["ring"]).len()),
            "awaiting each other: none can complete".into(),
        ),
        "other" => (
            each(
                cause["type_name"]
                    .as_str()
                    .map(short_type)
                    .unwrap_or_else(|| "object".into()),
            ),
            if own_objects > 1 {
                "each its own".into()
            } else {
                s("object")
            },
        ),
        "unknown" => ("unknown".into(), s("why")),
        k => (k.replace('_', " "), c.awaited.unwrap_or("").to_owned()),
    };
    (kind, title, detail)
}
