// Differential test of every specialised (hand-inlined) trie walk in src/constraint/ against the
// generic `walkTrie` (src/constraint/walk.ts), over random DFAs, regexes built to hit the shapes
// the walks specialise (self-loops such as [a-z]*, string bodies "[^"\\]*", free text .*, states
// in front of a loop), random small vocabularies with and without all 256 byte tokens, a real
// vocabulary (gpt-2, skipped when the file is missing), and Lark grammars for the lexer walks.
//
// The walks (file: function — contract checked here):
//   dfa/walks.ts: walkFullMask — OR-sets the live tokens' bits; scalars: count, distinct successors
//     (successorScratch), their max minBytesToAccept, the first `words` ids in trie order (narrowIds)
//     and their FNV hash; with onlyBytes, only the subtrees of those first bytes.
//   dfa/walks.ts: walkComplementMask — clears the dead tokens of an all-generable mask; same scalars.
//   dfa/walks.ts: exceptionComplementMask (+ listedTokens) — the same by the per-ASCII-byte token
//     lists; false and the mask untouched when the lists are too long.
//   dfa/walks.ts: entryComplementMask — a state's full mask built from every token via a loop's
//     lists plus walks of the first bytes that lead elsewhere; null when too costly.
//   dfa/walks.ts: chainComplementMask — a counted run's position (`[^"]{0,40}`): every token off
//     the lists and no longer than the run ends that many positions on; the rest stepped.
//   dfa/walks.ts: subtreeLoopsOn (and DfaTokenMatcher.subtreeLoops) — when true, every token below
//     the node, read from after it, leads the state back to itself (a sufficient condition).
//   dfa/matcher.ts: DfaTokenMatcher.subtreeSpans — (from, to, target) spans of the tokens of a
//     node's subtree (tokens at the root itself stay in the state); also reached through
//     DfaConstraintState's forced prefix (state.ts) and DfaBudgets.keepMinorSpans (budget.ts).
//   dfa/sharing.ts: derivationBase + clearRedone + walkFullMask(redo) — a derived full mask.
//   dfa/budget.ts: DfaBudgets.walkFitting — the tokens whose target is marked in fitMark; and the
//     minor-span fix-up of the full mask — both checked against walkTrie's targets filtered by the
//     exact token distance (brute force).
//   grammar/lexer-walks.ts: LexerLevelWalks.rootWalk / subWalk (walkFrom, startsBelow, hasByteBelow)
//     and maskOf — composed per hypothesis, the commit-free tokens per continuation set plus the
//     commit groups (dead/alive ends, loop ranges, walks below the commit nodes) give, token by
//     token, exactly the hypotheses of walkTrie's target over the GrammarAutomaton.
//   grammar/matcher.ts: GrammarTokenMatcher.prefixEdges — the tokens below the forced prefix's node
//     with their targets.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import {
  DfaConstraintState,
  DfaTokenMatcher,
  GrammarConstraintState,
  GrammarTokenMatcher,
  TokenTrie,
  tokenTrieFor,
  walkTrie,
  WorkMeter,
  type ByteAutomaton,
  type ByteDfa,
  type VocabularyBytes,
} from "../src/constraint/index.js";
import {
  type DfaWalkContext,
  entryComplementMask,
  exceptionComplementMask,
  subtreeLoopsOn,
  walkComplementMask,
  walkFullMask,
} from "../src/constraint/dfa/walks.js";
import { MaskSharing } from "../src/constraint/dfa/sharing.js";
import { everyUtf8CharLeadsTo } from "../src/constraint/trie.js";
import { applyWalkTokens, type CommitGroup, LexerLevelWalks } from "../src/constraint/grammar/lexer-walks.js";
import { MATCHER_SLAB_BYTES } from "../src/constraint/grammar/tables.js";
import { compileGrammar, createGrammarAutomaton, type GrammarAutomaton, LEXER_COMMITS } from "../src/grammar/index.js";
import { compileRegex } from "../src/regex/index.js";
import { maskWords, setBits, TableSlab } from "../src/support/index.js";
import { loadVocabulary, TokenKind } from "../src/vocab/index.js";
import {
  ARITHMETIC_GRAMMAR,
  bruteMinTokens,
  bruteTransitions,
  finishDfa,
  makeVocab,
  randomDfa,
  rng,
  singleByteTokens,
} from "./support/constraint-fixtures.js";
import { REPO_ROOT, vocabFile } from "./support/paths.js";

// ---------------------------------------------------------------------------------------------
// Coverage: every walk must have been compared at least once (a test fails otherwise).

const cases = new Map<string, number>();
const hit = (walk: string, n = 1): void => {
  cases.set(walk, (cases.get(walk) ?? 0) + n);
};
function requireExercised(walks: readonly string[], t?: { diagnostic(message: string): void }): void {
  t?.diagnostic(walks.map((w) => `${w}: ${cases.get(w) ?? 0}`).join("; "));
  const missing = walks.filter((w) => (cases.get(w) ?? 0) === 0);
  assert.deepEqual(missing, [], `walks never exercised: ${missing.join(", ")}`);
}

/**
 * Self-check of the harness (the test must be able to fail): when set, the named walk's output is
 * corrupted inside the harness (one mask bit flipped, or one span's target changed) before the
 * comparison. `TRIE_WALKS_SABOTAGE=walkFullMask node --import tsx --test test/constraint-trie-walks.test.ts`
 * must then fail.
 */
const SABOTAGE = process.env.TRIE_WALKS_SABOTAGE ?? "";
function sabotageMask(walk: string, mask: Uint32Array, trie: TokenTrie): void {
  if (SABOTAGE !== walk || trie.numTokens === 0) return;
  const id = trie.tokenIds[0]!;
  mask[id >>> 5]! ^= 1 << (id & 31);
}

// ---------------------------------------------------------------------------------------------
// References from walkTrie.

const dfaStep = (dfa: ByteDfa, s: number, b: number): number => (s < 0 ? -1 : dfa.next[s * dfa.numClasses + dfa.byteClass[b]!]!);
const dfaAutomaton = (dfa: ByteDfa): ByteAutomaton => ({ step: (s, b) => dfaStep(dfa, s, b) });

interface WalkRef {
  mask: Uint32Array;
  count: number;
  /** Per trie position k (tokenIds[k]), the state after its bytes, or -1 when not reached. */
  posTarget: Int32Array;
  /** Reached ids in visit (trie) order. */
  order: number[];
  targets: Set<number>;
  /** Trie nodes walkTrie stepped (no subtree taken at once): a walk that steps fewer took one. */
  steps: number;
}

function refWalk(trie: TokenTrie, automaton: ByteAutomaton, state: number, root = 0): WalkRef {
  const meter = new WorkMeter();
  const mask = new Uint32Array(maskWords(trie.vocabSize));
  const posTarget = new Int32Array(trie.numTokens).fill(-1);
  const order: number[] = [];
  const targets = new Set<number>();
  const count = walkTrie(
    trie,
    automaton,
    state,
    root,
    mask,
    (from, to, target) => {
      for (let k = from; k < to; k++) {
        posTarget[k] = target;
        order.push(trie.tokenIds[k]!);
      }
      targets.add(target);
    },
    meter,
  );
  return { mask, count, posTarget, order, targets, steps: meter.steps };
}

