/**
 * A real PostgreSQL server for tests (Debian's postgresql package): a throwaway cluster made by
 * initdb in a temporary folder, on a free loopback port, trust authentication, no fsync. As root
 * (CI), the server runs as the `postgres` system user, since Postgres refuses to run as root.
 * createDatabase() gives each test its own database; restart() stops and starts the server on
 * the same port (what a Postgres restart looks like to clients); kill() ends it at once; pause()
 * freezes it (what a network partition looks like: nothing refused, nothing answered).
 *
 * It never outlives the tests: dispose() in an after() hook, a process 'exit' hook, and a
 * watchdog shell that kills it when this process's pipe to it closes (also on SIGKILL).
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { freePort, ThrowawayServer } from "./child-process.js";

const START_TIMEOUT_MS = 30_000;

/** The newest installed PostgreSQL's programs (/usr/lib/postgresql/<major>/bin). */
export function postgresBin(): string | null {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return null;
  const majors = readdirSync(root)
    .filter((name) => existsSync(join(root, name, "bin", "postgres")))
    .sort((a, b) => Number(b) - Number(a));
  return majors.length > 0 ? join(root, majors[0]!, "bin") : null;
}

export interface TestPostgresServer {
  readonly port: number;
  /** postgres://trellis@127.0.0.1:<port>/<database> */
  url(database: string): string;
  /** A new empty database; returns its URL. */
  createDatabase(name?: string): Promise<string>;
  /** Stops (fast shutdown) and starts again on the same port; waits until it accepts connections. */
  restart(): Promise<void>;
  /** Shuts it down (fast) and waits for it to exit. */
  stop(): Promise<void>;
  /** Starts it again after stop() or kill(). */
  start(): Promise<void>;
  /** Ends it at once (SIGKILL), as a crash would. */
  kill(): Promise<void>;
  /** Freezes the server and its sessions (SIGSTOP): connections stay open, nothing is answered. */
  pause(): void;
  resume(): void;
  dispose(): Promise<void>;
}

/** uid and gid of the postgres system user when running as root; undefined otherwise. */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const uid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim());
  const gid = Number(execFileSync("id", ["-g", "postgres"]).toString().trim());
  return { uid, gid };
}

let databases = 0;

export async function startPostgresServer(): Promise<TestPostgresServer> {
  const bin = postgresBin();
  if (!bin) throw new Error("PostgreSQL is not installed (/usr/lib/postgresql/*/bin/postgres); .ci/run installs the postgresql package");
  const dir = mkdtempSync(join(tmpdir(), "trellis-pg-"));
  const user = runAs();
  if (user) chownSync(dir, user.uid, user.gid);
  const data = join(dir, "data");
  execFileSync(join(bin, "initdb"), ["-D", data, "-U", "trellis", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"], {
    stdio: "ignore",
    ...(user ?? {}),
  });
  const port = await freePort();
  const server = new ThrowawayServer(dir, `postgres on port ${port}`, START_TIMEOUT_MS);
  const url = (database: string): string => `postgres://trellis@127.0.0.1:${port}/${database}`;

  const accepts = async (): Promise<boolean> => {
    const client = new pg.Client({ connectionString: url("postgres"), connectionTimeoutMillis: 500 });
    client.on("error", () => {});
    try {
      await client.connect();
      await client.query("SELECT 1");
      return true;
    } catch {
      return false;
    } finally {
      await client.end().catch(() => {});
    }
  };

  const launch = async (): Promise<void> => {
    const args = ["-D", data, "-p", String(port), "-k", dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"];
    args.push("-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=200");
    const child = spawn(join(bin, "postgres"), args, { stdio: ["ignore", "ignore", "pipe"], ...(user ?? {}) });
    let log = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      log = (log + chunk.toString()).slice(-4000);
    });
    (child.stderr as unknown as { unref?: () => void } | null)?.unref?.();
    await server.start(child, accepts, 50, () => log);
  };

  const end = async (signal: NodeJS.Signals): Promise<void> => {
    await server.end(signal);
    // A killed postmaster leaves its children for a moment; its pid file says it is gone.
    const pidFile = join(data, "postmaster.pid");
    const until = Date.now() + 10_000;
    while (signal === "SIGKILL" && existsSync(pidFile) && Date.now() < until) {
      try {
        const pid = Number(readFileSync(pidFile, "utf8").split("\n")[0]);
        process.kill(pid, 0);
      } catch {
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  /** The postmaster and every process it started (sessions, background workers). */
  const signalAll = (signal: NodeJS.Signals): void => {
    const pid = server.child?.pid;
    if (!pid) return;
    const children = spawnSync("pgrep", ["-P", String(pid)])
      .stdout.toString()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
    for (const p of [pid, ...children]) {
      try {
        process.kill(p, signal);
      } catch {
        // Gone meanwhile.
      }
    }
  };

  await launch();
  return {
    port,
    url,
    async createDatabase(name = `trellis_test_${process.pid}_${++databases}`) {
      const client = new pg.Client({ connectionString: url("postgres") });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return url(name);
    },
    // SIGINT: Postgres's fast shutdown (ends sessions, no waiting for clients to leave).
    stop: () => end("SIGINT"),
    kill: () => end("SIGKILL"),
    async start() {
      if (!server.child) await launch();
    },
    pause() {
      signalAll("SIGSTOP");
    },
    resume() {
      signalAll("SIGCONT");
    },
    async restart() {
      await end("SIGINT");
      await launch();
    },
    dispose: () => server.dispose("SIGINT"),
  };
}
