import { Worker } from '@temporalio/worker';
import type { PayoutRecord } from '../../src/domain/payout';
import { createLogger } from '../../src/observability/logger';
import {
  devServerSearchAttributes,
  missingSearchAttributes,
  requireSearchAttributes,
  searchAttributeCommands,
} from '../../src/temporal/search-attribute-registry';
import { payoutWorkflowId } from '../../src/workflows/payout.contract';
import { payoutWorkflow } from '../../src/workflows/payout.workflow';
import {
  PARTNER_ID,
  PAYOUT_FAILURE_REASON,
  PAYOUT_ID,
  PAYOUT_STATUS,
  payoutSearchAttributes,
} from '../../src/workflows/search-attributes';
import { payoutInput } from '../support/payouts';
import { workflowBundle } from '../support/stack';
import { until } from '../support/until';
import { useTimeSkippingEnv } from '../workflow/harness';
import { tracingSinks } from '../../src/temporal/tracing';

// PayoutId is set at start; PayoutStatus, PartnerId and PayoutFailureReason follow the payout through its transitions, on the time-skipping test
// server that workflow tests use. That server refuses search attributes it does not know, so this
// also proves createTimeSkippingEnv registers them.

describe('payout search attributes', () => {
  const env = useTimeSkippingEnv(() => Promise.resolve());

  it('are set at start and upserted on each status change only, up to FAILED on charge expiry', async () => {
    const recorded: PayoutRecord[] = [];
    const taskQueue = 'search-attributes';
    const worker = await Worker.create({
      // The bundle's tracing interceptors export through this sink (off here: it drops them).
      sinks: tracingSinks(),
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: await workflowBundle(),
      activities: {
        async recordPayout(payout: PayoutRecord) {
          recorded.push(payout);
        },
        async createPixCharge() {
          return { chargeId: 'chg_1', pixCopyPaste: '000201...' };
        },
        // Reconciliation at expiry: the charge is removed, and the provider saw no payment.
        async cancelPixCharge() {
          return { kind: 'removed' as const, removedAt: new Date().toISOString() };
        },
        async fetchChargeStatus() {
          return { status: 'expired' as const, expiresAt: new Date().toISOString(), payments: [] };
        },
        // The FAILED payout's partner callback: this partner has no callback URL.
        async sendPartnerCallback() {
          return { kind: 'not_configured' as const };
        },
      },
    });
    const input = payoutInput(
      {},
      {
        payoutId: '0b0cc8f4-51c5-4d8e-9a53-1c7f3f5b3a10',
        partnerId: '7d3c0f0e-2c55-4b7e-8f0e-7a3c2c1d9e55',
        pixKey: '52998224725',
      },
    );

    await worker.runUntil(async () => {
      // Started as the api starts it: the attributes are there before any worker runs the workflow.
      const handle = await env.client.workflow.start(payoutWorkflow, {
        workflowId: payoutWorkflowId(input.payoutId),
        taskQueue,
        args: [input],
        typedSearchAttributes: payoutSearchAttributes({
          id: input.payoutId,
          status: 'PENDING',
          partnerId: input.partnerId,
        }),
      });
      // PENDING with its charge; time does not skip until the result is awaited.
      await until('the charge recorded', () =>
        recorded.some((p) => p.pixCopyPaste !== '') ? true : undefined,
      );
      const pending = (await handle.describe()).typedSearchAttributes;
      expect(pending.get(PAYOUT_STATUS)).toBe('PENDING');
      expect(pending.get(PARTNER_ID)).toBe(input.partnerId);
      expect(pending.get(PAYOUT_ID)).toBe(input.payoutId);
      expect(pending.get(PAYOUT_FAILURE_REASON)).toBeUndefined();

      const final = await handle.result(); // the charge expires an hour later, skipped
      expect(final.status).toBe('FAILED');
      const ended = (await handle.describe()).typedSearchAttributes;
      expect(ended.get(PAYOUT_STATUS)).toBe('FAILED');
      expect(ended.get(PARTNER_ID)).toBe(input.partnerId);
      expect(ended.get(PAYOUT_ID)).toBe(input.payoutId);
      // An operator filters failures by reason, and the detail page says FAILED in words.
      expect(ended.get(PAYOUT_FAILURE_REASON)).toBe('charge_expired');
      const metadata = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
      expect(metadata.currentDetails).toBe('**PAYOUT FAILED**: charge_expired');

      const { events } = await handle.fetchHistory();
      // The SDK's own TemporalChangeVersion upserts (one per workflow patch taken) are not ours.
      const upserts = (events ?? []).filter(
        (e) => e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.PayoutStatus,
      );
      // Three saves (PENDING, charge, FAILED), one status change after the start.
      expect(recorded.map((p) => p.status)).toEqual(['PENDING', 'PENDING', 'FAILED']);
      expect(upserts).toHaveLength(1);
    });
  });

  it('are checked at worker start-up, with the commands that register them', async () => {
    // This server cannot list them (nor can Temporal Cloud): the worker then starts with a warning.
    expect(await missingSearchAttributes(env.connection.operatorService, 'default')).toBeUndefined();
    const logger = createLogger({ level: 'silent', name: 't' });
    const listing = (names: string[]) =>
      ({
        listSearchAttributes: async () => ({
          customAttributes: Object.fromEntries(names.map((n) => [n, 2])),
        }),
      }) as unknown as Parameters<typeof requireSearchAttributes>[0];
    await expect(
      requireSearchAttributes(
        listing(['PayoutId', 'PayoutStatus', 'PartnerId', 'PayoutFailureReason']),
        'default',
        logger,
      ),
    ).resolves.toBeUndefined();
    await expect(
      requireSearchAttributes(listing(['PayoutId', 'PayoutStatus', 'PayoutFailureReason']), 'prod', logger),
    ).rejects.toThrow(
      'namespace "prod" lacks the search attribute(s) PartnerId; register them first:\n' +
        '  temporal operator search-attribute create --namespace prod --name PartnerId --type Keyword',
    );
    await expect(
      requireSearchAttributes(env.connection.operatorService, 'default', logger),
    ).resolves.toBeUndefined();
    expect(searchAttributeCommands('payouts-prod')).toEqual([
      'temporal operator search-attribute create --namespace payouts-prod --name PayoutId --type Keyword',
      'temporal operator search-attribute create --namespace payouts-prod --name PayoutStatus --type Keyword',
      'temporal operator search-attribute create --namespace payouts-prod --name PartnerId --type Keyword',
      'temporal operator search-attribute create --namespace payouts-prod --name PayoutFailureReason --type Keyword',
    ]);
    expect(devServerSearchAttributes()).toEqual({
      PayoutId: 'Keyword',
      PayoutStatus: 'Keyword',
      PartnerId: 'Keyword',
      PayoutFailureReason: 'Keyword',
    });
  });
});
