//! Type names as SOS and the DAC print them, and signature formatting.
//!
//! Two styles, both taken from the runtime's own formatters (dotnet/runtime
//! `src/coreclr/vm/sigformat.cpp` and `typestring.cpp`) and checked against the DAC's output in
//! `dumps/*.dac.json`:
//!
//! - [`SigStyle::Dac`]: how the DAC prints a method's parameter list in a method name
//!   (`SigFormat::AddTypeString`): `System.Threading.Monitor.Wait(System.Object, Int32)`,
//!   `System.Threading.Monitor.ReliableEnter(System.Object, Boolean ByRef)`,
//!   `Heap.Program.Main(System.String[])`. Primitives by their bare `System` name (`Int32`,
//!   `Boolean`, `IntPtr`, `Void`, `TypedReference`) except `System.Object` and `System.String`;
//!   classes as `Namespace.Name` of their own TypeDef/TypeRef row (a nested type prints
//!   without its enclosing type, as the runtime's `GetNameOfTypeDef` gives it); generic
//!   instantiations as ``System.Collections.Generic.List`1<Int32>`` (arguments joined by `,`
//!   without a space); `X[]`, `X[,]` (rank-1 commas, no bounds), `X*`, `X ByRef`;
//!   `!0`/`!!0` for unresolved type/method generic parameters; function pointers as
//!   `Ret (A, B)`; custom modifiers and `PINNED` are skipped (the runtime's `SigParser`
//!   skips them).
//! - [`SigStyle::TypeName`]: how SOS/the DAC name a type (`TypeString` with namespaces and
//!   full instantiations): `System.Int32`, `Outer+Inner`, ``List`1[[System.Int32,
//!   System.Private.CoreLib]]`` (assembly names when the resolver knows them), `X[]`, `X[,]`,
//!   `X*`, `X&`.

use super::error::{Error, Result};
use super::reader::{Metadata, Token};
use super::rows::MAX_NESTING;
use super::sig::{decode_type_spec, MethodSig, Primitive, SigType, MAX_SIG_DEPTH};
use super::tables::TableId;
use std::cell::Cell;
use std::fmt::Write;

/// Which formatter's conventions to follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SigStyle {
    /// The DAC's method-signature style (`SigFormat`): `Int32`, `System.String[]`,
    /// `Boolean ByRef`.
    Dac,
    /// SOS type-name style (`TypeString`): `System.Int32`, `Outer+Inner`, `X[[A, Asm]]`.
    TypeName,
}

/// Where a TypeRef is resolved (its ResolutionScope, II.22.38).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResolutionScope {
    /// This module (Module row).
    Module,
    /// Another module of this assembly (ModuleRef rid).
    ModuleRef(u32),
    /// Another assembly (AssemblyRef rid).
    AssemblyRef(u32),
    /// A nested type: its enclosing type (TypeRef rid).
    Nested(u32),
    /// A null scope: look the type up in this assembly's ExportedType table.
    Exported,
}

/// Supplies the names a signature refers to. Implement it over whatever knows the names
/// (metadata of several modules, runtime type handles); [`MetadataNames`] implements it over
/// one module's metadata.
pub trait SigResolver {
    /// Appends the name of a TypeDef, TypeRef or TypeSpec token, in `style`.
    fn type_name(&self, token: Token, style: SigStyle, out: &mut String);

    /// The name for generic parameter `index` (`method`: an MVAR, else a VAR), when known
    /// (an instantiation's argument, or the parameter's declared name); `None` prints `!n` /
    /// `!!n`.
    fn generic_arg(&self, _index: u32, _method: bool, _style: SigStyle) -> Option<String> {
        None
    }

    /// The simple name of the assembly defining `token`'s type (for
    /// [`SigStyle::TypeName`] instantiations); `None` leaves the assembly out.
    fn assembly_of(&self, _token: Token) -> Option<String> {
        None
    }

    /// The assembly defining the primitive types (`System.Private.CoreLib`).
    fn core_assembly(&self) -> Option<String> {
        None
    }

