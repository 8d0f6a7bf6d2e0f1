//! The DLL's exports (Windows only): the WinDbg extension entry points, `help`, and one
//! export per name in [`crate::run::EXPORTED_COMMANDS`] (a unit test checks the two lists agree).

use crate::dbgeng::DbgEng;
use crate::run::{self, Printed};
use core::ffi::{c_char, c_void, CStr};
use windows::core::HRESULT;
use windows::Win32::Foundation::{E_FAIL, S_OK};

/// `DEBUG_EXTENSION_VERSION(1, 0)`.
const EXTENSION_VERSION: u32 = 1 << 16;

/// Called by the debugger when the DLL is loaded.
///
/// # Safety
/// Called by the debugger with valid out pointers (or null).
#[no_mangle]
pub unsafe extern "system" fn DebugExtensionInitialize(
    version: *mut u32,
    flags: *mut u32,
) -> HRESULT {
    unsafe {
        if !version.is_null() {
            *version = EXTENSION_VERSION;
        }
        if !flags.is_null() {
            *flags = 0;
        }
    }
    S_OK
}

/// Called by the debugger before the DLL is unloaded.
#[no_mangle]
pub extern "system" fn DebugExtensionUninitialize() {}

/// Session state changes (nothing is cached across commands, so nothing to do).
#[no_mangle]
pub extern "system" fn DebugExtensionNotify(_notify: u32, _argument: u64) {}

fn args_of(args: *const c_char) -> String {
    if args.is_null() {
        return String::new();
    }
    unsafe { CStr::from_ptr(args) }
        .to_string_lossy()
        .into_owned()
}

fn print(eng: &DbgEng, p: &Printed) -> HRESULT {
    for (ch, text) in &p.pieces {
        eng.output(*ch, text);
    }
    if p.ok {
        S_OK
    } else {
        E_FAIL
    }
}

/// Runs the command exported as `name`.
///
/// # Safety
/// `client` is the `IDebugClient` WinDbg passed, `args` a NUL-terminated string or null.
pub unsafe fn dispatch(name: &str, client: *mut c_void, args: *const c_char) -> HRESULT {
    let eng = match unsafe { DbgEng::from_client(client) } {
        Ok(e) => e,
        Err(e) => return e.code(),
    };
    let args = args_of(args);
    let p = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run::run(&eng, name, &args)))
        .unwrap_or_else(|_| Printed {
            pieces: vec![(
                run::Channel::Error,
                format!("dumpshell: !{name}: internal error (please report)\n"),
            )],
            ok: false,
        });
    print(&eng, &p)
}

/// `!help [command]`.
///
/// # Safety
/// See [`dispatch`].
#[no_mangle]
pub unsafe extern "system" fn help(client: *mut c_void, args: *const c_char) -> HRESULT {
    let eng = match unsafe { DbgEng::from_client(client) } {
        Ok(e) => e,
        Err(e) => return e.code(),
    };
    print(&eng, &run::help(&args_of(args)))
}

macro_rules! commands {
    ($($name:literal => $fn:ident),* $(,)?) => {
        /// The names exported by the macro (checked against EXPORTED_COMMANDS).
        #[cfg(test)]
        pub const MACRO_NAMES: &[&str] = &[$($name),*];
        $(
            /// A dumpshell command export; dispatches by name through the command library's registry.
            ///
            /// # Safety
            /// See [`dispatch`].
            #[export_name = $name]
            pub unsafe extern "system" fn $fn(client: *mut c_void, args: *const c_char) -> HRESULT {
                unsafe { dispatch($name, client, args) }
            }
        )*
    };
}

