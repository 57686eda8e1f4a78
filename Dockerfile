# Trellis, CPU image:  docker build -t trellis .
# (GPU: Dockerfile.cuda.) Run:
#   docker run -p 8080:8080 -v trellis-data:/data trellis
#       no TRELLIS_MODEL: the default model is downloaded once into /data/cache (needs network)
#   docker run -p 8080:8080 -v trellis-data:/data -v "$PWD/models:/models:ro" \
#       -e TRELLIS_MODEL=/models/model.gguf trellis
#       a model of your own, mounted read-only
# Other commands go after the image name: `docker run ... trellis keys create ci` (see README).

# ---- build: dependencies with their native parts, the addon, and the TypeScript build ---------
FROM node:24-bookworm-slim AS build
# Compilers for the N-API addon (binding.gyp, native/) and for better-sqlite3 when no prebuilt
# binary fits. The Node headers come from the image itself (npm_config_nodedir), not a download.
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 make g++ \
    && rm -rf /var/lib/apt/lists/*
ENV npm_config_nodedir=/usr/local
WORKDIR /app
COPY package.json package-lock.json binding.gyp tsconfig.json tsconfig.build.json ./
COPY native ./native
COPY src ./src
# `npm ci` exactly as in the README: installs every dependency with its install scripts
# (better-sqlite3: a prebuilt binary or a compile), builds the addon (node-gyp, binding.gyp)
# and runs `prepare`, which is `npm run build` (tsc into dist/).
RUN npm ci

# ---- runtime: production dependencies, dist/ and the two native binaries -----------------------
FROM node:24-bookworm-slim AS runtime
# NODE_OPTIONS: a young generation of 64 MB semi-spaces, as `npm start` runs the service: a
# grammar's first requests fill the matcher's memos, and scavenges in the default 16 MB landed
# in masks (docs/constraint-masks.md).
ENV NODE_ENV=production \
    NODE_OPTIONS=--max-semi-space-size=64 \
    HOST=0.0.0.0 \
    PORT=8080 \
    TRELLIS_DATA_DIR=/data \
    TRELLIS_CACHE_DIR=/data/cache
WORKDIR /app
# Production dependencies only. --ignore-scripts: `prepare` would run tsc (dist/ comes from the
# build stage instead) and better-sqlite3 would compile again (its binary is copied below).
# @node-llama-cpp/linux-x64 ships llama.cpp's CPU libraries inside the package.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts \
    && npm cache clean --force
COPY --from=build /app/node_modules/better-sqlite3/build/Release/better_sqlite3.node ./node_modules/better-sqlite3/build/Release/better_sqlite3.node
COPY --from=build /app/build/Release/trellis_llama.node ./build/Release/trellis_llama.node
COPY --from=build /app/dist ./dist
# The dashboard's page, styles and browser modules are served as files (tsc copies none of them).
COPY --from=build /app/src/dashboard ./src/dashboard
# An unprivileged user of its own (uid 10001, as deploy/kubernetes runs it). /data: the SQLite
# key store (when no TRELLIS_DATABASE_URL) and the downloaded model; /models: mount point for a
# model of your own.
RUN groupadd --gid 10001 trellis \
    && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /data --shell /usr/sbin/nologin trellis \
    && mkdir -p /data /models \
    && chown 10001:10001 /data
VOLUME ["/data"]
USER 10001
EXPOSE 8080
# Liveness only (/healthz); loading a large model can take minutes, hence the start period.
HEALTHCHECK --interval=30s --timeout=5s --start-period=15m --retries=3 \
    CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Node is PID 1 and handles SIGTERM itself (graceful shutdown: new requests 503, running ones finish).
ENTRYPOINT ["node", "dist/cli.js"]
CMD ["serve"]
