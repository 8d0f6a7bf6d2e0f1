//! Tests over the embedded data itself (the corpus dumps are checked in tests/dumps.rs).

use super::*;

fn idx() -> &'static Index {
    match index() {
        Ok(i) => i,
        Err(e) => panic!("the embedded index does not decode: {e}"),
    }
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Decoding then encoding gives back the generator's bytes: every field of every entry
/// round-trips, and nothing is left over.
#[test]
fn every_entry_round_trips() {
    let raw = zstd::decode_all(DATA).expect("zstd");
    let i = Index::decode(&raw).expect("decode");
    assert_eq!(
        i.encode(),
        raw,
        "encode(decode(data)) differs from the data"
    );
    assert_eq!(&i, idx());
    // And through a second decode, the builds are equal field by field.
    let again = Index::decode(&i.encode()).expect("decode the re-encoded data");
    assert_eq!(again.builds(), i.builds());
}

/// The data agrees with builds.tsv, the generator's other, textual, output of the same read.
#[test]
fn data_agrees_with_the_tsv() {
    let tsv = include_str!("../data/builds.tsv");
    let mut lines = 0;
    for line in tsv.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 12, "{line}");
        let id_bytes;
        let id = if f[1].contains('/') {
            let (t, s) = f[1].split_once('/').unwrap();
            Identity::Pe {
                timestamp: u32::from_str_radix(t, 16).unwrap(),
                size_of_image: u32::from_str_radix(s, 16).unwrap(),
            }
        } else {
            id_bytes = hex(f[1]);
            Identity::ElfBuildId(&id_bytes)
        };
        let b = idx()
            .lookup(id)
            .unwrap_or_else(|| panic!("{id} of the tsv is not in the data"));
        assert_eq!(b.kind.file_name(), f[0]);
        assert_eq!(b.file_name, f[0]);
        assert_eq!(b.package, f[2]);
        assert_eq!(b.package_version, f[3]);
        assert_eq!(b.path, f[4]);
        assert_eq!(b.file_version, f[5]);
        assert_eq!(b.commit, f[6]);
        assert_eq!(b.file_size.to_string(), f[7]);
        assert_eq!(b.image_size.to_string(), f[8]);
        assert_eq!(to_hex(&b.sha256), f[9]);
        let exports: Vec<String> = b
            .exports
            .iter()
            .map(|e| format!("{}={:x}", e.name, e.rva))
            .collect();
        assert_eq!(exports.join(","), f[10]);
        let descs: Vec<String> = b
            .descriptors
            .iter()
            .map(|d| {
                let role = match d.role {
                    DescriptorRole::Main => "main",
                    DescriptorRole::Sub => "sub",
                    DescriptorRole::InImage => "image",
                };
                format!(
                    "{role}:{:x}:{}:{}",
                    d.rva,
                    d.descriptor_size,
                    d.pointer_data.len()
                )
            })
            .collect();
        assert_eq!(descs.join(","), f[11]);
        lines += 1;
    }
    assert_eq!(
        lines,
        idx().builds().len(),
        "builds in the data but not in the tsv"
    );
}

/// The packs of gen/packs.txt are all there, each module once.
#[test]
fn the_index_covers_the_packs() {
    let packs = include_str!("../gen/packs.txt");
    let mut want = 0;
    for line in packs.lines().map(|l| l.split('#').next().unwrap_or("")) {
        let mut words = line.split_whitespace();
        let Some(pkg) = words.next() else { continue };
        for v in words {
            let n = idx()
                .builds()
                .iter()
                .filter(|b| b.package == pkg && b.package_version == v)
                .count();
            assert_eq!(n, 1, "{pkg} {v}: {n} modules");
            want += 1;
        }
    }
    assert_eq!(want, idx().builds().len());
    assert_eq!(want, 62, "gen/packs.txt lists 62 packs");
}

