/**
 * A small Kustomize renderer for deploy/kubernetes/ (used by test/deploy-manifests.test.ts), so
 * the overlays can be checked without the kustomize or kubectl binaries. It implements a subset
 * and refuses everything else with an error naming it, so a kustomization using a feature it does
 * not know can never render "fine" with that feature silently ignored:
 *
 * - `apiVersion: kustomize.config.k8s.io/v1beta1`, `kind: Kustomization`;
 * - `resources`: YAML files (several documents each) and folders holding a kustomization.yaml,
 *   rendered recursively (local paths only, no URLs);
 * - `patches`: each a `target` (group, version, kind, name: exact matches) and an inline `patch`
 *   that is an RFC 6902 JSON patch (add, remove, replace, test); no strategic-merge patches, no
 *   `path:` patch files. A patch that matches no object is an error (kustomize's is a no-op);
 * - `images`: name with newName, newTag and/or digest, applied to every `containers[]` and
 *   `initContainers[]` image; an entry matching no image is an error.
 *
 * Order as kustomize's: resources (each in list order, a folder's objects rendered by its own
 * kustomization first), then this kustomization's patches, then its images. Two objects with the
 * same apiVersion, kind, namespace and name are an error, as in kustomize. YAML is read as YAML 1.1,
 * as Kubernetes reads it (`yes`, `on` are booleans there).
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import { join, resolve } from "node:path";
import { parseAllDocuments } from "yaml";

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

export class KustomizeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "KustomizeError";
  }
}

const KUSTOMIZATION_FILES = ["kustomization.yaml", "kustomization.yml", "Kustomization"];
const SUPPORTED_KEYS = new Set(["apiVersion", "kind", "resources", "patches", "images"]);
const SUPPORTED_TARGET_KEYS = new Set(["group", "version", "kind", "name"]);
const SUPPORTED_IMAGE_KEYS = new Set(["name", "newName", "newTag", "digest"]);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Every document of a YAML file or string, parsed as Kubernetes does (YAML 1.1); errors throw. */
export function parseYamlDocuments(text: string, source: string): unknown[] {
  const out: unknown[] = [];
  for (const doc of parseAllDocuments(text, { version: "1.1", uniqueKeys: true, prettyErrors: true })) {
    if (doc.errors.length > 0) throw new KustomizeError(`${source}: ${doc.errors.map((e) => e.message).join("; ")}`);
    if (doc.warnings.length > 0) throw new KustomizeError(`${source}: ${doc.warnings.map((e) => e.message).join("; ")}`);
    const value: unknown = doc.toJS();
    if (value !== null && value !== undefined) out.push(value);
  }
  return out;
}

/** The Kubernetes objects of one manifest file, each checked to have apiVersion, kind and a name. */
export function readManifest(file: string): KubeObject[] {
  return parseYamlDocuments(readFileSync(file, "utf8"), file).map((value, i) => {
    if (!isRecord(value)) throw new KustomizeError(`${file}: document ${i + 1} is not a mapping`);
    const { apiVersion, kind, metadata } = value;
    if (typeof apiVersion !== "string" || typeof kind !== "string")
      throw new KustomizeError(`${file}: document ${i + 1} lacks apiVersion or kind`);
    if (!isRecord(metadata) || typeof metadata.name !== "string" || metadata.name === "")
      throw new KustomizeError(`${file}: ${kind} (document ${i + 1}) lacks metadata.name`);
    return value as KubeObject;
  });
}

function kustomizationFile(dir: string): string {
  const file = KUSTOMIZATION_FILES.map((name) => join(dir, name)).find((p) => existsSync(p));
  if (!file) throw new KustomizeError(`${dir}: no kustomization.yaml`);
  return file;
}

function objectId(o: KubeObject): string {
  return `${o.apiVersion}/${o.kind}/${o.metadata.namespace ?? "~"}/${o.metadata.name}`;
}

/** Renders the kustomization in `dir` (as `kustomize build dir` would, for the subset above). */
export function renderKustomization(dir: string): KubeObject[] {
  return render(resolve(dir), []);
}

