//! ECMA-335 metadata, read zero-copy from a byte slice (a module's image in dump memory, or a
//! file).
//!
//! - [`locate_in_pe`] / [`locate_in_pe_any`] find the metadata (`BSJB` root) of a managed PE
//!   image in either layout (the loader's mapped layout, where RVA = offset, or the flat file
//!   layout); [`PeHeaders`] and [`cli_metadata_directory`] do the same in steps, for a caller
//!   that reads the image piecewise out of a dump.
//! - [`Metadata::parse`] reads the root and its streams (`#~` or `#-`, `#Strings`, `#US`,
//!   `#GUID`, `#Blob`); rows are read on demand as typed structs ([`TypeDefRow`], ...), raw
//!   ([`Metadata::raw_row`]) or as member lists ([`Metadata::type_def_fields`]).
//! - [`sig`] decodes signatures; [`names`] names types (`Namespace.Outer+Inner`1`) and formats
//!   signatures in the DAC's style.
//! - [`PortablePdb`] reads a portable PDB (source lines of IL offsets, local names and scopes,
//!   state machines); [`read_debug_info`] / [`read_debug_info_from_memory`] read a PE image's
//!   debug directory (CodeView entry, embedded PDB) and [`find_pdb`] finds the PDB whose id the
//!   CodeView entry names.
//!
//! Hostile input: every offset, count and index is checked against the slice; errors
//! ([`Error`]) name the stream, table, row or offset; loops are bounded by row counts that
//! were themselves checked against the stream size; recursion is depth-bounded.

mod error;
mod fuzzing;
pub mod il;
pub mod names;
mod pdb;
mod pdb_fuzzing;
mod pdbfile;
mod pe;
mod reader;
mod rows;
pub mod sig;
mod table_id;
mod tables;

pub use error::{Error, Result};
#[doc(hidden)]
pub use fuzzing::{fuzz_exercise, fuzz_signature};
pub use names::{
    format_method_params, format_type, type_to_string, MetadataNames, ResolutionScope, SigResolver,
    SigStyle,
};
pub use pdb::{
    guid_bytes, guid_string, read_compressed_i32, CustomDebugInfo, Document, ImportScope,
    LocalConstant, LocalScope, LocalVariable, PdbError, PdbId, PdbResult, PortablePdb,
    SequencePoint, SourceLocation, CDI_DYNAMIC_LOCAL_VARIABLES, CDI_EMBEDDED_SOURCE,
    CDI_ENC_LOCAL_SLOT_MAP, CDI_SOURCE_LINK, CDI_STATE_MACHINE_HOISTED_LOCAL_SCOPES, HASH_SHA1,
    HASH_SHA256, HIDDEN_LINE, LANGUAGE_CSHARP, LANGUAGE_FSHARP, LANGUAGE_VB, LOCAL_DEBUGGER_HIDDEN,
    MAX_DOCUMENT_NAME,
};
#[doc(hidden)]
pub use pdb_fuzzing::fuzz_pdb;
pub use pdbfile::{
    debug_directory, decompress_embedded_pdb, embedded_pdb, embedded_pdb_from_memory, find_pdb,
    parse_codeview, read_debug_info, read_debug_info_from_memory, CodeView, DebugDirectoryEntry,
    ImageDebugInfo, PdbChecksum, PdbFile, PdbSearch, PdbSource, DEBUG_TYPE_CODEVIEW,
    DEBUG_TYPE_DETERMINISTIC, DEBUG_TYPE_EMBEDDED_PORTABLE_PDB, DEBUG_TYPE_PDB_CHECKSUM,
    MAX_PDB_BYTES, PORTABLE_CODEVIEW_MINOR,
};
pub use pe::{
    cli_metadata_directory, locate_in_pe, locate_in_pe_any, read_metadata, MetadataBytes,
    PeHeaders, PeLayout, Section, MAX_METADATA_BYTES,
};
pub use reader::{
    decode_coded_token, read_compressed_u32, Metadata, RawRow, StreamHeader, Token,
    METADATA_SIGNATURE,
};
pub use rows::*;
pub use sig::{decode_method_sig, MethodSig, Primitive, PropertySig, SigType};
pub use tables::{
    decode_coded, schema, CodedIndex, Column, TableId, TableInfo, TableLayout, HEAP_BLOB_WIDE,
    HEAP_EXTRA_DATA, HEAP_GUID_WIDE, HEAP_STRINGS_WIDE, MAX_COLUMNS,
};
