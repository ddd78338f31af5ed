/**
 * The read right before the treasury signs (src/activities/payment-hold.ts): a payment the payer is
 * getting back through a devolução is never paid in USDT as well. Against the sandbox's API Pix face
 * over mutual TLS, with its devoluções; nothing is mocked.
 */
import { randomUUID } from 'node:crypto';

import { createPaymentHoldCheck } from '../../src/activities/payment-hold';
import { createLogger } from '../../src/observability/logger';
import { until } from '../support/until';
import { serviceClientOf, startApiPixSandbox, type ApiPixSandbox } from './api-pix-support';

let sandbox: ApiPixSandbox;
beforeAll(async () => {
  sandbox = await startApiPixSandbox();
});
afterAll(() => sandbox?.close());

const institution = () => serviceClientOf(sandbox);

/** A paid charge: its id and the endToEndId of its payment. */
async function paidCharge(): Promise<{ payoutId: string; chargeId: string; paymentEventId: string }> {
  const payoutId = randomUUID();
  const charge = await institution().createCharge({
    externalId: payoutId,
    amountCentavos: 10_000n,
    payerPixKey: '12345678901',
    payerPixKeyType: 'CPF',
    expiresInSeconds: 600,
  });
  const paid = await sandbox.plainCall('POST', '/sandbox/payments', { pix_copy_paste: charge.pixCopyPaste });
  expect(paid.status).toBe(202);
  const status = await institution().getChargeStatus(charge.chargeId);
  return { payoutId, chargeId: charge.chargeId, paymentEventId: status.payments[0]!.eventId };
}

/** Waits until the institution reports the devolução done (DEVOLVIDO). */
async function returnDone(e2eid: string, id: string): Promise<void> {
  await until(`devolução ${id} DEVOLVIDO`, async () => {
    const d = await sandbox.api('GET', `/pix/${e2eid}/devolucao/${id}`);
    return (d.json as { status?: string }).status === 'DEVOLVIDO' ? true : undefined;
  });
}

const check = () =>
  createPaymentHoldCheck({
    collection: institution(),
    logger: createLogger({ level: 'silent', name: 'test' }),
  });

async function failureType(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
  } catch (err) {
    return (err as { type?: string }).type;
  }
  return undefined;
}

it('lets a payment that is held be paid', async () => {
  await expect(check()(await paidCharge())).resolves.toBeUndefined();
});

it('stops a payment that is being returned from being paid, and ends one returned in full', async () => {
  const payment = await paidCharge();
  const devolucao = await sandbox.api('PUT', `/pix/${payment.paymentEventId}/devolucao/med1`, {
    valor: '100.00',
  });
  expect(devolucao.status).toBe(201);
  // EM_PROCESSAMENTO at first: it may yet be refused, the payout waits.
  expect(await failureType(check()(payment))).toBe('PaymentReturned');
  // DEVOLVIDO for the whole amount: final, the payer has it all back.
  await returnDone(payment.paymentEventId, 'med1');
  const final = await check()(payment).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(final).toMatchObject({ type: 'PaymentReturnedInFull', nonRetryable: true });
});

it("keeps waiting on a payment returned in part: what is left is an operator's to settle or refund", async () => {
  const payment = await paidCharge();
  const devolucao = await sandbox.api('PUT', `/pix/${payment.paymentEventId}/devolucao/part1`, {
    valor: '40.00',
  });
  expect(devolucao.status).toBe(201);
  await returnDone(payment.paymentEventId, 'part1');
  expect(await failureType(check()(payment))).toBe('PaymentReturned');
});

it('signs nothing on a charge that cannot be read, nor for a payment it does not list (yet): an unknown', async () => {
  const payment = await paidCharge();
  await sandbox.plainCall('POST', '/sandbox/faults', { route: 'GET /cob/{txid}', status: 503, count: 1 });
  expect(await failureType(check()(payment))).toBe('ChargeStatusUnreadable');
  expect(await failureType(check()({ ...payment, paymentEventId: 'E00000000202611251200abcdefghijk' }))).toBe(
    'ChargeStatusUnreadable',
  );
});
