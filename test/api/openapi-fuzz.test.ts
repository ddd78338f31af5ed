import { randomUUID } from 'node:crypto';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import { startStack, type TestStack } from '../support/stack';
import { call, type ApiResponse } from './helpers';

// A contract fuzzer, as a new user would point one at the api: every operation of the served
// /openapi.json, requests generated from its schemas (valid ones, and invalid ones made by breaking
// a valid one), sent to the running api on real servers. Required: no 5xx, every status documented
// for its operation, every response body valid against the documented schema of its status, no
// schema-invalid request accepted, and a schema-valid request refused only for a rule the document
// describes beyond its schema (PIX key format for its type, wallet checksum, minimum quote).

type Json = Record<string, unknown>;
interface Operation {
  parameters?: { name: string; in: string; required?: boolean; schema?: Json }[];
  requestBody?: { content: Record<string, { schema: Json; example?: Json }> };
  responses: Record<string, { content?: Record<string, { schema: Json }> }>;
}
interface GeneratedRequest {
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** Whether the request is valid by the document (auth apart: see `authenticated`). */
  schemaValid: boolean;
  authenticated: boolean;
}

// Refusals of schema-valid bodies that the document explains in words: rules across fields or
// beyond what JSON Schema can say.
const DESCRIBED_REFUSALS = [
  /^pix_key is not a valid (CPF|CNPJ|EMAIL|PHONE|RANDOM) key$/,
  /^receiver_wallet /,
  /^amount_brl is too small: /,
];
// One valid key per PIX key type, for bodies that should be created.
const VALID_PIX_KEYS: Record<string, string> = {
  CPF: '12345678909',
  CNPJ: '12ABC34501DE35',
  EMAIL: 'maria@example.com',
  PHONE: '+5511987654321',
  RANDOM: 'bee05743-4291-4f3c-9259-595df1307ba1',
};
const printableHeader = fc.stringMatching(/^[\x20-\x7e]{0,80}$/).map((s) => s.trim());

