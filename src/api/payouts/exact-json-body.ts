import type { FastifyInstance } from 'fastify';
import { centavosFromJsonNumberText, MoneyFormatError } from '../../domain/money';
import { API_ERRORS, type HttpError } from '../errors';
import { parseJsonBodies } from '../json-body';
import { topLevelMemberSource } from '../json-source';

/**
 * The JSON body parser of the payout routes: every route's (json-body.ts), plus one check
 * JSON.parse makes impossible afterwards. A double cannot hold
 * `10.0000000000000001`, so once parsed it is 10 and would be charged as R$10.00; the amount's
 * decimals are therefore judged on the digits the client sent. Everything else about amount_brl
 * (type, > 0, maximum) stays with the body schema, which sees the parsed value.
 */
export function parseJsonWithExactAmount(app: FastifyInstance): void {
  parseJsonBodies(app, amountSourceError);
}

function amountSourceError(text: string, body: unknown): HttpError | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const amount = (body as { amount_brl?: unknown }).amount_brl;
  // Only a positive finite number can be a valid amount; the schema words every other refusal.
  if (typeof amount !== 'number' || !(amount > 0) || !Number.isFinite(amount)) return undefined;
  const source = topLevelMemberSource(text, 'amount_brl');
  if (source === undefined) return undefined;
  try {
    centavosFromJsonNumberText(source);
    return undefined;
  } catch (err) {
    if (!(err instanceof MoneyFormatError)) throw err;
    return API_ERRORS.invalidRequest(err.message);
  }
}
