/**
 * The key store's failures: KeyStoreError (the database could not be opened, migrated or
 * written) with the classification of SQLite's and the OS's error codes into causes an operator
 * can act on, and KeyNotFoundError. The errors of the name and admin-token rules sit with those
 * rules (names.ts, credentials.ts).
 */
import { accessSync, constants, statSync } from "node:fs";

export class KeyNotFoundError extends Error {
  constructor(readonly id: number) {
    super(`no API key with id ${id}`);
    this.name = "KeyNotFoundError";
  }
}

/** Why the key store could not be opened or written, as far as the operator can act on it. */
export type KeyStoreFailure =
  | "not-a-directory"
  | "not-writable"
  | "locked"
  | "disk-full"
  | "not-a-database"
  | "newer-schema"
  /** The schema is behind and migrating at start is off (TRELLIS_MIGRATE_ON_START=false). */
  | "old-schema"
  /** Postgres cannot be reached (down, restarting, wrong address). */
  | "unreachable"
  | "io";

/**
 * The key store's database could not be opened, migrated or written. `message` names the
 * database path and the cause; `failure` classifies it; `code` is SQLite's or the OS's code.
 */
export class KeyStoreError extends Error {
  constructor(
    readonly path: string,
    readonly failure: KeyStoreFailure,
    readonly reason: string,
    readonly code: string | undefined,
    options?: { cause?: unknown; operation?: string },
  ) {
    super(`${options?.operation ?? "cannot open the key store"} ${path}: ${reason}`, { cause: options?.cause });
    this.name = "KeyStoreError";
  }
}

/** SQLite's codes for a lock held by another connection: waited for inside SQLite, not slept on. */
export const SQLITE_BUSY_CODES = new Set([
  "SQLITE_BUSY",
  "SQLITE_BUSY_RECOVERY",
  "SQLITE_BUSY_SNAPSHOT",
  "SQLITE_BUSY_TIMEOUT",
  "SQLITE_LOCKED",
  "SQLITE_LOCKED_SHAREDCACHE",
]);

export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

export function describeError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = errorCode(error);
  return code && !message.includes(code) ? `${code}: ${message}` : message;
}

/** Names the cause of an open, migrate or write failure in words an operator can act on. */
export function classifyFailure(error: unknown, dataDir: string, path: string): { failure: KeyStoreFailure; reason: string } {
  const code = errorCode(error) ?? "";
  const message = describeError(error);
  const isDir = (p: string): boolean | null => {
    try {
      return statSync(p).isDirectory();
    } catch {
      return null;
    }
  };
  const writable = (p: string): boolean => {
    try {
      accessSync(p, constants.W_OK);
      return true;
    } catch {
      return false;
    }
  };
  if (code === "EEXIST" || code === "ENOTDIR" || isDir(dataDir) === false) {
    return { failure: "not-a-directory", reason: `the data folder ${dataDir} is not a directory (a file is in the way)` };
  }
  if (isDir(path) === true) {
    return { failure: "not-a-directory", reason: `${path} is a directory, not a database file` };
  }
  if (SQLITE_BUSY_CODES.has(code)) {
    return { failure: "locked", reason: `the database is locked by another process (${message})` };
  }
  if (code === "SQLITE_FULL" || code === "ENOSPC" || code === "EDQUOT") {
    return { failure: "disk-full", reason: `the disk is full (${message})` };
  }
  if (code === "SQLITE_NOTADB" || code === "SQLITE_CORRUPT") {
    return { failure: "not-a-database", reason: `the file is not a valid SQLite database (${message})` };
  }
  if (code === "EACCES" || code === "EPERM" || code === "EROFS") {
    return { failure: "not-writable", reason: `the data folder ${dataDir} cannot be created or written (${message})` };
  }
  if (
    code.startsWith("SQLITE_CANTOPEN") ||
    code.startsWith("SQLITE_READONLY") ||
    code.startsWith("SQLITE_IOERR") ||
    code === "SQLITE_PERM"
  ) {
    if (isDir(dataDir) && !writable(dataDir)) {
      return {
        failure: "not-writable",
        reason: `the data folder ${dataDir} is not writable by this user (SQLite creates the database and its -wal and -shm files there)`,
      };
    }
    if (isDir(path) === false && !writable(path)) {
      return { failure: "not-writable", reason: `the database file is not writable by this user (${message})` };
    }
    if (code.startsWith("SQLITE_READONLY")) {
      return { failure: "not-writable", reason: `the database cannot be written (${message}); is the folder on a read-only file system?` };
    }
  }
  return { failure: "io", reason: message };
}