describe('OpenAPI contract fuzzing against the running api', () => {
  let stack: TestStack;
  let apiKey: string;
  let doc: Json & { paths: Record<string, Record<string, Operation>>; components: Json };
  const ajv = new Ajv2020({ strict: false, allErrors: true, multipleOfPrecision: 9 });
  addFormats(ajv);
  const createdIds: string[] = [];
  const problems: string[] = [];

  beforeAll(async () => {
    stack = await startStack({
      env: { POST_RATE_LIMIT_PER_MINUTE: '1000000', READ_RATE_LIMIT_PER_MINUTE: '1000000' },
    });
    ({ apiKey } = await stack.createPartner('fuzzer'));
    doc = (await (await fetch(`${stack.apiUrl}/openapi.json`)).json()) as typeof doc;
    ajv.addSchema({ $id: 'openapi.json', components: doc.components });
  }, 120_000);
  afterAll(() => stack?.close());

  const compiled = new Map<string, ValidateFunction>();
  function validator(schema: Json): ValidateFunction {
    const text = JSON.stringify(schema).replaceAll('"#/components/', '"openapi.json#/components/');
    let validate = compiled.get(text);
    if (!validate) compiled.set(text, (validate = ajv.compile(JSON.parse(text) as Json)));
    return validate;
  }

  /** The checks every answer must pass, whatever was sent. */
  function checkResponse(method: string, op: Operation, req: GeneratedRequest, res: ApiResponse) {
    const where = `${method.toUpperCase()} ${req.path} -> ${res.status} ${res.text.slice(0, 200)}`;
    if (res.status >= 500) problems.push(`5xx: ${where}`);
    const documented = op.responses[String(res.status)];
    if (!documented) return void problems.push(`undocumented status: ${where}`);
    const schema = documented.content?.['application/json']?.schema;
    if (schema) {
      const validate = validator(schema);
      if (!validate(res.json)) {
        problems.push(`response does not match its schema: ${where} ${ajv.errorsText(validate.errors)}`);
      }
    }
    if (!res.headers.get('x-request-id')) problems.push(`no X-Request-Id: ${where}`);
    if (res.status === 429 && res.headers.get('retry-after') !== '60')
      problems.push(`429 without Retry-After: ${where}`);
    if (!req.authenticated || res.status === 429) return;
    const accepted = res.status >= 200 && res.status < 300;
    if (!req.schemaValid && accepted) problems.push(`schema-invalid request accepted: ${where} ${req.body}`);
    if (req.schemaValid && res.status === 400) {
      const message = (res.json as { error?: string } | undefined)?.error ?? '';
      if (!DESCRIBED_REFUSALS.some((rule) => rule.test(message))) {
        problems.push(`schema-valid request refused: ${where} ${req.body}`);
      }
    }
  }

  // ---- generators from the schemas ----

  function fromSchema(schema: Json): fc.Arbitrary<unknown> {
    if (Array.isArray(schema.examples) && schema.examples.length > 0 && !schema.pattern && !schema.maximum) {
      return fc.oneof(fc.constantFrom(...(schema.examples as unknown[])), fromSchemaOnly(schema));
    }
    return fromSchemaOnly(schema);
  }
  function fromSchemaOnly(schema: Json): fc.Arbitrary<unknown> {
    if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
    switch (schema.type) {
      case 'object': {
        const properties = (schema.properties ?? {}) as Record<string, Json>;
        const required = (schema.required ?? []) as string[];
        const record: Record<string, fc.Arbitrary<unknown>> = {};
        for (const [name, property] of Object.entries(properties)) record[name] = fromSchema(property);
        return fc.record(record, { requiredKeys: required });
      }
      case 'string':
        if (schema.format === 'uuid') return fc.uuid();
        if (typeof schema.pattern === 'string')
          return fc.stringMatching(new RegExp(schema.pattern as string));
        return fc.string({ minLength: (schema.minLength as number) ?? 0, maxLength: 40 });
      case 'number':
      case 'integer': {
        const step = (schema.multipleOf as number | undefined) ?? (schema.type === 'integer' ? 1 : undefined);
        const low =
          (schema.exclusiveMinimum as number | undefined) ?? (schema.minimum as number | undefined) ?? -1e6;
        const high = (schema.maximum as number | undefined) ?? 1e6;
        if (step !== undefined) {
          // k / (1/step): the double nearest the decimal, as a client writing k*step would send it.
          const perUnit = Math.round(1 / step);
          const min = Math.floor(low * perUnit) + (schema.exclusiveMinimum !== undefined ? 1 : 0);
          return fc.integer({ min, max: Math.floor(high * perUnit) }).map((k) => k / perUnit);
        }
        return fc.double({
          min: low,
          max: high,
          noNaN: true,
          minExcluded: schema.exclusiveMinimum !== undefined,
        });
      }
      case 'boolean':
        return fc.boolean();
      default:
        return fc.jsonValue();
    }
  }

  /** A JSON value of another type than `schema` wants. */
  function wrongType(schema: Json): fc.Arbitrary<unknown> {
    const options: fc.Arbitrary<unknown>[] = [fc.constant(null), fc.array(fc.integer(), { maxLength: 2 })];
    if (schema.type !== 'string') options.push(fc.string({ maxLength: 10 }));
    if (schema.type !== 'number' && schema.type !== 'integer') options.push(fc.integer());
    if (schema.type !== 'boolean' && !Array.isArray(schema.enum)) options.push(fc.boolean());
    return fc.oneof(...options);
  }

  function bodyArbitrary(op: Operation): fc.Arbitrary<{ body: string; valid: boolean; contentType: string }> {
    const media = op.requestBody!.content['application/json']!;
    const schema = media.schema;
    const validate = validator(schema);
    const properties = (schema.properties ?? {}) as Record<string, Json>;
    const required = (schema.required ?? []) as string[];
    let valid = fromSchema(schema) as fc.Arbitrary<Json>;
    if ('pix_key_type' in properties) {
      // The key's format depends on its type: pair them so that valid bodies can be created.
      valid = fc
        .tuple(valid, fc.constantFrom(...Object.keys(VALID_PIX_KEYS)), fc.boolean(), fc.boolean())
        .map(([body, type, lower, keepGenerated]) =>
          keepGenerated
            ? body
            : {
                ...body,
                pix_key_type: lower ? type.toLowerCase() : type,
                pix_key: VALID_PIX_KEYS[type],
                receiver_wallet: String(body.receiver_wallet).toLowerCase(),
              },
        );
    }
    const broken: fc.Arbitrary<Json>[] = [];
    if (required.length > 0) {
      broken.push(
        fc.tuple(valid, fc.constantFrom(...required)).map(([body, name]) => {
          const copy = { ...body };
          delete copy[name];
          return copy;
        }),
      );
    }
    for (const [name, property] of Object.entries(properties)) {
      broken.push(fc.tuple(valid, wrongType(property)).map(([body, value]) => ({ ...body, [name]: value })));
    }
    if (properties.amount_brl) {
      const bad = fc.oneof(
        fc.double({ max: 0, noNaN: true, noDefaultInfinity: true }),
        fc.double({
          min: (properties.amount_brl.maximum as number) + 0.01,
          noNaN: true,
          noDefaultInfinity: true,
        }),
        fc
          .integer({ min: 1, max: 1_000_000 })
          .filter((k) => k % 10 !== 0)
          .map((k) => k / 1000),
      );
      broken.push(fc.tuple(valid, bad).map(([body, amount_brl]) => ({ ...body, amount_brl })));
    }
    const asJson = (body: Json) => ({
      body: JSON.stringify(body),
      valid: validate(body) === true,
      contentType: 'application/json',
    });
    return fc.oneof(
      { weight: 3, arbitrary: valid.map(asJson) },
      { weight: 4, arbitrary: fc.oneof(...broken).map(asJson) },
      { weight: 1, arbitrary: fc.jsonValue().map((v) => asJson(v as Json)) },
      {
        weight: 1,
        arbitrary: fc
          .constantFrom('{', '{"amount_brl": }', '', 'null x', '[1,]')
          .map((body) => ({ body, valid: false, contentType: 'application/json' })),
      },
      {
        weight: 1,
        arbitrary: valid.map((body) => ({
          body: JSON.stringify(body),
          valid: false,
          contentType: 'text/plain',
        })),
      },
    );
  }

  function parameterArbitrary(parameter: {
    name: string;
    schema?: Json;
  }): fc.Arbitrary<{ value: string; valid: boolean }> {
    if (parameter.name === 'provider') {
      return fc.oneof(
        fc.constant({ value: stack.config.PROVIDER_NAME, valid: true }),
        fc.stringMatching(/^[a-z0-9-]{1,12}$/).map((value) => ({ value, valid: true })),
      );
    }
    if (parameter.name === 'id') {
      return fc.oneof(
        fc
          .constantFrom(...(createdIds.length > 0 ? createdIds : [randomUUID()]))
          .map((value) => ({ value, valid: true })),
        fc.uuid().map((value) => ({ value, valid: true })),
        fc
          .string({ minLength: 1, maxLength: 40 })
          .map((value) => ({ value: encodeURIComponent(value), valid: true })),
      );
    }
    return fc.string().map((value) => ({ value, valid: true }));
  }

  function requestArbitrary(path: string, op: Operation): fc.Arbitrary<GeneratedRequest> {
    const pathParameters = (op.parameters ?? []).filter((p) => p.in === 'path');
    const headerParameters = (op.parameters ?? []).filter((p) => p.in === 'header');
    const secured = path.startsWith('/v1/');
    const auth = secured
      ? fc.oneof(
          { weight: 8, arbitrary: fc.constant<string | undefined>(apiKey) },
          { weight: 1, arbitrary: fc.constant<string | undefined>(undefined) },
          {
            weight: 1,
            arbitrary: fc.stringMatching(/^pk_live_[A-Za-z0-9_-]{1,43}$/).map((k): string | undefined => k),
          },
        )
      : fc.constant<string | undefined>(undefined);
    const headers = fc.record(
      Object.fromEntries(
        headerParameters.map((p) => {
          const fromDoc = p.schema ? fromSchema(p.schema) : printableHeader;
          // Idempotency-Key values are fresh per request: a repeated one replays (and ignores the body).
          const value =
            p.name === 'Idempotency-Key'
              ? fc.oneof(fc.uuid(), printableHeader, fc.constant('k'.repeat(256)))
              : fc.oneof(fromDoc.map(String), printableHeader);
          return [p.name, fc.option(value, { nil: undefined })];
        }),
      ),
    );
    const params = fc.tuple(...pathParameters.map(parameterArbitrary));
    const body = op.requestBody ? bodyArbitrary(op) : fc.constant(undefined);
    return fc.tuple(auth, headers, params, body).map(([key, headerValues, paramValues, generated]) => {
      let concretePath = path;
      pathParameters.forEach(
        (p, i) => (concretePath = concretePath.replace(`{${p.name}}`, paramValues[i]!.value)),
      );
      const sent: Record<string, string> = {};
      let headersValid = true;
      for (const p of headerParameters) {
        const value = headerValues[p.name];
        if (value === undefined) continue;
        sent[p.name] = value;
        if (p.schema && !validator(p.schema)(value)) headersValid = false;
      }
      if (key !== undefined) sent['X-Api-Key'] = key;
      if (generated) sent['content-type'] = generated.contentType;
      // A payout replayed by its key answers with the original whatever the body: keys stay unique.
      if (sent['Idempotency-Key'] !== undefined && headersValid)
        sent['Idempotency-Key'] += `-${randomUUID()}`;
      if (
        sent['Idempotency-Key'] !== undefined &&
        !validator({ type: 'string', pattern: '^[\\x20-\\x7e]{1,255}$' })(sent['Idempotency-Key'])
      ) {
        headersValid = false;
      }
      return {
        path: concretePath,
        headers: sent,
        body: generated?.body,
        schemaValid: headersValid && (generated?.valid ?? true),
        authenticated: !secured || key === apiKey,
      };
    });
  }

  // What each operation must have answered at least once, so that no check passes vacuously.
  const MUST_SEE: Record<string, number[]> = {
    'post /v1/payouts': [201, 400, 401, 415],
    'get /v1/payouts/{id}': [200, 401, 404],
    'post /v1/payouts/{id}/cancel': [401, 404],
    'post /webhooks/{provider}': [200, 400, 404],
  };
  const RUNS: Record<string, number> = {
    'post /v1/payouts': 120,
    'get /v1/payouts/{id}': 120,
    'post /v1/payouts/{id}/cancel': 60,
    'post /webhooks/{provider}': 120,
  };

  it('covers every operation of the document', () => {
    const operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => `${method} ${path}`),
    );
    expect(operations.sort()).toEqual(Object.keys(RUNS).sort());
  });

  it.each(Object.keys(RUNS))(
    '%s: 0 5xx, 0 undocumented statuses, 0 schema mismatches in either direction',
    async (name) => {
      const [method, path] = name.split(' ') as [string, string];
      const op = doc.paths[path]![method]!;
      const seen = new Set<number>();
      await fc.assert(
        fc.asyncProperty(requestArbitrary(path, op), async (req) => {
          const res = await call(stack.apiUrl, req.path, {
            method: method.toUpperCase(),
            headers: req.headers,
            body: req.body,
          });
          seen.add(res.status);
          if (name === 'post /v1/payouts' && res.status === 201)
            createdIds.push((res.json as { id: string }).id);
          checkResponse(method, op, req, res);
        }),
        { numRuns: RUNS[name], seed: Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31) },
      );
      expect([...seen].sort()).toEqual(expect.arrayContaining(MUST_SEE[name]!));
      expect(problems).toEqual([]);
    },
    120_000,
  );
});
