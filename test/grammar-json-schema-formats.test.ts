// JSON Schema formats as regular languages (src/schema/json-schema/formats.ts): every member we
// sample must be valid — checked against Debian's python3-jsonschema FormatChecker where it has a
// real checker, and against hand-written validators (below) for the rest — and near misses must be
// rejected. `date` is also checked day by day against JS Date arithmetic.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { ORACLE_PYTHON } from "./support/paths.js";
import { type ByteDfa, compileRegex, compileRegexNode, matchesString, sampleString } from "../src/regex/index.js";
import { seededRandom } from "../src/support/index.js";
import { KNOWN_FORMATS, formatNode, formatPattern } from "../src/schema/json-schema/formats.js";

// ---------- compiling and sampling ----------

const LIMITS = { maxDfaStates: 50_000, timeoutMs: 10_000 };
const dfaCache = new Map<string, ByteDfa>();
function dfaOf(format: string): ByteDfa {
  let dfa = dfaCache.get(format);
  if (dfa === undefined) {
    const node = formatNode(format);
    assert.ok(node !== null, format);
    dfa = compileRegexNode(node, LIMITS);
    dfaCache.set(format, dfa);
  }
  return dfa;
}
const accepts = (format: string, s: string): boolean => matchesString(dfaOf(format), s);

function samples(format: string, count: number, seed: number, maxBytes = 80): string[] {
  const random = seededRandom(seed);
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const s = sampleString(dfaOf(format), random, { maxBytes, stopProbability: 0.1 });
    assert.ok(s !== null, format);
    out.push(s);
  }
  return out;
}

// ---------- the Python oracle (python3-jsonschema 4.10 FormatChecker) ----------

const ORACLE_SOURCE = `
import json, sys, warnings
warnings.simplefilter("ignore")
from jsonschema import FormatChecker
checker = FormatChecker()
out = []
for job in json.load(sys.stdin):
    if job["format"] not in checker.checkers:
        raise SystemExit("no checker for " + job["format"])
    out.append([checker.conforms(s, job["format"]) for s in job["strings"]])
json.dump(out, sys.stdout)
`;

/** One Python process for the whole batch: whether each string conforms to its format. */
function pythonVerdicts(jobs: Array<{ format: string; strings: string[] }>): boolean[][] {
  const result = spawnSync(ORACLE_PYTHON, ["-c", ORACLE_SOURCE], { input: JSON.stringify(jobs), encoding: "utf8", maxBuffer: 1 << 26 });
  assert.equal(result.status, 0, result.stderr);
  return JSON.parse(result.stdout) as boolean[][];
}