/// What every build must hold, and the shape of each descriptor: the export is the main
/// descriptor's header; the JSON parses; every indirect global's index is inside pointer_data
/// and names a relocated address inside the image; the sub-descriptors are the JSON's.
#[test]
fn every_build_is_consistent() {
    for b in idx().builds() {
        let what = format!("{} {} {}", b.package, b.package_version, b.file_name);
        let major: u32 = b
            .package_version
            .split('.')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(b.export("g_dacTable").is_some(), "{what}: no g_dacTable");
        assert_eq!(b.commit.len(), 40, "{what}");
        assert!(b.version_text.contains(&b.commit), "{what}");
        assert!(!b.version_text_rvas.is_empty(), "{what}");
        assert!(b.file_version.starts_with(&format!("{major}.")), "{what}");
        assert_eq!(b.kind.is_elf(), b.build_id_rva.is_some(), "{what}");
        assert_eq!(
            b.kind.is_single_file_host(),
            b.runtime_info.is_some(),
            "{what}"
        );
        for e in &b.exports {
            assert!(e.rva < b.image_size, "{what}: {} at {:#x}", e.name, e.rva);
        }
        let main = b.export("DotNetRuntimeContractDescriptor");
        // .NET 9's Linux single-file host has no descriptor at all (no export, no header in
        // the image); its Windows one has.
        let nine_elf_host = major == 9 && b.kind == ModuleKind::SingleFileHostElf;
        assert_eq!(
            main.is_some(),
            major >= 9 && !nine_elf_host,
            "{what}: descriptor export"
        );
        assert_eq!(main, b.main_descriptor().map(|d| d.rva), "{what}");
        if main.is_some() {
            assert_eq!(b.descriptors[0].role, DescriptorRole::Main, "{what}");
        } else {
            assert!(b.descriptors.is_empty(), "{what}");
        }
        for d in &b.descriptors {
            let w = format!("{what}: descriptor at {:#x}", d.rva);
            assert_eq!(d.flags, 1, "{w}: flags (64-bit, little-endian)");
            assert!(matches!(d.json_ptr, Ptr::Rva(r) if r < b.image_size), "{w}");
            assert!(
                matches!(d.pointer_data_ptr, Ptr::Rva(r) if r < b.image_size),
                "{w}"
            );
            // descriptor_size counts the text without the NUL the image has after it.
            assert!(!d.json.contains('\0'), "{w}: a NUL inside the JSON");
            let j: serde_json::Value =
                serde_json::from_str(d.json_text()).unwrap_or_else(|e| panic!("{w}: JSON: {e}"));
            for key in ["version", "baseline", "types", "globals", "contracts"] {
                assert!(j.get(key).is_some(), "{w}: no {key}");
            }
            let globals = j["globals"].as_object().unwrap();
            let mut indirect = 0;
            for (name, v) in globals {
                // [[idx], "type"] or [idx]: an indirect global.
                let inner = match v {
                    serde_json::Value::Array(a) if a.len() == 2 && a[1].is_string() => &a[0],
                    v => v,
                };
                if let serde_json::Value::Array(a) = inner {
                    let i = a[0].as_u64().unwrap_or_else(|| panic!("{w}: {name}: {v}")) as usize;
                    let p = d
                        .pointer_data
                        .get(i)
                        .unwrap_or_else(|| panic!("{w}: {name}[{i}]"));
                    assert!(
                        matches!(*p, Ptr::Rva(r) if r < b.image_size),
                        "{w}: global {name} = pointer_data[{i}] = {p:?}"
                    );
                    indirect += 1;
                }
            }
            assert!(indirect > 0, "{w}: no indirect global");
            let subs: Vec<&str> = j
                .get("subDescriptors")
                .and_then(|s| s.as_object())
                .map(|o| o.keys().map(|k| k.as_str()).collect())
                .unwrap_or_default();
            let ours: Vec<&str> = d.sub_descriptors.iter().map(|s| s.name.as_str()).collect();
            assert_eq!(subs, ours, "{w}: sub-descriptors");
            for s in &d.sub_descriptors {
                assert!(
                    matches!(d.pointer_data[s.index as usize], Ptr::Rva(_)),
                    "{w}: {} slot",
                    s.name
                );
            }
        }
    }
}

/// A single-file host's DotNetRuntimeInfo names the runtime module it was built with: the
/// libcoreclr.so (build id) or coreclr.dll (TimeDateStamp, SizeOfImage) of the same version's
/// runtime pack. Two files Microsoft's build wrote, read separately by the generator, agree.
#[test]
fn single_file_hosts_name_their_runtime_pack_build() {
    let mut checked = 0;
    for h in idx()
        .builds()
        .iter()
        .filter(|b| b.kind.is_single_file_host())
    {
        let ri = h.runtime_info.as_ref().unwrap();
        assert_eq!(ri.version, 2, "{}", h.package_version);
        let v = ri.runtime_version.unwrap();
        assert_eq!(
            format!("{}.{}.{}.{}", v[0], v[1], v[2], v[3]),
            h.file_version,
            "{} {}",
            h.package,
            h.package_version
        );
        let want_kind = if h.kind.is_elf() {
            ModuleKind::LibCoreClr
        } else {
            ModuleKind::CoreClrDll
        };
        let Some(rt) = idx()
            .builds()
            .iter()
            .find(|b| b.kind == want_kind && b.package_version == h.package_version)
        else {
            continue; // no runtime pack of that version is served (8.0.28, 9.0.16, 10.0.10)
        };
        let want = match &rt.identity {
            OwnedIdentity::ElfBuildId(id) => id.clone(),
            OwnedIdentity::Pe {
                timestamp,
                size_of_image,
            } => [timestamp.to_le_bytes(), size_of_image.to_le_bytes()].concat(),
        };
        assert_eq!(
            ri.runtime_module_index, want,
            "{} {}: DotNetRuntimeInfo's runtime module index",
            h.package, h.package_version
        );
        assert_eq!(rt.commit, h.commit, "{}", h.package_version);
        // The runtime linked into the host publishes the same descriptor JSON (.NET 9's
        // Linux host has none).
        if let Some(hd) = h.main_descriptor() {
            assert_eq!(
                rt.main_descriptor().map(|d| &d.json),
                Some(&hd.json),
                "{}",
                h.package_version
            );
        }
        checked += 1;
    }
    assert_eq!(checked, 27, "hosts with a runtime pack of their version");
}