/** Per token id, the target (-1: not allowed), from a walk from the root. */
function targetsById(trie: TokenTrie, ref: WalkRef): Int32Array {
  const out = new Int32Array(trie.vocabSize).fill(-1);
  for (let k = 0; k < trie.numTokens; k++) out[trie.tokenIds[k]!] = ref.posTarget[k]!;
  return out;
}

function maskMismatches(actual: Uint32Array, expected: Uint32Array, limit = 5): number[] {
  const out: number[] = [];
  for (let w = 0; w < expected.length && out.length < limit; w++) {
    let x = (actual[w]! ^ expected[w]!) >>> 0;
    while (x !== 0 && out.length < limit) {
      const low = x & -x;
      out.push(w * 32 + 31 - Math.clz32(low));
      x ^= low;
    }
  }
  return out;
}

const maxMinBytesOf = (dfa: ByteDfa, targets: Iterable<number>): number => {
  let m = 0;
  for (const t of targets) m = Math.max(m, dfa.minBytesToAccept[t]!);
  return m;
};

const sortedList = (xs: Iterable<number>): number[] => [...xs].sort((a, b) => a - b);

function fnv(ids: readonly number[], n: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < n; i++) h = Math.imul(h ^ ids[i]!, 0x01000193);
  return h | 0;
}

/** Asserts a walk's scalars (count, successors, their max byte distance) against a reference. */
function assertScalars(c: DfaWalkContext, dfa: ByteDfa, count: number, targets: Set<number>, label: string): void {
  assert.equal(c.scalars[1], count, `${label}: token count`);
  const succ = Array.from(c.successorScratch.subarray(0, c.scalars[2]!));
  assert.equal(new Set(succ).size, succ.length, `${label}: successors listed twice: ${succ}`);
  assert.deepEqual(sortedList(succ), sortedList(targets), `${label}: successor states`);
  assert.equal(c.scalars[3], maxMinBytesOf(dfa, targets), `${label}: max successor byte distance`);
}

// ---------------------------------------------------------------------------------------------
// Inputs: vocabularies, DFAs, grammars.

const WORD_LETTERS = "etaoinshrdlucmfwypvbgkjqxz";
const FRAGMENTS = [
  '"',
  "\\",
  '\\"',
  "\\n",
  '":',
  '", "',
  '{"',
  '": "',
  "}",
  "{",
  "[",
  "]",
  ",",
  ", ",
  " ",
  "  ",
  "\n",
  "\n\n",
  "\t",
  "\r\n",
  "0",
  "1",
  "12",
  "3.5",
  "-",
  "e+",
  "true",
  "false",
  "null",
  "nul",
  "é",
  "ü",
  "日本",
  "中",
  "😀",
  "aé",
  " the",
  " a",
  "'",
  "'x'",
  "<>",
  "<=",
  ">=",
  "=",
  "*",
  "(",
  ")",
  ";",
  "+",
  "#",
  "SELECT",
  " FROM",
  "select",
  " WHERE",
  "AND",
  "let",
  "print",
  "!",
  "?",
  ".",
];
const PARTIAL_UTF8 = [[0xc3], [0xe6, 0x97], [0xa9], [0x80], [0xf0, 0x9f], [0x98, 0x80], [0xff], [0xe4, 0xb8]];

function randomWord(rand: () => number, min: number, max: number): string {
  const len = min + Math.floor(rand() * (max - min + 1));
  let w = "";
  // Skewed towards the first letters, so words share prefixes and subtrees grow past 8 nodes.
  for (let i = 0; i < len; i++) w += WORD_LETTERS[Math.floor(rand() * rand() * WORD_LETTERS.length)]!;
  return w;
}

function randomPiece(rand: () => number, wordRate: number): string | Uint8Array {
  const u = rand();
  if (u < wordRate) {
    const w = randomWord(rand, 1, rand() < 0.15 ? 14 : 7);
    const form = rand();
    return form < 0.3 ? ` ${w}` : form < 0.4 ? w[0]!.toUpperCase() + w.slice(1) : w;
  }
  // The rest as in the default mix (wordRate 0.45).
  const r = 0.45 + ((u - wordRate) / (1 - wordRate)) * 0.55;
  if (r < 0.72) return FRAGMENTS[Math.floor(rand() * FRAGMENTS.length)]!;
  if (r < 0.85) {
    // Tokens across terminal boundaries (several commits inside one token).
    const a = FRAGMENTS[Math.floor(rand() * FRAGMENTS.length)]!;
    const b = rand() < 0.5 ? FRAGMENTS[Math.floor(rand() * FRAGMENTS.length)]! : randomWord(rand, 1, 4);
    return a + b;
  }
  if (r < 0.9) return Uint8Array.from(PARTIAL_UTF8[Math.floor(rand() * PARTIAL_UTF8.length)]!);
  return String(Math.floor(rand() * 1000));
}

/** A random vocabulary: words, fragments, multi-byte and partial UTF-8, duplicates, a few non-generable tokens. */
function randomVocab(rand: () => number, size: number, byteTokens: boolean, wordRate = 0.45): VocabularyBytes {
  const tokens: (string | Uint8Array)[] = [];
  const kinds: number[] = [];
  for (let i = 0; i < size; i++) {
    if (i > 0 && rand() < 0.04)
      tokens.push(tokens[Math.floor(rand() * tokens.length)]!); // same bytes, another id
    else tokens.push(randomPiece(rand, wordRate));
    kinds.push(TokenKind.Normal);
  }
  tokens.push("<s>", "");
  kinds.push(TokenKind.Control, TokenKind.Normal);
  if (byteTokens) {
    for (let b = 0; b < 256; b++) {
      tokens.push(Uint8Array.of(b));
      kinds.push(rand() < 0.5 ? TokenKind.Byte : TokenKind.Normal);
    }
  }
  // Shuffle ids, so that trie order differs from id order.
  const perm = [...tokens.keys()];
  for (let i = perm.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [perm[i], perm[j]] = [perm[j]!, perm[i]!];
  }
  return makeVocab(
    perm.map((i) => tokens[i]!),
    perm.map((i) => kinds[i]!),
  );
}

const HEADS = ["", "", '"', "x", "ab", " ", "[a-z]", "[A-Z]?", '[^"\\\\]'];
const BODIES = [
  "[a-z]*",
  "[a-z]+",
  '[^"\\\\]*',
  ".*",
  "[^\\n]+",
  "[a-z ]*",
  "[0-9]{0,3}",
  "(ab|cd)*",
  '[^"]+',
  '(\\\\.|[^"\\\\])*',
  "[ -~]*",
  "[a-z]{2,5}",
];
const TAILS = ["", "", '"', "!", "[0-9]", "\\n", "x?", "[a-z]"];

function randomPattern(rand: () => number): string {
  const one = (): string =>
    HEADS[Math.floor(rand() * HEADS.length)]! + BODIES[Math.floor(rand() * BODIES.length)]! + TAILS[Math.floor(rand() * TAILS.length)]!;
  const r = rand();
  if (r < 0.2) return `${one()}|${one()}`;
  if (r < 0.35) return one() + one();
  return one();
}

/** The matcher's walk context (private): the walks are called directly with the matcher's own tables. */
const contextOf = (m: DfaTokenMatcher): DfaWalkContext => (m as unknown as { walkContext: DfaWalkContext }).walkContext;

interface BudgetsInternals {
  fitMark: Uint8Array;
  maskCount: number;
  walkFitting(state: number): Uint32Array;
  budgetMask(state: number, limit: number, full: Uint32Array): Uint32Array;
}
const budgetsOf = (m: DfaTokenMatcher): BudgetsInternals => (m as unknown as { budgets: BudgetsInternals }).budgets;

