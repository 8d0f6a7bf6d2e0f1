//! `dumpobj` against SOS's own output (`dumps/<name>.sos-dumpobj.txt`, written by
//! dumps/tools/sos_dumpobj.py with dotnet-dump 10.0.750501 and the runtime's DAC), on .NET 8,
//! 9, 10 and 11 dumps: for every object recorded (Free objects, strings, arrays of primitives,
//! references and structs, multi-dimensional arrays, boxed values, exceptions, delegates,
//! tasks, dictionaries, threads, generic instantiations, the app's types; `-nofields` for a
//! couple), dumpshell's text is SOS's, line for line, byte for byte (SOS's text as recorded
//! ends without its trailing newlines; so is ours, compared).
//!
//! `dumpalc` (SOS's PrintALC) likewise: a Free object's two lines, the default context's two
//! lines where the binder's managed AssemblyLoadContext handle is 0, else the
//! AssemblyLoadContext object as dumpobj prints it (aspnethang-net11 and names-net10 have one).
//! Where the build's binder layout is not known dumpalc is refused (counted).

use commands::Session;

/// A field table row of SOS's layout (64-bit): MT, Field, Offset, Type (20 wide, may be
/// blank), VT, Attr, then the value and the name.
struct Row<'a> {
    mt: &'a str,
    ty: &'a str,
    /// Field, Offset, VT, Attr, value and name.
    rest: (&'a str, &'a str, &'a str),
}

fn row(l: &str) -> Option<Row<'_>> {
    let b = l.as_bytes();
    let hex = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_hexdigit);
    if !l.is_ascii() || b.len() < 71 || !hex(0..16) || b[16] != b' ' || !hex(17..25) {
        return None;
    }
    Some(Row {
        mt: &l[..16],
        ty: l[35..55].trim(),
        rest: (&l[17..35], &l[55..70], &l[70..]),
    })
}

/// Where dumpshell's line may differ from SOS's, and why; `None` when it must be equal. Each
/// case is a field's `MT`/`Type` columns (the rest of the row equal) or SOS failing to name a
/// type, where the DAC's lookups differ from dumpshell's:
fn excused(sos: &str, ours: &str) -> Option<&'static str> {
    // The DAC names no type of a Reflection.Emit module (names-net10's `names.emitted`):
    // GetMethodTableName fails (`<Unloaded Type>`, or `<error>` for an instantiation over
    // such a type); dumpshell reads the module's saved metadata.
    if (sos == "Name:        <Unloaded Type>" || sos == "Name:        <error>")
        && ours.starts_with("Name:        ")
        && ours.contains("Emitted")
    {
        return Some("SOS cannot name a type of a Reflection.Emit module");
    }
    let (s, o) = (row(sos)?, row(ours)?);
    if s.rest != o.rest {
        return None;
    }
    let zero = "0000000000000000";
    // The DAC's GetFieldDescData looks a field's type up with LookupFieldTypeHandle in the
    // field's approximate (canonical) enclosing type: a type built from the declaring generic
    // type's parameters is found as its canonical instantiation (`System.__Canon` for a
    // reference type argument, IEqualityComparer`1[[System.__Canon]] for
    // IEqualityComparer<TKey>); dumpshell resolves the exact instantiation (not emulated).
    // (checked by the caller: SOS's MethodTable is `System.__Canon` or the canonical form of
    // ours, `canonical_of`)
    if s.mt != zero && o.mt != zero && s.mt != o.mt {
        return Some(CANONICAL);
    }
    // For a TypeRef to a type forwarded through a facade the app never loaded
    // (Process._registeredWaitHandle: System.Threading.ThreadPool's RegisteredWaitHandle,
    // s_processStartLock), the DAC answers System.Void's MethodTable (checked with dumpmt).
    if s.ty == "System.Void" && s.mt != zero && o.mt == zero && o.ty.is_empty() {
        return Some("the DAC answers System.Void for an unresolved forwarded TypeRef");
    }
    // The DAC does not find the field's type (a TypeRef its module never resolved, not in its
    // TypeRefToMethodTable map; an array or instantiation looked up in the canonical
    // instantiation, e.g. Dictionary's Entry<__Canon,__Canon>[]): MT 0 and the signature's
    // element type (SZARRAY, blank for GENERICINST, the TypeDef's name). dumpshell finds the
    // loaded type by name (its JSON `type_mt`).
    if s.mt == zero && o.mt != zero {
        return Some("the DAC's LookupFieldTypeHandle does not find a loaded field type");
    }
    None
}

