//! Tasks: `Task.m_stateFlags` decoded as SOS's `taskstate` does, and a task's delegate and
//! state object (what a queued task will run).
//!
//! Flags (dotnet/runtime v8.0.4 `Task.cs`, `TaskStateFlags`): the high 16 bits are the state
//! (`TASK_STATE_*`), the low 16 bits the creation options (`TaskCreationOptions`) and internal
//! options (`InternalTaskOptions`). The status follows `Task.Status` (and SOS's
//! `ClrMDHelper.GetTaskState`): Faulted, else Canceled, else RanToCompletion, else
//! WaitingForChildrenToComplete, else Running (delegate invoked), else WaitingToRun (started),
//! else WaitingForActivation, else Created (no state bit).

use crate::model::delegates::{self, DelegateMethod};
use crate::model::fields::{int, obj};
use crate::model::objects::{FieldValue, ObjectReader};
use crate::model::stack::StackWalker;
use dumpreader::Memory;
use serde::Serialize;

/// The state bits, with the names SOS's sources give them.
pub const TASK_STATE_BITS: &[(u32, &str)] = &[
    (0x0001_0000, "TASK_STATE_STARTED"),
    (0x0002_0000, "TASK_STATE_DELEGATE_INVOKED"),
    (0x0004_0000, "TASK_STATE_DISPOSED"),
    (0x0008_0000, "TASK_STATE_EXCEPTIONOBSERVEDBYPARENT"),
    (0x0010_0000, "TASK_STATE_CANCELLATIONACKNOWLEDGED"),
    (0x0020_0000, "TASK_STATE_FAULTED"),
    (0x0040_0000, "TASK_STATE_CANCELED"),
    (0x0080_0000, "TASK_STATE_WAITING_ON_CHILDREN"),
    (0x0100_0000, "TASK_STATE_RAN_TO_COMPLETION"),
    (0x0200_0000, "TASK_STATE_WAITINGFORACTIVATION"),
    (0x0400_0000, "TASK_STATE_COMPLETION_RESERVED"),
    (0x1000_0000, "TASK_STATE_WAIT_COMPLETION_NOTIFICATION"),
    (0x2000_0000, "TASK_STATE_EXECUTIONCONTEXT_IS_NULL"),
    (0x4000_0000, "TASK_STATE_TASKSCHEDULED_WAS_FIRED"),
];

/// The option bits of the low 16 bits (`TaskCreationOptions`, then `InternalTaskOptions`).
pub const TASK_OPTION_BITS: &[(u32, &str)] = &[
    (0x0001, "PreferFairness"),
    (0x0002, "LongRunning"),
    (0x0004, "AttachedToParent"),
    (0x0008, "DenyChildAttach"),
    (0x0010, "HideScheduler"),
    (0x0040, "RunContinuationsAsynchronously"),
    (0x0200, "ContinuationTask"),
    (0x0400, "PromiseTask"),
    (0x1000, "LazyCancellation"),
    (0x2000, "QueuedByRuntime"),
    (0x4000, "DoNotDispose"),
];

const STARTED: u32 = 0x0001_0000;
const DELEGATE_INVOKED: u32 = 0x0002_0000;
const FAULTED: u32 = 0x0020_0000;
const CANCELED: u32 = 0x0040_0000;
const WAITING_ON_CHILDREN: u32 = 0x0080_0000;
const RAN_TO_COMPLETION: u32 = 0x0100_0000;
const WAITING_FOR_ACTIVATION: u32 = 0x0200_0000;

/// The `TASK_STATE_*` names of the state bits set in `flags`, then the option names, then
/// `unknown 0x..` for bits no name covers.
pub fn flag_names(flags: u32) -> Vec<String> {
    let mut out = Vec::new();
    let mut known = 0u32;
    for (b, n) in TASK_STATE_BITS.iter().chain(TASK_OPTION_BITS) {
        known |= b;
        if flags & b != 0 {
            out.push((*n).to_string());
        }
    }
    if flags & !known != 0 {
        out.push(format!("unknown {:#x}", flags & !known));
    }
    out
}

