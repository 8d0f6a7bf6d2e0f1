//! A method's EH clauses as the code manager and ReadyToRun images give them (a leaf: both
//! [`super::codeman`] and [`super::r2r`] use it).

use serde::Serialize;

/// One EH clause of a method (`EE_ILEXCEPTION_CLAUSE`, `READYTORUN_EXCEPTION_CLAUSE`): native
/// offsets from the method's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct EhClause {
    /// `CorExceptionFlag`: 0 typed, 1 filter, 2 finally, 4 fault; 8 a duplicate the JIT
    /// made for a handler moved out of line (`CORINFO_EH_CLAUSE_DUPLICATE`).
    pub flags: u32,
    /// The protected range `[try_start, try_end)`.
    pub try_start: u32,
    /// Its end.
    pub try_end: u32,
    /// The handler (funclet) `[handler_start, handler_end)`.
    pub handler_start: u32,
    /// Its end.
    pub handler_end: u32,
    /// A filter clause's filter funclet's offset; else the class token (typed) or 0.
    pub filter_or_class: u32,
    /// The TypeHandle a JIT'd method's typed clause holds in place of its class token once the
    /// runtime resolved it (`COR_ILEXCEPTION_CLAUSE_CACHED_CLASS`: the pointer-sized union of
    /// `EE_ILEXCEPTION_CLAUSE`); `filter_or_class` is then not a token.
    pub cached_type: Option<u64>,
}

/// `COR_ILEXCEPTION_CLAUSE_CACHED_CLASS`: a typed clause whose class the runtime resolved and
/// cached as a TypeHandle in the clause (JIT'd code's `EE_ILEXCEPTION_CLAUSE` only).
pub const CACHED_CLASS: u32 = 0x1000_0000;

impl EhClause {
    /// The clause from its six fields in the runtime's order.
    pub fn new(
        flags: u32,
        try_start: u32,
        try_end: u32,
        handler_start: u32,
        handler_end: u32,
        filter_or_class: u32,
    ) -> EhClause {
        EhClause {
            flags,
            try_start,
            try_end,
            handler_start,
            handler_end,
            filter_or_class,
            cached_type: None,
        }
    }

    /// The clause's kind as SOS's ehinfo names it: `TYPED`, `FILTER`, `FINALLY` or `FAULT`
    /// (`CorExceptionFlag`'s low bits), `None` for another value.
    pub fn kind_name(&self) -> Option<&'static str> {
        match self.flags & 7 {
            0 => Some("TYPED"),
            1 => Some("FILTER"),
            2 => Some("FINALLY"),
            4 => Some("FAULT"),
            _ => None,
        }
    }

    /// A typed clause (`catch (T)`).
    pub fn is_typed(&self) -> bool {
        self.flags & 7 == 0
    }

    /// A filter clause (`COR_ILEXCEPTION_CLAUSE_FILTER`).
    pub fn is_filter(&self) -> bool {
        self.flags & 1 != 0
    }

    /// A duplicate clause (`CORINFO_EH_CLAUSE_DUPLICATE`).
    pub fn is_duplicate(&self) -> bool {
        self.flags & 8 != 0
    }
}
