// clrmd-truth: what ClrMD (Microsoft.Diagnostics.Runtime) sees in a dump, as one JSON document.
//
//   clrmd-truth <core or minidump> <dac path> [out.json] [--bench] [--file-fallback]
//
// A second, independent truth beside dacprobe's <name>.dac.json: ClrMD drives the same DAC
// through its own code (heap walk, stack walk, handle walk), so where the two disagree one of
// them (or dumpshell) has a story to tell. See README.md in this folder.
//
// --bench: only the runtime, the segments and a timed heap enumeration (object count, bytes,
// objects/s); no census, stacks, handles etc.
//
// Key style follows dumps/*.dac.json: addresses and method tables as "0x..." strings, counts and
// sizes as numbers.

using System.Diagnostics;
using System.Runtime.InteropServices;
using System.Reflection;
using System.Security.Cryptography;
using System.Text;
using System.Text.Encodings.Web;
using System.Text.Json;
using Microsoft.Diagnostics.Runtime;

static class Program
{
    static string Hex(ulong v) => "0x" + v.ToString("x");

    static int Main(string[] args)
    {
        var pos = args.Where(a => !a.StartsWith("--")).ToList();
        bool bench = args.Contains("--bench");
        if (pos.Count < 2)
        {
            Console.Error.WriteLine("usage: clrmd-truth <dump> <dac path> [out.json] [--bench]");
            return 2;
        }
        string dumpPath = pos[0], dacPath = pos[1];
        string outPath = pos.Count > 2 ? pos[2] : null;

        var ms = new MemoryStream();
        var jw = new Utf8JsonWriter(ms, new JsonWriterOptions
        {
            Indented = true,
            Encoder = JavaScriptEncoder.UnsafeRelaxedJsonEscaping,
        });
        var errors = new List<string>();
        int rc = 0;
        try
        {
            if (args.Contains("--roots"))
                RunRoots(jw, dumpPath, dacPath, errors);
            else
                Run(jw, dumpPath, dacPath, bench, args.Contains("--file-fallback"), errors);
        }
        catch (Exception e)
        {
            Console.Error.WriteLine("clrmd-truth: " + e);
            rc = 1;
        }
        jw.Flush();
        if (rc != 0)
            return rc;
        var bytes = ms.ToArray();
        if (outPath == null || outPath == "-")
        {
            using var so = Console.OpenStandardOutput();
            so.Write(bytes);
            so.Write(new byte[] { (byte)'\n' });
        }
        else
        {
            File.WriteAllBytes(outPath, bytes.Concat(new byte[] { (byte)'\n' }).ToArray());
        }
        return rc;
    }

    // The data target's options: no DAC signature check; where ClrMD looks for the image
    // pages a dump lacks: CLRMD_IMAGE_DIRS (':'-separated folders: a PE file of the module's
    // name, timestamp and image size, DirectoryFileLocator.cs; no symbol server), else the
    // symbol servers CLRMD_SYMBOL_PATHS names (';'-separated; empty: none, for a machine
    // without internet, where a lookup would throw), else ClrMD's own.
    static DataTargetOptions Options()
    {
        var o = new DataTargetOptions { VerifyDacOnWindows = false };
        string dirs = Environment.GetEnvironmentVariable("CLRMD_IMAGE_DIRS");
        string paths = Environment.GetEnvironmentVariable("CLRMD_SYMBOL_PATHS");
        if (dirs != null)
            o.FileLocator = new DirectoryFileLocator(dirs.Split(':', StringSplitOptions.RemoveEmptyEntries));
        else if (paths != null)
            o.SymbolPaths = paths.Split(';', StringSplitOptions.RemoveEmptyEntries);
        return o;
    }

