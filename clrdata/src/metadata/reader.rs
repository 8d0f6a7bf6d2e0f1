//! The metadata root (`BSJB`), its stream headers, the heaps and raw row access.

use super::error::{Error, Result};
use super::tables::{decode_coded, schema, CodedIndex, Column, TableId, TableLayout, MAX_COLUMNS};
use std::fmt;

/// The metadata root signature, `BSJB` read as a little-endian u32.
pub const METADATA_SIGNATURE: u32 = 0x424A_5342;

/// Most streams a metadata root may declare (real assemblies have 5; the runtime caps at 6+).
const MAX_STREAMS: u16 = 64;

/// A metadata token: table number in the high byte, 1-based row id in the low 24 bits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Token(pub u32);

impl Token {
    /// The token for row `rid` of `table`.
    pub fn new(table: TableId, rid: u32) -> Token {
        Token(((table as u32) << 24) | (rid & 0x00FF_FFFF))
    }

    /// The table byte (high 8 bits), which may name no known table.
    pub fn table_byte(self) -> u8 {
        (self.0 >> 24) as u8
    }

    /// The table, if the high byte names a known table.
    pub fn table(self) -> Option<TableId> {
        TableId::from_u8(self.table_byte())
    }

    /// The 1-based row id (0: a null reference).
    pub fn rid(self) -> u32 {
        self.0 & 0x00FF_FFFF
    }

    /// Whether the row id is 0 (a null reference).
    pub fn is_null(self) -> bool {
        self.rid() == 0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Token({:#010x})", self.0)
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#010x}", self.0)
    }
}

/// One stream header of the metadata root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamHeader<'a> {
    /// The stream's name (`#~`, `#Strings`, ...).
    pub name: &'a str,
    /// Offset from the start of the metadata root.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
}

/// A raw row: the values of its columns in schema order (every column fits a u32).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawRow {
    /// The table.
    pub table: TableId,
    /// The 1-based row id.
    pub rid: u32,
    /// Column values (only the first `schema(table).len()` are meaningful).
    pub values: [u32; MAX_COLUMNS],
}

/// Parsed ECMA-335 metadata over a borrowed byte slice (the bytes starting at `BSJB`).
///
/// Parsing reads only the root, the stream headers and the table stream header; rows, strings
/// and blobs are read on demand, zero-copy. Every size read from the input is checked against
/// the slice, so any count this type hands out is bounded by the input's length.
pub struct Metadata<'a> {
    data: &'a [u8],
    version: &'a str,
    streams: Vec<StreamHeader<'a>>,
    table_stream: &'a [u8],
    table_stream_name: &'a str,
    strings: &'a [u8],
    blobs: &'a [u8],
    guids: &'a [u8],
    user_strings: &'a [u8],
    layout: TableLayout,
    pub(crate) nested: std::sync::OnceLock<Vec<(u32, u32)>>,
}

impl fmt::Debug for Metadata<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metadata")
            .field("len", &self.data.len())
            .field("version", &self.version)
            .field("streams", &self.streams)
            .finish()
    }
}

fn rd_u16(d: &[u8], off: usize, what: &'static str) -> Result<u16> {
    d.get(off..off.wrapping_add(2))
        .filter(|_| off.checked_add(2).is_some())
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .ok_or(Error::Truncated {
            what,
            offset: off,
            needed: 2,
            available: d.len().saturating_sub(off),
        })
}

fn rd_u32(d: &[u8], off: usize, what: &'static str) -> Result<u32> {
    d.get(off..off.wrapping_add(4))
        .filter(|_| off.checked_add(4).is_some())
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or(Error::Truncated {
            what,
            offset: off,
            needed: 4,
            available: d.len().saturating_sub(off),
        })
}

