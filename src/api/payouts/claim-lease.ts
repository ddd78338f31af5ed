import { performance } from 'node:perf_hooks';
import {
  endIdempotencyLease,
  markIdempotencyKeyRecorded,
  markIdempotencyKeyRefused,
  releaseIdempotencyKey,
  renewIdempotencyClaim,
  type ClaimRef,
} from '../../adapters/db/idempotency-repo';
import type { PayoutRun } from '../../adapters/db/payouts-repo';
import type { Db } from '../../adapters/db/pool';
import type { PayoutRecord } from '../../domain/payout';
import {
  IdempotencyClaimLostError,
  IdempotencyClaimUnconfirmedError,
} from '../../domain/payout-request-errors';

/**
 * How long an Idempotency-Key claim lives unless its request renews it (docs/decisions.md D73): a
 * claim not renewed for this long is taken to have died with its api and is taken over by the next
 * request with the key. The one home of this number.
 */
export const CLAIM_LEASE_SECONDS = 2;

/**
 * How often the request holding a claim renews its lease, counted from when its claim (then its last
 * renewal) was sent: four renewals fit in one lease, so a request is overtaken only after about 1.5 s
 * without a renewal reaching the database. A request answered sooner than this never renews.
 */
export const CLAIM_RENEW_MS = 500;

/**
 * Before the payout's workflow is started the holder must know its lease has this much left (else it
 * renews first): a request overtaken before that moment never starts the payout at all.
 */
const START_MARGIN_MS = 1_000;

export type ClaimLeaseLog = { warn(o: object, msg: string): void };

/**
 * A claim held by the request in flight: renewed every CLAIM_RENEW_MS until one of its outcomes is
 * written or `end` is called. Each write is fenced by the claim's token (a no-op, answering false,
 * once another request has taken the claim over), and renewal stops before it, so a renewal never
 * races the request's own outcome.
 */
export interface HeldClaim {
  /**
   * Right before the payout's workflow is started: resolves while the lease is surely this request's
   * for at least START_MARGIN_MS more (renewing it first if need be). Throws IdempotencyClaimLostError
   * once another request has taken the claim over, which then answers for the key, and
   * IdempotencyClaimUnconfirmedError (503) when renewals keep taking longer than the margin.
   */
  confirm(): Promise<void>;
  /**
   * The payout is recorded: the key replays it. With `catchUp`, the payout's read-model row is brought
   * up to that state in the same statement, whoever holds the claim (markIdempotencyKeyRecorded),
   * and written with `run` when the workflow has not written it yet (D81).
   */
  record(catchUp?: PayoutRecord, run?: PayoutRun): Promise<boolean>;
  /** Screening refused the request: the key replays the refusal. */
  refuse(refusal: string): Promise<boolean>;
  /** Deletes the claim: the key is free for a new attempt under a new payout and workflow id. */
  release(): Promise<boolean>;
  /**
   * Stops renewing. A claim left without an outcome (an error, a charge not created in time) ends its
   * lease now, so the partner's retry takes it over at once rather than in CLAIM_LEASE_SECONDS.
   */
  end(): Promise<void>;
}

type Renewal = 'held' | 'lost';

/**
 * Holds `claim`, made by a request that sent its claim at `claimSentAt` (performance.now(), taken
 * before the claim's transaction began): the lease then runs until at least claimSentAt +
 * CLAIM_LEASE_SECONDS of real time, whatever the api's and the database's clocks say, because the
 * database set it from its own now() after that moment. Only durations are measured here, never
 * instants compared across clocks.
 */
export function holdClaim(
  db: Db,
  claim: ClaimRef,
  claimSentAt: number,
  log: ClaimLeaseLog,
  context: Record<string, unknown>,
): HeldClaim {
  let heldSince = claimSentAt;
  let lost = false;
  let settled = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let renewing: Promise<Renewal> | undefined;

  const noteLost = (during: string) => {
    if (lost) return;
    lost = true;
    log.warn(
      { event: 'idempotency_claim_lost', ...context, during },
      'the Idempotency-Key claim was taken over by another request (this one was not renewed in time): ' +
        'its outcome is not written; the key answers what the new holder decides',
    );
  };

  const renewOnce = (): Promise<Renewal> => {
    renewing ??= (async () => {
      const sentAt = performance.now();
      try {
        if (!(await renewIdempotencyClaim(db, claim, CLAIM_LEASE_SECONDS))) {
          noteLost('renewal');
          return 'lost';
        }
        heldSince = sentAt;
        return 'held';
      } finally {
        renewing = undefined;
      }
    })();
    return renewing;
  };

  // Each renewal is due CLAIM_RENEW_MS after the last claim or renewal was sent (heldSince), not
  // after the previous one answered: a claim that took long to answer (a lock wait, a slow database)
  // is renewed at once rather than after its lease may have run out.
  const schedule = (atLeastMs = 0) => {
    if (stopped || lost) return;
    clearTimeout(timer);
    timer = setTimeout(tick, Math.max(atLeastMs, heldSince + CLAIM_RENEW_MS - performance.now()));
    timer.unref();
  };
  const tick = () => {
    // Renewed meanwhile (by confirm): the next one is due later.
    if (performance.now() - heldSince < CLAIM_RENEW_MS) return schedule();
    renewOnce().then(
      () => schedule(),
      (err: unknown) => {
        // The database may be back before the lease runs out: keep trying, every CLAIM_RENEW_MS, and
        // say so.
        log.warn(
          { event: 'idempotency_claim_renewal_failed', ...context, err },
          'could not renew the Idempotency-Key claim',
        );
        schedule(CLAIM_RENEW_MS);
      },
    );
  };

  const stopRenewing = async () => {
    stopped = true;
    clearTimeout(timer);
    await renewing?.catch(() => undefined);
  };

  /** Writes an outcome through the fence; a holder fenced out says so in its log. */
  const settle = async (during: string, write: () => Promise<boolean>): Promise<boolean> => {
    await stopRenewing();
    settled = true;
    const applied = await write();
    if (!applied) noteLost(during);
    return applied;
  };

  schedule();
  return {
    async confirm() {
      for (let round = 0; round < 3; round += 1) {
        if (lost) break;
        if (performance.now() - heldSince < CLAIM_LEASE_SECONDS * 1000 - START_MARGIN_MS) return;
        await renewOnce();
      }
      if (lost) throw new IdempotencyClaimLostError('the key was taken over by another request');
      // Renewals that succeed but each take longer than the margin: too slow to promise anything.
      // Nothing is started; end() hands the claim on at once, and the partner retries (503).
      throw new IdempotencyClaimUnconfirmedError(
        'could not confirm the Idempotency-Key claim: the database answers too slowly',
      );
    },
    record: (catchUp, run) => settle('record', () => markIdempotencyKeyRecorded(db, claim, catchUp, run)),
    refuse: (refusal) => settle('refuse', () => markIdempotencyKeyRefused(db, claim, refusal)),
    release: () => settle('release', () => releaseIdempotencyKey(db, claim)),
    async end() {
      await stopRenewing();
      if (settled || lost) return;
      settled = true;
      try {
        if (!(await endIdempotencyLease(db, claim))) noteLost('end');
      } catch (err) {
        // Then the lease runs out by itself within CLAIM_LEASE_SECONDS.
        log.warn(
          { event: 'idempotency_claim_renewal_failed', ...context, err },
          'could not end the Idempotency-Key lease',
        );
      }
    },
  };
}
