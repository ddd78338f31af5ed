import { z } from 'zod';
import { int, optional } from './values';

/** The provider API's client (docs/provider-api.md). */

export const PROVIDER_VARIABLES = {
  PROVIDER_NAME: z
    .string()
    .regex(/^[a-z0-9-]{1,32}$/, 'must be 1-32 lower-case letters, digits or dashes')
    .default('sandbox'),
  PROVIDER_API_URL: z.url().default('http://127.0.0.1:4000'),
  PROVIDER_API_KEY: optional(z.string()),
  PROVIDER_TIMEOUT_MS: int(10_000, 100),
};

export const PROVIDER_CLIENT = ['PROVIDER_API_URL', 'PROVIDER_API_KEY', 'PROVIDER_TIMEOUT_MS'] as const;
