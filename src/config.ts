/**
 * Service configuration: environment variables, overridden by CLI flags. Every setting has one
 * entry in SETTINGS (its variable, flag, default and description); the README's configuration
 * table is written from the same list, so docs and behaviour cannot drift apart.
 */
import { availableParallelism, homedir } from "node:os";
import { join, resolve } from "node:path";
import { GPU_CHOICES } from "./model/index.js";
import type { GrammarLimits } from "./grammar/index.js";

export interface Config {
  host: string;
  port: number;
  /** GGUF model path; empty = download the default model into modelCacheDir. */
  modelPath: string;
  modelCacheDir: string;
  /** Folder of the SQLite key store (when no database URL is set). */
  dataDir: string;
  /** postgres://… of a shared key store; empty = SQLite in dataDir. */
  databaseUrl: string;
  /** Connections of the Postgres pool. */
  databasePoolSize: number;
  /** Migrate the key store's schema at start (under a lock); false: a migration job does it. */
  migrateOnStart: boolean;
  /** How long a key's row read from Postgres is used before reading it again, ms. */
  keyCacheMs: number;
  /** While Postgres cannot be reached, how long a key read before keeps being served, ms. */
  keyStaleMs: number;
  /** OpenAI Responses API: days a stored response is kept; most responses and MB one key keeps. */
  responsesTtlDays: number;
  responsesMaxPerKey: number;
  responsesMaxMbPerKey: number;
  /** redis://… shared by replicas for rate limits, revocations and dashboard sessions; empty = per process. */
  redisUrl: string;
  /** Fixed API keys (scripts, tests); never stored. */
  apiKeys: string[];
  /** Dashboard sign-in; empty = generated when first serving, printed once, stored hashed. */
  adminToken: string;
  /** Requests per minute per key; 0 = unlimited. */
  rateLimit: number;
  /** Upper bound accepted for max_new_tokens. */
  maxNewTokensLimit: number;
  maxPromptChars: number;
  maxPatternChars: number;
  maxPatterns: number;
  maxGrammarChars: number;
  /** Upper bound accepted for max_ignored_run. */
  maxIgnoredRunLimit: number;
  maxCategories: number;
  maxCategoryChars: number;
  /** Embeddings: most inputs per request, most tokens per request (all inputs), most tokens per input. */
  embeddingMaxInputs: number;
  embeddingMaxTokens: number;
  embeddingInputTokens: number;
  /** Generation requests running at once inside the server gate. */
  concurrency: number;
  /** Generation requests waiting for a slot; past it → 503. */
  queueSize: number;
  /** Per-request deadline for generation, milliseconds; past it → 503. */
  requestTimeoutMs: number;
  /** At shutdown, how long requests are still served after /readyz turns 503, ms. */
  shutdownDelayMs: number;
  bodyLimitBytes: number;
  threads: number;
  contextSize: number;
  /** Prefix cache: most tokens it keeps between requests (0: off; -1: the whole context), most entries. */
  prefixCacheTokens: number;
  prefixCacheEntries: number;
  /** Append forced text without sampling it (fast-forward); a request's fast_forward overrides. */
  fastForward: boolean;
  /** JSON Schema free values at any depth (rule networks) rather than two levels in one DFA. */
  jsonFreeAnyDepth: boolean;
  /** Regex automaton cap: DFA states; beyond it 422 "too complex". */
  regexMaxStates: number;
  /** Work units one regex, grammar or JSON Schema compile may spend (422 beyond: deterministic). */
  compileMaxWork: number;
  /** Grammar compile limits (422 beyond; nesting: 400). */
  grammarMaxNesting: number;
  grammarMaxTerminals: number;
  grammarMaxRules: number;
  grammarMaxReferenceDepth: number;
  grammarMaxScannerCells: number;
  /** Safety valve: wall-clock limit of one compile on its worker thread (503 beyond, never kept). */
  compileTimeoutMs: number;
  /** Worker threads that compile patterns and grammars (off the event loop). */
  compileWorkers: number;
  /** Heap of one compile worker, MB (422 beyond). */
  compileMemoryMb: number;
  /** Steps of work one token-mask computation may do (422 beyond: deterministic). */
  maskMaxWork: number;
  /** Compiles of one API key waiting at once (429 beyond). */
  compileQueuePerKey: number;
  /** Bytes (MB) of compiled patterns, grammars, matchers and refusals kept, LRU beyond. */
  cacheMb: number;
  /** HTTP: time to receive a request's headers / its whole body; idle keep-alive time (ms). */
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  keepAliveTimeoutMs: number;
  /** "" (CPU) or a node-llama-cpp GPU backend such as "cuda". */
  gpu: string;
  logLevel: string;
}

