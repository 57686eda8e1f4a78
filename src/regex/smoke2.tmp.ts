import { compileRegex } from "./index.js";
const p = String.raw`((?:\s?|\.[K0-9\n]+Σ|😀)(?:.(?P<g0>中)*|x+(?s:\-+\u00e9k*|\.+|σ中\n+?)|\W)\s|(c{0,3}(?:\-\u00e9a+)?[^xaa\s]{1,}|\n{1}?[à-ÿα-ω😀-🙏]?\*)+\W{1,3}?|[^K]+\*?){0,2}`;
for (let i = 0; i < 3; i++) {
const t0 = performance.now();
const d = compileRegex(p, { timeoutMs: 100000, maxDfaStates: 1e6 });
console.log(d.numStates, d.numClasses, (performance.now() - t0).toFixed(1));
}
