//! Model: what the runtime's data means — the heap walk, objects and their fields, type and
//! method names, statics, delegates, code lookup and the stack walk. Imports data, discovery
//! and below.

pub mod delegates;
pub mod disasm;
pub mod dso;
pub mod dynamic;
pub mod fields;
pub mod heap;
pub mod il;
pub mod inspect;
pub mod instantiation;
pub mod loaderheap;
pub mod lookup_maps;
pub mod methods;
pub mod names;
pub mod objects;
pub mod oom;
pub mod precode;
pub mod stack;
pub mod version;
