// FileFallbackReader: ClrMD's own ELF core reader, plus what dacprobe does for bytes the core
// lacks: read them from the file the core's NT_FILE note says was mapped there, if that file
// exists on this machine at the same path.
//
// gcore (default coredump_filter) leaves out file-backed mappings: the assemblies' metadata and
// ReadyToRun code, libcoreclr.so's text. dacprobe falls back to the files on disk
// (dac.json memory_stats.file_fallback_*); ClrMD alone does not, and then has no type names and
// one frame per thread. With this reader (clrmd-truth --file-fallback) the two see the same
// bytes, counted in the JSON's "memory" section. Off by default: nothing in a gcore core proves
// the file on disk is the one that was mapped (a rebuilt single-file bundle at the same path gave
// 48,581 garbage frames), so the only guard is that a file modified after the core was written
// is refused (listed in memory.files_refused_newer_than_core). Only ELF cores.

using System.Buffers.Binary;
using System.Runtime.InteropServices;
using System.Collections.Immutable;
using Microsoft.Diagnostics.Runtime;

sealed class FileFallbackReader : IDataReader, IDisposable
{
    readonly IDataReader _inner;
    readonly List<(ulong start, ulong end, ulong fileOffset, string path)> _maps = new();
    readonly Dictionary<string, FileStream> _files = new();
    readonly object _lock = new();
    public long Reads, Bytes;
    public readonly Dictionary<string, long> BytesByFile = new();
    public readonly HashSet<string> RefusedNewer = new();
    readonly DateTime _coreTime;

    public FileFallbackReader(IDataReader inner, string corePath)
    {
        _inner = inner;
        _coreTime = File.GetLastWriteTimeUtc(corePath);
        ParseNtFile(corePath);
    }

    public int MappingCount => _maps.Count;

    void ParseNtFile(string corePath)
    {
        using var fs = File.OpenRead(corePath);
        var hdr = new byte[64];
        if (fs.Read(hdr, 0, 64) != 64 || hdr[0] != 0x7f || hdr[1] != (byte)'E' || hdr[4] != 2)
            return; // not a 64-bit ELF core
        ulong phoff = BinaryPrimitives.ReadUInt64LittleEndian(hdr.AsSpan(0x20));
        int phentsize = BinaryPrimitives.ReadUInt16LittleEndian(hdr.AsSpan(0x36));
        int phnum = BinaryPrimitives.ReadUInt16LittleEndian(hdr.AsSpan(0x38));
        var ph = new byte[phentsize];
        for (int i = 0; i < phnum; i++)
        {
            fs.Position = (long)phoff + i * phentsize;
            fs.ReadExactly(ph);
            if (BinaryPrimitives.ReadUInt32LittleEndian(ph) != 4) continue; // PT_NOTE
            ulong off = BinaryPrimitives.ReadUInt64LittleEndian(ph.AsSpan(8));
            ulong size = BinaryPrimitives.ReadUInt64LittleEndian(ph.AsSpan(32));
            var notes = new byte[size];
            fs.Position = (long)off;
            fs.ReadExactly(notes);
            int p = 0;
            while (p + 12 <= notes.Length)
            {
                int namesz = (int)BinaryPrimitives.ReadUInt32LittleEndian(notes.AsSpan(p));
                int descsz = (int)BinaryPrimitives.ReadUInt32LittleEndian(notes.AsSpan(p + 4));
                uint type = BinaryPrimitives.ReadUInt32LittleEndian(notes.AsSpan(p + 8));
                int desc = p + 12 + ((namesz + 3) & ~3);
                if (desc + descsz > notes.Length) break;
                if (type == 0x46494c45) // NT_FILE
                    ParseFileNote(notes.AsSpan(desc, descsz));
                p = desc + ((descsz + 3) & ~3);
            }
        }
    }

