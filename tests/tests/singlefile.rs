//! A single-file app links the runtime into its own executable, so no module is named
//! libcoreclr.so / coreclr.dll. The corpus's real single-file dumps (manifest `app.shape`
//! single-file*) must have their runtime found in the host by its exports, whatever the host is
//! called, and read like any other (equal to the DAC census where the CLR layer reads that
//! runtime). The hang dump is also opened through a view that renames the runtime module to an
//! app name: the runtime must then be found by its exports (DotNetRuntimeInfo / g_dacTable), its
//! version read from its own bytes, and the heap read exactly as before.

use clrdata::prelude::*;
use dumpreader::{DumpInfo, Error, Memory, ModuleImage, ModuleInfo, Target, ThreadInfo};
use std::sync::Arc;

struct Renamed {
    inner: Arc<dyn Target>,
    modules: Vec<ModuleInfo>,
}

impl Memory for Renamed {
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        self.inner.read(addr, buf)
    }
}

impl Target for Renamed {
    fn info(&self) -> &DumpInfo {
        self.inner.info()
    }
    fn threads(&self) -> &[ThreadInfo] {
        self.inner.threads()
    }
    fn modules(&self) -> &[ModuleInfo] {
        &self.modules
    }
    fn module_image(&self, module: &ModuleInfo) -> Result<Arc<ModuleImage>, Error> {
        // The image is the same bytes: look it up under its recorded identity.
        let original = self
            .inner
            .modules()
            .iter()
            .find(|m| m.base == module.base)
            .expect("same modules");
        self.inner.module_image(original)
    }
    fn image_search_path(&self) -> Vec<std::path::PathBuf> {
        self.inner.image_search_path()
    }
    fn use_recorded_paths(&self) -> bool {
        self.inner.use_recorded_paths()
    }
}

#[test]
fn the_runtime_is_found_in_a_module_of_any_name_by_its_exports() {
    // The exports are read from the runtime's image file (createdump leaves .dynsym's pages
    // out): a hang dump whose runtime's files this machine has.
    let Some(e) = tests::readable()
        .into_iter()
        .find(|e| e.program() == "hang" && e.os() == "linux" && e.has_framework())
    else {
        panic!("no Linux hang dump whose runtime files are here (dumps/fetch-frameworks.sh)");
    };
    let dump: Arc<dyn Target> = Arc::new(e.open());
    let mut modules = dump.modules().to_vec();
    let rt = modules
        .iter_mut()
        .find(|m| m.name() == "libcoreclr.so")
        .expect("the hang dump has libcoreclr.so");
    let dir = rt.path.rsplit_once('/').map_or("", |(d, _)| d).to_owned();
    // Also away from the shared framework's folder, so the version cannot come from the path.
    rt.path = "/srv/app/hangapp".to_owned();
    assert!(!dir.is_empty());
    let view = Arc::new(Renamed {
        inner: dump.clone(),
        modules,
    });

    let info = clrdata::find_runtime(&*view).expect("found by its exports");
    assert_eq!(info.module_name, "hangapp");
    assert_eq!(
        info.host,
        clrdata::discovery::runtime::RuntimeHost::SingleFile
    );
    assert_ne!(
        info.version_source,
        clrdata::discovery::runtime::VersionSource::ModulePath,
        "the path no longer names the version: {info:?}"
    );

    let rt = clrdata::Runtime::discover(view.clone() as Arc<dyn Target>).expect("discovered");
    // ... so it comes from the build index (the module's build id), the runtime's image file
    // (its build id matched to the dump's) or,
    // where that is absent too, from CoreLib's metadata once the .NET 8 layout's checks passed.
    assert_eq!(rt.info.version, e.runtime_version());
    assert!(
        matches!(
            rt.info.version_source,
            clrdata::discovery::runtime::VersionSource::ImageFileSccsid
                | clrdata::discovery::runtime::VersionSource::BuildIndex
                | clrdata::discovery::runtime::VersionSource::CoreLibMetadata
                | clrdata::discovery::runtime::VersionSource::Sccsid
        ),
        "{:?}",
        rt.info.version_source
    );
    let heap = rt.gc_heap().expect("heap");
    let census = heap.census(&rt);
    let total: u64 = census.types.iter().map(|t| t.count).sum();
    assert_eq!(
        total,
        e.dac["heap_stat"]["total_objects"].as_u64().unwrap(),
        "the census through the renamed runtime equals the DAC's"
    );
}

#[test]
fn real_single_file_dumps_have_their_runtime_found_in_the_host() {
    let entries: Vec<_> = tests::all()
        .into_iter()
        .filter(|e| e.shape().starts_with("single-file"))
        .collect();
    if entries.is_empty() {
        eprintln!("!!! no corpus dump has app.shape single-file*: nothing checked");
    }
    for e in entries {
        let mut dump: Arc<dyn Target> = Arc::new(e.open());
        let mut found = clrdata::find_runtime(&*dump);
        if found.is_err()
            && dump.dump_kind().map(|k| k.producer) == Some(dumpreader::DumpProducer::Createdump)
        {
            // createdump finds no libcoreclr in a single-file app and works without the DAC:
            // the host's export table is not in the dump; the host file supplies it.
            let host_dir = dump
                .bundles()
                .first()
                .and_then(|b| {
                    std::path::Path::new(&b.host_path)
                        .parent()
                        .map(|p| p.to_owned())
                })
                .filter(|d| d.is_dir());
            let Some(dir) = host_dir else {
                eprintln!(
                    "!!! {}: createdump dump of a single-file app without the host file: {}",
                    e.name,
                    found.unwrap_err()
                );
                continue;
            };
            let opts = dumpreader::OpenOptions {
                image_search_path: vec![dir],
                ..tests::open_options()
            };
            dump = Arc::new(dumpreader::Dump::open_with(&e.dump_path(), &opts).unwrap());
            found = clrdata::find_runtime(&*dump);
        }
        let info = found.unwrap_or_else(|err| panic!("{}: runtime not found: {err}", e.name));
        assert_eq!(
            info.host,
            clrdata::discovery::runtime::RuntimeHost::SingleFile,
            "{}",
            e.name
        );
        assert_eq!(
            info.module_name,
            e.program(),
            "{}: the host executable",
            e.name
        );
        let host = dump
            .bundles()
            .first()
            .map(|b| b.host_base)
            .unwrap_or_else(|| panic!("{}: no bundle marker found", e.name));
        assert_eq!(
            info.base, host,
            "{}: the runtime is the bundle's host",
            e.name
        );
        if !info.version.is_empty() {
            assert_eq!(info.version, e.runtime_version(), "{}", e.name);
        }
        if !tests::reads_clr(&e) {
            continue;
        }
        let rt = clrdata::Runtime::discover(dump.clone())
            .unwrap_or_else(|err| panic!("{}: {err}", e.name));
        assert_eq!(rt.info.version, e.runtime_version(), "{}", e.name);
        let heap = rt
            .gc_heap()
            .unwrap_or_else(|err| panic!("{}: {err}", e.name));
        let total: u64 = heap.census(&rt).types.iter().map(|t| t.count).sum();
        assert_eq!(
            total,
            e.dac["heap_stat"]["total_objects"].as_u64().unwrap(),
            "{}: the census equals the DAC's",
            e.name
        );
    }
}
