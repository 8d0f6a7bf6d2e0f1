//! The metadata tables' numbers (ECMA-335 II.22, plus the portable-PDB tables): the
//! vocabulary the table reader and the error type share.

macro_rules! tables {
    ($($(#[$doc:meta])* $name:ident = $v:expr,)*) => {
        /// A metadata table, numbered as in ECMA-335 II.22 (the high byte of a token).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum TableId {
            $($(#[$doc])* $name = $v,)*
        }

        impl TableId {
            /// Every known table, in table-number order.
            pub const ALL: &'static [TableId] = &[$(TableId::$name,)*];

            /// The table numbered `n`, if this reader knows it.
            pub fn from_u8(n: u8) -> Option<TableId> {
                match n {
                    $($v => Some(TableId::$name),)*
                    _ => None,
                }
            }

            /// The table's name as in ECMA-335 (`TypeDef`, `MethodDef`, ...).
            pub fn name(self) -> &'static str {
                match self {
                    $(TableId::$name => stringify!($name),)*
                }
            }
        }
    };
}

tables! {
    /// 0x00 Module.
    Module = 0x00,
    /// 0x01 TypeRef.
    TypeRef = 0x01,
    /// 0x02 TypeDef.
    TypeDef = 0x02,
    /// 0x03 FieldPtr (uncompressed `#-` streams only).
    FieldPtr = 0x03,
    /// 0x04 Field.
    Field = 0x04,
    /// 0x05 MethodPtr (uncompressed `#-` streams only).
    MethodPtr = 0x05,
    /// 0x06 MethodDef.
    MethodDef = 0x06,
    /// 0x07 ParamPtr (uncompressed `#-` streams only).
    ParamPtr = 0x07,
    /// 0x08 Param.
    Param = 0x08,
    /// 0x09 InterfaceImpl.
    InterfaceImpl = 0x09,
    /// 0x0A MemberRef.
    MemberRef = 0x0A,
    /// 0x0B Constant.
    Constant = 0x0B,
    /// 0x0C CustomAttribute.
    CustomAttribute = 0x0C,
    /// 0x0D FieldMarshal.
    FieldMarshal = 0x0D,
    /// 0x0E DeclSecurity.
    DeclSecurity = 0x0E,
    /// 0x0F ClassLayout.
    ClassLayout = 0x0F,
    /// 0x10 FieldLayout.
    FieldLayout = 0x10,
    /// 0x11 StandAloneSig.
    StandAloneSig = 0x11,
    /// 0x12 EventMap.
    EventMap = 0x12,
    /// 0x13 EventPtr (uncompressed `#-` streams only).
    EventPtr = 0x13,
    /// 0x14 Event.
    Event = 0x14,
    /// 0x15 PropertyMap.
    PropertyMap = 0x15,
    /// 0x16 PropertyPtr (uncompressed `#-` streams only).
    PropertyPtr = 0x16,
    /// 0x17 Property.
    Property = 0x17,
    /// 0x18 MethodSemantics.
    MethodSemantics = 0x18,
    /// 0x19 MethodImpl.
    MethodImpl = 0x19,
    /// 0x1A ModuleRef.
    ModuleRef = 0x1A,
    /// 0x1B TypeSpec.
    TypeSpec = 0x1B,
    /// 0x1C ImplMap.
    ImplMap = 0x1C,
    /// 0x1D FieldRVA.
    FieldRva = 0x1D,
    /// 0x1E EncLog.
    EncLog = 0x1E,
    /// 0x1F EncMap.
    EncMap = 0x1F,
    /// 0x20 Assembly.
    Assembly = 0x20,
    /// 0x21 AssemblyProcessor.
    AssemblyProcessor = 0x21,
    /// 0x22 AssemblyOS.
    AssemblyOs = 0x22,
    /// 0x23 AssemblyRef.
    AssemblyRef = 0x23,
    /// 0x24 AssemblyRefProcessor.
    AssemblyRefProcessor = 0x24,
    /// 0x25 AssemblyRefOS.
    AssemblyRefOs = 0x25,
    /// 0x26 File.
    File = 0x26,
    /// 0x27 ExportedType.
    ExportedType = 0x27,
    /// 0x28 ManifestResource.
    ManifestResource = 0x28,
    /// 0x29 NestedClass.
    NestedClass = 0x29,
    /// 0x2A GenericParam.
    GenericParam = 0x2A,
    /// 0x2B MethodSpec.
    MethodSpec = 0x2B,
    /// 0x2C GenericParamConstraint.
    GenericParamConstraint = 0x2C,
    /// 0x30 Document (portable PDB).
    Document = 0x30,
    /// 0x31 MethodDebugInformation (portable PDB).
    MethodDebugInformation = 0x31,
    /// 0x32 LocalScope (portable PDB).
    LocalScope = 0x32,
    /// 0x33 LocalVariable (portable PDB).
    LocalVariable = 0x33,
    /// 0x34 LocalConstant (portable PDB).
    LocalConstant = 0x34,
    /// 0x35 ImportScope (portable PDB).
    ImportScope = 0x35,
    /// 0x36 StateMachineMethod (portable PDB).
    StateMachineMethod = 0x36,
    /// 0x37 CustomDebugInformation (portable PDB).
    CustomDebugInformation = 0x37,
}
