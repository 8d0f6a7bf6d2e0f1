//! The page's sections other than the drawings: the triage summary, the heap's top types,
//! exceptions, locks and deadlock cycles, the thread pool, the thread list.

use crate::html::{
    arr, bytes, elide_middle, esc, num, short_method, short_type, thread_label, tid, vtext, Html,
};
use crate::pstacks::is_framework;
use serde_json::Value;
use std::fmt::Write as _;

/// Rows of a big table shown at once; more in a "N more" expander up to [`MAX_ROWS`].
pub const SHOWN_ROWS: usize = 30;
pub const MAX_ROWS: usize = 500;
/// Threads listed in the thread table (the first; `clrthreads` has them all).
pub const THREAD_ROWS: usize = 300;
/// Types listed in the heap's table (the largest; `dumpheap -stat` has them all).
pub const HEAP_ROWS: usize = 100;

/// A JSON value as escaped text.
fn vh(v: &Value) -> String {
    esc(&vtext(v))
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", num(n), if n == 1 { one } else { many })
}

fn dd(h: &mut Html, k: &str, v: &str) {
    let _ = write!(h, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(v));
}

/// Signal names for Linux's fatal signal numbers and a few Windows exception codes.
fn exception_code(code: &str, os: Option<&str>) -> String {
    let n = u64::from_str_radix(code.trim_start_matches("0x"), 16).ok();
    let name = match (os, n) {
        (Some("linux"), Some(4)) => Some("SIGILL"),
        (Some("linux"), Some(5)) => Some("SIGTRAP"),
        (Some("linux"), Some(6)) => Some("SIGABRT"),
        (Some("linux"), Some(7)) => Some("SIGBUS"),
        (Some("linux"), Some(8)) => Some("SIGFPE"),
        (Some("linux"), Some(9)) => Some("SIGKILL"),
        (Some("linux"), Some(11)) => Some("SIGSEGV"),
        (Some("windows"), Some(0xC000_0005)) => Some("access violation"),
        (Some("windows"), Some(0xC000_00FD)) => Some("stack overflow"),
        (Some("windows"), Some(0xE043_4352)) => Some("CLR exception"),
        (Some("windows"), Some(0x8000_0003)) => Some("breakpoint"),
        _ => None,
    };
    match (os, n, name) {
        (Some("linux"), Some(n), Some(s)) => format!("signal {n} ({s})"),
        (Some("linux"), Some(n), None) => format!("signal {n}"),
        (_, _, Some(s)) => format!("exception {code} ({s})"),
        _ => format!("exception {code}"),
    }
}

/// The first frame of the app's own code (innermost first), else the innermost.
pub fn app_frame(frames: &[Value]) -> Option<&str> {
    frames
        .iter()
        .filter_map(Value::as_str)
        .find(|f| !is_framework(f))
        .or_else(|| frames.first().and_then(Value::as_str))
}