/// A task's status (`System.Threading.Tasks.TaskStatus`), as `Task.Status` derives it from
/// `m_stateFlags`: the one decoder every command uses (`taskstate`, `dumpasync`, `causality`,
/// `threadpool`, `triage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum TaskStatus {
    /// No state bit set.
    Created,
    /// `TASK_STATE_WAITINGFORACTIVATION` (promises: async methods' tasks, TCS tasks).
    WaitingForActivation,
    /// Started (scheduled) but its delegate not yet invoked.
    WaitingToRun,
    /// Its delegate is running.
    Running,
    /// Waiting for attached children.
    WaitingForChildrenToComplete,
    /// Ran to completion.
    RanToCompletion,
    /// Canceled.
    Canceled,
    /// Faulted.
    Faulted,
}

impl TaskStatus {
    /// The status `m_stateFlags` means (the order of `Task.Status` and SOS's
    /// `ClrMDHelper.GetTaskState`).
    pub fn from_flags(flags: u32) -> TaskStatus {
        if flags & FAULTED != 0 {
            TaskStatus::Faulted
        } else if flags & CANCELED != 0 {
            TaskStatus::Canceled
        } else if flags & RAN_TO_COMPLETION != 0 {
            TaskStatus::RanToCompletion
        } else if flags & WAITING_ON_CHILDREN != 0 {
            TaskStatus::WaitingForChildrenToComplete
        } else if flags & DELEGATE_INVOKED != 0 {
            TaskStatus::Running
        } else if flags & STARTED != 0 {
            TaskStatus::WaitingToRun
        } else if flags & WAITING_FOR_ACTIVATION != 0 {
            TaskStatus::WaitingForActivation
        } else {
            TaskStatus::Created
        }
    }

    /// The enum member's name (`WaitingToRun`), as .NET spells it.
    pub fn name(self) -> &'static str {
        match self {
            TaskStatus::Created => "Created",
            TaskStatus::WaitingForActivation => "WaitingForActivation",
            TaskStatus::WaitingToRun => "WaitingToRun",
            TaskStatus::Running => "Running",
            TaskStatus::WaitingForChildrenToComplete => "WaitingForChildrenToComplete",
            TaskStatus::RanToCompletion => "RanToCompletion",
            TaskStatus::Canceled => "Canceled",
            TaskStatus::Faulted => "Faulted",
        }
    }

    /// The same in snake case (`waiting_to_run`), as the JSON of `dumpasync` and `causality`
    /// spells it.
    pub fn snake(self) -> &'static str {
        match self {
            TaskStatus::Created => "created",
            TaskStatus::WaitingForActivation => "waiting_for_activation",
            TaskStatus::WaitingToRun => "waiting_to_run",
            TaskStatus::Running => "running",
            TaskStatus::WaitingForChildrenToComplete => "waiting_for_children_to_complete",
            TaskStatus::RanToCompletion => "ran_to_completion",
            TaskStatus::Canceled => "canceled",
            TaskStatus::Faulted => "faulted",
        }
    }

    /// Whether the task completed (ran to completion, faulted or was canceled).
    pub fn is_completed(self) -> bool {
        matches!(
            self,
            TaskStatus::RanToCompletion | TaskStatus::Canceled | TaskStatus::Faulted
        )
    }
}

/// The `TaskStatus` the flags mean (`WaitingToRun`, `RanToCompletion`, ...).
pub fn task_status(flags: u32) -> &'static str {
    TaskStatus::from_flags(flags).name()
}

/// A task object read from the heap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskInfo {
    /// The task.
    pub address: u64,
    /// Its MethodTable.
    pub mt: u64,
    /// Its type.
    pub type_name: String,
    /// `m_taskId` (0 until someone asked for the Id).
    pub id: i64,
    /// `m_stateFlags`.
    pub state_flags: u32,
    /// The status the flags mean.
    pub status: &'static str,
    /// The names of the flags set.
    pub flags: Vec<String>,
    /// `m_action` (0: none, as for promise tasks).
    pub action: u64,
    /// The method `m_action` calls, or why it is unknown; `None` without an action.
    pub method: Option<crate::Result<DelegateMethod>>,
    /// `m_stateObject` (0: none).
    pub state_object: u64,
    /// Its type.
    pub state_type: Option<String>,
    /// `m_taskScheduler` (0: none).
    pub scheduler: u64,
    /// Its type.
    pub scheduler_type: Option<String>,
}

