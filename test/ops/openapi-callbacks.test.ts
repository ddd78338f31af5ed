import { denylistScreening } from '../support/denylist-screening';
import type { Db } from '../../src/adapters/db/pool';
import { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { createPool } from '../../src/adapters/db/pool';
import { buildApp } from '../../src/api/app';
import { loadApiConfig } from '../../src/config';
import { createLogger } from '../../src/observability/logger';
import { createMetrics } from '../../src/observability/metrics';

// The outbound partner callbacks are part of the served OpenAPI 3.1 document (`webhooks`).
type Json = Record<string, unknown>;

let db: Db;

describe('OpenAPI document: partner callbacks (webhooks)', () => {
  let app: FastifyInstance;
  let doc: Json & { webhooks: Record<string, { post: Json & { parameters: Json[]; requestBody: Json } }> };

  beforeAll(async () => {
    const config = loadApiConfig({ LOG_LEVEL: 'silent' });
    app = await buildApp({
      config,
      db: (db = createPool(config.DATABASE_URL, 1)),
      screening: denylistScreening(db),
      temporal: new Client(),
      quote: async () => ({ rate: '5.50', expiresAt: new Date(Date.now() + 30_000).toISOString() }),
      logger: createLogger({ level: 'silent', name: 'test' }),
      metrics: createMetrics(),
    });
    const base = await app.listen({ host: '127.0.0.1', port: 0 });
    doc = (await (await fetch(`${base}/openapi.json`)).json()) as typeof doc;
  });
  afterAll(() => app?.close());

  it.each(['payout.completed', 'payout.failed'])(
    'describes %s with the Standard Webhooks headers',
    (event) => {
      expect(doc.openapi).toBe('3.1.0');
      const post = doc.webhooks[event]!.post;
      expect(post.parameters.map((p) => [p.name, p.in, p.required])).toEqual([
        ['webhook-id', 'header', true],
        ['webhook-timestamp', 'header', true],
        ['webhook-signature', 'header', true],
      ]);
      const schema = (post.requestBody as { content: Record<string, { schema: Json }> }).content[
        'application/json'
      ]!.schema as { required: string[]; properties: { event: Json; payout: Json } };
      expect(schema.required).toEqual(['event', 'payout']);
      expect(schema.properties.event).toEqual({ type: 'string', const: event });
      // The payout is the very schema POST /v1/payouts answers with.
      const paths = doc.paths as Record<
        string,
        Record<string, { responses: Record<string, { content: Json }> }>
      >;
      const created = paths['/v1/payouts']!.post!.responses['201']!.content['application/json'] as {
        schema: Json;
      };
      expect(schema.properties.payout).toEqual(created.schema);
    },
  );
});
