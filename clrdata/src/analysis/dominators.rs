//! Retained sizes: the dominator tree of the live object graph.
//!
//! The graph: a virtual root with an edge to every root's object (the precise root set of
//! [`crate::analysis::roots::FindRoots::roots`]), and each live object's references (its
//! GCDesc, a dependent handle's secondary as a reference of its primary). Object X dominates Y
//! when every path from the root to Y passes through X; X's retained size is the total size of
//! the objects it dominates, itself included: the bytes that would no longer be reachable were
//! X gone.
//!
//! The live objects are numbered in address order (one `u64` address and one size each), the
//! edges kept as compressed rows of object numbers; the dominators by the iterative algorithm
//! of Cooper, Harvey and Kennedy ("A Simple, Fast Dominance Algorithm", 2001) over a reverse
//! postorder of the graph.

use crate::analysis::reach::{live_set, LiveSet};
use crate::analysis::roots::{RefReader, Root};
use crate::discovery::runtime::Runtime;
use crate::error::Result;
use crate::model::heap::{read_method_table, GcHeap};
use crate::model::names::TypeNames;
use dumpreader::{Memory, Target};
use std::collections::HashMap;

/// No dominator (unreachable, or the virtual root's own).
const NONE: u32 = u32::MAX;

/// The live objects with their immediate dominators and retained sizes.
#[derive(Debug, Clone)]
pub struct Retention {
    /// The live objects' addresses, sorted (object `i` is `addresses[i]`).
    pub addresses: Vec<u64>,
    /// Their MethodTables.
    pub mts: Vec<u64>,
    /// Their sizes.
    pub sizes: Vec<u64>,
    /// Each object's immediate dominator (an object number), or None when only the virtual
    /// root dominates it (held by a root, or by several disjoint ways).
    pub idom: Vec<Option<u32>>,
    /// Each object's retained size (itself included).
    pub retained: Vec<u64>,
    /// The total size of the live objects.
    pub live_bytes: u64,
    /// The roots the graph starts from (those holding a live object), in the root set's order.
    pub roots: Vec<Root>,
    /// What could not be read.
    pub notes: Vec<String>,
}

impl Retention {
    /// The number of the object at `addr`, if live.
    pub fn index_of(&self, addr: u64) -> Option<u32> {
        self.addresses.binary_search(&addr).ok().map(|i| i as u32)
    }

    /// Object `i`'s dominators from the top of its dominator tree (an object only the virtual
    /// root dominates) down to `i` itself: `[top, ..., i]`. Every path from the roots to `i`
    /// passes through each of them.
    pub fn dominator_chain(&self, i: u32) -> Vec<u32> {
        let mut chain = vec![i];
        let mut v = i;
        // A dominator tree has no cycle; the bound only guards against a malformed one.
        while let Some(Some(d)) = self.idom.get(v as usize) {
            if chain.len() > self.idom.len() {
                break;
            }
            chain.push(*d);
            v = *d;
        }
        chain.reverse();
        chain
    }

    /// The roots holding object `i` itself (not through another object). For the top of a
    /// dominator chain, empty means that several roots reach it, each by another path, and no
    /// root holds it directly.
    pub fn roots_of(&self, i: u32) -> impl Iterator<Item = &Root> {
        let a = self.addresses.get(i as usize).copied();
        self.roots.iter().filter(move |r| Some(r.object) == a)
    }
}

/// The address of the first reference slot of the object at `from` that holds `to` (the
/// GCDesc's slots, in their order), if `from` can be read and has one.
pub fn slot_holding<M: Memory + Target>(
    rt: &Runtime<M>,
    names: &TypeNames,
    from: u64,
    to: u64,
) -> Option<u64> {
    let mt = read_method_table(rt.memory(), from).ok()?;
    let mut rr = RefReader::new(rt, names);
    let mut found = None;
    rr.for_each(from, mt, |slot, v| {
        if v == to && found.is_none() {
            found = Some(slot);
        }
    });
    found
}

/// The dominator tree of the live objects and each one's retained size.
pub fn retention<M: Memory + Target>(
    rt: &Runtime<M>,
    heap: &GcHeap,
    names: &TypeNames,
) -> Result<Retention> {
    let set = live_set(rt, heap, names)?;
    retention_of(rt, heap, names, &set)
}

