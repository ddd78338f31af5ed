import { Gauge, type Registry } from 'prom-client';
import type { UsdtLedger } from '../adapters/chain/ledger-types';
import { countOpenAttention } from '../adapters/db/attention-repo';
import type { Db } from '../adapters/db/pool';
import { REFUND_CASE_STATUSES, refundCaseAges } from '../adapters/db/refund-cases-repo';
import type { Logger } from './logger';

const USDT_UNITS = 1_000_000;

/**
 * Partner callback events by delivery state (read model, computed at scrape time). An event in
 * `gave_up` got no 2xx in 24 hours of retries: the partner never heard of that payout's outcome.
 * The alert PartnerCallbackGaveUp fires when this count grows.
 */
export function registerCallbackGauges(registry: Registry, db: Db, logger: Logger): void {
  new Gauge({
    name: 'partner_callback_events',
    help: 'Partner callback events by delivery state (pending, delivered, gave_up, skipped)',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      try {
        const { rows } = await db.query<{ state: string; n: string }>(
          'SELECT state, count(*)::text AS n FROM callback_events GROUP BY state',
        );
        this.reset();
        for (const state of ['pending', 'delivered', 'gave_up', 'skipped']) {
          this.set({ state }, Number(rows.find((r) => r.state === state)?.n ?? 0));
        }
      } catch (err) {
        // A failed scrape of one gauge must not fail the whole /metrics page.
        logger.warn({ err }, 'partner_callback_events: query failed');
      }
    },
  });
}

/**
 * Payouts waiting without proof, by what they wait on (read model, computed at scrape time). Every
 * open item names its payout (`admin payouts attention`); the alert PayoutOutcomeUnknown fires while
 * any is open. Computed from the database, so it survives worker restarts and counts each payout once.
 */
export function registerAttentionGauges(registry: Registry, db: Db, logger: Logger): void {
  new Gauge({
    name: 'payouts_awaiting_attention',
    help: 'Open attention items: payouts waiting on an unknown (overdue transfer, unreadable status, mismatch) or flagged for review',
    labelNames: ['kind'],
    registers: [registry],
    async collect() {
      try {
        const counts = await countOpenAttention(db);
        this.reset();
        for (const [kind, n] of Object.entries(counts)) this.set({ kind }, n);
      } catch (err) {
        logger.warn({ err }, 'payouts_awaiting_attention: query failed');
      }
    },
  });
}

/**
 * Refund cases by status, and how long the oldest of each has been in it (read model, computed at
 * scrape time). The alerts RefundRefused (a refused case: the payer has not got the money back) and
 * RefundReturningTooLong (a return without the provider's final answer) read them.
 */
export function registerRefundGauges(registry: Registry, db: Db, logger: Logger): void {
  const gauge = (
    name: string,
    help: string,
    value: (row: { count: number; oldestSeconds: number }) => number,
  ) =>
    new Gauge({
      name,
      help,
      labelNames: ['status'],
      registers: [registry],
      async collect() {
        try {
          const rows = await refundCaseAges(db);
          this.reset();
          for (const status of REFUND_CASE_STATUSES) {
            const row = rows.find((r) => r.status === status);
            this.set({ status }, row ? value(row) : 0);
          }
        } catch (err) {
          logger.warn({ err, gauge: name }, 'refund gauge: query failed');
        }
      },
    });
  gauge(
    'payout_refund_cases',
    'Refund cases by status (open, awaiting_approval, returning, returned, refused, resolved)',
    (r) => r.count,
  );
  gauge(
    'payout_refund_case_oldest_seconds',
    'Seconds the oldest refund case of each status has been in it (0 when none)',
    (r) => r.oldestSeconds,
  );
}

/**
 * The treasury's USDT balance (treasury mode), read from the chain at scrape time, so the alert
 * TreasuryBalanceLow warns before payouts start waiting for a top-up; and whether it can send at all
 * (treasury_can_send 0 with the reason while the token's issuer blocks it: alert TreasuryBlocked).
 */
export function registerTreasuryGauges(registry: Registry, ledger: UsdtLedger, logger: Logger): void {
  const address = ledger.treasuryAddress();
  if (!address) return;
  new Gauge({
    name: 'treasury_usdt_balance',
    help: 'USDT held by the settlement treasury account, in USDT',
    labelNames: ['address'],
    registers: [registry],
    async collect() {
      try {
        this.set({ address }, Number(await ledger.balanceOf(address)) / USDT_UNITS);
      } catch (err) {
        logger.warn({ err }, 'treasury_usdt_balance: chain read failed');
      }
    },
  });
  new Gauge({
    name: 'treasury_can_send',
    help: 'Whether the settlement treasury can send USDT (1) or not (0; reason blocked_by_issuer or cannot_send)',
    labelNames: ['address', 'reason'],
    registers: [registry],
    async collect() {
      try {
        const health = await ledger.senderHealth(address);
        this.reset();
        this.set({ address, reason: health.ok ? 'none' : health.reason }, health.ok ? 1 : 0);
      } catch (err) {
        // Unreadable is no verdict: the last answer stays.
        logger.warn({ err }, 'treasury_can_send: chain read failed');
      }
    },
  });
}