/// The summary: what the dump is, then one line per finding.
pub fn summary(
    h: &mut Html,
    triage: Option<&Value>,
    info: Option<&Value>,
    triage_missing_note: Option<&str>,
    p: &str,
    present: &[&str],
) {
    // a finding's badge links to its section when the page has it
    let badge = |sec: &str, text: &str| {
        if present.contains(&sec) {
            format!("<a class=\"badge\" href=\"#{p}{sec}\">{text}</a>")
        } else {
            format!("<span class=\"badge\">{text}</span>")
        }
    };
    let t = triage.unwrap_or(&Value::Null);
    let i = info.unwrap_or(&Value::Null);
    h.raw("<dl class=\"facts\">");
    if let Some(rt) = t["runtime"].as_str() {
        let gc = t["gc"]
            .as_str()
            .map(|g| format!(", {g} GC"))
            .unwrap_or_default();
        dd(h, "Runtime", &format!("{rt}{gc}"));
    } else if let Some(v) = i["app_shape"]["runtime_version"].as_str() {
        dd(h, "Runtime", &format!(".NET {v}"));
    }
    let os = t["os"].as_str().or(i["os"].as_str());
    let fmt = t["format"].as_str().or(i["format"].as_str());
    let pid = t["pid"].as_u64().or(i["pid"].as_u64());
    if os.is_some() || fmt.is_some() {
        let mut s = format!("{} · {}", os.unwrap_or("?"), fmt.unwrap_or("?"));
        if let Some(a) = i["arch"].as_str() {
            let _ = write!(s, " · {a}");
        }
        dd(h, "OS, format", &s);
    }
    if let Some(p) = pid {
        let name = i["process_name"].as_str().filter(|s| !s.is_empty());
        dd(
            h,
            "Process",
            &match name {
                Some(n) => format!("{n} (pid {p})"),
                None => format!("pid {p}"),
            },
        );
    }
    if let Some(k) = i["dump_kind"]["description"].as_str() {
        dd(h, "Dump kind", k);
    }
    if let Some(s) = i["app_shape"]["description"].as_str() {
        dd(h, "App", s);
    }
    let ot = t["os_threads"].as_u64().or(i["threads"].as_u64());
    if ot.is_some() || t["managed_threads"].is_u64() {
        let mut s = String::new();
        if let Some(n) = ot {
            s.push_str(&plural(n, "OS thread", "OS threads"));
        }
        if let Some(m) = t["managed_threads"].as_u64() {
            if !s.is_empty() {
                s.push_str(", ");
            }
            s.push_str(&format!("{} managed", num(m)));
        }
        dd(h, "Threads", &s);
    }
    if let Some(a) = t["heap_absent"].as_str() {
        dd(h, "GC heap", a);
    } else if let (Some(o), Some(b)) = (t["heap_objects"].as_u64(), t["heap_bytes"].as_u64()) {
        dd(h, "GC heap", &format!("{} objects, {}", num(o), bytes(b)));
    }
    h.raw("</dl>");
    if let Some(n) = triage_missing_note {
        let _ = write!(h, "<p class=\"note\">{}</p>", esc(n));
    }
    if triage.is_none() {
        return;
    }
    h.raw("<ul class=\"verdicts\">");
    let mut findings = 0;
    // exception
    let dump_exc = &t["dump_exception"];
    if let Some(ce) = t["current_exception"].as_object() {
        findings += 1;
        let kind = if dump_exc.is_object() {
            ("crash", "CRASH")
        } else {
            ("exc", "EXCEPTION")
        };
        let ty = ce.get("type").and_then(Value::as_str).unwrap_or("?");
        let msg = ce.get("message").and_then(Value::as_str);
        let thread = ce.get("thread_os_id").and_then(Value::as_u64);
        let frames = ce.get("frames").map(arr).unwrap_or(&[]);
        let _ = write!(
            h,
            "<li class=\"v-{}\">{} <b class=\"mono\">{}</b>{}{}",
            kind.0,
            badge("exceptions", kind.1),
            esc(ty),
            msg.map(|m| format!(": {}", esc(&elide_middle(m, 300))))
                .unwrap_or_default(),
            thread
                .map(|t| format!(" on thread {}", tid(t)))
                .unwrap_or_default()
        );
        if let Some(f) = app_frame(frames) {
            let _ = write!(
                h,
                " <span class=\"muted\">at</span> <span class=\"mono\">{}</span>",
                esc(&short_method(f))
            );
        }
        if let Some(inner) = ce.get("inner_exception_type").and_then(Value::as_str) {
            let _ = write!(h, " <span class=\"muted\">(inner: {})</span>", esc(inner));
        }
        if let Some(c) = dump_exc["code"].as_str() {
            let _ = write!(
                h,
                " <span class=\"muted\">· the dump records {}</span>",
                esc(&exception_code(c, t["os"].as_str()))
            );
        }
        h.raw("</li>");
    } else if let Some(c) = dump_exc["code"].as_str() {
        findings += 1;
        let b = badge("exceptions", "CRASH");
        let _ = write!(
            h,
            "<li class=\"v-crash\">{b} the dump records {}{}</li>",
            esc(&exception_code(c, t["os"].as_str())),
            dump_exc["thread_id"]
                .as_u64()
                .map(|t| format!(" on thread {}", tid(t)))
                .unwrap_or_default()
        );
    }
    // deadlocks
    for d in arr(&t["deadlocks"]) {
        findings += 1;
        let threads: Vec<String> = arr(&d["threads"])
            .iter()
            .filter_map(Value::as_u64)
            .map(tid)
            .collect();
        let locks: Vec<String> = arr(&d["locks"])
            .iter()
            .map(|l| {
                format!(
                    "{} {}",
                    short_type(l["type"].as_str().unwrap_or("?")),
                    l["object"].as_str().unwrap_or("")
                )
            })
            .collect();
        let b = badge("locks", "DEADLOCK");
        let _ = write!(
            h,
            "<li class=\"v-deadlock\">{b} threads <span class=\"mono\">{}</span> each hold a lock another waits for: <span class=\"mono\">{}</span></li>",
            esc(&threads.join(", ")),
            esc(&locks.join(", "))
        );
    }
    // starvation
    if let Some(s) = t["thread_pool_starvation"].as_object() {
        findings += 1;
        let text = s
            .get("summary")
            .and_then(Value::as_str)
            .unwrap_or("the thread pool is starved");
        let text = text
            .strip_prefix("THREAD POOL STARVATION: ")
            .unwrap_or(text);
        let b = badge("threadpool", "STARVATION");
        let _ = write!(h, "<li class=\"v-starved\">{b} {}</li>", esc(text));
    }
    // waits
    let groups = arr(&t["async_groups"]);
    if !groups.is_empty() {
        findings += 1;
        let chains = t["async_chain_count"].as_u64().unwrap_or(0);
        let http = t["http_requests"].as_u64().unwrap_or(0);
        let b = badge("chains", "WAITS");
        let _ = write!(
            h,
            "<li class=\"v-wait\">{b} {} pending in {}{}:<ul>",
            plural(chains, "async chain", "async chains"),
            plural(
                t["async_group_count"]
                    .as_u64()
                    .unwrap_or(groups.len() as u64),
                "group",
                "groups"
            ),
            if http > 0 {
                format!(", {} HTTP requests among them", num(http))
            } else {
                String::new()
            }
        );
        for g in groups.iter().take(4) {
            let blocked: u64 = arr(&g["stacks"])
                .iter()
                .map(|s| arr(&s["waited_by_threads"]).len() as u64)
                .sum();
            let running: u64 = arr(&g["stacks"])
                .iter()
                .map(|s| arr(&s["running_on_threads"]).len() as u64)
                .sum();
            let methods = arr(&g["stacks"])
                .first()
                .map(|s| {
                    arr(&s["methods"])
                        .iter()
                        .filter_map(Value::as_str)
                        .map(short_method)
                        .collect::<Vec<_>>()
                        .join(" ← ")
                })
                .unwrap_or_default();
            let mut extra = String::new();
            if blocked > 0 {
                let _ = write!(
                    extra,
                    " · <b>{}</b> blocked on them",
                    plural(blocked, "thread", "threads")
                );
            }
            if running > 0 {
                let _ = write!(
                    extra,
                    " · {} running them",
                    plural(running, "thread", "threads")
                );
            }
            let _ = write!(
                h,
                "<li><b>{}×</b> <span class=\"mono\">{}</span> — {}{extra}</li>",
                num(g["count"].as_u64().unwrap_or(0)),
                esc(&elide_middle(&methods, 120)),
                esc(&elide_middle(g["explanation"].as_str().unwrap_or(""), 240))
            );
        }
        if groups.len() > 4 {
            let _ = write!(
                h,
                "<li class=\"muted\">{} more groups in Async chains below</li>",
                groups.len() - 4
            );
        }
        h.raw("</ul></li>");
    }
    if findings == 0 {
        h.raw("<li class=\"v-ok\"><span class=\"badge\">NO FINDING</span> no exception, deadlock, thread-pool starvation or pending async chain was found</li>");
    }
    // top stacks
    let tops = arr(&t["top_stacks"]);
    if !tops.is_empty() {
        let b = badge("pstacks", "STACKS");
        let _ = write!(h, "<li class=\"v-stacks\">{b} most threads are in:<ul>");
        for s in tops.iter().take(3) {
            let frames = arr(&s["frames"]);
            let inner = frames.first().and_then(Value::as_str).unwrap_or("?");
            let app = app_frame(frames).filter(|a| *a != inner);
            let _ = write!(
                h,
                "<li><b>{}</b> <span class=\"mono\">{}</span>{}</li>",
                plural(s["count"].as_u64().unwrap_or(0), "thread", "threads"),
                esc(&short_method(inner)),
                app.map(|a| format!(
                    " <span class=\"muted\">from</span> <span class=\"mono\">{}</span>",
                    esc(&short_method(a))
                ))
                .unwrap_or_default()
            );
        }
        h.raw("</ul></li>");
    }
    h.raw("</ul>");
    let problems = arr(&t["problems"]);
    if !problems.is_empty() {
        h.raw("<details class=\"problems\"><summary>");
        let _ = write!(
            h,
            "{} the triage could not read",
            plural(problems.len() as u64, "thing", "things")
        );
        h.raw("</summary><ul>");
        for p in problems {
            let _ = write!(h, "<li>{}</li>", esc(&vtext(p)));
        }
        h.raw("</ul></details>");
    }
}

