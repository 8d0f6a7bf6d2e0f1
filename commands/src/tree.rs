//! Merged stacks: many stacks (root first) folded into one tree with counts, and the
//! renderer chrisnas's pstacks made familiar. Used by `pstacks` (thread stacks) and
//! `pstacks --async` (async logical stacks).

use crate::output::Render;
use serde::Serialize;
use std::collections::HashMap;

/// One node of the merged tree: a frame and the stacks passing through it.
#[derive(Serialize, Default, Debug, Clone)]
pub struct Node {
    /// The frame (a method name).
    pub method: String,
    /// With `pstacks -lines`: the frame's source document and line (frames at different
    /// lines of one method are different nodes); null without a line.
    pub source_file: Option<String>,
    pub source_line: Option<u32>,
    /// How many stacks pass through it.
    pub count: usize,
    /// Their ids (OS thread ids, or box addresses for async stacks).
    pub threads: Vec<u64>,
    /// The frames called from here.
    pub children: Vec<Node>,
    #[serde(skip)]
    index: HashMap<String, usize>,
}

/// A frame of a merged stack with its source line (`pstacks -lines`).
pub struct LinedFrame<'a> {
    pub method: &'a str,
    /// The document and line, when known.
    pub line: Option<(&'a str, u32)>,
}

impl Node {
    /// Adds one stack (frames root first) with its id.
    pub fn insert<S: AsRef<str>>(&mut self, frames: &[S], id: u64) {
        let lined: Vec<LinedFrame<'_>> = frames
            .iter()
            .map(|f| LinedFrame {
                method: f.as_ref(),
                line: None,
            })
            .collect();
        self.insert_lined(&lined, id);
    }

    /// [`Node::insert`] with each frame's source line: frames merge when their method and
    /// line are the same.
    pub fn insert_lined(&mut self, frames: &[LinedFrame<'_>], id: u64) {
        let mut node = self;
        for f in frames {
            let key = f.label();
            let i = match node.index.get(&key) {
                Some(&i) => i,
                None => {
                    node.children.push(Node {
                        method: f.method.to_string(),
                        source_file: f.line.map(|(d, _)| d.to_string()),
                        source_line: f.line.map(|(_, l)| l),
                        ..Node::default()
                    });
                    node.index.insert(key, node.children.len() - 1);
                    node.children.len() - 1
                }
            };
            node = &mut node.children[i];
            node.count += 1;
            node.threads.push(id);
        }
    }
}

impl LinedFrame<'_> {
    /// The method, then ` [file @ line]` as SOS prints a frame's line.
    pub fn label(&self) -> String {
        match self.line {
            Some((d, l)) => format!("{} [{d} @ {l}]", self.method),
            None => self.method.to_string(),
        }
    }
}

impl Node {
    /// The node's frame as the text shows it (with its line, when it has one).
    pub fn label(&self) -> String {
        LinedFrame {
            method: &self.method,
            line: self.source_file.as_deref().zip(self.source_line),
        }
        .label()
    }
}

const PADDING: usize = 5;

/// The ids of a leaf: 4 unless `all`, hexadecimal.
pub fn id_list(ids: &[u64], all: bool) -> String {
    let shown: Vec<String> = ids
        .iter()
        .take(if all { usize::MAX } else { 4 })
        .map(|i| format!("{i:x}"))
        .collect();
    let mut s = shown.join(",");
    if !all && ids.len() > 4 {
        s.push_str("...");
    }
    s
}

/// A node's children (fewest stacks first) before the node, leaves with their `~~~~ ids`
/// line; a child indented one step unless it holds all the node's stacks.
pub fn render_node(n: &Node, depth: usize, all: bool, out: &mut String) {
    let pad = " ".repeat(PADDING * depth);
    if n.children.is_empty() {
        out.push_str(&format!("\n{pad} ~~~~ {}", id_list(&n.threads, all)));
        out.push_str(&format!("\n{pad}{:>PADDING$} {}", n.count, n.label()));
        return;
    }
    let mut kids: Vec<&Node> = n.children.iter().collect();
    kids.sort_by_key(|k| k.count);
    for k in kids {
        let d = if k.count == n.count { depth } else { depth + 1 };
        render_node(k, d, all, out);
    }
    out.push_str(&format!("\n{pad}{:>PADDING$} {}", n.count, n.label()));
}

/// Every root, each under a separator line.
pub fn render(roots: &[Node], all: bool) -> String {
    let mut text = String::new();
    for r in roots {
        text.push_str("\n________________________________________________");
        render_node(r, 0, all, &mut text);
    }
    text
}

/// `pstacks`'s result: every thread's managed stack merged into a tree, root first.
#[derive(Serialize)]
pub struct PStacks {
    pub threads: usize,
    pub roots: Vec<Node>,
    /// Threads whose walk stopped early: (OS id, why).
    pub incomplete: Vec<(u64, String)>,
    /// Whether the text lists every thread id of a group (else at most 4).
    #[serde(skip)]
    pub all: bool,
}

impl Render for PStacks {
    fn render(&self) -> String {
        let mut text = render(&self.roots, self.all);
        text.push_str(&format!(
            "\n\n==> {} threads with {} roots\n",
            self.threads,
            self.roots.len()
        ));
        for (id, why) in &self.incomplete {
            text.push_str(&format!("thread {id:#x}: the walk stopped: {why}\n"));
        }
        text
    }
}
