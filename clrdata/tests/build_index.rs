//! The bundled build index at discovery (clrdata::discovery::index), over the corpus:
//!
//! - the contract descriptor rebuilt from the index's bytes alone (the runtime image's pages
//!   hidden, but for the `.bss` sub-descriptor slots only the process fills) equals the one the
//!   dump holds (gcore, Windows minidumps, .NET 11 createdump dumps) and the one read from the
//!   runtime's own file in its NuGet pack, field for field;
//! - discovery consults the index after the dump's memory and before any file: with no file,
//!   every .NET 8, 9 and 10 dump is read, and says where its layout came from; with neither
//!   the index nor files, the dumps createdump left without a descriptor are refused naming
//!   what each source lacked; with files and without the index, the layout comes from the file
//!   and the globals are the same;
//! - the index is exact: a build id one bit off finds nothing.

use clrdata::discovery::descriptor::{self, ContractDescriptor, ElfFileOverlay};
use clrdata::discovery::index::{self, IndexOverlay, ModuleKind};
use clrdata::{ClrError, DiscoverOptions, LayoutFrom, Runtime};
use dumpreader::{
    Dump, DumpInfo, Error, ImageFormat, ImageSource, Memory, ModuleIdentity, ModuleImage,
    ModuleInfo, OpenOptions, Target, ThreadInfo,
};
use std::sync::Arc;

const ALL_KINDS: &[ModuleKind] = &[
    ModuleKind::LibCoreClr,
    ModuleKind::CoreClrDll,
    ModuleKind::SingleFileHostElf,
    ModuleKind::SingleFileHostPe,
];

/// No image path, no recorded paths: nothing but the dump.
fn bare() -> OpenOptions {
    OpenOptions {
        recorded_paths: false,
        ..Default::default()
    }
}

/// A memory with one range hidden but for a few 8-byte slots.
struct Hidden<'a> {
    mem: &'a dyn Memory,
    range: (u64, u64),
    slots: Vec<u64>,
}

impl Memory for Hidden<'_> {
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        let (s, e) = self.range;
        let end = addr.saturating_add(buf.len() as u64);
        if end <= s || addr >= e {
            return self.mem.read(addr, buf);
        }
        if let Some(&slot) = self.slots.iter().find(|&&x| addr >= x && end <= x + 8) {
            let _ = slot;
            return self.mem.read(addr, buf);
        }
        if addr < s {
            // Up to the hidden range.
            let n = (s - addr) as usize;
            return self.mem.read(addr, &mut buf[..n]);
        }
        0
    }
}

/// The descriptor from the index's bytes alone: the runtime image hidden but for the
/// sub-descriptor slots the file leaves unfilled (.bss, written by the process).
fn from_index_alone(d: &Dump, m: &ModuleInfo, b: &index::Build) -> ContractDescriptor {
    let main = b.main_descriptor().expect("a descriptor");
    let slots = b
        .descriptors
        .iter()
        .flat_map(|x| {
            x.sub_descriptors
                .iter()
                .filter(|s| s.content == index::Ptr::Unfilled)
                .filter_map(|s| x.pointer_data.get(s.index as usize)?.resolve(m.base))
        })
        .collect();
    let hidden = Hidden {
        mem: d,
        range: (m.base, m.base + b.image_size),
        slots,
    };
    let overlay = IndexOverlay::new(&hidden, b, m.base);
    descriptor::read_at(&overlay, m.base + main.rva)
        .unwrap_or_else(|e| panic!("{}: from the index: {e}", m.path))
}

#[test]
fn the_index_descriptor_equals_the_dumps_and_the_files() {
    let (mut vs_dump, mut vs_file, mut subs) = (Vec::new(), Vec::new(), 0);
    for name in tests::names() {
        let e = tests::entry(&name);
        let d = Dump::open_with(&e.dump_path(), &bare()).expect("open");
        let Ok(info) = clrdata::find_runtime(&d) else {
            continue;
        };
        let m = d
            .modules()
            .iter()
            .find(|m| m.base == info.base)
            .expect("module")
            .clone();
        let Ok(b) = index::build_of(&m, ALL_KINDS) else {
            eprintln!("{name}: {} not indexed", info.display_name());
            continue;
        };
        assert_eq!(b.package_version, e.runtime_version(), "{name}");
        let Some(main) = b.main_descriptor() else {
            continue; // .NET 8
        };
        let ours = from_index_alone(&d, &m, b);
        subs += ours.sub_descriptors;
        // The dump's own, where it holds it.
        if let Ok(own) = descriptor::read_at(&d, m.base + main.rva) {
            assert_eq!(
                ours, own,
                "{name}: the index's descriptor differs from the dump's"
            );
            vs_dump.push(name.clone());
        }
        // The runtime's own file, from its NuGet pack.
        if e.framework_dirs().is_empty() || e.os() != "linux" {
            continue;
        }
        let with_files = Dump::open_with(&e.dump_path(), &e.open_options()).expect("open");
        let img = with_files.module_image(&m).expect("image");
        let (ImageSource::File(path), ImageFormat::Elf(elf)) = (&img.source, &img.format) else {
            continue; // the dump holds the image (gcore)
        };
        let overlay = ElfFileOverlay::new(&with_files, path, elf.load_bias).expect("file");
        let from_file = descriptor::read_at(&overlay, m.base + main.rva).expect("from the file");
        assert_eq!(
            ours,
            from_file,
            "{name}: the index's descriptor differs from {}'s",
            path.display()
        );
        vs_file.push(name.clone());
    }
    eprintln!(
        "equal to the dump's own on {} dumps: {vs_dump:?}\nequal to the pack file's on {} \
         dumps: {vs_file:?}\n{subs} sub-descriptors merged",
        vs_dump.len(),
        vs_file.len()
    );
    // The corpus has gcore, Windows and .NET 11 dumps holding their descriptor.
    assert!(vs_dump.len() >= 4, "{vs_dump:?}");
    if std::env::var_os("DUMPSHELL_REQUIRE_FRAMEWORKS").is_some() {
        assert!(vs_file.len() >= 15, "{vs_file:?}");
    }
}

