import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { privateKeyToAddress } from 'viem/accounts';
import Ajv from 'ajv';
import draft07 from 'ajv/dist/refs/json-schema-draft-07.json';
import { parse } from 'yaml';
import { CHARGE_WAIT_MS } from '../../src/api/payouts/start-payout';
import { loadApiConfig, loadMigrateConfig, loadWorkerConfig } from '../../src/config';
import { PROCESS_VARIABLES } from '../../src/config/processes';
import { PAYOUT_SEARCH_ATTRIBUTES } from '../../src/workflows/search-attributes';
import { anvilAccount } from '../../dev/local/infra/anvil';
import {
  devServerDynamicConfigArgs,
  temporalDynamicConfigFile,
} from '../../dev/local/infra/temporal-dynamic-config';
import { FRESH_CHAIN_CONTRACTS } from '../../dev/local/local-contracts';
import { loadSandboxConfig, SANDBOX_ENV_KEYS } from '../../dev/sandbox/config';

// There is no Docker engine here, so docker-compose.yml is checked statically against the code:
// every service, port, command and env var it names must be one the code really has.

const ROOT = path.resolve(__dirname, '../..');
interface Service {
  image?: string;
  profiles?: string[];
  entrypoint?: string[];
  volumes?: string[];
  build?: string;
  command?: string[] | string;
  restart?: string;
  healthcheck?: { test: string[] };
  stop_grace_period?: string;
  environment?: Record<string, string>;
  ports?: string[];
  depends_on?: string[] | Record<string, { condition: string }>;
}
/**
 * The file as compose reads it with `hostEnv` as the shell's environment: `${VAR:-default}` and
 * `${VAR}` interpolated, `$$` an escaped `$`.
 */
function loadCompose(hostEnv: Record<string, string> = {}): { services: Record<string, Service> } {
  const text = readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8').replace(
    /\$\$|\$\{(\w+)(?::?-([^}]*))?\}/g,
    (whole, name?: string, fallback?: string) => (whole === '$$' ? '$' : hostEnv[name!] || (fallback ?? '')),
  );
  return parse(text, { merge: true }) as { services: Record<string, Service> };
}
const services = loadCompose().services;
/** Host port and container port of each published port; every one bound to the host's loopback only. */
const published = (name: string) =>
  (services[name]?.ports ?? []).map((p) => {
    const [host, ...ports] = p.split(':');
    expect({ name, port: p, host }).toEqual({ name, port: p, host: '127.0.0.1' });
    return ports;
  });
