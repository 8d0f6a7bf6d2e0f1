//! Portable PDBs (the debugging metadata of .NET assemblies): source lines of IL offsets, local
//! variable names and scopes, async and iterator state machines.
//!
//! A portable PDB is ECMA-335 metadata (`BSJB`) with a `#Pdb` stream and the debugging tables
//! 0x30..0x37 (Document, MethodDebugInformation, LocalScope, LocalVariable, LocalConstant,
//! ImportScope, StateMachineMethod, CustomDebugInformation), as the Portable PDB v1.0 spec
//! (dotnet/runtime `docs/design/specs/PortablePdb-Metadata.md`) defines them. The heaps are read
//! by [`Metadata`]; the table stream is laid out here, because the width of a column that points
//! into a type-system table (LocalScope.Method, StateMachineMethod, CustomDebugInformation.Parent)
//! depends on that table's row count in the *assembly*, which the PDB records in its `#Pdb`
//! stream (TypeSystemTableRows).
//!
//! Lines follow the rule of the debuggers: [`PortablePdb::source_line`] is SOS's
//! `SymbolFile.GetSourceLineByILOffset` (dotnet/diagnostics
//! `src/Microsoft.Diagnostics.DebugServices.Implementation/SymbolFile.cs`): the last sequence
//! point whose IL offset is at or before the offset, hidden points (line 0xFEEFEE) and line 0
//! skipped. [`PortablePdb::local_name`] is SOS's `GetLocalVariableByIndex` (same file): the first
//! LocalVariable row of the method's scopes with that slot, none when it is DebuggerHidden.
//!
//! Hostile input: every row, heap index and blob is checked; sequence-point and document-name
//! decoding is bounded by the blob's length; errors ([`PdbError`]) name the table, row, blob and
//! byte offset.

use super::error::Error;
use super::reader::{read_compressed_u32, Metadata, Token};
use super::tables::{
    schema, CodedIndex, Column, TableId, HEAP_BLOB_WIDE, HEAP_EXTRA_DATA, HEAP_GUID_WIDE,
    HEAP_STRINGS_WIDE,
};
use std::fmt;
use std::ops::Range;

/// The start (and end) line of a hidden sequence point.
pub const HIDDEN_LINE: u32 = 0x00FE_EFEE;

/// Longest document name decoded (a name's parts are blobs that may repeat: without a bound a
/// small hostile PDB could name a document with gigabytes).
pub const MAX_DOCUMENT_NAME: usize = 32 * 1024;

/// CustomDebugInformation kind: State Machine Hoisted Local Scopes
/// {6DA9A61E-F8C7-4874-BE62-68BC5630DF71}, as stored in `#GUID`.
pub const CDI_STATE_MACHINE_HOISTED_LOCAL_SCOPES: [u8; 16] = guid_bytes(
    0x6DA9_A61E,
    0xF8C7,
    0x4874,
    [0xBE, 0x62, 0x68, 0xBC, 0x56, 0x30, 0xDF, 0x71],
);
/// CustomDebugInformation kind: Dynamic Local Variables {83C563C4-B4F3-47D5-B824-BA5441477EA8}.
pub const CDI_DYNAMIC_LOCAL_VARIABLES: [u8; 16] = guid_bytes(
    0x83C5_63C4,
    0xB4F3,
    0x47D5,
    [0xB8, 0x24, 0xBA, 0x54, 0x41, 0x47, 0x7E, 0xA8],
);
/// CustomDebugInformation kind: Edit and Continue Local Slot Map
/// {755F52A8-91C5-45BE-B4B8-209571E552BD}.
pub const CDI_ENC_LOCAL_SLOT_MAP: [u8; 16] = guid_bytes(
    0x755F_52A8,
    0x91C5,
    0x45BE,
    [0xB4, 0xB8, 0x20, 0x95, 0x71, 0xE5, 0x52, 0xBD],
);
/// CustomDebugInformation kind: Embedded Source {0E8A571B-6926-466E-B4AD-8AB04611F5FE}.
pub const CDI_EMBEDDED_SOURCE: [u8; 16] = guid_bytes(
    0x0E8A_571B,
    0x6926,
    0x466E,
    [0xB4, 0xAD, 0x8A, 0xB0, 0x46, 0x11, 0xF5, 0xFE],
);
/// CustomDebugInformation kind: Source Link {CC110556-A091-4D38-9FEC-25AB9A351A6A}.
pub const CDI_SOURCE_LINK: [u8; 16] = guid_bytes(
    0xCC11_0556,
    0xA091,
    0x4D38,
    [0x9F, 0xEC, 0x25, 0xAB, 0x9A, 0x35, 0x1A, 0x6A],
);
/// Document language: Visual C# {3F5162F8-07C6-11D3-9053-00C04FA302A1}.
pub const LANGUAGE_CSHARP: [u8; 16] = guid_bytes(
    0x3F51_62F8,
    0x07C6,
    0x11D3,
    [0x90, 0x53, 0x00, 0xC0, 0x4F, 0xA3, 0x02, 0xA1],
);
/// Document language: Visual Basic {3A12D0B8-C26C-11D0-B442-00A0244A1DD2}.
pub const LANGUAGE_VB: [u8; 16] = guid_bytes(
    0x3A12_D0B8,
    0xC26C,
    0x11D0,
    [0xB4, 0x42, 0x00, 0xA0, 0x24, 0x4A, 0x1D, 0xD2],
);
/// Document language: Visual F# {AB4F38C9-B6E6-43BA-BE3B-58080B2CCCE3}.
pub const LANGUAGE_FSHARP: [u8; 16] = guid_bytes(
    0xAB4F_38C9,
    0xB6E6,
    0x43BA,
    [0xBE, 0x3B, 0x58, 0x08, 0x0B, 0x2C, 0xCC, 0xE3],
);
/// Document hash algorithm: SHA-1 {FF1816EC-AA5E-4D10-87F7-6F4963833460}.
pub const HASH_SHA1: [u8; 16] = guid_bytes(
    0xFF18_16EC,
    0xAA5E,
    0x4D10,
    [0x87, 0xF7, 0x6F, 0x49, 0x63, 0x83, 0x34, 0x60],
);
/// Document hash algorithm: SHA-256 {8829D00F-11B8-4213-878B-770E8597AC16}.
pub const HASH_SHA256: [u8; 16] = guid_bytes(
    0x8829_D00F,
    0x11B8,
    0x4213,
    [0x87, 0x8B, 0x77, 0x0E, 0x85, 0x97, 0xAC, 0x16],
);

