//! SOS's reference commands over the GC heap: `dumpobjgcrefs` (the objects an object
//! references) and `pathto` (a path of references from one object to another).

use crate::addr::{hex, parse_address};
use crate::output::{CommandError, Output, Render};
use crate::session::clr;
use crate::session::Session;
use crate::spec::CommandSpec;
use clap::{Arg, ArgMatches, Command};
use clrdata::model::objects::ObjectReader;
use serde::Serialize;

/// The heap reference commands.
pub static SPECS: &[CommandSpec] = &[
    CommandSpec {
        name: "dumpobjgcrefs",
        aliases: &[],
        about: "the objects an object references, each with the field (and offset) holding it, \
                in the order the GC walks them (SOS's dumpobjgcrefs, dumpobj -refs)",
        grammar: || Command::new("dumpobjgcrefs").arg(address("object", "the object's address")),
        run: dumpobjgcrefs,
    },
    CommandSpec {
        name: "pathto",
        aliases: &[],
        about: "a path of references from one object to another (SOS's pathto): a shortest \
                one, following fields, array elements and dependent handles",
        grammar: || {
            Command::new("pathto")
                .arg(address("source", "the object the path starts from"))
                .arg(address("target", "the object it ends at"))
        },
        run: pathto,
    },
];

fn address(name: &'static str, help: &'static str) -> Arg {
    Arg::new(name).required(true).help(help)
}

fn arg_address(m: &ArgMatches, name: &str) -> Result<u64, CommandError> {
    parse_address(m.get_one::<String>(name).map(String::as_str).unwrap_or(""))
}

/// SOS's pointer column (`x12`, at least 12 hex digits).
fn sos_pointer(a: u64) -> String {
    format!("{a:012x}")
}

// ------------------------------------------------------------------------------ dumpobjgcrefs

/// `dumpobjgcrefs`'s result (docs/json.md, `dumpobjgcrefs`).
#[derive(Serialize)]
pub struct ObjGcRefs {
    pub address: String,
    pub mt: String,
    #[serde(rename = "type")]
    pub type_name: String,
    /// The references, in the GCDesc walk's order (SOS's).
    pub references: Vec<GcRef>,
}

#[derive(Serialize)]
pub struct GcRef {
    /// The field holding it (`a.b` through embedded structs); null for an array element.
    pub field: Option<String>,
    /// Offset of the slot from the object's first field (object + 8), as SOS prints it.
    pub offset: u64,
    pub slot: String,
    pub object: String,
    pub mt: Option<String>,
    #[serde(rename = "type")]
    pub type_name: String,
    #[serde(skip)]
    pub target: u64,
}

impl Render for ObjGcRefs {
    fn render(&self) -> String {
        if self.references.is_empty() {
            return "GC Refs: none\n".into();
        }
        // SOS's table: each column as wide as its widest value, at least its header (the
        // object column 16, right-aligned), the type name last and unpadded.
        let offsets: Vec<String> = self
            .references
            .iter()
            .map(|r| format!("0x{:02x}", r.offset))
            .collect();
        let fw = self
            .references
            .iter()
            .map(|r| r.field.as_deref().map_or(0, str::len))
            .max()
            .unwrap_or(0)
            .max("Field".len());
        let ow = offsets.iter().map(String::len).max().unwrap_or(0).max(6);
        let mut t = String::from("GC Refs:\n");
        t.push_str(&format!(
            "{:<fw$} {:>ow$} {:>16} Type\n",
            "Field", "Offset", "Object"
        ));
        for (r, off) in self.references.iter().zip(&offsets) {
            t.push_str(&format!(
                "{:<fw$} {off:>ow$} {:>16} {}\n",
                r.field.as_deref().unwrap_or(""),
                sos_pointer(r.target),
                r.type_name
            ));
        }
        t
    }
}

