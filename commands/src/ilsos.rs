//! SOS's metadata commands: `dumpil` (a method's IL from its module's image, tokens named as
//! SOS's ILDASM-style printer names them; a DynamicMethod's IL from its resolver), `dumpsig` and
//! `dumpsigelem` (a signature blob in memory, printed as SOS's metadata printer prints it).
//! Checked against SOS's own output on the corpus (dumps/tools/sos_dumpil.py,
//! tests/tests/sos_dumpil.rs; dumps/tools/sos_dumpsig.py, tests/tests/sos_dumpsig.rs).

use crate::addr::{hex, parse_address};
use crate::output::{CommandError, Output, Render};
use crate::session::{clr, Session};
use crate::spec::CommandSpec;
use clap::{Arg, ArgAction, ArgMatches, Command};
use clrdata::metadata::il::{self, EhClause, Instruction, Operand, OperandKind};
use clrdata::model::il::{dynamic_il, method_il, DynamicToken, IlLocation};
use clrdata::model::objects::ObjectReader;
use serde::Serialize;

/// The commands of this module.
pub static SPECS: &[CommandSpec] = &[
    CommandSpec {
        name: "dumpsig",
        aliases: &[],
        about: "decode a method or field signature blob in memory (names from a module's metadata)",
        grammar: || sig_grammar("dumpsig"),
        run: dumpsig,
    },
    CommandSpec {
        name: "dumpsigelem",
        aliases: &[],
        about: "decode one element (a type) of a signature blob in memory",
        grammar: || sig_grammar("dumpsigelem"),
        run: dumpsigelem,
    },
    CommandSpec {
        name: "dumpil",
        aliases: &[],
        about: "a method's IL (its MethodDesc), instruction by instruction with EH blocks and \
                tokens named from the module's metadata; a DynamicMethod object's IL with tokens \
                named from its scope's token table; -i: the IL body at an address",
        grammar: || {
            Command::new("dumpil")
                .arg(Arg::new("address").required(true).help(
                    "the MethodDesc or a DynamicMethod object (or with -i the IL body's address)",
                ))
                .arg(
                    Arg::new("i").short('i').action(ArgAction::SetTrue).help(
                        "the address is an IL method body (header first); tokens are not named",
                    ),
                )
        },
        run: dumpil,
    },
];

/// One IL instruction of `dumpil`.
#[derive(Serialize)]
pub struct IlInstruction {
    /// Its IL offset.
    pub offset: u32,
    /// The opcode's name.
    pub opcode: &'static str,
    /// The operand's kind (opcode.def's Inline* kinds, snake_case: `none`, `short_var`,
    /// `method`, `short_br_target`, ...).
    pub operand_kind: OperandKind,
    /// The operand's value: a local/argument index, an integer, a float, a branch target's
    /// IL offset, a token, a switch's targets (null: none).
    pub operand: Operand,
    /// The operand as printed (a token's name, `IL_0012`, `VAR OR ARG 3`).
    pub text: String,
    /// A MemberRef to a field: the field's type as printed before its name (SOS prints another
    /// type there: the bytes after the field signature's first type byte read as a type).
    pub field_type: Option<String>,
    /// `ldstr`'s string, whole (the text shows 79 characters at most, others than ASCII as
    /// `.`; of dynamic IL, the string up to a NUL).
    pub string: Option<String>,
    /// Dynamic IL: the token table's element the token names (null: none, or beyond the
    /// table).
    pub token_entry: Option<String>,
    /// Dynamic IL: what the token's entry names, when it is not what SOS expects there (SOS
    /// would print what it misreads): why.
    pub token_error: Option<String>,
}

/// A DynamicMethod object's IL (`dumpil <object>`).
#[derive(Serialize)]
pub struct DynamicIlInfo {
    /// The DynamicMethod object.
    pub object: String,
    /// Its DynamicResolver.
    pub resolver: String,
    /// The resolver's `m_code` byte array.
    pub code_array: String,
    /// The IL's size.
    pub code_size: usize,
    /// The token table (the DynamicScope's `m_tokens._items` array).
    pub token_table: String,
    /// Its length.
    pub token_table_length: u64,
    #[serde(skip)]
    token_table_raw: u64,
}

