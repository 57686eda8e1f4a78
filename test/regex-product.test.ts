// regex/ composition: intersectDfas / subtractDfas against brute-force membership, their results'
// ByteDfa contract (canonical: equal to the compiled DFA of an equivalent pattern), limits, and
// compileRegexNode with { kind: "dfa" } nodes (concatenated, alternated, repeated), and its
// unminimized DFAs (minimal: false) and minimalDfa of them; subtractStrings against subtractDfas; sameDfa and dfaHash;
// products over call spellings (ProductCalls) against brute force with the calls expanded; the
// memo of products a schema's compiles share (ProductMemo).
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  RegexTooComplexError,
  compileRegex,
  compileRegexNode,
  dfaHash,
  intersectDfas,
  isEmptyLanguage,
  matchesBytes,
  minimalDfa,
  parseFlagString,
  parseRegex,
  ProductCallsClash,
  sameDfa,
  subtractDfas,
  subtractStrings,
  trimDfa,
  type ByteDfa,
  type ProductCalls,
  type RegexNode,
} from "../src/regex/index.js";
import { RULE_CALL_LEAD, seededRandom } from "../src/support/index.js";
import { spellingNode } from "../src/schema/marker-node.js";
import { ProductMemo } from "../src/schema/index.js";

const encoder = new TextEncoder();
const BIG = { maxDfaStates: 200_000, maxNfaStates: 2_000_000, timeoutMs: 20_000 };

/** Every string over `alphabet` up to `maxLength` characters, as bytes. */
function allStrings(alphabet: readonly string[], maxLength: number): Uint8Array[] {
  const out: string[] = [""];
  for (let i = 0; i < out.length; i++) {
    if (out[i]!.length >= maxLength) continue;
    for (const ch of alphabet) out.push(out[i]! + ch);
  }
  return out.map((s) => encoder.encode(s));
}

function randomBytes(random: () => number, count: number, pool: readonly number[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < count; i++) {
    const bytes = new Uint8Array(Math.floor(random() * 10));
    for (let j = 0; j < bytes.length; j++)
      bytes[j] = random() < 0.1 ? Math.floor(random() * 256) : pool[Math.floor(random() * pool.length)]!;
    out.push(bytes);
  }
  return out;
}

/** Random pattern over a, b, c from a small grammar. */
function randomPattern(random: () => number, depth = 0): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const atom = (): string =>
    depth < 2 && random() < 0.3 ? `(?:${randomPattern(random, depth + 1)})` : pick(["a", "b", "c", "[ab]", "[^a]", "."]);
  const quantified = (): string => atom() + pick(["", "", "*", "+", "?", "{2}", "{0,2}"]);
  const sequence = (): string => Array.from({ length: 1 + Math.floor(random() * 3) }, quantified).join("");
  return random() < 0.3 ? `${sequence()}|${sequence()}` : sequence();
}

/** The contract compileRegex's DFAs keep: live states only, BFS from 0, exact distances. */
function assertContract(dfa: ByteDfa): void {
  if (isEmptyLanguage(dfa)) {
    assert.equal(dfa.numStates, 1);
    return;
  }
  assert.equal(dfa.start, 0);
  for (let s = 0; s < dfa.numStates; s++) assert.ok(dfa.minBytesToAccept[s]! >= 0, `state ${s} is dead`);
  for (let s = 0; s < dfa.numStates; s++) {
    let best = dfa.accepting[s] === 1 ? 0 : Infinity;
    for (let c = 0; c < dfa.numClasses; c++) {
      const t = dfa.next[s * dfa.numClasses + c]!;
      if (t >= 0) best = Math.min(best, dfa.minBytesToAccept[t]! + 1);
    }
    assert.equal(dfa.minBytesToAccept[s], best);
  }
}

function checkProduct(a: ByteDfa, b: ByteDfa, inputs: readonly Uint8Array[], label: string): void {
  const both = intersectDfas(a, b, BIG);
  const onlyA = subtractDfas(a, b, BIG);
  assertContract(both);
  assertContract(onlyA);
  for (const bytes of inputs) {
    const inA = matchesBytes(a, bytes);
    const inB = matchesBytes(b, bytes);
    assert.equal(matchesBytes(both, bytes), inA && inB, `${label} ∩ on ${bytes}`);
    assert.equal(matchesBytes(onlyA, bytes), inA && !inB, `${label} − on ${bytes}`);
  }
}

test("products of random small patterns match brute force", () => {
  const random = seededRandom(7);
  const inputs = [...allStrings(["a", "b", "c"], 6), ...randomBytes(random, 200, [0x61, 0x62, 0x63, 0xc3, 0xa9])];
  for (let i = 0; i < 150; i++) {
    const p = randomPattern(random);
    const q = randomPattern(random);
    checkProduct(compileRegex(p, BIG), compileRegex(q, BIG), inputs, `${p} / ${q}`);
  }
});

