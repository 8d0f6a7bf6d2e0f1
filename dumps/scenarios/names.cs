// names.cs: the "names" scenario: methods whose names are hard to spell on the stacks of blocked
// threads, and types made at run time on the heap.  Compiled with common.cs.
// Run: dotnet names.dll <manifest.json> [scenario-name]; prints "ready <pid>" and waits to be dumped.
//
// Documented state once "ready" is printed (every own method on a path is NoInlining |
// NoOptimization; each thread starts in Program.Entry(role) and ends in Waits.Park or
// Waits.BlockingWait<T>, both over Waits.Block, which blocks in Monitor.Wait on Names.Waits.Gate;
// nobody owns the gate's lock):
//   * "generic-class":  RunGenericClass -> Waits.BlockingWait<Names.Item>(item)
//                       (a reference type argument: the JIT shares the code between every
//                       reference type, System.__Canon)
//   * "generic-struct": RunGenericStruct -> Waits.BlockingWait<Names.Slot>(slot)
//                       (a value type argument: code of its own)
//   * "nested-generic": RunNested -> Waits.Outer<Names.Item>(item) -> Waits.Middle<Names.Item,
//                       Names.Slot>(item, slot) -> Waits.BlockingWait<Names.Pair<Names.Item,
//                       Names.Slot>>(pair)   (generic methods calling generic methods)
//   * "generic-type-method": RunRepository -> Names.Repository<Names.Item>.Find<Names.Slot>(slot)
//                       -> Names.Repository<Names.Item>.Hold() -> Waits.Park()
//                       (a generic method of a generic class, then a plain method of it)
//   * "generic-struct-type": RunCounter -> Names.Counter<Names.Slot>.Tick() -> Waits.Park()
//                       (a method of a generic struct over a struct)
//   * "emitted":        RunEmitted -> Names.Emitted.Worker.Run(string) -> Waits.Park()
//                       (Worker: a type made by System.Reflection.Emit in the dynamic assembly
//                       "names.emitted", its Run's IL calls Waits.Park)
//   * "dynamic-method": RunDynamic -> DynamicMethod "NamesDyn_Block" (LCG: int (string role) =>
//                       Waits.ParkCount(role) + 1) -> Waits.ParkCount(role) -> Waits.Park()
//   * "expression":     RunExpression -> the compiled lambda of Expression<Func<Names.Item, int>>
//                       (item => Waits.ParkWith(item) + 1; the runtime names it lambda_method<N>)
//                       -> Waits.ParkWith(item) -> Waits.Park()
//                       (both dynamic methods use the call's result: the JIT optimizes them and
//                       would otherwise make the call a tail call, leaving no frame of theirs)
//   * the main thread in Thread.Sleep(Infinite) via Main -> ParkMainThread.
//   * own live objects: 6 Names.Item, 1 Names.Repository<Names.Item>, 2 Names.Holder<Names.Item,
//     Names.Slot> (and their array), 5 Names.Emitted.Worker (in a Names.Emitted.Worker[]; one also
//     in a Names.Holder<Names.Emitted.Worker, Names.Slot>), one Scenario.ThreadRecord per
//     manifest thread.
// The manifest's `frames` are every frame of a method of a type in the Names namespace (the
// emitted type's included), innermost first, as "Namespace.Type.Method", the generic
// instantiations the thread called spelled as the DAC spells a frame (common.cs Recorder.Called:
// Names.Repository`1[[System.__Canon, System.Private.CoreLib]].Find[[Names.Slot, names]]); each
// thread's `generic_frames` lists those instantiations (method, its type's and its own type
// arguments, whether the JIT shares the code: shared when an argument is a reference type, the
// exact and the DAC spelling), `dynamic_frames` the names of the LCG methods on its stack
// (DynamicMethod.Name, the compiled lambda's Method.Name), which the DAC names DynamicClass.<name>.

using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Linq.Expressions;
using System.Reflection;
using System.Reflection.Emit;
using System.Runtime.CompilerServices;
using System.Threading;
using Scenario;

namespace Names
{
    public sealed class Item
    {
        public int Id;
        public string Label;
        public Item(int id, string label) { Id = id; Label = label; }
    }

    public struct Slot
    {
        public int Index;
        public long Stamp;
        public Slot(int index, long stamp) { Index = index; Stamp = stamp; }
    }

