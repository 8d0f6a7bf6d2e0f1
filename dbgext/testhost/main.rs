//! dbgext-testhost: a stand-in for WinDbg, to test the extension DLL without Windows.
//!
//! Implements the dbgeng interfaces the DLL uses (IDebugClient and, through QueryInterface,
//! IDebugClient4, IDebugControl, IDebugDataSpaces(2), IDebugSystemObjects(2), IDebugSymbols(2),
//! IDebugAdvanced) over a dump file opened with dumpreader, with hand-written vtables (slot
//! numbers from the SDK's dbgeng.h order, as the `windows` crate declares them; every other
//! slot answers E_NOTIMPL and is reported). Loads the DLL with LoadLibrary, calls
//! DebugExtensionInitialize, then each command export, captures what the DLL writes through
//! IDebugControl::Output/ControlledOutput, and prints one JSON document:
//! `{"initialize": hr, "missing_exports": [..], "results": [{"line", "hr", "normal", "error"}],
//! "violations": [..]}`. A violation is a dbgeng call made on another thread than the one the
//! command was called on, or an unimplemented slot.
//!
//! Usage: `dbgext-testhost <dbgext.dll> <dump> [--strict-reads] <command line>...`

#[cfg(not(windows))]
fn main() {
    eprintln!("dbgext-testhost is a Windows program (it loads dbgext.dll); build it for x86_64-pc-windows-gnu and run it under wine");
    std::process::exit(2);
}

#[cfg(windows)]
#[path = "dumpengine.rs"]
mod dumpengine;

#[cfg(windows)]
fn main() {
    host::main()
}

#[cfg(windows)]
mod host {
    use super::dumpengine::{DumpEngine, PartialReads};
    use core::ffi::{c_char, c_void};
    use dbgext::engine::Engine;
    use std::cell::{Cell, RefCell};
    use std::thread::ThreadId;
    use windows::core::{Interface, GUID, HRESULT, PCSTR};
    use windows::Win32::System::Diagnostics::Debug::Extensions::*;
    use windows::Win32::System::LibraryLoader::{GetProcAddress, LoadLibraryA};

    const S_OK: i32 = 0;
    const S_FALSE: i32 = 1;
    const E_NOTIMPL: i32 = 0x8000_4001u32 as i32;
    const E_NOINTERFACE: i32 = 0x8000_4002u32 as i32;
    const E_FAIL: i32 = 0x8000_4005u32 as i32;
    const E_INVALIDARG: i32 = 0x8007_0057u32 as i32;

    struct State {
        engine: DumpEngine,
        owner: Cell<Option<ThreadId>>,
        current_thread: Cell<u32>,
        normal: RefCell<String>,
        error: RefCell<String>,
        violations: RefCell<Vec<String>>,
    }

    static mut STATE: *const State = std::ptr::null();

