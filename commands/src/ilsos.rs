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
use clrdata::model::il::{method_il, IlLocation};
use clrdata::model::objects::ObjectReader;
use serde::Serialize;

/// The commands of this module.
pub static SPECS: &[CommandSpec] = &[CommandSpec {
    name: "dumpil",
    aliases: &[],
    about: "a method's IL (its MethodDesc), instruction by instruction with EH blocks and \
            tokens named from the module's metadata; -i: the IL body at an address",
    grammar: || {
        Command::new("dumpil")
            .arg(
                Arg::new("address")
                    .required(true)
                    .help("the MethodDesc (or with -i the IL body's address)"),
            )
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
    /// `.`).
    pub string: Option<String>,
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
        if self.method_desc.is_some() {
            // SOS adds `pImport is <address>`: its own process's metadata importer.
            t.push_str(&format!("ilAddr is {:016X}\n", self.raw_il));
        }
        t.push_str(&format!("ilAddr = {:016X}\n", self.raw_il));
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
                Operand::None => String::new(),
                Operand::Var(v) => format!("VAR OR ARG {v}"),
                Operand::Int(v) => v.to_string(),
                Operand::Float(v) => c_float(*v),
                Operand::Target(t) => target(*t),
                Operand::Switch(ts) => format!(
                    "({})",
                    ts.iter().map(|&t| target(t)).collect::<Vec<_>>().join(", ")
                ),
                Operand::Token(tk) => match md {
                    Some(md) => il::sos_token_text(md, *tk),
                    None => format!("TOKEN {tk:x}"),
                },
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
            }
        })
        .collect()
}

fn dumpil(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let a = parse_address(m.get_one::<String>("address").map_or("", |s| s))?;
    if m.get_flag("i") {
        return dumpil_at(&c, a);
    }
    let r = ObjectReader::new(&c.rt, &c.names);
    let mil = method_il(&r, a).map_err(|e| CommandError::clr(format!("dumpil {a:#x}"), e))?;
    let mut out = DumpIl {
        method_desc: Some(hex(a)),
        module: Some(hex(mil.module)),
        token: Some(format!("{:08x}", mil.token)),
        rva: Some(mil.rva),
        no_il: None,
        il_address: None,
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
                    "its IL is in its DynamicMethod's resolver, which dumpil does not read yet",
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
            header: Some(body.header),
            eh_clauses: body.eh,
            instructions: instructions(ins, None),
            error: err.map(|e| e.to_string()),
            raw_il: a,
        },
    ))
}
