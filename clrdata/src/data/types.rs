//! MethodTables, EEClasses, FieldDescs and modules (the loader's view of types).

use crate::discovery::layout::mt_flags as f;
use crate::discovery::layout::MethodTableScheme;
use crate::discovery::runtime::Runtime;
use crate::error::{ClrError, Result};
use dumpreader::Memory;
use serde::Serialize;

/// Bound on FieldDesc lists and generic arity read from the dump.
pub const MAX_FIELDS: usize = 1 << 16;

/// A MethodTable decoded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MethodTableInfo {
    /// Its address.
    pub address: u64,
    /// m_dwFlags.
    pub flags: u32,
    /// m_wFlags2.
    pub flags2: u16,
    /// m_BaseSize.
    pub base_size: u32,
    /// Component size (arrays, strings), else 0.
    pub component_size: u32,
    /// The TypeDef token (0x02xxxxxx), None when stored in an optional member (m_wToken 0xFFFF)
    /// or for arrays (whose token is System.Array's).
    pub token: Option<u32>,
    /// Parent MethodTable (0 for System.Object and interfaces).
    pub parent: u64,
    /// m_pLoaderModule.
    pub loader_module: u64,
    /// The module defining the type (None when it sits in an unread module-override slot).
    pub module: Option<u64>,
    /// The canonical MethodTable (itself unless this is a non-canonical generic instantiation).
    pub canonical: u64,
    /// The EEClass (shared by all instantiations).
    pub ee_class: u64,
    /// m_wNumVirtuals.
    pub num_virtuals: u16,
    /// m_wNumInterfaces.
    pub num_interfaces: u16,
    /// For arrays: the element TypeHandle (bit 1 set = a TypeDesc), and the rank.
    pub array: Option<ArrayInfo>,
    /// Generic instantiation arguments (TypeHandles), empty when not generic.
    pub type_args: Vec<u64>,
}

/// Array element and rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ArrayInfo {
    /// Element TypeHandle.
    pub element: u64,
    /// Rank (1 for single-dimension arrays, SZ or not).
    pub rank: u32,
    /// Whether it is a single-dimension zero-based (SZ) array.
    pub is_sz: bool,
}

impl MethodTableInfo {
    /// Its module, or why it is not known (kept in a module-override slot, not read yet).
    pub fn require_module(&self) -> crate::Result<u64> {
        self.module.ok_or_else(|| {
            ClrError::unsupported(
                "MethodTable",
                Some(self.address),
                "its module is kept in a module-override slot (not read yet)",
            )
        })
    }

    /// Whether objects of this type carry a component count (arrays, String).
    pub fn has_component_size(&self) -> bool {
        self.flags & f::HAS_COMPONENT_SIZE != 0
    }
    /// Whether this is an array type.
    pub fn is_array(&self) -> bool {
        self.flags & f::CATEGORY_ARRAY_MASK == f::CATEGORY_ARRAY
    }
    /// Whether this is a value type (incl. Nullable, primitives, enums).
    pub fn is_value_type(&self) -> bool {
        matches!(
            self.flags & f::CATEGORY_MASK,
            f::CATEGORY_VALUETYPE
                | f::CATEGORY_NULLABLE
                | f::CATEGORY_PRIMITIVE
                | f::CATEGORY_TRUEPRIMITIVE
        )
    }
    /// Whether this is an interface.
    pub fn is_interface(&self) -> bool {
        self.flags & f::CATEGORY_MASK == f::CATEGORY_INTERFACE
    }
    /// Whether objects contain GC references.
    pub fn contains_pointers(&self) -> bool {
        self.flags & f::CONTAINS_POINTERS != 0
    }
    /// Whether the type has a finalizer.
    pub fn has_finalizer(&self) -> bool {
        self.flags & f::HAS_FINALIZER != 0
    }
    /// Whether the type belongs to a collectible assembly.
    pub fn is_collectible(&self) -> bool {
        self.flags & f::COLLECTIBLE != 0
    }
    /// Whether this is a generic instantiation (including the canonical `__Canon` one).
    pub fn is_generic(&self) -> bool {
        !self.has_component_size() && self.flags & f::GENERICS_MASK != 0
    }
}