function render(dir: string, stack: string[]): KubeObject[] {
  if (stack.includes(dir)) throw new KustomizeError(`kustomization cycle: ${[...stack, dir].join(" -> ")}`);
  const file = kustomizationFile(dir);
  const docs = parseYamlDocuments(readFileSync(file, "utf8"), file);
  if (docs.length !== 1 || !isRecord(docs[0])) throw new KustomizeError(`${file}: expected one mapping`);
  const k = docs[0];
  for (const key of Object.keys(k)) {
    if (!SUPPORTED_KEYS.has(key))
      throw new KustomizeError(`${file}: "${key}" is not supported by this renderer (test/support/kustomize.ts)`);
  }
  if (k.apiVersion !== "kustomize.config.k8s.io/v1beta1" || k.kind !== "Kustomization")
    throw new KustomizeError(`${file}: expected apiVersion kustomize.config.k8s.io/v1beta1, kind Kustomization`);

  const objects: KubeObject[] = [];
  const seen = new Set<string>();
  for (const entry of list(k.resources, file, "resources")) {
    if (typeof entry !== "string") throw new KustomizeError(`${file}: resources entries must be paths`);
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(entry) || entry.startsWith("github.com/"))
      throw new KustomizeError(`${file}: remote resource ${entry} is not supported`);
    const path = resolve(dir, entry);
    if (!existsSync(path)) throw new KustomizeError(`${file}: resource ${entry} does not exist`);
    const found = statSync(path).isDirectory() ? render(path, [...stack, dir]) : readManifest(path);
    for (const object of found) {
      const id = objectId(object);
      if (seen.has(id)) throw new KustomizeError(`${file}: ${id} is defined twice`);
      seen.add(id);
      objects.push(structuredClone(object));
    }
  }

  for (const [i, entry] of list(k.patches, file, "patches").entries()) applyPatchEntry(entry, objects, `${file}: patches[${i}]`);
  for (const [i, entry] of list(k.images, file, "images").entries()) applyImageEntry(entry, objects, `${file}: images[${i}]`);
  return objects;
}

function list(value: unknown, file: string, key: string): unknown[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new KustomizeError(`${file}: ${key} must be a list`);
  return value;
}

function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf("/");
  return slash < 0 ? { group: "", version: apiVersion } : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

function applyPatchEntry(entry: unknown, objects: KubeObject[], where: string): void {
  if (!isRecord(entry)) throw new KustomizeError(`${where}: must be a mapping`);
  for (const key of Object.keys(entry)) {
    if (key !== "target" && key !== "patch") throw new KustomizeError(`${where}: "${key}" is not supported (only target + inline patch)`);
  }
  const { target, patch } = entry;
  if (!isRecord(target)) throw new KustomizeError(`${where}: needs a target`);
  for (const key of Object.keys(target)) {
    if (!SUPPORTED_TARGET_KEYS.has(key)) throw new KustomizeError(`${where}: target.${key} is not supported`);
  }
  if (typeof target.kind !== "string") throw new KustomizeError(`${where}: target needs a kind`);
  if (typeof patch !== "string") throw new KustomizeError(`${where}: needs an inline patch`);
  const parsed = parseYamlDocuments(patch, where);
  const ops = parsed[0];
  if (parsed.length !== 1 || !Array.isArray(ops))
    throw new KustomizeError(`${where}: only RFC 6902 JSON patches (a list of operations) are supported, not strategic-merge patches`);

  const matches = objects.filter((o) => {
    const { group, version } = splitApiVersion(o.apiVersion);
    return (
      (target.group === undefined || target.group === group) &&
      (target.version === undefined || target.version === version) &&
      target.kind === o.kind &&
      (target.name === undefined || target.name === o.metadata.name)
    );
  });
  if (matches.length === 0) throw new KustomizeError(`${where}: target ${JSON.stringify(target)} matches no object`);
  for (const object of matches) {
    for (const [i, op] of ops.entries()) applyOperation(object, op, `${where}: op ${i} on ${object.kind}/${object.metadata.name}`);
  }
}