    public struct Pair<TFirst, TSecond>
    {
        public TFirst First;
        public TSecond Second;
        public Pair(TFirst first, TSecond second) { First = first; Second = second; }
    }

    public sealed class Repository<T>
    {
        public T Current;
        public int Finds;

        [MethodImpl(Program.Keep)]
        public int Find<TKey>(TKey key)
        {
            Finds++;
            Hold();
            return Finds;
        }

        [MethodImpl(Program.Keep)]
        public void Hold()
        {
            Waits.Park();
        }
    }

    public struct Counter<T>
    {
        public T Last;
        public int Ticks;

        [MethodImpl(Program.Keep)]
        public int Tick()
        {
            Ticks++;
            Waits.Park();
            return Ticks;
        }
    }

    public sealed class Holder<TRef, TVal>
    {
        public TRef Ref;
        public TVal Val;
        public Holder(TRef r, TVal v) { Ref = r; Val = v; }
    }

    // Where every thread blocks, and what it records there.
    public static class Waits
    {
        public static readonly object Gate = new object();
        [ThreadStatic] public static string Role;
        [ThreadStatic] internal static List<Json> GenericFrames;
        [ThreadStatic] public static List<string> DynamicFrames;

        [MethodImpl(Program.Keep)]
        public static T BlockingWait<T>(T value)
        {
            Block();
            return value;
        }

        [MethodImpl(Program.Keep)]
        public static int Outer<T>(T value)
        {
            return Middle<T, Slot>(value, new Slot(3, 303));
        }

        [MethodImpl(Program.Keep)]
        public static int Middle<TFirst, TSecond>(TFirst first, TSecond second)
        {
            BlockingWait(new Pair<TFirst, TSecond>(first, second));
            return 1;
        }

        // Called by the dynamic methods: they use its result, so the JIT (which optimizes them)
        // cannot make the call a tail call and their frames stay on the stack.
        [MethodImpl(Program.Keep)]
        public static int ParkWith(Item item)
        {
            Park();
            return item.Id;
        }

        [MethodImpl(Program.Keep)]
        public static int ParkCount(string role)
        {
            Park();
            return role.Length;
        }

        [MethodImpl(Program.Keep)]
        public static void Park()
        {
            Block();
        }

        // Records the calling thread (its frames: every Names.* method on its stack, innermost
        // first) and blocks in Monitor.Wait on the gate for ever.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Block()
        {
            ThreadRecord r = Recorder.Record(Role, Recorder.MonitorWait);
            r.Frames = Recorder.FramesOf(new StackTrace(0, false), "Names.");
            lock (Program.Extra)
                Program.Extra[r.ManagedId] = new object[] {
                    GenericFrames ?? new List<Json>(), DynamicFrames ?? new List<string>() };
            lock (Gate)
            {
                while (true) Monitor.Wait(Gate);
            }
        }

        // A generic instantiation this thread called (common.cs Recorder.Called: the method, its
        // type's and its own type arguments, whether the JIT shares the code, and the DAC's
        // spelling of its frame), kept for the manifest's generic_frames.
        internal static void Called(Type type, string method, Type[] methodArgs)
        {
            if (GenericFrames == null) GenericFrames = new List<Json>();
            GenericFrames.Add(Recorder.Called(type, method, methodArgs));
        }
    }

    class Program
    {
        public const MethodImplOptions Keep = MethodImplOptions.NoInlining | MethodImplOptions.NoOptimization;
        // per blocked thread (managed id): its generic_frames and dynamic_frames
        public static readonly Dictionary<int, object[]> Extra = new Dictionary<int, object[]>();
        static string manifestPath, scenario;
        static Item[] items;
        static Repository<Item> repository;
        static Holder<Item, Slot>[] holders;
        static object[] workers;
        static object workerList;
        static Type workerType;
        static Action<string> emittedRun;
        static Func<string, int> dynamicBlock;
        static Func<Item, int> expressionBlock;
        static string dynamicName, lambdaName;

        [MethodImpl(Keep)]
        static void RunGenericClass()
        {
            Waits.Called(typeof(Waits), "BlockingWait", new[] { typeof(Item) });
            Waits.BlockingWait(items[0]);
        }

        [MethodImpl(Keep)]
        static void RunGenericStruct()
        {
            Waits.Called(typeof(Waits), "BlockingWait", new[] { typeof(Slot) });
            Waits.BlockingWait(new Slot(2, 202));
        }

