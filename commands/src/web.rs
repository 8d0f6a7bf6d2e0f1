//! HTTP requests: `dumprequests` (the incoming requests ASP.NET Core is serving) and `dumphttp`
//! (HttpClient's requests and their responses). SOS's names, options and tables
//! (dotnet/diagnostics `DumpRequestsCommand`, `DumpHttpCommand`); the data comes from clrdata's
//! `web`.

use crate::addr::hex;
use crate::output::{CommandError, Output, Render};
use crate::session::{Clr, Session};
use crate::spec::CommandSpec;
use crate::text::grouped;
use clap::{Arg, ArgAction, ArgMatches, Command};
use clrdata::analysis::web::{self, Cancelled, WebScan};
use clrdata::model::objects::ObjectReader;
use serde::Serialize;

/// The commands of this file.
pub static SPECS: &[CommandSpec] = &[
    CommandSpec {
        name: "dumprequests",
        aliases: &[],
        about: "the incoming HTTP requests ASP.NET Core is serving (each DefaultHttpContext \
                with its method, scheme, path and query)",
        grammar: dumprequests_grammar,
        run: dumprequests,
    },
    CommandSpec {
        name: "dumphttp",
        aliases: &[],
        about: "HttpClient's requests (HttpRequestMessage) with their response's status code",
        grammar: dumphttp_grammar,
        run: dumphttp,
    },
];

/// What these commands read: the heap walk, type names, fields by name.
const NEEDS: &[clrdata::discovery::layout::Capability] = &[
    clrdata::discovery::layout::Capability::HeapWalk,
    clrdata::discovery::layout::Capability::TypeNames,
    clrdata::discovery::layout::Capability::Fields,
];

/// Runs `scan` over the heap with the session's progress and cancellation.
fn scan<T>(
    c: &Clr,
    f: impl FnOnce(
        &ObjectReader<'_, std::sync::Arc<dyn dumpreader::Target>>,
        &clrdata::GcHeap,
        &dyn Fn(u64) -> bool,
    ) -> Result<WebScan<T>, Cancelled>,
) -> Result<WebScan<T>, CommandError> {
    let heap = c.heap()?;
    let r = ObjectReader::new(&c.rt, &c.names);
    let progress = c.control.progress(heap.walk_bytes(), "walking the heap");
    f(&r, heap, &|n| progress.advance(n)).map_err(|_| CommandError::Cancelled)
}

/// SOS's text column (`Formats.Text`) of width `w`, left-aligned: padded, or cut at its start
/// to `...` and its last characters when longer.
fn left(text: &str, w: usize) -> String {
    let n = text.encode_utf16().count();
    if n <= w {
        return format!("{text}{}", " ".repeat(w - n));
    }
    let keep: String = {
        let chars: Vec<char> = text.chars().collect();
        chars[chars.len() - w.saturating_sub(3).min(chars.len())..]
            .iter()
            .collect()
    };
    format!("{}{keep}", ".".repeat(w.min(3)))
}

/// SOS's pointer format (`x12`, at least 12 hexadecimal digits).
fn pointer(a: u64) -> String {
    format!("{a:012x}")
}

/// The problems and walk errors a scan met, as the text's last lines.
fn problems_text<T>(s: &WebScan<T>) -> String {
    let mut t = String::new();
    for p in &s.problems {
        t.push_str(&format!("error: {p}\n"));
    }
    for e in &s.walk_errors {
        t.push_str(&format!(
            "warning: the heap walk met a damaged place: {e} (the list may be incomplete)\n"
        ));
    }
    t
}

// ------------------------------------------------------------------------------ dumprequests

fn dumprequests_grammar() -> Command {
    Command::new("dumprequests")
}

#[derive(Serialize)]
pub struct RequestOut {
    /// The DefaultHttpContext.
    pub address: String,
    /// Its feature collection (the server's request object).
    pub features: String,
    pub method: String,
    pub scheme: String,
    pub path: String,
    pub query: String,
    /// Path and query (SOS's `Url`).
    pub url: String,
}

#[derive(Serialize)]
pub struct DumpRequests {
    pub requests: Vec<RequestOut>,
    pub problems: Vec<String>,
    pub heap_walk_errors: Vec<String>,
    #[serde(skip)]
    scan: WebScan<web::IncomingRequest>,
}

