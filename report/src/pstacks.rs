//! Parallel stacks as Visual Studio draws them: the merged tree of `pstacks` cut into boxes
//! (a box holds the run of frames shared by exactly the same threads), roots at the bottom,
//! callees above their callers, each box headed by its thread count, edges from a box's top to
//! the boxes called from it. Coordinates are computed here, so the picture needs no script.

use crate::html::{arr, elide_middle, esc, fit_method, num, tid, Html, CHAR_W};
use serde_json::Value;
use std::fmt::Write as _;

/// At most this many boxes are drawn; the rest are counted in "more" stubs.
pub const MAX_BOXES: usize = 400;
/// At most this many children are drawn under one box, the largest first.
pub const MAX_CHILDREN: usize = 16;
/// A box of more frames shows its innermost and outermost ones and counts the middle.
pub const MAX_FRAMES: usize = 24;
const KEEP_INNER: usize = 16;
/// Ids listed for a box with boxes above it.
const INNER_IDS: usize = 40;
const KEEP_OUTER: usize = 6;

const LINE_H: f64 = 17.0;
const HEAD_H: f64 = 22.0;
const PAD_X: f64 = 10.0;
const GAP_X: f64 = 26.0;
const GAP_Y: f64 = 44.0;
const MIN_W: f64 = 150.0;
/// The widest band of trees side by side (a single wider tree keeps its width).
const BAND_W: f64 = 1500.0;
const BAND_GAP: f64 = 36.0;
/// The widest frame line, in characters.
const MAX_CHARS: usize = 64;

/// One box: a run of frames (outermost first) shared by the same threads.
#[derive(Debug, Clone)]
pub struct StackBox {
    /// Full method names, outermost first.
    pub frames: Vec<String>,
    /// The ids passing through the box (OS thread ids; box addresses for async stacks).
    pub threads: Vec<u64>,
    /// The ids whose stack ends in this box though boxes are called from it.
    pub ends_here: Vec<u64>,
    pub children: Vec<usize>,
    /// Children not drawn (beyond [`MAX_CHILDREN`] or [`MAX_BOXES`]): (stacks, ids).
    pub hidden: Option<(usize, usize)>,
    pub depth: usize,
}

/// The merged tree as boxes, index 0.. in drawing order (a box before its children).
#[derive(Debug, Default)]
pub struct Boxes {
    pub boxes: Vec<StackBox>,
    pub roots: Vec<usize>,
    /// Root subtrees not drawn: (trees, ids).
    pub hidden_roots: Option<(usize, usize)>,
}

fn ids(n: &Value) -> Vec<u64> {
    arr(&n["threads"])
        .iter()
        .filter_map(Value::as_u64)
        .collect()
}

fn count(n: &Value) -> usize {
    n["count"]
        .as_u64()
        .map(|c| c as usize)
        .unwrap_or_else(|| ids(n).len())
}

