//! The debug info's nibble stream (`src/coreclr/inc/nibblestream.h`, v8.0.0..v11.0.0; the
//! cDAC's DebugInfo contract doc, "DebugInfo Stream Encoding"): a byte's low nibble comes
//! before its high nibble; a number is a run of nibbles, most significant 3 bits first, each
//! nibble's top bit saying another follows. Signed numbers keep the sign in bit 0.

use crate::debuginfo::DebugInfoError;

/// The most nibbles a 32-bit number can take (33 bits of payload).
const MAX_NIBBLES_U32: u32 = 11;

#[derive(Clone)]
pub(crate) struct NibbleReader<'a> {
    data: &'a [u8],
    /// Next nibble, counted from the start of `data`.
    nib: usize,
    /// Where `data` starts in the whole blob (for error messages).
    base: usize,
}

impl<'a> NibbleReader<'a> {
    pub(crate) fn new(data: &'a [u8], base: usize) -> NibbleReader<'a> {
        NibbleReader { data, nib: 0, base }
    }

    fn nibble(&mut self, what: &'static str) -> Result<u8, DebugInfoError> {
        let byte = *self
            .data
            .get(self.nib / 2)
            .ok_or(DebugInfoError::Truncated {
                what,
                at: self.base + self.nib / 2,
            })?;
        let n = if self.nib.is_multiple_of(2) {
            byte & 0xF
        } else {
            byte >> 4
        };
        self.nib += 1;
        Ok(n)
    }

    /// `ReadEncodedU32`.
    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, DebugInfoError> {
        let at = self.base + self.nib / 2;
        let mut v = 0u64;
        for _ in 0..MAX_NIBBLES_U32 {
            let n = self.nibble(what)?;
            v = (v << 3) | (n & 7) as u64;
            if n & 8 == 0 {
                return u32::try_from(v).map_err(|_| DebugInfoError::Overflow { what, at });
            }
        }
        Err(DebugInfoError::Overflow { what, at })
    }

    /// `ReadEncodedI32`: magnitude in bits 1.., sign in bit 0.
    pub(crate) fn i32(&mut self, what: &'static str) -> Result<i32, DebugInfoError> {
        let x = self.u32(what)?;
        let m = (x >> 1) as i32;
        Ok(if x & 1 != 0 { -m } else { m })
    }

    /// The index of the first byte not yet (even partly) read: where raw data that follows a
    /// nibble-encoded header begins (`NibbleReader::GetNextByteIndex`).
    pub(crate) fn next_byte_index(&self) -> usize {
        self.nib.div_ceil(2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The contract doc's examples (0 -> X0, 7 -> X7, 8 -> 09, 63 -> 7F, 511 -> FF X7,
    /// 512 -> 89 08, 513 -> 89 18). Its 64 -> "F9 X0" and 65 -> "F9 X1" contradict its own
    /// scheme (F9 X0 is 0b1111_000 = 120): 64 is 89 X0.
    #[test]
    fn contract_doc_examples() {
        let cases: &[(&[u8], u32)] = &[
            (&[0x00], 0),
            (&[0x07], 7),
            (&[0x09], 8),
            (&[0x19], 9),
            (&[0x7F], 63),
            (&[0x89, 0x00], 64),
            (&[0x89, 0x01], 65),
            (&[0xF9, 0x00], 120),
            (&[0xFF, 0x07], 511),
            (&[0x89, 0x08], 512),
            (&[0x89, 0x18], 513),
        ];
        for (bytes, v) in cases {
            assert_eq!(
                NibbleReader::new(bytes, 0).u32("x").unwrap(),
                *v,
                "{bytes:02x?}"
            );
        }
        // Two values in one byte, then the next byte index.
        let mut r = NibbleReader::new(&[0x21, 0x03], 0);
        assert_eq!(r.u32("a").unwrap(), 1);
        assert_eq!(r.next_byte_index(), 1);
        assert_eq!(r.u32("b").unwrap(), 2);
        assert_eq!(r.next_byte_index(), 1);
        assert_eq!(r.i32("c").unwrap(), -1);
        assert_eq!(r.next_byte_index(), 2);
    }

    #[test]
    fn endless_and_short_numbers_are_errors() {
        assert!(matches!(
            NibbleReader::new(&[0xFF; 16], 0).u32("x"),
            Err(DebugInfoError::Overflow { .. })
        ));
        assert!(matches!(
            NibbleReader::new(&[0x88], 0).u32("x"),
            Err(DebugInfoError::Truncated { .. })
        ));
    }
}
