// The grammar stage's typed error (its own module so that limits.ts can extend it without an
// import cycle through lalr.ts, which re-exports it).

/** A grammar Lark refuses, or one we cannot serve: the server answers 400 with the message. */
export class GrammarError extends Error {
  constructor(
    message: string,
    readonly line?: number,
    readonly column?: number,
  ) {
    super(message);
    this.name = "GrammarError";
  }
}
