// deadlock.cs: the "deadlock" scenario.  Build: mcs -out:deadlock.dll -target:exe -optimize+ deadlock.cs common.cs
// Run: dotnet deadlock.dll <manifest.json> [scenario-name]
//
// Documented state once "ready" is printed:
//   * thread "transfer-a-to-b" holds the Monitor of the one Deadlock.LockA object and is blocked
//     in Monitor.Enter (ReliableEnter) on the one Deadlock.LockB object
//       (TransferAToB -> LockBWhileHoldingA -> Monitor.Enter);
//   * thread "transfer-b-to-a" holds LockB and is blocked in Monitor.Enter on LockA
//       (TransferBToA -> LockAWhileHoldingB -> Monitor.Enter);            => a 2-cycle
//   * thread "auditor" holds nothing and is blocked in Monitor.Enter on LockA (held by
//     transfer-a-to-b): it waits on the cycle but is not part of it
//       (Audit -> AuditLockA -> Monitor.Enter);
//   * the main thread sleeps (Main -> Park -> Thread.Sleep).
//   * own live objects: 1 Deadlock.LockA, 1 Deadlock.LockB, 4 Scenario.ThreadRecord.
// `lock (x)` compiles (mcs and Roslyn) to Monitor.Enter(object, ref bool), which on .NET 8/9
// tail-calls Monitor.ReliableEnter (the frame the blocked threads show; .NET 10: Monitor.Enter
// -> Monitor.Enter_Slowpath, see `Enter` below); every contended lock is
// inflated to a sync block (AwareLock) whose owner is the holding thread.

using System;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Threading;
using Scenario;

namespace Deadlock
{
    sealed class LockA { public string Name = "account A"; }
    sealed class LockB { public string Name = "account B"; }

    class Program
    {
        const MethodImplOptions Keep = MethodImplOptions.NoInlining | MethodImplOptions.NoOptimization;
        // `lock` calls Monitor.Enter(object, ref bool).  Up to .NET 9 it tail-calls the FCALL
        // Monitor.ReliableEnter: only the latter is on the blocked thread's stack.  From .NET 10
        // Monitor.Enter is managed and stays on the stack, blocking in Monitor.Enter_Slowpath
        // (under an InlinedCallFrame): the first documented API on the stack is Monitor.Enter.
        static readonly string Enter =
            typeof(Monitor).GetMember("Enter_Slowpath", BindingFlags.NonPublic | BindingFlags.Static).Length > 0
                ? "System.Threading.Monitor.Enter" : "System.Threading.Monitor.ReliableEnter";

        static readonly LockA lockA = new LockA();
        static readonly LockB lockB = new LockB();
        static volatile bool holdsA, holdsB;
        static ThreadRecord recAtoB, recBtoA, recAudit;

        // ---------------------------------------------------------------- A then B
        [MethodImpl(Keep)]
        static void TransferAToB()
        {
            lock (lockA)
            {
                holdsA = true;
                while (!holdsB) Thread.Sleep(1);
                LockBWhileHoldingA();
            }
        }

        [MethodImpl(Keep)]
        static void LockBWhileHoldingA()
        {
            recAtoB = Recorder.Record("deadlock-a-to-b", Enter);
            lock (lockB) { Console.WriteLine("unreachable"); }
        }

        // ---------------------------------------------------------------- B then A
        [MethodImpl(Keep)]
        static void TransferBToA()
        {
            lock (lockB)
            {
                holdsB = true;
                while (!holdsA) Thread.Sleep(1);
                LockAWhileHoldingB();
            }
        }

        [MethodImpl(Keep)]
        static void LockAWhileHoldingB()
        {
            recBtoA = Recorder.Record("deadlock-b-to-a", Enter);
            lock (lockA) { Console.WriteLine("unreachable"); }
        }

        // ---------------------------------------------------------------- bystander on A
        [MethodImpl(Keep)]
        static void Audit()
        {
            while (!holdsA) Thread.Sleep(1);
            AuditLockA();
        }

        [MethodImpl(Keep)]
        static void AuditLockA()
        {
            recAudit = Recorder.Record("lock-waiter", Enter);
            lock (lockA) { Console.WriteLine("unreachable"); }
        }

        [MethodImpl(Keep)]
        static int Main(string[] args)
        {
            string manifestPath = args.Length > 0 ? args[0] : "deadlock.manifest.json";
            string scenario = args.Length > 1 ? args[1] : "deadlock";
            Thread.CurrentThread.Name = "main";

            Recorder.Start(TransferAToB, "transfer-a-to-b");
            Recorder.Start(TransferBToA, "transfer-b-to-a");
            Recorder.Start(Audit, "auditor");
            Recorder.WaitForBlocked(3);
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

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void WriteManifest(string manifestPath, string scenario)
        {
            Json m = Recorder.Head(scenario)
                .Add("threads", Recorder.ThreadsJson())
                .Add("types", new object[] {
                    Recorder.TypeCount(typeof(LockA), 1),
                    Recorder.TypeCount(typeof(LockB), 1),
                    Recorder.TypeCount(typeof(ThreadRecord), Recorder.Count),
                    Recorder.TypeCount(typeof(Json), 0),   // the manifest writer's garbage is gone
                })
                .Add("locks", new object[] {
                    new Json().Add("name", "A").Add("type", typeof(LockA).FullName)
                        .Add("owner_managed_id", recAtoB.ManagedId)
                        .Add("waiter_managed_ids", new[] { recBtoA.ManagedId, recAudit.ManagedId })
                        .Add("kind", "monitor-enter"),
                    new Json().Add("name", "B").Add("type", typeof(LockB).FullName)
                        .Add("owner_managed_id", recBtoA.ManagedId)
                        .Add("waiter_managed_ids", new[] { recAtoB.ManagedId })
                        .Add("kind", "monitor-enter"),
                })
                .Add("deadlock_cycles", new object[] {
                    new Json().Add("managed_ids", new[] { recAtoB.ManagedId, recBtoA.ManagedId })
                              .Add("locks", new[] { "A", "B" }),
                })
                .Add("values", new object[] {
                    new Json().Add("what", "lock A's name").Add("type", typeof(LockA).FullName)
                        .Add("field", "Name").Add("value", lockA.Name),
                    new Json().Add("what", "lock B's name").Add("type", typeof(LockB).FullName)
                        .Add("field", "Name").Add("value", lockB.Name),
                });
            Recorder.Write(manifestPath, m);
        }
    }
}