/// LocalVariableAttributes: the variable is not shown by debuggers.
pub const LOCAL_DEBUGGER_HIDDEN: u16 = 0x0001;

/// A GUID's 16 bytes as `#GUID` and the PE's CodeView entry store them (Data1..3 little-endian).
pub const fn guid_bytes(d1: u32, d2: u16, d3: u16, d4: [u8; 8]) -> [u8; 16] {
    let a = d1.to_le_bytes();
    let b = d2.to_le_bytes();
    let c = d3.to_le_bytes();
    [
        a[0], a[1], a[2], a[3], b[0], b[1], c[0], c[1], d4[0], d4[1], d4[2], d4[3], d4[4], d4[5],
        d4[6], d4[7],
    ]
}

/// A GUID's text form (`3f5162f8-07c6-11d3-9053-00c04fa302a1`) from its stored bytes.
pub fn guid_string(g: &[u8; 16]) -> String {
    format!(
        "{:08x}-{:04x}-{:04x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
        u32::from_le_bytes([g[0], g[1], g[2], g[3]]),
        u16::from_le_bytes([g[4], g[5]]),
        u16::from_le_bytes([g[6], g[7]]),
        g[8],
        g[9],
        g[10],
        g[11],
        g[12],
        g[13],
        g[14],
        g[15]
    )
}

/// Everything that can go wrong reading a portable PDB or finding one for an image.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PdbError {
    /// The metadata root, a stream header or a heap is malformed.
    #[error("portable PDB metadata: {0}")]
    Metadata(#[from] Error),
    /// The metadata has no `#Pdb` stream: type-system metadata, not a portable PDB.
    #[error("not a portable PDB: no #Pdb stream (streams: {streams})")]
    NoPdbStream {
        /// The stream names found.
        streams: String,
    },
    /// The `#Pdb` stream is malformed.
    #[error("#Pdb stream at offset {offset:#x}: {reason}")]
    BadPdbStream {
        /// Offset of the stream from the metadata root.
        offset: usize,
        /// What is wrong.
        reason: String,
    },
    /// The table stream's header or layout is malformed.
    #[error("table stream (#~) at offset {offset:#x}: {reason}")]
    BadTables {
        /// Offset within the table stream.
        offset: usize,
        /// What is wrong.
        reason: String,
    },
    /// A row is out of range or holds a value that cannot be right.
    #[error("table {table:?} row {rid}: {reason}")]
    BadRow {
        /// The table.
        table: TableId,
        /// The 1-based row id.
        rid: u32,
        /// What is wrong.
        reason: String,
    },
    /// A blob (sequence points, document name, custom debug information) is malformed.
    #[error("{what} blob of {table:?} row {rid}: byte {offset} of {len}: {reason}")]
    BadBlob {
        /// Which blob.
        what: &'static str,
        /// The table of the row that holds it.
        table: TableId,
        /// The row.
        rid: u32,
        /// Offset inside the blob where decoding failed.
        offset: usize,
        /// The blob's length.
        len: usize,
        /// What is wrong.
        reason: String,
    },
    /// A token does not name what the operation needs (or names a method the PDB lacks).
    #[error("token {token:#010x}: {reason}")]
    BadToken {
        /// The token.
        token: u32,
        /// What is wrong.
        reason: &'static str,
    },
    /// A PE image's debug directory or one of its entries is malformed.
    #[error("PE debug directory at offset {offset:#x}: {reason}")]
    BadDebugDirectory {
        /// Offset (from the image base, in the layout read) of the structure.
        offset: usize,
        /// What is wrong.
        reason: String,
    },
    /// An embedded portable PDB (debug directory entry type 17) cannot be decompressed.
    #[error("embedded portable PDB: {reason}")]
    Embedded {
        /// What is wrong.
        reason: String,
    },
    /// A PDB file could not be read.
    #[error("{path}: {reason}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        reason: String,
    },
}

/// The result type of the PDB reader.
pub type PdbResult<T> = std::result::Result<T, PdbError>;

/// A portable PDB's id: the 20 bytes of the `#Pdb` stream, which a PE's CodeView debug
/// directory entry repeats as its GUID (16 bytes) and its entry's TimeDateStamp (4 bytes).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PdbId(pub [u8; 20]);

impl PdbId {
    /// The id a CodeView entry names: its GUID followed by the entry's stamp (little-endian).
    pub fn from_guid_stamp(guid: [u8; 16], stamp: u32) -> PdbId {
        let mut b = [0u8; 20];
        b[..16].copy_from_slice(&guid);
        b[16..].copy_from_slice(&stamp.to_le_bytes());
        PdbId(b)
    }

    /// The GUID part (first 16 bytes).
    pub fn guid(&self) -> [u8; 16] {
        let mut g = [0u8; 16];
        g.copy_from_slice(&self.0[..16]);
        g
    }

    /// The stamp part (last 4 bytes, little-endian).
    pub fn stamp(&self) -> u32 {
        u32::from_le_bytes([self.0[16], self.0[17], self.0[18], self.0[19]])
    }

    /// The symbol-server key element of a portable PDB (SSQP key conventions): the GUID in
    /// 32 hex digits (`N` format) followed by `FFFFFFFF`, e.g. `110e2f0dccaf406ca6035f48a6982752FFFFFFFF`.
    pub fn ssqp_key(&self) -> String {
        let mut s = guid_string(&self.guid()).replace('-', "");
        s.push_str("FFFFFFFF");
        s
    }
}

impl fmt::Debug for PdbId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PdbId({self})")
    }
}

impl fmt::Display for PdbId {
    /// The GUID in its text form and the stamp: `110e2f0d-ccaf-406c-a603-5f48a6982752 stamp 0x...`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} stamp {:#010x}",
            guid_string(&self.guid()),
            self.stamp()
        )
    }
}

/// A row of the Document table, its name decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document<'a> {
    /// The row id.
    pub rid: u32,
    /// The document's name (a path as the compiler saw it).
    pub name: String,
    /// The hash algorithm ([`HASH_SHA1`], [`HASH_SHA256`]), if any.
    pub hash_algorithm: Option<[u8; 16]>,
    /// The hash of the document's content.
    pub hash: &'a [u8],
    /// The language ([`LANGUAGE_CSHARP`], ...), if any.
    pub language: Option<[u8; 16]>,
}

