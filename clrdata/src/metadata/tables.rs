//! The table stream (`#~` or the uncompressed `#-`): table ids, the column schema of
//! ECMA-335 II.22 (plus the portable-PDB tables), row sizes and raw row access.

use super::error::{Error, Result};

pub use super::table_id::TableId;

/// A coded index kind (ECMA-335 II.24.2.6): a tag in the low bits selects the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CodedIndex {
    /// TypeDef, TypeRef, TypeSpec.
    TypeDefOrRef,
    /// Field, Param, Property.
    HasConstant,
    /// The 22 tables that can carry a custom attribute.
    HasCustomAttribute,
    /// Field, Param.
    HasFieldMarshal,
    /// TypeDef, MethodDef, Assembly.
    HasDeclSecurity,
    /// TypeDef, TypeRef, ModuleRef, MethodDef, TypeSpec.
    MemberRefParent,
    /// Event, Property.
    HasSemantics,
    /// MethodDef, MemberRef.
    MethodDefOrRef,
    /// Field, MethodDef.
    MemberForwarded,
    /// File, AssemblyRef, ExportedType.
    Implementation,
    /// (unused), (unused), MethodDef, MemberRef, (unused).
    CustomAttributeType,
    /// Module, ModuleRef, AssemblyRef, TypeRef.
    ResolutionScope,
    /// TypeDef, MethodDef.
    TypeOrMethodDef,
    /// The tables that can carry portable-PDB custom debug information.
    HasCustomDebugInformation,
}

use TableId as T;

impl CodedIndex {
    /// Every coded index kind.
    pub const ALL: [CodedIndex; 14] = [
        CodedIndex::TypeDefOrRef,
        CodedIndex::HasConstant,
        CodedIndex::HasCustomAttribute,
        CodedIndex::HasFieldMarshal,
        CodedIndex::HasDeclSecurity,
        CodedIndex::MemberRefParent,
        CodedIndex::HasSemantics,
        CodedIndex::MethodDefOrRef,
        CodedIndex::MemberForwarded,
        CodedIndex::Implementation,
        CodedIndex::CustomAttributeType,
        CodedIndex::ResolutionScope,
        CodedIndex::TypeOrMethodDef,
        CodedIndex::HasCustomDebugInformation,
    ];

    /// The number of tag bits.
    pub fn tag_bits(self) -> u32 {
        match self {
            CodedIndex::TypeDefOrRef => 2,
            CodedIndex::HasConstant => 2,
            CodedIndex::HasCustomAttribute => 5,
            CodedIndex::HasFieldMarshal => 1,
            CodedIndex::HasDeclSecurity => 2,
            CodedIndex::MemberRefParent => 3,
            CodedIndex::HasSemantics => 1,
            CodedIndex::MethodDefOrRef => 1,
            CodedIndex::MemberForwarded => 1,
            CodedIndex::Implementation => 2,
            CodedIndex::CustomAttributeType => 3,
            CodedIndex::ResolutionScope => 2,
            CodedIndex::TypeOrMethodDef => 1,
            CodedIndex::HasCustomDebugInformation => 5,
        }
    }