/// A field of a class (its own fields, not inherited ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FieldInfo {
    /// The FieldDesc's address.
    pub address: u64,
    /// The FieldDef token (0x04xxxxxx).
    pub token: u32,
    /// Offset: of an instance field from the object's first field (object + 8 + offset); of a
    /// static, inside the statics block.
    pub offset: u32,
    /// CorElementType (0x12 CLASS, 0x11 VALUETYPE, 0x08 I4, ...).
    pub element_type: u8,
    /// Static field.
    pub is_static: bool,
    /// Thread-static field.
    pub is_thread_static: bool,
    /// RVA field.
    pub is_rva: bool,
}

/// A loaded module and its image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModuleData {
    /// The Module's address.
    pub address: u64,
    /// The assembly's simple name ("System.Private.CoreLib").
    pub simple_name: String,
    /// The PEAssembly.
    pub pe_assembly: u64,
    /// The PEImage.
    pub pe_image: u64,
    /// The image file's path as the runtime opened it (empty for in-memory images).
    pub path: String,
    /// The layout in use: base address of the image bytes in memory.
    pub image_base: u64,
    /// Its size.
    pub image_size: u32,
    /// Whether the layout is mapped (sections at their RVAs) or flat (file layout).
    pub mapped: bool,
    /// The CLI (COR20) header's address.
    pub cor_header: u64,
    /// The metadata (BSJB) address and size, when its header was readable.
    pub metadata: Option<(u64, u32)>,
}

impl ModuleData {
    /// The image file's name without its directory (`crash.dll`), as debuggers name the
    /// module; None for an in-memory image (no path).
    pub fn file_name(&self) -> Option<&str> {
        file_name_of(&self.path)
    }
}

/// The last component of a Linux or Windows path; None when it is empty.
pub fn file_name_of(path: &str) -> Option<&str> {
    path.rsplit(['/', '\\']).next().filter(|f| !f.is_empty())
}

/// Where a MethodTable's optional members (GenericsStaticsInfo first) start: after the
/// vtable chunk pointers and the overflowing multipurpose slots.
pub fn optional_members_offset(
    l: &crate::discovery::layout::MethodTableLayout,
    flags2: u16,
    num_virtuals: u16,
) -> u64 {
    let used = [
        f::F2_HAS_DISPATCH_MAP_SLOT,
        f::F2_HAS_NON_VIRTUAL_SLOTS,
        f::F2_HAS_MODULE_OVERRIDE,
    ]
    .iter()
    .filter(|&&f| flags2 & f != 0)
    .count();
    let free = (flags2 & f::F2_HAS_PER_INST_INFO == 0) as usize
        + (flags2 & f::F2_HAS_INTERFACE_MAP == 0) as usize;
    l.size + 8 * (num_virtuals as u64).div_ceil(8) + 8 * used.saturating_sub(free) as u64
}

/// A module's AssemblyLoadContext ([`ReadTypes::assembly_load_context`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct AlcData {
    /// The module's PEAssembly.
    pub pe_assembly: u64,
    /// Its assembly binder (the native AssemblyLoadContext).
    pub binder: u64,
    /// The binder's `m_ptrManagedAssemblyLoadContext`: a GC handle, 0 until the managed
    /// AssemblyLoadContext exists.
    pub handle: u64,
    /// The managed AssemblyLoadContext object (0 when the handle is 0).
    pub object: u64,
}

/// Reading the loader's structures of types: MethodTables, EEClasses, FieldDescs and Modules.
pub trait ReadTypes {
    /// What `dumpclass` reads of an EEClass itself: its `m_pMethodTable` (which the caller
    /// checks names this EEClass back) and its TypeDef attributes (`None` when not in the
    /// dump).
    fn ee_class_header(&self, ee: u64) -> Result<(u64, Option<u32>)>;

    /// Decodes the MethodTable at `mt`.
    fn method_table(&self, mt: u64) -> Result<MethodTableInfo>;

    /// The EEClass counters (NumInstanceFields incl. inherited ones, NumStaticFields), when
    /// the EEClass keeps them unpacked (.NET 8's EEClassPackedFields when not packed; the
    /// plain WORDs of .NET 9+); `None` when they are bit-packed (not decoded here).
    fn field_counts(&self, ee_class: u64) -> Result<Option<(u32, u32)>>;

    /// The class's own FieldDescs (instance fields first, then statics; inherited fields are
    /// in the parents' lists), from its EEClass. The list is the run of FieldDescs whose
    /// enclosing MethodTable is the canonical MT.
    fn fields(&self, mt: &MethodTableInfo) -> Result<Vec<FieldInfo>>;

