//! Typed rows of the ECMA-335 tables (II.22) and the lookups between them (member lists,
//! nesting, sorted-key searches).

use super::error::{Error, Result};
use super::reader::{Metadata, RawRow, Token};
use super::tables::{schema, CodedIndex, Column, TableId};
use std::ops::Range;

/// A row of the Module table (0x00).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleRow<'a> {
    /// Generation (0).
    pub generation: u16,
    /// The module's file name.
    pub name: &'a str,
    /// The module version id (MVID), from `#GUID`.
    pub mvid: Option<[u8; 16]>,
    /// EncId (a `#GUID` index, usually 0).
    pub enc_id: u32,
    /// EncBaseId (a `#GUID` index, usually 0).
    pub enc_base_id: u32,
}

/// A row of the TypeRef table (0x01).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeRefRow<'a> {
    /// Module, ModuleRef, AssemblyRef or TypeRef (the enclosing type of a nested type); a null
    /// token means an ExportedType lookup.
    pub resolution_scope: Token,
    /// Type name.
    pub name: &'a str,
    /// Namespace (empty for nested types).
    pub namespace: &'a str,
}

/// A row of the TypeDef table (0x02).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeDefRow<'a> {
    /// TypeAttributes.
    pub flags: u32,
    /// Type name (with its generic arity suffix, e.g. ``List`1``).
    pub name: &'a str,
    /// Namespace (empty for nested types).
    pub namespace: &'a str,
    /// Base type (TypeDef, TypeRef or TypeSpec; null for interfaces and `System.Object`).
    pub extends: Token,
    /// First entry of this type's field list (Field, or FieldPtr in `#-` streams).
    pub field_list: u32,
    /// First entry of this type's method list (MethodDef, or MethodPtr in `#-` streams).
    pub method_list: u32,
}

/// TypeAttributes visibility mask.
pub const TYPE_VISIBILITY_MASK: u32 = 0x7;
/// TypeAttributes: interface.
pub const TYPE_INTERFACE: u32 = 0x20;

impl TypeDefRow<'_> {
    /// Whether the visibility says nested (NestedPublic..NestedFamORAssem).
    pub fn is_nested(&self) -> bool {
        self.flags & TYPE_VISIBILITY_MASK >= 2
    }

    /// Whether the type is an interface.
    pub fn is_interface(&self) -> bool {
        self.flags & TYPE_INTERFACE != 0
    }
}

/// A row of the Field table (0x04).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRow<'a> {
    /// FieldAttributes.
    pub flags: u16,
    /// Field name.
    pub name: &'a str,
    /// Field signature blob (decode with [`Metadata::field_sig`]).
    pub signature: &'a [u8],
}

/// FieldAttributes: static.
pub const FIELD_STATIC: u16 = 0x10;
/// FieldAttributes: literal (a compile-time constant with no storage).
pub const FIELD_LITERAL: u16 = 0x40;
/// FieldAttributes: has an RVA (FieldRVA row).
pub const FIELD_HAS_RVA: u16 = 0x100;

impl FieldRow<'_> {
    /// Whether the field is static.
    pub fn is_static(&self) -> bool {
        self.flags & FIELD_STATIC != 0
    }

    /// Whether the field is a literal (const).
    pub fn is_literal(&self) -> bool {
        self.flags & FIELD_LITERAL != 0
    }
}

/// A row of the MethodDef table (0x06).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodDefRow<'a> {
    /// RVA of the method body (0 for abstract, runtime or P/Invoke methods).
    pub rva: u32,
    /// MethodImplAttributes.
    pub impl_flags: u16,
    /// MethodAttributes.
    pub flags: u16,
    /// Method name.
    pub name: &'a str,
    /// Method signature blob (decode with [`Metadata::method_sig`]).
    pub signature: &'a [u8],
    /// First entry of the parameter list (Param, or ParamPtr in `#-` streams).
    pub param_list: u32,
}

/// MethodAttributes: static.
pub const METHOD_STATIC: u16 = 0x10;

/// A row of the Param table (0x08).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamRow<'a> {
    /// ParamAttributes.
    pub flags: u16,
    /// Sequence (0: the return value; 1..: parameters).
    pub sequence: u16,
    /// Parameter name.
    pub name: &'a str,
}

/// A row of the InterfaceImpl table (0x09).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfaceImplRow {
    /// The implementing TypeDef rid.
    pub class: u32,
    /// The interface (TypeDef, TypeRef or TypeSpec).
    pub interface: Token,
}

/// A row of the MemberRef table (0x0A).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberRefRow<'a> {
    /// Parent: TypeDef, TypeRef, ModuleRef, MethodDef (vararg call site) or TypeSpec.
    pub class: Token,
    /// Member name.
    pub name: &'a str,
    /// Field or method signature blob (first byte 0x06: field).
    pub signature: &'a [u8],
}

