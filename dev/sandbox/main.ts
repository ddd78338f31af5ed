import { join, resolve } from 'node:path';

import pino from 'pino';

import { CERT_FILES } from './api-pix/certificates';
import { createApiPixFace, type ApiPixFace } from './api-pix/face';
import { buildSandboxApp } from './app';
import { loadSandboxConfig, SandboxConfigError, type SandboxConfig } from './config';
import { SandboxState } from './state';

/** `npm run sandbox`: the provider sandbox as its own process (docs/provider-api.md). */
async function main(): Promise<void> {
  let config: SandboxConfig;
  try {
    config = loadSandboxConfig(process.env);
  } catch (err) {
    if (!(err instanceof SandboxConfigError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }

  // One state and one logger for both faces: a cob created on the API Pix face is paid on this one.
  const logger = pino({ level: config.logLevel });
  const state = config.stateFile === undefined ? new SandboxState() : SandboxState.load(config.stateFile);
  const apiPix: ApiPixFace | undefined =
    config.apiPix === undefined
      ? undefined
      : createApiPixFace({ ...config, apiPix: config.apiPix }, state, logger);
  const app = buildSandboxApp(config, { logger, state, ...(apiPix && { apiPix }) });
  if (config.usdtAddress === undefined || config.walletPrivateKey === undefined) {
    app.log.warn('SANDBOX_USDT_ADDRESS or SANDBOX_WALLET_PRIVATE_KEY not set: settlements will answer 503');
  }

  let stopping = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) {
      // A second Ctrl-C means "now": skip waiting for webhook loops and receipts.
      app.log.warn({ signal }, 'forced exit');
      process.exit(1);
    }
    stopping = true;
    app.log.info({ signal }, 'shutting down');
    Promise.all([app.close(), apiPix?.app.close()]).then(
      () => process.exit(0),
      (err: unknown) => {
        app.log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);

  await app.listen({ port: config.port, host: config.host });
  app.log.info(
    {
      webhook_url: config.webhookUrl,
      spot_rate: config.spotRate,
      spread: config.spread,
      chain_id: config.chainId,
      usdt_address: config.usdtAddress,
      auth: config.apiKey === undefined ? 'none' : 'bearer',
    },
    'provider sandbox ready',
  );
  if (apiPix && config.apiPix) {
    await apiPix.app.listen({ port: config.apiPix.port, host: config.host });
    const dir = resolve(config.apiPix.certDir);
    app.log.info(
      {
        base_url: `https://127.0.0.1:${config.apiPix.port}/api/v2`,
        token_url: `https://127.0.0.1:${config.apiPix.port}/oauth/token`,
        ca: join(dir, CERT_FILES.ca),
        client_cert: join(dir, CERT_FILES.clientCert),
        client_key: join(dir, CERT_FILES.clientKey),
        certificates_made: apiPix.created,
      },
      'API Pix face ready (mutual TLS)',
    );
  }
}

main().catch((err: unknown) => {
  process.stderr.write(
    `provider sandbox failed to start: ${err instanceof Error ? err.message : String(err)}\n`,
  );
  process.exit(1);
});
