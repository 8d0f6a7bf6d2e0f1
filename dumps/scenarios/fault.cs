// fault.cs: crash dumps whose crashing thread runs through a Frame that saves a register context
// (the "faultnull", "faultav", "failfast" and "nestedfault" scenarios; generate-sdk.sh passes the
// mode as the third argument).  The runtime writes the dump itself (DOTNET_DbgEnableMiniDump=1,
// DOTNET_DbgMiniDumpType=2 = with heap, DOTNET_DbgMiniDumpName=<path>), as for crash.cs.
// Build: compiled with common.cs (dumps/sdk/Scenario.csproj, AllowUnsafeBlocks).
// Run:   dotnet fault.dll <manifest.json> <scenario-name> nullref|av|failfast|nested   (never prints "ready")
//
// Documented state at the time of the dump (every mode):
//   * the main thread is blocked in Thread.Join on the crasher (Main -> WaitForWorker -> Join);
//   * thread "bystander" sleeps (Bystander -> Thread.Sleep);
//   * thread "crasher" (CrashWorker) faults, in the mode's way:
//     nullref:  CrashWorker -> ProcessChain -> SumValues -> ReadNext, which reads `n.Next.Value`
//               with n.Next == null: a load from a null object reference in jitted code, a
//               hardware fault (SIGSEGV) the runtime turns into a NullReferenceException through a
//               FaultingExceptionFrame; nobody catches it: unhandled.
//     av:       CrashWorker -> ScanBuffer -> PeekWord, which reads an int through a pointer to an
//               address the program checked is unmapped (/proc/self/maps), far above the null
//               page: an access violation in managed (unsafe) code.  What the runtime makes of it
//               (AccessViolationException, fatal) is what the dump shows; the manifest records the
//               address and the method.
//     failfast: CrashWorker -> Guarded, whose try block calls Validate -> ReadNext (the same null
//               read: a NullReferenceException through a FaultingExceptionFrame), whose catch
//               block (NullReferenceException) calls Environment.FailFast(message, exception):
//               the catch funclet runs while the faulting frames still lie below it (the
//               manifest's frames for the crasher are that physical stack, its
//               fault.frames_logical what StackTrace shows: Guarded, CrashWorker).
//     nested:   CrashWorker catches a NullReferenceException of Unwinding -> Validate -> ReadNext
//               (the same null read); during its second pass the runtime runs Unwinding's finally
//               block, which calls CleanUp -> Release, which throws an InvalidOperationException
//               that CleanUp catches; its catch block calls Environment.FailFast(message, ioe).
//               So the thread is dispatching two exceptions at the time of the dump: the
//               InvalidOperationException (the current one) and, nested under it, the
//               NullReferenceException still being unwound (SOS's `pe -nested`, the DAC's
//               firstNestedException).  The manifest's `exceptions_in_dispatch`: innermost first.
//               The crasher's `frames`: the physical stack, two funclets over the frames their
//               exceptions were thrown through; fault.frames_logical what StackTrace shows.
//   * own live objects: 1 Fault.Node (its Next is null), 4 Fault.Payload, 3 Scenario.ThreadRecord.
// The manifest is written by the crasher just before it faults (its `frames`: its own methods
// from the faulting one outwards, innermost first; failfast: from the catch block outwards).

using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.IO;
using System.Runtime.CompilerServices;
using System.Threading;
using Scenario;

namespace Fault
{
    sealed class Node
    {
        public Node Next;
        public int Value;
        public Node(int v) { Value = v; }
    }

    sealed class Payload
    {
        public int Id;
        public string Tag;
        public Payload(int id, string tag) { Id = id; Tag = tag; }
    }

    unsafe class Program
    {
        const MethodImplOptions Keep = MethodImplOptions.NoInlining | MethodImplOptions.NoOptimization;
        static string manifestPath, scenario, mode;
        static Node head;
        static Payload[] payloads;
        static Thread mainThread, bystander;
        static long badAddress;
        static string[] logicalFrames;

        [MethodImpl(Keep)]
        static void CrashWorker()
        {
            // Wait until the main thread sits in Join and the bystander sleeps.
            while ((mainThread.ThreadState & System.Threading.ThreadState.WaitSleepJoin) == 0 ||
                   (bystander.ThreadState & System.Threading.ThreadState.WaitSleepJoin) == 0 || Recorder.Count < 2)
                Thread.Sleep(10);
            Thread.Sleep(200);
            if (mode == "nullref") ProcessChain(head);
            else if (mode == "av") ScanBuffer(badAddress);
            else if (mode == "nested")
            {
                try { Unwinding(); }
                catch (NullReferenceException) { }
            }
            else Guarded();
        }

        // ---- nullref
        [MethodImpl(Keep)]
        static int ProcessChain(Node n)
        {
            return SumValues(n) + 1;
        }