/// Known builds, by the identities read from the corpus dumps' memory (the build id note of the
/// mapped libcoreclr.so / single-file host; the minidump's module list), not from the packs.
#[test]
fn known_builds() {
    let cases: &[(&str, &str, ModuleKind, u64, Option<u64>)] = &[
        // (build id from the dump, package version, kind, g_dacTable RVA, descriptor RVA)
        // dumps/hang-net8.dmp.zst
        (
            "be4af8fbe7201f286fe16d9afb6e7ac51280e11c",
            "8.0.33",
            ModuleKind::LibCoreClr,
            0x6aec68,
            None,
        ),
        // dumps/hang-net9.dmp.zst
        (
            "178a030f028498f8e1ad6761370737925b4dd1a7",
            "9.0.22",
            ModuleKind::LibCoreClr,
            0x728fb8,
            Some(0x6fe548),
        ),
        // dumps/hang-net10.dmp.zst
        (
            "e217f0fc049d68f827cc2e462c0c3b59ad69a198",
            "10.0.14",
            ModuleKind::LibCoreClr,
            0x6cd380,
            Some(0x6a7b70),
        ),
        // dumps/hang-net10h.dmp.zst
        (
            "989b56dfb2782aa230f822ee4c520e2ccfea71b7",
            "10.0.11",
            ModuleKind::LibCoreClr,
            0x6cc380,
            Some(0x6a6b80),
        ),
        // dumps/hang-net10-single-gcore.dmp.zst
        (
            "673ec0c515adf4755c75e41c6980dd13fad3adc9",
            "10.0.14",
            ModuleKind::SingleFileHostElf,
            0xb6f570,
            Some(0xb494c8),
        ),
        // dumps/hang-net8-single-gcore.dmp.zst
        (
            "10b4d8d6b0200d76356b98578b320977ad840714",
            "8.0.33",
            ModuleKind::SingleFileHostElf,
            0xa90768,
            None,
        ),
    ];
    for &(id, version, kind, dac, desc) in cases {
        let id = hex(id);
        let b = lookup(Identity::ElfBuildId(&id))
            .expect("index")
            .unwrap_or_else(|| panic!("{version} {kind:?} not found"));
        assert_eq!((b.package_version.as_str(), b.kind), (version, kind));
        assert_eq!(b.export("g_dacTable"), Some(dac), "{version}");
        assert_eq!(
            b.export("DotNetRuntimeContractDescriptor"),
            desc,
            "{version}"
        );
    }
    // dumps/windows-hang-net10.dmp.zst: coreclr.dll's module list entry.
    let b = lookup(Identity::Pe {
        timestamp: 0x6adaee43,
        size_of_image: 0x47a000,
    })
    .expect("index")
    .expect("windows 10.0.14 coreclr.dll");
    assert_eq!(
        (b.package_version.as_str(), b.kind),
        ("10.0.14", ModuleKind::CoreClrDll)
    );
}

