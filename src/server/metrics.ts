/** Prometheus metrics, one registry per server instance (tests create many servers). */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

export interface ServerMetrics {
  registry: Registry;
  requests: Counter<"route" | "method" | "status">;
  latency: Histogram<"route">;
  tokens: Counter<"route">;
  queueDepth: Gauge;
  inFlight: Gauge;
}

export function createMetrics(readQueueDepth: () => number, readInFlight: () => number, defaults: boolean): ServerMetrics {
  const registry = new Registry();
  if (defaults) collectDefaultMetrics({ register: registry, prefix: "trellis_" });
  return {
    registry,
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
        this.set(readQueueDepth());
      },
    }),
    inFlight: new Gauge({
      name: "trellis_generations_in_flight",
      help: "Generation requests admitted by the server gate.",
      registers: [registry],
      collect() {
        this.set(readInFlight());
      },
    }),
  };
}
