// asyncreal.cs: the "asyncreal" scenario: async as real (Roslyn-compiled) code writes it:
// ValueTask and IValueTaskSource-backed awaits, pooled boxes, an async iterator under
// `await foreach`, System.Threading.Channels readers and writers, Task.WhenAll / WhenAny over
// several tasks, SemaphoreSlim.WaitAsync, TaskCompletionSource (RunContinuationsAsynchronously),
// ConfigureAwait(false), async lambdas, local functions, a generic async method, a cycle of
// tasks awaiting each other, and threads blocked synchronously on chains (sync over async).
// Build: dumps/generate-sdk.sh asyncreal-net10 (Roslyn only: it uses C# 8+ features)
// Run:   dotnet asyncreal.dll <manifest.json> [scenario-name]
//
// Documented state once "ready" is printed (chains innermost first; none ever completes; the
// manifest's async_chains lists each, with `count` when several chains have the same methods,
// `awaited_type` the runtime type of the object the innermost method awaits (a ValueTask's
// source, not the ValueTask), and `box: "pooling"` for a PoolingAsyncValueTaskMethodBuilder box,
// which is no Task and so not in the DAC's list of AsyncStateMachineBoxes):
//   * "valuetask":   VtInner (async ValueTask<int>, AsyncValueTaskMethodBuilder: a Task box)
//                    awaits a TaskCompletionSource<int>'s task; VtOuter awaits VtInner.
//   * "pooled":      PooledInner ([AsyncMethodBuilder(PoolingAsyncValueTaskMethodBuilder<>)]
//                    async ValueTask<int>) awaits a TCS task; PooledOuter awaits the ValueTask
//                    whose source is the pooled box (its _valueTaskSource's continuation state
//                    is PooledOuter's box).
//   * "source":      SourceOuter awaits a ValueTask<int> over RealAsync.ManualSource, our own
//                    IValueTaskSource<int> (a ManualResetValueTaskSourceCore<int>).
//   * "channel-read": ChanReadInner awaits ReadAsync on an empty unbounded Channel<int>;
//                    ChanReadOuter awaits ChanReadInner.
//   * "channel-write": ChanWrite awaits WriteAsync on a full bounded Channel<int> (capacity 2,
//                    holding 2 items).
//   * "iterator":    ConsumeNumbers does `await foreach` over Numbers(), an async iterator that
//                    yielded 1 and now awaits a TCS task: Numbers' box (an AsyncStateMachineBox
//                    whose state machine is the iterator object) links to ConsumeNumbers' box
//                    through the iterator's ManualResetValueTaskSourceCore<bool>.
//   * "whenall":     4 x AllLeg awaiting one TCS task, WhenAllOuter awaits Task.WhenAll of them
//                    (4 chains AllLeg -> WhenAllOuter).
//   * "whenany":     3 x AnyLeg awaiting SemaphoreSlim(0).WaitAsync() (another semaphore),
//                    WhenAnyOuter awaits Task.WhenAny of them (3 chains).
//   * "semaphore":   SemInner awaits SemaphoreSlim(0).WaitAsync().ConfigureAwait(false);
//                    SemOuter awaits SemInner.
//   * "tcs-async":   TcsInner awaits a TaskCompletionSource<int> made with
//                    RunContinuationsAsynchronously, ConfigureAwait(false); TcsOuter awaits it.
//   * "lambda":      an async lambda (Func<Task<int>>) awaits a TCS task; LambdaOuter awaits it.
//   * "local":       a local function of LocalOuter awaits a TCS task; LocalOuter awaits it.
//   * "generic":     GenInner<string> awaits a TaskCompletionSource<string>; GenOuter awaits it.
//   * "cycle":       CycleA awaits CycleB's task; CycleB awaits CycleA's task (handed to it
//                    through a TaskCompletionSource<Task<int>> it awaited first): a cycle with no
//                    innermost box (`cycle: true`; state_machine_types in continuation order
//                    starting at CycleB: B's completion continues A, A's continues B).
//   * "locals":      LocalsOuter(orderId 4201, customer "contoso") holds the locals attempt
//                    (orderId % 7 + 1), key ("contoso/4201") and started (1234567890123 +
//                    orderId) across its await of LocalsInner(key, attempt), which awaits a TCS
//                    task: the manifest's `hoisted` lists each argument and local with its
//                    value, as the state machines hold them (hoisted fields).
//   * "cancellable": CancelInner awaits Task.Delay(Infinite, cts.Token) (a delay that only the
//                    CancellationTokenSource `cts` can end: not cancelled, 3 registrations: the
//                    delay's own and two of ours); CancelOuter awaits CancelInner.
//   * "periodic":    TickOuter awaits PeriodicTimer.WaitForNextTickAsync() of a timer with a
//                    1 h period (a ValueTask<bool> whose source is the timer's State).
//   * threads blocked on chains (sync over async): "result-waiter" in Task<int>.Result on
//     VtOuter's task, "wait-waiter" in Task.Wait() on ChanReadOuter's task, "cycle-waiter" in
//     GetAwaiter().GetResult() on CycleA's task.
//   * the main thread sleeps (Main -> Park -> Thread.Sleep).
// Every method on a documented thread's call path is NoInlining|NoOptimization.

