// threadpool.cs: the "threadpool" scenario.
// Build: mcs -out:threadpool.dll -target:exe -optimize+ threadpool.cs common.cs
// Run:   dotnet threadpool.dll <manifest.json> [scenario-name]
//
// Documented state once "ready" is printed:
//   * the worker pool is capped (SetMinThreads/SetMaxThreads to W workers, W = 2 if the
//     runtime accepts it, else the processor count; the manifest records W) and all W workers
//     are blocked in Monitor.Wait on the one Threadpool.BlockGate
//     (ThreadPool dispatch -> BlockWorker -> WaitForever -> Monitor.Wait);
//   * queued behind them, in the global queue, never run:
//       10 ThreadPool.QueueUserWorkItem(ProcessOrder, Threadpool.Order #1..#10)
//        5 Task.Factory.StartNew(BuildReport, Threadpool.ReportRequest #1..#5)
//   * timers (never fired yet): periodic "heartbeat" (due 1 h, period 5 min, callback
//     OnHeartbeat) and one-shot "deadline" (due 2 h, no period, callback OnDeadline), each
//     with a Threadpool.TimerState;
//   * a ConcurrentQueue<Threadpool.Message> with 7 messages (Sequence 1..7);
//   * the main thread sleeps (Main -> Park -> Thread.Sleep).

using System;
using System.Collections.Concurrent;
using System.Runtime.CompilerServices;
using System.Threading;
using System.Threading.Tasks;
using Scenario;

namespace Threadpool
{
    sealed class BlockGate { public int Blocked; }
    sealed class Order { public int Id; public Order(int id) { Id = id; } }
    sealed class ReportRequest { public int Id; public ReportRequest(int id) { Id = id; } }
    sealed class TimerState { public string Name; public TimerState(string n) { Name = n; } }
    sealed class Message
    {
        public int Sequence; public string Text;
        public Message(int s, string t) { Sequence = s; Text = t; }
    }

    class Program
    {
        const MethodImplOptions Keep = MethodImplOptions.NoInlining | MethodImplOptions.NoOptimization;
        const int Orders = 10, Reports = 5, Messages = 7;

        static readonly BlockGate gate = new BlockGate();
        static Task[] reportTasks;
        static Timer heartbeat, deadline;
        static ConcurrentQueue<Message> inbox;
        static int workers;
        static readonly TimeSpan HeartbeatDue = TimeSpan.FromHours(1), HeartbeatPeriod = TimeSpan.FromMinutes(5);
        static readonly TimeSpan DeadlineDue = TimeSpan.FromHours(2);

        // ---------------------------------------------------------------- blocked workers
        [MethodImpl(Keep)]
        static void BlockWorker(object state)
        {
            WaitForever();
        }

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

        // ---------------------------------------------------------------- queued, never run
        [MethodImpl(Keep)]
        static void ProcessOrder(object state) { Console.WriteLine("unexpected: order ran"); }

        [MethodImpl(Keep)]
        static void BuildReport(object state) { Console.WriteLine("unexpected: report ran"); }

        [MethodImpl(Keep)]
        static void OnHeartbeat(object state) { Console.WriteLine("unexpected: heartbeat"); }

        [MethodImpl(Keep)]
        static void OnDeadline(object state) { Console.WriteLine("unexpected: deadline"); }

        [MethodImpl(Keep)]
        static int Main(string[] args)
        {
            string manifestPath = args.Length > 0 ? args[0] : "threadpool.manifest.json";
            string scenario = args.Length > 1 ? args[1] : "threadpool";
            Thread.CurrentThread.Name = "main";

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

            for (int i = 1; i <= Orders; i++) ThreadPool.QueueUserWorkItem(ProcessOrder, new Order(i));
            reportTasks = new Task[Reports];
            for (int i = 1; i <= Reports; i++)
                reportTasks[i - 1] = Task.Factory.StartNew(BuildReport, new ReportRequest(i));

            heartbeat = new Timer(OnHeartbeat, new TimerState("heartbeat"), HeartbeatDue, HeartbeatPeriod);
            deadline = new Timer(OnDeadline, new TimerState("deadline"), DeadlineDue, Timeout.InfiniteTimeSpan);

            inbox = new ConcurrentQueue<Message>();
            for (int i = 1; i <= Messages; i++) inbox.Enqueue(new Message(i, "message " + i));

            Recorder.WaitForBlocked(workers);
            Park(manifestPath, scenario);
            return 0;
        }