/// Cuts a `pstacks` tree (`roots`: nodes of `{method, count, threads, children}`, root =
/// outermost frame) into boxes: a node starts a box unless it is its parent's only child with
/// the parent's count (then it continues the parent's box).
pub fn boxes(roots: &[Value]) -> Boxes {
    let mut b = Boxes::default();
    // Breadth-first by level so the cap keeps the large, outer boxes.
    let mut sorted: Vec<&Value> = roots.iter().collect();
    sorted.sort_by_key(|a| std::cmp::Reverse(count(a)));
    let mut queue: std::collections::VecDeque<(&Value, Option<usize>, usize)> =
        std::collections::VecDeque::new();
    let mut hidden_roots = (0, 0);
    for (i, r) in sorted.iter().enumerate() {
        if i < MAX_CHILDREN * 2 {
            queue.push_back((r, None, 0));
        } else {
            hidden_roots.0 += 1;
            hidden_roots.1 += count(r);
        }
    }
    if hidden_roots.0 > 0 {
        b.hidden_roots = Some(hidden_roots);
    }
    while let Some((start, parent, depth)) = queue.pop_front() {
        if b.boxes.len() >= MAX_BOXES {
            match parent {
                Some(p) => {
                    let h = b.boxes[p].hidden.get_or_insert((0, 0));
                    h.0 += 1;
                    h.1 += count(start);
                }
                None => {
                    let h = b.hidden_roots.get_or_insert((0, 0));
                    h.0 += 1;
                    h.1 += count(start);
                }
            }
            continue;
        }
        let mut frames = vec![start["method"].as_str().unwrap_or("?").to_owned()];
        let mut node = start;
        loop {
            let kids = arr(&node["children"]);
            if kids.len() == 1 && count(&kids[0]) == count(node) {
                node = &kids[0];
                frames.push(node["method"].as_str().unwrap_or("?").to_owned());
            } else {
                break;
            }
        }
        let threads = ids(start);
        let kids = arr(&node["children"]);
        let mut below: std::collections::HashSet<u64> = std::collections::HashSet::new();
        for k in kids {
            below.extend(ids(k));
        }
        let ends_here = if kids.is_empty() {
            Vec::new()
        } else {
            ids(node)
                .into_iter()
                .filter(|t| !below.contains(t))
                .collect()
        };
        let me = b.boxes.len();
        b.boxes.push(StackBox {
            frames,
            threads,
            ends_here,
            children: Vec::new(),
            hidden: None,
            depth,
        });
        match parent {
            Some(p) => b.boxes[p].children.push(me),
            None => b.roots.push(me),
        }
        let mut ks: Vec<&Value> = kids.iter().collect();
        ks.sort_by_key(|a| std::cmp::Reverse(count(a)));
        for (i, k) in ks.into_iter().enumerate() {
            if i < MAX_CHILDREN {
                queue.push_back((k, Some(me), depth + 1));
            } else {
                let h = b.boxes[me].hidden.get_or_insert((0, 0));
                h.0 += 1;
                h.1 += count(k);
            }
        }
    }
    b
}

/// What one drawn box holds (for the page's check and the thread tables).
pub struct Placed {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
    lines: Vec<Line>,
}

enum Line {
    Frame(String),
    /// `⋯ N frames`, with their full names for the hover text.
    Elided(Vec<String>),
}

fn lines_of(b: &StackBox) -> Vec<Line> {
    // innermost first, as a call stack reads
    let inner_first: Vec<&String> = b.frames.iter().rev().collect();
    if inner_first.len() <= MAX_FRAMES {
        return inner_first
            .into_iter()
            .map(|f| Line::Frame(f.clone()))
            .collect();
    }
    let n = inner_first.len();
    let mut v: Vec<Line> = inner_first[..KEEP_INNER]
        .iter()
        .map(|f| Line::Frame((*f).clone()))
        .collect();
    v.push(Line::Elided(
        inner_first[KEEP_INNER..n - KEEP_OUTER]
            .iter()
            .map(|f| (*f).clone())
            .collect(),
    ));
    v.extend(
        inner_first[n - KEEP_OUTER..]
            .iter()
            .map(|f| Line::Frame((*f).clone())),
    );
    v
}

fn line_text(l: &Line) -> String {
    match l {
        Line::Frame(f) => fit_method(f, MAX_CHARS),
        Line::Elided(fs) => format!("⋯ {} more frames", fs.len()),
    }
}

/// The words for a box's ids: threads or async boxes.
#[derive(Clone, Copy)]
pub enum IdKind {
    Threads,
    /// `pstacks --async`: the ids are the innermost state machine boxes' addresses.
    Tasks,
}

impl IdKind {
    fn noun(self, n: usize) -> &'static str {
        match (self, n) {
            (IdKind::Threads, 1) => "thread",
            (IdKind::Threads, _) => "threads",
            (IdKind::Tasks, 1) => "chain",
            (IdKind::Tasks, _) => "chains",
        }
    }
    fn id(self, v: u64) -> String {
        match self {
            IdKind::Threads => tid(v),
            IdKind::Tasks => format!("{v:#x}"),
        }
    }
}

