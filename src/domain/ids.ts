/**
 * The shape of every id the service issues (payouts, partners, refund cases): a UUID, any case. One
 * definition, so the api, the workflows, the CLI and the logs agree on what can be one of ours; a
 * PostgreSQL `uuid` column would otherwise fail the whole query on anything else.
 */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID_PATTERN.test(value);
}

/**
 * Whether a provider's `external_id` names this payout. Payout ids are UUIDs, which are the same id in
 * any case, and PostgreSQL's `uuid` type compares them so: every comparison of an external id goes
 * through here so that the read model, the workflows and the provider client agree.
 */
export function sameExternalId(externalId: string, payoutId: string): boolean {
  return externalId.toLowerCase() === payoutId.toLowerCase();
}
