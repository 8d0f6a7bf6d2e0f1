// async.cs: the "async" scenario: every way one task's completion reaches the method awaiting
// it, completed and faulted boxes, threads blocked on tasks, and an await on work that a
// starved thread pool never runs.
// Build: mcs -out:async.dll -target:exe -optimize+ async.cs common.cs
// Run:   dotnet async.dll <manifest.json> [scenario-name]
//
// Documented state once "ready" is printed (chains innermost first; none ever completes):
//   * "fanout":   FanInner awaits a TaskCompletionSource<int>; FanOuter1 AND FanOuter2 both
//                 await FanInner's task, so its continuation is a List<object> of two boxes.
//                 Two chains: FanInner -> FanOuter1 and FanInner -> FanOuter2.
//   * "whenall":  LegA awaits a TaskCompletionSource<bool>, LegB awaits SemaphoreSlim(0)
//                 .WaitAsync(); WhenAllOuter awaits Task.WhenAll(LegA(), LegB()): each leg's
//                 continuation is the WhenAll promise (a Task), whose continuation is the
//                 outer box. Two chains: LegA -> WhenAllOuter and LegB -> WhenAllOuter.
//   * "syncctx":  started on thread "ctx-thread" under a SynchronizationContext of ours
//                 (AsyncForms.NeverContext, which drops every Post): CtxInner awaits a
//                 TaskCompletionSource<int>, CtxOuter awaits CtxInner; the continuation is a
//                 SynchronizationContextAwaitTaskContinuation whose m_action is an Action on
//                 the awaiting box. The same thread then blocks in Task.Wait() on CtxOuter.
//   * "continuewith": CwInner awaits a TaskCompletionSource<int>; CwOuter awaits
//                 CwInner().ContinueWith(...): CwInner's continuation is a
//                 ContinueWithTaskContinuation whose task's continuation is CwOuter's box.
//   * "queued":   the worker pool is capped at W workers (2 when the runtime accepts it, the
//                 manifest says), all blocked in Monitor.Wait on AsyncForms.PoolGate
//                 (BlockWorker -> WaitForever); QueuedOuter awaits Task.Run(QueuedWork), a
//                 task that sits in the global queue and never runs.
//   * completed boxes kept alive by statics: DoneAsync (ran to completion, result 42) and
//     FaultAsync (faulted with InvalidOperationException "async fault").
//   * threads blocked on tasks (sync over async): "result-waiter" in Task<int>.Result on
//     FanOuter1's task (ResultOuter -> ResultWait), "getresult-waiter" in
//     GetAwaiter().GetResult() on WhenAllOuter's task (GetResultOuter -> GetResultWait),
//     "ctx-thread" in Task.Wait() on CtxOuter's task (CtxThreadMain -> CtxWait).
//   * thread "thin-lock-holder" holds the lock of an AsyncForms.ThinLocked, taken three times
//     (nested) and never contended, so it stays a thin lock in the object's header
//     (ThinLockHolder -> Thread.Sleep).
//   * a ConcurrentQueue<int> (Program.numbers) holding 10, 20, 30, 40, 50 (value-type items).
//   * the main thread sleeps (Main -> Park -> Thread.Sleep).
// Every method on a documented call path is NoInlining|NoOptimization.

using System;
using System.Collections.Generic;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Threading;
using System.Threading.Tasks;
using Scenario;

namespace AsyncForms
{
    sealed class PoolGate { public int Blocked; }
    sealed class ThinLocked { public int Id = 7; }

    // A context that never runs what is posted to it.
    sealed class NeverContext : SynchronizationContext
    {
        public int Posted;
        public override void Post(SendOrPostCallback d, object state) { Interlocked.Increment(ref Posted); }
        public override SynchronizationContext CreateCopy() { return this; }
    }

    class Program
    {
        const MethodImplOptions Keep = MethodImplOptions.NoInlining | MethodImplOptions.NoOptimization;

