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
    let (mut from_index, mut refused_expected, mut from_dump, mut vs_file, mut refused) =
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
        // A single-file host whose export table the dump lacks is found by the index alone.
        let single_file = rt.info.host == clrdata::discovery::runtime::RuntimeHost::SingleFile;
        match src.from {
            LayoutFrom::BuildIndex => {
                from_index += 1;
                refused_expected += usize::from(e.family() >= 9 || single_file);
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
            // Without the index nothing names a single-file host whose exports the dump lacks.
            Err(ClrError::NoRuntime { .. }) if single_file => {
                assert_eq!(src.from, LayoutFrom::BuildIndex, "{name}");
                refused += 1;
            }
            Err(err) => panic!("{name}: without the index: {err}"),
        }
        // Files and no index: the pack's file gives the same layout and globals (not a
        // single-file app's: its runtime is its own executable, on no machine but the one
        // that made the dump).
        if src.from == LayoutFrom::BuildIndex && !e.framework_dirs().is_empty() && !single_file {
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
    // Without the index, .NET 8's g_dacTable is still found in the dump by its entries (but
    // for a single-file host, not found at all); every .NET 9/10 dump the index served is
    // refused.
    assert_eq!(refused, refused_expected);
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

/// The .NET 9 g_dacTable map (`supplement::DAC_TABLE_GLOBALS_NET9_UNIX`), through which a .NET 9
/// single-file host, which publishes no contract descriptor, is read with its release's
/// libcoreclr.so descriptor: on every .NET 9 dump of libcoreclr.so, each indirect global of the
/// descriptor (pointer_data, as the index holds it) is the address the process filled into the
/// table at the map's entry (plus the map's offset), the map covers every one of them, and the
/// table has the map's length. Over the index: every 9.x libcoreclr.so descriptor has the same
/// indirect globals, every 9.x table the map's length, and every 9.x Linux single-file host
/// names a libcoreclr.so of its own build (but 9.0.16, whose runtime pack NuGet does not
/// serve).
#[test]
fn the_net9_dac_table_map_is_the_descriptors() {
    use clrdata::discovery::supplement::{anchors_of, DAC_TABLE_GLOBALS_NET9_UNIX as MAP};
    let indirect = |d: &index::Build| -> Vec<String> {
        let main = d.main_descriptor().expect("a descriptor");
        let n = main.pointer_data.len() as u64;
        let own: Vec<u64> = (0..n).collect();
        let p = descriptor::parse(main.json_text().as_bytes(), &own).unwrap();
        p.globals
            .iter()
            .filter(|(_, g)| g.indirect)
            .map(|(k, _)| k.clone())
            .collect()
    };
    let table_size = |b: &index::Build| {
        b.exports
            .iter()
            .find(|x| x.name == "g_dacTable")
            .map(|x| x.size)
    };
    let mut mapped: Vec<&str> = MAP.globals.iter().map(|g| g.global).collect();
    mapped.sort();
    assert_eq!(
        MAP.globals
            .iter()
            .find(|g| g.global == "ThreadStore")
            .map(|g| g.index),
        Some(anchors_of(MAP.family).unwrap().thread_store_index)
    );
    let idx = buildindex::index().unwrap();
    let (mut runtimes, mut hosts) = (0, 0);
    for b in idx.builds() {
        if !b.package_version.starts_with("9.") {
            continue;
        }
        match b.kind {
            ModuleKind::LibCoreClr => {
                assert_eq!(indirect(b), mapped, "{}", index::describe(b));
                assert_eq!(
                    table_size(b),
                    Some(8 * MAP.entries),
                    "{}",
                    index::describe(b)
                );
                runtimes += 1;
            }
            ModuleKind::SingleFileHostElf => {
                assert!(b.main_descriptor().is_none(), "{}", index::describe(b));
                assert_eq!(
                    table_size(b),
                    Some(8 * MAP.entries),
                    "{}",
                    index::describe(b)
                );
                let ri = b.runtime_info.as_ref().expect("DotNetRuntimeInfo");
                match buildindex::lookup(buildindex::Identity::ElfBuildId(&ri.runtime_module_index))
                    .unwrap()
                {
                    Some(rb) => {
                        assert_eq!(rb.kind, ModuleKind::LibCoreClr);
                        assert_eq!((&rb.file_version, &rb.commit), (&b.file_version, &b.commit));
                    }
                    None => assert_eq!(b.package_version, "9.0.16", "{}", index::describe(b)),
                }
                hosts += 1;
            }
            _ => {}
        }
    }
    assert!(
        runtimes >= 6 && hosts >= 7,
        "{runtimes} runtimes, {hosts} hosts"
    );
    // Against the tables the processes filled.
    let mut checked = 0;
    for e in tests::all() {
        if e.family() != 9 || e.os() != "linux" {
            continue;
        }
        let d = Dump::open_with(&e.dump_path(), &bare()).expect("open");
        let Some((m, b)) = d.modules().iter().find_map(|m| {
            index::build_of(m, &[ModuleKind::LibCoreClr])
                .ok()
                .map(|b| (m, b))
        }) else {
            continue; // a single-file app: checked through its truths
        };
        let main = b.main_descriptor().unwrap();
        let pd = main.pointer_data_at(m.base);
        let by_index = descriptor::parse(
            main.json_text().as_bytes(),
            &(0..pd.len() as u64).collect::<Vec<_>>(),
        )
        .unwrap();
        let table = m.base + b.export("g_dacTable").unwrap();
        for g in MAP.globals {
            let k = by_index.global_number(g.global).unwrap() as usize;
            let want = pd[k].expect("an RVA");
            let v = d
                .read_u64(table + 8 * g.index)
                .unwrap_or_else(|_| panic!("{}: g_dacTable[{}] not in the dump", e.name, g.index));
            let at = if v >= m.base { v } else { m.base + v };
            assert_eq!(
                at + g.offset,
                want,
                "{}: {} ({}) at g_dacTable[{}]",
                e.name,
                g.global,
                g.dac_var,
                g.index
            );
        }
        checked += 1;
    }
    eprintln!("the .NET 9 map: {runtimes} runtimes, {hosts} hosts indexed; {checked} dumps");
    assert!(checked >= 5, "only {checked} .NET 9 dumps of libcoreclr.so");
}

/// The single-file apps of 8 and 9 dumped by the pack's createdump run by hand (no DAC beside
/// the app: `-nodac`, in `tests::pending()`, read in part) lack the host's data page holding
/// `AppDomain::m_pTheAppDomain`: their runtime is found through the index (9: its release's
/// descriptor through the host's g_dacTable, which the dump holds) and read without the
/// AppDomain, which is refused naming the global, its address inside the host, and why
/// (createdump wrote without the DAC); `degraded` says the same once.
#[test]
fn single_file_dumps_made_without_the_dac_are_read_without_their_app_domain_saying_why() {
    for name in ["hang-net8-single-nodac", "hang-net9-single-nodac"] {
        let e = tests::entry(name);
        let d = Dump::open_with(&e.dump_path(), &bare()).expect("open");
        let host = d.bundles().first().expect("a single-file host").host_base;
        let end = d
            .modules()
            .iter()
            .find(|m| m.base == host)
            .expect("the host")
            .end;
        let rt = Runtime::discover_with_options(&d, &DiscoverOptions::clean_room())
            .unwrap_or_else(|err| panic!("{name}: {err}"));
        assert_eq!(rt.info.version, e.runtime_version(), "{name}");
        match rt.app_domain() {
            Err(ClrError::While { context, error }) => {
                assert!(
                    context.contains("without the runtime's DAC"),
                    "{name}: {context}"
                );
                match *error {
                    ClrError::Read { addr, what } => {
                        assert!(what.contains("AppDomain"), "{name}: {what}");
                        assert!((host..end).contains(&addr), "{name}: {addr:#x}");
                        assert!(
                            d.read_u64(addr).is_err(),
                            "{name}: {addr:#x} is in the dump"
                        );
                        let said = rt.degraded().expect("degraded");
                        assert!(said.contains(&format!("{addr:#x}")), "{name}: {said}");
                    }
                    other => panic!("{name}: {other}"),
                }
            }
            Err(other) => panic!("{name}: refused otherwise: {other}"),
            Ok(a) => panic!("{name}: AppDomain read: {a:#x}"),
        }
    }
}