/// `dumpil`'s result.
#[derive(Serialize)]
pub struct DumpIl {
    /// The MethodDesc (null with -i).
    pub method_desc: Option<String>,
    /// Its Module.
    pub module: Option<String>,
    /// The MethodDef token.
    pub token: Option<String>,
    /// The MethodDef's RVA.
    pub rva: Option<u32>,
    /// Why there is no IL: `no_token` (an IL stub or array method: no MethodDef), `no_rva`
    /// (RVA 0: abstract, runtime-implemented, P/Invoke); null when there is IL.
    pub no_il: Option<&'static str>,
    /// The IL body's address.
    pub il_address: Option<String>,
    /// The address was a DynamicMethod object: where its IL and tokens are (no header, no EH
    /// clauses, no method fields).
    pub dynamic: Option<DynamicIlInfo>,
    /// The body's header.
    pub header: Option<il::MethodHeader>,
    /// Its EH clauses.
    pub eh_clauses: Vec<EhClause>,
    pub instructions: Vec<IlInstruction>,
    /// Why decoding stopped before the code's end.
    pub error: Option<String>,
    #[serde(skip)]
    raw_il: u64,
}

impl Render for DumpIl {
    fn render(&self) -> String {
        let mut t = String::new();
        match self.no_il {
            Some("no_token") => {
                t.push_str(
                    "This method has no IL body (e.g. IL stubs generated for P/Invoke or \
                     Reverse P/Invoke marshaling).\n",
                );
                return t;
            }
            Some(_) => {
                t.push_str(
                    "Unable to retrieve IL for this method (ilAddr is 0000000000000000): its \
                     MethodDef's RVA is 0 (abstract, runtime-implemented or P/Invoke).\n",
                );
                return t;
            }
            None => {}
        }
        if let Some(d) = &self.dynamic {
            // SOS's DumpIL for a DynamicMethod object.
            t.push_str(
                "This is dynamic IL. Exception info is not reported at this time.\n\
                 If a token is unresolved, run \"dumpobj <addr>\" on the addr given\n\
                 in parenthesis. You can also look at the token table yourself, by\n",
            );
            t.push_str(&format!(
                "running \"dumparray {:016X}\".\n\n",
                d.token_table_raw
            ));
        } else if self.method_desc.is_some() {
            // SOS adds `pImport is <address>`: its own process's metadata importer.
            t.push_str(&format!("ilAddr is {:016X}\n", self.raw_il));
        }
        if self.dynamic.is_none() {
            t.push_str(&format!("ilAddr = {:016X}\n", self.raw_il));
        }
        // SOS's DecodeILAtPosition: each clause opens and closes its try and handler block at
        // the instruction whose offset equals the block's start or end (an end at the code's
        // end is never printed); the indent is a C int printed as `%*s`.
        let mut indent: i64 = 0;
        let pad = |n: i64| " ".repeat(n.unsigned_abs() as usize);
        for ins in &self.instructions {
            let pos = ins.offset;
            for e in &self.eh_clauses {
                if e.try_offset == pos {
                    t.push_str(&format!("{}.try\n{}{{\n", pad(indent), pad(indent)));
                    indent += 2;
                } else if e.try_offset.wrapping_add(e.try_length) == pos {
                    indent -= 2;
                    t.push_str(&format!("{}}} // end .try\n", pad(indent)));
                }
                let finally = e.flags == il::EH_CLAUSE_FINALLY;
                if e.handler_offset == pos {
                    t.push_str(&format!(
                        "{}{}\n{}{{\n",
                        pad(indent),
                        if finally { ".finally" } else { ".catch" },
                        pad(indent)
                    ));
                    indent += 2;
                } else if e.handler_offset.wrapping_add(e.handler_length) == pos {
                    indent -= 2;
                    t.push_str(&format!(
                        "{}}} // end {}\n",
                        pad(indent),
                        if finally { ".finally" } else { ".catch" }
                    ));
                }
            }
            t.push_str(&format!(
                "{}IL_{:04x}: {} {}\n",
                pad(indent),
                pos,
                ins.opcode,
                ins.text
            ));
        }
        if let Some(e) = &self.error {
            t.push_str(&format!("<error: {e}>\n"));
        }
        t
    }
}

