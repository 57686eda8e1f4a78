/**
 * What the tests' throwaway servers (Postgres, Redis, replicas) share: a free loopback port, a
 * child's exit as a promise, a watchdog that kills a child when this process dies of anything
 * (SIGKILL included), so no server outlives its test run, and the start/end/dispose lifecycle
 * of a server in its own folder (ThrowawayServer).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";

/**
 * A loopback port that was free a moment ago, picked below the kernel's ephemeral range: a port
 * the OS hands out for port 0 lies in that range, where any process's outgoing connection (a
 * replica's to Redis or Postgres) may take it before the server that was meant to bind it starts,
 * and the server then fails with "Address already in use". Random picks, probed by binding.
 */
export async function freePort(): Promise<number> {
  const [low] = ephemeralRange();
  const floor = 10_000;
  for (let attempt = 0; attempt < 50 && low > floor + 1000; attempt++) {
    const port = floor + Math.floor(Math.random() * (low - floor));
    if (handedOut.has(port) || !(await canBind(port))) continue;
    handedOut.add(port);
    return port;
  }
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Ports this process has handed out, never handed out twice (their servers may not have bound yet). */
const handedOut = new Set<number>();

/** The kernel's ephemeral port range (Linux's default when it cannot be read). */
function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high)) return [low!, high!];
  } catch {
    // not Linux: fall through
  }
  return [32768, 60999];
}

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
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

/**
 * One throwaway server process with its own temporary folder (the Postgres and Redis test
 * servers): started until it answers, ended by a signal, never outliving this process (a
 * watchdog per child, and a process 'exit' hook that kills it and removes the folder).
 */
export class ThrowawayServer {
  /** The running child, or null between end() and the next start(). */
  child: ChildProcess | null = null;
  private guard: ChildProcess | null = null;
  private disposed = false;
  private readonly onExit = (): void => {
    this.guard?.kill("SIGKILL");
    this.child?.kill("SIGKILL");
    rmSync(this.dir, { recursive: true, force: true });
  };

  constructor(
    /** Removed by dispose(), the exit hook and the watchdog. */
    readonly dir: string,
    /** "postgres", "redis-server": for messages. */
    private readonly name: string,
    private readonly startTimeoutMs: number,
  ) {
    process.once("exit", this.onExit);
  }

  /**
   * Adopts a child just spawned (unreferenced, so a forgotten server cannot keep the tests
   * running) and waits until `answers()` holds, polling every `pollMs`. If it exits, cannot be
   * spawned or does not answer in time, it is killed and the error says why, with `log()`.
   */
  async start(child: ChildProcess, answers: () => Promise<boolean>, pollMs: number, log: () => string): Promise<void> {
    if (this.disposed) throw new Error(`this ${this.name} was disposed`);
    child.unref();
    const spawnFailure: { error: Error | null } = { error: null };
    child.once("error", (error) => (spawnFailure.error = error));
    this.child = child;
    this.guard = watchdog(child.pid, this.dir);
    const deadline = Date.now() + this.startTimeoutMs;
    while (Date.now() < deadline) {
      if (spawnFailure.error) throw new Error(`${this.name} could not be started: ${spawnFailure.error.message}`);
      if (child.exitCode !== null) break;
      if (await answers()) return;
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
    child.kill("SIGKILL");
    throw new Error(`${this.name} did not answer (exit code ${child.exitCode}); its log:\n${log()}`);
  }

  /** Sends `signal` (after SIGCONT, should it be paused) and waits for the exit. */
  async end(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    this.child = null;
    // The watchdog goes first: it must never outlive its server and then kill a reused pid.
    this.guard?.kill("SIGKILL");
    this.guard = null;
    if (!child) return;
    // Referenced while awaited: its exit is then all that keeps this process running.
    child.ref();
    const gone = exited(child);
    child.kill("SIGCONT");
    child.kill(signal);
    await gone;
  }

  /** Ends it with `signal` and removes its folder; it cannot be started again. */
  async dispose(signal: NodeJS.Signals): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    await this.end(signal);
    process.removeListener("exit", this.onExit);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
