// hang.cs: the "hang" scenario for dumpshell's dump corpus (also "servergc", "netcore31" and,
// under wine, the Windows dump).  Self-contained on purpose: build it alone with
//
//     mcs -out:hang.dll -target:exe -unsafe -optimize+ hang.cs
//
// and run it with `dotnet hang.dll <manifest.json> [scenario-name]` on .NET 8 or .NET Core 3.1
// (Linux, or Windows/wine).  It reaches the state below, writes the manifest (the program's own
// account of what it made), prints "ready <pid>" on stdout and waits forever to be dumped.
//
// Documented state once "ready" is printed:
//   * 4 threads blocked in Monitor.Wait on the one Hang.Gate object
//       (GateThreadMain -> WaitOnGate -> Monitor.Wait); nobody owns the gate's lock.
//   * 1 thread in Thread.Sleep(Infinite) via SleepA -> SleepB -> Thread.Sleep.
//   * 1 thread in ManualResetEventSlim.Wait via MresOuter -> MresInner -> mres.Wait().
//   * 3 async chains, each three methods deep (A awaits B awaits C), never completing:
//       "delay":     DelayA -> DelayB -> DelayC   awaits Task.Delay(10 hours)
//       "tcs":       TcsA   -> TcsB   -> TcsC     awaits a TaskCompletionSource<int>.Task
//       "semaphore": SemA   -> SemB   -> SemC     awaits SemaphoreSlim(0).WaitAsync()
//     (the manifest's "awaited_type" is the awaited task's runtime type, e.g.
//     System.Threading.Tasks.Task+DelayPromise, in the DAC's spelling)
//     = 9 AsyncStateMachineBox objects (3 per chain), state machines are mcs structs
//       Hang.Program+<DelayC>c__asyncN etc.
//   * 1 thread blocked in Task.Wait() on the "tcs" chain's outer task (sync over async)
//       (SyncOverAsyncOuter -> SyncOverAsyncWait -> Task.Wait).
//   * the main thread in Thread.Sleep(Infinite) via Main -> ParkMainThread.
//   * own live objects: 1 Hang.Gate, 1000 Hang.Payload, one Hang.ThreadRecord per thread
//     listed in the manifest (8).
// Every method on a documented call path is NoInlining|NoOptimization so that the JIT neither
// inlines it nor turns its last call into a tail call: every frame shows up in the dump.

