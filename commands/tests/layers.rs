//! The command library's modules import only downwards: the shared pieces (output, text,
//! argument parsing, the session) at the bottom, one module per command family above them,
//! the registry of them all, triage, which composes their typed results, and on top buckets,
//! which signs triage's summaries. No cycle.

use std::path::Path;
use tests::modgraph::{ModuleGraph, ROOT};

/// A module's layer: higher layers may import lower ones, never the reverse.
fn layer(m: &str) -> Option<usize> {
    Some(match m {
        "output" | "text" | "tokenize" | "tree" | "addr" | "control" | "style" => 0,
        "session" => 1,
        "spec" => 2,
        "native" | "heap" | "objects" | "stacks" | "asyncs" | "roots" | "exceptions" | "locks"
        | "threadpool" | "about" | "nativeaot" | "runtimesos" | "heapsos" | "heaprefs"
        | "codeinfo" | "ilsos" | "settings" | "web" => 2,
        "registry" | "help" => 4,
        "triage" => 5,
        "buckets" => 6,
        _ if m == ROOT => 7,
        _ => return None,
    })
}

#[test]
fn commands_import_only_downwards_and_have_no_cycle() {
    let g = ModuleGraph::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(g.files.len() > 10, "the sources were not found");
    for (m, d) in &g.edges {
        println!("{m}: {}", d.iter().cloned().collect::<Vec<_>>().join(" "));
    }
    let mut v = g.violations(layer);
    v.extend(g.foreign_inherent_impls(|_, _| false));
    assert!(
        v.is_empty(),
        "the command library's layering is broken:\n  {}",
        v.join("\n  ")
    );
}
