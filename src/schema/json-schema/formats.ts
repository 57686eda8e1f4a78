/**
 * JSON Schema `format` values as exact regular languages over the DECODED string's code points
 * (the caller JSON-quotes them). Each language is a SUBSET of what the cited RFC accepts — never a
 * superset: every string we accept is valid. Where we restrict, the comment at the production says so.
 *
 *   const node = formatNode("date");   // RegexNode, or null for a format we leave as an annotation
 *
 * Each format is written as Python-regex text, one small function or constant per RFC production
 * named after it, parsed once with parseRegex and cached. The text uses no assertions, so the
 * nodes are plain set/concat/alt/repeat trees. Everything is ASCII except the IRI productions.
 *
 * Restrictions (subsets of the RFC language), in one place:
 * - date-time / time: seconds 00-59 (the leap second "60" is refused: whether it is allowed depends
 *   on the date and offset, RFC 3339 §5.7); "T" and "Z" in either case (RFC 3339 §5.6 NOTE).
 * - duration: upper-case designators only ("P1D", not "p1d"), though ABNF strings are case-insensitive.
 * - hostname: RFC 1123 labels without "--" in the 3rd and 4th place (IDNA's A-labels: Punycode), at most 4 labels of ≤ 62 characters or at most 8 labels of ≤ 30, so
 *   the name is always ≤ 253 characters (the exact product bound would need ~28k DFA states).
 * - email: RFC 5321 Mailbox restricted to a dot-atom local part (no quoted strings) of ≤ 64
 *   characters (any ≤ 64 without dots; with dots ≤ 32 atext characters), "@", and a hostname
 *   domain (no address literals) of ≤ 3 labels of ≤ 62 or ≤ 6 labels of ≤ 30, so the mailbox is
 *   always ≤ 254 characters (RFC 5321 §4.5.3.1).
 * - uri / uri-reference / iri / iri-reference: the full RFC 3986 / RFC 3987 ABNF except that the
 *   IPvFuture "v" is lower case only; no IPv6 zone ids (RFC 6874 is not part of RFC 3986).
 * - ipv6: RFC 4291 §2.2 text forms exactly (no zone ids); ipv4: dotted quad, no leading zeros.
 * - relative-json-pointer: without the index manipulation ("+1"/"-1") of the later draft, which
 *   makes it a subset of both the draft-handrews-02 and the draft-bhutton-00 grammars.
 * - uri-template: RFC 6570 §2 levels 1-4 exactly, except the operators it reserves for future
 *   extensions ("=", ",", "!", "@", "|": a template using one cannot be expanded).
 * - Not known (null, annotations): idn-email, idn-hostname, regex, and anything else.
 */
import { parseFlagString, parseRegex, type RegexNode } from "../../regex/index.js";

// ---------- regex-text helpers ----------

/** A non-capturing group of alternatives. */
const alt = (...items: string[]): string => `(?:${items.join("|")})`;
const opt = (item: string): string => `(?:${item})?`;
const star = (item: string): string => `(?:${item})*`;
const plus = (item: string): string => `(?:${item})+`;
const times = (item: string, min: number, max: number): string => `(?:${item}){${min},${max}}`;

// ---------- RFC 5234 core rules ----------

const DIGIT = "[0-9]";
const ALPHA = "[A-Za-z]";
/** Hex digits are case-insensitive (ABNF strings; RFC 3986 §2.1). */
const HEXDIG = "[0-9A-Fa-f]";

// ---------- RFC 3339 §5.6: dates and times ----------

/**
 * Years 0001-9999: RFC 3339 allows 0000, but most date libraries (Python's `datetime` among them)
 * start at year 1, so a date we write is one every reader accepts.
 */
