// crashasync.cs: the "crashasync" scenario: an unhandled exception thrown in an async method
// after it resumed, unwinding through suspended async callers, one of them awaiting a Task.Run;
// the runtime writes the dump itself (as crash.cs: DOTNET_DbgEnableMiniDump=1,
// DOTNET_DbgMiniDumpType=2, DOTNET_DbgMiniDumpName=<path>).
// Build (.NET 11, runtime-async on): dumps/generate-sdk.sh crashasync-net11 (compile_net11)
// Run:   dotnet crashasync.dll <manifest.json> [scenario-name]   (never prints "ready": it dies)
//
// Documented state at the time of the dump:
//   * the main thread (Main, sync) calls RunAsync(order).GetAwaiter().GetResult();
//     RunAsync awaits HandleAsync, HandleAsync awaits Task.Run(() => ProcessAsync(order)),
//     ProcessAsync awaits ValidateAsync, ValidateAsync awaits Task.Yield() and, resumed on a
//     pool thread, throws System.InvalidOperationException("Order <id> failed validation:
//     checksum <checksum>") (no inner exception). Nobody catches it:
//       - it leaves ValidateAsync (resumed by the runtime's continuation dispatcher) and unwinds
//         through ProcessAsync's suspended frame (an await outside any try: no handler, so the
//         frame is not resumed), which .NET 11 with runtime-async appends to the exception's
//         trace as an async frame (STEF_CONTINUATION); ProcessAsync's task (Task.Run's inner
//         task) faults;
//       - HandleAsync's await on Task.Run's task is resumed by the runtime's own plumbing
//         (RuntimeAsyncTaskContinuation), which rethrows the fault (TaskAwaiter) before any of
//         HandleAsync's code runs; the exception then unwinds through HandleAsync's and
//         RunAsync's suspended frames (awaits outside any try): both appended as async frames;
//         RunAsync's task faults;
//       - Main's GetResult rethrows it on the main thread: unhandled, the process dies.
//     So every async caller of ValidateAsync is an async frame of the trace, innermost first
//     ("async_continuation_frames": ProcessAsync, HandleAsync, RunAsync); "async_kinds" says
//     each async method's form, read from the program's own metadata (MethodImpl flag 0x2000).
//   * before that, Main runs the same chain once as a rehearsal that throws at once and is
//     caught in Rehearse (called by Main): the program's own methods on that exception's
//     StackTrace, innermost first ("rehearsal_own_frames": ValidateAsync ... RunAsync, then
//     Rehearse, where the real exception has Main), are the order the runtime records them in. The rehearsal's exception (message "rehearsal") stays on the
//     heap, unreferenced.
//   * thread "bystander" sleeps (Bystander -> Thread.Sleep).
//   * own objects: 1 CrashAsync.Order, 2 Scenario.ThreadRecord.
// The manifest is written by ValidateAsync just before it throws, once the main thread waits
// in GetResult and the bystander sleeps.

using System;
using System.Diagnostics;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Threading;
using System.Threading.Tasks;
using Scenario;

namespace CrashAsync
{
    sealed class Order
    {
        public int Id;
        public string Checksum;
        public Order(int id, string checksum) { Id = id; Checksum = checksum; }
    }