/// Reads an ECMA-335 compressed unsigned integer (II.23.2) at `pos`; returns value and length.
pub fn read_compressed_u32(d: &[u8], pos: usize) -> Option<(u32, usize)> {
    let b0 = *d.get(pos)? as u32;
    if b0 & 0x80 == 0 {
        Some((b0, 1))
    } else if b0 & 0xC0 == 0x80 {
        let b1 = *d.get(pos + 1)? as u32;
        Some((((b0 & 0x3F) << 8) | b1, 2))
    } else if b0 & 0xE0 == 0xC0 {
        let b = d.get(pos + 1..pos + 4)?;
        Some((
            ((b0 & 0x1F) << 24) | ((b[0] as u32) << 16) | ((b[1] as u32) << 8) | b[2] as u32,
            4,
        ))
    } else {
        None
    }
}

impl<'a> Metadata<'a> {
    /// Parses metadata starting at its root (`BSJB`). `data` may extend past the metadata.
    pub fn parse(data: &'a [u8]) -> Result<Metadata<'a>> {
        let sig = rd_u32(data, 0, "metadata root")?;
        if sig != METADATA_SIGNATURE {
            return Err(Error::BadSignature {
                what: "metadata root",
                offset: 0,
                found: sig,
                expected: METADATA_SIGNATURE,
            });
        }
        let vlen = rd_u32(data, 12, "metadata root")? as usize;
        if vlen > 255 {
            return Err(Error::BadStream {
                stream: "root".into(),
                reason: format!("version string length {vlen} exceeds 255"),
            });
        }
        let vbytes = data.get(16..16 + vlen).ok_or(Error::Truncated {
            what: "metadata version string",
            offset: 16,
            needed: vlen,
            available: data.len().saturating_sub(16),
        })?;
        let vend = vbytes.iter().position(|&b| b == 0).unwrap_or(vbytes.len());
        let version = std::str::from_utf8(&vbytes[..vend]).map_err(|_| Error::BadStream {
            stream: "root".into(),
            reason: "version string is not UTF-8".into(),
        })?;
        let mut pos = 16 + ((vlen + 3) & !3);
        let nstreams = rd_u16(data, pos + 2, "metadata root stream count")?;
        if nstreams > MAX_STREAMS {
            return Err(Error::BadStream {
                stream: "root".into(),
                reason: format!("{nstreams} streams declared (at most {MAX_STREAMS} accepted)"),
            });
        }
        pos += 4;
        let mut streams = Vec::with_capacity(nstreams as usize);
        for _ in 0..nstreams {
            let offset = rd_u32(data, pos, "stream header")?;
            let size = rd_u32(data, pos + 4, "stream header")?;
            let name_start = pos + 8;
            let rest = data.get(name_start..).unwrap_or(&[]);
            let window = &rest[..rest.len().min(32)];
            let nlen = window
                .iter()
                .position(|&b| b == 0)
                .ok_or(Error::BadStream {
                    stream: "root".into(),
                    reason: format!(
                        "stream name at offset {name_start:#x} not terminated within 32 bytes"
                    ),
                })?;
            let name = std::str::from_utf8(&window[..nlen]).map_err(|_| Error::BadStream {
                stream: "root".into(),
                reason: format!("stream name at offset {name_start:#x} is not UTF-8"),
            })?;
            let end = offset as u64 + size as u64;
            if end > data.len() as u64 {
                return Err(Error::BadStream {
                    stream: name.to_string(),
                    reason: format!(
                        "offset {offset:#x} + size {size:#x} extends past the metadata end {:#x}",
                        data.len()
                    ),
                });
            }
            streams.push(StreamHeader { name, offset, size });
            pos = name_start + ((nlen + 4) & !3);
        }
        let find = |n: &str| {
            streams
                .iter()
                .find(|s| s.name == n)
                .map(|s| &data[s.offset as usize..(s.offset as usize + s.size as usize)])
        };
        let (table_stream, table_stream_name) = if let Some(s) = find("#~") {
            (s, "#~")
        } else if let Some(s) = find("#-") {
            (s, "#-")
        } else {
            return Err(Error::BadStream {
                stream: "#~".into(),
                reason: "no table stream (#~ or #-)".into(),
            });
        };
        let large = streams.iter().any(|s| s.name == "#JTD");
        let layout = TableLayout::parse(table_stream, table_stream_name, large)?;
        let strings = find("#Strings").unwrap_or(&[]);
        let blobs = find("#Blob").unwrap_or(&[]);
        let guids = find("#GUID").unwrap_or(&[]);
        let user_strings = find("#US").unwrap_or(&[]);
        Ok(Metadata {
            data,
            version,
            streams,
            table_stream,
            table_stream_name,
            strings,
            blobs,
            guids,
            user_strings,
            layout,
            nested: std::sync::OnceLock::new(),
        })
    }

    /// The bytes this metadata was parsed from.
    pub fn bytes(&self) -> &'a [u8] {
        self.data
    }