    // --roots: ClrHeap.EnumerateRoots(), every root as ClrMD reports it (handles, the
    // finalizer queue's f-reachable objects, stack roots from the DAC's GC stack walk), in
    // its order, for gcroot's root set (tests/tests/roots.rs).
    static void RunRoots(Utf8JsonWriter w, string dumpPath, string dacPath, List<string> errors)
    {
        var fi = new FileInfo(dumpPath);
        w.WriteStartObject();
        w.WriteStartObject("tool");
        w.WriteString("name", "clrmd-truth --roots");
        var clrmdAsm = typeof(DataTarget).Assembly;
        w.WriteString("clrmd_version",
            clrmdAsm.GetCustomAttribute<AssemblyInformationalVersionAttribute>()?.InformationalVersion?.Split('+')[0]
            ?? clrmdAsm.GetName().Version?.ToString());
        w.WriteEndObject();
        w.WriteStartObject("dump");
        w.WriteString("file", fi.Name);
        w.WriteNumber("size", fi.Length);
        using (var fs = File.OpenRead(dumpPath))
            w.WriteString("sha256", Convert.ToHexString(SHA256.HashData(fs)).ToLowerInvariant());
        w.WriteEndObject();
        w.WriteString("dac", dacPath);
        using var dt = DataTarget.LoadDump(dumpPath, Options());
        var clr = dt.ClrVersions[0];
        using var runtime = clr.CreateRuntime(dacPath, true);
        w.WriteString("runtime", clr.Version.ToString());
        w.WriteStartArray("roots");
        try
        {
            foreach (var r in runtime.Heap.EnumerateRoots())
            {
                w.WriteStartObject();
                w.WriteString("kind", r.RootKind.ToString());
                w.WriteString("address", Hex(r.Address));
                w.WriteString("object", Hex(r.Object.Address));
                w.WriteString("object_type", r.Object.Type?.Name);
                w.WriteBoolean("is_interior", r.IsInterior);
                w.WriteBoolean("is_pinned", r.IsPinned);
                if (r is ClrStackRoot sr)
                {
                    var f = sr.StackFrame;
                    w.WriteNumber("os_id", f?.Thread?.OSThreadId ?? 0);
                    w.WriteString("frame_sp", Hex(f?.StackPointer ?? 0));
                    w.WriteString("frame_ip", Hex(f?.InstructionPointer ?? 0));
                    w.WriteString("frame_method", f?.Method?.Signature);
                    w.WriteString("frame_name", f?.FrameName);
                    w.WriteString("register", sr.RegisterName);
                    w.WriteNumber("register_offset", sr.RegisterOffset);
                }
                else if (r is ClrHandle h)
                {
                    w.WriteString("handle_kind", h.HandleKind.ToString());
                }
                w.WriteEndObject();
            }
        }
        catch (Exception e) { errors.Add("roots: " + e.Message); }
        w.WriteEndArray();
        w.WriteStartArray("errors");
        foreach (var e in errors) w.WriteStringValue(e);
        w.WriteEndArray();
        w.WriteEndObject();
    }