/// C's `%f`.
fn c_float(v: f64) -> String {
    if v.is_nan() {
        if v.is_sign_negative() { "-nan" } else { "nan" }.into()
    } else if v.is_infinite() {
        if v < 0.0 { "-inf" } else { "inf" }.into()
    } else {
        format!("{v:.6}")
    }
}

fn target(t: i64) -> String {
    format!("IL_{:04x}", t as u32)
}

/// The instructions with their operands printed; `md` names tokens (None: `TOKEN <hex>`).
fn instructions(
    ins: Vec<Instruction>,
    md: Option<&clrdata::metadata::Metadata<'_>>,
) -> Vec<IlInstruction> {
    ins.into_iter()
        .map(|i| {
            let text = match &i.operand {
                Operand::Token(tk) => match md {
                    Some(md) => il::sos_token_text(md, *tk),
                    None => format!("TOKEN {tk:x}"),
                },
                op => plain_operand(op).unwrap_or_default(),
            };
            let (field_type, string) = match (&i.operand, md) {
                (Operand::Token(tk), Some(md)) => (
                    il::field_member_ref_type(md, *tk),
                    (tk >> 24 == 0x70)
                        .then(|| md.user_string(tk & 0xff_ffff).ok())
                        .flatten(),
                ),
                _ => (None, None),
            };
            IlInstruction {
                offset: i.offset,
                opcode: i.name,
                operand_kind: i.kind,
                operand: i.operand,
                text,
                field_type,
                string,
                token_entry: None,
                token_error: None,
            }
        })
        .collect()
}

/// An operand other than a token as SOS's DisplayILOperation prints it (None: a token).
fn plain_operand(op: &Operand) -> Option<String> {
    Some(match op {
        Operand::None => String::new(),
        Operand::Var(v) => format!("VAR OR ARG {v}"),
        Operand::Int(v) => v.to_string(),
        Operand::Float(v) => c_float(*v),
        Operand::Target(t) => target(*t),
        Operand::Switch(ts) => format!(
            "({})",
            ts.iter().map(|&t| target(t)).collect::<Vec<_>>().join(", ")
        ),
        Operand::Token(_) => return None,
    })
}

/// Dynamic IL's instructions, tokens named from the scope's token table as SOS names them
/// (sildasm.cpp `DisassembleToken(DacpObjectData&, DWORD)`): a TypeDef `<token> "<type>"`, a
/// MethodDef `<token> <method>`, a string `<token> "<string>"` (up to a NUL), a TypeRef,
/// FieldDef, MemberRef or Signature `<token> (<entry's address>)`, another token type
/// `<unknown token type (token=<8 hex digits>)>`.
fn dynamic_instructions<M: dumpreader::Memory>(
    r: &ObjectReader<'_, M>,
    d: &clrdata::model::il::DynamicIl,
) -> Vec<IlInstruction> {
    d.instructions
        .iter()
        .map(|i| {
            let mut ins = IlInstruction {
                offset: i.offset,
                opcode: i.name,
                operand_kind: i.kind,
                operand: i.operand.clone(),
                text: plain_operand(&i.operand).unwrap_or_default(),
                field_type: None,
                string: None,
                token_entry: None,
                token_error: None,
            };
            if let Operand::Token(tk) = i.operand {
                let entry = |e: u64| (e != 0).then(|| hex(e));
                ins.text = match d.token(r, tk) {
                    DynamicToken::Type { entry: e, name, .. } => {
                        ins.token_entry = entry(e);
                        format!("{tk:x} \"{name}\"")
                    }
                    DynamicToken::Method { entry: e, name, .. } => {
                        ins.token_entry = entry(e);
                        format!("{tk:x} {name}")
                    }
                    DynamicToken::String { entry: e, value } => {
                        ins.token_entry = entry(e);
                        let shown: String = value.split('\0').next().unwrap_or("").to_string();
                        ins.string = Some(value);
                        format!("{tk:x} \"{shown}\"")
                    }
                    DynamicToken::Entry { entry: e } => {
                        ins.token_entry = entry(e);
                        format!("{tk:x} ({e:016X})")
                    }
                    DynamicToken::UnknownType => format!("<unknown token type (token={tk:08x})>"),
                    DynamicToken::Unresolved { entry: e, reason } => {
                        ins.token_entry = entry(e);
                        let t = format!("{tk:x} ({e:016X}) <unresolved: {reason}>");
                        ins.token_error = Some(reason);
                        t
                    }
                };
            }
            ins
        })
        .collect()
}

