//! How every command's text is laid out: tables in one style, as wide as the front end allows.
//!
//! The library knows no terminal: the front end that prints to one (the `dumpshell` binary)
//! says how wide it is with [`set_width`]; otherwise tables take their natural width.

use comfy_table::{presets, Cell, ContentArrangement, Table};
use std::sync::OnceLock;

static WIDTH: OnceLock<u16> = OnceLock::new();

/// The width of the terminal the text goes to (set once, by a front end that has one).
pub fn set_width(columns: u16) {
    let _ = WIDTH.set(columns);
}

/// A table in the style every command uses: no borders, header underlined, fitted to the
/// terminal when the front end gave its width ([`set_width`]).
pub fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    if let Some(&w) = WIDTH.get() {
        t.set_width(w);
    }
    // Fit the table to the terminal, but only to one wide enough to fit into: a terminal that
    // reports no size or a tiny one (a fresh pseudo-terminal says 0 columns) would squeeze
    // every column to one character.
    let fits = t.width().is_some_and(|w| w >= 60);
    t.load_style(presets::NOTHING)
        .set_content_arrangement(if fits {
            ContentArrangement::Dynamic
        } else {
            ContentArrangement::Disabled
        })
        .set_header(header.iter().map(Cell::new).collect::<Vec<_>>());
    t
}

/// The table as text, each line without trailing blanks (a piped table stays tidy).
pub fn render(t: &Table) -> String {
    let mut out = String::new();
    for line in t.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// What a count says when the heap walk met damage: the count may be short.
pub(crate) fn incomplete(heap_walk_errors: usize) -> String {
    match heap_walk_errors {
        0 => String::new(),
        n => format!(
            "; incomplete: the heap walk met {n} damaged place{} (errors below)",
            if n == 1 { "" } else { "s" }
        ),
    }
}

/// `1,234`: SOS's integers with thousands separators (.NET's `n0`).
pub fn grouped(n: u64) -> String {
    let d = n.to_string();
    let mut t = String::new();
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            t.push(',');
        }
        t.push(c);
    }
    t
}