/// The heap's top types: a table with a bar per type, by total size.
pub fn heap(h: &mut Html, r: &Value, id: &str) {
    let stats = arr(&r["statistics"]);
    let total = r["total_size"]
        .as_u64()
        .unwrap_or_else(|| stats.iter().filter_map(|s| s["total_size"].as_u64()).sum());
    let objects = r["total_objects"]
        .as_u64()
        .unwrap_or_else(|| stats.iter().filter_map(|s| s["count"].as_u64()).sum());
    let _ = write!(
        h,
        "<p class=\"lead\">{} in {} of {}{}{}.</p>",
        bytes(total),
        plural(objects, "object", "objects"),
        plural(stats.len() as u64, "type", "types"),
        match (r["free_objects"].as_u64(), r["free_size"].as_u64()) {
            (Some(n), Some(s)) if n > 0 => format!(
                "; free space: {} in {}",
                bytes(s),
                plural(n, "block", "blocks")
            ),
            _ => String::new(),
        },
        match r["frozen_objects"].as_u64() {
            Some(n) if n > 0 => format!(
                "; {} in frozen segments (counted)",
                plural(n, "object", "objects")
            ),
            _ => String::new(),
        }
    );
    if stats.is_empty() {
        h.raw("<p class=\"note\">No objects listed.</p>");
    } else {
        let max = stats
            .iter()
            .filter_map(|s| s["total_size"].as_u64())
            .max()
            .unwrap_or(1)
            .max(1);
        let _ = write!(
            h,
            "<div class=\"toolbar\"><input type=\"search\" class=\"filter\" data-filter=\"#{id}rows tr\" placeholder=\"filter by type\" aria-label=\"filter types\"></div><table class=\"grid heap\"><thead><tr><th class=\"num\">#</th><th class=\"num\">total size</th><th class=\"bar-col\">share of the heap</th><th class=\"num\">count</th><th>type</th></tr></thead><tbody id=\"{id}rows\">"
        );
        let row = |h: &mut Html, k: usize, s: &Value| {
            let size = s["total_size"].as_u64().unwrap_or(0);
            let name = s["name"].as_str().unwrap_or("?");
            let pct = if total > 0 {
                size as f64 * 100.0 / total as f64
            } else {
                0.0
            };
            let w = size as f64 * 100.0 / max as f64;
            let _ = write!(
                h,
                "<tr class=\"heap-row\"><td class=\"num muted\">{}</td><td class=\"num\">{}</td><td class=\"bar-col\"><div class=\"bar\"><span style=\"width:{w:.1}%\"></span></div><small>{pct:.1}%</small></td><td class=\"num\">{}</td><td class=\"mono type\">{}</td></tr>",
                k + 1,
                bytes(size),
                num(s["count"].as_u64().unwrap_or(0)),
                esc(name)
            );
        };
        for (k, s) in stats.iter().enumerate().take(SHOWN_ROWS) {
            row(h, k, s);
        }
        h.raw("</tbody></table>");
        if stats.len() > SHOWN_ROWS {
            let more = stats.len().min(HEAP_ROWS) - SHOWN_ROWS;
            let _ = write!(h, "<details class=\"more\"><summary>{} more types</summary><table class=\"grid heap\"><tbody>", num(more as u64));
            for (k, s) in stats.iter().enumerate().take(HEAP_ROWS).skip(SHOWN_ROWS) {
                row(h, k, s);
            }
            h.raw("</tbody></table></details>");
            if stats.len() > HEAP_ROWS {
                let _ = write!(h, "<p class=\"note\">{} smaller types are not listed (dumpheap -stat lists them all).</p>", num((stats.len() - HEAP_ROWS) as u64));
            }
        }
    }
    notes(h, "Heap walk", &[&r["errors"], &r["notes"]]);
}