    static void Run(Utf8JsonWriter w, string dumpPath, string dacPath, bool bench, bool fileFallback, List<string> errors)
    {
        var fi = new FileInfo(dumpPath);
        w.WriteStartObject();
        w.WriteStartObject("tool");
        w.WriteString("name", "clrmd-truth");
        var clrmdAsm = typeof(DataTarget).Assembly;
        w.WriteString("clrmd", "Microsoft.Diagnostics.Runtime");
        w.WriteString("clrmd_version",
            clrmdAsm.GetCustomAttribute<AssemblyInformationalVersionAttribute>()?.InformationalVersion?.Split('+')[0]
            ?? clrmdAsm.GetName().Version?.ToString());
        w.WriteString("dotnet", Environment.Version.ToString());
        w.WriteEndObject();

        w.WriteStartObject("dump");
        w.WriteString("file", fi.Name);
        w.WriteNumber("size", fi.Length);
        if (!bench)
        {
            using var fs = File.OpenRead(dumpPath);
            w.WriteString("sha256", Convert.ToHexString(SHA256.HashData(fs)).ToLowerInvariant());
        }
        w.WriteEndObject();
        w.WriteString("dac", dacPath);

        using var dt0 = DataTarget.LoadDump(dumpPath, Options());
        FileFallbackReader fallback = null;
        DataTarget dtWrapped = null;
        if (fileFallback && dt0.DataReader.TargetPlatform == OSPlatform.Linux)
        {
            fallback = new FileFallbackReader(dt0.DataReader, dumpPath);
            if (fallback.MappingCount > 0)
                dtWrapped = new DataTarget(fallback, Options());
        }
        using var dtOwned = dtWrapped;
        using var fallbackOwned = fallback;
        var dt = dtWrapped ?? dt0;
        if (dt.ClrVersions.Length == 0)
            throw new Exception("no CLR found in the dump");
        var clr = dt.ClrVersions[0];
        using var runtime = clr.CreateRuntime(dacPath, true);

        w.WriteStartObject("runtime");
        w.WriteString("version", clr.Version.ToString());
        w.WriteString("flavor", clr.Flavor.ToString());
        w.WriteString("module", Path.GetFileName(clr.ModuleInfo.FileName));
        w.WriteString("module_base", Hex(clr.ModuleInfo.ImageBase));
        w.WriteString("os", dt.DataReader.TargetPlatform.ToString());
        w.WriteString("architecture", dt.DataReader.Architecture.ToString());
        w.WriteNumber("pointer_size", dt.DataReader.PointerSize);
        w.WriteNumber("clr_versions_in_dump", dt.ClrVersions.Length);
        w.WriteEndObject();

        var heap = runtime.Heap;
        w.WriteBoolean("is_server", heap.IsServer);
        w.WriteNumber("heap_count", heap.SubHeaps.Length);
        w.WriteBoolean("can_walk_heap", heap.CanWalkHeap);

        // threads
        var threads = runtime.Threads;
        var threadByAddr = new Dictionary<ulong, ClrThread>();
        foreach (var t in threads) threadByAddr[t.Address] = t;
        if (!bench)
        {
            w.WriteStartArray("threads");
            foreach (var t in threads)
            {
                w.WriteStartObject();
                w.WriteNumber("managed_id", t.ManagedThreadId);
                w.WriteNumber("os_id", t.OSThreadId);
                w.WriteString("address", Hex(t.Address));
                w.WriteBoolean("is_alive", t.IsAlive);
                w.WriteBoolean("is_finalizer", t.IsFinalizer);
                w.WriteBoolean("is_gc", t.IsGc);
                w.WriteString("gc_mode", t.GCMode.ToString());
                w.WriteNumber("lock_count", t.LockCount);
                w.WriteString("state", t.State.ToString());
                w.WriteString("stack_base", Hex(t.StackBase));
                w.WriteString("stack_limit", Hex(t.StackLimit));
                ClrException ce = null;
                try { ce = t.CurrentException; } catch (Exception e) { errors.Add($"thread {t.OSThreadId} CurrentException: {e.Message}"); }
                if (ce != null)
                {
                    w.WriteStartObject("current_exception");
                    w.WriteString("address", Hex(ce.Address));
                    w.WriteString("type", ce.Type?.Name);
                    w.WriteEndObject();
                }
                else
                    w.WriteNull("current_exception");
                w.WriteEndObject();
            }
            w.WriteEndArray();

            // stacks
            w.WriteStartObject("stacks");
            foreach (var t in threads)
            {
                w.WriteStartArray(t.OSThreadId.ToString());
                try
                {
                    foreach (var f in t.EnumerateStackTrace(true))
                    {
                        w.WriteStartObject();
                        w.WriteString("kind", f.Kind == ClrStackFrameKind.ManagedMethod ? "managed" :
                            f.Kind == ClrStackFrameKind.Runtime ? "runtime" : f.Kind.ToString().ToLowerInvariant());
                        w.WriteString("ip", Hex(f.InstructionPointer));
                        w.WriteString("sp", Hex(f.StackPointer));
                        if (f.FrameName != null) w.WriteString("frame_name", f.FrameName); else w.WriteNull("frame_name");
                        if (f.Method != null)
                        {
                            w.WriteString("method", f.Method.Signature);
                            w.WriteString("method_desc", Hex(f.Method.MethodDesc));
                        }
                        else
                        {
                            w.WriteNull("method");
                            w.WriteNull("method_desc");
                        }
                        w.WriteEndObject();
                    }
                }
                catch (Exception e) { errors.Add($"stack of {t.OSThreadId}: {e.Message}"); }
                w.WriteEndArray();
            }
            w.WriteEndObject();
        }

        // segments (object counts filled by the walk below, so walk first)
        var segs = heap.Segments.ToList();
        var segObjects = new Dictionary<ulong, (long n, ulong bytes, long free, ulong freeBytes)>();
        var census = new Dictionary<ulong, (string name, long count, ulong size, ulong aligned)>();
        ulong ptr = (ulong)dt.DataReader.PointerSize;
        ulong alignedBytes = 0;
        var exceptions = new List<ClrObject>();
        long objects = 0, freeObjects = 0, badObjects = 0;
        ulong bytes = 0, freeBytes = 0;
        var kindTotals = new Dictionary<string, (int segs, long n, ulong bytes)>();
        var sw = Stopwatch.StartNew();
        if (bench)
        {
            foreach (var o in heap.EnumerateObjects())
            {
                objects++;
                bytes += o.Size;
            }
        }
        else
        {
            foreach (var seg in segs)
            {
                long n = 0, fn = 0; ulong b = 0, fb = 0;
                foreach (var o in seg.EnumerateObjects())
                {
                    var t = o.Type;
                    if (t == null) { badObjects++; continue; }
                    ulong sz = o.Size;
                    if (t.IsFree) { fn++; fb += sz; continue; }
                    n++; b += sz;
                    ulong al = (sz + ptr - 1) & ~(ptr - 1);
                    alignedBytes += al;
                    ulong mt = t.MethodTable;
                    if (census.TryGetValue(mt, out var e)) census[mt] = (e.name, e.count + 1, e.size + sz, e.aligned + al);
                    else census[mt] = (t.Name, 1, sz, al);
                    if (t.IsException) exceptions.Add(o);
                }
                segObjects[seg.Address] = (n, b, fn, fb);
                objects += n; bytes += b; freeObjects += fn; freeBytes += fb;
                string k = SegKind(seg.Kind);
                kindTotals.TryGetValue(k, out var kt);
                kindTotals[k] = (kt.segs + 1, kt.n + n, kt.bytes + b);
            }
        }
        sw.Stop();
        double secs = sw.Elapsed.TotalSeconds;

        w.WriteStartArray("segments");
        foreach (var seg in segs)
        {
            w.WriteStartObject();
            w.WriteString("kind", SegKind(seg.Kind));
            w.WriteString("clrmd_kind", seg.Kind.ToString());
            w.WriteNumber("heap", seg.SubHeap?.Index ?? -1);
            w.WriteString("address", Hex(seg.Address));
            w.WriteString("start", Hex(seg.Start));
            w.WriteString("end", Hex(seg.End));
            w.WriteString("first_object", Hex(seg.FirstObjectAddress));
            w.WriteString("committed_start", Hex(seg.CommittedMemory.Start));
            w.WriteString("committed_end", Hex(seg.CommittedMemory.End));
            w.WriteString("reserved_start", Hex(seg.ReservedMemory.Start));
            w.WriteString("reserved_end", Hex(seg.ReservedMemory.End));
            w.WriteBoolean("is_pinned", seg.IsPinned);
            if (segObjects.TryGetValue(seg.Address, out var so))
            {
                w.WriteNumber("objects", so.n);
                w.WriteNumber("object_bytes", so.bytes);
                w.WriteNumber("free_objects", so.free);
                w.WriteNumber("free_bytes", so.freeBytes);
            }
            w.WriteEndObject();
        }
        w.WriteEndArray();

        if (!bench)
        {
            w.WriteStartObject("heap_stat");
            w.WriteString("sorted_by", "method table ascending");
            w.WriteString("includes", "every object ClrHeap.Segments[].EnumerateObjects() yields, frozen (NonGC) segments included; free objects (Type.IsFree, the runtime's FreeMethodTable) counted apart in free_objects/free_size, not in types[]");
            w.WriteStartObject("by_segment_kind");
            foreach (var kv in kindTotals)
            {
                w.WriteStartObject(kv.Key);
                w.WriteNumber("segments", kv.Value.segs);
                w.WriteNumber("objects", kv.Value.n);
                w.WriteNumber("bytes", kv.Value.bytes);
                w.WriteEndObject();
            }
            w.WriteEndObject();
            w.WriteNumber("total_objects", objects);
            w.WriteNumber("total_size", bytes);
            w.WriteNumber("total_size_aligned", alignedBytes);
            w.WriteString("sizes", "total_size: ClrObject.Size as ClrMD gives it (base size + length * component size, NOT rounded up); total_size_aligned: each rounded up to the pointer size, as the GC lays objects out and as the DAC / dacprobe / dumpshell count");
            w.WriteNumber("free_objects", freeObjects);
            w.WriteNumber("free_size", freeBytes);
            w.WriteNumber("objects_without_type", badObjects);
            w.WriteNumber("distinct_method_tables", census.Count);
            w.WriteStartArray("types");
            foreach (var kv in census.OrderBy(k => k.Key))
            {
                w.WriteStartObject();
                w.WriteString("mt", Hex(kv.Key));
                w.WriteString("type", kv.Value.name);
                w.WriteNumber("count", kv.Value.count);
                w.WriteNumber("total_size", kv.Value.size);
                w.WriteNumber("total_size_aligned", kv.Value.aligned);
                w.WriteEndObject();
            }
            w.WriteEndArray();
            w.WriteEndObject();

            // allocation contexts (ClrMD skips these ranges during its walk)
            w.WriteStartArray("allocation_contexts");
            try
            {
                foreach (var ac in heap.EnumerateAllocationContexts())
                {
                    w.WriteStartObject();
                    w.WriteString("start", Hex(ac.Start));
                    w.WriteString("end", Hex(ac.End));
                    w.WriteEndObject();
                }
            }
            catch (Exception e) { errors.Add("allocation contexts: " + e.Message); }
            w.WriteEndArray();

            // GC handles
            w.WriteStartArray("gc_handles");
            try
            {
                foreach (var h in runtime.EnumerateHandles())
                {
                    w.WriteStartObject();
                    w.WriteString("address", Hex(h.Address));
                    w.WriteString("kind", h.HandleKind.ToString());
                    w.WriteString("object", Hex(h.Object.Address));
                    w.WriteString("object_type", h.Object.Type?.Name);
                    w.WriteBoolean("is_strong", h.IsStrong);
                    w.WriteString("root", h.RootKind.ToString());
                    if (h.HandleKind == ClrHandleKind.Dependent) w.WriteString("dependent", Hex(h.Dependent.Address));
                    if (h.HandleKind == ClrHandleKind.RefCounted) w.WriteNumber("ref_count", h.ReferenceCount);
                    w.WriteEndObject();
                }
            }
            catch (Exception e) { errors.Add("handles: " + e.Message); }
            w.WriteEndArray();

            // sync blocks
            w.WriteStartArray("sync_blocks");
            try
            {
                foreach (var sb in heap.EnumerateSyncBlocks())
                {
                    w.WriteStartObject();
                    w.WriteNumber("index", sb.Index);
                    w.WriteString("object", Hex(sb.Object));
                    w.WriteString("object_type", heap.GetObjectType(sb.Object)?.Name);
                    w.WriteBoolean("monitor_held", sb.IsMonitorHeld);
                    w.WriteString("owner_thread", sb.HoldingThreadAddress == 0 ? null : Hex(sb.HoldingThreadAddress));
                    if (sb.HoldingThreadAddress != 0 && threadByAddr.TryGetValue(sb.HoldingThreadAddress, out var ot))
                    {
                        w.WriteNumber("owner_managed_id", ot.ManagedThreadId);
                        w.WriteNumber("owner_os_id", ot.OSThreadId);
                    }
                    w.WriteNumber("recursion", sb.RecursionCount);
                    w.WriteNumber("waiting_count", sb.WaitingThreadCount);
                    w.WriteEndObject();
                }
            }
            catch (Exception e) { errors.Add("sync blocks: " + e.Message); }
            w.WriteEndArray();

            // exceptions on the heap
            w.WriteStartArray("exceptions_on_heap");
            foreach (var o in exceptions)
            {
                try
                {
                    var ex = o.AsException();
                    if (ex == null) continue;
                    w.WriteStartObject();
                    w.WriteString("address", Hex(ex.Address));
                    w.WriteString("type", ex.Type?.Name);
                    string msg = null;
                    try { msg = ex.Message; } catch { }
                    w.WriteString("message", msg);
                    w.WriteString("hresult", ((uint)ex.HResult).ToString("x8"));
                    w.WriteString("inner", ex.Inner == null ? null : Hex(ex.Inner.Address));
                    w.WriteStartArray("stack_trace");
                    foreach (var f in ex.StackTrace)
                    {
                        w.WriteStartObject();
                        w.WriteString("ip", Hex(f.InstructionPointer));
                        w.WriteString("sp", Hex(f.StackPointer));
                        w.WriteString("method", f.Method?.Signature);
                        w.WriteString("method_desc", f.Method == null ? null : Hex(f.Method.MethodDesc));
                        w.WriteEndObject();
                    }
                    w.WriteEndArray();
                    w.WriteEndObject();
                }
                catch (Exception e) { errors.Add($"exception {Hex(o.Address)}: {e.Message}"); }
            }
            w.WriteEndArray();

            // finalizer queue
            w.WriteStartObject("finalizer_queue");
            try
            {
                var fin = heap.EnumerateFinalizableObjects().ToList();
                var ready = heap.EnumerateFinalizerRoots().ToList();
                w.WriteNumber("finalizable_objects", fin.Count);
                w.WriteNumber("ready_for_finalization", ready.Count);
                w.WriteStartArray("finalizable_by_type");
                foreach (var g in fin.GroupBy(o => o.Type?.Name ?? "?").OrderBy(g => g.Key, StringComparer.Ordinal))
                {
                    w.WriteStartObject();
                    w.WriteString("type", g.Key);
                    w.WriteNumber("count", g.Count());
                    w.WriteEndObject();
                }
                w.WriteEndArray();
                w.WriteStartArray("ready_by_type");
                foreach (var g in ready.GroupBy(r => r.Object.Type?.Name ?? "?").OrderBy(g => g.Key, StringComparer.Ordinal))
                {
                    w.WriteStartObject();
                    w.WriteString("type", g.Key);
                    w.WriteNumber("count", g.Count());
                    w.WriteEndObject();
                }
                w.WriteEndArray();
            }
            catch (Exception e) { errors.Add("finalizer queue: " + e.Message); }
            w.WriteEndObject();
        }

        // bench: also time the stack walk of every thread (what pstacks needs)
        double stackSecs = 0; long stackFrames = 0;
        if (bench)
        {
            var sw2 = Stopwatch.StartNew();
            foreach (var t in threads)
            {
                try { foreach (var f in t.EnumerateStackTrace(false)) { stackFrames++; _ = f.Method?.Signature; } }
                catch (Exception e) { errors.Add($"stack of {t.OSThreadId}: {e.Message}"); }
            }
            sw2.Stop();
            stackSecs = sw2.Elapsed.TotalSeconds;
        }

        w.WriteStartObject("timing");
        w.WriteString("what", bench
            ? "ClrHeap.EnumerateObjects() summing ClrObject.Size, nothing else"
            : "ClrSegment.EnumerateObjects() over every segment with the census (type lookup, size, dictionary)");
        w.WriteNumber("heap_walk_seconds", Math.Round(secs, 4));
        w.WriteNumber("objects", objects + freeObjects);
        w.WriteNumber("live_objects", objects);
        w.WriteNumber("bytes", bytes);
        w.WriteNumber("objects_per_second", secs > 0 ? Math.Round((objects + freeObjects) / secs) : 0);
        if (bench)
        {
            w.WriteNumber("stack_walk_seconds", Math.Round(stackSecs, 4));
            w.WriteNumber("stack_walk_threads", threads.Length);
            w.WriteNumber("stack_walk_frames", stackFrames);
        }
        w.WriteEndObject();

        w.WriteStartObject("memory");
        w.WriteBoolean("file_fallback", dtWrapped != null);
        w.WriteString("note", dtWrapped != null
            ? "--file-fallback: bytes the core lacks were read from the file mapped there (NT_FILE) when it exists at that path and is not newer than the core, as dacprobe does (without its identity being checked)"
            : "ClrMD alone: only the bytes in the dump (--file-fallback reads missing file-backed pages from the files on disk, as dacprobe does)");
        w.WriteNumber("nt_file_mappings", fallback?.MappingCount ?? 0);
        w.WriteNumber("file_fallback_reads", fallback?.Reads ?? 0);
        w.WriteNumber("file_fallback_bytes", fallback?.Bytes ?? 0);
        w.WriteStartObject("file_fallback_by_file");
        if (fallback != null)
            foreach (var kv in fallback.BytesByFile.OrderBy(k => k.Key, StringComparer.Ordinal))
                w.WriteNumber(kv.Key, kv.Value);
        w.WriteEndObject();
        w.WriteStartArray("files_refused_newer_than_core");
        if (fallback != null)
            foreach (var f in fallback.RefusedNewer.OrderBy(k => k, StringComparer.Ordinal))
                w.WriteStringValue(f);
        w.WriteEndArray();
        w.WriteEndObject();

        w.WriteStartArray("errors");
        foreach (var e in errors) w.WriteStringValue(e);
        w.WriteEndArray();
        w.WriteEndObject();
    }

    static string SegKind(GCSegmentKind k) => k switch
    {
        GCSegmentKind.Generation0 => "gen0",
        GCSegmentKind.Generation1 => "gen1",
        GCSegmentKind.Generation2 => "gen2",
        GCSegmentKind.Large => "loh",
        GCSegmentKind.Pinned => "poh",
        GCSegmentKind.Frozen => "frozen",
        GCSegmentKind.Ephemeral => "ephemeral",
        _ => k.ToString().ToLowerInvariant(),
    };
}
