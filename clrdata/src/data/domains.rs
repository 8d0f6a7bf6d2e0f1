//! The domains as SOS's `dumpdomain` shows them (the DAC's `GetAppDomainStoreData`,
//! `GetAppDomainData` and `GetAppDomainName`): the SystemDomain and the one AppDomain, each
//! with the loader heaps of the global LoaderAllocator (`BaseDomain::GetLoaderAllocator` is
//! `SystemDomain::GetGlobalLoaderAllocator` for both), its stage and its friendly name. The
//! AppDomain's assemblies are [`Runtime::loaded_images`]'.

use crate::discovery::runtime::Runtime;
use crate::error::{ClrError, Result};
use dumpreader::Memory;
use serde::Serialize;

/// A domain's stage as the DAC reports it (`DacpAppDomainDataStage`): always `OPEN` on
/// CoreCLR. The SystemDomain's is the DAC's constant `STAGE_OPEN`; the AppDomain's is
/// `m_Stage`, which `AppDomain::Create` sets to `STAGE_OPEN` before it publishes the domain in
/// `m_pTheAppDomain`, and which nothing changes later (CoreCLR never unloads it; the cDAC
/// reports the constant), so a published AppDomain is open.
pub const STAGE_OPEN: &str = "OPEN";

/// One domain's records.
#[derive(Debug, Clone, Serialize)]
pub struct DomainData {
    /// The domain's address as the DAC reports it (0: the .NET 11 DAC's SystemDomain).
    #[serde(serialize_with = "dumpreader::json::hex")]
    pub address: u64,
    /// The global LoaderAllocator's LowFrequencyHeap.
    #[serde(serialize_with = "dumpreader::json::hex")]
    pub low_frequency_heap: u64,
    /// Its HighFrequencyHeap.
    #[serde(serialize_with = "dumpreader::json::hex")]
    pub high_frequency_heap: u64,
    /// Its StubHeap (0 where the runtime has none: .NET 11).
    #[serde(serialize_with = "dumpreader::json::hex")]
    pub stub_heap: u64,
    /// [`STAGE_OPEN`].
    pub stage: &'static str,
    /// The friendly name (`""` for the SystemDomain, which has none).
    pub name: String,
}

/// The domains: the SystemDomain as the DAC reports it (`None` on .NET 11, whose DAC reports
/// none) and the AppDomain.
#[derive(Debug, Clone, Serialize)]
pub struct Domains {
    pub system: Option<DomainData>,
    pub app_domain: DomainData,
}

/// Reads the domains (what `dumpdomain` shows).
pub trait ReadDomains {
    /// The domains' records. Errors: [`ClrError::Unsupported`] where the layout does not know
    /// them (not verified), a read error naming the field that does not read.
    fn domains(&self) -> Result<Domains>;
}

impl<M: Memory> ReadDomains for Runtime<M> {
    fn domains(&self) -> Result<Domains> {
        let l = self.layout.domains.ok_or_else(|| {
            ClrError::unsupported(
                "the domains' records",
                None,
                format!("not known for {} (not verified)", self.layout.name),
            )
        })?;
        let app = self.app_domain()?;
        let sd = self.globals.system_domain;
        if sd == 0 {
            return Err(ClrError::read("SystemDomain::m_pSystemDomain", 0));
        }
        let m = self.memory();
        let r64 = |a: u64, what: &str| m.read_u64(a).map_err(|_| ClrError::read(what, a));
        let la = sd + l.global_loader_allocator;
        let low = r64(
            la + l.low_frequency_heap,
            "LoaderAllocator::m_pLowFrequencyHeap",
        )?;
        let high = r64(
            la + l.high_frequency_heap,
            "LoaderAllocator::m_pHighFrequencyHeap",
        )?;
        let stub = match l.stub_heap {
            Some(off) => r64(la + off, "LoaderAllocator::m_pStubHeap")?,
            None => 0,
        };
        let name_at = r64(app + l.friendly_name, "AppDomain::m_friendlyName")?;
        let name = if name_at == 0 {
            String::new()
        } else {
            read_utf16z(m, name_at, 1024)
                .ok_or_else(|| ClrError::read("AppDomain::m_friendlyName's text", name_at))?
        };
        let data = |address: u64, name: String| DomainData {
            address,
            low_frequency_heap: low,
            high_frequency_heap: high,
            stub_heap: stub,
            stage: STAGE_OPEN,
            name,
        };
        Ok(Domains {
            system: l.system_domain_is_domain.then(|| data(sd, String::new())),
            app_domain: data(app, name),
        })
    }
}

/// A NUL-terminated UTF-16 string of at most `max` units; `None` when its first unit does not
/// read, or no NUL ends it within `max`.
fn read_utf16z<M: Memory>(m: &M, addr: u64, max: usize) -> Option<String> {
    let mut units = Vec::new();
    for i in 0..max as u64 {
        let u = m.read_u16(addr + 2 * i).ok()?;
        if u == 0 {
            return Some(String::from_utf16_lossy(&units));
        }
        units.push(u);
    }
    None
}