/// As [`retention`], for a live set already marked.
pub fn retention_of<M: Memory + Target>(
    rt: &Runtime<M>,
    heap: &GcHeap,
    names: &TypeNames,
    set: &LiveSet,
) -> Result<Retention> {
    let mut notes = set.notes.clone();
    // Number the live objects.
    // As many as were marked (capacity the walk does not touch costs no memory): no copy as
    // the vector grows.
    let mut objs: Vec<(u64, u64, u64)> = Vec::with_capacity(set.marked as usize);
    let mut it = heap.objects(rt);
    for o in it.by_ref() {
        if !o.is_free && set.is_live(o.address) {
            objs.push((o.address, o.mt, o.size));
        }
    }
    if !it.errors().is_empty() {
        notes.push(format!(
            "the heap walk met {} bad place(s): objects there are left out",
            it.errors().len()
        ));
    }
    // The walk gives each segment's objects in address order: sorted unless the segments
    // are not.
    if !objs.windows(2).all(|w| w[0].0 < w[1].0) {
        objs.sort_unstable();
    }
    let n = objs.len();
    let addresses: Vec<u64> = objs.iter().map(|o| o.0).collect();
    let mts: Vec<u64> = objs.iter().map(|o| o.1).collect();
    let sizes: Vec<u64> = objs.iter().map(|o| o.2).collect();
    drop(objs);
    let index = |a: u64| addresses.binary_search(&a).ok().map(|i| i as u32);

    // The edges: node 0 is the virtual root, object i is node i + 1.
    // The roots the set was marked from (not found again: a stack walk per thread).
    let roots = &set.roots;
    let mut deps: HashMap<u64, Vec<u64>> = HashMap::new();
    for &(p, s) in &roots.dependent {
        deps.entry(p).or_default().push(s);
    }
    let mut offsets: Vec<u64> = Vec::with_capacity(n + 2);
    // Room for two references per object before the vector grows (untouched capacity costs
    // no memory).
    let mut targets: Vec<u32> = Vec::with_capacity(2 * n + 16);
    offsets.push(0);
    let mut root_nodes: Vec<u32> = roots
        .roots
        .iter()
        .filter_map(|r| index(r.object))
        .map(|i| i + 1)
        .collect();
    root_nodes.sort_unstable();
    root_nodes.dedup();
    targets.extend_from_slice(&root_nodes);
    offsets.push(targets.len() as u64);
    let mut rr = RefReader::new(rt, names);
    for (i, &a) in addresses.iter().enumerate() {
        if let Ok(mt) = read_method_table(rt.memory(), a) {
            debug_assert_eq!(mt, mts[i]);
            rr.for_each(a, mt, |_, v| {
                if let Some(j) = index(v) {
                    targets.push(j + 1);
                }
            });
        }
        if let Some(d) = deps.get(&a) {
            targets.extend(d.iter().filter_map(|&v| index(v)).map(|j| j + 1));
        }
        offsets.push(targets.len() as u64);
    }
    let succ = |v: usize| &targets[offsets[v] as usize..offsets[v + 1] as usize];
    let nodes = n + 1;

    // Postorder numbers by an iterative depth-first search from the root.
    let mut post = vec![NONE; nodes];
    let mut order: Vec<u32> = Vec::with_capacity(nodes); // nodes in postorder
    let mut visited = vec![false; nodes];
    let mut stack: Vec<(u32, u64)> = vec![(0, offsets[0])];
    visited[0] = true;
    while let Some(top) = stack.last_mut() {
        let v = top.0 as usize;
        if top.1 < offsets[v + 1] {
            let w = targets[top.1 as usize] as usize;
            top.1 += 1;
            if !visited[w] {
                visited[w] = true;
                stack.push((w as u32, offsets[w]));
            }
        } else {
            post[v] = order.len() as u32;
            order.push(v as u32);
            stack.pop();
        }
    }
    let unreached = nodes - order.len();
    if unreached > 0 {
        notes.push(format!(
            "{unreached} live object(s) not reached again when the graph was built (their \
             referrers could not be read): left without a dominator"
        ));
    }
    // Predecessors, as compressed rows.
    let mut pcount = vec![0u64; nodes + 1];
    for v in 0..nodes {
        if visited[v] {
            for &w in succ(v) {
                pcount[w as usize + 1] += 1;
            }
        }
    }
    for v in 0..nodes {
        pcount[v + 1] += pcount[v];
    }
    let mut preds = vec![0u32; pcount[nodes] as usize];
    let mut fill = pcount.clone();
    for v in 0..nodes {
        if visited[v] {
            for &w in succ(v) {
                preds[fill[w as usize] as usize] = v as u32;
                fill[w as usize] += 1;
            }
        }
    }
    drop(fill);
    // Cooper-Harvey-Kennedy: idom by postorder numbers, iterated to a fixed point over the
    // reverse postorder.
    let mut idom = vec![NONE; nodes];
    idom[0] = 0;
    let mut changed = true;
    while changed {
        changed = false;
        for &b in order.iter().rev().skip(1) {
            let b = b as usize;
            let mut new = NONE;
            for &p in &preds[pcount[b] as usize..pcount[b + 1] as usize] {
                if idom[p as usize] == NONE {
                    continue;
                }
                new = if new == NONE {
                    p
                } else {
                    let (mut x, mut y) = (p, new);
                    while x != y {
                        while post[x as usize] < post[y as usize] {
                            x = idom[x as usize];
                        }
                        while post[y as usize] < post[x as usize] {
                            y = idom[y as usize];
                        }
                    }
                    x
                };
            }
            if new != NONE && idom[b] != new {
                idom[b] = new;
                changed = true;
            }
        }
    }
    // Retained sizes: each node's size added to its dominators', children first (postorder).
    let mut retained = vec![0u64; nodes];
    for v in 1..nodes {
        retained[v] = sizes[v - 1];
    }
    for &v in &order {
        let v = v as usize;
        if v != 0 && idom[v] != NONE {
            let r = retained[v];
            retained[idom[v] as usize] += r;
        }
    }
    Ok(Retention {
        idom: idom[1..]
            .iter()
            .map(|&d| (d != NONE && d != 0).then(|| d - 1))
            .collect(),
        retained: retained[1..].to_vec(),
        live_bytes: sizes.iter().sum(),
        roots: roots
            .roots
            .iter()
            .filter(|r| index(r.object).is_some())
            .cloned()
            .collect(),
        addresses,
        mts,
        sizes,
        notes,
    })
}

