import { startApi, type RunningApi } from '../support/api';

// The outbound partner callbacks are part of the served OpenAPI 3.1 document (`webhooks`).
type Json = Record<string, unknown>;

describe('OpenAPI document: partner callbacks (webhooks)', () => {
  let api: RunningApi;
  let doc: Json & { webhooks: Record<string, { post: Json & { parameters: Json[]; requestBody: Json } }> };

  beforeAll(async () => {
    api = await startApi({ providerUrl: null });
    doc = (await (await fetch(`${api.url}/openapi.json`)).json()) as typeof doc;
  });
  afterAll(() => api?.close());

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
