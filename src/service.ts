/**
 * The whole service, composed: the HTTP server with its APIs, and the dashboard. The composition
 * root of what `trellis serve` runs (cli.ts) and what the service tests and the load bench start.
 */
import type { FastifyInstance } from "fastify";
import { createServer, type CreateServerOptions } from "./server/index.js";
import { dashboardPlugin } from "./dashboard/index.js";

export async function createService(options: CreateServerOptions & { adminTokenHash: string | (() => string) }): Promise<FastifyInstance> {
  return createServer({
    ...options,
    plugins: [...(options.plugins ?? []), dashboardPlugin({ adminTokenHash: options.adminTokenHash })],
  });
}
