//! [`Engine`] over dbgeng's COM interfaces (Windows only).
//!
//! | what | dbgeng call |
//! |---|---|
//! | memory | `IDebugDataSpaces::ReadVirtual` |
//! | regions | `IDebugDataSpaces2::QueryVirtual` |
//! | threads | `IDebugSystemObjects::GetNumberThreads`, `GetThreadIdsByIndex` |
//! | contexts, TEBs | `SetCurrentThreadId` + `IDebugAdvanced::GetThreadContext`, `GetCurrentThreadTeb` (current thread restored) |
//! | process | `GetCurrentProcessSystemId`, `IDebugSystemObjects2::GetCurrentProcessExecutableName` |
//! | modules | `IDebugSymbols::GetNumberModules`, `GetModuleByIndex`, `GetModuleParameters`, `IDebugSymbols2::GetModuleNameString(DEBUG_MODNAME_IMAGE)` |
//! | exception | `IDebugControl::GetLastEventInformation` (`DEBUG_EVENT_EXCEPTION`) |
//! | arch | `IDebugControl::GetActualProcessorType` |
//! | dump file | `IDebugClient4::GetDumpFileWide(0)` |
//! | output | `IDebugControl::ControlledOutput(DEBUG_OUTCTL_ALL_CLIENTS, DEBUG_OUTPUT_NORMAL/ERROR)` |

use crate::engine::*;
use crate::run::Channel;
use dumpreader::context::{CONTEXT_ALL_WE_READ, CONTEXT_SIZE, OFF_CONTEXT_FLAGS};
use windows::core::{Interface, PCSTR};
use windows::Win32::System::Diagnostics::Debug::Extensions::*;

/// The interfaces one command uses, queried from the client WinDbg passed.
pub struct DbgEng {
    control: IDebugControl,
    data: IDebugDataSpaces,
    data2: Option<IDebugDataSpaces2>,
    sys: IDebugSystemObjects,
    sys2: Option<IDebugSystemObjects2>,
    symbols: IDebugSymbols,
    symbols2: Option<IDebugSymbols2>,
    advanced: Option<IDebugAdvanced>,
    client4: Option<IDebugClient4>,
}

/// `MEMORY_BASIC_INFORMATION64`.
#[repr(C)]
#[derive(Default)]
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

#[repr(C, align(16))]
struct AlignedContext([u8; CONTEXT_SIZE]);

impl DbgEng {
    /// Queries the interfaces from `client`; fails when a required one is missing.
    ///
    /// # Safety
    /// `client` must be the `IDebugClient` pointer WinDbg passed to the extension.
    pub unsafe fn from_client(client: *mut core::ffi::c_void) -> windows::core::Result<DbgEng> {
        let client = unsafe { IDebugClient::from_raw_borrowed(&client) }.ok_or_else(|| {
            windows::core::Error::from_hresult(windows::Win32::Foundation::E_POINTER)
        })?;
        Ok(DbgEng {
            control: client.cast()?,
            data: client.cast()?,
            data2: client.cast().ok(),
            sys: client.cast()?,
            sys2: client.cast().ok(),
            symbols: client.cast()?,
            symbols2: client.cast().ok(),
            advanced: client.cast().ok(),
            client4: client.cast().ok(),
        })
    }

