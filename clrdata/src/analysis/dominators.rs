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

use crate::analysis::bigvec;
use crate::analysis::reach::{live_set, LiveSet};
use crate::analysis::roots::{HeapBits, RefReader, Root};
use crate::discovery::runtime::Runtime;
use crate::error::Result;
use crate::model::heap::{read_method_table, GcHeap};
use crate::model::names::TypeNames;
use dumpreader::{Memory, Target};
use std::cell::Cell;
use std::collections::HashMap;

/// No dominator (unreachable, or only the virtual root).
const NONE: u32 = u32::MAX;
/// Met by the depth-first search, not yet numbered.
const SEEN: u32 = u32::MAX - 1;

/// The live objects with their immediate dominators and retained sizes.
#[derive(Debug, Clone)]
pub struct Retention {
    /// The live objects' addresses, sorted (object `i` is `addresses[i]`).
    pub addresses: Vec<u64>,
    /// Their MethodTables.
    pub mts: Vec<u64>,
    /// Their sizes.
    pub sizes: Vec<u64>,
    /// Each object's immediate dominator (an object number), NONE when only the virtual root
    /// dominates it (held by a root, or by several disjoint ways): [`Retention::idom`].
    idom: Vec<u32>,
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
    /// Object `i`'s immediate dominator (an object number), or None when only the virtual
    /// root dominates it (held by a root, or by several disjoint ways).
    pub fn idom(&self, i: u32) -> Option<u32> {
        self.idom.get(i as usize).copied().filter(|&d| d != NONE)
    }

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
        while let Some(d) = self.idom(v) {
            if chain.len() > self.idom.len() {
                break;
            }
            chain.push(d);
            v = d;
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

/// Object numbers by address: the rank of an object's bit in a bitmap holding a bit for
/// each numbered object (a bit per 8 bytes of the heap's segments, as the live set's marks),
/// with the count of set bits before each word. O(1) per lookup, where a binary search over
/// 20 million addresses costs some 25 comparisons, each a likely cache miss.
struct Numbering<'a> {
    bits: std::borrow::Cow<'a, HeapBits>,
    /// Set bits in the words before each word.
    before: Vec<u32>,
    /// Set bits in all.
    total: u64,
    /// The range of the last address looked up ([`HeapBits::id_near`]).
    hint: Cell<usize>,
}

impl<'a> Numbering<'a> {
    /// The marked objects of a live set, numbered in address order.
    fn marks(set: &'a LiveSet) -> Numbering<'a> {
        Numbering::of(std::borrow::Cow::Borrowed(set.bits()))
    }

    /// `addresses`, each with a bit in `heap`'s segments, numbered in address order.
    fn new(heap: &GcHeap, addresses: &[u64]) -> Numbering<'a> {
        let mut bits = HeapBits::new(heap);
        let mut hint = 0;
        for &a in addresses {
            if let Some(id) = bits.id_near(a, &mut hint) {
                bits.set(id);
            }
        }
        Numbering::of(std::borrow::Cow::Owned(bits))
    }

    fn of(bits: std::borrow::Cow<'a, HeapBits>) -> Numbering<'a> {
        let mut before = bigvec::with_capacity(bits.words().len());
        let mut total = 0u64;
        for w in bits.words() {
            before.push(total as u32);
            total += w.count_ones() as u64;
        }
        Numbering {
            bits,
            before,
            total,
            hint: Cell::new(0),
        }
    }

    #[inline]
    fn index(&self, addr: u64) -> Option<u32> {
        let mut hint = self.hint.get();
        let id = self.bits.id_near(addr, &mut hint);
        self.hint.set(hint);
        let id = id?;
        let w = (id / 64) as usize;
        let word = self.bits.words()[w];
        let m = 1u64 << (id % 64);
        (word & m != 0).then(|| self.before[w] + (word & (m - 1)).count_ones())
    }
}

/// The references of object `i` (numbered by `index`, its dependent handles' secondaries
/// from `deps`, sorted by primary) appended to `items` as its row; false when the rows
/// outgrow u32.
#[allow(clippy::too_many_arguments)]
fn push_row<M: Memory>(
    rr: &mut RefReader<'_, M>,
    index: &impl Fn(u64) -> Option<u32>,
    deps: &mut std::iter::Peekable<std::vec::IntoIter<(u32, u32)>>,
    i: u32,
    addr: u64,
    mt: u64,
    items: &mut Vec<u32>,
    start: &mut Vec<u32>,
) -> bool {
    rr.for_each(addr, mt, |_, v| {
        if let Some(j) = index(v) {
            items.push(j);
        }
    });
    while let Some((_, s)) = deps.next_if(|d| d.0 == i) {
        items.push(s);
    }
    if items.len() >= u32::MAX as usize {
        return false;
    }
    start.push(items.len() as u32);
    true
}

/// Compressed rows: row `v` is `items[start[v]..start[v + 1]]`.
struct Rows {
    start: Vec<u32>,
    items: Vec<u32>,
}

impl Rows {
    #[inline]
    fn row(&self, v: usize) -> &[u32] {
        &self.items[self.start[v] as usize..self.start[v + 1] as usize]
    }

