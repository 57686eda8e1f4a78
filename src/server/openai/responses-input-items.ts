/**
 * GET /v1/responses/{id}/input_items: the items a stored response was generated from (the
 * conversation Trellis rendered: a previous_response_id's input and output first, then this
 * request's input; a reasoning item as its text, what the template was given), each with a
 * stable id `rs|msg|fc|fco_<key>_i<n>` (which an item_reference may name), paged as OpenAI's
 * lists are: `limit` 1–100 (20), `order` desc (default) or asc, `after` an item id. `include`
 * asks for fields of input images and files, which Trellis never takes: refused by name.
 */
import type { ConversationItem } from "./responses-request.js";
import { OpenAIRequestError } from "./errors.js";

export interface InputItemsQuery {
  limit: number;
  order: "asc" | "desc";
  after: string | null;
}

/** The listing's query, checked (400 naming the parameter). */
export function inputItemsQuery(query: Record<string, unknown>): InputItemsQuery {
  for (const name of Object.keys(query)) {
    if (!["limit", "order", "after", "include", "include[]"].includes(name))
      throw new OpenAIRequestError(400, `${name}: unknown query parameter (limit, order, after)`, name);
  }
  if (query.include !== undefined || query["include[]"] !== undefined)
    throw new OpenAIRequestError(400, "include: Trellis takes no input images or files, so there is nothing to include", "include");
  let limit = 20;
  if (query.limit !== undefined) {
    const text = String(query.limit);
    if (!/^\d{1,3}$/.test(text) || Number(text) < 1 || Number(text) > 100)
      throw new OpenAIRequestError(400, `limit: must be a whole number from 1 to 100, got '${text.slice(0, 20)}'`, "limit");
    limit = Number(text);
  }
  const order = query.order ?? "desc";
  if (order !== "asc" && order !== "desc") throw new OpenAIRequestError(400, "order: must be 'asc' or 'desc'", "order");
  const after = query.after === undefined ? null : String(query.after);
  return { limit, order, after };
}

/** One conversation item as OpenAI lists it, with its id. */
export function listedItem(item: ConversationItem, id: string): Record<string, unknown> {
  if (item.type === "reasoning") {
    const content = item.text === null ? [] : [{ type: "reasoning_text", text: item.text }];
    return { id, type: "reasoning", summary: [], content, status: "completed" };
  }
  if (item.type === "message") {
    const kind = item.role === "assistant" ? "output_text" : "input_text";
    return {
      id,
      type: "message",
      role: item.role,
      status: "completed",
      content: [{ type: kind, text: item.content, ...(kind === "output_text" ? { annotations: [] } : {}) }],
    };
  }
  if (item.type === "function_call") return { id, ...item, status: "completed" };
  return { id, ...item, status: "completed" };
}

/** The id input item `index` of the response with random part `key` has. */
export function inputItemId(item: ConversationItem, key: string, index: number): string {
  const prefix = { reasoning: "rs", message: "msg", function_call: "fc", function_call_output: "fco" }[item.type];
  return `${prefix}_${key}_i${index}`;
}

/** A page of the stored input (404 for an `after` that is not one of its ids). */
export function inputItemsPage(input: readonly ConversationItem[], key: string, query: InputItemsQuery): Record<string, unknown> {
  const all = input.map((item, i) => listedItem(item, inputItemId(item, key, i)));
  if (query.order === "desc") all.reverse();
  let from = 0;
  if (query.after !== null) {
    const at = all.findIndex((item) => item.id === query.after);
    if (at < 0) throw new OpenAIRequestError(400, `after: '${query.after.slice(0, 80)}' is not an input item of this response`, "after");
    from = at + 1;
  }
  const data = all.slice(from, from + query.limit);
  return {
    object: "list",
    data,
    first_id: (data[0]?.id as string | undefined) ?? null,
    last_id: (data.at(-1)?.id as string | undefined) ?? null,
    has_more: from + query.limit < all.length,
  };
}