// Hand-written members (each must be in our language and valid) and near misses (not in our language).
const VALID: Record<string, string[]> = {
  date: ["2023-01-31", "2024-02-29", "2000-02-29", "1900-02-28", "1600-02-29", "2023-04-30", "2023-12-31", "0001-01-01"],
  email: ["a@b", "joe.bloggs@example.com", "!#$%&'*+-/=?^_`{|}~@example.org", "a.b.c@x-y.z0", `${"a".repeat(64)}@h.com`],
  ipv4: ["0.0.0.0", "255.255.255.255", "192.168.1.10", "10.0.99.249", "1.2.3.4"],
  ipv6: [
    "::",
    "::1",
    "1::",
    "1:2:3:4:5:6:7:8",
    "1:2:3:4:5:6:7::",
    "::2:3:4:5:6:7:8",
    "1::8",
    "fe80::0202:b3ff:FE1E:8329",
    "::ffff:192.168.1.1",
    "1:2:3:4:5:6:1.2.3.4",
    "1::1.2.3.4",
    "abcd:ABCD:0:00:000:0000::",
  ],
  "json-pointer": ["", "/", "/foo", "/foo/0", "/a~1b", "/m~0n", "//", "/ ", "/é/\u{1F600}", '/c%d/e^f/g|h/i\\j/k"l'],
  "relative-json-pointer": ["0", "0#", "1", "12/a~0b", "3/", "10#"],
  uri: [
    "http://example.com",
    "https://user:pw@example.com:8080/p/a/t/h?query=1&x#frag",
    "urn:isbn:0451450523",
    "mailto:John.Doe@example.com",
    "file:///etc/hosts",
    "a:",
    "x://[::1]:80/",
    "x://[v7.abc:def]/",
    "x://1.2.3.4/%2Fa%2f",
    "tel:+1-816-555-1212",
    "ldap://[2001:db8::7]/c=GB?objectClass?one",
  ],
  "uri-reference": ["", "#", "?", "/", "a", "../a/b", "//host", "./this:that", "#frag/?x", "http://a/b?c#d"],
  iri: ["http://ƒøø.ßår/?∂éœ=πîx#πîüx", "x:\u{10000}", "x:?\u{e000}", "a:"],
  "iri-reference": ["", "ƒøø", "/é?\u{f0000}#é", "http://a"],
  uuid: ["2eb8aa08-aa98-11ea-b4aa-73b441d16380", "00000000-0000-0000-0000-000000000000", "ABCDEFAB-CDEF-ABCD-EFAB-CDEFABCDEFAB"],
  "date-time": ["1963-06-19T08:30:06.283185Z", "1937-01-01T12:00:27.87+00:20", "2024-02-29t23:59:59z", "0004-02-29T00:00:00-23:59"],
  time: ["08:30:06Z", "08:30:06.283185+01:00", "23:59:59z", "00:00:00-00:00"],
  duration: ["P4Y", "P4Y2M", "P1Y2M3DT4H5M6S", "PT0S", "P0D", "PT36H", "P1W", "P2M3D", "PT1M", "PT1H2M", "P1DT1S"],
  hostname: ["localhost", "a", "example.com", "ab-c.example", "a-b-c.d", "1host", "h0stn4me", `${"a".repeat(62)}.b`, "a-b.c-d.e"],
  "uri-template": [
    "",
    "http://example.com/dictionary/{term:1}/{term}",
    "http://example.com/dictionary",
    "dictionary/{term:1}/{term}",
    "{+path}/here{?x,y*}{#frag}",
    "{.dom*}{/seg,list*}{;p}{&q}",
    "{var:9999}{v%20x}{a.b}",
    "é{x}",
  ],
};
const INVALID: Record<string, string[]> = {
  "uri-template": [
    "http://example.com/dictionary/{term:1}/{term",
    "{}",
    "{term:0}",
    "{term:10000}",
    "{a..b}",
    "{=x}",
    "{x|y}",
    "a b",
    "%2",
    "{x}}",
    "<{x}>",
    "{x,}",
  ],
  date: ["2023-02-29", "1900-02-29", "2023-04-31", "2023-13-01", "2023-00-10", "2023-01-00", "2023-1-01", "20230101", "2023-01-32"],
  email: ["a@", "@b.com", "a", ".a@b.com", "a.@b.com", "a..b@c.com", "a@-b.com", "a@b-.com", "a@b..com", "a b@c.com", "a@[1.2.3.4]"],
  ipv4: ["256.1.1.1", "01.1.1.1", "1.1.1", "1.1.1.1.1", "1.1.1.", "1..1.1", "1.1.1.1 ", "a.b.c.d", "300.0.0.0"],
  ipv6: [
    "1:2:3:4:5:6:7:8:9",
    ":::",
    "1::2::3",
    "12345::",
    "1:2:3:4:5:6:7",
    ":1::",
    "1::2:",
    "::1.2.3.04",
    "::ffff:256.1.1.1",
    "fe80::1%eth0",
    "g::",
  ],
  "json-pointer": ["a", "/~", "/~2", "/a~", "#/a"],
  "relative-json-pointer": ["", "01", "-1", "#", "0##", "/a", "1a", "+1/a"],
  uri: ["", "a", "1a:b", "//host", "http://a b", "http://a/%zz", "http://[::1%25eth0]/", "x:é", "http://[1:2]/"],
  "uri-reference": ["a:b c", "%", "http://[::1", "a:%2"],
  iri: ["é:x", "x:\u{fffe}", "x:\ue000", "x#\ue000"],
  "iri-reference": ["a b", "\u{fffe}"],
  uuid: [
    "2eb8aa08-aa98-11ea-b4aa-73b441d1638",
    "2eb8aa08aa9811eab4aa73b441d16380",
    "2eb8aa08-aa98-11ea-b4aa-73b441d1638g",
    "{2eb8aa08-aa98-11ea-b4aa-73b441d16380}",
  ],
  "date-time": [
    "1963-06-19T08:30:06",
    "1963-06-19 08:30:06Z",
    "1963-06-19T08:30:60Z",
    "2023-02-29T00:00:00Z",
    "1963-06-19T24:00:00Z",
    "1963-06-19T08:30:06.Z",
  ],
  time: ["08:30:06", "24:00:00Z", "08:60:00Z", "08:30:06+24:00", "8:30:06Z", "08:30:06.+01:00", "08:30:60Z"],
  duration: ["P", "PT", "P1Y1D", "PT1H1S", "P1W1D", "1Y", "P1D2M", "P1.5Y", "p1d", "P1DT", "PT1D"],
  // A-labels ("xn--…") are refused: whether they are valid Punycode is beyond an automaton.
  hostname: [
    "xn--bcher-kva.example",
    "ab--c.com",
    "-host.com",
    "host-.com",
    "a..b",
    ".a",
    "a.",
    "a_b.com",
    "a b",
    `${"a".repeat(64)}.com`,
    "é.com",
    "",
  ],
};

