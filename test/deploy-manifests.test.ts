// The deployment files of issue 27 ("Beyond one machine"), checked without a cluster, Docker or
// the network:
// - deploy/kubernetes: each overlay is rendered (test/support/kustomize.ts, a Kustomize subset that
//   refuses what it does not implement) and every object, with the optional HPA, the models PVC
//   and the example Secret, is validated against the Kubernetes OpenAPI schemas (kubernetes-models,
//   @kubernetes-models/keda for the ScaledObject) and for fields the schemas do not know (the
//   generated validators accept unknown fields, kubectl's strict field validation does not); then
//   the properties the issue asks for: probes, non-root, GPU or not, migrate Job, autoscaling on
//   trellis_requests_waiting, selectors that match, secret keys that exist.
// - deploy/haproxy/haproxy.cfg: `haproxy -c`, then a real HAProxy in front of three loopback HTTP
//   servers: least connections, /readyz health checks taking a replica out, no retry of a 5xx,
//   Server-Sent Events passed through unbuffered, X-Forwarded-* headers.
// - Dockerfile, Dockerfile.cuda, .dockerignore: dockerfilelint, then the essentials (multi-stage,
//   npm ci, non-root, port, entrypoint, context files not ignored).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import { Job } from "kubernetes-models/batch/v1/Job";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { PersistentVolumeClaim } from "kubernetes-models/v1/PersistentVolumeClaim";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { ServiceAccount } from "kubernetes-models/v1/ServiceAccount";
import { ScaledObject } from "@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject";
import { freePort, haproxyBinary } from "./support/child-process.js";
import { KustomizeError, readManifest, renderKustomization, type KubeObject } from "./support/kustomize.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const K8S = join(ROOT, "deploy", "kubernetes");
const NODE_MODULES = join(ROOT, "node_modules");
const HAPROXY_CFG = join(ROOT, "deploy", "haproxy", "haproxy.cfg");

// ---------------------------------------------------------------------------------------------
// Validation: the schema (kubernetes-models' generated validators) plus unknown fields.

interface Validatable {
  validate(): void;
}
type ModelClass = new (data: never) => Validatable;

/** apiVersion + kind → the model class and its generated declaration file (for its field names). */
const MODELS: Record<string, { model: ModelClass; types: string }> = {
  "apps/v1 Deployment": { model: Deployment as unknown as ModelClass, types: "kubernetes-models/apps/v1/Deployment" },
  "v1 Service": { model: Service as unknown as ModelClass, types: "kubernetes-models/v1/Service" },
  "v1 ServiceAccount": { model: ServiceAccount as unknown as ModelClass, types: "kubernetes-models/v1/ServiceAccount" },
  "v1 Secret": { model: Secret as unknown as ModelClass, types: "kubernetes-models/v1/Secret" },
  "v1 PersistentVolumeClaim": {
    model: PersistentVolumeClaim as unknown as ModelClass,
    types: "kubernetes-models/v1/PersistentVolumeClaim",
  },
  "policy/v1 PodDisruptionBudget": {
    model: PodDisruptionBudget as unknown as ModelClass,
    types: "kubernetes-models/policy/v1/PodDisruptionBudget",
  },
  "batch/v1 Job": { model: Job as unknown as ModelClass, types: "kubernetes-models/batch/v1/Job" },
  "autoscaling/v2 HorizontalPodAutoscaler": {
    model: HorizontalPodAutoscaler as unknown as ModelClass,
    types: "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler",
  },
  "keda.sh/v1alpha1 ScaledObject": {
    model: ScaledObject as unknown as ModelClass,
    types: "@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject",
  },
};

type FieldType = { kind: "leaf" } | { kind: "ref"; file: string } | { kind: "array"; of: FieldType } | { kind: "map"; of: FieldType };
interface Shape {
  name: string;
  fields: Map<string, FieldType>;
}

const shapes = new Map<string, Shape | null>();

/** A package path ("kubernetes-models/v1/Container") as node_modules' nearest copy's .d.ts. */
function packageDts(spec: string, fromDir: string): string {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", `${spec}.d.ts`);
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) throw new Error(`declarations of ${spec} not found`);
  }
}

/**
 * The fields of a generated model class, read from its declaration file (`"name"?: Type;` lines of
 * its `declare class`); null for a type alias (Quantity, IntOrString, Time: no fields to check).
 */
function shapeOf(file: string): Shape | null {
  const cached = shapes.get(file);
  if (cached !== undefined) return cached;
  const lines = readFileSync(file, "utf8").split("\n");
  const imports = new Map<string, string>();
  for (const line of lines) {
    const m = /^import \{ (\w+) \} from "([^"]+)";$/.exec(line);
    if (!m) continue;
    const spec = m[2]!;
    imports.set(m[1]!, spec.startsWith(".") ? resolve(dirname(file), spec.replace(/\.js$/, ".d.ts")) : packageDts(spec, dirname(file)));
  }
  const start = lines.findIndex((l) => l.startsWith("export declare class "));
  if (start < 0) {
    shapes.set(file, null);
    return null;
  }
  const typeOf = (text: string): FieldType => {
    const array = /^Array<(.+)>$/.exec(text);
    if (array) return { kind: "array", of: typeOf(array[1]!) };
    const file = imports.get(text);
    return file ? { kind: "ref", file } : { kind: "leaf" };
  };
  const fields = new Map<string, FieldType>();
  for (let i = start + 1; i < lines.length && !lines[i]!.startsWith("    constructor("); i++) {
    const m = /^ {4}"([^"]+)"\??: (.*)$/.exec(lines[i]!);
    if (!m) continue;
    if (m[2] === "{") {
      const value = /^ {8}\[key: string\]: (.+);$/.exec(lines[i + 1] ?? "");
      if (!value) throw new Error(`${file}: unexpected declaration of ${m[1]}`);
      fields.set(m[1]!, { kind: "map", of: typeOf(value[1]!) });
    } else {
      fields.set(m[1]!, typeOf(m[2]!.replace(/;$/, "")));
    }
  }
  const shape = { name: /^export declare class (\w+)/.exec(lines[start]!)![1]!, fields };
  shapes.set(file, shape);
  return shape;
}

