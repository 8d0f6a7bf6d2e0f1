//! The runtime's loader heaps, as the DAC lists them for SOS's `eeheap -loader`
//! (ISOSDacInterface13: `GetDomainLoaderAllocator`, `GetLoaderAllocatorHeaps`,
//! `TraverseLoaderHeap`; ISOSDacInterface `GetCodeHeapList`):
//!
//! - the domains: the SystemDomain (where the family's DAC reports one) and the AppDomain,
//!   each with the LoaderAllocator it uses: on .NET 8+ both use the SystemDomain's global
//!   LoaderAllocator (`SystemDomain::m_GlobalAllocator`), whose heaps are read here;
//! - each heap's blocks: the `LoaderHeapBlock` chain from `m_pFirstBlock` (newest first), each
//!   block's reserved range, and how much of it the dump holds (its committed part: what SOS
//!   measures by reading page after page from the block's start);
//! - the EEJitManager's code heaps (`m_pAllCodeHeaps`): a LoaderCodeHeap's blocks (its
//!   ExplicitControlLoaderHeap), a HostCodeHeap's used range.
//!
//! Offsets come from [`crate::discovery::layout::LoaderHeapLayout`].

use crate::discovery::layout::{CodeHeapKindSource, LoaderHeapLayout, LoaderHeapName};
use crate::discovery::runtime::Runtime;
use crate::error::{ClrError, Result};
use dumpreader::Memory;
use serde::Serialize;

/// Bound on a heap's block chain (a cycle or garbage ends the walk with an error).
const MAX_BLOCKS: usize = 100_000;
/// Bound on the code heap list.
const MAX_CODE_HEAPS: usize = 100_000;
/// The page size SOS counts committed memory in.
pub const PAGE: u64 = 0x1000;

/// One reserved block of a loader heap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeapBlock {
    /// Where the block's memory starts.
    pub address: u64,
    /// Its reserved size.
    pub reserved: u64,
    /// How many bytes from its start the dump holds, in whole pages (SOS's committed size:
    /// reading stops at the first page the dump lacks).
    pub committed: u64,
    /// Whether it is the heap's current block (the chain's first: the DAC's
    /// `TraverseLoaderHeap` says so of it; SOS counts no waste in it).
    pub current: bool,
}

/// One heap of a LoaderAllocator.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoaderHeap {
    /// The DAC's name.
    pub name: LoaderHeapName,
    /// The heap object (0: the LoaderAllocator has none).
    pub address: u64,
    /// Its blocks, newest first.
    pub blocks: Vec<HeapBlock>,
    /// Why the chain could not be read to its end (the blocks read before stay).
    pub error: Option<ClrError>,
}

/// Which domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DomainKind {
    /// The SystemDomain.
    System,
    /// The AppDomain.
    App,
}

/// A domain and its LoaderAllocator's heaps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DomainHeaps {
    /// System or App.
    pub kind: DomainKind,
    /// The domain object.
    pub address: u64,
    /// The LoaderAllocator it uses (the global one).
    pub loader_allocator: u64,
    /// The LoaderAllocator's heaps, in the DAC's order.
    pub heaps: Vec<LoaderHeap>,
}

/// What a code heap is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum CodeHeapKind {
    /// A LoaderCodeHeap (reserved blocks of an ExplicitControlLoaderHeap).
    LoaderCodeHeap,
    /// A HostCodeHeap (dynamic methods' code).
    HostCodeHeap,
}

impl CodeHeapKind {
    /// SOS's name.
    pub fn name(self) -> &'static str {
        match self {
            CodeHeapKind::LoaderCodeHeap => "LoaderCodeHeap",
            CodeHeapKind::HostCodeHeap => "HostCodeHeap",
        }
    }
}

/// One code heap of the JIT manager.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CodeHeap {
    /// The CodeHeap object.
    pub address: u64,
    /// Its class.
    pub kind: CodeHeapKind,
    /// A LoaderCodeHeap's blocks; a HostCodeHeap's used range as one block (base to the last
    /// committed address, all of it current).
    pub blocks: Vec<HeapBlock>,
    /// Why the heap could not be read to its end.
    pub error: Option<ClrError>,
}