    class Program
    {
        const MethodImplOptions Keep = MethodImplOptions.NoInlining | MethodImplOptions.NoOptimization;
        static string manifestPath, scenario;
        static Order order;
        static Thread mainThread, bystander;
        static bool rehearsal;
        static string[] rehearsalFrames;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static async Task RunAsync(Order o)
        {
            await HandleAsync(o);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static async Task HandleAsync(Order o)
        {
            await Task.Run(() => ProcessAsync(o));
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static async Task ProcessAsync(Order o)
        {
            await ValidateAsync(o);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static async Task ValidateAsync(Order o)
        {
            await Task.Yield();
            if (rehearsal) throw new InvalidOperationException("rehearsal");
            // resumed by the dispatcher on a pool thread: wait until the main thread waits in
            // GetResult and the bystander sleeps
            while ((mainThread.ThreadState & System.Threading.ThreadState.WaitSleepJoin) == 0 ||
                   (bystander.ThreadState & System.Threading.ThreadState.WaitSleepJoin) == 0 || Recorder.Count < 2)
                Thread.Sleep(10);
            Thread.Sleep(200);
            var ex = new InvalidOperationException("Order " + o.Id + " failed validation: checksum " + o.Checksum);
            WriteManifest(ex);
            throw ex;
        }

        [MethodImpl(Keep)]
        static void Bystander()
        {
            Recorder.Record("sleep", "System.Threading.Thread.Sleep");
            Thread.Sleep(Timeout.Infinite);
        }

        [MethodImpl(Keep)]
        static int Main(string[] args)
        {
            manifestPath = args.Length > 0 ? args[0] : "crashasync.manifest.json";
            scenario = args.Length > 1 ? args[1] : "crashasync";
            Thread.CurrentThread.Name = "main";
            mainThread = Thread.CurrentThread;
            order = new Order(17, "12x4");
            bystander = Recorder.Start(Bystander, "bystander");
            while (Recorder.Count < 1) Thread.Sleep(10);
            Rehearse();
            // the thread the unhandled exception is finally thrown on (GetResult's rethrow)
            Recorder.Record("crash", null);
            RunAsync(order).GetAwaiter().GetResult();
            return 0;
        }

        [MethodImpl(Keep)]
        static void Rehearse()
        {
            rehearsal = true;
            try
            {
                RunAsync(order).GetAwaiter().GetResult();
            }
            catch (InvalidOperationException e)
            {
                rehearsalFrames = Recorder.OwnFramesOf(new StackTrace(e, false));
            }
            rehearsal = false;
        }

        static MethodBase M(string name)
        {
            return typeof(Program).GetMethod(name, BindingFlags.NonPublic | BindingFlags.Static);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void WriteManifest(Exception ex)
        {
            ThreadRecord crasher = Recorder.ByRole("crash");
            // the async methods, innermost first; the frames the runtime appends as async
            // frames: the callers suspended at an await outside any try, whose frame the
            // exception leaves from a resumed callee (ProcessAsync, from ValidateAsync; RunAsync,
            // from HandleAsync); ValidateAsync and HandleAsync are on the trace as frames of
            // their own (resumed, they throw or rethrow)
            var methods = new[] { M("ValidateAsync"), M("ProcessAsync"), M("HandleAsync"), M("RunAsync") };
            var names = new string[methods.Length];
            for (int i = 0; i < methods.Length; i++) names[i] = Recorder.Name(methods[i]);
            Json m = Recorder.Head(scenario)
                .Add("threads", Recorder.ThreadsJson())
                .Add("types", new object[] {
                    Recorder.TypeCount(typeof(Order), 1),
                    Recorder.TypeCount(typeof(ThreadRecord), Recorder.Count),
                })
                .Add("exceptions", new object[] {
                    new Json().Add("type", ex.GetType().FullName).Add("message", ex.Message)
                        .Add("thrown_in", Recorder.Name(M("ValidateAsync")))
                        .Add("thrown_on_managed_id", crasher.ManagedId)
                        .Add("first_thrown_on_managed_id", Thread.CurrentThread.ManagedThreadId)
                        .Add("unhandled", true)
                        .Add("async_methods", names)
                        .Add("async_kinds", Recorder.AsyncKinds(methods))
                        .Add("async_continuation_frames", new[] { names[1], names[2], names[3] })
                        .Add("rehearsal_own_frames", rehearsalFrames),
                })
                .Add("values", new object[] {
                    new Json().Add("what", "the order's checksum").Add("type", typeof(Order).FullName)
                        .Add("field", "Checksum").Add("value", order.Checksum),
                });
            Recorder.Write(manifestPath, m);
            Console.WriteLine("manifest written, throwing");
            Console.Out.Flush();
        }
    }
}