// ---------------------------------------------------------------------------------------------
// DFA walks, called directly.

function checkDirectDfaWalks(dfa: ByteDfa, trie: TokenTrie, rand: () => number, label: string, refs: WalkRef[]): void {
  const matcher = new DfaTokenMatcher(trie, dfa);
  const c = contextOf(matcher);
  const auto = dfaAutomaton(dfa);
  const n = dfa.numStates;
  const words = maskWords(trie.vocabSize);
  for (let s = 0; s < n; s++) if (c.loopKind[s] === 0) matcher.computeLoop(s);
  const loops: number[] = [];
  for (let s = 0; s < n; s++) if (c.multibyteLoop[s] === 1) loops.push(s);
  // Trie positions' first bytes (for onlyBytes references).
  const firstByte = new Uint8Array(trie.numTokens);
  for (let k = 0; k < trie.numTokens; k++) firstByte[k] = trie.orderedData[trie.orderedOffsets[k]!]!;

  for (let s = 0; s < n; s++) {
    const ref = refs[s]!;
    const at = `${label} state ${s}`;

    // walkFullMask, whole trie.
    {
      const mask = new Uint32Array(words);
      matcher.work.steps = 0;
      walkFullMask(c, s, mask, null);
      // Without a subtree taken at once it steps what walkTrie does, less the dead first bytes
      // (walkTrie steps each of those once; walkFullMask skips them unstepped).
      if (matcher.work.steps < ref.steps - deadFirstBytes(trie, dfa, s)) hit("walkFullMask (bulk subtree)");
      sabotageMask("walkFullMask", mask, trie);
      assert.deepEqual(maskMismatches(mask, ref.mask), [], `${at}: walkFullMask mask`);
      assertScalars(c, dfa, ref.count, ref.targets, `${at}: walkFullMask`);
      const kept = Math.min(ref.count, words);
      assert.deepEqual(Array.from(c.narrowIds.subarray(0, kept)), ref.order.slice(0, kept), `${at}: walkFullMask ids in trie order`);
      assert.equal(c.scalars[4], fnv(ref.order, kept), `${at}: walkFullMask id hash`);
      hit("walkFullMask");
    }

    // walkFullMask with onlyBytes (derived masks): ORs into a mask holding other bits.
    {
      const only = new Uint8Array(256);
      for (let b = 0; b < 256; b++) only[b] = rand() < 0.5 ? 1 : 0;
      const noise = new Uint32Array(words);
      for (let w = 0; w < words; w++) noise[w] = rand() < 0.3 ? (rand() * 0x100000000) >>> 0 : 0;
      const expected = noise.slice();
      const targets = new Set<number>();
      let count = 0;
      for (let k = 0; k < trie.numTokens; k++) {
        if (ref.posTarget[k]! < 0 || only[firstByte[k]!] === 0) continue;
        const id = trie.tokenIds[k]!;
        expected[id >>> 5]! |= 1 << (id & 31);
        targets.add(ref.posTarget[k]!);
        count++;
      }
      const mask = noise.slice();
      walkFullMask(c, s, mask, only);
      sabotageMask("walkFullMask(onlyBytes)", mask, trie);
      assert.deepEqual(maskMismatches(mask, expected), [], `${at}: walkFullMask(onlyBytes) mask`);
      assertScalars(c, dfa, count, targets, `${at}: walkFullMask(onlyBytes)`);
      hit("walkFullMask(onlyBytes)");
    }

    // A derived mask (sharing.ts): another state's mask with the subtrees of the first bytes where
    // the two differ cleared (clearRedone) and walked again from this state (walkFullMask(redo)).
    {
      const sharing = new MaskSharing(trie, dfa, false);
      for (let t = 0; t < n; t++) if (t !== s && rand() < 0.7) sharing.noteWide(t, refs[t]!.count);
      const best = sharing.derivationBase(s);
      if (best >= 0) {
        const mask = refs[best]!.mask.slice();
        const kept = refs[best]!.count - sharing.clearRedone(mask);
        walkFullMask(c, s, mask, sharing.redo);
        sabotageMask("derivedMask", mask, trie);
        assert.deepEqual(maskMismatches(mask, ref.mask), [], `${at}: mask derived from state ${best}`);
        assert.equal(kept + c.scalars[1]!, ref.count, `${at}: token count derived from state ${best}`);
        hit("derivedMask (derivationBase + clearRedone + walkFullMask(redo))");
      }
    }

    // walkComplementMask: any state (its contract does not depend on the state being broad).
    {
      const mask = trie.generableMask.slice();
      matcher.work.steps = 0;
      walkComplementMask(c, s, mask);
      if (matcher.work.steps < ref.steps) hit("walkComplementMask (bulk subtree)");
      sabotageMask("walkComplementMask", mask, trie);
      assert.deepEqual(maskMismatches(mask, ref.mask), [], `${at}: walkComplementMask mask`);
      assertScalars(c, dfa, ref.count, ref.targets, `${at}: walkComplementMask`);
      hit("walkComplementMask");
    }

    // exceptionComplementMask: where it pays (multibyte loop, short lists); else nothing touched.
    {
      const mask = trie.generableMask.slice();
      if (exceptionComplementMask(c, trie, s, mask)) {
        sabotageMask("exceptionComplementMask", mask, trie);
        assert.deepEqual(maskMismatches(mask, ref.mask), [], `${at}: exceptionComplementMask mask`);
        assertScalars(c, dfa, ref.count, ref.targets, `${at}: exceptionComplementMask`);
        hit("exceptionComplementMask");
      } else {
        assert.deepEqual(maskMismatches(mask, trie.generableMask), [], `${at}: exceptionComplementMask refused yet wrote`);
      }
    }

    // entryComplementMask: for every loop state with a multi-byte loop (its contract holds for any
    // pair); multibyteEntry computed as the matcher does, and sometimes false (always safe).
    for (const loop of loops) {
      const trueEntry = everyUtf8CharLeadsTo(s, loop, (x, b) => dfaStep(dfa, x, b));
      const entry = trueEntry && rand() < 0.8;
      const mask = entryComplementMask(c, trie, s, loop, entry, new Uint8Array(256));
      if (mask === null) continue;
      sabotageMask("entryComplementMask", mask, trie);
      assert.deepEqual(maskMismatches(mask, ref.mask), [], `${at}: entryComplementMask(loop ${loop}, entry ${entry}) mask`);
      assertScalars(c, dfa, ref.count, ref.targets, `${at}: entryComplementMask(loop ${loop}, entry ${entry})`);
      hit("entryComplementMask");
    }

    // subtreeSpans from the root and from random nodes (healing: the forced prefix's node).
    {
      const roots = [0];
      for (let i = 0; i < 4 && trie.numNodes > 1; i++) roots.push(1 + Math.floor(rand() * (trie.numNodes - 1)));
      for (const root of roots) checkSpans(matcher, trie, auto, root, s, `${at}: subtreeSpans(${root})`);
    }

    // subtreeLoopsOn: when it says the subtree loops, walkTrie below the node must land every token
    // back in the state. Nodes sampled among those with a subtree (all on small tries).
    if (c.loopKind[s] === 2) {
      const samples = Math.min(trie.numNodes, 400);
      for (let i = 0; i < samples; i++) {
        const p = trie.numNodes <= 400 ? i : Math.floor(rand() * trie.numNodes);
        if (trie.subtreeSize[p]! <= 1 || p === 0) continue;
        const says = subtreeLoopsOn(c, p, s);
        assert.equal(matcher.subtreeLoops(p, s), says, `${at}: subtreeLoops(${p}) vs subtreeLoopsOn`);
        if (!says) continue;
        const below = refWalk(trie, auto, s, p);
        const from = trie.tokenStart[p]!;
        const to = trie.tokenStart[p + trie.subtreeSize[p]!]!;
        assert.equal(below.count, to - from, `${at}: subtreeLoopsOn(${p}) yet tokens below are dead`);
        let other = [...below.targets].filter((t) => t !== s);
        if (SABOTAGE === "subtreeLoopsOn") other = [-1];
        assert.deepEqual(other, [], `${at}: subtreeLoopsOn(${p}) yet tokens below end elsewhere`);
        hit("subtreeLoopsOn");
      }
    }
  }
}

