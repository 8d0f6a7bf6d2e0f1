//! SOS's recorded outputs (`dumps/<name>.sos-<what>.txt`, written by the runners in
//! dumps/tools/: `sosrun.py` and the scripts built on it): one `### <command>` line per command,
//! then what dotnet-dump printed for it. Header lines (`# ...`) before the first section are not
//! part of any section.

use crate::Entry;

/// The sections of a truth file, in file order (a command recorded twice appears twice): each
/// the command line as run and SOS's text for it (every line ending in `\n`).
pub fn sections(file: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for l in file.lines() {
        if let Some(c) = l.strip_prefix("### ") {
            out.push((c.to_string(), String::new()));
        } else if let Some((_, text)) = out.last_mut() {
            text.push_str(l);
            text.push('\n');
        }
    }
    out
}

/// The truth `dumps/<name>.<kind>.txt` (`kind` as `sos-ehinfo`), if recorded.
pub fn truth(name: &str, kind: &str) -> Option<Vec<(String, String)>> {
    let p = crate::dumps_dir().join(format!("{name}.{kind}.txt"));
    std::fs::read_to_string(p).ok().map(|t| sections(&t))
}

/// Every corpus dump of [`crate::names`] with the truth `kind`, in name order.
pub fn dumps_with(kind: &str) -> Vec<(Entry, Vec<(String, String)>)> {
    crate::names()
        .into_iter()
        .filter_map(|n| truth(&n, kind).map(|s| (crate::entry(&n), s)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_split_at_command_lines() {
        let f = "# header\n### a 1\nx\n\ny\n### b\n### a 1\nz\n";
        let s = sections(f);
        assert_eq!(s.len(), 3);
        assert_eq!((s[0].0.as_str(), s[0].1.as_str()), ("a 1", "x\n\ny\n"));
        assert_eq!((s[1].0.as_str(), s[1].1.as_str()), ("b", ""));
        assert_eq!(s[2].1, "z\n");
    }
}