const tokenAddress = FRESH_CHAIN_CONTRACTS.usdtAddress;
describe('docker-compose.yml', () => {
  it('has every part of the system', () => {
    expect(Object.keys(services)).toEqual(
      expect.arrayContaining([
        'postgres',
        'temporal',
        'temporal-ui',
        'anvil',
        'chain-setup',
        'sandbox',
        'worker',
        'api',
      ]),
    );
    for (const [name, service] of Object.entries(services)) {
      expect({ name, source: Boolean(service.image || service.build) }).toEqual({ name, source: true });
    }
  });

  it('publishes the documented ports', () => {
    expect(published('api')).toEqual(
      expect.arrayContaining([
        ['3000', '3000'],
        ['9464', '9464'],
      ]),
    );
    expect(published('sandbox')).toContainEqual(['4000', '4000']);
    expect(published('temporal')).toContainEqual(['7233', '7233']);
    expect(published('temporal-ui')).toContainEqual(['8233', '8080']);
    expect(published('anvil')).toContainEqual(['8545', '8545']);
    // The databases stay on compose's network: nothing on the host reaches them by default.
    expect(published('postgres')).toEqual([]);
    expect(published('temporal-db')).toEqual([]);
  });

  it('depends only on services it defines', () => {
    for (const service of Object.values(services)) {
      const deps = Array.isArray(service.depends_on)
        ? service.depends_on
        : Object.keys(service.depends_on ?? {});
      for (const dep of deps) expect(Object.keys(services)).toContain(dep);
    }
  });

  it('runs compiled entry points (node dist/...) whose sources exist, from an image that builds them', () => {
    const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
    for (const dir of ['src', 'migrations', 'contracts'])
      expect(dockerfile).toContain(`COPY ${dir} ./${dir}`);
    expect(dockerfile).toContain('RUN npm run build');
    for (const [name, service] of Object.entries(services)) {
      if (!service.build) continue;
      const argv = [
        ...(service.entrypoint ?? []),
        ...(Array.isArray(service.command) ? service.command : []),
      ];
      expect({ name, runtime: argv[0] }).toEqual({ name, runtime: 'node' });
      const entry = argv.find((a) => a.startsWith('dist/'));
      const source = entry?.replace(/^dist\//, '').replace(/\.js$/, '.ts');
      expect({ name, source: source && existsSync(path.join(ROOT, source)) }).toEqual({ name, source: true });
    }
  });

  it('migrates once, in a one-shot job the api and the worker wait for', () => {
    expect(services.migrate!.command).toEqual(['node', 'dist/src/main/migrate.js']);
    expect(services.migrate!.restart).toMatch(/^on-failure/);
    for (const name of ['api', 'worker'])
      expect(services[name]!.depends_on).toMatchObject({
        migrate: { condition: 'service_completed_successfully' },
      });
  });

  it('runs a maintained Temporal setup: server + schema job, namespace and every search attribute', () => {
    for (const service of Object.values(services)) expect(service.image ?? '').not.toMatch(/auto-setup/);
    expect(services.temporal!.image).toMatch(/^temporalio\/server:/);
    expect(services['temporal-schema']!.image).toMatch(/^temporalio\/admin-tools:/);
    expect(services.temporal!.depends_on).toMatchObject({
      'temporal-schema': { condition: 'service_completed_successfully' },
    });
    // The namespace the api and the worker connect to (the service's own, not "default") is the one
    // the setup creates, and every search attribute the workflows upsert is registered in it.
    const namespaces = [
      loadApiConfig(services.api!.environment!).TEMPORAL_NAMESPACE,
      loadWorkerConfig(services.worker!.environment!).TEMPORAL_NAMESPACE,
    ];
    expect(namespaces).toEqual([
      loadApiConfig({}).TEMPORAL_NAMESPACE,
      loadWorkerConfig({}).TEMPORAL_NAMESPACE,
    ]);
    const namespace = namespaces[0]!;
    expect(namespace).not.toBe('default');
    const setup = String(services['temporal-setup']!.command);
    expect(setup).toContain(`namespace create --namespace ${namespace} `);
    expect(setup).toContain(`search-attribute create --namespace ${namespace} `);
    const registered = /for name in ([\w ]+); do/.exec(setup)?.[1]?.split(' ');
    expect(registered?.sort()).toEqual(PAYOUT_SEARCH_ATTRIBUTES.map((key) => key.name).sort());
    for (const key of PAYOUT_SEARCH_ATTRIBUTES) expect(key.type).toBe('KEYWORD');
    expect(setup).toContain('--type Keyword');
  });

  it('has a trace backend in the observability profile, which the api and the worker export to when told', () => {
    expect(services.jaeger!.profiles).toEqual(['observability']);
    expect(services.jaeger!.image).toMatch(/^cr\.jaegertracing\.io\/jaegertracing\/jaeger:\d+\.\d+\.\d+$/);
    for (const name of ['api', 'worker']) {
      // Off unless the host sets it (interpolated from the host's environment, empty here).
      expect(services[name]!.environment!.OTEL_EXPORTER_OTLP_ENDPOINT).toBe('');
      const told = { ...services[name]!.environment!, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318' };
      const load = name === 'api' ? loadApiConfig : loadWorkerConfig;
      expect(load(told).OTEL_EXPORTER_OTLP_ENDPOINT).toBe('http://jaeger:4318');
    }
  });

  it("gives the Temporal server the project's dynamic config, each entry one value the dev server takes too", () => {
    const temporal = services.temporal!;
    const [host, inImage, mode] = temporal.volumes![0]!.split(':');
    expect([host, mode]).toEqual(['./ops/temporal', 'ro']);
    expect(temporal.environment!.DYNAMIC_CONFIG_FILE_PATH).toBe(`${inImage}/dynamicconfig.yaml`);
    const file = path.join(ROOT, host!, 'dynamicconfig.yaml');
    expect(file).toBe(temporalDynamicConfigFile());
    expect(devServerDynamicConfigArgs(file)).toContain('system.enableActivityEagerExecution=true');
  });

  it('has an optional observability profile: Prometheus with the alert rules, Grafana with the dashboard', () => {
    expect(services.prometheus!.profiles).toEqual(['observability']);
    expect(services.grafana!.profiles).toEqual(['observability']);
    const mounts = (name: string) => (services[name]!.volumes ?? []).map((v) => v.split(':'));
    for (const name of ['prometheus', 'grafana'])
      for (const [host] of mounts(name)) expect(existsSync(path.join(ROOT, host!))).toBe(true);
    expect(mounts('prometheus')).toContainEqual(['./ops/alerts.yml', '/etc/prometheus/alerts.yml', 'ro']);
    const prometheus = parse(readFileSync(path.join(ROOT, 'ops/prometheus.yml'), 'utf8')) as {
      rule_files: string[];
      scrape_configs: { job_name: string; static_configs: { targets: string[] }[] }[];
    };
    expect(prometheus.rule_files).toEqual(['/etc/prometheus/alerts.yml']);
    const api = loadApiConfig(services.api!.environment!);
    const worker = loadWorkerConfig(services.worker!.environment!);
    const targets = Object.fromEntries(
      prometheus.scrape_configs.map((c) => [c.job_name, c.static_configs.flatMap((s) => s.targets)]),
    );
    expect(targets).toEqual({
      'payout-api': [`api:${api.METRICS_PORT}`],
      'payout-worker': [`worker:${worker.WORKER_METRICS_PORT}`],
    });
  });

  it.each([
    ['api', 'api'],
    ['worker', 'worker'],
    ['migrate', 'migrate'],
    ['admin', 'admin'],
  ] as const)('gives the %s service only variables its process reads', (service, process) => {
    for (const key of Object.keys(services[service]!.environment!))
      expect({ service, key, read: PROCESS_VARIABLES[process].includes(key as never) }).toEqual({
        service,
        key,
        read: true,
      });
  });

  it('gives the api and the worker valid settings for the stack', () => {
    const api = loadApiConfig(services.api!.environment!);
    const worker = loadWorkerConfig(services.worker!.environment!);
    for (const config of [api, worker]) {
      expect(config.TEMPORAL_ADDRESS).toBe('temporal:7233');
      expect(new URL(config.PROVIDER_API_URL).host).toBe('sandbox:4000');
      expect(config.EVM_CHAIN_ID).toBe(42161);
    }
    for (const config of [api, worker]) {
      expect(new URL(config.EVM_RPC_URL).host).toBe('anvil:8545');
      expect(config.USDT_CONTRACT_ADDRESS.toLowerCase()).toBe(tokenAddress.toLowerCase());
      expect(config.SANCTIONS_ORACLE_ADDRESS.toLowerCase()).toBe(
        FRESH_CHAIN_CONTRACTS.sanctionsOracleAddress.toLowerCase(),
      );
    }
    expect(privateKeyToAddress(worker.TREASURY_PRIVATE_KEY as `0x${string}`)).toBe(
      anvilAccount('treasury').address,
    );
    expect(published('api')).toContainEqual([String(api.PORT), String(api.PORT)]);
    expect(published('api')).toContainEqual([String(api.METRICS_PORT), String(api.METRICS_PORT)]);
    expect(loadMigrateConfig(services.migrate!.environment!).DATABASE_URL).toBe(api.DATABASE_URL);
  });

  it('points the sandbox at the api webhook, the chain and its funded wallet', () => {
    const env = services.sandbox!.environment!;
    for (const key of Object.keys(env)) expect(SANDBOX_ENV_KEYS).toContain(key);
    const sandbox = loadSandboxConfig(env);
    const api = loadApiConfig(services.api!.environment!);
    expect(sandbox.webhookUrl).toBe(`http://api:${api.PORT}/webhooks/${api.PROVIDER_NAME}`);
    expect(sandbox.port).toBe(4000);
    expect(sandbox.usdtAddress?.toLowerCase()).toBe(tokenAddress.toLowerCase());
    expect(privateKeyToAddress(sandbox.walletPrivateKey!)).toBe(anvilAccount('provider-sandbox').address);
  });

  it('lets the Web UI decode payloads through the api codec endpoint', () => {
    const ui = services['temporal-ui']!.environment!;
    const api = loadApiConfig(services.api!.environment!);
    expect(ui.TEMPORAL_CODEC_ENDPOINT).toBe(`http://localhost:${api.METRICS_PORT}/codec`);
    expect(api.CODEC_CORS_ORIGINS.split(',')).toContain('http://localhost:8233');
    // The browser sends its codec session cookie (codec-ui.test.ts): credentials on, and UI and codec on
    // one site (localhost, whatever the ports), which SameSite=Strict requires; a token is required.
    expect(ui.TEMPORAL_CODEC_INCLUDE_CREDENTIALS).toBe('true');
    expect(new URL(ui.TEMPORAL_CODEC_ENDPOINT!).hostname).toBe('localhost');
    expect(api.CODEC_AUTH_TOKEN).toBeDefined();
    const worker = loadWorkerConfig(services.worker!.environment!);
    expect(published('worker')).toContainEqual([
      String(worker.WORKER_METRICS_PORT),
      String(worker.WORKER_METRICS_PORT),
    ]);
  });

  it('runs the worker versioned when the host sets TEMPORAL_WORKER_BUILD_ID, unversioned otherwise', () => {
    const unset = loadWorkerConfig(services.worker!.environment!);
    expect(unset.TEMPORAL_WORKER_BUILD_ID).toBeUndefined();
    const worker = loadWorkerConfig(
      loadCompose({ TEMPORAL_WORKER_BUILD_ID: '5aac218' }).services.worker!.environment!,
    );
    expect(worker.TEMPORAL_WORKER_BUILD_ID).toBe('5aac218');
    // The only worker of the demo: it promotes its own build, or no new payout would start.
    expect(worker.TEMPORAL_WORKER_SET_CURRENT).toBe(true);
  });

  it('starts the api and the worker only once the chain setup has deployed the contracts they read', () => {
    for (const name of ['api', 'worker'])
      expect(services[name]!.depends_on).toMatchObject({
        'chain-setup': { condition: 'service_completed_successfully' },
      });
  });

  it('starts anvil on chain id 42161', () => {
    const args = services.anvil!.command as string[];
    expect(args[args.indexOf('--chain-id') + 1]).toBe('42161');
  });
});

describe('docker-compose.yml on a first `docker compose up`', () => {
  const ONE_SHOT = ['migrate', 'temporal-schema', 'temporal-setup', 'chain-setup'];
  const condition = (service: string, dep: string) =>
    (services[service]!.depends_on as Record<string, { condition: string }>)[dep]?.condition;
  /** Compose's duration syntax as used here (`45s`, `1m30s`), in seconds. */
  const seconds = (duration: string) => {
    const m = /^(?:(\d+)m)?(?:(\d+)s)?$/.exec(duration);
    if (!m || !duration) throw new Error(`unparsed duration ${duration}`);
    return Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0);
  };

  it('pins every image to a tag its maintainers name (ops/image-tags.yml, with the source of each)', () => {
    const pinned = (
      parse(readFileSync(path.join(ROOT, 'ops/image-tags.yml'), 'utf8')) as {
        images: { image: string; tag: string; source: string }[];
      }
    ).images;
    for (const entry of pinned) expect(entry.source.length).toBeGreaterThan(20);
    const allowed = new Set(pinned.map((p) => `${p.image}:${p.tag}`));
    const used = Object.values(services).flatMap((s) => (s.image ? [s.image] : []));
    for (const image of used) expect({ image, pinned: allowed.has(image) }).toEqual({ image, pinned: true });
    // And nothing listed goes unused: the list is the compose file's, not a wish list.
    expect([...allowed].sort()).toEqual([...new Set(used)].sort());
  });

  it('checks PostgreSQL over TCP: the init server on the Unix socket is not the real one', () => {
    for (const name of ['postgres', 'temporal-db']) {
      const test = services[name]!.healthcheck!.test.join(' ');
      expect(test).toMatch(/pg_isready -h 127\.0\.0\.1 /);
    }
  });

  it('retries its one-shot jobs, which run only once what they need is ready', () => {
    for (const name of ONE_SHOT)
      expect({ name, restart: services[name]!.restart }).toEqual({
        name,
        restart: expect.stringMatching(/^on-failure/),
      });
    expect(condition('migrate', 'postgres')).toBe('service_healthy');
    expect(condition('temporal-schema', 'temporal-db')).toBe('service_healthy');
    expect(condition('temporal-setup', 'temporal')).toBe('service_healthy');
    expect(condition('temporal-ui', 'temporal')).toBe('service_healthy');
    // A node that answers JSON-RPC, not one whose process merely exists.
    expect(services.anvil!.healthcheck!.test).toEqual(
      expect.arrayContaining(['cast', 'chain-id', '--rpc-url', 'http://127.0.0.1:8545']),
    );
    expect(condition('chain-setup', 'anvil')).toBe('service_healthy');
  });

  it('gives the worker and the api time to drain before Docker kills them', () => {
    const worker = loadWorkerConfig(services.worker!.environment!);
    expect(seconds(services.worker!.stop_grace_period!)).toBeGreaterThan(
      worker.WORKER_SHUTDOWN_GRACE_SECONDS,
    );
    // The api's longest request: a POST that reads a quote from the provider, then waits for its charge.
    const api = loadApiConfig(services.api!.environment!);
    expect(seconds(services.api!.stop_grace_period!) * 1000).toBeGreaterThan(
      CHARGE_WAIT_MS + api.PROVIDER_TIMEOUT_MS,
    );
    expect(services.worker!.healthcheck!.test.join(' ')).toContain(
      `http://127.0.0.1:${worker.WORKER_METRICS_PORT}/readyz`,
    );
  });

  it('is valid against the Compose Specification schema (vendored from compose-spec/compose-spec)', () => {
    const ajv = new Ajv({ allErrors: true, strict: false });
    // The spec names draft-07 by its https address; Ajv knows the same meta-schema by its http one.
    ajv.addMetaSchema({ ...draft07, $id: 'https://json-schema.org/draft-07/schema' });
    const validate = ajv.compile(
      JSON.parse(readFileSync(path.join(__dirname, 'vendor/compose-spec.json'), 'utf8')) as object,
    );
    // As written (anchors merged, `${...}` left for compose), and as compose reads it.
    const raw = parse(readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), {
      merge: true,
    }) as unknown;
    for (const doc of [raw, loadCompose()]) {
      validate(doc);
      expect(validate.errors ?? []).toEqual([]);
    }
    // The validator does refuse what compose refuses.
    expect(validate({ services: { api: { image: 'x', restart: 3, stop_grace_period: [] } } })).toBe(false);
  });
});
