/**
 * The provider contract: what the service relies on from any PIX provider (src/adapters/provider/types.ts,
 * PixCollection), run against each provider's client and sandbox over real HTTP. A new provider is added by
 * giving this suite a subject and passing it (docs/decisions.md D46).
 */
import { randomUUID } from 'node:crypto';

import { parseBrCode } from '../../src/domain/brcode';
import { ProviderError, type PixCollection } from '../../src/adapters/provider/types';

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
