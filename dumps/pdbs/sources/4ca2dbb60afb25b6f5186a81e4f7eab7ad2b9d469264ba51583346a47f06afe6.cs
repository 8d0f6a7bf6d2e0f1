// heap.cs: the "heap" scenario (.NET 8 only: it uses the pinned object heap).
// Build: mcs -out:heap.dll -target:exe -unsafe -optimize+ heap.cs common.cs
// Run:   dotnet heap.dll <manifest.json> [scenario-name]
//
// Documented state once "ready" is printed.  Everything hangs off static fields of
// Heap.Roots (paths in the manifest's "values" start there), except the thread-statics.
//   * Heap.Person x7 (class; Id 1..7 unique; fields Id, Name, Age, Home (struct Heap.Address
//     embedded), Friend, Tags (string[])).  Names include "Zoë", "李雷", "😀 Emoji", "" (empty).
//   * generics: List<Person> People (all 7); Dictionary<string, Person> ByName (4 entries);
//     nested generic Dictionary<string, List<Person>> Teams (2 lists); user generic class
//     Heap.Node<string> linked list x5; user generic struct Heap.Slot<T>: an array
//     Slot<Person>[3] and one boxed Slot<int>.
//   * arrays of structs: Heap.Point[1000] (no references), Heap.Entry[4] (struct holding a
//     string and a Person); multi-dimensional int[3,4] and Person[2,2]; jagged int[3][] (rows
//     of 1, 2, 3 elements).
//   * strings: Latin-1, CJK, surrogate pair, empty, embedded NUL (Heap.Strings).
//   * LOH (>= 85,000 bytes): byte[100003], Person[20000], a 50,001-char string.
//   * POH: byte[4099] from GC.AllocateArray<byte>(4099, pinned: true) (via reflection).
//   * finalizers: 5 live Heap.Finalizable (still registered for finalization); 3
//     Heap.DeadFinalizable were dropped, finalized and collected before the dump (count 0).
//   * GC handles: normal -> Heap.HandleTarget, weak (short) -> Heap.WeakTarget (alive, also
//     held strongly), weak (long, track resurrection) -> Heap.WeakTarget (same object), weak ->
//     Heap.Ephemeral (collected: target null, count 0), pinned -> int[64].
//   * statics: Heap.Registry.Counter = 42, Motto, Owner (Person Id 3), struct static
//     Origin (Heap.GeoPoint, which CoreCLR keeps boxed on the heap); thread-static
//     Heap.Registry.CurrentUser = Person 1 on the main thread, Person 2 on thread
//     "thread-static-holder" (which sleeps: HoldThreadStatic -> Thread.Sleep).
//   * boxed values: int 12345, Heap.Point(3,4), enum Heap.Color.Green, Slot<int>, int? 7.
//   * a kept System.InvalidOperationException with inner Heap.ValidationException, thrown and
//     caught on the main thread (CheckQuantity throws the inner, ValidateOrder wraps it).

using System;
using System.Collections.Generic;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;
using Scenario;

namespace Heap
{
    struct Address
    {
        public string Street;
        public int Number;
        public Address(string street, int number) { Street = street; Number = number; }
    }

    sealed class Person
    {
        public int Id;
        public string Name;
        public int Age;
        public Address Home;
        public Person Friend;
        public string[] Tags;
        public Person(int id, string name, int age, Address home)
        {
            Id = id; Name = name; Age = age; Home = home; Friend = null; Tags = null;
        }
    }

    struct Point
    {
        public int X, Y;
        public Point(int x, int y) { X = x; Y = y; }
    }

    struct GeoPoint
    {
        public double Lat, Lon;
        public GeoPoint(double lat, double lon) { Lat = lat; Lon = lon; }
    }

    // A struct holding references, stored in an array.
    struct Entry
    {
        public string Key;
        public Person Value;
        public double Weight;
    }

    enum Color { Red = 1, Green = 2, Blue = 3 }

    sealed class Node<T>
    {
        public T Value;
        public Node<T> Next;
    }

    struct Slot<T>
    {
        public T Value;
        public int Version;
        public Slot(T v, int version) { Value = v; Version = version; }
    }

    sealed class Finalizable
    {
        public int Id;
        public Finalizable(int id) { Id = id; }
        ~Finalizable() { Console.WriteLine("unexpected finalization " + Id); }
    }

    sealed class DeadFinalizable
    {
        public static int Finalized;
        ~DeadFinalizable() { Interlocked.Increment(ref Finalized); }
    }