fn notes(h: &mut Html, what: &str, lists: &[&Value]) {
    let items: Vec<String> = lists
        .iter()
        .flat_map(|l| arr(l).iter())
        .map(|v| match v {
            Value::Object(o) if o.contains_key("detail") => format!(
                "{} at {}: {}",
                o.get("kind").map(vtext).unwrap_or_default(),
                o.get("address").map(vtext).unwrap_or_default(),
                o.get("detail").map(vtext).unwrap_or_default()
            ),
            v => vtext(v),
        })
        .collect();
    if items.is_empty() {
        return;
    }
    let _ = write!(
        h,
        "<details class=\"problems\"><summary>{what}: {}</summary><ul>",
        plural(items.len() as u64, "note", "notes")
    );
    for i in items.iter().take(200) {
        let _ = write!(h, "<li>{}</li>", esc(i));
    }
    h.raw("</ul></details>");
}

/// Exceptions: the thread's exception with its trace (printexception), the triage's when that
/// is all there is, and the heap's exceptions grouped (dumpexceptions).
pub fn exceptions(
    h: &mut Html,
    pe: Result<Option<&Value>, crate::Failure<'_>>,
    triage: Option<&Value>,
    de: Result<Option<&Value>, crate::Failure<'_>>,
) {
    match pe {
        Ok(Some(p)) => {
            let exs = arr(&p["exceptions"]);
            if let Some(os) = p["thread_os_id"].as_u64() {
                let _ = write!(
                    h,
                    "<p class=\"lead\">The last exception thrown on thread {}{}:</p>",
                    thread_label(Some(os), p["thread_managed_id"].as_u64()),
                    if p["nested"] == true {
                        ", with its inner exceptions"
                    } else {
                        ""
                    }
                );
            }
            for (k, e) in exs.iter().enumerate() {
                exception_card(h, e, k > 0);
            }
        }
        Ok(None) => {
            if let Some(ce) = triage
                .map(|t| &t["current_exception"])
                .filter(|c| c.is_object())
            {
                h.raw("<div class=\"exc\">");
                let _ = write!(
                    h,
                    "<div class=\"exc-head\"><b class=\"mono\">{}</b>{}</div>",
                    esc(ce["type"].as_str().unwrap_or("?")),
                    ce["message"]
                        .as_str()
                        .map(|m| format!(": {}", esc(m)))
                        .unwrap_or_default()
                );
                let _ = write!(
                    h,
                    "<div class=\"muted small\">{} on thread {}{}</div><ol class=\"trace mono\">",
                    esc(ce["address"].as_str().unwrap_or("")),
                    ce["thread_os_id"]
                        .as_u64()
                        .map(tid)
                        .unwrap_or_else(|| "?".into()),
                    ce["inner_exception_type"]
                        .as_str()
                        .map(|i| format!(" · inner {}", esc(i)))
                        .unwrap_or_default()
                );
                for f in arr(&ce["frames"]) {
                    let _ = write!(h, "<li>{}</li>", esc(&vtext(f)));
                }
                h.raw("</ol><p class=\"note\">The triage keeps 5 frames; run <code>pe -nested</code> for the whole trace.</p></div>");
            }
        }
        Err(e) => {
            let _ = write!(
                h,
                "<p class=\"failed\"><b>printexception</b> failed: {}</p>",
                esc(e.message)
            );
        }
    }
    match de {
        Ok(Some(d)) => {
            let groups = arr(&d["groups"]);
            let _ = write!(
                h,
                "<h3>Exceptions on the heap</h3><p class=\"lead\">{} in {}.</p>",
                plural(
                    d["total"].as_u64().unwrap_or(0),
                    "exception object",
                    "exception objects"
                ),
                plural(groups.len() as u64, "group", "groups")
            );
            if !groups.is_empty() {
                h.raw("<table class=\"grid\"><thead><tr><th class=\"num\">count</th><th>type</th><th>message</th><th>objects</th></tr></thead><tbody>");
                for g in groups.iter().take(SHOWN_ROWS) {
                    let addrs: Vec<String> =
                        arr(&g["addresses"]).iter().take(4).map(vtext).collect();
                    let more = arr(&g["addresses"]).len().saturating_sub(4);
                    let _ = write!(
                        h,
                        "<tr class=\"exc-row\"><td class=\"num\">{}</td><td class=\"mono\">{}</td><td>{}</td><td class=\"mono small\">{}{}</td></tr>",
                        num(g["count"].as_u64().unwrap_or(0)),
                        esc(g["type"].as_str().unwrap_or("?")),
                        match g["message"].as_str() {
                            Some(m) => esc(&elide_middle(m, 400)),
                            None => "<span class=\"muted\">(no message)</span>".into(),
                        },
                        esc(&addrs.join(" ")),
                        if more > 0 { format!(" +{more}") } else { String::new() }
                    );
                }
                h.raw("</tbody></table>");
                if groups.len() > SHOWN_ROWS {
                    let _ = write!(
                        h,
                        "<p class=\"note\">{} more groups (dumpexceptions lists them).</p>",
                        groups.len() - SHOWN_ROWS
                    );
                }
            }
            notes(h, "dumpexceptions", &[&d["errors"]]);
        }
        Ok(None) => {}
        Err(e) => {
            let _ = write!(
                h,
                "<p class=\"failed\"><b>dumpexceptions</b> failed: {}</p>",
                esc(e.message)
            );
        }
    }
}