        static readonly TaskCompletionSource<int> fanTcs = new TaskCompletionSource<int>();
        static readonly TaskCompletionSource<bool> legTcs = new TaskCompletionSource<bool>();
        static readonly SemaphoreSlim legSem = new SemaphoreSlim(0);
        static readonly TaskCompletionSource<int> ctxTcs = new TaskCompletionSource<int>();
        static readonly TaskCompletionSource<int> cwTcs = new TaskCompletionSource<int>();
        static readonly PoolGate gate = new PoolGate();
        static readonly NeverContext never = new NeverContext();
        static readonly Dictionary<string, Type> awaitedTypes = new Dictionary<string, Type>();
        static readonly ThinLocked thin = new ThinLocked();
        static readonly int[] numberValues = { 10, 20, 30, 40, 50 };
        static System.Collections.Concurrent.ConcurrentQueue<int> numbers;

        static Task<int> fanInner, fanOuter1, fanOuter2, ctxOuter, cwOuter, queuedOuter, done;
        static Task whenAllOuter, fault;
        static int workers;

        static T Awaited<T>(string chain, T task) where T : Task
        {
            lock (awaitedTypes) awaitedTypes[chain] = task.GetType();
            return task;
        }

        // ---------------------------------------------------------------- chains
        static async Task<int> FanInner() { return await Awaited("fanout", fanTcs.Task) + 1; }
        static async Task<int> FanOuter1(Task<int> inner) { return await inner + 1; }
        static async Task<int> FanOuter2(Task<int> inner) { return await inner + 2; }

        static async Task LegA() { await Awaited("whenall-a", legTcs.Task); }
        static async Task LegB() { await Awaited("whenall-b", legSem.WaitAsync()); }
        static async Task WhenAllOuter() { await Task.WhenAll(LegA(), LegB()); }

        static async Task<int> CtxInner() { return await Awaited("syncctx", ctxTcs.Task) + 1; }
        static async Task<int> CtxOuter() { return await CtxInner() + 1; }

        static async Task<int> CwInner() { return await Awaited("continuewith", cwTcs.Task) + 1; }
        static async Task<int> CwOuter() { return await CwInner().ContinueWith(t => t.Result * 2); }

        static async Task<int> QueuedOuter() { return await Awaited("queued", Task.Run(new Func<int>(QueuedWork))); }
        static int QueuedWork() { Console.WriteLine("unexpected: queued work ran"); return 7; }

        static async Task<int> DoneAsync() { await Task.Yield(); return 42; }
        static async Task FaultAsync() { await Task.Yield(); throw new InvalidOperationException("async fault"); }

        // ---------------------------------------------------------------- blocked threads
        [MethodImpl(Keep)]
        static void ResultOuter() { ResultWait(); }

        [MethodImpl(Keep)]
        static void ResultWait()
        {
            Recorder.Record("result-waiter", "System.Threading.ManualResetEventSlim.Wait");
            Console.WriteLine("unexpected: " + fanOuter1.Result);
        }

        [MethodImpl(Keep)]
        static void GetResultOuter() { GetResultWait(); }

        [MethodImpl(Keep)]
        static void GetResultWait()
        {
            Recorder.Record("getresult-waiter", "System.Threading.ManualResetEventSlim.Wait");
            whenAllOuter.GetAwaiter().GetResult();
        }

        [MethodImpl(Keep)]
        static void CtxThreadMain()
        {
            SynchronizationContext.SetSynchronizationContext(never);
            ctxOuter = CtxOuter();
            CtxWait();
        }

        [MethodImpl(Keep)]
        static void CtxWait()
        {
            Recorder.Record("ctx-thread", "System.Threading.Tasks.Task.Wait");
            ctxOuter.Wait();
        }

        [MethodImpl(Keep)]
        static void ThinLockHolder()
        {
            lock (thin)
            {
                lock (thin)
                {
                    lock (thin)
                    {
                        Recorder.Record("thin-lock-holder", "System.Threading.Thread.Sleep");
                        Thread.Sleep(Timeout.Infinite);
                    }
                }
            }
        }

        [MethodImpl(Keep)]
        static void BlockWorker(object state) { WaitForever(); }

        [MethodImpl(Keep)]
        static void WaitForever()
        {
            lock (gate)
            {
                Recorder.Record("pool-worker-blocked", "System.Threading.Monitor.Wait");
                gate.Blocked++;
                Monitor.Wait(gate);
            }
        }