impl Render for DumpRequests {
    /// SOS's table: `Address Method Scheme Url`, each column as wide as its widest value
    /// (at least 7, 6, 6 and 3, and its header), left-aligned; then `Found N active requests`,
    /// or `No requests found`.
    fn render(&self) -> String {
        let q = &self.scan.requests;
        let mut t = String::new();
        if q.is_empty() {
            t.push_str("No requests found\n");
        } else {
            let urls: Vec<String> = q.iter().map(|r| r.url()).collect();
            let width = |vals: &mut dyn Iterator<Item = usize>, min: usize, header: &str| {
                vals.max().unwrap_or(0).max(min).max(header.len())
            };
            let wa = width(
                &mut q.iter().map(|r| pointer(r.address).len()),
                7,
                "Address",
            );
            let wm = width(
                &mut q.iter().map(|r| r.method.encode_utf16().count()),
                6,
                "Method",
            );
            let ws = width(
                &mut q.iter().map(|r| r.scheme.encode_utf16().count()),
                6,
                "Scheme",
            );
            // SOS widens a column for its header only when the header is longer than the
            // table's column count (4): "Url" does not widen its column.
            let wu = urls
                .iter()
                .map(|u| u.encode_utf16().count())
                .max()
                .unwrap_or(0)
                .max(3);
            t.push_str(&format!(
                "{} {} {} {}\n",
                left("Address", wa),
                left("Method", wm),
                left("Scheme", ws),
                left("Url", wu)
            ));
            for (r, u) in q.iter().zip(&urls) {
                t.push_str(&format!(
                    "{} {} {} {}\n",
                    left(&pointer(r.address), wa),
                    left(&r.method, wm),
                    left(&r.scheme, ws),
                    left(u, wu)
                ));
            }
            t.push_str(&format!("Found {} active requests\n", q.len()));
        }
        t.push_str(&problems_text(&self.scan));
        t
    }
}

fn dumprequests(s: &Session, _m: &ArgMatches) -> Result<Output, CommandError> {
    let c = crate::session::clr_with(s, NEEDS)?;
    let sc = scan(&c, web::incoming_requests)?;
    let res = DumpRequests {
        requests: sc
            .requests
            .iter()
            .map(|r| RequestOut {
                address: hex(r.address),
                features: hex(r.features),
                method: r.method.clone(),
                scheme: r.scheme.clone(),
                path: r.path.clone(),
                query: r.query.clone(),
                url: r.url(),
            })
            .collect(),
        problems: sc.problems.clone(),
        heap_walk_errors: sc.walk_errors.clone(),
        scan: sc,
    };
    Ok(Output::rendered("dumprequests", res))
}

// ---------------------------------------------------------------------------------- dumphttp

fn dumphttp_grammar() -> Command {
    Command::new("dumphttp")
        .arg(
            Arg::new("stats")
                .long("stats")
                .action(ArgAction::SetTrue)
                .help("count the requests by method, status code and host instead of listing them"),
        )
        .arg(
            Arg::new("pending")
                .long("pending")
                .action(ArgAction::SetTrue)
                .help("only requests without a response"),
        )
        .arg(
            Arg::new("completed")
                .long("completed")
                .action(ArgAction::SetTrue)
                .help("only requests with a response"),
        )
        .arg(
            Arg::new("uri")
                .long("uri")
                .value_name("TEXT")
                .help("only requests whose URI contains TEXT (any case)"),
        )
        .arg(
            Arg::new("statuscode")
                .long("statuscode")
                .value_name("CODE")
                .help("only requests whose response has this status code"),
        )
}

#[derive(Serialize)]
pub struct HttpRequestOut {
    /// The HttpRequestMessage.
    pub address: String,
    pub mt: String,
    pub method: String,
    pub uri: String,
    /// `System.Uri.Host` of the URI (null when it is not absolute).
    pub host: Option<String>,
    /// The HttpResponseMessage, when one was found.
    pub response: Option<String>,
    /// Its status code; null while pending.
    pub status_code: Option<i32>,
}

#[derive(Serialize)]
pub struct HttpStatOut {
    pub count: u64,
    pub method: String,
    pub status_code: Option<i32>,
    pub host: Option<String>,
}

#[derive(Serialize)]
pub struct DumpHttp {
    /// The requests shown (after the options' filters).
    pub requests: Vec<HttpRequestOut>,
    /// With --stats: the requests counted by method, status code and host, most first.
    pub stats: Option<Vec<HttpStatOut>>,
    pub total: u64,
    pub problems: Vec<String>,
    pub heap_walk_errors: Vec<String>,
    #[serde(skip)]
    scan: WebScan<web::OutgoingRequest>,
}