/// The EEJitManager's code heaps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JitManagerHeaps {
    /// The EEJitManager.
    pub address: u64,
    /// Its code heaps in list order.
    pub heaps: Vec<CodeHeap>,
    /// Code heaps that could not be read or told apart (the list goes on past them).
    pub errors: Vec<ClrError>,
}

/// Everything `eeheap -loader` lists.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoaderHeaps {
    /// The domains, the SystemDomain first.
    pub domains: Vec<DomainHeaps>,
    /// The JIT manager's code heaps.
    pub jit_manager: JitManagerHeaps,
}

/// The loader heaps of the runtime, or the refusal naming what is not verified or not there.
pub fn loader_heaps<M: Memory>(rt: &Runtime<M>) -> Result<LoaderHeaps> {
    let refusal = || ClrError::NotVerified {
        runtime: format!("{} ({}-x64)", rt.info.display_name(), rt.info.os),
        capability: "the loader heaps",
    };
    let l = rt.layout.loader_heaps.ok_or_else(refusal)?;
    if !l.checked_builds.contains(&rt.info.version.as_str()) {
        return Err(refusal());
    }
    let m = rt.memory();
    let system = match l.system_domain_dac_index {
        Some(i) => {
            let a = rt.dac_global_address(i)?;
            m.read_u64(a)
                .map_err(|_| ClrError::read("SystemDomain::m_pSystemDomain", a))?
        }
        None => rt.globals.system_domain,
    };
    if system == 0 {
        return Err(ClrError::not_found_at(
            "SystemDomain",
            0,
            "the runtime's SystemDomain pointer is null or was not found",
        ));
    }
    let global = system.wrapping_add(l.global_allocator);
    let heaps = allocator_heaps(m, &l, global);
    let mut domains = Vec::new();
    if l.system_domain_listed {
        domains.push(DomainHeaps {
            kind: DomainKind::System,
            address: system,
            loader_allocator: global,
            heaps: heaps.clone(),
        });
    }
    let app = rt.app_domain()?;
    if app != 0 {
        domains.push(DomainHeaps {
            kind: DomainKind::App,
            address: app,
            loader_allocator: global,
            heaps,
        });
    }
    Ok(LoaderHeaps {
        domains,
        jit_manager: code_heaps(rt, &l)?,
    })
}

/// The heaps of the LoaderAllocator whose heap pointers `l` counts from `base`.
fn allocator_heaps<M: Memory>(m: &M, l: &LoaderHeapLayout, base: u64) -> Vec<LoaderHeap> {
    let mut out = Vec::new();
    for (name, off) in l.heaps.iter().flatten() {
        out.push(heap_at_pointer(m, l, *name, base.wrapping_add(*off)));
    }
    let vcsm_at = base.wrapping_add(l.vcs_manager);
    match m.read_u64(vcsm_at) {
        Ok(0) => {}
        Ok(vcsm) => {
            out.push(heap_at_pointer(
                m,
                l,
                LoaderHeapName::IndcellHeap,
                vcsm.wrapping_add(l.vcs_indcell_heap),
            ));
            out.push(heap_at_pointer(
                m,
                l,
                LoaderHeapName::CacheEntryHeap,
                vcsm.wrapping_add(l.vcs_cache_entry_heap),
            ));
        }
        Err(_) => {
            for name in [LoaderHeapName::IndcellHeap, LoaderHeapName::CacheEntryHeap] {
                out.push(LoaderHeap {
                    name,
                    address: 0,
                    blocks: Vec::new(),
                    error: Some(ClrError::read(
                        "LoaderAllocator::m_pVirtualCallStubManager",
                        vcsm_at,
                    )),
                });
            }
        }
    }
    out
}