/// `dumpil <DynamicMethod object>`.
fn dumpil_dynamic(c: &crate::session::Clr, a: u64) -> Result<Output, CommandError> {
    let r = ObjectReader::new(&c.rt, &c.names);
    let d = dynamic_il(&r, a).map_err(|e| {
        CommandError::clr(
            format!("dumpil {a:#x} (gathering the object's dynamic IL)"),
            e,
        )
    })?;
    let instructions = dynamic_instructions(&r, &d);
    Ok(Output::rendered(
        "dumpil",
        DumpIl {
            method_desc: None,
            module: None,
            token: None,
            rva: None,
            no_il: None,
            il_address: None,
            dynamic: Some(DynamicIlInfo {
                object: hex(d.object),
                resolver: hex(d.resolver),
                code_array: hex(d.code_array),
                code_size: d.code.len(),
                token_table: hex(d.token_array),
                token_table_length: d.token_count,
                token_table_raw: d.token_array,
            }),
            header: None,
            eh_clauses: Vec::new(),
            instructions,
            error: d.decode_error.map(|e| e.to_string()),
            raw_il: 0,
        },
    ))
}

fn dumpil(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let a = parse_address(m.get_one::<String>("address").map_or("", |s| s))?;
    if m.get_flag("i") {
        return dumpil_at(&c, a);
    }
    let r = ObjectReader::new(&c.rt, &c.names);
    // SOS asks first whether the address is an object (a DynamicMethod's), then takes it
    // for a MethodDesc.
    let is_object = c.heap().is_ok_and(|h| {
        clrdata::model::objects::gc_where(h, a).is_some_and(|w| !w.beyond_allocated)
    }) && r.object_mt(a).is_ok();
    if is_object {
        return dumpil_dynamic(&c, a);
    }
    let mil = method_il(&r, a).map_err(|e| CommandError::clr(format!("dumpil {a:#x}"), e))?;
    let mut out = DumpIl {
        method_desc: Some(hex(a)),
        module: Some(hex(mil.module)),
        token: Some(format!("{:08x}", mil.token)),
        rva: Some(mil.rva),
        no_il: None,
        il_address: None,
        dynamic: None,
        header: None,
        eh_clauses: Vec::new(),
        instructions: Vec::new(),
        error: None,
        raw_il: 0,
    };
    match mil.location {
        IlLocation::NoToken => out.no_il = Some("no_token"),
        IlLocation::NoRva => out.no_il = Some("no_rva"),
        IlLocation::Dynamic => {
            return Err(CommandError::clr(
                format!("dumpil {a:#x}"),
                clrdata::ClrError::unsupported(
                    "a dynamic (LCG) method's IL",
                    Some(a),
                    "its IL is in its DynamicMethod's resolver: run dumpil on the DynamicMethod \
                     object (SOS reaches it through the runtime's LCGMethodResolver, which is \
                     not read)",
                ),
            ))
        }
        IlLocation::At(at) => {
            let meta = c
                .names
                .module_metadata(&c.rt, mil.module)
                .map_err(|e| CommandError::clr("reading the module's metadata", e))?;
            let md = meta
                .metadata()
                .map_err(|e| CommandError::clr("reading the module's metadata", e))?;
            out.il_address = Some(hex(at));
            out.raw_il = at;
            if let Some(b) = mil.body {
                out.header = Some(b.header);
                out.eh_clauses = b.eh;
            }
            out.instructions = instructions(mil.instructions, Some(&md));
            out.error = mil.decode_error.map(|e| e.to_string());
        }
    }
    Ok(Output::rendered("dumpil", out))
}

