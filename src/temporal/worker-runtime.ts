import { createServer } from 'node:net';
import type { LogLevel, LogMetadata, Logger as TemporalLogger } from '@temporalio/common';
import { Runtime } from '@temporalio/worker';
import type { Logger } from '../observability/logger';

/**
 * The Temporal SDK's logs (including the workflows' `log.*` calls, with workflow id and type in
 * their metadata) into the worker's pino logger, so the worker writes one JSON log stream with
 * the same redaction as everything else.
 */
export class PinoTemporalLogger implements TemporalLogger {
  constructor(private readonly logger: Logger) {}

  log(level: LogLevel, message: string, meta: LogMetadata = {}): void {
    const fields = { ...meta };
    // The SDK puts a Date here; pino stamps its own time already.
    delete fields.timestamp;
    // The SDK reports the webpack build of the workflow bundle as one long multi-line INFO message;
    // it is build output, not an event of the service.
    if (level === 'INFO' && message.includes('\n')) level = 'DEBUG';
    switch (level) {
      case 'TRACE':
        return this.logger.trace(fields, message);
      case 'DEBUG':
        return this.logger.debug(fields, message);
      case 'INFO':
        return this.logger.info(fields, message);
      case 'WARN':
        return this.logger.warn(fields, message);
      case 'ERROR':
        return this.logger.error(fields, message);
    }
  }
  trace(message: string, meta?: LogMetadata): void {
    this.log('TRACE', message, meta);
  }
  debug(message: string, meta?: LogMetadata): void {
    this.log('DEBUG', message, meta);
  }
  info(message: string, meta?: LogMetadata): void {
    this.log('INFO', message, meta);
  }
  warn(message: string, meta?: LogMetadata): void {
    this.log('WARN', message, meta);
  }
  error(message: string, meta?: LogMetadata): void {
    this.log('ERROR', message, meta);
  }
}

/**
 * Installs the process-wide Temporal runtime of the worker: SDK and native logs into pino, and the
 * native worker metrics (task latencies, slots, polls, failures) in Prometheus format on a private
 * loopback port, returned as a URL for the ops server to append to its own /metrics. Must run
 * before the first connection is made.
 */
export async function installWorkerRuntime(logger: Logger): Promise<{ metricsUrl: string }> {
  const port = await freeLoopbackPort();
  Runtime.install({
    logger: new PinoTemporalLogger(logger),
    telemetryOptions: {
      logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} },
      metrics: { prometheus: { bindAddress: `127.0.0.1:${port}`, useSecondsForDurations: true } },
    },
  });
  return { metricsUrl: `http://127.0.0.1:${port}/metrics` };
}

function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() =>
        address && typeof address === 'object' ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}