/// Clean room: no file of any kind. Every .NET 8, 9 and 10 dump is read, its layout from the
/// dump where it holds it, else from the index; with files allowed and the index off, the same
/// globals from the pack's file; with neither, a refusal naming every source tried.
#[test]
fn discovery_takes_the_index_after_the_dump_and_before_files() {
    let (mut from_index, mut from_index_9, mut from_dump, mut vs_file, mut refused) =
        (0, 0, 0, 0, 0);
    for e in tests::all() {
        if !matches!(e.family(), 8..=10) {
            continue;
        }
        let name = &e.name;
        let d = Dump::open_with(&e.dump_path(), &bare()).expect("open");
        let rt = Runtime::discover_with_options(&d, &DiscoverOptions::clean_room())
            .unwrap_or_else(|err| panic!("{name}: clean room: {err}"));
        assert_eq!(rt.info.version, e.runtime_version(), "{name}");
        let src = rt.layout_source.clone();
        eprintln!("{name}: {src}");
        match src.from {
            LayoutFrom::BuildIndex => {
                from_index += 1;
                from_index_9 += usize::from(e.family() >= 9);
            }
            LayoutFrom::Dump => from_dump += 1,
            other => panic!("{name}: clean room, yet the layout came from {other:?}"),
        }
        // Neither the index nor files: what createdump left without a descriptor is refused.
        let none = DiscoverOptions {
            build_index: false,
            files: false,
            symbol_server: None,
            pdb_dirs: Vec::new(),
        };
        match Runtime::discover_with_options(&d, &none) {
            Ok(r) => {
                assert_eq!(
                    r.layout_source.from,
                    LayoutFrom::Dump,
                    "{name}: read without the index, from {}",
                    r.layout_source
                );
                // .NET 8: the table found by its entries is where the index's RVA puts it.
                assert_eq!(r.globals, rt.globals, "{name}");
            }
            Err(ClrError::NoLayout { tried, needed, .. }) => {
                assert_eq!(src.from, LayoutFrom::BuildIndex, "{name}");
                assert!(
                    tried.iter().all(|t| t.from == LayoutFrom::Dump),
                    "{name}: {tried:?}"
                );
                assert!(needed.contains("--image-path"), "{name}: {needed}");
                refused += 1;
            }
            Err(err) => panic!("{name}: without the index: {err}"),
        }
        // Files and no index: the pack's file gives the same layout and globals.
        if src.from == LayoutFrom::BuildIndex && !e.framework_dirs().is_empty() {
            let f = Dump::open_with(&e.dump_path(), &e.open_options()).expect("open");
            let no_index = DiscoverOptions {
                build_index: false,
                files: true,
                symbol_server: None,
                pdb_dirs: Vec::new(),
            };
            let by_file = Runtime::discover_with_options(&f, &no_index)
                .unwrap_or_else(|err| panic!("{name}: with files: {err}"));
            // .NET 8's g_dacTable may be found in the dump by its entries; 9+ from the file.
            if e.family() >= 9 {
                assert_eq!(by_file.layout_source.from, LayoutFrom::ImageFile, "{name}");
                assert_eq!(by_file.descriptor(), rt.descriptor(), "{name}");
            }
            assert_eq!(by_file.globals, rt.globals, "{name}");
            assert_eq!(by_file.layout.name, rt.layout.name, "{name}");
            vs_file += 1;
        }
    }
    eprintln!(
        "layout from the index: {from_index}, from the dump: {from_dump}; refused without \
         either: {refused}; equal to the file's: {vs_file}"
    );
    assert!(from_index >= 20, "{from_index}");
    // Without the index, .NET 8's g_dacTable is still found in the dump by its entries;
    // every .NET 9/10 dump the index served is refused.
    assert_eq!(refused, from_index_9);
}

/// A view of a dump with one module's identity changed (and, `images: false`, no module's
/// image readable: no export table).
struct Reidentified {
    inner: Arc<Dump>,
    modules: Vec<ModuleInfo>,
    images: bool,
}

impl Memory for Reidentified {
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        self.inner.read(addr, buf)
    }
}