    /// A Module: its name, image path, the image layout in memory and its metadata location.
    fn module(&self, module: u64) -> Result<ModuleData>;

    /// The AssemblyLoadContext of a module, as the DAC's GetAssemblyLoadContext finds it: the
    /// module's PEAssembly, its binder, the binder's handle of the managed
    /// AssemblyLoadContext and the object that handle holds (0 when no managed instance was
    /// made: the handle is 0). Refused where the family's layout does not know the path.
    fn assembly_load_context(&self, module: u64) -> Result<AlcData>;

    /// The CLI header's address from the image's own PE headers (data directory 14), for
    /// families whose PEImageLayout does not publish m_pCorHeader.
    fn cor_header_from_pe(&self, base: u64, mapped: bool) -> Result<u64>;

    /// The metadata (BSJB) of an image at `base`: from the CLI header's MetaData directory,
    /// translating the RVA through the section table when the layout is flat.
    fn metadata_location(&self, base: u64, mapped: bool, cor_header: u64) -> Result<(u64, u32)>;
}

impl<M: Memory> ReadTypes for Runtime<M> {
    fn ee_class_header(&self, ee: u64) -> Result<(u64, Option<u32>)> {
        let l = &self.layout.ee_class;
        let mt = self.r64(ee.wrapping_add(l.method_table), "EEClass::m_pMethodTable")?;
        let attr = self.memory().read_u32(ee.wrapping_add(l.attr_class)).ok();
        Ok((mt, attr))
    }

    fn method_table(&self, mt: u64) -> Result<MethodTableInfo> {
        let l = &self.layout.method_table;
        let flags = self.r32(mt + l.flags, "MethodTable::m_dwFlags")?;
        let base_size = self.r32(mt + l.base_size, "MethodTable::m_BaseSize")?;
        let net9 = self.layout.method_table_scheme == MethodTableScheme::Net9;
        // .NET 9+: a DWORD MTFlags2 whose bits 8-31 are the TypeDef rid (its low byte holds
        // the flags); .NET 8: WORD m_wFlags2 and WORD m_wToken.
        let (flags2, raw_token) = if net9 {
            let f2 = self.r32(mt + l.flags2, "MethodTable::MTFlags2")?;
            ((f2 & 0xFF) as u16, (f2 >> 8 != 0).then_some(f2 >> 8))
        } else {
            let f2 = self.r16(mt + l.flags2, "MethodTable::m_wFlags2")?;
            let t = self.r16(mt + l.token, "MethodTable::m_wToken")?;
            (f2, (t != 0xFFFF).then_some(t as u32))
        };
        let num_virtuals = self.r16(mt + l.num_virtuals, "MethodTable::m_wNumVirtuals")?;
        let num_interfaces = self.r16(mt + l.num_interfaces, "MethodTable::m_wNumInterfaces")?;
        let parent = self.r64(mt + l.parent, "MethodTable::m_pParentMethodTable")?;
        let loader_module = self.r64(mt + l.loader_module, "MethodTable::m_pLoaderModule")?;
        let ec = self.r64(mt + l.ee_class_or_canon, "MethodTable::m_pEEClass")?;
        let (canonical, ee_class) = if ec & 1 != 0 {
            let canon = ec & !1;
            let e = self.r64(
                canon + l.ee_class_or_canon,
                "canonical MethodTable::m_pEEClass",
            )?;
            if e & 1 != 0 {
                return Err(ClrError::corrupt(
                    "MethodTable",
                    mt,
                    format!("canonical MT {canon:#x} is itself not canonical"),
                ));
            }
            (canon, e)
        } else {
            (mt, ec)
        };
        if ee_class == 0 && mt != self.globals.free_mt {
            return Err(ClrError::corrupt("MethodTable", mt, "null EEClass"));
        }
        let has_comp = flags & f::HAS_COMPONENT_SIZE != 0;
        let component_size = if has_comp { flags & 0xFFFF } else { 0 };
        let is_array = flags & f::CATEGORY_ARRAY_MASK == f::CATEGORY_ARRAY;
        let array = if is_array {
            let element = self.r64(mt + l.per_inst_info, "MethodTable::m_ElementTypeHnd")?;
            let is_sz = flags & f::CATEGORY_IFARRAYTHENSZARRAY != 0;
            let rank = if is_sz {
                1
            } else {
                // ArrayBase + per dimension a bound and a lower bound (2 x INT32).
                base_size.saturating_sub(0x18) / 8
            };
            Some(ArrayInfo {
                element,
                rank,
                is_sz,
            })
        } else {
            None
        };
        // The module: GetModule() = the canonical (or array) MT's loader module unless it has
        // a module override (kept in a multipurpose slot, not read here).
        let mod_mt = if is_array { mt } else { canonical };
        let mod_flags2 = if mod_mt == mt || net9 {
            flags2
        } else {
            self.r16(mod_mt + l.flags2, "canonical MethodTable::m_wFlags2")?
        };
        let module = if net9 {
            // MethodTable.Module is the module itself (no override slot).
            Some(loader_module)
        } else if mod_flags2 & f::F2_HAS_MODULE_OVERRIDE != 0 {
            None
        } else if mod_mt == mt {
            Some(loader_module)
        } else {
            Some(self.r64(
                mod_mt + l.loader_module,
                "canonical MethodTable::m_pLoaderModule",
            )?)
        };
        let token = match raw_token {
            Some(rid) if !is_array => Some(0x0200_0000 | rid),
            _ => None,
        };
        let mut type_args = Vec::new();
        // .NET 9+: an instantiated type always has PerInstInfo (the cDAC reads it whenever the
        // generics kind says so).
        let has_pii = net9 || flags2 & f::F2_HAS_PER_INST_INFO != 0;
        if !has_comp && flags & f::GENERICS_MASK != 0 && has_pii {
            let pii = self.r64(mt + l.per_inst_info, "MethodTable::m_pPerInstInfo")?;
            if pii != 0 {
                // GenericsDictInfo { INT_PTR pad; WORD m_wNumDicts; WORD m_wNumTyPars } precedes
                // the dictionary pointer array.
                let num_dicts =
                    self.r16(pii.wrapping_sub(4), "GenericsDictInfo::m_wNumDicts")? as u64;
                let num_ty =
                    self.r16(pii.wrapping_sub(2), "GenericsDictInfo::m_wNumTyPars")? as u64;
                if num_dicts == 0 || num_ty == 0 || num_ty > 1024 || num_dicts > 1024 {
                    return Err(ClrError::corrupt(
                        "GenericsDictInfo",
                        pii.wrapping_sub(8),
                        format!("{num_dicts} dictionaries, {num_ty} type parameters"),
                    ));
                }
                let dict = self.r64(
                    pii.wrapping_add(8 * (num_dicts - 1)),
                    "PerInstInfo dictionary",
                )?;
                for i in 0..num_ty {
                    type_args.push(
                        self.r64(dict.wrapping_add(8 * i), "generic dictionary type argument")?,
                    );
                }
            }
        }
        Ok(MethodTableInfo {
            address: mt,
            flags,
            flags2,
            base_size,
            component_size,
            token,
            parent,
            loader_module,
            module,
            canonical,
            ee_class,
            num_virtuals,
            num_interfaces,
            array,
            type_args,
        })
    }

