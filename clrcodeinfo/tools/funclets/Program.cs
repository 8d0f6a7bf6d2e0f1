// Threads stopped inside exception handlers (catch, finally, filter funclets), in optimized
// code with pinned and interior pointers, in shared generic code, and one spinning in managed
// code (the active frame), for clrcodeinfo's GC info truth (the DAC's GetStackReferences).
using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;
using System.Threading;

static class Program
{
    static readonly object Gate = new object();
    static volatile bool Stop;
    static volatile int Ready;
    static long Counter;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Block() { lock (Gate) { Interlocked.Increment(ref Ready); Monitor.Wait(Gate); } }

    [MethodImpl(MethodImplOptions.NoInlining | MethodImplOptions.AggressiveOptimization)]
    static void InCatch()
    {
        var kept = new List<string> { "catch" };
        try { throw new InvalidOperationException("in catch"); }
        catch (InvalidOperationException e)
        {
            var inner = new object[] { e, kept };
            Block();
            GC.KeepAlive(inner);
        }
        GC.KeepAlive(kept);
    }

    [MethodImpl(MethodImplOptions.NoInlining | MethodImplOptions.AggressiveOptimization)]
    static void InFinally()
    {
        var kept = new string('f', 3);
        try { Counter++; }
        finally
        {
            var local = new int[4];
            Block();
            GC.KeepAlive(local);
        }
        GC.KeepAlive(kept);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static bool FilterBlocks(Exception e) { Block(); return true; }

    [MethodImpl(MethodImplOptions.NoInlining | MethodImplOptions.AggressiveOptimization)]
    static void InFilter()
    {
        var kept = new Version(1, 2);
        try { throw new ArgumentException("in filter"); }
        catch (ArgumentException e) when (FilterBlocks(e)) { GC.KeepAlive(kept); }
    }

    [MethodImpl(MethodImplOptions.NoInlining | MethodImplOptions.AggressiveOptimization)]
    static unsafe void Pinned()
    {
        var arr = new byte[64];
        var s = new Holder { Name = "interior", Other = arr };
        ref Holder r = ref s;
        fixed (byte* p = arr)
        {
            p[0] = 1;
            Span<byte> buf = stackalloc byte[32];
            buf[1] = p[0];
            Block();
            GC.KeepAlive(r.Name);
            Counter += buf[1];
        }
    }

    struct Holder { public string Name; public byte[] Other; }

    [MethodImpl(MethodImplOptions.NoInlining | MethodImplOptions.AggressiveOptimization)]
    static T Generic<T>(T value) where T : class
    {
        var list = new List<T> { value };
        Block();
        return list[0];
    }

    [MethodImpl(MethodImplOptions.NoInlining | MethodImplOptions.AggressiveOptimization)]
    static void Spin()
    {
        var a = new object();
        var b = new string('s', 2);
        Interlocked.Increment(ref Ready);
        while (!Stop) { Counter += a.GetHashCode() + b.Length; }
        GC.KeepAlive(a);
    }

    static void Main()
    {
        var ts = new List<Thread>();
        foreach (ThreadStart f in new ThreadStart[] { InCatch, InFinally, InFilter, Pinned,
                 () => Generic<string>("generic"), Spin })
        {
            var t = new Thread(f) { IsBackground = true };
            t.Start();
            ts.Add(t);
        }
        while (Ready < 6) Thread.Sleep(10);
        Thread.Sleep(300);
        Console.WriteLine("ready " + Environment.ProcessId);
        Console.Out.Flush();
        Thread.Sleep(Timeout.Infinite);
    }
}
