// common.cs: helpers shared by the deadlock, heap, crash and threadpool scenario programs
// (hang.cs carries its own copy so that it builds alone).  Compile with the scenario:
//
//     mcs -out:heap.dll -target:exe -unsafe -optimize+ heap.cs common.cs
//
// Nothing here is part of any documented heap state: the only instances that stay alive are
// the ThreadRecord objects (one per manifest thread, kept in Recorder.Records) and the
// Recorder's List<ThreadRecord>.

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

namespace Scenario
{
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

    static class Recorder
    {
        public static readonly List<ThreadRecord> Records = new List<ThreadRecord>();

        public static string Name(MethodBase m)
        {
            return m.DeclaringType.FullName + "." + m.Name;
        }

        // The method that threw `ex`: Exception.TargetSite, which NativeAOT does not give (null),
        // else the innermost frame of the exception's own stack trace.
        public static string ThrownIn(Exception ex)
        {
            MethodBase m = ex.TargetSite;
            if (m == null)
            {
                var st = new StackTrace(ex, false);
                if (st.FrameCount > 0) m = st.GetFrame(0).GetMethod();
            }
            return m == null ? null : Name(m);
        }

        // Our own methods on the calling thread's stack, innermost first, skipping `skip`
        // frames above the caller.
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static string[] OwnFrames(int skip)
        {
            return OwnFramesOf(new StackTrace(skip + 1, false));
        }

        // Our own methods among the frames of a stack trace (a thread's, or an exception's).
        public static string[] OwnFramesOf(StackTrace st)
        {
            var frames = new List<string>();
            for (int i = 0; i < st.FrameCount; i++)
            {
                MethodBase m = st.GetFrame(i).GetMethod();
                if (m == null || m.DeclaringType == null) continue;
                if (m.DeclaringType.Assembly != typeof(Recorder).Assembly) continue;
                frames.Add(Name(m));
            }
            return frames.ToArray();
        }

        // ---- generic methods on a stack, spelled as the DAC spells a frame's method (its
        // parameter list left out): "Namespace.Type`1[[args]].Method[[args]]", where the JIT
        // shares the code between instantiations (an argument is a reference type, or a generic
        // struct with one) every such argument as in the shared code's MethodDesc:
        // "System.__Canon, System.Private.CoreLib" (Pair`2[[System.__Canon, ...],[Names.Slot, names]]).
        // A thread registers each instantiation it calls (Called) before it records its frames
        // (FramesOf), which then spells those frames so.
        [ThreadStatic] static Dictionary<string, string> spelled;

        public static Json Called(Type type, string method, Type[] methodArgs)
        {
            if (spelled == null) spelled = new Dictionary<string, string>();
            Type def = type.IsGenericType ? type.GetGenericTypeDefinition() : type;
            Type[] typeArgs = type.IsGenericType ? type.GetGenericArguments() : new Type[0];
            bool shared = false;
            foreach (Type a in typeArgs) shared |= SharesCode(a);
            foreach (Type a in methodArgs) shared |= SharesCode(a);
            string dac = def.FullName + SpellArgs(typeArgs, true) + "." + method + SpellArgs(methodArgs, true);
            spelled[def.FullName + "." + method] = dac;
            return new Json()
                .Add("method", def.FullName + "." + method)
                .Add("type_args", Array.ConvertAll(typeArgs, DacName))
                .Add("method_args", Array.ConvertAll(methodArgs, DacName))
                .Add("shared_code", shared)
                .Add("exact", def.FullName + SpellArgs(typeArgs, false) + "." + method + SpellArgs(methodArgs, false))
                .Add("dac_name", dac);
        }

        public static bool SharesCode(Type a)
        {
            if (!a.IsValueType) return true;
            if (!a.IsGenericType) return false;
            foreach (Type x in a.GetGenericArguments()) if (SharesCode(x)) return true;
            return false;
        }

        static string SpellArgs(Type[] args, bool canonical)
        {
            if (args.Length == 0) return "";
            var parts = new List<string>();
            foreach (Type a in args) parts.Add("[" + SpellArg(a, canonical) + "]");
            return "[" + string.Join(",", parts) + "]";
        }

        static string SpellArg(Type a, bool canonical)
        {
            if (canonical && !a.IsValueType) return "System.__Canon, System.Private.CoreLib";
            if (canonical && a.IsGenericType)
                return a.GetGenericTypeDefinition().FullName + SpellArgs(a.GetGenericArguments(), true) + ", " + a.Assembly.GetName().Name;
            return DacName(a) + ", " + AssemblyName(a);
        }