    /// Rows grouped by key: row `k` holds, in the order `pairs` gives them, each value paired
    /// with key `k` (a counting sort; `pairs` is iterated twice: to count, then to fill).
    /// Keys are below `keys`; there are fewer than 2^32 pairs.
    fn grouped<I: Iterator<Item = (u32, u32)>>(keys: usize, pairs: impl Fn() -> I) -> Rows {
        // Counts at start[k + 2], summed to row starts at start[k + 1]; filling row k moves
        // start[k + 1] to its end, which is row k + 1's start.
        let mut start = bigvec::filled(keys + 2, 0u32);
        for (k, _) in pairs() {
            start[k as usize + 2] += 1;
        }
        for k in 0..keys {
            start[k + 2] += start[k + 1];
        }
        let mut items = bigvec::filled(start[keys + 1] as usize, 0u32);
        for (k, v) in pairs() {
            let at = &mut start[k as usize + 1];
            items[*at as usize] = v;
            *at += 1;
        }
        start.truncate(keys + 1);
        Rows { start, items }
    }

    /// The rows of `rows` turned around: `w` in row `v` becomes `v` in row `w`, for the rows
    /// `keep` takes.
    fn reversed(rows: &Rows, nodes: usize, keep: impl Fn(usize) -> bool) -> Rows {
        Rows::grouped(nodes, || {
            (0..nodes)
                .filter(|&v| keep(v))
                .flat_map(move |v| rows.row(v).iter().map(move |&w| (w, v as u32)))
        })
    }
}

/// As [`retention`], for a live set already marked.
pub fn retention_of<M: Memory + Target>(
    rt: &Runtime<M>,
    heap: &GcHeap,
    names: &TypeNames,
    set: &LiveSet,
) -> Result<Retention> {
    retention_numbered(rt, heap, names, set, false)
}

/// As [`retention_of`], numbering the walked objects apart and reading them a second time
/// even where the live set's marks are exactly those objects: the way a damaged heap is read,
/// for tests to hold both ways to one answer.
#[doc(hidden)]
pub fn retention_of_two_walks<M: Memory + Target>(
    rt: &Runtime<M>,
    heap: &GcHeap,
    names: &TypeNames,
    set: &LiveSet,
) -> Result<Retention> {
    retention_numbered(rt, heap, names, set, true)
}

fn retention_numbered<M: Memory + Target>(
    rt: &Runtime<M>,
    heap: &GcHeap,
    names: &TypeNames,
    set: &LiveSet,
    two_walks: bool,
) -> Result<Retention> {
    let mut notes = set.notes.clone();
    let too_many = |what: &str| crate::error::ClrError::Unsupported {
        what: "retained sizes".into(),
        detail: format!("the live object graph has more {what} than this build numbers (2^32)"),
        addr: None,
    };
    // Node n (beyond the objects) is the virtual root, and the sentinels NONE and SEEN are
    // no node.
    if set.marked + 1 >= SEEN as u64 {
        return Err(too_many("objects"));
    }
    let roots = &set.roots;
    let deps_by = |index: &dyn Fn(u64) -> Option<u32>| {
        // Dependent handles as edges primary -> secondary, by the primary's number.
        let mut deps: Vec<(u32, u32)> = roots
            .dependent
            .iter()
            .filter_map(|&(p, s)| Some((index(p)?, index(s)?)))
            .collect();
        deps.sort_unstable();
        deps.into_iter().peekable()
    };
    // One walk over the heap, segment by segment in address order, numbers the live objects
    // and reads each one's references: object i is the i-th marked address, so a reference's
    // number is its mark's rank. That holds when the marks are exactly the objects walked
    // (checked after the walk); in a damaged heap (a reference that is no object's start, or
    // segments that overlap) the objects walked are numbered alone and read a second time.
    // As many as were marked (capacity the walk does not touch costs no memory): no copy as
    // the vectors grow.
    let cap = set.marked as usize;
    let (mut addresses, mut mts, mut sizes) = (
        bigvec::with_capacity::<u64>(cap),
        bigvec::with_capacity::<u64>(cap),
        bigvec::with_capacity::<u64>(cap),
    );
    let mut start: Vec<u32> = bigvec::with_capacity(cap + 2);
    // Room for two references per object before the vector grows (untouched capacity costs
    // no memory).
    let mut items: Vec<u32> = bigvec::with_capacity(2 * cap + 16);
    start.push(0);
    let marks = Numbering::marks(set);
    let fused = {
        let index = |a: u64| marks.index(a);
        let mut deps = deps_by(&index);
        let mut rr = RefReader::new(rt, names);
        let mut segments: Vec<usize> = (0..heap.segments.len()).collect();
        segments.sort_by_key(|&i| heap.segments[i].mem);
        let mut errors = 0;
        let mut hint = 0;
        let mut fits = true;
        for i in segments {
            errors += heap
                .visit_segment(rt, i, |o| {
                    if !o.is_free && set.is_live_near(o.address, &mut hint) {
                        let i = addresses.len() as u32;
                        addresses.push(o.address);
                        mts.push(o.mt);
                        sizes.push(o.size);
                        fits &= push_row(
                            &mut rr, &index, &mut deps, i, o.address, o.mt, &mut items, &mut start,
                        );
                    }
                })
                .len();
        }
        if !fits {
            return Err(too_many("references"));
        }
        if errors > 0 {
            notes.push(format!(
                "the heap walk met {errors} bad place(s): objects there are left out"
            ));
        }
        !two_walks
            && addresses.len() as u64 == marks.total
            && addresses.windows(2).all(|w| w[0] < w[1])
    };
    drop(marks);
    let numbering = if fused {
        None
    } else {
        // Sorted unless segments overlap (an object walked twice is numbered once).
        if !addresses.windows(2).all(|w| w[0] < w[1]) {
            let mut order: Vec<usize> = (0..addresses.len()).collect();
            order.sort_by_key(|&i| addresses[i]);
            order.dedup_by_key(|i| addresses[*i]);
            addresses = order.iter().map(|&i| addresses[i]).collect();
            mts = order.iter().map(|&i| mts[i]).collect();
            sizes = order.iter().map(|&i| sizes[i]).collect();
        }
        let numbering = Numbering::new(heap, &addresses);
        let index = |a: u64| numbering.index(a);
        let mut deps = deps_by(&index);
        let mut rr = RefReader::new(rt, names);
        items.clear();
        start.clear();
        start.push(0);
        for (i, (&a, &mt)) in addresses.iter().zip(&mts).enumerate() {
            if !push_row(
                &mut rr, &index, &mut deps, i as u32, a, mt, &mut items, &mut start,
            ) {
                return Err(too_many("references"));
            }
        }
        Some(numbering)
    };
    let n = addresses.len();
    let index = |a: u64| match &numbering {
        Some(x) => x.index(a),
        None => addresses.binary_search(&a).ok().map(|i| i as u32),
    };
    debug_assert!(addresses
        .iter()
        .enumerate()
        .all(|(i, &a)| index(a) == Some(i as u32)));
    let nodes = n + 1;
    let root = n;
    let mut root_nodes: Vec<u32> = roots.roots.iter().filter_map(|r| index(r.object)).collect();
    root_nodes.sort_unstable();
    root_nodes.dedup();
    items.extend_from_slice(&root_nodes);
    if items.len() >= u32::MAX as usize {
        return Err(too_many("references"));
    }
    start.push(items.len() as u32);
    let succ = Rows { start, items };

    // Postorder numbers by an iterative depth-first search from the root (SEEN: on the
    // stack, not yet numbered).
    let mut post = bigvec::filled(nodes, NONE);
    let mut order: Vec<u32> = bigvec::with_capacity(nodes); // nodes in postorder
    let mut stack: Vec<(u32, u32)> = vec![(root as u32, succ.start[root])];
    post[root] = SEEN;
    while let Some(top) = stack.last_mut() {
        let v = top.0 as usize;
        if top.1 < succ.start[v + 1] {
            let w = succ.items[top.1 as usize] as usize;
            top.1 += 1;
            if post[w] == NONE {
                post[w] = SEEN;
                stack.push((w as u32, succ.start[w]));
            }
        } else {
            post[v] = order.len() as u32;
            order.push(v as u32);
            stack.pop();
        }
    }
    drop(stack);
    let unreached = nodes - order.len();
    if unreached > 0 {
        notes.push(format!(
            "{unreached} live object(s) not reached again when the graph was built (their \
             referrers could not be read): left without a dominator"
        ));
    }
    // Predecessors of the reached nodes.
    let preds = Rows::reversed(&succ, nodes, |v| post[v] != NONE);
    drop(succ);
    // Cooper-Harvey-Kennedy: idom by postorder numbers, iterated to a fixed point over the
    // reverse postorder.
    let mut idom = bigvec::filled(nodes, NONE);
    idom[root] = root as u32;
    let mut changed = true;
    while changed {
        changed = false;
        for &b in order.iter().rev().skip(1) {
            let b = b as usize;
            let mut new = NONE;
            for &p in preds.row(b) {
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
    drop(preds);
    drop(post);
    // Retained sizes: each node's size added to its dominators', children first (postorder).
    let mut retained = bigvec::with_capacity(nodes);
    retained.extend_from_slice(&sizes);
    retained.push(0);
    for &v in &order {
        let v = v as usize;
        if v != root && idom[v] != NONE {
            let r = retained[v];
            retained[idom[v] as usize] += r;
        }
    }
    retained.truncate(n);
    idom.truncate(n);
    for d in idom.iter_mut() {
        if *d == root as u32 {
            *d = NONE;
        }
    }
    Ok(Retention {
        idom,
        retained,
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
        // Dense type numbers (objects of a type often sit side by side: the last one is
        // remembered), each type's totals at its number.
        let mut numbers: HashMap<u64, u32> = HashMap::new();
        let mut out: Vec<TypeRetained> = Vec::new();
        let mut last = (u64::MAX, 0u32);
        let mut tid: Vec<u32> = bigvec::with_capacity(n);
        tid.extend(self.mts.iter().map(|&mt| {
            if last.0 != mt {
                let t = *numbers.entry(mt).or_insert_with(|| {
                    out.push(TypeRetained {
                        mt,
                        count: 0,
                        size: 0,
                        retained: 0,
                    });
                    out.len() as u32 - 1
                });
                last = (mt, t);
            }
            last.1
        }));
        drop(numbers);
        // Children of each object in the dominator tree, as rows; the tops (only the virtual
        // root dominates them) apart.
        let tops: Vec<u32> = (0..n as u32)
            .filter(|&v| self.idom[v as usize] == NONE)
            .collect();
        let tree = Rows::grouped(n, || {
            (0..n as u32)
                .map(|v| (self.idom[v as usize], v))
                .filter(|&(d, _)| d != NONE)
        });
        // Depth first over the tree with each type's objects on the current path counted.
        let mut on_path = vec![0u32; out.len()];
        // (node, entered)
        let mut stack: Vec<(u32, bool)> = Vec::new();
        for &t in &tops {
            stack.push((t, false));
            while let Some((v, entered)) = stack.pop() {
                let vi = v as usize;
                let t = tid[vi] as usize;
                if entered {
                    on_path[t] -= 1;
                    continue;
                }
                let e = &mut out[t];
                e.count += 1;
                e.size += self.sizes[vi];
                if on_path[t] == 0 {
                    e.retained += self.retained[vi];
                }
                on_path[t] += 1;
                stack.push((v, true));
                for &w in tree.row(vi) {
                    stack.push((w, false));
                }
            }
        }
        out.sort_by(|a, b| b.retained.cmp(&a.retained).then(a.mt.cmp(&b.mt)));
        out
    }
}
