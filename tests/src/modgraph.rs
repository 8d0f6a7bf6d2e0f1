//! The module graph of a crate, read from its sources: which module imports which.
//!
//! A module is a source file (`a/b.rs` is `a::b`, `a/mod.rs` is `a`, `lib.rs` the crate root).
//! An edge `m -> n` is any path in `m`'s code (not its comments, strings or `#[cfg(test)]`
//! modules) that names an item of `n`: `use crate::n::X`, `crate::n::f()`, `super::X`,
//! `self::n::X`, brace groups of `use` trees included. A path through the crate root's own
//! `pub use` re-exports is followed to the module that defines the item, so a re-export hides
//! no dependency. Tests use it to hold a crate to its layers: [`ModuleGraph::violations`].

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The modules of one crate and their imports.
#[derive(Debug, Default)]
pub struct ModuleGraph {
    /// Module path (`model::heap`; `crate` for the root) → its file.
    pub files: BTreeMap<String, PathBuf>,
    /// Module → the modules it imports (itself never included).
    pub edges: BTreeMap<String, BTreeSet<String>>,
}

/// The crate root's module name in a [`ModuleGraph`].
pub const ROOT: &str = "crate";

impl ModuleGraph {
    /// Reads every `.rs` file under `src` (the crate's `src/` folder, holding `lib.rs`).
    pub fn read(src: &Path) -> ModuleGraph {
        let mut g = ModuleGraph::default();
        let mut files = Vec::new();
        collect_rs(src, &mut files);
        for f in &files {
            let rel = f.strip_prefix(src).expect("under src");
            g.files.insert(module_name(rel), f.clone());
        }
        let modules: BTreeSet<String> = g.files.keys().cloned().collect();
        let code: BTreeMap<String, String> = g
            .files
            .iter()
            .map(|(m, f)| {
                (
                    m.clone(),
                    code_of(&fs::read_to_string(f).unwrap_or_default()),
                )
            })
            .collect();
        let children = |m: &str| -> BTreeSet<String> {
            modules.iter().filter_map(|n| child_of(m, n)).collect()
        };
        // Each module's `pub use` re-exports: name -> the item's absolute path.
        let mut reexports: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
        for (m, c) in &code {
            let mut map = BTreeMap::new();
            for p in pub_uses(c, &children(m)) {
                if let (Some(name), Some(abs)) = (p.last(), absolute(m, &p)) {
                    map.insert(name.clone(), abs);
                }
            }
            reexports.insert(m.clone(), map);
        }
        for (m, c) in &code {
            let mut deps = BTreeSet::new();
            for path in paths_in(c, &children(m)) {
                if let Some(abs) = absolute(m, &path) {
                    let target = resolve(abs, &modules, &reexports);
                    if target != *m {
                        deps.insert(target);
                    }
                }
            }
            g.edges.insert(m.clone(), deps);
        }
        g
    }

