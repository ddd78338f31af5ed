import { loadApiConfig } from '../../src/config';
import { settlementNetworkOf } from '../../src/main/wiring';

/** The settlement network of the default settings (Arbitrum One): what the test stacks answer with. */
export const DEFAULT_NETWORK = settlementNetworkOf(loadApiConfig({}));