// ---------- hand-written validators (independent of the regular expressions under test) ----------

function daysInMonth(year: number, month: number): number {
  const d = new Date(0);
  d.setUTCFullYear(year, month, 0); // day 0 of the next month: the last day of `month`
  return d.getUTCDate();
}
function validDate(y: string, m: string, d: string): boolean {
  const [year, month, day] = [Number(y), Number(m), Number(d)];
  return month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month);
}
/** RFC 3339 full-time fields (seconds to 59: the leap second is refused by design). */
function validTimeFields(h: string, mi: string, s: string, offH?: string, offM?: string): boolean {
  return Number(h) <= 23 && Number(mi) <= 59 && Number(s) <= 59 && (offH === undefined || (Number(offH) <= 23 && Number(offM) <= 59));
}
const TIME_SHAPE = String.raw`(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-](\d{2}):(\d{2}))`;
function validDateTime(s: string): boolean {
  const m = new RegExp(String.raw`^(\d{4})-(\d{2})-(\d{2})[Tt]${TIME_SHAPE}$`).exec(s);
  if (m === null || !validDate(m[1]!, m[2]!, m[3]!) || !validTimeFields(m[4]!, m[5]!, m[6]!, m[7], m[8])) return false;
  // And JavaScript's own ISO parser agrees (it wants upper case and at most 3 fraction digits).
  return !Number.isNaN(Date.parse(s.toUpperCase().replace(/(\.\d{1,3})\d*/, "$1")));
}
function validTime(s: string): boolean {
  const m = new RegExp(`^${TIME_SHAPE}$`).exec(s);
  return m !== null && validTimeFields(m[1]!, m[2]!, m[3]!, m[4], m[5]);
}
/** RFC 3339 Appendix A: P then weeks alone, or a contiguous run of Y M D and/or T with a contiguous run of H M S. */
function validDuration(s: string): boolean {
  const m = /^P(?:(\d+)W|((?:\d+[YMD])*)(?:T((?:\d+[HMS])+))?)$/.exec(s);
  if (m === null) return false;
  if (m[1] !== undefined) return true;
  const run = (part: string | undefined, order: string): boolean => {
    const designators = (part ?? "").replace(/\d+/g, "");
    return designators === "" || order.includes(designators);
  };
  return (m[2] !== "" || m[3] !== undefined) && run(m[2], "YMD") && run(m[3], "HMS");
}
/** RFC 1123: labels of 1-63 letters, digits, hyphens, not starting or ending with a hyphen; ≤ 253 in all. */
/** RFC 1123 host names, without IDNA's reserved "--" in a label's 3rd and 4th place. */
function validHostname(s: string): boolean {
  return (
    s.length <= 253 &&
    s
      .split(".")
      .every((label) => label.length <= 63 && /^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?$/.test(label) && label.slice(2, 4) !== "--")
  );
}
/** Our stricter reading of RFC 5321 Mailbox: dot-atom local part ≤ 64, "@", a host name; ≤ 254 in all. */
function validEmail(s: string): boolean {
  const at = s.lastIndexOf("@");
  if (at < 0 || s.length > 254) return false;
  const local = s.slice(0, at);
  return (
    local.length <= 64 && local.split(".").every((atom) => /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+$/.test(atom)) && validHostname(s.slice(at + 1))
  );
}

/** RFC 6570 §2 read by hand: literal runs and {operator varspec,...} expressions, no reserved operators. */
function validUriTemplate(s: string): boolean {
  const pct = /^%[0-9A-Fa-f]{2}/;
  let i = 0;
  while (i < s.length) {
    if (s[i] === "{") {
      const close = s.indexOf("}", i);
      if (close < 0) return false;
      let body = s.slice(i + 1, close);
      if ("+#./;?&".includes(body[0] ?? "")) body = body.slice(1);
      const specs = body.split(",");
      const ok = specs.every((spec) => {
        const m = /^(.*?)(?::([1-9][0-9]{0,3})|\*)?$/.exec(spec)!;
        const name = m[1]!.replace(/%[0-9A-Fa-f]{2}/g, "_");
        return name !== "" && name.split(".").every((part) => /^[A-Za-z0-9_]+$/.test(part));
      });
      if (!ok) return false;
      i = close + 1;
    } else if (s[i] === "%") {
      if (!pct.test(s.slice(i))) return false;
      i += 3;
    } else {
      const c = s.codePointAt(i)!;
      if (c <= 0x20 || c === 0x7f || "\"'%<>\\^`{|}".includes(String.fromCodePoint(c))) return false;
      if (c >= 0x80 && c < 0xa0) return false;
      i += c > 0xffff ? 2 : 1;
    }
  }
  return true;
}

