//! Writing HTML and SVG: one escape function for every string that comes from a dump, number
//! formats, short method and type names, and the text width the SVG layouts reserve.

use serde_json::Value;
use std::fmt::Write as _;

/// Escapes text for an HTML or SVG text node or a quoted attribute value: `&`, `<`, `>`, `"`
/// and `'` become entities; control characters other than tab and newline become U+FFFD (they
/// are not allowed in HTML and would make an XML reading of the SVG invalid).
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            '\t' | '\n' => o.push(c),
            c if c.is_control() => o.push('\u{FFFD}'),
            c => o.push(c),
        }
    }
    o
}

/// The page being written. `raw` takes markup written by this crate; `text` takes anything
/// else and escapes it.
#[derive(Default)]
pub struct Html {
    pub s: String,
}

impl Html {
    pub fn raw(&mut self, s: &str) -> &mut Self {
        self.s.push_str(s);
        self
    }
    pub fn text(&mut self, s: &str) -> &mut Self {
        self.s.push_str(&esc(s));
        self
    }
    /// `<tag class="..">escaped text</tag>`.
    pub fn el(&mut self, tag: &str, class: &str, text: &str) -> &mut Self {
        if class.is_empty() {
            let _ = write!(self.s, "<{tag}>{}</{tag}>", esc(text));
        } else {
            let _ = write!(self.s, "<{tag} class=\"{class}\">{}</{tag}>", esc(text));
        }
        self
    }
}

impl std::fmt::Write for Html {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.s.push_str(s);
        Ok(())
    }
}

/// A JSON value as display text: strings as they are, numbers and booleans written, null as "-".
pub fn vtext(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        other => other.to_string(),
    }
}

pub fn vstr(v: &Value) -> Option<&str> {
    v.as_str()
}

pub fn vu64(v: &Value) -> Option<u64> {
    v.as_u64()
}

pub fn arr(v: &Value) -> &[Value] {
    v.as_array().map(|a| a.as_slice()).unwrap_or(&[])
}

/// 1234567 → "1,234,567".
pub fn num(n: u64) -> String {
    let d = n.to_string();
    let mut o = String::new();
    for (i, c) in d.chars().enumerate() {
        if i > 0 && matches!((d.len() - i) % 3, 0) {
            o.push(',');
        }
        o.push(c);
    }
    o
}

/// Bytes in binary units: "512 B", "1.5 KB", "12.3 MB".
pub fn bytes(n: u64) -> String {
    const U: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < U.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else if v >= 100.0 {
        format!("{v:.0} {}", U[u])
    } else {
        format!("{v:.1} {}", U[u])
    }
}

/// An OS thread id as dumpshell writes it in text: `0x4b7b`.
pub fn tid(os: u64) -> String {
    format!("0x{os:x}")
}

/// A thread as `0x4b7b (5)`: OS id, then the managed id when known.
pub fn thread_label(os: Option<u64>, managed: Option<u64>) -> String {
    match (os, managed) {
        (Some(o), Some(m)) => format!("{} ({m})", tid(o)),
        (Some(o), None) => tid(o),
        (None, Some(m)) => format!("managed {m}"),
        (None, None) => "thread ?".into(),
    }
}

/// Characters as the layouts count them: most count 1, wide (East Asian) ones 2.
pub fn width_chars(s: &str) -> usize {
    s.chars()
        .map(|c| {
            let u = c as u32;
            if (0x1100..=0x115F).contains(&u)
                || (0x2E80..=0xA4CF).contains(&u)
                || (0xAC00..=0xD7A3).contains(&u)
                || (0xF900..=0xFAFF).contains(&u)
                || (0xFF00..=0xFF60).contains(&u)
                || (0x1F300..=0x1FAFF).contains(&u)
            {
                2
            } else {
                1
            }
        })
        .sum()
}

/// The advance of one character of the SVG's monospace font at 12 px (DejaVu Sans Mono and
/// Menlo: 0.602 em; Consolas 0.55 em), with a margin.
pub const CHAR_W: f64 = 7.4;

/// Cuts `s` to at most `max` characters (counted as [`width_chars`]) by removing its middle,
/// keeping more of the end (the method and its parameters say more than the namespace).
pub fn elide_middle(s: &str, max: usize) -> String {
    if width_chars(s) <= max || max < 5 {
        return s.to_owned();
    }
    let chars: Vec<char> = s.chars().collect();
    let keep = max - 1;
    let head = keep * 2 / 5;
    let tail = keep - head;
    let mut o: String = chars[..head].iter().collect();
    o.push('…');
    o.extend(&chars[chars.len() - tail..]);
    // Wide characters may still overflow: cut the tail further.
    while width_chars(&o) > max && o.chars().count() > 2 {
        let mut cs: Vec<char> = o.chars().collect();
        cs.remove(head + 1);
        o = cs.into_iter().collect();
    }
    o
}