test("products of larger patterns (UTF-8, counted repeats) match brute force", () => {
  const random = seededRandom(11);
  const pairs: Array<[string, string]> = [
    ["[a-zé😀]{0,12}", "(?:.*é.*){2}"],
    ["[ab]*a[ab]{5}", "[ab]*b[ab]{4}"],
    ["\\w+@\\w+\\.(?:com|org)", "[a-m]+@.*"],
    ["(?:[0-9]{1,3}\\.){3}[0-9]{1,3}", "(?:.*9.*){2,}"],
    [".*", "[^x]*x[^x]*"],
  ];
  const pool = [0x61, 0x62, 0x78, 0x40, 0x2e, 0x39, 0x30, 0xc3, 0xa9, 0xf0, 0x9f, 0x98, 0x80, 0x63, 0x6f, 0x6d];
  for (const [p, q] of pairs) {
    const inputs = [...randomBytes(random, 400, pool), ...allStrings(["a", "b", "é"], 5)];
    for (let k = 0; k < 200; k++) inputs.push(encoder.encode(`${"ab9."[k % 4]}${k}@x${k % 3 ? "" : "é"}.com`));
    checkProduct(compileRegex(p), compileRegex(q), inputs, `${p} / ${q}`);
    checkProduct(compileRegex(q), compileRegex(p), inputs, `${q} / ${p}`);
  }
});

test("products are canonical: equal to the compiled DFA of an equivalent pattern", () => {
  const same = (dfa: ByteDfa, pattern: string): void => assert.deepEqual(dfa, compileRegex(pattern), pattern);
  same(intersectDfas(compileRegex("[a-c]*"), compileRegex(".*b.*")), "[ac]*b[a-c]*");
  same(subtractDfas(compileRegex("[ab]*"), compileRegex(".*aa.*")), "(?:b|ab)*a?");
  same(subtractDfas(compileRegex("[a-z]+"), compileRegex("[a-y]*")), "[a-z]*z[a-z]*");
  same(intersectDfas(compileRegex("[0-9]+"), compileRegex("(?:..)*")), "(?:[0-9]{2})+");
  const email = compileRegex("[a-z]+@[a-z]+\\.com");
  assert.deepEqual(intersectDfas(email, email), email);
  assert.deepEqual(subtractDfas(email, compileRegex("x")), email);
});

test("a product that keeps all of a canonical DFA's language is that DFA itself, and only then", () => {
  // a is a product's result; what follows takes nothing from it, or something.
  const a = subtractDfas(compileRegex("[a-z]+(?:@[a-z]+)?"), compileRegex("[a-z]+@x"));
  assert.equal(subtractDfas(a, compileRegex("[0-9]+")), a, "b disjoint from a");
  assert.equal(intersectDfas(a, compileRegex("[a-z@]+")), a, "b holds all of a");
  assert.equal(subtractDfas(a, compileRegex("")), a, "b only the empty text, which a lacks");
  const texts = allStrings(["a", "q", "x", "@"], 5);
  const agrees = (dfa: ByteDfa, member: (t: Uint8Array) => boolean): void => {
    for (const t of texts) assert.equal(matchesBytes(dfa, t), member(t), new TextDecoder().decode(t));
  };
  const q = compileRegex("q@[a-z]+");
  const taken = subtractDfas(a, q);
  assert.notEqual(taken, a);
  agrees(taken, (t) => matchesBytes(a, t) && !matchesBytes(q, t));
  // b dead past "@": an intersection cuts a's texts with "@" away.
  const word = compileRegex("[a-z]+");
  const cut = intersectDfas(a, word);
  assert.notEqual(cut, a);
  assert.deepEqual(cut, word);
  // b accepts only some of the texts a accepts: the accepting pairs decide.
  const ends = compileRegex("[a-z@]*[a-w]");
  const some = intersectDfas(a, ends);
  assert.notEqual(some, a);
  agrees(some, (t) => matchesBytes(a, t) && matchesBytes(ends, t));
  // A DFA compiled from a pattern, or a minimal DFA made of another, is canonical too: kept as it is.
  assert.equal(subtractDfas(word, compileRegex("[0-9]+")), word);
  const minimal = minimalDfa(compileRegexNode(parseRegex("[a-z]+|[a-z]{2,}", parseFlagString("")), { minimal: false }));
  assert.equal(intersectDfas(minimal, word), minimal);
  // A DFA made by hand is not: [a-z]+ with its second letter's state apart from the first's. The
  // product is made, and is the canonical DFA of its language.
  const byteClass = new Uint8Array(256);
  for (let c = 0x61; c <= 0x7a; c++) byteClass[c] = 1;
  const loose = trimDfa({
    numStates: 3,
    start: 0,
    numClasses: 2,
    byteClass,
    next: Int32Array.from([-1, 1, -1, 2, -1, 2]),
    accepting: Uint8Array.from([0, 1, 1]),
    minBytesToAccept: Int32Array.from([1, 0, 0]),
  });
  assert.equal(loose.numStates, 3);
  const again = subtractDfas(loose, compileRegex("[0-9]+"));
  assert.notEqual(again, loose);
  assert.deepEqual(again, word);
});

