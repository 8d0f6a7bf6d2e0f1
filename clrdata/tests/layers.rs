//! clrdata's modules import only downwards: no import cycle among its modules, and no module
//! imports one of a layer above its own (`../shared/docs/design.md`: discovery → data → model →
//! analysis, over the error type and the metadata reader).

use std::path::Path;
use tests::modgraph::{ModuleGraph, ROOT};

/// A module's layer: higher layers may import lower ones, never the reverse.
fn layer(m: &str) -> Option<usize> {
    let top = m.split("::").next().unwrap_or(m);
    Some(match top {
        "error" | "metadata" => 0,
        "discovery" => 1,
        "data" => 2,
        "model" => 3,
        "analysis" => 4,
        // the crate root only declares the layers and re-exports
        _ if m == ROOT || m == "open" => 5,
        _ => return None,
    })
}

#[test]
fn clrdata_imports_only_downwards_and_has_no_cycle() {
    let g = ModuleGraph::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(g.files.len() > 40, "the sources were not found");
    let mut v = g.violations(layer);
    // Methods reach a type through its own module or an imported extension trait, so each
    // use of them is an import the graph sees; `open` completes discovery (Runtime::discover).
    // The metadata reader is one unit that spreads `Metadata`'s methods over its files; so
    // is the stack walker, whose GC references (`model::stack::gcrefs`, imported by every
    // user of its types) are methods of `StackWalker`.
    v.extend(g.foreign_inherent_impls(|m, ty| {
        (m == "open" && ty == "Runtime")
            || (m.starts_with("metadata::") && ty == "Metadata")
            || (m == "model::stack::gcrefs" && ty == "StackWalker")
    }));
    assert!(
        v.is_empty(),
        "clrdata's layering is broken:\n  {}",
        v.join("\n  ")
    );
}