    sealed class HandleTarget { public string Label = "held by a normal GCHandle"; }
    sealed class WeakTarget { public string Label = "weakly and strongly held"; }
    sealed class Ephemeral { public string Label = "only weakly held"; }

    sealed class ValidationException : Exception
    {
        public ValidationException(string message) : base(message) { }
    }

    static class Strings
    {
        public static string Latin = "Zoë";
        public static string Cjk = "李雷";
        public static string Emoji = "😀 Emoji";
        public static string Empty = "";
        public static string WithNul = "a\0b";
        public static string Large;      // 50,001 x 'λ' (LOH)
    }

    static class Registry
    {
        public static int Counter = 42;
        public static string Motto = "Ünïcödé ☃ motto";
        public static Person Owner;
        public static GeoPoint Origin = new GeoPoint(48.8566, 2.3522);
        [ThreadStatic] public static Person CurrentUser;
    }

    static class Roots
    {
        public static List<Person> People;
        public static Dictionary<string, Person> ByName;
        public static Dictionary<string, List<Person>> Teams;
        public static Node<string> Chain;
        public static Slot<Person>[] Slots;
        public static Point[] Points;
        public static Entry[] Entries;
        public static int[,] Grid;
        public static Person[,] PersonGrid;
        public static int[][] Jagged;
        public static byte[] LargeBytes;
        public static Person[] LargePeople;
        public static byte[] Pinned;
        public static Finalizable[] Finalizables;
        public static HandleTarget Target;
        public static WeakTarget Weak;
        public static GCHandle Normal, WeakShort, WeakLong, WeakDead, PinnedHandle;
        public static int[] PinnedInts;
        public static object BoxedInt, BoxedPoint, BoxedColor, BoxedSlot, BoxedNullable;
        public static Exception Kept;
    }

    class Program
    {
        const MethodImplOptions Keep = MethodImplOptions.NoInlining | MethodImplOptions.NoOptimization;
        static readonly object holderGate = new object();
        static int holderManagedId;

        [MethodImpl(Keep)]
        static void Build()
        {
            var p = new List<Person>();
            p.Add(new Person(1, Strings.Latin, 31, new Address("Rue de l'Église", 7)));
            p.Add(new Person(2, Strings.Cjk, 28, new Address("长安街", 1)));
            p.Add(new Person(3, Strings.Emoji, 45, new Address("Main St", 221)));
            p.Add(new Person(4, Strings.Empty, 0, new Address(null, 0)));
            p.Add(new Person(5, "Ada", 36, new Address("St James's Square", 12)));
            p.Add(new Person(6, "Grace", 85, new Address("Arlington", 1906)));
            p.Add(new Person(7, "Linus", 54, new Address("Helsinki", 1969)));
            p[0].Friend = p[1];
            p[1].Friend = p[0];
            p[0].Tags = new[] { "admin", "ß-tag" };
            Roots.People = p;

            Roots.ByName = new Dictionary<string, Person>();
            for (int i = 0; i < 4; i++) Roots.ByName.Add(p[i].Name, p[i]);

            Roots.Teams = new Dictionary<string, List<Person>>();
            Roots.Teams.Add("red", new List<Person> { p[0], p[2], p[4] });
            Roots.Teams.Add("blue", new List<Person> { p[1], p[3] });

            Node<string> head = null;
            for (int i = 5; i >= 1; i--) head = new Node<string> { Value = "node " + i, Next = head };
            Roots.Chain = head;

            Roots.Slots = new Slot<Person>[] { new Slot<Person>(p[0], 1), new Slot<Person>(null, 2), new Slot<Person>(p[6], 3) };

            Roots.Points = new Point[1000];
            for (int i = 0; i < Roots.Points.Length; i++) Roots.Points[i] = new Point(i, -i);

            Roots.Entries = new Entry[4];
            for (int i = 0; i < 4; i++)
                Roots.Entries[i] = new Entry { Key = "k" + i, Value = p[i], Weight = i + 0.5 };

            Roots.Grid = new int[3, 4];
            for (int i = 0; i < 3; i++) for (int j = 0; j < 4; j++) Roots.Grid[i, j] = i * 10 + j;
            Roots.PersonGrid = new Person[2, 2];
            Roots.PersonGrid[0, 0] = p[0];
            Roots.PersonGrid[1, 0] = p[4];
            Roots.Jagged = new int[][] { new int[] { 1 }, new int[] { 1, 2 }, new int[] { 1, 2, 3 } };

            Strings.Large = new string('λ', 50001);
            Roots.LargeBytes = new byte[100003];
            for (int i = 0; i < Roots.LargeBytes.Length; i++) Roots.LargeBytes[i] = (byte)(i % 251);
            Roots.LargePeople = new Person[20000];
            Roots.LargePeople[0] = p[5];
            Roots.LargePeople[19999] = p[6];

            // GC.AllocateArray<T>(int length, bool pinned) is not in Mono's mscorlib.
            MethodInfo alloc = typeof(GC).GetMethod("AllocateArray", BindingFlags.Public | BindingFlags.Static);
            Roots.Pinned = (byte[])alloc.MakeGenericMethod(typeof(byte)).Invoke(null, new object[] { 4099, true });
            for (int i = 0; i < Roots.Pinned.Length; i++) Roots.Pinned[i] = (byte)(255 - i % 256);

            Roots.Finalizables = new Finalizable[5];
            for (int i = 0; i < 5; i++) Roots.Finalizables[i] = new Finalizable(i + 1);
            MakeDeadFinalizables();

            Roots.Target = new HandleTarget();
            Roots.Normal = GCHandle.Alloc(new HandleTarget(), GCHandleType.Normal);
            Roots.Weak = new WeakTarget();
            Roots.WeakShort = GCHandle.Alloc(Roots.Weak, GCHandleType.Weak);
            Roots.WeakLong = GCHandle.Alloc(Roots.Weak, GCHandleType.WeakTrackResurrection);
            Roots.WeakDead = MakeDeadWeakHandle();
            Roots.PinnedInts = new int[64];
            for (int i = 0; i < 64; i++) Roots.PinnedInts[i] = i * i;
            Roots.PinnedHandle = GCHandle.Alloc(Roots.PinnedInts, GCHandleType.Pinned);

            Registry.Owner = p[2];
            Registry.CurrentUser = p[0];

            Roots.BoxedInt = 12345;
            Roots.BoxedPoint = new Point(3, 4);
            Roots.BoxedColor = Color.Green;
            Roots.BoxedSlot = new Slot<int>(99, 7);
            int? seven = 7;
            Roots.BoxedNullable = seven;

            try { ValidateOrder(-3); }
            catch (Exception e) { Roots.Kept = e; }
        }