const dateFullyear = alt(`[1-9]${DIGIT}{3}`, `0[1-9]${DIGIT}{2}`, `00[1-9]${DIGIT}`, "000[1-9]");
/** Years divisible by 4, except centuries not divisible by 400 (proleptic Gregorian), from 0004. */
const leapYear = alt(`${DIGIT}{2}${alt("0[48]", "[2468][048]", "[13579][26]")}`, `${alt("0[48]", "[2468][048]", "[13579][26]")}00`);
const mday28 = alt("0[1-9]", "1[0-9]", "2[0-8]");
const mday30 = alt("0[1-9]", "[12][0-9]", "30");
const mday31 = alt("0[1-9]", "[12][0-9]", "3[01]");
/** full-date with real calendar validity (RFC 3339 §5.7): days per month, Feb 29 only in leap years. */
const fullDate = alt(
  `${dateFullyear}-${alt(`${alt("0[13578]", "1[02]")}-${mday31}`, `${alt("0[469]", "11")}-${mday30}`, `02-${mday28}`)}`,
  `${leapYear}-02-29`,
);
const timeHour = alt("[01][0-9]", "2[0-3]");
const timeMinute = "[0-5][0-9]";
/** Restricted: 00-59 only; the leap second 60 is refused (see the header). */
const timeSecond = "[0-5][0-9]";
const timeSecfrac = `\\.${DIGIT}+`;
const timeNumoffset = `[+-]${timeHour}:${timeMinute}`;
const timeOffset = alt("[Zz]", timeNumoffset);
const partialTime = `${timeHour}:${timeMinute}:${timeSecond}${opt(timeSecfrac)}`;
const fullTime = `${partialTime}${timeOffset}`;
const dateTime = `${fullDate}[Tt]${fullTime}`;

// ---------- RFC 3339 Appendix A: ISO 8601 durations ----------

const durSecond = `${DIGIT}+S`;
const durMinute = `${DIGIT}+M${opt(durSecond)}`;
const durHour = `${DIGIT}+H${opt(durMinute)}`;
const durTime = `T${alt(durHour, durMinute, durSecond)}`;
const durDay = `${DIGIT}+D`;
const durWeek = `${DIGIT}+W`;
const durMonth = `${DIGIT}+M${opt(durDay)}`;
const durYear = `${DIGIT}+Y${opt(durMonth)}`;
const durDate = `${alt(durDay, durMonth, durYear)}${opt(durTime)}`;
const duration = `P${alt(durDate, durTime, durWeek)}`;

// ---------- RFC 1123 §2.1 host names (bounded, see the header) ----------

const letDig = "[A-Za-z0-9]";
const ldh = "[A-Za-z0-9-]";
/**
 * A label of 1..maxLength letters, digits and hyphens, not starting or ending with a hyphen, and
 * without hyphens in both the 3rd and 4th place: IDNA reserves that for A-labels ("xn--…"), which
 * are valid only as Punycode, a check no automaton makes, so we write none.
 */
const label = (maxLength: number): string =>
  alt(
    `${letDig}${opt(letDig)}`,
    `${letDig}${ldh}${letDig}${opt(`${ldh}{0,${maxLength - 4}}${letDig}`)}`,
    `${letDig}${ldh}-${letDig}${opt(`${ldh}{0,${maxLength - 5}}${letDig}`)}`,
  );
/** At most maxLabels labels of at most maxLength characters: ≤ maxLabels·(maxLength+1)−1 in all. */
const labels = (maxLabels: number, maxLength: number): string => `${label(maxLength)}${times(`\\.${label(maxLength)}`, 0, maxLabels - 1)}`;
/** ≤ 251 or ≤ 247 characters: always within RFC 1123's 253 (255 octets on the wire). */
const hostname = alt(labels(4, 62), labels(8, 30));

// ---------- RFC 5321 §4.1.2 Mailbox (safe subset, see the header) ----------

const atext = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]";
/** Dot-string of ≤ 64 characters (RFC 5321 §4.5.3.1.1): dot-free up to 64, dotted up to 32 atext. */
const localPart = alt(`${atext}{1,64}`, `${atext}${times(`\\.?${atext}`, 0, 31)}`);
/** ≤ 188 or ≤ 185 characters, so that local-part "@" domain stays ≤ 254. */
const mailboxDomain = alt(labels(3, 62), labels(6, 30));
const mailbox = `${localPart}@${mailboxDomain}`;

// ---------- IP addresses (RFC 3986 §3.2.2, RFC 4291 §2.2) ----------

