/* A stand-in for bcryptprimitives.dll, which Rust's std calls (ProcessPrng) for random
 * bytes and which wine 8 lacks. Built with mingw by the wine test; loaded from the host's
 * folder. The bytes come from RtlGenRandom (advapi32's SystemFunction036), which wine has. */
#include <windows.h>

typedef BOOLEAN (WINAPI *gen_random_fn)(PVOID, ULONG);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    static gen_random_fn gen;
    if (!gen) {
        HMODULE advapi = LoadLibraryA("advapi32.dll");
        gen = advapi ? (gen_random_fn)GetProcAddress(advapi, "SystemFunction036") : NULL;
    }
    while (len > 0) {
        ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!gen || !gen(data, chunk))
            return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
