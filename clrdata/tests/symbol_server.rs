//! The symbol server (clrdata::discovery::symbols), against a loopback HTTP server this test
//! starts (std::net::TcpListener in a thread) serving a NuGet runtime pack's libcoreclr.so in
//! the symbol-store layout (`libcoreclr.so/elf-buildid-<id>/libcoreclr.so`):
//!
//! - with the build hidden from the index (`DiscoverOptions::build_index` off) and no image
//!   file, a .NET 10 createdump dump is read through the file the server sends: downloaded
//!   once, its build id checked, kept in the cache and taken from there the next time; the
//!   descriptor, globals and heap census equal those the build index gives;
//! - a file whose build id differs (another build's libcoreclr.so served under the dump's key)
//!   is refused and not kept, and discovery says so;
//! - a missing file, and a missing curl, are errors that say what they are.
//!
//! Needs the runtime packs in the NuGet cache (dumps/fetch-frameworks.sh); skips loudly
//! without them, fails with `DUMPSHELL_REQUIRE_FRAMEWORKS` set.

use clrdata::discovery::symbols::{self, SymbolError, SymbolServer};
use clrdata::prelude::*;
use clrdata::{ClrError, DiscoverOptions, LayoutFrom, Runtime};
use dumpreader::{Dump, ModuleIdentity, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A loopback HTTP/1.1 server of the files under `root`, recording each request's path.
struct Loopback {
    url: String,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Loopback {
    fn start(root: PathBuf) -> Loopback {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let log = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut first = String::new();
                if reader.read_line(&mut first).is_err() {
                    continue;
                }
                // The rest of the request's header.
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let path = first.split_whitespace().nth(1).unwrap_or("/").to_owned();
                log.lock().unwrap().push(path.clone());
                let rel = path.trim_start_matches('/');
                let file = root.join(rel);
                let body = (!rel.split('/').any(|p| p == ".."))
                    .then(|| std::fs::read(&file).ok())
                    .flatten();
                let _ = match body {
                    Some(b) => stream
                        .write_all(
                            format!(
                                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                                b.len()
                            )
                            .as_bytes(),
                        )
                        .and_then(|_| stream.write_all(&b)),
                    None => stream.write_all(
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    ),
                };
            }
        });
        Loopback { url, requests }
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

/// A fresh folder under the target directory (removed first).
fn scratch(name: &str) -> PathBuf {
    let d = tests::cache_dir()
        .with_file_name("tmp")
        .join(format!("symbol-server-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch folder");
    d
}

/// Serves `file` under `key` in `root`.
fn publish(root: &Path, key: &str, file: &Path) {
    let to = root.join(key);
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(file, &to).expect("copy into the served folder");
}

/// Every libcoreclr.so of a linux-x64 runtime pack in the NuGet cache, by version.
fn pack_runtimes() -> Vec<(String, PathBuf)> {
    let packages = std::env::var_os("NUGET_PACKAGES")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".nuget/packages")))
        .unwrap_or_default()
        .join("microsoft.netcore.app.runtime.linux-x64");
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(&packages)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| {
                    (
                        e.file_name().to_string_lossy().into_owned(),
                        e.path().join("runtimes/linux-x64/native/libcoreclr.so"),
                    )
                })
                .filter(|(_, p)| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

fn bare() -> OpenOptions {
    OpenOptions {
        recorded_paths: false,
        ..Default::default()
    }
}

fn with_server(server: SymbolServer) -> DiscoverOptions {
    DiscoverOptions {
        build_index: false,
        files: true,
        symbol_server: Some(server),
        pdb_dirs: Vec::new(),
    }
}

#[test]
fn downloads_verifies_and_uses_a_libcoreclr_and_refuses_another_build() {
    let e = tests::entry("hang-net10");
    let packs = pack_runtimes();
    let Some((_, own)) = packs.iter().find(|(v, _)| v == e.runtime_version()) else {
        assert!(
            std::env::var_os("DUMPSHELL_REQUIRE_FRAMEWORKS").is_none(),
            "no {} runtime pack in the NuGet cache (dumps/fetch-frameworks.sh)",
            e.runtime_version()
        );
        eprintln!(
            "\nSKIPPED: symbol server test: no {} runtime pack in the NuGet cache \
             (dumps/fetch-frameworks.sh; DUMPSHELL_REQUIRE_FRAMEWORKS=1 makes this a failure)\n",
            e.runtime_version()
        );
        return;
    };
    let d = Dump::open_with(&e.dump_path(), &bare()).expect("open");
    let module = d
        .modules()
        .iter()
        .find(|m| m.name() == "libcoreclr.so")
        .expect("libcoreclr.so")
        .clone();
    let Some(ModuleIdentity::BuildId(id)) = &module.identity else {
        panic!("no build id in the dump");
    };
    let key = symbols::key("libcoreclr.so", module.identity.as_ref().unwrap());
    assert_eq!(
        key,
        format!(
            "libcoreclr.so/elf-buildid-{}/libcoreclr.so",
            id.iter().map(|b| format!("{b:02x}")).collect::<String>()
        )
    );

    // What the build index gives, for comparison.
    let by_index = Runtime::discover_with_options(&d, &DiscoverOptions::clean_room())
        .expect("read through the index");
    assert_eq!(by_index.layout_source.from, LayoutFrom::BuildIndex);

    // Hidden from the index, no file: refused, naming the symbol server as what would serve.
    let none = DiscoverOptions {
        build_index: false,
        files: true,
        symbol_server: None,
        pdb_dirs: Vec::new(),
    };
    match Runtime::discover_with_options(&d, &none) {
        Err(ClrError::NoLayout { tried, needed, .. }) => {
            assert!(
                tried.iter().any(|t| t.from == LayoutFrom::SymbolServer),
                "{tried:?}"
            );
            assert!(needed.contains("--symbol-server"), "{needed}");
        }
        other => panic!("read with neither index nor file: {other:?}"),
    }

    // The pack's own file, served under the dump's key.
    let root = scratch("serve");
    publish(&root, &key, own);
    let srv = Loopback::start(root.clone());
    let cache = scratch("cache");
    let server = SymbolServer::new(&srv.url, &cache);
    let rt = Runtime::discover_with_options(&d, &with_server(server.clone()))
        .unwrap_or_else(|err| panic!("through the symbol server: {err}"));
    assert_eq!(
        rt.layout_source.from,
        LayoutFrom::SymbolServer,
        "{}",
        rt.layout_source
    );
    assert!(
        rt.layout_source.detail.contains(&key),
        "{}",
        rt.layout_source
    );
    assert_eq!(rt.descriptor(), by_index.descriptor());
    assert_eq!(rt.globals, by_index.globals);
    assert_eq!(rt.info.version, e.runtime_version());
    let census = rt.gc_heap().expect("heap").census(&rt);
    assert_eq!(
        census.total_objects,
        e.dac["heap_stat"]["total_objects"].as_u64().unwrap(),
        "the census through the downloaded file equals the DAC's"
    );
    let asked = srv.requests();
    assert_eq!(asked, vec![format!("/{key}")], "one download of the key");
    assert!(
        cache.join(&key).is_file(),
        "kept in the cache under its key"
    );

    // The second time, from the cache (checked again), nothing downloaded.
    let again = Runtime::discover_with_options(&d, &with_server(server.clone())).expect("again");
    assert!(
        again.layout_source.detail.contains("cached at"),
        "{}",
        again.layout_source
    );
    assert_eq!(srv.requests().len(), 1, "{:?}", srv.requests());

    // Another build's libcoreclr.so under the dump's key: refused, not kept.
    let other = packs
        .iter()
        .find(|(v, p)| v != e.runtime_version() && std::fs::read(p).ok() != std::fs::read(own).ok())
        .expect("another runtime pack in the NuGet cache");
    let root2 = scratch("serve-other");
    publish(&root2, &key, &other.1);
    let srv2 = Loopback::start(root2.clone());
    let cache2 = scratch("cache-other");
    let server2 = SymbolServer::new(&srv2.url, &cache2);
    match server2.fetch(&module) {
        Err(SymbolError::IdentityMismatch { wanted, found, .. }) => {
            assert_ne!(wanted, found);
            assert!(wanted.contains(&id.iter().map(|b| format!("{b:02x}")).collect::<String>()));
        }
        Ok(f) => panic!("another build's file accepted: {}", f.path.display()),
        Err(err) => panic!("not refused for its identity: {err}"),
    }
    assert!(!cache2.join(&key).exists(), "a refused file is not kept");
    let leftovers: Vec<_> = std::fs::read_dir(cache2.join(&key).parent().unwrap())
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    match Runtime::discover_with_options(&d, &with_server(server2)) {
        Err(ClrError::NoLayout { tried, .. }) => {
            let t = tried
                .iter()
                .find(|t| t.from == LayoutFrom::SymbolServer)
                .expect("the symbol server was tried");
            assert!(t.why.contains("refused"), "{}", t.why);
        }
        other => panic!("read through another build's file: {other:?}"),
    }
    eprintln!(
        "symbol server: {} ({} {}) downloaded and used; {} ({}) refused",
        key,
        e.runtime_version(),
        own.display(),
        other.1.display(),
        other.0
    );

    // Not served: a download error naming the URL.
    let empty = Loopback::start(scratch("serve-empty"));
    match SymbolServer::new(&empty.url, scratch("cache-empty")).fetch(&module) {
        Err(SymbolError::Download { url, .. }) => assert!(url.ends_with(&key), "{url}"),
        other => panic!("nothing served, yet {other:?}"),
    }
    // No curl: said so.
    let mut no_curl = SymbolServer::new(&srv.url, scratch("cache-nocurl"));
    no_curl.curl = PathBuf::from("/nonexistent/bin/curl");
    match no_curl.fetch(&module) {
        Err(err @ SymbolError::NoCurl { .. }) => {
            assert!(err.to_string().contains("install curl"), "{err}")
        }
        other => panic!("no curl, yet {other:?}"),
    }
    for dir in [root, cache, root2, cache2] {
        let _ = std::fs::remove_dir_all(dir);
    }
}
