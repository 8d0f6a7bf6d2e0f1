//! HTTP requests on the GC heap: the incoming requests ASP.NET Core is serving (`dumprequests`)
//! and the outgoing `HttpClient` requests (`dumphttp`), found by a walk of the whole heap as
//! SOS's commands find them (dotnet/diagnostics, Microsoft.Diagnostics.ExtensionCommands
//! `DumpRequestsCommand`, `DumpHttpCommand`).
//!
//! Everything is read by field name, as the framework's sources name them:
//! - Incoming: every `Microsoft.AspNetCore.Http.DefaultHttpContext` whose `_features`
//!   (`FeatureReferences<FeatureInterfaces>`) holds a feature collection
//!   (`<Collection>k__BackingField`; a context returned to its pool holds none). The collection
//!   is the server's request (Kestrel's `HttpProtocol`): its method is the string
//!   `<Method>k__BackingField` where that field is a string, else `_methodText` (Kestrel keeps
//!   the method as an enum there and its text in `_methodText`); `<Scheme>k__BackingField`,
//!   `<Path>k__BackingField` and `<QueryString>k__BackingField` are strings (null read as
//!   empty).
//! - Outgoing: every `System.Net.Http.HttpRequestMessage` (`_method` → `HttpMethod._method`,
//!   `_requestUri` → `Uri._string`) and every `System.Net.Http.HttpResponseMessage`
//!   (`_requestMessage`, `_statusCode`). A request met through its response carries the
//!   response's status code; a request met both ways is listed once, with it.

use crate::model::fields::{field, int, obj, object_fields, struct_fields};
use crate::model::heap::GcHeap;
use crate::model::objects::{FieldData, FieldValue, ObjectReader};
use crate::ClrError;
use dumpreader::Memory;
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// ASP.NET Core's per-request context.
pub const HTTP_CONTEXT_TYPE: &str = "Microsoft.AspNetCore.Http.DefaultHttpContext";
/// HttpClient's request.
pub const REQUEST_MESSAGE_TYPE: &str = "System.Net.Http.HttpRequestMessage";
/// HttpClient's response.
pub const RESPONSE_MESSAGE_TYPE: &str = "System.Net.Http.HttpResponseMessage";

/// One incoming request (a `DefaultHttpContext` with its server's request).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IncomingRequest {
    /// The `DefaultHttpContext`.
    pub address: u64,
    /// Its feature collection (the server's request object).
    pub features: u64,
    /// The HTTP method (`GET`).
    pub method: String,
    /// `http` or `https`.
    pub scheme: String,
    /// The path.
    pub path: String,
    /// The query string, with its `?` (empty when none).
    pub query: String,
}

impl IncomingRequest {
    /// The path and query, as SOS's `Url` column shows them.
    pub fn url(&self) -> String {
        format!("{}{}", self.path, self.query)
    }
}

/// One outgoing request (`HttpRequestMessage`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutgoingRequest {
    /// The `HttpRequestMessage`.
    pub address: u64,
    /// Its MethodTable.
    pub mt: u64,
    /// The HTTP method (`HttpMethod._method`).
    pub method: String,
    /// The request URI as given (`Uri._string`).
    pub uri: String,
    /// The `HttpResponseMessage` that answers it, when one was found on the heap.
    pub response: Option<u64>,
    /// The response's `_statusCode`; None while no response was found (pending).
    pub status_code: Option<i32>,
}

/// What a walk found, and what it could not read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WebScan<T> {
    /// The requests, in heap order (outgoing: those with a response first).
    pub requests: Vec<T>,
    /// Objects of the types looked for that could not be read: where and why.
    pub problems: Vec<String>,
    /// Damaged places the heap walk met (the list may be incomplete).
    pub walk_errors: Vec<String>,
}

/// The walk was stopped by its progress callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;

/// Walks the heap and calls `visit` for each object whose type is one of `types`, with the
/// index of its type in `types`. `progress` gets the bytes walked now and then; false stops.
fn walk_types<M: Memory>(
    r: &ObjectReader<'_, M>,
    heap: &GcHeap,
    types: &[&str],
    progress: &dyn Fn(u64) -> bool,
    mut visit: impl FnMut(usize, u64, u64),
) -> Result<Vec<String>, Cancelled> {
    let mut kinds: HashMap<u64, Option<usize>> = HashMap::new();
    let mut ticks = crate::model::heap::WalkTicks::default();
    let mut it = heap.objects(r.rt);
    for o in it.by_ref() {
        if !ticks.tick(o.size, progress) {
            return Err(Cancelled);
        }
        if o.is_free {
            continue;
        }
        let k = *kinds.entry(o.mt).or_insert_with(|| {
            let n = r.type_name(o.mt);
            types.iter().position(|t| *t == n)
        });
        if let Some(k) = k {
            visit(k, o.address, o.mt);
        }
    }
    Ok(it.errors().iter().map(|e| e.to_string()).collect())
}

