//! The GC info's bit stream: bits are read least significant first, byte after byte (the
//! runtime reads little-endian machine words, which is the same order), at positions counted
//! from the blob's first byte. Every read is bounded by the blob: reading past its end is an
//! error naming what was being read, never a panic.
//!
//! Variable-length numbers (`BitStreamReader::DecodeVarLengthUnsigned/Signed` in
//! `src/coreclr/inc/gcinfodecoder.h`, v8.0.0..v11.0.0): groups of `base` bits, least
//! significant group first, each followed by one continuation bit.

use crate::gcinfo::GcInfoError;

#[derive(Clone)]
pub(crate) struct BitReader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> BitReader<'a> {
    pub(crate) fn new(data: &'a [u8]) -> BitReader<'a> {
        BitReader { data, pos: 0 }
    }

    /// Bits in the blob.
    pub(crate) fn len_bits(&self) -> usize {
        self.data.len() * 8
    }

    /// The next bit to read, from the blob's start.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// Moves to `pos` (at most the end of the blob).
    pub(crate) fn set_pos(&mut self, pos: usize, what: &'static str) -> Result<(), GcInfoError> {
        if pos > self.len_bits() {
            return Err(GcInfoError::Truncated {
                what,
                at: pos,
                wanted: 0,
                len_bits: self.len_bits(),
            });
        }
        self.pos = pos;
        Ok(())
    }

    /// Skips `n` bits (which must lie inside the blob).
    pub(crate) fn skip(&mut self, n: u64, what: &'static str) -> Result<(), GcInfoError> {
        let to = (self.pos as u64)
            .checked_add(n)
            .filter(|&p| p <= self.len_bits() as u64);
        match to {
            Some(p) => {
                self.pos = p as usize;
                Ok(())
            }
            None => Err(GcInfoError::Truncated {
                what,
                at: self.pos,
                wanted: n.min(u32::MAX as u64) as u32,
                len_bits: self.len_bits(),
            }),
        }
    }

    /// Reads `n` (0..=64) bits.
    pub(crate) fn read(&mut self, n: u32, what: &'static str) -> Result<u64, GcInfoError> {
        debug_assert!(n <= 64);
        if n == 0 {
            return Ok(0);
        }
        if self.pos + n as usize > self.len_bits() {
            return Err(GcInfoError::Truncated {
                what,
                at: self.pos,
                wanted: n,
                len_bits: self.len_bits(),
            });
        }
        let mut v = 0u64;
        let mut got = 0u32;
        let mut p = self.pos;
        while got < n {
            let byte = self.data[p / 8] as u64;
            let off = (p % 8) as u32;
            let take = (8 - off).min(n - got);
            let bits = (byte >> off) & ((1u64 << take) - 1);
            v |= bits << got;
            got += take;
            p += take as usize;
        }
        self.pos = p;
        Ok(v)
    }

    pub(crate) fn read1(&mut self, what: &'static str) -> Result<bool, GcInfoError> {
        Ok(self.read(1, what)? != 0)
    }

    /// `DecodeVarLengthUnsigned(base)`.
    pub(crate) fn var_unsigned(
        &mut self,
        base: u32,
        what: &'static str,
    ) -> Result<u64, GcInfoError> {
        let at = self.pos;
        let ext = 1u64 << base;
        let mask = ext - 1;
        let first = self.read(base + 1, what)?;
        if first & ext == 0 {
            return Ok(first);
        }
        let mut result = first & mask;
        let mut shift = base;
        loop {
            if shift + base > 64 {
                return Err(GcInfoError::VarLengthOverflow { what, at });
            }
            let chunk = self.read(base + 1, what)?;
            result |= (chunk & mask) << shift;
            if chunk & ext == 0 {
                return Ok(result);
            }
            shift += base;
        }
    }

    /// `DecodeVarLengthSigned(base)`: sign-extended from the last group's top bit.
    pub(crate) fn var_signed(&mut self, base: u32, what: &'static str) -> Result<i64, GcInfoError> {
        let at = self.pos;
        let ext = 1u64 << base;
        let mask = ext - 1;
        let mut result = 0u64;
        let mut shift = 0u32;
        loop {
            if shift + base > 64 {
                return Err(GcInfoError::VarLengthOverflow { what, at });
            }
            let chunk = self.read(base + 1, what)?;
            result |= (chunk & mask) << shift;
            if chunk & ext == 0 {
                let sbits = 64 - (shift + base);
                return Ok(((result << sbits) as i64) >> sbits);
            }
            shift += base;
        }
    }

    /// A variable-length unsigned number that must fit a u32 (counts, offsets).
    pub(crate) fn var_u32(&mut self, base: u32, what: &'static str) -> Result<u32, GcInfoError> {
        let v = self.var_unsigned(base, what)?;
        u32::try_from(v).map_err(|_| GcInfoError::OutOfRange {
            what,
            value: v as i128,
            limit: u32::MAX as i128,
        })
    }

    /// A variable-length signed number that must fit an i32 once scaled by `scale`.
    pub(crate) fn var_i32_scaled(
        &mut self,
        base: u32,
        scale: i64,
        what: &'static str,
    ) -> Result<i32, GcInfoError> {
        let v = self.var_signed(base, what)?;
        let scaled = (v as i128) * (scale as i128);
        i32::try_from(scaled).map_err(|_| GcInfoError::OutOfRange {
            what,
            value: scaled,
            limit: i32::MAX as i128,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_are_read_lsb_first() {
        let d = [0b1010_0110u8, 0xFF];
        let mut r = BitReader::new(&d);
        assert_eq!(r.read(1, "x").unwrap(), 0);
        assert_eq!(r.read(3, "x").unwrap(), 0b011);
        assert_eq!(r.read(6, "x").unwrap(), 0b11_1010);
        assert_eq!(r.pos(), 10);
        assert!(r.read(7, "x").is_err());
        assert_eq!(r.read(6, "x").unwrap(), 0x3F);
    }

    #[test]
    fn var_length_numbers() {
        // base 2: value 5 = 0b101 -> groups (01, ext) (01, end): bits 1,0,1 then 1,0,0
        let mut w = 0u64;
        let bits = [1, 0, 1, 1, 0, 0];
        for (i, b) in bits.iter().enumerate() {
            w |= (*b as u64) << i;
        }
        let d = w.to_le_bytes();
        assert_eq!(BitReader::new(&d).var_unsigned(2, "x").unwrap(), 5);
        // signed base 2, -1: one group 11, no extension -> bits 1,1,0
        let d = [0b011u8];
        assert_eq!(BitReader::new(&d).var_signed(2, "x").unwrap(), -1);
        // An endless extension is an error, not a loop.
        let d = [0xFFu8; 64];
        assert!(matches!(
            BitReader::new(&d).var_unsigned(3, "x"),
            Err(GcInfoError::VarLengthOverflow { .. })
        ));
    }
}
