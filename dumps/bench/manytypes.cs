// manytypes.cs: the many-type heap bench scenario (not part of the committed corpus).
// Built by generate-large.sh (target manytypes) with the class libraries manytypes-gen.py writes
// (Many.LibA .. Many.LibD); run: manytypes <manifest.json>
//
// A heap of ~7,600 distinct types of the program's own making (plus the framework's few hundred)
// and ~320,000 objects, like a real application's: at startup every Many.Lib*.dll beside the
// program is loaded (Assembly.LoadFrom) and its Many.<X>.Make.Populate(sink, counts) fills the
// heap with its classes, structs (boxed, in List<S>, in G<S>), generic instantiations over them
// (List<C>, Dictionary<string, C>, G<C>, Tuple<C, S>), closures (Func<C> over a display class)
// and delegates (Action<S>), all kept alive by Program.sink. Each library counts what it made;
// the manifest lists every such type with its exact object count (types[]), how many there are
// (type_count) and their objects in all (object_count). Not counted: the arrays inside the
// lists and dictionaries and the strings (the Names), whose numbers the runtime's own
// collections decide. The main thread sleeps.

using System;
using System.Collections.Generic;
using System.IO;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Threading;
using Scenario;

namespace ManyTypes
{
    static class Program
    {
        static List<object> sink = new List<object>();
        static Dictionary<Type, int> counts = new Dictionary<Type, int>();
        static List<string> libraries = new List<string>();

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Main(string[] args)
        {
            string manifestPath = args[0];
            Thread.CurrentThread.Name = "main";
            string[] files = Directory.GetFiles(AppContext.BaseDirectory, "Many.Lib*.dll");
            Array.Sort(files, StringComparer.Ordinal);
            if (files.Length == 0) throw new InvalidOperationException("no Many.Lib*.dll beside the program");
            foreach (string f in files)
            {
                Assembly a = Assembly.LoadFrom(f);
                Type make = null;
                foreach (Type t in a.GetExportedTypes()) if (t.Name == "Make") make = t;
                if (make == null) throw new InvalidOperationException("no Make in " + f);
                make.GetMethod("Populate").Invoke(null, new object[] { sink, counts });
                libraries.Add(a.GetName().Name);
            }
            Park(manifestPath);
            return 0;
        }

        [MethodImpl(MethodImplOptions.NoInlining | MethodImplOptions.NoOptimization)]
        static void Park(string manifestPath)
        {
            Recorder.Record("main", "System.Threading.Thread.Sleep");
            WriteManifest(manifestPath);
            Recorder.Ready();
            Thread.Sleep(Timeout.Infinite);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void WriteManifest(string manifestPath)
        {
            var entries = new List<KeyValuePair<string, Json>>();
            long objects = 0;
            foreach (var kv in counts)
            {
                entries.Add(new KeyValuePair<string, Json>(Recorder.DacName(kv.Key), Recorder.TypeCount(kv.Key, kv.Value)));
                objects += kv.Value;
            }
            entries.Sort((x, y) => string.CompareOrdinal(x.Key, y.Key));
            var types = new List<object>();
            foreach (var e in entries) types.Add(e.Value);
            types.Add(Recorder.TypeCount(typeof(ThreadRecord), Recorder.Count));
            Json m = Recorder.Head("manytypes")
                .Add("libraries", libraries)
                .Add("type_count", counts.Count)
                .Add("object_count", objects)
                .Add("sink_count", sink.Count)
                .Add("threads", Recorder.ThreadsJson())
                .Add("types", types);
            Recorder.Write(manifestPath, m);
        }
    }
}
