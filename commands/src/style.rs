//! How type names are written in text: the DAC's form (the default, what SOS prints and what
//! the tests compare with the DAC) or the C# form a person reads in source and in Visual Studio.
//!
//! Names are produced once, in the DAC's form (`System.Collections.Generic.Dictionary`2[[System.String,
//! System.Private.CoreLib],[System.Int32, System.Private.CoreLib]]`); the C# form
//! (`System.Collections.Generic.Dictionary<System.String, System.Int32>`) is a rewriting of the
//! text a person reads ([`to_csharp`]), applied by the front ends when the session asks for it
//! (`set typenames csharp`, `dumpshell --type-names csharp`: crate::settings). JSON always keeps the DAC's form,
//! so that scripts and the comparisons with the DAC see one spelling.
//!
//! The rewriting touches only what is unmistakably a type name in the DAC's form: a generic
//! argument list `[[T, Assembly],[U, Assembly]]` after a name, a signature's `` `N<T> ``, and
//! the `+` between a type and its nested type. A name whose arity does not account for its
//! arguments is left as it is, never guessed.

use serde::Serialize;

/// How type names are written in a command's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum NameStyle {
    /// The DAC's and SOS's form: `List`1[[System.String, System.Private.CoreLib]]`.
    #[default]
    Dac,
    /// C#'s form: `List<System.String>`, nested types joined with `.`.
    Csharp,
}

impl NameStyle {
    /// The setting's value as `set` takes and shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            NameStyle::Dac => "dac",
            NameStyle::Csharp => "csharp",
        }
    }

    /// `text` with its type names in this style.
    pub fn apply<'a>(self, text: &'a str) -> std::borrow::Cow<'a, str> {
        match self {
            NameStyle::Dac => std::borrow::Cow::Borrowed(text),
            NameStyle::Csharp => to_csharp(text),
        }
    }
}

/// `text` with every type name in the DAC's form rewritten in C#'s form (see the module's
/// documentation for what is rewritten). Text without such names is returned as it is.
pub fn to_csharp(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains("[[") && !text.contains('`') && !text.contains('+') {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(rewrite(text))
}

/// The characters a type or method name in the DAC's form is made of (besides its generic
/// argument lists): `<Main>d__0`, `<>c__DisplayClass0_0`, `<Invoke>g__AwaitMatcher|13_0`,
/// `List`1`, `Outer+Inner`.
fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '.' | '`' | '+' | '<' | '>' | '|' | '$')
}