impl Target for Reidentified {
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
        if !self.images {
            return Err(Error::Unsupported {
                what: "images hidden by the test".into(),
            });
        }
        let original = self
            .inner
            .modules()
            .iter()
            .find(|m| m.base == module.base)
            .expect("same modules");
        self.inner.module_image(original)
    }
    fn image_search_path(&self) -> Vec<std::path::PathBuf> {
        Vec::new()
    }
    fn use_recorded_paths(&self) -> bool {
        false
    }
}

/// Exact identity only: the same dump with its runtime's build id one bit off is not read from
/// the index (no nearest build), and the refusal says so.
#[test]
fn a_build_id_one_bit_off_finds_nothing() {
    let e = tests::entry("hang-net10");
    let d = Arc::new(Dump::open_with(&e.dump_path(), &bare()).expect("open"));
    assert!(Runtime::discover_with_options(d.clone(), &DiscoverOptions::clean_room()).is_ok());
    let mut modules = d.modules().to_vec();
    let m = modules
        .iter_mut()
        .find(|m| m.name() == "libcoreclr.so")
        .expect("libcoreclr.so");
    let Some(ModuleIdentity::BuildId(id)) = &mut m.identity else {
        panic!("no build id");
    };
    id[0] ^= 1;
    let view = Reidentified {
        inner: d.clone(),
        modules,
        images: true,
    };
    match Runtime::discover_with_options(&view, &DiscoverOptions::clean_room()) {
        Err(ClrError::NoLayout { tried, .. }) => {
            let idx = tried
                .iter()
                .find(|t| t.from == LayoutFrom::BuildIndex)
                .expect("the index was tried");
            assert!(idx.why.contains("is not among the"), "{}", idx.why);
        }
        Err(err) => panic!("not refused for its layout: {err}"),
        Ok(rt) => panic!("read with a build id one bit off: {}", rt.layout_source),
    }
}

/// A single-file host whose export table the dump lacks is found by its identity, when the
/// index knows it as a single-file host (and not without the index).
#[test]
fn a_single_file_host_is_found_by_its_indexed_identity() {
    let e = tests::entry("hang-net10-single-gcore");
    let d = Arc::new(Dump::open_with(&e.dump_path(), &bare()).expect("open"));
    let with_exports = clrdata::find_runtime(&*d).expect("found by its exports");
    let view = Reidentified {
        inner: d.clone(),
        modules: d.modules().to_vec(),
        images: false,
    };
    let no_index = DiscoverOptions {
        build_index: false,
        files: false,
        symbol_server: None,
        pdb_dirs: Vec::new(),
    };
    match clrdata::discovery::runtime::find_runtime_with(&view, &no_index) {
        Err(ClrError::NoRuntime { .. }) => {}
        other => panic!("found without exports nor index: {other:?}"),
    }
    let info =
        clrdata::discovery::runtime::find_runtime_with(&view, &DiscoverOptions::clean_room())
            .expect("found by the index");
    assert_eq!(info.base, with_exports.base);
    assert_eq!(
        info.host,
        clrdata::discovery::runtime::RuntimeHost::SingleFile
    );
    assert_eq!(info.version, e.runtime_version());
}

/// g_dacTable's start where its export is not known (the ThreadStore entry's index,
/// `supplement::anchors_of`) is where the index's export RVA puts it, on every .NET 9 and 10
/// dump of an indexed build.
#[test]
fn the_dac_table_anchor_index_is_the_exports() {
    use clrdata::discovery::supplement::anchors_of;
    use dumpreader::Memory as _;
    let mut checked = std::collections::BTreeMap::new();
    for e in tests::all() {
        if !matches!(e.family(), 9 | 10) {
            continue;
        }
        let d = Dump::open_with(&e.dump_path(), &bare()).expect("open");
        let rt = Runtime::discover_with_options(&d, &DiscoverOptions::clean_room())
            .unwrap_or_else(|err| panic!("{}: {err}", e.name));
        let m = d
            .modules()
            .iter()
            .find(|m| m.base == rt.info.base)
            .expect("module");
        let Ok(b) = index::build_of(m, ALL_KINDS) else {
            continue;
        };
        let export = m.base + b.export("g_dacTable").expect("g_dacTable export");
        assert_eq!(rt.globals.dac_table, export, "{}", e.name);
        let ts = rt
            .descriptor()
            .and_then(|x| x.global_number("ThreadStore"))
            .expect("ThreadStore");
        let at: Vec<u64> = (0..64u64)
            .filter(|i| {
                d.read_u64(export + 8 * i)
                    .is_ok_and(|v| v == ts || m.base.wrapping_add(v) == ts)
            })
            .collect();
        assert_eq!(
            at,
            vec![
                anchors_of(rt.layout.family)
                    .expect("a .NET 9 or 10 family")
                    .thread_store_index
            ],
            "{}: ThreadStore's entry in g_dacTable",
            e.name
        );
        *checked.entry(e.family()).or_insert(0) += 1;
    }
    eprintln!("{checked:?}");
    assert!(checked.get(&9).is_some_and(|&n| n > 0) && checked.get(&10).is_some_and(|&n| n > 0));
}