using System;
using System.Collections.Generic;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Threading;
using System.Threading.Channels;
using System.Threading.Tasks;
using System.Threading.Tasks.Sources;
using Scenario;

namespace RealAsync
{
    // Our own IValueTaskSource<int>.
    sealed class ManualSource : IValueTaskSource<int>
    {
        public ManualResetValueTaskSourceCore<int> Core;
        public int GetResult(short token) { return Core.GetResult(token); }
        public ValueTaskSourceStatus GetStatus(short token) { return Core.GetStatus(token); }
        public void OnCompleted(Action<object> continuation, object state, short token, ValueTaskSourceOnCompletedFlags flags)
        {
            Core.OnCompleted(continuation, state, token, flags);
        }
    }

    class Program
    {
        const MethodImplOptions Keep = MethodImplOptions.NoInlining | MethodImplOptions.NoOptimization;

        static readonly TaskCompletionSource<int> vtTcs = new TaskCompletionSource<int>();
        static readonly TaskCompletionSource<int> pooledTcs = new TaskCompletionSource<int>();
        static readonly ManualSource source = new ManualSource();
        static readonly Channel<int> readChannel = Channel.CreateUnbounded<int>();
        static readonly Channel<int> writeChannel = Channel.CreateBounded<int>(
            new BoundedChannelOptions(2) { FullMode = BoundedChannelFullMode.Wait });
        static readonly TaskCompletionSource<bool> iterTcs = new TaskCompletionSource<bool>();
        static readonly TaskCompletionSource<int> allTcs = new TaskCompletionSource<int>();
        static readonly SemaphoreSlim anySem = new SemaphoreSlim(0);
        static readonly SemaphoreSlim sem = new SemaphoreSlim(0);
        static readonly TaskCompletionSource<int> asyncTcs =
            new TaskCompletionSource<int>(TaskCreationOptions.RunContinuationsAsynchronously);
        static readonly TaskCompletionSource<int> lambdaTcs = new TaskCompletionSource<int>();
        static readonly TaskCompletionSource<int> localTcs = new TaskCompletionSource<int>();
        static readonly TaskCompletionSource<string> genTcs = new TaskCompletionSource<string>();
        static readonly TaskCompletionSource<int> localsTcs = new TaskCompletionSource<int>();
        static readonly CancellationTokenSource cts = new CancellationTokenSource();
        static readonly PeriodicTimer periodic = new PeriodicTimer(TimeSpan.FromHours(1));
        static readonly TaskCompletionSource<Task<int>> cycleGate = new TaskCompletionSource<Task<int>>();
        static readonly Dictionary<string, Type> awaitedTypes = new Dictionary<string, Type>();
        static volatile bool cycleArmed;
        static int consumed;