    /// Writes text through `IDebugControl::ControlledOutput` (so it interleaves with WinDbg's
    /// own output), `%` escaped since the text is passed as the format string, in pieces that
    /// fit dbgeng's format buffer.
    pub fn output(&self, ch: Channel, text: &str) {
        let mask = match ch {
            Channel::Normal => DEBUG_OUTPUT_NORMAL,
            Channel::Error => DEBUG_OUTPUT_ERROR,
        };
        let mut piece = String::new();
        let flush = |piece: &mut String| {
            if piece.is_empty() {
                return;
            }
            let mut bytes: Vec<u8> = piece.replace('\0', "").replace('%', "%%").into_bytes();
            bytes.push(0);
            unsafe {
                let _ = self.control.ControlledOutput(
                    DEBUG_OUTCTL_ALL_CLIENTS,
                    mask,
                    PCSTR(bytes.as_ptr()),
                );
            }
            piece.clear();
        };
        for line in text.split_inclusive('\n') {
            if piece.len() + line.len() > 4000 {
                flush(&mut piece);
            }
            if line.len() > 4000 {
                let mut rest = line;
                while !rest.is_empty() {
                    let mut cut = rest.len().min(4000);
                    while !rest.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    piece.push_str(&rest[..cut]);
                    flush(&mut piece);
                    rest = &rest[cut..];
                }
            } else {
                piece.push_str(line);
            }
        }
        flush(&mut piece);
    }
}