/// `dumpil -i <address>`: the body at an address, tokens unnamed (SOS: `TOKEN <hex>`).
fn dumpil_at(c: &crate::session::Clr, a: u64) -> Result<Output, CommandError> {
    let mem = c.rt.memory();
    let mut want = 64usize;
    let body = loop {
        let mut b = vec![0u8; want];
        let got = mem.read(a, &mut b);
        b.truncate(got);
        match il::parse_body(&b) {
            Ok(body) => break body,
            Err(il::IlError::Truncated { needed, .. }) if got == want && needed > want => {
                want = needed
            }
            Err(e) => {
                return Err(CommandError::clr(
                    format!("dumpil -i {a:#x}"),
                    clrdata::ClrError::corrupt("an IL method body", a, e.to_string()),
                ))
            }
        }
    };
    let (ins, err) = il::decode_il(&body.code);
    Ok(Output::rendered(
        "dumpil",
        DumpIl {
            method_desc: None,
            module: None,
            token: None,
            rva: None,
            no_il: None,
            il_address: Some(hex(a)),
            dynamic: None,
            header: Some(body.header),
            eh_clauses: body.eh,
            instructions: instructions(ins, None),
            error: err.map(|e| e.to_string()),
            raw_il: a,
        },
    ))
}

// ------------------------------------------------------------------------- dumpsig, dumpsigelem

fn sig_grammar(name: &'static str) -> Command {
    Command::new(name)
        .arg(
            Arg::new("sigaddr")
                .required(true)
                .help("the signature's address (hex)"),
        )
        .arg(Arg::new("moduleaddr").help(
            "the Module whose metadata names its tokens (hex); without it tokens print as \
             0x<token>",
        ))
}

/// Most signature bytes read.
const MAX_SIG: usize = 4096;

/// `dumpsig`'s and `dumpsigelem`'s result.
#[derive(Serialize)]
pub struct DumpSig {
    pub address: String,
    pub module: Option<String>,
    /// The signature as SOS prints it.
    pub text: String,
}

impl Render for DumpSig {
    fn render(&self) -> String {
        format!("{}\n", self.text)
    }
}

/// SOS's element type names (its metadata printer's table, by element type).
fn element_name(p: clrdata::metadata::sig::Primitive) -> &'static str {
    use clrdata::metadata::sig::Primitive as P;
    match p {
        P::Void => "Void",
        P::Boolean => "Boolean",
        P::Char => "Char",
        P::I1 => "I1",
        P::U1 => "U1",
        P::I2 => "I2",
        P::U2 => "U2",
        P::I4 => "I4",
        P::U4 => "U4",
        P::I8 => "I8",
        P::U8 => "U8",
        P::R4 => "R4",
        P::R8 => "R8",
        P::String => "String",
        P::I => "IntPtr",
        P::U => "UIntPtr",
        P::Object => "Object",
        P::TypedByRef => "TypedByRef",
    }
}

/// SOS's calling convention names (by the low four bits).
const CALLING: [&str; 16] = [
    "[DEFAULT]",
    "[C]",
    "[STDCALL]",
    "[THISCALL]",
    "[FASTCALL]",
    "[VARARG]",
    "[FIELD]",
    "[LOCALSIG]",
    "[PROPERTY]",
    "[UNMANAGED]",
    "[GENERICINST]",
    "[NATIVEVARARG]",
    "[UNKNOWN]",
    "[UNKNOWN]",
    "[UNKNOWN]",
    "[UNKNOWN]",
];

/// Writes signatures as SOS's metadata printer does: TypeDefs and TypeRefs by their own
/// `Namespace.Name` (what GetTypeDefProps and GetTypeRefProps give: no enclosing type),
/// TypeSpecs by their token in hex, `0x<token>` without a module.
struct SosSig<'a> {
    md: Option<&'a clrdata::metadata::Metadata<'a>>,
    clr: &'a crate::session::Clr,
}