        [MethodImpl(Keep)]
        static void RunNested()
        {
            Waits.Called(typeof(Waits), "BlockingWait", new[] { typeof(Pair<Item, Slot>) });
            Waits.Called(typeof(Waits), "Middle", new[] { typeof(Item), typeof(Slot) });
            Waits.Called(typeof(Waits), "Outer", new[] { typeof(Item) });
            Waits.Outer(items[1]);
        }

        [MethodImpl(Keep)]
        static void RunRepository()
        {
            Waits.Called(typeof(Repository<Item>), "Hold", new Type[0]);
            Waits.Called(typeof(Repository<Item>), "Find", new[] { typeof(Slot) });
            repository.Find(new Slot(4, 404));
        }

        [MethodImpl(Keep)]
        static void RunCounter()
        {
            Waits.Called(typeof(Counter<Slot>), "Tick", new Type[0]);
            var c = new Counter<Slot>();
            c.Last = new Slot(5, 505);
            c.Tick();
        }

        [MethodImpl(Keep)]
        static void RunEmitted()
        {
            emittedRun("emitted");
        }

        [MethodImpl(Keep)]
        static void RunDynamic()
        {
            Waits.DynamicFrames = new List<string> { dynamicName };
            dynamicBlock("dynamic-method");
        }

        [MethodImpl(Keep)]
        static void RunExpression()
        {
            Waits.DynamicFrames = new List<string> { lambdaName };
            expressionBlock(items[2]);
        }

        // Every blocked thread's entry: sets its role, then runs that role's path.
        [MethodImpl(Keep)]
        static void Entry(object state)
        {
            string role = (string)state;
            Waits.Role = role;
            switch (role)
            {
                case "generic-class": RunGenericClass(); break;
                case "generic-struct": RunGenericStruct(); break;
                case "nested-generic": RunNested(); break;
                case "generic-type-method": RunRepository(); break;
                case "generic-struct-type": RunCounter(); break;
                case "emitted": RunEmitted(); break;
                case "dynamic-method": RunDynamic(); break;
                case "expression": RunExpression(); break;
            }
        }

        static readonly string[] Roles = {
            "generic-class", "generic-struct", "nested-generic", "generic-type-method",
            "generic-struct-type", "emitted", "dynamic-method", "expression" };

        // Names.Emitted.Worker, in the dynamic assembly "names.emitted":
        //   public class Worker { public int Id; public string Tag; public void Run(string role) { Waits.Park(); } }
        // (Run is NoInlining; it ignores its argument: Waits.Role is set by the thread's entry)
        static Type EmitWorker()
        {
            var ab = AssemblyBuilder.DefineDynamicAssembly(new AssemblyName("names.emitted"), AssemblyBuilderAccess.Run);
            ModuleBuilder mb = ab.DefineDynamicModule("names.emitted");
            TypeBuilder tb = mb.DefineType("Names.Emitted.Worker", TypeAttributes.Public | TypeAttributes.Class);
            tb.DefineField("Id", typeof(int), FieldAttributes.Public);
            tb.DefineField("Tag", typeof(string), FieldAttributes.Public);
            tb.DefineDefaultConstructor(MethodAttributes.Public);
            MethodBuilder run = tb.DefineMethod("Run", MethodAttributes.Public, typeof(void), new[] { typeof(string) });
            run.SetImplementationFlags(MethodImplAttributes.NoInlining | MethodImplAttributes.NoOptimization);
            ILGenerator il = run.GetILGenerator();
            il.Emit(OpCodes.Call, typeof(Waits).GetMethod("Park"));
            il.Emit(OpCodes.Ret);
            return tb.CreateType();
        }

        // A DynamicMethod (LCG): int NamesDyn_Block(string role) { return Waits.ParkCount(role) + 1; }
        static Func<string, int> MakeDynamic()
        {
            var dm = new DynamicMethod("NamesDyn_Block", typeof(int), new[] { typeof(string) }, typeof(Program).Module);
            ILGenerator il = dm.GetILGenerator();
            il.Emit(OpCodes.Ldarg_0);
            il.Emit(OpCodes.Call, typeof(Waits).GetMethod("ParkCount"));
            il.Emit(OpCodes.Ldc_I4_1);
            il.Emit(OpCodes.Add);
            il.Emit(OpCodes.Ret);
            dynamicName = dm.Name;
            return (Func<string, int>)dm.CreateDelegate(typeof(Func<string, int>));
        }

