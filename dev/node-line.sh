#!/usr/bin/env bash
# Prints the bin directory of the Node.js that CI runs the test command on: the image's line (the
# `FROM node:<major>` of the Dockerfile), so what is tested is what runs. This machine's node when it
# is of that line; otherwise the official build from the npm registry's per-platform package
# (node-<os>-<arch>, what npm's own `node` package installs), kept in .tools/node-<major>/.
# Idempotent: a re-run only asks the installed node its version. Needs some node and npm to start.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
major=$(sed -n 's/^FROM node:\([0-9][0-9]*\)[.-].*/\1/p' "$REPO/Dockerfile" | head -n 1)
[[ -n $major ]] || {
  echo "[node-line] ERROR: no 'FROM node:<major>' in $REPO/Dockerfile" >&2
  exit 1
}

if [[ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || true)" == "$major" ]]; then
  dirname "$(command -v node)"
  exit 0
fi

platform=$(node -p 'process.platform')
arch=$(node -p 'process.arch')
pkg="node-$platform-$arch"
prefix="$REPO/.tools/node-$major"
bin="$prefix/node_modules/$pkg/bin"
if [[ ! -x $bin/node ]] || [[ "$("$bin/node" -p 'process.versions.node.split(".")[0]' 2>/dev/null || true)" != "$major" ]]; then
  echo "[node-line] installing Node.js $major ($pkg@$major from the npm registry) into $prefix ..." >&2
  rm -rf "$prefix.staging"
  mkdir -p "$prefix.staging"
  npm install --prefix "$prefix.staging" --no-save --no-package-lock --no-audit --no-fund \
    --loglevel=error "$pkg@$major" >&2
  rm -rf "$prefix"
  mv "$prefix.staging" "$prefix"
fi
echo "[node-line] Node.js $("$bin/node" --version) at $bin" >&2
echo "$bin"
