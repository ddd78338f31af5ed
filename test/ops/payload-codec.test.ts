import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { Registry } from 'prom-client';
import { parsePayloadKey, PayloadKeyError, payloadKeys } from '../../src/adapters/secrets/payload-keys';
import { ConfigError, loadApiConfig, loadWorkerConfig } from '../../src/config';
import { createLogger } from '../../src/observability/logger';
import { startOpsServer, type OpsServer } from '../../src/observability/ops-server';
import { createCodecEndpoint } from '../../src/temporal/codec-endpoint';
import { createDataConverter, createPayloadCodec } from '../../src/temporal/data-converter';
import { AesGcmPayloadCodec, isEncrypted } from '../../src/temporal/payload-codec';

// The AES-256-GCM payload codec and the codec endpoint the Temporal Web UI and CLI call. The
// end-to-end proof (history fetched raw from a real server is unreadable and decodes back) is in
// operability.test.ts.

const CPF = '52998224725';
const newKey = () => randomBytes(32).toString('base64');
const toPayload = (value: unknown) => defaultPayloadConverter.toPayload(value);
const fromPayload = (payload: Payload) => defaultPayloadConverter.fromPayload(payload);
const text = (payload: Payload) => Buffer.from(payload.data ?? []).toString('latin1');

describe('AesGcmPayloadCodec', () => {
  const key = newKey();
  const codec = createPayloadCodec(payloadKeys(key))!;

  it('encrypts every payload so that nothing of it is readable, and decrypts it back', async () => {
    const original = toPayload({ payoutId: 'p-1', pixKey: CPF, pixKeyType: 'CPF' });
    const [encrypted] = await codec.encode([original]);
    expect(isEncrypted(encrypted!)).toBe(true);
    expect(text(encrypted!)).not.toContain(CPF);
    expect(text(encrypted!)).not.toContain('pixKey');
    // The inner encoding (json/plain) is inside the ciphertext too.
    expect(Object.keys(encrypted!.metadata!)).toEqual(['encoding', 'encryption-key-id']);
    const [decrypted] = await codec.decode([encrypted!]);
    expect(fromPayload(decrypted!)).toEqual({ payoutId: 'p-1', pixKey: CPF, pixKeyType: 'CPF' });
  });

  it('uses a fresh IV per payload: equal inputs give different ciphertexts', async () => {
    const [a, b] = await codec.encode([toPayload(CPF), toPayload(CPF)]);
    expect(Buffer.from(a!.data!).equals(Buffer.from(b!.data!))).toBe(false);
  });

  it('refuses a payload that was tampered with', async () => {
    const [encrypted] = await codec.encode([toPayload(CPF)]);
    const data = Buffer.from(encrypted!.data!);
    data[20] = data[20]! ^ 1;
    await expect(codec.decode([{ ...encrypted!, data: new Uint8Array(data) }])).rejects.toThrow();
  });

  it('passes through payloads written before encryption was switched on', async () => {
    const plain = toPayload({ old: true });
    expect(await codec.decode([plain])).toEqual([plain]);
  });

  it('decrypts with a previous key during a rotation, and says which key is missing otherwise', async () => {
    const [underOld] = await codec.encode([toPayload(CPF)]);
    const rotated = createPayloadCodec(payloadKeys(newKey(), key))!;
    expect(fromPayload((await rotated.decode([underOld!]))[0]!)).toBe(CPF);
    const [underNew] = await rotated.encode([toPayload(CPF)]);
    await expect(codec.decode([underNew!])).rejects.toThrow(/unknown key id/);
  });

  it('takes keys as base64 or hex, 32 bytes only', () => {
    const raw = randomBytes(32);
    expect(parsePayloadKey(raw.toString('hex')).equals(raw)).toBe(true);
    expect(parsePayloadKey(raw.toString('base64')).equals(raw)).toBe(true);
    expect(parsePayloadKey(raw.toString('base64url')).equals(raw)).toBe(true);
    expect(() => parsePayloadKey(randomBytes(16).toString('base64'))).toThrow(PayloadKeyError);
    expect(new AesGcmPayloadCodec({ current: raw })).toBeInstanceOf(AesGcmPayloadCodec);
  });
});