/// A row of the Constant table (0x0B).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConstantRow<'a> {
    /// The constant's element type (ELEMENT_TYPE_*; CLASS for a null reference).
    pub element_type: u8,
    /// Field, Param or Property.
    pub parent: Token,
    /// The value, little-endian (UTF-16 for strings).
    pub value: &'a [u8],
}

/// A row of the CustomAttribute table (0x0C).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomAttributeRow<'a> {
    /// The decorated entity.
    pub parent: Token,
    /// The attribute constructor (MethodDef or MemberRef).
    pub constructor: Token,
    /// The attribute blob (prolog 0x0001, fixed args, named args).
    pub value: &'a [u8],
}

/// A row of the FieldMarshal table (0x0D).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldMarshalRow<'a> {
    /// Field or Param.
    pub parent: Token,
    /// The marshalling descriptor.
    pub native_type: &'a [u8],
}

/// A row of the DeclSecurity table (0x0E).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclSecurityRow<'a> {
    /// Security action.
    pub action: u16,
    /// TypeDef, MethodDef or Assembly.
    pub parent: Token,
    /// The permission set blob.
    pub permission_set: &'a [u8],
}

/// A row of the ClassLayout table (0x0F).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassLayoutRow {
    /// Packing size.
    pub packing_size: u16,
    /// Class size in bytes.
    pub class_size: u32,
    /// The TypeDef rid.
    pub parent: u32,
}

/// A row of the FieldLayout table (0x10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldLayoutRow {
    /// Explicit field offset.
    pub offset: u32,
    /// The Field rid.
    pub field: u32,
}

/// A row of the StandAloneSig table (0x11).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StandAloneSigRow<'a> {
    /// A local-variable (0x07) or method (call site) signature blob.
    pub signature: &'a [u8],
}

/// A row of the EventMap table (0x12).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventMapRow {
    /// The TypeDef rid.
    pub parent: u32,
    /// First entry of the event list.
    pub event_list: u32,
}

/// A row of the Event table (0x14).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRow<'a> {
    /// EventAttributes.
    pub flags: u16,
    /// Event name.
    pub name: &'a str,
    /// The delegate type.
    pub event_type: Token,
}

/// A row of the PropertyMap table (0x15).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropertyMapRow {
    /// The TypeDef rid.
    pub parent: u32,
    /// First entry of the property list.
    pub property_list: u32,
}

/// A row of the Property table (0x17).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropertyRow<'a> {
    /// PropertyAttributes.
    pub flags: u16,
    /// Property name.
    pub name: &'a str,
    /// Property signature blob (decode with [`Metadata::property_sig`]).
    pub signature: &'a [u8],
}

/// A row of the MethodSemantics table (0x18).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodSemanticsRow {
    /// MethodSemanticsAttributes (Setter 1, Getter 2, Other 4, AddOn 8, RemoveOn 0x10, Fire 0x20).
    pub semantics: u16,
    /// The MethodDef rid.
    pub method: u32,
    /// The Event or Property.
    pub association: Token,
}

/// A row of the MethodImpl table (0x19).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodImplRow {
    /// The TypeDef rid.
    pub class: u32,
    /// The implementing method (MethodDef or MemberRef).
    pub body: Token,
    /// The implemented declaration (MethodDef or MemberRef).
    pub declaration: Token,
}

/// A row of the ModuleRef table (0x1A).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleRefRow<'a> {
    /// The module (file) name.
    pub name: &'a str,
}

/// A row of the TypeSpec table (0x1B).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeSpecRow<'a> {
    /// The type signature blob (decode with [`Metadata::type_spec_sig`]).
    pub signature: &'a [u8],
}

/// A row of the ImplMap table (0x1C): a P/Invoke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImplMapRow<'a> {
    /// PInvokeAttributes.
    pub flags: u16,
    /// Field or MethodDef.
    pub member_forwarded: Token,
    /// Entry point name.
    pub import_name: &'a str,
    /// The ModuleRef rid of the native library.
    pub import_scope: u32,
}

/// A row of the FieldRVA table (0x1D).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRvaRow {
    /// RVA of the field's initial data.
    pub rva: u32,
    /// The Field rid.
    pub field: u32,
}

/// A row of the Assembly table (0x20).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssemblyRow<'a> {
    /// Hash algorithm id.
    pub hash_alg_id: u32,
    /// Major, minor, build, revision.
    pub version: [u16; 4],
    /// AssemblyFlags.
    pub flags: u32,
    /// Public key (may be empty).
    pub public_key: &'a [u8],
    /// Simple name.
    pub name: &'a str,
    /// Culture (empty: neutral).
    pub culture: &'a str,
}

/// A row of the AssemblyRef table (0x23).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssemblyRefRow<'a> {
    /// Major, minor, build, revision.
    pub version: [u16; 4],
    /// AssemblyFlags (0x1: the next blob is a full public key).
    pub flags: u32,
    /// Public key or its 8-byte token.
    pub public_key_or_token: &'a [u8],
    /// Simple name.
    pub name: &'a str,
    /// Culture.
    pub culture: &'a str,
    /// Hash value blob.
    pub hash_value: &'a [u8],
}