    void ParseFileNote(ReadOnlySpan<byte> d)
    {
        ulong count = BinaryPrimitives.ReadUInt64LittleEndian(d);
        ulong page = BinaryPrimitives.ReadUInt64LittleEndian(d.Slice(8));
        int names = 16 + (int)count * 24;
        if (names > d.Length) return;
        int q = names;
        for (int i = 0; i < (int)count; i++)
        {
            int e = d.Slice(q).IndexOf((byte)0);
            if (e < 0) break;
            string path = System.Text.Encoding.UTF8.GetString(d.Slice(q, e));
            q += e + 1;
            var r = d.Slice(16 + i * 24, 24);
            _maps.Add((BinaryPrimitives.ReadUInt64LittleEndian(r), BinaryPrimitives.ReadUInt64LittleEndian(r.Slice(8)),
                       BinaryPrimitives.ReadUInt64LittleEndian(r.Slice(16)) * page, path));
        }
    }

    int ReadFromFile(ulong address, Span<byte> buffer)
    {
        foreach (var m in _maps)
        {
            if (address < m.start || address >= m.end) continue;
            lock (_lock)
            {
                if (!_files.TryGetValue(m.path, out var f))
                {
                    try
                    {
                        f = null;
                        if (File.Exists(m.path))
                        {
                            if (File.GetLastWriteTimeUtc(m.path) > _coreTime) RefusedNewer.Add(m.path);
                            else f = File.OpenRead(m.path);
                        }
                    }
                    catch { f = null; }
                    _files[m.path] = f;
                }
                if (f == null) return 0;
                long pos = (long)(m.fileOffset + (address - m.start));
                int want = (int)Math.Min((ulong)buffer.Length, m.end - address);
                if (pos >= f.Length) return 0;
                f.Position = pos;
                int got = f.Read(buffer.Slice(0, want));
                if (got > 0)
                {
                    Reads++; Bytes += got;
                    BytesByFile[m.path] = BytesByFile.GetValueOrDefault(m.path) + got;
                }
                return got;
            }
        }
        return 0;
    }

    public int Read(ulong address, Span<byte> buffer)
    {
        int total = _inner.Read(address, buffer);
        if (total < 0) total = 0;
        // fill what the core lacks, page by page (the core may have some pages and not others)
        while (total < buffer.Length)
        {
            ulong a = address + (ulong)total;
            int got = ReadFromFile(a, buffer.Slice(total));
            if (got <= 0)
                return total;
            total += got;
            if (total < buffer.Length)
            {
                int more = _inner.Read(address + (ulong)total, buffer.Slice(total));
                if (more > 0) total += more;
            }
        }
        return total;
    }

    public string DisplayName => _inner.DisplayName;
    public bool IsThreadSafe => false;
    public OSPlatform TargetPlatform => _inner.TargetPlatform;
    public System.Runtime.InteropServices.Architecture Architecture => _inner.Architecture;
    public int ProcessId => _inner.ProcessId;
    public int PointerSize => _inner.PointerSize;
    public IEnumerable<ModuleInfo> EnumerateModules() => _inner.EnumerateModules();
    public bool GetThreadContext(uint threadID, uint contextFlags, Span<byte> context) => _inner.GetThreadContext(threadID, contextFlags, context);
    public void FlushCachedData() => _inner.FlushCachedData();

    public bool Read<T>(ulong address, out T value) where T : unmanaged
    {
        Span<byte> buf = stackalloc byte[System.Runtime.CompilerServices.Unsafe.SizeOf<T>()];
        if (Read(address, buf) == buf.Length)
        {
            value = System.Runtime.InteropServices.MemoryMarshal.Read<T>(buf);
            return true;
        }
        value = default;
        return false;
    }

    public T Read<T>(ulong address) where T : unmanaged => Read(address, out T v) ? v : default;

    public bool ReadPointer(ulong address, out ulong value)
    {
        Span<byte> buf = stackalloc byte[8];
        int n = PointerSize;
        if (Read(address, buf.Slice(0, n)) == n)
        {
            value = n == 8 ? BinaryPrimitives.ReadUInt64LittleEndian(buf) : BinaryPrimitives.ReadUInt32LittleEndian(buf);
            return true;
        }
        value = 0;
        return false;
    }

    public ulong ReadPointer(ulong address) => ReadPointer(address, out ulong v) ? v : 0;

    public void Dispose()
    {
        foreach (var f in _files.Values) f?.Dispose();
    }
}
