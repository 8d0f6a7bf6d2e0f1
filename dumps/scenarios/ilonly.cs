// ilonly.cs: the "ilonly" scenario: an app that calls into IL-only class libraries of its own
// (scenarios/ilonly/Ilonly.Inventory.cs, Ilonly.Pricing.cs, Ilonly.Shipping.cs, each built as
// plain IL without ReadyToRun by sdk/Library.csproj and referenced by the app), so that their
// types are on the heap and their methods on the stacks.  Compiled with common.cs.
// Run: dotnet ilonly.dll <manifest.json> [scenario-name]; prints "ready <pid>" and waits.
//
// Documented state once "ready" is printed (every method on a path, the libraries' included, is
// NoInlining | NoOptimization):
//   * "inventory": Program.Entry -> Program.RunInventory -> Ilonly.Inventory.Warehouse.Reserve
//       -> Warehouse.WaitForStock -> Monitor.Wait on the warehouse (stock never arrives)
//   * "pricing":   Program.Entry -> Program.RunPricing -> Ilonly.Pricing.PriceList.Quote
//       -> PriceList.Recalculate -> (the app's callback) Program.AdjustPrice -> Program.Stall
//       -> Thread.Sleep(Infinite)        (app, library, app again on one stack)
//   * "shipping":  Program.Entry -> Program.RunShipping
//       -> Ilonly.Shipping.Dispatcher<Ilonly.App.Parcel>.Dispatch -> Dispatcher<Parcel>.Drain
//       -> ManualResetEventSlim.Wait    (a library's generic class over an app type)
//   * the main thread in Thread.Sleep(Infinite) via Main -> ParkMainThread.
//   * own live objects: 1 Ilonly.Inventory.Warehouse with 40 Ilonly.Inventory.StockItem (in a
//     List<StockItem>), 1 Ilonly.Pricing.PriceList with 25 Ilonly.Pricing.PriceEntry, 1
//     Ilonly.Shipping.Dispatcher<Ilonly.App.Parcel> with 3 Ilonly.Shipping.Route, 12
//     Ilonly.App.Parcel, one Scenario.ThreadRecord per manifest thread.
// The manifest's `frames` are every frame of a method of an Ilonly.* type, in any of the four
// assemblies (the generic class's methods spelled as the DAC spells the shared code's:
// Ilonly.Shipping.Dispatcher`1[[System.__Canon, System.Private.CoreLib]].Drain, common.cs
// Recorder.Called);
// `assemblies` lists the four with what their own PE headers say (IL-only, no ReadyToRun header),
// read by the program from the files it loaded.

using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Reflection;
using System.Reflection.PortableExecutable;
using System.Runtime.CompilerServices;
using System.Threading;
using Ilonly.Inventory;
using Ilonly.Pricing;
using Ilonly.Shipping;
using Scenario;

namespace Ilonly.App
{
    public sealed class Parcel
    {
        public int Id;
        public double WeightKg;
        public Parcel(int id, double weight) { Id = id; WeightKg = weight; }
    }

    class Program
    {
        const MethodImplOptions Keep = MethodImplOptions.NoInlining | MethodImplOptions.NoOptimization;
        static string manifestPath, scenario;
        static Warehouse warehouse;
        static PriceList prices;
        static Dispatcher<Parcel> dispatcher;
        static Parcel[] parcels;
        [ThreadStatic] static string role;

        static readonly string[] Roles = { "inventory", "pricing", "shipping" };

        [MethodImpl(Keep)]
        static void Entry(object state)
        {
            role = (string)state;
            switch (role)
            {
                case "inventory": RunInventory(); break;
                case "pricing": RunPricing(); break;
                case "shipping": RunShipping(); break;
            }
        }

        [MethodImpl(Keep)]
        static void RunInventory()
        {
            warehouse.Reserve("SKU-1007", 1000, Blocking);
        }

        [MethodImpl(Keep)]
        static void RunPricing()
        {
            prices.Quote("SKU-1003", AdjustPrice);
        }

        [MethodImpl(Keep)]
        static void RunShipping()
        {
            // a library's generic class over an app type: the frames are spelled as the DAC
            // spells the shared code's (Recorder.Called)
            Recorder.Called(typeof(Dispatcher<Parcel>), "Drain", new Type[0]);
            Recorder.Called(typeof(Dispatcher<Parcel>), "Dispatch", new Type[0]);
            dispatcher.Dispatch(parcels[0], Blocking);
        }

