//! Finding a type by name in the loaded modules (`name2ee`): its TypeDef token, and its
//! MethodTable and EEClass when the type is loaded.
//!
//! The modules looked in are those the session can name without the runtime's module list:
//! the modules of the heap's types (and their type arguments'), and CoreLib's
//! ([`crate::analysis::roots::modules_of_types`]).

use crate::analysis::roots::modules_of_types;
use crate::data::types::ReadTypes;
use crate::model::heap::GcHeap;
use crate::model::objects::ObjectReader;
use dumpreader::Memory;

/// One module's TypeDef of the name asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeMatch {
    /// The Module.
    pub module: u64,
    /// Its assembly's name (from its metadata, else the runtime's simple name).
    pub assembly: String,
    /// Its image's path.
    pub file: String,
    /// The TypeDef's row.
    pub typedef: u32,
    /// The type's name, as asked for.
    pub name: String,
    /// Its MethodTable, when the type is loaded.
    pub mt: Option<u64>,
    /// Its EEClass, when the type is loaded.
    pub ee_class: Option<u64>,
}

impl TypeMatch {
    /// The TypeDef token.
    pub fn token(&self) -> u32 {
        0x0200_0000 | self.typedef
    }
}

/// What [`find_type`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeSearch {
    /// The modules whose name matched (their image paths), in the order searched; empty
    /// when no known module is named so.
    pub modules_searched: Vec<String>,
    /// The TypeDefs of that name, one per module that has one.
    pub matches: Vec<TypeMatch>,
}

/// The TypeDefs named `type_name` (full name, `Namespace.Outer+Inner`1`) in the modules named
/// `module` (file name, assembly or simple name, any case; `*` for all) among those the heap's
/// types come from and CoreLib.
pub fn find_type<M: Memory>(
    r: &ObjectReader<'_, M>,
    heap: &GcHeap,
    module: &str,
    type_name: &str,
) -> TypeSearch {
    let mts: Vec<u64> = heap.census(r.rt).types.iter().map(|t| t.mt).collect();
    let mods = modules_of_types(r, &mts);
    let want = module.to_ascii_lowercase();
    let mut out = TypeSearch {
        modules_searched: Vec::new(),
        matches: Vec::new(),
    };
    for &md in &mods {
        let Ok(data) = r.rt.module(md) else { continue };
        let file = data.file_name().unwrap_or("");
        let assembly = r
            .names
            .module_metadata(r.rt, md)
            .map(|x| x.assembly.clone())
            .unwrap_or_else(|_| data.simple_name.clone());
        let named = want == "*"
            || file.to_ascii_lowercase() == want
            || assembly.to_ascii_lowercase() == want
            || data.simple_name.to_ascii_lowercase() == want;
        if !named {
            continue;
        }
        out.modules_searched.push(data.path.clone());
        if let Some(rid) = r.find_typedef(md, type_name) {
            let mt = r.typedef_mt(md, rid);
            out.matches.push(TypeMatch {
                module: md,
                assembly,
                file: data.path.clone(),
                typedef: rid,
                name: type_name.to_string(),
                mt,
                ee_class: mt.and_then(|x| r.mt(x)).map(|i| i.ee_class),
            });
        }
    }
    out
}
