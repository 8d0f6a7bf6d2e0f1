"""Minimal reader for Linux x86-64 ELF core dumps (as written by the kernel or
by .NET's createdump): PT_LOAD memory, NT_FILE mappings, NT_PRSTATUS threads.

Extended from an earlier minimal reader:
  * reads may span adjacent PT_LOAD segments and may be partial (read_partial);
  * NT_PRSTATUS registers (x86-64 user_regs_struct at offset 112, pid at 32);
  * optional fallback to the on-disk PE file (managed assembly) behind an
    NT_FILE mapping for addresses the core does not contain (counted in
    stats, can be switched off).
"""
import bisect
import mmap
import os
import struct

NT_PRSTATUS = 1
NT_PRFPREG = 2
NT_FILE = 0x46494C45

# Field order of struct user_regs_struct (glibc sys/user.h, x86-64).
USER_REGS = ['r15', 'r14', 'r13', 'r12', 'rbp', 'rbx', 'r11', 'r10', 'r9', 'r8',
             'rax', 'rcx', 'rdx', 'rsi', 'rdi', 'orig_rax', 'rip', 'cs', 'eflags',
             'rsp', 'ss', 'fs_base', 'gs_base', 'ds', 'es', 'fs', 'gs']
PRSTATUS_PID_OFF = 32
PRSTATUS_REGS_OFF = 112