/// Cuts `s` at the end to at most `max` characters, with `…`.
pub fn elide_end(s: &str, max: usize) -> String {
    if width_chars(s) <= max || max < 2 {
        return s.to_owned();
    }
    let mut o = String::new();
    let mut w = 0;
    for c in s.chars() {
        let cw = width_chars(c.encode_utf8(&mut [0; 4]));
        if w + cw > max - 1 {
            break;
        }
        w += cw;
        o.push(c);
    }
    o.push('…');
    o
}

/// Splits at `sep` outside brackets (`[]`, `<>`, `()`).
fn split_top(s: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '[' | '<' | '(' => depth += 1,
            ']' | '>' | ')' => depth -= 1,
            c if c == sep && depth <= 0 => {
                parts.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

/// A runtime type name made short for a picture: namespaces dropped, generic arity marks
/// dropped and the runtime's `[[Arg, assembly],[..]]` written `<Arg,..>` (args short too):
/// `System.Threading.Tasks.Task`1[[System.Int32, System.Private.CoreLib]]` → `Task<Int32>`.
pub fn short_type(t: &str) -> String {
    let t = t.trim();
    // Split off the generic argument list `[[...]]` (the first `[[` at top level).
    let (base, args, rest) = match t.find("[[") {
        Some(i) => {
            // find the matching close of the outer '['
            let mut depth = 0i32;
            let mut end = None;
            for (j, c) in t[i..].char_indices() {
                match c {
                    '[' => depth += 1,
                    ']' => {
                        depth -= 1;
                        if depth == 0 {
                            end = Some(i + j);
                            break;
                        }
                    }
                    _ => {}
                }
            }
            match end {
                Some(e) => (&t[..i], Some(&t[i + 1..e]), &t[e + 1..]),
                None => (t, None, ""),
            }
        }
        None => (t, None, ""),
    };
    let mut name = String::new();
    // The last dotted segment of the base (nested types keep their `+` chain).
    let seg = split_top(base, '.').last().copied().unwrap_or(base);
    for c in seg.split('`').enumerate().flat_map(|(i, p)| {
        if i == 0 {
            p.chars().collect::<Vec<_>>()
        } else {
            // drop the arity digits, keep what follows (`+Entry`)
            p.trim_start_matches(|c: char| c.is_ascii_digit())
                .chars()
                .collect()
        }
    }) {
        name.push(c);
    }
    if let Some(a) = args {
        let list: Vec<String> = split_top(a, ',')
            .into_iter()
            .map(|p| {
                let p = p.trim();
                let p = p.strip_prefix('[').unwrap_or(p);
                let p = p.strip_suffix(']').unwrap_or(p);
                // `[System.Int32, System.Private.CoreLib]`: the type before the assembly
                let ty = split_top(p, ',').first().copied().unwrap_or(p);
                short_type(ty)
            })
            .collect();
        name.push('<');
        name.push_str(&list.join(","));
        name.push('>');
    }
    name.push_str(rest);
    name
}

/// A method name made short for a picture: `Type.Method(params)` with short types.
/// `System.Threading.Tasks.Task.SpinThenBlockingWait(Int32, System.Threading.CancellationToken)`
/// → `Task.SpinThenBlockingWait(Int32, CancellationToken)`. Names in brackets
/// (`[awaiting a TaskCompletionSource]`) are kept.
pub fn short_method(m: &str) -> String {
    let m = m.trim();
    if m.starts_with('[') || m.is_empty() {
        return m.to_owned();
    }
    // The parameter list: the last top-level '(' .. ')' at the end.
    let (name, params, suffix) = match top_paren(m) {
        Some((open, close)) => (&m[..open], Some(&m[open + 1..close]), &m[close + 1..]),
        None => (m, None, ""),
    };
    let trailing_space = name.ends_with(' ');
    let name = name.trim_end();
    let segs = split_top(name, '.');
    let keep = if segs.len() >= 2 {
        format!(
            "{}.{}",
            short_type(segs[segs.len() - 2]),
            short_generic_method(segs[segs.len() - 1])
        )
    } else {
        short_generic_method(name)
    };
    let mut o = keep;
    if let Some(p) = params {
        if trailing_space {
            o.push(' ');
        }
        o.push('(');
        if p.contains('.') || p.contains("[[") {
            let list: Vec<String> = split_top(p, ',')
                .into_iter()
                .map(|x| {
                    let x = x.trim();
                    // keep ` ByRef`, `*`, `[]` suffixes: short_type keeps the text after the
                    // last dot, which holds them
                    short_type(x)
                })
                .collect();
            o.push_str(&list.join(", "));
        } else {
            o.push_str(p);
        }
        o.push(')');
    }
    o.push_str(suffix);
    o
}

/// A method segment with its own instantiation (`Method[[T, asm]]`).
fn short_generic_method(s: &str) -> String {
    if s.contains("[[") {
        short_type(s)
    } else {
        s.to_owned()
    }
}

/// The byte offsets of the last top-level `(`..`)` pair.
fn top_paren(s: &str) -> Option<(usize, usize)> {
    let mut depth = 0i32;
    let mut open = None;
    let mut last = None;
    for (i, c) in s.char_indices() {
        match c {
            '[' | '<' => depth += 1,
            ']' | '>' => depth -= 1,
            '(' if depth == 0 => {
                open = Some(i);
                depth += 1;
            }
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    if let Some(o) = open.take() {
                        last = Some((o, i));
                    }
                }
            }
            _ => {}
        }
    }
    last
}