/** Root children whose byte is dead from `state`. */
function deadFirstBytes(trie: TokenTrie, dfa: ByteDfa, state: number): number {
  let n = 0;
  for (let b = 0; b < 256; b++) if (trie.rootChild[b]! >= 0 && dfaStep(dfa, state, b) < 0) n++;
  return n;
}

/** subtreeSpans(root, state) against walkTrie from `root`: the same target for every trie position. */
function checkSpans(matcher: DfaTokenMatcher, trie: TokenTrie, auto: ByteAutomaton, root: number, state: number, label: string): void {
  matcher.work.steps = 0;
  const spans = DfaTokenMatcher.prototype.subtreeSpans.call(matcher, root, state);
  const ref = checkSpanList(spans, trie, auto, root, state, label);
  if (ref !== null && matcher.work.steps < ref.steps) hit("subtreeSpans (bulk subtree)");
}

function checkSpanList(
  spans: Int32Array,
  trie: TokenTrie,
  auto: ByteAutomaton,
  root: number,
  state: number,
  label: string,
): WalkRef | null {
  hit("subtreeSpans");
  if (root < 0 || state < 0) {
    assert.equal(spans.length, 0, `${label}: spans without a root or state`);
    return null;
  }
  const ref = refWalk(trie, auto, state, root);
  const got = new Int32Array(trie.numTokens).fill(-1);
  assert.equal(spans.length % 3, 0, `${label}: span triples`);
  for (let i = 0; i < spans.length; i += 3) {
    const target = SABOTAGE === "subtreeSpans" && i === 0 ? spans[i + 2]! + 1 : spans[i + 2]!;
    assert.ok(spans[i]! < spans[i + 1]!, `${label}: empty span`);
    for (let k = spans[i]!; k < spans[i + 1]!; k++) {
      assert.equal(got[k], -1, `${label}: position ${k} in two spans`);
      got[k] = target;
    }
  }
  const bad: number[] = [];
  for (let k = 0; k < trie.numTokens && bad.length < 5; k++) if (got[k] !== ref.posTarget[k]) bad.push(k);
  assert.deepEqual(
    bad.map((k) => `pos ${k} (id ${trie.tokenIds[k]}): ${got[k]} vs ${ref.posTarget[k]}`),
    [],
    `${label}: span targets vs walkTrie`,
  );
  return ref;
}

// ---------------------------------------------------------------------------------------------
// DFA walks driven through the matcher (first-mask dispatch, budgets, healing).

function checkMatcherPaths(
  dfa: ByteDfa,
  vocab: VocabularyBytes,
  trie: TokenTrie,
  rand: () => number,
  label: string,
  refs: WalkRef[],
  minTok: number[],
  rowOf: Int32Array[],
): void {
  const opts = { maxMinorSpans: rand() < 0.5 ? 0 : undefined, shareEquivalentStates: rand() < 0.8 };
  const matcher = new DfaTokenMatcher(trie, dfa, opts);
  const auto = dfaAutomaton(dfa);
  // Every subtreeSpans call the matcher or a constraint state makes (keepMinorSpans, healing) is
  // checked as it happens.
  const spansOf = matcher.subtreeSpans.bind(matcher);
  matcher.subtreeSpans = (root: number, state: number): Int32Array => {
    const out = spansOf(root, state);
    checkSpanList(out, trie, auto, root, state, `${label}: subtreeSpans(${root}, ${state}) via matcher`);
    hit("subtreeSpans(via matcher)");
    return out;
  };
  // Budgeted masks: count the walkFitting runs, and the masks made from kept minor spans instead.
  const budgets = budgetsOf(matcher);
  let fittingRuns = 0;
  const walkFitting = budgets.walkFitting.bind(budgets);
  budgets.walkFitting = (state: number): Uint32Array => {
    fittingRuns++;
    const mask = walkFitting(state);
    sabotageMask("walkFitting", mask, trie);
    return mask;
  };
  const budgetMask = budgets.budgetMask.bind(budgets);
  let lastPath = "";
  budgets.budgetMask = (state: number, limit: number, full: Uint32Array): Uint32Array => {
    const runs = fittingRuns;
    const made = budgets.maskCount;
    const out = budgetMask(state, limit, full);
    lastPath = fittingRuns > runs ? "walkFitting" : budgets.maskCount > made ? "minorSpans" : "";
    if (lastPath === "minorSpans" && SABOTAGE === "minorSpans") {
      const copy = out.slice();
      sabotageMask("minorSpans", copy, trie);
      return copy;
    }
    return out;
  };

  const n = dfa.numStates;
  const order = [...Array(n).keys()];
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const finite = minTok.filter((d) => d !== Infinity);
  const maxBudget = (finite.length ? Math.max(...finite) : 0) + 2;
  const expectedMask = (s: number, limit: number): Uint32Array => {
    const m = new Uint32Array(matcher.words);
    const row = rowOf[s]!;
    for (let id = 0; id < row.length; id++) if (row[id]! >= 0 && minTok[row[id]!]! <= limit) m[id >>> 5]! |= 1 << (id & 31);
    return m;
  };
  for (const s of order) {
    const at = `${label} state ${s}`;
    const before = [matcher.statesListed, matcher.statesEntered, matcher.statesDerived, matcher.statesShared, matcher.statesChained];
    const full = matcher.mask(s);
    // Which first-mask path ran (computeState's dispatch and firstMask's sharing are observable only
    // through these counters).
    const path =
      matcher.statesListed > before[0]!
        ? "matcher:listed (exceptionComplementMask)"
        : matcher.statesEntered > before[1]!
          ? "matcher:entered (entryComplementMask)"
          : matcher.statesChained > before[4]!
            ? "matcher:chained (chainComplementMask)"
            : matcher.statesDerived > before[2]!
              ? "matcher:derived (sharing + walkFullMask(redo))"
              : matcher.statesShared > before[3]!
                ? "matcher:shared"
                : "matcher:walked";
    assert.deepEqual(maskMismatches(full, expectedMask(s, Number.MAX_SAFE_INTEGER)), [], `${at}: mask() [${path}]`);
    hit(path);
    assert.equal(matcher.allowedTokenCount(s), refs[s]!.count, `${at}: allowedTokenCount [${path}]`);
    assert.deepEqual(sortedList(matcher.tokenSuccessors(s)), sortedList(refs[s]!.targets), `${at}: tokenSuccessors`);
    for (let r = 1; r <= maxBudget; r++) {
      lastPath = "";
      const m = matcher.mask(s, r);
      const which = lastPath;
      assert.deepEqual(maskMismatches(m, expectedMask(s, r - 1)), [], `${at}: mask(remaining ${r}) [${which || "no walk"}]`);
      if (which !== "") hit(which);
    }
  }

  // walkFitting with arbitrary marks: exactly the tokens whose walkTrie target is marked.
  const fitMark = budgets.fitMark;
  for (let s = 0; s < n; s++) {
    for (let t = 0; t < n; t++) fitMark[t] = rand() < 0.5 ? 1 : 0;
    matcher.work.steps = 0;
    const m = budgets.walkFitting(s);
    if (matcher.work.steps < refs[s]!.steps) hit("walkFitting (bulk subtree)");
    const expected = new Uint32Array(matcher.words);
    const ref = refs[s]!;
    for (let k = 0; k < trie.numTokens; k++) {
      const t = ref.posTarget[k]!;
      if (t >= 0 && fitMark[t] === 1) expected[trie.tokenIds[k]! >>> 5]! |= 1 << (trie.tokenIds[k]! & 31);
    }
    assert.deepEqual(maskMismatches(m, expected), [], `${label} state ${s}: walkFitting(random marks)`);
    hit("walkFitting(random marks)");
  }
  fitMark.fill(0);

  // Healing: a forced prefix (some token's first bytes) and its first mask, from subtreeSpans.
  for (let i = 0; i < 3; i++) {
    const id = Math.floor(rand() * vocab.size);
    const bytes = vocab.data.subarray(vocab.offsets[id]!, vocab.offsets[id + 1]!);
    if (bytes.length === 0) continue;
    const prefix = bytes.slice(0, 1 + Math.floor(rand() * bytes.length));
    const state = new DfaConstraintState(matcher, prefix);
    const node = trie.findNode(prefix);
    const r = 1 + Math.floor(rand() * maxBudget);
    const expected = new Uint32Array(matcher.words);
    if (node >= 0) {
      const ref = refWalk(trie, auto, dfa.start, node);
      for (let k = 0; k < trie.numTokens; k++) {
        const t = ref.posTarget[k]!;
        if (t >= 0 && minTok[t]! <= r - 1) expected[trie.tokenIds[k]! >>> 5]! |= 1 << (trie.tokenIds[k]! & 31);
      }
    }
    assert.deepEqual(maskMismatches(state.mask(r), expected), [], `${label}: healing mask, prefix ${Array.from(prefix)}, remaining ${r}`);
    hit("forced prefix (DfaConstraintState)");
  }
}

