// Makes a single-file app: the apphost (singlefilehost of the runtime's Microsoft.NETCore.App.Host
// pack) patched with the app's dll name (HostWriter.CreateAppHost), then the given files appended
// as its bundle (Bundler.GenerateBundle), as the SDK's GenerateBundle task does.
using System;
using System.Collections.Generic;
using System.IO;
using System.Runtime.InteropServices;
using Microsoft.NET.HostModel.AppHost;
using Microsoft.NET.HostModel.Bundle;

static class Program
{
    static int Main(string[] args)
    {
        if (args.Length < 5)
        {
            Console.Error.WriteLine("usage: bundle <singlefilehost> <out dir> <app name> <tfm version e.g. 11.0> <file>...");
            return 2;
        }
        string host = args[0], outDir = args[1], app = args[2];
        var tfm = Version.Parse(args[3]);
        Directory.CreateDirectory(outDir);
        string work = Path.Combine(Path.GetTempPath(), "bundle-" + Environment.ProcessId);
        Directory.CreateDirectory(work);
        string patched = Path.Combine(work, app);
        HostWriter.CreateAppHost(host, patched, app + ".dll", windowsGraphicalUserInterface: false);
        // the host is one of the specs (by its bundle-relative name, the hostName below)
        var files = new List<FileSpec> { new FileSpec(patched, app) };
        for (int i = 4; i < args.Length; i++) files.Add(new FileSpec(args[i], Path.GetFileName(args[i])));
        var bundler = new Bundler(app, outDir, BundleOptions.None, OSPlatform.Linux, Architecture.X64, tfm,
                                  diagnosticOutput: false, appAssemblyName: app);
        string final = bundler.GenerateBundle(files);
        Directory.Delete(work, true);
        Console.WriteLine(final + " (" + (files.Count - 1) + " files bundled)");
        return 0;
    }
}
