//! `dumpasync`: async state machines of the heap as logical stacks (innermost first).

use super::CommandSpec;
use crate::addr::hex;
use crate::addr::parse_address;
use crate::output::{CommandError, Output};
use crate::session::Session;
use clap::{Arg, ArgAction, ArgMatches, Command};
use clrdata::asyncsm::{self, AsyncBox};
use serde::Serialize;
use std::collections::BTreeMap;

/// The async commands.
pub static SPECS: &[CommandSpec] = &[CommandSpec {
    name: "dumpasync",
    aliases: &[],
    about: "async state machines as logical stacks (innermost first), found without the DAC",
    grammar,
    run: dumpasync,
}];

fn grammar() -> Command {
    Command::new("dumpasync")
        .arg(
            Arg::new("stats")
                .long("stats")
                .action(ArgAction::SetTrue)
                .help("count boxes by state machine type"),
        )
        .arg(
            Arg::new("completed")
                .long("completed")
                .action(ArgAction::SetTrue)
                .help("include boxes whose task has completed"),
        )
        .arg(
            Arg::new("address")
                .long("address")
                .value_name("ADDR")
                .help("only the chains holding the box at this address"),
        )
        .arg(
            Arg::new("type")
                .long("type")
                .value_name("TEXT")
                .help("only the chains with a state machine whose type contains this text"),
        )
        .arg(
            Arg::new("coalesce")
                .long("coalesce")
                .action(ArgAction::SetTrue)
                .help("group chains with the same state machine types, with counts"),
        )
}

#[derive(Serialize)]
struct AwaiterOut {
    field: String,
    #[serde(rename = "type")]
    type_name: String,
    object: Option<String>,
    object_type: Option<String>,
}

#[derive(Serialize)]
struct BoxOut {
    address: String,
    mt: String,
    box_type: String,
    state_machine_type: String,
    state_machine_mt: Option<String>,
    state: Option<i64>,
    state_name: &'static str,
    task_flags: String,
    task_status: &'static str,
    completed: bool,
    continuation_object: Option<String>,
    continuations: Vec<String>,
    awaiters: Vec<AwaiterOut>,
}

fn box_out(b: &AsyncBox) -> BoxOut {
    BoxOut {
        address: hex(b.address),
        mt: hex(b.mt),
        box_type: b.box_type.clone(),
        state_machine_type: b.state_machine_type.clone(),
        state_machine_mt: b.state_machine_mt.map(hex),
        state: b.state,
        state_name: b.state_name(),
        task_flags: hex(b.task_flags as u64),
        task_status: b.task_status(),
        completed: b.completed(),
        continuation_object: (b.continuation_object != 0).then(|| hex(b.continuation_object)),
        continuations: b.continuations.iter().copied().map(hex).collect(),
        awaiters: b
            .awaiters
            .iter()
            .map(|a| AwaiterOut {
                field: a.field.clone(),
                type_name: a.type_name.clone(),
                object: a.object.map(hex),
                object_type: a.object_type.clone(),
            })
            .collect(),
    }
}

#[derive(Serialize)]
struct ChainOut {
    /// Innermost first.
    boxes: Vec<BoxOut>,
    /// How many chains share these types (1 unless --coalesce).
    count: usize,
}

#[derive(Serialize)]
struct StatOut {
    state_machine_type: String,
    count: usize,
}

#[derive(Serialize)]
struct Result {
    chains: Vec<ChainOut>,
    stats: Option<Vec<StatOut>>,
    total_boxes: usize,
    shown_boxes: usize,
    completed_skipped: usize,
    errors: Vec<String>,
}

