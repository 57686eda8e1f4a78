// A raw product's transitions as finishDfa reads them (distances.ts's TransitionLists), appended
// in the order a product explores them: by pair, then class. In scratch (dfaArena), grown by doubling.

import type { TransitionLists } from "./distances.js";
import { dfaArena } from "./scratch.js";

const arena = dfaArena;

export class EdgeLists {
  private tail = arena.take(256);
  private label = arena.take(256);
  private head = arena.take(256);
  private m = 0;

  add(from: number, c: number, to: number): void {
    if (this.m === this.tail.length) {
      this.tail = arena.widened(this.tail, this.m * 2);
      this.label = arena.widened(this.label, this.m * 2);
      this.head = arena.widened(this.head, this.m * 2);
    }
    this.tail[this.m] = from;
    this.label[this.m] = c;
    this.head[this.m++] = to;
  }

  lists(): TransitionLists {
    return { m: this.m, tail: this.tail, label: this.label, head: this.head };
  }
}
