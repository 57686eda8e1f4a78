// Languages built as graphs rather than trees: states joined by edges that each read one
// sub-language (a RegexNode; null reads nothing). A tree can only repeat a part by copying it, so
// "items separated by commas, each optional" — where what may come next depends on whether
// anything came before — needs a copy per choice; a graph names the two situations as two states.
// The JSON Schema front-end builds objects and arrays this way. A graph is a RegexNode of its own
// (`node(start)`), so graphs nest inside other nodes and one subset construction compiles the
// whole; `compile` is that construction for a graph alone.

import { compileRegexNode, type RegexOptions } from "./compile.js";
import type { ByteDfa } from "./dfa/types.js";
import type { GraphOfNodes, RegexNode } from "./parser.js";

export class LanguageGraph implements GraphOfNodes {
  states = 0;
  readonly from: number[] = [];
  readonly to: number[] = [];
  readonly reads: (RegexNode | null)[] = [];
  readonly accepting: number[] = [];

  /** A new state (ids count from 0). */
  state(): number {
    return this.states++;
  }

  /** From `from`, reading one string of `reads` (nothing when null), to `to`. */
  edge(from: number, to: number, reads: RegexNode | null): void {
    this.from.push(from);
    this.to.push(to);
    this.reads.push(reads);
  }

  /** Ending at `state` is a match. */
  accept(state: number): void {
    this.accepting.push(state);
  }

  /** The language of the paths from `start`, as a node to embed (the graph is not copied). */
  node(start: number): RegexNode {
    return { kind: "graph", graph: this, start };
  }

  /**
   * The minimal ByteDfa of the strings read on paths from `start` to an accepting state, under the
   * limits of `opts` (RegexTooComplexError past them). An empty language is returned, not refused:
   * callers test isEmptyLanguage.
   */
  compile(start: number, opts: RegexOptions = {}): ByteDfa {
    return compileRegexNode(this.node(start), opts);
  }
}