        [MethodImpl(Keep)]
        static void MakeDeadFinalizables()
        {
            for (int i = 0; i < 3; i++) new DeadFinalizable();
        }

        [MethodImpl(Keep)]
        static GCHandle MakeDeadWeakHandle()
        {
            return GCHandle.Alloc(new Ephemeral(), GCHandleType.Weak);
        }

        [MethodImpl(Keep)]
        static void ValidateOrder(int quantity)
        {
            try { CheckQuantity(quantity); }
            catch (ValidationException e)
            {
                throw new InvalidOperationException("Order 42 could not be validated", e);
            }
        }

        [MethodImpl(Keep)]
        static void CheckQuantity(int quantity)
        {
            if (quantity <= 0) throw new ValidationException("Quantity must be positive: " + quantity);
        }

        // A second thread with its own value of the thread-static Registry.CurrentUser.
        [MethodImpl(Keep)]
        static void HoldThreadStatic()
        {
            Registry.CurrentUser = Roots.People[1];
            Recorder.Record("thread-static-holder", "System.Threading.Thread.Sleep");
            Thread.Sleep(Timeout.Infinite);
        }

        [MethodImpl(Keep)]
        static int Main(string[] args)
        {
            string manifestPath = args.Length > 0 ? args[0] : "heap.manifest.json";
            string scenario = args.Length > 1 ? args[1] : "heap";
            Thread.CurrentThread.Name = "main";

            Build();
            Recorder.Start(HoldThreadStatic, "thread-static-holder");
            Recorder.WaitForBlocked(1);
            GC.Collect();
            GC.WaitForPendingFinalizers();
            GC.Collect();
            Park(manifestPath, scenario);
            return 0;
        }

        static Json Val(string path, string type, object value)
        {
            return new Json().Add("path", path).Add("type", type).Add("value", value);
        }