const decOctet = alt("25[0-5]", "2[0-4][0-9]", "1[0-9]{2}", "[1-9][0-9]", "[0-9]");
const ipv4address = `${decOctet}\\.${decOctet}\\.${decOctet}\\.${decOctet}`;
const h16 = `${HEXDIG}{1,4}`;
const ls32 = alt(`${h16}:${h16}`, ipv4address);
/** n times `h16 ":"`. */
const h16colon = (n: number): string => (n === 0 ? "" : times(`${h16}:`, n, n));
/** `[ *n( h16 ":" ) h16 ]`: up to n+1 pieces before a "::". */
const h16prefix = (n: number): string => opt(`${n === 0 ? "" : times(`${h16}:`, 0, n)}${h16}`);
const ipv6address = alt(
  `${h16colon(6)}${ls32}`,
  `::${h16colon(5)}${ls32}`,
  `${h16prefix(0)}::${h16colon(4)}${ls32}`,
  `${h16prefix(1)}::${h16colon(3)}${ls32}`,
  `${h16prefix(2)}::${h16colon(2)}${ls32}`,
  `${h16prefix(3)}::${h16}:${ls32}`,
  `${h16prefix(4)}::${ls32}`,
  `${h16prefix(5)}::${h16}`,
  `${h16prefix(6)}::`,
);

// ---------- RFC 4122 UUID ----------

const uuid = `${HEXDIG}{8}-${HEXDIG}{4}-${HEXDIG}{4}-${HEXDIG}{4}-${HEXDIG}{12}`;

// ---------- RFC 3986 URI / RFC 3987 IRI (the full ABNF) ----------

/** RFC 3987 ucschar (added to unreserved in IRIs). */
const ucschar =
  "\\u00a0-\\ud7ff\\uf900-\\ufdcf\\ufdf0-\\uffef" +
  "\\U00010000-\\U0001fffd\\U00020000-\\U0002fffd\\U00030000-\\U0003fffd\\U00040000-\\U0004fffd" +
  "\\U00050000-\\U0005fffd\\U00060000-\\U0006fffd\\U00070000-\\U0007fffd\\U00080000-\\U0008fffd" +
  "\\U00090000-\\U0009fffd\\U000a0000-\\U000afffd\\U000b0000-\\U000bfffd\\U000c0000-\\U000cfffd" +
  "\\U000d0000-\\U000dfffd\\U000e1000-\\U000efffd";
/** RFC 3987 iprivate (allowed in iquery only). */
const iprivate = "\\ue000-\\uf8ff\\U000f0000-\\U000ffffd\\U00100000-\\U0010fffd";

/** The RFC 3986 grammar, or RFC 3987's when `iri` (unreserved gains ucschar, query gains iprivate). */
function uriGrammar(iri: boolean): { absolute: string; reference: string } {
  const unreservedChars = `A-Za-z0-9\\-._~${iri ? ucschar : ""}`;
  const subDelimsChars = "!$&'()*+,;=";
  const pctEncoded = `%${HEXDIG}{2}`;
  const pchar = alt(`[${unreservedChars}${subDelimsChars}:@]`, pctEncoded);
  const scheme = `${ALPHA}[A-Za-z0-9+.-]*`;
  const userinfo = star(alt(`[${unreservedChars}${subDelimsChars}:]`, pctEncoded));
  const ipvFuture = `v${HEXDIG}+\\.[${unreservedChars}${subDelimsChars}:]+`;
  const ipLiteral = `\\[${alt(ipv6address, ipvFuture)}\\]`;
  const regName = star(alt(`[${unreservedChars}${subDelimsChars}]`, pctEncoded));
  const host = alt(ipLiteral, ipv4address, regName);
  const port = `${DIGIT}*`;
  const authority = `${opt(`${userinfo}@`)}${host}${opt(`:${port}`)}`;
  const segment = star(pchar);
  const segmentNz = plus(pchar);
  const segmentNzNc = plus(alt(`[${unreservedChars}${subDelimsChars}@]`, pctEncoded));
  const pathAbempty = star(`/${segment}`);
  const pathAbsolute = `/${opt(`${segmentNz}${star(`/${segment}`)}`)}`;
  const pathNoscheme = `${segmentNzNc}${star(`/${segment}`)}`;
  const pathRootless = `${segmentNz}${star(`/${segment}`)}`;
  const pathEmpty = "";
  const query = star(alt(`[${unreservedChars}${subDelimsChars}:@/?${iri ? iprivate : ""}]`, pctEncoded));
  const fragment = star(alt(`[${unreservedChars}${subDelimsChars}:@/?]`, pctEncoded));
  const hierPart = alt(`//${authority}${pathAbempty}`, pathAbsolute, pathRootless, pathEmpty);
  const relativePart = alt(`//${authority}${pathAbempty}`, pathAbsolute, pathNoscheme, pathEmpty);
  const tail = `${opt(`\\?${query}`)}${opt(`#${fragment}`)}`;
  const absolute = `${scheme}:${hierPart}${tail}`;
  const relativeRef = `${relativePart}${tail}`;
  return { absolute, reference: alt(absolute, relativeRef) };
}