/// One sequence point of a method: an IL offset and the source span it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SequencePoint {
    /// The IL offset where the span's code starts.
    pub il_offset: u32,
    /// The Document row id.
    pub document: u32,
    /// First line (1-based; [`HIDDEN_LINE`] for a hidden point).
    pub start_line: u32,
    /// First column (1-based; 0 for a hidden point).
    pub start_column: u32,
    /// Last line.
    pub end_line: u32,
    /// Column after the span's end.
    pub end_column: u32,
}

impl SequencePoint {
    /// Whether this is a hidden sequence point (compiler-generated code with no source).
    pub fn is_hidden(&self) -> bool {
        self.start_line == HIDDEN_LINE
    }
}

/// Where an IL offset's code came from, by the debuggers' rule ([`PortablePdb::source_line`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceLocation {
    /// The document's name (path).
    pub document: String,
    /// The Document row id.
    pub document_rid: u32,
    /// First line of the span.
    pub start_line: u32,
    /// First column.
    pub start_column: u32,
    /// Last line.
    pub end_line: u32,
    /// Column after the end.
    pub end_column: u32,
    /// The IL offset of the sequence point chosen (at or before the one asked for).
    pub il_offset: u32,
}

/// A row of the LocalScope table: a range of a method's IL and the variables and constants
/// declared for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalScope {
    /// The row id.
    pub rid: u32,
    /// The method (MethodDef row id).
    pub method: u32,
    /// ImportScope row id (0: none).
    pub import_scope: u32,
    /// The LocalVariable rows of this scope.
    pub variables: Range<u32>,
    /// The LocalConstant rows of this scope.
    pub constants: Range<u32>,
    /// First IL offset.
    pub start: u32,
    /// Length in IL bytes (the scope is `start..start + length`).
    pub length: u32,
}

impl LocalScope {
    /// The IL range `start..start + length`.
    pub fn il_range(&self) -> Range<u32> {
        self.start..self.start.saturating_add(self.length)
    }
}

/// A local variable in scope at an IL offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalVariable<'a> {
    /// The LocalVariable row id.
    pub rid: u32,
    /// The name the source gave it.
    pub name: &'a str,
    /// Its slot in the method's local signature (what the JIT's debug info and
    /// ICorDebugILFrame::GetLocalVariable number it by).
    pub slot: u16,
    /// LocalVariableAttributes ([`LOCAL_DEBUGGER_HIDDEN`]).
    pub attributes: u16,
    /// The IL range of the scope that declares it.
    pub scope: Range<u32>,
}

impl LocalVariable<'_> {
    /// Whether the compiler asked debuggers not to show it.
    pub fn is_hidden(&self) -> bool {
        self.attributes & LOCAL_DEBUGGER_HIDDEN != 0
    }
}

/// A local constant in scope at an IL offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalConstant<'a> {
    /// The LocalConstant row id.
    pub rid: u32,
    /// The name.
    pub name: &'a str,
    /// The LocalConstantSig blob (type and value), undecoded.
    pub signature: &'a [u8],
    /// The IL range of the scope that declares it.
    pub scope: Range<u32>,
}

/// A row of the CustomDebugInformation table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomDebugInfo<'a> {
    /// The row id.
    pub rid: u32,
    /// What it is attached to.
    pub parent: Token,
    /// The kind ([`CDI_STATE_MACHINE_HOISTED_LOCAL_SCOPES`], ...).
    pub kind: Option<[u8; 16]>,
    /// The value blob.
    pub value: &'a [u8],
}

/// A row of the ImportScope table (the imports blob undecoded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportScope<'a> {
    /// The row id.
    pub rid: u32,
    /// The parent scope's row id (0: none).
    pub parent: u32,
    /// The imports blob.
    pub imports: &'a [u8],
}

/// Where the tables of the `#~` stream are and how wide their columns are.
#[derive(Debug, Clone)]
struct PdbLayout {
    /// Row counts per table number: the PDB's own tables from `#~`, the type-system tables
    /// from `#Pdb` (used only for column widths).
    rows: [u32; 64],
    /// Row size of each table physically present.
    row_size: [u32; 64],
    /// Offset of each present table within the table stream.
    offset: [usize; 64],
    /// Tables physically present (the `#~` Valid mask).
    present: u64,
    str_w: u8,
    guid_w: u8,
    blob_w: u8,
    large: bool,
}

impl PdbLayout {
    fn width(&self, c: Column) -> u8 {
        match c {
            Column::U8 => 1,
            Column::U16 => 2,
            Column::U32 => 4,
            Column::Str => self.str_w,
            Column::Guid => self.guid_w,
            Column::Blob => self.blob_w,
            Column::Index(t) => {
                if self.large || self.rows[t as usize] > 0xFFFF {
                    4
                } else {
                    2
                }
            }
            Column::Coded(ci) => {
                let max = ci
                    .tables()
                    .iter()
                    .flatten()
                    .map(|t| self.rows[*t as usize])
                    .max()
                    .unwrap_or(0);
                if self.large || max as u64 >= 1u64 << (16 - ci.tag_bits()) {
                    4
                } else {
                    2
                }
            }
        }
    }
}

/// Most columns of a debugging table (LocalScope has 6).
const PDB_MAX_COLUMNS: usize = 6;

/// A portable PDB over a borrowed byte slice (the bytes of a `.pdb` file, or an embedded PDB
/// after decompression).
pub struct PortablePdb<'a> {
    md: Metadata<'a>,
    id: PdbId,
    entry_point: Token,
    referenced_tables: u64,
    tables: &'a [u8],
    layout: PdbLayout,
}

impl fmt::Debug for PortablePdb<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PortablePdb")
            .field("id", &self.id)
            .field("entry_point", &self.entry_point)
            .field("documents", &self.row_count(TableId::Document))
            .field("methods", &self.row_count(TableId::MethodDebugInformation))
            .finish()
    }
}

