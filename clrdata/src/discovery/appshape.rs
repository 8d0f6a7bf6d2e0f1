//! What `info` says of a dump beyond its headers: who wrote it and what memory it holds (the
//! dump's kind, and whether the runtime's own data pages are in it), and how the app was
//! published (single-file, framework-dependent, self-contained), from the runtime module
//! found and the single-file bundles the dump reader saw.

use crate::discovery::runtime::{RuntimeHost, RuntimeInfo};
use dumpreader::Target;
use serde::Serialize;

/// Who wrote the dump and what memory it holds.
#[derive(Debug, Clone, Serialize)]
pub struct DumpKindInfo {
    /// "createdump", "gcore", "kernel", "minidump".
    pub producer: &'static str,
    /// One line for people.
    pub description: String,
    pub evidence: Vec<String>,
    pub full_memory: bool,
    /// ELF: bytes of mapped files in the process, and how many the dump holds.
    pub file_bytes_mapped: u64,
    pub file_bytes_present: u64,
    /// Minidump: the MINIDUMP_TYPE flags recorded in the header, by name.
    pub minidump_type: Option<String>,
    pub minidump_type_flags: Vec<&'static str>,
    pub streams: Vec<String>,
    /// Whether the runtime module's writable data is in the dump (None: no runtime found).
    pub runtime_data_present: Option<bool>,
}

/// How the app was published: single-file, framework-dependent, self-contained.
#[derive(Debug, Clone, Serialize)]
pub struct AppShape {
    /// "single-file", "single-file-compressed", "single-file-self-extract",
    /// "framework-dependent", "self-contained", or "none" (no .NET runtime found).
    pub shape: &'static str,
    pub description: String,
    /// The single-file host's path.
    pub host: Option<String>,
    /// The runtime module's path.
    pub runtime_module: Option<String>,
    pub runtime_version: Option<String>,
    /// The folder the runtime was loaded from (framework-dependent: the shared framework's).
    pub runtime_dir: Option<String>,
    pub bundle: Option<BundleInfo>,
}

/// A single-file host's bundle.
#[derive(Debug, Clone, Serialize)]
pub struct BundleInfo {
    pub header_offset: u64,
    pub version: Option<String>,
    pub bundle_id: Option<String>,
    pub files: Option<usize>,
    pub compressed_files: Option<usize>,
    pub mapped_files: usize,
    pub manifest_source: String,
    /// Why the manifest could not be read, if so.
    pub manifest_error: Option<String>,
    /// How many bundled files createdump named (it had the DAC).
    pub named_by_createdump: usize,
}

fn dir_of(path: &str) -> &str {
    match path.rfind(['/', '\\']) {
        Some(i) => &path[..i],
        None => "",
    }
}

/// Whether the runtime module's writable PT_LOAD pages are in the dump (ELF only).
fn runtime_data_present(target: &dyn Target, rt: &RuntimeInfo) -> Option<bool> {
    let m = target.modules().iter().find(|m| m.base == rt.base)?;
    let img = target.module_image(m).ok()?;
    let dumpreader::ImageFormat::Elf(e) = &img.format else {
        return None;
    };
    let (mut pages, mut present) = (0u64, 0u64);
    for p in e
        .program_headers
        .iter()
        .filter(|p| p.p_type == 1 && p.p_flags & 2 != 0)
    {
        let start = e.load_bias.wrapping_add(p.p_vaddr) & !0xfff;
        // The initialised data (p_filesz: .data, .got): createdump leaves it out without the
        // DAC; the zero-initialised rest is anonymous memory, dumped with the heap.
        let end = e
            .load_bias
            .wrapping_add(p.p_vaddr)
            .saturating_add(p.p_filesz);
        let mut a = start;
        while a < end && pages < 1 << 16 {
            pages += 1;
            let mut b = [0u8; 1];
            if target.read(a.max(e.load_bias.wrapping_add(p.p_vaddr)), &mut b) == 1 {
                present += 1;
            }
            a += 0x1000;
        }
    }
    // With the DAC, createdump writes the globals the DAC names (some pages); without it,
    // none.
    (pages > 0).then_some(present > 0)
}

