import type { Db } from '../../src/adapters/db/pool';
import { createChainAndDenylistScreening } from '../../src/adapters/screening/receiver-screening';
import type { ReceiverScreening } from '../../src/domain/screening';

/**
 * Screening by the operators' denylist alone (real PostgreSQL, no chain): for api tests that have no
 * EVM node. Tests of the on-chain sources screen through a real anvil (test/e2e/screening.test.ts).
 */
export function denylistScreening(db: Db): ReceiverScreening {
  return createChainAndDenylistScreening({
    rpcUrl: 'http://127.0.0.1:9',
    db,
    sources: ['denylist'],
    tokenAddress: '0x0000000000000000000000000000000000000000',
    oracleAddress: '0x0000000000000000000000000000000000000000',
    cacheSeconds: 0,
  });
}