        [MethodImpl(Keep)]
        static int SumValues(Node n)
        {
            return n.Value + ReadNext(n);
        }

        [MethodImpl(Keep)]
        static int ReadNext(Node n)
        {
            if (mode != "failfast" && mode != "nested")
            {
                Recorder.Record("crash", null);
                WriteManifest("ReadNext");
            }
            return n.Next.Value;        // n.Next is null: the load faults
        }

        // ---- av
        [MethodImpl(Keep)]
        static int ScanBuffer(long address)
        {
            return PeekWord(address) + 1;
        }

        [MethodImpl(Keep)]
        static int PeekWord(long address)
        {
            Recorder.Record("crash", null);
            WriteManifest("PeekWord");
            return *(int*)address;      // unmapped: the load faults
        }

        // ---- failfast
        [MethodImpl(Keep)]
        static void Guarded()
        {
            try
            {
                Validate(head);
            }
            catch (NullReferenceException e)
            {
                ThreadRecord r = Recorder.Record("crash", null);
                // Where the catch block runs: the runtime calls the catch funclet while the frames
                // the exception was thrown through (ReadNext, Validate and Guarded's own body, the
                // exception's stack trace) still lie below it, up to the FaultingExceptionFrame;
                // they are popped only when the catch block returns.  So the stack holds, innermost
                // first: the funclet (Guarded), the thrown-through frames, then Guarded's callers.
                // StackTrace shows the logical stack (Guarded, CrashWorker): kept as frames_logical.
                logicalFrames = r.Frames;
                var physical = new List<string>();
                physical.Add(r.Frames[0]);
                physical.AddRange(Recorder.OwnFramesOf(new StackTrace(e, false)));
                for (int i = 1; i < r.Frames.Length; i++) physical.Add(r.Frames[i]);
                r.Frames = physical.ToArray();
                WriteManifest("Guarded", e);
                Environment.FailFast("Fault: validation failed, giving up", e);
            }
        }

        [MethodImpl(Keep)]
        static int Validate(Node n)
        {
            return ReadNext(n) * 2;
        }

        // ---- nested
        static NullReferenceException unwound;

        [MethodImpl(Keep)]
        static void Unwinding()
        {
            try
            {
                Validate(head);
            }
            catch (NullReferenceException e) when (Remember(e))
            {
            }
            finally
            {
                CleanUp();
            }
        }

        // An exception filter that never catches: it keeps the exception being dispatched.
        static bool Remember(NullReferenceException e) { unwound = e; return false; }

        [MethodImpl(Keep)]
        static void CleanUp()
        {
            try
            {
                Release();
            }
            catch (InvalidOperationException e)
            {
                ThreadRecord r = Recorder.Record("crash", null);
                // The physical stack, innermost first (as in failfast): this catch funclet
                // (CleanUp), the frames the InvalidOperationException was thrown through (its
                // trace: Release, CleanUp's body), the finally funclet (Unwinding), the frames
                // the NullReferenceException was thrown through, short of the frame that will
                // catch it (CrashWorker, where its first pass stopped), then the callers.
                var physical = new List<string>();
                physical.Add(r.Frames[0]);
                physical.AddRange(Recorder.OwnFramesOf(new StackTrace(e, false)));
                physical.Add(r.Frames[1]);
                foreach (string f in Recorder.OwnFramesOf(new StackTrace(unwound, false)))
                {
                    if (f == "Fault.Program.CrashWorker") break;
                    physical.Add(f);
                }
                for (int i = 2; i < r.Frames.Length; i++) physical.Add(r.Frames[i]);
                logicalFrames = r.Frames;
                r.Frames = physical.ToArray();
                WriteManifest("CleanUp", e);
                Environment.FailFast("Fault: cleanup failed while unwinding", e);
            }
        }

        [MethodImpl(Keep)]
        static void Release()
        {
            throw new InvalidOperationException("Fault: release failed");
        }

        [MethodImpl(Keep)]
        static void Bystander()
        {
            Recorder.Record("sleep", "System.Threading.Thread.Sleep");
            Thread.Sleep(Timeout.Infinite);
        }

        // An address far above the null page that no mapping of this process covers.
        static long UnmappedAddress()
        {
            long[] candidates = { 0x00000badc0de0000L, 0x00000dead0000000L, 0x0000100000000000L };
            string[] maps = File.ReadAllLines("/proc/self/maps");
            foreach (long a in candidates)
            {
                bool used = false;
                foreach (string line in maps)
                {
                    string[] range = line.Split(' ')[0].Split('-');
                    long lo = long.Parse(range[0], NumberStyles.HexNumber), hi = long.Parse(range[1], NumberStyles.HexNumber);
                    if (a >= lo && a < hi) used = true;
                }
                if (!used) return a;
            }
            throw new InvalidOperationException("no unmapped candidate address");
        }

