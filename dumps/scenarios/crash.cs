// crash.cs: the "crash" scenario: an unhandled exception on a worker thread; the runtime writes
// the dump itself (DOTNET_DbgEnableMiniDump=1, DOTNET_DbgMiniDumpType=2 = with heap,
// DOTNET_DbgMiniDumpName=<path>).
// Build: mcs -out:crash.dll -target:exe -optimize+ crash.cs common.cs
// Run:   dotnet crash.dll <manifest.json> [scenario-name] [order-id checksum]   (never prints
//        "ready": it dies; the order's id and checksum default to 17 and "12x4")
//
// Documented state at the time of the dump:
//   * thread "crasher" threw System.InvalidOperationException("Order <id> is corrupt: checksum
//     mismatch") with inner System.FormatException("Bad checksum digit '<checksum[2]>'") from
//     CrashWorker -> ProcessOrder -> ParseOrder (ParseOrder throws the inner; ProcessOrder
//     catches it and, after its catch block, throws the outer); nobody catches the outer.
//   * the main thread is blocked in Thread.Join on the crasher (Main -> WaitForWorker -> Join).
//   * thread "bystander" sleeps (Bystander -> Thread.Sleep).
//   * own live objects: 1 Crash.Order, 3 Scenario.ThreadRecord.
// The manifest is written by the crasher just before it throws.

using System;
using System.Runtime.CompilerServices;
using System.Threading;
using Scenario;

namespace Crash
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

        [MethodImpl(Keep)]
        static void CrashWorker()
        {
            // Wait until the main thread sits in Join and the bystander sleeps.
            while ((mainThread.ThreadState & ThreadState.WaitSleepJoin) == 0 ||
                   (bystander.ThreadState & ThreadState.WaitSleepJoin) == 0 || Recorder.Count < 2)
                Thread.Sleep(10);
            Thread.Sleep(200);
            ProcessOrder(order);
        }

        [MethodImpl(Keep)]
        static void ProcessOrder(Order o)
        {
            // Catch the inner exception and throw the outer one after the catch block: a throw
            // from inside the catch funclet would leave ParseOrder's frames (already unwound
            // logically) physically below it on the stack, and the DAC reports them too.
            FormatException inner = null;
            try
            {
                ParseOrder(o);
            }
            catch (FormatException e)
            {
                inner = e;
            }
            var ex = new InvalidOperationException("Order " + o.Id + " is corrupt: checksum mismatch", inner);
            Recorder.Record("crash", null);
            WriteManifest(ex);
            throw ex;
        }

        [MethodImpl(Keep)]
        static void ParseOrder(Order o)
        {
            throw new FormatException("Bad checksum digit '" + o.Checksum[2] + "'");
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
            manifestPath = args.Length > 0 ? args[0] : "crash.manifest.json";
            scenario = args.Length > 1 ? args[1] : "crash";
            Thread.CurrentThread.Name = "main";
            mainThread = Thread.CurrentThread;
            order = args.Length > 3 ? new Order(int.Parse(args[2]), args[3]) : new Order(17, "12x4");

            bystander = Recorder.Start(Bystander, "bystander");
            var worker = new Thread(CrashWorker);
            worker.Name = "crasher";
            worker.Start();
            WaitForWorker(worker);
            return 0;
        }

        [MethodImpl(Keep)]
        static void WaitForWorker(Thread worker)
        {
            Recorder.Record("main", "System.Threading.Thread.Join");
            worker.Join();
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void WriteManifest(Exception ex)
        {
            ThreadRecord crasher = Recorder.ByRole("crash");
            Json m = Recorder.Head(scenario)
                .Add("threads", Recorder.ThreadsJson())
                .Add("types", new object[] {
                    Recorder.TypeCount(typeof(Order), 1),
                    Recorder.TypeCount(typeof(ThreadRecord), Recorder.Count),
                })
                .Add("exceptions", new object[] {
                    new Json().Add("type", ex.GetType().FullName).Add("message", ex.Message)
                        .Add("thrown_in", "Crash.Program.ProcessOrder")
                        .Add("thrown_on_managed_id", crasher.ManagedId)
                        .Add("unhandled", true)
                        .Add("inner", new Json()
                            .Add("type", ex.InnerException.GetType().FullName).Add("message", ex.InnerException.Message)
                            .Add("thrown_in", Recorder.ThrownIn(ex.InnerException))),
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
