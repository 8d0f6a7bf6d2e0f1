#!/usr/bin/env bash
# Restores into the NuGet cache (~/.nuget/packages, or $NUGET_PACKAGES) the runtime pack of
# every runtime build the corpus's manifests name (Microsoft.NETCore.App.Runtime.<rid>
# <version>), and the ASP.NET Core shared framework of an ASP.NET Core app's dump
# (`app.aspnetcore_pack`): the runtime's own files, which tests give dumpshell as image files
# (tests::Entry::framework_dirs). Needs the .NET SDK (`dotnet`) and a NuGet feed.
# Builds no feed serves (the 8.0.4 and 3.1.23 of the oldest dumps) are skipped.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
command -v dotnet >/dev/null || { echo "fetch-frameworks: dotnet is not installed" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
items=$(python3 - "$here" <<'PY'
import glob, json, os, sys
versions = {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], '*.manifest.json'))):
    m = json.load(open(f))
    v = m.get('runtime', {}).get('version', '')
    rid = 'win-x64' if m.get('runtime', {}).get('os') == 'windows' else 'linux-x64'
    if v not in ('', '8.0.4', '3.1.23'):
        versions.setdefault(f'Microsoft.NETCore.App.Runtime.{rid}', set()).add(v)
    # An ASP.NET Core app's shared framework ("Microsoft.AspNetCore.App.Runtime.linux-x64 11.0.0").
    asp = (m.get('app') or {}).get('aspnetcore_pack')
    if asp and ' ' in asp:
        pack, pv = asp.split(' ', 1)
        versions.setdefault(pack, set()).add(pv)
# One item per package: NuGet takes several exact versions as "[a];[b]".
for pack, vs in sorted(versions.items()):
    spec = ';'.join(f'[{v}]' for v in sorted(vs))
    print(f'    <PackageDownload Include="{pack}" Version="{spec}" />')
PY
)
cat > "$work/fetch.csproj" <<CSPROJ
<Project Sdk="Microsoft.NET.Sdk">
  <PropertyGroup><TargetFramework>net10.0</TargetFramework></PropertyGroup>
  <ItemGroup>
$items
  </ItemGroup>
</Project>
CSPROJ
echo "fetch-frameworks: restoring the runtime packs of the corpus:" >&2
grep PackageDownload "$work/fetch.csproj" >&2
dotnet restore "$work/fetch.csproj" -v quiet >&2
