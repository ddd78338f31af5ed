import { createHash, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { claimIdempotencyKey } from '../../adapters/db/idempotency-repo';
import { catchUpPayout } from '../../adapters/db/payouts-repo';
import type { Db } from '../../adapters/db/pool';
import { maxExpectedUsdtUnits } from '../../domain/money';
import type { PayoutRecord } from '../../domain/payout';
import {
  ChargeRefusedError,
  IdempotencyClaimLostError,
  IdempotencyConflictError,
  ReceiverRefusedError,
  SCREENING_REFUSALS,
  ScreeningUnavailableRequestError,
  TreasuryCannotSendError,
  type ScreeningRefusal,
} from '../../domain/payout-request-errors';
import {
  ScreeningUnavailableError,
  type ReceiverScreening,
  type ScreeningSource,
} from '../../domain/screening';
import {
  idempotentPayoutWorkflowId,
  payoutWorkflowId,
  type PayoutSettings,
  type PayoutWorkflowInput,
} from '../../workflows/payout.contract';
import { quoteMinAmount, type MinAmountDeps } from '../quotes/min-amount';
import { CLAIM_LEASE_SECONDS, holdClaim, type HeldClaim } from './claim-lease';
import {
  chargeFromApi,
  resumeStartedPayout,
  startWithCharge,
  type PayoutRequestLog,
  type StartPayoutDeps,
} from './start-payout';
import type { CreatePayoutBody } from './payout.schemas';

export interface CreatePayoutDeps extends MinAmountDeps, StartPayoutDeps {
  db: Db;
  settings: PayoutSettings;
  /** A settlement more than this fraction above the payment at the quote's spot rate is alerted. */
  aboveQuoteTolerance: string;
  /** The receiver's screening, before anything is created (docs/decisions.md D45). */
  screening: ReceiverScreening;
  screeningCounters: { refused(source: ScreeningSource): void; unavailable(): void };
  /** Treasury mode: whether the treasury can send now; new payouts are refused while it cannot. */
  treasuryHealth?: {
    treasuryCanSend(): Promise<{ ok: true } | { ok: false; reason: string; detail: string }>;
  };
}

const IDEMPOTENCY_TTL_SECONDS = 24 * 60 * 60;

export type CreatePayoutResult =
  { kind: 'created'; payout: PayoutRecord } | { kind: 'replay'; payoutId: string };

/**
 * A new payout from a validated request: claim the Idempotency-Key, quote, start the payout workflow
 * and wait (update-with-start) until its PIX charge exists.
 *
 * The claim is a lease this request renews while it works (./claim-lease.ts, docs/decisions.md D73):
 * a request that dies with its api is overtaken by the partner's retry within CLAIM_LEASE_SECONDS,
 * and a request that is only slow may be overtaken too. Both then hold the same payout id and
 * workflow id, and the workflow is started with USE_EXISTING, so they make at most one payout
 * between them; the token fences the overtaken one out of every write to the key, so it can neither
 * free the key (which would let a third request start a second payout under a new workflow id) nor
 * overwrite what the new holder decides. Every interleaving, and why it is safe: D73.
 */
export async function createPayout(
  deps: CreatePayoutDeps,
  partnerId: string,
  body: CreatePayoutBody,
  idempotencyKey: string | undefined,
  log: PayoutRequestLog,
): Promise<CreatePayoutResult> {
  if (idempotencyKey === undefined) {
    const payoutId = randomUUID();
    return screenQuoteAndStart(deps, partnerId, body, log, {
      payoutId,
      workflowId: payoutWorkflowId(payoutId),
    });
  }
  // Overtaken (its claim taken over by a request that was let in while this one was slow), the
  // request asks for the key again, as the partner's retry would, and answers what the key says now:
  // the new holder's payout or refusal, 409 while it is still in flight. Once only: overtaken twice,
  // it answers 409.
  try {
    return await createWithKey(deps, partnerId, body, idempotencyKey, log);
  } catch (err) {
    if (!(err instanceof IdempotencyClaimLostError)) throw err;
    return createWithKey(deps, partnerId, body, idempotencyKey, log);
  }
}

async function createWithKey(
  deps: CreatePayoutDeps,
  partnerId: string,
  body: CreatePayoutBody,
  idempotencyKey: string,
  log: PayoutRequestLog,
): Promise<CreatePayoutResult> {
  // The key is claimed first, so a duplicate of a request still in flight is always a conflict,
  // whatever the quote or the minimum check would say about it.
  const newPayoutId = randomUUID();
  const keyHash = createHash('sha256').update(idempotencyKey).digest('hex');
  const baseId = idempotentPayoutWorkflowId(partnerId, keyHash);
  const claimSentAt = performance.now();
  const claim = await claimIdempotencyKey(deps.db, {
    partnerId,
    key: idempotencyKey,
    newPayoutId,
    // After expiry the same key starts a new payout: its workflow id must be new as well.
    newWorkflowId: `${baseId}-${newPayoutId.slice(0, 8)}`,
    ttlSeconds: IDEMPOTENCY_TTL_SECONDS,
    leaseSeconds: CLAIM_LEASE_SECONDS,
  });
  if (claim.kind === 'in_flight')
    throw new IdempotencyConflictError('the key is held by a request in flight');
  if (claim.kind === 'recorded') return { kind: 'replay', payoutId: claim.payoutId };
  if (claim.kind === 'refused') throw replayedRefusal(claim.refusal);
  const { payoutId, workflowId } = claim;
  // Renewed from here until the request ends, the charge wait included.
  const held = holdClaim(deps.db, { partnerId, key: idempotencyKey, token: claim.token }, claimSentAt, log, {
    partnerId,
    payoutId,
    resumed: claim.resumed === true,
  });
  try {
    let previousHolderCannotStart = !claim.resumed;
    // The abandoned request may have started the payout already: then it is that payout's answer,
    // whatever screening or the quote would say now, and the key is never freed for a second one.
    if (claim.resumed) {
      const started = await resumeStartedPayout(deps, workflowId);
      // One whose charge was refused was never shown to the partner: it is refused again below.
      if (started && started.failureReason !== 'charge_creation_failed') {
        await held.record(started);
        return { kind: 'created', payout: started };
      }
      // Its workflow has ended with the charge refused: no request can start a payout under it now.
      if (started) previousHolderCannotStart = true;
    }
    return await screenQuoteAndStart(deps, partnerId, body, log, {
      payoutId,
      workflowId,
      claim: { held, mayFreeKey: previousHolderCannotStart },
    });
  } finally {
    await held.end();
  }
}

interface PayoutTarget {
  payoutId: string;
  workflowId: string;
  /**
   * The Idempotency-Key's claim, if the request has a key. `mayFreeKey`: whether the claim may be
   * deleted when this request creates nothing. Only when no earlier holder of the claim can still
   * start its workflow: this request made the claim itself, or the workflow has ended already.
   */
  claim?: { held: HeldClaim; mayFreeKey: boolean };
}

async function screenQuoteAndStart(
  deps: CreatePayoutDeps,
  partnerId: string,
  body: CreatePayoutBody,
  log: PayoutRequestLog,
  target: PayoutTarget,
): Promise<CreatePayoutResult> {
  const { payoutId, workflowId, claim } = target;
  let mayFreeKey = claim?.mayFreeKey ?? false;
  // Nothing was started for a refused request: free the key so the partner's corrected retry works.
  // A claim taken over from a request that may be alive still (only slow) is not freed: that request
  // could start the payout yet, and a freed key would give the retry a second one under a new
  // workflow id. Its lease ends instead: the retry takes it over at once, finds whatever that
  // request started, or else starts the payout itself, under the same workflow id.
  const releaseClaim = async () => {
    if (!claim) return;
    if (mayFreeKey) await claim.held.release();
    else await claim.held.end();
  };

  // Treasury mode: no payer pays into a payout the treasury cannot settle. A chain that cannot be read
  // now is no verdict on the treasury: the payout would wait for it safely, so it is not refused.
  if (deps.treasuryHealth) {
    const health = await deps.treasuryHealth.treasuryCanSend().catch(() => undefined);
    if (health && !health.ok) {
      await releaseClaim();
      log.warn(
        { event: 'treasury_cannot_send', partnerId, reason: health.reason, detail: health.detail },
        'payout refused at POST: the treasury cannot send USDT',
      );
      throw new TreasuryCannotSendError(`treasury cannot send: ${health.reason}`);
    }
  }

  // Before any charge exists: a flagged receiver is refused for good (the key keeps the refusal), an
  // unreadable source refuses for now (the key is freed for the retry).
  let verdict: Awaited<ReturnType<ReceiverScreening['screen']>>;
  try {
    verdict = await deps.screening.screen(body.receiver_wallet);
  } catch (err) {
    await releaseClaim();
    if (!(err instanceof ScreeningUnavailableError)) throw err;
    deps.screeningCounters.unavailable();
    throw new ScreeningUnavailableRequestError(err.message);
  }
  if (verdict.kind === 'flagged') {
    const refusal: ScreeningRefusal =
      verdict.source === 'token_blocklist' ? 'receiver_blocked_by_issuer' : 'receiver_failed_screening';
    deps.screeningCounters.refused(verdict.source);
    log.warn(
      { event: 'receiver_refused', partnerId, source: verdict.source, detail: verdict.detail, payoutId },
      'payout refused at POST: screening flagged the receiver; nothing was created',
    );
    // Overtaken, this request's refusal is not the key's answer: the retry gets the new holder's.
    if (claim && !(await claim.held.refuse(refusal)))
      throw new IdempotencyClaimLostError('the key was taken over by another request');
    throw new ReceiverRefusedError(refusal, `receiver flagged by ${verdict.source}`);
  }

  let minUnits: bigint;
  let rate: string;
  try {
    ({ minAmountUsdtUnits: minUnits, rate } = await quoteMinAmount(deps, body.amount_brl));
  } catch (err) {
    await releaseClaim();
    throw err;
  }

  const input: PayoutWorkflowInput = {
    payoutId,
    partnerId,
    amountCentavos: body.amount_brl.toString(),
    minAmountUsdtUnits: minUnits.toString(),
    maxExpectedUsdtUnits: maxExpectedUsdtUnits(body.amount_brl, rate, deps.aboveQuoteTolerance).toString(),
    pixKey: body.pix_key,
    pixKeyType: body.pix_key_type,
    receiverWallet: body.receiver_wallet,
    createdAt: new Date().toISOString(),
    settings: deps.settings,
  };
  // The charge first (idempotent on the payout id), then the claim's confirmation right before each
  // start: an overtaken request does not start the payout, the key is the new holder's to answer.
  const chargeAskedAt = performance.now();
  const charge = await chargeFromApi(deps, input, log);
  const waitMs = deps.chargeWaitMs - (performance.now() - chargeAskedAt);
  const { payout, run } = await startWithCharge(deps, workflowId, input, charge, waitMs, log, async () => {
    await claim?.held.confirm();
  });
  // Only a payout whose charge the provider refused was never shown: any other FAILED one (a racing
  // request's payout, joined) exists for the partner, and the key keeps it.
  if (payout.status === 'FAILED' && payout.failureReason === 'charge_creation_failed') {
    // The partner never saw this payout: free the key so that retrying it makes a new attempt
    // instead of replaying a failure for 24 h. Its workflow has ended, so whoever else holds or held
    // the claim can only join that failure, never start a payout under it.
    mayFreeKey = true;
    await releaseClaim();
    throw new ChargeRefusedError(`payout ${payout.id}: the provider refused its PIX charge`);
  }
  // The read model's catch-up (see catchUpPayout) and the key's record are one statement with a key.
  // Overtaken, this is still the key's payout (the same workflow id): the new holder records it.
  // With the api's charge (D81) no task of the workflow may have run yet: the row is written here.
  if (claim) await claim.held.record(payout, run);
  else await catchUpPayout(deps.db, payout, run);
  return { kind: 'created', payout };
}

/** The refusal a key was given, again: a replay answers what the first request was answered. */
export function replayedRefusal(refusal: string): ReceiverRefusedError {
  const code = (SCREENING_REFUSALS as readonly string[]).includes(refusal)
    ? (refusal as ScreeningRefusal)
    : 'receiver_failed_screening';
  return new ReceiverRefusedError(code, `replay of a request refused by screening (${refusal})`);
}