        [MethodImpl(Keep)]
        static int Main(string[] args)
        {
            manifestPath = args.Length > 0 ? args[0] : "names.manifest.json";
            scenario = args.Length > 1 ? args[1] : "names";
            Thread.CurrentThread.Name = "main";

            items = new Item[6];
            for (int i = 0; i < items.Length; i++) items[i] = new Item(i + 1, "item-" + (i + 1));
            repository = new Repository<Item>();
            repository.Current = items[3];
            holders = new[] { new Holder<Item, Slot>(items[4], new Slot(6, 606)), new Holder<Item, Slot>(items[5], new Slot(7, 707)) };

            workerType = EmitWorker();
            workers = new object[5];
            for (int i = 0; i < workers.Length; i++)
            {
                workers[i] = Activator.CreateInstance(workerType);
                workerType.GetField("Id").SetValue(workers[i], i + 1);
                workerType.GetField("Tag").SetValue(workers[i], "worker-" + (i + 1));
            }
            emittedRun = (Action<string>)Delegate.CreateDelegate(typeof(Action<string>), workers[0], workerType.GetMethod("Run"));
            var array = Array.CreateInstance(workerType, workers.Length);
            Array.Copy(workers, array, workers.Length);
            // a generic class of ours instantiated over the emitted type
            object holder = Activator.CreateInstance(typeof(Holder<,>).MakeGenericType(workerType, typeof(Slot)),
                                                     workers[1], new Slot(8, 808));
            workerList = new object[] { array, holder };

            dynamicBlock = MakeDynamic();
            Expression<Func<Item, int>> e = item => Waits.ParkWith(item) + 1;
            expressionBlock = e.Compile();
            lambdaName = expressionBlock.Method.Name;

            foreach (string role in Roles)
            {
                var t = new Thread(Entry);
                t.Name = role;
                t.IsBackground = true;
                t.Start(role);
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

        // A type's count with its MethodTable (RuntimeTypeHandle.Value) and whether it lives in
        // the Reflection.Emit assembly (a module without a PE image).
        static Json Counted(Type t, int count)
        {
            Type e = t;
            while (e.HasElementType) e = e.GetElementType();
            bool emitted = e.Assembly == workerType.Assembly;
            if (t.IsGenericType) foreach (Type a in t.GetGenericArguments()) emitted |= a.Assembly == workerType.Assembly;
            return Recorder.TypeCount(t, count)
                .Add("method_table", "0x" + t.TypeHandle.Value.ToString("x"))
                .Add("emitted", emitted);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void WriteManifest()
        {
            var threads = Recorder.ThreadsJson();     // sorted by managed id, as Records now are
            lock (Recorder.Records)
                lock (Extra)
                    for (int i = 0; i < Recorder.Records.Count; i++)
                    {
                        object[] x;
                        if (Extra.TryGetValue(Recorder.Records[i].ManagedId, out x))
                            ((Json)threads[i]).Add("generic_frames", x[0]).Add("dynamic_frames", x[1]);
                    }
            Type holderType = typeof(Holder<,>).MakeGenericType(workerType, typeof(Slot));
            Json m = Recorder.Head(scenario)
                .Add("program", "names")
                .Add("threads", threads)
                .Add("types", new object[] {
                    Counted(typeof(Item), items.Length),
                    Counted(typeof(Repository<Item>), 1),
                    Counted(typeof(Holder<Item, Slot>), holders.Length),
                    Counted(typeof(Holder<Item, Slot>[]), 1),
                    Counted(workerType, workers.Length),
                    Counted(workerType.MakeArrayType(), 1),
                    Counted(holderType, 1),
                    Recorder.TypeCount(typeof(ThreadRecord), Recorder.Count),
                })
                .Add("emitted", new Json()
                    .Add("assembly", workerType.Assembly.GetName().Name)
                    .Add("type", workerType.FullName)
                    .Add("method", workerType.FullName + ".Run")
                    .Add("instances", workers.Length)
                    .Add("on_thread_role", "emitted"))
                .Add("dynamic_methods", new object[] {
                    new Json().Add("kind", "DynamicMethod").Add("name", dynamicName).Add("on_thread_role", "dynamic-method"),
                    new Json().Add("kind", "Expression.Compile").Add("name", lambdaName).Add("on_thread_role", "expression")
                        .Add("expression", "item => Waits.ParkWith(item) + 1"),
                });
            Recorder.Write(manifestPath, m);
        }
    }
}
