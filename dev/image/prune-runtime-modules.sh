#!/bin/sh
# The Dockerfile's deps stage runs this after `npm ci --omit=dev`: it removes from node_modules what
# the runtime never loads, which npm installs anyway (test/build/dockerfile.test.ts checks the result
# runs a payout, and prints the size).
#
# - Temporal's native core for other platforms: @temporalio/core-bridge ships a prebuilt library for
#   every platform it supports (about 27 MB each) and loads only the one its own
#   getPrebuiltTargetName() names; and the Rust sources they were built from (sdk-core).
# - What compiles workflow code: @temporalio/worker depends on swc (native, per platform) to bundle
#   workflows at start, and the image never bundles (it loads dist/workflow-bundle.js).
#   webpack and memfs stay: the worker's bundler module requires them when it loads.
# - typescript: npm installs it as viem's peer dependency; it only types viem's API.
# - Type declarations and source maps (a third of the bytes): only a compiler or a debugger reads
#   them, and the service runs without --enable-source-maps.
set -eu
cd node_modules

bridge=@temporalio/core-bridge
target=$(node -p "require('./$bridge/common.js').getPrebuiltTargetName()")
[ -f "$bridge/releases/$target/index.node" ] || {
  echo "prune: no $bridge release for $target" >&2
  exit 1
}
for release in "$bridge"/releases/*; do
  [ "$release" = "$bridge/releases/$target" ] || rm -rf "$release"
done
rm -rf "$bridge/sdk-core" @swc typescript
find . -type f \( -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.map' \) -delete

# The one check that the runtime can still load what it needs: the worker package and its core.
cd ..
node -e "require('@temporalio/worker'); require('@temporalio/core-bridge')"
echo "prune: kept $bridge/releases/$target; node_modules is now $(du -sm node_modules | cut -f1) MB"
