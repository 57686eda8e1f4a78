/**
 * A real redis-server for tests: a child process on a free loopback port, with no persistence,
 * its files in a temporary folder. stop() shuts it down, restart() starts it again on the same
 * port (what a Redis restart looks like to clients), kill() ends it at once, pause()/resume()
 * freeze it (a server that keeps its connections open and answers nothing).
 *
 * It never outlives the tests: stop() in an after() hook, a process 'exit' hook for a run that
 * forgets, and a watchdog (a shell that kills it when this process's pipe to it closes, as it
 * does when this process dies of anything, SIGKILL included).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { exited, freePort, watchdog } from "./child-process.js";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const REDIS_SERVER = "/usr/bin/redis-server";
const START_TIMEOUT_MS = 10_000;

export interface TestRedisServer {
  readonly port: number;
  /** redis://127.0.0.1:<port> */
  readonly url: string;
  /** The running server's process id (changes on restart). */
  readonly pid: number;
  /** Shuts it down (SIGTERM) and waits for it to exit. */
  stop(): Promise<void>;
  /** Starts it again on the same port (stopping it first if it runs) and waits until it answers PING. */
  restart(): Promise<void>;
  /** Ends it at once (SIGKILL), as a crash would. */
  kill(): Promise<void>;
  /** Freezes it (SIGSTOP): connections stay open, nothing is answered. */
  pause(): void;
  resume(): void;
  /** Stops it and removes its folder; it cannot be restarted after. */
  dispose(): Promise<void>;
}

/** Whether a server on `port` answers PING with PONG within `timeoutMs`. */
function answersPing(port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    let reply = "";
    const done = (ok: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.on("data", (data) => {
      reply += data.toString("latin1");
      if (reply.includes("\r\n")) done(reply.startsWith("+PONG"));
    });
    socket.once("error", () => done(false));
  });
}

/** Starts a redis-server and waits until it answers PING. */
export async function startRedisServer(): Promise<TestRedisServer> {
  const dir = mkdtempSync(join(tmpdir(), "trellis-redis-"));
  const logFile = join(dir, "redis.log");
  const port = await freePort();
  let server: ChildProcess | null = null;
  let guard: ChildProcess | null = null;
  let disposed = false;

  const onExit = (): void => {
    guard?.kill("SIGKILL");
    server?.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  };
  process.once("exit", onExit);

  const launch = async (): Promise<void> => {
    const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--logfile", logFile];
    const child = spawn(REDIS_SERVER, args, { stdio: "ignore" });
    child.unref();
    server = child;
    const spawnFailure: { error: Error | null } = { error: null };
    child.once("error", (error) => (spawnFailure.error = error));
    // The shell waits on its stdin, the write end of which only this process holds.
    guard = watchdog(child.pid, dir);
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (spawnFailure.error) throw new Error(`${REDIS_SERVER} could not be started: ${spawnFailure.error.message}`);
      if (child.exitCode !== null) break;
      if (await answersPing(port, 500)) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    let log = "";
    try {
      log = readFileSync(logFile, "utf8").slice(-2000);
    } catch {}
    child.kill("SIGKILL");
    throw new Error(`redis-server on port ${port} did not answer PING (exit code ${child.exitCode}); its log:\n${log}`);
  };

  const end = async (signal: NodeJS.Signals): Promise<void> => {
    const child = server;
    server = null;
    // The watchdog goes first: it must never outlive its server and then kill a reused pid.
    guard?.kill("SIGKILL");
    guard = null;
    if (!child) return;
    // Unreferenced so that a forgotten server cannot keep the tests from ending; referenced
    // while waiting for its exit, which is then all that keeps this process running.
    child.ref();
    const gone = exited(child);
    child.kill("SIGCONT");
    child.kill(signal);
    await gone;
  };

  await launch();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    get pid(): number {
      return server?.pid ?? 0;
    },
    stop: () => end("SIGTERM"),
    kill: () => end("SIGKILL"),
    async restart() {
      if (disposed) throw new Error("this redis-server was disposed");
      await end("SIGTERM");
      await launch();
    },
    pause() {
      server?.kill("SIGSTOP");
    },
    resume() {
      server?.kill("SIGCONT");
    },
    async dispose() {
      if (disposed) return;
      disposed = true;
      await end("SIGTERM");
      process.removeListener("exit", onExit);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
