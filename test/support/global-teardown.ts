import { stopTestInfra, takeTestInfra } from './global-setup';

/** Jest globalTeardown: stops what global-setup.ts started. */
export default async function globalTeardown(): Promise<void> {
  await stopTestInfra(takeTestInfra());
}