using System;
using System.Collections;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Reflection;
using System.Runtime;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace Hang
{
    // The object the 4 monitor-wait threads wait on.
    sealed class Gate
    {
        public int Waiting;          // how many threads are inside Monitor.Wait
    }

    // 1000 of these are kept alive, to give the heap census an exact count of a user type.
    sealed class Payload
    {
        public int Index;
        public string Tag;
        public Payload(int i) { Index = i; Tag = null; }
    }

    // What one thread recorded about itself before blocking (one per manifest thread).
    sealed class ThreadRecord
    {
        public string Role;
        public int ManagedId;
        public long OsId;
        public string BlockedIn;
        public string[] Frames;      // own methods on the stack, innermost first
        public Thread Thread;
    }

    static class Native
    {
        [DllImport("libc", EntryPoint = "syscall")]
        static extern long linux_syscall(long number);

        [DllImport("kernel32.dll")]
        static extern uint GetCurrentThreadId();

        public static bool IsWindows { get { return Path.DirectorySeparatorChar == '\\'; } }

        // The OS thread id, as a debugger / the dump sees it.
        public static long OsThreadId()
        {
            if (IsWindows) return GetCurrentThreadId();
            return linux_syscall(186);   // SYS_gettid on x86-64
        }
    }

    class Program
    {
        const MethodImplOptions Keep = MethodImplOptions.NoInlining | MethodImplOptions.NoOptimization;

        static readonly Gate gate = new Gate();
        static readonly List<Payload> payloads = new List<Payload>();
        static readonly List<ThreadRecord> records = new List<ThreadRecord>();
        static readonly ManualResetEventSlim mres = new ManualResetEventSlim(false);
        static readonly TaskCompletionSource<int> tcs = new TaskCompletionSource<int>();
        static readonly SemaphoreSlim semaphore = new SemaphoreSlim(0);
        static Task delayChain, semChain;
        static Task<int> tcsChain;

        // ------------------------------------------------------------------ helpers

        // Called by a thread right before it blocks: remember who it is and which of our
        // methods are on its stack (innermost first, "Namespace.Type.Method" via reflection).
        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Record(string role, string blockedIn)
        {
            var frames = new List<string>();
            var st = new StackTrace(1, false);          // skip Record itself
            for (int i = 0; i < st.FrameCount; i++)
            {
                MethodBase m = st.GetFrame(i).GetMethod();
                if (m == null || m.DeclaringType == null) continue;
                if (m.DeclaringType.Assembly != typeof(Program).Assembly) continue;
                frames.Add(m.DeclaringType.FullName + "." + m.Name);
            }
            var r = new ThreadRecord
            {
                Role = role,
                ManagedId = Thread.CurrentThread.ManagedThreadId,
                OsId = Native.OsThreadId(),
                BlockedIn = blockedIn,
                Frames = frames.ToArray(),
                Thread = Thread.CurrentThread,
            };
            lock (records) records.Add(r);
        }

        static Thread Start(ThreadStart entry, string name)
        {
            var t = new Thread(entry);
            t.Name = name;
            t.IsBackground = true;
            t.Start();
            return t;
        }

        // ------------------------------------------------------------------ Monitor.Wait x4

        [MethodImpl(Keep)]
        static void GateThreadMain()
        {
            WaitOnGate();
        }

        [MethodImpl(Keep)]
        static void WaitOnGate()
        {
            lock (gate)
            {
                Record("monitor-wait", "System.Threading.Monitor.Wait");
                gate.Waiting++;
                Monitor.Wait(gate);      // never pulsed
            }
        }

        // ------------------------------------------------------------------ Thread.Sleep

        [MethodImpl(Keep)]
        static void SleepA()
        {
            SleepB();
        }

        [MethodImpl(Keep)]
        static void SleepB()
        {
            Record("sleep", "System.Threading.Thread.Sleep");
            Thread.Sleep(Timeout.Infinite);
        }

        // ------------------------------------------------------------------ ManualResetEventSlim

        [MethodImpl(Keep)]
        static void MresOuter()
        {
            MresInner();
        }

        [MethodImpl(Keep)]
        static void MresInner()
        {
            Record("mres-wait", "System.Threading.ManualResetEventSlim.Wait");
            mres.Wait();             // never set
        }

        // ------------------------------------------------------------------ async chains

        static async Task DelayA() { await DelayB(); }
        static async Task DelayB() { await DelayC(); }
        static async Task DelayC() { await Awaited("delay", Task.Delay(TimeSpan.FromHours(10))); }

        static async Task<int> TcsA() { return await TcsB() + 1; }
        static async Task<int> TcsB() { return await TcsC() + 1; }
        static async Task<int> TcsC() { return await Awaited("tcs", tcs.Task) + 1; }

        static async Task SemA() { await SemB(); }
        static async Task SemB() { await SemC(); }
        static async Task SemC() { await Awaited("semaphore", semaphore.WaitAsync()); }

        // The runtime type of the task each chain's innermost method awaits.
        static readonly Dictionary<string, Type> awaitedTypes = new Dictionary<string, Type>();

        static T Awaited<T>(string chain, T task) where T : Task
        {
            awaitedTypes[chain] = task.GetType();
            return task;
        }

        // ------------------------------------------------------------------ sync over async

        [MethodImpl(Keep)]
        static void SyncOverAsyncOuter()
        {
            SyncOverAsyncWait();
        }

        [MethodImpl(Keep)]
        static void SyncOverAsyncWait()
        {
            Record("sync-over-async", "System.Threading.Tasks.Task.Wait");
            tcsChain.Wait();         // the "tcs" chain never completes
        }

        // ------------------------------------------------------------------ main

        [MethodImpl(Keep)]
        static int Main(string[] args)
        {
            string manifestPath = args.Length > 0 ? args[0] : "hang.manifest.json";
            string scenario = args.Length > 1 ? args[1] : "hang";
            Thread.CurrentThread.Name = "main";

            for (int i = 0; i < 1000; i++) payloads.Add(new Payload(i));

            delayChain = DelayA();
            tcsChain = TcsA();
            semChain = SemA();

            var threads = new List<Thread>();
            for (int i = 0; i < 4; i++) threads.Add(Start(GateThreadMain, "gate-waiter-" + i));
            threads.Add(Start(SleepA, "sleeper"));
            threads.Add(Start(MresOuter, "mres-waiter"));
            threads.Add(Start(SyncOverAsyncOuter, "sync-over-async"));

            // All 4 gate waiters are inside Monitor.Wait once we can take the lock and see 4.
            while (true)
            {
                lock (gate) { if (gate.Waiting == 4) break; }
                Thread.Sleep(10);
            }
            // The others have recorded themselves and reached a blocking wait.
            while (true)
            {
                bool all;
                lock (records) all = records.Count == threads.Count;
                if (all)
                {
                    foreach (var t in threads)
                        if ((t.ThreadState & System.Threading.ThreadState.WaitSleepJoin) == 0) all = false;
                }
                if (all) break;
                Thread.Sleep(10);
            }
            Thread.Sleep(500);   // let spinning waits (MRES, Task.Wait) settle into their kernel wait

            ParkMainThread(manifestPath, scenario);
            return 0;
        }

        [MethodImpl(Keep)]
        static void ParkMainThread(string manifestPath, string scenario)
        {
            Record("main", "System.Threading.Thread.Sleep");
            WriteManifest(manifestPath, scenario);

            GC.Collect();
            GC.WaitForPendingFinalizers();
            GC.Collect();

            Console.WriteLine("ready " + Process.GetCurrentProcess().Id);
            Console.Out.Flush();
            Thread.Sleep(Timeout.Infinite);
        }

        // ------------------------------------------------------------------ manifest

        static string StateMachine(string method)
        {
            MethodInfo m = typeof(Program).GetMethod(method, BindingFlags.NonPublic | BindingFlags.Static);
            var a = (AsyncStateMachineAttribute)Attribute.GetCustomAttribute(m, typeof(AsyncStateMachineAttribute));
            return a.StateMachineType.FullName;
        }

        static Json Chain(string name, string a, string b, string c, string awaits, string resultType)
        {
            string p = typeof(Program).FullName + ".";
            return new Json()
                .Add("name", name)
                .Add("methods", new[] { p + c, p + b, p + a })
                .Add("awaits", awaits)
                .Add("result_type", resultType)
                .Add("awaited_type", DacName(awaitedTypes[name]))
                .Add("state_machine_types", new[] { StateMachine(c), StateMachine(b), StateMachine(a) });
        }

        // A type's name as the DAC (GetMethodTableName) spells it: generic arguments as
        // [[FullName, assembly simple name],...], nested types with '+'.
        static string DacName(Type t)
        {
            if (t.IsArray) return DacName(t.GetElementType()) + "[" + new string(',', t.GetArrayRank() - 1) + "]";
            if (!t.IsGenericType) return t.FullName;
            var sb = new StringBuilder(t.GetGenericTypeDefinition().FullName).Append('[');
            Type[] args = t.GetGenericArguments();
            for (int i = 0; i < args.Length; i++)
                sb.Append(i > 0 ? ",[" : "[").Append(DacName(args[i])).Append(", ")
                  .Append(args[i].Assembly.GetName().Name).Append(']');
            return sb.Append(']').ToString();
        }

        // Number of GC heaps: 1 for workstation GC; for server GC the runtime's own setting
        // (GC.GetConfigurationVariables, .NET 7+), else the runtimeconfig value, else null (unknown).
        static object GcHeapCount()
        {
            if (!GCSettings.IsServerGC) return 1;
            MethodInfo m = typeof(GC).GetMethod("GetConfigurationVariables", BindingFlags.Public | BindingFlags.Static);
            if (m != null)
            {
                var d = (IDictionary)m.Invoke(null, null);
                if (d.Contains("HeapCount")) return Convert.ToInt32(d["HeapCount"]);
            }
            object v = AppContext.GetData("System.GC.HeapCount");
            return v == null ? null : (object)Convert.ToInt32(v);
        }

        static void WriteManifest(string path, string scenario)
        {
            var threads = new List<object>();
            var gateWaiters = new List<object>();
            ThreadRecord sync = null;
            records.Sort((x, y) => x.ManagedId.CompareTo(y.ManagedId));
            foreach (var r in records)
            {
                threads.Add(new Json()
                    .Add("role", r.Role)
                    .Add("name", r.Thread.Name)
                    .Add("managed_id", r.ManagedId)
                    .Add("os_id", r.OsId)
                    .Add("blocked_in", r.BlockedIn)
                    .Add("frames", r.Frames));
                if (r.Role == "monitor-wait") gateWaiters.Add(r.ManagedId);
                if (r.Role == "sync-over-async") sync = r;
            }
            gateWaiters.Sort();

            var manifest = new Json()
                .Add("schema", 1)
                .Add("scenario", scenario)
                .Add("runtime", new Json()
                    .Add("version", Environment.Version.ToString())
                    .Add("os", Native.IsWindows ? "windows" : "linux")
                    .Add("gc", GCSettings.IsServerGC ? "server" : "workstation")
                    .Add("gc_heap_count", GcHeapCount())
                    .Add("pointer_size", IntPtr.Size))
                .Add("pid", Process.GetCurrentProcess().Id)
                .Add("threads", threads)
                .Add("types", new object[] {
                    new Json().Add("name", typeof(Gate).FullName).Add("count", 1),
                    new Json().Add("name", typeof(Payload).FullName).Add("count", payloads.Count),
                    new Json().Add("name", typeof(ThreadRecord).FullName).Add("count", records.Count),
                })
                .Add("async_chains", new object[] {
                    Chain("delay", "DelayA", "DelayB", "DelayC", "System.Threading.Tasks.Task.Delay", "System.Threading.Tasks.VoidTaskResult"),
                    Chain("tcs", "TcsA", "TcsB", "TcsC", "System.Threading.Tasks.TaskCompletionSource`1.Task", "System.Int32"),
                    Chain("semaphore", "SemA", "SemB", "SemC", "System.Threading.SemaphoreSlim.WaitAsync", "System.Threading.Tasks.VoidTaskResult"),
                })
                .Add("sync_over_async", new Json()
                    .Add("managed_id", sync.ManagedId)
                    .Add("os_id", sync.OsId)
                    .Add("waits_on_chain", "tcs"))
                .Add("locks", new object[] {
                    new Json().Add("name", "gate").Add("type", typeof(Gate).FullName)
                        .Add("owner_managed_id", null).Add("waiter_managed_ids", gateWaiters)
                        .Add("kind", "monitor-wait"),
                });
            string tmp = path + ".tmp";
            File.WriteAllText(tmp, manifest.ToString() + "\n", new UTF8Encoding(false));
            if (File.Exists(path)) File.Delete(path);
            File.Move(tmp, path);
        }
    }

    // A tiny ordered JSON object writer (no System.Text.Json in Mono's mscorlib).
    sealed class Json
    {
        readonly List<string> keys = new List<string>();
        readonly List<object> values = new List<object>();

        public Json Add(string k, object v) { keys.Add(k); values.Add(v); return this; }
        public object Get(string k) { return values[keys.IndexOf(k)]; }
        public Json Set(string k, object v) { values[keys.IndexOf(k)] = v; return this; }

        public override string ToString()
        {
            var sb = new StringBuilder();
            Write(sb, this, 0);
            return sb.ToString();
        }

        static void Indent(StringBuilder sb, int n) { sb.Append('\n').Append(' ', 2 * n); }

        static void Write(StringBuilder sb, object v, int depth)
        {
            if (v == null) sb.Append("null");
            else if (v is string) Str(sb, (string)v);
            else if (v is bool) sb.Append((bool)v ? "true" : "false");
            else if (v is int || v is long || v is uint || v is ulong || v is short) sb.Append(Convert.ToString(v, System.Globalization.CultureInfo.InvariantCulture));
            else if (v is Json)
            {
                var o = (Json)v;
                sb.Append('{');
                for (int i = 0; i < o.keys.Count; i++)
                {
                    if (i > 0) sb.Append(',');
                    Indent(sb, depth + 1);
                    Str(sb, o.keys[i]);
                    sb.Append(": ");
                    Write(sb, o.values[i], depth + 1);
                }
                if (o.keys.Count > 0) Indent(sb, depth);
                sb.Append('}');
            }
            else if (v is IEnumerable)
            {
                bool simple = true;
                foreach (object e in (IEnumerable)v) if (e is Json || (e is IEnumerable && !(e is string))) simple = false;
                sb.Append('[');
                bool first = true;
                foreach (object e in (IEnumerable)v)
                {
                    if (!first) sb.Append(simple ? ", " : ",");
                    if (!simple) Indent(sb, depth + 1);
                    Write(sb, e, depth + 1);
                    first = false;
                }
                if (!simple && !first) Indent(sb, depth);
                sb.Append(']');
            }
            else throw new ArgumentException("cannot serialise " + v.GetType());
        }

        static void Str(StringBuilder sb, string s)
        {
            sb.Append('"');
            foreach (char c in s)
            {
                if (c == '"') sb.Append("\\\"");
                else if (c == '\\') sb.Append("\\\\");
                else if (c < 0x20) sb.Append("\\u").Append(((int)c).ToString("x4"));
                else sb.Append(c);
            }
            sb.Append('"');
        }
    }
}
