//! `dumpshell`: a .NET dump analyzer without the DAC.
//!
//! `dumpshell app.dmp` opens an interactive session; `-c`, `--script` or commands on standard
//! input run non-interactively. Every command can print JSON (`--json`, globally or per command).
//! The commands themselves are the `commands` library's (the WinDbg extension runs the same);
//! this binary adds the terminal: line editing, Ctrl-C, progress bars, table width.

mod fleet;
mod progress;
mod store;

use anyhow::Context;
use clap::{Args, CommandFactory, FromArgMatches, Parser};
use commands::{Output, Session};
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;

/// A .NET crash and hang dump analyzer that needs no DAC: Linux ELF cores and Windows minidumps.
#[derive(Parser, Debug)]
#[command(
    name = "dumpshell",
    version,
    about = "A .NET crash and hang dump analyzer that needs no DAC: Linux ELF cores and Windows minidumps.",
    after_help = "Without -c, --script or piped input, dumpshell opens an interactive session: type 'help'.\n\
                  `dumpshell triage <dump>...` prints a one-page summary of each of many dumps;\n\
                  `dumpshell triage --buckets <dumps or folders>` groups them by signature;\n\
                  `dumpshell buckets` queries the triage store; `dumpshell report <dump> -o page.html`\n\
                  draws a dump (or a set of dumps) as one HTML page.\n\
                  `dumpshell completions <shell>` prints shell completions; `dumpshell man` the man page."
)]
struct Cli {
    /// The dump to open (`.dmp`, `.core`, or the same compressed with zstd as `.zst`).
    dump: PathBuf,
    /// Run this command and exit (repeat to run several in order).
    #[arg(
        short = 'c',
        long = "command",
        value_name = "COMMAND",
        value_parser = CommandLine,
        hide_possible_values = true
    )]
    commands: Vec<String>,
    /// Run the commands in this file, one per line (`#` starts a comment), and exit.
    #[arg(long, value_name = "FILE")]
    script: Option<PathBuf>,
    /// Print every result as a JSON document (one per command; see docs/json.md).
    #[arg(long)]
    json: bool,
    /// How type names are written in text: `dac` as the DAC and SOS write them
    /// (List`1[[System.String, System.Private.CoreLib]]), `csharp` as C# does
    /// (List<System.String>); JSON always keeps the DAC's form. `set typenames` changes it in a
    /// session.
    #[arg(long, value_name = "STYLE", value_enum, default_value_t = commands::style::NameStyle::Dac)]
    type_names: commands::style::NameStyle,
    #[command(flatten)]
    open: OpenArgs,
}

/// The value of `-c`: a whole command line, taken as it is. Its possible values are the
/// commands' names, for shell completion only (`dumpshell completions`): they are never
/// checked here (the session parses the line and says what is wrong with it).
#[derive(Clone)]
struct CommandLine;

impl clap::builder::TypedValueParser for CommandLine {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(commands::registry().iter().map(|c| {
            clap::builder::PossibleValue::new(c.name).help(c.about)
        })))
    }
}