function pointer(path: unknown, where: string): string[] {
  if (typeof path !== "string" || (path !== "" && !path.startsWith("/"))) throw new KustomizeError(`${where}: bad path ${String(path)}`);
  if (path === "") return [];
  return path
    .slice(1)
    .split("/")
    .map((token) => token.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function arrayIndex(container: unknown[], token: string, forAdd: boolean, where: string): number {
  if (forAdd && token === "-") return container.length;
  if (!/^(0|[1-9][0-9]*)$/.test(token)) throw new KustomizeError(`${where}: "${token}" is not an array index`);
  const index = Number(token);
  if (index > container.length || (!forAdd && index === container.length))
    throw new KustomizeError(`${where}: index ${index} out of range`);
  return index;
}

/** One RFC 6902 operation (add, remove, replace, test) applied in place. */
export function applyOperation(document: unknown, operation: unknown, where: string): void {
  if (!isRecord(operation)) throw new KustomizeError(`${where}: an operation must be a mapping`);
  const { op } = operation;
  if (op !== "add" && op !== "remove" && op !== "replace" && op !== "test")
    throw new KustomizeError(`${where}: op ${String(op)} is not supported (add, remove, replace, test)`);
  if (op !== "remove" && !("value" in operation)) throw new KustomizeError(`${where}: ${op} needs a value`);
  const tokens = pointer(operation.path, where);
  if (tokens.length === 0) throw new KustomizeError(`${where}: operations on the whole document are not supported`);
  let parent: unknown = document;
  for (const token of tokens.slice(0, -1)) {
    if (Array.isArray(parent)) parent = parent[arrayIndex(parent, token, false, where)];
    else if (isRecord(parent) && Object.hasOwn(parent, token)) parent = parent[token];
    else throw new KustomizeError(`${where}: path ${String(operation.path)} does not exist`);
  }
  const last = tokens[tokens.length - 1]!;
  const value: unknown = structuredClone(operation.value);
  if (Array.isArray(parent)) {
    const index = arrayIndex(parent, last, op === "add", where);
    if (op === "add") parent.splice(index, 0, value);
    else if (op === "remove") parent.splice(index, 1);
    else if (op === "replace") parent[index] = value;
    else if (!isDeepStrictEqual(parent[index], value)) throw new KustomizeError(`${where}: test failed at ${String(operation.path)}`);
  } else if (isRecord(parent)) {
    const exists = Object.hasOwn(parent, last);
    if (op !== "add" && !exists) throw new KustomizeError(`${where}: path ${String(operation.path)} does not exist`);
    if (op === "add" || op === "replace") parent[last] = value;
    else if (op === "remove") delete parent[last];
    else if (!isDeepStrictEqual(parent[last], value)) throw new KustomizeError(`${where}: test failed at ${String(operation.path)}`);
  } else {
    throw new KustomizeError(`${where}: the parent of ${String(operation.path)} is not an object or array`);
  }
}

/** name[:tag][@digest], the tag's colon being after the last slash (a registry may have a port). */
function splitImage(image: string): { name: string; tag: string | undefined; digest: string | undefined } {
  const at = image.indexOf("@");
  const digest = at >= 0 ? image.slice(at + 1) : undefined;
  const rest = at >= 0 ? image.slice(0, at) : image;
  const colon = rest.lastIndexOf(":");
  if (colon > rest.lastIndexOf("/")) return { name: rest.slice(0, colon), tag: rest.slice(colon + 1), digest };
  return { name: rest, tag: undefined, digest };
}

function containersOf(value: unknown, out: Record<string, unknown>[] = []): Record<string, unknown>[] {
  if (Array.isArray(value)) for (const item of value) containersOf(item, out);
  else if (isRecord(value)) {
    for (const [key, child] of Object.entries(value)) {
      if ((key === "containers" || key === "initContainers") && Array.isArray(child)) {
        for (const c of child) if (isRecord(c)) out.push(c);
      }
      containersOf(child, out);
    }
  }
  return out;
}

function applyImageEntry(entry: unknown, objects: KubeObject[], where: string): void {
  if (!isRecord(entry) || typeof entry.name !== "string") throw new KustomizeError(`${where}: needs a name`);
  for (const key of Object.keys(entry)) {
    if (!SUPPORTED_IMAGE_KEYS.has(key)) throw new KustomizeError(`${where}: "${key}" is not supported`);
  }
  for (const key of ["newName", "newTag", "digest"] as const) {
    if (entry[key] !== undefined && typeof entry[key] !== "string") throw new KustomizeError(`${where}: ${key} must be a string`);
  }
  const { newName, newTag, digest } = entry as { newName?: string; newTag?: string; digest?: string };
  let matched = 0;
  for (const container of objects.flatMap((o) => containersOf(o))) {
    if (typeof container.image !== "string") continue;
    const image = splitImage(container.image);
    if (image.name !== entry.name) continue;
    matched++;
    const name = newName ?? image.name;
    // As kustomize: a new digest replaces the tag, a new tag replaces the digest.
    if (digest !== undefined) container.image = `${name}@${digest}`;
    else if (newTag !== undefined) container.image = `${name}:${newTag}`;
    else
      container.image = `${name}${image.tag !== undefined ? `:${image.tag}` : ""}${image.digest !== undefined ? `@${image.digest}` : ""}`;
  }
  if (matched === 0) throw new KustomizeError(`${where}: image ${entry.name} is used by no container`);
}
