#!/usr/bin/env bash
# Packs the MCP Bundle: manifests/manifest.json, the package source and pyproject.toml (the host's uv installs
# the dependencies on first start), and manifests/bundle_main.py as server/main.py.
#
#   manifests/pack-bundle.sh [OUTPUT.mcpb]     default: dist/mcp-codetools-<version>.mcpb
#
# The bundle CLI is taken from $MCPB, else from .ci/node-tools' folder, else `mcpb` on the PATH, else
# `npx --yes @anthropic-ai/mcpb@2.1.2`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$repo/pyproject.toml" | head -n 1)
manifest_version=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$here/manifest.json" | head -n 1)
if [ "$version" != "$manifest_version" ]; then
    echo "pack-bundle: manifest.json says version $manifest_version, pyproject.toml says $version" >&2
    exit 1
fi
out=${1:-$repo/dist/mcp-codetools-$version.mcpb}
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac

tools=${MCP_CODETOOLS_NODE_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-codetools/node-tools}/node_modules/.bin
if [ -n "${MCPB:-}" ]; then
    mcpb=("$MCPB")
elif [ -x "$tools/mcpb" ]; then
    mcpb=("$tools/mcpb")
    export PATH="$tools:$PATH"
elif command -v mcpb >/dev/null 2>&1; then
    mcpb=(mcpb)
elif command -v npx >/dev/null 2>&1; then
    mcpb=(npx --yes @anthropic-ai/mcpb@2.1.2)
else
    echo "pack-bundle: needs Node's npx (or mcpb); run .ci/node-tools or install Node.js" >&2
    exit 1
fi

stage=$(mktemp -d "${TMPDIR:-/tmp}/mcp-codetools-bundle.XXXXXX")
trap 'rm -rf "$stage"' EXIT
cp "$here/manifest.json" "$repo/pyproject.toml" "$repo/README.md" "$stage/"
(cd "$repo" && tar cf - --exclude=__pycache__ --exclude='*.pyc' mcp_codetools) | (cd "$stage" && tar xf -)
mkdir "$stage/server"
cp "$here/bundle_main.py" "$stage/server/main.py"

"${mcpb[@]}" validate "$stage/manifest.json"
mkdir -p "$(dirname "$out")"
"${mcpb[@]}" pack "$stage" "$out"
echo "pack-bundle: wrote $out" >&2