/// The .NET 11 runtime: its descriptor's GC sub-descriptor slot is in .bss (filled at run
/// time), and the image holds the two GC descriptors it may point at.
#[test]
fn net11_gc_sub_descriptors() {
    for b in idx()
        .builds()
        .iter()
        .filter(|b| b.package_version == "11.0.0")
    {
        let main = b.main_descriptor().unwrap();
        assert_eq!(main.sub_descriptors.len(), 1, "{}", b.file_name);
        let gc = &main.sub_descriptors[0];
        assert_eq!(gc.name, "GC");
        assert_eq!(gc.content, Ptr::Unfilled);
        assert_eq!(gc.target, None);
        let mut kinds: Vec<String> = b
            .descriptors
            .iter()
            .filter(|d| d.role == DescriptorRole::InImage)
            .map(|d| {
                let j: serde_json::Value = serde_json::from_str(d.json_text()).unwrap();
                j["globals"]["GCIdentifiers"][0]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        kinds.sort();
        assert_eq!(
            kinds,
            [
                "server, regions, background, dynamic_heap",
                "workstation, regions, background,"
            ],
            "{}",
            b.file_name
        );
    }
}

/// Resolving pointer_data against a base: RVAs move, raw values do not.
#[test]
fn pointer_data_at_a_base() {
    let id = hex("e217f0fc049d68f827cc2e462c0c3b59ad69a198");
    let b = idx().lookup(Identity::ElfBuildId(&id)).unwrap();
    let d = b.main_descriptor().unwrap();
    let base = 0x7f54_8220_0000;
    let at = d.pointer_data_at(base);
    assert_eq!(at.len(), 24);
    assert_eq!(d.pointer_data[0], Ptr::Raw(0));
    assert_eq!(at[0], Some(0));
    for (p, a) in d.pointer_data.iter().zip(&at) {
        if let Ptr::Rva(r) = p {
            assert_eq!(*a, Some(base + r));
        }
    }
    assert_eq!(Ptr::Unfilled.resolve(base), None);
}

/// Exact identity only: one byte off, a prefix, a longer id, or the right timestamp with
/// another size finds nothing.
#[test]
fn exact_identity_only() {
    let id = hex("e217f0fc049d68f827cc2e462c0c3b59ad69a198");
    assert!(idx().lookup(Identity::ElfBuildId(&id)).is_some());
    let mut off = id.clone();
    off[19] ^= 1;
    assert!(idx().lookup(Identity::ElfBuildId(&off)).is_none());
    assert!(idx().lookup(Identity::ElfBuildId(&id[..19])).is_none());
    let mut long = id.clone();
    long.push(0);
    assert!(idx().lookup(Identity::ElfBuildId(&long)).is_none());
    assert!(idx().lookup(Identity::ElfBuildId(&[])).is_none());
    let pe = |t, s| {
        idx().lookup(Identity::Pe {
            timestamp: t,
            size_of_image: s,
        })
    };
    assert!(pe(0x6adaee43, 0x47a000).is_some());
    assert!(pe(0x6adaee43, 0x47b000).is_none());
    assert!(pe(0x6adaee44, 0x47a000).is_none());
}

/// Corrupt data is an error, never a panic.
#[test]
fn corrupt_data_is_an_error() {
    let raw = zstd::decode_all(DATA).unwrap();
    assert!(Index::decode(&raw[..raw.len() - 1]).is_err());
    assert!(Index::decode(&raw[..8]).is_err());
    assert!(Index::decode(b"").is_err());
    let mut extra = raw.clone();
    extra.push(0);
    assert!(Index::decode(&extra).is_err());
    let mut magic = raw.clone();
    magic[7] = 2;
    assert!(Index::decode(&magic).is_err());
    assert!(Index::from_compressed(&raw).is_err());
    // Every truncation fails cleanly (a sample of lengths, to stay quick).
    for n in (0..raw.len()).step_by(997) {
        assert!(Index::decode(&raw[..n]).is_err(), "{n}");
    }
    // Flipped bytes either decode or fail; none panics.
    for at in (8..raw.len()).step_by(1009) {
        let mut b = raw.clone();
        b[at] ^= 0xff;
        let _ = Index::decode(&b);
    }
}

/// Where the runtime pack of 10.0.14 is in the NuGet cache, its libcoreclr.so's build id
/// note is the index's identity for it.
#[test]
fn pack_file_identity_when_present() {
    let root = std::env::var_os("NUGET_PACKAGES")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".nuget/packages"))
        });
    let Some(root) = root else {
        eprintln!("SKIPPED pack_file_identity_when_present: no NuGet cache folder");
        return;
    };
    let mut checked = 0;
    for b in idx().builds().iter().filter(|b| b.kind.is_elf()) {
        let p = root
            .join(b.package.to_lowercase())
            .join(&b.package_version)
            .join(&b.path);
        let Ok(data) = std::fs::read(&p) else {
            continue;
        };
        let at = b.build_id_rva.unwrap() as usize; // the note is in the first page: RVA = offset
        let OwnedIdentity::ElfBuildId(id) = &b.identity else {
            unreachable!()
        };
        assert_eq!(&data[at..at + id.len()], &id[..], "{}", p.display());
        // The note header before it: namesz 4, descsz, type 3 (NT_GNU_BUILD_ID), "GNU\0".
        assert_eq!(&data[at - 4..at], b"GNU\0", "{}", p.display());
        assert_eq!(data.len() as u64, b.file_size, "{}", p.display());
        checked += 1;
    }
    if checked == 0 {
        eprintln!(
            "SKIPPED pack_file_identity_when_present: no indexed pack in {} \
             (python3 buildindex/gen/generate.py restores them)",
            root.display()
        );
    }
}
