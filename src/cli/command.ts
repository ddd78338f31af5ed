import type { Client, WorkflowService } from '@temporalio/client';
import type { CallbackUrlPolicy } from '../adapters/callbacks/url-guard';
import type { Db } from '../adapters/db/pool';
import type { PixWebhookAdmin } from '../adapters/provider/api-pix/api-pix-provider';
import type { SecretBox } from '../adapters/secrets/secret-box';
import type { SettlementNetwork } from '../domain/payout';

/**
 * What an admin command is (admin.ts runs them): its synopsis and help, its own options (anything
 * else is a usage error) and its plan, on the resources it uses; and the checks of its options that
 * several command groups share.
 */

export type OptionSpec = { type: 'string' } | { type: 'boolean' };
export type Values = Record<string, string | boolean | undefined>;

export interface CommandInfo {
  /** Arguments after the command words, as shown in help ("--id <partner_id>"). */
  args: string;
  summary: string;
  /** More text for the command's own --help. */
  details?: string;
  options: Record<string, OptionSpec>;
}

export interface DbCommand extends CommandInfo {
  uses?: 'database';
  /**
   * Checks the options (a UsageError before any database work) and returns the work itself, whose
   * result is printed as JSON.
   */
  plan(values: Values): (db: Db, context: CommandContext) => Promise<unknown>;
}

/** The Temporal side of a command: the namespace and the worker deployment of the configuration. */
export interface TemporalTarget {
  service: WorkflowService;
  namespace: string;
  deploymentName: string;
}

/** A command on Temporal alone: it neither migrates nor opens the database. */
export interface TemporalCommand extends CommandInfo {
  uses: 'temporal';
  plan(values: Values): (temporal: TemporalTarget) => Promise<unknown>;
}

/** A command on a payout's workflow: the database finds it, Temporal carries the decision to it. */
export interface PayoutWorkflowCommand extends CommandInfo {
  uses: 'database+temporal';
  plan(values: Values): (db: Db, temporal: Client, context: CommandContext) => Promise<unknown>;
}

/** The PIX institution's webhook registration (PIX_PROVIDER=bcb-api-pix). */
export interface ApiPixTarget {
  webhooks: PixWebhookAdmin;
  /** PUBLIC_BASE_URL's webhook route for PROVIDER_NAME, when PUBLIC_BASE_URL is set. */
  defaultWebhookUrl?: string;
}

/** A command on the API Pix institution alone. */
export interface ApiPixCommand extends CommandInfo {
  uses: 'api-pix';
  plan(values: Values): (pix: ApiPixTarget) => Promise<unknown>;
}

export type Command = DbCommand | TemporalCommand | PayoutWorkflowCommand | ApiPixCommand;

/** What the commands work on, opened (and closed again) per command by the process. */
export interface AdminResources {
  /** The database, migrated first. */
  withDatabase(work: (db: Db) => Promise<unknown>): Promise<unknown>;
  /** Temporal alone: the workflow service, the namespace and the worker deployment. */
  withTemporal(work: (temporal: TemporalTarget) => Promise<unknown>): Promise<unknown>;
  /** A Temporal client with the service's payload codec: decisions and answers are payloads like any other. */
  withClient(work: (client: Client) => Promise<unknown>): Promise<unknown>;
  /** The callback URL rules the worker sends by, and the box that seals callback secrets. */
  callbacks(): { policy: CallbackUrlPolicy; secrets: SecretBox };
  /** What a COMPLETED payout names of its chain, as the api shows it. */
  network(): SettlementNetwork;
  /** The API Pix institution (PIX_PROVIDER=bcb-api-pix and its PIX_API_* settings). */
  withApiPix(work: (pix: ApiPixTarget) => Promise<unknown>): Promise<unknown>;
}

/** What a command may also ask for, configured only when it does. */
export type CommandContext = Pick<AdminResources, 'callbacks' | 'network'>;

/** A group of commands by name ("partner create"), in the order the overview lists them. */
export type Commands = Record<string, Command>;

export const str: OptionSpec = { type: 'string' };

/** A mistake in the command line: exit code 2. */
export class UsageError extends Error {}

export function requireOption(values: Values, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`--${name} is required`);
  return value.trim();
}

/** A whole number option from 1 to `max`, or `fallback` when absent. */
export function countOption(values: Values, name: string, fallback: number, max: number): number {
  const text = typeof values[name] === 'string' ? values[name].trim() : String(fallback);
  const count = Number(text);
  if (!/^\d+$/.test(text) || count < 1 || count > max) {
    throw new UsageError(`--${name} must be a whole number from 1 to ${max}`);
  }
  return count;
}

/** An optional instant option: ISO 8601 with a time zone, passed on as given (full precision). */
export function instantOption(values: Values, name: string): string | undefined {
  const value = values[name];
  if (value === undefined) return undefined;
  const text = String(value).trim();
  if (
    !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i.test(text) ||
    Number.isNaN(Date.parse(text))
  ) {
    throw new UsageError(
      `--${name} must be an ISO 8601 date-time with a time zone, e.g. 2026-01-31T00:00:00Z`,
    );
  }
  return text;
}
