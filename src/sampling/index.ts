export * from "./rng.js";
export * from "./sampler.js";