/// How dumps are opened: the options `dumpshell` and `dumpshell triage` share.
#[derive(Args, Debug)]
struct OpenArgs {
    /// A folder to search for module files (matched by build id or PE timestamp and size)
    /// when the dump lacks an image's pages, and for a NativeAOT app's symbol file
    /// (`<app>.dbg`, matched by build id: it names the types); repeatable.
    #[arg(long = "image-path", value_name = "DIR")]
    image_path: Vec<PathBuf>,
    /// Never read image files from the paths the dump records for its modules (only from
    /// --image-path): for dumps made on another machine whose paths may hold other builds.
    #[arg(long)]
    no_recorded_paths: bool,
    /// Where compressed dumps are decompressed to (default: $XDG_CACHE_HOME/dumpshell or
    /// ~/.cache/dumpshell).
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// The most the cache may hold, in GiB: the dumps opened least recently are deleted
    /// first (the one being opened is always kept).
    #[arg(long, value_name = "GIB", default_value_t = 32)]
    cache_limit_gb: u64,
    /// A symbol server to download the runtime module from when neither the dump nor the
    /// bundled build index describes it (off by default; or DUMPSHELL_SYMBOL_SERVER).
    ///
    /// E.g. https://msdl.microsoft.com/download/symbols. The file is fetched with the
    /// system's curl by its symbol-store key (libcoreclr.so/elf-buildid-<id>/libcoreclr.so;
    /// coreclr.dll/<TIMESTAMP><size>/coreclr.dll), kept under the cache folder's symbols/,
    /// and used only if its build id (PE: timestamp and size) equals the dump's.
    #[arg(long, value_name = "URL")]
    symbol_server: Option<String>,
    /// A folder to search for the apps' portable PDBs (repeatable; or DUMPSHELL_PDB_PATH,
    /// separated by ':'): `clrstack` shows each frame's `[file @ line]` and `dumpasync
    /// --fields` names a runtime-async method's locals from them (`--image-path` folders and
    /// PDBs embedded in the image are searched too). A PDB is used only when its id equals
    /// the module's CodeView entry.
    #[arg(long, value_name = "DIR")]
    pdb_path: Vec<PathBuf>,
}

impl OpenArgs {
    /// What discovery may read besides the dump: the symbol server named by
    /// `--symbol-server` or DUMPSHELL_SYMBOL_SERVER, cached under `<cache>/symbols`.
    fn discover(&self) -> clrdata::DiscoverOptions {
        let url = self.symbol_server.clone().or_else(|| {
            std::env::var("DUMPSHELL_SYMBOL_SERVER")
                .ok()
                .filter(|u| !u.trim().is_empty())
        });
        let cache = self
            .cache_dir
            .clone()
            .or_else(default_cache_dir)
            .unwrap_or_else(std::env::temp_dir)
            .join("symbols");
        let mut pdb_dirs = self.pdb_path.clone();
        if let Some(v) = std::env::var_os("DUMPSHELL_PDB_PATH") {
            pdb_dirs.extend(std::env::split_paths(&v).filter(|p| !p.as_os_str().is_empty()));
        }
        clrdata::DiscoverOptions {
            symbol_server: url.map(|u| clrdata::discovery::symbols::SymbolServer::new(u, cache)),
            pdb_dirs,
            ..Default::default()
        }
    }

    fn options(&self) -> dumpreader::OpenOptions {
        dumpreader::OpenOptions {
            cache_dir: self.cache_dir.clone().or_else(default_cache_dir),
            cache_limit: self.cache_limit_gb.saturating_mul(1 << 30),
            image_search_path: self.image_path.clone(),
            recorded_paths: !self.no_recorded_paths,
            ..Default::default()
        }
    }
}

fn default_cache_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .map(|d| d.join("dumpshell"))
}

/// `dumpshell triage <dump>...`: a one-page summary of each dump (runtime and OS, threads,
/// exceptions, the top merged stacks, the heaviest heap types), several dumps at a time; with
/// `--buckets`, each dump's signature and the dumps grouped by it.
#[derive(Parser, Debug)]
#[command(name = "dumpshell triage")]
struct TriageCli {
    /// The dumps, or folders of dumps (searched recursively for .dmp, .mdmp, .core, .zst and
    /// core.* files).
    #[arg(required = true)]
    dumps: Vec<PathBuf>,
    /// One JSON document per dump, one per line (with --buckets: one document of buckets).
    #[arg(long)]
    json: bool,
    /// Group the dumps by signature (crash: exception type and the app's innermost frames;
    /// deadlock: the cycle's locks and methods; hang: what the most threads and async chains
    /// wait on; docs/buckets.md) and print the buckets instead of a page per dump. A dump whose
    /// content the store holds is not read again.
    #[arg(long)]
    buckets: bool,
    /// How many dumps to read at once (default: one per core). Each worker holds one dump.
    #[arg(long, short = 'j', value_name = "N", default_value_t = 0)]
    jobs: usize,
    #[command(flatten)]
    store: StoreArgs,
    #[command(flatten)]
    open: OpenArgs,
}