type Kind = "string" | "int" | "list" | "bool";

interface Setting {
  key: keyof Config;
  env: string;
  flag: string;
  kind: Kind;
  /** Human-readable default for the README table. */
  defaultText: string;
  description: string;
  min?: number;
  /** The values a string setting may take. */
  oneOf?: readonly string[];
}

function defaultCacheDir(): string {
  const xdg = process.env.XDG_CACHE_HOME;
  return join(xdg && xdg.length > 0 ? xdg : join(homedir(), ".cache"), "trellis");
}

export const SETTINGS: readonly Setting[] = [
  { key: "host", env: "HOST", flag: "--host", kind: "string", defaultText: "127.0.0.1", description: "Address to listen on." },
  { key: "port", env: "PORT", flag: "--port", kind: "int", min: 0, defaultText: "8080", description: "TCP port (0 = any free port)." },
  {
    key: "modelPath",
    env: "TRELLIS_MODEL",
    flag: "--model",
    kind: "string",
    defaultText: "(download default model)",
    description:
      "Path of a GGUF model. Unset: the default model (Qwen2.5-0.5B-Instruct Q4_K_M) is downloaded once into the cache folder, checksum-verified, and reused.",
  },
  {
    key: "modelCacheDir",
    env: "TRELLIS_CACHE_DIR",
    flag: "--cache-dir",
    kind: "string",
    defaultText: "$XDG_CACHE_HOME/trellis or ~/.cache/trellis",
    description: "Where the default model is downloaded.",
  },
  {
    key: "dataDir",
    env: "TRELLIS_DATA_DIR",
    flag: "--data-dir",
    kind: "string",
    defaultText: "./data",
    description: "Folder of the SQLite key store (trellis.db), used when TRELLIS_DATABASE_URL is not set.",
  },
  {
    key: "databaseUrl",
    env: "TRELLIS_DATABASE_URL",
    flag: "--database-url",
    kind: "string",
    defaultText: "(SQLite in the data folder)",
    description:
      "postgres://user:password@host:5432/db: keys, usage and settings in Postgres, shared by every replica (see Running several replicas).",
  },
  {
    key: "databasePoolSize",
    env: "TRELLIS_DATABASE_POOL",
    flag: "--database-pool",
    kind: "int",
    min: 1,
    defaultText: "10",
    description: "Connections of the Postgres pool, per replica.",
  },
  {
    key: "migrateOnStart",
    env: "TRELLIS_MIGRATE_ON_START",
    flag: "--migrate-on-start",
    kind: "bool",
    defaultText: "true",
    description:
      "Migrate the key store's schema at start, under a lock (false: `trellis migrate` or a migration job does it, and an old schema refuses to start).",
  },
  {
    key: "keyCacheMs",
    env: "TRELLIS_KEY_CACHE_MS",
    flag: "--key-cache-ms",
    kind: "int",
    defaultText: "1000",
    description:
      "Postgres: how long a key read for the key check is used before it is read again (a change made elsewhere is seen within it; at once with Redis).",
  },
  {
    key: "keyStaleMs",
    env: "TRELLIS_KEY_STALE_MS",
    flag: "--key-stale-ms",
    kind: "int",
    defaultText: "300000",
    description: "Postgres: while the database cannot be reached, how long a key checked before keeps being served from what was read.",
  },
  {
    key: "responsesTtlDays",
    env: "TRELLIS_RESPONSES_TTL_DAYS",
    flag: "--responses-ttl-days",
    kind: "int",
    min: 1,
    defaultText: "30",
    description: "OpenAI Responses API: days a stored response (`store: true`, the default) is kept for GET and `previous_response_id`.",
  },
  {
    key: "responsesMaxPerKey",
    env: "TRELLIS_RESPONSES_MAX_PER_KEY",
    flag: "--responses-max-per-key",
    kind: "int",
    min: 1,
    defaultText: "1000",
    description: "Stored responses one API key may keep; past it a request with `store: true` is refused (400 naming `store`).",
  },
  {
    key: "responsesMaxMbPerKey",
    env: "TRELLIS_RESPONSES_MAX_MB_PER_KEY",
    flag: "--responses-max-mb-per-key",
    kind: "int",
    min: 1,
    defaultText: "100",
    description: "MB of stored responses one API key may keep; past it a request with `store: true` is refused (400 naming `store`).",
  },
  {
    key: "redisUrl",
    env: "TRELLIS_REDIS_URL",
    flag: "--redis-url",
    kind: "string",
    defaultText: "(none: per replica)",
    description:
      "redis://host:6379: one rate limit per key across replicas, revocations broadcast, dashboard sessions shared; if Redis fails each replica falls back to its own.",
  },
  {
    key: "apiKeys",
    env: "TRELLIS_API_KEYS",
    flag: "--api-keys",
    kind: "list",
    defaultText: "(none)",
    description: "Comma-separated fixed API keys, for scripts and tests (not stored, no usage recorded).",
  },
  {
    key: "adminToken",
    env: "TRELLIS_ADMIN_TOKEN",
    flag: "--admin-token",
    kind: "string",
    defaultText: "(generated)",
    description:
      "Dashboard sign-in token, at least 24 characters. Unset: one is generated when the service first starts serving, printed once, and stored hashed.",
  },
  {
    key: "rateLimit",
    env: "TRELLIS_RATE_LIMIT",
    flag: "--rate-limit",
    kind: "int",
    min: 0,
    defaultText: "100",
    description: "Requests per minute per API key (token bucket); 0 = unlimited.",
  },
  {
    key: "maxNewTokensLimit",
    env: "TRELLIS_MAX_NEW_TOKENS",
    flag: "--max-new-tokens",
    kind: "int",
    min: 1,
    defaultText: "512",
    description: "Largest max_new_tokens a request may ask for.",
  },
  {
    key: "maxPromptChars",
    env: "TRELLIS_MAX_PROMPT_CHARS",
    flag: "--max-prompt-chars",
    kind: "int",
    min: 1,
    defaultText: "32768",
    description: "Longest prompt, in characters.",
  },
  {
    key: "maxPatternChars",
    env: "TRELLIS_MAX_PATTERN_CHARS",
    flag: "--max-pattern-chars",
    kind: "int",
    min: 1,
    defaultText: "4096",
    description: "Longest regex pattern, in characters (each alternative).",
  },
  {
    key: "maxPatterns",
    env: "TRELLIS_MAX_PATTERNS",
    flag: "--max-patterns",
    kind: "int",
    min: 1,
    defaultText: "64",
    description: "Most patterns in one request's pattern array.",
  },
  {
    key: "maxGrammarChars",
    env: "TRELLIS_MAX_GRAMMAR_CHARS",
    flag: "--max-grammar-chars",
    kind: "int",
    min: 1,
    defaultText: "65536",
    description: "Longest Lark grammar, in characters.",
  },
  {
    key: "maxIgnoredRunLimit",
    env: "TRELLIS_MAX_IGNORED_RUN",
    flag: "--max-ignored-run",
    kind: "int",
    min: 0,
    defaultText: "256",
    description:
      "Largest max_ignored_run a grammar request may ask for (each ignored byte of a run is a lexer state of the grammar's automaton).",
  },
  {
    key: "maxCategories",
    env: "TRELLIS_MAX_CATEGORIES",
    flag: "--max-categories",
    kind: "int",
    min: 1,
    defaultText: "256",
    description: "Most categories in one categorize request.",
  },
  {
    key: "maxCategoryChars",
    env: "TRELLIS_MAX_CATEGORY_CHARS",
    flag: "--max-category-chars",
    kind: "int",
    min: 1,
    defaultText: "256",
    description: "Longest category, in characters.",
  },
  {
    key: "embeddingMaxInputs",
    env: "TRELLIS_EMBEDDING_MAX_INPUTS",
    flag: "--embedding-max-inputs",
    kind: "int",
    min: 1,
    defaultText: "256",
    description: "Most inputs in one /v1/embeddings request.",
  },
  {
    key: "embeddingMaxTokens",
    env: "TRELLIS_EMBEDDING_MAX_TOKENS",
    flag: "--embedding-max-tokens",
    kind: "int",
    min: 1,
    defaultText: "32768",
    description: "Most tokens in one /v1/embeddings request, all inputs together (each is charged to the key's quota).",
  },
  {
    key: "embeddingInputTokens",
    env: "TRELLIS_EMBEDDING_INPUT_TOKENS",
    flag: "--embedding-input-tokens",
    kind: "int",
    min: 8,
    defaultText: "512",
    description:
      "Most tokens of one embedding input, at most the model's training context: the size of the embedding context (its own KV cache of this many cells beside the generation context's).",
  },
  {
    key: "concurrency",
    env: "TRELLIS_CONCURRENCY",
    flag: "--concurrency",
    kind: "int",
    min: 1,
    defaultText: "8",
    description: "Generation requests decoded together (continuous batching); more wait in the queue.",
  },
  {
    key: "queueSize",
    env: "TRELLIS_QUEUE_SIZE",
    flag: "--queue-size",
    kind: "int",
    min: 0,
    defaultText: "64",
    description: "Generation requests waiting for a slot; beyond it the answer is 503 with Retry-After.",
  },
  {
    key: "requestTimeoutMs",
    env: "TRELLIS_REQUEST_TIMEOUT_MS",
    flag: "--request-timeout-ms",
    kind: "int",
    min: 1,
    defaultText: "60000",
    description: "Deadline of one generation request (queueing included); past it the generation is cancelled and the answer is 503.",
  },
  {
    key: "shutdownDelayMs",
    env: "TRELLIS_SHUTDOWN_DELAY_MS",
    flag: "--shutdown-delay-ms",
    kind: "int",
    defaultText: "0",
    description:
      "On SIGTERM, how long API requests are still served after /readyz turns 503, so a load balancer's health check takes the replica out before it refuses anything (behind HAProxy: a few check intervals; on Kubernetes a preStop sleep does the same).",
  },

  {
    key: "bodyLimitBytes",
    env: "TRELLIS_BODY_LIMIT",
    flag: "--body-limit",
    kind: "int",
    min: 1,
    defaultText: "1048576",
    description: "Largest request body, in bytes (413 beyond).",
  },
  {
    key: "threads",
    env: "TRELLIS_THREADS",
    flag: "--threads",
    kind: "int",
    min: 1,
    defaultText: "CPU cores − 1 (at least 1)",
    description:
      "CPU threads for llama.cpp. One core is left to the thread that serves requests and to the compile workers: llama.cpp's threads spin-wait, so a compile (a hostile one) taking a core from a decode would stall every request.",
  },
  {
    key: "contextSize",
    env: "TRELLIS_CONTEXT_SIZE",
    flag: "--context-size",
    kind: "int",
    min: 16,
    defaultText: "4096",
    description: "Context window (tokens) per sequence; prompt + max_new_tokens must fit.",
  },
  {
    key: "prefixCacheTokens",
    env: "TRELLIS_PREFIX_CACHE_TOKENS",
    flag: "--prefix-cache-tokens",
    kind: "int",
    min: -1,
    defaultText: "-1",
    description:
      "Most KV cells the prefix cache keeps between requests, so that a prompt beginning like an earlier one (a chat resending its history) evaluates only the rest; -1: as many as the context has idle (the cache gives them up whenever a request needs them), 0: off.",
  },
  {
    key: "prefixCacheEntries",
    env: "TRELLIS_PREFIX_CACHE_ENTRIES",
    flag: "--prefix-cache-entries",
    kind: "int",
    min: 0,
    defaultText: "32",
    description: "Most finished sequences the prefix cache keeps (each holds one sequence id, given up whenever a request needs it).",
  },
  {
    key: "fastForward",
    env: "TRELLIS_FAST_FORWARD",
    flag: "--fast-forward",
    kind: "bool",
    defaultText: "true",
    description:
      "Where a constraint allows one continuation only (a JSON key and its colon, a closing bracket, a tool call's wrapper), append it as tokens in one batched decode instead of sampling each (a request's `fast_forward` overrides; off anyway with logprobs, logit_bias or penalties).",
  },
  {
    key: "jsonFreeAnyDepth",
    env: "TRELLIS_JSON_FREE_ANY_DEPTH",
    flag: "--json-free-any-depth",
    kind: "bool",
    defaultText: "true",
    description:
      'JSON Schema values the schema leaves free (`{}`, `true`, `{"type": "object"}`, absent `items`/`additionalProperties`) nest to any depth (served by a pushdown automaton, masks walked per stack); false: at most 2 levels, in one DFA (the cheapest masks).',
  },
  {
    key: "regexMaxStates",
    env: "TRELLIS_REGEX_MAX_STATES",
    flag: "--regex-max-states",
    kind: "int",
    min: 1,
    defaultText: "20000",
    description: "Most DFA states a pattern may compile to; a larger one is refused fast (422, too complex).",
  },
  {
    key: "compileMaxWork",
    env: "TRELLIS_COMPILE_MAX_WORK",
    flag: "--compile-max-work",
    kind: "int",
    min: 1,
    defaultText: "32000000",
    description:
      "Most work one regex or grammar compile may do, in units of about one inner-loop step (~65,000 a millisecond here; JSON Schema, TypeScript and tool-call compiles get eight times it); a constraint needing more is refused (422, too complex), the same on any machine.",
  },
  {
    key: "grammarMaxNesting",
    env: "TRELLIS_GRAMMAR_MAX_NESTING",
    flag: "--grammar-max-nesting",
    kind: "int",
    min: 1,
    defaultText: "100",
    description: "Deepest nesting of parentheses, brackets and regexp groups in a grammar (400 beyond).",
  },
  {
    key: "grammarMaxTerminals",
    env: "TRELLIS_GRAMMAR_MAX_TERMINALS",
    flag: "--grammar-max-terminals",
    kind: "int",
    min: 1,
    defaultText: "5000",
    description: "Most terminals in a compiled grammar, anonymous ones included (422, too complex, beyond).",
  },
  {
    key: "grammarMaxRules",
    env: "TRELLIS_GRAMMAR_MAX_RULES",
    flag: "--grammar-max-rules",
    kind: "int",
    min: 1,
    defaultText: "20000",
    description: "Most rules a grammar expands to once `?`, `*`, `+`, `~` and templates are expanded (422 beyond).",
  },
  {
    key: "grammarMaxReferenceDepth",
    env: "TRELLIS_GRAMMAR_MAX_REFERENCE_DEPTH",
    flag: "--grammar-max-reference-depth",
    kind: "int",
    min: 1,
    defaultText: "100",
    description: "Longest chain of terminals defined by other terminals (`A: B`, `B: C`, …) (422 beyond).",
  },
  {
    key: "grammarMaxScannerCells",
    env: "TRELLIS_GRAMMAR_MAX_SCANNER_CELLS",
    flag: "--grammar-max-scanner-cells",
    kind: "int",
    min: 1,
    defaultText: "6000000",
    description:
      "Largest total size of a grammar's lexer automata (DFA states × (byte classes + terminals); about 6.5 bytes each) (422 beyond).",
  },
  {
    key: "compileTimeoutMs",
    env: "TRELLIS_COMPILE_TIMEOUT_MS",
    flag: "--compile-timeout-ms",
    kind: "int",
    min: 1,
    defaultText: "30000",
    description:
      "Safety valve: longest one compile (with its first masks) may run on its worker thread, in ms; past it the worker is stopped and the answer is 503 with Retry-After, never kept (the verdicts come from TRELLIS_COMPILE_MAX_WORK and TRELLIS_MASK_MAX_WORK).",
  },
  {
    key: "compileWorkers",
    env: "TRELLIS_COMPILE_WORKERS",
    flag: "--compile-workers",
    kind: "int",
    min: 1,
    defaultText: "1",
    description: "Worker threads compiling patterns and grammars, off the thread that serves requests.",
  },
  {
    key: "compileMemoryMb",
    env: "TRELLIS_COMPILE_MEMORY_MB",
    flag: "--compile-memory-mb",
    kind: "int",
    min: 16,
    defaultText: "512",
    description: "Heap of one compile worker, in MB; a compile needing more is refused (422, too complex).",
  },
  {
    key: "maskMaxWork",
    env: "TRELLIS_MASK_MAX_WORK",
    flag: "--mask-max-work",
    kind: "int",
    min: 1,
    defaultText: "4000000",
    description:
      "Most work one token-mask computation (or budget question) may do on the thread that serves requests, in steps (trie nodes, states walked, lexer states, the patterns a lexer step weighs; about 40,000 to 150,000 a millisecond here); a constraint needing more is refused (422, too complex), the same on any machine. A new one's first masks are tried on its compile worker first, under the same limit.",
  },
  {
    key: "compileQueuePerKey",
    env: "TRELLIS_COMPILE_QUEUE_PER_KEY",
    flag: "--compile-queue-per-key",
    kind: "int",
    min: 0,
    defaultText: "4",
    description: "Compiles of one API key that may wait while its one running compile finishes; beyond it the answer is 429.",
  },
  {
    key: "cacheMb",
    env: "TRELLIS_CACHE_MB",
    flag: "--cache-mb",
    kind: "int",
    min: 1,
    defaultText: "512",
    description:
      "Memory for compiled patterns and grammars, their token masks and cached refusals, in MB; least recently used ones are dropped beyond it.",
  },
  {
    key: "headersTimeoutMs",
    env: "TRELLIS_HEADERS_TIMEOUT_MS",
    flag: "--headers-timeout-ms",
    kind: "int",
    min: 1,
    defaultText: "10000",
    description: "Longest a client may take to send a request's headers, in ms (then the connection is closed).",
  },
  {
    key: "bodyTimeoutMs",
    env: "TRELLIS_BODY_TIMEOUT_MS",
    flag: "--body-timeout-ms",
    kind: "int",
    min: 1,
    defaultText: "30000",
    description: "Longest a client may take to send a whole request, body included, in ms (408, then the connection is closed).",
  },
  {
    key: "keepAliveTimeoutMs",
    env: "TRELLIS_KEEP_ALIVE_TIMEOUT_MS",
    flag: "--keep-alive-timeout-ms",
    kind: "int",
    min: 1,
    defaultText: "5000",
    description: "How long an idle keep-alive connection stays open, in ms.",
  },
  {
    key: "gpu",
    env: "TRELLIS_GPU",
    flag: "--gpu",
    kind: "string",
    oneOf: GPU_CHOICES,
    defaultText: "auto",
    description:
      "llama.cpp build: `auto` (an installed GPU package whose GPU starts, else the CPU), `cpu`, or `cuda` / `cuda-ext` / `vulkan`, which refuse to start without a GPU device (see GPU builds).",
  },
  {
    key: "logLevel",
    env: "TRELLIS_LOG_LEVEL",
    flag: "--log-level",
    kind: "string",
    oneOf: ["fatal", "error", "warn", "info", "debug", "trace", "silent"],
    defaultText: "info",
    description: "pino log level (fatal, error, warn, info, debug, trace, silent).",
  },
];