/**
 * Whether `bytes` is in h(dfa), every call of rule 0 (in dfa, and in the rule's body again) read as
 * a text of the rule's body: the end positions each (DFA, state, position) reaches, memoized.
 */
function matchesWithCalls(dfa: ByteDfa, body: ByteDfa, bytes: Uint8Array): boolean {
  const step = (d: ByteDfa, s: number, b: number): number => (s < 0 ? -1 : d.next[s * d.numClasses + d.byteClass[b]!]!);
  const memo = new Map<string, Set<number>>();
  const ends = (d: ByteDfa, s: number, pos: number): Set<number> => {
    const key = `${d === body ? 1 : 0} ${s} ${pos}`;
    let out = memo.get(key);
    if (out !== undefined) return out;
    out = new Set();
    memo.set(key, out);
    if (d.accepting[s] === 1) out.add(pos);
    if (pos < bytes.length) {
      const t = step(d, s, bytes[pos]!);
      if (t >= 0) for (const e of ends(d, t, pos + 1)) out.add(e);
    }
    // A call of rule 0: the lead, then 0x00 0x00.
    const after = step(d, step(d, step(d, s, RULE_CALL_LEAD), 0), 0);
    if (after >= 0) for (const mid of ends(body, body.start, pos)) for (const e of ends(d, after, mid)) out.add(e);
    return out;
  };
  return ends(dfa, dfa.start, 0).has(bytes.length);
}

test("products over call spellings (ProductCalls) are exact, or refuse with ProductCallsClash", () => {
  // Rule 0 is a toy JSON value: x+, or a list [C, C, …] of calls of itself. Operands are random
  // sequences over a, ",", x, "[", "]", calls of the rule and lists written out as bytes. Where
  // the product takes the calls (both sides calling: a call; one side: its call read as the
  // body), h(A op B) = h(A) op h(B) on every short text, h reading each call as the rule's texts;
  // where a side could read one text two ways, it must refuse.
  const call = spellingNode(Uint8Array.of(RULE_CALL_LEAD, 0, 0));
  const flags = parseFlagString("");
  const text = (pattern: string): RegexNode => parseRegex(pattern, flags);
  const list = (item: RegexNode): RegexNode => ({
    kind: "concat",
    items: [
      text("\\["),
      {
        kind: "repeat",
        item: { kind: "concat", items: [item, { kind: "repeat", item: { kind: "concat", items: [text(","), item] }, min: 0, max: -1 }] },
        min: 0,
        max: 1,
      },
      text("\\]"),
    ],
  });
  const body = compileRegexNode({ kind: "alt", items: [text("x+"), list(call)] }, BIG);
  const calls: ProductCalls = { rule: 0, body };
  const random = seededRandom(4242);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const atom = (depth: number): RegexNode => {
    const r = random();
    if (r < 0.25) return call;
    if (r < 0.4 && depth < 2) return list(atom(depth + 1));
    return text(pick(["a", ",", "a", ",", "x", "x+", "\\[", "\\]"]));
  };
  const sequence = (depth: number): RegexNode => {
    const items: RegexNode[] = [];
    for (let i = 0, n = 1 + Math.floor(random() * 3); i < n; i++) {
      const item = depth < 1 && random() < 0.2 ? sequence(depth + 1) : atom(depth);
      const q = pick(["", "", "*", "?"]);
      items.push(q === "" ? item : { kind: "repeat", item, min: 0, max: q === "*" ? -1 : 1 });
    }
    const cat: RegexNode = { kind: "concat", items };
    return random() < 0.3 ? { kind: "alt", items: [cat, atom(depth)] } : cat;
  };
  const texts = allStrings(["a", ",", "x", "[", "]"], 5);
  let exact = 0;
  let clashes = 0;
  for (let round = 0; round < 120; round++) {
    const a = compileRegexNode(sequence(0), BIG);
    const b = compileRegexNode(sequence(0), BIG);
    for (const mode of ["intersect", "subtract"] as const) {
      let product: ByteDfa;
      try {
        product = (mode === "intersect" ? intersectDfas : subtractDfas)(a, b, BIG, calls);
      } catch (error) {
        assert.ok(error instanceof ProductCallsClash, String(error));
        clashes++;
        continue;
      }
      exact++;
      assertContract(product);
      for (const bytes of texts) {
        const inA = matchesWithCalls(a, body, bytes);
        const inB = matchesWithCalls(b, body, bytes);
        const want = mode === "intersect" ? inA && inB : inA && !inB;
        assert.equal(matchesWithCalls(product, body, bytes), want, `round ${round} ${mode} on ${new TextDecoder().decode(bytes)}`);
      }
    }
  }
  assert.ok(exact >= 80 && clashes >= 20, `both outcomes: ${exact} exact, ${clashes} refused`);
  // Each way, by hand: a call on both sides is a call of the result; a call against bytes is read
  // as the body; a call followed by what its text could go on with, or a state that both calls
  // and reads the body's first bytes, is refused.
  const node = (...items: RegexNode[]): ByteDfa => compileRegexNode({ kind: "concat", items }, BIG);
  const both = subtractDfas(node(text("a"), call), node(text("a"), call), BIG, calls);
  assert.ok(isEmptyLanguage(both));
  const against = intersectDfas(node(text("a"), call), node(text("a\\[x,\\[x*\\]\\]")), BIG, calls);
  const written = ["a[x,[]]", "a[x,[xx]]", "a[x]", "ax", "a[x,[x],x]"].map((t) => matchesWithCalls(against, body, encoder.encode(t)));
  assert.deepEqual(written, [true, true, false, false, false]);
  assert.throws(() => intersectDfas(node(call, text("x")), node(text("x+")), BIG, calls), ProductCallsClash);
  assert.throws(
    () => subtractDfas(node({ kind: "alt", items: [call, text("\\[\\]")] }), node(text("\\[\\]")), BIG, calls),
    ProductCallsClash,
  );
  // With a's calls read as fewer texts where expanded (firstBody: a minuend's free values without
  // repeated keys), a subtraction holds fewer of a's texts, never one of b's.
  const fewer: ProductCalls = { rule: 0, body, firstBody: compileRegexNode({ kind: "alt", items: [text("x"), list(call)] }, BIG) };
  let fewerChecked = 0;
  for (let round = 0; round < 60; round++) {
    const a = compileRegexNode(sequence(0), BIG);
    const b = compileRegexNode(sequence(0), BIG);
    let product: ByteDfa;
    try {
      product = subtractDfas(a, b, BIG, fewer);
    } catch (error) {
      assert.ok(error instanceof ProductCallsClash, String(error));
      continue;
    }
    fewerChecked++;
    for (const bytes of texts) {
      if (!matchesWithCalls(product, body, bytes)) continue;
      assert.ok(
        matchesWithCalls(a, body, bytes) && !matchesWithCalls(b, body, bytes),
        `round ${round} on ${new TextDecoder().decode(bytes)}`,
      );
    }
  }
  assert.ok(fewerChecked >= 20, `${fewerChecked} subtractions with firstBody`);
  // Where a's call meets b's text, it is read as firstBody: "axx" is a's (a C) but not as firstBody reads it.
  const fewerAgainst = subtractDfas(node(text("a"), call), node(text("axq")), BIG, fewer);
  assert.deepEqual(
    ["ax", "axx", "a[x]"].map((t) => matchesWithCalls(fewerAgainst, body, encoder.encode(t))),
    [true, false, true],
  );
});

