//! Monitors: `syncblk` (owned and waited-for locks) and `deadlock` (the wait-for graph).

use crate::addr::{fmt_addr, hex};
use crate::output::{CommandError, Output, Render};
use crate::session::clr;
use crate::session::{Clr, Session};
use crate::spec::CommandSpec;
use crate::text::{render, table};
use clap::{Arg, ArgAction, ArgMatches, Command};
use clrdata::analysis::locks::{find_deadlocks, Deadlocks, WaitSource};
use clrdata::data::syncblocks::{SyncBlockData, WaitKind};
use clrdata::data::threads::ThreadData;
use clrdata::model::stack::{StackWalker, ThreadStack};
use clrdata::prelude::*;
use serde::Serialize;
use std::collections::HashMap;

/// The lock commands.
pub static SPECS: &[CommandSpec] = &[
    CommandSpec {
        name: "syncblk",
        aliases: &[],
        about: "monitors: owner thread, recursion and waiters of each held or awaited lock, \
                thin locks included",
        grammar: || {
            Command::new("syncblk")
                .arg(
                    Arg::new("all")
                        .long("all")
                        .action(ArgAction::SetTrue)
                        .help("every SyncBlock in use, not only held or awaited ones (SOS: -all)"),
                )
                .arg(Arg::new("index").help("only the sync block with this index (decimal)"))
                .arg(
                    Arg::new("nothin")
                        .long("nothin")
                        .action(ArgAction::SetTrue)
                        .help("skip the heap walk that finds thin locks held in object headers"),
                )
        },
        run: syncblk,
    },
    CommandSpec {
        name: "deadlock",
        aliases: &[],
        about: "the wait-for graph of monitor owners and waiters: deadlock cycles and the \
                threads blocked behind them",
        grammar: || Command::new("deadlock"),
        run: deadlock,
    },
];

struct Threads {
    list: Vec<ThreadData>,
    by_addr: HashMap<u64, (u32, u64)>,
}

fn threads(c: &Clr) -> Result<Threads, CommandError> {
    let list =
        c.rt.threads()
            .map_err(|e| CommandError::clr("reading the thread list", e))?;
    let by_addr = list
        .iter()
        .map(|t| (t.address, (t.managed_id, t.os_id)))
        .collect();
    Ok(Threads { list, by_addr })
}

#[derive(Serialize)]
pub struct ThreadRef {
    pub thread: String,
    pub managed_id: Option<u32>,
    pub os_id: Option<u64>,
}

impl Threads {
    fn reference(&self, t: u64) -> ThreadRef {
        let k = self.by_addr.get(&t);
        ThreadRef {
            thread: hex(t),
            managed_id: k.map(|k| k.0),
            os_id: k.map(|k| k.1),
        }
    }
}

impl ThreadRef {
    /// `7 (os 0x1a2b)`, or the Thread's address when the thread list lacks it.
    fn label(&self) -> String {
        match (self.managed_id, self.os_id) {
            (Some(id), Some(os)) => format!("{id} (os {os:#x})"),
            _ => format!("Thread {} (not in the thread list)", self.thread),
        }
    }
}

// ------------------------------------------------------------------------------------ syncblk

#[derive(Serialize)]
pub struct SyncBlockOut {
    pub index: u32,
    pub sync_block: String,
    pub object: String,
    #[serde(rename = "type")]
    pub type_name: String,
    pub monitor_held: u32,
    pub lock_state: u32,
    pub locked: bool,
    pub recursion: u32,
    pub owner: Option<ThreadRef>,
    pub owner_os_thread_id: Option<u64>,
    pub enter_waiters: u32,
    pub wait_threads: Vec<ThreadRef>,
    pub notes: Vec<String>,
}

#[derive(Serialize)]
pub struct ThinLockOut {
    pub object: String,
    #[serde(rename = "type")]
    pub type_name: String,
    pub thread_id: u32,
    pub owner: Option<ThreadRef>,
    pub recursion: u32,
}

#[derive(Serialize)]
pub struct SyncBlkOut {
    pub sync_table: String,
    pub used_entries: u32,
    pub table_size: u32,
    pub active_sync_blocks: u32,
    pub free_entries: u32,
    pub sync_blocks: Vec<SyncBlockOut>,
    /// None when not searched (--nothin).
    pub thin_locks: Option<Vec<ThinLockOut>>,
    pub notes: Vec<String>,
}