fn exception_card(h: &mut Html, e: &Value, inner: bool) {
    let _ = write!(
        h,
        "<div class=\"exc{}\">",
        if inner { " inner" } else { "" }
    );
    let _ = write!(
        h,
        "<div class=\"exc-head\">{}<b class=\"mono\">{}</b>{}</div>",
        if inner {
            "<span class=\"muted\">inner:</span> "
        } else {
            ""
        },
        esc(e["type"].as_str().unwrap_or("?")),
        match e["message"].as_str() {
            Some(m) => format!(": {}", esc(&elide_middle(m, 2000))),
            None => " <span class=\"muted\">(no message)</span>".into(),
        }
    );
    let _ = write!(
        h,
        "<div class=\"muted small mono\">{} · HResult {}{}</div>",
        esc(e["address"].as_str().unwrap_or("")),
        esc(&vtext(&e["hresult"])),
        e["inner_exception_type"]
            .as_str()
            .map(|i| format!(" · inner {}", esc(i)))
            .unwrap_or_default()
    );
    let trace = arr(&e["stack_trace"]);
    if trace.is_empty() {
        h.raw("<p class=\"note\">No recorded stack trace.</p>");
    } else {
        h.raw("<ol class=\"trace mono\">");
        for f in trace {
            let m = f["method"].as_str();
            let line = match m {
                Some(m) => format!(
                    "{}!{}+0x{:x}",
                    f["module"].as_str().unwrap_or("?"),
                    m,
                    f["offset"].as_u64().unwrap_or(0)
                ),
                None => format!("{} {}", vtext(&f["ip"]), f["error"].as_str().unwrap_or("")),
            };
            let app = m.map(|m| !is_framework(m)).unwrap_or(false);
            let _ = write!(
                h,
                "<li{}>{}</li>",
                if app { " class=\"app\"" } else { "" },
                esc(&line)
            );
        }
        h.raw("</ol>");
    }
    for s in ["stack_trace_string", "remote_stack_trace_string"] {
        if let Some(t) = e[s].as_str().filter(|t| !t.is_empty()) {
            let _ = write!(
                h,
                "<pre class=\"small\">{}</pre>",
                esc(&elide_middle(t, 4000))
            );
        }
    }
    notes(h, "printexception", &[&e["notes"]]);
    h.raw("</div>");
}

/// Waits with the same kind, lock, owner and waiting frame, as one row with their threads.
pub fn wait_groups(waits: &[Value]) -> Vec<(&Value, Vec<&Value>)> {
    let mut out: Vec<(&Value, Vec<&Value>)> = Vec::new();
    let mut index: std::collections::HashMap<(String, String, String, String), usize> =
        std::collections::HashMap::new();
    for w in waits {
        let key = (
            vtext(&w["kind"]),
            vtext(&w["object"]),
            vtext(&w["owner"]["os_id"]),
            vtext(&w["wait_frame"]),
        );
        match index.get(&key) {
            Some(&i) => out[i].1.push(&w["thread"]),
            None => {
                index.insert(key, out.len());
                out.push((w, vec![&w["thread"]]));
            }
        }
    }
    out
}

fn thread_of(v: &Value) -> String {
    thread_label(v["os_id"].as_u64(), v["managed_id"].as_u64())
}