test("empty products are valid DFAs, not errors", () => {
  const empty = [
    intersectDfas(compileRegex("a+"), compileRegex("b+")),
    subtractDfas(compileRegex("[ab]+"), compileRegex(".*")),
    intersectDfas(compileRegex("a"), compileRegex("")),
  ];
  for (const dfa of empty) {
    assert.ok(isEmptyLanguage(dfa));
    assert.equal(dfa.numStates, 1);
    assert.equal(matchesBytes(dfa, new Uint8Array()), false);
  }
  // The empty language composes further.
  const none = empty[0]!;
  assert.ok(isEmptyLanguage(intersectDfas(compileRegex(".*"), none)));
  assert.deepEqual(subtractDfas(compileRegex("ab"), none), compileRegex("ab"));
  assert.ok(isEmptyLanguage(compileRegexNode({ kind: "dfa", dfa: none })));
});

test("a product past maxDfaStates or the time limit throws RegexTooComplexError", () => {
  // The last 8 bytes and the count of a mod 13: 515 states.
  const a = compileRegex("[ab]*a[ab]{7}", BIG);
  const b = compileRegex("b*(?:(?:ab*){13})*", BIG);
  const full = intersectDfas(a, b, BIG);
  assert.ok(full.numStates > 400);
  assert.throws(
    () => intersectDfas(a, b, { maxDfaStates: 400 }),
    (err: unknown) => err instanceof RegexTooComplexError && err.limit === "dfaStates" && /more than 400 states/.test(err.message),
  );
  assert.throws(
    () => subtractDfas(a, b, { maxDfaStates: 400 }),
    (err: unknown) => err instanceof RegexTooComplexError && err.limit === "dfaStates",
  );
  assert.throws(
    () => intersectDfas(a, b, { maxDfaStates: 1_000_000, timeoutMs: 0 }),
    (err: unknown) => err instanceof RegexTooComplexError && err.limit === "time",
  );
});

const set = (chars: string): RegexNode => ({ kind: "set", set: [...chars].flatMap((ch) => [ch.codePointAt(0)!, ch.codePointAt(0)!]) });

