//! SOS's metadata commands: `dumpil` (a method's IL from its module's image, tokens named as
//! SOS's ILDASM-style printer names them) and `dumpdomain` (the AppDomains with their
//! assemblies and modules). Checked against SOS's own output on the corpus
//! (dumps/tools/sos_dumpil.py, tests/tests/sos_dumpil.rs; dumps/*.sos-dumpdomain.txt,
//! tests/tests/sos_dumpdomain.rs).

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
pub static SPECS: &[CommandSpec] = &[CommandSpec {
    name: "dumpil",
    aliases: &[],
    about: "a method's IL (its MethodDesc), instruction by instruction with EH blocks and \
            tokens named from the module's metadata; a DynamicMethod object's IL with tokens \
            named from its scope's token table; -i: the IL body at an address",
    grammar: || {
        Command::new("dumpil")
            .arg(Arg::new("address").required(true).help(
                "the MethodDesc or a DynamicMethod object (or with -i the IL body's \
                         address)",
            ))
            .arg(
                Arg::new("i")
                    .short('i')
                    .action(ArgAction::SetTrue)
                    .help("the address is an IL method body (header first); tokens are not named"),
            )
    },
    run: dumpil,
}];

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
