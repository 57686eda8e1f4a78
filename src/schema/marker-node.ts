/** A control marker (support/control-markers.ts) as a regex node: its spelling, as a small DFA (the regex parser reads code points, not raw bytes). */
import { markerBytes } from "../support/index.js";
import type { ByteDfa, RegexNode } from "../regex/index.js";

/** The control token `marker` as the language writes it: its spelling, byte by byte. */
export function markerNode(marker: string): RegexNode {
  const bytes = markerBytes(marker);
  if (bytes === null) throw new RangeError(`${marker} is not a control marker`);
  const numClasses = bytes.length + 1;
  const byteClass = new Uint8Array(256);
  bytes.forEach((b, i) => (byteClass[b] = i + 1));
  const numStates = bytes.length + 1;
  const next = new Int32Array(numStates * numClasses).fill(-1);
  for (let i = 0; i < bytes.length; i++) next[i * numClasses + i + 1] = i + 1;
  const accepting = new Uint8Array(numStates);
  accepting[bytes.length] = 1;
  const minBytesToAccept = Int32Array.from({ length: numStates }, (_, s) => bytes.length - s);
  const dfa: ByteDfa = { numStates, start: 0, numClasses, byteClass, next, accepting, minBytesToAccept };
  return { kind: "dfa", dfa };
}