/** Whether `s` splits into between min and max (-1: any number of) parts each in `part`. */
function splits(s: string, part: (piece: string) => boolean, min: number, max: number): boolean {
  // counts[i]: the numbers of parts that can cover s[0..i), past `min` only up to `max`.
  const counts: Set<number>[] = Array.from({ length: s.length + 1 }, () => new Set<number>());
  counts[0]!.add(0);
  for (let i = 0; i <= s.length; i++)
    for (const n of counts[i]!) {
      if (max !== -1 && n >= max) continue;
      for (let j = i + 1; j <= s.length; j++) if (part(s.slice(i, j))) counts[j]!.add(max === -1 ? Math.min(n + 1, min) : n + 1);
    }
  return [...counts[s.length]!].some((n) => n >= min);
}

test("dfa nodes: concatenation, alternation and repeats match brute force", () => {
  const X = compileRegex("[a-c]+x|é");
  const inX = (s: string): boolean => /^(?:[a-c]+x|é)$/u.test(s);
  const node: RegexNode = { kind: "dfa", dfa: X };
  const inputs = allStrings(["a", "x", "!", "é"], 6).map((b) => new TextDecoder().decode(b));
  const cases: Array<[RegexNode, (s: string) => boolean]> = [
    [{ kind: "concat", items: [node, set("!")] }, (s) => s.endsWith("!") && inX(s.slice(0, -1))],
    [{ kind: "concat", items: [set("!"), node, node] }, (s) => s.startsWith("!") && splits(s.slice(1), inX, 2, 2)],
    [{ kind: "alt", items: [node, set("!")] }, (s) => s === "!" || inX(s)],
    [{ kind: "repeat", item: node, min: 1, max: 3 }, (s) => splits(s, inX, 1, 3)],
    [{ kind: "repeat", item: node, min: 0, max: -1 }, (s) => s === "" || splits(s, inX, 1, -1)],
    [
      { kind: "repeat", item: { kind: "concat", items: [node, set("!")] }, min: 2, max: -1 },
      (s) => splits(s, (p) => p.endsWith("!") && inX(p.slice(0, -1)), 2, -1),
    ],
  ];
  for (const [n, oracle] of cases) {
    const dfa = compileRegexNode(n);
    assertContract(dfa);
    for (const s of inputs)
      assert.equal(matchesBytes(dfa, encoder.encode(s)), oracle(s), `${JSON.stringify(n).slice(0, 80)} on ${JSON.stringify(s)}`);
  }
  // A dfa node alone compiles back to the same DFA.
  assert.deepEqual(compileRegexNode(node), X);
});

test("a dfa node keeps the gaps between the byte ranges of one transition", () => {
  // 'a' and 'c' (and two lead bytes) share a class and a target; 'b' between them does not.
  const gaps = compileRegexNode({ kind: "repeat", item: { kind: "dfa", dfa: compileRegex("[ac]|[é😀]") }, min: 0, max: -1 });
  for (const bytes of allStrings(["a", "b", "c", "é", "ÿ", "😀", "😂"], 4)) {
    const s = new TextDecoder().decode(bytes);
    assert.equal(matchesBytes(gaps, bytes), /^[acé😀]*$/u.test(s), JSON.stringify(s));
  }
});

test("a dfa node's class of several byte runs stays one class of the DFA around it", () => {
  // [a-cx-z] is one class of the embedded DFA (a string's characters around '"' and '\\' are
  // such a class); as the byte ranges of its edges it would be two classes of the unminimized DFA
  // around it, whose classes are not merged afterwards.
  const letters = compileRegex("[a-cx-z]+");
  assert.equal(letters.numClasses, 2);
  const around = compileRegexNode(
    { kind: "concat", items: [{ kind: "dfa", dfa: letters }, parseRegex("!", parseFlagString(""))] },
    { minimal: false },
  );
  assert.equal(around.numClasses, 3); // [a-cx-z], '!', the rest
  for (const text of ["ax!", "zzb!", "d!", "a", "!", "aa!!"])
    assert.equal(matchesBytes(around, encoder.encode(text)), /^[a-cx-z]+!$/.test(text), text);
});

test("a dfa node is matched at the byte level, with no UTF-8 decoding", () => {
  // A hand-made DFA for the strings of bytes 0xff (not UTF-8, so no pattern could say it).
  const byteClass = new Uint8Array(256);
  byteClass[0xff] = 1;
  const ffs: ByteDfa = {
    numStates: 1,
    start: 0,
    numClasses: 2,
    byteClass,
    next: Int32Array.of(-1, 0),
    accepting: Uint8Array.of(1),
    minBytesToAccept: Int32Array.of(0),
  };
  const dfa = compileRegexNode({ kind: "concat", items: [set("<"), { kind: "dfa", dfa: ffs }, set(">")] });
  assert.equal(matchesBytes(dfa, Uint8Array.of(0x3c, 0x3e)), true);
  assert.equal(matchesBytes(dfa, Uint8Array.of(0x3c, 0xff, 0xff, 0x3e)), true);
  assert.equal(matchesBytes(dfa, Uint8Array.of(0x3c, 0xff, 0xfe, 0x3e)), false);
  assert.equal(matchesBytes(dfa, Uint8Array.of(0x3c, 0xc3, 0xbf, 0x3e)), false); // "ÿ" is U+00FF, two bytes
  // Products read such DFAs byte by byte too: only "" is both a run of 0xff and UTF-8 "".
  assert.deepEqual(intersectDfas(ffs, compileRegex("")), compileRegex(""));
  assert.equal(subtractDfas(compileRegex(""), ffs).numStates, 1);
});