    /// The name of the type a runtime TypeHandle names (`ELEMENT_TYPE_INTERNAL` in the
    /// signatures the runtime makes for dynamic methods); `None` prints the handle.
    fn type_handle_name(&self, _handle: u64, _style: SigStyle) -> Option<String> {
        None
    }

    /// The name of a generic type definition a runtime TypeHandle names, without its type
    /// parameters (`System.Span`1`): the head of `GENERICINST INTERNAL <handle> <args>`.
    fn generic_definition_name(&self, handle: u64, style: SigStyle) -> Option<String> {
        self.type_handle_name(handle, style)
    }
}

/// Appends `ty` formatted in `style` to `out`, asking `names` for type and generic names.
pub fn format_type(ty: &SigType, style: SigStyle, names: &dyn SigResolver, out: &mut String) {
    fmt_type(ty, style, names, out, 0)
}

/// `ty` formatted in `style` (see [`format_type`]).
pub fn type_to_string(ty: &SigType, style: SigStyle, names: &dyn SigResolver) -> String {
    let mut s = String::new();
    format_type(ty, style, names, &mut s);
    s
}

/// A method's parameter list as the DAC prints it after the method name: `(System.Object,
/// Int32)`, with `, ...` for a vararg method.
pub fn format_method_params(sig: &MethodSig, names: &dyn SigResolver) -> String {
    let mut s = String::from("(");
    let fixed = sig.sentinel.unwrap_or(sig.params.len());
    for (i, p) in sig.params[..fixed].iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        format_type(p, SigStyle::Dac, names, &mut s);
    }
    if sig.is_vararg() {
        if fixed > 0 {
            s.push_str(", ");
        }
        s.push_str("...");
    }
    s.push(')');
    s
}

fn fmt_type(ty: &SigType, style: SigStyle, names: &dyn SigResolver, out: &mut String, depth: u32) {
    if depth > MAX_SIG_DEPTH {
        out.push_str("...");
        return;
    }
    let d = depth + 1;
    match ty {
        SigType::Primitive(p) => match (style, p) {
            (SigStyle::Dac, Primitive::Object | Primitive::String) | (SigStyle::TypeName, _) => {
                out.push_str("System.");
                out.push_str(p.short_name());
            }
            (SigStyle::Dac, _) => out.push_str(p.short_name()),
        },
        SigType::Class(t) | SigType::ValueType(t) => names.type_name(*t, style, out),
        SigType::Ptr(inner) => {
            fmt_type(inner, style, names, out, d);
            out.push('*');
        }
        SigType::ByRef(inner) => {
            fmt_type(inner, style, names, out, d);
            out.push_str(match style {
                SigStyle::Dac => " ByRef",
                SigStyle::TypeName => "&",
            });
        }
        SigType::SzArray(inner) => {
            fmt_type(inner, style, names, out, d);
            out.push_str("[]");
        }
        SigType::Array { element, rank, .. } => {
            fmt_type(element, style, names, out, d);
            out.push('[');
            if style == SigStyle::TypeName && *rank == 1 {
                out.push('*');
            }
            for _ in 1..(*rank).min(32) {
                out.push(',');
            }
            out.push(']');
        }
        SigType::GenericInst { generic, args, .. } => {
            names.type_name(*generic, style, out);
            fmt_type_args(args, style, names, out, d);
        }
        SigType::GenericInstOfHandle { handle, args } => {
            match names.generic_definition_name(*handle, style) {
                Some(n) => out.push_str(&n),
                None => {
                    let _ = write!(out, "<TypeHandle {handle:#x}>");
                }
            }
            fmt_type_args(args, style, names, out, d);
        }
        SigType::Var(n) => match names.generic_arg(*n, false, style) {
            Some(s) => out.push_str(&s),
            None => {
                let _ = write!(out, "!{n}");
            }
        },
        SigType::MVar(n) => match names.generic_arg(*n, true, style) {
            Some(s) => out.push_str(&s),
            None => {
                let _ = write!(out, "!!{n}");
            }
        },
        SigType::FnPtr(m) => {
            fmt_type(&m.ret, style, names, out, d);
            out.push_str(" (");
            let fixed = m.sentinel.unwrap_or(m.params.len());
            for (i, p) in m.params[..fixed].iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                fmt_type(p, style, names, out, d);
            }
            if m.is_vararg() {
                if fixed > 0 {
                    out.push_str(", ");
                }
                out.push_str("...");
            }
            out.push(')');
        }
        SigType::Modified { inner, .. } | SigType::Pinned(inner) => {
            fmt_type(inner, style, names, out, d)
        }
        SigType::Internal(h) => match names.type_handle_name(*h, style) {
            Some(n) => out.push_str(&n),
            None => {
                let _ = write!(out, "<TypeHandle {h:#x}>");
            }
        },
    }
}