    fn field_counts(&self, ee_class: u64) -> Result<Option<(u32, u32)>> {
        self.require(crate::discovery::layout::Capability::Fields)?;
        let l = &self.layout.ee_class;
        if let Some((inst, stat)) = l.field_counts {
            // .NET 9+ keep the counters as plain WORDs (EEClass.NumInstanceFields in the .NET
            // 10 descriptor, the family supplement's on 9).
            return Ok(Some((
                self.r16(ee_class + inst, "EEClass.NumInstanceFields")? as u32,
                self.r16(ee_class + stat, "EEClass.NumStaticFields")? as u32,
            )));
        }
        if l.fields_are_packed == crate::discovery::supplement::NOT_PUBLISHED {
            return Err(ClrError::MissingField {
                ty: "EEClass",
                field: "NumInstanceFields",
                runtime: format!("{} ({}-x64)", self.info.display_name(), self.info.os),
            });
        }
        let m = self.memory();
        let packed = m
            .read_u8(ee_class + l.fields_are_packed)
            .map_err(|_| ClrError::read("EEClass::m_fFieldsArePacked", ee_class))?;
        if packed != 0 {
            return Ok(None);
        }
        let fixed = m
            .read_u8(ee_class + l.fixed_fields_size)
            .map_err(|_| ClrError::read("EEClass::m_cbFixedEEClassFields", ee_class))?
            as u64;
        // EEClassPackedFields order: NumInstanceFields, NumMethods, NumStaticFields, ...
        let at = ee_class + fixed;
        Ok(Some((
            self.r32(at, "EEClassPackedFields::NumInstanceFields")?,
            self.r32(at + 8, "EEClassPackedFields::NumStaticFields")?,
        )))
    }

