// aspnethang.cs: a hung ASP.NET Core service (Kestrel on 127.0.0.1, minimal API), the state
// a user brings a dump of: many requests awaiting one slow dependency that never answers, and a
// few handlers that block a thread-pool thread on it synchronously (sync over async).
// Build and run: dumps/aspnet/generate.sh (framework-dependent on the SDK's shared runtime).
// Run:   dotnet aspnethang.dll <manifest.json> <port> <async requests> <sync requests>
//
// Documented state once "ready" is printed:
//   * GET /orders/{id} (the async requests): the endpoint lambda awaits
//     Orders.GetOrderAsync(id), which awaits Inventory.GetStockAsync(id), which awaits
//     Inventory.pending, a TaskCompletionSource<int> (RunContinuationsAsynchronously) that is
//     never completed. Every request is one chain: Kestrel's request processing -> the endpoint
//     -> GetOrderAsync -> GetStockAsync -> the TCS.
//   * GET /report (the sync requests): the endpoint calls Orders.GetOrderAsync("report") and
//     blocks its thread-pool thread in Task<string>.Result (Reports.BuildReport); each such
//     thread is in the manifest (role "report-blocked") with the chain it waits on.
//   * the main thread sleeps (Main -> Park -> Thread.Sleep).
// The manifest's `requests` gives the counts; `async_chains` the chain of our own methods.

using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;
using System.Threading;
using System.Threading.Tasks;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Scenario;

namespace AspnetHang
{
    // The slow dependency: every call waits on one TaskCompletionSource nobody completes.
    static class Inventory
    {
        public static readonly TaskCompletionSource<int> pending =
            new TaskCompletionSource<int>(TaskCreationOptions.RunContinuationsAsynchronously);
        public static int Calls;

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static async Task<int> GetStockAsync(string sku)
        {
            Interlocked.Increment(ref Calls);
            int stock = await pending.Task;
            return stock + sku.Length;
        }
    }

    static class Orders
    {
        // every id a request asked for (what GetOrderAsync holds across its await)
        public static readonly System.Collections.Concurrent.ConcurrentBag<string> Ids =
            new System.Collections.Concurrent.ConcurrentBag<string>();

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static async Task<string> GetOrderAsync(string id)
        {
            Ids.Add(id);
            int stock = await Inventory.GetStockAsync("sku-" + id);
            return "order " + id + ": " + stock + " in stock";
        }
    }

    static class Reports
    {
        public static int Blocked;

        [MethodImpl(MethodImplOptions.NoInlining | MethodImplOptions.NoOptimization)]
        public static string BuildReport()
        {
            Task<string> t = Orders.GetOrderAsync("report");
            // Task<string>.Result: get_Result tail-calls GetResultCore, which waits in
            // ManualResetEventSlim.Wait (via Task.InternalWait): the latter is the documented API
            // on the stack (as asyncreal's result-waiter says)
            Recorder.Record("report-blocked", "System.Threading.ManualResetEventSlim.Wait");
            Interlocked.Increment(ref Blocked);
            return t.Result;
        }
    }

    static class Program
    {
        [MethodImpl(MethodImplOptions.NoInlining | MethodImplOptions.NoOptimization)]
        static int Main(string[] args)
        {
            string manifestPath = args[0];
            int port = int.Parse(args[1]);
            int asyncRequests = int.Parse(args[2]);
            int syncRequests = int.Parse(args[3]);
            Thread.CurrentThread.Name = "main";

            var builder = WebApplication.CreateSlimBuilder(args);
            builder.Logging.ClearProviders();
            builder.WebHost.UseUrls("http://127.0.0.1:" + port);
            var app = builder.Build();
            app.MapGet("/orders/{id}", async (string id) => await Orders.GetOrderAsync(id));
            app.MapGet("/report", () => Reports.BuildReport());
            app.Start();
            Console.WriteLine("listening " + port);
            Console.Out.Flush();

            // Every request has reached the dependency and every sync one blocks its thread.
            while (Volatile.Read(ref Inventory.Calls) < asyncRequests + syncRequests ||
                   Volatile.Read(ref Reports.Blocked) < syncRequests)
                Thread.Sleep(20);
            Recorder.WaitForBlocked(syncRequests);
            Park(manifestPath, asyncRequests, syncRequests);
            return 0;
        }

        [MethodImpl(MethodImplOptions.NoInlining | MethodImplOptions.NoOptimization)]
        static void Park(string manifestPath, int asyncRequests, int syncRequests)
        {
            Recorder.Record("main", "System.Threading.Thread.Sleep");
            var chains = new List<object>();
            // what each method holds across its await (used after it): GetStockAsync its `sku`,
            // GetOrderAsync its `id`; one value per request, so `values` (sorted) for the chain's
            // `count` instances, not `value`
            var ids = new List<string>(Orders.Ids);
            ids.Sort(StringComparer.Ordinal);
            var skus = ids.ConvertAll(i => "sku-" + i);
            var getStock = typeof(Inventory).GetMethod("GetStockAsync");
            var getOrder = typeof(Orders).GetMethod("GetOrderAsync");
            Json orders = new Json()
                .Add("name", "orders")
                .Add("methods", new List<object> { "AspnetHang.Inventory.GetStockAsync", "AspnetHang.Orders.GetOrderAsync" })
                .Add("awaits", "System.Threading.Tasks.TaskCompletionSource`1.Task")
                .Add("awaited_type", "System.Threading.Tasks.Task`1[[System.Int32, System.Private.CoreLib]]")
                .Add("count", asyncRequests + syncRequests)
                .Add("from_requests", new Json().Add("async", asyncRequests).Add("sync", syncRequests))
                // every request is a whole chain of its own: both methods run once per request
                // (unlike WhenAll legs, whose `count` shares one outer method)
                .Add("method_instances", new[] { asyncRequests + syncRequests, asyncRequests + syncRequests });
            // the state machines of the methods that have one (none when runtime-async)
            var sms = new List<string>();
            foreach (var mi in new[] { getStock, getOrder })
            {
                var a = (AsyncStateMachineAttribute)Attribute.GetCustomAttribute(mi, typeof(AsyncStateMachineAttribute));
                if (a != null) sms.Add(Recorder.DacName(a.StateMachineType));
            }
            orders.Add("state_machine_types", sms);
            Recorder.AsyncForm(orders, new System.Reflection.MethodBase[] { getStock, getOrder },
                new Json().Add("method", Recorder.Name(getStock)).Add("kind", "argument").Add("name", "sku")
                    .Add("type", "System.String").Add("values", skus),
                new Json().Add("method", Recorder.Name(getOrder)).Add("kind", "argument").Add("name", "id")
                    .Add("type", "System.String").Add("values", ids));
            chains.Add(orders);
            Json m = Recorder.Head("aspnethang")
                .Add("threads", Recorder.ThreadsJson())
                .Add("requests", new Json()
                    .Add("async", asyncRequests)
                    .Add("sync", syncRequests)
                    .Add("dependency_calls", Volatile.Read(ref Inventory.Calls)))
                .Add("async_chains", chains);
            Recorder.Write(manifestPath, m);
            Recorder.Ready();
            Thread.Sleep(Timeout.Infinite);
        }
    }
}
