// large.cs: the benchmark scenarios (not part of the committed corpus).
// Build: mcs -out:large.dll -target:exe -optimize+ large.cs ../scenarios/common.cs
// Run:   dotnet large.dll <manifest.json> large-heap|threads-1000
//
// large-heap:   21,000,000 Bench.Item objects (80 bytes each, ~1.68 GB) in 21 Bench.Item[]
//               chunks of 1,000,000 (8 MB each, LOH), ~1.85 GB of live objects in all; the
//               main thread sleeps.  Item.Index is the item's global index.
// threads-1000: 1,000 extra threads, each `Descend`s to depth (i % 5) + 1 and then blocks:
//               i % 3 == 0 in Monitor.Wait on the one Bench.Gate, i % 3 == 1 in Thread.Sleep,
//               i % 3 == 2 in ManualResetEventSlim.Wait; 256 KB stacks.

using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;
using System.Threading;
using Scenario;

namespace Bench
{
    sealed class Item
    {
        public long A, B, C, D, E, F, G;
        public Item Next;
        public Item(long i) { A = i; B = i + 1; C = i + 2; D = i + 3; E = i + 4; F = i + 5; G = i + 6; }
    }

    sealed class Gate { }

    class Program
    {
        const MethodImplOptions Keep = MethodImplOptions.NoInlining | MethodImplOptions.NoOptimization;
        const int Chunks = 21, ChunkSize = 1000000, Threads = 1000;

        static Item[][] items;
        static readonly Gate gate = new Gate();
        static readonly ManualResetEventSlim never = new ManualResetEventSlim(false);
        static int waiting;

        [MethodImpl(Keep)]
        static void BuildHeap()
        {
            items = new Item[Chunks][];
            for (int c = 0; c < Chunks; c++)
            {
                var chunk = new Item[ChunkSize];
                for (int i = 0; i < ChunkSize; i++) chunk[i] = new Item((long)c * ChunkSize + i);
                for (int i = 1; i < ChunkSize; i++) chunk[i - 1].Next = chunk[i];
                items[c] = chunk;
            }
        }

        // ---------------------------------------------------------------- 1,000 threads
        [MethodImpl(Keep)]
        static void ThreadMain(object o)
        {
            int i = (int)o;
            Descend(i, (i % 5) + 1);
        }

        [MethodImpl(Keep)]
        static void Descend(int i, int depth)
        {
            if (depth > 1) { Descend(i, depth - 1); return; }
            Block(i);
        }

        [MethodImpl(Keep)]
        static void Block(int i)
        {
            switch (i % 3)
            {
                case 0:
                    lock (gate)
                    {
                        Recorder.Record("monitor-wait", "System.Threading.Monitor.Wait");
                        waiting++;
                        Monitor.Wait(gate);
                    }
                    break;
                case 1:
                    Recorder.Record("sleep", "System.Threading.Thread.Sleep");
                    Thread.Sleep(Timeout.Infinite);
                    break;
                default:
                    Recorder.Record("mres-wait", "System.Threading.ManualResetEventSlim.Wait");
                    never.Wait();
                    break;
            }
        }

        [MethodImpl(Keep)]
        static int Main(string[] args)
        {
            string manifestPath = args[0];
            string scenario = args[1];
            Thread.CurrentThread.Name = "main";
            if (scenario == "large-heap")
            {
                BuildHeap();
                Ballast();
            }
            else
            {
                for (int i = 0; i < Threads; i++)
                {
                    var t = new Thread(ThreadMain, 256 * 1024);
                    t.Name = "bench-" + i;
                    t.IsBackground = true;
                    t.Start(i);
                }
                Recorder.WaitForBlocked(Threads);
            }
            Park(manifestPath, scenario);
            return 0;
        }

        static byte[][] ballast;

        // BENCH_BALLAST_MB=<n>: n MiB more of live, written byte[] (LOH), to make a larger core
        // (generate-large.sh --gcore: a 3 GB gdb core). Not counted in the manifest's types.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Ballast()
        {
            string mb = Environment.GetEnvironmentVariable("BENCH_BALLAST_MB");
            if (string.IsNullOrEmpty(mb)) return;
            int n = int.Parse(mb);
            ballast = new byte[n][];
            for (int i = 0; i < n; i++)
            {
                ballast[i] = new byte[1 << 20];
                for (int j = 0; j < ballast[i].Length; j += 4096) ballast[i][j] = 1;
            }
        }

        [MethodImpl(Keep)]
        static void Park(string manifestPath, string scenario)
        {
            Recorder.Record("main", "System.Threading.Thread.Sleep");
            WriteManifest(manifestPath, scenario);
            Recorder.Ready();
            Thread.Sleep(Timeout.Infinite);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void WriteManifest(string manifestPath, string scenario)
        {
            var types = new List<object>();
            if (items != null)
            {
                types.Add(Recorder.TypeCount(typeof(Item), Chunks * ChunkSize));
                types.Add(Recorder.TypeCount(typeof(Item[]), Chunks));
            }
            types.Add(Recorder.TypeCount(typeof(ThreadRecord), Recorder.Count));
            Json m = Recorder.Head(scenario)
                .Add("threads", Recorder.ThreadsJson())
                .Add("types", types);
            Recorder.Write(manifestPath, m);
        }
    }
}
