// LanguageGraph (regex/graph.ts): languages built as graphs of sub-languages, alone and nested
// inside other nodes (repeats copy them), against the same languages written as patterns.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  compileRegex,
  compileRegexNode,
  LanguageGraph,
  matchesString,
  parseFlagString,
  parseRegex,
  type RegexNode,
} from "../src/regex/index.js";
import { seededRandom } from "../src/support/index.js";

const node = (pattern: string): RegexNode => parseRegex(pattern, parseFlagString(""));

/** `{` then optional members a, b, c in order, comma-separated, then `}`: the first without a comma. */
function optionalMembers(): { graph: LanguageGraph; start: number } {
  const graph = new LanguageGraph();
  const start = graph.state();
  const end = graph.state();
  graph.accept(end);
  const names = ["a", "b", "c"];
  // before[i][nonEmpty]
  const before = names.map(() => [graph.state(), graph.state()] as const);
  const last = [graph.state(), graph.state()] as const;
  const at = (i: number, nonEmpty: number): number => (i < names.length ? before[i]![nonEmpty]! : last[nonEmpty]!);
  graph.edge(start, at(0, 0), node("\\{"));
  names.forEach((name, i) => {
    for (const nonEmpty of [0, 1]) {
      graph.edge(at(i, nonEmpty), at(i + 1, nonEmpty), null);
      graph.edge(at(i, nonEmpty), at(i + 1, 1), node(nonEmpty ? `,${name}=[0-9]+` : `${name}=[0-9]+`));
    }
  });
  graph.edge(last[0], end, node("\\}"));
  graph.edge(last[1], end, node("\\}"));
  return { graph, start };
}

const SAME_AS = "\\{(?:(?:a=[0-9]+(?:,b=[0-9]+)?(?:,c=[0-9]+)?)|(?:b=[0-9]+(?:,c=[0-9]+)?)|(?:c=[0-9]+))?\\}";

function randomText(random: () => number): string {
  const alphabet = "{}abc=0,1";
  let out = "";
  const n = Math.floor(random() * 14);
  for (let i = 0; i < n; i++) out += alphabet[Math.floor(random() * alphabet.length)];
  return out;
}

test("a graph's language equals the same language written as a pattern", () => {
  const { graph, start } = optionalMembers();
  const fromGraph = graph.compile(start);
  const fromPattern = compileRegex(SAME_AS);
  assert.equal(fromGraph.numStates, fromPattern.numStates);
  const random = seededRandom(7);
  const texts = ["{}", "{a=1}", "{b=2,c=3}", "{a=1,c=2}", "{,a=1}", "{a=1,}", "{b=1,a=2}", "{a=1b=2}", ""];
  for (let i = 0; i < 3000; i++) texts.push(randomText(random));
  for (const text of texts) assert.equal(matchesString(fromGraph, text), matchesString(fromPattern, text), text);
});

test("a graph nests in other nodes: concatenated, alternated and repeated (each copy its own)", () => {
  const { graph, start } = optionalMembers();
  const inner = graph.node(start);
  const nested: RegexNode = {
    kind: "concat",
    items: [node("<"), { kind: "repeat", item: { kind: "alt", items: [inner, node("x")] }, min: 1, max: 3 }, node(">")],
  };
  const dfa = compileRegexNode(nested);
  const pattern = compileRegex(`<(?:${SAME_AS}|x){1,3}>`);
  const random = seededRandom(11);
  const texts = ["<{}>", "<x{a=1}x>", "<{}{}{}>", "<{}{}{}{}>", "<>", "<{a=1,b=2}{c=3}>"];
  for (let i = 0; i < 3000; i++) texts.push(`<${randomText(random)}>`);
  for (const text of texts) assert.equal(matchesString(dfa, text), matchesString(pattern, text), text);
});

test("a graph whose accepting state is unreachable has the empty language", () => {
  const graph = new LanguageGraph();
  const start = graph.state();
  const end = graph.state();
  graph.accept(end);
  graph.edge(start, graph.state(), node("a"));
  const dfa = graph.compile(start);
  assert.equal(dfa.minBytesToAccept[dfa.start], -1);
});
