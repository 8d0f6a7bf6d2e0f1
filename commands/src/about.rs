//! What this build reads, for `--version` and the WinDbg extension's `!help`: the runtime
//! families and, for each, the capabilities verified against that runtime's own DAC
//! (clrdata's lists, so the text follows them).

use clrdata::discovery::layout::{Capability, Family, ALL_CAPABILITIES};
use clrdata::discovery::supplement::{VERIFIED_NET10, VERIFIED_NET11, VERIFIED_NET9};

/// Every family clrdata reads, in release order.
pub const FAMILIES: [Family; 4] = [Family::Net8, Family::Net9, Family::Net10, Family::Net11];

/// A family's name and what is verified on it.
fn family(f: Family) -> (&'static str, &'static [Capability]) {
    match f {
        Family::Net8 => (".NET 8", ALL_CAPABILITIES),
        Family::Net9 => (".NET 9", VERIFIED_NET9),
        Family::Net10 => (".NET 10", VERIFIED_NET10),
        Family::Net11 => (".NET 11", VERIFIED_NET11),
    }
}

/// The runtimes this build reads, one line per family with what is verified on it.
pub fn runtimes_read() -> String {
    let mut s = String::from(
        "Reads .NET dumps without the DAC (x86_64 Linux ELF cores and Windows minidumps):\n",
    );
    for f in FAMILIES {
        let (name, caps) = family(f);
        let what = if ALL_CAPABILITIES.iter().all(|c| caps.contains(c)) {
            "everything".to_string()
        } else {
            let missing: Vec<&str> = ALL_CAPABILITIES
                .iter()
                .filter(|c| !caps.contains(c))
                .map(|c| c.describe())
                .collect();
            format!("all but {} (refused, not guessed)", missing.join(", "))
        };
        s.push_str(&format!("  {name}: {what}\n"));
    }
    s
}
