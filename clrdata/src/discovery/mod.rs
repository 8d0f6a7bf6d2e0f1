//! Discovery: which runtime is in the dump, its exact build, and where its layout comes from
//! (the contract descriptor, the hand-written supplements, the .NET 8 tables), resolved once
//! into a [`runtime::Runtime`] holding plain offsets. Imports nothing above [`crate::error`] and
//! [`crate::metadata`].

pub mod appshape;
pub mod descriptor;
pub mod imagecheck;
pub mod index;
pub mod layout;
pub mod nativeaot;
pub mod runtime;
pub mod supplement;
pub mod symbols;
