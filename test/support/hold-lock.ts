/** Shared by the key-store tests: another process holding a database's write lock. */
import { after } from "node:test";
import { spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";

const children: ChildProcess[] = [];
after(() => {
  for (const child of children) if (child.exitCode === null) child.kill();
});
/**
 * Another process takes the database's write lock (BEGIN EXCLUSIVE; the file is created if
 * missing) and keeps it for `holdMs`, or until release() (also when this process dies: its
 * stdin closes).
 */
export async function holdLock(dbPath: string, holdMs = 0): Promise<{ release(): Promise<void>; exited: Promise<void> }> {
  const script = `
    const [sqlite, path, holdMs] = process.argv.slice(-3);
    const db = new (require(sqlite))(path);
    db.exec("BEGIN EXCLUSIVE");
    process.stdout.write("locked\\n");
    const release = () => { db.exec("COMMIT"); db.close(); process.exit(0); };
    if (Number(holdMs) > 0) setTimeout(release, Number(holdMs));
    process.stdin.on("data", release);
    process.stdin.on("end", release);`;
  const sqlite = createRequire(import.meta.url).resolve("better-sqlite3");
  const child = spawn(process.execPath, ["-e", script, sqlite, dbPath, String(holdMs)], { stdio: ["pipe", "pipe", "inherit"] });
  children.push(child);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once("data", () => resolve());
    child.once("exit", (code) => reject(new Error(`lock holder exited early (${code})`)));
  });
  return {
    exited,
    async release() {
      child.stdin!.end("release\n");
      await exited;
    },
  };
}
