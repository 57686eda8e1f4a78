/**
 * A compiled Lark grammar (`Grammar`): text → Lark's rules and terminals (compile.ts and lark/,
 * as load_grammar.py) → LALR(1) tables (lalr.ts and lark/, as lalr_analysis.py) → a contextual
 * scanner per parser state (lexer.ts), all plain data; and `parses`, Lark's verdict on a text,
 * the reference the tests compare the byte automaton with.
 */
import { compileGrammarText, type CompiledGrammar } from "./compile.js";
import { withCompileBudget } from "./lark/compile-context.js";
import { buildLalrTable, GrammarError, LalrRunner, type LalrTable } from "./lalr.js";
import {
  buildLexTerminals,
  buildScanner,
  reviveLexTerminals,
  scanToken,
  type LexTerminal,
  type Scanner,
  type WholeMatchDfas,
} from "./lexer.js";
import { compileBudget, type CompileBudget, type GrammarLimits } from "./limits.js";

export interface Grammar {
  readonly source: string;
  readonly compiled: CompiledGrammar;
  readonly table: LalrTable;
  /** All lexer terminals (used + ignored), by name. */
  readonly terminals: ReadonlyMap<string, LexTerminal>;
  readonly ignore: ReadonlySet<string>;
  /** Contextual scanner for each parser state (shared between states with equal accept sets). */
  readonly scanners: readonly Scanner[];
  /**
   * Wall-clock ms the compile took: the automaton's scanner DFAs get what is left of the same
   * timeoutMs (GrammarLimits), so the limit bounds the two together.
   */
  readonly compileMs: number;
  /** Work units the compile spent: the automaton's scanner DFAs get what is left of maxWork. */
  readonly compileWork?: number;
}

/**
 * Lark text → LALR(1) table and contextual scanners, under `limits` (DEFAULT_GRAMMAR_LIMITS for
 * what is left out): GrammarTooComplexError past a resource limit, GrammarError otherwise.
 */
export function compileGrammar(source: string, limits?: Partial<GrammarLimits>): Grammar {
  const started = performance.now();
  const budget = compileBudget(limits, started);
  try {
    return withCompileBudget(budget, () => compileGrammarUnchecked(source, budget, started));
  } catch (e) {
    // Lark itself fails on odd grammars with assorted exception types; ours are all typed.
    if (e instanceof GrammarError) throw e;
    throw new GrammarError(`Invalid grammar: ${(e as Error).message}`);
  }
}

function compileGrammarUnchecked(source: string, budget: CompileBudget, started: number): Grammar {
  const compiled = compileGrammarText(source, "start", budget);
  const table = buildLalrTable(
    compiled.rules,
    compiled.terminals.map((t) => t.name),
    compiled.start,
    budget,
  );
  const lexTerms = buildLexTerminals(compiled.terminals, compiled.ignore, table.terminalIndex);
  const byName = new Map<string, LexTerminal>();
  const ignoreTerms: LexTerminal[] = [];
  for (const t of lexTerms) {
    byName.set(t.name, t);
    if (t.ignored) ignoreTerms.push(t);
  }
  // A parser state's scanner: its acceptable terminals that have a definition, plus the ignored
  // ones; states with the same acceptable terminals share one (keyed by their table indices).
  const lexOfIndex: (LexTerminal | undefined)[] = table.terminals.map((n) => byName.get(n));
  const cache = new Map<string, Scanner>();
  const wholeMatchDfas: WholeMatchDfas = new Map();
  const scanners: Scanner[] = [];
  const members: LexTerminal[] = [];
  for (let s = 0; s < table.numStates; s++) {
    const accepts = table.acceptsByState[s]!;
    budget.clock.spend(accepts.length);
    let key = "";
    for (let i = 0; i < accepts.length; i++) if (lexOfIndex[accepts[i]!] !== undefined) key += accepts[i]! + ",";
    let sc = cache.get(key);
    if (!sc) {
      members.length = 0;
      for (let i = 0; i < accepts.length; i++) {
        const t = lexOfIndex[accepts[i]!];
        if (t !== undefined && !t.ignored) members.push(t);
      }
      for (const t of ignoreTerms) members.push(t);
      sc = buildScanner(members, budget.clock, wholeMatchDfas);
      cache.set(key, sc);
    }
    scanners.push(sc);
  }
  budget.clock.check();
  return {
    source,
    compiled,
    table,
    terminals: byName,
    ignore: new Set(compiled.ignore),
    scanners,
    compileMs: performance.now() - started,
    compileWork: budget.clock.workUsed,
  };
}

/**
 * A grammar as another thread compiled it (structured clone keeps fields and sharing, not
 * classes): its terminals get their class back, in place. Scanner DFAs cloned in the same message
 * share those terminal objects, so they are revived too.
 */
export function reviveGrammar(cloned: Grammar): Grammar {
  reviveLexTerminals(cloned.terminals.values());
  return cloned;
}

/** Lark's verdict on `text`: lexes contextually, parses, and requires the whole text + $END. */
export function parses(grammar: Grammar, text: string): boolean {
  const runner = new LalrRunner(grammar.table);
  let pos = 0;
  while (pos < text.length) {
    const scanner = grammar.scanners[runner.state]!;
    const tok = scanToken(scanner, text, pos);
    if (!tok || tok.value.length === 0) return false;
    pos += tok.value.length;
    if (grammar.ignore.has(tok.term.name)) continue;
    if (tok.term.tableIndex < 0 || !runner.feed(tok.term.tableIndex)) return false;
  }
  return runner.feed(0);
}
