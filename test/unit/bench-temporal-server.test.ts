import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { temporalModeFromArgs } from '../../dev/bench/temporal-server';
import { freePort } from '../../dev/local/infra/ports';
import {
  TEMPORAL_SERVER_VERSION,
  temporalServerConfig,
  type TemporalServerPorts,
} from '../../dev/local/infra/temporal-server';
import {
  devServerDynamicConfigArgs,
  temporalDynamicConfigFile,
} from '../../dev/local/infra/temporal-dynamic-config';

// `npm run bench -- --temporal=server` (docs/BENCHMARKS.md): the arguments, and the configuration
// the production server gets. The server itself runs in the bench only (it takes a go build).

const ROOT = path.resolve(__dirname, '../..');

describe('the bench --temporal argument', () => {
  it('is the dev server unless --temporal=server', () => {
    expect(temporalModeFromArgs([])).toBe('dev');
    expect(temporalModeFromArgs(['--temporal=dev'])).toBe('dev');
    expect(temporalModeFromArgs(['--temporal=server'])).toBe('server');
    expect(temporalModeFromArgs(['--temporal', 'server'])).toBe('server');
    expect(() => temporalModeFromArgs(['--temporal=cloud'])).toThrow(/--temporal=server/);
  });
});

describe('the Temporal server the bench runs', () => {
  it('is the version of the temporalio/server image docker-compose.yml runs', () => {
    expect(readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8')).toContain(
      `image: temporalio/server:${TEMPORAL_SERVER_VERSION}\n`,
    );
  });

  const ports: TemporalServerPorts = {
    frontend: 21001,
    frontendHttp: 21002,
    frontendMembership: 21003,
    history: 21004,
    historyMembership: 21005,
    matching: 21006,
    matchingMembership: 21007,
    worker: 21008,
    workerMembership: 21009,
  };
  const config = parse(
    stringify(
      temporalServerConfig({
        ports,
        postgres: { host: '127.0.0.1', port: 25432, user: 'postgres', password: 'password' },
        numHistoryShards: 8,
        dynamicConfigFile: '/tmp/dc.yaml',
      }),
    ),
  ) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

  it('keeps both stores on PostgreSQL (postgres12 plugin) with the shard count asked for', () => {
    expect(config.persistence.numHistoryShards).toBe(8);
    const stores = config.persistence.datastores;
    expect(stores[config.persistence.defaultStore].sql).toMatchObject({
      pluginName: 'postgres12',
      databaseName: 'temporal',
      connectAddr: '127.0.0.1:25432',
    });
    expect(stores[config.persistence.visibilityStore].sql).toMatchObject({
      pluginName: 'postgres12',
      databaseName: 'temporal_visibility',
    });
  });

  it('serves every service on loopback, on the ports it was given', () => {
    expect(config.global.membership.broadcastAddress).toBe('127.0.0.1');
    expect(config.services.frontend.rpc).toEqual({
      grpcPort: 21001,
      membershipPort: 21003,
      httpPort: 21002,
      bindOnLocalHost: true,
    });
    for (const name of ['history', 'matching', 'worker']) {
      expect(config.services[name].rpc.bindOnLocalHost).toBe(true);
    }
    expect(config.clusterMetadata.clusterInformation.active.rpcAddress).toBe('127.0.0.1:21001');
    expect(config.dynamicConfigClient.filepath).toBe('/tmp/dc.yaml');
  });

  it('gets ports below 32768, which its membership table stores as smallint', async () => {
    for (let i = 0; i < 5; i += 1) expect(await freePort()).toBeLessThan(32768);
  });
});

describe("the project's Temporal dynamic config (ops/temporal/dynamicconfig.yaml)", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'payouts-dynamic-config-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const fileWith = (text: string) => {
    const file = path.join(dir, `${Math.random()}.yaml`);
    writeFileSync(file, text);
    return file;
  };

  it('is the file in ops/, and its entries as dev-server flags', () => {
    expect(temporalDynamicConfigFile()).toBe(path.join(ROOT, 'ops/temporal/dynamicconfig.yaml'));
    expect(devServerDynamicConfigArgs()).toEqual([
      '--dynamic-config-value',
      'frontend.enableUpdateWorkflowExecution=true',
      '--dynamic-config-value',
      'frontend.enableExecuteMultiOperation=true',
      '--dynamic-config-value',
      'system.enableActivityEagerExecution=true',
    ]);
  });

  it('gives the dev server values as JSON', () => {
    expect(devServerDynamicConfigArgs(fileWith('a.n:\n  - value: 3\nb.s:\n  - value: x y\n'))).toEqual([
      '--dynamic-config-value',
      'a.n=3',
      '--dynamic-config-value',
      'b.s="x y"',
    ]);
  });

  it('refuses an entry the dev server cannot take as it is: constrained, or several values', () => {
    const constrained = 'a.n:\n  - value: 3\n    constraints:\n      namespace: payouts\n';
    expect(() => devServerDynamicConfigArgs(fileWith(constrained))).toThrow(/a\.n must be one value/);
    const several = 'a.n:\n  - value: 3\n  - value: 4\n';
    expect(() => devServerDynamicConfigArgs(fileWith(several))).toThrow(/a\.n must be one value/);
  });
});
