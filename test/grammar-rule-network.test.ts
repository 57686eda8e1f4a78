// The rule network automaton (grammar/automaton/rule-network.ts) against a reference recognizer:
// a small recursive language written as rule DFAs with calls, every string over its alphabet up
// to length 8 judged both ways, prefixes kept alive exactly when they extend to a sentence, and
// the distances it plans budgets with equal to a breadth-first search's.
import assert from "node:assert/strict";
import { test } from "node:test";
import { isLexerLevel, type LexerLevelAutomaton } from "../src/constraint/grammar/contracts.js";
import { GrammarError, LEXER_COMMITS, RuleNetworkAutomaton, ruleNetworkAutomaton } from "../src/grammar/index.js";
import { compileRegexNode, type ByteDfa, type RegexNode } from "../src/regex/index.js";
import { alt, concat, literal, optional, repeat } from "../src/schema/json-schema/json-text.js";
import { callNode, callsBeforeReading, productiveRules } from "../src/schema/json-schema/rules.js";

const dfa = (node: RegexNode): ByteDfa => compileRegexNode(node);

// V → "x" | "[" (V ("," V)*)? "]" | "<" V ">" — rule 1 is V, rule 0 is V again through a call.
const V = callNode(1);
const NETWORK = {
  rules: [
    dfa(V),
    dfa(
      alt([
        literal("x"),
        concat(literal("["), optional(concat(V, repeat(concat(literal(","), V), 0, -1))), literal("]")),
        concat(literal("<"), V, literal(">")),
      ]),
    ),
  ],
};

/** Reference: the length of a V at `at`, or -1. */
function value(s: string, at: number): number {
  if (s[at] === "x") return 1;
  if (s[at] === "<") {
    const inner = value(s, at + 1);
    return inner < 0 || s[at + 1 + inner] !== ">" ? -1 : inner + 2;
  }
  if (s[at] !== "[") return -1;
  let i = at + 1;
  if (s[i] === "]") return 2;
  for (;;) {
    const n = value(s, i);
    if (n < 0) return -1;
    i += n;
    if (s[i] === "]") return i + 1 - at;
    if (s[i] !== ",") return -1;
    i++;
  }
}
const sentence = (s: string): boolean => value(s, 0) === s.length;

/**
 * Reference: whether `s` is a prefix of a sentence, by a pushdown parser whose frames say what
 * each open construct expects next (a value, a list's next item or end, an angle's end).
 */
function viablePrefix(s: string): boolean {
  type Frame = "value" | "done" | "list-open" | "list-item" | "list-more" | "angle" | "angle-end";
  const stack: Frame[] = ["value"];
  const afterValue: Partial<Record<Frame, Frame>> = {
    value: "done",
    "list-open": "list-more",
    "list-item": "list-more",
    angle: "angle-end",
  };
  for (const ch of s) {
    const top = stack[stack.length - 1]!;
    const next = afterValue[top];
    if (top === "list-open" && ch === "]") stack.pop();
    else if (next !== undefined && (ch === "x" || ch === "[" || ch === "<")) {
      stack[stack.length - 1] = next;
      if (ch === "[") stack.push("list-open");
      if (ch === "<") stack.push("angle");
    } else if (top === "list-more" && ch === ",") stack[stack.length - 1] = "list-item";
    else if ((top === "list-more" && ch === "]") || (top === "angle-end" && ch === ">")) stack.pop();
    else return false;
  }
  return true;
}

const ALPHABET = ["x", "[", "]", ",", "<", ">"];

function* strings(maxLength: number): Generator<string> {
  yield "";
  let layer = [""];
  for (let n = 1; n <= maxLength; n++) {
    const next: string[] = [];
    for (const s of layer) for (const ch of ALPHABET) next.push(s + ch);
    yield* next;
    layer = next;
  }
}

/** The states `a` reaches from `state` over `bytes`, layer by layer (each state once), `depth` layers. */
function* layersFrom(a: RuleNetworkAutomaton, state: number, bytes: readonly number[], depth: number): Generator<number[]> {
  let layer = [state];
  const seen = new Set(layer);
  for (let d = 0; d < depth && layer.length > 0; d++) {
    yield layer;
    const next: number[] = [];
    for (const s of layer)
      for (const b of bytes) {
        const t = a.step(s, b);
        if (t >= 0 && !seen.has(t)) {
          seen.add(t);
          next.push(t);
        }
      }
    layer = next;
  }
}