/// Appends a generic instantiation's arguments: `<A,B>` (DAC style) or `[[A, asm],[B, asm]]`
/// (type-name style).
fn fmt_type_args(
    args: &[SigType],
    style: SigStyle,
    names: &dyn SigResolver,
    out: &mut String,
    d: u32,
) {
    match style {
        SigStyle::Dac => {
            out.push('<');
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                fmt_type(a, style, names, out, d);
            }
            out.push('>');
        }
        SigStyle::TypeName => {
            out.push('[');
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let asm = assembly_of_type(a, names);
                if let Some(asm) = &asm {
                    out.push('[');
                    fmt_type(a, style, names, out, d);
                    out.push_str(", ");
                    out.push_str(asm);
                    out.push(']');
                } else {
                    fmt_type(a, style, names, out, d);
                }
            }
            out.push(']');
        }
    }
}

/// The assembly of the type an argument names (its outermost element type's).
fn assembly_of_type(ty: &SigType, names: &dyn SigResolver) -> Option<String> {
    let mut t = ty;
    for _ in 0..=MAX_SIG_DEPTH {
        match t {
            SigType::Primitive(_) => return names.core_assembly(),
            SigType::Class(tok) | SigType::ValueType(tok) => return names.assembly_of(*tok),
            SigType::GenericInst { generic, .. } => return names.assembly_of(*generic),
            SigType::Ptr(i) | SigType::ByRef(i) | SigType::SzArray(i) | SigType::Pinned(i) => t = i,
            SigType::Array { element, .. } => t = element,
            SigType::Modified { inner, .. } => t = inner,
            _ => return None,
        }
    }
    None
}

impl<'a> Metadata<'a> {
    /// The resolution scope of TypeRef `rid`.
    pub fn resolution_scope(&self, rid: u32) -> Result<ResolutionScope> {
        let tr = self.type_ref(rid)?;
        let s = tr.resolution_scope;
        if s.is_null() {
            return Ok(ResolutionScope::Exported);
        }
        Ok(match s.table() {
            Some(TableId::Module) => ResolutionScope::Module,
            Some(TableId::ModuleRef) => ResolutionScope::ModuleRef(s.rid()),
            Some(TableId::AssemblyRef) => ResolutionScope::AssemblyRef(s.rid()),
            Some(TableId::TypeRef) => ResolutionScope::Nested(s.rid()),
            _ => {
                return Err(Error::BadRow {
                    table: TableId::TypeRef,
                    rid,
                    reason: format!("resolution scope {s} is not a scope"),
                })
            }
        })
    }

    /// The AssemblyRef rid a TypeRef finally resolves to (following nested TypeRefs to the
    /// outermost one); `None` when it resolves inside this assembly or to a ModuleRef.
    pub fn type_ref_assembly(&self, rid: u32) -> Result<Option<u32>> {
        let mut cur = rid;
        for _ in 0..MAX_NESTING {
            match self.resolution_scope(cur)? {
                ResolutionScope::AssemblyRef(a) => return Ok(Some(a)),
                ResolutionScope::Nested(outer) => cur = outer,
                _ => return Ok(None),
            }
        }
        Err(nesting_error(TableId::TypeRef, rid))
    }