    /// Inherent `impl` blocks of a type written in another module than the type's own: methods
    /// added that way are called without an import, so the graph would not see the
    /// dependency. One sentence each; `allowed` says which (module, type) pairs are accepted.
    pub fn foreign_inherent_impls(&self, allowed: impl Fn(&str, &str) -> bool) -> Vec<String> {
        let mut defined: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut impls: Vec<(String, String)> = Vec::new();
        for (m, f) in &self.files {
            let code = code_of(&fs::read_to_string(f).unwrap_or_default());
            let t = tokenize(&code);
            for i in 0..t.len() {
                if matches!(
                    t[i].as_str(),
                    "struct" | "enum" | "union" | "type" | "trait"
                ) && (i == 0 || t[i - 1] != "::")
                {
                    if let Some(name) = t.get(i + 1) {
                        defined.entry(m.clone()).or_default().insert(name.clone());
                    }
                }
                let item_start =
                    i == 0 || matches!(t[i - 1].as_str(), "}" | ";" | "]" | "{" | "unsafe");
                if t[i] == "impl" && item_start {
                    // impl<...> Type<...> {   (no `for` before the body)
                    let mut j = i + 1;
                    let mut depth = 0i32;
                    if t.get(j).map(String::as_str) == Some("<") {
                        while j < t.len() {
                            match t[j].as_str() {
                                "<" => depth += 1,
                                ">" => {
                                    depth -= 1;
                                    if depth == 0 {
                                        j += 1;
                                        break;
                                    }
                                }
                                _ => {}
                            }
                            j += 1;
                        }
                    }
                    let Some(name) = t.get(j).cloned() else {
                        continue;
                    };
                    let mut k = j;
                    let mut is_trait_impl = false;
                    while k < t.len() && t[k] != "{" && t[k] != ";" {
                        if t[k] == "for" {
                            is_trait_impl = true;
                        }
                        k += 1;
                    }
                    // Only impls that add methods others can call: a `pub` item inside.
                    let mut depth = 0i32;
                    let mut public = false;
                    let mut q = k;
                    while q < t.len() {
                        match t[q].as_str() {
                            "{" => depth += 1,
                            "}" => {
                                depth -= 1;
                                if depth == 0 {
                                    break;
                                }
                            }
                            "pub" if depth == 1 => public = true,
                            _ => {}
                        }
                        q += 1;
                    }
                    if !is_trait_impl && public {
                        impls.push((m.clone(), name));
                    }
                }
            }
        }
        impls
            .into_iter()
            .filter(|(m, name)| {
                !defined.get(m).is_some_and(|d| d.contains(name)) && !allowed(m, name)
            })
            .map(|(m, name)| {
                format!(
                    "{m} adds inherent methods to {name}, which it does not define (write an \
                     extension trait, or move the methods to {name}'s module)"
                )
            })
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    /// Every cycle's modules, each cycle once (strongly connected components of 2+ modules).
    pub fn cycles(&self) -> Vec<Vec<String>> {
        tarjan(&self.edges)
            .into_iter()
            .filter(|c| c.len() > 1)
            .collect()
    }

    /// What breaks the layering, one sentence each: a cycle (naming its modules and one edge
    /// path through them), or an import from a module of a lower layer to one of a higher
    /// layer. `layer` gives a module's rank (higher = above); modules it gives `None` are
    /// reported as unplaced.
    pub fn violations(&self, layer: impl Fn(&str) -> Option<usize>) -> Vec<String> {
        let mut out = Vec::new();
        for c in self.cycles() {
            out.push(format!(
                "import cycle among {} modules: {} (e.g. {})",
                c.len(),
                c.join(", "),
                self.cycle_path(&c).join(" -> ")
            ));
        }
        for m in self.files.keys() {
            let Some(lm) = layer(m) else {
                out.push(format!("module {m} is in no layer"));
                continue;
            };
            for n in &self.edges[m] {
                if let Some(ln) = layer(n) {
                    if ln > lm {
                        out.push(format!(
                            "upward import: {m} (layer {lm}) imports {n} (layer {ln})"
                        ));
                    }
                }
            }
        }
        out
    }

    /// One closed walk through the cycle `c` (its first module back to itself).
    fn cycle_path(&self, c: &[String]) -> Vec<String> {
        let set: BTreeSet<&String> = c.iter().collect();
        let start = &c[0];
        // Breadth-first from start's successors back to start, inside the cycle.
        let mut prev: BTreeMap<&String, &String> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::new();
        for n in &self.edges[start] {
            if set.contains(n) && !prev.contains_key(n) {
                prev.insert(n, start);
                queue.push_back(n);
            }
        }
        while let Some(x) = queue.pop_front() {
            if x == start {
                break;
            }
            for n in &self.edges[x] {
                if set.contains(n) && !prev.contains_key(n) {
                    prev.insert(n, x);
                    queue.push_back(n);
                }
            }
        }
        let mut path = vec![start.clone()];
        let mut at = start;
        while let Some(&p) = prev.get(at) {
            path.push(p.clone());
            if p == start {
                break;
            }
            at = p;
        }
        path.reverse();
        path
    }
}

fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect_rs(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// `a/b.rs` → `a::b`; `a/mod.rs` → `a`; `lib.rs`/`main.rs` → [`ROOT`].
fn module_name(rel: &Path) -> String {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && !(parts.is_empty() && (stem == "lib" || stem == "main")) {
        parts.push(stem.to_owned());
    }
    if parts.is_empty() {
        ROOT.to_owned()
    } else {
        parts.join("::")
    }
}

/// The source without comments, string and char literals (replaced by spaces) and without
/// `#[cfg(test)]` items.
fn code_of(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == b'r'
            && (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#'))
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            // raw string r"..." / r#"..."#
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push(c as char);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == b'"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&b'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.push(' ');
            i = j;
        } else if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push(' ');
        } else if c == b'\'' {
            // a char literal ('a', '\n', '\u{..}') or a lifetime ('a)
            let close = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..]
                    .iter()
                    .position(|&x| x == b'\'')
                    .map(|p| i + 2 + p)
            } else if b.get(i + 2) == Some(&b'\'') {
                Some(i + 2)
            } else {
                None
            };
            match close {
                Some(e) => {
                    out.push(' ');
                    i = e + 1;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            // multi-byte UTF-8 passes through unchanged
            let len = utf8_len(c);
            out.push_str(&src[i..(i + len).min(src.len())]);
            i += len;
        }
    }
    strip_test_modules(&out)
}