        static Task<int> vtOuter, pooledOuter, sourceOuter, chanReadOuter, semOuter, tcsOuter,
            lambdaOuter, localOuter, cycleA, localsOuter, cancelOuter, tickOuter;
        static Task chanWrite, iterOuter, whenAllOuter, whenAnyOuter;
        static Task<string> genOuter;
        static Func<Task<int>> lambda;
        static Func<Task<int>> localFunction;

        // Records the runtime type of what the innermost method awaits (a ValueTask's source).
        static T Awaited<T>(string chain, T task) where T : Task
        {
            lock (awaitedTypes) awaitedTypes[chain] = task.GetType();
            return task;
        }

        static ValueTask<T> AwaitedVt<T>(string chain, ValueTask<T> vt)
        {
            object o = typeof(ValueTask<T>).GetField("_obj", BindingFlags.NonPublic | BindingFlags.Instance).GetValue(vt);
            lock (awaitedTypes) awaitedTypes[chain] = o == null ? null : o.GetType();
            return vt;
        }

        static ValueTask AwaitedVt(string chain, ValueTask vt)
        {
            object o = typeof(ValueTask).GetField("_obj", BindingFlags.NonPublic | BindingFlags.Instance).GetValue(vt);
            lock (awaitedTypes) awaitedTypes[chain] = o == null ? null : o.GetType();
            return vt;
        }

        // ---------------------------------------------------------------- chains
        static async ValueTask<int> VtInner() { return await Awaited("valuetask", vtTcs.Task) + 1; }
        static async Task<int> VtOuter() { return await VtInner() + 1; }