/// Locks: the deadlock cycles drawn as rings, the waits, the sync blocks.
pub fn locks(
    h: &mut Html,
    dl: Result<Option<&Value>, crate::Failure<'_>>,
    sb: Result<Option<&Value>, crate::Failure<'_>>,
    id: &str,
) {
    match dl {
        Ok(Some(d)) => {
            let cycles = arr(&d["cycles"]);
            if cycles.is_empty() {
                h.raw("<p class=\"lead\">No deadlock among monitor locks.</p>");
            } else {
                let _ = write!(
                    h,
                    "<p class=\"lead bad\">{} among monitor locks:</p><div class=\"rings\">",
                    plural(cycles.len() as u64, "deadlock cycle", "deadlock cycles")
                );
                for (k, c) in cycles.iter().enumerate() {
                    ring(h, c, &format!("{id}r{k}"));
                }
                h.raw("</div>");
            }
            for w in arr(&d["waiting_on_cycles"]) {
                let through: Vec<String> = arr(&w["through"]).iter().map(thread_of).collect();
                let _ = write!(
                    h,
                    "<p>Thread {} waits behind cycle {} (through {}).</p>",
                    esc(&thread_of(&w["thread"])),
                    w["cycle"].as_u64().map(|c| c + 1).unwrap_or(0),
                    esc(&through.join(", "))
                );
            }
            let waits = wait_groups(arr(&d["waits"]));
            if !waits.is_empty() {
                h.raw("<h3>Threads waiting on monitors</h3><table class=\"grid\"><thead><tr><th>threads</th><th>wait</th><th>lock</th><th>held by</th><th>in</th></tr></thead><tbody>");
                for (w, threads) in waits.iter().take(MAX_ROWS) {
                    let kind = match w["kind"].as_str() {
                        Some("monitor-enter") => "to enter",
                        Some("monitor-wait") => "in Monitor.Wait (for a pulse)",
                        Some(k) => k,
                        None => "?",
                    };
                    let shown: Vec<String> =
                        threads.iter().take(12).map(|t| thread_of(t)).collect();
                    let who = if threads.len() > 12 {
                        format!("{} threads: {} …", threads.len(), shown.join(", "))
                    } else if threads.len() > 1 {
                        format!("{} threads: {}", threads.len(), shown.join(", "))
                    } else {
                        shown.join("")
                    };
                    let _ = write!(
                        h,
                        "<tr class=\"wait-row\" data-threads=\"{}\"><td class=\"mono\">{}</td><td>{}</td><td class=\"mono\">{} <span class=\"muted\">{}</span></td><td class=\"mono\">{}</td><td class=\"mono small\">{}</td></tr>",
                        threads.len(),
                        esc(&who),
                        esc(kind),
                        esc(w["type"].as_str().unwrap_or("?")),
                        esc(w["object"].as_str().unwrap_or("")),
                        if w["owner"].is_object() { esc(&thread_of(&w["owner"])) } else { "-".into() },
                        esc(&short_method(w["wait_frame"].as_str().unwrap_or("")))
                    );
                }
                h.raw("</tbody></table>");
                if waits.len() > MAX_ROWS {
                    let _ = write!(
                        h,
                        "<p class=\"note\">{} more kinds of wait (deadlock lists them).</p>",
                        waits.len() - MAX_ROWS
                    );
                }
            }
            notes(h, "deadlock", &[&d["notes"]]);
        }
        Ok(None) => {}
        Err(e) => {
            let _ = write!(
                h,
                "<p class=\"failed\"><b>deadlock</b> failed: {}</p>",
                esc(e.message)
            );
        }
    }
    match sb {
        Ok(Some(s)) => {
            let blocks = arr(&s["sync_blocks"]);
            let _ = write!(
                h,
                "<h3>Sync blocks</h3><p class=\"lead\">{} listed ({} active of {} in the table).</p>",
                plural(blocks.len() as u64, "sync block", "sync blocks"),
                num(s["active_sync_blocks"].as_u64().unwrap_or(0)),
                num(s["used_entries"].as_u64().unwrap_or(0))
            );
            if !blocks.is_empty() {
                h.raw("<table class=\"grid\"><thead><tr><th class=\"num\">#</th><th>object</th><th>owner</th><th class=\"num\">recursion</th><th class=\"num\">waiting to enter</th><th>in Monitor.Wait</th></tr></thead><tbody>");
                for b in blocks.iter().take(MAX_ROWS) {
                    let all_waits = arr(&b["wait_threads"]);
                    let mut waits: Vec<String> = all_waits.iter().take(12).map(thread_of).collect();
                    if all_waits.len() > 12 {
                        waits.insert(0, format!("{} threads:", all_waits.len()));
                        waits.push(format!("… {} more", all_waits.len() - 12));
                    }
                    let _ = write!(
                        h,
                        "<tr class=\"sb-row\"><td class=\"num\">{}</td><td class=\"mono\">{} <span class=\"muted\">{}</span></td><td class=\"mono\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"mono small\">{}</td></tr>",
                        vh(&b["index"]),
                        esc(b["type"].as_str().unwrap_or("?")),
                        esc(b["object"].as_str().unwrap_or("")),
                        if b["owner"].is_object() { esc(&thread_of(&b["owner"])) } else { "<span class=\"muted\">free</span>".into() },
                        vh(&b["recursion"]),
                        vh(&b["enter_waiters"]),
                        esc(&waits.join(", "))
                    );
                }
                h.raw("</tbody></table>");
            }
            let thin = arr(&s["thin_locks"]);
            if !thin.is_empty() {
                let _ = write!(h, "<h3>Thin locks</h3><table class=\"grid\"><thead><tr><th>object</th><th>owner</th><th class=\"num\">recursion</th></tr></thead><tbody>");
                for t in thin.iter().take(MAX_ROWS) {
                    let _ = write!(
                        h,
                        "<tr><td class=\"mono\">{} <span class=\"muted\">{}</span></td><td class=\"mono\">{}</td><td class=\"num\">{}</td></tr>",
                        esc(t["type"].as_str().unwrap_or("?")),
                        esc(t["object"].as_str().unwrap_or("")),
                        esc(&thread_label(t["owner"]["os_id"].as_u64(), t["thread_id"].as_u64())),
                        vh(&t["recursion"])
                    );
                }
                h.raw("</tbody></table>");
            }
            notes(h, "syncblk", &[&s["notes"]]);
        }
        Ok(None) => {}
        Err(e) => {
            let _ = write!(
                h,
                "<p class=\"failed\"><b>syncblk</b> failed: {}</p>",
                esc(e.message)
            );
        }
    }
}