fn u32_at(d: &[u8], off: usize) -> Option<u32> {
    d.get(off..off.checked_add(4)?)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Reads an ECMA-335 compressed signed integer (II.23.2: the sign bit rotated to bit 0).
pub fn read_compressed_i32(d: &[u8], pos: usize) -> Option<(i32, usize)> {
    let (u, n) = read_compressed_u32(d, pos)?;
    let (neg_base, magnitude) = match n {
        1 => (0x40i32, (u >> 1) as i32),
        2 => (0x2000i32, (u >> 1) as i32),
        _ => (0x1000_0000i32, (u >> 1) as i32),
    };
    Some((
        if u & 1 != 0 {
            magnitude - neg_base
        } else {
            magnitude
        },
        n,
    ))
}

impl<'a> PortablePdb<'a> {
    /// Parses a standalone portable PDB: the metadata root, `#Pdb` and the table stream's
    /// header. Rows and blobs are read on demand.
    pub fn parse(data: &'a [u8]) -> PdbResult<PortablePdb<'a>> {
        let md = Metadata::parse(data)?;
        let pdb = md
            .streams()
            .iter()
            .find(|s| s.name == "#Pdb")
            .copied()
            .ok_or_else(|| PdbError::NoPdbStream {
                streams: md
                    .streams()
                    .iter()
                    .map(|s| s.name)
                    .collect::<Vec<_>>()
                    .join(" "),
            })?;
        // In range: Metadata::parse checked every stream against the data's end.
        let ps = &data[pdb.offset as usize..pdb.offset as usize + pdb.size as usize];
        let bad_pdb = |reason: String| PdbError::BadPdbStream {
            offset: pdb.offset as usize,
            reason,
        };
        if ps.len() < 32 {
            return Err(bad_pdb(format!(
                "{} bytes (at least 32: id, entry point, referenced tables)",
                ps.len()
            )));
        }
        let mut id = [0u8; 20];
        id.copy_from_slice(&ps[..20]);
        let entry_point = Token(u32_at(ps, 20).unwrap_or(0));
        let referenced = u64::from_le_bytes(ps[24..32].try_into().unwrap_or([0; 8]));
        let mut rows = [0u32; 64];
        let mut pos = 32usize;
        for (n, r) in rows.iter_mut().enumerate() {
            if referenced & (1u64 << n) == 0 {
                continue;
            }
            if n >= TableId::Document as usize || TableId::from_u8(n as u8).is_none() {
                return Err(bad_pdb(format!(
                    "ReferencedTypeSystemTables names table {n:#x}, not a type-system table"
                )));
            }
            *r = u32_at(ps, pos).ok_or_else(|| {
                bad_pdb(format!(
                    "TypeSystemTableRows truncated at byte {pos} of {}",
                    ps.len()
                ))
            })?;
            if *r > 0x00FF_FFFF {
                return Err(bad_pdb(format!(
                    "table {n:#x} has {} rows (a token holds at most 0xFFFFFF)",
                    *r
                )));
            }
            pos += 4;
        }
        let ts = md
            .streams()
            .iter()
            .find(|s| s.name == "#~" || s.name == "#-")
            .copied()
            .ok_or_else(|| PdbError::BadTables {
                offset: 0,
                reason: "no table stream".into(),
            })?;
        let tables = &data[ts.offset as usize..ts.offset as usize + ts.size as usize];
        let large = md.streams().iter().any(|s| s.name == "#JTD");
        let layout = Self::layout(tables, rows, large)?;
        Ok(PortablePdb {
            md,
            id: PdbId(id),
            entry_point,
            referenced_tables: referenced,
            tables,
            layout,
        })
    }

    fn layout(tables: &[u8], mut rows: [u32; 64], large: bool) -> PdbResult<PdbLayout> {
        let bad = |offset: usize, reason: String| PdbError::BadTables { offset, reason };
        if tables.len() < 24 {
            return Err(bad(0, format!("{} bytes (header needs 24)", tables.len())));
        }
        let heap_sizes = tables[6];
        let present = u64::from_le_bytes(tables[8..16].try_into().unwrap_or([0; 8]));
        let mut pos = 24usize;
        for (n, row) in rows.iter_mut().enumerate() {
            if present & (1u64 << n) == 0 {
                continue;
            }
            if TableId::from_u8(n as u8).is_none() {
                return Err(bad(8, format!("unknown table {n:#x} marked present")));
            }
            let r =
                u32_at(tables, pos).ok_or_else(|| bad(pos, "row counts truncated".to_string()))?;
            if r > 0x00FF_FFFF {
                return Err(bad(pos, format!("table {n:#x} declares {r} rows")));
            }
            *row = r;
            pos += 4;
        }
        if heap_sizes & HEAP_EXTRA_DATA != 0 {
            pos += 4;
        }
        let w = |bit: u8| if heap_sizes & bit != 0 || large { 4 } else { 2 };
        let mut l = PdbLayout {
            rows,
            row_size: [0; 64],
            offset: [0; 64],
            present,
            str_w: w(HEAP_STRINGS_WIDE),
            guid_w: w(HEAP_GUID_WIDE),
            blob_w: w(HEAP_BLOB_WIDE),
            large,
        };
        for &t in TableId::ALL {
            let n = t as usize;
            if present & (1u64 << n) == 0 {
                continue;
            }
            let size: u32 = schema(t).iter().map(|c| l.width(*c) as u32).sum();
            l.row_size[n] = size;
            let bytes = l.rows[n] as u64 * size as u64;
            let end = pos as u64 + bytes;
            if end > tables.len() as u64 {
                return Err(bad(
                    pos,
                    format!(
                        "table {} ({} rows of {size} bytes) extends past the stream end {:#x}",
                        t.name(),
                        l.rows[n],
                        tables.len()
                    ),
                ));
            }
            l.offset[n] = pos;
            pos = end as usize;
        }
        Ok(l)
    }

    /// The PDB id (`#Pdb` bytes 0..20): what a matching PE's CodeView entry names.
    pub fn id(&self) -> PdbId {
        self.id
    }

    /// The entry point MethodDef token (null when the assembly has none).
    pub fn entry_point(&self) -> Token {
        self.entry_point
    }

    /// The Row count the PDB records for a type-system table of its assembly (0 when not
    /// referenced). A PDB whose MethodDef count differs from an assembly's is not its PDB.
    pub fn type_system_rows(&self, table: TableId) -> u32 {
        if self.referenced_tables & (1u64 << table as u32) != 0 {
            self.layout.rows[table as usize]
        } else {
            0
        }
    }

    /// The metadata the PDB is (for its heaps).
    pub fn metadata(&self) -> &Metadata<'a> {
        &self.md
    }

    /// Rows of one of the PDB's own tables (0 when absent).
    pub fn row_count(&self, table: TableId) -> u32 {
        if self.layout.present & (1u64 << table as u32) != 0 {
            self.layout.rows[table as usize]
        } else {
            0
        }
    }

    /// The column values of row `rid` of a debugging table.
    fn row(&self, table: TableId, rid: u32) -> PdbResult<[u32; PDB_MAX_COLUMNS]> {
        let n = table as usize;
        let rows = self.row_count(table);
        if rid == 0 || rid > rows {
            return Err(PdbError::BadRow {
                table,
                rid,
                reason: format!("out of range (table has {rows} rows)"),
            });
        }
        let size = self.layout.row_size[n] as usize;
        let start = self.layout.offset[n] + (rid as usize - 1) * size;
        // In range: layout() checked every present table against the stream's end.
        let bytes = self
            .tables
            .get(start..start + size)
            .ok_or_else(|| PdbError::BadRow {
                table,
                rid,
                reason: "beyond the table stream".into(),
            })?;
        let mut v = [0u32; PDB_MAX_COLUMNS];
        let mut pos = 0usize;
        for (i, c) in schema(table).iter().enumerate().take(PDB_MAX_COLUMNS) {
            let w = self.layout.width(*c) as usize;
            v[i] = match w {
                1 => bytes[pos] as u32,
                2 => u16::from_le_bytes([bytes[pos], bytes[pos + 1]]) as u32,
                _ => {
                    u32::from_le_bytes([bytes[pos], bytes[pos + 1], bytes[pos + 2], bytes[pos + 3]])
                }
            };
            pos += w;
        }
        Ok(v)
    }

    fn blob(
        &self,
        index: u32,
        table: TableId,
        rid: u32,
        what: &'static str,
    ) -> PdbResult<&'a [u8]> {
        self.md.blob(index).map_err(|e| PdbError::BadRow {
            table,
            rid,
            reason: format!("{what}: {e}"),
        })
    }

    fn string(&self, index: u32, table: TableId, rid: u32) -> PdbResult<&'a str> {
        self.md.string(index).map_err(|e| PdbError::BadRow {
            table,
            rid,
            reason: e.to_string(),
        })
    }

    fn guid(&self, index: u32, table: TableId, rid: u32) -> PdbResult<Option<[u8; 16]>> {
        self.md.guid(index).map_err(|e| PdbError::BadRow {
            table,
            rid,
            reason: e.to_string(),
        })
    }

    // ------------------------------------------------------------------ documents

    /// Row `rid` of the Document table, its name decoded.
    pub fn document(&self, rid: u32) -> PdbResult<Document<'a>> {
        let r = self.row(TableId::Document, rid)?;
        Ok(Document {
            rid,
            name: self.document_name(rid)?,
            hash_algorithm: self.guid(r[1], TableId::Document, rid)?,
            hash: self.blob(r[2], TableId::Document, rid, "hash")?,
            language: self.guid(r[3], TableId::Document, rid)?,
        })
    }

    /// Every document, in row order.
    pub fn documents(&self) -> PdbResult<Vec<Document<'a>>> {
        (1..=self.row_count(TableId::Document))
            .map(|rid| self.document(rid))
            .collect()
    }

    /// The name of Document row `rid`: its name blob's parts joined by its separator.
    pub fn document_name(&self, rid: u32) -> PdbResult<String> {
        let r = self.row(TableId::Document, rid)?;
        let b = self.blob(r[0], TableId::Document, rid, "name")?;
        let bad = |offset: usize, reason: String| PdbError::BadBlob {
            what: "document name",
            table: TableId::Document,
            rid,
            offset,
            len: b.len(),
            reason,
        };
        let first = *b
            .first()
            .ok_or_else(|| bad(0, "empty (a separator is required)".into()))?;
        // The separator: one UTF-8 character, or a 0 byte for none.
        let sep_len = match first {
            0x00..=0x7F => 1,
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => {
                return Err(bad(
                    0,
                    format!("separator byte {first:#04x} starts no UTF-8 character"),
                ))
            }
        };
        let sep_bytes = b
            .get(..sep_len)
            .ok_or_else(|| bad(0, "separator truncated".into()))?;
        let sep = if first == 0 {
            ""
        } else {
            std::str::from_utf8(sep_bytes).map_err(|_| bad(0, "separator is not UTF-8".into()))?
        };
        let mut name = String::new();
        let mut pos = sep_len;
        let mut part_no = 0usize;
        while pos < b.len() {
            let (part, n) = read_compressed_u32(b, pos)
                .ok_or_else(|| bad(pos, "bad compressed part index".into()))?;
            if part_no > 0 {
                name.push_str(sep);
            }
            if part != 0 {
                let s = self
                    .md
                    .blob(part)
                    .map_err(|e| bad(pos, format!("part: {e}")))?;
                let s = std::str::from_utf8(s)
                    .map_err(|_| bad(pos, format!("part {part:#x} is not UTF-8")))?;
                name.push_str(s);
            }
            if name.len() > MAX_DOCUMENT_NAME {
                return Err(bad(
                    pos,
                    format!("name longer than {MAX_DOCUMENT_NAME} bytes"),
                ));
            }
            pos += n;
            part_no += 1;
        }
        if part_no == 0 {
            return Err(bad(pos, "no parts".into()));
        }
        Ok(name)
    }

    // ------------------------------------------------------------------ sequence points

    fn method_rid(&self, method: Token) -> PdbResult<u32> {
        if method.table() != Some(TableId::MethodDef) || method.rid() == 0 {
            return Err(PdbError::BadToken {
                token: method.0,
                reason: "not a MethodDef token",
            });
        }
        Ok(method.rid())
    }

    /// The sequence points of a method, in IL order (empty when the PDB has none for it).
    /// The method must exist in the PDB's assembly (its rid within MethodDebugInformation).
    pub fn sequence_points(&self, method: Token) -> PdbResult<Vec<SequencePoint>> {
        let rid = self.method_rid(method)?;
        let rows = self.row_count(TableId::MethodDebugInformation);
        if rows == 0 {
            return Ok(Vec::new());
        }
        if rid > rows {
            return Err(PdbError::BadToken {
                token: method.0,
                reason: "beyond the PDB's methods (not this assembly's PDB?)",
            });
        }
        let r = self.row(TableId::MethodDebugInformation, rid)?;
        if r[1] == 0 {
            return Ok(Vec::new());
        }
        let blob = self.blob(
            r[1],
            TableId::MethodDebugInformation,
            rid,
            "sequence points",
        )?;
        decode_sequence_points(blob, r[0], self.row_count(TableId::Document)).map_err(
            |(offset, reason)| PdbError::BadBlob {
                what: "sequence points",
                table: TableId::MethodDebugInformation,
                rid,
                offset,
                len: blob.len(),
                reason,
            },
        )
    }

    /// The source span of the code at `il_offset` of `method`, by the debuggers' rule: the
    /// last sequence point at or before the offset whose line is neither hidden nor 0 (SOS:
    /// `SymbolFile.GetSourceLineByILOffset`). `None` when no such point exists.
    ///
    /// For a frame that is not the leaf (its IP is a return address) the caller decides the
    /// IL offset: SOS maps `ip - 1` (dotnet/diagnostics `src/SOS/Strike/util.cpp`,
    /// `ConvertNativeToIlOffset` with `bAdjustOffsetForLineNumber`), treats the prolog as IL
    /// offset 0 and an epilog as the method's highest mapped IL offset.
    pub fn source_line(&self, method: Token, il_offset: u32) -> PdbResult<Option<SourceLocation>> {
        let points = self.sequence_points(method)?;
        let mut best = None;
        for p in &points {
            if p.il_offset > il_offset {
                break;
            }
            if p.start_line != 0 && !p.is_hidden() {
                best = Some(*p);
            }
        }
        let Some(p) = best else { return Ok(None) };
        Ok(Some(SourceLocation {
            document: self.document_name(p.document)?,
            document_rid: p.document,
            start_line: p.start_line,
            start_column: p.start_column,
            end_line: p.end_line,
            end_column: p.end_column,
            il_offset: p.il_offset,
        }))
    }

    /// Same as [`Self::source_line`] (the brief's name): the sequence point governing `il_offset`.
    pub fn sequence_point(
        &self,
        method: Token,
        il_offset: u32,
    ) -> PdbResult<Option<SourceLocation>> {
        self.source_line(method, il_offset)
    }

    // ------------------------------------------------------------------ scopes and locals

    /// Row `rid` of the LocalScope table, with its variable and constant runs.
    pub fn local_scope(&self, rid: u32) -> PdbResult<LocalScope> {
        let r = self.row(TableId::LocalScope, rid)?;
        let nvars = self.row_count(TableId::LocalVariable);
        let nconsts = self.row_count(TableId::LocalConstant);
        let next = if rid < self.row_count(TableId::LocalScope) {
            Some(self.row(TableId::LocalScope, rid + 1)?)
        } else {
            None
        };
        let run = |col: usize, count: u32, what: &str| -> PdbResult<Range<u32>> {
            let start = r[col];
            let end = next.map_or(count + 1, |n| n[col]);
            // An empty table may be referenced as row 1 (one past its end).
            if start == 0 || start > count + 1 || end < start || end > count + 1 {
                return Err(PdbError::BadRow {
                    table: TableId::LocalScope,
                    rid,
                    reason: format!("{what} run {start}..{end} outside 1..={} ", count + 1),
                });
            }
            Ok(start..end)
        };
        let start = r[4];
        let length = r[5];
        if start >= 0x8000_0000
            || length >= 0x8000_0000
            || start as u64 + length as u64 >= 0x8000_0000
        {
            return Err(PdbError::BadRow {
                table: TableId::LocalScope,
                rid,
                reason: format!("IL range {start:#x}+{length:#x} beyond 0x80000000"),
            });
        }
        Ok(LocalScope {
            rid,
            method: r[0],
            import_scope: r[1],
            variables: run(2, nvars, "variable")?,
            constants: run(3, nconsts, "constant")?,
            start,
            length,
        })
    }

    /// The LocalScope rows of a method, in table order (sorted by start ascending, then length
    /// descending: an enclosing scope before the scopes it contains).
    pub fn local_scopes(&self, method: Token) -> PdbResult<Vec<LocalScope>> {
        let m = self.method_rid(method)?;
        let n = self.row_count(TableId::LocalScope);
        // The table is sorted by Method: find the first row of `m` by bisection.
        let (mut lo, mut hi) = (1u32, n + 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.row(TableId::LocalScope, mid)?[0] < m {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let mut out = Vec::new();
        let mut rid = lo;
        while rid <= n {
            if self.row(TableId::LocalScope, rid)?[0] != m {
                break;
            }
            out.push(self.local_scope(rid)?);
            rid += 1;
        }
        Ok(out)
    }

    /// The local variables in scope at `il_offset` of `method`: the LocalVariable rows of every
    /// scope containing the offset, outermost scope first. Hidden variables are included
    /// (see [`LocalVariable::is_hidden`]).
    pub fn locals(&self, method: Token, il_offset: u32) -> PdbResult<Vec<LocalVariable<'a>>> {
        let mut out = Vec::new();
        for s in self.local_scopes(method)? {
            if s.il_range().contains(&il_offset) {
                for rid in s.variables.clone() {
                    out.push(self.local_variable(rid, s.il_range())?);
                }
            }
        }
        Ok(out)
    }

    /// Every local variable of a method, whatever its scope, in table order.
    pub fn all_locals(&self, method: Token) -> PdbResult<Vec<LocalVariable<'a>>> {
        let mut out = Vec::new();
        for s in self.local_scopes(method)? {
            for rid in s.variables.clone() {
                out.push(self.local_variable(rid, s.il_range())?);
            }
        }
        Ok(out)
    }

    fn local_variable(&self, rid: u32, scope: Range<u32>) -> PdbResult<LocalVariable<'a>> {
        let r = self.row(TableId::LocalVariable, rid)?;
        Ok(LocalVariable {
            rid,
            attributes: r[0] as u16,
            slot: r[1] as u16,
            name: self.string(r[2], TableId::LocalVariable, rid)?,
            scope,
        })
    }

    /// The name SOS shows for local slot `slot` of `method` (`SymbolFile.GetLocalVariableByIndex`):
    /// the first LocalVariable with that slot in the method's scopes, whatever the IL offset;
    /// `None` when there is none or it is DebuggerHidden.
    pub fn local_name(&self, method: Token, slot: u16) -> PdbResult<Option<&'a str>> {
        for v in self.all_locals(method)? {
            if v.slot == slot {
                return Ok((!v.is_hidden()).then_some(v.name));
            }
        }
        Ok(None)
    }

    /// The local constants in scope at `il_offset` of `method`, outermost scope first.
    pub fn local_constants(
        &self,
        method: Token,
        il_offset: u32,
    ) -> PdbResult<Vec<LocalConstant<'a>>> {
        let mut out = Vec::new();
        for s in self.local_scopes(method)? {
            if s.il_range().contains(&il_offset) {
                for rid in s.constants.clone() {
                    let r = self.row(TableId::LocalConstant, rid)?;
                    out.push(LocalConstant {
                        rid,
                        name: self.string(r[0], TableId::LocalConstant, rid)?,
                        signature: self.blob(r[1], TableId::LocalConstant, rid, "signature")?,
                        scope: s.il_range(),
                    });
                }
            }
        }
        Ok(out)
    }

    /// Row `rid` of the ImportScope table.
    pub fn import_scope(&self, rid: u32) -> PdbResult<ImportScope<'a>> {
        let r = self.row(TableId::ImportScope, rid)?;
        Ok(ImportScope {
            rid,
            parent: r[0],
            imports: self.blob(r[1], TableId::ImportScope, rid, "imports")?,
        })
    }

    // ------------------------------------------------------------------ state machines

    /// The kickoff method of an async or iterator state machine's MoveNext (the method the
    /// source declared), from the StateMachineMethod table; `None` for other methods.
    pub fn kickoff_method(&self, move_next: Token) -> PdbResult<Option<Token>> {
        let m = self.method_rid(move_next)?;
        let n = self.row_count(TableId::StateMachineMethod);
        let (mut lo, mut hi) = (1u32, n + 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let r = self.row(TableId::StateMachineMethod, mid)?;
            match r[0].cmp(&m) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    return Ok(Some(Token::new(TableId::MethodDef, r[1])));
                }
            }
        }
        Ok(None)
    }

    /// The MoveNext method of a kickoff method's state machine; `None` for other methods.
    pub fn move_next_method(&self, kickoff: Token) -> PdbResult<Option<Token>> {
        let m = self.method_rid(kickoff)?;
        for rid in 1..=self.row_count(TableId::StateMachineMethod) {
            let r = self.row(TableId::StateMachineMethod, rid)?;
            if r[1] == m {
                return Ok(Some(Token::new(TableId::MethodDef, r[0])));
            }
        }
        Ok(None)
    }

    // ------------------------------------------------------------------ custom debug information

    /// Row `rid` of the CustomDebugInformation table.
    pub fn custom_debug_info(&self, rid: u32) -> PdbResult<CustomDebugInfo<'a>> {
        let r = self.row(TableId::CustomDebugInformation, rid)?;
        let parent = super::reader::decode_coded_token(CodedIndex::HasCustomDebugInformation, r[0])
            .ok_or_else(|| PdbError::BadRow {
                table: TableId::CustomDebugInformation,
                rid,
                reason: format!("Parent {:#x} has an unused tag", r[0]),
            })?;
        Ok(CustomDebugInfo {
            rid,
            parent,
            kind: self.guid(r[1], TableId::CustomDebugInformation, rid)?,
            value: self.blob(r[2], TableId::CustomDebugInformation, rid, "value")?,
        })
    }

    /// The custom debug information attached to `parent` (any table the coded index names).
    pub fn custom_debug_infos_of(&self, parent: Token) -> PdbResult<Vec<CustomDebugInfo<'a>>> {
        let Some(key) = super::rows::encode_coded(CodedIndex::HasCustomDebugInformation, parent)
        else {
            return Err(PdbError::BadToken {
                token: parent.0,
                reason: "cannot carry custom debug information",
            });
        };
        let n = self.row_count(TableId::CustomDebugInformation);
        // Sorted by Parent's coded value: bisect to the first row with that value.
        let (mut lo, mut hi) = (1u32, n + 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.row(TableId::CustomDebugInformation, mid)?[0] < key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let mut out = Vec::new();
        let mut rid = lo;
        while rid <= n && self.row(TableId::CustomDebugInformation, rid)?[0] == key {
            out.push(self.custom_debug_info(rid)?);
            rid += 1;
        }
        Ok(out)
    }

    /// The scopes of a state machine's hoisted locals (the State Machine Hoisted Local Scopes
    /// record of its MoveNext method): one IL range of MoveNext per hoisted variable slot, the
    /// N-th for the state machine's field `<name>5__N` (Roslyn's naming; checked on the corpus,
    /// Release and Debug builds); `0..0` for a slot without a scope (a compiler temporary).
    /// `None` when MoveNext has no such record.
    pub fn hoisted_local_scopes(&self, move_next: Token) -> PdbResult<Option<Vec<Range<u32>>>> {
        self.method_rid(move_next)?;
        for c in self.custom_debug_infos_of(move_next)? {
            if c.kind != Some(CDI_STATE_MACHINE_HOISTED_LOCAL_SCOPES) {
                continue;
            }
            if c.value.len() % 8 != 0 {
                return Err(PdbError::BadBlob {
                    what: "hoisted local scopes",
                    table: TableId::CustomDebugInformation,
                    rid: c.rid,
                    offset: c.value.len() - c.value.len() % 8,
                    len: c.value.len(),
                    reason: "not a whole number of 8-byte scopes".into(),
                });
            }
            let mut v = Vec::with_capacity(c.value.len() / 8);
            for ch in c.value.chunks_exact(8) {
                let s = u32::from_le_bytes([ch[0], ch[1], ch[2], ch[3]]);
                let l = u32::from_le_bytes([ch[4], ch[5], ch[6], ch[7]]);
                v.push(s..s.saturating_add(l));
            }
            return Ok(Some(v));
        }
        Ok(None)
    }
}

