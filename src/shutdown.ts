import type { Logger } from './observability/logger';

/**
 * Runs `stop` once on SIGINT or SIGTERM: stop taking work, drain, close pools. A second SIGINT
 * exits at once, for an operator who does not want to wait; a SIGTERM while draining (a
 * supervisor repeating itself) is ignored so the drain can finish.
 */
export function onShutdown(logger: Logger, stop: () => Promise<void>): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) {
      if (signal !== 'SIGINT') return;
      logger.warn({ signal }, 'second SIGINT: exiting now');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'shutting down');
    stop().catch((err: unknown) => {
      logger.error({ err }, 'shutdown failed');
      process.exit(1);
    });
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
}