        // ---------------------------------------------------------------- main
        [MethodImpl(Keep)]
        static int Main(string[] args)
        {
            string manifestPath = args.Length > 0 ? args[0] : "async.manifest.json";
            string scenario = args.Length > 1 ? args[1] : "async";
            Thread.CurrentThread.Name = "main";

            // Completed and faulted boxes first, while the pool still runs their continuations.
            done = DoneAsync();
            fault = FaultAsync();
            while (!done.IsCompleted || !fault.IsCompleted) Thread.Sleep(10);

            fanInner = FanInner();
            fanOuter1 = FanOuter1(fanInner);
            fanOuter2 = FanOuter2(fanInner);
            whenAllOuter = WhenAllOuter();
            cwOuter = CwOuter();

            int threads = 0;
            Recorder.Start(ResultOuter, "result-waiter"); threads++;
            Recorder.Start(GetResultOuter, "getresult-waiter"); threads++;
            Recorder.Start(CtxThreadMain, "ctx-thread"); threads++;
            Recorder.Start(ThinLockHolder, "thin-lock-holder"); threads++;
            numbers = new System.Collections.Concurrent.ConcurrentQueue<int>(numberValues);
            Recorder.WaitForBlocked(threads);

            // Starve the pool, then await work queued behind the blocked workers.
            int minW, minIo;
            ThreadPool.GetMinThreads(out minW, out minIo);
            workers = 2;
            if (!(ThreadPool.SetMinThreads(workers, minIo) && ThreadPool.SetMaxThreads(workers, Math.Max(minIo, workers))))
            {
                workers = Environment.ProcessorCount;
                if (!(ThreadPool.SetMinThreads(workers, minIo) && ThreadPool.SetMaxThreads(workers, Math.Max(minIo, workers))))
                    throw new Exception("cannot cap the thread pool");
            }
            for (int i = 0; i < workers; i++) ThreadPool.QueueUserWorkItem(BlockWorker, null);
            while (true)
            {
                lock (gate) { if (gate.Blocked == workers) break; }
                Thread.Sleep(10);
            }
            queuedOuter = QueuedOuter();

            Recorder.WaitForBlocked(threads + workers);
            Park(manifestPath, scenario);
            return 0;
        }

        [MethodImpl(Keep)]
        static void Park(string manifestPath, string scenario)
        {
            Recorder.Record("main", "System.Threading.Thread.Sleep");
            WriteManifest(manifestPath, scenario);
            Recorder.Ready();
            Thread.Sleep(Timeout.Infinite);
        }

        // ---------------------------------------------------------------- manifest
        static string M(string name) { return typeof(Program).FullName + "." + name; }

        static string StateMachine(string method)
        {
            MethodInfo m = typeof(Program).GetMethod(method, BindingFlags.NonPublic | BindingFlags.Static);
            var a = (AsyncStateMachineAttribute)Attribute.GetCustomAttribute(m, typeof(AsyncStateMachineAttribute));
            return a.StateMachineType.FullName;
        }

        // A chain, innermost method first; `form` is how each inner task reaches the outer box.
        static Json Chain(string name, string awaitedKey, string awaits, string form, string resultType, params string[] methods)
        {
            var full = new List<string>();
            var sms = new List<string>();
            foreach (string m in methods) { full.Add(M(m)); sms.Add(StateMachine(m)); }
            Type awaited;
            lock (awaitedTypes) awaited = awaitedTypes[awaitedKey];
            return new Json()
                .Add("name", name)
                .Add("methods", full.ToArray())
                .Add("awaits", awaits)
                .Add("continuation_form", form)
                .Add("result_type", resultType)
                .Add("awaited_type", Recorder.DacName(awaited))
                .Add("state_machine_types", sms.ToArray());
        }