/// Where the triage store is.
#[derive(Args, Debug)]
struct StoreArgs {
    /// The triage store (SQLite) --buckets reads and adds to (default: triage.sqlite in the
    /// cache folder).
    #[arg(long, value_name = "FILE")]
    store: Option<PathBuf>,
    /// Use no store: every dump is read.
    #[arg(long, conflicts_with = "store")]
    no_store: bool,
}

impl StoreArgs {
    fn path(&self, cache_dir: Option<&PathBuf>) -> Option<PathBuf> {
        if self.no_store {
            return None;
        }
        self.store.clone().or_else(|| {
            cache_dir
                .cloned()
                .or_else(default_cache_dir)
                .map(|d| d.join("triage.sqlite"))
        })
    }
}

/// `dumpshell buckets`: the buckets of every dump the triage store holds (`dumpshell triage
/// --buckets` fills it), the largest first.
#[derive(Parser, Debug)]
#[command(name = "dumpshell buckets")]
struct BucketsCli {
    /// The triage store (default: triage.sqlite in the cache folder).
    #[arg(long, value_name = "FILE")]
    store: Option<PathBuf>,
    /// The cache folder whose triage.sqlite to read (default: $XDG_CACHE_HOME/dumpshell or
    /// ~/.cache/dumpshell).
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// Show at most this many buckets.
    #[arg(long, value_name = "N")]
    top: Option<usize>,
    /// Only buckets first seen at or after this time (seconds since 1970, or a UTC date
    /// YYYY-MM-DD[THH:MM[:SS]]): the new ones.
    #[arg(long, value_name = "TIME")]
    since: Option<String>,
    /// The dumps of one bucket (its id, or a prefix of it), the latest first.
    #[arg(long, value_name = "ID")]
    bucket: Option<String>,
    /// Print the store's records instead, one JSON document per dump per line (for DuckDB's
    /// read_json_auto or ClickHouse's JSONEachRow: docs/buckets.md).
    #[arg(long, conflicts_with_all = ["json", "bucket", "top", "since"])]
    records: bool,
    /// One JSON document.
    #[arg(long)]
    json: bool,
}

/// `dumpshell report <dump>... -o page.html`: one self-contained HTML page (parallel stacks,
/// async chains, causality graph, heap, exceptions, locks, thread pool); for several dumps, a
/// page of their buckets and then each dump.
#[derive(Parser, Debug)]
#[command(name = "dumpshell report")]
struct ReportCli {
    /// The dump, or dumps (and folders of dumps) for a page of a set.
    #[arg(required = true)]
    dumps: Vec<PathBuf>,
    /// The page to write.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        default_value = "report.html"
    )]
    output: PathBuf,
    /// Title of a page of several dumps.
    #[arg(long)]
    title: Option<String>,
    /// How many dumps to read at once (default: one per core).
    #[arg(long, short = 'j', value_name = "N", default_value_t = 0)]
    jobs: usize,
    #[command(flatten)]
    open: OpenArgs,
}

/// `dumpshell completions <shell>`: the shell completion script, from the clap definitions.
#[derive(Parser, Debug)]
#[command(name = "dumpshell completions")]
struct CompletionsCli {
    /// The shell to complete in.
    shell: clap_complete::Shell,
}