fn dumpasync(s: &Session, m: &ArgMatches) -> std::result::Result<Output, CommandError> {
    let c = super::heap::clr(s)?;
    let heap = c.heap().map_err(CommandError::Failed)?;
    let a = asyncsm::analyze(&c.rt, &c.names, heap);
    let completed = m.get_flag("completed");
    let address = match m.get_one::<String>("address") {
        Some(t) => Some(parse_address(t).map_err(CommandError::Usage)?),
        None => None,
    };
    let ty = m.get_one::<String>("type").cloned();
    let keep = |b: &AsyncBox| completed || !b.completed();
    let completed_skipped = a.boxes.iter().filter(|b| !keep(b)).count();
    let mut chains: Vec<Vec<usize>> = Vec::new();
    for ch in &a.chains {
        let ch: Vec<usize> = ch.iter().copied().filter(|&i| keep(&a.boxes[i])).collect();
        if ch.is_empty() {
            continue;
        }
        if let Some(addr) = address {
            if !ch.iter().any(|&i| a.boxes[i].address == addr) {
                continue;
            }
        }
        if let Some(t) = &ty {
            if !ch
                .iter()
                .any(|&i| a.boxes[i].state_machine_type.contains(t.as_str()))
            {
                continue;
            }
        }
        chains.push(ch);
    }
    let shown_boxes: usize = chains.iter().map(Vec::len).sum();
    let mut groups: Vec<(Vec<usize>, usize)> = Vec::new();
    if m.get_flag("coalesce") {
        let mut ix: BTreeMap<Vec<String>, usize> = BTreeMap::new();
        for ch in chains {
            let key: Vec<String> = ch
                .iter()
                .map(|&i| a.boxes[i].state_machine_type.clone())
                .collect();
            match ix.get(&key) {
                Some(&g) => groups[g].1 += 1,
                None => {
                    ix.insert(key, groups.len());
                    groups.push((ch, 1));
                }
            }
        }
    } else {
        groups = chains.into_iter().map(|c| (c, 1)).collect();
    }
    let stats = m.get_flag("stats").then(|| {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for (ch, n) in &groups {
            for &i in ch {
                *counts
                    .entry(a.boxes[i].state_machine_type.as_str())
                    .or_default() += n;
            }
        }
        let mut v: Vec<StatOut> = counts
            .into_iter()
            .map(|(t, count)| StatOut {
                state_machine_type: t.to_owned(),
                count,
            })
            .collect();
        v.sort_by(|x, y| {
            x.count
                .cmp(&y.count)
                .then(x.state_machine_type.cmp(&y.state_machine_type))
        });
        v
    });

    let mut t = String::new();
    if let Some(st) = &stats {
        t.push_str(&format!("{:>8} {}\n", "Count", "State machine type"));
        for s in st {
            t.push_str(&format!("{:>8} {}\n", s.count, s.state_machine_type));
        }
        t.push_str(&format!("Total {shown_boxes} boxes\n"));
    } else {
        for (ch, n) in &groups {
            if *n > 1 {
                t.push_str(&format!("{n} chains:\n"));
            }
            for (depth, &i) in ch.iter().enumerate() {
                let b = &a.boxes[i];
                let state = match b.state {
                    Some(v) => v.to_string(),
                    None => "?".into(),
                };
                t.push_str(&format!(
                    "{:indent$}{:016x} {:016x} {:>4} {:<9} {}\n",
                    "",
                    b.address,
                    b.mt,
                    state,
                    if b.completed() {
                        b.task_status()
                    } else {
                        b.state_name()
                    },
                    b.state_machine_type,
                    indent = depth * 2
                ));
                for aw in &b.awaiters {
                    if let (Some(o), Some(ot)) = (aw.object, &aw.object_type) {
                        if !a.boxes.iter().any(|x| x.address == o) {
                            t.push_str(&format!(
                                "{:indent$}  << Awaiting: {o:016x} {ot} >>\n",
                                "",
                                indent = depth * 2
                            ));
                        }
                    }
                }
            }
            t.push('\n');
        }
        t.push_str(&format!(
            "{} chains, {shown_boxes} boxes shown of {} ({} completed skipped)\n",
            groups.len(),
            a.boxes.len(),
            completed_skipped
        ));
    }
    for e in &a.errors {
        t.push_str(&format!("error: {e}\n"));
    }
    let res = Result {
        chains: groups
            .iter()
            .map(|(ch, n)| ChainOut {
                boxes: ch.iter().map(|&i| box_out(&a.boxes[i])).collect(),
                count: *n,
            })
            .collect(),
        stats,
        total_boxes: a.boxes.len(),
        shown_boxes,
        completed_skipped,
        errors: a.errors.clone(),
    };
    Ok(Output::new("dumpasync", &res, t))
}