fn sync_block_out(c: &Clr, th: &Threads, s: &SyncBlockData) -> SyncBlockOut {
    let type_name = clrdata::model::heap::read_method_table(c.rt.memory(), s.object)
        .map(|mt| c.type_name(mt))
        .unwrap_or_else(|_| "<object not in the dump>".into());
    SyncBlockOut {
        index: s.index,
        sync_block: hex(s.sync_block),
        object: hex(s.object),
        type_name,
        monitor_held: s.monitor_held,
        lock_state: s.lock_state,
        locked: s.locked,
        recursion: s.recursion,
        owner: s.locked.then(|| th.reference(s.holding_thread)),
        owner_os_thread_id: s.locked.then_some(s.holding_os_thread_id),
        enter_waiters: s.enter_waiters,
        wait_threads: s.wait_threads.iter().map(|&t| th.reference(t)).collect(),
        notes: s.notes.clone(),
    }
}

fn syncblk(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let th = threads(&c)?;
    let table_data = clrdata::analysis::locks::monitors(&c.rt, &c.names)
        .map_err(|e| CommandError::clr("reading the sync table", e))?;
    let all = m.get_flag("all");
    let only: Option<u32> = match m.get_one::<String>("index") {
        Some(i) => Some(i.parse().map_err(|_| {
            CommandError::bad_argument(format!("\'{i}\'"), "not a sync block index")
        })?),
        None => None,
    };
    let mut notes = table_data.notes.clone();
    let blocks: Vec<SyncBlockOut> = table_data
        .sync_blocks
        .iter()
        .filter(|b| match only {
            Some(i) => b.index == i,
            None => all || b.is_interesting(),
        })
        .map(|b| sync_block_out(&c, &th, b))
        .collect();
    let thin = if m.get_flag("nothin") || only.is_some() {
        None
    } else {
        let heap = c.heap()?;
        let (list, errors) = clrdata::analysis::locks::thin_locks(&c.rt, heap, &th.list);
        notes.extend(errors.into_iter().map(|e| format!("heap walk: {e}")));
        Some(
            list.iter()
                .map(|t| ThinLockOut {
                    object: hex(t.object),
                    type_name: c.type_name(t.mt),
                    thread_id: t.thread_id,
                    owner: t.thread.map(|a| th.reference(a)),
                    recursion: t.recursion,
                })
                .collect::<Vec<_>>(),
        )
    };
    let out = SyncBlkOut {
        sync_table: hex(table_data.table),
        used_entries: table_data.used_entries,
        table_size: table_data.size,
        active_sync_blocks: table_data.active_count,
        free_entries: table_data.free_entries,
        sync_blocks: blocks,
        thin_locks: thin,
        notes,
    };
    Ok(Output::rendered("syncblk", out))
}

impl Render for SyncBlkOut {
    fn render(&self) -> String {
        let mut t = table(&[
            "Index",
            "SyncBlock",
            "MonitorHeld",
            "Recursion",
            "Owning Thread Info",
            "Waiters",
            "SyncBlock Owner",
        ]);
        for b in &self.sync_blocks {
            let owner = match &b.owner {
                Some(o) => format!(
                    "{} {:x} {}",
                    fmt_addr(parse_hex(&o.thread)),
                    o.os_id.unwrap_or(b.owner_os_thread_id.unwrap_or(0)),
                    o.managed_id.map(|i| i.to_string()).unwrap_or("?".into())
                ),
                None => "none".into(),
            };
            let mut waiters = Vec::new();
            if b.enter_waiters > 0 {
                waiters.push(format!("{} entering", b.enter_waiters));
            }
            if !b.wait_threads.is_empty() {
                let ids: Vec<String> = b
                    .wait_threads
                    .iter()
                    .map(|w| w.managed_id.map(|i| i.to_string()).unwrap_or("?".into()))
                    .collect();
                let shown = ids.len().min(8);
                let more = if ids.len() > shown {
                    format!(",... (+{})", ids.len() - shown)
                } else {
                    String::new()
                };
                waiters.push(format!(
                    "{} in Monitor.Wait: {}{more}",
                    ids.len(),
                    ids[..shown].join(",")
                ));
            }
            t.add_row(vec![
                b.index.to_string(),
                fmt_addr(parse_hex(&b.sync_block)),
                b.monitor_held.to_string(),
                b.recursion.to_string(),
                owner,
                waiters.join("; "),
                format!("{} {}", fmt_addr(parse_hex(&b.object)), b.type_name),
            ]);
        }
        let mut text = render(&t);
        text.push_str("-----------------------------\n");
        text.push_str(&format!(
            "Total           {}\nActive          {}\nFree            {}\n",
            self.used_entries.saturating_sub(1),
            self.active_sync_blocks,
            self.free_entries
        ));
        if let Some(thin) = &self.thin_locks {
            if thin.is_empty() {
                text.push_str("\nNo thin locks are held.\n");
            } else {
                text.push_str("\nThin locks (held in object headers):\n");
                let mut tt = table(&["Object", "Type", "Owner (ID, OS id)", "Recursion"]);
                for l in thin {
                    tt.add_row(vec![
                        fmt_addr(parse_hex(&l.object)),
                        l.type_name.clone(),
                        match &l.owner {
                            Some(o) => format!(
                                "{} ({:#x})",
                                o.managed_id.unwrap_or(l.thread_id),
                                o.os_id.unwrap_or(0)
                            ),
                            None => format!("thread id {} (no such thread)", l.thread_id),
                        },
                        l.recursion.to_string(),
                    ]);
                }
                text.push_str(&render(&tt));
            }
        }
        for b in &self.sync_blocks {
            for n in &b.notes {
                text.push_str(&format!("note: sync block {}: {n}\n", b.index));
            }
        }
        for n in &self.notes {
            text.push_str(&format!("note: {n}\n"));
        }
        text
    }
}

