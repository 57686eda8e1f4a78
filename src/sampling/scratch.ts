/**
 * The sampler's scratch arrays: vocabulary-sized typed arrays that the gather fills and the
 * softmax, cuts and draws work in. They are shared by all samplers of one vocabulary size
 * (sampling is synchronous, so calls never overlap) and nothing is allocated per call.
 */

/**
 * Buckets of softmax.ts's nucleus histogram: m ranges over [0, 34400]; the last bucket holds the
 * candidates whose exp underflows to 0.
 */
export const NUCLEUS_BUCKETS = 34402;

export class Scratch {
  /** Candidate token ids, then (after top_k) the kept ones. */
  readonly ids: Int32Array;
  /** Candidate scores (penalised logits), doubles so nothing overflows to ±Infinity. */
  readonly values: Float64Array;
  /** Unnormalised probabilities of the kept candidates. */
  readonly probs: Float64Array;
  /** top_k min-heap, then top_p work order (positions into probs). */
  readonly heap: Float64Array;
  readonly order: Int32Array;
  /** Probability bucket per candidate for top_p: round(-log2(p)·32), 0 = the best. */
  readonly bucket: Uint16Array;
  /** Mass per bucket; all zero between calls (drawNucleus clears what it used). */
  readonly bucketMass = new Float64Array(NUCLEUS_BUCKETS);
  constructor(size: number) {
    this.bucket = new Uint16Array(size);
    this.ids = new Int32Array(size);
    this.values = new Float64Array(size);
    this.probs = new Float64Array(size);
    this.heap = new Float64Array(size);
    this.order = new Int32Array(size);
  }
}

const scratchBySize = new Map<number, Scratch>();
export function sharedScratch(size: number): Scratch {
  let s = scratchBySize.get(size);
  if (!s) {
    s = new Scratch(size);
    scratchBySize.set(size, s);
  }
  return s;
}