/// Draws the boxes as an SVG (roots at the bottom) followed by the table of each box's ids
/// (a `<details>`, so the ids are there without scripts). `id` prefixes every element id.
/// `highlight` marks the boxes holding that id (the crashing thread).
pub fn render(
    h: &mut Html,
    b: &Boxes,
    kind: IdKind,
    id: &str,
    highlight: Option<u64>,
    thread_names: &dyn Fn(u64) -> Option<String>,
) {
    if b.boxes.is_empty() {
        h.raw("<p class=\"note\">No stacks to draw.</p>");
        return;
    }
    let mut placed: Vec<Placed> = b
        .boxes
        .iter()
        .map(|bx| {
            let lines = lines_of(bx);
            let head = head_text(bx, kind);
            let chars = lines
                .iter()
                .map(|l| crate::html::width_chars(&line_text(l)))
                .chain(std::iter::once(crate::html::width_chars(&head)))
                .max()
                .unwrap_or(10);
            let w = (chars as f64 * CHAR_W + 2.0 * PAD_X).max(MIN_W).ceil();
            let hh = HEAD_H + lines.len() as f64 * LINE_H + 8.0;
            Placed {
                x: 0.0,
                y: 0.0,
                w,
                h: hh,
                lines,
            }
        })
        .collect();
    // Stubs for hidden children are drawn as small boxes too: give them a size.
    let stub_w = 170.0;
    let stub_h = HEAD_H + LINE_H + 8.0;
    // subtree widths
    let n = b.boxes.len();
    let mut sw = vec![0.0f64; n];
    for i in (0..n).rev() {
        let bx = &b.boxes[i];
        let mut kids: f64 = bx.children.iter().map(|&c| sw[c]).sum::<f64>();
        let mut nk = bx.children.len();
        if bx.hidden.is_some() {
            kids += stub_w;
            nk += 1;
        }
        if nk > 1 {
            kids += GAP_X * (nk - 1) as f64;
        }
        sw[i] = placed[i].w.max(kids);
    }
    // Many independent trees (roots) are packed in bands of at most BAND_W, one under the
    // other, each band with its roots at its bottom: a forest stays readable without a page
    // 20,000 px wide. One tree is never split.
    let margin = 16.0;
    let mut bands: Vec<Vec<usize>> = Vec::new();
    let mut used = 0.0;
    for &r in &b.roots {
        let start = match bands.last() {
            None => true,
            Some(v) => !v.is_empty() && used + sw[r] > BAND_W,
        };
        if start {
            bands.push(Vec::new());
            used = 0.0;
        }
        bands.last_mut().unwrap().push(r);
        used += sw[r] + GAP_X;
    }
    if bands.is_empty() {
        bands.push(Vec::new());
    }
    // the boxes of each root's tree
    let mut band_of = vec![0usize; n];
    for (k, band) in bands.iter().enumerate() {
        let mut stack: Vec<usize> = band.clone();
        while let Some(i) = stack.pop() {
            band_of[i] = k;
            stack.extend(&b.boxes[i].children);
        }
    }
    // row heights by band and depth (stubs sit one row above their parent)
    let max_depth = b.boxes.iter().map(|x| x.depth).max().unwrap_or(0) + 2;
    let mut row_h = vec![vec![0.0f64; max_depth]; bands.len()];
    for (i, bx) in b.boxes.iter().enumerate() {
        let rh = &mut row_h[band_of[i]];
        rh[bx.depth] = rh[bx.depth].max(placed[i].h);
        if bx.hidden.is_some() {
            rh[bx.depth + 1] = rh[bx.depth + 1].max(stub_h);
        }
    }
    let last_band = bands.len() - 1;
    if b.hidden_roots.is_some() {
        row_h[last_band][0] = row_h[last_band][0].max(stub_h);
    }
    for rh in row_h.iter_mut() {
        while rh.len() > 1 && rh[rh.len() - 1] == 0.0 {
            rh.pop();
        }
    }
    // bottom of row d of band k: each band's rows stacked upwards from its bottom
    let mut row_bottom: Vec<Vec<f64>> = Vec::new();
    let mut top = margin;
    for rh in &row_h {
        let band_h: f64 = rh.iter().sum::<f64>() + GAP_Y * (rh.len() - 1) as f64;
        let mut y = top + band_h;
        let mut v = Vec::new();
        for h in rh {
            v.push(y);
            y -= h + GAP_Y;
        }
        row_bottom.push(v);
        top += band_h + BAND_GAP;
    }
    let total_h = top - BAND_GAP + margin;
    // x placement
    let mut stubs: Vec<(f64, f64, usize, usize, Option<usize>)> = Vec::new(); // x, y, trees, ids, parent
    #[allow(clippy::too_many_arguments)]
    fn place(
        i: usize,
        left: f64,
        b: &Boxes,
        sw: &[f64],
        placed: &mut [Placed],
        row_bottom: &[f64],
        stubs: &mut Vec<(f64, f64, usize, usize, Option<usize>)>,
        stub_w: f64,
        stub_h: f64,
    ) {
        let bx = &b.boxes[i];
        placed[i].x = left + (sw[i] - placed[i].w) / 2.0;
        placed[i].y = row_bottom[bx.depth] - placed[i].h;
        let mut kids_w: f64 = bx.children.iter().map(|&c| sw[c]).sum();
        let mut nk = bx.children.len();
        if bx.hidden.is_some() {
            kids_w += stub_w;
            nk += 1;
        }
        if nk > 1 {
            kids_w += GAP_X * (nk - 1) as f64;
        }
        let mut x = left + (sw[i] - kids_w) / 2.0;
        for &c in &bx.children {
            place(c, x, b, sw, placed, row_bottom, stubs, stub_w, stub_h);
            x += sw[c] + GAP_X;
        }
        if let Some((t, ids)) = bx.hidden {
            stubs.push((x, row_bottom[bx.depth + 1] - stub_h, t, ids, Some(i)));
        }
    }
    let mut widest: f64 = 0.0;
    for (k, band) in bands.iter().enumerate() {
        let mut x = margin;
        for &r in band {
            place(
                r,
                x,
                b,
                &sw,
                &mut placed,
                &row_bottom[k],
                &mut stubs,
                stub_w,
                stub_h,
            );
            x += sw[r] + GAP_X;
        }
        if k == last_band {
            if let Some((t, ids)) = b.hidden_roots {
                stubs.push((x, row_bottom[k][0] - stub_h, t, ids, None));
                x += stub_w + GAP_X;
            }
        }
        widest = widest.max(x - GAP_X);
    }
    let total_w = (widest + margin).max(200.0);

    let _ = write!(
        h,
        "<div class=\"scroll\" id=\"{id}wrap\"><svg class=\"pstacks\" id=\"{id}svg\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{total_w:.0}\" height=\"{total_h:.0}\" viewBox=\"0 0 {total_w:.0} {total_h:.0}\" role=\"img\" aria-label=\"parallel stacks\">"
    );
    // edges first (under the boxes)
    let max_count = b
        .boxes
        .iter()
        .map(|x| x.threads.len())
        .max()
        .unwrap_or(1)
        .max(1);
    for (i, bx) in b.boxes.iter().enumerate() {
        let p = &placed[i];
        let mut targets: Vec<(f64, f64, usize, Option<usize>)> = bx
            .children
            .iter()
            .map(|&c| {
                (
                    placed[c].x + placed[c].w / 2.0,
                    placed[c].y + placed[c].h,
                    b.boxes[c].threads.len(),
                    Some(c),
                )
            })
            .collect();
        for s in stubs.iter().filter(|s| s.4 == Some(i)) {
            targets.push((s.0 + stub_w / 2.0, s.1 + stub_h, s.3, None));
        }
        let k = targets.len();
        for (j, (tx, ty, cnt, c)) in targets.into_iter().enumerate() {
            // ports spread along the parent's top edge
            let sx = p.x + p.w * (j as f64 + 1.0) / (k as f64 + 1.0);
            let sy = p.y;
            let my = (sy + ty) / 2.0;
            let sw_ = 1.2 + 2.8 * (cnt as f64 / max_count as f64).sqrt();
            let cls = match c {
                Some(_) => "ps-edge",
                None => "ps-edge stub",
            };
            let data = match c {
                Some(c) => format!(" data-from=\"{i}\" data-to=\"{c}\""),
                None => String::new(),
            };
            let _ = write!(
                h,
                "<path class=\"{cls}\"{data} d=\"M{sx:.1},{sy:.1} C{sx:.1},{my:.1} {tx:.1},{my:.1} {tx:.1},{:.1}\" stroke-width=\"{sw_:.1}\" marker-end=\"url(#mk-ps)\"/>",
                ty + 2.0
            );
        }
    }
    // boxes
    for (i, bx) in b.boxes.iter().enumerate() {
        let p = &placed[i];
        let hot = highlight.is_some_and(|t| bx.threads.contains(&t));
        let cls = if hot { "ps-box hot" } else { "ps-box" };
        let head = head_text(bx, kind);
        let _ = write!(
            h,
            "<g class=\"{cls}\" id=\"{id}b{i}\" data-box=\"{i}\" data-count=\"{}\" data-frames=\"{}\" tabindex=\"0\" transform=\"translate({:.1},{:.1})\">",
            bx.threads.len(),
            bx.frames.len(),
            p.x,
            p.y
        );
        // hover title: count and ids
        let shown: Vec<String> = bx.threads.iter().take(24).map(|&t| kind.id(t)).collect();
        let more = if bx.threads.len() > 24 {
            format!(" … {} more", bx.threads.len() - 24)
        } else {
            String::new()
        };
        let _ = write!(
            h,
            "<title>{}: {}{}</title>",
            esc(&head),
            esc(&shown.join(", ")),
            more
        );
        let _ = write!(
            h,
            "<rect class=\"ps-frame\" width=\"{:.0}\" height=\"{:.0}\" rx=\"3\"/><rect class=\"ps-head\" width=\"{:.0}\" height=\"{HEAD_H}\" rx=\"3\"/><rect class=\"ps-head\" y=\"{}\" width=\"{:.0}\" height=\"4\"/>",
            p.w,
            p.h,
            p.w,
            HEAD_H - 4.0,
            p.w
        );
        let _ = write!(
            h,
            "<text class=\"ps-count fit\" x=\"{PAD_X}\" y=\"15\" data-w=\"{:.0}\">{}</text>",
            p.w - 2.0 * PAD_X,
            esc(&head)
        );
        for (j, l) in p.lines.iter().enumerate() {
            let y = HEAD_H + 13.0 + j as f64 * LINE_H;
            match l {
                Line::Frame(f) => {
                    let t = line_text(l);
                    let app = !is_framework(f);
                    let _ = write!(
                        h,
                        "<text class=\"ps-fr fit{}\" x=\"{PAD_X}\" y=\"{y:.0}\" data-w=\"{:.0}\"><title>{}</title>{}</text>",
                        if app { " app" } else { "" },
                        p.w - 2.0 * PAD_X,
                        esc(f),
                        esc(&t)
                    );
                }
                Line::Elided(fs) => {
                    let t = line_text(l);
                    let _ = write!(
                        h,
                        "<text class=\"ps-fr elided fit\" x=\"{PAD_X}\" y=\"{y:.0}\" data-w=\"{:.0}\"><title>{}</title>{}</text>",
                        p.w - 2.0 * PAD_X,
                        esc(&fs.join("\n")),
                        esc(&t)
                    );
                }
            }
        }
        h.raw("</g>");
    }
    for (k, s) in stubs.iter().enumerate() {
        let (x, y, trees, nids, _) = *s;
        let t1 = format!(
            "+{} more {}",
            trees,
            if trees == 1 { "stack" } else { "stacks" }
        );
        let t2 = format!("{} {}", num(nids as u64), kind.noun(nids));
        let _ = write!(
            h,
            "<g class=\"ps-more\" id=\"{id}m{k}\" transform=\"translate({x:.1},{y:.1})\"><title>{} with {} not drawn (at most {MAX_CHILDREN} boxes above a box, {MAX_BOXES} in all: the largest are drawn)</title><rect class=\"ps-frame\" width=\"{stub_w}\" height=\"{stub_h}\" rx=\"3\"/><text class=\"ps-count\" x=\"{PAD_X}\" y=\"15\">{}</text><text class=\"ps-fr\" x=\"{PAD_X}\" y=\"{:.0}\">{}</text></g>",
            esc(&t1),
            esc(&t2),
            esc(&t1),
            HEAD_H + 13.0,
            esc(&t2)
        );
    }
    h.raw("</svg></div>");

    // The ids of each box: a table (the script opens a box's row in a popup on click).
    let _ = write!(
        h,
        "<details class=\"ids\" id=\"{id}ids\"><summary>{} of each box</summary><table class=\"grid small\"><thead><tr><th>box</th><th>{}</th><th>innermost frame</th><th>ids</th></tr></thead><tbody>",
        match kind {
            IdKind::Threads => "Thread ids",
            IdKind::Tasks => "Innermost state machine boxes",
        },
        match kind {
            IdKind::Threads => "threads",
            IdKind::Tasks => "chains",
        }
    );
    for (i, bx) in b.boxes.iter().enumerate() {
        // A box with boxes above lists its first ids only: each id is listed in full in the
        // box where its stack ends.
        let inner = !bx.children.is_empty() && bx.hidden.is_none();
        let cap = if inner { INNER_IDS } else { usize::MAX };
        let mut list: Vec<String> = bx
            .threads
            .iter()
            .take(cap)
            .map(|&t| match thread_names(t) {
                Some(n) => format!("{} {}", kind.id(t), n),
                None => kind.id(t),
            })
            .collect();
        if bx.threads.len() > cap {
            list.push(format!(
                "… {} more, in the boxes above",
                bx.threads.len() - cap
            ));
        }
        let ends = if bx.ends_here.is_empty() {
            String::new()
        } else {
            format!(
                " <span class=\"muted\">(stack ends here: {})</span>",
                esc(&bx
                    .ends_here
                    .iter()
                    .map(|&t| kind.id(t))
                    .collect::<Vec<_>>()
                    .join(", "))
            )
        };
        let inner = bx.frames.last().map(String::as_str).unwrap_or("");
        let _ = write!(
            h,
            "<tr id=\"{id}t{i}\"><td><a href=\"#{id}b{i}\">{i}</a></td><td class=\"num\">{}</td><td class=\"mono\">{}</td><td class=\"mono ids-list\">{}{ends}</td></tr>",
            bx.threads.len(),
            esc(&elide_middle(inner, 90)),
            esc(&list.join(", "))
        );
    }
    h.raw("</tbody></table></details>");
}

fn head_text(b: &StackBox, kind: IdKind) -> String {
    let n = b.threads.len();
    let mut s = format!("{} {}", num(n as u64), kind.noun(n));
    if !b.ends_here.is_empty() {
        let _ = write!(s, " ({} end here)", b.ends_here.len());
    }
    s
}

/// Frames of the runtime and framework (shown dimmer than the app's own, as VS's "External
/// Code" is): System.*, Microsoft.*, Interop+*.
pub fn is_framework(m: &str) -> bool {
    m.starts_with("System.")
        || m.starts_with("Microsoft.")
        || m.starts_with("Interop")
        || m.starts_with('[')
        || m.starts_with("ILStubClass")
}

/// The deepest drawn box holding each id (the box of its innermost drawn frame).
pub fn leaf_box_of(b: &Boxes) -> std::collections::HashMap<u64, usize> {
    let mut by_depth: Vec<usize> = (0..b.boxes.len()).collect();
    by_depth.sort_by_key(|&i| b.boxes[i].depth);
    let mut m = std::collections::HashMap::new();
    for i in by_depth {
        for &t in &b.boxes[i].threads {
            m.insert(t, i);
        }
    }
    m
}
