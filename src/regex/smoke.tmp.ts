import { compileRegex, matchesString, sampleString, seededRandom, compileMultiRegex, acceptedPatterns } from "./index.js";
const cases: [string, string, string[]][] = [
  ["abc", "", ["abc", "ab", "abcd"]],
  ["[a-z]+( [a-z]+)*", "", ["hello world", "hello  world", "a"]],
  ["a$\\n", "", ["a\n", "a"]],
  ["a$", "", ["a\n", "a"]],
  ["(?i)straße", "", ["STRASSE", "STRAßE", "ſtraße"]],
  ["[^a]", "i", ["A", "b", "é", "\n"]],
  ["é+", "", ["éé", "e"]],
  ["\\d{3}-\\d{4}", "", ["555-1234", "55-1234"]],
  ["(?m)a$\\nb", "", ["a\nb"]],
  ["(?m)^a\\n^b$", "", ["a\nb", "a\nb\n"]],
  ["^a|b", "", ["a", "b"]],
  
  [".", "", ["😀", "\n", "a"]],
];
for (const [p, f, strs] of cases) {
  const t0 = performance.now();
  const dfa = compileRegex(p, { flags: f });
  const ms = performance.now() - t0;
  const rng = seededRandom(1);
  console.log(JSON.stringify(p), f, `states=${dfa.numStates} classes=${dfa.numClasses} ${ms.toFixed(2)}ms`, strs.map((s) => `${JSON.stringify(s)}:${matchesString(dfa, s)}`).join(" "), "samples:", [1,2,3].map(() => JSON.stringify(sampleString(dfa, rng, {maxBytes: 20}))).join(","));
}
const m = compileMultiRegex(["if", "[a-z]+", "[0-9]+"]);
let s = m.start; for (const b of Buffer.from("if")) s = m.next[s*m.numClasses+m.byteClass[b]!]!;
console.log("multi", m.numStates, acceptedPatterns(m, s));
for (const p of ["(a|b)*a(a|b){25}", "(x+x+)+y", "(?:a{1000}){1000}", "a{1000}{1000}", "(a\\1)", "(?=a)", "\\bfoo"]) {
  const t0 = performance.now();
  try { const d = compileRegex(p); console.log(p, "ok", d.numStates); } catch (e) { console.log(p, (e as Error).name, (e as Error).message, (e as any).construct); }
  console.log("  ", (performance.now()-t0).toFixed(1), "ms");
}
