/**
 * Stored responses of the OpenAI Responses API (`store: true`): each one's response object and the
 * whole conversation that led to it (its input items, those of the responses before it included),
 * so `previous_response_id` costs one read. A response belongs to the API key that created it
 * (`owner`); another key reads it as absent. Each expires (`ttlMs`), and a key holds at most
 * `maxPerOwner` responses and `maxBytesPerOwner` bytes: past either, a save is refused with a
 * ResponseStoreFullError naming the limit. The check and the insert are one transaction (in
 * Postgres under a per-owner advisory lock), so concurrent saves never pass a limit together.
 *
 * Both key stores carry one: `SqliteResponseStore` over the KeyStore's database,
 * `PostgresResponseStore` over the pool; tables in migrations.ts and postgres-migrations.ts.
 */
import type Database from "better-sqlite3";

/** The limits of one owner's stored responses. */
export interface ResponseStoreLimits {
  /** How long a response is kept, ms. */
  ttlMs: number;
  maxPerOwner: number;
  maxBytesPerOwner: number;
}

/** A stored response: the response object as answered, and the conversation before its output. */
export interface StoredResponse {
  response: Record<string, unknown>;
  input: unknown[];
}

/** A key's stored responses are at a limit: the message names it and what to do. */
export class ResponseStoreFullError extends Error {
  readonly field = "store";
  constructor(
    readonly limit: "count" | "bytes",
    readonly max: number,
  ) {
    super(
      limit === "count"
        ? `store: this API key keeps ${max} stored responses at most (TRELLIS_RESPONSES_MAX_PER_KEY); delete some (DELETE /v1/responses/{id}) or send store: false`
        : `store: this API key's stored responses may take ${max} bytes at most (TRELLIS_RESPONSES_MAX_MB_PER_KEY); delete some (DELETE /v1/responses/{id}) or send store: false`,
    );
    this.name = "ResponseStoreFullError";
  }
}

export interface ResponseStore {
  /** Throws ResponseStoreFullError when the owner has no room for `bytes` more (expired ones do not count). */
  checkRoom(owner: string, bytes: number, limits: ResponseStoreLimits, nowMs?: number): Promise<void>;
  /** Saves a response under its id; throws ResponseStoreFullError past a limit. */
  save(owner: string, id: string, stored: StoredResponse, limits: ResponseStoreLimits, nowMs?: number): Promise<void>;
  /** The owner's unexpired response, or null (absent, expired, or another owner's). */
  get(owner: string, id: string, nowMs?: number): Promise<StoredResponse | null>;
  /** False when the owner has no such response. */
  delete(owner: string, id: string, nowMs?: number): Promise<boolean>;
  /** Removes every expired response; returns how many. */
  purgeExpired(nowMs?: number): Promise<number>;
}

/** What a saved response takes: its JSON text's bytes. */
function recordOf(stored: StoredResponse): { text: string; bytes: number } {
  const text = JSON.stringify(stored);
  return { text, bytes: Buffer.byteLength(text) };
}

function parseRecord(text: string): StoredResponse {
  return JSON.parse(text) as StoredResponse;
}

function checkUsage(count: number, bytes: number, added: number, limits: ResponseStoreLimits): void {
  if (count + 1 > limits.maxPerOwner) throw new ResponseStoreFullError("count", limits.maxPerOwner);
  if (bytes + added > limits.maxBytesPerOwner) throw new ResponseStoreFullError("bytes", limits.maxBytesPerOwner);
}

const USAGE_SQL = "SELECT count(*) AS count, coalesce(sum(bytes), 0) AS bytes FROM responses WHERE owner = $owner AND expires_at > $now";

/** The SQLite store's responses, in its database (better-sqlite3 is synchronous: each call is answered at once). */
export class SqliteResponseStore implements ResponseStore {
  constructor(
    private readonly db: Database.Database,
    /** The key store's write wrapper: SQLite failures become KeyStoreErrors naming the database. */
    private readonly write: <T>(operation: string, run: () => T) => T,
  ) {}

  private usage(owner: string, nowMs: number): { count: number; bytes: number } {
    return this.db.prepare(USAGE_SQL).get({ owner, now: nowMs }) as { count: number; bytes: number };
  }

  async checkRoom(owner: string, bytes: number, limits: ResponseStoreLimits, nowMs = Date.now()): Promise<void> {
    const usage = this.write("cannot read the stored responses of", () => this.usage(owner, nowMs));
    checkUsage(usage.count, usage.bytes, bytes, limits);
  }