    /// The runtime version string of the root (`v4.0.30319`).
    pub fn version(&self) -> &'a str {
        self.version
    }

    /// The stream headers, in root order.
    pub fn streams(&self) -> &[StreamHeader<'a>] {
        &self.streams
    }

    /// The table stream's name: `#~` (compressed) or `#-` (uncompressed, edit-and-continue).
    pub fn table_stream_name(&self) -> &'a str {
        self.table_stream_name
    }

    /// The table stream's header: row counts, HeapSizes, Valid and Sorted masks.
    pub fn layout(&self) -> &TableLayout {
        &self.layout
    }

    /// Number of rows of `table`.
    pub fn row_count(&self, table: TableId) -> u32 {
        self.layout.rows(table)
    }

    /// The raw bytes of row `rid` (1-based) of `table`.
    pub fn row_bytes(&self, table: TableId, rid: u32) -> Result<&'a [u8]> {
        let info = self.layout.tables[table as usize];
        if rid == 0 || rid > info.rows {
            return Err(Error::RowOutOfRange {
                table,
                rid,
                rows: info.rows,
            });
        }
        let start = info.offset + (rid as usize - 1) * info.row_size as usize;
        // In range: TableLayout::parse checked every table against the stream's end.
        self.table_stream
            .get(start..start + info.row_size as usize)
            .ok_or(Error::RowOutOfRange {
                table,
                rid,
                rows: info.rows,
            })
    }

    /// Reads row `rid` of `table` into its column values.
    pub fn raw_row(&self, table: TableId, rid: u32) -> Result<RawRow> {
        let bytes = self.row_bytes(table, rid)?;
        let mut values = [0u32; MAX_COLUMNS];
        let mut pos = 0usize;
        for (i, w) in self
            .layout
            .column_widths(table, self.is_large())
            .enumerate()
        {
            let v = match w {
                1 => bytes.get(pos).map(|&b| b as u32),
                2 => bytes
                    .get(pos..pos + 2)
                    .map(|b| u16::from_le_bytes([b[0], b[1]]) as u32),
                _ => bytes
                    .get(pos..pos + 4)
                    .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            };
            values[i] = v.ok_or(Error::RowOutOfRange {
                table,
                rid,
                rows: self.row_count(table),
            })?;
            pos += w as usize;
        }
        Ok(RawRow { table, rid, values })
    }

    fn is_large(&self) -> bool {
        self.streams.iter().any(|s| s.name == "#JTD")
    }

    /// Decodes column `col` of a raw row as a coded index into a token.
    pub(crate) fn coded(&self, row: &RawRow, col: usize) -> Result<Token> {
        let Some(Column::Coded(ci)) = schema(row.table).get(col).copied() else {
            return Err(Error::BadRow {
                table: row.table,
                rid: row.rid,
                reason: format!("column {col} is not a coded index"),
            });
        };
        decode_coded_token(ci, row.values[col]).ok_or_else(|| Error::BadRow {
            table: row.table,
            rid: row.rid,
            reason: format!(
                "column {col}: coded index {:#x} has an unused tag ({ci:?})",
                row.values[col]
            ),
        })
    }

    /// A string of `#Strings` at byte offset `index` (UTF-8, NUL-terminated).
    pub fn string(&self, index: u32) -> Result<&'a str> {
        if index == 0 && self.strings.is_empty() {
            return Ok("");
        }
        let rest = self
            .strings
            .get(index as usize..)
            .filter(|r| !r.is_empty())
            .ok_or(Error::BadHeapIndex {
                heap: "#Strings",
                index,
                reason: "beyond the heap",
            })?;
        let n = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or(Error::BadHeapIndex {
                heap: "#Strings",
                index,
                reason: "string not NUL-terminated before the heap end",
            })?;
        std::str::from_utf8(&rest[..n]).map_err(|_| Error::BadHeapIndex {
            heap: "#Strings",
            index,
            reason: "string is not valid UTF-8",
        })
    }

    /// A blob of `#Blob` at byte offset `index` (its compressed length prefix removed).
    pub fn blob(&self, index: u32) -> Result<&'a [u8]> {
        if index == 0 && self.blobs.is_empty() {
            return Ok(&[]);
        }
        blob_at(self.blobs, index, "#Blob")
    }

    /// The GUID at 1-based `index` of `#GUID` (`None` for index 0).
    pub fn guid(&self, index: u32) -> Result<Option<[u8; 16]>> {
        if index == 0 {
            return Ok(None);
        }
        let start = (index as usize - 1) * 16;
        let b = self
            .guids
            .get(start..start + 16)
            .ok_or(Error::BadHeapIndex {
                heap: "#GUID",
                index,
                reason: "beyond the heap",
            })?;
        let mut g = [0u8; 16];
        g.copy_from_slice(b);
        Ok(Some(g))
    }

    /// The user string (`ldstr` literal) at byte offset `index` of `#US`, decoded from UTF-16
    /// (unpaired surrogates become U+FFFD). A `ldstr` token's rid is this offset.
    pub fn user_string(&self, index: u32) -> Result<String> {
        let units = self.user_string_utf16(index)?;
        Ok(char::decode_utf16(units.iter().copied())
            .map(|r| r.unwrap_or(char::REPLACEMENT_CHARACTER))
            .collect())
    }

    /// The UTF-16 code units of the user string at `index` of `#US`.
    pub fn user_string_utf16(&self, index: u32) -> Result<Vec<u16>> {
        let b = blob_at(self.user_strings, index, "#US")?;
        // An odd length carries a final flag byte (II.24.2.4); the characters precede it.
        let chars = &b[..b.len() & !1];
        Ok(chars
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect())
    }

    /// The raw `#Strings` heap.
    pub fn strings_heap(&self) -> &'a [u8] {
        self.strings
    }

    /// The raw `#Blob` heap.
    pub fn blob_heap(&self) -> &'a [u8] {
        self.blobs
    }

    /// The raw `#GUID` heap.
    pub fn guid_heap(&self) -> &'a [u8] {
        self.guids
    }

    /// The raw `#US` heap.
    pub fn user_string_heap(&self) -> &'a [u8] {
        self.user_strings
    }
}

fn blob_at<'a>(heap: &'a [u8], index: u32, name: &'static str) -> Result<&'a [u8]> {
    let i = index as usize;
    let (len, n) = read_compressed_u32(heap, i).ok_or(Error::BadHeapIndex {
        heap: name,
        index,
        reason: "bad or missing length prefix",
    })?;
    let start = i + n;
    heap.get(start..start + len as usize)
        .ok_or(Error::BadHeapIndex {
            heap: name,
            index,
            reason: "blob extends past the heap end",
        })
}

/// Decodes a coded index value into a token (`None` for an unused tag).
pub fn decode_coded_token(ci: CodedIndex, value: u32) -> Option<Token> {
    decode_coded(ci, value).map(|(t, rid)| Token::new(t, rid))
}
