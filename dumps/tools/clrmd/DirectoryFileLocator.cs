// DirectoryFileLocator: ClrMD's IFileLocator over local folders (CLRMD_IMAGE_DIRS), for the
// image pages a core lacks (ReadyToRun code, metadata), with no symbol server: a PE file of
// the name asked for whose header's TimeDateStamp and SizeOfImage equal the dump's record of
// the module, found in one of the folders (e.g. the runtime pack's lib/ and native/ and the
// app's own output). Anything else is not found.

using System.Buffers.Binary;
using System.Collections.Immutable;
using System.Runtime.InteropServices;
using Microsoft.Diagnostics.Runtime;

sealed class DirectoryFileLocator : IFileLocator
{
    readonly string[] _dirs;

    public DirectoryFileLocator(string[] dirs) => _dirs = dirs;

    public string FindPEImage(string fileName, int buildTimeStamp, int imageSize, bool checkProperties)
    {
        string name = Path.GetFileName(fileName.Replace('\\', '/'));
        foreach (string d in _dirs)
        {
            string p = Path.Combine(d, name);
            if (File.Exists(p) && Matches(p, buildTimeStamp, imageSize))
                return p;
        }
        return null;
    }

    public string FindPEImage(string fileName, SymbolProperties archivedUnder, ImmutableArray<byte> buildIdOrUUID,
        OSPlatform originalPlatform, bool checkProperties) => null;

    static bool Matches(string path, int timeStamp, int imageSize)
    {
        try
        {
            using var fs = File.OpenRead(path);
            var h = new byte[0x400];
            int n = fs.Read(h, 0, h.Length);
            if (n < 0x40 || h[0] != (byte)'M' || h[1] != (byte)'Z')
                return false;
            int pe = BinaryPrimitives.ReadInt32LittleEndian(h.AsSpan(0x3C));
            if (pe < 0 || pe + 24 + 60 > n)
                return false;
            int ts = BinaryPrimitives.ReadInt32LittleEndian(h.AsSpan(pe + 8));
            int size = BinaryPrimitives.ReadInt32LittleEndian(h.AsSpan(pe + 24 + 56));
            return ts == timeStamp && size == imageSize;
        }
        catch (IOException)
        {
            return false;
        }
    }
}
