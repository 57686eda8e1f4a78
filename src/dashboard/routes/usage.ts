/**
 * GET /dashboard/api/usage: usage over time for the charts, 48 hourly or 90 daily buckets (UTC),
 * oldest first, every bucket present; of one key (`key`) or all; requests and tokens with the
 * refusals beside.
 */
import type { FastifyInstance } from "fastify";
import type { UsageBucketSize } from "../../store/index.js";
import { requireSession } from "./session.js";
import { storeRead } from "./store-errors.js";

const USAGE_QUERY = {
  type: "object",
  additionalProperties: false,
  properties: { bucket: { type: "string", enum: ["hour", "day"] }, key: { type: "string", pattern: "^[0-9]{1,15}$" } },
} as const;

export async function usageRoute(app: FastifyInstance): Promise<void> {
  const { store } = app.trellis;
  app.get("/dashboard/api/usage", { schema: { hide: true, querystring: USAGE_QUERY } }, async function usage(request) {
    await requireSession(app, request, false);
    const query = request.query as { bucket?: UsageBucketSize; key?: string };
    const bucket = query.bucket ?? "hour";
    const keyId = query.key === undefined ? undefined : Number(query.key);
    const points = await storeRead(() => store.usageHistory(bucket, { keyId }));
    return {
      bucket,
      key: keyId ?? null,
      points: points.map((p) => ({
        start: p.start,
        requests: p.requests,
        tokens: p.tokens,
        // Refused by the rate limit (429); other 4xx (402 quota, bad requests); 5xx.
        rate_limited: p.rateLimited,
        client_errors: p.clientErrors,
        server_errors: p.serverErrors,
      })),
    };
  });
}