/// A row of the File table (0x26).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRow<'a> {
    /// FileAttributes.
    pub flags: u32,
    /// File name.
    pub name: &'a str,
    /// Hash value blob.
    pub hash_value: &'a [u8],
}

/// A row of the ExportedType table (0x27) (type forwarders among them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportedTypeRow<'a> {
    /// TypeAttributes.
    pub flags: u32,
    /// A hint: the TypeDef token in the target module.
    pub type_def_id: u32,
    /// Type name.
    pub name: &'a str,
    /// Namespace.
    pub namespace: &'a str,
    /// File, AssemblyRef or ExportedType (enclosing type).
    pub implementation: Token,
}

/// A row of the ManifestResource table (0x28).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestResourceRow<'a> {
    /// Offset in the resources section.
    pub offset: u32,
    /// ManifestResourceAttributes.
    pub flags: u32,
    /// Resource name.
    pub name: &'a str,
    /// File, AssemblyRef, or null (this file).
    pub implementation: Token,
}

/// A row of the NestedClass table (0x29).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NestedClassRow {
    /// The nested TypeDef rid.
    pub nested: u32,
    /// The enclosing TypeDef rid.
    pub enclosing: u32,
}

/// A row of the GenericParam table (0x2A).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenericParamRow<'a> {
    /// 0-based position.
    pub number: u16,
    /// GenericParamAttributes (variance, constraints).
    pub flags: u16,
    /// TypeDef or MethodDef.
    pub owner: Token,
    /// Parameter name (`T`, `TKey`).
    pub name: &'a str,
}

/// A row of the MethodSpec table (0x2B).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodSpecRow<'a> {
    /// The generic method (MethodDef or MemberRef).
    pub method: Token,
    /// The instantiation blob (decode with [`Metadata::method_spec_sig`]).
    pub instantiation: &'a [u8],
}

/// A row of the GenericParamConstraint table (0x2C).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenericParamConstraintRow {
    /// The GenericParam rid.
    pub owner: u32,
    /// The constraint type (TypeDef, TypeRef or TypeSpec).
    pub constraint: Token,
}

/// Encodes a token as the raw value of a coded index column (`None` if the token's table is
/// not one of the coded index's tables).
pub fn encode_coded(ci: CodedIndex, token: Token) -> Option<u32> {
    let table = token.table()?;
    let tag = ci.tables().iter().position(|t| *t == Some(table))? as u32;
    Some((token.rid() << ci.tag_bits()) | tag)
}

/// Most nesting levels followed when naming a type (deeper chains are malformed).
pub const MAX_NESTING: usize = 64;

impl<'a> Metadata<'a> {
    fn row(&self, table: TableId, rid: u32) -> Result<RawRow> {
        self.raw_row(table, rid)
    }