test("compileRegexNode keeps compileRegex's limits and returns empty languages", () => {
  const X = compileRegex("[a-z]{1,20}");
  assert.throws(
    () => compileRegexNode({ kind: "repeat", item: { kind: "dfa", dfa: X }, min: 0, max: 100_000 }),
    (err: unknown) => err instanceof RegexTooComplexError && err.limit === "nfaStates",
  );
  assert.throws(
    () =>
      compileRegexNode(
        {
          kind: "concat",
          items: [{ kind: "repeat", item: set("ab"), min: 0, max: -1 }, set("a"), { kind: "repeat", item: set("ab"), min: 12, max: 12 }],
        },
        { maxDfaStates: 100 },
      ),
    (err: unknown) => err instanceof RegexTooComplexError && err.limit === "dfaStates",
  );
  const empty = compileRegexNode({ kind: "set", set: [] });
  assert.ok(isEmptyLanguage(empty));
});

test("compileRegexNode with minimal: false keeps the language, the contract and exact distances", () => {
  const random = seededRandom(23);
  const inputs = [...allStrings(["a", "b", "c"], 5), ...randomBytes(random, 100, [0x61, 0x62, 0x63, 0xc3, 0xa9])];
  const flags = parseFlagString("");
  let larger = 0;
  for (let i = 0; i < 150; i++) {
    const p = randomPattern(random);
    const node = parseRegex(p, flags);
    const minimal = compileRegexNode(node, BIG);
    const raw = compileRegexNode(node, { ...BIG, minimal: false });
    // Live states only, breadth-first from 0, each state's distance exact.
    assertContract(raw);
    assert.ok(raw.numStates >= minimal.numStates, p);
    if (raw.numStates > minimal.numStates) larger++;
    for (const bytes of inputs) assert.equal(matchesBytes(raw, bytes), matchesBytes(minimal, bytes), `${p} on ${bytes}`);
    // Products are canonical, so the unminimized DFA's product with itself is the minimal one,
    // and so is its minimization.
    assert.deepEqual(intersectDfas(raw, raw, BIG), minimal, p);
    assert.deepEqual(minimalDfa(raw, BIG), minimal, p);
  }
  // The option takes effect: some of these are left bigger than minimal.
  assert.ok(larger > 10, `${larger} of 150 unminimized`);
  // With assertions the DFA is finished anyway (the NFA's distances do not hold there).
  const anchored = parseRegex("(?:ab|cb)$|x(?=y)y", flags);
  assert.deepEqual(compileRegexNode(anchored, { minimal: false }), compileRegexNode(anchored));
  // Many threads moving on few of many classes (the construction's sparse states), and on many,
  // against JavaScript's own RegExp.
  const words = ["apple7", "avocado0", "banana9", "cherry", "date5", "qx", "k1z", "k3z", "qabz", "qqz", "zb", "ab", "yc", "zc", "d"];
  const texts = [
    ...words,
    ...words.map((w) => w.slice(1)),
    ...allStrings(["a", "b", "k", "q", "x", "z", "1", "c", "d"], 3).map((b) => new TextDecoder().decode(b)),
  ];
  for (const p of ["(?:apple|avocado|banana|cherry|date)[0-9]|[a-z]{2}x", "(?:k1|k2|k3|q[^q]*)z", "[^a]b|[a-y]c|d"]) {
    const raw = compileRegexNode(parseRegex(p, flags), { ...BIG, minimal: false });
    const js = new RegExp(`^(?:${p})$`);
    for (const text of texts) assert.equal(matchesBytes(raw, encoder.encode(text)), js.test(text), `${p} on ${text}`);
  }
  // A state past "a" and one past "c" are one state of the minimal DFA, two of the other.
  const twoWays = parseRegex("ab|cb", flags);
  assert.equal(compileRegexNode(twoWays).numStates, 3);
  assert.equal(compileRegexNode(twoWays, { minimal: false }).numStates, 4);
  // An empty language stays the one-state empty DFA.
  assert.ok(isEmptyLanguage(compileRegexNode({ kind: "concat", items: [set("a"), { kind: "set", set: [] }] }, { minimal: false })));
});