/** Paths of fields that the declared types do not have (typos such as `readinesProbe`). */
function unknownFields(value: unknown, type: FieldType, path: string, out: string[] = []): string[] {
  if (type.kind === "leaf" || value === null || typeof value !== "object") return out;
  if (type.kind === "array") {
    if (Array.isArray(value)) value.forEach((item, i) => unknownFields(item, type.of, `${path}[${i}]`, out));
    return out;
  }
  if (Array.isArray(value)) return out;
  if (type.kind === "map") {
    for (const [key, item] of Object.entries(value)) unknownFields(item, type.of, `${path}.${key}`, out);
    return out;
  }
  const shape = shapeOf(type.file);
  if (!shape) return out;
  for (const [key, item] of Object.entries(value)) {
    const field = shape.fields.get(key);
    if (!field) out.push(`${path}.${key} (not a field of ${shape.name})`);
    else unknownFields(item, field, `${path}.${key}`, out);
  }
  return out;
}

/** Throws unless `object` is a known kind, valid for its schema, with no unknown field. */
function validateObject(object: KubeObject): void {
  const entry = MODELS[`${object.apiVersion} ${object.kind}`];
  if (!entry) throw new Error(`${object.apiVersion} ${object.kind} ${object.metadata?.name}: no schema known to this test`);
  const where = `${object.kind}/${object.metadata.name}`;
  try {
    new entry.model(structuredClone(object) as never).validate();
  } catch (error) {
    throw new Error(`${where} does not validate: ${(error as Error).message}`);
  }
  const unknown = unknownFields(object, { kind: "ref", file: packageDts(entry.types, ROOT) }, where);
  if (unknown.length > 0) throw new Error(`${where} has unknown fields: ${unknown.join(", ")}`);
}

// ---------------------------------------------------------------------------------------------
// Typed views of the rendered objects the assertions read.

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string } };
}
interface Probe {
  httpGet?: { path: string; port: number | string };
  periodSeconds?: number;
  failureThreshold?: number;
}
interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: EnvVar[];
  ports?: { name?: string; containerPort: number }[];
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    runAsNonRoot?: boolean;
    runAsUser?: number;
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    capabilities?: { drop?: string[] };
  };
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}
interface PodTemplate {
  metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
  spec: {
    serviceAccountName?: string;
    automountServiceAccountToken?: boolean;
    terminationGracePeriodSeconds?: number;
    restartPolicy?: string;
    securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
    tolerations?: { key?: string; operator?: string; effect?: string }[];
    containers: Container[];
    volumes?: { name: string; persistentVolumeClaim?: { claimName: string; readOnly?: boolean }; emptyDir?: object }[];
  };
}

function one(objects: KubeObject[], kind: string): KubeObject & { spec: Record<string, unknown> } {
  const found = objects.filter((o) => o.kind === kind);
  assert.equal(found.length, 1, `one ${kind} expected, found ${found.length}`);
  return found[0] as KubeObject & { spec: Record<string, unknown> };
}

function podTemplate(object: KubeObject): PodTemplate {
  return (object as unknown as { spec: { template: PodTemplate } }).spec.template;
}

function container(object: KubeObject, name: string): Container {
  const c = podTemplate(object).spec.containers.find((x) => x.name === name);
  assert.ok(c, `${object.kind}/${object.metadata.name} has no container ${name}`);
  return c;
}

function env(c: Container, name: string): EnvVar | undefined {
  const found = (c.env ?? []).filter((e) => e.name === name);
  assert.ok(found.length <= 1, `${c.name}: ${name} is set twice`);
  return found[0];
}

function selects(selector: Record<string, string>, labels: Record<string, string>): boolean {
  return Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels[k] === v);
}

function secretRefs(c: Container): { env: string; name: string; key: string }[] {
  return (c.env ?? []).flatMap((e) => (e.valueFrom?.secretKeyRef ? [{ env: e.name, ...e.valueFrom.secretKeyRef }] : []));
}

/** A named port of the container or a port number it exposes. */
function resolvePort(c: Container, port: number | string): number {
  const found = (c.ports ?? []).find((p) => p.name === port || p.containerPort === port);
  assert.ok(found, `${c.name} exposes no port ${port}`);
  return found.containerPort;
}

// ---------------------------------------------------------------------------------------------
// Kubernetes.

const OVERLAYS = ["gpu", "cpu"] as const;
const rendered = new Map<string, KubeObject[]>(OVERLAYS.map((o) => [o, renderKustomization(join(K8S, "overlays", o))]));
const secretExample = readManifest(join(K8S, "secret.example.yaml"));
const hpa = readManifest(join(K8S, "optional", "hpa.yaml"));
const modelsPvc = readManifest(join(K8S, "optional", "models-pvc.yaml"));

