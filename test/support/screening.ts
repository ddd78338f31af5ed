// What a test needs to put a receiver on the token's blocklist or the sanctions oracle's list (and
// take it off), signed by the local owner. The functions live beside the local chain's setup, where
// `npm run local:screening` uses them too; a stack's `usdtAddress` and `sanctionsOracleAddress` name
// the contracts.
export {
  blockOnToken,
  sanctionOnOracle,
  screeningStatus,
  unblockOnToken,
  unsanctionOnOracle,
} from '../../dev/local/screening-lists';