    fn fields(&self, mt: &MethodTableInfo) -> Result<Vec<FieldInfo>> {
        self.require(crate::discovery::layout::Capability::Fields)?;
        let l = &self.layout.ee_class;
        let fl = &self.layout.field_desc;
        if mt.ee_class == 0 {
            return Ok(Vec::new());
        }
        let list = self.r64(mt.ee_class + l.field_desc_list, "EEClass::m_pFieldDescList")?;
        let mut out = Vec::new();
        if list == 0 {
            return Ok(out);
        }
        // .NET 9+: the counters bound the list (a MethodDescChunk, whose first word is the
        // MethodTable too, may follow the last FieldDesc).
        let bound = match l.field_counts {
            Some((inst, stat)) => {
                let words = |ee: u64| -> Result<(u64, u64)> {
                    Ok((
                        self.r16(ee + inst, "EEClass.NumInstanceFields")? as u64,
                        self.r16(ee + stat, "EEClass.NumStaticFields")? as u64,
                    ))
                };
                let (all_inst, statics) = words(mt.ee_class)?;
                let inherited = if mt.parent != 0 {
                    let p = self.method_table(mt.parent)?;
                    words(p.ee_class)?.0
                } else {
                    0
                };
                (all_inst.saturating_sub(inherited) + statics).min(MAX_FIELDS as u64)
            }
            None => MAX_FIELDS as u64,
        };
        for i in 0..bound {
            let a = list + i * fl.size;
            let Ok(encl) = self.memory().read_u64(a + fl.enclosing_mt) else {
                break;
            };
            if encl != mt.canonical {
                break;
            }
            let d1 = self.r32(a + fl.dword1, "FieldDesc")?;
            let d2 = self.r32(a + fl.dword2, "FieldDesc")?;
            out.push(FieldInfo {
                address: a,
                token: 0x0400_0000 | (d1 & 0x00FF_FFFF),
                offset: d2 & 0x07FF_FFFF,
                element_type: (d2 >> 27) as u8,
                is_static: d1 & (1 << 24) != 0,
                is_thread_static: d1 & (1 << 25) != 0,
                is_rva: d1 & (1 << 26) != 0,
            });
        }
        Ok(out)
    }

    fn assembly_load_context(&self, module: u64) -> Result<AlcData> {
        use crate::discovery::layout::AlcLayout;
        let l = &self.layout.module;
        let Some(alc) = l.alc else {
            return Err(ClrError::NotVerified {
                runtime: self.layout.name.to_owned(),
                capability: "the assembly binder and its AssemblyLoadContext (PEAssembly's \
                             binder, AssemblyBinder::m_ptrManagedAssemblyLoadContext)",
            });
        };
        let pe_assembly = self.r64(module + l.pe_assembly, "Module::m_pPEAssembly")?;
        let (binder, binder_alc) = match alc {
            AlcLayout::Published {
                pe_assembly_binder,
                binder_alc,
            } => (
                self.r64(
                    pe_assembly + pe_assembly_binder,
                    "PEAssembly::m_pAssemblyBinder",
                )?,
                binder_alc,
            ),
            AlcLayout::HostAssembly {
                host_assembly,
                fallback_binder,
                host_binder,
                binder_alc,
            } => {
                let host = self.r64(pe_assembly + host_assembly, "PEAssembly::m_pHostAssembly")?;
                let binder = if host != 0 {
                    self.r64(host + host_binder, "BINDER_SPACE::Assembly::m_pBinder")?
                } else {
                    self.r64(
                        pe_assembly + fallback_binder,
                        "PEAssembly::m_pFallbackBinder",
                    )?
                };
                (binder, binder_alc)
            }
        };
        if binder == 0 {
            return Err(ClrError::corrupt(
                "PEAssembly",
                pe_assembly,
                "has no assembly binder (no host assembly, not dynamic)",
            ));
        }
        let handle = self.r64(
            binder + binder_alc,
            "AssemblyBinder::m_ptrManagedAssemblyLoadContext",
        )?;
        let object = if handle == 0 {
            0
        } else {
            self.r64(handle, "the AssemblyLoadContext handle")?
        };
        Ok(AlcData {
            pe_assembly,
            binder,
            handle,
            object,
        })
    }