test("sameDfa compares tables, not objects; dfaHash agrees with it", () => {
  const flags = parseFlagString("");
  const a = compileRegexNode(parseRegex("ab|cd+", flags));
  const b = compileRegexNode(parseRegex("cd+|ab", flags));
  assert.notEqual(a, b);
  assert.ok(sameDfa(a, b));
  assert.equal(dfaHash(a), dfaHash(b));
  // One transition, one accepting flag or the start apart: another DFA.
  const next = a.next.slice();
  const i = next.findIndex((t) => t >= 0);
  next[i] = -1;
  assert.ok(!sameDfa(a, { ...a, next }));
  assert.ok(!sameDfa(a, { ...a, accepting: a.accepting.map((x) => 1 - x) }));
  assert.ok(!sameDfa(a, { ...a, start: 1 }));
  assert.ok(!sameDfa(a, compileRegexNode(parseRegex("ab|ce+", flags))));
});

test("dfa nodes are stepped through their own tables: random embeddings equal the pattern's DFA", () => {
  // determinize reads an embedded DFA's table and distances instead of copying its edges into the
  // NFA (nfa.ts, emitDfa), and writes them out as edges where the NFA has assertions.
  const random = seededRandom(41);
  const flags = parseFlagString("");
  const embed = (p: string, minimal: boolean): RegexNode => ({
    kind: "dfa",
    dfa: compileRegexNode(parseRegex(p, flags), { ...BIG, minimal }),
  });
  let compared = 0;
  for (let i = 0; i < 80; i++) {
    const [p, q] = [randomPattern(random), randomPattern(random)];
    const [a, b] = [embed(p, random() < 0.5), embed(q, random() < 0.5)];
    const shapes: Array<[RegexNode, string]> = [
      [{ kind: "concat", items: [a, b] }, `(?:${p})(?:${q})`],
      [{ kind: "repeat", item: { kind: "alt", items: [a, b] }, min: 0, max: -1 }, `(?:${p}|${q})*`],
      [{ kind: "concat", items: [{ kind: "repeat", item: a, min: 1, max: 2 }, set("c"), b] }, `(?:${p}){1,2}c(?:${q})`],
      // An assertion beside them: the blocks are written out as edges.
      [{ kind: "concat", items: [a, parseRegex("(?:b$|c)", flags), b] }, `(?:${p})(?:b$|c)(?:${q})`],
    ];
    for (const [node, text] of shapes) {
      let expected: ByteDfa;
      try {
        expected = compileRegexNode(parseRegex(text, flags), { ...BIG, maxDfaStates: 1000 });
      } catch (error) {
        if (error instanceof RegexTooComplexError) continue; // a few repeats of repeats blow up
        throw error;
      }
      assert.deepEqual(compileRegexNode(node, BIG), expected, text);
      const raw = compileRegexNode(node, { ...BIG, minimal: false });
      assertContract(raw);
      assert.deepEqual(intersectDfas(raw, raw, BIG), expected, `${text} (minimal: false)`);
      compared++;
    }
  }
  assert.ok(compared > 250, `${compared} of 320 compared`);
});

test("trimDfa keeps a hand-built DFA's live reachable states with exact distances", () => {
  // States: 0 -a-> 1 (accepting), 0 -b-> 2 (dead: no way to accept), 3 unreachable; distances wrong.
  const byteClass = new Uint8Array(256);
  byteClass[0x61] = 1;
  byteClass[0x62] = 2;
  const next = Int32Array.from([-1, 1, 2, -1, 1, -1, -1, 2, 2, -1, 1, -1]);
  const raw: ByteDfa = {
    numStates: 4,
    start: 0,
    numClasses: 3,
    byteClass,
    next,
    accepting: Uint8Array.from([0, 1, 0, 1]),
    minBytesToAccept: new Int32Array(4),
  };
  const trimmed = trimDfa(raw);
  assertContract(trimmed);
  assert.equal(trimmed.numStates, 2);
  for (const text of ["", "a", "aa", "b", "ab", "aab"]) assert.equal(matchesBytes(trimmed, encoder.encode(text)), /^a+$/.test(text), text);
  assert.deepEqual(compileRegexNode({ kind: "dfa", dfa: trimmed }), compileRegex("a+"));
});