    /// The full name of TypeDef `rid` as reflection and SOS print it:
    /// ``Namespace.Outer+Inner`1`` (enclosing types joined by `+`, arity suffixes kept).
    pub fn type_name(&self, rid: u32) -> Result<String> {
        let mut chain = Vec::new();
        let mut cur = rid;
        loop {
            if chain.len() >= MAX_NESTING {
                return Err(nesting_error(TableId::TypeDef, rid));
            }
            chain.push(cur);
            match self.enclosing_class(cur)? {
                Some(outer) if outer != cur => cur = outer,
                Some(_) => return Err(nesting_error(TableId::TypeDef, rid)),
                None => break,
            }
        }
        let mut s = String::new();
        for (i, t) in chain.iter().rev().enumerate() {
            let row = self.type_def(*t)?;
            if i > 0 {
                s.push('+');
            }
            if !row.namespace.is_empty() {
                s.push_str(row.namespace);
                s.push('.');
            }
            s.push_str(row.name);
        }
        Ok(s)
    }

    /// The full name of TypeRef `rid`: ``Namespace.Outer+Inner`` (nested TypeRefs resolved
    /// through their resolution scope).
    pub fn type_ref_name(&self, rid: u32) -> Result<String> {
        let mut chain = Vec::new();
        let mut cur = rid;
        loop {
            if chain.len() >= MAX_NESTING {
                return Err(nesting_error(TableId::TypeRef, rid));
            }
            chain.push(cur);
            match self.resolution_scope(cur)? {
                ResolutionScope::Nested(outer) => cur = outer,
                _ => break,
            }
        }
        let mut s = String::new();
        for (i, t) in chain.iter().rev().enumerate() {
            let row = self.type_ref(*t)?;
            if i > 0 {
                s.push('+');
            }
            if !row.namespace.is_empty() {
                s.push_str(row.namespace);
                s.push('.');
            }
            s.push_str(row.name);
        }
        Ok(s)
    }

    /// `Namespace.Name` of a TypeDef or TypeRef row alone, without enclosing types (what the
    /// runtime's `GetNameOfTypeDef`/`GetNameOfTypeRef` give, used by [`SigStyle::Dac`]).
    pub fn simple_type_name(&self, token: Token) -> Result<String> {
        let (ns, name) = match token.table() {
            Some(TableId::TypeDef) => {
                let r = self.type_def(token.rid())?;
                (r.namespace, r.name)
            }
            Some(TableId::TypeRef) => {
                let r = self.type_ref(token.rid())?;
                (r.namespace, r.name)
            }
            _ => {
                return Err(Error::BadToken {
                    token: token.0,
                    reason: "not a TypeDef or TypeRef",
                })
            }
        };
        Ok(if ns.is_empty() {
            name.to_string()
        } else {
            format!("{ns}.{name}")
        })
    }

    /// The full name of a TypeDef, TypeRef or TypeSpec token (TypeSpecs formatted in
    /// [`SigStyle::TypeName`] with this module's names).
    pub fn token_type_name(&self, token: Token) -> Result<String> {
        match token.table() {
            Some(TableId::TypeDef) => self.type_name(token.rid()),
            Some(TableId::TypeRef) => self.type_ref_name(token.rid()),
            Some(TableId::TypeSpec) => {
                let ty = self.type_spec_sig(token.rid())?;
                Ok(type_to_string(
                    &ty,
                    SigStyle::TypeName,
                    &MetadataNames::new(self),
                ))
            }
            _ => Err(Error::BadToken {
                token: token.0,
                reason: "not a TypeDef, TypeRef or TypeSpec",
            }),
        }
    }

    /// A MethodDef's name as the DAC prints it for a non-generic method of a non-generic type:
    /// `Namespace.Type+Nested.Method(System.Object, Int32)`.
    /// `Name(params)` of MethodDef `rid`, its parameters formatted with the generic
    /// arguments given (the names the DAC prints for an instantiated type's method).
    pub fn method_member_display(
        &self,
        rid: u32,
        type_args: Vec<String>,
        method_args: Vec<String>,
    ) -> Result<String> {
        let m = self.method_def(rid)?;
        let sig = super::sig::decode_method_sig(m.signature)?;
        let names = MetadataNames::new(self).with_generic_args(type_args, method_args);
        Ok(format!("{}{}", m.name, format_method_params(&sig, &names)))
    }

