/**
 * The free text of a reply beside its calls: any text that spells none of the format's markers,
 * so that what is a call (or where the text ends) is never in doubt.
 */
import { compileRegex, pyReEscape, type ByteDfa, type RegexLimits, subtractDfas } from "../../regex/index.js";

/** Any text holding none of `markers`. */
export function textWithout(markers: readonly string[], limits: RegexLimits): ByteDfa {
  const anyText = compileRegex(".*", { flags: "s", ...limits });
  const withMarker = compileRegex(`.*(?:${markers.map(pyReEscape).join("|")}).*`, { flags: "s", ...limits });
  return subtractDfas(anyText, withMarker, limits);
}