/// The dump's kind (None when the reader does not know it), with whether the runtime `rt`'s
/// initialised data pages are in it.
pub fn dump_kind(target: &dyn Target, rt: Option<&RuntimeInfo>) -> Option<DumpKindInfo> {
    let k = target.dump_kind()?;
    let data = rt.and_then(|rt| runtime_data_present(target, rt));
    let pct = |a: u64, b: u64| {
        if b == 0 {
            0.0
        } else {
            a as f64 * 100.0 / b as f64
        }
    };
    let mut description = match k.producer {
        dumpreader::DumpProducer::Createdump if k.full_memory => {
            "createdump, every page of the mapped files too (--full; or a .NET Core 3.x \
             createdump, whose dumps hold them all)"
                .to_string()
        }
        dumpreader::DumpProducer::Createdump => format!(
            "createdump (--withheap, --normal or --triage: memory it chose; {:.0}% of the mapped \
             files' pages)",
            pct(k.file_bytes_present, k.file_bytes_mapped)
        ),
        dumpreader::DumpProducer::Gcore => format!(
            "gdb gcore: every written page, no DAC-curated memory; unmodified file pages left \
             out ({:.0}% of the mapped files' pages held)",
            pct(k.file_bytes_present, k.file_bytes_mapped)
        ),
        dumpreader::DumpProducer::Kernel => format!(
            "kernel core (core_pattern / systemd-coredump): pages chosen by coredump_filter \
             ({:.0}% of the mapped files' pages held)",
            pct(k.file_bytes_present, k.file_bytes_mapped)
        ),
        dumpreader::DumpProducer::Minidump => {
            let names = k.minidump_type_names();
            let what = if k.full_memory {
                "full memory"
            } else if names.contains(&"WithPrivateReadWriteMemory") {
                "with heap (private read/write memory)"
            } else if names.contains(&"FilterTriage") {
                "triage"
            } else {
                "mini (no heap)"
            };
            format!(
                "Windows minidump, {what}: MINIDUMP_TYPE {}",
                names.join("|")
            )
        }
    };
    let single_file_host =
        rt.is_some_and(|r| r.host == RuntimeHost::SingleFile) || !target.bundles().is_empty();
    // createdump names the bundled assemblies' mappings only when it has the DAC.
    let named_by_createdump: usize = target
        .bundles()
        .iter()
        .map(|b| b.recorded_names.len())
        .sum();
    if data == Some(false) {
        description.push_str(
            "; none of the runtime's initialised data pages is in the dump: CLR commands \
             cannot read the runtime's state",
        );
    } else if k.producer == dumpreader::DumpProducer::Createdump && named_by_createdump > 0 {
        // A single-file app's runtime writes its dump itself (diagnostics IPC, or a crash)
        // and, with the DAC beside the app, as the DAC directs.
        description.push_str(&format!(
            "; createdump had the DAC (it named {named_by_createdump} of the bundled \
             assemblies' mappings by the DAC's names): the memory the DAC reads is in it"
        ));
    } else if k.producer == dumpreader::DumpProducer::Createdump && single_file_host {
        // Seen with the createdump of .NET 8.0.33 and 10.0.12: "InitializeDAC: coreclr not
        // found; not using DAC".
        description.push_str(
            "; createdump finds no libcoreclr in a single-file app and works without the DAC: \
             the runtime's globals are missing unless the heap holds them (gcore has them all)",
        );
    }
    Some(DumpKindInfo {
        producer: k.producer.name(),
        description,
        evidence: k.evidence.clone(),
        full_memory: k.full_memory,
        file_bytes_mapped: k.file_bytes_mapped,
        file_bytes_present: k.file_bytes_present,
        minidump_type: k.minidump_type.map(|t| format!("{t:#x}")),
        minidump_type_flags: k.minidump_type_names(),
        streams: k.streams.clone(),
        runtime_data_present: data,
    })
}