commands!(
    "sleep" => ext_sleep,
    "info" => ext_info,
    "dumpinfo" => ext_dumpinfo,
    "threads" => ext_threads,
    "osthreads" => ext_osthreads,
    "modules" => ext_modules,
    "lm" => ext_lm,
    "db" => ext_db,
    "memory" => ext_memory,
    "m" => ext_m,
    "dw" => ext_dw,
    "dd" => ext_dd,
    "dq" => ext_dq,
    "dp" => ext_dp,
    "dc" => ext_dc,
    "da" => ext_da,
    "du" => ext_du,
    "pstacks" => ext_pstacks,
    "parallelstacks" => ext_parallelstacks,
    "dumpasync" => ext_dumpasync,
    "dumpheap" => ext_dumpheap,
    "clrthreads" => ext_clrthreads,
    "clrstack" => ext_clrstack,
    "dumpobj" => ext_dumpobj,
    "do" => ext_do,
    "dumpalc" => ext_dumpalc,
    "pe" => ext_pe,
    "printexception" => ext_printexception,
    "dumpexceptions" => ext_dumpexceptions,
    "gcroot" => ext_gcroot,
    "pathto" => ext_pathto,
    "dumpobjgcrefs" => ext_dumpobjgcrefs,
    "ephrefs" => ext_ephrefs,
    "ephtoloh" => ext_ephtoloh,
    "dumpmt" => ext_dumpmt,
    "dumpclass" => ext_dumpclass,
    "dumpmd" => ext_dumpmd,
    "dumparray" => ext_dumparray,
    "dumpvc" => ext_dumpvc,
    "eeheap" => ext_eeheap,
    "eeversion" => ext_eeversion,
    "objsize" => ext_objsize,
    "retained" => ext_retained,
    "crashinfo" => ext_crashinfo,
    "gcwhere" => ext_gcwhere,
    "verifyheap" => ext_verifyheap,
    "verifyobj" => ext_verifyobj,
    "gcheapstat" => ext_gcheapstat,
    "sizestats" => ext_sizestats,
    "dumpgen" => ext_dumpgen,
    "dg" => ext_dg,
    "dumpdelegate" => ext_dumpdelegate,
    "dumpruntimetypes" => ext_dumpruntimetypes,
    "listnearobj" => ext_listnearobj,
    "lno" => ext_lno,
    "analyzeoom" => ext_analyzeoom,
    "name2ee" => ext_name2ee,
    "dumpmodule" => ext_dumpmodule,
    "syncblk" => ext_syncblk,
    "deadlock" => ext_deadlock,
    "finalizequeue" => ext_finalizequeue,
    "fq" => ext_fq,
    "gchandles" => ext_gchandles,
    "threadpool" => ext_threadpool,
    "tpq" => ext_tpq,
    "threadpoolqueue" => ext_threadpoolqueue,
    "timerinfo" => ext_timerinfo,
    "ti" => ext_ti,
    "taskstate" => ext_taskstate,
    "tks" => ext_tks,
    "dcq" => ext_dcq,
    "dumpconcurrentqueue" => ext_dumpconcurrentqueue,
    "dcd" => ext_dcd,
    "dumpconcurrentdictionary" => ext_dumpconcurrentdictionary,
    "dumphttp" => ext_dumphttp,
    "dumprequests" => ext_dumprequests,
    "dso" => ext_dso,
    "dumpstackobjects" => ext_dumpstackobjects,
    "ip2md" => ext_ip2md,
    "u" => ext_u,
    "clru" => ext_clru,
    "stack" => ext_stack,
    "k" => ext_k,
    "causality" => ext_causality,
    "setthread" => ext_setthread,
    "threadstate" => ext_threadstate,
    "registers" => ext_registers,
    "clrmodules" => ext_clrmodules,
    "assemblies" => ext_assemblies,
    "dumpassembly" => ext_dumpassembly,
    "dumpdomain" => ext_dumpdomain,
    "token2ee" => ext_token2ee,
    "soshelp" => ext_soshelp,
    "set" => ext_set,
    "ehinfo" => ext_ehinfo,
    "gcinfo" => ext_gcinfo,
    "dumpil" => ext_dumpil,
    "dumpsig" => ext_dumpsig,
    "dumpsigelem" => ext_dumpsigelem
);

#[cfg(test)]
mod tests {
    #[test]
    fn exports_match_the_list() {
        assert_eq!(super::MACRO_NAMES, crate::run::EXPORTED_COMMANDS);
    }
}
