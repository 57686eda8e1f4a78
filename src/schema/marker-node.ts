/**
 * Raw byte spellings as regex nodes (the regex parser reads code points, not raw bytes): a control
 * marker's (support/control-markers.ts) and a rule call's (support/rule-calls.ts), each a small DFA.
 */
import { markerBytes } from "../support/index.js";
import type { ByteDfa, RegexNode } from "../regex/index.js";

/** The control token `marker` as the language writes it: its spelling, byte by byte. */
export function markerNode(marker: string): RegexNode {
  const bytes = markerBytes(marker);
  if (bytes === null) throw new RangeError(`${marker} is not a control marker`);
  return spellingNode(bytes);
}

/** Exactly the byte string `bytes`, as a DFA node (a byte met twice gets one class, read at each position). */
export function spellingNode(bytes: Uint8Array): RegexNode {
  const byteClass = new Uint8Array(256);
  const classOf = new Map<number, number>();
  for (const b of bytes) if (!classOf.has(b)) classOf.set(b, classOf.size + 1);
  for (const [b, c] of classOf) byteClass[b] = c;
  const numClasses = classOf.size + 1;
  const numStates = bytes.length + 1;
  const next = new Int32Array(numStates * numClasses).fill(-1);
  for (let i = 0; i < bytes.length; i++) next[i * numClasses + classOf.get(bytes[i]!)!] = i + 1;
  const accepting = new Uint8Array(numStates);
  accepting[bytes.length] = 1;
  const minBytesToAccept = Int32Array.from({ length: numStates }, (_, s) => bytes.length - s);
  const dfa: ByteDfa = { numStates, start: 0, numClasses, byteClass, next, accepting, minBytesToAccept };
  return { kind: "dfa", dfa };
}
