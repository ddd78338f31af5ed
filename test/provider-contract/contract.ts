/**
 * The provider contract: what the service relies on from any PIX provider (src/adapters/provider/types.ts,
 * PixCollection), run against each provider's client and sandbox over real HTTP. A new provider is added by
 * giving this suite a subject and passing it (docs/decisions.md D46).
 */
import { randomUUID } from 'node:crypto';

import { parseBrCode } from '../../src/domain/brcode';
import {
  ProviderError,
  type PaymentReturn,
  type PaymentReturns,
  type PixCollection,
} from '../../src/adapters/provider/types';

/** The provider operations a test can make fail, by the client's operation name. */
export type FaultyOperation = 'createCharge' | 'getChargeStatus' | 'cancelCharge' | 'fetchNotification';

export interface ContractSubject {
  /** The service's client for this provider. */
  collection: PixCollection;
  /** The payer's bank pays a charge's code (the sandbox's POST /sandbox/payments). */
  pay(pixCopyPaste: string): Promise<Response>;
  /**
   * The next event token the provider's webhooks delivered, as the service's webhook route reads it
   * (a notification token, an endToEndId), in arrival order.
   */
  nextWebhookToken(): Promise<string>;
  /** The provider answers `status` to the next call of `operation`. */
  failNext(operation: FaultyOperation, status: number): Promise<void>;
  /** Where the provider returns payments (PaymentReturns): its client, and the payer's side of it. */
  returns?: {
    client: PaymentReturns;
    /** The sandbox's record of money back in payers' accounts: the payment's event id of each. */
    payerReturns(): Promise<{ eventId: string; refundId: string }[]>;
    /** The next `count` returns end refused. */
    refuseNext(count: number): Promise<void>;
  };
  close(): Promise<void>;
}

async function rejection(promise: Promise<unknown>): Promise<ProviderError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ProviderError) return err;
    throw err;
  }
  throw new Error('expected a ProviderError, got an answer');
}