        [MethodImpl(Keep)]
        static int Main(string[] args)
        {
            manifestPath = args.Length > 0 ? args[0] : "fault.manifest.json";
            scenario = args.Length > 1 ? args[1] : "fault";
            mode = args.Length > 2 ? args[2] : "nullref";
            if (mode != "nullref" && mode != "av" && mode != "failfast" && mode != "nested")
                throw new ArgumentException("mode: nullref | av | failfast | nested");
            Thread.CurrentThread.Name = "main";
            mainThread = Thread.CurrentThread;
            head = new Node(7);
            payloads = new Payload[4];
            for (int i = 0; i < payloads.Length; i++) payloads[i] = new Payload(i + 1, "p" + (i + 1));
            if (mode == "av") badAddress = UnmappedAddress();

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
        static void WriteManifest(string faultingMethod, Exception caught = null)
        {
            ThreadRecord crasher = Recorder.ByRole("crash");
            string nre = new NullReferenceException().Message;
            var fault = new Json().Add("mode", mode).Add("in", "Fault.Program." + faultingMethod)
                .Add("thread_managed_id", crasher.ManagedId);
            Json m = Recorder.Head(scenario)
                .Add("program", "fault")
                .Add("threads", Recorder.ThreadsJson())
                .Add("types", new object[] {
                    Recorder.TypeCount(typeof(Node), 1),
                    Recorder.TypeCount(typeof(Payload), payloads.Length),
                    Recorder.TypeCount(typeof(ThreadRecord), Recorder.Count),
                });
            if (mode == "nullref")
            {
                fault.Add("kind", "null-reference").Add("frame", "FaultingExceptionFrame");
                m.Add("exceptions", new object[] {
                    new Json().Add("type", "System.NullReferenceException").Add("message", nre)
                        .Add("thrown_in", "Fault.Program.ReadNext")
                        .Add("thrown_on_managed_id", crasher.ManagedId)
                        .Add("unhandled", true),
                });
            }
            else if (mode == "av")
            {
                fault.Add("kind", "access-violation").Add("frame", "FaultingExceptionFrame")
                    .Add("address", "0x" + badAddress.ToString("x"));
            }
            else if (mode == "nested")
            {
                fault.Add("kind", "failfast").Add("message", "Fault: cleanup failed while unwinding")
                    .Add("in_catch_of", "Fault.Program.CleanUp")
                    .Add("frames_logical", logicalFrames)
                    .Add("frames_note", "threads[crash].frames: the catch funclet (CleanUp), the frames the " +
                         "InvalidOperationException was thrown through, the finally funclet (Unwinding), the frames " +
                         "the NullReferenceException was thrown through short of CrashWorker (which catches it), then " +
                         "the callers; frames_logical: StackTrace's view");
                m.Add("exceptions", new object[] {
                    new Json().Add("type", caught.GetType().FullName).Add("message", caught.Message)
                        .Add("thrown_in", Recorder.ThrownIn(caught))
                        .Add("thrown_on_managed_id", crasher.ManagedId)
                        .Add("unhandled", false)
                        .Add("caught_in", "Fault.Program.CleanUp"),
                    new Json().Add("type", unwound.GetType().FullName).Add("message", unwound.Message)
                        .Add("thrown_in", Recorder.ThrownIn(unwound))
                        .Add("thrown_on_managed_id", crasher.ManagedId)
                        .Add("unhandled", false)
                        .Add("caught_in", "Fault.Program.CrashWorker"),
                });
                m.Add("exceptions_in_dispatch", new object[] {
                    new Json().Add("type", caught.GetType().FullName).Add("message", caught.Message),
                    new Json().Add("type", unwound.GetType().FullName).Add("message", unwound.Message),
                });
            }
            else
            {
                fault.Add("kind", "failfast").Add("message", "Fault: validation failed, giving up")
                    .Add("in_catch_of", "Fault.Program.Guarded")
                    .Add("frames_logical", logicalFrames)
                    .Add("frames_note", "threads[crash].frames: the catch funclet (Guarded), the frames the " +
                         "caught exception was thrown through (still on the stack below the funclet, with the " +
                         "FaultingExceptionFrame under them), then Guarded's callers; frames_logical: StackTrace's view");
                m.Add("exceptions", new object[] {
                    new Json().Add("type", caught.GetType().FullName).Add("message", caught.Message)
                        .Add("thrown_in", Recorder.ThrownIn(caught))
                        .Add("thrown_on_managed_id", crasher.ManagedId)
                        .Add("unhandled", false)
                        .Add("caught_in", "Fault.Program.Guarded"),
                });
            }
            m.Add("fault", fault);
            Recorder.Write(manifestPath, m);
            Console.WriteLine("manifest written, faulting (" + mode + ")");
            Console.Out.Flush();
        }
    }
}