// ---------- RFC 6570 URI Template ----------

/**
 * §2.1 literals: any character but CTL, SP, DQUOTE, "'", "%" (but in pct-encoded), "<", ">",
 * "\\", "^", "`", "{", "|", "}"; ucschar and iprivate included.
 */
const templateLiteral = alt(
  `[\\x21\\x23\\x24\\x26\\x28-\\x3b\\x3d\\x3f-\\x5b\\x5d\\x5f\\x61-\\x7a\\x7e${ucschar}${iprivate}]`,
  `%${HEXDIG}{2}`,
);
/** §2.3 varname = varchar *( ["."] varchar ); varchar = ALPHA / DIGIT / "_" / pct-encoded. */
const varchar = alt("[A-Za-z0-9_]", `%${HEXDIG}{2}`);
const varname = `${varchar}${star(`\\.?${varchar}`)}`;
/** §2.4 modifier-level4: ":" max-length (1-9999, no leading zero) or "*". */
const varspec = `${varname}${opt(alt(`:[1-9]${DIGIT}{0,3}`, "\\*"))}`;
/** §2.2 expression with the level 2 and 3 operators (op-reserve left out, see the header). */
const templateExpression = `\\{[+#./;?&]?${varspec}${star(`,${varspec}`)}\\}`;
const uriTemplate = star(alt(templateLiteral, templateExpression));

// ---------- RFC 6901 JSON Pointer, relative JSON Pointer ----------

/** unescaped = %x00-2E / %x30-7D / %x7F-10FFFF, i.e. anything but "/" and "~". */
const referenceToken = star(alt("[^/~]", "~[01]"));
const jsonPointer = star(`/${referenceToken}`);
const nonNegativeInteger = alt("0", "[1-9][0-9]*");
const relativeJsonPointer = `${nonNegativeInteger}${alt("#", jsonPointer)}`;

// ---------- the table ----------

const uriRules = uriGrammar(false);
const iriRules = uriGrammar(true);

const FORMAT_PATTERNS: Readonly<Record<string, string>> = {
  "date-time": dateTime,
  date: fullDate,
  time: fullTime,
  duration,
  email: mailbox,
  hostname,
  ipv4: ipv4address,
  ipv6: ipv6address,
  uuid,
  uri: uriRules.absolute,
  "uri-reference": uriRules.reference,
  iri: iriRules.absolute,
  "iri-reference": iriRules.reference,
  "json-pointer": jsonPointer,
  "relative-json-pointer": relativeJsonPointer,
  "uri-template": uriTemplate,
};

/** The formats formatNode knows; any other format is an annotation (null). */
export const KNOWN_FORMATS: readonly string[] = Object.freeze(Object.keys(FORMAT_PATTERNS));

/** The Python-regex text (full match) of a known format, or null. */
export function formatPattern(format: string): string | null {
  return Object.hasOwn(FORMAT_PATTERNS, format) ? FORMAT_PATTERNS[format]! : null;
}

const nodeCache = new Map<string, RegexNode>();

/** The language of a known format as a RegexNode over code points (cached), or null for an unknown format. */
export function formatNode(format: string): RegexNode | null {
  const pattern = formatPattern(format);
  if (pattern === null) return null;
  let node = nodeCache.get(format);
  if (node === undefined) {
    node = parseRegex(pattern, parseFlagString(""));
    nodeCache.set(format, node);
  }
  return node;
}
