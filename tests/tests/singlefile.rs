//! A single-file app links the runtime into its own executable, so no module is named
//! libcoreclr.so / coreclr.dll. No single-file host is available on this machine to make such
//! a dump (it ships with the SDK's runtime packs), so the hang dump is opened through a view
//! that renames the runtime module to an app name: the runtime must then be found by its
//! exports (DotNetRuntimeInfo / g_dacTable), its version read from its own bytes, and the heap
//! read exactly as before (equal to the DAC census).

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
    let e = tests::entry("hang");
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
    assert_eq!(info.host, clrdata::runtime::RuntimeHost::SingleFile);
    assert_eq!(
        info.version, "",
        "neither the path nor the dumped image tells the version: {info:?}"
    );

    let rt = clrdata::Runtime::discover(view.clone() as Arc<dyn Target>).expect("discovered");
    // ... so it comes from CoreLib's metadata once the .NET 8 layout's checks passed.
    assert_eq!(rt.info.version, e.runtime_version());
    assert_eq!(
        rt.info.version_source,
        clrdata::runtime::VersionSource::CoreLibMetadata
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
