//! The causality graph: threads, async chains, awaited objects and locks, with the edges
//! "waits on", "owns", "runs", "awaits" and "Monitor.Wait", laid out in fixed layers (threads,
//! chains, what they wait on), ordered by a few deterministic barycenter sweeps. No physics: the
//! same documents always give the same picture.

use crate::asyncs::{group_cause_label, Chain, Group};
use crate::html::{
    arr, elide_end, elide_middle, esc, fit_method, num, short_method, short_type, thread_label,
    tid, width_chars, Html, CHAR_W,
};
use crate::pstacks::is_framework;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

/// Nodes drawn per layer; the rest are counted in one "N more" node.
pub const MAX_PER_LAYER: usize = 80;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum NodeKind {
    Thread,
    Chain,
    Object,
    Lock,
    More,
}

impl NodeKind {
    fn class(self) -> &'static str {
        match self {
            NodeKind::Thread => "thread",
            NodeKind::Chain => "chain",
            NodeKind::Object => "object",
            NodeKind::Lock => "lock",
            NodeKind::More => "more",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum EdgeKind {
    WaitsOn,
    MonitorWait,
    Owns,
    Runs,
    Awaits,
}

impl EdgeKind {
    fn class(self) -> &'static str {
        match self {
            EdgeKind::WaitsOn => "waits",
            EdgeKind::MonitorWait => "mwait",
            EdgeKind::Owns => "owns",
            EdgeKind::Runs => "runs",
            EdgeKind::Awaits => "awaits",
        }
    }
    fn label(self) -> &'static str {
        match self {
            EdgeKind::WaitsOn => "waits on",
            EdgeKind::MonitorWait => "Monitor.Wait",
            EdgeKind::Owns => "owns",
            EdgeKind::Runs => "runs",
            EdgeKind::Awaits => "awaits",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Node {
    pub key: String,
    pub kind: NodeKind,
    pub title: String,
    pub sub: String,
    pub hover: String,
    /// Threads merged into this node (thread nodes), chains (chain nodes).
    pub count: u64,
    pub ids: Vec<u64>,
    pub deadlock: bool,
    /// A css kind for objects (the cause kind).
    pub flavor: String,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Edge {
    pub from: usize,
    pub to: usize,
    pub kind: EdgeKind,
    pub deadlock: bool,
}

#[derive(Debug, Default)]
pub struct Graph {
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    /// Nodes left out per kind (beyond [`MAX_PER_LAYER`]).
    pub hidden: BTreeMap<&'static str, usize>,
}

struct Builder {
    nodes: Vec<Node>,
    index: HashMap<String, usize>,
    edges: BTreeSet<(usize, usize, EdgeKind)>,
    managed: HashMap<u64, u64>,
    thread_sub: HashMap<u64, String>,
}

impl Builder {
    fn node(&mut self, key: String, make: impl FnOnce() -> Node) -> usize {
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let mut n = make();
        n.key = key.clone();
        self.nodes.push(n);
        self.index.insert(key, self.nodes.len() - 1);
        self.nodes.len() - 1
    }
    fn thread(&mut self, os: u64, managed: Option<u64>, sub: Option<&str>) -> usize {
        if let Some(m) = managed {
            self.managed.entry(os).or_insert(m);
        }
        if let Some(s) = sub {
            self.thread_sub.entry(os).or_insert_with(|| s.to_owned());
        }
        self.node(format!("t:{os}"), || Node {
            key: String::new(),
            kind: NodeKind::Thread,
            title: String::new(),
            sub: String::new(),
            hover: String::new(),
            count: 1,
            ids: vec![os],
            deadlock: false,
            flavor: String::new(),
        })
    }
    fn lock(&mut self, object: &str, ty: Option<&str>) -> usize {
        let ty = ty.unwrap_or("object").to_owned();
        let object_s = object.to_owned();
        self.node(format!("l:{object}"), || Node {
            key: String::new(),
            kind: NodeKind::Lock,
            title: format!("lock {}", short_type(&ty)),
            sub: object_s.clone(),
            hover: format!("Monitor lock on {ty} {object_s}"),
            count: 1,
            ids: Vec::new(),
            deadlock: false,
            flavor: "lock".into(),
        })
    }
}

/// Builds the graph from the joined chains and their groups, `deadlock` and `syncblk` results,
/// and `clrthreads` for managed ids.
pub fn build(
    chains: &[Chain],
    groups: &[Group],
    deadlock: Option<&Value>,
    syncblk: Option<&Value>,
    clrthreads: Option<&Value>,
) -> Graph {
    let mut b = Builder {
        nodes: Vec::new(),
        index: HashMap::new(),
        edges: BTreeSet::new(),
        managed: HashMap::new(),
        thread_sub: HashMap::new(),
    };
    if let Some(ct) = clrthreads {
        for t in arr(&ct["threads"]) {
            if let (Some(o), Some(m)) = (t["os_id"].as_u64(), t["managed_id"].as_u64()) {
                b.managed.insert(o, m);
            }
        }
    }
    let mut hidden: BTreeMap<&'static str, usize> = BTreeMap::new();
    for (gi, g) in groups.iter().enumerate() {
        if gi >= MAX_PER_LAYER {
            *hidden.entry("chain groups").or_default() += 1;
            continue;
        }
        let first = &chains[g.chains[0]];
        let methods: Vec<String> = g.methods.iter().map(|m| short_method(m)).collect();
        let c = b.node(format!("c:{gi}"), || Node {
            key: String::new(),
            kind: NodeKind::Chain,
            title: format!(
                "{} {}",
                num(g.count),
                if g.count == 1 { "chain" } else { "chains" }
            ),
            sub: methods.join(" ← "),
            hover: g.methods.join("\n← "),
            count: g.count,
            ids: Vec::new(),
            deadlock: false,
            flavor: String::new(),
        });
        if g.kind != "running_on_thread" {
            let key = match (&g.object, g.own_objects) {
                (Some(o), _) => format!("o:{o}"),
                (None, n) if n > 0 => format!("o:own:{gi}"),
                _ => format!("o:none:{gi}"),
            };
            let (flavor, title, detail) = group_cause_label(chains, g);
            let hover = first.explanation.unwrap_or("").to_owned();
            let o = b.node(key, || Node {
                key: String::new(),
                kind: NodeKind::Object,
                title,
                sub: detail,
                hover,
                count: 1,
                ids: Vec::new(),
                deadlock: false,
                flavor,
            });
            b.edges.insert((c, o, EdgeKind::Awaits));
        }
        for t in &g.blocked {
            let via = t.via.as_deref().map(short_method);
            let n = b.thread(
                t.os_id,
                t.managed_id,
                via.as_deref().map(|v| format!("blocked in {v}")).as_deref(),
            );
            b.edges.insert((n, c, EdgeKind::WaitsOn));
        }
        for &(os, m) in &g.running {
            let n = b.thread(os, m, Some("running the innermost method"));
            b.edges.insert((n, c, EdgeKind::Runs));
        }
    }
    // Threads blocked on a chain also sit in Monitor.Wait inside the framework's wait
    // (ManualResetEventSlim's lock): that wait is the mechanism, not another cause, so it is
    // not drawn for them (the Locks section lists every wait).
    let on_chain: BTreeSet<u64> = groups
        .iter()
        .take(MAX_PER_LAYER)
        .flat_map(|g| g.blocked.iter().map(|b| b.os_id))
        .collect();
    let mut app_waits: BTreeSet<u64> = BTreeSet::new();
    if let Some(d) = deadlock {
        for w in arr(&d["waits"]) {
            if w["kind"] == "monitor-wait" && !w["wait_frame"].as_str().is_some_and(is_framework) {
                if let Some(o) = w["thread"]["os_id"].as_u64() {
                    app_waits.insert(o);
                }
            }
        }
    }
    let mechanism = |os: u64| on_chain.contains(&os) && !app_waits.contains(&os);
    // locks
    let mut dl_threads: BTreeSet<u64> = BTreeSet::new();
    let mut dl_locks: BTreeSet<String> = BTreeSet::new();
    if let Some(d) = deadlock {
        for cy in arr(&d["cycles"]) {
            for t in arr(&cy["threads"]) {
                if let Some(o) = t["os_id"].as_u64() {
                    dl_threads.insert(o);
                }
            }
            for l in arr(&cy["locks"]) {
                if let Some(o) = l["object"].as_str() {
                    dl_locks.insert(o.to_owned());
                }
            }
        }
        for w in arr(&d["waits"]) {
            let (Some(os), Some(obj)) = (w["thread"]["os_id"].as_u64(), w["object"].as_str())
            else {
                continue;
            };
            if w["kind"] == "monitor-wait" && mechanism(os) {
                continue;
            }
            let frame = w["wait_frame"]
                .as_str()
                .map(|f| format!("in {}", short_method(f)));
            let t = b.thread(os, w["thread"]["managed_id"].as_u64(), frame.as_deref());
            let l = b.lock(obj, w["type"].as_str());
            let kind = if w["kind"] == "monitor-wait" {
                EdgeKind::MonitorWait
            } else {
                EdgeKind::WaitsOn
            };
            b.edges.insert((t, l, kind));
            if let Some(o) = w["owner"]["os_id"].as_u64() {
                let ot = b.thread(o, w["owner"]["managed_id"].as_u64(), None);
                b.edges.insert((ot, l, EdgeKind::Owns));
            }
        }
    }
    if let Some(s) = syncblk {
        for sb in arr(&s["sync_blocks"]) {
            let Some(obj) = sb["object"].as_str() else {
                continue;
            };
            let owner = sb["owner"]["os_id"].as_u64();
            let waiters: Vec<&Value> = arr(&sb["wait_threads"])
                .iter()
                .filter(|w| w["os_id"].as_u64().is_some_and(|os| !mechanism(os)))
                .collect();
            let enter = sb["enter_waiters"].as_u64().unwrap_or(0);
            if owner.is_none() && waiters.is_empty() && enter == 0 {
                continue;
            }
            let l = b.lock(obj, sb["type"].as_str());
            if enter > 0 && !b.nodes[l].sub.contains("entering") {
                let s = format!("{} · {} waiting to enter", b.nodes[l].sub, enter);
                b.nodes[l].sub = s;
            }
            if let Some(o) = owner {
                let t = b.thread(o, sb["owner"]["managed_id"].as_u64(), None);
                b.edges.insert((t, l, EdgeKind::Owns));
            }
            for w in waiters {
                if let Some(os) = w["os_id"].as_u64() {
                    let t = b.thread(os, w["managed_id"].as_u64(), None);
                    b.edges.insert((t, l, EdgeKind::MonitorWait));
                }
            }
        }
    }
    // thread titles
    for n in b.nodes.iter_mut() {
        if n.kind == NodeKind::Thread {
            let os = n.ids[0];
            n.title = format!(
                "thread {}",
                thread_label(Some(os), b.managed.get(&os).copied())
            );
            n.sub = b.thread_sub.get(&os).cloned().unwrap_or_default();
            n.deadlock = dl_threads.contains(&os);
            n.hover = n.title.clone();
        }
        if n.kind == NodeKind::Lock {
            n.deadlock = dl_locks.contains(n.key.trim_start_matches("l:"));
        }
    }
    // merge threads with the same edges (none owning a lock, none in a deadlock)
    let mut out_edges: HashMap<usize, Vec<(usize, EdgeKind)>> = HashMap::new();
    for &(f, t, k) in &b.edges {
        out_edges.entry(f).or_default().push((t, k));
    }
    let mut merged_into: HashMap<usize, usize> = HashMap::new();
    let mut sig_first: BTreeMap<Vec<(usize, EdgeKind)>, usize> = BTreeMap::new();
    for i in 0..b.nodes.len() {
        if b.nodes[i].kind != NodeKind::Thread || b.nodes[i].deadlock {
            continue;
        }
        let mut sig = out_edges.get(&i).cloned().unwrap_or_default();
        if sig.iter().any(|(_, k)| *k == EdgeKind::Owns) || sig.is_empty() {
            continue;
        }
        sig.sort();
        match sig_first.get(&sig) {
            Some(&f) => {
                merged_into.insert(i, f);
            }
            None => {
                sig_first.insert(sig, i);
            }
        }
    }
    for (&i, &f) in &merged_into {
        let id = b.nodes[i].ids[0];
        b.nodes[f].ids.push(id);
    }
    // keep order, drop merged, remap
    let mut remap = vec![usize::MAX; b.nodes.len()];
    let mut nodes = Vec::new();
    let mut per_kind: HashMap<&'static str, usize> = HashMap::new();
    for (i, n) in b.nodes.iter().enumerate() {
        if merged_into.contains_key(&i) {
            continue;
        }
        let k = n.kind.class();
        let c = per_kind.entry(k).or_default();
        *c += 1;
        if *c > MAX_PER_LAYER {
            *hidden
                .entry(match n.kind {
                    NodeKind::Thread => "threads",
                    NodeKind::Lock => "locks",
                    NodeKind::Object => "awaited objects",
                    _ => "chain groups",
                })
                .or_default() += 1;
            continue;
        }
        remap[i] = nodes.len();
        nodes.push(n.clone());
    }
    for (&i, &f) in &merged_into {
        remap[i] = remap[f];
    }
    for n in nodes.iter_mut() {
        if n.kind == NodeKind::Thread && n.ids.len() > 1 {
            n.ids.sort();
            n.count = n.ids.len() as u64;
            let ids: Vec<String> = n.ids.iter().map(|&t| tid(t)).collect();
            n.title = format!("{} threads", n.ids.len());
            let sub = std::mem::take(&mut n.sub);
            n.hover = format!("threads {}", ids.join(", "));
            n.sub = if sub.is_empty() {
                ids.join(", ")
            } else {
                format!("{sub} · {}", ids.join(", "))
            };
        }
    }
    let mut edges: BTreeSet<Edge> = BTreeSet::new();
    for &(f, t, k) in &b.edges {
        let (f2, t2) = (remap[f], remap[t]);
        if f2 == usize::MAX || t2 == usize::MAX {
            continue;
        }
        let deadlock = nodes[f2].deadlock
            && nodes[t2].deadlock
            && matches!(k, EdgeKind::WaitsOn | EdgeKind::Owns);
        edges.insert(Edge {
            from: f2,
            to: t2,
            kind: k,
            deadlock,
        });
    }
    Graph {
        nodes,
        edges: edges.into_iter().collect(),
        hidden,
    }
}

const NODE_H: f64 = 40.0;
const VGAP: f64 = 14.0;
const HGAP: f64 = 150.0;
const PAD: f64 = 9.0;
const MAX_CHARS: usize = 56;

/// Draws the graph as an SVG. `id` prefixes element ids.
pub fn render(h: &mut Html, g: &Graph, id: &str) {
    if g.nodes.is_empty() {
        h.raw("<p class=\"note\">Nothing waits on anything the commands could link: no thread blocked on a chain, no pending chain, no held or awaited lock.</p>");
        return;
    }
    // layers: threads; what threads block on (chains, locks); what chains await
    let kind_layer = |k: NodeKind| match k {
        NodeKind::Thread => 0,
        NodeKind::Chain | NodeKind::Lock => 1,
        NodeKind::Object | NodeKind::More => 2,
    };
    let mut used = [false; 3];
    for n in &g.nodes {
        used[kind_layer(n.kind)] = true;
    }
    let mut map = [0usize; 3];
    let mut nl = 0;
    for l in 0..3 {
        map[l] = nl;
        if used[l] {
            nl += 1;
        }
    }
    let layer = |k: NodeKind| map[kind_layer(k)];
    let has_chains = g.nodes.iter().any(|n| n.kind == NodeKind::Chain);
    let has_locks = g.nodes.iter().any(|n| n.kind == NodeKind::Lock);
    let mut cols: Vec<Vec<usize>> = vec![Vec::new(); nl];
    for (i, n) in g.nodes.iter().enumerate() {
        cols[layer(n.kind)].push(i);
    }
    // neighbours
    let mut nb: Vec<Vec<usize>> = vec![Vec::new(); g.nodes.len()];
    for e in &g.edges {
        nb[e.from].push(e.to);
        nb[e.to].push(e.from);
    }
    let mut pos = vec![0.0f64; g.nodes.len()];
    let set_pos = |cols: &Vec<Vec<usize>>, pos: &mut Vec<f64>| {
        for c in cols {
            for (j, &i) in c.iter().enumerate() {
                pos[i] = j as f64;
            }
        }
    };
    set_pos(&cols, &mut pos);
    let node_layer: Vec<usize> = g.nodes.iter().map(|n| layer(n.kind)).collect();
    for _ in 0..4 {
        // down: each layer by its neighbours in earlier layers
        for l in 1..nl {
            let keyed: Vec<(f64, f64, usize)> = cols[l]
                .iter()
                .map(|&i| {
                    let ps: Vec<f64> = nb[i]
                        .iter()
                        .filter(|&&o| node_layer[o] < l)
                        .map(|&o| pos[o])
                        .collect();
                    let bc = if ps.is_empty() {
                        pos[i]
                    } else {
                        ps.iter().sum::<f64>() / ps.len() as f64
                    };
                    (bc, pos[i], i)
                })
                .collect();
            cols[l] = sort_keyed(keyed);
            set_pos(&cols, &mut pos);
        }
        // up: the first layers by their neighbours in later layers
        for l in (0..nl - 1).rev() {
            let keyed: Vec<(f64, f64, usize)> = cols[l]
                .iter()
                .map(|&i| {
                    let ps: Vec<f64> = nb[i]
                        .iter()
                        .filter(|&&o| node_layer[o] > l)
                        .map(|&o| pos[o])
                        .collect();
                    let bc = if ps.is_empty() {
                        pos[i]
                    } else {
                        ps.iter().sum::<f64>() / ps.len() as f64
                    };
                    (bc, pos[i], i)
                })
                .collect();
            cols[l] = sort_keyed(keyed);
            set_pos(&cols, &mut pos);
        }
    }
    // sizes
    let label = |n: &Node| -> (String, String) {
        let t = elide_middle(&n.title, MAX_CHARS);
        let s = if n.kind == NodeKind::Chain {
            chain_sub(&n.sub)
        } else {
            elide_end(&n.sub, MAX_CHARS + 6)
        };
        (t, s)
    };
    let labels: Vec<(String, String)> = g.nodes.iter().map(label).collect();
    let col_w: Vec<f64> = cols
        .iter()
        .map(|c| {
            c.iter()
                .map(|&i| width_chars(&labels[i].0).max(width_chars(&labels[i].1) * 9 / 10 + 1))
                .max()
                .map(|ch| (ch as f64 * CHAR_W + 2.0 * PAD).max(160.0).ceil())
                .unwrap_or(160.0)
        })
        .collect();
    let margin = 16.0;
    let mut col_x = Vec::new();
    let mut x = margin;
    for w in &col_w {
        col_x.push(x);
        x += w + HGAP;
    }
    let total_w = x - HGAP + margin;
    // y: the fullest layer stacked from the top; every other layer, outwards from it, puts
    // each node at the mean height of its neighbours already placed, keeping the order and a
    // gap (deterministic: no iteration to convergence)
    let top = margin + 22.0; // layer titles
    let mut xy = vec![(0.0, f64::NAN, 0.0); g.nodes.len()]; // x, y, w
    let reference = (0..nl)
        .max_by_key(|&l| (cols[l].len(), std::cmp::Reverse(l)))
        .unwrap_or(0);
    let mut order_l: Vec<usize> = (0..nl).collect();
    order_l.sort_by_key(|&l| ((l as i64 - reference as i64).abs(), l));
    for &l in &order_l {
        let mut next_top = top;
        for &i in &cols[l] {
            let ps: Vec<f64> = nb[i]
                .iter()
                .filter(|&&o| !xy[o].1.is_nan())
                .map(|&o| xy[o].1 + NODE_H / 2.0)
                .collect();
            let want = if l == reference || ps.is_empty() {
                next_top
            } else {
                ps.iter().sum::<f64>() / ps.len() as f64 - NODE_H / 2.0
            };
            let y = want.max(next_top);
            xy[i] = (col_x[l], y, col_w[l]);
            next_top = y + NODE_H + VGAP;
        }
    }
    let max_h = xy.iter().map(|p| p.1 + NODE_H).fold(top, f64::max) - top;
    let more_h = if g.hidden.is_empty() { 0.0 } else { 24.0 };
    let total_h = top + max_h + margin + more_h;
    let _ = write!(
        h,
        "<div class=\"scroll\"><svg class=\"graph\" id=\"{id}svg\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{total_w:.0}\" height=\"{total_h:.0}\" viewBox=\"0 0 {total_w:.0} {total_h:.0}\" role=\"img\" aria-label=\"causality graph\">"
    );
    let mid = match (has_chains, has_locks) {
        (true, true) => "Async chains and locks",
        (true, false) => "Async chains",
        _ => "Locks",
    };
    let titles: Vec<&str> = [
        ("Threads", used[0]),
        (mid, used[1]),
        ("Awaited objects", used[2]),
    ]
    .iter()
    .filter(|(_, u)| *u)
    .map(|(t, _)| *t)
    .collect();
    for (l, t) in titles.iter().enumerate() {
        if cols[l].is_empty() {
            continue;
        }
        let _ = write!(
            h,
            "<text class=\"layer-title\" x=\"{:.0}\" y=\"{:.0}\">{t}</text>",
            col_x[l],
            margin + 8.0
        );
    }
    // ports: outgoing sorted by target y, incoming by source y
    let mut out_e: Vec<Vec<usize>> = vec![Vec::new(); g.nodes.len()];
    let mut in_e: Vec<Vec<usize>> = vec![Vec::new(); g.nodes.len()];
    for (k, e) in g.edges.iter().enumerate() {
        out_e[e.from].push(k);
        in_e[e.to].push(k);
    }
    let mut sy = vec![0.0; g.edges.len()];
    let mut ty = vec![0.0; g.edges.len()];
    for i in 0..g.nodes.len() {
        let mut o = out_e[i].clone();
        o.sort_by(|&a, &b| {
            xy[g.edges[a].to]
                .1
                .partial_cmp(&xy[g.edges[b].to].1)
                .unwrap()
                .then(a.cmp(&b))
        });
        for (j, &k) in o.iter().enumerate() {
            sy[k] = xy[i].1 + NODE_H * (j as f64 + 1.0) / (o.len() as f64 + 1.0);
        }
        let mut n = in_e[i].clone();
        n.sort_by(|&a, &b| {
            xy[g.edges[a].from]
                .1
                .partial_cmp(&xy[g.edges[b].from].1)
                .unwrap()
                .then(a.cmp(&b))
        });
        for (j, &k) in n.iter().enumerate() {
            ty[k] = xy[i].1 + NODE_H * (j as f64 + 1.0) / (n.len() as f64 + 1.0);
        }
    }
    let mut label_svg = String::new();
    for (k, e) in g.edges.iter().enumerate() {
        let (fx, _, fw) = xy[e.from];
        let (tx, _, _) = xy[e.to];
        let x1 = fx + fw;
        let y1 = sy[k];
        let x2 = tx - 2.0;
        let y2 = ty[k];
        let dx = (x2 - x1) / 2.0;
        let cls = if e.deadlock {
            "deadlock"
        } else {
            e.kind.class()
        };
        let _ = write!(
            h,
            "<path class=\"g-edge e-{cls}\" data-from=\"{}\" data-to=\"{}\" d=\"M{x1:.1},{y1:.1} C{:.1},{y1:.1} {:.1},{y2:.1} {x2:.1},{y2:.1}\" marker-end=\"url(#mk-{cls})\"><title>{}</title></path>",
            e.from,
            e.to,
            x1 + dx,
            x2 - dx,
            esc(&format!("{} {} {}", g.nodes[e.from].title, e.kind.label(), g.nodes[e.to].title))
        );
        // label at the middle of the curve (in the gap between layers)
        if g.edges.len() > 60 {
            continue;
        }
        let t: f64 = 0.5;
        let bx = bez(x1, x1 + dx, x2 - dx, x2, t);
        let by = bez(y1, y1, y2, y2, t);
        let _ = write!(
            label_svg,
            "<text class=\"edge-label e-{cls}\" data-from=\"{}\" data-to=\"{}\" x=\"{bx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            e.from,
            e.to,
            by - 3.0,
            e.kind.label()
        );
    }
    for (i, n) in g.nodes.iter().enumerate() {
        let (x, y, w) = xy[i];
        let mut cls = format!("g-node n-{}", n.kind.class());
        if !n.flavor.is_empty() && n.kind == NodeKind::Object {
            let _ = write!(cls, " cz-{}", crate::html::slug(&n.flavor));
        }
        if n.deadlock {
            cls.push_str(" deadlock");
        }
        let (t, s) = &labels[i];
        let _ = write!(
            h,
            "<g class=\"{cls}\" data-n=\"{i}\" data-count=\"{}\" tabindex=\"0\" transform=\"translate({x:.1},{y:.1})\"><title>{}</title><rect width=\"{w:.0}\" height=\"{NODE_H}\" rx=\"{}\"/><text class=\"g-t fit\" x=\"{PAD}\" y=\"16\" data-w=\"{:.0}\">{}</text><text class=\"g-s fit\" x=\"{PAD}\" y=\"31\" data-w=\"{:.0}\">{}</text></g>",
            n.count,
            esc(&n.hover),
            match n.kind {
                NodeKind::Thread => 18,
                NodeKind::Lock => 2,
                _ => 6,
            },
            w - 2.0 * PAD,
            esc(t),
            w - 2.0 * PAD,
            esc(s)
        );
    }
    h.raw(&label_svg);
    if !g.hidden.is_empty() {
        let what: Vec<String> = g.hidden.iter().map(|(k, n)| format!("{n} {k}")).collect();
        let _ = write!(
            h,
            "<text class=\"g-more\" x=\"{margin}\" y=\"{:.0}\">Not drawn (over {MAX_PER_LAYER} per layer): {}</text>",
            total_h - 10.0,
            esc(&what.join(", "))
        );
    }
    h.raw("</svg></div>");
}

fn bez(a: f64, b: f64, c: f64, d: f64, t: f64) -> f64 {
    let u = 1.0 - t;
    u * u * u * a + 3.0 * u * u * t * b + 3.0 * u * t * t * c + t * t * t * d
}

/// Sorts (barycenter, previous position, node) and returns the nodes.
fn sort_keyed(mut v: Vec<(f64, f64, usize)>) -> Vec<usize> {
    v.sort_by(|a, b| {
        a.0.partial_cmp(&b.0)
            .unwrap()
            .then(a.1.partial_cmp(&b.1).unwrap())
            .then(a.2.cmp(&b.2))
    });
    v.into_iter().map(|x| x.2).collect()
}

/// A chain node's second line: innermost ← … ← outermost, the innermost kept whole when it
/// fits, the outermost given the rest.
fn chain_sub(s: &str) -> String {
    let parts: Vec<&str> = s.split(" ← ").collect();
    let max = MAX_CHARS + 6;
    if width_chars(s) <= max {
        return s.to_owned();
    }
    if parts.len() >= 2 {
        let mid = if parts.len() > 2 {
            " ← … ← "
        } else {
            " ← "
        };
        let room = max - width_chars(mid);
        let outer = parts[parts.len() - 1];
        let a_room = room
            .saturating_sub(width_chars(outer).min(room / 2))
            .max(room / 2);
        let a = fit_method(parts[0], a_room);
        let b = fit_method(outer, room - width_chars(&a));
        return elide_middle(&format!("{a}{mid}{b}"), max);
    }
    elide_middle(s, max)
}
