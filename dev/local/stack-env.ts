import { privateKeyToAddress } from 'viem/accounts';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * How a stack's servers become settings: the one place that names the variables wiring the api and
 * the worker (and the provider sandbox) to PostgreSQL, Temporal, the provider and the chain. The
 * launcher, the bench's replicas and the test stacks build their processes' environment here, so a
 * new setting of that kind is added once.
 */
export interface StackEndpoints {
  databaseUrl: string;
  /** Namespace and task queue left out: the service's defaults. */
  temporal: { address: string; namespace?: string; taskQueue?: string };
  providerUrl: string;
  chain: ChainEndpoint;
  /** Treasury mode's signing key (config refuses treasury mode without it). */
  treasuryKey?: string;
  /** Temporal payload encryption, as in production. */
  payloadKey?: string;
}

export interface ChainEndpoint {
  rpcUrl: string;
  usdtAddress: string;
  /** The sanctions oracle the api and the worker screen receivers with (not the sandbox's concern). */
  sanctionsOracleAddress?: string;
}

/** The api's and the worker's environment for these servers. */
export function serviceEnv(s: StackEndpoints): Record<string, string> {
  return {
    DATABASE_URL: s.databaseUrl,
    TEMPORAL_ADDRESS: s.temporal.address,
    ...(s.temporal.namespace !== undefined && { TEMPORAL_NAMESPACE: s.temporal.namespace }),
    ...(s.temporal.taskQueue !== undefined && { TEMPORAL_TASK_QUEUE: s.temporal.taskQueue }),
    PROVIDER_API_URL: s.providerUrl,
    EVM_RPC_URL: s.chain.rpcUrl,
    USDT_CONTRACT_ADDRESS: s.chain.usdtAddress,
    ...(s.chain.sanctionsOracleAddress !== undefined && {
      SANCTIONS_ORACLE_ADDRESS: s.chain.sanctionsOracleAddress,
    }),
    // The worker signs with the key; the api only reads the treasury's health, by its address.
    ...(s.treasuryKey !== undefined && {
      TREASURY_PRIVATE_KEY: s.treasuryKey,
      TREASURY_ADDRESS: privateKeyToAddress(s.treasuryKey as `0x${string}`),
    }),
    ...(s.payloadKey !== undefined && { PAYLOAD_ENCRYPTION_KEY: s.payloadKey }),
  };
}

/** The provider sandbox's environment: where it listens, where its webhooks go, what it settles with. */
export function sandboxEnv(s: {
  port: number;
  webhookUrl: string;
  chain: ChainEndpoint;
  walletKey: string;
}): Record<string, string> {
  return {
    SANDBOX_PORT: String(s.port),
    SANDBOX_WEBHOOK_URL: s.webhookUrl,
    SANDBOX_EVM_RPC_URL: s.chain.rpcUrl,
    SANDBOX_USDT_ADDRESS: s.chain.usdtAddress,
    SANDBOX_WALLET_PRIVATE_KEY: s.walletKey,
  };
}

/**
 * The sandbox's API Pix face (PIX_PROVIDER=bcb-api-pix): where it listens and keeps the certificates
 * it makes (a CA, its server certificate, the service's client certificate).
 */
export function apiPixSandboxEnv(s: { port: number; certDir: string }): Record<string, string> {
  return { SANDBOX_API_PIX_PORT: String(s.port), SANDBOX_API_PIX_CERT_DIR: s.certDir };
}

/**
 * The worker's (and the admin CLI's) settings for that face: its URLs, the client certificate the
 * sandbox made, the OAuth client and the receiver key the sandbox knows by default.
 */
export function apiPixServiceEnv(s: { port: number; certDir: string }): Record<string, string> {
  const origin = `https://127.0.0.1:${s.port}`;
  return {
    PIX_API_URL: `${origin}/api/v2`,
    PIX_API_TOKEN_URL: `${origin}/oauth/token`,
    PIX_API_CLIENT_ID: SANDBOX_API_PIX_CLIENT.id,
    PIX_API_CLIENT_SECRET: SANDBOX_API_PIX_CLIENT.secret,
    PIX_API_CERT_FILE: path.join(s.certDir, 'client.pem'),
    PIX_API_KEY_FILE: path.join(s.certDir, 'client-key.pem'),
    PIX_API_CA_FILE: path.join(s.certDir, 'ca.pem'),
    PIX_API_RECEIVER_KEY: SANDBOX_RECEIVER_KEY,
  };
}

/** The sandbox's defaults (dev/sandbox/config.ts) for its OAuth client and the receiver's PIX key. */
const SANDBOX_API_PIX_CLIENT = { id: 'payout-service', secret: 'sandbox-api-pix-secret' } as const;
const SANDBOX_RECEIVER_KEY = '5f2b9c1e-8d4a-4c3b-9a6e-2f1d0c7b8a90';

/** The service processes' entry points, run from source. */
export const SERVICE_ENTRIES = {
  api: 'src/main/api.ts',
  worker: 'src/worker.ts',
  sandbox: 'dev/sandbox/main.ts',
} as const;

/**
 * node's arguments to run a TypeScript entry from source: tsx as a loader of node itself rather than
 * the tsx CLI, which would be a second process in between (a signal or SIGKILL must hit the service).
 */
export function fromSource(entry: string, ...preload: string[]): string[] {
  return [
    '--import',
    pathToFileURL(require.resolve('tsx')).href,
    ...preload.flatMap((p) => ['--import', p]),
    entry,
  ];
}
