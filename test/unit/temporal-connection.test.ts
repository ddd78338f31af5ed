import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadWorkerConfig } from '../../src/config';
import { temporalConnectionOptions } from '../../src/temporal/connection';

// Temporal settings resolve as the `temporal` CLI resolves them (@temporalio/envconfig): a profile of
// the config file, overridden by the standard TEMPORAL_* variables.

describe('Temporal connection settings', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'temporal-profile-'));
  const file = path.join(dir, 'temporal.toml');
  writeFileSync(
    file,
    [
      '[profile.default]',
      'address = "default.example:7233"',
      '',
      '[profile.cloud]',
      'address = "payouts.acct.tmprl.cloud:7233"',
      'namespace = "payouts.acct"',
      'api_key = "profile-key"',
      '',
    ].join('\n'),
  );
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('takes address, namespace and API key (so TLS) from the named profile', () => {
    const env = { TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'cloud' };
    const config = loadWorkerConfig(env);
    expect(config.TEMPORAL_ADDRESS).toBe('payouts.acct.tmprl.cloud:7233');
    expect(config.TEMPORAL_NAMESPACE).toBe('payouts.acct');
    expect(temporalConnectionOptions(config, env)).toMatchObject({
      address: 'payouts.acct.tmprl.cloud:7233',
      apiKey: 'profile-key',
      tls: true,
    });
  });

  it('lets the TEMPORAL_* variables override the profile, and uses the default profile when none is named', () => {
    const env = { TEMPORAL_CONFIG_FILE: file, TEMPORAL_ADDRESS: 'override:7233', TEMPORAL_TLS: 'false' };
    const config = loadWorkerConfig(env);
    expect(config.TEMPORAL_ADDRESS).toBe('override:7233');
    // The default profile names no namespace, so the service's own default applies.
    expect(config.TEMPORAL_NAMESPACE).toBe('payouts');
    expect(temporalConnectionOptions(config, env)).toMatchObject({ address: 'override:7233', tls: false });
    expect(loadWorkerConfig({ TEMPORAL_CONFIG_FILE: file }).TEMPORAL_ADDRESS).toBe('default.example:7233');
  });

  it('reads mTLS client certificate and key paths by the CLI names', () => {
    writeFileSync(path.join(dir, 'client.pem'), 'CERT');
    writeFileSync(path.join(dir, 'client.key'), 'KEY');
    const env = {
      TEMPORAL_ADDRESS: 'mtls.example:7233',
      TEMPORAL_TLS_CLIENT_CERT_PATH: path.join(dir, 'client.pem'),
      TEMPORAL_TLS_CLIENT_KEY_PATH: path.join(dir, 'client.key'),
    };
    const options = temporalConnectionOptions(loadWorkerConfig(env), {});
    expect(options.tls).toMatchObject({
      clientCertPair: { crt: Buffer.from('CERT'), key: Buffer.from('KEY') },
    });
  });

  it('names the profile when it does not exist, and runs on the local defaults without any file', () => {
    expect(() => loadWorkerConfig({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'nope' })).toThrow(
      /TEMPORAL_PROFILE .*nope/,
    );
    const local = loadWorkerConfig({ HOME: dir });
    expect(local.TEMPORAL_ADDRESS).toBe('127.0.0.1:7233');
    expect(temporalConnectionOptions(local, {})).toMatchObject({ address: '127.0.0.1:7233' });
    expect(temporalConnectionOptions(local, {}).tls).toBeUndefined();
  });
});