test("subtractStrings: a DFA minus a finite set of strings, as subtractDfas by their literal DFA", () => {
  const random = seededRandom(31);
  const inputs = [...allStrings(["a", "b", "c"], 5), ...randomBytes(random, 100, [0x61, 0x62, 0x63, 0x22, 0xc3, 0xa9])];
  const words = ["", "a", "b", "ab", "abc", "ba", "cab", "aaaa", "bcbc", "é", "x", "abab"];
  for (let i = 0; i < 150; i++) {
    const a = compileRegex(randomPattern(random), BIG);
    // Some strings in a, some not, prefixes of one another, repeats.
    const picked = words.filter(() => random() < 0.4);
    if (random() < 0.3) picked.push(picked[0] ?? "a");
    const strings = picked.map((w) => encoder.encode(w));
    const direct = subtractStrings(a, strings, BIG);
    assertContract(direct);
    const literals =
      picked.length === 0
        ? null
        : compileRegex(
            picked.map((w) => w.replace(/[^a-z]/g, (ch) => `\\${ch}`)),
            BIG,
          );
    const expected = literals === null ? a : subtractDfas(a, literals, BIG);
    for (const bytes of inputs) assert.equal(matchesBytes(direct, bytes), matchesBytes(expected, bytes), `${picked} on ${bytes}`);
    // Same language: its canonical form (a product with itself) is the product's.
    assert.deepEqual(intersectDfas(direct, direct, BIG), expected, String(picked));
  }
  // Subtries alike are one state: "xa" and "ya" leave the same state of [xy]a* minus the same "".
  const xy = compileRegex("[xy]a*");
  assert.equal(subtractStrings(xy, [encoder.encode("xa"), encoder.encode("ya")]).numStates, compileRegex("[xy](?:|aa+)").numStates);
  // Everything removed: the empty DFA.
  assert.ok(isEmptyLanguage(subtractStrings(compileRegex("a|bc"), [encoder.encode("a"), encoder.encode("bc")])));
  assert.throws(
    () =>
      subtractStrings(
        compileRegex("[a-z]*"),
        ["abcdefghij", "klmnopqrst"].map((w) => encoder.encode(w)),
        { maxDfaStates: 10 },
      ),
    (err: unknown) => err instanceof RegexTooComplexError && err.limit === "dfaStates",
  );
});

test("ProductMemo finds a product again by its operands' tables and the calls it read, and by nothing less", () => {
  // The memo of products a schema's compiles share (compileServedSchema's forms): a product read
  // over other calls (a minuend's calls expanded as fewer texts) holds other texts, so it must
  // not be found for them; operands made again with the same tables are the same operands.
  const flags = parseFlagString("");
  const call = spellingNode(Uint8Array.of(RULE_CALL_LEAD, 0, 0));
  const node = (...items: RegexNode[]): ByteDfa => compileRegexNode({ kind: "concat", items }, BIG);
  const body = compileRegexNode(parseRegex("x+|y", flags), BIG);
  const calls: ProductCalls = { rule: 0, body };
  const fewer: ProductCalls = { rule: 0, body, firstBody: compileRegexNode(parseRegex("x", flags), BIG) };
  const a = node(parseRegex("a", flags), call);
  const b = node(parseRegex("axx", flags));
  const wide = subtractDfas(a, b, BIG, calls);
  const narrow = subtractDfas(a, b, BIG, fewer);
  assert.ok(!sameDfa(wide, narrow), "firstBody changes this product");
  const memo = new ProductMemo();
  memo.keep("subtract", a, b, calls, wide, 7);
  const again = { a: node(parseRegex("a", flags), call), b: node(parseRegex("axx", flags)) };
  assert.notEqual(again.a, a);
  assert.equal(memo.find("subtract", again.a, again.b, { rule: 0, body: compileRegexNode(parseRegex("x+|y", flags), BIG) })?.result, wide);
  assert.equal(memo.find("subtract", a, b, fewer), null);
  assert.equal(memo.find("subtract", a, b, undefined), null);
  assert.equal(memo.find("intersect", a, b, calls), null);
  assert.equal(memo.find("subtract", b, a, calls), null);
  assert.equal(memo.find("subtract", a, b, { rule: 1, body }), null);
  memo.keep("subtract", a, b, fewer, narrow, 7);
  assert.equal(memo.find("subtract", a, b, fewer)?.result, narrow);
  assert.equal(memo.find("subtract", a, b, calls)?.result, wide);
  // Room for two products: a compile keeps what fits and no more; the next one's products take
  // the place of the earlier compile's, oldest first, as a memo of its own would have kept them.
  const bytes = (x: ByteDfa, y: ByteDfa, z: ByteDfa): number => x.next.byteLength + y.next.byteLength + z.next.byteLength;
  const small = new ProductMemo(bytes(a, b, wide) + bytes(a, b, narrow));
  small.begin();
  small.keep("subtract", a, b, calls, wide, 7);
  small.keep("subtract", a, b, fewer, narrow, 7);
  const both = intersectDfas(a, b, BIG, calls);
  small.keep("intersect", a, b, calls, both, 7);
  assert.equal(small.find("intersect", a, b, calls), null, "past the bytes, nothing more is kept");
  assert.equal(small.find("subtract", a, b, calls)?.result, wide);
  small.begin();
  small.keep("intersect", a, b, calls, both, 7);
  assert.equal(small.find("intersect", a, b, calls)?.result, both);
  assert.equal(small.find("subtract", a, b, calls), null, "the oldest product made room");
  assert.equal(small.find("subtract", a, b, fewer)?.result, narrow);
  // Work: free where the compile took the product itself; an earlier compile's is charged what
  // taking it counted, once, as a memo of the compile's own would then hold it.
  assert.equal(small.find("intersect", a, b, calls)?.work, 0);
  small.begin();
  assert.equal(small.find("intersect", a, b, calls)?.work, 7);
  assert.equal(small.find("intersect", a, b, calls)?.work, 0);
});
