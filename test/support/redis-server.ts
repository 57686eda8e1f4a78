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
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { connect } from "node:net";
import { freePort, ThrowawayServer } from "./child-process.js";
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
  const server = new ThrowawayServer(dir, `redis-server on port ${port}`, START_TIMEOUT_MS);

  const launch = async (): Promise<void> => {
    const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--logfile", logFile];
    const log = (): string => {
      try {
        return readFileSync(logFile, "utf8").slice(-2000);
      } catch {
        return "";
      }
    };
    await server.start(spawn(REDIS_SERVER, args, { stdio: "ignore" }), () => answersPing(port, 500), 20, log);
  };

  await launch();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    get pid(): number {
      return server.child?.pid ?? 0;
    },
    stop: () => server.end("SIGTERM"),
    kill: () => server.end("SIGKILL"),
    async restart() {
      await server.end("SIGTERM");
      await launch();
    },
    pause() {
      server.child?.kill("SIGSTOP");
    },
    resume() {
      server.child?.kill("SIGCONT");
    },
    dispose: () => server.dispose("SIGTERM"),
  };
}
