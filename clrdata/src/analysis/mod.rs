//! Analysis: the questions a person asks of a dump — async chains and who waits for what,
//! tasks, timers, the thread pool, channels, locks and deadlocks, GC roots, exceptions. Built
//! on the model; returns typed results, prints nothing.

pub mod asyncsm;
mod bigvec;
pub mod causality;
pub mod channels;
pub mod collections;
pub mod dominators;
pub mod exceptions;
pub mod generations;
pub mod heapstat;
pub mod listing;
pub mod locks;
pub mod nearobj;
pub mod reach;
pub mod roots;
pub mod runtime_async;
pub mod starvation;
pub mod tasks;
pub mod threadlist;
pub mod threadpool;
pub mod timers;
pub mod totals;
pub mod typesearch;
pub mod web;
