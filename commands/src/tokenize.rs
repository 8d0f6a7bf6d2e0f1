//! Splits a command line into words: whitespace separates, single and double quotes group,
//! a backslash escapes the next character inside double quotes or outside quotes.

/// Splits `line` into words. An unterminated quote is an error naming its column.
pub fn split(line: &str) -> Result<Vec<String>, crate::output::CommandError> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' | '"' => {
                in_word = true;
                let quote = c;
                let mut closed = false;
                while let Some((_, d)) = chars.next() {
                    if d == quote {
                        closed = true;
                        break;
                    }
                    if d == '\\' && quote == '"' {
                        if let Some((_, e)) = chars.next() {
                            cur.push(e);
                        }
                        continue;
                    }
                    cur.push(d);
                }
                if !closed {
                    return Err(crate::output::CommandError::Usage {
                        message: format!("unterminated {quote} quote starting at column {}", i + 1),
                    });
                }
            }
            '\\' => {
                in_word = true;
                if let Some((_, e)) = chars.next() {
                    cur.push(e);
                }
            }
            _ => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn words_and_quotes() {
        assert_eq!(
            split("dumpheap  -type 'a b'").unwrap(),
            ["dumpheap", "-type", "a b"]
        );
        assert_eq!(split(r#"x "a\"b" c\ d"#).unwrap(), ["x", "a\"b", "c d"]);
        assert_eq!(split("  ").unwrap(), Vec::<String>::new());
        assert_eq!(split("''").unwrap(), [""]);
        assert!(split("a 'b").is_err());
    }
}
