//! Data: typed readers of the runtime's own structures under the runtime's names (MethodTable,
//! EEClass, FieldDesc, Module, ThreadStore, Thread, the GC handle table, the finalization
//! queue), each reading through the layout discovery chose. Imports only discovery and below.

pub mod domains;
pub mod gcvars;
pub mod handles;
pub mod statics;
pub mod syncblocks;
pub mod threads;
pub mod types;