    /// The tables selected by each tag value (`None` for an unused tag).
    pub fn tables(self) -> &'static [Option<TableId>] {
        match self {
            CodedIndex::TypeDefOrRef => &[Some(T::TypeDef), Some(T::TypeRef), Some(T::TypeSpec)],
            CodedIndex::HasConstant => &[Some(T::Field), Some(T::Param), Some(T::Property)],
            CodedIndex::HasCustomAttribute => &[
                Some(T::MethodDef),
                Some(T::Field),
                Some(T::TypeRef),
                Some(T::TypeDef),
                Some(T::Param),
                Some(T::InterfaceImpl),
                Some(T::MemberRef),
                Some(T::Module),
                Some(T::DeclSecurity),
                Some(T::Property),
                Some(T::Event),
                Some(T::StandAloneSig),
                Some(T::ModuleRef),
                Some(T::TypeSpec),
                Some(T::Assembly),
                Some(T::AssemblyRef),
                Some(T::File),
                Some(T::ExportedType),
                Some(T::ManifestResource),
                Some(T::GenericParam),
                Some(T::GenericParamConstraint),
                Some(T::MethodSpec),
            ],
            CodedIndex::HasFieldMarshal => &[Some(T::Field), Some(T::Param)],
            CodedIndex::HasDeclSecurity => {
                &[Some(T::TypeDef), Some(T::MethodDef), Some(T::Assembly)]
            }
            CodedIndex::MemberRefParent => &[
                Some(T::TypeDef),
                Some(T::TypeRef),
                Some(T::ModuleRef),
                Some(T::MethodDef),
                Some(T::TypeSpec),
            ],
            CodedIndex::HasSemantics => &[Some(T::Event), Some(T::Property)],
            CodedIndex::MethodDefOrRef => &[Some(T::MethodDef), Some(T::MemberRef)],
            CodedIndex::MemberForwarded => &[Some(T::Field), Some(T::MethodDef)],
            CodedIndex::Implementation => {
                &[Some(T::File), Some(T::AssemblyRef), Some(T::ExportedType)]
            }
            CodedIndex::CustomAttributeType => {
                &[None, None, Some(T::MethodDef), Some(T::MemberRef), None]
            }
            CodedIndex::ResolutionScope => &[
                Some(T::Module),
                Some(T::ModuleRef),
                Some(T::AssemblyRef),
                Some(T::TypeRef),
            ],
            CodedIndex::TypeOrMethodDef => &[Some(T::TypeDef), Some(T::MethodDef)],
            CodedIndex::HasCustomDebugInformation => &[
                Some(T::MethodDef),
                Some(T::Field),
                Some(T::TypeRef),
                Some(T::TypeDef),
                Some(T::Param),
                Some(T::InterfaceImpl),
                Some(T::MemberRef),
                Some(T::Module),
                Some(T::DeclSecurity),
                Some(T::Property),
                Some(T::Event),
                Some(T::StandAloneSig),
                Some(T::ModuleRef),
                Some(T::TypeSpec),
                Some(T::Assembly),
                Some(T::AssemblyRef),
                Some(T::File),
                Some(T::ExportedType),
                Some(T::ManifestResource),
                Some(T::GenericParam),
                Some(T::GenericParamConstraint),
                Some(T::MethodSpec),
                Some(T::Document),
                Some(T::LocalScope),
                Some(T::LocalVariable),
                Some(T::LocalConstant),
                Some(T::ImportScope),
            ],
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// A column of a table row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// A 1-byte constant (only Constant.Type, always followed by a padding byte).
    U8,
    /// A 2-byte constant.
    U16,
    /// A 4-byte constant.
    U32,
    /// An index into `#Strings`.
    Str,
    /// An index into `#GUID`.
    Guid,
    /// An index into `#Blob`.
    Blob,
    /// A simple index into a table.
    Index(TableId),
    /// A coded index.
    Coded(CodedIndex),
}

use CodedIndex as CI;
use Column as C;

/// The columns of `table`, in row order (ECMA-335 II.22; portable PDB spec for 0x30..0x37).
pub fn schema(table: TableId) -> &'static [Column] {
    match table {
        T::Module => &[C::U16, C::Str, C::Guid, C::Guid, C::Guid],
        T::TypeRef => &[C::Coded(CI::ResolutionScope), C::Str, C::Str],
        T::TypeDef => &[
            C::U32,
            C::Str,
            C::Str,
            C::Coded(CI::TypeDefOrRef),
            C::Index(T::Field),
            C::Index(T::MethodDef),
        ],
        T::FieldPtr => &[C::Index(T::Field)],
        T::Field => &[C::U16, C::Str, C::Blob],
        T::MethodPtr => &[C::Index(T::MethodDef)],
        T::MethodDef => &[C::U32, C::U16, C::U16, C::Str, C::Blob, C::Index(T::Param)],
        T::ParamPtr => &[C::Index(T::Param)],
        T::Param => &[C::U16, C::U16, C::Str],
        T::InterfaceImpl => &[C::Index(T::TypeDef), C::Coded(CI::TypeDefOrRef)],
        T::MemberRef => &[C::Coded(CI::MemberRefParent), C::Str, C::Blob],
        T::Constant => &[C::U8, C::U8, C::Coded(CI::HasConstant), C::Blob],
        T::CustomAttribute => &[
            C::Coded(CI::HasCustomAttribute),
            C::Coded(CI::CustomAttributeType),
            C::Blob,
        ],
        T::FieldMarshal => &[C::Coded(CI::HasFieldMarshal), C::Blob],
        T::DeclSecurity => &[C::U16, C::Coded(CI::HasDeclSecurity), C::Blob],
        T::ClassLayout => &[C::U16, C::U32, C::Index(T::TypeDef)],
        T::FieldLayout => &[C::U32, C::Index(T::Field)],
        T::StandAloneSig => &[C::Blob],
        T::EventMap => &[C::Index(T::TypeDef), C::Index(T::Event)],
        T::EventPtr => &[C::Index(T::Event)],
        T::Event => &[C::U16, C::Str, C::Coded(CI::TypeDefOrRef)],
        T::PropertyMap => &[C::Index(T::TypeDef), C::Index(T::Property)],
        T::PropertyPtr => &[C::Index(T::Property)],
        T::Property => &[C::U16, C::Str, C::Blob],
        T::MethodSemantics => &[C::U16, C::Index(T::MethodDef), C::Coded(CI::HasSemantics)],
        T::MethodImpl => &[
            C::Index(T::TypeDef),
            C::Coded(CI::MethodDefOrRef),
            C::Coded(CI::MethodDefOrRef),
        ],
        T::ModuleRef => &[C::Str],
        T::TypeSpec => &[C::Blob],
        T::ImplMap => &[
            C::U16,
            C::Coded(CI::MemberForwarded),
            C::Str,
            C::Index(T::ModuleRef),
        ],
        T::FieldRva => &[C::U32, C::Index(T::Field)],
        T::EncLog => &[C::U32, C::U32],
        T::EncMap => &[C::U32],
        T::Assembly => &[
            C::U32,
            C::U16,
            C::U16,
            C::U16,
            C::U16,
            C::U32,
            C::Blob,
            C::Str,
            C::Str,
        ],
        T::AssemblyProcessor => &[C::U32],
        T::AssemblyOs => &[C::U32, C::U32, C::U32],
        T::AssemblyRef => &[
            C::U16,
            C::U16,
            C::U16,
            C::U16,
            C::U32,
            C::Blob,
            C::Str,
            C::Str,
            C::Blob,
        ],
        T::AssemblyRefProcessor => &[C::U32, C::Index(T::AssemblyRef)],
        T::AssemblyRefOs => &[C::U32, C::U32, C::U32, C::Index(T::AssemblyRef)],
        T::File => &[C::U32, C::Str, C::Blob],
        T::ExportedType => &[C::U32, C::U32, C::Str, C::Str, C::Coded(CI::Implementation)],
        T::ManifestResource => &[C::U32, C::U32, C::Str, C::Coded(CI::Implementation)],
        T::NestedClass => &[C::Index(T::TypeDef), C::Index(T::TypeDef)],
        T::GenericParam => &[C::U16, C::U16, C::Coded(CI::TypeOrMethodDef), C::Str],
        T::MethodSpec => &[C::Coded(CI::MethodDefOrRef), C::Blob],
        T::GenericParamConstraint => &[C::Index(T::GenericParam), C::Coded(CI::TypeDefOrRef)],
        T::Document => &[C::Blob, C::Guid, C::Blob, C::Guid],
        T::MethodDebugInformation => &[C::Index(T::Document), C::Blob],
        T::LocalScope => &[
            C::Index(T::MethodDef),
            C::Index(T::ImportScope),
            C::Index(T::LocalVariable),
            C::Index(T::LocalConstant),
            C::U32,
            C::U32,
        ],
        T::LocalVariable => &[C::U16, C::U16, C::Str],
        T::LocalConstant => &[C::Str, C::Blob],
        T::ImportScope => &[C::Index(T::ImportScope), C::Blob],
        T::StateMachineMethod => &[C::Index(T::MethodDef), C::Index(T::MethodDef)],
        T::CustomDebugInformation => &[C::Coded(CI::HasCustomDebugInformation), C::Guid, C::Blob],
    }
}