        // Every frame of a method of a type whose name starts with `prefix` (in any assembly:
        // libraries and Reflection.Emit types too), innermost first, as "Namespace.Type.Method"
        // (a generic type by its definition's name), or as the DAC spells it when this thread
        // registered the instantiation (Called).
        public static string[] FramesOf(StackTrace st, string prefix)
        {
            var frames = new List<string>();
            for (int i = 0; i < st.FrameCount; i++)
            {
                MethodBase m = st.GetFrame(i).GetMethod();
                if (m == null || m.DeclaringType == null) continue;
                Type t = m.DeclaringType.IsGenericType ? m.DeclaringType.GetGenericTypeDefinition() : m.DeclaringType;
                if (t.FullName == null || !t.FullName.StartsWith(prefix)) continue;
                string key = t.FullName + "." + m.Name, dac;
                frames.Add(spelled != null && spelled.TryGetValue(key, out dac) ? dac : key);
            }
            return frames.ToArray();
        }

        // Called by a thread right before it blocks.
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static ThreadRecord Record(string role, string blockedIn)
        {
            var r = new ThreadRecord
            {
                Role = role,
                ManagedId = Thread.CurrentThread.ManagedThreadId,
                OsId = Native.OsThreadId(),
                BlockedIn = blockedIn,
                Frames = OwnFrames(1),
                Thread = Thread.CurrentThread,
            };
            lock (Records) Records.Add(r);
            return r;
        }

        public static int Count { get { lock (Records) return Records.Count; } }

        // Wait until `n` threads have recorded themselves and every one of them is in a
        // WaitSleepJoin state, then give spinning waits time to reach their kernel wait.
        public static void WaitForBlocked(int n)
        {
            while (true)
            {
                bool all = false;
                lock (Records)
                {
                    if (Records.Count >= n)
                    {
                        all = true;
                        foreach (var r in Records)
                            if (r.Thread != Thread.CurrentThread &&
                                (r.Thread.ThreadState & System.Threading.ThreadState.WaitSleepJoin) == 0) all = false;
                    }
                }
                if (all) break;
                Thread.Sleep(10);
            }
            Thread.Sleep(500);
        }

        public static Thread Start(ThreadStart entry, string name)
        {
            var t = new Thread(entry);
            t.Name = name;
            t.IsBackground = true;
            t.Start();
            return t;
        }

        public static object GcHeapCount()
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

        // The manifest's common head: schema, scenario, runtime, pid.
        public static Json Head(string scenario)
        {
            return new Json()
                .Add("schema", 1)
                .Add("scenario", scenario)
                .Add("runtime", new Json()
                    .Add("version", Environment.Version.ToString())
                    .Add("os", Native.IsWindows ? "windows" : "linux")
                    .Add("gc", GCSettings.IsServerGC ? "server" : "workstation")
                    .Add("gc_heap_count", GcHeapCount())
                    .Add("pointer_size", IntPtr.Size))
                .Add("pid", Process.GetCurrentProcess().Id);
        }

        public static List<object> ThreadsJson()
        {
            var list = new List<object>();
            lock (Records)
            {
                Records.Sort((x, y) => x.ManagedId.CompareTo(y.ManagedId));
                foreach (var r in Records)
                    list.Add(new Json()
                        .Add("role", r.Role)
                        .Add("name", r.Thread.Name)
                        .Add("managed_id", r.ManagedId)
                        .Add("os_id", r.OsId)
                        .Add("blocked_in", r.BlockedIn)
                        .Add("frames", r.Frames));
            }
            return list;
        }

        public static ThreadRecord ByRole(string role)
        {
            lock (Records) foreach (var r in Records) if (r.Role == role) return r;
            return null;
        }

        // The frame a thread blocked in Monitor.Wait shows as the documented API: up to .NET 10
        // Monitor.Wait itself (over the runtime's native wait, Monitor.ObjWait); from .NET 11 the
        // wait is managed (System.Threading.Condition over the managed wait subsystem) and
        // Monitor.Wait fast-tail-calls Condition.Wait(Int32, Object), so only the latter is on
        // the stack.
        public static readonly string MonitorWait =
            typeof(Monitor).GetMethod("ObjWait", BindingFlags.NonPublic | BindingFlags.Static) == null
            && typeof(object).Assembly.GetType("System.Threading.Condition") != null
                ? "System.Threading.Condition.Wait" : "System.Threading.Monitor.Wait";

