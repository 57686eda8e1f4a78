/** Prometheus metrics, one registry per server instance (tests create many servers). */
import { monitorEventLoopDelay, type IntervalHistogram } from "node:perf_hooks";
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { ConstraintStats, PrefixCacheStats } from "../generate/index.js";
import type { UsageFlushStats } from "../store/index.js";
import type { ReplicaSharingStats } from "./shared/replica-state.js";

export interface ServerMetrics {
  registry: Registry;
  requests: Counter<"route" | "method" | "status">;
  latency: Histogram<"route">;
  tokens: Counter<"route">;
  queueDepth: Gauge;
  inFlight: Gauge;
  /** Streams: from the request's arrival to its first text, and between texts. */
  timeToFirstToken: Histogram;
  interTokenLatency: Histogram;
  /** The event loop's delay since start (perf_hooks), for /metrics and the hostile-input tests. */
  eventLoopDelay: IntervalHistogram;
  /** Tokens generated over the last seconds: trellis_tokens_per_second. */
  tokenRate: TokenRate;
  /** Stops the event-loop sampler (the server is closing). */
  stop(): void;
}

/** Tokens per second over a sliding window of whole seconds (a ring of per-second counts). */
export class TokenRate {
  private readonly counts: Float64Array;
  private readonly seconds: Float64Array;

  constructor(private readonly windowSeconds = 10) {
    this.counts = new Float64Array(windowSeconds);
    this.seconds = new Float64Array(windowSeconds).fill(-1);
  }

  note(tokens: number, nowMs: number = Date.now()): void {
    const second = Math.floor(nowMs / 1000);
    const slot = second % this.windowSeconds;
    if (this.seconds[slot] !== second) {
      this.seconds[slot] = second;
      this.counts[slot] = 0;
    }
    this.counts[slot]! += tokens;
  }

  /** The mean over the last windowSeconds whole seconds (the current, partial one left out). */
  perSecond(nowMs: number = Date.now()): number {
    const current = Math.floor(nowMs / 1000);
    let sum = 0;
    for (let i = 0; i < this.windowSeconds; i++) {
      const age = current - this.seconds[i]!;
      if (age >= 1 && age <= this.windowSeconds) sum += this.counts[i]!;
    }
    return sum / this.windowSeconds;
  }
}

export interface MetricsSources {
  queueDepth: () => number;
  inFlight: () => number;
  /** Share of the KV cache reserved, 0 … 1; undefined when the engine does not say. */
  kvCacheUtilization: () => number | undefined;
  /** Compiled-constraint cache and compile pool counters; undefined when the engine has none. */
  constraints: () => ConstraintStats | undefined;
  /** The prefix cache's counters; undefined when the engine has none. */
  prefixCache?: () => PrefixCacheStats | undefined;
  /** The key store's buffered usage and its flushes. */
  usage: () => UsageFlushStats & { staleKeyServes: number };
  /** What this replica shares through Redis, and its fallbacks. */
  sharing: () => ReplicaSharingStats;
  /** Node's default process metrics (off in tests: they are global timers). */
  processMetrics: boolean;
}

/** The event-loop sampler's period, ms. */
const DELAY_RESOLUTION_MS = 10;

/** Event-loop delay quantiles exported (1 = the largest delay seen). */
const DELAY_QUANTILES = [0.5, 0.9, 0.99, 0.999, 1];