/// The whole command line as one clap definition (the dump options, and `triage`,
/// `completions` and `man` as subcommands): what completions and the man page are made from.
fn full_cli() -> clap::Command {
    with_version(Cli::command())
        .subcommand(
            TriageCli::command()
                .name("triage")
                .about("a one-page summary of each of many dumps"),
        )
        .subcommand(
            BucketsCli::command()
                .name("buckets")
                .about("the buckets of the dumps in the triage store"),
        )
        .subcommand(
            ReportCli::command()
                .name("report")
                .about("one self-contained HTML page of a dump or of a set of dumps"),
        )
        .subcommand(
            CompletionsCli::command()
                .name("completions")
                .about("print the shell completion script"),
        )
        .subcommand(
            clap::Command::new("man")
                .about("print the man page (roff); with a command's name, that command's page")
                .arg(
                    clap::Arg::new("command")
                        .help("a session command (`dumpheap`, `clrstack`, ...)"),
                ),
        )
}

/// `--version` names the runtimes this build reads.
fn with_version(cmd: clap::Command) -> clap::Command {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    cmd.long_version(
        TEXT.get_or_init(|| {
            format!(
                "{}\n{}",
                env!("CARGO_PKG_VERSION"),
                commands::about::runtimes_read()
            )
        })
        .as_str(),
    )
}

fn run_triage(cli: TriageCli) -> i32 {
    let dumps = fleet::expand(&cli.dumps);
    let opts = cli.open.options();
    let discover = cli.open.discover();
    if !cli.buckets {
        return i32::from(fleet::triage_pages(
            &dumps, &opts, &discover, cli.jobs, cli.json,
        ));
    }
    let store = match cli.store.path(cli.open.cache_dir.as_ref()) {
        None => None,
        Some(p) => match store::Store::open(&p) {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("dumpshell: {e} (going on without it)");
                None
            }
        },
    };
    let f = fleet::sign_all(&dumps, &opts, &discover, cli.jobs, store);
    if let Some(e) = &f.store_error {
        eprintln!("dumpshell: {e}");
    }
    let buckets = commands::buckets::group(&f.records);
    let failed = fleet::failures(&f.records);
    if cli.json {
        println!(
            "{}",
            fleet::buckets_document(&buckets, &failed, Some(f.read), Some(f.reused))
        );
    } else {
        print!("{}", commands::buckets::render(&buckets));
        println!(
            "{} dumps read, {} not read again (their content was read before)",
            f.read, f.reused
        );
        for (d, e) in &failed {
            if e.contains(d.as_str()) {
                println!("not read: {e}");
            } else {
                println!("not read: {d}: {e}");
            }
        }
    }
    i32::from(!failed.is_empty())
}

fn run_buckets(cli: BucketsCli) -> i32 {
    let path = cli
        .store
        .clone()
        .or_else(|| {
            cli.cache_dir
                .clone()
                .or_else(default_cache_dir)
                .map(|d| d.join("triage.sqlite"))
        })
        .unwrap_or_else(|| PathBuf::from("triage.sqlite"));
    if !path.is_file() {
        eprintln!(
            "dumpshell: no triage store at {} (dumpshell triage --buckets <dumps> makes it)",
            path.display()
        );
        return 2;
    }
    let records = match store::Store::open(&path).and_then(|s| s.records()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("dumpshell: {e}");
            return 2;
        }
    };
    if cli.records {
        for r in &records {
            println!("{}", serde_json::to_string(r).unwrap_or_default());
        }
        return 0;
    }
    let mut buckets = commands::buckets::group(&records);
    if let Some(since) = &cli.since {
        let Some(t) = fleet::parse_time(since) else {
            eprintln!(
                "dumpshell: --since {since}: not seconds since 1970 nor YYYY-MM-DD[THH:MM[:SS]]"
            );
            return 2;
        };
        buckets.retain(|b| b.first_seen.is_some_and(|f| f >= t));
    }
    if let Some(id) = &cli.bucket {
        buckets.retain(|b| b.id.starts_with(id.as_str()));
        if buckets.is_empty() {
            eprintln!("dumpshell: no bucket {id} in {}", path.display());
            return 1;
        }
        if !cli.json {
            for b in &buckets {
                println!("{} ({} dumps): {}", b.id, b.count, b.signature);
                for d in &b.dumps {
                    let r = records.iter().find(|r| &r.dump == d);
                    println!(
                        "  {}  {}  {}",
                        r.and_then(|r| r.time)
                            .map_or("?".into(), commands::buckets::utc),
                        r.and_then(|r| r.runtime.clone()).unwrap_or_default(),
                        d
                    );
                }
            }
            return 0;
        }
    }
    if let Some(n) = cli.top {
        buckets.truncate(n);
    }
    if cli.json {
        println!("{}", fleet::buckets_document(&buckets, &[], None, None));
    } else {
        print!("{}", commands::buckets::render(&buckets));
    }
    0
}