        static Json Handle(string kind, GCHandle h, Type expected)
        {
            object target = h.Target;
            return new Json().Add("kind", kind)
                .Add("handle", "0x" + GCHandle.ToIntPtr(h).ToString("x"))
                .Add("target_type", target == null ? null : Recorder.DacName(target.GetType()))
                .Add("declared_target_type", Recorder.DacName(expected))
                .Add("alive", target != null);
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
            ThreadRecord holder = Recorder.ByRole("thread-static-holder");
            Exception kept = Roots.Kept;
            const string S = "System.String", I = "System.Int32";
            Json m = Recorder.Head(scenario)
                .Add("threads", Recorder.ThreadsJson())
                .Add("types", new object[] {
                    Recorder.TypeCount(typeof(Person), Roots.People.Count),
                    Recorder.TypeCount(typeof(List<Person>), 3),
                    Recorder.TypeCount(typeof(Dictionary<string, Person>), 1),
                    Recorder.TypeCount(typeof(Dictionary<string, List<Person>>), 1),
                    Recorder.TypeCount(typeof(Node<string>), 5),
                    Recorder.TypeCount(typeof(Slot<Person>[]), 1),
                    Recorder.TypeCount(typeof(Slot<int>), 1),
                    Recorder.TypeCount(typeof(Point[]), 1),
                    Recorder.TypeCount(typeof(Point), 1),
                    Recorder.TypeCount(typeof(GeoPoint), 1),
                    Recorder.TypeCount(typeof(Color), 1),
                    Recorder.TypeCount(typeof(Entry[]), 1),
                    Recorder.TypeCount(typeof(Person[,]), 1),
                    Recorder.TypeCount(typeof(Finalizable), 5),
                    Recorder.TypeCount(typeof(DeadFinalizable), 0),
                    Recorder.TypeCount(typeof(HandleTarget), 2),
                    Recorder.TypeCount(typeof(WeakTarget), 1),
                    Recorder.TypeCount(typeof(Ephemeral), 0),
                    Recorder.TypeCount(typeof(ValidationException), 1),
                    Recorder.TypeCount(typeof(ThreadRecord), Recorder.Count),
                    Recorder.TypeCount(typeof(Json), 0),   // the manifest writer's garbage is gone
                })
                .Add("large_objects", new object[] {
                    new Json().Add("path", "Heap.Roots.LargeBytes").Add("type", "System.Byte[]").Add("length", Roots.LargeBytes.Length).Add("heap", "loh"),
                    new Json().Add("path", "Heap.Roots.LargePeople").Add("type", "Heap.Person[]").Add("length", Roots.LargePeople.Length).Add("heap", "loh"),
                    new Json().Add("path", "Heap.Strings.Large").Add("type", S).Add("length", Strings.Large.Length).Add("heap", "loh"),
                    new Json().Add("path", "Heap.Roots.Pinned").Add("type", "System.Byte[]").Add("length", Roots.Pinned.Length).Add("heap", "poh"),
                })
                .Add("handles", new object[] {
                    Handle("normal", Roots.Normal, typeof(HandleTarget)),
                    Handle("weak", Roots.WeakShort, typeof(WeakTarget)),
                    Handle("weak-track-resurrection", Roots.WeakLong, typeof(WeakTarget)),
                    Handle("weak", Roots.WeakDead, typeof(Ephemeral)),
                    Handle("pinned", Roots.PinnedHandle, typeof(int[])),
                })
                .Add("finalizers", new Json()
                    .Add("live_finalizable", new object[] { new Json().Add("type", typeof(Finalizable).FullName).Add("count", 5) })
                    .Add("finalized_before_dump", new object[] { new Json().Add("type", typeof(DeadFinalizable).FullName).Add("count", DeadFinalizable.Finalized) }))
                .Add("statics", new object[] {
                    new Json().Add("type", "Heap.Registry").Add("field", "Counter").Add("kind", "static").Add("value_type", I).Add("value", Registry.Counter),
                    new Json().Add("type", "Heap.Registry").Add("field", "Motto").Add("kind", "static").Add("value_type", S).Add("value", Registry.Motto),
                    new Json().Add("type", "Heap.Registry").Add("field", "Owner").Add("kind", "static").Add("value_type", "Heap.Person").Add("value_id", Registry.Owner.Id),
                    new Json().Add("type", "Heap.Registry").Add("field", "Origin").Add("kind", "static").Add("value_type", "Heap.GeoPoint")
                        .Add("value", new Json().Add("Lat", Registry.Origin.Lat).Add("Lon", Registry.Origin.Lon)),
                    new Json().Add("type", "Heap.Registry").Add("field", "CurrentUser").Add("kind", "thread-static")
                        .Add("managed_id", Thread.CurrentThread.ManagedThreadId).Add("value_type", "Heap.Person").Add("value_id", Registry.CurrentUser.Id),
                    new Json().Add("type", "Heap.Registry").Add("field", "CurrentUser").Add("kind", "thread-static")
                        .Add("managed_id", holder.ManagedId).Add("value_type", "Heap.Person").Add("value_id", 2),
                })
                .Add("exceptions", new object[] {
                    new Json().Add("path", "Heap.Roots.Kept")
                        .Add("type", kept.GetType().FullName).Add("message", kept.Message)
                        .Add("thrown_in", Recorder.Name(kept.TargetSite))
                        .Add("thrown_on_managed_id", Thread.CurrentThread.ManagedThreadId)
                        .Add("inner", new Json()
                            .Add("type", kept.InnerException.GetType().FullName).Add("message", kept.InnerException.Message)
                            .Add("thrown_in", Recorder.Name(kept.InnerException.TargetSite))),
                })
                .Add("values", new object[] {
                    Val("Heap.Roots.People[0].Name", S, Roots.People[0].Name),
                    Val("Heap.Roots.People[0].Age", I, Roots.People[0].Age),
                    Val("Heap.Roots.People[0].Home.Street", S, Roots.People[0].Home.Street),
                    Val("Heap.Roots.People[0].Home.Number", I, Roots.People[0].Home.Number),
                    Val("Heap.Roots.People[0].Friend.Name", S, Roots.People[0].Friend.Name),
                    Val("Heap.Roots.People[0].Tags[1]", S, Roots.People[0].Tags[1]),
                    Val("Heap.Roots.People[1].Name", S, Roots.People[1].Name),
                    Val("Heap.Roots.People[2].Name", S, Roots.People[2].Name),
                    Val("Heap.Roots.People[3].Name", S, Roots.People[3].Name),
                    Val("Heap.Roots.People[3].Home.Street", S, null),
                    Val("Heap.Roots.People.Count", I, Roots.People.Count),
                    Val("Heap.Roots.ByName[\"李雷\"].Id", I, Roots.ByName["李雷"].Id),
                    Val("Heap.Roots.Teams[\"blue\"][1].Id", I, Roots.Teams["blue"][1].Id),
                    Val("Heap.Roots.Chain.Next.Next.Value", S, Roots.Chain.Next.Next.Value),
                    Val("Heap.Roots.Slots[2].Value.Name", S, Roots.Slots[2].Value.Name),
                    Val("Heap.Roots.Slots[2].Version", I, Roots.Slots[2].Version),
                    Val("Heap.Roots.Points[999].Y", I, Roots.Points[999].Y),
                    Val("Heap.Roots.Entries[3].Key", S, Roots.Entries[3].Key),
                    Val("Heap.Roots.Entries[3].Value.Id", I, Roots.Entries[3].Value.Id),
                    Val("Heap.Roots.Entries[3].Weight", "System.Double", Roots.Entries[3].Weight),
                    Val("Heap.Roots.Grid[2,3]", I, Roots.Grid[2, 3]),
                    Val("Heap.Roots.PersonGrid[1,0].Name", S, Roots.PersonGrid[1, 0].Name),
                    Val("Heap.Roots.Jagged[2][2]", I, Roots.Jagged[2][2]),
                    Val("Heap.Roots.LargeBytes[100002]", "System.Byte", Roots.LargeBytes[100002]),
                    Val("Heap.Roots.LargePeople[19999].Name", S, Roots.LargePeople[19999].Name),
                    Val("Heap.Roots.Pinned[0]", "System.Byte", Roots.Pinned[0]),
                    Val("Heap.Roots.PinnedInts[63]", I, Roots.PinnedInts[63]),
                    Val("Heap.Roots.BoxedInt", I, (int)Roots.BoxedInt),
                    Val("Heap.Roots.BoxedPoint.X", I, ((Point)Roots.BoxedPoint).X),
                    Val("Heap.Roots.BoxedColor", "Heap.Color", (int)(Color)Roots.BoxedColor),
                    Val("Heap.Roots.BoxedSlot.Value", I, ((Slot<int>)Roots.BoxedSlot).Value),
                    Val("Heap.Roots.BoxedNullable", I, (int)Roots.BoxedNullable),
                    Val("Heap.Strings.Latin", S, Strings.Latin),
                    Val("Heap.Strings.Cjk", S, Strings.Cjk),
                    Val("Heap.Strings.Emoji", S, Strings.Emoji),
                    Val("Heap.Strings.Empty", S, Strings.Empty),
                    Val("Heap.Strings.WithNul", S, Strings.WithNul),
                    Val("Heap.Strings.Large.Length", I, Strings.Large.Length),
                    Val("Heap.Registry.Counter", I, Registry.Counter),
                    Val("Heap.Registry.Motto", S, Registry.Motto),
                    Val("Heap.Roots.Kept._message", S, Roots.Kept.Message),
                    Val("Heap.Roots.Kept._innerException._message", S, Roots.Kept.InnerException.Message),
                });
            Recorder.Write(manifestPath, m);
        }
    }
}
