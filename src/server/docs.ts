/**
 * A self-contained HTML page listing the endpoints and their fields, rendered from the same
 * OpenAPI document as /openapi.json (no scripts, no external assets).
 */

type Json = Record<string, unknown>;

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

function typeOf(schema: Json): string {
  if (Array.isArray(schema.anyOf)) return (schema.anyOf as Json[]).map(typeOf).join(" | ");
  const type = schema.type;
  const types = Array.isArray(type) ? type.filter((t) => t !== "null") : [type ?? "any"];
  return types.map((t) => (t === "array" && schema.items ? `${typeOf(schema.items as Json)}[]` : String(t))).join(" | ");
}

function constraints(schema: Json): string {
  const parts: string[] = [];
  if (schema.minimum !== undefined) parts.push(`≥ ${String(schema.minimum)}`);
  if (schema.exclusiveMinimum !== undefined) parts.push(`> ${String(schema.exclusiveMinimum)}`);
  if (schema.maximum !== undefined) parts.push(`≤ ${String(schema.maximum)}`);
  if (schema.minLength !== undefined) parts.push(`length ≥ ${String(schema.minLength)}`);
  if (schema.maxLength !== undefined) parts.push(`length ≤ ${String(schema.maxLength)}`);
  if (schema.minItems !== undefined) parts.push(`items ≥ ${String(schema.minItems)}`);
  if (schema.maxItems !== undefined) parts.push(`items ≤ ${String(schema.maxItems)}`);
  if (schema.uniqueItems) parts.push("distinct");
  if (Array.isArray(schema.anyOf))
    for (const branch of schema.anyOf as Json[]) {
      const inner = constraints(branch.items ? { ...branch, ...(branch.items as Json) } : branch);
      if (inner) parts.push(`${typeOf(branch)}: ${inner}`);
    }
  return parts.join(", ");
}

function fieldTable(schema: Json): string {
  const properties = (schema.properties ?? {}) as Record<string, Json>;
  const required = new Set((schema.required ?? []) as string[]);
  const rows = Object.entries(properties).map(([name, prop]) => {
    const def = prop.default === undefined ? (required.has(name) ? "required" : "—") : JSON.stringify(prop.default);
    return `<tr><td><code>${escapeHtml(name)}</code></td><td>${escapeHtml(typeOf(prop))}</td><td>${escapeHtml(def)}</td><td>${escapeHtml(constraints(prop))}</td><td>${escapeHtml(String(prop.description ?? ""))}</td></tr>`;
  });
  if (rows.length === 0) return "";
  return `<table><thead><tr><th>field</th><th>type</th><th>default</th><th>range</th><th>meaning</th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

export function renderDocsPage(openapi: Json): string {
  const info = (openapi.info ?? {}) as Json;
  const paths = (openapi.paths ?? {}) as Record<string, Record<string, Json>>;
  const sections: string[] = [];
  for (const [path, operations] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const secured = Array.isArray(operation.security) && operation.security.length > 0;
      const body = ((operation.requestBody as Json | undefined)?.content as Json | undefined)?.["application/json"] as Json | undefined;
      const ok = ((operation.responses as Json | undefined)?.["200"] as Json | undefined)?.content as Json | undefined;
      const okSchema = (ok?.["application/json"] as Json | undefined)?.schema as Json | undefined;
      sections.push(
        `<section><h2><span class="m">${escapeHtml(method.toUpperCase())}</span> <code>${escapeHtml(path)}</code></h2>` +
          `<p>${escapeHtml(String(operation.summary ?? ""))}${secured ? " — needs <code>Authorization: Bearer &lt;key&gt;</code>" : " — no key needed"}</p>` +
          (body?.schema ? `<h3>Request body</h3>${fieldTable(body.schema as Json)}` : "") +
          (okSchema ? `<h3>Response</h3>${fieldTable(okSchema)}` : "") +
          `</section>`,
      );
    }
  }
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(String(info.title ?? "API"))} API</title>
<style>body{font:15px/1.45 system-ui,sans-serif;max-width:62rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;width:100%;margin:.5rem 0 1rem}td,th{border:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f4f4f4}.m{background:#234;color:#fff;border-radius:4px;padding:0 .4rem;font-size:.85em}section{border-top:1px solid #eee;padding-top:.5rem}</style></head>
<body><h1>${escapeHtml(String(info.title ?? "API"))} ${escapeHtml(String(info.version ?? ""))}</h1>
<p>${escapeHtml(String(info.description ?? ""))}</p>
<p>Every error is <code>{"error": "...", "code": &lt;status&gt;}</code>. Machine-readable description: <a href="/openapi.json">/openapi.json</a>.</p>
${sections.join("\n")}
</body></html>`;
}