fn no_field(type_name: &str, name: &str) -> ClrError {
    ClrError::NoSuchField {
        type_name: type_name.into(),
        field: name.into(),
        is_static: false,
    }
}

/// A string field's value (`None` for null) of the object `owner` at `addr`.
fn string_field(
    f: &[FieldData],
    name: &str,
    owner: &str,
    addr: u64,
) -> crate::Result<Option<String>> {
    match field(f, name).map(|d| (&d.type_name, &d.value)) {
        None => Err(no_field(owner, name)),
        Some((t, _)) if t != "System.String" => Err(ClrError::not_found_at(
            format!("the string field {name} of {owner}"),
            addr,
            format!("it is a {t}"),
        )),
        Some((_, FieldValue::Object { address: 0, .. })) => Ok(None),
        Some((
            _,
            FieldValue::Object {
                string: Some(s), ..
            },
        )) => Ok(Some(s.clone())),
        Some((_, v)) => Err(ClrError::corrupt(
            format!("the string field {name} of {owner}"),
            addr,
            format!("not a readable string ({})", v.display()),
        )),
    }
}

/// The incoming requests: every `DefaultHttpContext` that holds a feature collection.
pub fn incoming_requests<M: Memory>(
    r: &ObjectReader<'_, M>,
    heap: &GcHeap,
    progress: &dyn Fn(u64) -> bool,
) -> Result<WebScan<IncomingRequest>, Cancelled> {
    let mut contexts = Vec::new();
    let walk_errors = walk_types(r, heap, &[HTTP_CONTEXT_TYPE], progress, |_, a, _| {
        contexts.push(a)
    })?;
    let mut out = WebScan {
        requests: Vec::new(),
        problems: Vec::new(),
        walk_errors,
    };
    let mut struct_mts = HashMap::new();
    for a in contexts {
        match incoming_request(r, a, &mut struct_mts) {
            Ok(Some(q)) => out.requests.push(q),
            Ok(None) => {}
            Err(e) => out.problems.push(format!("DefaultHttpContext {a:#x}: {e}")),
        }
    }
    Ok(out)
}

/// `struct_mts`: the MethodTables of the `_features` struct types found so far, by name.
fn incoming_request<M: Memory>(
    r: &ObjectReader<'_, M>,
    a: u64,
    struct_mts: &mut HashMap<String, Option<u64>>,
) -> crate::Result<Option<IncomingRequest>> {
    let (_, f) = object_fields(r, a, "DefaultHttpContext")?;
    let features_field =
        field(&f, "_features").ok_or_else(|| no_field(HTTP_CONTEXT_TYPE, "_features"))?;
    let features = features_field;
    // FeatureReferences<FeatureInterfaces>: a generic struct, its MethodTable looked up by
    // name among the loaded constructed types.
    let mut features = features.clone();
    if let FieldValue::ValueType { mt: mt @ None, .. } = &mut features.value {
        *mt = *struct_mts
            .entry(features_field.type_name.clone())
            .or_insert_with(|| crate::model::inspect::struct_field_mt(r, features_field));
    }
    let features = struct_fields(r, &features, "_features")?;
    let slot = "<Collection>k__BackingField";
    if field(&features, slot).is_none() {
        return Err(no_field("DefaultHttpContext._features", slot));
    }
    let collection = obj(&features, slot);
    if collection == 0 {
        return Ok(None);
    }
    let (cmt, c) = object_fields(r, collection, "the feature collection")
        .map_err(|e| e.context("_features.<Collection>k__BackingField"))?;
    let owner = r.type_name(cmt);
    // `<Method>k__BackingField` when it is a string (a server that keeps the method's text
    // there); Kestrel keeps an enum there and the text in `_methodText`.
    let method = match string_field(&c, "<Method>k__BackingField", &owner, collection) {
        Ok(Some(m)) => m,
        _ => string_field(&c, "_methodText", &owner, collection)?.unwrap_or_default(),
    };
    let text = |name: &str| -> crate::Result<String> {
        Ok(string_field(&c, name, &owner, collection)?.unwrap_or_default())
    };
    Ok(Some(IncomingRequest {
        address: a,
        features: collection,
        method,
        scheme: text("<Scheme>k__BackingField")?,
        path: text("<Path>k__BackingField")?,
        query: text("<QueryString>k__BackingField")?,
    }))
}