/// A deadlock cycle as a ring: threads and locks alternating on a circle, each thread → the
/// lock it waits for → the thread holding it.
fn ring(h: &mut Html, c: &Value, id: &str) {
    let locks = arr(&c["locks"]);
    let n = locks.len() * 2;
    if n == 0 {
        return;
    }
    let r = 70.0 + 22.0 * locks.len() as f64;
    let (w, hh) = (2.0 * r + 300.0, 2.0 * r + 80.0);
    let (cx, cy) = (w / 2.0, hh / 2.0);
    let _ = write!(
        h,
        "<svg class=\"ring\" id=\"{id}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{w:.0}\" height=\"{hh:.0}\" viewBox=\"0 0 {w:.0} {hh:.0}\" role=\"img\" aria-label=\"deadlock cycle\">"
    );
    // positions: waiter_k at angle 2k, lock_k at 2k+1; lock_k's owner is waiter_{k+1}
    let pos = |i: usize| {
        let a = -std::f64::consts::FRAC_PI_2 + i as f64 * 2.0 * std::f64::consts::PI / n as f64;
        (cx + r * a.cos(), cy + r * a.sin())
    };
    let mut labels = Vec::new();
    for (k, l) in locks.iter().enumerate() {
        labels.push((
            format!("thread {}", thread_of(&l["waiter"])),
            l["wait_frame"]
                .as_str()
                .map(short_method)
                .unwrap_or_default(),
            false,
        ));
        labels.push((
            format!("lock {}", short_type(l["type"].as_str().unwrap_or("?"))),
            l["object"].as_str().unwrap_or("").to_owned(),
            true,
        ));
        let _ = k;
    }
    for i in 0..n {
        let (x1, y1) = pos(i);
        let (x2, y2) = pos((i + 1) % n);
        // shorten to leave the nodes' outlines
        let (dx, dy) = (x2 - x1, y2 - y1);
        let len = (dx * dx + dy * dy).sqrt().max(1.0);
        let s = 30.0 / len;
        let (ax, ay) = (x1 + dx * s, y1 + dy * s);
        let (bx, by) = (x2 - dx * s, y2 - dy * s);
        let label = if i % 2 == 0 { "waits for" } else { "held by" };
        let _ = write!(
            h,
            "<path class=\"g-edge e-deadlock\" d=\"M{ax:.1},{ay:.1} L{bx:.1},{by:.1}\" marker-end=\"url(#mk-deadlock)\"/><text class=\"edge-label e-deadlock\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{label}</text>",
            (ax + bx) / 2.0,
            (ay + by) / 2.0 - 4.0
        );
    }
    for (i, (t, s, is_lock)) in labels.iter().enumerate() {
        let (x, y) = pos(i);
        let bw = 250.0;
        let _ = write!(
            h,
            "<g class=\"g-node {} deadlock\" transform=\"translate({:.1},{:.1})\"><rect width=\"{bw}\" height=\"40\" rx=\"{}\"/><text class=\"g-t fit\" x=\"9\" y=\"16\" data-w=\"232\">{}</text><text class=\"g-s fit\" x=\"9\" y=\"31\" data-w=\"232\">{}</text></g>",
            if *is_lock { "n-lock" } else { "n-thread" },
            x - bw / 2.0,
            y - 20.0,
            if *is_lock { 2 } else { 18 },
            esc(&elide_middle(t, 30)),
            esc(&crate::html::elide_end(s, 34))
        );
    }
    h.raw("</svg>");
}

/// The thread pool: its counts, starvation, what blocks its workers, what waits in its queues.
pub fn threadpool(h: &mut Html, t: &Value) {
    let s = &t["starvation"];
    if s["starved"] == true {
        let text = s["summary"]
            .as_str()
            .unwrap_or("the thread pool is starved");
        let _ = write!(h, "<p class=\"banner bad\">{}</p>", esc(text));
    }
    let busy = t["workers_running"].as_u64().unwrap_or(0);
    let total = t["workers_total"].as_u64().unwrap_or(0);
    let max = t["max_threads"].as_u64().unwrap_or(0);
    h.raw("<div class=\"kpis\">");
    for (k, v) in [
        ("workers", format!("{} of {} busy", busy, total)),
        (
            "min / max",
            format!("{} / {}", vtext(&t["min_threads"]), num(max)),
        ),
        ("goal", vtext(&t["threads_goal"])),
        ("queued", vtext(&t["queued"])),
        ("blocked workers", vtext(&s["workers_blocked"])),
        (
            "CPU utilization",
            format!("{}%", vtext(&t["cpu_utilization"])),
        ),
    ] {
        let _ = write!(
            h,
            "<div class=\"kpi\"><div class=\"k\">{}</div><div class=\"v\">{}</div></div>",
            esc(k),
            esc(&v)
        );
    }
    h.raw("</div>");
    if total > 0 {
        let pct = busy as f64 * 100.0 / total as f64;
        let _ = write!(h, "<div class=\"bar wide\" title=\"{busy} of {total} workers busy\"><span style=\"width:{pct:.1}%\"></span></div>");
    }
    let blocked = arr(&s["blocked_on"]);
    if !blocked.is_empty() {
        h.raw("<h3>What blocks the workers</h3><table class=\"grid\"><thead><tr><th class=\"num\">workers</th><th>blocked on</th><th>threads</th></tr></thead><tbody>");
        for b in blocked {
            let ids: Vec<String> = arr(&b["os_ids"])
                .iter()
                .filter_map(Value::as_u64)
                .map(tid)
                .collect();
            let _ = write!(
                h,
                "<tr><td class=\"num\">{}</td><td>{}</td><td class=\"mono small\">{}</td></tr>",
                vh(&b["count"]),
                esc(b["text"].as_str().unwrap_or("?")),
                esc(&ids.join(", "))
            );
        }
        h.raw("</tbody></table>");
    }
    let queued = arr(&s["queued_work"]);
    if !queued.is_empty() {
        h.raw("<h3>Work waiting in the queues</h3><table class=\"grid\"><thead><tr><th class=\"num\">items</th><th>kind</th><th>runs</th></tr></thead><tbody>");
        for q in queued.iter().take(MAX_ROWS) {
            let _ = write!(
                h,
                "<tr><td class=\"num\">{}</td><td>{}</td><td class=\"mono\">{}</td></tr>",
                vh(&q["count"]),
                esc(&vtext(&q["kind"])),
                esc(q["what"].as_str().unwrap_or("?"))
            );
        }
        h.raw("</tbody></table>");
    }
    let workers = arr(&t["worker_threads"]);
    if !workers.is_empty() {
        h.raw("<h3>Pool threads</h3><table class=\"grid\"><thead><tr><th>thread</th><th>role</th><th>activity</th><th>work item</th><th>innermost frame</th></tr></thead><tbody>");
        for w in workers.iter().take(MAX_ROWS) {
            let _ = write!(
                h,
                "<tr class=\"tp-row\"><td class=\"mono\">{}</td><td>{}</td><td>{}</td><td class=\"mono small\">{}</td><td class=\"mono small\">{}</td></tr>",
                esc(&thread_of(w)),
                esc(&vtext(&w["role"])),
                esc(&vtext(&w["activity"])),
                esc(&w["work_item_method"].as_str().map(short_method).unwrap_or_else(|| "-".into())),
                esc(&w["innermost"].as_str().map(short_method).unwrap_or_else(|| "-".into()))
            );
        }
        h.raw("</tbody></table>");
        if workers.len() > MAX_ROWS {
            let _ = write!(
                h,
                "<p class=\"note\">{} more pool threads.</p>",
                workers.len() - MAX_ROWS
            );
        }
    }
    notes(h, "threadpool", &[&t["errors"], &s["notes"]]);
}