const HAND_VALIDATORS: Record<string, (s: string) => boolean> = {
  "uri-template": validUriTemplate,
  "date-time": validDateTime,
  time: validTime,
  duration: validDuration,
  hostname: validHostname,
  email: validEmail,
};
// Formats python3-jsonschema 4.10 really checks ("time" there is draft 3's %H:%M:%S, so not used).
const PYTHON_CHECKED = [
  "date",
  "email",
  "ipv4",
  "ipv6",
  "json-pointer",
  "relative-json-pointer",
  "uri",
  "uri-reference",
  "iri",
  "iri-reference",
  "uuid",
];

// Valid strings the oracle gets wrong, not asked: jsonschema 4.10's relative-json-pointer rejects
// any digit after a "0" ("100", "101/0": it means to refuse leading zeros only).
const ORACLE_BLIND_SPOTS: Record<string, RegExp> = { "relative-json-pointer": /^[0-9]*0[0-9]/ };

// ---------- tests ----------

test("known formats have nodes; unknown formats are annotations (null)", () => {
  assert.deepEqual([...KNOWN_FORMATS].sort(), [...PYTHON_CHECKED, "date-time", "time", "duration", "hostname", "uri-template"].sort());
  for (const f of KNOWN_FORMATS) {
    const node = formatNode(f);
    assert.ok(node !== null, f);
    assert.equal(formatNode(f), node, `${f} is cached`);
  }
  for (const f of ["idn-email", "idn-hostname", "regex", "color", "no-such-format", "", "toString", "__proto__"]) {
    assert.equal(formatNode(f), null, f);
    assert.equal(formatPattern(f), null, f);
  }
});

test("formatNode is the language of formatPattern's text", () => {
  for (const f of KNOWN_FORMATS) assert.equal(dfaOf(f).numStates, compileRegex(formatPattern(f)!, LIMITS).numStates, f);
});

test("hand-written members are accepted and near misses rejected", () => {
  for (const f of KNOWN_FORMATS) {
    for (const s of VALID[f] ?? []) assert.ok(accepts(f, s), `${f} should accept ${JSON.stringify(s)}`);
    for (const s of INVALID[f] ?? []) assert.ok(!accepts(f, s), `${f} should reject ${JSON.stringify(s)}`);
  }
});

test("sampled members are valid per python3-jsonschema's FormatChecker", () => {
  const jobs: Array<{ format: string; strings: string[] }> = [];
  PYTHON_CHECKED.forEach((format, i) => {
    const sampled = samples(format, 300, 1000 + i).filter((s) => !ORACLE_BLIND_SPOTS[format]?.test(s));
    jobs.push({ format, strings: [...sampled, ...(VALID[format] ?? [])] });
  });
  // Uniform byte choices rarely reach the authority forms: compose some from sampled hosts.
  const ipv6 = samples("ipv6", 40, 21);
  const ipv4 = samples("ipv4", 40, 22);
  const hosts = samples("hostname", 40, 23, 40);
  const composed = ipv6.flatMap((v6, i) => [
    `s+x.y-z://[${v6}]:${i}/p%41?q=${ipv4[i]}#f`,
    `s://u:p@${ipv4[i]}/`,
    `https://${hosts[i]}:443`,
  ]);
  for (const s of composed) assert.ok(accepts("uri", s) && accepts("iri", s), s);
  const relative = ipv6.flatMap((v6, i) => [`//[${v6}]`, `//${hosts[i]}/a?b#c`]);
  for (const s of relative) assert.ok(accepts("uri-reference", s) && !accepts("uri", s), s);
  jobs.push({ format: "uri", strings: composed }, { format: "uri-reference", strings: [...composed, ...relative] });
  const verdicts = pythonVerdicts(jobs);
  jobs.forEach((job, i) => {
    const bad = job.strings.filter((_, j) => verdicts[i]![j] !== true);
    assert.deepEqual(bad, [], `${job.format}: members that Python rejects`);
  });
  // The oracle is alive: it rejects the near misses too (except email, where it only looks for "@").
  // Python 3.11's date.fromisoformat also reads the basic form "20230101", which RFC 3339 does not
  // have; jsonschema 4.10 takes "" for a relative JSON pointer (it never checks the integer is there).
  const lenient: Record<string, string[]> = { date: ["20230101"], "relative-json-pointer": [""] };
  const misses = PYTHON_CHECKED.filter((f) => f !== "email").map((format) => ({
    format,
    strings: (INVALID[format] ?? []).filter((s) => !lenient[format]?.includes(s)),
  }));
  const missVerdicts = pythonVerdicts(misses);
  misses.forEach((job, i) => {
    const accepted = job.strings.filter((_, j) => missVerdicts[i]![j] === true);
    assert.deepEqual(accepted, [], `${job.format}: near misses that Python accepts`);
  });
});