/** All DFA checks for one (DFA, vocabulary) pair. */
function checkDfa(dfa: ByteDfa, vocab: VocabularyBytes, rand: () => number, label: string, brute: boolean): void {
  const trie = TokenTrie.build(vocab);
  const auto = dfaAutomaton(dfa);
  const refs: WalkRef[] = [];
  for (let s = 0; s < dfa.numStates; s++) refs.push(refWalk(trie, auto, s));
  const rows = refs.map((ref) => targetsById(trie, ref));
  if (brute) {
    // The reference itself, against brute force (small vocabularies).
    const trans = bruteTransitions(dfa, vocab);
    for (let s = 0; s < dfa.numStates; s++) assert.deepEqual(rows[s], trans[s], `${label}: walkTrie vs brute force, state ${s}`);
  }
  const minTok = bruteMinTokens(dfa, rows);
  checkDirectDfaWalks(dfa, trie, rand, label, refs);
  checkMatcherPaths(dfa, vocab, trie, rand, label, refs, minTok, rows);
}

const DFA_WALKS = [
  "walkFullMask",
  "walkFullMask (bulk subtree)",
  "walkComplementMask (bulk subtree)",
  "subtreeSpans (bulk subtree)",
  "walkFitting (bulk subtree)",
  "walkFullMask(onlyBytes)",
  "walkComplementMask",
  "exceptionComplementMask",
  "entryComplementMask",
  "subtreeSpans",
  "subtreeLoopsOn",
  "subtreeSpans(via matcher)",
  "walkFitting",
  "walkFitting(random marks)",
  "minorSpans",
  "matcher:listed (exceptionComplementMask)",
  "matcher:entered (entryComplementMask)",
  "matcher:chained (chainComplementMask)",
  "matcher:derived (sharing + walkFullMask(redo))",
  "derivedMask (derivationBase + clearRedone + walkFullMask(redo))",
  "matcher:walked",
  "forced prefix (DfaConstraintState)",
];

test("regex trie walks equal walkTrie on random DFAs and random patterns × random vocabularies", (t) => {
  cases.clear();
  const rand = rng(20240607);
  let pairs = 0;
  for (let i = 0; i < 36; i++) {
    // With and without all 256 byte tokens; now and then a larger vocabulary, so the per-byte
    // token lists stay under an eighth of the tokens even with the 128 lone non-ASCII bytes.
    const byteTokens = i % 3 !== 0;
    const size = i % 6 === 5 ? 1600 : 60 + Math.floor(rand() * 400);
    const vocab = randomVocab(rand, size, byteTokens);
    let dfa: ByteDfa;
    let label: string;
    if (i % 3 === 1) {
      dfa = randomDfa(rand, 8);
      label = `random DFA #${i} (vocab ${size}${byteTokens ? " + bytes" : ""})`;
    } else {
      const pattern = randomPattern(rand);
      try {
        dfa = compileRegex(pattern);
      } catch {
        continue;
      }
      label = `/${pattern}/ #${i} (vocab ${size}${byteTokens ? " + bytes" : ""})`;
    }
    checkDfa(dfa, vocab, rand, label, true);
    pairs++;
  }
  // Shapes the walks specialise, each over a fresh vocabulary (string bodies, free text, entries).
  // Counted runs too: a string's maxLength, with a minimum, escapes (a pair is one character), and
  // a run that cycles (two states taking turns).
  const shaped = [
    '"[^"\\\\]*"',
    '"[^"\\\\]+"',
    ".*",
    '[^"]+',
    "[a-z]*",
    " ?[a-z]+( [a-z]+)*",
    '\\{"[a-z]+": "[^"]*"\\}',
    '"[^"\\\\]{0,40}"',
    '"(\\\\.|[^"\\\\]){3,20}"',
    '"([^"\\\\][^"\\\\])*"',
  ];
  shaped.forEach((pattern, j) => {
    // Mostly words, so that the per-byte lists of a string body or free text stay short (with the
    // 128 lone non-ASCII byte tokens on them, only a larger vocabulary does).
    const bytes = j % 2 === 0;
    const size = bytes ? 1400 : 300 + Math.floor(rand() * 300);
    checkDfa(compileRegex(pattern), randomVocab(rand, size, bytes, 0.8), rand, `/${pattern}/ shaped`, true);
    pairs++;
  });
  // Subtrees taken at once below a node that ends no token, whose state no other token ends in: the
  // successor then comes from the bulk subtree alone (no bare "q", '"' or " " token here).
  const prefixed: string[] = [];
  for (const head of ["q", '"', " "]) for (let i = 0; i < 40; i++) prefixed.push(head + randomWord(rand, 2, 8));
  for (let i = 0; i < 60; i++) prefixed.push(randomWord(rand, 1, 6));
  for (const pattern of ["q[a-z]*", '"[^"\\\\]*"?', " [a-z]+", "(q|x)[a-z]*!"]) {
    checkDfa(compileRegex(pattern), makeVocab(prefixed), rand, `/${pattern}/ over prefixed words`, true);
    pairs++;
  }
  // Two states that differ on one edge byte only (first, last, around the ASCII boundary): a
  // derived mask redoes just that byte's subtree.
  for (const edge of [0x00, 0x7f, 0x80, 0xff]) {
    const byteClass = new Uint8Array(256);
    byteClass[edge] = 1;
    // State 0 goes to 1 on every byte; state 1 loops on all but the edge byte (dead there).
    const dfa = finishDfa(2, 2, byteClass, Int32Array.of(1, 1, 1, -1), Uint8Array.of(1, 1), 0)!;
    checkDfa(dfa, randomVocab(rand, 100, true), rand, `edge byte ${edge}`, true);
    pairs++;
  }
  assert.ok(pairs >= 30, `only ${pairs} DFA × vocabulary pairs ran`);
  requireExercised(DFA_WALKS, t);
});