/// The documents of one dump's report: every command [`report::COMMANDS`] names, run through
/// the command library, and its triage.
fn report_of(
    path: &std::path::Path,
    name: &str,
    opts: &dumpreader::OpenOptions,
    discover: &clrdata::DiscoverOptions,
) -> (report::Report, commands::triage::Triage) {
    let mut r = report::Report::new(name);
    let t = commands::triage::triage_with(path, opts, discover);
    r.triage = Some(
        serde_json::json!({"schema": commands::JSON_SCHEMA_VERSION, "command": "triage", "result": t}),
    );
    if t.error.is_some() {
        return (r, t);
    }
    let Ok(s) = Session::open_with(path, opts) else {
        return (r, t);
    };
    let s = s.with_discover_options(discover.clone());
    for cmd in report::COMMANDS {
        let doc = match commands::execute(&s, cmd) {
            Ok(Some((out, _))) => out.json_document(),
            Ok(None) => continue,
            Err(e) => e.json_document(cmd.split_whitespace().next().unwrap_or(cmd)),
        };
        // every command of COMMANDS has its slot
        let _ = r.add(doc);
    }
    (r, t)
}

fn run_report(cli: ReportCli) -> i32 {
    let dumps = fleet::expand(&cli.dumps);
    let opts = cli.open.options();
    let discover = cli.open.discover();
    let name_of = |p: &PathBuf| {
        p.file_name().map_or_else(
            || p.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    };
    let page = if let [one] = dumps.as_slice() {
        let (r, t) = report_of(one, &name_of(one), &opts, &discover);
        if let Some(e) = &t.error {
            eprintln!("dumpshell: {e}");
            return 1;
        }
        r.render()
    } else {
        let pb = fleet::bar(dumps.len(), "report");
        let slots: Vec<std::sync::Mutex<Option<(report::Report, commands::buckets::Record)>>> =
            dumps.iter().map(|_| Default::default()).collect();
        commands::triage::parallel(dumps.len(), cli.jobs, &|i| {
            let (r, t) = report_of(&dumps[i], &name_of(&dumps[i]), &opts, &discover);
            let mut rec = commands::buckets::Record::of(&t, None);
            rec.dump = name_of(&dumps[i]);
            *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some((r, rec));
            pb.inc(1);
        });
        pb.finish_and_clear();
        let mut reports = Vec::new();
        let mut records = Vec::new();
        for s in slots {
            if let Some((r, rec)) = s.into_inner().ok().flatten() {
                reports.push((rec.dump.clone(), r));
                records.push(rec);
            }
        }
        let buckets = commands::buckets::group(&records)
            .into_iter()
            .map(|b| report::Bucket {
                signature: b.signature,
                count: b.count,
                dumps: b.dumps,
            })
            .collect();
        report::BucketSet {
            title: cli
                .title
                .clone()
                .unwrap_or_else(|| format!("{} dumps", reports.len())),
            buckets,
            dumps: reports,
        }
        .render()
    };
    match std::fs::write(&cli.output, page) {
        Ok(()) => {
            eprintln!("wrote {}", cli.output.display());
            0
        }
        Err(e) => {
            eprintln!("dumpshell: writing {}: {e}", cli.output.display());
            2
        }
    }
}

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    match args.get(1).and_then(|a| a.to_str()) {
        Some("triage") => {
            let cli = TriageCli::parse_from(args.iter().skip(1));
            std::process::exit(run_triage(cli));
        }
        Some("buckets") => {
            let cli = BucketsCli::parse_from(args.iter().skip(1));
            std::process::exit(run_buckets(cli));
        }
        Some("report") => {
            let cli = ReportCli::parse_from(args.iter().skip(1));
            std::process::exit(run_report(cli));
        }
        Some("completions") => {
            let cli = CompletionsCli::parse_from(args.iter().skip(1));
            let mut script = Vec::new();
            clap_complete::generate(cli.shell, &mut full_cli(), "dumpshell", &mut script);
            // A closed pipe (`| head`) is no error worth reporting.
            let _ = std::io::stdout().write_all(&script);
            return;
        }
        Some("man") if args.len() == 2 => {
            let mut page = Vec::new();
            let r = clap_mangen::Man::new(full_cli()).render(&mut page);
            page.extend_from_slice(commands::help::man_commands_section().as_bytes());
            let _ = std::io::stdout().write_all(&page);
            std::process::exit(i32::from(r.is_err()));
        }
        Some("man") if args.len() == 3 => {
            let topic = args[2].to_string_lossy();
            match commands::help::man_page(&topic) {
                Ok(page) => {
                    let _ = std::io::stdout().write_all(page.as_bytes());
                    return;
                }
                Err(e) => {
                    eprintln!("dumpshell man: {e}");
                    std::process::exit(2);
                }
            }
        }
        _ => {}
    }
    if std::io::stdout().is_terminal() {
        if let Some((_, columns)) = console::Term::stdout().size_checked() {
            commands::text::set_width(columns);
        }
    }
    let cli = with_version(Cli::command()).get_matches_from(&args);
    let cli = Cli::from_arg_matches(&cli).unwrap_or_else(|e| e.exit());
    match run(cli) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("dumpshell: {e:#}");
            std::process::exit(2);
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<i32> {
    let session = Session::open_with(&cli.dump, &cli.open.options())
        .with_context(|| format!("opening {}", cli.dump.display()))?
        .with_discover_options(cli.open.discover());
    session.control.set_progress(Arc::new(progress::Stderr));
    session.set_name_style(cli.type_names);
    let mut lines: Vec<String> = cli.commands.clone();
    if let Some(script) = &cli.script {
        let text = std::fs::read_to_string(script)
            .with_context(|| format!("reading script {}", script.display()))?;
        lines.extend(text.lines().map(str::to_owned));
    }
    let interactive = lines.is_empty() && cli.script.is_none() && std::io::stdin().is_terminal();
    if interactive {
        return interactive_loop(&session, cli.json);
    }
    if lines.is_empty() && cli.script.is_none() {
        for line in std::io::stdin().lock().lines() {
            lines.push(line.context("reading commands from standard input")?);
        }
    }
    let mut failed = 0;
    for line in &lines {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if matches!(line, "exit" | "quit" | "q") {
            break;
        }
        if !run_line(&session, line, cli.json) {
            failed += 1;
        }
    }
    Ok(if failed > 0 { 1 } else { 0 })
}

/// Runs one line and prints its result; false when the command failed (said on stderr).
fn run_line(session: &Session, line: &str, json_default: bool) -> bool {
    let bare = commands::registry::without_sos_prefix(line);
    let name = bare.split_whitespace().next().unwrap_or("").to_owned();
    if matches!(name.as_str(), "help" | "!help" | "soshelp" | "!soshelp") {
        let json = json_default || bare.split_whitespace().any(|w| w == "--json");
        let topic = bare.split_whitespace().skip(1).find(|w| *w != "--json");
        let r = commands::help::help_output(topic)
            .and_then(|out| print_output(&out, json, Default::default()));
        return match r {
            Ok(()) => true,
            Err(e) => {
                if json {
                    println!("{}", e.json_document("help"));
                }
                eprintln!("dumpshell: {line}: {e}");
                false
            }
        };
    }
    match commands::execute_streaming(session, line) {
        Ok(None) => true,
        Ok(Some((out, json))) => {
            match print_output(&out, json || json_default, session.name_style()) {
                Ok(()) => true,
                Err(e) => {
                    eprintln!("dumpshell: {line}: {e}");
                    false
                }
            }
        }
        Err(e) => {
            if json_default || line.split_whitespace().any(|w| w == "--json") {
                println!("{}", e.json_document(&name));
            }
            eprintln!("dumpshell: {line}: {e}");
            false
        }
    }
}

fn print_output(
    out: &Output,
    json: bool,
    style: commands::style::NameStyle,
) -> Result<(), commands::CommandError> {
    let stdout = std::io::stdout();
    let pretty = stdout.is_terminal();
    let mut w = std::io::BufWriter::new(stdout.lock());
    let r = out.write_to(&mut w, json, pretty, style);
    let flushed = w.flush();
    match r {
        // A closed pipe (`dumpshell ... | head`) is not an error worth reporting.
        Err(commands::CommandError::Output {
            broken_pipe: true, ..
        }) => Ok(()),
        Err(e) => Err(e),
        Ok(()) => {
            let _ = flushed;
            Ok(())
        }
    }
}

fn history_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))?;
    let dir = base.join("dumpshell");
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir.join("history"))
}