class Core:
    def __init__(self, path, file_fallback=True):
        self.path = path
        f = open(path, 'rb')
        self.m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        f.close()
        m = self.m
        if m[:4] != b'\x7fELF':
            raise ValueError('not an ELF file')
        if m[4] != 2 or m[5] != 1:
            raise ValueError('only 64-bit little-endian cores are supported')
        e_type, e_machine = struct.unpack_from('<HH', m, 0x10)
        if e_type != 4:
            raise ValueError('ELF e_type %d is not ET_CORE' % e_type)
        self.machine = e_machine  # 62 = EM_X86_64
        (phoff,) = struct.unpack_from('<Q', m, 0x20)
        (phentsize, phnum) = struct.unpack_from('<HH', m, 0x36)
        loads = []
        notes = []
        for i in range(phnum):
            t, fl, off, va, pa, fsz, msz, al = struct.unpack_from('<IIQQQQQQ', m, phoff + i * phentsize)
            if t == 1:
                loads.append((va, msz, off, fsz))
            elif t == 4:
                notes.append((off, fsz))
        loads.sort()
        self.loads = loads
        self._starts = [l[0] for l in loads]
        self.files = []       # (start, end, file_offset, name)
        self.threads = []     # tids in note order (first = crashing/main thread)
        self.regs = {}        # tid -> dict of user_regs_struct
        self.fpregs = {}      # tid -> 512-byte FXSAVE area (NT_PRFPREG)
        last_tid = None
        for off, sz in notes:
            p = off
            end = off + sz
            while p + 12 <= end:
                nsz, dsz, typ = struct.unpack_from('<III', m, p)
                p += 12
                name = bytes(m[p:p + nsz]).rstrip(b'\0')
                p += (nsz + 3) & ~3
                desc = bytes(m[p:p + dsz])
                p += (dsz + 3) & ~3
                if name not in (b'CORE', b'LINUX'):
                    continue
                if typ == NT_FILE and name == b'CORE':
                    cnt, pgsz = struct.unpack_from('<QQ', desc, 0)
                    ents = [struct.unpack_from('<QQQ', desc, 16 + 24 * i) for i in range(cnt)]
                    names = desc[16 + 24 * cnt:].split(b'\0')
                    for (st, en, pg), n in zip(ents, names):
                        self.files.append((st, en, pg * pgsz, n.decode('utf-8', 'replace')))
                elif typ == NT_PRSTATUS and name == b'CORE':
                    (tid,) = struct.unpack_from('<I', desc, PRSTATUS_PID_OFF)
                    vals = struct.unpack_from('<27Q', desc, PRSTATUS_REGS_OFF)
                    self.threads.append(tid)
                    self.regs[tid] = dict(zip(USER_REGS, vals))
                    last_tid = tid
                elif typ == NT_PRFPREG and name == b'CORE' and last_tid is not None and dsz >= 512:
                    self.fpregs[last_tid] = desc[:512]
        self.files.sort()
        self._fstarts = [f[0] for f in self.files]
        self.file_fallback = file_fallback
        self._fh = {}
        self._elf_ok = {}     # file name -> None (PE: any range) or (ro_end, image_end) (ELF)
        self.stats = {'core_bytes': 0, 'file_fallback_reads': 0, 'file_fallback_bytes': 0,
                      'failed_reads': 0}
        self.fallback_files = {}

    # ---- memory -------------------------------------------------------
    hidden = ()  # [(start, end)]: core data treated as absent (robustness testing)

    def _core_read(self, addr, n):
        """Bytes at addr from PT_LOAD data only (stops at the first hole)."""
        for hs, he in self.hidden:
            if hs <= addr < he:
                return b''
            if addr < hs < addr + n:
                n = hs - addr
        out = []
        got = 0
        while got < n:
            i = bisect.bisect_right(self._starts, addr) - 1
            if i < 0:
                break
            va, msz, off, fsz = self.loads[i]
            if not (va <= addr < va + fsz):
                break
            take = min(n - got, va + fsz - addr)
            out.append(self.m[off + addr - va: off + addr - va + take])
            got += take
            addr += take
        return b''.join(out)

    def mapping_of(self, addr):
        """The NT_FILE entry containing addr (entries are disjoint VMAs), or None."""
        i = bisect.bisect_right(self._fstarts, addr) - 1
        if i >= 0 and self.files[i][0] <= addr < self.files[i][1]:
            return self.files[i]
        return None

    def _file_read(self, addr, n):
        mp = self.mapping_of(addr)
        if mp is None:
            return b''
        st, en, foff, name = mp
        if not name.startswith('/') or name.endswith('(deleted)'):
            return b''
        fh = self._fh.get(name)
        if fh is None:
            # Like ClrMD's DacDataTarget.ReadVirtual, fall back to PE images (managed
            # assemblies, mapped read-only). ELF modules are excluded: their writable
            # segments are relocated in memory and differ from the file.  Two exceptions
            # (not in shared/tools/dacprobe; needed for single-file apps, whose host is
            # dumped without the DAC's help, see dumps/tools/dacprobe/README.md):
            # an ELF file's read-only first PT_LOAD (ELF header, .dynsym, .gnu.hash, .dynstr:
            # never relocated), and whatever lies beyond the ELF image in the file (a
            # single-file bundle: the PE assemblies the runtime maps from it).
            try:
                fh = open(name, 'rb')
                magic = fh.read(4)
                if magic[:2] == b'MZ':
                    self._elf_ok[name] = None
                elif magic == b'\x7fELF':
                    self._elf_ok[name] = self._elf_ranges(fh)
                    if self._elf_ok[name] is None:
                        fh.close()
                        fh = False
                else:
                    fh.close()
                    fh = False
            except OSError:
                fh = False
            self._fh[name] = fh
        if not fh:
            return b''
        take = min(n, en - addr)
        pos = foff + addr - st
        ok = self._elf_ok.get(name)
        if ok is not None:
            ro_end, image_end = ok
            if pos + take <= ro_end:
                pass
            elif pos >= image_end:
                pass
            elif pos < ro_end:
                take = ro_end - pos
            else:
                return b''
        fh.seek(pos)
        data = fh.read(take)
        if data:
            self.stats['file_fallback_reads'] += 1
            self.stats['file_fallback_bytes'] += len(data)
            self.fallback_files[name] = self.fallback_files.get(name, 0) + len(data)
        return data

    @staticmethod
    def _elf_ranges(fh):
        """(end of the read-only PT_LOAD at file offset 0, end of the ELF image in the file)
        for an ELF64 file, or None."""
        fh.seek(0)
        eh = fh.read(64)
        if len(eh) < 64 or eh[4] != 2:
            return None
        phoff, = struct.unpack_from('<Q', eh, 0x20)
        phentsize, phnum = struct.unpack_from('<HH', eh, 0x36)
        fh.seek(phoff)
        ph = fh.read(phentsize * phnum)
        ro_end = 0
        image_end = 0
        for i in range(phnum):
            p_type, p_flags, p_offset, p_vaddr, p_paddr, p_filesz = struct.unpack_from('<IIQQQQ', ph, i * phentsize)
            if p_type != 1:   # PT_LOAD
                continue
            image_end = max(image_end, p_offset + p_filesz)
            if p_offset == 0 and not (p_flags & 2):   # not PF_W
                ro_end = p_filesz
        return (ro_end, image_end)

    def read_partial(self, addr, n):
        """As many bytes as are contiguously available at addr (maybe b'')."""
        out = []
        got = 0
        while got < n:
            d = self._core_read(addr, n - got)
            if d:
                self.stats['core_bytes'] += len(d)
            elif self.file_fallback:
                d = self._file_read(addr, n - got)
            if not d:
                break
            out.append(d)
            got += len(d)
            addr += len(d)
        if got == 0:
            self.stats['failed_reads'] += 1
        return b''.join(out)

    def read(self, addr, n):
        d = self.read_partial(addr, n)
        return d if len(d) == n else None

    def u64(self, addr):
        d = self.read(addr, 8)
        return None if d is None else struct.unpack('<Q', d)[0]

    def u32(self, addr):
        d = self.read(addr, 4)
        return None if d is None else struct.unpack('<I', d)[0]

    # ---- modules ------------------------------------------------------
    def module_base(self, filename):
        """Load base of the mapped file whose basename equals filename
        (case-insensitive): the lowest start of a mapping of its file offset 0 (its ELF or PE
        headers), else the lowest (start - file_offset) over its mappings.
        (Changed from shared/tools/dacprobe, which always took the latter: a single-file app's
        host executable is also mapped piecewise by the runtime, each bundled assembly at its own
        offset in the file, and those pieces gave a base below the ELF image's.)"""
        fl = filename.lower()
        m = [(st, pg) for st, en, pg, n in self.files if os.path.basename(n).lower() == fl]
        zero = [st for st, pg in m if pg == 0]
        if zero:
            return min(zero)
        c = [st - pg for st, pg in m]
        return min(c) if c else None

    def module_path(self, filename):
        fl = filename.lower()
        for st, en, pg, n in self.files:
            if os.path.basename(n).lower() == fl:
                return n
        return None