/// The managed threads (clrthreads), each linked to its box in the parallel stacks.
pub fn threads(
    h: &mut Html,
    c: &Value,
    id: &str,
    box_of: &dyn Fn(u64) -> Option<String>,
    innermost: &dyn Fn(u64) -> Option<String>,
) {
    let list = arr(&c["threads"]);
    let _ = write!(
        h,
        "<p class=\"lead\">{} ({} background, {} dead, {} unstarted).</p>",
        plural(list.len() as u64, "managed thread", "managed threads"),
        vh(&c["background"]),
        vh(&c["dead"]),
        vh(&c["unstarted"])
    );
    if list.is_empty() {
        return;
    }
    let _ = write!(
        h,
        "<div class=\"toolbar\"><input type=\"search\" class=\"filter\" data-filter=\"#{id}rows tr\" placeholder=\"filter threads\" aria-label=\"filter threads\"></div><table class=\"grid\"><thead><tr><th class=\"num\">#</th><th class=\"num\">managed</th><th>OS id</th><th>kind</th><th>state</th><th class=\"num\">locks</th><th>last exception</th><th>innermost frame</th></tr></thead><tbody id=\"{id}rows\">"
    );
    let row = |h: &mut Html, t: &Value| {
        let os = t["os_id"].as_u64();
        let frame = os.and_then(innermost).unwrap_or_default();
        let link = os.and_then(box_of);
        let tags: Vec<String> = arr(&t["tags"]).iter().map(vtext).collect();
        let states: Vec<String> = arr(&t["state_names"]).iter().map(vtext).collect();
        let _ = write!(
            h,
            "<tr class=\"thread-row{}\"><td class=\"num muted\">{}</td><td class=\"num\">{}</td><td class=\"mono\">{}</td><td>{}</td><td class=\"small\">{}</td><td class=\"num\">{}</td><td class=\"mono small\">{}</td><td class=\"mono small\">{}</td></tr>",
            if t["dead"] == true { " dead" } else { "" },
            vh(&t["index"]),
            vh(&t["managed_id"]),
            os.map(tid).unwrap_or_else(|| "-".into()),
            esc(&tags.join(", ")),
            esc(&states.join(", ")),
            match t["lock_count"].as_i64() {
                Some(n) if n >= 0 => n.to_string(),
                _ => "-".into(),
            },
            esc(t["last_exception_type"].as_str().unwrap_or("")),
            match link {
                Some(l) => format!("<a href=\"#{}\">{}</a>", esc(&l), esc(&frame)),
                None => esc(&frame),
            }
        );
    };
    for t in list.iter().take(SHOWN_ROWS * 2) {
        row(h, t);
    }
    h.raw("</tbody></table>");
    if list.len() > SHOWN_ROWS * 2 {
        let more = list.len().min(THREAD_ROWS) - SHOWN_ROWS * 2;
        let _ = write!(h, "<details class=\"more\"><summary>{} more threads</summary><table class=\"grid\"><tbody>", num(more as u64));
        for t in list.iter().take(THREAD_ROWS).skip(SHOWN_ROWS * 2) {
            row(h, t);
        }
        h.raw("</tbody></table></details>");
        if list.len() > THREAD_ROWS {
            let _ = write!(
                h,
                "<p class=\"note\">{} more threads are not listed (clrthreads lists them; the parallel stacks hold every thread).</p>",
                num((list.len() - THREAD_ROWS) as u64)
            );
        }
    }
    notes(h, "clrthreads", &[&c["notes"]]);
}
