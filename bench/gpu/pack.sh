#!/usr/bin/env bash
# Fills the ignored folder .gpu/ with what bench/gpu/check.sh needs on a GPU machine that has no
# network (about 50 MB, under the device tool's 64 MiB): node, node_modules without TypeScript,
# Playwright and XGrammar, the llama.cpp source node-llama-cpp 3.22.1 was built from, and the
# small shared models. Run here after `npm ci`, then call the device with carry [".gpu", "build"]
# and `bash bench/gpu/check.sh build test bench`.
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >>.git/info/exclude
rm -rf .gpu && mkdir -p .gpu/models/vocab /tmp/trellis-gpu-pack
xz -T0 -6 -c "$(readlink -f "$(command -v node)")" >.gpu/node.xz
(cd /tmp/trellis-gpu-pack && rm -rf package llsrc && npm pack -q node-llama-cpp@3.22.1 >/dev/null &&
  tar xzf node-llama-cpp-3.22.1.tgz package/llama/gitRelease.bundle &&
  git clone -q package/llama/gitRelease.bundle llsrc 2>/dev/null)
tar cJf .gpu/llama-src.tar.xz -C /tmp/trellis-gpu-pack/llsrc CMakeLists.txt cmake ggml src include vendor common licenses LICENSE
tar cJf .gpu/nm.tar.xz --exclude=node_modules/typescript --exclude=node_modules/playwright-core \
  --exclude=node_modules/@mlc-ai --exclude=node_modules/@types --exclude=node_modules/better-sqlite3/deps \
  --exclude=node_modules/better-sqlite3/src --exclude=node_modules/better-sqlite3/build/Release/obj \
  --exclude=node_modules/better-sqlite3/build/Release/obj.target --exclude=node_modules/better-sqlite3/build/Release/.deps \
  node_modules
cp ../shared/models/stories260K.gguf ../shared/models/llama-2-tiny-random.gguf .gpu/models/
cp ../shared/models/vocab/ggml-vocab-{gpt-2,qwen2,llama-spm}.gguf .gpu/models/vocab/
du -sh .gpu