    fn module(&self, module: u64) -> Result<ModuleData> {
        let l = &self.layout.module;
        // The name points into the image's metadata string heap, which a dump may not hold:
        // then the file name of the image path stands in for it.
        let simple_name = match l.simple_name {
            Some(off) => {
                let name_p = self.r64(module + off, "Module::m_pSimpleName")?;
                self.memory()
                    .read_cstr(name_p, 1024)
                    .ok()
                    .filter(|s| !s.is_empty())
            }
            None => None,
        };
        let pe_assembly = self.r64(module + l.pe_assembly, "Module::m_pPEAssembly")?;
        let pe_image = self.r64(pe_assembly + l.pe_assembly_image, "PEAssembly::m_PEImage")?;
        let path = if let Some(off) = l.path_pointer {
            let p = self.r64(module + off, "Module.Path")?;
            if p == 0 {
                String::new()
            } else {
                self.read_utf16z(p, 0x8000)
            }
        } else {
            let size = self.r32(pe_image, "PEImage::m_path")? as usize;
            let buf = self.r64(pe_image + l.pe_image_path_buffer, "PEImage::m_path buffer")?;
            if buf == 0 || size == 0 || size > 0x10000 {
                String::new()
            } else {
                self.memory()
                    .read_utf16(buf, size / 2)
                    .map(|s| s.trim_end_matches('\0').to_string())
                    .unwrap_or_default()
            }
        };
        let simple_name = simple_name.unwrap_or_else(|| {
            let file = file_name_of(&path).unwrap_or("");
            file.strip_suffix(".dll")
                .or_else(|| file.strip_suffix(".exe"))
                .unwrap_or(file)
                .to_string()
        });
        // PEImage::m_pLayouts: [IMAGE_FLAT, IMAGE_LOADED]. Prefer a layout whose metadata is in
        // the dump (createdump saves the loaded layout of System.Private.CoreLib, not its flat
        // file mapping).
        let mut chosen = None;
        for i in (0..l.pe_image_layout_count as u64).rev() {
            let layout = self.r64(pe_image + l.pe_image_layouts + 8 * i, "PEImage::m_pLayouts")?;
            if layout == 0 {
                continue;
            }
            let image_base = self.r64(layout + l.layout_base, "PEImageLayout::m_base")?;
            let image_size = self.r32(layout + l.layout_size, "PEImageLayout::m_size")?;
            let flags = self.r32(layout + l.layout_flags, "PEImageLayout::m_flags")?;
            let mapped = flags & 1 != 0;
            let cor_header = match l.layout_cor_header {
                Some(off) => self.r64(layout + off, "PEImageLayout::m_pCorHeader")?,
                None => self.cor_header_from_pe(image_base, mapped).unwrap_or(0),
            };
            let metadata = self.metadata_location(image_base, mapped, cor_header).ok();
            let better =
                chosen
                    .as_ref()
                    .is_none_or(|c: &(u64, u32, bool, u64, Option<(u64, u32)>)| {
                        c.4.is_none() && metadata.is_some()
                    });
            if better {
                chosen = Some((image_base, image_size, mapped, cor_header, metadata));
            }
        }
        let Some((image_base, image_size, mapped, cor_header, metadata)) = chosen else {
            return Err(ClrError::corrupt(
                "PEImage",
                pe_image,
                "no image layout loaded",
            ));
        };
        Ok(ModuleData {
            address: module,
            simple_name,
            pe_assembly,
            pe_image,
            path,
            image_base,
            image_size,
            mapped,
            cor_header,
            metadata,
        })
    }

