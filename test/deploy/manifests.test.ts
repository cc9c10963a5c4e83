// The deployment recipe (docs/fleet.md, "Deployment"), checked offline: every Kubernetes
// manifest validates against the Kubernetes API schemas (kubernetes-models), the StatefulSet
// runs each pod as the node of its own name, non-root, probed at /data/ready; the Dockerfile
// builds on Debian with the project's set-up (runtime packages) and runs as a non-root user.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import * as apps from 'kubernetes-models/apps/v1';
import * as core from 'kubernetes-models/v1';
import t from 'tap';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../helpers/server.ts';

const DIR = path.join(REPO_ROOT, 'deploy/kubernetes');
type Model = new (data: never) => { validate(): void };
const MODELS: Record<string, Model> = {
  'apps/v1/StatefulSet': apps.StatefulSet as unknown as Model,
  'v1/Service': core.Service as unknown as Model,
  'v1/ConfigMap': core.ConfigMap as unknown as Model,
};

const docs = readdirSync(DIR)
  .filter((f) => f.endsWith('.yaml'))
  .flatMap((f) =>
    parseAllDocuments(readFileSync(path.join(DIR, f), 'utf8')).map((d, i) => ({
      where: `${f}#${i}`,
      obj: d.toJS() as Record<string, unknown> & { apiVersion: string; kind: string },
    })),
  );

t.test('every manifest validates against the Kubernetes schemas', async (t) => {
  t.ok(docs.length >= 3, `${docs.length} documents`);
  for (const { where, obj } of docs) {
    const Model = MODELS[`${obj.apiVersion}/${obj.kind}`];
    t.ok(Model, `${where}: ${obj.apiVersion} ${obj.kind} is a known kind`);
    if (Model) t.doesNotThrow(() => new Model(obj as never).validate(), `${where} validates`);
  }
  // The validator does refuse a broken manifest (it is not a no-op).
  const broken = structuredClone(
    docs.find((d) => d.obj.kind === 'StatefulSet')!.obj,
  ) as unknown as {
    spec: { template: { spec: { containers: { ports: { containerPort: unknown }[] }[] } } };
  };
  broken.spec.template.spec.containers[0]!.ports[0]!.containerPort = 'http';
  t.throws(() => new apps.StatefulSet(broken as never).validate(), /containerPort/);
});

t.test('the StatefulSet: pod name = node name, non-root, readiness = config applied', async (t) => {
  const ss = docs.find((d) => d.obj.kind === 'StatefulSet')!.obj as unknown as {
    spec: {
      serviceName: string;
      template: {
        spec: {
          securityContext: { runAsNonRoot: boolean; runAsUser: number };
          containers: {
            args: string[];
            env: { name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
            readinessProbe: { httpGet: { path: string; port: string } };
            volumeMounts: { mountPath: string }[];
          }[];
        };
      };
    };
  };
  const pod = ss.spec.template.spec;
  const c = pod.containers[0]!;
  t.equal(
    c.env.find((e) => e.name === 'SLUICE_NODE')?.valueFrom?.fieldRef?.fieldPath,
    'metadata.name',
  );
  t.ok(c.args.includes('--git') && c.args.includes('--node'), `args ${c.args.join(' ')}`);
  t.equal(c.readinessProbe.httpGet.path, '/data/ready');
  t.equal(pod.securityContext.runAsNonRoot, true);
  t.equal(pod.securityContext.runAsUser, 10001);
  t.ok(
    c.volumeMounts.some((m) => m.mountPath === '/var/lib/sluice'),
    'the data dir is a volume',
  );
  const headless = docs.find((d) => d.obj.kind === 'Service')!.obj as unknown as {
    metadata: { name: string };
    spec: { clusterIP: string };
  };
  t.equal(ss.spec.serviceName, headless.metadata.name);
  t.equal(headless.spec.clusterIP, 'None', 'nodes are addressed one by one');
});

t.test('the Dockerfile: Debian base, the set-up, a non-root user matching the pods', async (t) => {
  const text = readFileSync(path.join(REPO_ROOT, 'deploy/Dockerfile'), 'utf8');
  const lines = text.split('\n').filter((l) => l && !l.startsWith('#'));
  t.match(lines[0], /^FROM node:20-bookworm/, 'Debian bookworm with Node 20');
  t.match(text, /SLUICE_SETUP=runtime scripts\/setup/, "the project's own set-up installs it");
  t.match(text, /useradd --system --uid 10001/);
  t.match(text, /^USER 10001:10001$/m);
  t.match(
    text,
    /^ENTRYPOINT \["node", "bin\/sluice.js", "serve", "--data-dir", "\/var\/lib\/sluice"\]$/m,
  );
  t.match(text, /^EXPOSE 43971 43981 10444 10445$/m);
});