    pub fn method_display_name(&self, rid: u32) -> Result<String> {
        let m = self.method_def(rid)?;
        let owner = self.method_owner(rid)?.ok_or(Error::BadRow {
            table: TableId::MethodDef,
            rid,
            reason: "no TypeDef owns this method".into(),
        })?;
        let sig = super::sig::decode_method_sig(m.signature)?;
        let names = MetadataNames::new(self);
        Ok(format!(
            "{}.{}{}",
            self.type_name(owner)?,
            m.name,
            format_method_params(&sig, &names)
        ))
    }
}

fn nesting_error(table: TableId, rid: u32) -> Error {
    Error::BadRow {
        table,
        rid,
        reason: format!("nesting deeper than {MAX_NESTING} levels (or a cycle)"),
    }
}

/// A [`SigResolver`] over one module's metadata: TypeDef/TypeRef names from its tables,
/// TypeSpecs decoded and formatted recursively (bounded), generic parameters as `!n`/`!!n`
/// (or the names given with [`MetadataNames::with_generic_args`]).
pub struct MetadataNames<'m, 'a> {
    md: &'m Metadata<'a>,
    type_args: Vec<String>,
    method_args: Vec<String>,
    assembly: Option<String>,
    depth: Cell<u32>,
}

impl<'m, 'a> MetadataNames<'m, 'a> {
    /// Names from `md` alone.
    pub fn new(md: &'m Metadata<'a>) -> Self {
        let assembly = md.assembly(1).ok().map(|a| a.name.to_string());
        MetadataNames {
            md,
            type_args: Vec::new(),
            method_args: Vec::new(),
            assembly,
            depth: Cell::new(0),
        }
    }

    /// Uses these names for the type's (`VAR`) and method's (`MVAR`) generic arguments.
    pub fn with_generic_args(mut self, type_args: Vec<String>, method_args: Vec<String>) -> Self {
        self.type_args = type_args;
        self.method_args = method_args;
        self
    }
}

impl SigResolver for MetadataNames<'_, '_> {
    fn type_name(&self, token: Token, style: SigStyle, out: &mut String) {
        let name = match (token.table(), style) {
            (Some(TableId::TypeDef | TableId::TypeRef), SigStyle::Dac) => {
                self.md.simple_type_name(token)
            }
            (Some(TableId::TypeDef), SigStyle::TypeName) => self.md.type_name(token.rid()),
            (Some(TableId::TypeRef), SigStyle::TypeName) => self.md.type_ref_name(token.rid()),
            (Some(TableId::TypeSpec), _) => {
                let d = self.depth.get();
                if d >= 8 {
                    Err(Error::BadToken {
                        token: token.0,
                        reason: "TypeSpecs nested too deep (or a cycle)",
                    })
                } else {
                    self.depth.set(d + 1);
                    let r = self
                        .md
                        .type_spec(token.rid())
                        .and_then(|s| decode_type_spec(s.signature))
                        .map(|ty| type_to_string(&ty, style, self));
                    self.depth.set(d);
                    r
                }
            }
            _ => Err(Error::BadToken {
                token: token.0,
                reason: "not a type token",
            }),
        };
        match name {
            Ok(n) => out.push_str(&n),
            Err(_) => {
                let _ = write!(out, "<bad type {token}>");
            }
        }
    }

    fn generic_arg(&self, index: u32, method: bool, _style: SigStyle) -> Option<String> {
        let v = if method {
            &self.method_args
        } else {
            &self.type_args
        };
        v.get(index as usize).cloned()
    }

    fn assembly_of(&self, token: Token) -> Option<String> {
        match token.table()? {
            TableId::TypeDef => self.assembly.clone(),
            TableId::TypeRef => {
                let a = self.md.type_ref_assembly(token.rid()).ok()??;
                Some(self.md.assembly_ref(a).ok()?.name.to_string())
            }
            _ => None,
        }
    }

    fn core_assembly(&self) -> Option<String> {
        Some("System.Private.CoreLib".to_string())
    }
}