mod completion {
    use commands::{registry, Session};
    use rustyline::completion::{Completer, Pair};
    use rustyline::Context;
    use std::sync::OnceLock;

    /// How many type names one Tab offers at most.
    const MAX_TYPES: usize = 200;

    /// Completes command names and aliases at the start of the line, and type names from the
    /// dump's heap after `-type` / `--type`.
    pub struct Complete<'s> {
        pub session: &'s Session,
        types: OnceLock<Vec<String>>,
    }

    impl<'s> Complete<'s> {
        pub fn new(session: &'s Session) -> Self {
            Complete {
                session,
                types: OnceLock::new(),
            }
        }

        /// The names of the heap's types (read once, from `dumpheap -stat`).
        fn types(&self) -> &[String] {
            self.types.get_or_init(|| {
                let Ok(Some((out, _))) = commands::execute(self.session, "dumpheap -stat") else {
                    return Vec::new();
                };
                let Some(stat) = out.typed::<commands::heap::DumpHeap>() else {
                    return Vec::new();
                };
                let mut v: Vec<String> = stat
                    .statistics
                    .iter()
                    .map(|r| r.name.clone())
                    .filter(|n| !n.contains(char::is_whitespace))
                    .collect();
                v.sort_unstable();
                v.dedup();
                v
            })
        }
    }

    /// The type names offered for `prefix`: those starting with it, else those containing it
    /// (`-type` matches a substring, as SOS's does).
    pub fn type_candidates<'a>(types: &'a [String], prefix: &str) -> Vec<&'a str> {
        let starts: Vec<&str> = types
            .iter()
            .map(String::as_str)
            .filter(|t| t.starts_with(prefix))
            .take(MAX_TYPES)
            .collect();
        if !starts.is_empty() || prefix.is_empty() {
            return starts;
        }
        types
            .iter()
            .map(String::as_str)
            .filter(|t| t.contains(prefix))
            .take(MAX_TYPES)
            .collect()
    }

    /// The options of `command` (a name or alias) that start with `word`, spelled as the
    /// user began: `--stat` after `--`, else SOS's one-dash spelling (`-stat`, and `-s` for a
    /// short option), sorted. Empty for an unknown command.
    pub fn option_candidates(command: &str, word: &str) -> Vec<String> {
        let Some(spec) = commands::lookup(command) else {
            return Vec::new();
        };
        let help = commands::help::command_help(spec);
        let double = word.starts_with("--");
        let mut v: Vec<String> = help
            .options
            .iter()
            .flat_map(|o| {
                let long = if double {
                    o.long.clone()
                } else {
                    o.sos.clone()
                };
                long.into_iter().chain(o.short.clone().filter(|_| !double))
            })
            .filter(|o| o.starts_with(word))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    impl rustyline::Helper for Complete<'_> {}
    impl rustyline::highlight::Highlighter for Complete<'_> {}
    impl rustyline::validate::Validator for Complete<'_> {}
    impl rustyline::hint::Hinter for Complete<'_> {
        type Hint = String;
    }

    fn pairs<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<Pair> {
        names
            .into_iter()
            .map(|n| Pair {
                display: n.into(),
                replacement: n.into(),
            })
            .collect()
    }

    impl Completer for Complete<'_> {
        type Candidate = Pair;
        fn complete(
            &self,
            line: &str,
            pos: usize,
            _: &Context<'_>,
        ) -> rustyline::Result<(usize, Vec<Pair>)> {
            let head = &line[..pos];
            if head.contains(char::is_whitespace) {
                // The word under the cursor, and the one before it.
                let start = head.rfind(char::is_whitespace).map_or(0, |i| i + 1);
                let word = &head[start..];
                let before = head[..start].split_whitespace().last().unwrap_or("");
                if matches!(before, "-type" | "--type") {
                    return Ok((start, pairs(type_candidates(self.types(), word))));
                }
                if word.starts_with('-') {
                    let command = head.split_whitespace().next().unwrap_or("");
                    let options = option_candidates(command, word);
                    return Ok((start, pairs(options.iter().map(String::as_str))));
                }
                return Ok((pos, Vec::new()));
            }
            let bang = usize::from(head.starts_with('!'));
            let prefix = &head[bang..];
            let mut names: Vec<&str> = registry()
                .iter()
                .flat_map(|c| std::iter::once(c.name).chain(c.aliases.iter().copied()))
                .chain(["help", "exit"])
                .filter(|n| n.starts_with(prefix))
                .collect();
            names.sort_unstable();
            names.dedup();
            Ok((bang, pairs(names)))
        }
    }
}