        [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
        static async ValueTask<int> PooledInner() { return await Awaited("pooled", pooledTcs.Task) + 1; }
        static async Task<int> PooledOuter() { return await PooledInner() + 1; }

        static async Task<int> SourceOuter()
        {
            return await AwaitedVt("source", new ValueTask<int>(source, source.Core.Version)) + 1;
        }

        static async Task<int> ChanReadInner() { return await AwaitedVt("channel-read", readChannel.Reader.ReadAsync()) + 1; }
        static async Task<int> ChanReadOuter() { return await ChanReadInner() + 1; }

        static async Task ChanWrite() { await AwaitedVt("channel-write", writeChannel.Writer.WriteAsync(3)); }

        static async IAsyncEnumerable<int> Numbers()
        {
            yield return 1;
            await Awaited("iterator", iterTcs.Task);
            yield return 2;
        }

        static async Task ConsumeNumbers()
        {
            await foreach (int n in Numbers()) consumed += n;
        }

        static async Task AllLeg(int i) { await Awaited("whenall", allTcs.Task); }
        static async Task WhenAllOuter()
        {
            var legs = new List<Task>();
            for (int i = 0; i < 4; i++) legs.Add(AllLeg(i));
            await Task.WhenAll(legs);
        }

        static async Task AnyLeg(int i) { await Awaited("whenany", anySem.WaitAsync()); }
        static async Task WhenAnyOuter()
        {
            var legs = new List<Task>();
            for (int i = 0; i < 3; i++) legs.Add(AnyLeg(i));
            await Task.WhenAny(legs);
        }

        static async Task<int> SemInner() { await Awaited("semaphore", sem.WaitAsync()).ConfigureAwait(false); return 1; }
        static async Task<int> SemOuter() { return await SemInner() + 1; }

        static async Task<int> TcsInner() { return await Awaited("tcs-async", asyncTcs.Task).ConfigureAwait(false) + 1; }
        static async Task<int> TcsOuter() { return await TcsInner() + 1; }

        static async Task<int> LambdaOuter(Func<Task<int>> f) { return await f() + 1; }

        static async Task<int> LocalOuter()
        {
            localFunction = Fetch;
            return await Fetch() + 1;

            async Task<int> Fetch() { return await Awaited("local", localTcs.Task) + 1; }
        }

        static async Task<T> GenInner<T>() { return await Awaited("generic", genTcs.Task as Task<T>); }
        static async Task<string> GenOuter() { return await GenInner<string>() + "!"; }

        const int OrderId = 4201;
        const string Customer = "contoso";

        static async Task<int> LocalsInner(string key, int attempt)
        {
            int r = await Awaited("locals", localsTcs.Task);
            return r + key.Length + attempt;
        }

        static async Task<int> LocalsOuter(int orderId, string customer)
        {
            int attempt = orderId % 7 + 1;
            string key = customer + "/" + orderId;
            long started = 1234567890123L + orderId;
            int r = await LocalsInner(key, attempt);
            return r + attempt + key.Length + (int)(started % 10) + orderId + customer.Length;
        }

        static async Task<int> CancelInner()
        {
            await Awaited("cancellable", Task.Delay(Timeout.Infinite, cts.Token));
            return 1;
        }
        static async Task<int> CancelOuter() { return await CancelInner() + 1; }

        static async Task<int> TickOuter()
        {
            int ticks = 0;
            while (await AwaitedVt("periodic", periodic.WaitForNextTickAsync())) ticks++;
            return ticks;
        }

        static async Task<int> CycleA() { return await CycleB() + 1; }
        static async Task<int> CycleB()
        {
            Task<int> a = await cycleGate.Task;
            cycleArmed = true;
            return await Awaited("cycle", a) + 1;
        }

        // ---------------------------------------------------------------- blocked threads
        [MethodImpl(Keep)]
        static void ResultOuter() { ResultWait(); }

        [MethodImpl(Keep)]
        static void ResultWait()
        {
            Recorder.Record("result-waiter", "System.Threading.ManualResetEventSlim.Wait");
            Console.WriteLine("unexpected: " + vtOuter.Result);
        }

        [MethodImpl(Keep)]
        static void WaitOuter() { WaitWait(); }

        [MethodImpl(Keep)]
        static void WaitWait()
        {
            Recorder.Record("wait-waiter", "System.Threading.Tasks.Task.Wait");
            chanReadOuter.Wait();
        }

        [MethodImpl(Keep)]
        static void CycleWaitOuter() { CycleWait(); }

        [MethodImpl(Keep)]
        static void CycleWait()
        {
            Recorder.Record("cycle-waiter", "System.Threading.ManualResetEventSlim.Wait");
            cycleA.GetAwaiter().GetResult();
        }

        // ---------------------------------------------------------------- main
        [MethodImpl(Keep)]
        static int Main(string[] args)
        {
            string manifestPath = args.Length > 0 ? args[0] : "asyncreal.manifest.json";
            string scenario = args.Length > 1 ? args[1] : "asyncreal";
            Thread.CurrentThread.Name = "main";

            vtOuter = VtOuter();
            pooledOuter = PooledOuter();
            sourceOuter = SourceOuter();
            chanReadOuter = ChanReadOuter();
            writeChannel.Writer.TryWrite(1);
            writeChannel.Writer.TryWrite(2);
            chanWrite = ChanWrite();
            iterOuter = ConsumeNumbers();
            whenAllOuter = WhenAllOuter();
            whenAnyOuter = WhenAnyOuter();
            semOuter = SemOuter();
            tcsOuter = TcsOuter();
            lambda = async () => await Awaited("lambda", lambdaTcs.Task) + 1;
            lambdaOuter = LambdaOuter(lambda);
            localOuter = LocalOuter();
            genOuter = GenOuter();
            localsOuter = LocalsOuter(OrderId, Customer);
            cts.Token.Register(() => Console.WriteLine("cancelled"));
            cts.Token.Register(() => Console.WriteLine("cancelled too"));
            cancelOuter = CancelOuter();
            tickOuter = TickOuter();
            cycleA = CycleA();
            cycleGate.SetResult(cycleA);
            while (!cycleArmed) Thread.Sleep(10);
            Thread.Sleep(200);

            int threads = 0;
            Recorder.Start(ResultOuter, "result-waiter"); threads++;
            Recorder.Start(WaitOuter, "wait-waiter"); threads++;
            Recorder.Start(CycleWaitOuter, "cycle-waiter"); threads++;
            Recorder.WaitForBlocked(threads);
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

        static Type StateMachineOf(MethodInfo m)
        {
            var a = (AsyncStateMachineAttribute)Attribute.GetCustomAttribute(m, typeof(AsyncStateMachineAttribute));
            if (a != null) return a.StateMachineType;
            var i = (AsyncIteratorStateMachineAttribute)Attribute.GetCustomAttribute(m, typeof(AsyncIteratorStateMachineAttribute));
            return i.StateMachineType;
        }

        static MethodInfo Method(string name)
        {
            return typeof(Program).GetMethod(name, BindingFlags.NonPublic | BindingFlags.Static);
        }

        // (method as the manifest names it, its state machine type in the DAC's spelling)
        static KeyValuePair<string, string> Named(string name)
        {
            return Of(Method(name));
        }

        static KeyValuePair<string, string> Of(MethodInfo m)
        {
            Type sm = StateMachineOf(m);
            if (m.IsGenericMethod) sm = sm.MakeGenericType(m.GetGenericArguments());
            return new KeyValuePair<string, string>(Recorder.Name(m), Recorder.DacName(sm));
        }

        static Json Chain(string name, string awaits, string resultType, int count, params KeyValuePair<string, string>[] methods)
        {
            var full = new List<string>();
            var sms = new List<string>();
            foreach (var m in methods) { full.Add(m.Key); sms.Add(m.Value); }
            Type awaited;
            lock (awaitedTypes) awaited = awaitedTypes[name];
            var j = new Json()
                .Add("name", name)
                .Add("methods", full.ToArray())
                .Add("awaits", awaits)
                .Add("result_type", resultType)
                .Add("awaited_type", Recorder.DacName(awaited))
                .Add("state_machine_types", sms.ToArray());
            if (count != 1) j.Add("count", count);
            return j;
        }

        static Json Waiter(string role, string chain, string via)
        {
            ThreadRecord r = Recorder.ByRole(role);
            return new Json().Add("role", role).Add("managed_id", r.ManagedId).Add("os_id", r.OsId)
                .Add("waits_on_chain", chain).Add("via", via);
        }

        // An argument or local the state machine of `method` holds, with the value it has.
        static Json Hoisted(string method, string kind, string name, object value)
        {
            return new Json().Add("method", M(method)).Add("kind", kind).Add("name", name)
                .Add("type", value.GetType().FullName).Add("value", value);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void WriteManifest(string manifestPath, string scenario)
        {
            const string Int = "System.Int32", Void = "System.Threading.Tasks.VoidTaskResult", Str = "System.String";
            const string Tcs = "System.Threading.Tasks.TaskCompletionSource`1.Task";
            const string Wait = "System.Threading.SemaphoreSlim.WaitAsync";
            // Roslyn's compiler-generated names, found by reflection: the lambda's and the local
            // function's methods are the delegates' targets.
            var lambdaM = lambda.Method;
            var localM = localFunction.Method;
            Json pooled = Chain("pooled", Tcs, Int, 1, Named("PooledInner"), Named("PooledOuter"));
            pooled.Add("box", "pooling");
            Json cycle = Chain("cycle", "System.Threading.Tasks.Task`1 (CycleA's own task)", Int, 1, Named("CycleB"), Named("CycleA"));
            cycle.Add("cycle", true);

            Json m = Recorder.Head(scenario)
                .Add("threads", Recorder.ThreadsJson())
                .Add("types", new object[] {
                    Recorder.TypeCount(typeof(ManualSource), 1),
                    Recorder.TypeCount(typeof(ThreadRecord), Recorder.Count),
                    Recorder.TypeCount(typeof(Json), 0),
                })
                .Add("async_chains", new object[] {
                    Chain("valuetask", Tcs, Int, 1, Named("VtInner"), Named("VtOuter")),
                    pooled,
                    Chain("source", "System.Threading.Tasks.ValueTask`1 (RealAsync.ManualSource)", Int, 1, Named("SourceOuter")),
                    Chain("channel-read", "System.Threading.Channels.ChannelReader`1.ReadAsync", Int, 1, Named("ChanReadInner"), Named("ChanReadOuter")),
                    Chain("channel-write", "System.Threading.Channels.ChannelWriter`1.WriteAsync", Void, 1, Named("ChanWrite")),
                    Chain("iterator", Tcs, Void, 1, Named("Numbers"), Named("ConsumeNumbers")),
                    Chain("whenall", Tcs, Void, 4, Named("AllLeg"), Named("WhenAllOuter")),
                    Chain("whenany", Wait, Void, 3, Named("AnyLeg"), Named("WhenAnyOuter")),
                    Chain("semaphore", Wait, Int, 1, Named("SemInner"), Named("SemOuter")),
                    Chain("tcs-async", Tcs, Int, 1, Named("TcsInner"), Named("TcsOuter")),
                    Chain("lambda", Tcs, Int, 1, Of(lambdaM), Named("LambdaOuter")),
                    Chain("local", Tcs, Int, 1, Of(localM), Named("LocalOuter")),
                    Chain("generic", Tcs, Str, 1, Of(Method("GenInner").MakeGenericMethod(typeof(string))), Named("GenOuter")),
                    Chain("locals", Tcs, Int, 1, Named("LocalsInner"), Named("LocalsOuter")),
                    Chain("cancellable", "System.Threading.Tasks.Task.Delay (CancellationToken)", Int, 1, Named("CancelInner"), Named("CancelOuter")),
                    Chain("periodic", "System.Threading.PeriodicTimer.WaitForNextTickAsync", Int, 1, Named("TickOuter")),
                    cycle,
                })
                .Add("compiler_names", new object[] {
                    new Json().Add("kind", "lambda").Add("method", Recorder.Name(lambdaM)).Add("written_in", M("Main")),
                    new Json().Add("kind", "local-function").Add("method", Recorder.Name(localM)).Add("written_in", M("LocalOuter"))
                        .Add("name", "Fetch"),
                })
                .Add("hoisted", new object[] {
                    Hoisted("LocalsOuter", "argument", "orderId", OrderId),
                    Hoisted("LocalsOuter", "argument", "customer", Customer),
                    Hoisted("LocalsOuter", "local", "attempt", OrderId % 7 + 1),
                    Hoisted("LocalsOuter", "local", "key", Customer + "/" + OrderId),
                    Hoisted("LocalsOuter", "local", "started", 1234567890123L + OrderId),
                    Hoisted("LocalsInner", "argument", "key", Customer + "/" + OrderId),
                    Hoisted("LocalsInner", "argument", "attempt", OrderId % 7 + 1),
                })
                .Add("cancellation_sources", new object[] {
                    new Json().Add("path", "RealAsync.Program.cts").Add("cancelled", cts.IsCancellationRequested)
                        .Add("registrations", 3).Add("chain", "cancellable"),
                })
                .Add("periodic_timers", new object[] {
                    new Json().Add("path", "RealAsync.Program.periodic").Add("period_ms", (long)periodic.Period.TotalMilliseconds)
                        .Add("chain", "periodic"),
                })
                .Add("channels", new object[] {
                    new Json().Add("path", "RealAsync.Program.readChannel").Add("type", Recorder.DacName(readChannel.GetType()))
                        .Add("capacity", null).Add("items", readChannel.Reader.Count).Add("waiting_readers", 1).Add("chain", "channel-read"),
                    new Json().Add("path", "RealAsync.Program.writeChannel").Add("type", Recorder.DacName(writeChannel.GetType()))
                        .Add("capacity", 2).Add("items", writeChannel.Reader.Count).Add("waiting_writers", 1).Add("chain", "channel-write"),
                })
                .Add("semaphores", new object[] {
                    new Json().Add("path", "RealAsync.Program.sem").Add("current_count", sem.CurrentCount).Add("async_waiters", 1),
                    new Json().Add("path", "RealAsync.Program.anySem").Add("current_count", anySem.CurrentCount).Add("async_waiters", 3),
                })
                .Add("sync_over_async", new object[] {
                    Waiter("result-waiter", "valuetask", "Task<int>.Result"),
                    Waiter("wait-waiter", "channel-read", "Task.Wait()"),
                    Waiter("cycle-waiter", "cycle", "GetAwaiter().GetResult()"),
                });
            Recorder.Write(manifestPath, m);
        }
    }
}
