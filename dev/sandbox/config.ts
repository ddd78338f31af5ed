import { getAddress, isAddress, type Address, type Hex } from 'viem';
import { z } from 'zod';

/**
 * Configuration of the provider sandbox, read once from the environment. It is a separate program
 * from the service, so it has its own variables (all `SANDBOX_*`) and shares none with it.
 */
export interface SandboxConfig {
  port: number;
  host: string;
  /** BRL per 1 USDT, decimal string, served by GET /fx/quote. */
  spotRate: string;
  /** Fraction kept by the provider on conversion ("0.02" = 2 %). */
  spread: string;
  /** Where notifications' tokens are POSTed (the service's POST /webhooks/sandbox). */
  webhookUrl: string;
  /** When set, provider endpoints require `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  evmRpcUrl: string;
  chainId: number;
  /** USDT token contract; settlement answers 503 while this or the wallet key is missing. */
  usdtAddress?: Address;
  /** The sandbox's funded wallet, paying out settlements. */
  walletPrivateKey?: Hex;
  /** Merchant fields of the BR Codes it issues (EMV limits: name 25, city 15 characters). */
  merchantName: string;
  merchantCity: string;
  /** The provider's receiving PIX key, written in every BR Code. */
  pixKey: string;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** JSON file the state is saved to and restored from; none: memory only, a restart forgets all. */
  stateFile?: string;
  /** The API Pix face (BCB's API Pix over mutual TLS, docs/sandbox-api-pix.md); none: not started. */
  apiPix?: ApiPixConfig;
}

export interface ApiPixConfig {
  port: number;
  /** Where ca.pem, client.pem, client-key.pem (and the server's and CA's own files) are kept. */
  certDir: string;
  /** Names and IPv4 addresses the server certificate is valid for: 127.0.0.1, localhost and these. */
  serverNames: string[];
  clientId: string;
  clientSecret: string;
  tokenTtlSeconds: number;
}

export class SandboxConfigError extends Error {
  override readonly name = 'SandboxConfigError';
}

// An empty variable (`SANDBOX_API_KEY=`) means "not set", as shells and .env files produce it.
const optional = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (v === '' ? undefined : v), schema.optional());
const withDefault = <T extends z.ZodType>(schema: T, fallback: string) =>
  z.preprocess((v) => (v === undefined || v === '' ? fallback : v), schema);

const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });
const printable = (max: number) =>
  z
    .string()
    .max(max, `must be at most ${max} characters`)
    .regex(/^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/, 'must be printable ASCII without surrounding spaces');

const port = z.coerce
  .number({ error: 'must be an integer 0-65535' })
  .int('must be an integer 0-65535')
  .min(0, 'must be an integer 0-65535')
  .max(65535, 'must be an integer 0-65535');
const chainId = z.coerce
  .number({ error: 'must be a positive integer' })
  .int()
  .positive('must be a positive integer');