    /// Row `rid` of the Module table (normally only rid 1).
    pub fn module(&self, rid: u32) -> Result<ModuleRow<'a>> {
        let r = self.row(TableId::Module, rid)?;
        Ok(ModuleRow {
            generation: r.values[0] as u16,
            name: self.string(r.values[1])?,
            mvid: self.guid(r.values[2])?,
            enc_id: r.values[3],
            enc_base_id: r.values[4],
        })
    }

    /// The module version id (MVID) of this module (Module row 1).
    pub fn mvid(&self) -> Result<Option<[u8; 16]>> {
        Ok(self.module(1)?.mvid)
    }

    /// Row `rid` of the TypeRef table.
    pub fn type_ref(&self, rid: u32) -> Result<TypeRefRow<'a>> {
        let r = self.row(TableId::TypeRef, rid)?;
        Ok(TypeRefRow {
            resolution_scope: self.coded(&r, 0)?,
            name: self.string(r.values[1])?,
            namespace: self.string(r.values[2])?,
        })
    }

    /// Row `rid` of the TypeDef table.
    pub fn type_def(&self, rid: u32) -> Result<TypeDefRow<'a>> {
        let r = self.row(TableId::TypeDef, rid)?;
        Ok(TypeDefRow {
            flags: r.values[0],
            name: self.string(r.values[1])?,
            namespace: self.string(r.values[2])?,
            extends: self.coded(&r, 3)?,
            field_list: r.values[4],
            method_list: r.values[5],
        })
    }

    /// Row `rid` of the Field table.
    pub fn field(&self, rid: u32) -> Result<FieldRow<'a>> {
        let r = self.row(TableId::Field, rid)?;
        Ok(FieldRow {
            flags: r.values[0] as u16,
            name: self.string(r.values[1])?,
            signature: self.blob(r.values[2])?,
        })
    }

    /// Row `rid` of the MethodDef table.
    pub fn method_def(&self, rid: u32) -> Result<MethodDefRow<'a>> {
        let r = self.row(TableId::MethodDef, rid)?;
        Ok(MethodDefRow {
            rva: r.values[0],
            impl_flags: r.values[1] as u16,
            flags: r.values[2] as u16,
            name: self.string(r.values[3])?,
            signature: self.blob(r.values[4])?,
            param_list: r.values[5],
        })
    }

    /// Row `rid` of the Param table.
    pub fn param(&self, rid: u32) -> Result<ParamRow<'a>> {
        let r = self.row(TableId::Param, rid)?;
        Ok(ParamRow {
            flags: r.values[0] as u16,
            sequence: r.values[1] as u16,
            name: self.string(r.values[2])?,
        })
    }

    /// Row `rid` of the InterfaceImpl table.
    pub fn interface_impl(&self, rid: u32) -> Result<InterfaceImplRow> {
        let r = self.row(TableId::InterfaceImpl, rid)?;
        Ok(InterfaceImplRow {
            class: r.values[0],
            interface: self.coded(&r, 1)?,
        })
    }

    /// Row `rid` of the MemberRef table.
    pub fn member_ref(&self, rid: u32) -> Result<MemberRefRow<'a>> {
        let r = self.row(TableId::MemberRef, rid)?;
        Ok(MemberRefRow {
            class: self.coded(&r, 0)?,
            name: self.string(r.values[1])?,
            signature: self.blob(r.values[2])?,
        })
    }

    /// Row `rid` of the Constant table.
    pub fn constant(&self, rid: u32) -> Result<ConstantRow<'a>> {
        let r = self.row(TableId::Constant, rid)?;
        Ok(ConstantRow {
            element_type: r.values[0] as u8,
            parent: self.coded(&r, 2)?,
            value: self.blob(r.values[3])?,
        })
    }

    /// Row `rid` of the CustomAttribute table.
    pub fn custom_attribute(&self, rid: u32) -> Result<CustomAttributeRow<'a>> {
        let r = self.row(TableId::CustomAttribute, rid)?;
        Ok(CustomAttributeRow {
            parent: self.coded(&r, 0)?,
            constructor: self.coded(&r, 1)?,
            value: self.blob(r.values[2])?,
        })
    }

    /// Row `rid` of the FieldMarshal table.
    pub fn field_marshal(&self, rid: u32) -> Result<FieldMarshalRow<'a>> {
        let r = self.row(TableId::FieldMarshal, rid)?;
        Ok(FieldMarshalRow {
            parent: self.coded(&r, 0)?,
            native_type: self.blob(r.values[1])?,
        })
    }

    /// Row `rid` of the DeclSecurity table.
    pub fn decl_security(&self, rid: u32) -> Result<DeclSecurityRow<'a>> {
        let r = self.row(TableId::DeclSecurity, rid)?;
        Ok(DeclSecurityRow {
            action: r.values[0] as u16,
            parent: self.coded(&r, 1)?,
            permission_set: self.blob(r.values[2])?,
        })
    }

    /// Row `rid` of the ClassLayout table.
    pub fn class_layout(&self, rid: u32) -> Result<ClassLayoutRow> {
        let r = self.row(TableId::ClassLayout, rid)?;
        Ok(ClassLayoutRow {
            packing_size: r.values[0] as u16,
            class_size: r.values[1],
            parent: r.values[2],
        })
    }

    /// Row `rid` of the FieldLayout table.
    pub fn field_layout(&self, rid: u32) -> Result<FieldLayoutRow> {
        let r = self.row(TableId::FieldLayout, rid)?;
        Ok(FieldLayoutRow {
            offset: r.values[0],
            field: r.values[1],
        })
    }

    /// Row `rid` of the StandAloneSig table.
    pub fn stand_alone_sig(&self, rid: u32) -> Result<StandAloneSigRow<'a>> {
        let r = self.row(TableId::StandAloneSig, rid)?;
        Ok(StandAloneSigRow {
            signature: self.blob(r.values[0])?,
        })
    }

    /// Row `rid` of the EventMap table.
    pub fn event_map(&self, rid: u32) -> Result<EventMapRow> {
        let r = self.row(TableId::EventMap, rid)?;
        Ok(EventMapRow {
            parent: r.values[0],
            event_list: r.values[1],
        })
    }

    /// Row `rid` of the Event table.
    pub fn event(&self, rid: u32) -> Result<EventRow<'a>> {
        let r = self.row(TableId::Event, rid)?;
        Ok(EventRow {
            flags: r.values[0] as u16,
            name: self.string(r.values[1])?,
            event_type: self.coded(&r, 2)?,
        })
    }

    /// Row `rid` of the PropertyMap table.
    pub fn property_map(&self, rid: u32) -> Result<PropertyMapRow> {
        let r = self.row(TableId::PropertyMap, rid)?;
        Ok(PropertyMapRow {
            parent: r.values[0],
            property_list: r.values[1],
        })
    }

    /// Row `rid` of the Property table.
    pub fn property(&self, rid: u32) -> Result<PropertyRow<'a>> {
        let r = self.row(TableId::Property, rid)?;
        Ok(PropertyRow {
            flags: r.values[0] as u16,
            name: self.string(r.values[1])?,
            signature: self.blob(r.values[2])?,
        })
    }

    /// Row `rid` of the MethodSemantics table.
    pub fn method_semantics(&self, rid: u32) -> Result<MethodSemanticsRow> {
        let r = self.row(TableId::MethodSemantics, rid)?;
        Ok(MethodSemanticsRow {
            semantics: r.values[0] as u16,
            method: r.values[1],
            association: self.coded(&r, 2)?,
        })
    }

    /// Row `rid` of the MethodImpl table.
    pub fn method_impl(&self, rid: u32) -> Result<MethodImplRow> {
        let r = self.row(TableId::MethodImpl, rid)?;
        Ok(MethodImplRow {
            class: r.values[0],
            body: self.coded(&r, 1)?,
            declaration: self.coded(&r, 2)?,
        })
    }

    /// Row `rid` of the ModuleRef table.
    pub fn module_ref(&self, rid: u32) -> Result<ModuleRefRow<'a>> {
        let r = self.row(TableId::ModuleRef, rid)?;
        Ok(ModuleRefRow {
            name: self.string(r.values[0])?,
        })
    }

    /// Row `rid` of the TypeSpec table.
    pub fn type_spec(&self, rid: u32) -> Result<TypeSpecRow<'a>> {
        let r = self.row(TableId::TypeSpec, rid)?;
        Ok(TypeSpecRow {
            signature: self.blob(r.values[0])?,
        })
    }

    /// Row `rid` of the ImplMap table.
    pub fn impl_map(&self, rid: u32) -> Result<ImplMapRow<'a>> {
        let r = self.row(TableId::ImplMap, rid)?;
        Ok(ImplMapRow {
            flags: r.values[0] as u16,
            member_forwarded: self.coded(&r, 1)?,
            import_name: self.string(r.values[2])?,
            import_scope: r.values[3],
        })
    }

    /// Row `rid` of the FieldRVA table.
    pub fn field_rva(&self, rid: u32) -> Result<FieldRvaRow> {
        let r = self.row(TableId::FieldRva, rid)?;
        Ok(FieldRvaRow {
            rva: r.values[0],
            field: r.values[1],
        })
    }

    /// Row `rid` of the Assembly table (normally only rid 1).
    pub fn assembly(&self, rid: u32) -> Result<AssemblyRow<'a>> {
        let r = self.row(TableId::Assembly, rid)?;
        let v = &r.values;
        Ok(AssemblyRow {
            hash_alg_id: v[0],
            version: [v[1] as u16, v[2] as u16, v[3] as u16, v[4] as u16],
            flags: v[5],
            public_key: self.blob(v[6])?,
            name: self.string(v[7])?,
            culture: self.string(v[8])?,
        })
    }

    /// Row `rid` of the AssemblyRef table.
    pub fn assembly_ref(&self, rid: u32) -> Result<AssemblyRefRow<'a>> {
        let r = self.row(TableId::AssemblyRef, rid)?;
        let v = &r.values;
        Ok(AssemblyRefRow {
            version: [v[0] as u16, v[1] as u16, v[2] as u16, v[3] as u16],
            flags: v[4],
            public_key_or_token: self.blob(v[5])?,
            name: self.string(v[6])?,
            culture: self.string(v[7])?,
            hash_value: self.blob(v[8])?,
        })
    }

    /// Row `rid` of the File table.
    pub fn file(&self, rid: u32) -> Result<FileRow<'a>> {
        let r = self.row(TableId::File, rid)?;
        Ok(FileRow {
            flags: r.values[0],
            name: self.string(r.values[1])?,
            hash_value: self.blob(r.values[2])?,
        })
    }

    /// Row `rid` of the ExportedType table.
    pub fn exported_type(&self, rid: u32) -> Result<ExportedTypeRow<'a>> {
        let r = self.row(TableId::ExportedType, rid)?;
        Ok(ExportedTypeRow {
            flags: r.values[0],
            type_def_id: r.values[1],
            name: self.string(r.values[2])?,
            namespace: self.string(r.values[3])?,
            implementation: self.coded(&r, 4)?,
        })
    }

    /// Row `rid` of the ManifestResource table.
    pub fn manifest_resource(&self, rid: u32) -> Result<ManifestResourceRow<'a>> {
        let r = self.row(TableId::ManifestResource, rid)?;
        Ok(ManifestResourceRow {
            offset: r.values[0],
            flags: r.values[1],
            name: self.string(r.values[2])?,
            implementation: self.coded(&r, 3)?,
        })
    }

    /// Row `rid` of the NestedClass table.
    pub fn nested_class(&self, rid: u32) -> Result<NestedClassRow> {
        let r = self.row(TableId::NestedClass, rid)?;
        Ok(NestedClassRow {
            nested: r.values[0],
            enclosing: r.values[1],
        })
    }

    /// Row `rid` of the GenericParam table.
    pub fn generic_param(&self, rid: u32) -> Result<GenericParamRow<'a>> {
        let r = self.row(TableId::GenericParam, rid)?;
        Ok(GenericParamRow {
            number: r.values[0] as u16,
            flags: r.values[1] as u16,
            owner: self.coded(&r, 2)?,
            name: self.string(r.values[3])?,
        })
    }

    /// Row `rid` of the MethodSpec table.
    pub fn method_spec(&self, rid: u32) -> Result<MethodSpecRow<'a>> {
        let r = self.row(TableId::MethodSpec, rid)?;
        Ok(MethodSpecRow {
            method: self.coded(&r, 0)?,
            instantiation: self.blob(r.values[1])?,
        })
    }

    /// Row `rid` of the GenericParamConstraint table.
    pub fn generic_param_constraint(&self, rid: u32) -> Result<GenericParamConstraintRow> {
        let r = self.row(TableId::GenericParamConstraint, rid)?;
        Ok(GenericParamConstraintRow {
            owner: r.values[0],
            constraint: self.coded(&r, 1)?,
        })
    }

    // ---------------------------------------------------------------------------------
    // Member lists

    /// The list range `start..end` (list entries, 1-based, end exclusive) that row `rid` of
    /// `owner` owns through its column `col`, a list into `target` (or its Ptr table).
    fn list_range(
        &self,
        owner: TableId,
        rid: u32,
        col: usize,
        target: TableId,
    ) -> Result<Range<u32>> {
        let list_table = match (target, self.row_count(ptr_table(target))) {
            (_, 0) => target,
            _ => ptr_table(target),
        };
        let limit = self.row_count(list_table) + 1;
        let start = self.row(owner, rid)?.values[col];
        let end = if rid < self.row_count(owner) {
            self.row(owner, rid + 1)?.values[col]
        } else {
            limit
        };
        let bad = |reason: String| Error::BadRow {
            table: owner,
            rid,
            reason,
        };
        if start == 0 || start > limit {
            return Err(bad(format!(
                "list start {start} outside {} (1..={limit})",
                list_table.name()
            )));
        }
        let end = end.min(limit);
        if end < start {
            return Err(bad(format!(
                "list start {start} is after the next row's start {end}"
            )));
        }
        Ok(start..end)
    }

    /// Resolves an entry of a member list to the member's rid (through the Ptr table of `#-`
    /// streams when present).
    fn list_entry(&self, target: TableId, entry: u32) -> Result<u32> {
        let ptr = ptr_table(target);
        if self.row_count(ptr) == 0 {
            Ok(entry)
        } else {
            Ok(self.row(ptr, entry)?.values[0])
        }
    }

    fn list_rids(&self, range: Range<u32>, target: TableId) -> Result<Vec<u32>> {
        range.map(|e| self.list_entry(target, e)).collect()
    }

    /// The Field rids of TypeDef `rid`, in declaration order (its list ends where the next
    /// TypeDef's begins, or at the table's end).
    pub fn type_def_fields(&self, rid: u32) -> Result<Vec<u32>> {
        let r = self.list_range(TableId::TypeDef, rid, 4, TableId::Field)?;
        self.list_rids(r, TableId::Field)
    }

    /// The list range of TypeDef `rid` in the Field table (or FieldPtr in `#-` streams).
    pub fn type_def_field_range(&self, rid: u32) -> Result<Range<u32>> {
        self.list_range(TableId::TypeDef, rid, 4, TableId::Field)
    }

    /// The MethodDef rids of TypeDef `rid`, in declaration order.
    pub fn type_def_methods(&self, rid: u32) -> Result<Vec<u32>> {
        let r = self.list_range(TableId::TypeDef, rid, 5, TableId::MethodDef)?;
        self.list_rids(r, TableId::MethodDef)
    }

    /// The list range of TypeDef `rid` in the MethodDef table (or MethodPtr in `#-` streams).
    pub fn type_def_method_range(&self, rid: u32) -> Result<Range<u32>> {
        self.list_range(TableId::TypeDef, rid, 5, TableId::MethodDef)
    }

    /// The Param rids of MethodDef `rid`.
    pub fn method_params(&self, rid: u32) -> Result<Vec<u32>> {
        let r = self.list_range(TableId::MethodDef, rid, 5, TableId::Param)?;
        self.list_rids(r, TableId::Param)
    }

    /// The Event rids of EventMap row `rid`.
    pub fn event_map_events(&self, rid: u32) -> Result<Vec<u32>> {
        let r = self.list_range(TableId::EventMap, rid, 1, TableId::Event)?;
        self.list_rids(r, TableId::Event)
    }

    /// The Property rids of PropertyMap row `rid`.
    pub fn property_map_properties(&self, rid: u32) -> Result<Vec<u32>> {
        let r = self.list_range(TableId::PropertyMap, rid, 1, TableId::Property)?;
        self.list_rids(r, TableId::Property)
    }

    fn owner_of(&self, target: TableId, col: usize, member: u32) -> Result<Option<u32>> {
        let ptr = ptr_table(target);
        // The member's position in the list: itself, or its entry in the Ptr table.
        let entry = if self.row_count(ptr) == 0 {
            member
        } else {
            let mut found = None;
            for e in 1..=self.row_count(ptr) {
                if self.row(ptr, e)?.values[0] == member {
                    found = Some(e);
                    break;
                }
            }
            match found {
                Some(e) => e,
                None => return Ok(None),
            }
        };
        // The last TypeDef whose list starts at or before `entry` (lists are ascending).
        let n = self.row_count(TableId::TypeDef);
        let (mut lo, mut hi) = (1u32, n + 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.row(TableId::TypeDef, mid)?.values[col] <= entry {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let mut t = lo - 1;
        // Skip back over types with empty lists that start at the same entry.
        while t >= 1 {
            let r = self.list_range(TableId::TypeDef, t, col, target)?;
            if r.contains(&entry) {
                return Ok(Some(t));
            }
            if r.start < entry {
                break;
            }
            t -= 1;
        }
        Ok(None)
    }

    /// The TypeDef rid declaring Field `rid` (binary search over the field lists).
    pub fn field_owner(&self, rid: u32) -> Result<Option<u32>> {
        self.owner_of(TableId::Field, 4, rid)
    }

    /// The TypeDef rid declaring MethodDef `rid`.
    pub fn method_owner(&self, rid: u32) -> Result<Option<u32>> {
        self.owner_of(TableId::MethodDef, 5, rid)
    }

    // ---------------------------------------------------------------------------------
    // Key lookups

    /// The rids of `table` whose column `col` holds `value`. Binary search when the table's
    /// Sorted bit is set (ECMA-335 II.22: the key column), else a linear scan.
    pub fn find_rows(&self, table: TableId, col: usize, value: u32) -> Result<Range<u32>> {
        let n = self.row_count(table);
        if col >= schema(table).len() {
            return Ok(1..1);
        }
        if self.layout().sorted & (1u64 << table as u8) != 0 {
            let key = |rid: u32| -> Result<u32> { Ok(self.row(table, rid)?.values[col]) };
            let lower = partition(n, |rid| Ok(key(rid)? < value))?;
            let upper = partition(n, |rid| Ok(key(rid)? <= value))?;
            return Ok(lower..upper.max(lower));
        }
        // Linear scan: the first contiguous run.
        let mut start = None;
        for rid in 1..=n {
            let v = self.row(table, rid)?.values[col];
            match (start, v == value) {
                (None, true) => start = Some(rid),
                (Some(s), false) => return Ok(s..rid),
                _ => {}
            }
        }
        Ok(start.map(|s| s..n + 1).unwrap_or(1..1))
    }

    fn find_by_token(&self, table: TableId, col: usize, token: Token) -> Result<Range<u32>> {
        let raw = match schema(table).get(col) {
            Some(Column::Coded(ci)) => match encode_coded(*ci, token) {
                Some(v) => v,
                None => return Ok(1..1),
            },
            Some(Column::Index(t)) if token.table() == Some(*t) => token.rid(),
            _ => return Ok(1..1),
        };
        self.find_rows(table, col, raw)
    }

    /// The enclosing TypeDef rid of a nested TypeDef (NestedClass lookup; the index is built
    /// once, on first use).
    pub fn enclosing_class(&self, type_def_rid: u32) -> Result<Option<u32>> {
        let index = self.nested.get_or_init(|| {
            let n = self.row_count(TableId::NestedClass);
            let mut v: Vec<(u32, u32)> = (1..=n)
                .filter_map(|rid| self.raw_row(TableId::NestedClass, rid).ok())
                .map(|r| (r.values[0], r.values[1]))
                .collect();
            v.sort_unstable();
            v
        });
        Ok(index
            .binary_search_by_key(&type_def_rid, |e| e.0)
            .ok()
            .map(|i| index[i].1))
    }

    /// The GenericParam rids owned by a TypeDef or MethodDef, ordered by number.
    pub fn generic_params(&self, owner: Token) -> Result<Range<u32>> {
        self.find_by_token(TableId::GenericParam, 2, owner)
    }

    /// The CustomAttribute rids attached to `parent`.
    pub fn custom_attributes(&self, parent: Token) -> Result<Range<u32>> {
        self.find_by_token(TableId::CustomAttribute, 0, parent)
    }

    /// The (namespace, name) of the type a custom attribute's constructor belongs to: a
    /// MethodDef's owner TypeDef, or a MemberRef's TypeRef / TypeDef parent; None for any other
    /// shape (a generic attribute's TypeSpec, a broken row).
    pub fn attribute_type(&self, constructor: Token) -> Option<(&'a str, &'a str)> {
        let class = match constructor.table()? {
            TableId::MethodDef => Token::new(
                TableId::TypeDef,
                self.method_owner(constructor.rid()).ok()??,
            ),
            TableId::MemberRef => self.member_ref(constructor.rid()).ok()?.class,
            _ => return None,
        };
        match class.table()? {
            TableId::TypeDef => {
                let t = self.type_def(class.rid()).ok()?;
                Some((t.namespace, t.name))
            }
            TableId::TypeRef => {
                let t = self.type_ref(class.rid()).ok()?;
                Some((t.namespace, t.name))
            }
            _ => None,
        }
    }

    /// The string argument of the assembly's attribute `namespace.name` (an attribute whose
    /// constructor takes one string, as `AssemblyInformationalVersionAttribute`): the first such
    /// attribute on the Assembly row, its blob's prolog `01 00` then a SerString. None when the
    /// module has no Assembly row or no such attribute; a null string (`FF`) is None too.
    pub fn assembly_string_attribute(&self, namespace: &str, name: &str) -> Option<&'a str> {
        let assembly = Token::new(TableId::Assembly, 1);
        for rid in self.custom_attributes(assembly).ok()? {
            let Ok(ca) = self.custom_attribute(rid) else {
                continue;
            };
            if self.attribute_type(ca.constructor) != Some((namespace, name)) {
                continue;
            }
            let v = ca.value;
            if v.len() < 3 || v[0] != 1 || v[1] != 0 || v[2] == 0xFF {
                return None;
            }
            let (len, n) = super::reader::read_compressed_u32(v, 2)?;
            let at = 2 + n;
            return std::str::from_utf8(v.get(at..at.checked_add(len as usize)?)?).ok();
        }
        None
    }

    /// The InterfaceImpl rids of TypeDef `rid`.
    pub fn interface_impls(&self, type_def_rid: u32) -> Result<Range<u32>> {
        self.find_rows(TableId::InterfaceImpl, 0, type_def_rid)
    }

    /// The Constant rid of a Field, Param or Property, if it has one.
    pub fn constant_of(&self, parent: Token) -> Result<Option<u32>> {
        Ok(first(self.find_by_token(TableId::Constant, 2, parent)?))
    }

    /// The ClassLayout rid of TypeDef `rid`, if it has one.
    pub fn class_layout_of(&self, type_def_rid: u32) -> Result<Option<u32>> {
        Ok(first(self.find_rows(
            TableId::ClassLayout,
            2,
            type_def_rid,
        )?))
    }

    /// The FieldLayout rid (explicit offset) of Field `rid`, if it has one.
    pub fn field_layout_of(&self, field_rid: u32) -> Result<Option<u32>> {
        Ok(first(self.find_rows(TableId::FieldLayout, 1, field_rid)?))
    }

    /// The FieldRVA rid of Field `rid`, if it has one.
    pub fn field_rva_of(&self, field_rid: u32) -> Result<Option<u32>> {
        Ok(first(self.find_rows(TableId::FieldRva, 1, field_rid)?))
    }

    /// The ImplMap rid (P/Invoke) of a MethodDef or Field, if it has one.
    pub fn impl_map_of(&self, member: Token) -> Result<Option<u32>> {
        Ok(first(self.find_by_token(TableId::ImplMap, 1, member)?))
    }

    /// The MethodSemantics rids of an Event or Property.
    pub fn method_semantics_of(&self, association: Token) -> Result<Range<u32>> {
        self.find_by_token(TableId::MethodSemantics, 2, association)
    }

    /// The PropertyMap rid of TypeDef `rid`, if it has properties.
    pub fn property_map_of(&self, type_def_rid: u32) -> Result<Option<u32>> {
        Ok(first(self.find_rows(
            TableId::PropertyMap,
            0,
            type_def_rid,
        )?))
    }

    /// The EventMap rid of TypeDef `rid`, if it has events.
    pub fn event_map_of(&self, type_def_rid: u32) -> Result<Option<u32>> {
        Ok(first(self.find_rows(TableId::EventMap, 0, type_def_rid)?))
    }
}

fn first(r: Range<u32>) -> Option<u32> {
    if r.is_empty() {
        None
    } else {
        Some(r.start)
    }
}

/// The first rid in `1..=n` for which `pred` is false (`n + 1` if none), assuming `pred` is
/// true on a prefix.
fn partition(n: u32, mut pred: impl FnMut(u32) -> Result<bool>) -> Result<u32> {
    let (mut lo, mut hi) = (1u32, n + 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid)? {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}

/// The Ptr (indirection) table of a member table in `#-` streams.
fn ptr_table(target: TableId) -> TableId {
    match target {
        TableId::Field => TableId::FieldPtr,
        TableId::MethodDef => TableId::MethodPtr,
        TableId::Param => TableId::ParamPtr,
        TableId::Event => TableId::EventPtr,
        TableId::Property => TableId::PropertyPtr,
        other => other,
    }
}
