/**
 * The provider-event workflow's contract: one workflow per webhook token, which fetches the event back
 * from the provider and signals the payout it names.
 */

export interface ProviderEventInput {
  provider: string;
  token: string;
}

/** The workflow's result: what became of the event. */
export type ProviderEventOutcome =
  | 'delivered'
  | 'unknown_token'
  | 'unreadable_event'
  | 'unknown_payout'
  | 'late_payment'
  | 'duplicate_payment'
  | 'late_settlement'
  | 'ignored';

/**
 * One provider-event workflow per delivered token, so a repeat cannot start a second one. Built from
 * a hash of the token (hex SHA-256, computed by the api): the token is the key to the provider's
 * event, and workflow ids are shown to every operator of the Temporal namespace.
 */
export function providerEventWorkflowId(provider: string, tokenHash: string): string {
  return `provider-event-${provider}-${tokenHash}`;
}
