/**
 * A payment-provider event as the service understands it, after it was fetched back from the
 * provider (never taken from a webhook body). Money stays in decimal strings as the provider sent it.
 */
export type ProviderEvent =
  | {
      type: 'pix.received';
      eventId: string;
      chargeId: string;
      externalId: string;
      occurredAt: string;
      paidAt: string;
      amountBrl: string;
    }
  | {
      type: 'settlement.completed';
      eventId: string;
      chargeId: string;
      externalId: string;
      occurredAt: string;
      txHash: `0x${string}`;
      amountUsdt: string;
      chainId: number;
      confirmedAt: string;
    }
  | {
      type: 'settlement.failed';
      eventId: string;
      chargeId: string;
      externalId: string;
      occurredAt: string;
      failureReason: string;
    };