fn interactive_loop(session: &Session, json: bool) -> anyhow::Result<i32> {
    use rustyline::error::ReadlineError;
    // While a command runs, Ctrl-C asks it to stop and the session goes on; while reading a
    // line, rustyline sees Ctrl-C itself (the terminal is in raw mode) and clears the line.
    let control = session.control.clone();
    ctrlc::set_handler(move || control.request()).context("installing the Ctrl-C handler")?;
    let mut rl =
        rustyline::Editor::<completion::Complete, rustyline::history::DefaultHistory>::new()?;
    rl.set_helper(Some(completion::Complete::new(session)));
    let hist = history_path();
    if let Some(h) = &hist {
        let _ = rl.load_history(h);
    }
    println!(
        "dumpshell {}: {} ({}). Type 'help' for commands, 'exit' to leave.",
        env!("CARGO_PKG_VERSION"),
        session.path.display(),
        match session.target.info().format {
            dumpreader::DumpFormat::ElfCore => "ELF core",
            dumpreader::DumpFormat::Minidump => "minidump",
        }
    );
    loop {
        match rl.readline("> ") {
            Ok(line) => {
                let line = line.trim();
                if line.is_empty() {
                    continue;
                }
                if matches!(line, "exit" | "quit" | "q") {
                    break;
                }
                let _ = rl.add_history_entry(line);
                run_line(session, line, json);
            }
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                eprintln!("dumpshell: reading input: {e}");
                break;
            }
        }
    }
    if let Some(h) = &hist {
        let _ = rl.save_history(h);
    }
    Ok(0)
}