/// The app's shape, from the runtime module `rt` (of `version`) and the dump's single-file
/// bundles.
pub fn app_shape(
    target: &dyn Target,
    rt: Option<&RuntimeInfo>,
    version: Option<String>,
) -> AppShape {
    let bundle = target.bundles().first();
    let ver_text = version
        .clone()
        .unwrap_or_else(|| "of unknown version".into());
    if let Some(hb) = bundle {
        let man = hb.manifest.as_ref().ok();
        let compressed = man.map(|m| m.entries.iter().filter(|e| e.is_compressed()).count());
        let host_name = hb
            .host_path
            .rsplit(['/', '\\'])
            .next()
            .unwrap_or(&hb.host_path);
        let inside = match rt {
            Some(r) if r.base == hb.host_base => format!(".NET {ver_text} inside"),
            Some(r) => format!("the runtime from {}", r.module_path),
            None => "no .NET runtime found in it".to_string(),
        };
        // A self-extracting bundle (IncludeAllContentForSelfExtract): the host extracted its
        // files to a folder and the runtime maps the assemblies from there, CoreLib first. A
        // CoreLib mapped out of the host file (named by the manifest or by createdump) is not
        // extracted.
        let extracted_to = target
            .modules()
            .iter()
            .find(|m| {
                m.name().eq_ignore_ascii_case("System.Private.CoreLib.dll")
                    && m.path != hb.host_path
                    && m.path.contains(['/', '\\'])
                    && !m.mappings.iter().any(|x| x.path == hb.host_path)
            })
            .map(|m| dir_of(&m.path).to_string());
        // Without the manifest: a compressed bundle maps none of its files from the host.
        let is_compressed = match compressed {
            Some(c) => c > 0,
            None => hb.bundle_mappings == 0,
        };
        let shape = if extracted_to.is_some() {
            "single-file-self-extract"
        } else if is_compressed {
            "single-file-compressed"
        } else {
            "single-file"
        };
        let mut description = format!("single-file host {host_name} with {inside}");
        if let Some(dir) = &extracted_to {
            description.push_str(&format!(
                "; self-extracting: its files were extracted to {dir} and are mapped from there"
            ));
        }
        match man {
            Some(m) => description.push_str(&format!(
                "; bundle of {} files ({} compressed), {} mapped",
                m.entries.len(),
                compressed.unwrap_or(0),
                hb.placements.len()
            )),
            None if extracted_to.is_some() => {}
            None if is_compressed => description.push_str(
                "; compressed bundle (none of its files is mapped from the host; manifest not \
                 readable: give the host file with --image-path)",
            ),
            None => description.push_str(&format!(
                "; {} mappings of bundled files{} (manifest not readable: give the host file \
                 with --image-path)",
                hb.bundle_mappings,
                match hb.recorded_names.len() {
                    0 => String::new(),
                    n => format!(", {n} of its files named by createdump"),
                }
            )),
        }
        return AppShape {
            shape,
            description,
            host: Some(hb.host_path.clone()),
            runtime_module: rt.map(|r| r.module_path.clone()),
            runtime_version: version,
            runtime_dir: rt.map(|r| dir_of(&r.module_path).to_string()),
            bundle: Some(BundleInfo {
                header_offset: hb.header_offset,
                version: man.map(|m| format!("{}.{}", m.major_version, m.minor_version)),
                bundle_id: man.map(|m| m.bundle_id.clone()),
                files: man.map(|m| m.entries.len()),
                compressed_files: compressed,
                mapped_files: hb.placements.len(),
                manifest_source: hb.manifest_source.clone(),
                manifest_error: hb.manifest.as_ref().err().map(|e| e.to_string()),
                named_by_createdump: hb.recorded_names.len(),
            }),
        };
    }
    let Some(r) = rt else {
        return AppShape {
            shape: "none",
            description: "no .NET runtime found".into(),
            host: None,
            runtime_module: None,
            runtime_version: None,
            runtime_dir: None,
            bundle: None,
        };
    };
    let dir = dir_of(&r.module_path).to_string();
    let norm = dir.replace('\\', "/").to_ascii_lowercase();
    let (shape, description) = if norm.contains("/shared/microsoft.netcore.app/") {
        (
            "framework-dependent",
            format!("framework-dependent, .NET {ver_text} from the shared framework at {dir}"),
        )
    } else if r.host == RuntimeHost::SingleFile {
        (
            "single-file",
            format!(
                "single-file host {} with .NET {ver_text} inside (no bundle marker found)",
                r.module_name
            ),
        )
    } else {
        (
            "self-contained",
            format!("self-contained, .NET {ver_text} next to the app in {dir}"),
        )
    };
    AppShape {
        shape,
        description,
        host: None,
        runtime_module: Some(r.module_path.clone()),
        runtime_version: version,
        runtime_dir: Some(dir),
        bundle: None,
    }
}