        // .NET 11 runtime-async: a method Roslyn compiled with -features:runtime-async=on carries
        // MethodImplAttributes.Async (0x2000) in its metadata and has no state machine type (no
        // AsyncStateMachineAttribute); the JIT suspends it into a Continuation object instead.
        public const int MethodImplAsync = 0x2000;

        public static bool IsRuntimeAsync(MethodBase m)
        {
            return ((int)m.MethodImplementationFlags & MethodImplAsync) != 0;
        }

        // The async form of each method, innermost first: "runtime-async" or "state-machine".
        public static string[] AsyncKinds(MethodBase[] methods)
        {
            var kinds = new string[methods.Length];
            for (int i = 0; i < methods.Length; i++) kinds[i] = IsRuntimeAsync(methods[i]) ? "runtime-async" : "state-machine";
            return kinds;
        }

        // The fields a chain gets for its methods' async form (every build): `runtime_async` is
        // true when every method of the chain is runtime-async, `async_kinds` says it per method
        // (innermost first); with runtime-async methods also `hoisted`, what each of them holds
        // across its await ({method, kind: "argument"|"local", name, type, value}; empty when
        // they hold nothing), as the program wrote them.
        public static Json AsyncForm(Json chain, MethodBase[] methods, params Json[] hoisted)
        {
            string[] kinds = AsyncKinds(methods);
            bool all = true, any = false;
            foreach (string k in kinds) { if (k == "runtime-async") any = true; else all = false; }
            chain.Add("runtime_async", all).Add("async_kinds", kinds);
            if (any) chain.Add("hoisted", hoisted);
            return chain;
        }

        // An argument or local a method holds across its await, with the value it has.
        public static Json Held(MethodBase m, string kind, string name, object value)
        {
            return new Json().Add("method", Name(m)).Add("kind", kind).Add("name", name)
                .Add("type", value.GetType().FullName).Add("value", value);
        }

        public static Json TypeCount(Type t, int count)
        {
            return new Json().Add("name", t.FullName).Add("dac_name", DacName(t)).Add("count", count);
        }

        // A type's name as the DAC (GetMethodTableName) spells it: generic arguments as
        // [[FullName, assembly simple name],...], nested types with '+', arrays as T[] / T[,].
        public static string DacName(Type t)
        {
            if (t.IsArray)
            {
                int rank = t.GetArrayRank();
                string suffix = rank == 1 && t == t.GetElementType().MakeArrayType() ? "[]" : "[" + new string(',', rank - 1) + "]";
                return DacName(t.GetElementType()) + suffix;
            }
            if (!t.IsGenericType) return t.FullName;
            Type def = t.GetGenericTypeDefinition();
            var sb = new StringBuilder(def.FullName);
            sb.Append('[');
            Type[] args = t.GetGenericArguments();
            for (int i = 0; i < args.Length; i++)
            {
                if (i > 0) sb.Append(',');
                sb.Append('[').Append(DacName(args[i])).Append(", ").Append(AssemblyName(args[i])).Append(']');
            }
            sb.Append(']');
            return sb.ToString();
        }

        static string AssemblyName(Type t)
        {
            while (t.IsArray) t = t.GetElementType();
            return t.Assembly.GetName().Name;
        }

        public static void Write(string path, Json manifest)
        {
            string tmp = path + ".tmp";
            File.WriteAllText(tmp, manifest.ToString() + "\n", new UTF8Encoding(false));
            if (File.Exists(path)) File.Delete(path);
            File.Move(tmp, path);
        }

        // Collect what the manifest-writing left behind, then announce readiness.
        public static void Ready()
        {
            GC.Collect();
            GC.WaitForPendingFinalizers();
            GC.Collect();
            Console.WriteLine("ready " + Process.GetCurrentProcess().Id);
            Console.Out.Flush();
        }
    }

    // A tiny ordered JSON object writer (no System.Text.Json in Mono's mscorlib).
    sealed class Json
    {
        readonly List<string> keys = new List<string>();
        readonly List<object> values = new List<object>();

        public Json Add(string k, object v) { keys.Add(k); values.Add(v); return this; }

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
            else if (v is int || v is long || v is uint || v is ulong || v is short || v is byte)
                sb.Append(Convert.ToString(v, System.Globalization.CultureInfo.InvariantCulture));
            else if (v is double) sb.Append(((double)v).ToString("R", System.Globalization.CultureInfo.InvariantCulture));
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
                sb.Append('[');
                bool first = true;
                foreach (object e in (IEnumerable)v)
                {
                    if (!first) sb.Append(',');
                    Indent(sb, depth + 1);
                    Write(sb, e, depth + 1);
                    first = false;
                }
                if (!first) Indent(sb, depth);
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
