import { sendCallback, type CallbackSenderOptions } from '../adapters/callbacks/http-sender';
import {
  closeCallbackEvent,
  recordCallbackAttempt,
  type CallbackEventRef,
} from '../adapters/db/callbacks-repo';
import { findPartnerCallback } from '../adapters/db/partners-repo';
import type { Db } from '../adapters/db/pool';
import type { SecretBox } from '../adapters/secrets/secret-box';
import { callbackBody } from '../domain/callback-event';
import type { PayoutRecord, SettlementNetwork } from '../domain/payout';
import type { Logger } from '../observability/logger';

export interface CallbackActivityDeps {
  db: Db;
  logger: Logger;
  sender: CallbackSenderOptions;
  /** Opens the partners' stored signing secrets (PAYLOAD_ENCRYPTION_KEY). */
  secrets: SecretBox;
  /** The network a completed payout names in its body. */
  network: SettlementNetwork;
}

export interface CallbackAttemptRequest extends CallbackEventRef {
  /** 1-based, counted by the delivery workflow. */
  attempt: number;
  /** The payout as it ended; the body is its partner-facing shape. */
  payout?: PayoutRecord;
  /** The body itself, as attempts scheduled by earlier workflow code carry it. */
  body?: string;
}

export type CallbackAttemptOutcome =
  | { kind: 'delivered'; statusCode: number }
  | { kind: 'failed'; statusCode?: number; error?: string }
  | { kind: 'not_configured' };

function bodyOf(req: CallbackAttemptRequest, network: SettlementNetwork): string {
  if (req.payout) return callbackBody(req.event, req.payout, network);
  if (req.body !== undefined) return req.body;
  throw new Error(`callback attempt ${req.eventId} carries neither its payout nor its body`);
}

/** Keeps a partner's own tokens in the query string out of the operator's tables and logs. */
function withoutQuery(url: string): string {
  if (!URL.canParse(url)) return '(invalid URL)';
  const u = new URL(url);
  return `${u.origin}${u.pathname}`;
}

/**
 * Partner callback delivery. The partner's URL and secret are read at every attempt, never carried
 * in workflow history: a URL set or corrected after the payout started is used, a cleared one stops
 * the deliveries, and the secret stays out of Temporal.
 */
export function createCallbackActivities({ db, logger, sender, secrets, network }: CallbackActivityDeps) {
  return {
    async sendPartnerCallback(req: CallbackAttemptRequest): Promise<CallbackAttemptOutcome> {
      const ref: CallbackEventRef = {
        eventId: req.eventId,
        partnerId: req.partnerId,
        payoutId: req.payoutId,
        event: req.event,
      };
      const target = await findPartnerCallback(db, req.partnerId, secrets);
      if (!target) {
        await closeCallbackEvent(db, ref, 'skipped');
        logger.info({ ...ref, attempt: req.attempt }, 'partner has no callback configured: callback skipped');
        return { kind: 'not_configured' };
      }
      const startedAt = new Date();
      const result = await sendCallback(
        {
          url: target.url,
          secret: target.secret,
          ...(target.previousSecret ? { previousSecret: target.previousSecret } : {}),
          eventId: req.eventId,
          body: bodyOf(req, network),
        },
        sender,
      );
      await recordCallbackAttempt(db, {
        ...ref,
        attempt: req.attempt,
        url: withoutQuery(target.url),
        delivered: result.delivered,
        startedAt,
        durationMs: result.durationMs,
        ...(result.statusCode === undefined ? {} : { statusCode: result.statusCode }),
        ...(result.error === undefined ? {} : { error: result.error }),
        ...(result.responseExcerpt === undefined ? {} : { responseExcerpt: result.responseExcerpt }),
      });
      if (result.delivered) {
        logger.info(
          { ...ref, attempt: req.attempt, statusCode: result.statusCode },
          'partner callback delivered',
        );
        return { kind: 'delivered', statusCode: result.statusCode! };
      }
      logger.warn(
        {
          ...ref,
          attempt: req.attempt,
          statusCode: result.statusCode,
          error: result.error,
          // What the URL guard found; the partner's delivery log has only `error` (D69).
          ...(result.errorDetail === undefined ? {} : { detail: result.errorDetail }),
        },
        'partner callback attempt failed',
      );
      return {
        kind: 'failed',
        ...(result.statusCode === undefined ? {} : { statusCode: result.statusCode }),
        ...(result.error === undefined ? {} : { error: result.error }),
      };
    },

    async givePartnerCallbackUp(req: CallbackEventRef & { attempts: number }): Promise<void> {
      const { attempts, ...ref } = req;
      await closeCallbackEvent(db, ref, 'gave_up');
      // An error-level event: money moved and the partner was never told; someone should call them.
      logger.error(
        { ...ref, callbackEvent: ref.event, event: 'partner_callback_gave_up', attempts },
        'partner callback not delivered: retries exhausted',
      );
    },
  };
}

export type CallbackActivities = ReturnType<typeof createCallbackActivities>;