/// The memory one type holds: the union of its objects' dominator subtrees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeRetained {
    /// The MethodTable.
    pub mt: u64,
    /// Live objects of the type.
    pub count: u64,
    /// Their own sizes.
    pub size: u64,
    /// The bytes that would no longer be reachable were every object of the type gone, as far
    /// as each object's own dominated objects go: the retained sizes of its objects that no
    /// other object of the type dominates.
    pub retained: u64,
}

impl Retention {
    /// Per type, the retained bytes of its objects (each byte once: an object dominated by
    /// another of its type is within that one's), largest first.
    pub fn by_type(&self) -> Vec<TypeRetained> {
        let n = self.addresses.len();
        // Children of each object in the dominator tree, as compressed rows; the tops (only
        // the virtual root dominates them) apart.
        let mut count = vec![0u32; n + 1];
        let mut tops = Vec::new();
        for (v, d) in self.idom.iter().enumerate() {
            match d {
                Some(p) => count[*p as usize + 1] += 1,
                None => tops.push(v as u32),
            }
        }
        for i in 0..n {
            count[i + 1] += count[i];
        }
        let mut children = vec![0u32; count[n] as usize];
        let mut fill = count.clone();
        for (v, d) in self.idom.iter().enumerate() {
            if let Some(p) = d {
                children[fill[*p as usize] as usize] = v as u32;
                fill[*p as usize] += 1;
            }
        }
        // Depth first over the tree with each type's objects on the current path counted.
        let mut on_path: HashMap<u64, u32> = HashMap::new();
        let mut out: HashMap<u64, TypeRetained> = HashMap::new();
        for &t in &tops {
            // (node, entered)
            let mut stack: Vec<(u32, bool)> = vec![(t, false)];
            while let Some((v, entered)) = stack.pop() {
                let vi = v as usize;
                let mt = self.mts[vi];
                if entered {
                    if let Some(c) = on_path.get_mut(&mt) {
                        *c -= 1;
                    }
                    continue;
                }
                let c = on_path.entry(mt).or_insert(0);
                let e = out.entry(mt).or_insert(TypeRetained {
                    mt,
                    count: 0,
                    size: 0,
                    retained: 0,
                });
                e.count += 1;
                e.size += self.sizes[vi];
                if *c == 0 {
                    e.retained += self.retained[vi];
                }
                *c += 1;
                stack.push((v, true));
                for &w in &children[count[vi] as usize..count[vi + 1] as usize] {
                    stack.push((w, false));
                }
            }
        }
        let mut v: Vec<TypeRetained> = out.into_values().collect();
        v.sort_by(|a, b| b.retained.cmp(&a.retained).then(a.mt.cmp(&b.mt)));
        v
    }
}