fn parse_hex(h: &str) -> u64 {
    u64::from_str_radix(h.trim_start_matches("0x"), 16).unwrap_or(0)
}

// ----------------------------------------------------------------------------------- deadlock

#[derive(Serialize)]
pub struct WaitOut {
    pub thread: ThreadRef,
    pub kind: WaitKind,
    pub object: Option<String>,
    #[serde(rename = "type")]
    pub type_name: Option<String>,
    pub sync_block: Option<String>,
    pub owner: Option<ThreadRef>,
    pub found_by: WaitSource,
    pub blocked_in: Option<String>,
    pub wait_frame: Option<String>,
    pub notes: Vec<String>,
}

#[derive(Serialize)]
pub struct CycleOut {
    /// Each thread waits for the lock the next one holds (the last for the first's).
    pub threads: Vec<ThreadRef>,
    /// The lock each thread waits for.
    pub locks: Vec<LockOut>,
}

#[derive(Serialize)]
pub struct LockOut {
    pub object: String,
    #[serde(rename = "type")]
    pub type_name: String,
    pub waiter: ThreadRef,
    pub owner: ThreadRef,
    pub wait_frame: Option<String>,
}

#[derive(Serialize)]
pub struct BehindOut {
    pub thread: ThreadRef,
    pub cycle: usize,
    pub through: Vec<ThreadRef>,
}

#[derive(Serialize)]
pub struct DeadlockOut {
    pub deadlocked: bool,
    pub waits: Vec<WaitOut>,
    pub cycles: Vec<CycleOut>,
    pub waiting_on_cycles: Vec<BehindOut>,
    pub notes: Vec<String>,
}

fn deadlock(s: &Session, _: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let th = threads(&c)?;
    let table_data = clrdata::analysis::locks::monitors(&c.rt, &c.names)
        .map_err(|e| CommandError::clr("reading the sync table", e))?;
    let w = StackWalker::for_target(&c.rt, &c.names);
    let stacks: HashMap<u64, ThreadStack> = th
        .list
        .iter()
        .filter(|t| t.os_id != 0)
        .map(|t| (t.address, w.walk(t)))
        .collect();
    let d: Deadlocks = find_deadlocks(&c.rt, &th.list, &table_data, &stacks);
    let type_of = |o: u64| {
        clrdata::model::heap::read_method_table(c.rt.memory(), o)
            .map(|mt| c.type_name(mt))
            .unwrap_or_else(|_| "<object not in the dump>".into())
    };
    let wait_of: HashMap<u64, &clrdata::analysis::locks::LockWait> =
        d.waits.iter().map(|w| (w.thread, w)).collect();
    let waits: Vec<WaitOut> = d
        .waits
        .iter()
        .map(|w| WaitOut {
            thread: th.reference(w.thread),
            kind: w.kind,
            object: (w.object != 0).then(|| hex(w.object)),
            type_name: (w.object != 0).then(|| type_of(w.object)),
            sync_block: (w.sync_block != 0).then(|| hex(w.sync_block)),
            owner: w.owner.map(|o| th.reference(o)),
            found_by: w.source,
            blocked_in: w.blocked_in.clone(),
            wait_frame: w.wait_frame.clone(),
            notes: w.notes.clone(),
        })
        .collect();
    let cycles: Vec<CycleOut> = d
        .cycles
        .iter()
        .map(|cy| {
            let n = cy.threads.len();
            CycleOut {
                threads: cy.threads.iter().map(|&t| th.reference(t)).collect(),
                locks: (0..n)
                    .map(|i| LockOut {
                        object: hex(cy.objects[i]),
                        type_name: type_of(cy.objects[i]),
                        waiter: th.reference(cy.threads[i]),
                        owner: th.reference(cy.threads[(i + 1) % n]),
                        wait_frame: wait_of
                            .get(&cy.threads[i])
                            .and_then(|w| w.wait_frame.clone()),
                    })
                    .collect(),
            }
        })
        .collect();
    let behind: Vec<BehindOut> = d
        .waiting_on_cycles
        .iter()
        .map(|b| BehindOut {
            thread: th.reference(b.thread),
            cycle: b.cycle,
            through: b.through.iter().map(|&t| th.reference(t)).collect(),
        })
        .collect();
    let out = DeadlockOut {
        deadlocked: !cycles.is_empty(),
        waits,
        cycles,
        waiting_on_cycles: behind,
        notes: d.notes.clone(),
    };
    Ok(Output::rendered("deadlock", out))
}

