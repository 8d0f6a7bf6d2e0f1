//! Errors are typed in every crate of the workspace (design.md, "Errors"): no `Result` in
//! their sources has a string (or an untyped `Box<dyn Error>`) for its error, and no error is
//! built with `Err(format!(..))` or `map_err(|e| e.to_string())`. A text scan of each crate's
//! `src/**/*.rs`, so that a stringly error cannot come back unnoticed.

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Removes `//` comments (doc comments included) and the contents of string literals, so
/// that prose and messages do not count.
fn code_only(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    for line in src.lines() {
        let mut in_str = false;
        let mut prev = '\0';
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if in_str {
                if c == '"' && prev != '\\' {
                    in_str = false;
                    out.push('"');
                }
                prev = if c == '\\' && prev == '\\' { '\0' } else { c };
                continue;
            }
            if c == '/' && chars.peek() == Some(&'/') {
                break;
            }
            if c == '"' {
                in_str = true;
                prev = '\0';
            }
            out.push(c);
        }
        out.push('\n');
    }
    out
}

/// The generic arguments of each `Result<..>` in `code`, split at their top-level commas.
fn result_args(code: &str) -> Vec<(usize, Vec<String>)> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    let mut from = 0;
    while let Some(i) = code[from..].find("Result<") {
        let start = from + i;
        from = start + "Result<".len();
        // `Result` itself, not a longer name ending in it (`FmtResult<`).
        if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
            continue;
        }
        let (mut depth, mut args, mut cur) = (1i32, Vec::new(), String::new());
        let mut j = from;
        while j < bytes.len() && depth > 0 {
            let c = bytes[j] as char;
            match c {
                '-' if bytes.get(j + 1) == Some(&b'>') => {
                    cur.push_str("->");
                    j += 2;
                    continue;
                }
                '<' | '(' | '[' => depth += 1,
                '>' | ')' | ']' => depth -= 1,
                ',' if depth == 1 => {
                    args.push(std::mem::take(&mut cur));
                    j += 1;
                    continue;
                }
                _ => {}
            }
            if depth > 0 {
                cur.push(c);
            }
            j += 1;
        }
        args.push(cur);
        let line = code[..start].matches('\n').count() + 1;
        found.push((line, args.iter().map(|a| a.trim().to_string()).collect()));
    }
    found
}

fn is_stringly(ty: &str) -> bool {
    let t: String = ty.chars().filter(|c| !c.is_whitespace()).collect();
    matches!(
        t.as_str(),
        "String" | "std::string::String" | "&str" | "&'staticstr" | "Cow<str>" | "Cow<'staticstr>"
    ) || t.starts_with("Box<dyn") // an untyped error is no better
}

/// The workspace's crates: every folder beside this one with a Cargo.toml and a src/.
fn crates() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut v: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("Cargo.toml").is_file() && p.join("src").is_dir())
        .collect();
    v.sort();
    v
}

#[test]
fn no_result_has_a_string_error() {
    let crates = crates();
    let names: Vec<String> = crates
        .iter()
        .map(|c| c.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for must in [
        "dumpreader",
        "clrdata",
        "commands",
        "repl",
        "dbgext",
        "report",
    ] {
        assert!(
            names.iter().any(|n| n == must),
            "crate {must} not found: {names:?}"
        );
    }
    let mut files = Vec::new();
    for c in &crates {
        sources(&c.join("src"), &mut files);
    }
    let mut bad = Vec::new();
    for f in &files {
        let code = code_only(&std::fs::read_to_string(f).unwrap());
        for (line, args) in result_args(&code) {
            if args.len() == 2 && is_stringly(&args[1]) {
                bad.push(format!(
                    "{}:{line}: Result<{}>",
                    f.display(),
                    args.join(", ")
                ));
            }
        }
        for (n, l) in code.lines().enumerate() {
            let l: String = l.chars().filter(|c| !c.is_whitespace()).collect();
            if l.contains("Err(format!(") || l.contains("map_err(|e|e.to_string())") {
                bad.push(format!("{}:{}: an error made of text", f.display(), n + 1));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "errors are typed enums (design.md, \"Errors\"); found:\n{}",
        bad.join("\n")
    );
}

/// The scan itself finds what it is for (a test that cannot fail proves nothing).
#[test]
fn the_scan_sees_a_string_error() {
    let code = code_only(concat!(
        "fn a() -> Result<(PathBuf, Vec<u8>), ",
        "String> {}\n",
        "// fn b() -> Result<u8, ",
        "String> (a comment)\n",
        "fn c() -> std::fmt::Result { let _ = \"Result<u8, String>\"; }\n",
        "type D = Result<Box<dyn Fn() -> u8>, Error>;\n",
    ));
    let found: Vec<_> = result_args(&code)
        .into_iter()
        .filter(|(_, a)| a.len() == 2 && is_stringly(&a[1]))
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, 1);
    assert_eq!(found[0].1[0], "(PathBuf, Vec<u8>)");
    let d = result_args(&code);
    assert!(
        d.iter()
            .any(|(l, a)| *l == 4 && a[1] == "Error" && a[0].contains("->")),
        "{d:?}"
    );
}
