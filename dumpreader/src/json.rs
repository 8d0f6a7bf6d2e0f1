//! The JSON shape of this crate's errors (and of any layer's that follows it).
//!
//! An error serializes as one object: `"kind"` (the variant, in snake_case), its fields, and
//! `"message"` (its `Display` sentence). Addresses and file offsets are `"0x..."` strings
//! (a JSON number loses precision above 2^53, and a corrupt value can be any u64); sizes and
//! counts are numbers; paths and module identities are strings. docs/json.md, "Errors".
//!
//! A type gets that shape by deriving `Serialize` with `#[serde(remote = "Self", tag =
//! "kind", rename_all = "snake_case")]` (the derive then writes an inherent `serialize`: the
//! fields) and invoking [`crate::serialize_with_message!`] (the trait: fields and message).
//! `kind` and `message` are the shape's keys: a field of that name is renamed
//! (`#[serde(rename = "os_error")]`):
//!
//! ```
//! #[derive(Debug, thiserror::Error, serde::Serialize)]
//! #[serde(remote = "Self", tag = "kind", rename_all = "snake_case")]
//! enum MyError {
//!     #[error("cannot read {what} at {addr:#x}")]
//!     Read {
//!         what: String,
//!         #[serde(serialize_with = "dumpreader::json::hex")]
//!         addr: u64,
//!     },
//! }
//! dumpreader::serialize_with_message!(MyError);
//! ```

use serde::Serializer;
use std::fmt::Display;
use std::path::{Path, PathBuf};

/// An address or file offset as `"0x..."`.
pub fn hex<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&format_args!("{v:#x}"))
}

/// An optional address or file offset as `"0x..."` or `null`.
pub fn hex_opt<S: Serializer>(v: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => hex(v, s),
        None => s.serialize_none(),
    }
}

/// A value as its `Display` text (a module identity...).
pub fn display<T: Display, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

/// A path as a string (never fails: a path that is not UTF-8 is written lossily).
pub fn path<P: AsRef<Path>, S: Serializer>(p: &P, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&p.as_ref().display())
}

/// Paths as strings.
pub fn paths<S: Serializer>(v: &[PathBuf], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|p| p.display().to_string()))
}

/// Implements `serde::Serialize` for a type that derives it with `#[serde(remote = "Self")]`
/// (so that the derived serializer of its fields is an inherent function) and implements
/// `Display`: its fields, then `"message"`, the `Display` text. For a struct, `kind =
/// "name"` puts `"kind": "name"` first (an enum's derive writes its own with `tag = "kind"`).
/// The invoking crate depends on `serde` (with `derive`).
#[macro_export]
macro_rules! serialize_with_message {
    ($ty:ty $(, kind = $kind:literal)?) => {
        impl ::serde::Serialize for $ty {
            fn serialize<S: ::serde::Serializer>(
                &self,
                serializer: S,
            ) -> ::std::result::Result<S::Ok, S::Error> {
                struct Fields<'a>(&'a $ty);
                impl ::serde::Serialize for Fields<'_> {
                    fn serialize<S: ::serde::Serializer>(
                        &self,
                        serializer: S,
                    ) -> ::std::result::Result<S::Ok, S::Error> {
                        // The inherent function the derive wrote (remote = "Self").
                        <$ty>::serialize(self.0, serializer)
                    }
                }
                #[derive(::serde::Serialize)]
                struct Wire<'a> {
                    #[serde(skip_serializing_if = "Option::is_none")]
                    kind: ::std::option::Option<&'static str>,
                    #[serde(flatten)]
                    fields: Fields<'a>,
                    message: ::std::string::String,
                }
                let kind: ::std::option::Option<&'static str> = None $(.or(Some($kind)))?;
                ::serde::Serialize::serialize(
                    &Wire {
                        kind,
                        fields: Fields(self),
                        message: ::std::string::ToString::to_string(self),
                    },
                    serializer,
                )
            }
        }
    };
}
