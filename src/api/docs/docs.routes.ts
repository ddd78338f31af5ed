import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';

import fp from 'fastify-plugin';
import { createJsonSchemaTransform, createJsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { SettlementNetwork } from '../../domain/payout';
import { API_ERRORS } from '../errors';
import { errorBodySchema, payoutResponseSchema } from '../payouts/payout.schemas';
import { describeCallbackWebhooks } from './callbacks';
import { describeOperations } from './describe';
import { CALLBACK_TAG } from './callback-operations';

export interface ApiDocsOptions {
  /** Where partners reach the api (PUBLIC_BASE_URL); listed as the document's server when set. */
  publicBaseUrl?: string;
  /** The chain payouts settle on, named in the document's introduction. */
  network: SettlementNetwork;
}

// zod's global registry holds the `.meta()` of every schema (descriptions, formats, bounds,
// examples), so the document says what the route schemas say. The shared shapes become named
// components (#/components/schemas/Payout, .../Error) that every operation references.
const schemaRegistry = z.globalRegistry;
if (!schemaRegistry.has(payoutResponseSchema)) {
  schemaRegistry.add(payoutResponseSchema, { ...schemaRegistry.get(payoutResponseSchema), id: 'Payout' });
  schemaRegistry.add(errorBodySchema, { ...schemaRegistry.get(errorBodySchema), id: 'Error' });
}

// The UI's top bar would otherwise show the web framework's logo.
const LOGO_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" width="260" height="40"><text x="0" y="28" ' +
  'font-family="sans-serif" font-size="24" font-weight="bold" fill="#fff">PIX → USDT payouts</text></svg>';

export const OPENAPI_JSON_PATH = '/openapi.json';
export const DOCS_PATH = '/docs';

const description = (
  network: SettlementNetwork,
) => `Partners create BRL payouts collected by PIX and settled in USDT on ${network.name} (chain id ${network.chainId}).

1. \`POST /v1/payouts\` returns \`pix_copy_paste\`, the EMV PIX charge the payer pays from a banking app.
2. The payment provider notifies the service; the payout moves PENDING → PROCESSING → COMPLETED (or FAILED).
3. Poll \`GET /v1/payouts/{id}\` (every 10 seconds) until \`status\` is COMPLETED or FAILED.

Every error body is exactly \`{"error": string}\`. An unknown path answers 404 \`${API_ERRORS.notFound().message}\`; a method a path does not declare answers 405 \`${API_ERRORS.methodNotAllowed([]).message}\` with an \`Allow\` header. Every response carries \`X-Request-Id\` (send your own to correlate).`;

/**
 * The OpenAPI 3.1 document, generated from the route schemas: the zod schemas that validate
 * requests and serialise responses are turned into JSON Schema by fastify-type-provider-zod, so the
 * document cannot drift from what the api enforces. What route schemas cannot say (the API-key
 * scheme, headers, the meaning of each status code) is added by describeOperations. Served as
 * /openapi.json and browsable at /docs; the Swagger UI assets come from the npm package, no CDN.
 *
 * Registered before the routes (it collects them as they are added) and without encapsulation.
 */
export const apiDocs = fp<ApiDocsOptions>(
  async (app, opts) => {
    await app.register(fastifySwagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'PIX → USDT Payout API',
          version: '1.0.0',
          description: description(opts.network),
          // Partners get their keys, callback URLs and limits from their account manager, not from a
          // public address; the API is theirs under their agreement, not open source (package.json).
          contact: { name: 'Your account manager (API keys, callback URL, limits)' },
          // SPDX's form for a licence of one's own (no SPDX id exists for a proprietary one).
          license: {
            name: 'Proprietary: for partners under their service agreement',
            identifier: 'LicenseRef-Proprietary',
          },
        },
        servers: opts.publicBaseUrl ? [{ url: opts.publicBaseUrl }] : [],
        tags: [
          { name: 'payouts', description: 'Partner API: create and read payouts' },
          {
            name: 'provider',
            description: 'Inbound notifications of the payment provider (not for partners)',
          },
          { name: 'callbacks', description: 'What this service POSTs to your callback URL (webhooks)' },
          CALLBACK_TAG,
        ],
        components: {
          securitySchemes: {
            ApiKeyAuth: {
              type: 'apiKey',
              in: 'header',
              name: 'X-Api-Key',
              description:
                'The raw API key issued by your account manager. Header names are case-insensitive. ' +
                'Missing: 401 `missing X-API-Key header`; wrong or disabled: 401 `invalid API key`.',
            },
          },
        },
      },
      transform: createJsonSchemaTransform({ schemaRegistry }),
      transformObject: (documents) =>
        describeCallbackWebhooks(
          describeOperations(createJsonSchemaTransformObject({ schemaRegistry })(documents)),
        ),
    });
    await app.register(fastifySwaggerUi, {
      routePrefix: DOCS_PATH,
      staticCSP: true,
      logo: { type: 'image/svg+xml', content: Buffer.from(LOGO_SVG), href: DOCS_PATH },
      uiConfig: { docExpansion: 'list', deepLinking: true, defaultModelsExpandDepth: 1 },
    });
    app.get(OPENAPI_JSON_PATH, { schema: { hide: true } }, async () => app.swagger());
  },
  { name: 'api-docs' },
);
