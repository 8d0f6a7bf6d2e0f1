//! `ip2md` against SOS's own (`### ip2md <IP>` sections of `dumps/<name>.sos-lines.txt`,
//! dumps/tools/sos_pdb.py: dotnet-dump with the build's DAC and the app's PDB, for the IP of
//! every frame SOS printed with a line): every DumpMD line we print (MethodDesc to Current
//! CodeAddr) is SOS's, and the `Source file:` line is SOS's (the address's own line).

use commands::Session;

#[test]
fn ip2md_equals_sos() {
    let truths = tests::sos::dumps_with("sos-lines");
    assert!(truths.len() >= 30, "only {} sos-lines truths", truths.len());
    let (mut compared, mut with_source) = (0, 0);
    let mut diffs = Vec::new();
    for (e, secs) in truths {
        // The app's PDB found by id below dumps/pdbs/ (dumps/pdbs/README.md), as SOS was given it.
        let discover = clrdata::DiscoverOptions {
            pdb_dirs: vec![tests::dumps_dir().join("pdbs")],
            ..tests::discover_options()
        };
        let s = Session::open_with(&e.dump_path(), &e.open_options())
            .unwrap()
            .with_discover_options(discover);
        for (cmd, body) in secs {
            if !cmd.starts_with("ip2md ") {
                continue;
            }
            let ours = match commands::execute(&s, &cmd) {
                Ok(Some((o, _))) => o.text,
                Ok(None) => unreachable!("ip2md prints"),
                Err(err) => {
                    diffs.push(format!("{}: {cmd}: {err}", e.name));
                    continue;
                }
            };
            compared += 1;
            if !ours.contains("\nMethod Name:          ") {
                diffs.push(format!("{}: {cmd}: no DumpMD lines:\n{ours}", e.name));
            }
            for l in ours.lines() {
                if l.starts_with("Source file:") {
                    with_source += 1;
                }
                if !body.lines().any(|b| b.trim_end() == l.trim_end()) {
                    diffs.push(format!("{}: {cmd}: `{l}` is not SOS's:\n{body}", e.name));
                }
            }
            let sos_source = body.lines().find(|l| l.starts_with("Source file:"));
            let our_source = ours.lines().find(|l| l.starts_with("Source file:"));
            if sos_source.is_some() && our_source.is_none() {
                diffs.push(format!(
                    "{}: {cmd}: no source line where SOS has `{}`",
                    e.name,
                    sos_source.unwrap()
                ));
            }
        }
    }
    eprintln!("{compared} ip2md compared, {with_source} with a source line");
    assert!(
        diffs.is_empty(),
        "{} differences:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
    assert!(compared >= 300, "only {compared} compared");
}
