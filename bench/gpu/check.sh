#!/usr/bin/env bash
# The GPU check, run from the repository root on a lent NVIDIA machine (the `device` tool; never
# in CI). That machine has CUDA's compiler but no network, no npm and maybe no node, so
# bench/gpu/pack.sh first fills the ignored folder .gpu/ here with what the run needs: node,
# node_modules without the dev-only giants, the llama.cpp source of the commit our headers and
# the npm builds come from (node-llama-cpp's gitRelease.bundle), and the small shared models.
#
# Phase "build": compiles llama.cpp's CUDA backend for this GPU only and lays it out as
# @node-llama-cpp/linux-x64-cuda does (bins/linux-x64-cuda/libllama.cuda.v0.5.0.so, ...), so the
# service finds it exactly as it finds the npm package (too big to bring here: 143 MB).
# Phase "test": the runtime, generation, categorization and HTTP tests with that build picked
# by "auto". Phase "bench": bench:runtime, bench:categorize and bench:json-e2e (fast-forward) on
# the GPU, bench:runtime on the machine's CPU cores. Phase "service": the service
# on the GPU answering the three endpoints under concurrent load.
# Usage: bash bench/gpu/check.sh build test bench    (any subset, in that order)
set -uo pipefail
OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
ROOT=$PWD
GPU_ARCH=${GPU_ARCH:-90}
BINS=$ROOT/node_modules/@node-llama-cpp/linux-x64-cuda/bins/linux-x64-cuda
log() { echo "== $(date +%T) $*"; }

setup() {
  if ! command -v node >/dev/null && [ -x /tmp/nodebin/node ]; then export PATH=/tmp/nodebin:$PATH; fi
  if ! command -v node >/dev/null; then
    mkdir -p /tmp/nodebin && xz -dc .gpu/node.xz >/tmp/nodebin/node && chmod +x /tmp/nodebin/node
    export PATH=/tmp/nodebin:$PATH
  fi
  [ -d node_modules/fastify ] || tar xJf .gpu/nm.tar.xz
  # test/support/paths.ts reads ../shared/models beside the repository.
  if [ ! -f ../shared/models/stories260K.gguf ]; then
    mkdir -p ../shared && rm -rf ../shared/models && cp -r .gpu/models ../shared/models
  fi
  log "node $(node -v), $(nproc) cores, $(nvidia-smi -L 2>&1 | head -1)"
}

build() {
  if [ -f "$BINS/libllama.cuda.v0.5.0.so" ]; then
    log "llama.cpp CUDA build already in place (an earlier call on this machine)"
    return 0
  fi
  if ls .gpu/bins/bins.tar.xz.* >/dev/null 2>&1; then
    log "llama.cpp CUDA build from an earlier run (.gpu/bins)"
    mkdir -p "$BINS" && cat .gpu/bins/bins.tar.xz.* | xz -dc | tar xf - -C "$(dirname "$(dirname "$BINS")")"
    ls -la "$BINS"
    return 0
  fi
  log "building llama.cpp (CUDA, sm_$GPU_ARCH)"
  rm -rf /tmp/llsrc && mkdir -p /tmp/llsrc && tar xJf .gpu/llama-src.tar.xz -C /tmp/llsrc
  cmake -S /tmp/llsrc -B /tmp/llb -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
    -DGGML_BACKEND_DL=ON -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$GPU_ARCH" \
    -DGGML_CUDA_NCCL=OFF -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF \
    >"$OUT/cmake.log" 2>&1 || { tail -30 "$OUT/cmake.log"; return 1; }
  local t0=$SECONDS
  ninja -C /tmp/llb -j"$(nproc)" >"$OUT/ninja.log" 2>&1 || { tail -40 "$OUT/ninja.log"; return 1; }
  log "built in $((SECONDS - t0)) s"
  mkdir -p "$BINS" "$(dirname "$(dirname "$BINS")")/dist"
  local pkg; pkg=$(dirname "$(dirname "$BINS")")
  printf '{"name":"@node-llama-cpp/linux-x64-cuda","version":"3.22.1","type":"module","main":"dist/index.js"}\n' >"$pkg/package.json"
  echo 'export {};' >"$pkg/dist/index.js"
  local lib
  for lib in $(find /tmp/llb -name 'lib*.so' -type f -o -name 'lib*.so' -type l); do
    case $(basename "$lib") in
      libllama.so) cp -L "$lib" "$BINS/libllama.cuda.v0.5.0.so" ;;
      libggml.so) cp -L "$lib" "$BINS/libggml.cuda.v0.5.0.so" ;;
      *) cp -L "$lib" "$BINS/" ;;
    esac
  done
  # The npm build's libraries find each other through RUNPATH $ORIGIN; ours were linked against
  # the build tree's sonames, which this folder also has under their plain names.
  for lib in /tmp/llb/bin/lib*.so.*; do [ -e "$lib" ] && cp -L "$lib" "$BINS/"; done
  ls -la "$BINS"
  # Kept for a later run on a fresh machine (carry them back as .gpu/bins/).
  tar cf - -C "$(dirname "$(dirname "$BINS")")" . | xz -T0 -2 | split -b 15M - "$OUT/bins.tar.xz."
  ls -la "$OUT"/bins.tar.xz.*
}