/// The outgoing requests: every `HttpRequestMessage`, and the request of every
/// `HttpResponseMessage`; those with a response first, each request once.
pub fn outgoing_requests<M: Memory>(
    r: &ObjectReader<'_, M>,
    heap: &GcHeap,
    progress: &dyn Fn(u64) -> bool,
) -> Result<WebScan<OutgoingRequest>, Cancelled> {
    // (request, response) in heap order
    let mut found: Vec<(u64, Option<u64>)> = Vec::new();
    let mut problems = Vec::new();
    let types = [REQUEST_MESSAGE_TYPE, RESPONSE_MESSAGE_TYPE];
    let walk_errors = walk_types(r, heap, &types, progress, |k, a, _| {
        if k == 0 {
            found.push((a, None));
            return;
        }
        let request = object_fields(r, a, "HttpResponseMessage").and_then(|(_, f)| {
            field(&f, "_requestMessage")
                .map(|_| obj(&f, "_requestMessage"))
                .ok_or_else(|| no_field(RESPONSE_MESSAGE_TYPE, "_requestMessage"))
        });
        match request {
            Err(e) => problems.push(format!("HttpResponseMessage {a:#x}: {e}")),
            Ok(0) => problems.push(format!(
                "HttpResponseMessage {a:#x}: its _requestMessage is null"
            )),
            Ok(q) => found.push((q, Some(a))),
        }
    })?;
    let mut requests = Vec::new();
    for (q, resp) in found {
        match outgoing_request(r, q, resp) {
            Ok(x) => requests.push(x),
            Err(e) => problems.push(match resp {
                Some(p) => {
                    format!("HttpRequestMessage {q:#x} (of HttpResponseMessage {p:#x}): {e}")
                }
                None => format!("HttpRequestMessage {q:#x}: {e}"),
            }),
        }
    }
    // Those with a status code first (a stable sort keeps the heap order in each part); a
    // request met again without its response is dropped.
    requests.sort_by_key(|q: &OutgoingRequest| q.status_code.is_none());
    let mut seen = HashSet::new();
    requests.retain(|q| seen.insert(q.address));
    Ok(WebScan {
        requests,
        problems,
        walk_errors,
    })
}

/// The string `inner` of the object the reference field `outer` of `f` holds.
fn inner_string<M: Memory>(
    r: &ObjectReader<'_, M>,
    f: &[FieldData],
    outer: &str,
    what: &str,
    inner: &str,
) -> crate::Result<String> {
    if field(f, outer).is_none() {
        return Err(no_field(REQUEST_MESSAGE_TYPE, outer));
    }
    let o = obj(f, outer);
    if o == 0 {
        return Err(ClrError::not_found(outer, "null"));
    }
    let (_, g) = object_fields(r, o, what).map_err(|e| e.context(outer))?;
    string_field(&g, inner, what, o)?
        .ok_or_else(|| ClrError::not_found_at(format!("{what}.{inner}"), o, "null"))
}

fn outgoing_request<M: Memory>(
    r: &ObjectReader<'_, M>,
    q: u64,
    response: Option<u64>,
) -> crate::Result<OutgoingRequest> {
    let (mt, f) = object_fields(r, q, "HttpRequestMessage")?;
    let method = inner_string(r, &f, "_method", "HttpMethod", "_method")?;
    let uri = inner_string(r, &f, "_requestUri", "Uri", "_string")?;
    let status_code = match response {
        None => None,
        Some(p) => {
            let (_, g) = object_fields(r, p, "HttpResponseMessage")?;
            Some(
                int(&g, "_statusCode")
                    .ok_or_else(|| no_field(RESPONSE_MESSAGE_TYPE, "_statusCode"))?
                    as i32,
            )
        }
    };
    Ok(OutgoingRequest {
        address: q,
        mt,
        method,
        uri,
        response,
        status_code,
    })
}

/// The host of an absolute URI as `System.Uri.Host` gives it: between `scheme://` (and any
/// `user@`) and the port, path, query or fragment, lower-cased (a DNS name's canonical form;
/// an IPv6 address keeps its brackets). None when `uri` is not absolute.
pub fn uri_host(uri: &str) -> Option<String> {
    let (scheme, rest) = uri.split_once("://")?;
    if scheme.is_empty()
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return None;
    }
    let authority = rest.split(['/', '?', '#', '\\']).next().unwrap_or("");
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if authority.starts_with('[') {
        match authority.find(']') {
            Some(e) => &authority[..=e],
            None => return None,
        }
    } else {
        authority.split(':').next().unwrap_or("")
    };
    Some(host.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::uri_host;

    #[test]
    fn hosts() {
        assert_eq!(
            uri_host("https://Example.com/a?b").as_deref(),
            Some("example.com")
        );
        assert_eq!(uri_host("http://u:p@h:8080/x").as_deref(), Some("h"));
        assert_eq!(uri_host("http://[::1]:5000/").as_deref(), Some("[::1]"));
        assert_eq!(uri_host("/relative"), None);
    }
}