impl SosSig<'_> {
    fn token(&self, t: clrdata::metadata::Token, out: &mut String) {
        use clrdata::metadata::TableId;
        match t.table() {
            Some(TableId::TypeDef) | Some(TableId::TypeRef) => {
                match self.md.map(|md| md.simple_type_name(t)) {
                    Some(Ok(n)) => out.push_str(&n),
                    _ => out.push_str(&format!("0x{:08x}", t.0)),
                }
            }
            _ => out.push_str(&format!("{:x}", t.0)),
        }
    }

    fn ty(&self, ty: &clrdata::metadata::sig::SigType, out: &mut String) {
        use clrdata::metadata::sig::SigType as T;
        match ty {
            T::Primitive(p) => out.push_str(element_name(*p)),
            T::Class(t) | T::ValueType(t) => {
                out.push_str(if matches!(ty, T::Class(_)) {
                    "Class "
                } else {
                    "ValueType "
                });
                self.token(*t, out);
            }
            T::Ptr(t) => {
                out.push_str("Ptr ");
                self.ty(t, out);
            }
            T::ByRef(t) => {
                out.push_str("ByRef ");
                self.ty(t, out);
            }
            T::SzArray(t) => {
                out.push_str("SZArray ");
                self.ty(t, out);
            }
            T::Array {
                element,
                rank,
                sizes,
                lower_bounds,
            } => {
                out.push_str("MDArray {");
                self.ty(element, out);
                out.push_str(&format!(", {rank}"));
                if *rank == 0 {
                    // SOS stops there (no closing brace).
                    return;
                }
                out.push_str(&format!(" {}", sizes.len()));
                if sizes.is_empty() {
                    out.push(' ');
                }
                for z in sizes {
                    out.push_str(&format!("{z} "));
                }
                out.push_str(&format!("{} ", lower_bounds.len()));
                for b in lower_bounds {
                    out.push_str(&format!("{b} "));
                }
                out.push('}');
            }
            T::GenericInst {
                value_type,
                generic,
                args,
            } => {
                out.push_str(if *value_type { "ValueType " } else { "Class " });
                self.token(*generic, out);
                self.args(args, out);
            }
            T::GenericInstOfHandle { handle, args } => {
                self.internal(*handle, out);
                self.args(args, out);
            }
            T::Var(n) => out.push_str(&format!("!{n}")),
            T::MVar(n) => out.push_str(&format!("!!{n}")),
            T::FnPtr(m) => {
                out.push_str("FnPtr ");
                if m.explicit_this() {
                    out.push_str("[explicit] ");
                }
                if m.has_this() {
                    out.push_str("[hasThis] ");
                }
                out.push_str(CALLING[usize::from(m.calling_convention & 0xf)]);
                self.ty(&m.ret, out);
                out.push('(');
                for (i, p) in m.params.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    self.ty(p, out);
                }
                out.push(')');
            }
            T::Modified {
                required,
                modifier,
                inner,
            } => {
                out.push_str(if *required { "CMOD_REQD " } else { "CMOD_OPT " });
                self.token(*modifier, out);
                out.push(' ');
                self.ty(inner, out);
            }
            T::Pinned(t) => {
                out.push_str("PINNED ");
                self.ty(t, out);
            }
            T::Internal(h) => self.internal(*h, out),
        }
    }

    fn args(&self, args: &[clrdata::metadata::sig::SigType], out: &mut String) {
        out.push('<');
        for (i, a) in args.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            self.ty(a, out);
        }
        out.push('>');
    }

    /// `ELEMENT_TYPE_INTERNAL`: a MethodTable (SOS: `INTERNAL MT <hex> <name>`).
    fn internal(&self, mt: u64, out: &mut String) {
        out.push_str(&format!("INTERNAL MT {mt:x} {}", self.clr.type_name(mt)));
    }

    /// A method's parameters from `params`, `sentinel` marking where a vararg call's extra
    /// arguments start.
    fn params(
        &self,
        params: &[clrdata::metadata::sig::SigType],
        sentinel: Option<usize>,
        out: &mut String,
    ) {
        for (i, p) in params.iter().enumerate() {
            if sentinel == Some(i) {
                out.push_str("<ELEMENT_TYPE_SENTINEL> ");
            }
            self.ty(p, out);
            if i + 1 != params.len() {
                out.push(',');
            }
        }
        out.push(')');
    }
}

/// The signature's bytes (as many as read, up to [`MAX_SIG`]) and the module's metadata.
fn sig_input(
    c: &crate::session::Clr,
    m: &ArgMatches,
) -> Result<(u64, Option<u64>, Vec<u8>), CommandError> {
    let a = parse_address(m.get_one::<String>("sigaddr").map_or("", |s| s))?;
    let module = m
        .get_one::<String>("moduleaddr")
        .map(|s| parse_address(s))
        .transpose()?;
    let mut buf = vec![0u8; MAX_SIG];
    let mut got = 0;
    while got < MAX_SIG {
        let n = dumpreader::Memory::read(&c.rt.memory(), a + got as u64, &mut buf[got..]);
        if n == 0 {
            break;
        }
        got += n;
    }
    if got == 0 {
        return Err(CommandError::clr(
            "reading the signature",
            clrdata::ClrError::read("the signature", a),
        ));
    }
    buf.truncate(got);
    Ok((a, module, buf))
}