fn status_text(s: Option<i32>) -> String {
    match s {
        None => String::new(),
        Some(v) if v < 0 => format!("-{}", grouped(v.unsigned_abs() as u64)),
        Some(v) => grouped(v as u64),
    }
}

impl Render for DumpHttp {
    /// SOS's tables: `Address MethodTable Method StatusCode Uri` (pointers right-aligned in
    /// 16, the method in 6, the status code right-aligned in 10), then `Total N requests`; with
    /// --stats `Statistics:`, `Count Method StatusCode Host` (the count in 14) and the total.
    fn render(&self) -> String {
        let mut t = String::new();
        match &self.stats {
            Some(stats) => {
                t.push_str("Statistics:\n");
                t.push_str(&format!(
                    "{:>14} {} {:>10} Host\n",
                    "Count",
                    left("Method", 6),
                    "StatusCode"
                ));
                for s in stats {
                    t.push_str(&format!(
                        "{:>14} {} {:>10} {}\n",
                        grouped(s.count),
                        left(&s.method, 6),
                        status_text(s.status_code),
                        s.host.as_deref().unwrap_or("")
                    ));
                }
            }
            None => {
                t.push_str(&format!(
                    "{:>16} {:>16} {} {:>10} Uri\n",
                    "Address",
                    "MethodTable",
                    left("Method", 6),
                    "StatusCode"
                ));
                for q in &self.scan.requests {
                    t.push_str(&format!(
                        "{:>16} {:>16} {} {:>10} {}\n",
                        pointer(q.address),
                        pointer(q.mt),
                        left(&q.method, 6),
                        status_text(q.status_code),
                        q.uri
                    ));
                }
            }
        }
        t.push_str(&format!("Total {} requests\n", self.total));
        t.push_str(&problems_text(&self.scan));
        t
    }
}

fn dumphttp(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let stats = m.get_flag("stats");
    let (mut pending, mut completed) = (m.get_flag("pending"), m.get_flag("completed"));
    // SOS: both mean neither.
    if pending && completed {
        (pending, completed) = (false, false);
    }
    let uri = m.get_one::<String>("uri").map(|u| u.to_lowercase());
    let status = m
        .get_one::<String>("statuscode")
        .map(|v| {
            v.parse::<i32>().map_err(|_| {
                CommandError::bad_argument(format!("--statuscode {v}"), "not a number")
            })
        })
        .transpose()?;
    let c = crate::session::clr_with(s, NEEDS)?;
    let mut sc = scan(&c, web::outgoing_requests)?;
    sc.requests.retain(|q| {
        let state = (!pending && !completed)
            || (pending && q.status_code.is_none())
            || (completed && q.status_code.is_some());
        let by_uri = uri
            .as_ref()
            .is_none_or(|u| q.uri.to_lowercase().contains(u.as_str()));
        let by_status = status.is_none_or(|v| q.status_code == Some(v));
        state && by_uri && by_status
    });
    let stats_out = stats.then(|| {
        // Grouped in the order met; most first (a stable sort: ties keep that order).
        let mut groups: Vec<HttpStatOut> = Vec::new();
        for q in &sc.requests {
            let host = web::uri_host(&q.uri);
            match groups
                .iter_mut()
                .find(|g| g.method == q.method && g.status_code == q.status_code && g.host == host)
            {
                Some(g) => g.count += 1,
                None => groups.push(HttpStatOut {
                    count: 1,
                    method: q.method.clone(),
                    status_code: q.status_code,
                    host,
                }),
            }
        }
        groups.sort_by_key(|g| std::cmp::Reverse(g.count));
        groups
    });
    let res = DumpHttp {
        requests: sc
            .requests
            .iter()
            .map(|q| HttpRequestOut {
                address: hex(q.address),
                mt: hex(q.mt),
                method: q.method.clone(),
                uri: q.uri.clone(),
                host: web::uri_host(&q.uri),
                response: q.response.map(hex),
                status_code: q.status_code,
            })
            .collect(),
        stats: stats_out,
        total: sc.requests.len() as u64,
        problems: sc.problems.clone(),
        heap_walk_errors: sc.walk_errors.clone(),
        scan: sc,
    };
    Ok(Output::rendered("dumphttp", res))
}

#[cfg(test)]
mod tests {
    use super::left;

    #[test]
    fn sos_text_columns() {
        assert_eq!(left("GET", 6), "GET   ");
        assert_eq!(left("DELETE", 6), "DELETE");
        // SOS cuts a left-aligned text at its start
        assert_eq!(left("OPTIONS", 6), "...ONS");
    }
}
