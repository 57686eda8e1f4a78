/**
 * support/ — helpers with no stage knowledge, importable by every stage (and importing none).
 *
 *   Typed-array tables:  Int32Arena (scratch views of one buffer), TableSlab (an owner's first
 *                        tables carved from one buffer), grownTo / int32Of / uint8Of / concatInt32,
 *                        lowerBound (binary search in an ascending Int32Array)
 *   Integer memos:       IntMap (integer keys below 2^53 → int32), IdMap (dense ids → int32),
 *                        DenseTable (dense ids → values)
 *   Token masks:         maskWords, setTokenRange, clearTokenRange, setTokenList, orInto, setBits, popCount(32), popCountUpTo, wordHash, sampledWordHash, sameWords (bitsets of token ids)
 *   Caches:              LruCache (by entries), ByteLruCache (by the bytes entries report)
 *   Threads:             WorkerPool (time-limited tasks, per-client round-robin)
 *   Tests and fuzzers:   seededRandom
 *   Control markers:     CONTROL_MARKERS, markerBytes (control tokens' spelling in constraints)
 *   Rule calls:          RULE_CALL_LEAD, ruleCallBytes, forEachCall (a rule network's calls, spelled in its DFAs)
 */
export { commonPrefixLength, concatInt32, grownTo, Int32Arena, int32Of, lowerBound, TableSlab, uint8Of } from "./arena.js";
export { IdMap, IntMap } from "./int-map.js";
export { DenseTable } from "./dense-table.js";
export {
  clearTokenRange,
  maskWords,
  orInto,
  popCount,
  popCount32,
  popCountUpTo,
  sampledWordHash,
  sameWords,
  setBits,
  setTokenList,
  setTokenRange,
  wordHash,
} from "./bitset.js";
export { LruCache } from "./lru.js";
export { ByteLruCache, type ByteLruStats, type Sized } from "./byte-lru.js";
export {
  PoolBusyError,
  PoolClosedError,
  PoolTimeoutError,
  PoolWorkerDiedError,
  WorkerPool,
  WorkerTaskError,
  type TaskOptions,
  type WorkerPoolOptions,
  type WorkerPoolStats,
} from "./worker-pool.js";
export { seededRandom } from "./rng.js";
export { CONTROL_MARKERS, MARKER_LEAD, markerBytes, markerOfBytes } from "./control-markers.js";
export { forEachCall, MAX_RULES, RULE_CALL_LEAD, ruleCallBytes, type CallSpellingDfa } from "./rule-calls.js";