test("regex trie walks equal walkTrie on the gpt-2 vocabulary", (t) => {
  cases.clear();
  const file = vocabFile("gpt-2");
  if (!existsSync(file)) {
    t.skip(`no ${file}`);
    return;
  }
  const vocab = loadVocabulary(file);
  const rand = rng(77);
  const patterns = [
    '"[^"\\\\]*"',
    '"[^"\\\\]+"',
    ".*",
    '[^"]+',
    "[a-z]*",
    " ?[A-Za-z]+( [A-Za-z]+)*",
    '\\{"[a-z]+": [0-9]+\\}',
    '(\\\\.|[^"\\\\])*x',
    '"[^"\\\\]{0,40}"',
    '"[^"\\\\]{2,6}"',
    '"(\\\\.|[^"\\\\]){0,50}"',
  ];
  for (const pattern of patterns) checkDfa(compileRegex(pattern), vocab, rand, `gpt-2 /${pattern}/`, false);
  for (let i = 0; i < 3; i++) checkDfa(randomDfa(rand, 5), vocab, rand, `gpt-2 random DFA #${i}`, false);
  requireExercised(DFA_WALKS, t);
});

// ---------------------------------------------------------------------------------------------
// Grammar lexer walks.

interface LexerCheckStats {
  hypotheses: number;
}

/**
 * The lexer walks of one hypothesis (stack, lex), composed by hand from their outputs (rootWalk,
 * maskOf per continuation set, commit groups, subWalk below them, recursively), against walkTrie
 * over the automaton from the one-hypothesis state: token by token the same hypotheses.
 */
function checkHypothesis(
  automaton: GrammarAutomaton,
  trie: TokenTrie,
  lexer: LexerLevelWalks,
  work: WorkMeter,
  stack: number,
  lex: number,
  rand: () => number,
  label: string,
): void {
  const state = automaton.withStack(stack, [lex]);
  const size = trie.vocabSize;
  const refTarget = new Int32Array(size).fill(-1);
  walkTrie(trie, automaton, state, 0, undefined, (from, to, target) => {
    for (let k = from; k < to; k++) refTarget[trie.tokenIds[k]!] = target;
  });
  // Per token, the states whose hypotheses its ways through the walks give (first, then extra).
  const first = new Int32Array(size).fill(-1);
  const extra = new Map<number, number[]>();
  const add = (id: number, st: number): void => {
    if (first[id]! < 0) first[id] = st;
    else if (first[id] !== st) {
      let list = extra.get(id);
      if (list === undefined) extra.set(id, (list = []));
      list.push(st);
    }
  };

  const setId = lexer.setOfLexer(lex);
  const root = lexer.rootWalk(setId);
  hit("lexer:rootWalk");
  if (root.owner !== setId) hit("lexer:rootWalk taken over from an equivalent set");
  assert.equal(root.tokensByCont.length, 0, `${label}: a root walk keeps a dense mask, no lists`);
  // maskOf per continuation set: disjoint, their union the root walk's mask.
  const union = new Uint32Array(maskWords(size));
  const perCont: Uint32Array[] = [];
  for (const cont of root.contSets) {
    const m = new Uint32Array(maskWords(size));
    lexer.maskOf(setId, new Set([cont]), m);
    sabotageMask("maskOf", m, trie);
    hit("lexer:maskOf");
    for (let w = 0; w < m.length; w++) {
      assert.equal(union[w]! & m[w]!, 0, `${label}: a token ends commit-free in two sets`);
      union[w]! |= m[w]!;
    }
    perCont.push(m);
    const target = lexer.stateOf(stack, cont);
    for (const id of setBits(m)) add(id, target);
  }
  // The same straight from walkTrie over the lexer-state sets (a byte steps a set to its
  // continuation, commits ignored): the commit-free tokens, each ending in its continuation set.
  const setAutomaton: ByteAutomaton = { step: (x, b) => (lexer.stepCode(x, b) & ~LEXER_COMMITS) - 1 };
  const free = refWalk(trie, setAutomaton, setId);
  const byCont = new Map<number, number>();
  root.contSets.forEach((cont, i) => {
    byCont.set(cont, i);
  });
  const wrongCont: string[] = [];
  for (let k = 0; k < trie.numTokens && wrongCont.length < 5; k++) {
    const cont = free.posTarget[k]!;
    if (cont < 0) continue;
    const id = trie.tokenIds[k]!;
    const i = byCont.get(cont);
    if (i === undefined || ((perCont[i]![id >>> 5]! >>> (id & 31)) & 1) === 0) wrongCont.push(`token ${id} ends in set ${cont}`);
  }
  assert.deepEqual(wrongCont, [], `${label}: maskOf per continuation set vs walkTrie over the lexer sets`);
  assert.deepEqual(maskMismatches(union, free.mask), [], `${label}: commit-free tokens vs walkTrie over the lexer sets`);
  {
    const all = new Uint32Array(maskWords(size));
    work.steps = 0;
    lexer.maskOf(setId, new Set(root.contSets), all);
    assert.deepEqual(maskMismatches(all, free.mask), [], `${label}: maskOf(every continuation set)`);
    if (work.steps < free.steps) hit("lexer:maskOf (bulk subtree)");
  }
  const rootCopy = new Uint32Array(maskWords(size));
  applyWalkTokens(root, rootCopy, true);
  if (root.tokens !== null) hit("lexer:rootWalk tokens as a list");
  sabotageMask("rootWalk", rootCopy, trie);
  assert.deepEqual(maskMismatches(union, rootCopy), [], `${label}: rootWalk mask vs maskOf over its continuation sets`);
  if (root.contSets.length > 1) {
    // A random subset at once: the union of its members' masks.
    const keep = new Set(root.contSets.filter(() => rand() < 0.5));
    const m = new Uint32Array(maskWords(size));
    lexer.maskOf(setId, keep, m);
    const expected = new Uint32Array(maskWords(size));
    root.contSets.forEach((c, i) => {
      if (keep.has(c)) for (let w = 0; w < m.length; w++) expected[w]! |= perCont[i]![w]!;
    });
    assert.deepEqual(maskMismatches(m, expected), [], `${label}: maskOf(subset)`);
  }

  const applyGroups = (stk: number, groups: readonly CommitGroup[], depth: number): void => {
    for (const g of groups) {
      const ends = g.deadEnds.length > 0 || g.aliveEnds.length > 0 || g.aliveRanges.length > 0;
      assert.equal(g.hasEnds, ends, `${label}: group hasEnds`);
      const after = automaton.afterCommit(stk, g.commitKey);
      if (after < 0) continue;
      hit("lexer:commit group");
      for (const id of g.deadEnds) add(id, after);
      for (const id of g.aliveEnds) add(id, after);
      for (let r = 0; r < g.aliveRanges.length; r += 2) {
        for (let k = g.aliveRanges[r]!; k < g.aliveRanges[r + 1]!; k++) add(trie.tokenIds[k]!, after);
        hit("lexer:loop ranges");
      }
      if (g.nodes.length === 0 && g.loops.length === 0) continue;
      const h = automaton.hypotheses(after);
      assert.equal(h.length, 2, `${label}: afterCommit gives one hypothesis`);
      const below = lexer.subWalk(h[1]!, g);
      hit("lexer:subWalk");
      if (g.loops.length > 0) hit("lexer:subWalk below loop roots");
      if (depth > 0) hit("lexer:nested commits");
      assert.equal(below.mask, null, `${label}: a walk below commits keeps lists`);
      assert.equal(below.tokensByCont.length, below.contSets.length, `${label}: one list per continuation set`);
      below.contSets.forEach((cont, i) => {
        const target = lexer.stateOf(h[0]!, cont);
        let list = below.tokensByCont[i]!;
        if (SABOTAGE === "subWalk" && list.length > 0) list = list.subarray(1);
        for (const id of list) add(id, target);
      });
      applyGroups(h[0]!, below.groups, depth + 1);
    }
  };
  applyGroups(stack, root.groups, 0);

  // Token by token: the hypotheses of walkTrie's target = the union of the ways found above.
  const keyCache = new Map<number, string>();
  const keyOf = (st: number): string => {
    let k = keyCache.get(st);
    if (k === undefined) keyCache.set(st, (k = pairsKey([st])));
    return k;
  };
  const pairsKey = (states: readonly number[]): string => {
    const pairs = new Set<string>();
    for (const st of states) {
      const h = automaton.hypotheses(st);
      for (let i = 0; i < h.length; i += 2) pairs.add(`${h[i]}:${h[i + 1]}`);
    }
    return [...pairs].sort().join(" ");
  };
  const bad: string[] = [];
  for (let id = 0; id < size && bad.length < 5; id++) {
    const want = refTarget[id]! < 0 ? "" : keyOf(refTarget[id]!);
    const ways = first[id]! < 0 ? [] : [first[id]!, ...(extra.get(id) ?? [])];
    const got = ways.length === 0 ? "" : ways.length === 1 ? keyOf(ways[0]!) : pairsKey(ways);
    if (want !== got)
      bad.push(`token ${id} ${JSON.stringify(new TextDecoder().decode(trie.tokenBytes(id)))}: walkTrie {${want}} vs lexer walks {${got}}`);
  }
  assert.deepEqual(bad, [], `${label}: lexer walks vs walkTrie`);
}

