/**
 * The store's secrets: API keys (generated once, kept only as sha256 hashes, compared in constant
 * time) and the dashboard's admin token (configured, or generated at first start).
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { codePointLength } from "./names.js";

export const KEY_PREFIX = "trl_";

/** What the admin token needs of a key store: its settings (SQLite's KeyStore answers at once). */
interface SettingsNow {
  claimSetting(name: string, value: string): string;
}

/** The same of any key backend (KeyBackend: SQLite or Postgres). */
interface Settings {
  getSetting(name: string): Promise<string | null>;
  claimSetting(name: string, value: string): Promise<string>;
}

/** Shortest TRELLIS_ADMIN_TOKEN accepted; generated tokens are 36 characters (24 random bytes). */
export const MIN_ADMIN_TOKEN_CHARS = 24;

/** TRELLIS_ADMIN_TOKEN is set but too short to resist guessing. */
export class AdminTokenError extends Error {
  constructor(readonly length: number) {
    super(
      `TRELLIS_ADMIN_TOKEN (--admin-token) is ${length} characters; it must be at least ${MIN_ADMIN_TOKEN_CHARS}: ` +
        "use a long random value (e.g. the output of: openssl rand -base64 32), or unset it to have one generated",
    );
    this.name = "AdminTokenError";
  }
}

export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** Constant-time comparison of two hex digests of equal length. */
export function digestsEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, "hex");
  const y = Buffer.from(b, "hex");
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

export function generateApiKey(): string {
  return KEY_PREFIX + randomBytes(32).toString("base64url");
}

/**
 * The dashboard's admin credential: TRELLIS_ADMIN_TOKEN when configured, else a token generated
 * at first start (returned once so the caller can print it) whose hash is kept in the store.
 * A configured token shorter than MIN_ADMIN_TOKEN_CHARS is refused with an AdminTokenError:
 * its length is what makes guessing infeasible (the sign-in limiter only throttles).
 */
export function ensureAdminToken(store: SettingsNow, configured: string): { hash: string; generated: string | null } {
  const fixed = configuredAdminToken(configured);
  if (fixed) return fixed;
  const token = newAdminToken();
  const stored = store.claimSetting(ADMIN_TOKEN_SETTING, sha256Hex(token));
  return { hash: stored, generated: stored === sha256Hex(token) ? token : null };
}

/**
 * ensureAdminToken for any key store. Replicas starting together on one database race to
 * generate the token: the claim is atomic, so one token wins, and only the replica whose token
 * won prints it.
 */
export async function ensureSharedAdminToken(store: Settings, configured: string): Promise<{ hash: string; generated: string | null }> {
  const fixed = configuredAdminToken(configured);
  if (fixed) return fixed;
  const token = newAdminToken();
  const stored = await store.claimSetting(ADMIN_TOKEN_SETTING, sha256Hex(token));
  return { hash: stored, generated: stored === sha256Hex(token) ? token : null };
}

/**
 * The admin credential in two steps, so that a start that fails burns no one-time token: the
 * first (before anything can fail) checks TRELLIS_ADMIN_TOKEN and reads a stored hash; when
 * there is none it makes a candidate token and stores nothing. `claim()`, called once the
 * service is serving, stores the candidate's hash (atomically, as ensureSharedAdminToken does:
 * one replica's token wins) and returns the token to print, or null when there is nothing to
 * print (configured, already stored, or another replica's won). `hash()` is the hash to accept
 * at sign-in: the candidate's until the claim, then the stored one.
 */
export async function prepareSharedAdminToken(
  store: Settings,
  configured: string,
): Promise<{ hash(): string; claim(): Promise<string | null> }> {
  const fixed = configuredAdminToken(configured);
  const stored = fixed ? null : await store.getSetting(ADMIN_TOKEN_SETTING);
  if (fixed || stored !== null) {
    const hash = fixed ? fixed.hash : stored!;
    return { hash: () => hash, claim: async () => null };
  }
  const token = newAdminToken();
  let hash = sha256Hex(token);
  let claimed = false;
  return {
    hash: () => hash,
    async claim() {
      if (claimed) return null;
      claimed = true;
      hash = await store.claimSetting(ADMIN_TOKEN_SETTING, sha256Hex(token));
      return hash === sha256Hex(token) ? token : null;
    },
  };
}

const ADMIN_TOKEN_SETTING = "admin_token_sha256";

function configuredAdminToken(configured: string): { hash: string; generated: null } | null {
  if (configured.length === 0) return null;
  const length = codePointLength(configured);
  if (length < MIN_ADMIN_TOKEN_CHARS) throw new AdminTokenError(length);
  return { hash: sha256Hex(configured), generated: null };
}

function newAdminToken(): string {
  return "adm_" + randomBytes(24).toString("base64url");
}
