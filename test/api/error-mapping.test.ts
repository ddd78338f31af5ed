import Fastify, { type FastifyInstance } from 'fastify';
import {
  AmountTooSmallError,
  ChargeRefusedError,
  ChargeTimeoutError,
  IdempotencyClaimLostError,
  IdempotencyClaimUnconfirmedError,
  IdempotencyConflictError,
  PayoutRequestError,
  QuoteStaleError,
  QuoteUnavailableError,
} from '../../src/domain/payout-request-errors';
import { installErrorHandling } from '../../src/api/errors';
import { call, expectError } from './helpers';

// The one handler that turns the create-payout service's domain errors into HTTP: each refusal's
// status code and exact body, and nothing of the error's own (log) message.
describe('error handler: payout request errors', () => {
  let app: FastifyInstance;
  let base: string;
  let toThrow: PayoutRequestError;

  beforeAll(async () => {
    app = Fastify();
    installErrorHandling(app);
    app.get('/throw', async () => {
      throw toThrow;
    });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(() => app?.close());

  it.each([
    [new QuoteUnavailableError('rate endpoint down'), 503, 'quote unavailable, retry later'],
    [new QuoteStaleError('feed 26 h old'), 503, 'quote unavailable: the price feed is stale, retry later'],
    [new IdempotencyConflictError('held'), 409, 'idempotency conflict'],
    [
      new AmountTooSmallError('9999 base units'),
      400,
      'amount_brl is too small: min_amount_usdt must be at least 0.01',
    ],
    [new ChargeRefusedError('refused'), 502, 'payment provider could not create the PIX charge, retry later'],
    [new ChargeTimeoutError('20000 ms'), 503, 'payment provider unavailable, retry later'],
    [new IdempotencyClaimLostError('taken over'), 409, 'idempotency conflict'],
    [new IdempotencyClaimUnconfirmedError('renewals too slow'), 503, 'service busy, retry later'],
  ])('%s -> %i', async (error, status, message) => {
    toThrow = error;
    const res = await call(base, '/throw');
    expectError(res, status, message);
    expect(res.text).not.toContain(error.message);
  });

  it.each([
    [new QuoteUnavailableError('rate endpoint down'), '5'],
    [new QuoteStaleError('feed 26 h old'), '60'],
    [new IdempotencyClaimUnconfirmedError('renewals too slow'), '2'],
  ])('%s says when to retry', async (error, seconds) => {
    toThrow = error;
    expect((await call(base, '/throw')).headers.get('retry-after')).toBe(seconds);
  });
});