export function describeProviderContract(name: string, start: () => Promise<ContractSubject>): void {
  describe(`provider contract: ${name}`, () => {
    let subject: ContractSubject;
    beforeAll(async () => {
      subject = await start();
    });
    afterAll(async () => {
      await subject?.close();
    });

    const charge = (externalId = randomUUID(), expiresInSeconds = 3600) =>
      subject.collection.createCharge({
        externalId,
        amountCentavos: 12_345n,
        payerPixKey: '12345678901',
        payerPixKeyType: 'CPF',
        expiresInSeconds,
      });

    it('creates a charge once per payout, with a BR Code for its amount and the asked expiry', async () => {
      const payoutId = randomUUID();
      const before = Date.now();
      const first = await charge(payoutId);
      expect(parseBrCode(first.pixCopyPaste).transactionAmount ?? '123.45').toBe('123.45');
      const expiresIn = Date.parse(first.expiresAt) - before;
      expect(expiresIn).toBeGreaterThan(3590_000);
      expect(expiresIn).toBeLessThan(3610_000);
      // A retry after a lost answer names the same charge, never a second one.
      expect(await charge(payoutId)).toEqual(first);
      const status = await subject.collection.getChargeStatus(first.chargeId);
      expect(status).toMatchObject({
        chargeId: first.chargeId,
        amountBrl: '123.45',
        status: 'active',
        payments: [],
        expiresAt: first.expiresAt,
      });
      expect(status.externalId.toLowerCase()).toBe(payoutId);
    });

    it('a payment reaches the service as a webhook whose event is read back, and in the status', async () => {
      const payoutId = randomUUID();
      const created = await charge(payoutId);
      expect((await subject.pay(created.pixCopyPaste)).status).toBe(202);
      const token = await subject.nextWebhookToken();
      const event = await subject.collection.fetchNotification(token);
      expect(event).toMatchObject({ type: 'pix.received', chargeId: created.chargeId, amountBrl: '123.45' });
      expect(event.externalId.toLowerCase()).toBe(payoutId);
      const status = await subject.collection.getChargeStatus(created.chargeId);
      expect(status.status).toBe('paid');
      // The same payment under the same event id both ways: the payout applies it once.
      expect(status.payments).toEqual([
        { eventId: event.eventId, amountBrl: '123.45', paidAt: (event as { paidAt: string }).paidAt },
      ]);
    });

    it('removes an unpaid charge once, and the payer can no longer pay it', async () => {
      const created = await charge();
      const removed = await subject.collection.cancelCharge(created.chargeId);
      expect(removed.kind).toBe('removed');
      expect((await subject.collection.cancelCharge(created.chargeId)).kind).toBe('removed');
      expect((await subject.collection.getChargeStatus(created.chargeId)).status).toBe('removed');
      expect((await subject.pay(created.pixCopyPaste)).status).toBeGreaterThanOrEqual(400);
      expect((await subject.collection.getChargeStatus(created.chargeId)).payments).toEqual([]);
    });

    it('does not remove a paid charge: the payment stands', async () => {
      const created = await charge();
      expect((await subject.pay(created.pixCopyPaste)).status).toBe(202);
      await subject.nextWebhookToken();
      expect(await subject.collection.cancelCharge(created.chargeId)).toEqual({ kind: 'already_paid' });
      expect((await subject.collection.getChargeStatus(created.chargeId)).status).toBe('paid');
    });

    it('calls an unpaid charge past its expiry expired', async () => {
      const created = await charge(randomUUID(), 1);
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      const status = await subject.collection.getChargeStatus(created.chargeId);
      expect(status).toMatchObject({ status: 'expired', payments: [] });
    });

    it('says it does not know an event token or a charge, as final answers', async () => {
      const unknownToken = await rejection(
        subject.collection.fetchNotification('E00000000202611251200abcdefghijk'),
      );
      expect({ code: unknownToken.code, retryable: unknownToken.retryable }).toEqual({
        code: 'unknown_notification',
        retryable: false,
      });
      const unknownCharge = await rejection(
        subject.collection.cancelCharge('0123456789abcdef0123456789abcdef'),
      );
      expect({ code: unknownCharge.code, retryable: unknownCharge.retryable }).toEqual({
        code: 'not_found',
        retryable: false,
      });
    });

    describe('returns', () => {
      const returns = () => {
        if (!subject.returns) throw new Error('this provider has no returns');
        return subject.returns;
      };
      const paidEvent = async () => {
        const created = await charge();
        expect((await subject.pay(created.pixCopyPaste)).status).toBe(202);
        return subject.collection.fetchNotification(await subject.nextWebhookToken());
      };
      const untilFinal = async (ref: { refundId: string; eventId: string; returnId: string }) => {
        for (let i = 0; i < 100; i++) {
          const now: PaymentReturn = await returns().client.getReturn(ref);
          if (now.status !== 'returning') return now;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        throw new Error('the return stayed returning');
      };

      it('returns a received payment once per refund id, to the payer, and reads it returned', async () => {
        if (!subject.returns) return;
        const event = await paidEvent();
        const refundId = randomUUID();
        const ask = () =>
          returns().client.requestReturn({
            refundId,
            eventId: event.eventId,
            amountBrl: '123.45',
            reason: 'test',
          });
        const first = await ask();
        expect(first.status).toBe('returning');
        // A retry after a lost answer (a crashed worker) is the same return.
        expect((await ask()).returnId).toBe(first.returnId);
        expect(await untilFinal({ refundId, eventId: event.eventId, returnId: first.returnId })).toEqual({
          returnId: first.returnId,
          status: 'returned',
        });
        expect((await ask()).status).toBe('returned');
        const credited = (await returns().payerReturns()).filter((r) => r.eventId === event.eventId);
        expect(credited).toHaveLength(1);
      });

      it("reads a refused return as refused, with the provider's reason", async () => {
        if (!subject.returns) return;
        const event = await paidEvent();
        await returns().refuseNext(1);
        const refundId = randomUUID();
        const asked = await returns().client.requestReturn({
          refundId,
          eventId: event.eventId,
          amountBrl: '123.45',
          reason: 'test',
        });
        const ended = await untilFinal({ refundId, eventId: event.eventId, returnId: asked.returnId });
        expect(ended).toMatchObject({ status: 'refused', refusalReason: expect.any(String) });
        expect((await returns().payerReturns()).filter((r) => r.eventId === event.eventId)).toEqual([]);
      });

      it('says it does not know a payment, as a final answer', async () => {
        if (!subject.returns) return;
        const err = await rejection(
          returns().client.requestReturn({
            refundId: randomUUID(),
            eventId: 'E00000000202611251200abcdefghijk',
            amountBrl: '1.00',
            reason: 'test',
          }),
        );
        expect({ code: err.code, retryable: err.retryable }).toEqual({
          code: 'unknown_payment',
          retryable: false,
        });
      });
    });

    it.each([
      [503, 'server_error', true],
      [429, 'rate_limited', true],
      [403, 'unauthorized', false],
    ] as const)('an answer %i is %s, retryable %s, for every operation', async (status, code, retryable) => {
      const created = await charge();
      const calls: [FaultyOperation, () => Promise<unknown>][] = [
        ['createCharge', () => charge()],
        ['getChargeStatus', () => subject.collection.getChargeStatus(created.chargeId)],
        ['cancelCharge', () => subject.collection.cancelCharge(created.chargeId)],
      ];
      for (const [operation, call] of calls) {
        await subject.failNext(operation, status);
        const err = await rejection(call());
        expect({ operation, code: err.code, retryable: err.retryable }).toEqual({
          operation,
          code,
          retryable,
        });
      }
    });
  });
}
