import type { defineSearchAttributeKey } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { Logger } from '../observability/logger';
import { PAYOUT_SEARCH_ATTRIBUTES } from '../workflows/search-attributes';

/** The type names the `temporal` CLI takes in `--search-attribute Name=Type`. */
export type SearchAttributeTypeName =
  'Keyword' | 'Text' | 'Int' | 'Double' | 'Bool' | 'Datetime' | 'KeywordList';

type OperatorService = temporal.api.operatorservice.v1.OperatorService;
type Keys = readonly ReturnType<typeof defineSearchAttributeKey>[];

/**
 * Registers the payout search attributes on a server that lacks them. The payout workflow upserts
 * them on every transition, and a server refuses an upsert of a key it does not know (the workflow
 * task then fails over and over), so every server a payout workflow runs on needs them: the dev
 * server gets them as start-up flags, the time-skipping test server through this call.
 */
export async function registerSearchAttributes(
  operator: OperatorService,
  namespace: string,
  keys: Keys = PAYOUT_SEARCH_ATTRIBUTES,
): Promise<void> {
  await operator.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(
      keys.map((key) => [key.name, temporal.api.enums.v1.IndexedValueType[`INDEXED_VALUE_TYPE_${key.type}`]]),
    ),
  });
}

/**
 * The payout search attributes the namespace lacks, or undefined when the server does not let us
 * look (Temporal Cloud answers the operator service with "unauthorized"; there they are managed
 * with tcld or the Cloud UI).
 */
export async function missingSearchAttributes(
  operator: OperatorService,
  namespace: string,
  keys: Keys = PAYOUT_SEARCH_ATTRIBUTES,
): Promise<string[] | undefined> {
  try {
    const { customAttributes } = await operator.listSearchAttributes({ namespace });
    return keys.map((key) => key.name).filter((name) => !(name in (customAttributes ?? {})));
  } catch {
    return undefined;
  }
}

const CLI_TYPES: Record<Keys[number]['type'], SearchAttributeTypeName> = {
  TEXT: 'Text',
  KEYWORD: 'Keyword',
  INT: 'Int',
  DOUBLE: 'Double',
  BOOL: 'Bool',
  DATETIME: 'Datetime',
  KEYWORD_LIST: 'KeywordList',
};

/** The `--search-attribute` flags of `temporal server start-dev` (the local launcher). */
export function devServerSearchAttributes(
  keys: Keys = PAYOUT_SEARCH_ATTRIBUTES,
): Record<string, SearchAttributeTypeName> {
  return Object.fromEntries(keys.map((key) => [key.name, CLI_TYPES[key.type]]));
}

/** The commands that register them on a self-hosted cluster, for error messages and docs/operations.md. */
export function searchAttributeCommands(namespace: string, keys: Keys = PAYOUT_SEARCH_ATTRIBUTES): string[] {
  return keys.map(
    (key) =>
      `temporal operator search-attribute create --namespace ${namespace} --name ${key.name} --type ${CLI_TYPES[key.type]}`,
  );
}

/**
 * Fails start-up when the namespace lacks a payout search attribute: otherwise every payout
 * workflow task would fail on its first upsert, and payouts would wait in PENDING with no visible
 * cause. Where the server does not let us look, the worker starts and says so.
 */
export async function requireSearchAttributes(
  operator: OperatorService,
  namespace: string,
  logger: Logger,
): Promise<void> {
  const missing = await missingSearchAttributes(operator, namespace);
  if (missing === undefined) {
    logger.warn(
      { namespace },
      `could not list search attributes; make sure ${PAYOUT_SEARCH_ATTRIBUTES.map((k) => k.name).join(', ')} exist`,
    );
    return;
  }
  if (missing.length > 0) {
    const commands = searchAttributeCommands(
      namespace,
      PAYOUT_SEARCH_ATTRIBUTES.filter((k) => missing.includes(k.name)),
    );
    throw new Error(
      `namespace "${namespace}" lacks the search attribute(s) ${missing.join(', ')}; register them first:\n  ${commands.join('\n  ')}`,
    );
  }
}
