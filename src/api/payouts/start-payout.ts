import {
  WithStartWorkflowOperation,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  type Client,
} from '@temporalio/client';
import { performance } from 'node:perf_hooks';
import type { PayoutRun } from '../../adapters/db/payouts-repo';
import type { PixCollection } from '../../adapters/provider/types';
import { formatCentavos } from '../../domain/money';
import type { PayoutRecord } from '../../domain/payout';
import { ChargeTimeoutError } from '../../domain/payout-request-errors';
import {
  awaitChargeUpdate,
  getPayoutQuery,
  openingRecord,
  type PayoutWorkflowInput,
  type PixCharge,
} from '../../workflows/payout.contract';
import { payoutWorkflow } from '../../workflows/payout.workflow';
import { payoutSearchAttributes, payoutSummary } from '../../workflows/search-attributes';

/**
 * Starting a payout's workflow with its PIX charge, for POST (create-payout.ts): the api's own charge
 * and plain start when it can (docs/decisions.md D81), update-with-start otherwise, and the claim
 * taken over from an abandoned request.
 */

/**
 * How long POST waits for the PIX charge before answering 503 (the workflow keeps going): the
 * longest wait of the api, which its stop grace period must outlast (docker-compose.yml).
 */
export const CHARGE_WAIT_MS = 20_000;

/**
 * How long the api's own charge request may take (D81) before the workflow is left to create the
 * charge, within CHARGE_WAIT_MS: the rest of that wait is the workflow's.
 */
export const API_CHARGE_WAIT_MS = 5_000;

export type ChargePath = 'api' | 'workflow';

/** The longest the plain start of a payout with the api's charge may take before update-with-start decides. */
const PLAIN_START_WAIT_MS = 5_000;

export interface StartPayoutDeps {
  temporal: Client;
  taskQueue: string;
  /** How long POST waits for the PIX charge before answering 503 (the workflow keeps going). */
  chargeWaitMs: number;
  /**
   * Creates the PIX charge from the api before the workflow starts (D81): the same request,
   * idempotent on the payout id, that the workflow's first task would make. Absent (API Pix: the
   * api holds no mTLS client), the workflow creates it and POST waits for its first task.
   */
  createCharge?: PixCollection['createCharge'];
  /** Counts new payouts by who created their charge: the api (D81) or the workflow. */
  chargePaths?: { counted(path: ChargePath): void };
}

/**
 * Where a POST writes its warnings (the request's logger): a screening refusal, a treasury that cannot
 * send, a fallback from the api's charge to the workflow's, its key claim's lease.
 */
export type PayoutRequestLog = { warn(o: object, msg: string): void };

/**
 * The api's request for the PIX charge (D81), made before the claim on the key is confirmed: it is
 * idempotent on the payout id, so a request overtaken meanwhile only asked for the charge its
 * successor gets too. Undefined when the api has no charge creator, or when the provider did not
 * answer within API_CHARGE_WAIT_MS, refused, or failed: the workflow then asks again and decides.
 */