fn ansi(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

impl Engine for DbgEng {
    fn read_virtual(&self, addr: u64, buf: &mut [u8]) -> Result<usize, i32> {
        let mut done = 0usize;
        // dbgeng takes a u32 size: read in pieces well under it.
        while done < buf.len() {
            let want = (buf.len() - done).min(1 << 24);
            let mut got = 0u32;
            let r = unsafe {
                self.data.ReadVirtual(
                    addr.wrapping_add(done as u64),
                    buf[done..].as_mut_ptr().cast(),
                    want as u32,
                    Some(&mut got),
                )
            };
            match r {
                Ok(()) => {
                    done += (got as usize).min(want);
                    if (got as usize) < want {
                        break;
                    }
                }
                Err(e) if done == 0 => return Err(e.code().0),
                Err(_) => break,
            }
        }
        Ok(done)
    }

    fn query_virtual(&self, addr: u64) -> Option<EngineRegion> {
        let d2 = self.data2.as_ref()?;
        let mut m = Mbi64::default();
        unsafe { d2.QueryVirtual(addr, (&mut m as *mut Mbi64).cast()) }.ok()?;
        Some(EngineRegion {
            base: m.base,
            size: m.size,
            state: m.state,
            protect: m.protect,
        })
    }

    fn threads(&self) -> Vec<EngineThread> {
        let n = unsafe { self.sys.GetNumberThreads() }
            .unwrap_or(0)
            .min(1 << 16);
        let mut ids = vec![0u32; n as usize];
        let mut sys = vec![0u32; n as usize];
        if n == 0
            || unsafe {
                self.sys
                    .GetThreadIdsByIndex(0, n, Some(ids.as_mut_ptr()), Some(sys.as_mut_ptr()))
            }
            .is_err()
        {
            return Vec::new();
        }
        ids.into_iter()
            .zip(sys)
            .map(|(engine_id, system_id)| EngineThread {
                engine_id,
                system_id,
            })
            .collect()
    }

    fn thread_states(&self, threads: &[EngineThread]) -> Vec<ThreadState> {
        let current = unsafe { self.sys.GetCurrentThreadId() }.ok();
        let out = threads
            .iter()
            .map(|t| {
                if unsafe { self.sys.SetCurrentThreadId(t.engine_id) }.is_err() {
                    return ThreadState::default();
                }
                let context = self.advanced.as_ref().and_then(|adv| {
                    let mut c = Box::new(AlignedContext([0u8; CONTEXT_SIZE]));
                    c.0[OFF_CONTEXT_FLAGS..OFF_CONTEXT_FLAGS + 4]
                        .copy_from_slice(&CONTEXT_ALL_WE_READ.to_le_bytes());
                    unsafe { adv.GetThreadContext(c.0.as_mut_ptr().cast(), CONTEXT_SIZE as u32) }
                        .ok()?;
                    Some(c.0.to_vec())
                });
                let teb = unsafe { self.sys.GetCurrentThreadTeb() }
                    .ok()
                    .filter(|&t| t != 0);
                ThreadState { context, teb }
            })
            .collect();
        if let Some(c) = current {
            let _ = unsafe { self.sys.SetCurrentThreadId(c) };
        }
        out
    }

    fn process_id(&self) -> Option<u32> {
        unsafe { self.sys.GetCurrentProcessSystemId() }.ok()
    }

    fn executable_name(&self) -> Option<String> {
        let s2 = self.sys2.as_ref()?;
        let mut buf = vec![0u8; 1024];
        let mut size = 0u32;
        unsafe { s2.GetCurrentProcessExecutableName(Some(&mut buf), Some(&mut size)) }.ok()?;
        Some(ansi(&buf)).filter(|s| !s.is_empty())
    }

    fn modules(&self) -> Vec<EngineModule> {
        let (mut loaded, mut unloaded) = (0u32, 0u32);
        if unsafe { self.symbols.GetNumberModules(&mut loaded, &mut unloaded) }.is_err() {
            return Vec::new();
        }
        (0..loaded.min(1 << 16))
            .filter_map(|i| {
                let mut p = DEBUG_MODULE_PARAMETERS::default();
                unsafe { self.symbols.GetModuleParameters(1, None, i, &mut p) }.ok()?;
                let base = if p.Base != 0 {
                    p.Base
                } else {
                    unsafe { self.symbols.GetModuleByIndex(i) }.ok()?
                };
                let image_name = self
                    .symbols2
                    .as_ref()
                    .and_then(|s2| {
                        let mut buf = vec![0u8; 1024];
                        let mut n = 0u32;
                        unsafe {
                            s2.GetModuleNameString(
                                DEBUG_MODNAME_IMAGE,
                                i,
                                0,
                                Some(&mut buf),
                                Some(&mut n),
                            )
                        }
                        .ok()?;
                        Some(ansi(&buf))
                    })
                    .unwrap_or_default();
                Some(EngineModule {
                    base,
                    size: p.Size,
                    timestamp: p.TimeDateStamp,
                    image_name,
                })
            })
            .collect()
    }

    fn last_exception(&self) -> Option<EngineException> {
        let (mut kind, mut pid, mut tid) = (0u32, 0u32, 0u32);
        // DEBUG_LAST_EVENT_INFO_EXCEPTION: EXCEPTION_RECORD64 (152 bytes) + FirstChance.
        let mut extra = [0u64; 20];
        let mut used = 0u32;
        unsafe {
            self.control.GetLastEventInformation(
                &mut kind,
                &mut pid,
                &mut tid,
                Some(extra.as_mut_ptr().cast()),
                std::mem::size_of_val(&extra) as u32,
                Some(&mut used),
                None,
                None,
            )
        }
        .ok()?;
        if kind != DEBUG_EVENT_EXCEPTION || used < 152 {
            return None;
        }
        let b: Vec<u8> = extra.iter().flat_map(|w| w.to_le_bytes()).collect();
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap_or([0; 4]));
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or([0; 8]));
        let n = (u32_at(24) as usize).min(15);
        // The event's thread is an engine id: map it to the OS id.
        let system_thread_id = self
            .threads()
            .into_iter()
            .find(|t| t.engine_id == tid)
            .map(|t| t.system_id);
        Some(EngineException {
            system_thread_id,
            code: u32_at(0),
            flags: u32_at(4),
            address: u64_at(16),
            parameters: (0..n).map(|i| u64_at(32 + 8 * i)).collect(),
        })
    }

    fn processor_type(&self) -> Option<u32> {
        unsafe { self.control.GetActualProcessorType() }.ok()
    }

    fn target_name(&self) -> Option<String> {
        if let Some(c4) = &self.client4 {
            let mut buf = vec![0u16; 1024];
            let mut n = 0u32;
            let mut kind = 0u32;
            if unsafe { c4.GetDumpFileWide(0, Some(&mut buf), Some(&mut n), None, &mut kind) }
                .is_ok()
            {
                let end = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
                let s = String::from_utf16_lossy(&buf[..end]);
                if !s.is_empty() {
                    return Some(s);
                }
            }
        }
        self.process_id().map(|p| format!("live process {p}"))
    }
}