run_tests() {
  export LD_LIBRARY_PATH=$BINS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  log "backend chosen by auto"
  node --import tsx -e 'import("./src/model/index.js").then((m) => console.log(JSON.stringify(m.initRuntime())))'
  log "tests"
  # The oracle tests need Debian's python3-lark, which this machine lacks; these need a model.
  node --import tsx --test --test-concurrency=2 \
    test/model-runtime.test.ts test/sampling-masked-fuzz.test.ts test/model-synth.test.ts \
    test/generate-regex.test.ts test/generate-limits.test.ts test/server-regex.test.ts \
    test/generate-ahead.test.ts test/categorize-exact.test.ts test/categorize-scoring.test.ts \
    test/categorize-properties.test.ts test/server-categorize.test.ts test/sampling-sampler.test.ts \
    test/server-api.test.ts test/cli-commands.test.ts 2>&1 | tee "$OUT/tests.log" | grep -E '^not ok|^# (tests|pass|fail)|^    not ok'
}

# One line of a bench:runtime result: the gather kernel, tokens/s and scaling.
runtime_summary() {
  node -e 'const r=require(process.argv[1]); console.log(JSON.stringify({gather: r.sampler.gather, seq1: r.seq1, seq8: r.seq8, scaling8over1: r.scaling8over1, ceiling: r.batchedCeilingTokensPerSecond}))' "$1"
}

bench() {
  export LD_LIBRARY_PATH=$BINS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  log "bench:sampling (this machine's CPU, both gather kernels)"
  node --import tsx bench/sampling.ts --rounds 5 >"$OUT/sampling.json"
  node -e 'const r=require(process.argv[1]); console.log(r.nativeKernel, JSON.stringify(r.scriptOverNativeWall)); for (const x of r.results) if (/(greedy|top_k 50) \| mask (none|50%)/.test(x.name)) console.log(x.name, x.medianWallMicroseconds)' "$OUT/sampling.json"
  local g
  for g in native script; do
    log "bench:runtime, GPU (q8_0), $g gather"
    BENCH_GATHER=$g BENCH_ROUNDS=5 BENCH_STEPS=16 node --import tsx bench/runtime.ts >"$OUT/runtime-gpu-$g.json" 2>"$OUT/runtime-gpu-$g.err"
    runtime_summary "$OUT/runtime-gpu-$g.json"
  done
  for g in native script; do
    log "bench:categorize, GPU, qwen2-0.5b, $g log-sum-exp"
    BENCH_LSE=$g BENCH_MODELS=qwen BENCH_ROUNDS=3 node --import tsx bench/categorize.ts >"$OUT/categorize-gpu-$g.json" 2>/dev/null
    node -e 'const r=require(process.argv[1]); for (const x of r.models[0].results) console.log(r.logSumExp, x.mode, x.categories, "prompt_eval_ms", x.prompt_eval_ms, "categorize_ms", x.categorize_ms, "logit_rows", x.logit_rows)' "$OUT/categorize-gpu-$g.json"
  done
  for w in default compact; do
    log "bench:json-e2e, GPU, $w JSON: fast-forward's rate over unconstrained decoding"
    node --import tsx bench/json-e2e.ts --rounds 3 --whitespace $w >"$OUT/json-e2e-gpu-$w.json" 2>"$OUT/json-e2e-gpu-$w.err"
    node -e 'const r=require(process.argv[1]), f=r.fastForward; console.log(r.jsonOptions.whitespace, "threads", r.threads, "tok/s", JSON.stringify(r.tokensPerSecond), "ff", f.tokensPerSecond, "ratio", f.ratioOverUnconstrained, "forced", f.forcedFraction, "docMsRatio", f.docMsRatio)' "$OUT/json-e2e-gpu-$w.json"
  done
  log "bench:runtime, CPU, $(nproc) threads (q8_0)"
  TRELLIS_LLAMA_GPU=cpu BENCH_ROUNDS=3 BENCH_STEPS=8 node --import tsx bench/runtime.ts >"$OUT/runtime-cpu.json" 2>"$OUT/runtime-cpu.err"
  runtime_summary "$OUT/runtime-cpu.json"
}

service() {
  export LD_LIBRARY_PATH=$BINS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  log "the service on the GPU"
  local model; model=$(ls "$ROOT"/.cache/models/*qwen2-0.5b*q8_0*.gguf | head -1)
  TRELLIS_MODEL=$model TRELLIS_GPU=cuda TRELLIS_API_KEYS=gpu-key TRELLIS_RATE_LIMIT=0 PORT=8799 TRELLIS_DATA_DIR=/tmp/trellis-data \
    node --import tsx src/cli.ts serve >"$OUT/server.log" 2>&1 &
  local pid=$!
  for _ in $(seq 120); do curl -sf http://127.0.0.1:8799/readyz >/dev/null && break; sleep 0.5; done
  node bench/gpu/service.mjs http://127.0.0.1:8799 gpu-key 2>&1 | tee "$OUT/service.json"
  kill -TERM $pid; wait $pid
  grep -E 'Trellis listening|trellis:' "$OUT/server.log"
}

setup
for phase in "$@"; do
  case $phase in
    build) build || exit 1 ;;
    test) run_tests ;;
    bench) bench ;;
    service) service ;;
    *) echo "unknown phase $phase"; exit 2 ;;
  esac
done
log done