/** prefixEdges against walkTrie below the prefix's node from the start state. */
function checkPrefixEdges(
  matcher: GrammarTokenMatcher,
  automaton: GrammarAutomaton,
  trie: TokenTrie,
  prefix: Uint8Array,
  label: string,
): void {
  const got = matcher.prefixEdges(prefix);
  const node = trie.findNode(prefix);
  const want = new Map<number, number>();
  if (node >= 0) {
    walkTrie(trie, automaton, automaton.start, node, undefined, (from, to, target) => {
      for (let k = from; k < to; k++) want.set(trie.tokenIds[k]!, target);
    });
  }
  const gotMap = new Map<number, number>();
  got.tokens.forEach((id, i) => gotMap.set(id, got.targets[i]!));
  if (SABOTAGE === "prefixEdges" && gotMap.size > 0) gotMap.delete(got.tokens[0]!);
  assert.deepEqual(
    [...gotMap].sort((a, b) => a[0] - b[0]),
    [...want].sort((a, b) => a[0] - b[0]),
    `${label}: prefixEdges(${Array.from(prefix)})`,
  );
  hit("prefixEdges");
}

const INLINE_GRAMMAR = `
start: stmt+
stmt: "let" NAME "=" expr ";" | "print" expr ";"
expr: term ("+" term)*
term: NAME | NUMBER | ESCAPED_STRING | "(" expr ")"
COMMENT: /#[^\\n]*/
%import common.CNAME -> NAME
%import common.NUMBER
%import common.ESCAPED_STRING
%import common.WS
%ignore WS
%ignore COMMENT
`;

/** The grammars, each with texts whose states the random walks also start from (inside strings, names, lists). */
function grammarSources(): { name: string; source: string; starts: string[] }[] {
  const corpus = (f: string, starts: string[]): { name: string; source: string; starts: string[] } => ({
    name: f,
    source: readFileSync(resolve(REPO_ROOT, "test", "grammars", f), "utf8"),
    starts,
  });
  return [
    corpus("json.lark", ['{"', '["ab', '{"a": "', "[1, ", '{"a": [tr']),
    corpus("sql-select.lark", ["SELECT ", "select ab", "SELECT a FROM t WHERE b = 'x"]),
    corpus("csv.lark", ["a,b\n", 'abc,"x']),
    { name: "inline statements", source: INLINE_GRAMMAR, starts: ["let ", "let ab", 'print "x', "print (a + 1"] },
  ];
}

/**
 * Random token walks through a grammar (tokens chosen among walkTrie's allowed ones), checking the
 * lexer walks for every hypothesis of every state met, and prefixEdges for a few prefixes.
 */
function checkGrammar(
  source: string,
  starts: readonly string[],
  trie: TokenTrie,
  rand: () => number,
  label: string,
  walks: number,
  steps: number,
): void {
  const automaton = createGrammarAutomaton(compileGrammar(source), { maxIgnoredRun: 8 });
  // One lexer-walk object for all states: later sets meet cached walks and equivalent sets.
  const work = new WorkMeter();
  const lexer = LexerLevelWalks.over(trie, automaton, new TableSlab(MATCHER_SLAB_BYTES), work);
  assert.ok(lexer !== null, `${label}: the grammar automaton offers the lexer-level view`);
  const checked = new Set<string>();
  const stats: LexerCheckStats = { hypotheses: 0 };
  const firstStates = [automaton.start, ...starts.map((text) => automaton.walk(automaton.start, text)).filter((st) => st >= 0)];
  assert.equal(firstStates.length, starts.length + 1, `${label}: a start text is not a sentence prefix`);
  for (let w = 0; w < walks; w++) {
    let state = firstStates[w % firstStates.length]!;
    for (let step = 0; step < steps && state >= 0; step++) {
      const h = automaton.hypotheses(state);
      for (let i = 0; i < h.length; i += 2) {
        const key = `${h[i]}:${h[i + 1]}`;
        if (checked.has(key)) continue;
        checked.add(key);
        stats.hypotheses++;
        checkHypothesis(automaton, trie, lexer, work, h[i]!, h[i + 1]!, rand, `${label} walk ${w} step ${step} hypothesis ${key}`);
      }
      const allowed: number[] = [];
      const targets: number[] = [];
      walkTrie(trie, automaton, state, 0, undefined, (from, to, target) => {
        for (let k = from; k < to; k++) {
          allowed.push(trie.tokenIds[k]!);
          targets.push(target);
        }
      });
      if (allowed.length === 0) break;
      state = targets[Math.floor(rand() * targets.length)]!;
    }
  }
  assert.ok(stats.hypotheses > 0, `${label}: no hypothesis checked`);
  const matcher = new GrammarTokenMatcher(trie, automaton);
  for (let i = 0; i < 4; i++) {
    const id = trie.tokenIds[Math.floor(rand() * trie.numTokens)]!;
    const bytes = trie.tokenBytes(id);
    checkPrefixEdges(matcher, automaton, trie, bytes.slice(0, 1 + Math.floor(rand() * bytes.length)), label);
  }
  checkPrefixEdges(matcher, automaton, trie, Uint8Array.of(0x22, 0xff, 0x00), label);
}