    fn st() -> &'static State {
        // SAFETY: set once in main before the DLL is called, never freed.
        let s = unsafe { &*STATE };
        let me = std::thread::current().id();
        if s.owner.get().is_some_and(|o| o != me) {
            s.violations.borrow_mut().push(
                "a dbgeng interface was called from a thread other than the extension's".into(),
            );
        }
        s
    }

    /// One COM object: a vtable pointer (what the interface pointer points at).
    #[repr(C)]
    struct Obj {
        vtbl: *const usize,
    }

    extern "system" fn stub<const I: usize>() -> HRESULT {
        let s = unsafe { &*STATE };
        s.violations
            .borrow_mut()
            .push(format!("unimplemented vtable slot {I} called"));
        HRESULT(E_NOTIMPL)
    }

    fn stubs() -> [usize; 128] {
        [
            stub::<0> as *const () as usize,
            stub::<1> as *const () as usize,
            stub::<2> as *const () as usize,
            stub::<3> as *const () as usize,
            stub::<4> as *const () as usize,
            stub::<5> as *const () as usize,
            stub::<6> as *const () as usize,
            stub::<7> as *const () as usize,
            stub::<8> as *const () as usize,
            stub::<9> as *const () as usize,
            stub::<10> as *const () as usize,
            stub::<11> as *const () as usize,
            stub::<12> as *const () as usize,
            stub::<13> as *const () as usize,
            stub::<14> as *const () as usize,
            stub::<15> as *const () as usize,
            stub::<16> as *const () as usize,
            stub::<17> as *const () as usize,
            stub::<18> as *const () as usize,
            stub::<19> as *const () as usize,
            stub::<20> as *const () as usize,
            stub::<21> as *const () as usize,
            stub::<22> as *const () as usize,
            stub::<23> as *const () as usize,
            stub::<24> as *const () as usize,
            stub::<25> as *const () as usize,
            stub::<26> as *const () as usize,
            stub::<27> as *const () as usize,
            stub::<28> as *const () as usize,
            stub::<29> as *const () as usize,
            stub::<30> as *const () as usize,
            stub::<31> as *const () as usize,
            stub::<32> as *const () as usize,
            stub::<33> as *const () as usize,
            stub::<34> as *const () as usize,
            stub::<35> as *const () as usize,
            stub::<36> as *const () as usize,
            stub::<37> as *const () as usize,
            stub::<38> as *const () as usize,
            stub::<39> as *const () as usize,
            stub::<40> as *const () as usize,
            stub::<41> as *const () as usize,
            stub::<42> as *const () as usize,
            stub::<43> as *const () as usize,
            stub::<44> as *const () as usize,
            stub::<45> as *const () as usize,
            stub::<46> as *const () as usize,
            stub::<47> as *const () as usize,
            stub::<48> as *const () as usize,
            stub::<49> as *const () as usize,
            stub::<50> as *const () as usize,
            stub::<51> as *const () as usize,
            stub::<52> as *const () as usize,
            stub::<53> as *const () as usize,
            stub::<54> as *const () as usize,
            stub::<55> as *const () as usize,
            stub::<56> as *const () as usize,
            stub::<57> as *const () as usize,
            stub::<58> as *const () as usize,
            stub::<59> as *const () as usize,
            stub::<60> as *const () as usize,
            stub::<61> as *const () as usize,
            stub::<62> as *const () as usize,
            stub::<63> as *const () as usize,
            stub::<64> as *const () as usize,
            stub::<65> as *const () as usize,
            stub::<66> as *const () as usize,
            stub::<67> as *const () as usize,
            stub::<68> as *const () as usize,
            stub::<69> as *const () as usize,
            stub::<70> as *const () as usize,
            stub::<71> as *const () as usize,
            stub::<72> as *const () as usize,
            stub::<73> as *const () as usize,
            stub::<74> as *const () as usize,
            stub::<75> as *const () as usize,
            stub::<76> as *const () as usize,
            stub::<77> as *const () as usize,
            stub::<78> as *const () as usize,
            stub::<79> as *const () as usize,
            stub::<80> as *const () as usize,
            stub::<81> as *const () as usize,
            stub::<82> as *const () as usize,
            stub::<83> as *const () as usize,
            stub::<84> as *const () as usize,
            stub::<85> as *const () as usize,
            stub::<86> as *const () as usize,
            stub::<87> as *const () as usize,
            stub::<88> as *const () as usize,
            stub::<89> as *const () as usize,
            stub::<90> as *const () as usize,
            stub::<91> as *const () as usize,
            stub::<92> as *const () as usize,
            stub::<93> as *const () as usize,
            stub::<94> as *const () as usize,
            stub::<95> as *const () as usize,
            stub::<96> as *const () as usize,
            stub::<97> as *const () as usize,
            stub::<98> as *const () as usize,
            stub::<99> as *const () as usize,
            stub::<100> as *const () as usize,
            stub::<101> as *const () as usize,
            stub::<102> as *const () as usize,
            stub::<103> as *const () as usize,
            stub::<104> as *const () as usize,
            stub::<105> as *const () as usize,
            stub::<106> as *const () as usize,
            stub::<107> as *const () as usize,
            stub::<108> as *const () as usize,
            stub::<109> as *const () as usize,
            stub::<110> as *const () as usize,
            stub::<111> as *const () as usize,
            stub::<112> as *const () as usize,
            stub::<113> as *const () as usize,
            stub::<114> as *const () as usize,
            stub::<115> as *const () as usize,
            stub::<116> as *const () as usize,
            stub::<117> as *const () as usize,
            stub::<118> as *const () as usize,
            stub::<119> as *const () as usize,
            stub::<120> as *const () as usize,
            stub::<121> as *const () as usize,
            stub::<122> as *const () as usize,
            stub::<123> as *const () as usize,
            stub::<124> as *const () as usize,
            stub::<125> as *const () as usize,
            stub::<126> as *const () as usize,
            stub::<127> as *const () as usize,
        ]
    }

    extern "system" fn add_ref(_: *mut c_void) -> u32 {
        1
    }
    extern "system" fn release(_: *mut c_void) -> u32 {
        1
    }

    macro_rules! vtable {
        ($name:ident: $($slot:expr => $f:expr),* $(,)?) => {
            fn $name() -> &'static Obj {
                let mut v = Box::new(stubs());
                v[0] = query_interface as *const () as usize;
                v[1] = add_ref as *const () as usize;
                v[2] = release as *const () as usize;
                $( v[$slot] = $f as *const () as usize; )*
                let v: &'static [usize; 128] = Box::leak(v);
                Box::leak(Box::new(Obj { vtbl: v.as_ptr() }))
            }
        };
    }

    struct Objects {
        client: &'static Obj,
        client4: &'static Obj,
        control: &'static Obj,
        data: &'static Obj,
        sys: &'static Obj,
        symbols: &'static Obj,
        advanced: &'static Obj,
    }
    static mut OBJECTS: *const Objects = std::ptr::null();

    extern "system" fn query_interface(
        _: *mut c_void,
        iid: *const GUID,
        out: *mut *mut c_void,
    ) -> HRESULT {
        let o = unsafe { &*OBJECTS };
        let iid = unsafe { *iid };
        let obj: Option<&Obj> = if iid == IDebugClient::IID || iid == windows::core::IUnknown::IID {
            Some(o.client)
        } else if iid == IDebugClient4::IID {
            Some(o.client4)
        } else if iid == IDebugControl::IID {
            Some(o.control)
        } else if iid == IDebugDataSpaces::IID || iid == IDebugDataSpaces2::IID {
            Some(o.data)
        } else if iid == IDebugSystemObjects::IID || iid == IDebugSystemObjects2::IID {
            Some(o.sys)
        } else if iid == IDebugSymbols::IID || iid == IDebugSymbols2::IID {
            Some(o.symbols)
        } else if iid == IDebugAdvanced::IID {
            Some(o.advanced)
        } else {
            None
        };
        match obj {
            Some(obj) => {
                unsafe { *out = obj as *const Obj as *mut c_void };
                HRESULT(S_OK)
            }
            None => {
                unsafe { *out = std::ptr::null_mut() };
                HRESULT(E_NOINTERFACE)
            }
        }
    }

    // ------------------------------------------------------------------ IDebugControl

    fn unescape(fmt: *const c_char) -> String {
        if fmt.is_null() {
            return String::new();
        }
        let s = unsafe { std::ffi::CStr::from_ptr(fmt) }.to_string_lossy();
        // The DLL passes its text as the format with '%' doubled; nothing else may appear.
        let mut out = String::new();
        let mut it = s.chars().peekable();
        while let Some(c) = it.next() {
            if c == '%' {
                match it.next() {
                    Some('%') => out.push('%'),
                    other => {
                        st().violations.borrow_mut().push(format!(
                            "printf conversion %{} in output text",
                            other.map(String::from).unwrap_or_default()
                        ));
                    }
                }
            } else {
                out.push(c);
            }
        }
        out
    }

    fn capture(mask: u32, fmt: *const c_char) {
        let s = st();
        let t = unescape(fmt);
        if mask & DEBUG_OUTPUT_ERROR != 0 {
            s.error.borrow_mut().push_str(&t);
        } else {
            s.normal.borrow_mut().push_str(&t);
        }
    }

    extern "system" fn output(_: *mut c_void, mask: u32, fmt: *const c_char) -> HRESULT {
        capture(mask, fmt);
        HRESULT(S_OK)
    }
    extern "system" fn controlled_output(
        _: *mut c_void,
        _ctl: u32,
        mask: u32,
        fmt: *const c_char,
    ) -> HRESULT {
        capture(mask, fmt);
        HRESULT(S_OK)
    }
    extern "system" fn get_actual_processor_type(_: *mut c_void, t: *mut u32) -> HRESULT {
        match st().engine.processor_type() {
            Some(p) => {
                unsafe { *t = p };
                HRESULT(S_OK)
            }
            None => HRESULT(E_FAIL),
        }
    }
    #[allow(clippy::too_many_arguments)]
    extern "system" fn get_last_event_information(
        _: *mut c_void,
        kind: *mut u32,
        pid: *mut u32,
        tid: *mut u32,
        extra: *mut c_void,
        extra_size: u32,
        extra_used: *mut u32,
        _desc: *mut u8,
        _desc_size: u32,
        desc_used: *mut u32,
    ) -> HRESULT {
        let s = st();
        unsafe {
            *pid = 0;
            *tid = 0;
            if !desc_used.is_null() {
                *desc_used = 0;
            }
        }
        let Some(e) = s.engine.last_exception() else {
            unsafe {
                *kind = 0;
                if !extra_used.is_null() {
                    *extra_used = 0;
                }
            }
            return HRESULT(S_OK);
        };
        let engine_tid = s
            .engine
            .threads()
            .iter()
            .find(|t| Some(t.system_id) == e.system_thread_id)
            .map(|t| t.engine_id)
            .unwrap_or(0);
        let mut rec = [0u8; 160];
        rec[0..4].copy_from_slice(&e.code.to_le_bytes());
        rec[4..8].copy_from_slice(&e.flags.to_le_bytes());
        rec[16..24].copy_from_slice(&e.address.to_le_bytes());
        let n = e.parameters.len().min(15);
        rec[24..28].copy_from_slice(&(n as u32).to_le_bytes());
        for (i, p) in e.parameters.iter().take(n).enumerate() {
            rec[32 + 8 * i..40 + 8 * i].copy_from_slice(&p.to_le_bytes());
        }
        unsafe {
            *kind = DEBUG_EVENT_EXCEPTION;
            *pid = 0;
            *tid = engine_tid;
            if !extra_used.is_null() {
                *extra_used = 156;
            }
            if !extra.is_null() {
                let k = (extra_size as usize).min(156);
                std::ptr::copy_nonoverlapping(rec.as_ptr(), extra.cast::<u8>(), k);
            }
        }
        HRESULT(S_OK)
    }

    vtable!(control_obj:
        14 => output,
        16 => controlled_output,
        35 => get_actual_processor_type,
        94 => get_last_event_information,
    );

    // ------------------------------------------------------------------ IDebugDataSpaces(2)

    extern "system" fn read_virtual(
        _: *mut c_void,
        addr: u64,
        buf: *mut u8,
        size: u32,
        read: *mut u32,
    ) -> HRESULT {
        let s = st();
        let b = unsafe { std::slice::from_raw_parts_mut(buf, size as usize) };
        let r = s.engine.read_virtual(addr, b);
        let (hr, n) = match r {
            Ok(n) => (S_OK, n as u32),
            Err(hr) => (hr, 0),
        };
        if !read.is_null() {
            unsafe { *read = n };
        }
        HRESULT(hr)
    }

    #[repr(C)]
    struct Mbi64 {
        base: u64,
        allocation_base: u64,
        allocation_protect: u32,
        _a1: u32,
        size: u64,
        state: u32,
        protect: u32,
        kind: u32,
        _a2: u32,
    }

    extern "system" fn query_virtual(_: *mut c_void, addr: u64, info: *mut Mbi64) -> HRESULT {
        match st().engine.query_virtual(addr) {
            Some(r) => {
                unsafe {
                    *info = Mbi64 {
                        base: r.base,
                        allocation_base: r.base,
                        allocation_protect: r.protect,
                        _a1: 0,
                        size: r.size,
                        state: r.state,
                        protect: r.protect,
                        kind: 0x20000,
                        _a2: 0,
                    }
                };
                HRESULT(S_OK)
            }
            None => HRESULT(E_NOINTERFACE),
        }
    }

    vtable!(data_obj:
        3 => read_virtual,
        28 => query_virtual,
    );

    // ------------------------------------------------------------------ IDebugSystemObjects(2)

    extern "system" fn get_current_thread_id(_: *mut c_void, id: *mut u32) -> HRESULT {
        unsafe { *id = st().current_thread.get() };
        HRESULT(S_OK)
    }
    extern "system" fn set_current_thread_id(_: *mut c_void, id: u32) -> HRESULT {
        let s = st();
        if (id as usize) < s.engine.dump.threads().len() {
            s.current_thread.set(id);
            HRESULT(S_OK)
        } else {
            HRESULT(E_INVALIDARG)
        }
    }
    extern "system" fn get_number_threads(_: *mut c_void, n: *mut u32) -> HRESULT {
        unsafe { *n = st().engine.dump.threads().len() as u32 };
        HRESULT(S_OK)
    }
    extern "system" fn get_thread_ids_by_index(
        _: *mut c_void,
        start: u32,
        count: u32,
        ids: *mut u32,
        sys: *mut u32,
    ) -> HRESULT {
        let t = st().engine.threads();
        if (start as usize).saturating_add(count as usize) > t.len() {
            return HRESULT(E_INVALIDARG);
        }
        for i in 0..count as usize {
            let th = t[start as usize + i];
            unsafe {
                if !ids.is_null() {
                    *ids.add(i) = th.engine_id;
                }
                if !sys.is_null() {
                    *sys.add(i) = th.system_id;
                }
            }
        }
        HRESULT(S_OK)
    }
    extern "system" fn get_current_thread_teb(_: *mut c_void, teb: *mut u64) -> HRESULT {
        let s = st();
        match s
            .engine
            .dump
            .threads()
            .get(s.current_thread.get() as usize)
            .and_then(|t| t.teb)
        {
            Some(t) => {
                unsafe { *teb = t };
                HRESULT(S_OK)
            }
            None => HRESULT(E_FAIL),
        }
    }
    extern "system" fn get_current_process_system_id(_: *mut c_void, id: *mut u32) -> HRESULT {
        match st().engine.process_id() {
            Some(p) => {
                unsafe { *id = p };
                HRESULT(S_OK)
            }
            None => HRESULT(E_FAIL),
        }
    }
    fn put_ansi(s: &str, buf: *mut u8, size: u32, used: *mut u32) -> HRESULT {
        let bytes = s.as_bytes();
        if !used.is_null() {
            unsafe { *used = bytes.len() as u32 + 1 };
        }
        if buf.is_null() || size == 0 {
            return HRESULT(S_FALSE);
        }
        let n = bytes.len().min(size as usize - 1);
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf, n);
            *buf.add(n) = 0;
        }
        HRESULT(if n < bytes.len() { S_FALSE } else { S_OK })
    }
    extern "system" fn get_current_process_executable_name(
        _: *mut c_void,
        buf: *mut u8,
        size: u32,
        used: *mut u32,
    ) -> HRESULT {
        match st().engine.executable_name() {
            Some(n) => put_ansi(&n, buf, size, used),
            None => HRESULT(E_FAIL),
        }
    }

    vtable!(sys_obj:
        5 => get_current_thread_id,
        6 => set_current_thread_id,
        9 => get_number_threads,
        11 => get_thread_ids_by_index,
        15 => get_current_thread_teb,
        27 => get_current_process_system_id,
        31 => get_current_process_executable_name,
    );

    // ------------------------------------------------------------------ IDebugSymbols(2)

    extern "system" fn get_number_modules(
        _: *mut c_void,
        loaded: *mut u32,
        unloaded: *mut u32,
    ) -> HRESULT {
        unsafe {
            *loaded = st().engine.modules.len() as u32;
            *unloaded = 0;
        }
        HRESULT(S_OK)
    }
    extern "system" fn get_module_by_index(_: *mut c_void, i: u32, base: *mut u64) -> HRESULT {
        match st().engine.modules.get(i as usize) {
            Some(m) => {
                unsafe { *base = m.base };
                HRESULT(S_OK)
            }
            None => HRESULT(E_INVALIDARG),
        }
    }
    extern "system" fn get_module_parameters(
        _: *mut c_void,
        count: u32,
        bases: *const u64,
        start: u32,
        params: *mut DEBUG_MODULE_PARAMETERS,
    ) -> HRESULT {
        let e = &st().engine;
        for k in 0..count as usize {
            let m = if bases.is_null() {
                e.modules.get(start as usize + k)
            } else {
                let b = unsafe { *bases.add(k) };
                e.modules.iter().find(|m| m.base == b)
            };
            let Some(m) = m else {
                return HRESULT(E_INVALIDARG);
            };
            let (base, size, ts) = e.module_params(m);
            let p = DEBUG_MODULE_PARAMETERS {
                Base: base,
                Size: size,
                TimeDateStamp: ts,
                ImageNameSize: m.path.len() as u32 + 1,
                ..Default::default()
            };
            unsafe { *params.add(k) = p };
        }
        HRESULT(S_OK)
    }
    extern "system" fn get_module_name_string(
        _: *mut c_void,
        which: u32,
        index: u32,
        base: u64,
        buf: *mut u8,
        size: u32,
        used: *mut u32,
    ) -> HRESULT {
        let e = &st().engine;
        let m = if index != u32::MAX {
            e.modules.get(index as usize)
        } else {
            e.modules.iter().find(|m| m.base == base)
        };
        match (which, m) {
            (0, Some(m)) => put_ansi(&m.path, buf, size, used),
            (_, Some(_)) => HRESULT(E_NOTIMPL),
            (_, None) => HRESULT(E_INVALIDARG),
        }
    }

    vtable!(symbols_obj:
        12 => get_number_modules,
        13 => get_module_by_index,
        17 => get_module_parameters,
        53 => get_module_name_string,
    );

    // ------------------------------------------------------------------ IDebugAdvanced

    extern "system" fn get_thread_context(_: *mut c_void, ctx: *mut u8, size: u32) -> HRESULT {
        let s = st();
        let Some(t) = s.engine.dump.threads().get(s.current_thread.get() as usize) else {
            return HRESULT(E_FAIL);
        };
        let b = dumpreader::context::encode(&t.context);
        if (size as usize) < b.len() {
            return HRESULT(E_INVALIDARG);
        }
        if !(ctx as usize).is_multiple_of(16) {
            s.violations
                .borrow_mut()
                .push("CONTEXT buffer not 16-byte aligned".into());
        }
        unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), ctx, b.len()) };
        HRESULT(S_OK)
    }

    vtable!(advanced_obj: 3 => get_thread_context);

    // ------------------------------------------------------------------ IDebugClient(4)

    #[allow(clippy::too_many_arguments)]
    extern "system" fn get_dump_file_wide(
        _: *mut c_void,
        index: u32,
        buf: *mut u16,
        size: u32,
        used: *mut u32,
        handle: *mut u64,
        kind: *mut u32,
    ) -> HRESULT {
        if index != 0 {
            return HRESULT(E_INVALIDARG);
        }
        let name: Vec<u16> = st().engine.dump_name.encode_utf16().collect();
        unsafe {
            if !used.is_null() {
                *used = name.len() as u32 + 1;
            }
            if !handle.is_null() {
                *handle = 0;
            }
            if !kind.is_null() {
                *kind = 0;
            }
            if !buf.is_null() && size > 0 {
                let n = name.len().min(size as usize - 1);
                std::ptr::copy_nonoverlapping(name.as_ptr(), buf, n);
                *buf.add(n) = 0;
            }
        }
        HRESULT(S_OK)
    }

    vtable!(client_obj:);
    vtable!(client4_obj: 65 => get_dump_file_wide);

    // ------------------------------------------------------------------ main

    type InitFn = unsafe extern "system" fn(*mut u32, *mut u32) -> HRESULT;
    type CmdFn = unsafe extern "system" fn(*mut c_void, *const c_char) -> HRESULT;

    pub fn main() {
        let mut args: Vec<String> = std::env::args().skip(1).collect();
        let strict = if let Some(i) = args.iter().position(|a| a == "--strict-reads") {
            args.remove(i);
            true
        } else {
            false
        };
        if args.len() < 2 {
            eprintln!(
                "usage: dbgext-testhost <dbgext.dll> <dump> [--strict-reads] <command line>..."
            );
            std::process::exit(2);
        }
        let (dll, dump_path, lines) = (&args[0], &args[1], &args[2..]);
        let dump = dumpreader::Dump::open(std::path::Path::new(dump_path)).unwrap_or_else(|e| {
            eprintln!("dbgext-testhost: opening {dump_path}: {e}");
            std::process::exit(2)
        });
        let partial = if strict {
            PartialReads::Fail
        } else {
            PartialReads::Prefix
        };
        let state = Box::leak(Box::new(State {
            engine: DumpEngine::new(dump, dump_path.clone(), partial),
            owner: Cell::new(None),
            current_thread: Cell::new(0),
            normal: RefCell::new(String::new()),
            error: RefCell::new(String::new()),
            violations: RefCell::new(Vec::new()),
        }));
        unsafe {
            STATE = state;
            OBJECTS = Box::leak(Box::new(Objects {
                client: client_obj(),
                client4: client4_obj(),
                control: control_obj(),
                data: data_obj(),
                sys: sys_obj(),
                symbols: symbols_obj(),
                advanced: advanced_obj(),
            }));
        }
        let client = unsafe { (*OBJECTS).client } as *const Obj as *mut c_void;
        let cdll = std::ffi::CString::new(dll.as_str()).unwrap();
        let module = unsafe { LoadLibraryA(PCSTR(cdll.as_ptr().cast())) }.unwrap_or_else(|e| {
            eprintln!("dbgext-testhost: LoadLibrary({dll}): {e}");
            std::process::exit(2)
        });
        let proc = |name: &str| {
            let c = std::ffi::CString::new(name).unwrap();
            unsafe { GetProcAddress(module, PCSTR(c.as_ptr().cast())) }
        };
        let mut doc = serde_json::Map::new();
        let init = proc("DebugExtensionInitialize").map(|f| {
            let f: InitFn = unsafe { std::mem::transmute(f) };
            let (mut v, mut fl) = (0u32, 0u32);
            let hr = unsafe { f(&mut v, &mut fl) };
            serde_json::json!({"hr": hr.0, "version": v, "flags": fl})
        });
        doc.insert("initialize".into(), init.unwrap_or(serde_json::Value::Null));
        let mut missing: Vec<&str> = [
            "DebugExtensionInitialize",
            "DebugExtensionUninitialize",
            "DebugExtensionNotify",
            "help",
        ]
        .into_iter()
        .chain(dbgext::run::EXPORTED_COMMANDS.iter().copied())
        .filter(|n| proc(n).is_none())
        .collect();
        missing.sort();
        doc.insert("missing_exports".into(), serde_json::json!(missing));
        let mut results = Vec::new();
        for line in lines {
            let (name, rest) = line.split_once(' ').unwrap_or((line.as_str(), ""));
            state.normal.borrow_mut().clear();
            state.error.borrow_mut().clear();
            let hr = match proc(name) {
                Some(f) => {
                    let f: CmdFn = unsafe { std::mem::transmute(f) };
                    let a = std::ffi::CString::new(rest).unwrap();
                    state.owner.set(Some(std::thread::current().id()));
                    let hr = unsafe { f(client, a.as_ptr()) };
                    state.owner.set(None);
                    Some(hr.0)
                }
                None => None,
            };
            results.push(serde_json::json!({
                "line": line,
                "hr": hr,
                "normal": state.normal.borrow().clone(),
                "error": state.error.borrow().clone(),
            }));
        }
        doc.insert("results".into(), serde_json::Value::Array(results));
        if let Some(f) = proc("DebugExtensionUninitialize") {
            let f: unsafe extern "system" fn() = unsafe { std::mem::transmute(f) };
            unsafe { f() };
        }
        doc.insert(
            "violations".into(),
            serde_json::json!(*state.violations.borrow()),
        );
        println!("{}", serde_json::Value::Object(doc));
    }
}