fn dumpobjgcrefs(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let a = arg_address(m, "object")?;
    let r = ObjectReader::new(&c.rt, &c.names);
    let (mt, _) = r
        .object_mt(a)
        .map_err(|e| CommandError::clr("Unable to walk object references, invalid object", e))?;
    let refs = r
        .references_with_fields(a)
        .map_err(|e| CommandError::clr(format!("the references of {a:#x}"), e))?;
    let references = refs
        .into_iter()
        .map(|x| {
            let tmt = r.object_mt(x.target).ok().map(|(m, _)| m);
            GcRef {
                field: x.field,
                offset: x.offset,
                slot: hex(x.slot),
                object: hex(x.target),
                mt: tmt.map(hex),
                type_name: tmt.map_or_else(|| "Unknown".into(), |m| c.type_name(m)),
                target: x.target,
            }
        })
        .collect();
    Ok(Output::rendered(
        "dumpobjgcrefs",
        ObjGcRefs {
            address: hex(a),
            mt: hex(mt),
            type_name: c.type_name(mt),
            references,
        },
    ))
}

// ------------------------------------------------------------------------------------- pathto

/// `pathto`'s result (docs/json.md, `pathto`).
#[derive(Serialize)]
pub struct PathTo {
    pub source: String,
    pub target: String,
    /// Whether a path was found.
    pub found: bool,
    /// The objects from source to target, both included (empty: no path).
    pub path: Vec<PathStep>,
    pub objects_expanded: u64,
    pub notes: Vec<String>,
    #[serde(skip)]
    pub from: u64,
    #[serde(skip)]
    pub to: u64,
}

#[derive(Serialize)]
pub struct PathStep {
    pub object: String,
    pub mt: Option<String>,
    #[serde(rename = "type")]
    pub type_name: String,
    /// The slot of the previous object holding this one (null for the source, and for a
    /// dependent handle's edge).
    pub slot: Option<String>,
    /// Whether the previous object reaches this one through a dependent handle.
    pub dependent_handle: bool,
    #[serde(skip)]
    pub address: u64,
}

impl Render for PathTo {
    fn render(&self) -> String {
        let mut t = String::new();
        if !self.found {
            t.push_str(&format!(
                "Could not find a path from {:x} to {:x}\n",
                self.from, self.to
            ));
        }
        // SOS's rows: indented 10, the object left-aligned in 16, the type, the note (a
        // trailing blank when there is none, as SOS's table writes it).
        for p in &self.path {
            t.push_str(&format!(
                "          -> {:<16} {} {}\n",
                sos_pointer(p.address),
                p.type_name,
                if p.dependent_handle {
                    "(dependent handle)"
                } else {
                    ""
                }
            ));
        }
        for n in &self.notes {
            t.push_str(&format!("note: {n}\n"));
        }
        t
    }
}

fn pathto(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let source = arg_address(m, "source")?;
    let target = arg_address(m, "target")?;
    let heap = c.heap()?;
    let r = ObjectReader::new(&c.rt, &c.names);
    r.object_mt(source).map_err(|e| {
        CommandError::clr(
            format!("Source address {source:x} is not a valid object"),
            e,
        )
    })?;
    let p = clrdata::analysis::roots::path_to(&c.rt, heap, &c.names, source, target)?;
    let path = p
        .path
        .iter()
        .enumerate()
        .map(|(i, &o)| {
            let mt = r.object_mt(o).ok().map(|(m, _)| m);
            let slot = i.checked_sub(1).and_then(|j| p.slots.get(j).copied());
            PathStep {
                object: hex(o),
                mt: mt.map(hex),
                type_name: mt.map_or_else(|| "Unknown".into(), |m| c.type_name(m)),
                slot: slot.flatten().map(hex),
                dependent_handle: matches!(slot, Some(None)),
                address: o,
            }
        })
        .collect::<Vec<_>>();
    Ok(Output::rendered(
        "pathto",
        PathTo {
            source: hex(source),
            target: hex(target),
            found: !path.is_empty(),
            path,
            objects_expanded: p.objects_expanded,
            notes: p.notes,
            from: source,
            to: target,
        },
    ))
}
