//! Async chains: each coalesced group of logical stacks as a column of boxes, what it awaits on
//! top, the innermost method below it, the outermost at the bottom, and the threads blocked on
//! the chain (or running it) linked to it.

use crate::asyncs::{group_cause_label, Chain, Group};
use crate::html::{
    elide_middle, esc, fit_method, num, short_method, thread_label, width_chars, Html, CHAR_W,
};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Groups drawn at once; more are in a "N more" expander, and beyond [`MAX_ALL`] only counted.
pub const MAX_SHOWN: usize = 48;
pub const MAX_ALL: usize = 400;
/// Threads drawn under one chain.
const MAX_THREADS: usize = 6;
/// Methods drawn in one column (innermost and outermost kept).
const MAX_METHODS: usize = 14;

const PAD: f64 = 10.0;
const HEAD_H: f64 = 22.0;
const CAUSE_H: f64 = 42.0;
const BOX_H: f64 = 36.0;
const GAP: f64 = 24.0;
const PILL_H: f64 = 34.0;
const LEFT: f64 = 26.0; // room for a cycle's arc
const MAX_CHARS: usize = 50;
/// The advance of a 10.5 px monospace character, with a margin.
const SMALL_W: f64 = 6.5;

fn status_line(chains: &[Chain], g: &Group, depth: usize) -> String {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut one_addr = None;
    for &i in &g.chains {
        let c = &chains[i];
        if let Some(b) = c.boxes.get(depth) {
            let st = b["state_name"].as_str().unwrap_or("?");
            let ts = b["task_status"].as_str().unwrap_or("?");
            *counts
                .entry(format!("{st} · {}", ts.replace('_', " ")))
                .or_default() += c.count;
            one_addr = b["address"].as_str();
        } else if let Some(a) = c.box_addrs.get(depth) {
            one_addr = Some(a.as_str());
        }
    }
    let mut s: String = counts
        .iter()
        .map(|(k, n)| {
            if counts.len() > 1 || g.count > 1 {
                format!("{k} ({n})")
            } else {
                k.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(", ");
    if g.count == 1 {
        if let Some(a) = one_addr {
            if !s.is_empty() {
                s.push_str(" · ");
            }
            s.push_str(a);
        }
    }
    s
}

/// One group as an SVG column. `id` is unique on the page.
fn column(h: &mut Html, chains: &[Chain], g: &Group, id: &str, gi: usize) {
    let first = &chains[g.chains[0]];
    let (kind, title, detail) = group_cause_label(chains, g);
    // methods, innermost first, capped
    let n = g.methods.len();
    let mut rows: Vec<Option<usize>> = (0..n).map(Some).collect();
    if n > MAX_METHODS {
        let keep_in = MAX_METHODS - 4;
        rows = (0..keep_in).map(Some).collect();
        rows.push(None);
        rows.extend((n - 3..n).map(Some));
    }
    let texts: Vec<String> = rows
        .iter()
        .map(|r| match r {
            Some(d) => fit_method(&g.methods[*d], MAX_CHARS),
            None => format!("⋯ {} more methods", n - (MAX_METHODS - 1)),
        })
        .collect();
    let status: Vec<String> = rows
        .iter()
        .map(|r| match r {
            Some(d) => elide_middle(&status_line(chains, g, *d), MAX_CHARS + 6),
            None => String::new(),
        })
        .collect();
    let pills: Vec<(String, String, bool)> = g
        .blocked
        .iter()
        .map(|b| {
            (
                format!("thread {}", thread_label(Some(b.os_id), b.managed_id)),
                b.via
                    .as_deref()
                    .map(|v| format!("blocked in {}", fit_method(v, MAX_CHARS - 11)))
                    .unwrap_or_else(|| "blocked on the chain's task".into()),
                false,
            )
        })
        .chain(g.running.iter().map(|&(os, m)| {
            (
                format!("thread {}", thread_label(Some(os), m)),
                "runs the innermost method".into(),
                true,
            )
        }))
        .collect();
    let shown_pills = pills.len().min(MAX_THREADS);
    let chars = texts
        .iter()
        .chain(status.iter())
        .map(|t| width_chars(t))
        .chain([width_chars(&title) + 2, width_chars(&detail) * 9 / 10 + 1])
        .chain(pills.iter().map(|p| width_chars(&p.1) * 9 / 10 + 1))
        .max()
        .unwrap_or(20)
        .min(MAX_CHARS + 6);
    // thread pills are 24 px narrower than the boxes, their second line in the small font
    let pill_need = pills
        .iter()
        .map(|p| width_chars(&p.1) as f64 * SMALL_W + 24.0 + 2.0 * PAD)
        .fold(0.0, f64::max)
        .min((MAX_CHARS + 6) as f64 * CHAR_W + 2.0 * PAD);
    let w = (chars as f64 * CHAR_W + 2.0 * PAD)
        .max(pill_need)
        .max(230.0)
        .ceil();
    let pill_small = ((w - 24.0 - 2.0 * PAD) / SMALL_W) as usize;
    // what fits in the box: 12 px labels and 10.5 px detail lines
    let big = ((w - 2.0 * PAD) / CHAR_W) as usize;
    let small = ((w - 2.0 * PAD) / SMALL_W) as usize;
    let cycle = first
        .cycle_back_to
        .as_ref()
        .and_then(|a| first.box_addrs.iter().position(|x| x == a));
    let total_w = LEFT + w + 12.0;
    let mut y = 0.0;
    let head_y = y;
    y += HEAD_H;
    let cause_y = y;
    y += CAUSE_H + GAP;
    let mut box_y = Vec::new();
    for _ in &rows {
        box_y.push(y);
        y += BOX_H + GAP;
    }
    let pills_y = y + 4.0;
    if shown_pills > 0 {
        y += 4.0 + shown_pills as f64 * (PILL_H + 8.0);
        if pills.len() > shown_pills {
            y += 18.0;
        }
    } else {
        y -= GAP;
    }
    let total_h = y + 6.0;
    let chain_word = if g.count == 1 { "chain" } else { "chains" };
    let _ = write!(
        h,
        "<figure class=\"chain-col\" id=\"{id}g{gi}\" data-count=\"{}\" data-entries=\"{}\" data-boxes=\"{}\" data-threads=\"{}\" data-search=\"{}\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{total_w:.0}\" height=\"{total_h:.0}\" viewBox=\"0 0 {total_w:.0} {total_h:.0}\" role=\"img\" aria-label=\"async chain\">",
        g.count,
        g.chains.len(),
        rows.iter().filter(|r| r.is_some()).count(),
        pills.len(),
        esc(&g.methods.join("\n").to_lowercase())
    );
    // header
    let blocked_n = g.blocked.len();
    let head = if blocked_n > 0 {
        format!(
            "{} {chain_word} · {} {} blocked on it",
            num(g.count),
            blocked_n,
            if blocked_n == 1 { "thread" } else { "threads" }
        )
    } else {
        format!("{} {chain_word}", num(g.count))
    };
    let _ = write!(
        h,
        "<text class=\"ch-head fit{}\" x=\"{LEFT}\" y=\"{:.0}\" data-w=\"{w:.0}\">{}</text>",
        if g.count > 1 { " many" } else { "" },
        head_y + 15.0,
        esc(&head)
    );
    // cause box
    let expl = first.explanation.unwrap_or("");
    let _ = write!(
        h,
        "<g class=\"ch-cause cz-{}\" transform=\"translate({LEFT},{cause_y:.0})\"><title>{}</title><rect width=\"{w:.0}\" height=\"{CAUSE_H}\" rx=\"6\"/><text class=\"ch-ctitle fit\" x=\"{PAD}\" y=\"17\" data-w=\"{:.0}\">{}</text><text class=\"ch-cdetail fit\" x=\"{PAD}\" y=\"33\" data-w=\"{:.0}\">{}</text></g>",
        crate::html::slug(&kind),
        esc(expl),
        w - 2.0 * PAD,
        esc(&elide_middle(&title, big)),
        w - 2.0 * PAD,
        esc(&elide_middle(&detail, small))
    );
    // edges: innermost box -> cause ("awaits"); each outer box -> the box above it
    let cx = LEFT + w / 2.0;
    for (j, _) in rows.iter().enumerate() {
        let from_y = box_y[j];
        let to_y = if j == 0 {
            cause_y + CAUSE_H
        } else {
            box_y[j - 1] + BOX_H
        };
        let _ = write!(
            h,
            "<path class=\"ch-edge\" d=\"M{cx:.1},{from_y:.1} L{cx:.1},{:.1}\" marker-end=\"url(#mk-ch)\"/>",
            to_y + 2.0
        );
        if j == 0 {
            let _ = write!(
                h,
                "<text class=\"edge-label\" x=\"{:.1}\" y=\"{:.1}\">awaits</text>",
                cx + 6.0,
                (from_y + to_y) / 2.0 + 4.0
            );
        }
    }
    // method boxes
    for (j, r) in rows.iter().enumerate() {
        let by = box_y[j];
        match r {
            Some(d) => {
                let full = &g.methods[*d];
                let app = !crate::pstacks::is_framework(full);
                let _ = write!(
                    h,
                    "<g class=\"ch-box{}\" transform=\"translate({LEFT},{by:.0})\"><title>{}</title><rect width=\"{w:.0}\" height=\"{BOX_H}\" rx=\"3\"/><text class=\"ch-m fit\" x=\"{PAD}\" y=\"15\" data-w=\"{:.0}\">{}</text><text class=\"ch-s fit\" x=\"{PAD}\" y=\"29\" data-w=\"{:.0}\">{}</text></g>",
                    if app { " app" } else { "" },
                    esc(full),
                    w - 2.0 * PAD,
                    esc(&texts[j]),
                    w - 2.0 * PAD,
                    esc(&status[j])
                );
            }
            None => {
                let hidden: Vec<&str> = g.methods[MAX_METHODS - 4..n - 3]
                    .iter()
                    .map(String::as_str)
                    .collect();
                let _ = write!(
                    h,
                    "<g class=\"ch-box elided\" transform=\"translate({LEFT},{by:.0})\"><title>{}</title><rect width=\"{w:.0}\" height=\"{BOX_H}\" rx=\"3\"/><text class=\"ch-m fit\" x=\"{PAD}\" y=\"22\" data-w=\"{:.0}\">{}</text></g>",
                    esc(&hidden.join("\n")),
                    w - 2.0 * PAD,
                    esc(&texts[j])
                );
            }
        }
    }
    // a ring: the outermost box continues back into box `c`
    if let Some(c) = cycle {
        if let Some(rc) = rows.iter().position(|r| *r == Some(c)) {
            let last = rows.len() - 1;
            let y1 = box_y[last] + BOX_H / 2.0;
            let y2 = box_y[rc] + BOX_H / 2.0;
            let _ = write!(
                h,
                "<path class=\"ch-edge cycle\" d=\"M{LEFT},{y1:.1} C{:.1},{y1:.1} {:.1},{y2:.1} {:.1},{y2:.1}\" marker-end=\"url(#mk-ch)\"/><text class=\"edge-label cycle\" x=\"2\" y=\"{:.1}\">cycle</text>",
                LEFT - 22.0,
                LEFT - 22.0,
                LEFT - 1.0,
                (y1 + y2) / 2.0 + 4.0
            );
        }
    }
    // threads: blocked ones point at the outermost box, runners at the innermost
    let last_y = box_y.last().map(|y| y + BOX_H).unwrap_or(cause_y + CAUSE_H);
    let trunk_x = LEFT + 12.0;
    let last_blocked = pills
        .iter()
        .take(shown_pills)
        .enumerate()
        .filter(|(_, p)| !p.2)
        .map(|(k, _)| k)
        .next_back();
    if let Some(k) = last_blocked {
        let yb = pills_y + k as f64 * (PILL_H + 8.0) + PILL_H / 2.0;
        let _ = write!(
            h,
            "<path class=\"ch-edge blocked\" d=\"M{trunk_x:.1},{yb:.1} L{trunk_x:.1},{:.1}\" marker-end=\"url(#mk-ch-blocked)\"/>",
            last_y + 2.0
        );
    }
    for (k, (l1, l2, runs)) in pills.iter().take(shown_pills).enumerate() {
        let py = pills_y + k as f64 * (PILL_H + 8.0);
        let pw = w - 24.0;
        let px = LEFT + 24.0;
        if *runs {
            let ty = box_y.first().map(|y| y + BOX_H / 2.0).unwrap_or(cause_y);
            let _ = write!(
                h,
                "<path class=\"ch-edge runs\" d=\"M{:.1},{:.1} C{:.1},{:.1} {:.1},{ty:.1} {:.1},{ty:.1}\" marker-end=\"url(#mk-ch)\"/>",
                px + pw,
                py + PILL_H / 2.0,
                LEFT + w + 10.0,
                py + PILL_H / 2.0,
                LEFT + w + 10.0,
                LEFT + w + 1.0
            );
        } else {
            // a branch from the trunk (drawn below) to the pill
            let _ = write!(
                h,
                "<path class=\"ch-edge blocked\" d=\"M{trunk_x:.1},{:.1} L{px:.1},{:.1}\"/>",
                py + PILL_H / 2.0,
                py + PILL_H / 2.0
            );
        }
        let _ = write!(
            h,
            "<g class=\"ch-thread{}\" transform=\"translate({px:.0},{py:.0})\"><rect width=\"{pw:.0}\" height=\"{PILL_H}\" rx=\"10\"/><text class=\"ch-t fit\" x=\"{PAD}\" y=\"14\" data-w=\"{:.0}\">{}</text><text class=\"ch-s fit\" x=\"{PAD}\" y=\"28\" data-w=\"{:.0}\">{}</text></g>",
            if *runs { " runs" } else { "" },
            pw - 2.0 * PAD,
            esc(&elide_middle(l1, ((w - 24.0 - 2.0 * PAD) / CHAR_W) as usize)),
            pw - 2.0 * PAD,
            esc(&elide_middle(l2, pill_small))
        );
    }
    if pills.len() > shown_pills {
        let _ = write!(
            h,
            "<text class=\"ch-s\" x=\"{:.0}\" y=\"{:.0}\">+{} more threads</text>",
            LEFT + 24.0,
            pills_y + shown_pills as f64 * (PILL_H + 8.0) + 10.0,
            pills.len() - shown_pills
        );
    }
    h.raw("</svg>");
    let cap = if g.own_objects > 1 {
        format!(
            "{} chains, each on an object of its own; the first: {}",
            g.count, expl
        )
    } else {
        expl.to_owned()
    };
    if !cap.is_empty() {
        let _ = write!(
            h,
            "<figcaption>{}</figcaption>",
            esc(&elide_middle(&cap, 400))
        );
    }
    h.raw("</figure>");
}

/// The section body: every group as a column (capped), then the note of what was not drawn.
pub fn render(h: &mut Html, chains: &[Chain], groups: &[Group], id: &str) {
    let total: u64 = groups.iter().map(|g| g.count).sum();
    let blocked: usize = groups.iter().map(|g| g.blocked.len()).sum();
    if groups.is_empty() {
        h.raw("<p class=\"note\">No pending async chain.</p>");
        return;
    }
    let _ = write!(
        h,
        "<p class=\"lead\">{} pending {} in {} {} (same methods, same kind of wait, same awaited object){}.</p>",
        num(total),
        if total == 1 { "chain" } else { "chains" },
        num(groups.len() as u64),
        if groups.len() == 1 { "group" } else { "groups" },
        if blocked > 0 {
            format!("; {blocked} {} blocked on them", if blocked == 1 { "thread" } else { "threads" })
        } else {
            String::new()
        }
    );
    if groups.is_empty() {
        h.raw("<p class=\"note\">No pending async chain.</p>");
        return;
    }
    let _ = write!(
        h,
        "<div class=\"toolbar\"><input type=\"search\" class=\"filter\" data-filter=\"#{id}cols figure.chain-col\" placeholder=\"filter by method\" aria-label=\"filter chains by method\"></div><div class=\"chain-cols\" id=\"{id}cols\">"
    );
    for (gi, g) in groups.iter().enumerate().take(MAX_SHOWN) {
        column(h, chains, g, id, gi);
    }
    h.raw("</div>");
    if groups.len() > MAX_SHOWN {
        let more = groups.len().min(MAX_ALL) - MAX_SHOWN;
        let _ = write!(
            h,
            "<details class=\"more\"><summary>{} more {}</summary><div class=\"chain-cols\">",
            more,
            if more == 1 { "group" } else { "groups" }
        );
        for (gi, g) in groups.iter().enumerate().take(MAX_ALL).skip(MAX_SHOWN) {
            column(h, chains, g, id, gi);
        }
        h.raw("</div></details>");
    }
    if groups.len() > MAX_ALL {
        let rest: u64 = groups[MAX_ALL..].iter().map(|g| g.count).sum();
        let _ = write!(
            h,
            "<p class=\"note\">{} more groups ({} chains) are not drawn; `dumpasync` lists them all. The smallest are:</p><ul class=\"mono small\">",
            groups.len() - MAX_ALL,
            num(rest)
        );
        for g in groups[MAX_ALL..].iter().take(20) {
            let _ = write!(
                h,
                "<li>{} × {}</li>",
                g.count,
                esc(&g
                    .methods
                    .iter()
                    .map(|m| short_method(m))
                    .collect::<Vec<_>>()
                    .join(" ← "))
            );
        }
        h.raw("</ul>");
    }
}