/** The fewest bytes from `state` to a complete sentence, breadth-first (-1: none within `depth`). */
function fewestBytesByLayers(a: RuleNetworkAutomaton, state: number, bytes: readonly number[], depth: number): number {
  let d = 0;
  for (const layer of layersFrom(a, state, bytes, depth)) {
    if (layer.some((s) => a.isComplete(s))) return d;
    d++;
  }
  return -1;
}
test("a rule network accepts exactly its language, and keeps exactly the viable prefixes alive", () => {
  const a = new RuleNetworkAutomaton(NETWORK);
  let sentences = 0;
  for (const s of strings(7)) {
    const state = a.walk(a.start, s);
    assert.equal(state >= 0 && a.isComplete(state), sentence(s), `complete(${JSON.stringify(s)})`);
    if (sentence(s)) sentences++;
    if (sentence(s)) assert.ok(state >= 0);
    if (state >= 0) {
      // Alive: its shortest completion, spelled by the automaton, makes a sentence of it.
      const rest = new TextDecoder().decode(a.completingBytes(state)!);
      assert.ok(sentence(s + rest), `${JSON.stringify(s)} + ${JSON.stringify(rest)}`);
      assert.equal(a.minBytesToComplete(state), rest.length);
    }
    assert.equal(state >= 0, viablePrefix(s), `alive(${JSON.stringify(s)})`);
  }
  assert.ok(sentences >= 30, `only ${sentences} sentences`);
});

test("its distances are a breadth-first search's: the fewest bytes to a sentence", () => {
  const a = new RuleNetworkAutomaton(NETWORK);
  const bytes = ALPHABET.map((ch) => ch.charCodeAt(0));
  const bfs = (state: number): number => fewestBytesByLayers(a, state, bytes, 40);
  let checked = 0;
  for (const s of strings(6)) {
    const state = a.walk(a.start, s);
    if (state < 0) continue;
    assert.equal(a.minBytesToComplete(state), bfs(state), JSON.stringify(s));
    assert.equal(a.minBytesLowerBound(state), bfs(state));
    checked++;
  }
  assert.ok(checked > 200);
});

test("tables handed over from another automaton of the same rules are taken; tables that do not fit are not", () => {
  const made = new RuleNetworkAutomaton(NETWORK);
  const given = new RuleNetworkAutomaton({ ...NETWORK, tables: made.networkTables });
  // Taken as they are: the same arrays, not computed again.
  assert.equal(given.networkTables.dist, made.networkTables.dist);
  assert.equal(given.networkTables.callee, made.networkTables.callee);
  // Another network's tables (other sizes) are computed again, and give the same automaton.
  const other = new RuleNetworkAutomaton({ rules: [dfa(literal("ab"))] });
  const refitted = new RuleNetworkAutomaton({ ...NETWORK, tables: other.networkTables });
  assert.notEqual(refitted.networkTables.dist, other.networkTables.dist);
  assert.deepEqual(refitted.networkTables, made.networkTables);
  let checked = 0;
  for (const s of strings(5)) {
    const [a, b, c] = [made, given, refitted].map((x) => x.walk(x.start, s));
    assert.equal(a! >= 0, b! >= 0, JSON.stringify(s));
    assert.equal(a! >= 0, c! >= 0, JSON.stringify(s));
    if (a! < 0) continue;
    assert.equal(made.isComplete(a!), given.isComplete(b!));
    assert.equal(made.minBytesToComplete(a!), given.minBytesToComplete(b!));
    assert.equal(made.minBytesToComplete(a!), refitted.minBytesToComplete(c!));
    checked++;
  }
  assert.ok(checked > 100, `${checked}`);
});

test("nesting has no bound but the text: 300 levels deep, and a call's spelling is never text", () => {
  const a = new RuleNetworkAutomaton(NETWORK);
  const deep = `${"[<".repeat(300)}x${">]".repeat(300)}`;
  const inside = a.walk(a.start, deep.slice(0, 600));
  assert.ok(inside >= 0);
  assert.ok(a.depth(inside) > 300, `depth ${a.depth(inside)}`);
  assert.equal(a.minBytesToComplete(inside), 601);
  assert.ok(a.isComplete(a.walk(a.start, deep)));
  // 0xFE 0x00 0x01 spells "call rule 1" inside the DFAs: as text it is refused.
  let s = a.step(a.start, 0x5b);
  assert.ok(s >= 0);
  assert.equal(a.step(s, 0xfe), -1);
  s = a.step(s, 0x78);
  assert.ok(a.isComplete(a.step(s, 0x5d)));
});

