import { randomUUID } from 'node:crypto';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import { useStack } from '../support/stack';
import type { ApiResponse } from './helpers';

// A contract fuzzer, as a new user would point one at the api: every operation of the served
// /openapi.json, requests generated from its schemas (valid ones, and invalid ones made by breaking
// a valid one), sent to the running api on real servers. Required: no 5xx, every status documented
// for its operation, every response body valid against the documented schema of its status, no
// schema-invalid request accepted, and a schema-valid request refused only for a rule the document
// describes beyond its schema (PIX key format for its type, wallet checksum, minimum quote, a list
// cursor that is not one of the caller's payouts). Query
// parameters are generated from their schemas too (valid, broken, missing, repeated, unknown), and
// an image answer must be the documented media type and really be one.

type Json = Record<string, unknown>;
interface Operation {
  parameters?: { name: string; in: string; required?: boolean; schema?: Json }[];
  requestBody?: { content: Record<string, { schema: Json; example?: Json }> };
  responses: Record<string, { content?: Record<string, { schema: Json }> }>;
}
/** An answer with its raw bytes, for the images. */
interface FuzzResponse extends ApiResponse {
  bytes: Buffer;
}
interface GeneratedRequest {
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** Whether the request is valid by the document (auth apart: see `authenticated`). */
  schemaValid: boolean;
  authenticated: boolean;
  /** A repeat of the keyed POST that created this payout: it must answer with that payout. */
  replayOf?: string;
}
/** What one operation's run has seen: its own payouts, ETags and keys, and what went wrong. */
interface FuzzRun {
  ids: string[];
  etags: string[];
  keys: { key: string; id: string }[];
  replays: number;
  problems: string[];
}

// Refusals of schema-valid requests that docs/api.md explains in words: rules across fields, or
// beyond what JSON Schema can say. Each entry is a message of its validation tables, and why the
// served schema cannot carry the rule; a refusal matching none is a problem.
const DESCRIBED_REFUSALS: { rule: RegExp; why: string }[] = [
  {
    rule: /^pix_key is not a valid (CPF|CNPJ|EMAIL|PHONE|RANDOM) key$/,
    why: 'the format of pix_key depends on pix_key_type (check digits, e-mail, +55 phone, UUID): a rule across two fields',
  },
  {
    rule: /^receiver_wallet fails the EIP-55 checksum$/,
    why: 'a mixed-case address must carry its EIP-55 checksum, a hash no pattern can compute ("receiver_wallet")',
  },
  {
    rule: /^amount_brl is too small: /,
    why: 'min_amount_usdt must reach 0.01 at the quote of the moment, which the schema does not know',
  },
  {
    rule: /^url refused: /,
    why: 'whether a callback host may be called depends on what its name resolves to and on the deployment ("Manage your callback")',
  },
  {
    rule: /^no callback URL is set: /,
    why: 'rotating or testing needs a callback URL set before: state the schema cannot see ("Manage your callback")',
  },
  {
    rule: /^the previous secret rotation's overlap lasts until /,
    why: 'a rotation with an overlap waits for the previous overlap to end: state the schema cannot see ("Manage your callback")',
  },
  {
    rule: /^starting_after must be the id of one of your callback events$/,
    why: 'the cursor must be one of the caller\'s callback events: only the database knows which ("Manage your callback")',
  },
  {
    rule: /^starting_after must be the id of one of your payouts$/,
    why: 'the cursor must be one of the caller\'s payouts: only the database knows which ("List payouts")',
  },
];
/**
 * A fresh seed each run, printed so that a failure replays (FUZZ_SEED=<seed> npx jest
 * test/api/openapi-fuzz.test.ts): each run explores other requests.
 */