fn utf8_len(first: u8) -> usize {
    match first {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

/// Removes each `#[cfg(test)]` item: the attribute and the item up to its closing brace (or
/// semicolon).
fn strip_test_modules(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        let b = after.as_bytes();
        let mut depth = 0usize;
        let mut end = after.len();
        let mut i = "#[cfg(test)]".len();
        while i < b.len() {
            match b[i] {
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                b';' if depth == 0 => {
                    end = i + 1;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
        rest = &after[end.min(after.len())..];
    }
    out.push_str(rest);
    out
}

/// The last segment of `n` when `n` is a direct child module of `m`.
fn child_of(m: &str, n: &str) -> Option<String> {
    let rest = if m == ROOT {
        n
    } else {
        n.strip_prefix(m)?.strip_prefix("::")?
    };
    (!rest.contains("::") && !rest.is_empty() && rest != ROOT).then(|| rest.to_owned())
}

/// Every path starting at `crate`, `super`, `self` or a child module's name (`children`) in
/// `code`, with `use` trees expanded: each as its segments (`["crate", "heap", "GcHeap"]`; a
/// child's path gets `self` in front).
fn paths_in(code: &str, children: &BTreeSet<String>) -> Vec<Vec<String>> {
    let tokens = tokenize(code);
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let t = tokens[i].as_str();
        let head = i == 0 || (tokens[i - 1] != "::" && tokens[i - 1] != "mod");
        let followed = tokens.get(i + 1).map(String::as_str) == Some("::");
        let child = children.contains(t);
        let starts = (t == "crate" || t == "super" || t == "self" || child) && followed && head;
        if starts {
            let (trees, next) = use_tree(&tokens, i);
            if child {
                out.extend(trees.into_iter().map(|mut p| {
                    p.insert(0, "self".to_owned());
                    p
                }));
            } else {
                out.extend(trees);
            }
            i = next.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

fn tokenize(code: &str) -> Vec<String> {
    let mut toks = Vec::new();
    let cs: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        if c.is_alphanumeric() || c == '_' {
            let s = i;
            while i < cs.len() && (cs[i].is_alphanumeric() || cs[i] == '_') {
                i += 1;
            }
            toks.push(cs[s..i].iter().collect());
        } else if c == ':' && cs.get(i + 1) == Some(&':') {
            toks.push("::".into());
            i += 2;
        } else if c.is_whitespace() {
            i += 1;
        } else {
            toks.push(c.to_string());
            i += 1;
        }
    }
    toks
}

/// The paths of the use tree (or plain path) starting at token `i`, and the index after it.
fn use_tree(t: &[String], mut i: usize) -> (Vec<Vec<String>>, usize) {
    let mut prefix = Vec::new();
    loop {
        match t.get(i).map(String::as_str) {
            Some("{") => {
                // a group: each member is a tree with this prefix
                let mut out = Vec::new();
                i += 1;
                loop {
                    match t.get(i).map(String::as_str) {
                        Some("}") => return (out, i + 1),
                        Some(",") => i += 1,
                        None => return (out, i),
                        _ => {
                            let (sub, next) = use_tree(t, i);
                            for s in sub {
                                let mut p = prefix.clone();
                                p.extend(s);
                                out.push(p);
                            }
                            if next <= i {
                                return (out, i + 1);
                            }
                            i = next;
                        }
                    }
                }
            }
            Some(w) if w == "*" => return (vec![prefix], i + 1),
            Some(w) if w.chars().all(|c| c.is_alphanumeric() || c == '_') => {
                prefix.push(w.to_owned());
                i += 1;
                if t.get(i).map(String::as_str) == Some("::") {
                    i += 1;
                    continue;
                }
                return (vec![prefix], i);
            }
            _ => return (vec![prefix], i),
        }
    }
}

/// The paths of every `pub use` / `pub(crate) use` in `code` (children's names get `self`).
fn pub_uses(code: &str, children: &BTreeSet<String>) -> Vec<Vec<String>> {
    let t = tokenize(code);
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < t.len() {
        if t[i] != "pub" {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        if t[j] == "(" {
            while j < t.len() && t[j] != ")" {
                j += 1;
            }
            j += 1;
        }
        if t.get(j).map(String::as_str) != Some("use") {
            i += 1;
            continue;
        }
        let (paths, next) = use_tree(&t, j + 1);
        for mut p in paths {
            if p.first().is_some_and(|f| children.contains(f)) {
                p.insert(0, "self".to_owned());
            }
            if p.len() >= 2 {
                out.push(p);
            }
        }
        i = next.max(j + 1);
    }
    out
}

/// A path in module `m` made absolute (segments from the crate root, without `crate`), or
/// `None` for paths outside the crate.
fn absolute(m: &str, path: &[String]) -> Option<Vec<String>> {
    let here: Vec<String> = if m == ROOT {
        Vec::new()
    } else {
        m.split("::").map(str::to_owned).collect()
    };
    let mut abs: Vec<String> = Vec::new();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => rest = &rest[1..],
        Some("self") => {
            abs = here;
            rest = &rest[1..];
        }
        Some("super") => {
            abs = here;
            while rest.first().map(String::as_str) == Some("super") {
                abs.pop();
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    abs.extend(rest.iter().cloned());
    Some(abs)
}

/// The module that defines the item an absolute path names: its longest module prefix,
/// following that module's re-export of the next segment (a facade hides no dependency).
fn resolve(
    mut abs: Vec<String>,
    modules: &BTreeSet<String>,
    reexports: &BTreeMap<String, BTreeMap<String, Vec<String>>>,
) -> String {
    for _ in 0..16 {
        let (module, n) = (0..=abs.len())
            .rev()
            .map(|n| {
                let name = if n == 0 {
                    ROOT.to_owned()
                } else {
                    abs[..n].join("::")
                };
                (name, n)
            })
            .find(|(name, _)| modules.contains(name))
            .unwrap_or((ROOT.to_owned(), 0));
        let Some(item) = abs.get(n) else {
            return module;
        };
        match reexports.get(&module).and_then(|r| r.get(item)) {
            Some(target) if *target != abs[..=n] => {
                let mut next = target.clone();
                next.extend(abs[n + 1..].iter().cloned());
                abs = next;
            }
            _ => return module,
        }
    }
    ROOT.to_owned()
}
/// Strongly connected components (Tarjan), each sorted.
fn tarjan(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct St<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        on: BTreeSet<&'a str>,
        stack: Vec<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut St<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on.insert(v);
        if let Some(ws) = s.edges.get(v) {
            for w in ws {
                let w = w.as_str();
                if !s.edges.contains_key(w) {
                    continue;
                }
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let lw = s.low[w];
                    let lv = s.low[v];
                    s.low.insert(v, lv.min(lw));
                } else if s.on.contains(w) {
                    let iw = s.index[w];
                    let lv = s.low[v];
                    s.low.insert(v, lv.min(iw));
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                comp.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            comp.sort();
            s.out.push(comp);
        }
    }
    let mut s = St {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        on: BTreeSet::new(),
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn use_trees_expand() {
        let t = tokenize("use crate::{a::{X, b::Y}, c};");
        let (p, _) = use_tree(&t, 1);
        assert_eq!(
            p,
            vec![
                vec!["crate", "a", "X"],
                vec!["crate", "a", "b", "Y"],
                vec!["crate", "c"]
            ]
        );
    }

    #[test]
    fn comments_and_strings_are_not_code() {
        let c = code_of("// crate::x::y\nlet s = \"crate::z\"; /* crate::w */ crate::v::f();");
        let p = paths_in(&c, &BTreeSet::new());
        assert_eq!(p, vec![vec!["crate", "v", "f"]]);
    }

    #[test]
    fn cfg_test_modules_are_left_out() {
        let c = code_of("fn a() {}\n#[cfg(test)]\nmod tests { use super::*; fn b() { crate::q::r(); } }\nfn c() { crate::k::l(); }");
        let p = paths_in(&c, &BTreeSet::new());
        assert_eq!(p, vec![vec!["crate", "k", "l"]]);
    }

    #[test]
    fn a_cycle_is_found() {
        let mut e: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        e.insert("a".into(), ["b".to_string()].into());
        e.insert("b".into(), ["c".to_string()].into());
        e.insert("c".into(), ["a".to_string()].into());
        e.insert("d".into(), ["a".to_string()].into());
        let g = ModuleGraph {
            files: e.keys().map(|k| (k.clone(), PathBuf::new())).collect(),
            edges: e,
        };
        assert_eq!(g.cycles(), vec![vec!["a", "b", "c"]]);
        let v = g.violations(|m| Some(if m == "d" { 0 } else { 1 }));
        assert!(v[0].contains("a -> b -> c -> a"), "{v:?}");
        assert!(v.iter().any(|s| s.contains("upward import: d")), "{v:?}");
    }
}
