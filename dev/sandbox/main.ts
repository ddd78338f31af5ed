import { buildSandboxApp } from './app';
import { loadSandboxConfig, SandboxConfigError, type SandboxConfig } from './config';

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

  const app = buildSandboxApp(config);
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
    app.close().then(
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
}

main().catch((err: unknown) => {
  process.stderr.write(
    `provider sandbox failed to start: ${err instanceof Error ? err.message : String(err)}\n`,
  );
  process.exit(1);
});