const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
process.stdout.write(`openapi-fuzz: seed ${SEED} (FUZZ_SEED=${SEED} replays this run)\n`);
// The grammar of a JSON number: how a numeric query parameter is written.
const JSON_NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
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
  const stack = useStack({
    env: {
      POST_RATE_LIMIT_PER_MINUTE: '1000000',
      READ_RATE_LIMIT_PER_MINUTE: '1000000',
      CALLBACK_RATE_LIMIT_PER_MINUTE: '1000000',
    },
  });
  let apiKey: string;
  let doc: Json & { paths: Record<string, Record<string, Operation>>; components: Json };
  const ajv = new Ajv2020({ strict: false, allErrors: true, multipleOfPrecision: 9 });
  addFormats(ajv);
  // Reset by each operation's test: no test depends on what another one created or saw.
  let run: FuzzRun;

  beforeAll(async () => {
    ({ apiKey } = await stack.createPartner('fuzzer'));
    doc = (await (await fetch(`${stack.apiUrl}/openapi.json`)).json()) as typeof doc;
    ajv.addSchema({ $id: 'openapi.json', components: doc.components });
  });

  const compiled = new Map<string, ValidateFunction>();
  function validator(schema: Json): ValidateFunction {
    const text = JSON.stringify(schema).replaceAll('"#/components/', '"openapi.json#/components/');
    let validate = compiled.get(text);
    if (!validate) compiled.set(text, (validate = ajv.compile(JSON.parse(text) as Json)));
    return validate;
  }

  /** The checks every answer must pass, whatever was sent. */
  function checkResponse(method: string, op: Operation, req: GeneratedRequest, res: FuzzResponse) {
    const { problems } = run;
    const shown = res.json === undefined ? `(${res.bytes.length} bytes)` : res.text.slice(0, 200);
    const where = `${method.toUpperCase()} ${req.path} -> ${res.status} ${shown}`;
    if (res.status >= 500) problems.push(`5xx: ${where}`);
    const documented = op.responses[String(res.status)];
    if (!documented) return void problems.push(`undocumented status: ${where}`);
    const mediaTypes = Object.keys(documented.content ?? {});
    const contentType = (res.headers.get('content-type') ?? '').split(';')[0]!.trim();
    if (mediaTypes.length === 0 && res.bytes.length > 0)
      problems.push(`body where none is documented: ${where}`);
    if (mediaTypes.length > 0 && !mediaTypes.includes(contentType)) {
      problems.push(`content-type ${contentType} where ${mediaTypes.join(', ')} is documented: ${where}`);
    }
    if (contentType === 'image/png' && !res.bytes.subarray(0, 8).equals(PNG_SIGNATURE))
      problems.push(`not a PNG: ${where}`);
    if (contentType === 'image/svg+xml' && !/^(<\?xml[^>]*>\s*)?<svg[\s>]/.test(res.text))
      problems.push(`not an SVG: ${where}`);
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
    const etag = res.headers.get('etag');
    if (etag && !run.etags.includes(etag)) run.etags.push(etag);
    if (!req.authenticated || res.status === 429) return;
    if (req.replayOf !== undefined) {
      const replayed = res.status === 201 && res.headers.get('idempotent-replayed') === 'true';
      if (!replayed || (res.json as { id?: string }).id !== req.replayOf)
        problems.push(`replay not answered with its payout ${req.replayOf}: ${where}`);
      else run.replays += 1;
      return;
    }
    const accepted = res.status >= 200 && res.status < 300;
    if (!req.schemaValid && accepted) problems.push(`schema-invalid request accepted: ${where} ${req.body}`);
    if (req.schemaValid && res.status === 400) {
      const message = (res.json as { error?: string } | undefined)?.error ?? '';
      if (!DESCRIBED_REFUSALS.some(({ rule }) => rule.test(message))) {
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
      case 'string': {
        const strings =
          schema.format === 'uuid'
            ? fc.uuid()
            : typeof schema.pattern === 'string'
              ? fc.stringMatching(new RegExp(schema.pattern as string))
              : fc.string({ minLength: (schema.minLength as number) ?? 0, maxLength: 40 });
        // A value the schema excludes by name (the zero address): valid means valid by every keyword.
        return schema.not ? strings.filter((value) => !validator(schema.not as Json)(value)) : strings;
      }
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
        fc.constantFrom(...run.ids).map((value) => ({ value, valid: true })),
        fc.uuid().map((value) => ({ value, valid: true })),
        fc
          .string({ minLength: 1, maxLength: 40 })
          // "." and ".." are dot segments: the URL resolves them away, so such a request names another
          // path (another operation's), not this one with an odd id.
          .filter((value) => value !== '.' && value !== '..')
          .map((value) => ({ value: encodeURIComponent(value), valid: true })),
      );
    }
    return fc.string().map((value) => ({ value, valid: true }));
  }

  /** Whether a query value (always text) is what its schema wants; numbers are written as JSON numbers. */
  function queryValueValid(schema: Json, text: string): boolean {
    if (schema.type === 'number' || schema.type === 'integer') {
      return JSON_NUMBER.test(text) && validator(schema)(Number(text)) === true;
    }
    return validator(schema)(text) === true;
  }

  /** A query value its schema wants, as text: from the schema, or (for a cursor) one of the caller's ids. */
  function validQueryValue(name: string, schema: Json): fc.Arbitrary<string> {
    const fromDoc = fromSchema(schema).map(String);
    if (name !== 'starting_after') return fromDoc;
    return fc.oneof(
      fc.constantFrom(...run.ids),
      fc.constantFrom(...run.ids).map((id) => id.toUpperCase()),
      fromDoc,
    );
  }

  /**
   * A query string: each parameter absent or valid, or one thing broken (a value of another shape, a
   * required parameter missing, one given twice, one the operation does not have). Returns the
   * encoded string (with its `?`) and whether the document allows it.
   */
  function queryArbitrary(op: Operation): fc.Arbitrary<{ query: string; valid: boolean }> {
    const parameters = (op.parameters ?? []).filter((p) => p.in === 'query');
    if (parameters.length === 0) return fc.constant({ query: '', valid: true });
    const schemaOf = (p: (typeof parameters)[number]) => p.schema ?? { type: 'string' };
    const valid = fc.tuple(
      ...parameters.map((p) =>
        p.required
          ? validQueryValue(p.name, schemaOf(p)).map((v): string | undefined => v)
          : fc.option(validQueryValue(p.name, schemaOf(p)), { nil: undefined }),
      ),
    );
    const pairsOf = (values: (string | undefined)[]) =>
      parameters.flatMap((p, i) =>
        values[i] === undefined ? [] : [[p.name, values[i]!] as [string, string]],
      );
    const judged = (pairs: [string, string][], brokenBeyondValues = false) => ({
      query:
        pairs.length === 0
          ? ''
          : `?${pairs.map(([n, v]) => `${encodeURIComponent(n)}=${encodeURIComponent(v)}`).join('&')}`,
      valid:
        !brokenBeyondValues &&
        parameters.every((p) => {
          const given = pairs.filter(([n]) => n === p.name);
          if (given.length === 0) return !p.required;
          return given.length === 1 && queryValueValid(schemaOf(p), given[0]![1]);
        }),
    });
    const index = fc.integer({ min: 0, max: parameters.length - 1 });
    const junk = fc.oneof(
      fc.string({ maxLength: 16 }),
      fc.constantFrom('', '0', '-1', '1.5', '101', '1e400', '0x10', 'null', '2026-02-30T00:00:00Z', ' 1'),
      fc.integer({ min: -1_000_000, max: 1_000_000 }).map(String),
    );
    return fc.oneof(
      { weight: 4, arbitrary: valid.map((values) => judged(pairsOf(values))) },
      {
        weight: 3,
        arbitrary: fc.tuple(valid, index, junk).map(([values, i, value]) => {
          const copy = [...values];
          copy[i] = value;
          return judged(pairsOf(copy));
        }),
      },
      {
        weight: 1,
        arbitrary: fc.tuple(valid, index).map(([values, i]) => {
          const copy = [...values];
          copy[i] = undefined;
          return judged(pairsOf(copy));
        }),
      },
      {
        weight: 1,
        arbitrary: fc
          .tuple(valid, index, validQueryValue('', { type: 'string' }))
          .map(([values, i, other]) => {
            const p = parameters[i]!;
            return judged([...pairsOf(values), [p.name, values[i] ?? other]]);
          }),
      },
      {
        weight: 1,
        arbitrary: fc
          .tuple(valid, fc.constantFrom('offset', 'page', 'created_at[lte]', 'state', 'Limit', 'amount'))
          .map(([values, name]) =>
            judged([...pairsOf(values), [name, '1']], !parameters.some((p) => p.name === name)),
          ),
      },
    );
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
              : p.name === 'If-None-Match'
                ? // An ETag this api gave (304 while still current), a list of them, '*', or a stranger's.
                  fc.oneof(
                    fc.constant(0).map(() => (run.etags.length > 0 ? run.etags.join(', ') : '*')),
                    fc.constant('*'),
                    fc.nat().map((n) => run.etags[n % Math.max(run.etags.length, 1)] ?? '"x"'),
                    printableHeader,
                  )
                : fc.oneof(fromDoc.map(String), printableHeader);
          return [p.name, fc.option(value, { nil: undefined })];
        }),
      ),
    );
    const params = fc.tuple(...pathParameters.map(parameterArbitrary));
    const body = op.requestBody ? bodyArbitrary(op) : fc.constant(undefined);
    const query = queryArbitrary(op);
    const fresh = fc
      .tuple(auth, headers, params, body, query)
      .map(([key, headerValues, paramValues, generated, q]) => {
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
          path: concretePath + q.query,
          headers: sent,
          body: generated?.body,
          schemaValid: headersValid && q.valid && (generated?.valid ?? true),
          authenticated: !secured || key === apiKey,
        };
      });
    if (!headerParameters.some((p) => p.name === 'Idempotency-Key') || !op.requestBody) return fresh;
    // Now and then, a key that already created a payout again: with no body at all, a broken one,
    // or another payout's. The body of a replay is not read (docs/api.md "Idempotency").
    const replay = fc
      .tuple(fresh, fc.nat(), fc.oneof(fc.constant(undefined), fc.constant('{'), body))
      .map(([request, n, other]): GeneratedRequest => {
        const earlier = run.keys[n % Math.max(run.keys.length, 1)];
        if (!earlier) return request;
        const text = typeof other === 'object' ? other.body : other;
        return {
          path,
          headers: {
            'X-Api-Key': apiKey,
            'Idempotency-Key': earlier.key,
            ...(text === undefined ? {} : { 'content-type': 'application/json' }),
          },
          body: text,
          schemaValid: false,
          authenticated: true,
          replayOf: earlier.id,
        };
      });
    return fc.oneof({ weight: 9, arbitrary: fresh }, { weight: 1, arbitrary: replay });
  }

  /** Payouts of this run's own, for the operations that read, list, cancel or draw one. */
  async function ownPayouts(count: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i += 1) ids.push((await stack.createPayout(apiKey)).payout.id);
    return ids;
  }

  // What each operation must have answered at least once, so that no check passes vacuously.
  const MUST_SEE: Record<string, number[]> = {
    'post /v1/payouts': [201, 400, 401, 415],
    'get /v1/payouts/{id}': [200, 401, 404],
    'get /v1/payouts': [200, 400, 401],
    'get /v1/quotes': [200, 400, 401],
    'get /v1/payouts/{id}/qr.svg': [200, 304, 401, 404],
    'get /v1/payouts/{id}/qr.png': [200, 304, 401, 404],
    'post /v1/payouts/{id}/cancel': [401, 404],
    'post /webhooks/{provider}': [200, 400, 404],
    'get /v1/callback': [200, 401],
    'put /v1/callback': [200, 400, 401],
    'delete /v1/callback': [200, 401],
    'post /v1/callback/rotate-secret': [400, 401],
    'post /v1/callback/test': [401],
    'get /v1/callback/events': [200, 400, 401],
  };
  const RUNS: Record<string, number> = {
    'post /v1/payouts': 120,
    'get /v1/payouts/{id}': 100,
    'get /v1/payouts': 120,
    'get /v1/quotes': 100,
    'get /v1/payouts/{id}/qr.svg': 80,
    'get /v1/payouts/{id}/qr.png': 80,
    'post /webhooks/{provider}': 100,
    'post /v1/payouts/{id}/cancel': 60,
    'get /v1/callback': 20,
    'put /v1/callback': 40,
    'delete /v1/callback': 20,
    'post /v1/callback/rotate-secret': 40,
    'post /v1/callback/test': 20,
    'get /v1/callback/events': 40,
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
      run = { ids: await ownPayouts(3), etags: [], keys: [], replays: 0, problems: [] };
      // One plain, valid read first, checked like the rest: whatever the seed draws, the success answer
      // is among those checked (the draws may all be refusals).
      const requiredQuery = (op.parameters ?? []).some(
        (p: { in?: string; required?: boolean }) => p.in === 'query' && p.required,
      );
      if (method === 'get' && MUST_SEE[name]!.includes(200) && !requiredQuery) {
        const baseline: GeneratedRequest = {
          path: path.replace('{id}', run.ids[0]!),
          headers: { 'X-Api-Key': apiKey },
          body: undefined,
          schemaValid: true,
          authenticated: true,
        };
        const res = await send(stack.apiUrl, baseline.path, { method: 'GET', headers: baseline.headers });
        seen.add(res.status);
        checkResponse(method, op, baseline, res);
      }
      // And, for a partner route, one request without a key, checked the same way: the refusal is seen
      // whatever the seed draws (a fifth of the draws carry no valid key; twenty draws can miss it).
      if (MUST_SEE[name]!.includes(401)) {
        const anonymous: GeneratedRequest = {
          path: path.replace('{id}', run.ids[0]!),
          headers: {},
          body: undefined,
          schemaValid: true,
          authenticated: false,
        };
        const res = await send(stack.apiUrl, anonymous.path, { method: method.toUpperCase(), headers: {} });
        seen.add(res.status);
        checkResponse(method, op, anonymous, res);
      }
      await fc.assert(
        fc.asyncProperty(requestArbitrary(path, op), async (req) => {
          const res = await send(stack.apiUrl, req.path, {
            method: method.toUpperCase(),
            headers: req.headers,
            body: req.body,
          });
          seen.add(res.status);
          const created = res.status === 201 && res.headers.get('idempotent-replayed') === null;
          if (name === 'post /v1/payouts' && created) {
            const id = (res.json as { id: string }).id;
            run.ids.push(id);
            const key = req.headers['Idempotency-Key'];
            if (key !== undefined) run.keys.push({ key, id });
          }
          checkResponse(method, op, req, res);
        }),
        { numRuns: RUNS[name], seed: SEED },
      );
      expect([...seen].sort()).toEqual(expect.arrayContaining(MUST_SEE[name]!));
      if (name === 'post /v1/payouts')
        expect({ seed: SEED, replays: run.replays > 0 }).toEqual({ seed: SEED, replays: true });
      expect({ seed: SEED, problems: run.problems }).toEqual({ seed: SEED, problems: [] });
    },
    120_000,
  );
});

async function send(
  baseUrl: string,
  path: string,
  init: { method: string; headers: Record<string, string>; body?: string },
): Promise<FuzzResponse> {
  const res = await fetch(`${baseUrl}${path}`, init);
  const bytes = Buffer.from(await res.arrayBuffer());
  const text = bytes.toString('utf8');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json, bytes };
}