describe("deploy/kubernetes", () => {
  test("every rendered object, the optional ones and the example Secret validate", () => {
    for (const [overlay, objects] of rendered) {
      assert.deepEqual(
        objects.map((o) => o.kind).sort(),
        ["Deployment", "Job", "PodDisruptionBudget", "ScaledObject", "Service", "ServiceAccount"],
        `${overlay}: the kinds rendered`,
      );
      for (const object of objects) validateObject(object);
    }
    for (const object of [...secretExample, ...hpa, ...modelsPvc]) validateObject(object);
  });

  test("the validation refuses broken objects (it does validate)", () => {
    const deployment = structuredClone(one(rendered.get("cpu")!, "Deployment"));
    validateObject(deployment);
    assert.throws(() => validateObject({ ...deployment, spec: { ...deployment.spec, replicas: "two" } }), /replicas must be integer/);
    const typo = structuredClone(deployment);
    const c = podTemplate(typo).spec.containers[0]! as unknown as Record<string, unknown>;
    c.readinesProbe = c.readinessProbe;
    assert.throws(() => validateObject(typo), /containers\[0\]\.readinesProbe \(not a field of Container\)/);
    const scaled = structuredClone(one(rendered.get("cpu")!, "ScaledObject"));
    (scaled.spec.triggers as { metadata: Record<string, unknown> }[])[0]!.metadata.threshold = 4;
    assert.throws(() => validateObject(scaled), /threshold must be string/);
    assert.throws(() => validateObject({ apiVersion: "apps/v1", kind: "StatefulSet", metadata: { name: "x" } }), /no schema known/);
  });

  for (const overlay of OVERLAYS) {
    test(`${overlay}: the Deployment's probes, security, volumes, environment and shutdown`, () => {
      const objects = rendered.get(overlay)!;
      const deployment = one(objects, "Deployment");
      assert.equal(deployment.metadata.name, "trellis");
      assert.equal(deployment.spec.replicas, undefined, "the autoscaler owns the replica count");
      const pod = podTemplate(deployment);
      const c = container(deployment, "trellis");

      assert.equal(c.startupProbe?.httpGet?.path, "/readyz");
      assert.equal(resolvePort(c, c.startupProbe.httpGet.port), 8080);
      const startupSeconds = (c.startupProbe.periodSeconds ?? 10) * (c.startupProbe.failureThreshold ?? 3);
      assert.ok(startupSeconds >= 15 * 60 && startupSeconds <= 20 * 60, `startup probe allows ${startupSeconds} s of model loading`);
      assert.equal(c.livenessProbe?.httpGet?.path, "/healthz");
      assert.equal(c.readinessProbe?.httpGet?.path, "/readyz");
      assert.equal(resolvePort(c, 8080), 8080);

      assert.equal(env(c, "HOST")?.value, "0.0.0.0");
      assert.equal(env(c, "PORT")?.value, "8080");
      assert.equal(env(c, "TRELLIS_MODEL")?.value, "/models/model.gguf");
      assert.equal(env(c, "TRELLIS_MIGRATE_ON_START")?.value, "false");
      assert.deepEqual(
        secretRefs(c).map((r) => `${r.env}=${r.name}/${r.key}`),
        [
          "TRELLIS_DATABASE_URL=trellis-secrets/database-url",
          "TRELLIS_REDIS_URL=trellis-secrets/redis-url",
          "TRELLIS_ADMIN_TOKEN=trellis-secrets/admin-token",
        ],
      );

      // Shutdown: the grace period covers the preStop sleep and the longest request.
      const preStop = c.lifecycle?.preStop?.exec?.command ?? [];
      assert.equal(preStop[0], "sleep");
      const sleep = Number(preStop[1]);
      assert.ok(sleep >= 2 && sleep <= 15, `preStop sleeps ${sleep} s`);
      const requestTimeoutMs = Number(env(c, "TRELLIS_REQUEST_TIMEOUT_MS")?.value ?? 120_000);
      assert.ok(
        (pod.spec.terminationGracePeriodSeconds ?? 30) >= Math.max(requestTimeoutMs, 120_000) / 1000 + sleep,
        "terminationGracePeriodSeconds ≥ request timeout + preStop",
      );

      // Non-root, read-only, no privileges, no API token.
      assert.equal(pod.spec.securityContext?.runAsNonRoot, true);
      assert.equal(pod.spec.securityContext?.runAsUser, 10001);
      assert.equal(c.securityContext?.runAsNonRoot, true);
      assert.equal(c.securityContext?.allowPrivilegeEscalation, false);
      assert.equal(c.securityContext?.readOnlyRootFilesystem, true);
      assert.deepEqual(c.securityContext?.capabilities?.drop, ["ALL"]);
      assert.equal(pod.spec.automountServiceAccountToken, false);
      const account = one(objects, "ServiceAccount");
      assert.equal(pod.spec.serviceAccountName, account.metadata.name);
      assert.equal((account as unknown as { automountServiceAccountToken: boolean }).automountServiceAccountToken, false);

      // /models read-only from the trellis-models claim; /tmp the one writable place.
      const volume = (name: string) => pod.spec.volumes?.find((v) => v.name === name);
      const models = c.volumeMounts?.find((m) => m.mountPath === "/models");
      assert.equal(models?.readOnly, true);
      assert.deepEqual(volume(models.name)?.persistentVolumeClaim, { claimName: "trellis-models", readOnly: true });
      assert.equal(modelsPvc[0]!.metadata.name, "trellis-models");
      const tmp = c.volumeMounts?.find((m) => m.mountPath === "/tmp");
      assert.ok(tmp && volume(tmp.name)?.emptyDir, "/tmp is an emptyDir");

      assert.deepEqual(pod.metadata.annotations, {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": "8080",
        "prometheus.io/path": "/metrics",
      });
    });
  }

  test("gpu overlay: one GPU, the CUDA image and backend, the GPU taint tolerated", () => {
    const objects = rendered.get("gpu")!;
    const deployment = one(objects, "Deployment");
    const c = container(deployment, "trellis");
    assert.equal(c.resources?.limits?.["nvidia.com/gpu"], "1");
    assert.equal(env(c, "TRELLIS_GPU")?.value, "cuda");
    assert.equal(c.image, "ghcr.io/trellis/trellis:latest-cuda");
    assert.equal(container(one(objects, "Job"), "migrate").image, "ghcr.io/trellis/trellis:latest-cuda");
    assert.ok(podTemplate(deployment).spec.tolerations?.some((t) => t.key === "nvidia.com/gpu" && t.effect === "NoSchedule"));
  });

  test("cpu overlay: no GPU, whole cores requested = limited, TRELLIS_THREADS from the CPU request", () => {
    const objects = rendered.get("cpu")!;
    const deployment = one(objects, "Deployment");
    const c = container(deployment, "trellis");
    assert.doesNotMatch(JSON.stringify(objects), /nvidia\.com\/gpu/);
    assert.equal(c.image, "ghcr.io/trellis/trellis:latest");
    const cpu = c.resources?.requests?.cpu;
    assert.match(cpu ?? "", /^[1-9][0-9]*$/, "whole cores");
    assert.equal(c.resources?.limits?.cpu, cpu);
    assert.equal(c.resources?.limits?.memory, c.resources?.requests?.memory);
    // Trellis's own default is cores - 1: one core for the serving thread and compile workers.
    assert.equal(env(c, "TRELLIS_THREADS")?.value, String(Math.max(1, Number(cpu) - 1)));
    assert.notEqual(env(c, "TRELLIS_GPU")?.value, "cuda");
    assert.equal(podTemplate(deployment).spec.tolerations, undefined);
  });

  for (const overlay of OVERLAYS) {
    test(`${overlay}: Service, PodDisruptionBudget, migrate Job and ScaledObject fit the Deployment`, () => {
      const objects = rendered.get(overlay)!;
      const deployment = one(objects, "Deployment");
      const podLabels = podTemplate(deployment).metadata.labels;
      const selector = (deployment.spec.selector as { matchLabels: Record<string, string> }).matchLabels;
      assert.ok(selects(selector, podLabels), "the Deployment selects its own pods");
      const c = container(deployment, "trellis");

      const service = one(objects, "Service");
      const serviceSpec = service.spec as {
        type: string;
        selector: Record<string, string>;
        ports: { name: string; port: number; targetPort: string | number }[];
      };
      assert.equal(service.metadata.name, "trellis");
      assert.equal(serviceSpec.type, "ClusterIP");
      assert.ok(selects(serviceSpec.selector, podLabels), "the Service selects the Deployment's pods");
      const http = serviceSpec.ports.find((p) => p.port === 80);
      assert.equal(resolvePort(c, http!.targetPort), 8080);
      const metrics = serviceSpec.ports.find((p) => p.name === "metrics");
      assert.equal(resolvePort(c, metrics!.targetPort), 8080);

      const pdb = one(objects, "PodDisruptionBudget");
      assert.equal(pdb.spec.maxUnavailable, 1);
      assert.deepEqual((pdb.spec.selector as { matchLabels: Record<string, string> }).matchLabels, selector);

      const job = one(objects, "Job");
      assert.equal(job.metadata.name, "trellis-migrate");
      const jobPod = podTemplate(job);
      const migrate = container(job, "migrate");
      assert.deepEqual([...(migrate.command ?? []), ...(migrate.args ?? [])], ["node", "dist/cli.js", "migrate"]);
      assert.equal(migrate.image, c.image, "the Job migrates with the server's image");
      assert.ok(["Never", "OnFailure"].includes(jobPod.spec.restartPolicy ?? ""));
      assert.equal(typeof job.spec.backoffLimit, "number");
      assert.equal(typeof job.spec.ttlSecondsAfterFinished, "number");
      assert.deepEqual(secretRefs(migrate), secretRefs(c), "the Job reads the same secrets");
      assert.equal(jobPod.spec.securityContext?.runAsNonRoot, true);
      assert.ok(!selects(serviceSpec.selector, jobPod.metadata.labels), "the Service does not send requests to the Job's pod");
      assert.ok(!selects(selector, jobPod.metadata.labels), "the Deployment does not adopt the Job's pod");
      // README step 3 applies the Job alone (-l app.kubernetes.io/component=migrate): it may need
      // nothing else of the overlay but the Secret.
      assert.deepEqual(
        objects.filter((o) => o.metadata.labels?.["app.kubernetes.io/component"] === "migrate").map((o) => o.kind),
        ["Job"],
      );
      assert.equal(jobPod.spec.serviceAccountName, undefined);
      assert.equal(jobPod.spec.automountServiceAccountToken, false);

      const scaled = one(objects, "ScaledObject");
      assert.deepEqual(scaled.spec.scaleTargetRef, { apiVersion: "apps/v1", kind: "Deployment", name: deployment.metadata.name });
      assert.equal(scaled.spec.minReplicaCount, 1);
      assert.equal(scaled.spec.maxReplicaCount, 8);
      const triggers = scaled.spec.triggers as { type: string; metadata: Record<string, string> }[];
      assert.equal(triggers.length, 1);
      assert.equal(triggers[0]!.type, "prometheus");
      assert.match(triggers[0]!.metadata.query!, /^sum\(trellis_requests_waiting(\{[^}]*\})?\)$/);
      assert.ok(Number(triggers[0]!.metadata.threshold) > 0);
      assert.match(triggers[0]!.metadata.serverAddress!, /^https?:\/\//);
    });
  }

  test("every secret key referenced exists in the example Secret; it and the HPA stay out of the overlays", () => {
    const [secret] = secretExample;
    assert.equal(secretExample.length, 1);
    const keys = Object.keys((secret as unknown as { stringData: Record<string, string> }).stringData);
    for (const [overlay, objects] of rendered) {
      for (const kind of ["Deployment", "Job"]) {
        const workload = one(objects, kind);
        for (const c of podTemplate(workload).spec.containers) {
          for (const ref of secretRefs(c)) {
            assert.equal(ref.name, secret!.metadata.name, `${overlay} ${kind}: ${ref.env}`);
            assert.ok(keys.includes(ref.key), `${overlay} ${kind}: ${ref.env} reads key ${ref.key}, not in secret.example.yaml`);
          }
        }
      }
      assert.ok(!objects.some((o) => o.kind === "Secret" || o.kind === "HorizontalPodAutoscaler"), overlay);
    }
    const [autoscaler] = hpa;
    const spec = (autoscaler as unknown as { spec: Record<string, unknown> }).spec;
    assert.deepEqual(spec.scaleTargetRef, { apiVersion: "apps/v1", kind: "Deployment", name: "trellis" });
    const metrics = spec.metrics as { type: string; pods?: { metric: { name: string }; target: { type: string } } }[];
    assert.equal(metrics[0]?.type, "Pods");
    assert.equal(metrics[0]?.pods?.metric.name, "trellis_requests_waiting");
    assert.equal(metrics[0]?.pods?.target.type, "AverageValue");
    assert.match(readFileSync(join(K8S, "optional", "hpa.yaml"), "utf8"), /prometheus-adapter/);
  });

  test("the Kustomize renderer refuses what it does not implement", () => {
    const dir = mkdtempSync(join(tmpdir(), "trellis-kustomize-"));
    try {
      const write = (name: string, text: string) => {
        mkdirSync(dirname(join(dir, name)), { recursive: true });
        writeFileSync(join(dir, name), text);
      };
      const header = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n";
      write("sa.yaml", "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: a\n");
      write("labels/kustomization.yaml", `${header}resources: [../sa.yaml]\ncommonLabels: {a: b}\n`);
      assert.throws(
        () => renderKustomization(join(dir, "labels")),
        (e: unknown) => e instanceof KustomizeError && /"commonLabels" is not supported/.test(e.message),
      );
      write(
        "smp/kustomization.yaml",
        `${header}resources: [../sa.yaml]\npatches:\n  - target: {kind: ServiceAccount}\n    patch: |-\n      metadata: {labels: {a: b}}\n`,
      );
      assert.throws(() => renderKustomization(join(dir, "smp")), /only RFC 6902/);
      write("miss/kustomization.yaml", `${header}resources: [../sa.yaml]\npatches:\n  - target: {kind: Deployment}\n    patch: "[]"\n`);
      assert.throws(() => renderKustomization(join(dir, "miss")), /matches no object/);
      write(
        "test/kustomization.yaml",
        `${header}resources: [../sa.yaml]\npatches:\n  - target: {kind: ServiceAccount}\n    patch: |-\n      - {op: test, path: /metadata/name, value: b}\n`,
      );
      assert.throws(() => renderKustomization(join(dir, "test")), /test failed/);
      write("twice/kustomization.yaml", `${header}resources: [../sa.yaml, ../sa.yaml]\n`);
      assert.throws(() => renderKustomization(join(dir, "twice")), /defined twice/);
      write(
        "ok/kustomization.yaml",
        `${header}resources: [../sa.yaml]\npatches:\n  - target: {version: v1, kind: ServiceAccount, name: a}\n    patch: |-\n      - {op: add, path: /metadata/labels, value: {x~y: "1"}}\n      - {op: add, path: /automountServiceAccountToken, value: false}\n`,
      );
      assert.deepEqual(renderKustomization(join(dir, "ok")), [
        { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "a", labels: { "x~y": "1" } }, automountServiceAccountToken: false },
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// ---------------------------------------------------------------------------------------------
// HAProxy.

interface Replica {
  name: string;
  server: Server;
  port: number;
  ready: boolean;
  /** /readyz checks answered 503 (not ready). */
  failedChecks: number;
  /** While set, each non-health request is answered only once it resolves. */
  hold: Promise<void> | null;
  hits: number;
  lastHeaders: IncomingHttpHeaders | null;
  sockets: Set<Socket>;
  /** Resolved by the test to let /stream send its second event. */
  releaseStream: (() => void) | null;
  streamFinished: boolean;
}

async function startReplica(name: string): Promise<Replica> {
  const replica: Replica = {
    name,
    server: createServer(),
    port: 0,
    ready: true,
    failedChecks: 0,
    hold: null,
    hits: 0,
    lastHeaders: null,
    sockets: new Set(),
    releaseStream: null,
    streamFinished: false,
  };
  replica.server.on("connection", (socket: Socket) => {
    replica.sockets.add(socket);
    socket.on("close", () => replica.sockets.delete(socket));
  });
  replica.server.on("request", (req, res) => {
    if (req.url === "/readyz") {
      if (!replica.ready) replica.failedChecks++;
      res.writeHead(replica.ready ? 200 : 503, { "content-type": "application/json" });
      res.end(replica.ready ? '{"status":"ready"}' : '{"error":"shutting down"}');
      return;
    }
    replica.hits++;
    replica.lastHeaders = req.headers;
    if (req.url === "/fail") {
      res.writeHead(500, { "x-replica": name });
      res.end("generation failed");
      return;
    }
    if (req.url === "/stream") {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", "x-replica": name });
      res.write("data: first\n\n");
      // The second event waits for the test (or after()) to release it, however long that takes.
      replica.releaseStream = () => {
        replica.releaseStream = null;
        replica.streamFinished = true;
        res.end("data: second\n\n");
      };
      return;
    }
    const answer = (): void => {
      res.writeHead(200, { "content-type": "text/plain", "x-replica": name });
      res.end(name);
    };
    if (replica.hold) void replica.hold.then(answer);
    else answer();
  });
  replica.server.listen(0, "127.0.0.1");
  await once(replica.server, "listening");
  replica.port = (replica.server.address() as AddressInfo).port;
  return replica;
}

/** Generous: what HAProxy has not done by then it never will. Liveness, not speed. */
const LIVENESS_MS = 60_000;

interface Answer {
  status: number;
  replica: string | undefined;
  body: string;
}

function get(port: number, path: string): Promise<Answer> {
  return new Promise((resolveAnswer, reject) => {
    const req = httpRequest(
      { host: "127.0.0.1", port, path, agent: false, headers: { connection: "close" }, timeout: LIVENESS_MS },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (body += chunk));
        res.on("end", () => resolveAnswer({ status: res.statusCode ?? 0, replica: res.headers["x-replica"] as string | undefined, body }));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`GET ${path} timed out`)));
    req.on("error", reject);
    req.end();
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `condition` every `everyMs` until it holds; throws naming `what` only if it never does. */
async function until(what: string, condition: () => boolean | Promise<boolean>, log: () => string, everyMs = 20): Promise<void> {
  const deadline = Date.now() + LIVENESS_MS;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`not within ${LIVENESS_MS} ms: ${what}\n${log().slice(-2000)}`);
    await sleep(everyMs);
  }
}

function replicaEnv(ports: number[]): NodeJS.ProcessEnv {
  return {
    ...process.env,
    TRELLIS_REPLICA_1: `127.0.0.1:${ports[0]}`,
    TRELLIS_REPLICA_2: `127.0.0.1:${ports[1]}`,
    TRELLIS_REPLICA_3: `127.0.0.1:${ports[2]}`,
  };
}

// The suite's safety net, not a speed target: room for every wait below to run its full course.
describe("deploy/haproxy/haproxy.cfg", { timeout: 600_000 }, () => {
  const bin = haproxyBinary();
  const replicas: Replica[] = [];
  let haproxy: ChildProcess | null = null;
  let output = "";
  let lbPort = 0;

  before(async () => {
    for (const name of ["r1", "r2", "r3"]) replicas.push(await startReplica(name));
    lbPort = await freePort();
    const statsPort = await freePort();
    haproxy = spawn(bin, ["-db", "-f", HAPROXY_CFG], {
      env: {
        ...replicaEnv(replicas.map((r) => r.port)),
        TRELLIS_LB_ADDR: "127.0.0.1",
        TRELLIS_LB_PORT: String(lbPort),
        TRELLIS_LB_STATS_PORT: String(statsPort),
        TRELLIS_LB_CHECK_INTER: "200ms",
        TRELLIS_LB_CHECK_TIMEOUT: "1s",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    // Never left running, even if this process ends without its after() hook.
    process.once("exit", () => haproxy?.kill("SIGKILL"));
    haproxy.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    haproxy.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    // Up once its own health URI says at least one replica is ready.
    const lb = haproxy;
    const log = () => output;
    await until(
      "haproxy comes up",
      async () => {
        if (lb.exitCode !== null) throw new Error(`haproxy exited ${lb.exitCode}:\n${output}`);
        return (await get(lbPort, "/haproxy-health").catch(() => null))?.status === 200;
      },
      log,
      50,
    );
    // All three replicas up (rise 2 x 200 ms): each answers once in a few round-robin rounds.
    const seen = new Set<string>();
    await until(
      "every replica answers through haproxy",
      async () => {
        const answer = await get(lbPort, "/v1/models");
        if (answer.replica) seen.add(answer.replica);
        return seen.size === 3;
      },
      () => `replicas seen: ${[...seen]}\n${output}`,
      0,
    );
  });

  after(async () => {
    if (haproxy && haproxy.exitCode === null) {
      const exited = once(haproxy, "exit");
      haproxy.kill("SIGTERM");
      const timer = setTimeout(() => haproxy?.kill("SIGKILL"), 3000);
      await exited;
      clearTimeout(timer);
    }
    for (const r of replicas) {
      r.releaseStream?.();
      r.server.closeAllConnections();
      if (r.server.listening) r.server.close();
    }
  });

  test("haproxy -c accepts the configuration, with no warning, and refuses it without replica addresses", () => {
    const ok = spawnSync(bin, ["-c", "-f", HAPROXY_CFG], { env: replicaEnv([9001, 9002, 9003]), encoding: "utf8" });
    assert.equal(ok.status, 0, ok.stdout + ok.stderr);
    assert.doesNotMatch(ok.stdout + ok.stderr, /WARNING|ALERT/);
    const env = { ...process.env };
    delete env.TRELLIS_REPLICA_1;
    delete env.TRELLIS_REPLICA_2;
    delete env.TRELLIS_REPLICA_3;
    const missing = spawnSync(bin, ["-c", "-f", HAPROXY_CFG], { env, encoding: "utf8" });
    assert.notEqual(missing.status, 0);
  });

  test("the configuration makes the choices the issue asks for", () => {
    const cfg = readFileSync(HAPROXY_CFG, "utf8")
      .split("\n")
      .map((l) => l.replace(/#.*$/, "").trim())
      .filter((l) => l.length > 0);
    for (const line of [
      "balance leastconn",
      "option httpchk",
      "http-check expect status 200",
      "retries 3",
      "retry-on conn-failure empty-response response-timeout",
      "option forwardfor",
      "http-reuse safe",
      "monitor-uri /haproxy-health",
    ]) {
      assert.ok(cfg.includes(line), `haproxy.cfg lacks "${line}"`);
    }
    assert.ok(cfg.some((l) => /^option redispatch\b/.test(l)));
    assert.ok(cfg.some((l) => /^http-check send meth GET uri \/readyz\b/.test(l)));
    assert.ok(!cfg.some((l) => /http-server-close|httpclose|http-buffer-request|^compression/.test(l)), "nothing that closes or buffers");
    assert.equal(cfg.filter((l) => l.startsWith("retry-on ")).length, 1, "one retry-on, the one above: no 5xx retried");
    const minutes = (name: string) => {
      const m = new RegExp(`^timeout ${name} (\\d+)(m|s)$`).exec(cfg.find((l) => l.startsWith(`timeout ${name} `)) ?? "");
      assert.ok(m, `timeout ${name}`);
      return Number(m[1]) / (m[2] === "s" ? 60 : 1);
    };
    assert.ok(minutes("server") >= 10 && minutes("client") >= 10);
    assert.ok(cfg.some((l) => /^maxconn \d+$/.test(l)));
  });

  test("least connections: a replica holding a long request gets no more until it finishes", async () => {
    for (const r of replicas) r.hits = 0;
    let release = (): void => {};
    replicas[0]!.hold = new Promise((resolve) => (release = resolve));
    try {
      // One request at a time, 40 ms apart: r1 keeps each one it gets until all 24 are sent, so
      // under leastconn it has one more connection than the others and is skipped; round-robin
      // would give it 1/3.
      const pending: Promise<Answer>[] = [];
      for (let i = 0; i < 24; i++) {
        pending.push(get(lbPort, "/v1/completion"));
        await sleep(40);
      }
      release();
      const answers = await Promise.all(pending);
      assert.ok(answers.every((a) => a.status === 200));
      const counts = Object.fromEntries(replicas.map((r) => [r.name, answers.filter((a) => a.replica === r.name).length]));
      assert.ok(counts.r1! <= 2, `r1 (busy) got ${counts.r1}: ${JSON.stringify(counts)}`);
      assert.ok(counts.r2! >= 8 && counts.r3! >= 8, JSON.stringify(counts));
    } finally {
      release();
      replicas[0]!.hold = null;
    }
    // Idle again: requests are spread over all three.
    const answers: Answer[] = [];
    for (let i = 0; i < 30; i++) answers.push(await get(lbPort, "/v1/completion"));
    for (const r of replicas) {
      const n = answers.filter((a) => a.replica === r.name).length;
      assert.ok(n >= 5, `${r.name} got ${n} of 30`);
    }
  });

  test("X-Forwarded-For and X-Forwarded-Proto reach the replica", async () => {
    const answer = await get(lbPort, "/v1/models");
    const replica = replicas.find((r) => r.name === answer.replica)!;
    assert.equal(replica.lastHeaders?.["x-forwarded-for"], "127.0.0.1");
    assert.equal(replica.lastHeaders?.["x-forwarded-proto"], "http");
  });

  test("a 5xx is passed to the client, not retried on another replica", async () => {
    for (const r of replicas) r.hits = 0;
    const answer = await get(lbPort, "/fail");
    assert.equal(answer.status, 500);
    assert.equal(answer.body, "generation failed");
    assert.equal(
      replicas.reduce((n, r) => n + r.hits, 0),
      1,
    );
  });

  test("Server-Sent Events are forwarded as they are written, not buffered", async () => {
    const first = await new Promise<{ replica: Replica; chunk: string; rest: Promise<string> }>((resolveFirst, reject) => {
      const req = httpRequest({ host: "127.0.0.1", port: lbPort, path: "/stream", agent: false }, (res) => {
        res.setEncoding("utf8");
        let rest = "";
        let resolved = false;
        const ended = new Promise<string>((r) => res.on("end", () => r(rest)));
        res.on("data", (chunk: string) => {
          if (resolved) {
            rest += chunk;
            return;
          }
          resolved = true;
          const replica = replicas.find((r) => r.name === res.headers["x-replica"]);
          if (!replica) return reject(new Error("no x-replica header"));
          resolveFirst({ replica, chunk, rest: ended });
        });
      });
      req.on("error", reject);
      req.end();
    });
    assert.equal(first.chunk, "data: first\n\n");
    assert.equal(first.replica.streamFinished, false, "the first event arrived while the replica was still streaming");
    first.replica.releaseStream!();
    assert.equal(await first.rest, "data: second\n\n");
  });

  test("a replica whose /readyz answers 503 is taken out after 3 failed checks (fall 3), and gets no more requests", async () => {
    const r2 = replicas[1]!;
    const logFrom = output.length;
    r2.ready = false;
    // Requests go on meanwhile, each answered (the others are still up).
    await until(
      "HAProxy marks r2 DOWN",
      async () => {
        assert.equal((await get(lbPort, "/v1/completion")).status, 200);
        return /Server trellis\/r2 is DOWN/.test(output.slice(logFrom));
      },
      () => output,
    );
    assert.match(output.slice(logFrom), /Server trellis\/r2 is DOWN, reason: Layer7 wrong status, code: 503\b/);
    assert.ok(r2.failedChecks >= 3, `r2 taken out after ${r2.failedChecks} failed checks, fewer than fall 3`);
    // Marked DOWN (HAProxy logs it as the state changes): no request sent from now on reaches r2.
    const answers: Answer[] = [];
    for (let i = 0; i < 20; i++) answers.push(await get(lbPort, "/v1/completion"));
    assert.deepEqual(
      answers.filter((a) => a.status !== 200 || a.replica === "r2"),
      [],
      "every request answered, none by r2",
    );
  });

  test("a replica that vanishes costs no request: connection failures are retried on another", async () => {
    const r3 = replicas[2]!;
    r3.server.close();
    r3.server.closeAllConnections();
    for (const socket of r3.sockets) socket.destroy();
    await sleep(10);
    // r2 is out (503 above) and r3 refuses connections before its checks catch up: every request
    // must still be answered, by r1.
    for (let i = 0; i < 10; i++) {
      const answer = await get(lbPort, "/v1/completion");
      assert.equal(answer.status, 200, `request ${i}: ${answer.status} ${answer.body}\n${output.slice(-2000)}`);
      assert.equal(answer.replica, "r1");
    }
  });

  test("/haproxy-health turns 503 once no replica is ready", async () => {
    const logFrom = output.length;
    replicas[0]!.ready = false;
    // HAProxy says so as the last of them (r1; r2 is out, r3 gone) goes DOWN.
    await until(
      "HAProxy has no replica left",
      () => /backend '?trellis'? has no server available/.test(output.slice(logFrom)),
      () => output,
    );
    assert.equal((await get(lbPort, "/haproxy-health")).status, 503);
  });
});

// ---------------------------------------------------------------------------------------------
// Dockerfiles.

interface Instruction {
  keyword: string;
  args: string;
  line: number;
}

/** Instructions with their continuation lines joined; comments and blank lines dropped. */
function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  let pending: Instruction | null = null;
  text.split("\n").forEach((raw, i) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) return;
    const continues = line.endsWith("\\");
    const body = continues ? line.slice(0, -1).trim() : line;
    if (pending) pending.args += ` ${body}`;
    else {
      const m = /^(\S+)\s*(.*)$/.exec(body)!;
      pending = { keyword: m[1]!.toUpperCase(), args: m[2]!, line: i + 1 };
    }
    if (!continues) {
      out.push(pending);
      pending = null;
    }
  });
  assert.equal(pending, null, "a Dockerfile ends in a continuation line");
  return out;
}

function stages(instructions: Instruction[]): { from: string; name: string | undefined; body: Instruction[] }[] {
  const out: { from: string; name: string | undefined; body: Instruction[] }[] = [];
  for (const ins of instructions) {
    if (ins.keyword === "FROM") {
      const m = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args);
      assert.ok(m, `FROM ${ins.args}`);
      out.push({ from: m[1]!, name: m[2], body: [] });
    } else {
      assert.ok(out.length > 0, `${ins.keyword} before the first FROM`);
      out[out.length - 1]!.body.push(ins);
    }
  }
  return out;
}

describe("Dockerfile, Dockerfile.cuda, .dockerignore", () => {
  const require = createRequire(import.meta.url);
  const dockerfilelint = require("dockerfilelint") as {
    run(configPath: string, content: string): { line: number; title: string; rule: string }[];
  };
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { dependencies: Record<string, string> };

  for (const file of ["Dockerfile", "Dockerfile.cuda"]) {
    const text = readFileSync(join(ROOT, file), "utf8");
    const instructions = parseDockerfile(text);

    test(`${file}: dockerfilelint finds nothing`, () => {
      const lines = text.split("\n");
      const issues = dockerfilelint
        .run(NODE_MODULES, text)
        // dockerfilelint 1.8.0 reads HEALTHCHECK options with /--\w+=/ and so cannot read
        // --start-period (a hyphen); Docker documents the option, the image needs it (model load).
        .filter((item) => !(item.rule === "invalid_format" && /^HEALTHCHECK .*--start-period=/.test(lines[item.line - 1]?.trim() ?? "")));
      assert.deepEqual(issues, []);
    });

    test(`${file}: multi-stage, npm ci, production dependencies, non-root, port 8080, node dist/cli.js serve`, () => {
      const all = stages(instructions);
      assert.ok(all.length >= 2, "multi-stage");
      for (const stage of all) assert.match(stage.from, /^[^:@]+(:[\w.-]+|@sha256:[0-9a-f]{64})$/, `${stage.from} names a tag or digest`);
      assert.ok(!all.some((s) => /:latest$/.test(s.from)));
      const build = all[0]!;
      assert.equal(build.from, "node:24-bookworm-slim");
      assert.ok(
        build.body.some((i) => i.keyword === "RUN" && /\bnpm ci\b(?! --omit)/.test(i.args) && !/--ignore-scripts/.test(i.args)),
        "the build stage runs npm ci with its scripts (addon, better-sqlite3, prepare = tsc)",
      );
      assert.ok(
        all.slice(1).some((s) => s.body.some((i) => i.keyword === "RUN" && /\bnpm ci --omit=dev --ignore-scripts\b/.test(i.args))),
        "production dependencies: npm ci --omit=dev --ignore-scripts",
      );
      for (const ins of instructions) {
        assert.ok(!(ins.keyword === "ADD" && /\bhttps?:\/\//.test(ins.args)), `line ${ins.line}: ADD of a URL`);
        assert.ok(
          !(ins.keyword === "RUN" && /\b(curl|wget)\b.*\|\s*(ba)?sh\b/.test(ins.args)),
          `line ${ins.line}: piping a download into a shell`,
        );
      }

      const final = all[all.length - 1]!.body;
      const last = (keyword: string) => final.filter((i) => i.keyword === keyword).at(-1);
      const user = last("USER")?.args;
      assert.ok(user && !/^(0|root)(:|$)/.test(user), `final USER ${user} is not root`);
      assert.equal(user, "10001");
      assert.ok(final.some((i) => i.keyword === "EXPOSE" && i.args.split(/\s+/).includes("8080")));
      const envText = final
        .filter((i) => i.keyword === "ENV")
        .map((i) => i.args)
        .join(" ");
      for (const pair of ["HOST=0.0.0.0", "PORT=8080", "TRELLIS_DATA_DIR=/data", "NODE_OPTIONS=--max-semi-space-size=64"])
        assert.ok(envText.split(/\s+/).includes(pair), pair);
      assert.deepEqual(JSON.parse(last("ENTRYPOINT")!.args), ["node", "dist/cli.js"]);
      assert.deepEqual(JSON.parse(last("CMD")!.args), ["serve"]);
      const copies = final.filter((i) => i.keyword === "COPY").map((i) => i.args);
      assert.ok(
        copies.some((c) => /^--from=build \/app\/dist \.\/dist$/.test(c)),
        "dist/ from the build stage",
      );
      assert.ok(
        copies.some((c) => c.includes("build/Release/trellis_llama.node")),
        "the addon from the build stage",
      );
      assert.ok(
        copies.some((c) => c.includes("better_sqlite3.node")),
        "better-sqlite3's binary from the build stage",
      );
    });

    test(`${file}: what it copies from the build context exists and .dockerignore lets it through`, () => {
      const ignore = readFileSync(join(ROOT, ".dockerignore"), "utf8")
        .split("\n")
        .map((l) => l.trim())
        .filter((l) => l && !l.startsWith("#"));
      assert.equal(ignore[0], "*", ".dockerignore starts by excluding everything");
      const allowed = new Set(ignore.filter((l) => l.startsWith("!")).map((l) => l.slice(1).replace(/\/$/, "")));
      for (const ins of instructions.filter((i) => i.keyword === "COPY" && !i.args.startsWith("--from="))) {
        const sources = ins.args.split(/\s+/).slice(0, -1);
        for (const source of sources) {
          assert.ok(existsSync(join(ROOT, source)), `line ${ins.line}: ${source} does not exist`);
          assert.ok(allowed.has(source.replace(/\/$/, "")), `line ${ins.line}: ${source} is excluded by .dockerignore`);
        }
      }
    });
  }

  test("Dockerfile.cuda installs the CUDA build of the same node-llama-cpp version, on a CUDA runtime image", () => {
    const text = readFileSync(join(ROOT, "Dockerfile.cuda"), "utf8");
    const all = stages(parseDockerfile(text));
    assert.match(all[all.length - 1]!.from, /^nvidia\/cuda:[\d.]+-runtime-/);
    const version = pkg.dependencies["@node-llama-cpp/linux-x64"];
    assert.ok(version, "package.json depends on @node-llama-cpp/linux-x64");
    assert.ok(
      text.includes(`@node-llama-cpp/linux-x64-cuda@${version}`),
      `Dockerfile.cuda installs @node-llama-cpp/linux-x64-cuda@${version}`,
    );
  });
});