/// The most columns any table has.
pub const MAX_COLUMNS: usize = 9;

/// HeapSizes bit: `#Strings` indexes are 4 bytes.
pub const HEAP_STRINGS_WIDE: u8 = 0x01;
/// HeapSizes bit: `#GUID` indexes are 4 bytes.
pub const HEAP_GUID_WIDE: u8 = 0x02;
/// HeapSizes bit: `#Blob` indexes are 4 bytes.
pub const HEAP_BLOB_WIDE: u8 = 0x04;
/// HeapSizes bit: 4 bytes of extra data follow the row counts (seen in `#-` streams).
pub const HEAP_EXTRA_DATA: u8 = 0x40;

/// Where one table lives in the table stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableInfo {
    /// Number of rows.
    pub rows: u32,
    /// Bytes per row.
    pub row_size: u32,
    /// Offset of the first row, relative to the start of the table stream.
    pub offset: usize,
}

/// The decoded header of a table stream: row counts, column widths, table positions.
#[derive(Debug, Clone)]
pub struct TableLayout {
    /// Major version of the table schema.
    pub major: u8,
    /// Minor version of the table schema.
    pub minor: u8,
    /// The HeapSizes byte.
    pub heap_sizes: u8,
    /// The Valid mask (bit n set: table n present).
    pub valid: u64,
    /// The Sorted mask.
    pub sorted: u64,
    /// Per table number (0..64).
    pub tables: [TableInfo; 64],
    str_width: u8,
    guid_width: u8,
    blob_width: u8,
    coded_width: [u8; 14],
}