/// The heap whose pointer is at `at`.
fn heap_at_pointer<M: Memory>(
    m: &M,
    l: &LoaderHeapLayout,
    name: LoaderHeapName,
    at: u64,
) -> LoaderHeap {
    let heap = match m.read_u64(at) {
        Ok(h) => h,
        Err(_) => {
            return LoaderHeap {
                name,
                address: 0,
                blocks: Vec::new(),
                error: Some(ClrError::read(
                    format!("the LoaderAllocator's {} pointer", name.dac_name()),
                    at,
                )),
            }
        }
    };
    if heap == 0 {
        return LoaderHeap {
            name,
            address: 0,
            blocks: Vec::new(),
            error: None,
        };
    }
    let (blocks, error) = blocks_from(m, l, heap.wrapping_add(l.first_block), name.dac_name());
    LoaderHeap {
        name,
        address: heap,
        blocks,
        error,
    }
}

/// The block chain whose first pointer is at `first_at`: the blocks read, and why the walk
/// stopped early.
fn blocks_from<M: Memory>(
    m: &M,
    l: &LoaderHeapLayout,
    first_at: u64,
    what: &str,
) -> (Vec<HeapBlock>, Option<ClrError>) {
    let mut out = Vec::new();
    let mut b = match m.read_u64(first_at) {
        Ok(b) => b,
        Err(_) => {
            return (
                out,
                Some(ClrError::read(
                    format!("{what}: LoaderHeap::m_pFirstBlock"),
                    first_at,
                )),
            )
        }
    };
    while b != 0 {
        if out.len() >= MAX_BLOCKS {
            return (
                out,
                Some(ClrError::corrupt(
                    format!("{what}: LoaderHeapBlock chain"),
                    b,
                    format!("more than {MAX_BLOCKS} blocks (a cycle?)"),
                )),
            );
        }
        let (Ok(address), Ok(reserved), Ok(next)) = (
            m.read_u64(b.wrapping_add(l.block_address)),
            m.read_u64(b.wrapping_add(l.block_size)),
            m.read_u64(b.wrapping_add(l.block_next)),
        ) else {
            return (
                out,
                Some(ClrError::read(format!("{what}: LoaderHeapBlock"), b)),
            );
        };
        out.push(HeapBlock {
            address,
            reserved,
            committed: committed(m, address, reserved),
            current: out.is_empty(),
        });
        b = next;
    }
    (out, None)
}

/// The bytes of `[address, address + reserved)` the dump holds from its start, in whole
/// pages, up to the first page it lacks (SOS's `GetActualSize`).
pub fn committed<M: Memory + ?Sized>(m: &M, address: u64, reserved: u64) -> u64 {
    let end = address.saturating_add(reserved);
    let mut a = address;
    let mut buf = [0u8; PAGE as usize];
    while a < end {
        if m.read(a, &mut buf) != buf.len() {
            break;
        }
        match a.checked_add(PAGE) {
            Some(n) => a = n,
            None => break,
        }
    }
    a.wrapping_sub(address)
}

/// The EEJitManager's code heaps.
fn code_heaps<M: Memory>(rt: &Runtime<M>, l: &LoaderHeapLayout) -> Result<JitManagerHeaps> {
    let m = rt.memory();
    let global = match l.jit_manager_dac_index {
        Some(i) => rt.dac_global_address(i)?,
        None => rt
            .descriptor()
            .and_then(|d| d.global_number("EEJitManagerAddress"))
            .ok_or_else(|| ClrError::MissingField {
                ty: "globals",
                field: "EEJitManagerAddress",
                runtime: rt.info.display_name(),
            })?,
    };
    let jm = m
        .read_u64(global)
        .map_err(|_| ClrError::read("ExecutionManager::m_pEEJitManager", global))?;
    if jm == 0 {
        return Err(ClrError::not_found_at(
            "EEJitManager",
            global,
            "ExecutionManager::m_pEEJitManager is null",
        ));
    }
    let vtables = match l.code_heap_kind {
        CodeHeapKindSource::Vtable { loader, host } => Some((
            rt.dac_global_address(loader)?,
            host.map(|h| rt.dac_global_address(h)).transpose()?,
        )),
        CodeHeapKindSource::HeapType { .. } => None,
    };
    let mut out = JitManagerHeaps {
        address: jm,
        heaps: Vec::new(),
        errors: Vec::new(),
    };
    let at = jm.wrapping_add(l.all_code_heaps);
    let mut node = m
        .read_u64(at)
        .map_err(|_| ClrError::read("EEJitManager::m_pAllCodeHeaps", at))?;
    while node != 0 {
        if out.heaps.len() + out.errors.len() >= MAX_CODE_HEAPS {
            out.errors.push(ClrError::corrupt(
                "the code heap list",
                node,
                format!("more than {MAX_CODE_HEAPS} heaps (a cycle?)"),
            ));
            break;
        }
        let (Ok(heap), Ok(next)) = (
            m.read_u64(node.wrapping_add(l.heap_list_heap)),
            m.read_u64(node.wrapping_add(l.heap_list_next)),
        ) else {
            out.errors.push(ClrError::read("HeapList", node));
            break;
        };
        match code_heap(m, l, vtables, heap) {
            Ok(h) => out.heaps.push(h),
            Err(e) => out.errors.push(e),
        }
        node = next;
    }
    Ok(out)
}

