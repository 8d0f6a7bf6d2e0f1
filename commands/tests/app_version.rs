//! The app's version and the dump's own time in triage (what fleet buckets list).
//!
//! Truth for the version: the scenario apps are SDK builds whose
//! `AssemblyInformationalVersionAttribute` is `1.0.0+<the git commit the build saw>`; which
//! commit each build saw is established by dumps/pdbs/README.md's bit-for-bit rebuilds (the
//! rebuilt PDB, whose id hashes the generated `AssemblyInfo.cs` holding that commit, has the id
//! the dll in the dump names). Truth for a minidump's time: its header as the `minidump` crate
//! (a parser dumpreader does not use for the header) reads it.

/// `(dump, its program, the commit its build saw)`, from dumps/pdbs/README.md's build keys
/// (`<program>-<runtime>-...`) and `rebuild.sh --head` lines.
const BUILDS: &[(&str, &str, &str)] = &[
    (
        "crash-net10",
        "crash",
        "6afe869c63236e7f88dae6beda3a711360c0841f",
    ),
    (
        "hang-net8",
        "hang",
        "6afe869c63236e7f88dae6beda3a711360c0841f",
    ),
    (
        "heap-net9",
        "heap",
        "6afe869c63236e7f88dae6beda3a711360c0841f",
    ),
    // Self-contained on Windows: hostpolicy.dll, coreclr.dll and the native hang.exe launcher
    // are mapped below the managed hang.dll.
    (
        "windows-hang-net10",
        "hang",
        "6afe869c63236e7f88dae6beda3a711360c0841f",
    ),
    (
        "asyncreal-net10",
        "asyncreal",
        "dcebcf651e423a788da37d40b17c0e7fd87535aa",
    ),
    (
        "hang-net8-triage",
        "hang",
        "830791fe7933f56275ddd4f227dfba18d5da2d07",
    ),
];

fn triage(e: &tests::Entry) -> commands::triage::Triage {
    commands::triage::triage(&e.dump_path(), &e.open_options())
}

#[test]
fn app_version_is_the_informational_version_the_build_wrote() {
    for (name, program, head) in BUILDS {
        let e = tests::entry(name);
        let t = triage(&e);
        assert!(t.error.is_none(), "{name}: {:?}", t.error);
        assert_eq!(t.app.as_deref(), Some(*program), "{name}: the app");
        assert_eq!(
            t.app_version.as_deref(),
            Some(format!("1.0.0+{head}").as_str()),
            "{name}: the app's InformationalVersion (app {:?})",
            t.app
        );
        let rec = commands::buckets::Record::of(&t, None);
        assert_eq!(rec.app_version, t.app_version, "{name}: the fleet record");
    }
}

#[test]
fn an_elf_core_has_no_time_of_its_own_and_a_minidump_has_its_headers() {
    let elf = triage(&tests::entry("crash-net10"));
    assert_eq!(elf.dump_time_source, Some("file"));
    let file_time = std::fs::metadata(tests::entry("crash-net10").dump_path())
        .unwrap()
        .modified()
        .unwrap()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert_eq!(elf.dump_time, Some(file_time));

    let e = tests::entry("windows-hang-net10");
    let t = triage(&e);
    assert_eq!(t.dump_time_source, Some("dump"));
    let path = e.dump_path();
    let md = minidump::Minidump::read_path(&path).unwrap();
    let stamp = md.header.time_date_stamp as u64;
    assert_ne!(stamp, 0, "the corpus minidump records its time");
    assert_eq!(t.dump_time, Some(stamp));
    let rec = commands::buckets::Record::of(&t, None);
    assert!(rec.time_from_dump && rec.time == Some(stamp));
}
