//! The metadata reader's error type: every variant says what was malformed and where.

use super::table_id::TableId;

/// Everything that can go wrong while reading ECMA-335 metadata.
///
/// Each variant names the structure (PE header, stream, table, row, signature) and the offset
/// or index involved, so a message alone is enough to find the bad byte.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The input ended before a structure was complete.
    #[error(
        "{what}: truncated at offset {offset:#x} (needed {needed} bytes, {available} available)"
    )]
    Truncated {
        /// The structure being read.
        what: &'static str,
        /// Offset (in the input it was read from) where the structure starts.
        offset: usize,
        /// Bytes needed.
        needed: usize,
        /// Bytes available from `offset`.
        available: usize,
    },
    /// A magic number or signature did not match.
    #[error("{what}: bad signature {found:#x} at offset {offset:#x} (expected {expected:#x})")]
    BadSignature {
        /// The structure being read.
        what: &'static str,
        /// Where it was read.
        offset: usize,
        /// What was found.
        found: u32,
        /// What was expected.
        expected: u32,
    },
    /// A PE image is malformed or is not a managed assembly.
    #[error("PE image: {reason}")]
    BadPe {
        /// What is wrong.
        reason: String,
    },
    /// A metadata stream header or stream is malformed.
    #[error("metadata stream {stream}: {reason}")]
    BadStream {
        /// The stream name (`#~`, `#Strings`, ...), or `root` for the metadata root.
        stream: String,
        /// What is wrong.
        reason: String,
    },
    /// The table stream describes a table this reader does not know (so no row size).
    #[error("table stream: unknown table {index:#x} marked present")]
    UnknownTable {
        /// The table number (bit index in the Valid mask).
        index: u8,
    },
    /// A row id is outside a table.
    #[error("table {table:?}: row {rid} out of range (table has {rows} rows)")]
    RowOutOfRange {
        /// The table.
        table: TableId,
        /// The 1-based row id asked for.
        rid: u32,
        /// The table's row count.
        rows: u32,
    },
    /// A row's column holds a value that cannot be right (a bad coded index tag, a list start
    /// beyond its target table, ...).
    #[error("table {table:?} row {rid}: {reason}")]
    BadRow {
        /// The table.
        table: TableId,
        /// The 1-based row id.
        rid: u32,
        /// What is wrong.
        reason: String,
    },
    /// An index into a heap (`#Strings`, `#Blob`, `#GUID`, `#US`) is invalid.
    #[error("heap {heap}: bad index {index:#x}: {reason}")]
    BadHeapIndex {
        /// The heap name.
        heap: &'static str,
        /// The index (byte offset, or 1-based GUID number).
        index: u32,
        /// What is wrong.
        reason: &'static str,
    },
    /// A signature blob is malformed.
    #[error("signature at byte {offset} of a {len}-byte blob: {reason}")]
    BadSignatureBlob {
        /// Offset inside the blob where decoding failed.
        offset: usize,
        /// Length of the blob.
        len: usize,
        /// What is wrong.
        reason: String,
    },
    /// A token does not name the kind of row an operation needs.
    #[error("token {token:#010x}: {reason}")]
    BadToken {
        /// The token.
        token: u32,
        /// What is wrong.
        reason: &'static str,
    },
}

/// The result type of the metadata reader.
pub type Result<T> = std::result::Result<T, Error>;
