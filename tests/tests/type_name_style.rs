//! Type names in C#'s form (`set typenames csharp`, `--type-names csharp`): the rewriting of the
//! DAC's form must be total and faithful on every name the DAC itself gives in the corpus
//! (`dumps/<name>.dac.json`: the heap's types and the stack frames' methods), and it must
//! change a session's text only, never its JSON.
//!
//! Faithful, checked without the rewriting's own parser: erasing every C# argument list
//! (`<...>`) from the rewritten name, and every DAC argument list (`[[...]]`, `` `N<...> ``),
//! arity (`` `N ``) and method instantiation from the DAC's name, with `+` read as `.`, must
//! give the same text; and the rewritten name has as many generic arguments as the DAC's.

use commands::style::{to_csharp, NameStyle};
use commands::Session;

/// `s` without any bracketed group that starts with `open` at depth 0 of `open`/`close`
/// pairs: `erase("A<B<C>>.D", '<', '>')` is `A.D`.
fn erase(s: &str, open: char, close: char) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    for c in s.chars() {
        if c == open {
            depth += 1;
        } else if c == close && depth > 0 {
            depth -= 1;
        } else if depth == 0 {
            out.push(c);
        }
    }
    out
}

/// The DAC's name reduced to its skeleton: argument lists, arities and nesting marks gone.
/// A DAC argument list `[[A, a],[B, b]]` is erased as a whole; `[]` (arrays) stay.
fn dac_skeleton(name: &str) -> String {
    let mut s = String::new();
    let chars: Vec<char> = name.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '[' && chars.get(i + 1) == Some(&'[') {
            // Skip to the matching ']' of this '['.
            let mut depth = 0usize;
            while i < chars.len() {
                match chars[i] {
                    '[' => depth += 1,
                    ']' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            i += 1;
            continue;
        }
        if chars[i] == '`' && chars.get(i + 1).is_some_and(|c| c.is_ascii_digit()) {
            i += 1;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            continue;
        }
        s.push(chars[i]);
        i += 1;
    }
    // `Task`1<T>` (a signature's form) lost its arity above; its `<T>` goes with the C# ones.
    erase(&s, '<', '>').replace('+', ".")
}

/// How many generic arguments a DAC name holds: `[[` opens the first of a list, `],[` each
/// further one; a signature's `` `N<A,B> `` holds N.
fn dac_argument_count(name: &str) -> usize {
    let lists = name.matches("[[").count() + name.matches("],[").count();
    let mut sig = 0;
    let b = name.as_bytes();
    for (i, _) in name.match_indices('`') {
        let digits: String = name[i + 1..]
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        if !digits.is_empty() && b.get(i + 1 + digits.len()) == Some(&b'<') {
            sig += digits.parse::<usize>().unwrap_or(0);
        }
    }
    lists + sig
}

/// How many generic arguments a C# name holds: one per `<` and one more per `,` at any depth
/// inside `<...>` (argument separators).
fn csharp_argument_count(name: &str) -> usize {
    let mut depth = 0usize;
    let mut n = 0;
    for c in name.chars() {
        match c {
            '<' => {
                depth += 1;
                n += 1;
            }
            '>' if depth > 0 => depth -= 1,
            ',' if depth > 0 => n += 1,
            _ => {}
        }
    }
    n
}

/// Every type and method name the DAC gives in the corpus's truths.
fn dac_names() -> Vec<(String, String)> {
    let mut names = Vec::new();
    for e in tests::all() {
        for t in e.dac["heap_stat"]["types"].as_array().into_iter().flatten() {
            if let Some(n) = t["type"].as_str() {
                names.push((e.name.clone(), n.to_owned()));
            }
        }
        for s in e.dac["stacks"].as_array().into_iter().flatten() {
            for f in s["frames"].as_array().into_iter().flatten() {
                if let Some(n) = f["method"].as_str() {
                    names.push((e.name.clone(), n.to_owned()));
                }
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

#[test]
fn every_name_the_dac_gives_is_rewritten_totally_and_faithfully() {
    let names = dac_names();
    assert!(
        names.len() > 5000,
        "too few names in the truths: {}",
        names.len()
    );
    let mut generic = 0;
    let mut bad = Vec::new();
    for (dump, dac) in &names {
        let cs = to_csharp(dac).into_owned();
        if dac.contains("[[") || dac.contains('`') {
            generic += 1;
        }
        let residue = cs.contains("[[")
            || cs
                .match_indices('`')
                .any(|(i, _)| cs[i + 1..].starts_with(|c: char| c.is_ascii_digit()));
        let skeleton_ok = erase(&cs, '<', '>') == dac_skeleton(dac);
        // Names with a '<' of their own (`<Main>d__0`, `<>c`) are held to the skeleton only.
        let count_ok = dac.contains('<') || csharp_argument_count(&cs) == dac_argument_count(dac);
        if residue || !skeleton_ok || !count_ok {
            bad.push(format!("{dump}: {dac}\n      -> {cs}"));
        }
    }
    assert!(generic > 500, "too few generic names: {generic}");
    assert!(
        bad.is_empty(),
        "{} of {} names are not rewritten totally and faithfully:\n  {}",
        bad.len(),
        names.len(),
        bad.iter()
            .take(30)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}

#[test]
fn the_setting_changes_a_sessions_text_and_never_its_json() {
    let e = tests::entry("heap-net10");
    let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
    let run = |line: &str, json: bool| {
        let (out, _) = commands::execute_streaming(&s, line).unwrap().unwrap();
        let mut w = Vec::new();
        out.write_to(&mut w, json, false, s.name_style()).unwrap();
        String::from_utf8(w).unwrap()
    };
    let dac_text = run("dumpheap -stat", false);
    let dac_json = run("dumpheap -stat", true);
    assert!(dac_text.contains("[["), "no generic type on the heap?");
    assert_eq!(s.name_style(), NameStyle::Dac);
    let set = run("set typenames csharp", true);
    assert!(set.contains("\"typenames\":\"csharp\""), "{set}");
    assert_eq!(s.name_style(), NameStyle::Csharp);
    let cs_text = run("dumpheap -stat", false);
    assert_eq!(run("dumpheap -stat", true), dac_json, "JSON changed");
    assert!(!cs_text.contains("[["), "{cs_text}");
    assert_eq!(cs_text, to_csharp(&dac_text));
    assert_eq!(cs_text.lines().count(), dac_text.lines().count());
    // A streamed result (dumpheap's listing) is rewritten line by line.
    let listing = run("dumpheap", false);
    assert!(!listing.contains("[["));
    run("set typenames dac", false);
    assert_eq!(run("dumpheap -stat", false), dac_text);
}