/// The type of the object at `addr` (or why it is unreadable), `None` for null.
pub fn object_type<M: Memory>(r: &ObjectReader<'_, M>, addr: u64) -> Option<String> {
    (addr != 0).then(|| match r.object_mt(addr) {
        Ok((m, _)) => r.type_name(m),
        Err(e) => format!("<unreadable: {e}>"),
    })
}

/// The object a static reference field of a CoreLib type holds (0 for null, and for a type
/// never loaded); the error says which of type, field or storage was missing.
pub fn corelib_static_object<M: Memory>(
    r: &ObjectReader<'_, M>,
    type_name: &str,
    field_name: &str,
) -> crate::Result<u64> {
    let module = r.corelib_module().ok_or_else(|| {
        crate::ClrError::not_found("System.Private.CoreLib's module", "not known")
    })?;
    let rid = r.find_typedef(module, type_name).ok_or_else(|| {
        crate::ClrError::not_found(
            type_name,
            "not in CoreLib's metadata (or the metadata is not in the dump)",
        )
    })?;
    let Some(mt) = r.typedef_mt(module, rid) else {
        // Never loaded: its statics were never initialised.
        return Ok(0);
    };
    let fields = r
        .fields(mt, 0, true)
        .map_err(|e| e.context(format!("the fields of {type_name}")))?;
    let f = fields
        .iter()
        .find(|f| f.attr == "static" && f.name == field_name)
        .ok_or_else(|| crate::ClrError::NoSuchField {
            type_name: type_name.to_owned(),
            field: field_name.to_owned(),
            is_static: true,
        })?;
    match &f.value {
        FieldValue::Object { address, .. } => Ok(*address),
        FieldValue::Unavailable { reason } => Err(crate::ClrError::not_found(
            format!("{type_name}.{field_name}"),
            reason.clone(),
        )),
        v => Err(crate::ClrError::corrupt(
            format!("{type_name}.{field_name}"),
            f.address.unwrap_or(0),
            format!("not an object reference ({})", v.display()),
        )),
    }
}

/// Reads the task at `addr`: the error says why it is not a readable task (no
/// `m_stateFlags` field: not a Task).
pub fn read_task<M: Memory>(
    r: &ObjectReader<'_, M>,
    w: &StackWalker<'_, M>,
    addr: u64,
) -> crate::Result<TaskInfo> {
    let (mt, info) = r.object_mt(addr)?;
    let type_name = r.type_name(mt);
    if info.component_size != 0 {
        return Err(crate::ClrError::not_found_at(
            "Task",
            addr,
            format!("a {type_name}, not a Task"),
        ));
    }
    let fields = r
        .fields(mt, addr + 8, false)
        .map_err(|e| e.context(format!("the fields of task {addr:#x}")))?;
    let flags = int(&fields, "m_stateFlags").ok_or_else(|| crate::ClrError::NoSuchField {
        type_name: type_name.clone(),
        field: "m_stateFlags".into(),
        is_static: false,
    })? as u32;
    let action = obj(&fields, "m_action");
    let state_object = obj(&fields, "m_stateObject");
    let scheduler = obj(&fields, "m_taskScheduler");
    Ok(TaskInfo {
        address: addr,
        mt,
        type_name,
        id: int(&fields, "m_taskId").unwrap_or(0),
        state_flags: flags,
        status: task_status(flags),
        flags: flag_names(flags),
        action,
        method: (action != 0).then(|| delegates::delegate_method(r, w, action)),
        state_object,
        state_type: object_type(r, state_object),
        scheduler,
        scheduler_type: object_type(r, scheduler),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_follows_the_runtime_order() {
        // SOS's documented example: 73728 = 0x12000 = Started | QueuedByRuntime: WaitingToRun.
        assert_eq!(task_status(73728), "WaitingToRun");
        assert_eq!(task_status(0), "Created");
        assert_eq!(task_status(0x0200_0000), "WaitingForActivation");
        assert_eq!(task_status(0x0103_0000), "RanToCompletion");
        assert_eq!(task_status(0x0123_0000), "Faulted");
        assert_eq!(task_status(0x0003_0000), "Running");
    }

    #[test]
    fn names_cover_state_options_and_unknown_bits() {
        assert_eq!(
            flag_names(0x0001_2000),
            vec!["TASK_STATE_STARTED", "QueuedByRuntime"]
        );
        assert_eq!(flag_names(0x8000_0000), vec!["unknown 0x80000000"]);
    }
}
