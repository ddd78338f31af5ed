import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { privateKeyToAddress } from 'viem/accounts';
import { parse } from 'yaml';
import { loadApiConfig, loadMigrateConfig, loadWorkerConfig, PROCESS_VARIABLES } from '../../src/config';
import { PAYOUT_SEARCH_ATTRIBUTES } from '../../src/workflows/search-attributes';
import { anvilAccount } from '../../dev/local/infra/anvil';
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
const published = (name: string) => (services[name]?.ports ?? []).map((p) => p.split(':'));
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
    expect(published('postgres')).toContainEqual(['5432', '5432']);
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
    expect(services.migrate!.restart).toBe('no');
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