export async function chargeFromApi(
  deps: Pick<StartPayoutDeps, 'createCharge'>,
  input: PayoutWorkflowInput,
  log: PayoutRequestLog,
): Promise<PixCharge | undefined> {
  if (!deps.createCharge) return undefined;
  let timer: NodeJS.Timeout | undefined;
  const asked = deps.createCharge({
    externalId: input.payoutId,
    amountCentavos: BigInt(input.amountCentavos),
    payerPixKey: input.pixKey,
    payerPixKeyType: input.pixKeyType,
    expiresInSeconds: input.settings.chargeExpirySeconds,
  });
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), API_CHARGE_WAIT_MS);
  });
  try {
    const charge = await Promise.race([asked, late]);
    if (!charge) {
      asked.catch(() => undefined);
      log.warn(
        { event: 'api_charge_slow', payoutId: input.payoutId, waitedMs: API_CHARGE_WAIT_MS },
        'the provider did not answer the api charge in time; the workflow creates the charge',
      );
      return undefined;
    }
    return { chargeId: charge.chargeId, pixCopyPaste: charge.pixCopyPaste, expiresAt: charge.expiresAt };
  } catch (err) {
    log.warn(
      { event: 'api_charge_failed', payoutId: input.payoutId, error: String(err) },
      'the api could not create the charge; the workflow creates it or fails the payout',
    );
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The payout's workflow started, and the payout with its PIX charge as the workflow holds it.
 *
 * With the api's charge (D81) the workflow is started with the charge in its input and POST answers
 * without waiting for a worker: the start is durable, so the charge is the workflow's from then on,
 * and the answer is the record the workflow opens with; `run` names the run for the read model's row,
 * which the api writes itself since no task of the workflow may have run yet. Otherwise, or when the
 * start fails or finds the workflow started already, the update-with-start below decides as before
 * D81: it joins the workflow if it runs, or starts it (with the api's charge, if any) and waits for
 * its first task to hold the charge (the provider answers the api's request again, idempotent on the
 * payout id) or to fail the payout (`charge_creation_failed`, 502). `waitMs`: what is left of
 * CHARGE_WAIT_MS. `confirmStart` runs right before each start, the fallback's included: a claim on the
 * key may have been overtaken while a failed start took its time (D73).
 */
export async function startWithCharge(
  deps: StartPayoutDeps,
  workflowId: string,
  input: PayoutWorkflowInput,
  charge: PixCharge | undefined,
  waitMs: number,
  log: PayoutRequestLog,
  confirmStart: () => Promise<void>,
): Promise<{ payout: PayoutRecord; run?: PayoutRun }> {
  const began = performance.now();
  const startInput = charge ? { ...input, charge } : input;
  if (charge) {
    await confirmStart();
    try {
      // A start that takes longer is an unknown outcome, which the update below joins within what is
      // left of POST's wait (at least half of it).
      const startDeadline = Math.min(PLAIN_START_WAIT_MS, (waitMs - (performance.now() - began)) / 2);
      const handle = await deps.temporal.withDeadline(Date.now() + Math.max(1, startDeadline), () =>
        deps.temporal.workflow.start(payoutWorkflow, {
          ...startOptions(deps.taskQueue, workflowId, startInput),
          // Started already (a racing request of the same key): the update below joins it.
          workflowIdConflictPolicy: 'FAIL',
        }),
      );
      deps.chargePaths?.counted('api');
      return { payout: openingRecord(startInput), run: { workflowId, runId: handle.firstExecutionRunId } };
    } catch (err) {
      // Whatever the start answered, it may have started the workflow: the update-with-start joins it
      // if so, and starts it (with the same charge) if not.
      if (!(err instanceof WorkflowExecutionAlreadyStartedError))
        log.warn(
          { event: 'payout_start_unsure', payoutId: input.payoutId, error: String(err) },
          'payout start failed or unknown; joining or starting it with update-with-start',
        );
    }
  }
  await confirmStart();
  deps.chargePaths?.counted('workflow');
  const left = Math.max(1, waitMs - (performance.now() - began));
  return { payout: await startAndAwaitCharge(deps, workflowId, startInput, left) };
}

async function startAndAwaitCharge(
  deps: StartPayoutDeps,
  workflowId: string,
  input: PayoutWorkflowInput,
  waitMs: number,
): Promise<PayoutRecord> {
  const startWorkflowOperation = new WithStartWorkflowOperation(payoutWorkflow, {
    ...startOptions(deps.taskQueue, workflowId, input),
    // A racing request for the same payout joins the running workflow instead of failing.
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
  try {
    return await withChargeDeadline(
      deps.temporal.workflow.executeUpdateWithStart(awaitChargeUpdate, { startWorkflowOperation }),
      waitMs,
      input.payoutId,
    );
  } catch (err) {
    // The payout's workflow already ran to its end (a resumed claim): its final state is the answer.
    if (err instanceof WorkflowExecutionAlreadyStartedError) {
      return deps.temporal.workflow.getHandle(workflowId).query(getPayoutQuery);
    }
    throw err;
  }
}

/** How every payout workflow is started, whoever starts it. */
function startOptions(taskQueue: string, workflowId: string, input: PayoutWorkflowInput) {
  return {
    workflowId,
    taskQueue,
    args: [input] as [PayoutWorkflowInput],
    workflowIdReusePolicy: 'REJECT_DUPLICATE' as const,
    // What an operator sees in the Web UI list; no PIX key (personal data) in it.
    memo: {
      amountBrl: formatCentavos(BigInt(input.amountCentavos)),
      wallet: shortWallet(input.receiverWallet),
    },
    typedSearchAttributes: payoutSearchAttributes({
      id: input.payoutId,
      status: 'PENDING',
      partnerId: input.partnerId,
    }),
    // The Web UI's summary line: which payout this workflow is, whatever its workflow id.
    staticSummary: payoutSummary({
      id: input.payoutId,
      amountBrl: formatCentavos(BigInt(input.amountCentavos)),
      wallet: shortWallet(input.receiverWallet),
    }),
  };
}

/** `answer`, or ChargeTimeoutError (503) once POST has waited `ms` for the PIX charge. */
async function withChargeDeadline<T>(answer: Promise<T>, ms: number, payoutId: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const began = performance.now();
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new ChargeTimeoutError(
            `payout ${payoutId}: no PIX charge in the last ${Math.round(performance.now() - began)} ms of POST's wait`,
          ),
        ),
      ms,
    );
  });
  try {
    return await Promise.race([answer, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The payout an abandoned request started, once its charge exists; null when it never started. */
export async function resumeStartedPayout(
  deps: StartPayoutDeps,
  workflowId: string,
): Promise<PayoutRecord | null> {
  const handle = deps.temporal.workflow.getHandle(workflowId);
  let running: boolean;
  try {
    running = (await handle.describe()).status.name === 'RUNNING';
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return null;
    throw err;
  }
  // Closed already (its charge refused, or ended since): its final state is the answer.
  if (!running) return handle.query(getPayoutQuery);
  return withChargeDeadline(handle.executeUpdate(awaitChargeUpdate), deps.chargeWaitMs, workflowId);
}

function shortWallet(wallet: string): string {
  return `${wallet.slice(0, 6)}…${wallet.slice(-4)}`;
}