impl Render for DeadlockOut {
    fn render(&self) -> String {
        let mut text = String::new();
        if self.cycles.is_empty() {
            text.push_str("No deadlock: the wait-for graph of monitors has no cycle.\n");
        }
        for (i, cy) in self.cycles.iter().enumerate() {
            text.push_str(&format!(
                "Deadlock {} ({} threads):\n",
                i + 1,
                cy.threads.len()
            ));
            for l in &cy.locks {
                text.push_str(&format!(
                    "  thread {} waits for {} {} held by thread {}\n      in {}\n",
                    l.waiter.label(),
                    l.object,
                    l.type_name,
                    l.owner.label(),
                    l.wait_frame.as_deref().unwrap_or("<no managed frame>")
                ));
            }
        }
        for b in &self.waiting_on_cycles {
            let chain: Vec<String> = b.through.iter().map(|r| r.label()).collect();
            let wl = self
                .waits
                .iter()
                .find(|w| w.thread.thread == b.thread.thread);
            text.push_str(&format!(
                "Thread {} waits on deadlock {}: for {} {} held by thread {}\n      in {}\n",
                b.thread.label(),
                b.cycle + 1,
                wl.map(|w| w.object.clone().unwrap_or_else(|| hex(0)))
                    .unwrap_or_default(),
                wl.map(|w| w
                    .type_name
                    .clone()
                    .unwrap_or_else(|| "<object not in the dump>".into()))
                    .unwrap_or_default(),
                chain.join(" -> "),
                wl.and_then(|w| w.wait_frame.as_deref())
                    .unwrap_or("<no managed frame>")
            ));
        }
        if !self.waits.is_empty() {
            text.push_str("\nThreads blocked on monitors:\n");
            let mut t = table(&["ID", "OSID", "Waits", "Object", "Type", "Owner", "In"]);
            for w in &self.waits {
                t.add_row(vec![
                    w.thread
                        .managed_id
                        .map(|i| i.to_string())
                        .unwrap_or_default(),
                    format!("{:x}", w.thread.os_id.unwrap_or(0)),
                    match w.kind {
                        WaitKind::MonitorEnter => "enter".to_string(),
                        WaitKind::MonitorWait => "Monitor.Wait (for a pulse)".to_string(),
                    },
                    w.object
                        .as_deref()
                        .map(|o| fmt_addr(parse_hex(o)))
                        .unwrap_or_else(|| "?".into()),
                    w.type_name.clone().unwrap_or_default(),
                    match &w.owner {
                        Some(o) => o.managed_id.map(|i| i.to_string()).unwrap_or("?".into()),
                        None => "-".into(),
                    },
                    w.wait_frame.clone().unwrap_or_default(),
                ]);
            }
            text.push_str(&render(&t));
        }
        for w in &self.waits {
            for n in &w.notes {
                text.push_str(&format!(
                    "note: thread {}: {n}\n",
                    w.thread.managed_id.unwrap_or(0)
                ));
            }
        }
        for n in &self.notes {
            text.push_str(&format!("note: {n}\n"));
        }
        text
    }
}
