import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { loadApiConfig, loadWorkerConfig } from '../../src/config';
import { connectClient, connectWorker, temporalConnectionOptions } from '../../src/temporal/connection';
import { createDevServerEnv } from '../support/temporal';

// The profile `temporal config set` writes to the default config file (no TEMPORAL_* variable at
// all, only HOME) gives the api and the worker everything: address, namespace, API key, TLS and gRPC
// metadata. Against a real dev server where it can (plain text: the API key and the metadata are
// sent, TLS off by the profile); with TLS on, what the SDK would be given.
describe('Temporal profile in the default config file', () => {
  let env: TestWorkflowEnvironment;
  const home = mkdtempSync(path.join(os.tmpdir(), 'temporal-home-'));
  const writeProfile = (lines: string[]) => {
    mkdirSync(path.join(home, '.config', 'temporalio'), { recursive: true });
    writeFileSync(path.join(home, '.config', 'temporalio', 'temporal.toml'), [...lines, ''].join('\n'));
  };

  beforeAll(async () => {
    env = await createDevServerEnv();
  }, 120_000);
  afterAll(async () => {
    await env?.teardown();
    rmSync(home, { recursive: true, force: true });
  });

  it("connects the api and the worker with the address, namespace, API key and gRPC metadata of HOME's profile", async () => {
    writeProfile([
      '[profile.default]',
      `address = "${env.address}"`,
      'namespace = "default"',
      'api_key = "profile-api-key"',
      '[profile.default.tls]',
      'disabled = true',
      '[profile.default.grpc_meta]',
      'x-tenant = "acme"',
    ]);
    const processEnv = { HOME: home };
    const config = loadApiConfig(processEnv);
    expect(config.TEMPORAL_ADDRESS).toBe(env.address);
    expect(config.TEMPORAL_NAMESPACE).toBe('default');
    expect(loadWorkerConfig(processEnv).TEMPORAL_ADDRESS).toBe(env.address);

    const options = temporalConnectionOptions(config, processEnv);
    expect(options).toMatchObject({
      address: env.address,
      apiKey: 'profile-api-key',
      tls: false,
      metadata: { 'x-tenant': 'acme' },
    });

    // The connections the processes open (process.env is where they read HOME from).
    const saved = process.env.HOME;
    process.env.HOME = home;
    try {
      const { client, connection } = await connectClient(config, {});
      try {
        expect(connection.options).toMatchObject({
          apiKey: 'profile-api-key',
          metadata: { 'x-tenant': 'acme' },
        });
        const { namespaceInfo } = await client.workflowService.describeNamespace({ namespace: 'default' });
        expect(namespaceInfo?.name).toBe('default');
      } finally {
        await connection.close();
      }
      const worker = await connectWorker(config);
      await worker.close();
    } finally {
      process.env.HOME = saved;
    }
  });

  it('takes TLS from the profile (server name, CA) and turns it on for an API key', () => {
    writeFileSync(path.join(home, 'ca.pem'), 'CA');
    writeProfile([
      '[profile.default]',
      'address = "payouts.acct.tmprl.cloud:7233"',
      'namespace = "payouts.acct"',
      'api_key = "cloud-key"',
      '[profile.default.tls]',
      `server_ca_cert_path = "${path.join(home, 'ca.pem')}"`,
      'server_name = "payouts.acct.tmprl.cloud"',
      '[profile.default.grpc_meta]',
      'temporal-namespace = "payouts.acct"',
    ]);
    const processEnv = { HOME: home };
    const config = loadWorkerConfig(processEnv);
    expect(config.TEMPORAL_NAMESPACE).toBe('payouts.acct');
    expect(temporalConnectionOptions(config, processEnv)).toMatchObject({
      address: 'payouts.acct.tmprl.cloud:7233',
      apiKey: 'cloud-key',
      tls: { serverNameOverride: 'payouts.acct.tmprl.cloud', serverRootCACertificate: Buffer.from('CA') },
      metadata: { 'temporal-namespace': 'payouts.acct' },
    });
    // XDG_CONFIG_HOME moves the file, as for the CLI.
    const xdg = mkdtempSync(path.join(os.tmpdir(), 'temporal-xdg-'));
    try {
      expect(loadWorkerConfig({ HOME: home, XDG_CONFIG_HOME: xdg }).TEMPORAL_NAMESPACE).toBe('payouts');
    } finally {
      rmSync(xdg, { recursive: true, force: true });
    }
  });
});