/// One CodeHeap: its class, then its blocks.
fn code_heap<M: Memory>(
    m: &M,
    l: &LoaderHeapLayout,
    vtables: Option<(u64, Option<u64>)>,
    heap: u64,
) -> Result<CodeHeap> {
    let kind = match (l.code_heap_kind, vtables) {
        (CodeHeapKindSource::HeapType { offset }, _) => {
            match m
                .read_u8(heap.wrapping_add(offset))
                .map_err(|_| ClrError::read("CodeHeap::m_heapType", heap.wrapping_add(offset)))?
            {
                0 => CodeHeapKind::LoaderCodeHeap,
                1 => CodeHeapKind::HostCodeHeap,
                v => {
                    return Err(ClrError::corrupt(
                        "CodeHeap",
                        heap,
                        format!("heap type {v} is neither LoaderCodeHeap (0) nor HostCodeHeap (1)"),
                    ))
                }
            }
        }
        (_, Some((loader, host))) => {
            let vt = m
                .read_u64(heap)
                .map_err(|_| ClrError::read("CodeHeap vtable", heap))?;
            if vt == loader {
                CodeHeapKind::LoaderCodeHeap
            } else if Some(vt) == host {
                CodeHeapKind::HostCodeHeap
            } else {
                return Err(ClrError::corrupt(
                    "CodeHeap",
                    heap,
                    format!(
                        "vtable {vt:#x} is not LoaderCodeHeap's ({loader:#x}){}",
                        match host {
                            Some(h) => format!(" nor HostCodeHeap's ({h:#x})"),
                            None => " (HostCodeHeap's vtable is not verified on this runtime)"
                                .to_owned(),
                        }
                    ),
                ));
            }
        }
        (CodeHeapKindSource::Vtable { .. }, None) => {
            return Err(ClrError::corrupt(
                "CodeHeap",
                heap,
                "the code heap vtables were not resolved",
            ))
        }
    };
    match kind {
        CodeHeapKind::LoaderCodeHeap => {
            let (blocks, error) = blocks_from(
                m,
                l,
                heap.wrapping_add(l.code_heap_first_block),
                "LoaderCodeHeap",
            );
            Ok(CodeHeap {
                address: heap,
                kind,
                blocks,
                error,
            })
        }
        CodeHeapKind::HostCodeHeap => {
            let (base_off, cur_off) = l.host_code_heap.ok_or_else(|| {
                ClrError::corrupt(
                    "HostCodeHeap",
                    heap,
                    "its layout is not verified on this runtime",
                )
            })?;
            let base = m.read_u64(heap.wrapping_add(base_off)).map_err(|_| {
                ClrError::read("HostCodeHeap::m_pBaseAddr", heap.wrapping_add(base_off))
            })?;
            let cur = m.read_u64(heap.wrapping_add(cur_off)).map_err(|_| {
                ClrError::read(
                    "HostCodeHeap::m_pLastAvailableCommittedAddr",
                    heap.wrapping_add(cur_off),
                )
            })?;
            let reserved = cur.saturating_sub(base);
            Ok(CodeHeap {
                address: heap,
                kind,
                blocks: vec![HeapBlock {
                    address: base,
                    reserved,
                    committed: committed(m, base, reserved),
                    current: true,
                }],
                error: None,
            })
        }
    }
}