        static Json Waiter(string role, string chain, string via)
        {
            ThreadRecord r = Recorder.ByRole(role);
            return new Json().Add("role", role).Add("managed_id", r.ManagedId).Add("os_id", r.OsId)
                .Add("waits_on_chain", chain).Add("via", via);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void WriteManifest(string manifestPath, string scenario)
        {
            const string Int = "System.Int32", Void = "System.Threading.Tasks.VoidTaskResult";
            const string Tcs = "System.Threading.Tasks.TaskCompletionSource`1.Task";
            var poolWaiters = new List<int>();
            lock (Recorder.Records)
                foreach (var r in Recorder.Records) if (r.Role == "pool-worker-blocked") poolWaiters.Add(r.ManagedId);
            poolWaiters.Sort();

            Json m = Recorder.Head(scenario)
                .Add("threads", Recorder.ThreadsJson())
                .Add("types", new object[] {
                    Recorder.TypeCount(typeof(PoolGate), 1),
                    Recorder.TypeCount(typeof(NeverContext), 1),
                    Recorder.TypeCount(typeof(ThinLocked), 1),
                    Recorder.TypeCount(typeof(ThreadRecord), Recorder.Count),
                    Recorder.TypeCount(typeof(Json), 0),
                })
                .Add("async_chains", new object[] {
                    Chain("fanout-1", "fanout", Tcs, "list", Int, "FanInner", "FanOuter1"),
                    Chain("fanout-2", "fanout", Tcs, "list", Int, "FanInner", "FanOuter2"),
                    Chain("whenall-a", "whenall-a", Tcs, "when-all-promise", Void, "LegA", "WhenAllOuter"),
                    Chain("whenall-b", "whenall-b", "System.Threading.SemaphoreSlim.WaitAsync", "when-all-promise", Void, "LegB", "WhenAllOuter"),
                    Chain("syncctx", "syncctx", Tcs, "sync-context-action", Int, "CtxInner", "CtxOuter"),
                    Chain("continuewith", "continuewith", Tcs, "continue-with-task", Int, "CwInner", "CwOuter"),
                    Chain("queued", "queued", "System.Threading.Tasks.Task.Run", "none", Int, "QueuedOuter"),
                })
                .Add("completed_boxes", new object[] {
                    new Json().Add("method", M("DoneAsync")).Add("state_machine_type", StateMachine("DoneAsync"))
                        .Add("status", done.Status.ToString()).Add("result", done.Result),
                    new Json().Add("method", M("FaultAsync")).Add("state_machine_type", StateMachine("FaultAsync"))
                        .Add("status", fault.Status.ToString())
                        .Add("exception_type", fault.Exception.InnerException.GetType().FullName)
                        .Add("exception_message", fault.Exception.InnerException.Message),
                })
                .Add("sync_over_async", new object[] {
                    Waiter("result-waiter", "fanout-1", "Task<int>.Result"),
                    Waiter("getresult-waiter", "whenall-a", "GetAwaiter().GetResult()"),
                    Waiter("ctx-thread", "syncctx", "Task.Wait()"),
                })
                .Add("synchronization_context", new Json().Add("type", typeof(NeverContext).FullName)
                    .Add("thread_role", "ctx-thread").Add("posted", never.Posted))
                .Add("thread_pool", new Json().Add("workers", workers).Add("blocked_workers", poolWaiters.Count)
                    .Add("queued_chain", "queued").Add("queued_callback", M("QueuedWork")))
                .Add("locks", new object[] {
                    new Json().Add("name", "gate").Add("type", typeof(PoolGate).FullName)
                        .Add("owner_managed_id", null).Add("waiter_managed_ids", poolWaiters.ToArray()).Add("kind", "monitor-wait"),
                    new Json().Add("name", "thin").Add("type", typeof(ThinLocked).FullName)
                        .Add("owner_managed_id", Recorder.ByRole("thin-lock-holder").ManagedId)
                        .Add("waiter_managed_ids", new int[0]).Add("kind", "thin-lock").Add("acquisitions", 3),
                })
                .Add("collections", new object[] {
                    new Json().Add("path", "AsyncForms.Program.numbers")
                        .Add("type", Recorder.DacName(typeof(System.Collections.Concurrent.ConcurrentQueue<int>)))
                        .Add("count", numbers.Count).Add("element_type", "System.Int32").Add("values", numberValues),
                });
            Recorder.Write(manifestPath, m);
        }
    }
}