    fn cor_header_from_pe(&self, base: u64, mapped: bool) -> Result<u64> {
        let lfanew = self.r32(base + 0x3C, "IMAGE_DOS_HEADER::e_lfanew")? as u64;
        if lfanew > 0x1000 {
            return Err(ClrError::corrupt(
                "PE image",
                base,
                format!("e_lfanew {lfanew:#x}"),
            ));
        }
        let nt = base + lfanew;
        let magic = self.r16(nt + 24, "IMAGE_OPTIONAL_HEADER::Magic")?;
        // Data directories: PE32 at +96, PE32+ at +112 of the optional header.
        let dirs = nt + 24 + if magic == 0x20B { 112 } else { 96 };
        let rva = self.r32(dirs + 14 * 8, "IMAGE_DATA_DIRECTORY[COR20]")?;
        if rva == 0 {
            return Err(ClrError::corrupt(
                "PE image",
                base,
                "no CLI header directory",
            ));
        }
        if mapped {
            return Ok(base + rva as u64);
        }
        let nsec = self.r16(nt + 6, "IMAGE_FILE_HEADER::NumberOfSections")? as u64;
        let opt_size = self.r16(nt + 20, "IMAGE_FILE_HEADER::SizeOfOptionalHeader")? as u64;
        let sec = nt + 24 + opt_size;
        for i in 0..nsec.min(96) {
            let s = sec + 40 * i;
            let vsize = self.r32(s + 8, "IMAGE_SECTION_HEADER")?;
            let va = self.r32(s + 12, "IMAGE_SECTION_HEADER")?;
            let rsize = self.r32(s + 16, "IMAGE_SECTION_HEADER")?;
            let raw = self.r32(s + 20, "IMAGE_SECTION_HEADER")?;
            if rva >= va && rva < va + vsize.max(rsize) {
                return Ok(base + (rva - va + raw) as u64);
            }
        }
        Err(ClrError::corrupt(
            "PE image",
            base,
            format!("CLI header RVA {rva:#x} in no section"),
        ))
    }

    fn metadata_location(&self, base: u64, mapped: bool, cor_header: u64) -> Result<(u64, u32)> {
        let rva = self.r32(cor_header + 8, "IMAGE_COR20_HEADER::MetaData")?;
        let size = self.r32(cor_header + 12, "IMAGE_COR20_HEADER::MetaData")?;
        let addr = if mapped {
            base + rva as u64
        } else {
            let lfanew = self.r32(base + 0x3C, "IMAGE_DOS_HEADER::e_lfanew")? as u64;
            let nt = base + lfanew;
            let nsec = self.r16(nt + 6, "IMAGE_FILE_HEADER::NumberOfSections")? as u64;
            let opt_size = self.r16(nt + 20, "IMAGE_FILE_HEADER::SizeOfOptionalHeader")? as u64;
            let sec = nt + 24 + opt_size;
            let mut found = None;
            for i in 0..nsec.min(96) {
                let s = sec + 40 * i;
                let vsize = self.r32(s + 8, "IMAGE_SECTION_HEADER")?;
                let va = self.r32(s + 12, "IMAGE_SECTION_HEADER")?;
                let raw = self.r32(s + 20, "IMAGE_SECTION_HEADER")?;
                let rsize = self.r32(s + 16, "IMAGE_SECTION_HEADER")?;
                if rva >= va && rva < va + vsize.max(rsize) {
                    found = Some(base + (rva - va + raw) as u64);
                    break;
                }
            }
            found.ok_or_else(|| {
                ClrError::corrupt(
                    "PE image",
                    base,
                    format!("metadata RVA {rva:#x} in no section"),
                )
            })?
        };
        let sig = self.r32(addr, "metadata root")?;
        if sig != 0x424A_5342 {
            return Err(ClrError::corrupt(
                "metadata root",
                addr,
                format!("signature {sig:#x}, expected BSJB"),
            ));
        }
        Ok((addr, size))
    }
}

impl<M: Memory> Runtime<M> {
    fn r64(&self, a: u64, what: &str) -> Result<u64> {
        self.memory()
            .read_u64(a)
            .map_err(|_| ClrError::read(what, a))
    }

    fn r32(&self, a: u64, what: &str) -> Result<u32> {
        self.memory()
            .read_u32(a)
            .map_err(|_| ClrError::read(what, a))
    }

    fn r16(&self, a: u64, what: &str) -> Result<u16> {
        self.memory()
            .read_u16(a)
            .map_err(|_| ClrError::read(what, a))
    }

    /// A NUL-terminated UTF-16 string of at most `max` units ("" when unreadable).
    fn read_utf16z(&self, addr: u64, max: usize) -> String {
        let mut units = Vec::new();
        let mut buf = [0u8; 256];
        let mut a = addr;
        while units.len() < max {
            let got = self.memory().read(a, &mut buf);
            if got < 2 {
                break;
            }
            let mut end = false;
            for c in buf[..got & !1].chunks_exact(2) {
                let u = u16::from_le_bytes([c[0], c[1]]);
                if u == 0 {
                    end = true;
                    break;
                }
                units.push(u);
            }
            if end {
                break;
            }
            a += (got & !1) as u64;
        }
        String::from_utf16_lossy(&units)
    }
}
