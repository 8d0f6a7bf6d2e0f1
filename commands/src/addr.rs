//! Parsing of addresses and counts the way debugger users type them.

use crate::output::CommandError;

/// Parses an address: hexadecimal with or without `0x`, WinDbg's backtick separator allowed
/// (`00007ff8`1234abcd`); a `0n` prefix means decimal.
pub fn parse_address(text: &str) -> Result<u64, CommandError> {
    let t: String = text.trim().chars().filter(|&c| c != '`').collect();
    if let Some(dec) = t.strip_prefix("0n") {
        return dec
            .parse::<u64>()
            .map_err(|_| CommandError::bad_argument(format!("'{text}'"), "not a decimal number"));
    }
    let hex = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(&t);
    if hex.is_empty() || hex.len() > 16 {
        return Err(CommandError::bad_argument(
            format!("'{text}'"),
            "not an address (hexadecimal, at most 16 digits)",
        ));
    }
    u64::from_str_radix(hex, 16)
        .map_err(|_| CommandError::bad_argument(format!("'{text}'"), "not a hexadecimal address"))
}

/// Parses a count: decimal, or hexadecimal with `0x`; WinDbg's `L` prefix is accepted (`L20`
/// means 0x20 elements, as in WinDbg).
pub fn parse_count(text: &str) -> Result<u64, CommandError> {
    let t = text.trim();
    if let Some(l) = t.strip_prefix('L').or_else(|| t.strip_prefix('l')) {
        return parse_address(l);
    }
    if let Some(h) = t.strip_prefix("0x") {
        return u64::from_str_radix(h, 16)
            .map_err(|_| CommandError::bad_argument(format!("'{text}'"), "not a count"));
    }
    t.parse::<u64>()
        .map_err(|_| CommandError::bad_argument(format!("'{text}'"), "not a count"))
}

/// Formats an address as JSON results carry it: `0x` and lower-case hexadecimal digits.
pub fn hex(v: u64) -> String {
    format!("0x{v:x}")
}

/// Formats an address as SOS prints it: 16 hexadecimal digits, lower case.
pub fn fmt_addr(a: u64) -> String {
    format!("{a:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(parse_address("0x10").unwrap(), 0x10);
        assert_eq!(parse_address("7fff`0000abcd").unwrap(), 0x7fff_0000_abcd);
        assert_eq!(parse_address("0n16").unwrap(), 16);
        assert_eq!(parse_address("ffffffffffffffff").unwrap(), u64::MAX);
        assert!(parse_address("1ffffffffffffffff").is_err());
        assert!(parse_address("xyz").is_err());
        assert!(parse_address("").is_err());
    }

    #[test]
    fn counts() {
        assert_eq!(parse_count("16").unwrap(), 16);
        assert_eq!(parse_count("L20").unwrap(), 0x20);
        assert_eq!(parse_count("0x20").unwrap(), 0x20);
        assert!(parse_count("-1").is_err());
    }
}