/// A method name fitted to `max` characters: the short name; if too long its parameters
/// become `(…)`; if still too long its middle is cut.
pub fn fit_method(full: &str, max: usize) -> String {
    let s = short_method(full);
    if width_chars(&s) <= max {
        return s;
    }
    if let Some((open, _)) = top_paren(&s) {
        let t = format!("{}(…)", &s[..open]);
        if width_chars(&t) <= max {
            return t;
        }
        return elide_middle(&t, max);
    }
    elide_middle(&s, max)
}

/// A stable, safe id fragment from arbitrary text (only `[a-z0-9-]`).
pub fn slug(s: &str) -> String {
    let mut o = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            o.push(c.to_ascii_lowercase());
        } else if !o.ends_with('-') {
            o.push('-');
        }
    }
    let o = o.trim_matches('-').to_owned();
    if o.is_empty() {
        "x".into()
    } else {
        o
    }
}

#[cfg(test)]
mod t {
    use super::*;

    #[test]
    fn escapes_everything_markup_could_hide_in() {
        assert_eq!(
            esc("List<String> & \"x\" 'y'"),
            "List&lt;String&gt; &amp; &quot;x&quot; &#39;y&#39;"
        );
        assert_eq!(esc("a\u{0}b"), "a\u{FFFD}b");
        assert_eq!(esc("</script><script>"), "&lt;/script&gt;&lt;script&gt;");
    }

    #[test]
    fn short_names() {
        assert_eq!(
            short_method(
                "System.Threading.Tasks.Task.SpinThenBlockingWait(Int32, System.Threading.CancellationToken)"
            ),
            "Task.SpinThenBlockingWait(Int32, CancellationToken)"
        );
        assert_eq!(
            short_method("System.Threading.Tasks.Task`1[[System.Int32, System.Private.CoreLib]].GetResultCore(Boolean)"),
            "Task<Int32>.GetResultCore(Boolean)"
        );
        assert_eq!(
            short_method(
                "Interop+Sys.Read(System.Runtime.InteropServices.SafeHandle, Byte*, Int32)"
            ),
            "Interop+Sys.Read(SafeHandle, Byte*, Int32)"
        );
        assert_eq!(
            short_method("RealAsync.Program.LocalOuter.Fetch (local function)"),
            "LocalOuter.Fetch (local function)"
        );
        assert_eq!(short_method("Hang.Program.DelayC"), "Program.DelayC");
        assert_eq!(
            short_method("[awaiting Task.Delay]"),
            "[awaiting Task.Delay]"
        );
        assert_eq!(
            short_type("System.Collections.Generic.Dictionary`2+Entry[[System.String, System.Private.CoreLib],[Heap.Person, heap]][]"),
            "Dictionary+Entry<String,Person>[]"
        );
        assert_eq!(
            short_method("System.Threading.WaitHandle.WaitOneNoCheck(Int32, Boolean, System.Object, WaitHandleWaitSourceMap)"),
            "WaitHandle.WaitOneNoCheck(Int32, Boolean, Object, WaitHandleWaitSourceMap)"
        );
        assert_eq!(short_method("Main(System.String[])"), "Main(String[])");
    }

    #[test]
    fn elision_keeps_the_limit() {
        let s = "Microsoft.AspNetCore.Server.Kestrel.Core.Internal.Http.HttpProtocol.ProcessRequests[[Microsoft.AspNetCore.Hosting.HostingApplication+Context, Microsoft.AspNetCore.Hosting]](Microsoft.AspNetCore.Hosting.Server.IHttpApplication`1<System.__Canon>)";
        for max in [10, 20, 40, 60] {
            assert!(
                width_chars(&fit_method(s, max)) <= max,
                "{max}: {}",
                fit_method(s, max)
            );
        }
        assert_eq!(elide_end("abcdef", 4), "abc…");
        assert_eq!(num(1234567), "1,234,567");
        assert_eq!(bytes(1536), "1.5 KB");
        assert_eq!(slug("Hang <net10>.dmp"), "hang-net10-dmp");
    }
}
