/**
 * What the tests' throwaway servers (Postgres, Redis, replicas) share: a free loopback port, a
 * child's exit as a promise, and a watchdog that kills a child when this process dies of anything
 * (SIGKILL included), so no server outlives its test run.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";

/** A port that was free a moment ago (the OS's choice for port 0). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Resolves when the child has exited (at once if it has). */
export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

/**
 * A shell that waits on its stdin, the write end of which only this process holds: when this
 * process dies, the pipe closes and the shell kills `pid`. Kill the watchdog before its child
 * exits on purpose, so that it never kills a reused pid. `removeDir`: a folder it also removes.
 */
export function watchdog(pid: number | undefined, removeDir?: string): ChildProcess {
  const script = removeDir === undefined ? 'read _; kill -9 "$0" 2>/dev/null' : 'read _; kill -9 "$0" 2>/dev/null; rm -rf "$1"';
  const guard = spawn("/bin/sh", ["-c", script, String(pid ?? 0), ...(removeDir === undefined ? [] : [removeDir])], {
    stdio: ["pipe", "ignore", "ignore"],
  });
  guard.unref();
  (guard.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  return guard;
}

/** HAProxy's binary: $HAPROXY, else the first on PATH or in /usr/sbin (Debian's package puts it there). */
export function haproxyBinary(): string {
  if (process.env.HAPROXY) return process.env.HAPROXY;
  for (const dir of [...(process.env.PATH ?? "").split(":"), "/usr/sbin", "/usr/local/sbin"]) {
    if (dir && existsSync(join(dir, "haproxy"))) return join(dir, "haproxy");
  }
  throw new Error("haproxy not found (apt-get install haproxy; .ci/run installs it; or set HAPROXY=/path/to/haproxy)");
}