/// Decodes a sequence-points blob (Portable PDB spec, "Sequence Points Blob"). `document` is the
/// MethodDebugInformation row's Document (0: the blob names its initial document). Errors are
/// `(offset in the blob, reason)`.
fn decode_sequence_points(
    b: &[u8],
    document: u32,
    documents: u32,
) -> std::result::Result<Vec<SequencePoint>, (usize, String)> {
    let u = |pos: usize, what: &str| {
        read_compressed_u32(b, pos).ok_or_else(|| (pos, format!("bad compressed {what}")))
    };
    let s = |pos: usize, what: &str| {
        read_compressed_i32(b, pos).ok_or_else(|| (pos, format!("bad compressed {what}")))
    };
    let check_doc = |pos: usize, d: u32| {
        if d == 0 || d > documents {
            Err((pos, format!("document {d} outside 1..={documents}")))
        } else {
            Ok(d)
        }
    };
    let mut pos = 0usize;
    let (_local_sig, n) = u(pos, "LocalSignature")?;
    pos += n;
    let mut doc = if document == 0 {
        let (d, n) = u(pos, "InitialDocument")?;
        let d = check_doc(pos, d)?;
        pos += n;
        d
    } else {
        check_doc(0, document)?
    };
    // At most one point per byte of blob: a bound the loop cannot exceed.
    let mut out: Vec<SequencePoint> = Vec::with_capacity(b.len().min(4096) / 2);
    let mut prev_il: Option<u32> = None;
    let mut prev_start: Option<(u32, u32)> = None;
    while pos < b.len() {
        let at = pos;
        let (d_il, n) = u(pos, "IL offset delta")?;
        pos += n;
        let il = match prev_il {
            None => d_il,
            Some(p) => {
                if d_il == 0 {
                    // document-record
                    let (d, n) = u(pos, "document")?;
                    doc = check_doc(pos, d)?;
                    pos += n;
                    continue;
                }
                p.checked_add(d_il)
                    .filter(|v| *v < 0x2000_0000)
                    .ok_or_else(|| (at, format!("IL offset {p:#x}+{d_il:#x} beyond 0x20000000")))?
            }
        };
        if il >= 0x2000_0000 {
            return Err((at, format!("IL offset {il:#x} beyond 0x20000000")));
        }
        let (d_lines, n) = u(pos, "line delta")?;
        pos += n;
        let d_cols: i64 = if d_lines == 0 {
            let (v, n) = u(pos, "column delta")?;
            pos += n;
            v as i64
        } else {
            let (v, n) = s(pos, "column delta")?;
            pos += n;
            v as i64
        };
        prev_il = Some(il);
        if d_lines == 0 && d_cols == 0 {
            out.push(SequencePoint {
                il_offset: il,
                document: doc,
                start_line: HIDDEN_LINE,
                start_column: 0,
                end_line: HIDDEN_LINE,
                end_column: 0,
            });
            continue;
        }
        let (start_line, start_col) = match prev_start {
            None => {
                let (l, n) = u(pos, "start line")?;
                pos += n;
                let (c, n) = u(pos, "start column")?;
                pos += n;
                (l as i64, c as i64)
            }
            Some((pl, pc)) => {
                let (dl, n) = s(pos, "start line delta")?;
                pos += n;
                let (dc, n) = s(pos, "start column delta")?;
                pos += n;
                (pl as i64 + dl as i64, pc as i64 + dc as i64)
            }
        };
        let end_line = start_line + d_lines as i64;
        let end_col = start_col + d_cols;
        if !(0..0x2000_0000).contains(&start_line)
            || start_line == HIDDEN_LINE as i64
            || !(0..0x2000_0000).contains(&end_line)
            || end_line == HIDDEN_LINE as i64
        {
            return Err((at, format!("lines {start_line}..{end_line} out of range")));
        }
        if !(0..0x10000).contains(&start_col) || !(0..0x10000).contains(&end_col) {
            return Err((at, format!("columns {start_col}..{end_col} out of range")));
        }
        prev_start = Some((start_line as u32, start_col as u32));
        out.push(SequencePoint {
            il_offset: il,
            document: doc,
            start_line: start_line as u32,
            start_column: start_col as u32,
            end_line: end_line as u32,
            end_column: end_col as u32,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_compressed_integers() {
        // ECMA-335 II.23.2 examples: 3 -> 06, -3 -> 7B, 64 -> 8080, -64 -> 01,
        // 8192 -> C0004000, -8192 -> 8001, 268435455 -> DFFFFFFE, -268435456 -> C0000001
        let cases: &[(&[u8], i32)] = &[
            (&[0x06], 3),
            (&[0x7B], -3),
            (&[0x80, 0x80], 64),
            (&[0x01], -64),
            (&[0xC0, 0x00, 0x40, 0x00], 8192),
            (&[0x80, 0x01], -8192),
            (&[0xDF, 0xFF, 0xFF, 0xFE], 268_435_455),
            (&[0xC0, 0x00, 0x00, 0x01], -268_435_456),
        ];
        for (bytes, v) in cases {
            assert_eq!(
                read_compressed_i32(bytes, 0),
                Some((*v, bytes.len())),
                "{bytes:02x?}"
            );
        }
    }

    #[test]
    fn sequence_points_deltas_hidden_and_document_records() {
        // LocalSignature 0; SP at IL 0 line 10 col 5..20; hidden SP at IL 4; document record
        // (doc 2); SP at IL 9 line 12 col 9 (deltas +2, +4) .. line 13 col 1 (Δlines 1, Δcol -8)
        let blob = [
            0x00, // LocalSignature
            0x00, 0x00, 0x0F, 0x0A,
            0x05, // δIL 0, ΔLines 0, ΔCols 15, StartLine 10, StartCol 5
            0x04, 0x00, 0x00, // hidden at IL 4
            0x00, 0x02, // document record: doc 2
            0x05, 0x01, 0x71, 0x04,
            0x08, // δIL 5, ΔLines 1, ΔCols -8 (0x71), δLine +2, δCol +4
        ];
        let sp = decode_sequence_points(&blob, 1, 2).unwrap();
        assert_eq!(sp.len(), 3);
        assert_eq!(
            (
                sp[0].il_offset,
                sp[0].start_line,
                sp[0].start_column,
                sp[0].end_line,
                sp[0].end_column,
                sp[0].document
            ),
            (0, 10, 5, 10, 20, 1)
        );
        assert!(sp[1].is_hidden() && sp[1].il_offset == 4 && sp[1].document == 1);
        assert_eq!(
            (
                sp[2].il_offset,
                sp[2].start_line,
                sp[2].start_column,
                sp[2].end_line,
                sp[2].end_column,
                sp[2].document
            ),
            (9, 12, 9, 13, 1, 2)
        );
        // a document out of range, a truncated record
        assert!(decode_sequence_points(&blob, 3, 2).is_err());
        assert!(decode_sequence_points(&blob[..blob.len() - 1], 1, 2).is_err());
    }

    #[test]
    fn guid_text_and_bytes() {
        assert_eq!(
            guid_string(&LANGUAGE_CSHARP),
            "3f5162f8-07c6-11d3-9053-00c04fa302a1"
        );
        assert_eq!(
            guid_string(&CDI_STATE_MACHINE_HOISTED_LOCAL_SCOPES),
            "6da9a61e-f8c7-4874-be62-68bc5630df71"
        );
        let id = PdbId::from_guid_stamp(LANGUAGE_CSHARP, 0x1234_5678);
        assert_eq!(id.stamp(), 0x1234_5678);
        assert_eq!(id.ssqp_key(), "3f5162f807c611d3905300c04fa302a1FFFFFFFF");
    }
}