        // The pricing library's callback: sleeps for ever.
        [MethodImpl(Keep)]
        static Money AdjustPrice(Money m)
        {
            Stall();
            return new Money(m.Cents * 2, m.Currency);
        }

        [MethodImpl(Keep)]
        static void Stall()
        {
            Record(0, "System.Threading.Thread.Sleep");
            Thread.Sleep(Timeout.Infinite);
        }

        // The libraries' hook, called right before they block: records the thread with the frames
        // of its caller outwards.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Blocking()
        {
            Record(1, role == "inventory" ? Recorder.MonitorWait : "System.Threading.ManualResetEventSlim.Wait");
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Record(int skip, string blockedIn)
        {
            ThreadRecord r = Recorder.Record(role, blockedIn);
            r.Frames = Recorder.FramesOf(new StackTrace(skip + 1, false), "Ilonly.");
        }

        // What an assembly's own file says: IL-only (COR20 flag), no ReadyToRun header.
        static Json AssemblyFacts(Assembly a)
        {
            string path = a.Location;
            using (var pe = new PEReader(File.OpenRead(path)))
            {
                CorHeader cor = pe.PEHeaders.CorHeader;
                return new Json()
                    .Add("name", a.GetName().Name)
                    .Add("file", Path.GetFileName(path))
                    .Add("size", new FileInfo(path).Length)
                    .Add("mvid", a.ManifestModule.ModuleVersionId.ToString())
                    .Add("il_only", (cor.Flags & CorFlags.ILOnly) != 0)
                    .Add("ready_to_run", cor.ManagedNativeHeaderDirectory.Size != 0);
            }
        }

        [MethodImpl(Keep)]
        static int Main(string[] args)
        {
            manifestPath = args.Length > 0 ? args[0] : "ilonly.manifest.json";
            scenario = args.Length > 1 ? args[1] : "ilonly";
            Thread.CurrentThread.Name = "main";
            warehouse = new Warehouse("north", 40);
            prices = new PriceList(25);
            dispatcher = new Dispatcher<Parcel>();
            parcels = new Parcel[12];
            for (int i = 0; i < parcels.Length; i++) parcels[i] = new Parcel(i + 1, 0.5 + i);

            foreach (string r in Roles)
            {
                var t = new Thread(Entry);
                t.Name = r;
                t.IsBackground = true;
                t.Start(r);
            }
            Recorder.WaitForBlocked(Roles.Length);
            ParkMainThread();
            return 0;
        }

        [MethodImpl(Keep)]
        static void ParkMainThread()
        {
            Recorder.Record("main", "System.Threading.Thread.Sleep");
            WriteManifest();
            Recorder.Ready();
            Thread.Sleep(Timeout.Infinite);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void WriteManifest()
        {
            Json m = Recorder.Head(scenario)
                .Add("program", "ilonly")
                .Add("threads", Recorder.ThreadsJson())
                .Add("types", new object[] {
                    Recorder.TypeCount(typeof(Warehouse), 1),
                    Recorder.TypeCount(typeof(StockItem), warehouse.Items.Count),
                    Recorder.TypeCount(typeof(List<StockItem>), 1),
                    Recorder.TypeCount(typeof(PriceList), 1),
                    Recorder.TypeCount(typeof(PriceEntry), prices.Entries.Length),
                    Recorder.TypeCount(typeof(PriceEntry[]), 1),
                    Recorder.TypeCount(typeof(Dispatcher<Parcel>), 1),
                    Recorder.TypeCount(typeof(Route), dispatcher.Routes.Length),
                    Recorder.TypeCount(typeof(Parcel), parcels.Length),
                    Recorder.TypeCount(typeof(ThreadRecord), Recorder.Count),
                })
                .Add("assemblies", new object[] {
                    AssemblyFacts(typeof(Program).Assembly),
                    AssemblyFacts(typeof(Warehouse).Assembly),
                    AssemblyFacts(typeof(PriceList).Assembly),
                    AssemblyFacts(typeof(Dispatcher<>).Assembly),
                });
            Recorder.Write(manifestPath, m);
        }
    }
}