impl TableLayout {
    /// Parses the header of a table stream (`stream` is the whole stream) and checks that
    /// every table fits inside it. `uncompressed` is true for a `#-` stream.
    pub fn parse(stream: &[u8], stream_name: &str, large: bool) -> Result<TableLayout> {
        let bad = |reason: String| Error::BadStream {
            stream: stream_name.to_string(),
            reason,
        };
        if stream.len() < 24 {
            return Err(Error::Truncated {
                what: "table stream header",
                offset: 0,
                needed: 24,
                available: stream.len(),
            });
        }
        let major = stream[4];
        let minor = stream[5];
        let heap_sizes = stream[6];
        let valid = u64::from_le_bytes(stream[8..16].try_into().unwrap_or([0; 8]));
        let sorted = u64::from_le_bytes(stream[16..24].try_into().unwrap_or([0; 8]));
        let mut pos = 24usize;
        let mut tables = [TableInfo::default(); 64];
        for (n, info) in tables.iter_mut().enumerate() {
            if valid & (1u64 << n) == 0 {
                continue;
            }
            if TableId::from_u8(n as u8).is_none() {
                return Err(Error::UnknownTable { index: n as u8 });
            }
            let b = stream.get(pos..pos + 4).ok_or(Error::Truncated {
                what: "table stream row counts",
                offset: pos,
                needed: 4,
                available: stream.len().saturating_sub(pos),
            })?;
            info.rows = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            if info.rows > 0x00FF_FFFF {
                return Err(bad(format!(
                    "table {:#x} declares {} rows (a token holds at most 0xFFFFFF)",
                    n, info.rows
                )));
            }
            pos += 4;
        }
        if heap_sizes & HEAP_EXTRA_DATA != 0 {
            pos += 4;
        }
        let w = |bit: u8| if heap_sizes & bit != 0 || large { 4 } else { 2 };
        let mut layout = TableLayout {
            major,
            minor,
            heap_sizes,
            valid,
            sorted,
            tables,
            str_width: w(HEAP_STRINGS_WIDE),
            guid_width: w(HEAP_GUID_WIDE),
            blob_width: w(HEAP_BLOB_WIDE),
            coded_width: [2; 14],
        };
        for ci in CodedIndex::ALL {
            let max = ci
                .tables()
                .iter()
                .flatten()
                .map(|t| layout.tables[*t as usize].rows)
                .max()
                .unwrap_or(0);
            let limit = 1u64 << (16 - ci.tag_bits());
            layout.coded_width[ci.index()] = if large || max as u64 >= limit { 4 } else { 2 };
        }
        for &t in TableId::ALL {
            let size: u32 = schema(t)
                .iter()
                .map(|c| layout.width(*c, large) as u32)
                .sum();
            layout.tables[t as usize].row_size = size;
        }
        for &t in TableId::ALL {
            let info = &mut layout.tables[t as usize];
            if info.rows == 0 {
                info.offset = pos.min(stream.len());
                continue;
            }
            let bytes = (info.rows as u64) * (info.row_size as u64);
            let end = (pos as u64).saturating_add(bytes);
            if end > stream.len() as u64 {
                return Err(bad(format!(
                    "table {} ({} rows of {} bytes at offset {:#x}) extends past the stream end {:#x}",
                    t.name(),
                    info.rows,
                    info.row_size,
                    pos,
                    stream.len()
                )));
            }
            info.offset = pos;
            pos = end as usize;
        }
        Ok(layout)
    }

    fn width(&self, c: Column, large: bool) -> u8 {
        match c {
            Column::U8 => 1,
            Column::U16 => 2,
            Column::U32 => 4,
            Column::Str => self.str_width,
            Column::Guid => self.guid_width,
            Column::Blob => self.blob_width,
            Column::Index(t) => {
                if large || self.tables[t as usize].rows > 0xFFFF {
                    4
                } else {
                    2
                }
            }
            Column::Coded(ci) => self.coded_width[ci.index()],
        }
    }

    /// The byte width of every column of `table`, in order.
    pub fn column_widths(&self, table: TableId, large: bool) -> impl Iterator<Item = u8> + '_ {
        schema(table).iter().map(move |c| self.width(*c, large))
    }

    /// Row count of `table`.
    pub fn rows(&self, table: TableId) -> u32 {
        self.tables[table as usize].rows
    }
}

/// Decodes a coded index value into `(table, rid)`. `None` when the tag selects no table.
pub fn decode_coded(ci: CodedIndex, value: u32) -> Option<(TableId, u32)> {
    let bits = ci.tag_bits();
    let tag = (value & ((1 << bits) - 1)) as usize;
    let table = (*ci.tables().get(tag)?)?;
    Some((table, value >> bits))
}