describe('payload key configuration', () => {
  it.each([
    ['api', loadApiConfig],
    ['worker', loadWorkerConfig],
  ])('is required in production and validated by the %s', (_process, load) => {
    expect(() => load({ NODE_ENV: 'production' })).toThrow(
      /PAYLOAD_ENCRYPTION_KEY is required when NODE_ENV=production/,
    );
    expect(load({ NODE_ENV: 'production', PAYLOAD_ENCRYPTION_KEY: newKey() }).NODE_ENV).toBe('production');
    expect(() => load({ PAYLOAD_ENCRYPTION_KEY: 'too-short' })).toThrow(ConfigError);
    expect(() => load({ PAYLOAD_ENCRYPTION_KEY: newKey(), PAYLOAD_ENCRYPTION_PREVIOUS_KEYS: 'x,y' })).toThrow(
      /PAYLOAD_ENCRYPTION_PREVIOUS_KEYS/,
    );
  });

  it('leaves payloads plain only when no key is set (outside production)', () => {
    expect(createDataConverter(payloadKeys()).payloadCodecs).toBeUndefined();
    expect(createDataConverter(payloadKeys(newKey())).payloadCodecs).toHaveLength(1);
  });
});

describe('codec endpoint (ops port)', () => {
  const UI = 'http://127.0.0.1:8233';
  const TOKEN = 'operator-token-0123456789';
  let server: OpsServer;
  let base: string;
  const codec = createPayloadCodec(payloadKeys(newKey()))!;

  beforeAll(async () => {
    server = await startOpsServer({
      host: '127.0.0.1',
      port: 0,
      registry: new Registry(),
      handlers: [
        createCodecEndpoint({
          codec,
          authToken: TOKEN,
          requireAuthToken: true,
          corsOrigins: [UI],
          logger: createLogger({ level: 'silent', name: 't' }),
        }),
      ],
      logger: createLogger({ level: 'silent', name: 't' }),
    });
    base = `http://127.0.0.1:${server.port}/codec`;
  });
  afterAll(() => server?.close());

  const asJson = (payloads: Payload[]) => ({
    payloads: payloads.map((p) => ({
      metadata: Object.fromEntries(
        Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v!).toString('base64')]),
      ),
      data: Buffer.from(p.data ?? []).toString('base64'),
    })),
  });
  const post = (operation: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${base}/${operation}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${TOKEN}`,
        'x-namespace': 'default',
        ...headers,
      },
      body: JSON.stringify(body),
    });

  it('answers the Web UI preflight for its origin only', async () => {
    const preflight = (origin: string) =>
      fetch(`${base}/decode`, {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type,x-namespace',
        },
      });
    const allowed = await preflight(UI);
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get('access-control-allow-origin')).toBe(UI);
    expect(allowed.headers.get('access-control-allow-headers')).toContain('x-namespace');
    const other = await preflight('https://evil.example');
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('decodes what the codec encoded, and encodes for the UI', async () => {
    const encrypted = await codec.encode([toPayload({ pixKey: CPF })]);
    const res = await post('decode', asJson(encrypted), { origin: UI });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe(UI);
    const { payloads } = (await res.json()) as {
      payloads: { metadata: Record<string, string>; data: string }[];
    };
    expect(Buffer.from(payloads[0]!.metadata.encoding!, 'base64').toString()).toBe('json/plain');
    expect(JSON.parse(Buffer.from(payloads[0]!.data, 'base64').toString())).toEqual({ pixKey: CPF });

    const encoded = await post('encode', asJson([toPayload('signal input')]));
    const back = (await encoded.json()) as ReturnType<typeof asJson>;
    expect(Buffer.from(back.payloads[0]!.metadata.encoding!, 'base64').toString()).toBe('binary/encrypted');
  });

  it('takes `{}` as no payloads, as the Temporal CLI sends it', async () => {
    const res = await post('decode', {});
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ payloads: [] });
  });

  it('wants the bearer token, and says so on a bad body or an unknown key', async () => {
    expect((await post('decode', { payloads: [] }, { authorization: 'Bearer wrong' })).status).toBe(401);
    expect((await post('decode', { payloads: [] }, { authorization: '' })).status).toBe(401);
    expect((await post('decode', { payloads: 'x' })).status).toBe(400);
    const foreign = await createPayloadCodec(payloadKeys(newKey()))!.encode([toPayload(CPF)]);
    const res = await post('decode', asJson(foreign));
    expect(res.status).toBe(422);
    expect(((await res.json()) as { error: string }).error).toMatch(/unknown key id/);
    expect((await fetch(`${base}/decode`)).status).toBe(405);
    expect((await fetch(`http://127.0.0.1:${server.port}/elsewhere`)).status).toBe(404);
  });
});