export function defaultConfig(): Config {
  return {
    host: "127.0.0.1",
    port: 8080,
    modelPath: "",
    modelCacheDir: defaultCacheDir(),
    dataDir: resolve("data"),
    databaseUrl: "",
    databasePoolSize: 10,
    migrateOnStart: true,
    keyCacheMs: 1000,
    keyStaleMs: 300_000,
    responsesTtlDays: 30,
    responsesMaxPerKey: 1000,
    responsesMaxMbPerKey: 100,
    redisUrl: "",
    apiKeys: [],
    adminToken: "",
    rateLimit: 100,
    maxNewTokensLimit: 512,
    maxPromptChars: 32768,
    maxPatternChars: 4096,
    maxPatterns: 64,
    maxGrammarChars: 65536,
    maxIgnoredRunLimit: 256,
    maxCategories: 256,
    maxCategoryChars: 256,
    embeddingMaxInputs: 256,
    embeddingMaxTokens: 32768,
    embeddingInputTokens: 512,
    concurrency: 8,
    queueSize: 64,
    requestTimeoutMs: 60_000,
    shutdownDelayMs: 0,
    bodyLimitBytes: 1_048_576,
    threads: Math.max(1, availableParallelism() - 1),
    contextSize: 4096,
    prefixCacheTokens: -1,
    prefixCacheEntries: 32,
    fastForward: true,
    jsonFreeAnyDepth: true,
    regexMaxStates: 20_000,
    compileMaxWork: 32_000_000,
    grammarMaxNesting: 100,
    grammarMaxTerminals: 5000,
    grammarMaxRules: 20_000,
    grammarMaxReferenceDepth: 100,
    grammarMaxScannerCells: 6_000_000,
    compileTimeoutMs: 30_000,
    compileWorkers: 1,
    compileMemoryMb: 512,
    maskMaxWork: 4_000_000,
    compileQueuePerKey: 4,
    cacheMb: 512,
    headersTimeoutMs: 10_000,
    bodyTimeoutMs: 30_000,
    keepAliveTimeoutMs: 5_000,
    gpu: "",
    logLevel: "info",
  };
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

function parseValue(setting: Setting, raw: string, source: string): string | number | boolean | string[] {
  switch (setting.kind) {
    case "bool": {
      const value = raw.trim().toLowerCase();
      if (["true", "1", "yes", "on"].includes(value)) return true;
      if (["false", "0", "no", "off"].includes(value)) return false;
      throw new ConfigError(`${source} must be true or false, got "${raw}"`);
    }
    case "string":
      if (setting.oneOf && !setting.oneOf.includes(raw))
        throw new ConfigError(`${source} must be one of ${setting.oneOf.join(", ")}, got "${raw}"`);
      return raw;
    case "list":
      return raw
        .split(",")
        .map((s) => s.trim())
        .filter((s) => s.length > 0);
    case "int": {
      if (!/^\s*\d+\s*$/.test(raw)) throw new ConfigError(`${source} must be a non-negative integer, got "${raw}"`);
      const value = Number(raw);
      if (!Number.isSafeInteger(value)) throw new ConfigError(`${source} is too large: ${raw}`);
      if (setting.min !== undefined && value < setting.min) throw new ConfigError(`${source} must be ≥ ${setting.min}, got ${value}`);
      return value;
    }
  }
}

/**
 * Reads the environment, then flags (`--port 9000` or `--port=9000`). Unknown flags are an error
 * naming the known ones. Returns the config and the positional arguments left over.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  argv: readonly string[] = [],
  base: Config = defaultConfig(),
): { config: Config; positional: string[] } {
  const config: Config = { ...base, apiKeys: [...base.apiKeys] };
  const assign = (setting: Setting, raw: string, source: string): void => {
    (config as unknown as Record<string, unknown>)[setting.key] = parseValue(setting, raw, source);
  };
  for (const setting of SETTINGS) {
    const raw = env[setting.env];
    if (raw !== undefined && raw !== "") assign(setting, raw, setting.env);
  }
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith("--")) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const flag = eq >= 0 ? arg.slice(0, eq) : arg;
    const setting = SETTINGS.find((s) => s.flag === flag);
    if (!setting) {
      throw new ConfigError(`unknown option ${flag}; known options: ${SETTINGS.map((s) => s.flag).join(", ")}`);
    }
    let raw: string;
    if (eq >= 0) raw = arg.slice(eq + 1);
    else {
      const next = argv[i + 1];
      if (next === undefined) throw new ConfigError(`option ${flag} needs a value`);
      raw = next;
      i++;
    }
    assign(setting, raw, flag);
  }
  config.dataDir = resolve(config.dataDir);
  config.modelCacheDir = resolve(config.modelCacheDir);
  if (config.modelPath) config.modelPath = resolve(config.modelPath);
  // The shared services' URLs are checked here, so that a wrong one is one line before anything
  // starts (their passwords never appear in the message).
  if (config.databaseUrl && !/^postgres(ql)?:\/\//.test(config.databaseUrl)) {
    throw new ConfigError("TRELLIS_DATABASE_URL (--database-url) must start with postgres:// or postgresql://");
  }
  if (config.redisUrl && !/^rediss?:\/\/[^/]/.test(config.redisUrl)) {
    throw new ConfigError("TRELLIS_REDIS_URL (--redis-url) must start with redis:// or rediss:// and name a host");
  }
  return { config, positional };
}

/** What `serve` hands to `createEngine` of src/engine.ts. */
export interface EngineFactoryOptions {
  modelPath: string;
  threads: number;
  contextSize: number;
  /** Sequences decoded together (the server admits this many generations at once). */
  maxSequences: number;
  /** The prefix cache's limits (-1 tokens: the whole context; 0: off). */
  prefixCache?: { tokens: number; entries: number };
  /** Fast-forward through forced text unless a request turns it off. */
  fastForward?: boolean;
  /** "" = CPU, else a node-llama-cpp GPU backend name such as "cuda". */
  gpu: string;
  regexMaxStates?: number;
  /** Most tokens of one embedding input (the embedding context's size). */
  embeddingInputTokens?: number;
  /** Compile workers, their limits and the compiled-constraint cache (see ConstraintCacheOptions). */
  constraints?: {
    compileTimeoutMs: number;
    workers: number;
    workerMemoryMb: number;
    perClientQueued: number;
    budgetBytes: number;
    maskMaxWork: number;
    compileMaxWork: number;
    probeBudgets: number[];
    freeValuesAnyDepth: boolean;
    grammarLimits: Partial<GrammarLimits>;
  };
}

/** The engine the service runs for `config` (also what the load bench starts). */
export function engineOptions(config: Config, modelPath: string): EngineFactoryOptions {
  return {
    modelPath,
    threads: config.threads,
    contextSize: config.contextSize,
    maxSequences: config.concurrency,
    prefixCache: { tokens: config.prefixCacheTokens, entries: config.prefixCacheEntries },
    fastForward: config.fastForward,
    gpu: config.gpu,
    regexMaxStates: config.regexMaxStates,
    embeddingInputTokens: config.embeddingInputTokens,
    constraints: {
      compileTimeoutMs: config.compileTimeoutMs,
      workers: config.compileWorkers,
      workerMemoryMb: config.compileMemoryMb,
      perClientQueued: config.compileQueuePerKey,
      budgetBytes: config.cacheMb * 1024 * 1024,
      maskMaxWork: config.maskMaxWork,
      compileMaxWork: config.compileMaxWork,
      // The roomy budget only: a tight one makes the budget planning explore the whole automaton
      // (exact token distances, up to ~10^8 steps for everyday schemas at 152k tokens), which a
      // request whose budget needs it does on the serving thread under the same limit.
      probeBudgets: [config.maxNewTokensLimit],
      freeValuesAnyDepth: config.jsonFreeAnyDepth,
      grammarLimits: {
        maxNesting: config.grammarMaxNesting,
        maxTerminals: config.grammarMaxTerminals,
        maxRules: config.grammarMaxRules,
        maxReferenceDepth: config.grammarMaxReferenceDepth,
        maxScannerCells: config.grammarMaxScannerCells,
        maxDfaStates: config.regexMaxStates,
      },
    },
  };
}