export function createMetrics(sources: MetricsSources): ServerMetrics {
  const registry = new Registry();
  if (sources.processMetrics) collectDefaultMetrics({ register: registry, prefix: "trellis_" });
  // 10 ms resolution: the delay that matters here (a request holding the loop) is tens of ms.
  const eventLoopDelay = monitorEventLoopDelay({ resolution: DELAY_RESOLUTION_MS });
  eventLoopDelay.enable();
  new Gauge({
    name: "trellis_event_loop_delay_seconds",
    help: "Event-loop delay since start by quantile: how late the loop ran a 10 ms timer (perf_hooks.monitorEventLoopDelay); quantile 1 is the largest.",
    labelNames: ["quantile"],
    registers: [registry],
    collect() {
      for (const q of DELAY_QUANTILES) {
        // The histogram holds whole intervals between the sampler's ticks: the delay is the excess.
        const ns = q === 1 ? eventLoopDelay.max : eventLoopDelay.percentile(q * 100);
        this.set({ quantile: String(q) }, Number.isFinite(ns) ? Math.max(0, ns / 1e9 - DELAY_RESOLUTION_MS / 1000) : 0);
      }
    },
  });
  new Gauge({
    name: "trellis_event_loop_delay_samples",
    help: "Samples behind trellis_event_loop_delay_seconds.",
    registers: [registry],
    collect() {
      this.set(eventLoopDelay.count);
    },
  });
  constraintMetrics(registry, sources.constraints);
  prefixCacheMetrics(registry, sources.prefixCache ?? (() => undefined));
  usageMetrics(registry, sources.usage);
  sharingMetrics(registry, sources.sharing);
  const tokenRate = new TokenRate();
  routingMetrics(registry, sources, tokenRate);
  return {
    registry,
    eventLoopDelay,
    tokenRate,
    stop: () => eventLoopDelay.disable(),
    timeToFirstToken: new Histogram({
      name: "trellis_time_to_first_token_seconds",
      help: "Streamed completions: time from the request's arrival to its first text.",
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    interTokenLatency: new Histogram({
      name: "trellis_inter_token_latency_seconds",
      help: "Streamed completions: time between consecutive pieces of text of one choice.",
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    requests: new Counter({
      name: "trellis_http_requests_total",
      help: "HTTP requests by route, method and status code.",
      labelNames: ["route", "method", "status"],
      registers: [registry],
    }),
    latency: new Histogram({
      name: "trellis_http_request_duration_seconds",
      help: "HTTP request latency by route.",
      labelNames: ["route"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    }),
    tokens: new Counter({
      name: "trellis_tokens_generated_total",
      help: "Tokens generated, by route.",
      labelNames: ["route"],
      registers: [registry],
    }),
    queueDepth: new Gauge({
      name: "trellis_queue_depth",
      help: "Generation requests waiting (server gate plus engine scheduler).",
      registers: [registry],
      collect() {
        this.set(sources.queueDepth());
      },
    }),
    inFlight: new Gauge({
      name: "trellis_generations_in_flight",
      help: "Generation requests admitted by the server gate.",
      registers: [registry],
      collect() {
        this.set(sources.inFlight());
      },
    }),
  };
}

/** Redis and the fallbacks that keep a replica serving without it. */
function sharingMetrics(registry: Registry, read: () => ReplicaSharingStats): void {
  const gauge = scraped(registry, read);
  gauge("trellis_redis_up", "1 when Redis (TRELLIS_REDIS_URL) is connected; 0 when down or not configured.", (s) => (s.redisUp ? 1 : 0));
  gauge("trellis_rate_limit_fallback", "1 while rate limits are decided by this replica alone because Redis is unavailable.", (s) =>
    s.rateLimitUsingFallback ? 1 : 0,
  );
  gauge(
    "trellis_rate_limit_fallback_decisions_total",
    "Rate-limit decisions made locally because Redis was unavailable.",
    (s) => s.rateLimitFallbackDecisions,
  );
  gauge("trellis_redis_errors_total", "Redis commands that failed or timed out (rate limits, sessions).", (s) => s.redisErrors);
  gauge(
    "trellis_key_changes_published_total",
    "Key changes (revocations, settings) told to the other replicas.",
    (s) => s.keyChangesPublished,
  );
  gauge("trellis_key_changes_received_total", "Key changes heard from any replica (this one included).", (s) => s.keyChangesReceived);
  gauge("trellis_key_change_publish_failures_total", "Key changes that could not be told (Redis down).", (s) => s.keyChangePublishFailures);
  gauge(
    "trellis_session_fallback_operations_total",
    "Dashboard session reads and writes kept in this replica's memory because Redis was unavailable.",
    (s) => s.sessionFallbackOperations,
  );
}

/**
 * What load balancers, inference gateways and autoscalers read of a replica, under stable names:
 * the Gateway API Inference Extension's model-server protocol asks for the requests waiting and
 * the KV-cache utilisation; KEDA or an HPA scale on the requests waiting.
 */
function routingMetrics(registry: Registry, sources: MetricsSources, tokenRate: TokenRate): void {
  const gauge = scraped(registry, () => sources);
  gauge("trellis_requests_waiting", "Generation requests waiting for a slot (server gate plus engine scheduler).", (s) => s.queueDepth());
  gauge("trellis_requests_running", "Generation requests running (admitted by the server gate).", (s) => s.inFlight());
  gauge(
    "trellis_kv_cache_utilization",
    "Share of the model's KV cache reserved by running generations, 0 to 1.",
    (s) => s.kvCacheUtilization() ?? 0,
  );
  gauge("trellis_tokens_per_second", "Tokens generated per second over the last 10 seconds.", () => tokenRate.perSecond());
}

/** A gauge set from `read()` at each scrape (the counters are kept by their owner, not here). */
function scraped<S>(registry: Registry, read: () => S | undefined) {
  return (name: string, help: string, value: (s: S) => number): void => {
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        const stats = read();
        if (stats !== undefined) this.set(value(stats));
      },
    });
  };
}

/** The key store's usage buffer: counts waiting for a write, and how the writes fare. */
function usageMetrics(registry: Registry, read: () => UsageFlushStats & { staleKeyServes: number }): void {
  const gauge = scraped(registry, read);
  gauge(
    "trellis_key_store_stale_serves_total",
    "Key checks answered from a row read before because the database could not be read (Postgres down; TRELLIS_KEY_STALE_MS).",
    (s) => s.staleKeyServes,
  );
  gauge("trellis_usage_pending_requests", "Requests counted in memory, not yet written to the key store.", (s) => s.pendingRequests);
  gauge("trellis_usage_pending_tokens", "Tokens counted in memory, not yet written to the key store.", (s) => s.pendingTokens);
  gauge("trellis_usage_pending_keys", "API keys with usage not yet written.", (s) => s.pendingKeys);
  gauge("trellis_usage_flushes_total", "Usage writes to the key store.", (s) => s.flushesTotal);
  gauge("trellis_usage_flush_failures_total", "Usage writes that failed (their counts kept and retried).", (s) => s.flushFailuresTotal);
  gauge(
    "trellis_usage_flush_consecutive_failures",
    "Failed usage writes since the last success (0 when healthy).",
    (s) => s.consecutiveFailures,
  );
  gauge(
    "trellis_usage_last_flush_success_timestamp_seconds",
    "When usage was last written completely (Unix time).",
    (s) => (s.lastSuccessAtMs ?? 0) / 1000,
  );
  gauge(
    "trellis_usage_flush_max_duration_seconds",
    "Slowest usage write so far (it holds the event loop).",
    (s) => s.maxFlushDurationMs / 1000,
  );
}

/** The prefix cache (KV cells of earlier requests reused by prompts that begin the same way). */
function prefixCacheMetrics(registry: Registry, read: () => PrefixCacheStats | undefined): void {
  const gauge = scraped(registry, read);
  gauge("trellis_prefix_cache_lookups_total", "Admissions that looked for a cached prompt prefix.", (s) => s.lookups);
  gauge("trellis_prefix_cache_hits_total", "Admissions that reused a cached prompt prefix.", (s) => s.hits);
  gauge("trellis_prefix_cache_tokens_reused_total", "Prompt tokens not evaluated thanks to the prefix cache.", (s) => s.tokensReused);
  gauge(
    "trellis_prefix_cache_tokens_looked_up_total",
    "Prompt tokens of the admissions that looked (reuse rate: reused over this).",
    (s) => s.tokensLookedUp,
  );
  gauge(
    "trellis_prefix_cache_evictions_total",
    "Cached prefixes dropped for room (a request needed their cells or sequence) or by the limits.",
    (s) => s.evictions,
  );
  gauge("trellis_prefix_cache_tokens", "KV cells the prefix cache holds now (shared cells counted once per entry).", (s) => s.tokens);
  gauge("trellis_prefix_cache_entries", "Finished sequences the prefix cache holds now.", (s) => s.entries);
}

/** The engine's compiled-constraint cache and compile pool. */
function constraintMetrics(registry: Registry, read: () => ConstraintStats | undefined): void {
  const gauge = scraped(registry, read);
  gauge(
    "trellis_constraint_cache_bytes",
    "Estimated bytes of compiled patterns, grammars, their matchers and cached refusals.",
    (s) => s.bytes,
  );
  gauge("trellis_constraint_cache_budget_bytes", "The cache's byte budget (TRELLIS_CACHE_MB).", (s) => s.budgetBytes);
  gauge("trellis_constraint_cache_entries", "Compiled constraints and refusals cached.", (s) => s.entries);
  gauge("trellis_constraint_cache_evictions_total", "Cache entries dropped to stay within the byte budget.", (s) => s.evictions);
  gauge("trellis_constraint_cache_hits_total", "Constraint lookups answered from the cache (compiled or refused).", (s) => s.hits);
  gauge("trellis_compiles_total", "Compiles started on the compile workers.", (s) => s.compiles);
  gauge(
    "trellis_compile_refusals_total",
    "Compiles refused (invalid, too complex, out of memory), and matchers dropped for a request that met TRELLIS_MASK_MAX_WORK.",
    (s) => s.refusals,
  );
  gauge(
    "trellis_compile_timeouts_total",
    "Compiles stopped by the TRELLIS_COMPILE_TIMEOUT_MS safety valve (their worker terminated, the request answered 503).",
    (s) => s.pool.timeouts,
  );
  gauge("trellis_compile_worker_deaths_total", "Compile workers that died during a compile (out of memory, crash).", (s) => s.pool.deaths);
  gauge("trellis_compile_queue_depth", "Compiles waiting for a worker.", (s) => s.pool.queued);
  gauge("trellis_compile_workers_busy", "Compile workers running a compile.", (s) => s.pool.busy);
  gauge("trellis_compile_queue_refused_total", "Compiles refused because the client's or the whole queue was full.", (s) => s.pool.refused);
}