const schema = z.object({
  SANDBOX_PORT: withDefault(port, '4000'),
  SANDBOX_HOST: withDefault(z.string().min(1), '127.0.0.1'),
  SANDBOX_SPOT_RATE: withDefault(
    z
      .string()
      .regex(/^\d{1,6}(\.\d{1,8})?$/, 'must be a decimal such as 5.50')
      .refine((s) => /[1-9]/.test(s), 'must be > 0'),
    '5.50',
  ),
  SANDBOX_SPREAD: withDefault(
    z.string().regex(/^0(\.\d{1,8})?$/, 'must be a decimal in [0, 1) such as 0.02'),
    '0.02',
  ),
  SANDBOX_WEBHOOK_URL: withDefault(httpUrl, 'http://127.0.0.1:3000/webhooks/sandbox'),
  SANDBOX_API_KEY: optional(z.string().min(8, 'must be at least 8 characters')),
  SANDBOX_EVM_RPC_URL: withDefault(httpUrl, 'http://127.0.0.1:8545'),
  SANDBOX_CHAIN_ID: withDefault(chainId, '42161'),
  SANDBOX_USDT_ADDRESS: optional(
    z.string().refine((s) => isAddress(s), 'must be a 0x-prefixed 20-byte address (EIP-55 if mixed case)'),
  ),
  SANDBOX_WALLET_PRIVATE_KEY: optional(
    z.string().regex(/^0x[0-9a-fA-F]{64}$/, 'must be 0x followed by 64 hex digits'),
  ),
  SANDBOX_MERCHANT_NAME: withDefault(printable(25), 'PIX SANDBOX PROVIDER'),
  SANDBOX_MERCHANT_CITY: withDefault(printable(15), 'SAO PAULO'),
  // Any PIX key type fits (EMV allows 77 characters); the default is a random (EVP) key.
  SANDBOX_PIX_KEY: withDefault(
    z.string().regex(/^[\x21-\x7e]{1,77}$/, 'must be 1-77 printable ASCII characters, no spaces'),
    '5f2b9c1e-8d4a-4c3b-9a6e-2f1d0c7b8a90',
  ),
  SANDBOX_LOG_LEVEL: withDefault(
    z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    'info',
  ),
  SANDBOX_STATE_FILE: optional(z.string().min(1)),
  SANDBOX_API_PIX_PORT: optional(port),
  SANDBOX_API_PIX_CERT_DIR: withDefault(z.string().min(1), '.data/sandbox-api-pix'),
  SANDBOX_API_PIX_CERT_NAMES: withDefault(
    z
      .string()
      .regex(
        /^[A-Za-z0-9.-]+(,[A-Za-z0-9.-]+)*$/,
        'must be comma-separated host names or IPv4 addresses, e.g. sandbox,pix.local',
      ),
    'localhost',
  ),
  // HTTP Basic cannot carry a ':' in the user id.
  SANDBOX_API_PIX_CLIENT_ID: withDefault(
    printable(64).refine((s) => !s.includes(':'), 'must not contain ":"'),
    'payout-service',
  ),
  SANDBOX_API_PIX_CLIENT_SECRET: withDefault(printable(128), 'sandbox-api-pix-secret'),
  SANDBOX_API_PIX_TOKEN_TTL_SECONDS: withDefault(
    z.coerce
      .number({ error: 'must be an integer 1-86400' })
      .int()
      .min(1)
      .max(86_400, 'must be at most 86400'),
    '3600',
  ),
});

/** Every variable the sandbox reads (docker-compose.yml is checked against this list). */
export const SANDBOX_ENV_KEYS: readonly string[] = Object.keys(schema.shape);

/** Throws SandboxConfigError naming every variable at fault. */
export function loadSandboxConfig(env: NodeJS.ProcessEnv = process.env): SandboxConfig {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${String(i.path[0] ?? '(env)')}: ${i.message}`);
    throw new SandboxConfigError(`invalid sandbox configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  return {
    port: e.SANDBOX_PORT,
    host: e.SANDBOX_HOST,
    spotRate: e.SANDBOX_SPOT_RATE,
    spread: e.SANDBOX_SPREAD,
    webhookUrl: e.SANDBOX_WEBHOOK_URL,
    apiKey: e.SANDBOX_API_KEY,
    evmRpcUrl: e.SANDBOX_EVM_RPC_URL,
    chainId: e.SANDBOX_CHAIN_ID,
    usdtAddress: e.SANDBOX_USDT_ADDRESS === undefined ? undefined : getAddress(e.SANDBOX_USDT_ADDRESS),
    walletPrivateKey: e.SANDBOX_WALLET_PRIVATE_KEY as Hex | undefined,
    merchantName: e.SANDBOX_MERCHANT_NAME,
    merchantCity: e.SANDBOX_MERCHANT_CITY,
    pixKey: e.SANDBOX_PIX_KEY,
    logLevel: e.SANDBOX_LOG_LEVEL,
    stateFile: e.SANDBOX_STATE_FILE,
    ...(e.SANDBOX_API_PIX_PORT !== undefined && {
      apiPix: {
        port: e.SANDBOX_API_PIX_PORT,
        certDir: e.SANDBOX_API_PIX_CERT_DIR,
        serverNames: [...new Set(['127.0.0.1', 'localhost', ...e.SANDBOX_API_PIX_CERT_NAMES.split(',')])],
        clientId: e.SANDBOX_API_PIX_CLIENT_ID,
        clientSecret: e.SANDBOX_API_PIX_CLIENT_SECRET,
        tokenTtlSeconds: e.SANDBOX_API_PIX_TOKEN_TTL_SECONDS,
      },
    }),
  };
}
