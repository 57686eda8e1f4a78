/**
 * server/openai/ — the OpenAI-compatible API as one Fastify plugin: chat and legacy completions
 * (streaming as Server-Sent Events), the Responses API (stored responses, typed events), embeddings,
 * models, OpenAI's error shape, vLLM's extensions.
 *
 *   await app.register(openaiRoutes);   // in its own context, over app.trellis
 */
export { openaiRoutes } from "./plugin.js";
export { mapOpenAIError, OpenAIRequestError } from "./errors.js";
