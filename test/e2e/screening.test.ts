import type { FastifyInstance } from 'fastify';
import { partnerCallbacksOf } from '../../src/main/wiring';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { countTransfersTo } from '../../src/adapters/chain/usdt-reads';
import { findPayoutLocation } from '../../src/adapters/db/payouts-repo';
import { denyWallet } from '../../src/adapters/db/screening-denylist-repo';
import { createChainAndDenylistScreening } from '../../src/adapters/screening/receiver-screening';
import { buildApp } from '../../src/api/app';
import { createLogger } from '../../src/observability/logger';
import { createMetrics } from '../../src/observability/metrics';
import { resolvePayoutUpdate } from '../../src/workflows/payout.contract';
import { countPayouts, expectError, post } from '../api/helpers';
import { blockOnToken, sanctionOnOracle } from '../support/screening';
import { startStack, VALID_PAYOUT, type TestStack } from '../support/stack';

const ISSUER_BLOCK = 'receiver_wallet cannot receive USDT: blocked by the token issuer';
const SCREENING_FAILED = 'receiver_wallet failed compliance screening';

const freshWallet = () => privateKeyToAddress(generatePrivateKey());

// Receiver screening on real servers (docs/decisions.md D45): the test token's issuer blocklist and
// the test sanctions oracle on anvil, the operators' denylist in PostgreSQL.
describe('receiver screening (dev server, PostgreSQL, anvil, sandbox, worker, api)', () => {
  for (const mode of ['provider', 'treasury'] as const) {
    describe(`${mode} mode`, () => {
      let stack: TestStack;
      beforeAll(async () => {
        stack = await startStack({
          proxyProvider: true,
          env: { SETTLEMENT_MODE: mode, SCREENING_CACHE_SECONDS: '0' },
        });
      }, 120_000);
      afterAll(() => stack?.close());

      const chargeRequests = () =>
        [...stack.providerProxy!.chargeRequests().values()].reduce((a, b) => a + b, 0);

      if (mode === 'provider') {
        it.each([
          [
            'on the token issuer’s blocklist',
            ISSUER_BLOCK,
            (w: `0x${string}`) => blockOnToken(stack.rpcUrl, stack.usdtAddress, w),
          ],
          [
            'listed by the sanctions oracle',
            SCREENING_FAILED,
            (w: `0x${string}`) => sanctionOnOracle(stack.rpcUrl, stack.sanctionsOracleAddress, w),
          ],
          [
            'on the operators’ denylist',
            SCREENING_FAILED,
            (w: `0x${string}`) => denyWallet(stack.db, { wallet: w, by: 'test', reason: 'test' }),
          ],
        ])(
          'refuses a receiver %s with 422 before any charge, and a replay of the key answers the same',
          async (_what, message, flag) => {
            const { partnerId, apiKey } = await stack.createPartner();
            const wallet = freshWallet();
            await flag(wallet);
            const chargesBefore = chargeRequests();
            const body = { ...VALID_PAYOUT, receiver_wallet: wallet };
            const first = await post(stack.apiUrl, apiKey, body, { 'idempotency-key': 'screened' });
            expectError(first, 422, message);
            // The replay answers the same, whatever its body says.
            const replay = await post(
              stack.apiUrl,
              apiKey,
              { ...body, amount_brl: 5 },
              { 'idempotency-key': 'screened' },
            );
            expectError(replay, 422, message);
            expect(await countPayouts(stack.db, partnerId)).toBe(0);
            expect(chargeRequests()).toBe(chargesBefore);
            // Without a key, refused just the same; an unlisted wallet still passes.
            expectError(await post(stack.apiUrl, apiKey, body), 422, message);
            expect(
              (await post(stack.apiUrl, apiKey, { ...body, receiver_wallet: freshWallet() })).status,
            ).toBe(201);
          },
        );

        it.each(['api', 'worker'] as const)(
          'stops the %s at start when the token has no isBlocked, naming the setting (not skipped silently)',
          async (kind) => {
            // The oracle's address as the token: a contract without isBlocked(address).
            await expect(
              stack.startProcess(kind, { USDT_CONTRACT_ADDRESS: stack.sanctionsOracleAddress }),
            ).rejects.toThrow(/has no isBlocked\(address\) on USDT_CONTRACT_ADDRESS.*SCREENING_SOURCES/s);
            // Left out of the sources, the same token starts.
            const started = await stack.startProcess(kind, {
              USDT_CONTRACT_ADDRESS: stack.sanctionsOracleAddress,
              SCREENING_SOURCES: 'sanctions_oracle,denylist',
            });
            await started.kill('SIGTERM');
          },
          120_000,
        );

        describe('when a source cannot be read', () => {
          let app: FastifyInstance;
          let url: string;
          beforeAll(async () => {
            app = await buildApp({
              config: stack.config,
              db: stack.db,
              temporal: stack.temporal,
              quote: async () => ({ rate: '5.50', expiresAt: new Date(Date.now() + 30_000).toISOString() }),
              logger: createLogger({ level: 'silent', name: 'test' }),
              metrics: createMetrics(),
              callbacks: partnerCallbacksOf(stack.config),
              // The token's blocklist read through an EVM node that is not there (nothing listens on :9).
              screening: createChainAndDenylistScreening({
                rpcUrl: 'http://127.0.0.1:9',
                db: stack.db,
                sources: ['token_blocklist', 'denylist'],
                tokenAddress: stack.usdtAddress,
                oracleAddress: stack.sanctionsOracleAddress,
                cacheSeconds: 0,
              }),
            });
            url = await app.listen({ host: '127.0.0.1', port: 0 });
          });
          afterAll(() => app?.close());

          it('answers 503 with Retry-After, creates nothing, and frees the key for the retry', async () => {
            const { partnerId, apiKey } = await stack.createPartner();
            const chargesBefore = chargeRequests();
            const res = await post(url, apiKey, VALID_PAYOUT, { 'idempotency-key': 'unknown' });
            expectError(res, 503, 'compliance screening unavailable, retry later');
            expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
            expect(await countPayouts(stack.db, partnerId)).toBe(0);
            expect(chargeRequests()).toBe(chargesBefore);
            // The same key works on an api whose sources answer.
            expect(
              (await post(stack.apiUrl, apiKey, VALID_PAYOUT, { 'idempotency-key': 'unknown' })).status,
            ).toBe(201);
          });
        });
      }

      it(`never pays a receiver the issuer blocked after POST; ${mode === 'provider' ? 'refunds the payer' : 'sends once released'} on the operator’s decision`, async () => {
        const { apiKey } = await stack.createPartner();
        const wallet = freshWallet();
        const created = await post(stack.apiUrl, apiKey, { ...VALID_PAYOUT, receiver_wallet: wallet });
        expect(created.status).toBe(201);
        const payout = created.json as { id: string; pix_copy_paste: string };
        await blockOnToken(stack.rpcUrl, stack.usdtAddress, wallet);
        await stack.pay(payout.pix_copy_paste);
        await waitFor(async () => (await openAttention(stack, payout.id)).includes('receiver_flagged'));
        const read = await fetch(`${stack.apiUrl}/v1/payouts/${payout.id}`, {
          headers: { 'X-API-Key': apiKey },
        });
        expect(((await read.json()) as { status: string }).status).toBe('PROCESSING');
        expect(
          (await countTransfersTo({ rpcUrl: stack.rpcUrl, usdtAddress: stack.usdtAddress, to: wallet }))
            .count,
        ).toBe(0);
        if (mode === 'provider') {
          expect(stack.providerProxy!.settlementRequests().get(payout.id) ?? 0).toBe(0);
        }

        const location = await findPayoutLocation(stack.db, payout.id);
        const decision = mode === 'provider' ? 'refund' : 'release';
        await stack.temporal.workflow.getHandle(location!.workflowId).executeUpdate(resolvePayoutUpdate, {
          args: [{ decision, decidedBy: 'ana@ops', reason: 'checked with the issuer' }],
        });
        const done = await stack.waitForStatus(apiKey, payout.id, ['COMPLETED', 'FAILED']);
        const transfers = await countTransfersTo({
          rpcUrl: stack.rpcUrl,
          usdtAddress: stack.usdtAddress,
          to: wallet,
        });
        const refundCases = async () =>
          (await stack.db.query('SELECT 1 FROM refund_cases WHERE payout_id = $1', [payout.id])).rowCount;
        // The refund case is opened right after the payout ends.
        if (mode === 'provider') await waitFor(async () => (await refundCases()) === 1);
        const refunds = await refundCases();
        const { rows: decisions } = await stack.db.query<{ decision: string; decided_by: string }>(
          'SELECT decision, decided_by FROM operator_decisions WHERE payout_id = $1',
          [payout.id],
        );
        expect(decisions).toEqual([{ decision, decided_by: 'ana@ops' }]);
        if (mode === 'provider') {
          expect(done.status).toBe('FAILED');
          expect(transfers.count).toBe(0);
          expect(refunds).toBe(1);
        } else {
          expect(done.status).toBe('COMPLETED');
          expect(transfers.count).toBe(1);
          expect(transfers.total).toBe(BigInt(Math.round((done.settled_amount_usdt as number) * 1e6)));
          expect(refunds).toBe(0);
        }
        expect(await openAttention(stack, payout.id)).toEqual([]);
      }, 120_000);
    });
  }
});

async function openAttention(stack: TestStack, payoutId: string): Promise<string[]> {
  const { rows } = await stack.db.query<{ kind: string }>(
    'SELECT kind FROM payout_attention WHERE payout_id = $1 AND cleared_at IS NULL',
    [payoutId],
  );
  return rows.map((r) => r.kind);
}

async function waitFor(done: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await done()) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('condition not met in time');
}
