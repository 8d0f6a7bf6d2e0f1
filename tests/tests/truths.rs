//! The two truths beside each dump agree where they overlap: what the scenario program says it
//! made (its manifest) and what the runtime's own DAC reports for the dump. A disagreement
//! means the corpus is wrong, and every test built on it would be too.

use serde_json::Value;
use std::collections::HashMap;

/// A DAC method name without its signature: `A.B.C(System.Int32)` -> `A.B.C`.
fn method_name(dac_method: &str) -> &str {
    dac_method.split('(').next().unwrap_or(dac_method)
}

fn dac_frames(dac: &Value, os_id: u64) -> Option<Vec<&str>> {
    let st = dac["stacks"]
        .as_array()?
        .iter()
        .find(|s| s["osThreadId"].as_u64() == Some(os_id))?;
    Some(
        st["frames"]
            .as_array()?
            .iter()
            .filter_map(|f| f["method"].as_str())
            .map(method_name)
            .collect(),
    )
}

#[test]
fn manifest_threads_are_the_dacs_managed_threads() {
    for e in tests::all() {
        let by_os: HashMap<u64, &Value> = e.dac["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t["osThreadId"].as_u64().unwrap(), t))
            .collect();
        for t in e.manifest["threads"].as_array().unwrap() {
            let os = t["os_id"].as_u64().unwrap();
            let dt = by_os.get(&os).unwrap_or_else(|| {
                panic!(
                    "{}: manifest thread {os} ({}) is not a DAC thread",
                    e.name, t["role"]
                )
            });
            assert_eq!(
                dt["corThreadId"].as_u64(),
                t["managed_id"].as_u64(),
                "{}: thread {os}: managed id (DAC vs manifest)",
                e.name
            );
        }
    }
}

#[test]
fn manifest_frames_are_on_the_dacs_stacks_in_order() {
    let mut checked = 0;
    for e in tests::all() {
        for t in e.manifest["threads"].as_array().unwrap() {
            let os = t["os_id"].as_u64().unwrap();
            let frames = dac_frames(&e.dac, os)
                .unwrap_or_else(|| panic!("{}: the DAC has no stack for thread {os}", e.name));
            if let Some(b) = t["blocked_in"].as_str() {
                assert!(
                    frames.contains(&b),
                    "{}: thread {os} ({}): {b} is not among the DAC's frames {frames:?}",
                    e.name,
                    t["role"]
                );
            }
            // The program's own methods, innermost first, appear in that order.
            let mut pos = 0;
            for want in t["frames"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                match frames[pos..].iter().position(|f| *f == want) {
                    Some(i) => pos += i + 1,
                    None => panic!(
                        "{}: thread {os} ({}): {want} is not on the DAC's stack after position {pos}: {frames:?}",
                        e.name, t["role"]
                    ),
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 20, "too few frames compared ({checked})");
}

#[test]
fn manifest_type_counts_equal_the_dac_census() {
    let mut checked = 0;
    for e in tests::all().into_iter().filter(|e| e.has_heap()) {
        let census: HashMap<&str, u64> = e.dac["heap_stat"]["types"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["type"].as_str().unwrap(), r["count"].as_u64().unwrap()))
            .collect();
        // The rows by MethodTable: a type whose MethodTable the program recorded (names.cs) is
        // counted by it; the DAC names no type of a Reflection.Emit module (`<Unloaded Type>`,
        // `<GetMethodTableName failed ...>`: dumps/README.md, "names"), the others by name too.
        let by_mt: HashMap<&str, (&str, u64)> = e.dac["heap_stat"]["types"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| {
                Some((
                    r["mt"].as_str()?,
                    (r["type"].as_str()?, r["count"].as_u64()?),
                ))
            })
            .collect();
        for t in e.manifest["types"].as_array().into_iter().flatten() {
            let name = t["dac_name"].as_str().or(t["name"].as_str()).unwrap();
            let want = t["count"].as_u64().unwrap();
            let got = match t["method_table"].as_str() {
                Some(mt) => {
                    let (dac_name, count) = by_mt.get(mt).copied().unwrap_or(("", 0));
                    if !dac_name.starts_with('<') {
                        assert_eq!(
                            dac_name, name,
                            "{}: the DAC's name of MethodTable {mt}",
                            e.name
                        );
                    }
                    count
                }
                None => census.get(name).copied().unwrap_or(0),
            };
            assert_eq!(
                got, want,
                "{}: live instances of {name} (DAC census vs manifest)",
                e.name
            );
            checked += 1;
        }
    }
    assert!(checked > 20, "too few types compared ({checked})");
}

#[test]
fn manifest_async_state_machines_each_have_one_dac_box() {
    let mut checked = 0;
    for e in tests::all().into_iter().filter(|e| e.has_heap()) {
        let boxes: Vec<&str> = e.dac["async_state_machine_boxes"]["boxes"]
            .as_array()
            .map(|b| b.iter().filter_map(|x| x["type"].as_str()).collect())
            .unwrap_or_default();
        for chain in e.manifest["async_chains"].as_array().into_iter().flatten() {
            let sms = chain["state_machine_types"].as_array().unwrap();
            for (i, sm) in sms.iter().enumerate() {
                let sm = sm.as_str().unwrap();
                // A pooled ValueTask box (`box: "pooling"`, the innermost) is no
                // AsyncStateMachineBox: not in the DAC's list (dumpasync's tests check it
                // against the census).
                if i == 0 && chain["box"] == "pooling" {
                    continue;
                }
                // The box's last generic argument is the state machine: `...,[<sm>, <assembly>]]`.
                let n = boxes
                    .iter()
                    .filter(|b| b.contains(&format!("[{sm}, ")))
                    .count();
                // `count` chains (WhenAll/WhenAny legs) share their outer box.
                let want = if i == 0 {
                    chain["count"].as_u64().unwrap_or(1)
                } else {
                    1
                };
                assert_eq!(
                    n as u64, want,
                    "{}: chain {}: boxes for {sm}",
                    e.name, chain["name"]
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 9, "too few state machines compared ({checked})");
}