  async save(owner: string, id: string, stored: StoredResponse, limits: ResponseStoreLimits, nowMs = Date.now()): Promise<void> {
    const { text, bytes } = recordOf(stored);
    this.write("cannot store the response in", () =>
      this.db
        .transaction(() => {
          this.db.prepare("DELETE FROM responses WHERE owner = ? AND expires_at <= ?").run(owner, nowMs);
          const usage = this.usage(owner, nowMs);
          checkUsage(usage.count, usage.bytes, bytes, limits);
          this.db
            .prepare("INSERT INTO responses (id, owner, created_at, expires_at, bytes, body) VALUES (?, ?, ?, ?, ?, ?)")
            .run(id, owner, nowMs, nowMs + limits.ttlMs, bytes, text);
        })
        .immediate(),
    );
  }

  async get(owner: string, id: string, nowMs = Date.now()): Promise<StoredResponse | null> {
    const row = this.write("cannot read a stored response from", () =>
      this.db.prepare("SELECT body FROM responses WHERE id = ? AND owner = ? AND expires_at > ?").get(id, owner, nowMs),
    ) as { body: string } | undefined;
    return row ? parseRecord(row.body) : null;
  }

  async delete(owner: string, id: string, nowMs = Date.now()): Promise<boolean> {
    const info = this.write("cannot delete a stored response from", () =>
      this.db.prepare("DELETE FROM responses WHERE id = ? AND owner = ? AND expires_at > ?").run(id, owner, nowMs),
    );
    return info.changes > 0;
  }

  async purgeExpired(nowMs = Date.now()): Promise<number> {
    return this.write("cannot delete expired responses from", () =>
      this.db.prepare("DELETE FROM responses WHERE expires_at <= ?").run(nowMs),
    ).changes;
  }
}

/** One statement of the Postgres store (its failures become KeyStoreErrors naming the operation). */
export type PostgresQuery = <R extends Record<string, unknown>>(
  operation: string,
  text: string,
  values?: unknown[],
) => Promise<{ rows: R[]; rowCount: number | null }>;

/** Statements run in one transaction on one connection (BEGIN … COMMIT, ROLLBACK on a throw). */
export type PostgresTransaction = <T>(operation: string, run: (query: PostgresQuery) => Promise<T>) => Promise<T>;

const PG_USAGE_SQL = "SELECT count(*) AS count, coalesce(sum(bytes), 0) AS bytes FROM responses WHERE owner = $1 AND expires_at > $2";

/** The Postgres store's responses, shared by replicas. */
export class PostgresResponseStore implements ResponseStore {
  constructor(
    private readonly query: PostgresQuery,
    private readonly transaction: PostgresTransaction,
  ) {}

  async checkRoom(owner: string, bytes: number, limits: ResponseStoreLimits, nowMs = Date.now()): Promise<void> {
    const result = await this.query<{ count: number; bytes: number }>("cannot read the stored responses of", PG_USAGE_SQL, [owner, nowMs]);
    checkUsage(result.rows[0]!.count, result.rows[0]!.bytes, bytes, limits);
  }

  async save(owner: string, id: string, stored: StoredResponse, limits: ResponseStoreLimits, nowMs = Date.now()): Promise<void> {
    const { text, bytes } = recordOf(stored);
    await this.transaction("cannot store the response in", async (query) => {
      // One saver per owner at a time, across replicas: the limit check and the insert agree.
      await query("cannot store the response in", "SELECT pg_advisory_xact_lock(hashtext($1))", [owner]);
      await query("cannot store the response in", "DELETE FROM responses WHERE owner = $1 AND expires_at <= $2", [owner, nowMs]);
      const usage = await query<{ count: number; bytes: number }>("cannot store the response in", PG_USAGE_SQL, [owner, nowMs]);
      checkUsage(usage.rows[0]!.count, usage.rows[0]!.bytes, bytes, limits);
      await query(
        "cannot store the response in",
        "INSERT INTO responses (id, owner, created_at, expires_at, bytes, body) VALUES ($1, $2, $3, $4, $5, $6)",
        [id, owner, nowMs, nowMs + limits.ttlMs, bytes, text],
      );
    });
  }

  async get(owner: string, id: string, nowMs = Date.now()): Promise<StoredResponse | null> {
    const result = await this.query<{ body: string }>(
      "cannot read a stored response from",
      "SELECT body FROM responses WHERE id = $1 AND owner = $2 AND expires_at > $3",
      [id, owner, nowMs],
    );
    const row = result.rows[0];
    return row ? parseRecord(row.body) : null;
  }

  async delete(owner: string, id: string, nowMs = Date.now()): Promise<boolean> {
    const result = await this.query(
      "cannot delete a stored response from",
      "DELETE FROM responses WHERE id = $1 AND owner = $2 AND expires_at > $3",
      [id, owner, nowMs],
    );
    return (result.rowCount ?? 0) > 0;
  }

  async purgeExpired(nowMs = Date.now()): Promise<number> {
    const result = await this.query("cannot delete expired responses from", "DELETE FROM responses WHERE expires_at <= $1", [nowMs]);
    return result.rowCount ?? 0;
  }
}