fn sig_output(name: &'static str, a: u64, module: Option<u64>, text: String) -> Output {
    Output::rendered(
        name,
        DumpSig {
            address: hex(a),
            module: module.map(hex),
            text,
        },
    )
}

fn sig_error(a: u64, e: clrdata::metadata::Error) -> CommandError {
    CommandError::clr(
        format!("decoding the signature at {a:#x}"),
        clrdata::ClrError::metadata(format!("the signature at {a:#x}"), e),
    )
}

/// The signature the arguments name (`sig_input`), printed by `print` with SOS's names: the
/// module's metadata (when a module is given) resolves tokens; one definition for `dumpsig`
/// and `dumpsigelem`.
fn with_sos_sig(
    s: &Session,
    m: &ArgMatches,
    name: &'static str,
    print: impl FnOnce(&SosSig, u64, &[u8]) -> Result<String, CommandError>,
) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let (a, module, bytes) = sig_input(&c, m)?;
    let meta = module
        .map(|md| c.names.module_metadata(&c.rt, md))
        .transpose()
        .map_err(|e| CommandError::clr("reading the module's metadata", e))?;
    let md = meta
        .as_ref()
        .map(|m| m.metadata())
        .transpose()
        .map_err(|e| CommandError::clr("reading the module's metadata", e))?;
    let p = SosSig {
        md: md.as_ref(),
        clr: &c,
    };
    let text = print(&p, a, &bytes)?;
    Ok(sig_output(name, a, module, text))
}

fn dumpsig(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    with_sos_sig(s, m, "dumpsig", dumpsig_text)
}

fn dumpsig_text(p: &SosSig, a: u64, bytes: &[u8]) -> Result<String, CommandError> {
    use clrdata::metadata::sig;
    let conv = bytes[0];
    let mut t = String::from(CALLING[usize::from(conv & 0xf)]);
    t.push(' ');
    match conv & 0xf {
        0x6 => {
            let ty = sig::decode_field_sig(bytes).map_err(|e| sig_error(a, e))?;
            p.ty(&ty, &mut t);
            // SOS appends the (empty) member name after a space.
            t.push(' ');
        }
        0x7 => {
            let locals = sig::decode_local_sig(bytes).map_err(|e| sig_error(a, e))?;
            // A local signature has no return type: SOS prints the locals and a closing
            // parenthesis only.
            p.params(&locals, None, &mut t);
        }
        0x8 => {
            let prop = sig::decode_property_sig(bytes).map_err(|e| sig_error(a, e))?;
            if prop.has_this {
                t.push_str("[hasThis] ");
            }
            p.ty(&prop.ty, &mut t);
            t.push_str(" (");
            p.params(&prop.params, None, &mut t);
        }
        0xa => {
            return Err(CommandError::clr(
                format!("dumpsig {a:#x}"),
                clrdata::ClrError::unsupported(
                    "a MethodSpec instantiation (GENERICINST) signature",
                    Some(a),
                    "dumpsig reads method, field, local and property signatures",
                ),
            ))
        }
        _ => {
            let ms = sig::decode_method_sig(bytes).map_err(|e| sig_error(a, e))?;
            if ms.has_this() {
                t.push_str("[hasThis] ");
            }
            if ms.explicit_this() {
                t.push_str("[explicit] ");
            }
            if ms.is_generic() {
                t.push_str(&format!("[generic:{}] ", ms.generic_param_count));
            }
            p.ty(&ms.ret, &mut t);
            t.push_str(" (");
            p.params(&ms.params, ms.sentinel, &mut t);
        }
    }
    Ok(t)
}

fn dumpsigelem(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    with_sos_sig(s, m, "dumpsigelem", |p, a, bytes| {
        let ty = clrdata::metadata::sig::decode_type_spec(bytes).map_err(|e| sig_error(a, e))?;
        let mut t = String::new();
        p.ty(&ty, &mut t);
        Ok(t)
    })
}