const LEXER_WALKS = [
  "lexer:rootWalk",
  "lexer:rootWalk tokens as a list",
  "lexer:rootWalk taken over from an equivalent set",
  "lexer:maskOf",
  "lexer:maskOf (bulk subtree)",
  "lexer:commit group",
  "lexer:subWalk",
  "lexer:subWalk below loop roots",
  "lexer:loop ranges",
  "lexer:nested commits",
  "prefixEdges",
];

test("grammar lexer walks compose to walkTrie over the grammar automaton (random vocabularies)", (t) => {
  cases.clear();
  const rand = rng(4242);
  for (const { name, source, starts } of grammarSources()) {
    for (let v = 0; v < 3; v++) {
      const byteTokens = v !== 1;
      const vocab = randomVocab(rand, 150 + Math.floor(rand() * 250), byteTokens);
      checkGrammar(source, starts, TokenTrie.build(vocab), rand, `${name} × vocab ${v}${byteTokens ? " + bytes" : ""}`, 6, 8);
    }
  }
  requireExercised(LEXER_WALKS, t);
});

test("grammar lexer walks compose to walkTrie over the grammar automaton (gpt-2)", (t) => {
  cases.clear();
  const file = vocabFile("gpt-2");
  if (!existsSync(file)) {
    t.skip(`no ${file}`);
    return;
  }
  const trie = tokenTrieFor(loadVocabulary(file));
  const rand = rng(99);
  for (const { name, source, starts } of grammarSources()) checkGrammar(source, starts, trie, rand, `gpt-2 ${name}`, starts.length + 1, 4);
  requireExercised(LEXER_WALKS, t);
});

test("lexer walks: the walk below one list of commit nodes is made once; walking ahead reaches every set where a walked token ends (gpt-2)", (t) => {
  const file = vocabFile("gpt-2");
  if (!existsSync(file)) {
    t.skip(`no ${file}`);
    return;
  }
  const trie = tokenTrieFor(loadVocabulary(file));
  // Ignored whitespace: a run of each length is a lexer state of its own, each with its root walk.
  const source = ARITHMETIC_GRAMMAR;
  const automaton = createGrammarAutomaton(compileGrammar(source), { maxIgnoredRun: 8 });
  const lexer = LexerLevelWalks.over(trie, automaton, new TableSlab(MATCHER_SLAB_BYTES), new WorkMeter())!;
  assert.equal(lexer.walkAhead(Number.POSITIVE_INFINITY), true);
  const walked = (): number => lexer.rootWalkCounts.walked + lexer.rootWalkCounts.takenOver;
  const before = walked();
  // From the token starts, every set where a token ends and each of its members alone: all walked.
  const queue = Array.from(automaton.tokenStartLexers(), (lex) => lexer.setOfLexer(lex));
  const met = new Set(queue);
  const groups: CommitGroup[] = [];
  const masks = new Map<string, { kept: Uint32Array | Int32Array; owner: number }>();
  let sameMasks = 0;
  for (let i = 0; i < queue.length; i++) {
    const walk = lexer.rootWalk(queue[i]!);
    groups.push(...walk.groups);
    const kept = walk.mask ?? walk.tokens;
    if (kept !== null) {
      // Walks that allow the same commit-free tokens keep one mask (or list) between them.
      const key = `${walk.mask === null ? "list" : "mask"} ${kept.join(",")}`;
      const first = masks.get(key);
      if (first === undefined) masks.set(key, { kept, owner: walk.owner });
      else if (first.owner !== walk.owner) {
        // Walked on their own (a walk taken over from another keeps its owner and its mask).
        assert.equal(kept, first.kept, "equal root masks are one array");
        sameMasks++;
      }
    }
    for (const cont of walk.contSets) {
      const members = lexer.membersOf(cont);
      for (const set of [cont, ...(members.length > 1 ? members.map((lex) => lexer.setOfLexer(lex)) : [])]) {
        if (met.has(set)) continue;
        met.add(set);
        queue.push(set);
      }
    }
  }
  assert.ok(met.size > 20, `the whitespace runs' sets are met: ${met.size}`);
  assert.equal(walked(), before, "a set where a walked token ends was not walked ahead");

  // Groups of different walks with the same commit nodes share their walks below.
  const lex = automaton.tokenStartLexers()[0]!;
  let shared = 0;
  const byNodes = new Map<string, CommitGroup>();
  for (const g of groups) {
    if (g.nodes.length + g.loops.length === 0) continue;
    const key = `${g.nodes.join(",")}|${g.loops.join(",")}`;
    const first = byNodes.get(key);
    if (first === undefined) {
      byNodes.set(key, g);
      continue;
    }
    if (first === g) continue;
    shared++;
    assert.equal(g.below, first.below, `groups over the same nodes keep one record of walks below (${g.nodes.length} nodes)`);
    if (sameTokens(g.deadEnds, first.deadEnds)) assert.equal(g.deadEnds, first.deadEnds, "equal lists of a group's tokens are one array");
    assert.equal(lexer.subWalk(lex, g), lexer.subWalk(lex, first));
  }
  assert.ok(shared > 10, `groups of different walks over the same nodes: ${shared}`);
  assert.ok(sameMasks > 5, `root walks with equal masks: ${sameMasks}`);
});

function sameTokens(a: Int32Array, b: Int32Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

test("walking ahead from a state walks first what its next step's mask walks from (gpt-2)", (t) => {
  const file = vocabFile("gpt-2");
  if (!existsSync(file)) {
    t.skip(`no ${file}`);
    return;
  }
  const vocab = loadVocabulary(file);
  const trie = tokenTrieFor(vocab);
  const source = ARITHMETIC_GRAMMAR;
  const single = singleByteTokens(vocab);
  let stepsWithNewWalks = 0;
  for (const text of ["(a + b", "x * (2 - y)", "-(-(q))"]) {
    const matcher = new GrammarTokenMatcher(trie, createGrammarAutomaton(compileGrammar(source), { maxIgnoredRun: 8 }));
    const state = new GrammarConstraintState(matcher);
    for (const byte of new TextEncoder().encode(text)) {
      state.mask(1 << 20);
      // The walks the next step needs, whatever the token: its targets' sets (the first call
      // walks the token starts and the sets where tokens end too).
      const before = matcher.rootWalkCounts!;
      state.walkAhead(Number.POSITIVE_INFINITY);
      const ahead = matcher.rootWalkCounts!;
      if (ahead.walked + ahead.takenOver > before.walked + before.takenOver) stepsWithNewWalks++;
      assert.ok(state.advance(single.get(byte)!));
      state.mask(1 << 20);
      const after = matcher.rootWalkCounts!;
      assert.equal(
        after.walked + after.takenOver,
        ahead.walked + ahead.takenOver,
        `the mask after ${JSON.stringify(String.fromCharCode(byte))} in ${text} walked a set`,
      );
    }
  }
  assert.ok(stepsWithNewWalks > 3, `steps that walked ahead: ${stepsWithNewWalks}`);
});
