/**
 * sampling/ — Hugging Face sampling over masked logits: repetition_penalty (CTRL rule) →
 * temperature → top_k → top_p, greedy at temperature 0, a seeded generator for reproducible
 * requests; only masked-in tokens can ever be drawn. The one pass over the vocabulary (gather)
 * runs in the addon when it is built, its TypeScript twin otherwise.
 *
 *   const sampler = new Sampler(vocabSize, { temperature, topK, topP, repetitionPenalty, seed });
 *   sampler.reset(promptTokens);
 *   const token = sampler.sample(logits, mask);  sampler.accept(token);
 *
 * Also OpenAI's logit_bias / presence / frequency penalties (LogitAdjuster, applied to a copy of
 * the logits first) and the log-probabilities `logprobs` reports (maskedLogprobs).
 */
export * from "./rng.js";
export * from "./sampler.js";
export { LogitAdjuster, maskedLogprobs, type LogitAdjustments, type TokenLogprob } from "./logit-bias.js";
export { gatherCandidatesScript, gatherKernelInUse, useGatherKernel } from "./gather.js";