test("left recursion and rules that never finish are found", () => {
  // R → R "x" | "y": a call before any byte.
  const left = [dfa(callNode(1)), dfa(alt([concat(callNode(1), literal("x")), literal("y")]))];
  assert.equal(callsBeforeReading(left), true);
  assert.throws(() => new RuleNetworkAutomaton({ rules: left }), GrammarError);
  assert.equal(callsBeforeReading(NETWORK.rules), false);
  // R → "[" R "]": no text ends it.
  const endless = [dfa(callNode(1)), dfa(concat(literal("["), callNode(1), literal("]")))];
  assert.deepEqual(productiveRules(endless), [false, false]);
  assert.throws(() => new RuleNetworkAutomaton({ rules: endless }), /accepts no sentence/);
  assert.deepEqual(productiveRules(NETWORK.rules), [true, true]);
  // Productive through rules numbered after them (settled first) and before them (a later round).
  const late = [dfa(alt([literal("a"), concat(literal("b"), callNode(1))])), dfa(concat(literal("c"), callNode(2))), dfa(literal("d"))];
  assert.deepEqual(productiveRules(late), [true, true, true]);
  const backwards = [
    dfa(concat(literal("["), callNode(1), literal("]"))),
    dfa(alt([concat(literal("("), callNode(2)), literal("x")])),
    dfa(concat(literal("z"), callNode(0))),
  ];
  assert.deepEqual(productiveRules(backwards), [true, true, true]);
  // Rule 2 needs rule 0, found after it: asked until rule 0, the walk stops before rule 2's second round.
  assert.deepEqual(productiveRules(backwards, 0), [true, true, false]);
  assert.deepEqual(productiveRules(endless, 0), [false, false]);
});

test("a call weighs its callee's fewest bytes, 0 or many, against the text beside it", () => {
  // Rule 0: "<" (E "z" | B | "aaaa") ">" | E E "q"; E: "" | "e"; B: "bbbbb" | "b" B.
  const E = callNode(1);
  const B = callNode(2);
  const rules = [
    dfa(alt([concat(literal("<"), alt([concat(E, literal("z")), B, literal("aaaa")]), literal(">")), concat(E, E, literal("q"))])),
    dfa(optional(literal("e"))),
    dfa(alt([literal("bbbbb"), concat(literal("b"), B)])),
  ];
  const a = new RuleNetworkAutomaton({ rules });
  const bytes = [..."<>zaqeb"].map((c) => c.charCodeAt(0));
  const bfs = (state: number): number => fewestBytesByLayers(a, state, bytes, 20);
  // The fewest: "q" (both E empty); after "<": "z>" (E empty); after "<b": "bbbb>" through B.
  assert.equal(a.minBytesToComplete(a.start), 1);
  assert.equal(a.minBytesToComplete(a.walk(a.start, "<")), 2);
  assert.equal(a.minBytesToComplete(a.walk(a.start, "<b")), 5);
  assert.equal(a.minBytesToComplete(a.walk(a.start, "<bbb")), 3);
  assert.equal(a.minBytesToComplete(a.walk(a.start, "<a")), 4);
  assert.equal(a.minBytesToComplete(a.walk(a.start, "e")), 1);
  // And every state on the way, as a breadth-first search finds it.
  let checked = 0;
  for (const layer of layersFrom(a, a.start, bytes, 8))
    for (const state of layer) {
      assert.equal(a.minBytesToComplete(state), bfs(state));
      checked++;
    }
  assert.ok(checked > 15, `${checked}`);
});

test("completeAfterCommit is isComplete of afterCommit's state, without making it", () => {
  const net = ruleNetworkAutomaton(NETWORK);
  assert.ok(isLexerLevel(net), "the network's lexer-level automaton");
  const a = net as RuleNetworkAutomaton & LexerLevelAutomaton;
  const bytes = ALPHABET.map((ch) => ch.charCodeAt(0));
  let asked = 0,
    complete = 0;
  for (const s of strings(5)) {
    const state = a.walk(a.start, s);
    if (state < 0) continue;
    const h = a.hypotheses(state);
    for (let i = 0; i < h.length; i += 2)
      for (const b of bytes) {
        const key = a.lexerCommitKey(h[i + 1]!, b);
        if (key < 0) continue;
        const expected = a.isComplete(a.afterCommit(h[i]!, key));
        assert.equal(a.completeAfterCommit(h[i]!, key), expected, `${JSON.stringify(s)} then ${String.fromCharCode(b)}`);
        asked++;
        if (expected) complete++;
      }
  }
  assert.ok(asked > 200 && complete > 10, JSON.stringify({ asked, complete }));
});

test("lexerRow is lexerStep of every byte, the call lead's included, at every lexer state met", () => {
  const a = ruleNetworkAutomaton(NETWORK) as RuleNetworkAutomaton & LexerLevelAutomaton;
  assert.ok(isLexerLevel(a) && a.lexerRow !== undefined);
  const row = new Int32Array(256);
  const lexers = new Set<number>();
  for (const s of strings(5)) {
    const state = a.walk(a.start, s);
    if (state < 0) continue;
    const h = a.hypotheses(state);
    for (let i = 1; i < h.length; i += 2) lexers.add(h[i]!);
  }
  let commits = 0;
  for (const lex of lexers) {
    a.lexerRow!(lex, row);
    for (let b = 0; b < 256; b++) {
      assert.equal(row[b], a.lexerStep(lex, b), `lexer state ${lex}, byte ${b}`);
      if ((row[b]! & LEXER_COMMITS) !== 0) commits++;
    }
  }
  assert.ok(lexers.size >= 5 && commits > 0, JSON.stringify({ lexers: lexers.size, commits }));
});