const CANONICAL: &str = "the DAC resolves a generic field type in the canonical instantiation";

/// Whether SOS's row names, for the field our row names with the exact instantiation, its
/// canonical form: `System.__Canon` itself, or our MethodTable's canonical MethodTable
/// (`dumpmt`'s `canonical`).
fn canonical_of(s: &Session, ours: &str, sos: &str) -> bool {
    let (Some(o), Some(t)) = (row(ours), row(sos)) else {
        return false;
    };
    if t.ty == "System.__Canon" {
        return true;
    }
    let mt = commands::execute(s, &format!("dumpmt {}", o.mt))
        .ok()
        .flatten()
        .map(|(out, _)| out.data);
    let canon = mt
        .as_ref()
        .and_then(|d| d["canonical"].as_str())
        .and_then(|c| u64::from_str_radix(c.trim_start_matches("0x"), 16).ok());
    canon.is_some() && canon == u64::from_str_radix(t.mt, 16).ok()
}

#[test]
fn dumpobj_equals_sos() {
    let (mut objects, mut lines, mut dumps) = (0usize, 0usize, 0usize);
    let (mut alcs, mut refused_alc) = (0usize, 0usize);
    let mut bad = Vec::new();
    let mut excuses = std::collections::BTreeMap::<&str, usize>::new();
    for n in tests::names() {
        let Some(secs) = tests::sos::truth(&n, "sos-dumpobj") else {
            continue;
        };
        dumps += 1;
        let e = tests::entry(&n);
        let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
        for (cmd, body) in secs {
            let alc = cmd.starts_with("dumpalc");
            let ours = match commands::execute(&s, &cmd) {
                Ok(o) => o.expect("a command").0.text,
                Err(commands::CommandError::Clr {
                    error: clrdata::ClrError::NotVerified { .. },
                    ..
                }) if alc => {
                    // dumpalc where the build's binder layout is not known: refused.
                    refused_alc += 1;
                    continue;
                }
                Err(err) => format!("{err}"),
            };
            if alc {
                alcs += 1;
            } else {
                objects += 1;
            }
            let sos: Vec<&str> = body.trim_end_matches('\n').lines().collect();
            let our: Vec<&str> = ours.trim_end_matches('\n').lines().collect();
            let mut diff = Vec::new();
            for i in 0..sos.len().max(our.len()) {
                let (a, b) = (sos.get(i).copied(), our.get(i).copied());
                if a == b {
                    lines += 1;
                    continue;
                }
                if let (Some(a), Some(b)) = (a, b) {
                    if let Some(why) = excused(a, b) {
                        if why != CANONICAL || canonical_of(&s, b, a) {
                            *excuses.entry(why).or_default() += 1;
                            continue;
                        }
                    }
                }
                diff.push(format!(
                    "  line {}:\n    SOS:  {:?}\n    ours: {:?}",
                    i + 1,
                    a.unwrap_or("<none>"),
                    b.unwrap_or("<none>")
                ));
            }
            if !diff.is_empty() {
                bad.push(format!("{n}: {cmd}:\n{}", diff.join("\n")));
            }
        }
    }
    println!(
        "dumpobj: {objects} objects and {alcs} dumpalc on {dumps} dumps ({refused_alc} dumpalc \
         refused: the build's binder layout not known), {lines} lines equal to SOS's; \
         excused: {excuses:?}; {} commands differ",
        bad.len()
    );
    assert!(dumps >= 4, "the sos-dumpobj truth of at least four dumps");
    assert!(alcs > 0, "dumpalc compared somewhere");
    assert!(
        bad.is_empty(),
        "{}\n{} objects differ",
        bad.join("\n"),
        bad.len()
    );
}