        [MethodImpl(Keep)]
        static void Park(string manifestPath, string scenario)
        {
            Recorder.Record("main", "System.Threading.Thread.Sleep");
            WriteManifest(manifestPath, scenario);   // its garbage dies with its frame
            Recorder.Ready();
            Thread.Sleep(Timeout.Infinite);
        }

        static string M(string name) { return typeof(Program).FullName + "." + name; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void WriteManifest(string manifestPath, string scenario)
        {
            int maxW, maxIo, minW, minIo;
            ThreadPool.GetMaxThreads(out maxW, out maxIo);
            ThreadPool.GetMinThreads(out minW, out minIo);
            Json m = Recorder.Head(scenario)
                .Add("threads", Recorder.ThreadsJson())
                .Add("types", new object[] {
                    Recorder.TypeCount(typeof(BlockGate), 1),
                    Recorder.TypeCount(typeof(Order), Orders),
                    Recorder.TypeCount(typeof(ReportRequest), Reports),
                    Recorder.TypeCount(typeof(TimerState), 2),
                    Recorder.TypeCount(typeof(Message), Messages),
                    Recorder.TypeCount(typeof(ConcurrentQueue<Message>), 1),
                    Recorder.TypeCount(typeof(ThreadRecord), Recorder.Count),
                    Recorder.TypeCount(typeof(Json), 0),
                })
                .Add("thread_pool", new Json()
                    .Add("min_worker_threads", minW).Add("max_worker_threads", maxW)
                    .Add("blocked_workers", workers))
                .Add("work_items", new object[] {
                    new Json().Add("kind", "QueueUserWorkItem").Add("callback", M("ProcessOrder"))
                        .Add("state_type", typeof(Order).FullName).Add("count", Orders).Add("queue", "global"),
                    new Json().Add("kind", "Task").Add("callback", M("BuildReport"))
                        .Add("state_type", typeof(ReportRequest).FullName).Add("count", Reports).Add("queue", "global")
                        .Add("task_status", reportTasks[0].Status.ToString()),
                })
                .Add("timers", new object[] {
                    new Json().Add("name", "heartbeat").Add("callback", M("OnHeartbeat"))
                        .Add("state_type", typeof(TimerState).FullName)
                        .Add("due_ms", (long)HeartbeatDue.TotalMilliseconds).Add("period_ms", (long)HeartbeatPeriod.TotalMilliseconds),
                    new Json().Add("name", "deadline").Add("callback", M("OnDeadline"))
                        .Add("state_type", typeof(TimerState).FullName)
                        .Add("due_ms", (long)DeadlineDue.TotalMilliseconds).Add("period_ms", null),
                })
                .Add("collections", new object[] {
                    new Json().Add("path", "Threadpool.Program.inbox").Add("type", Recorder.DacName(typeof(ConcurrentQueue<Message>)))
                        .Add("count", inbox.Count).Add("element_type", typeof(Message).FullName)
                        .Add("first_sequence", 1).Add("last_sequence", Messages),
                })
                .Add("locks", new object[] {
                    new Json().Add("name", "gate").Add("type", typeof(BlockGate).FullName)
                        .Add("owner_managed_id", null).Add("waiter_managed_ids", WaiterIds()).Add("kind", "monitor-wait"),
                });
            Recorder.Write(manifestPath, m);
        }

        static int[] WaiterIds()
        {
            var ids = new System.Collections.Generic.List<int>();
            lock (Recorder.Records)
                foreach (var r in Recorder.Records) if (r.Role == "pool-worker-blocked") ids.Add(r.ManagedId);
            ids.Sort();
            return ids.ToArray();
        }
    }
}
