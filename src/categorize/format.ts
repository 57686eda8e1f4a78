/**
 * Plain completion formats for categorization. The answer follows "Answer:" so a category's
 * first token starts with a space, the way the model writes a word after a colon.
 */

/** The extra option that competes in single mode when a null answer is allowed. */
export const NULL_OPTION = "none of these";

function listing(categories: readonly string[]): string {
  return categories.map((c) => `- ${c}`).join("\n");
}

export function formatSinglePrompt(prompt: string, options: readonly string[]): string {
  return `${prompt}\n\nCategories:\n${listing(options)}\n\nThe best category is one of the above, written exactly.\nAnswer:`;
}

export function formatMultiPrompt(prompt: string, categories: readonly string[]): string {
  return `${prompt}\n\nCategories:\n${listing(categories)}\n\nFor each category, say whether it applies.\n`;
}

export function formatQuestion(category: string): string {
  return `Does "${category}" apply? Answer (yes or no):`;
}