/// `text` with every type name in the DAC's form rewritten in ClrMD's form, the form SOS's
/// managed commands print (`ConcurrentDictionary<System.Int32, Outer+Inner>`,
/// `Dictionary<K, V>+Entry[]`): generic argument lists as C#'s, nested types kept joined with
/// `+` (ClrMD's `DacNameParser`).
pub fn to_clrmd(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains("[[") {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(rewrite_joined(text, "+"))
}

fn rewrite(text: &str) -> String {
    signature_forms(&rewrite_joined(text, "."))
}

/// The generic argument lists of `text` rewritten, nested types joined with `nested`.
fn rewrite_joined(text: &str, nested: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '[' && chars.get(i + 1) == Some(&'[') && i > 0 && is_name_char(chars[i - 1])
        {
            if let Some((args, end)) = parse_args(&chars, i, nested) {
                let head_start = head_start(&out);
                let head = out[head_start..].to_owned();
                if let Some(named) = instantiate(&head, &args, nested) {
                    out.truncate(head_start);
                    out.push_str(&named);
                    i = end;
                    continue;
                }
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

/// Where the name that ends `out` begins.
fn head_start(out: &str) -> usize {
    let mut start = out.len();
    for (k, c) in out.char_indices().rev() {
        if is_name_char(c) {
            start = k;
        } else {
            break;
        }
    }
    start
}

/// Parses the generic argument list `[[T, Asm],[U, Asm]]` that starts at `chars[at]`: each
/// argument's name (already in C#'s form) and the index after the list; `None` if the text
/// there is not such a list.
fn parse_args(chars: &[char], at: usize, nested: &str) -> Option<(Vec<String>, usize)> {
    let mut i = at + 1; // past the outer '['
    let mut args = Vec::new();
    loop {
        if chars.get(i) != Some(&'[') {
            return None;
        }
        i += 1;
        // The argument: a name up to ", " (then its assembly) or ']' at depth 0.
        let start = i;
        let mut depth = 0usize;
        let end_of_name;
        loop {
            match chars.get(i)? {
                '\n' | '\r' => return None,
                '[' => depth += 1,
                ']' if depth > 0 => depth -= 1,
                ']' => {
                    end_of_name = i;
                    break;
                }
                ',' if depth == 0 => {
                    end_of_name = i;
                    // The assembly's simple name, up to the closing ']'.
                    loop {
                        match chars.get(i)? {
                            ']' => break,
                            '[' | '\n' | '\r' => return None,
                            _ => i += 1,
                        }
                    }
                    break;
                }
                _ => {}
            }
            i += 1;
        }
        let name: String = chars[start..end_of_name].iter().collect();
        if name.trim().is_empty() {
            return None;
        }
        args.push(match nested {
            "." => rewrite(name.trim()),
            _ => rewrite_joined(name.trim(), nested),
        });
        i += 1; // past this argument's ']'
        match chars.get(i)? {
            ',' => i += 1,
            ']' => return Some((args, i + 1)),
            _ => return None,
        }
    }
}

/// The name `head` instantiated over `args` in C#'s form: each `+`-separated part with an
/// arity `` `N `` takes the next N arguments; a head without any arity is a generic method
/// (`Wait[[MyApp.Item, MyApp]]`) and takes them all. `None` when the arities do not account
/// for the arguments.
fn instantiate(head: &str, args: &[String], nested: &str) -> Option<String> {
    let parts: Vec<&str> = head.split('+').collect();
    let mut arities = Vec::with_capacity(parts.len());
    for p in &parts {
        arities.push(match p.rsplit_once('`') {
            Some((_, n)) => Some(n.parse::<usize>().ok()?),
            None => None,
        });
    }
    let total: usize = arities.iter().map(|a| a.unwrap_or(0)).sum();
    if total == 0 {
        if head.is_empty() {
            return None;
        }
        return Some(format!("{head}<{}>", args.join(", ")));
    }
    if total != args.len() {
        return None;
    }
    let mut next = 0;
    let mut named = Vec::with_capacity(parts.len());
    for (p, a) in parts.iter().zip(&arities) {
        match a {
            Some(n) => {
                let base = p.rsplit_once('`').map_or(*p, |(b, _)| b);
                named.push(format!("{base}<{}>", args[next..next + n].join(", ")));
                next += n;
            }
            None => named.push((*p).to_owned()),
        }
    }
    Some(named.join(nested))
}

/// The rest of the DAC's forms in `text`: a signature's `` Task`1<T> `` loses its arity, and a
/// nested type's `Outer+Inner` becomes `Outer.Inner`. `+` is rewritten only between a name's
/// character and a name's first (a letter, `_`, `<`: `Interop+Sys`, `Program+<Main>d__0`),
/// never before an offset (`libc.so.6+0x1f`, `Foo+0x10`) or between spaced words. (The
/// commands' text has no other `word+word`.)
fn signature_forms(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '`' && i > 0 && chars[i - 1].is_alphanumeric() {
            let mut j = i + 1;
            while j < chars.len() && chars[j].is_ascii_digit() {
                j += 1;
            }
            if j > i + 1 && chars.get(j) == Some(&'<') {
                i = j;
                continue;
            }
        }
        if c == '+'
            && i > 0
            && (chars[i - 1].is_alphanumeric() || matches!(chars[i - 1], '_' | '>'))
            && chars
                .get(i + 1)
                .is_some_and(|n| n.is_alphabetic() || matches!(n, '_' | '<'))
        {
            out.push('.');
            i += 1;
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::to_csharp;

    fn cs(s: &str) -> String {
        to_csharp(s).into_owned()
    }

    #[test]
    fn generic_arguments_lose_their_assemblies() {
        assert_eq!(
            cs("System.Collections.Generic.Dictionary`2[[System.String, System.Private.CoreLib],[System.Int32, System.Private.CoreLib]]"),
            "System.Collections.Generic.Dictionary<System.String, System.Int32>"
        );
        assert_eq!(
            cs("  00007f 1 24  System.WeakReference`1[[System.IO.FileSystemWatcher, System.IO.FileSystem.Watcher]]\n"),
            "  00007f 1 24  System.WeakReference<System.IO.FileSystemWatcher>\n"
        );
    }

    #[test]
    fn nested_arguments_and_arrays() {
        assert_eq!(
            cs("System.GenericEmptyEnumerator`1[[System.Collections.Generic.KeyValuePair`2[[System.String, System.Private.CoreLib],[System.Collections.Generic.IReadOnlyList`1[[A.B, A]], System.Private.CoreLib]], System.Private.CoreLib]]"),
            "System.GenericEmptyEnumerator<System.Collections.Generic.KeyValuePair<System.String, System.Collections.Generic.IReadOnlyList<A.B>>>"
        );
        assert_eq!(
            cs("System.Func`2[[A, x],[System.Object[], System.Private.CoreLib]][]"),
            "System.Func<A, System.Object[]>[]"
        );
    }

    #[test]
    fn nested_types_take_their_own_arguments() {
        assert_eq!(
            cs("System.Threading.Channels.SingleConsumerUnboundedChannel`1+UnboundedChannelWriter[[System.IO.FileSystemWatcher+INotify+WatcherEvent, System.IO.FileSystem.Watcher]]"),
            "System.Threading.Channels.SingleConsumerUnboundedChannel<System.IO.FileSystemWatcher.INotify.WatcherEvent>.UnboundedChannelWriter"
        );
        assert_eq!(
            cs("A.Outer`1+Inner`1[[X, a],[Y, b]]"),
            "A.Outer<X>.Inner<Y>"
        );
        assert_eq!(
            cs("System.Linq.Enumerable+EnumerableSorter`1+<>c[[M.P, M]]"),
            "System.Linq.Enumerable.EnumerableSorter<M.P>.<>c"
        );
    }

    #[test]
    fn methods_and_signatures() {
        assert_eq!(
            cs("00007f  System.Threading.Tasks.Task`1[[System.__Canon, System.Private.CoreLib]].GetResultCore(Boolean)"),
            "00007f  System.Threading.Tasks.Task<System.__Canon>.GetResultCore(Boolean)"
        );
        assert_eq!(
            cs("MyApp.Program.BlockingWait[[MyApp.Item, MyApp]](System.Threading.Tasks.Task`1<MyApp.Item>)"),
            "MyApp.Program.BlockingWait<MyApp.Item>(System.Threading.Tasks.Task<MyApp.Item>)"
        );
        assert_eq!(
            cs("AsyncForms.Program+<Main>d__0.MoveNext()"),
            "AsyncForms.Program.<Main>d__0.MoveNext()"
        );
    }

    #[test]
    fn what_is_not_a_name_is_kept() {
        for s in [
            "libc.so.6+0x1f3a",
            "gen0+1 size",
            "a + b",
            "libcoreclr.so!Foo+0x1f",
            "operator+(x)",
            "a [[not a list",
            "List`1[[X, a]",
            "A`2[[X, a]]",
            "x = 1 + y",
            "count`s",
        ] {
            assert_eq!(cs(s), s, "{s}");
        }
    }
}