test("sampled members are valid per hand-written validators", () => {
  for (const [format, valid] of Object.entries(HAND_VALIDATORS)) {
    for (const s of [...samples(format, 400, 7, 300), ...(VALID[format] ?? [])]) assert.ok(valid(s), `${format}: ${JSON.stringify(s)}`);
    for (const s of INVALID[format] ?? []) assert.ok(!valid(s) || format === "email", `validator ${format} accepts ${JSON.stringify(s)}`);
  }
});

/** Bytes in the longest member of a finite language (Infinity if the DFA has a cycle). */
function longestMember(dfa: ByteDfa): number {
  const memo = new Map<number, number>();
  const visit = (s: number): number => {
    const known = memo.get(s);
    if (known !== undefined) return known;
    memo.set(s, Number.POSITIVE_INFINITY); // on the stack: a cycle reads as unbounded
    let best = dfa.accepting[s] === 1 ? 0 : Number.NEGATIVE_INFINITY;
    for (let c = 0; c < dfa.numClasses; c++) {
      const t = dfa.next[s * dfa.numClasses + c]!;
      if (t >= 0) best = Math.max(best, 1 + visit(t));
    }
    memo.set(s, best);
    return best;
  };
  return visit(dfa.start);
}

test("hostname and email stay within the RFC length limits, and reach them", () => {
  assert.equal(longestMember(dfaOf("hostname")), 251); // RFC 1123: ≤ 253
  assert.equal(longestMember(dfaOf("email")), 64 + 1 + 188); // RFC 5321 §4.5.3.1: ≤ 254
  assert.equal(longestMember(dfaOf("ipv6")), 45);
  assert.equal(longestMember(dfaOf("uri")), Number.POSITIVE_INFINITY);
  assert.ok(accepts("hostname", Array(4).fill("a".repeat(62)).join("."))); // 251 characters
  assert.ok(accepts("hostname", Array(8).fill("a".repeat(30)).join(".")));
  assert.ok(!accepts("hostname", Array(4).fill("a".repeat(63)).join("."))); // 255: too long
  assert.ok(!accepts("email", `${"a".repeat(65)}@h.com`));
  assert.ok(accepts("email", `${"a".repeat(64)}@${Array(3).fill("b".repeat(62)).join(".")}`)); // 253 characters
});

test("date: Feb 28/29/30 of every year 0001-9999 follow the Gregorian leap rule; year 0000 is not written", () => {
  for (const day of ["01-01", "02-28", "02-29"]) assert.equal(accepts("date", `0000-${day}`), false);
  for (let year = 1; year <= 9999; year++) {
    const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
    const y = String(year).padStart(4, "0");
    assert.equal(accepts("date", `${y}-02-28`), true, y);
    assert.equal(accepts("date", `${y}-02-29`), leap, y);
    assert.equal(accepts("date", `${y}-02-30`), false, y);
  }
});

test("date: every day 00-31 of every month of 1896-1904, 1999-2001 and 2100 (and a few centuries)", () => {
  const years = [1896, 1897, 1898, 1899, 1900, 1901, 1902, 1903, 1904, 1999, 2000, 2001, 2100, 0, 100, 400, 1600, 9996];
  const pad = (n: number, width: number): string => String(n).padStart(width, "0");
  let checked = 0;
  for (const year of years) {
    for (let month = 0; month <= 13; month++) {
      for (let day = 0; day <= 31; day++) {
        const date = `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}`;
        const expected = year >= 1 && month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month);
        assert.equal(accepts("date", date), expected, date);
        assert.equal(accepts("date-time", `${date}T12:00:00Z`), expected, `${date}T12:00:00Z`);
        checked++;
      }
    }
  }
  assert.equal(checked, years.length * 14 * 32);
});
