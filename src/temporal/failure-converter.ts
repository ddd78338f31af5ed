import { DefaultFailureConverter, type ProtoFailure } from '@temporalio/common';
import { redactUrls } from '../domain/url-redaction';

/**
 * Failures as Temporal's history keeps them:
 * - message and stack trace moved into an encoded attributes payload, which the payload codec then
 *   encrypts like every other payload. A failure's message can name a PIX key, a wallet or a
 *   provider's answer, and its stack the service's code: in plain text they would sit in the
 *   server's database and backups. The history's failure message reads "Encoded failure"; the Web
 *   UI and the CLI show the real one through the codec endpoint.
 * - every URL in them cut to its scheme and host (url-redaction.ts), at every level of causes: an
 *   RPC client's error names the URL it called, key included, and encryption only hides it from
 *   whoever lacks the payload key (operators reading the UI have it).
 *
 * Loaded by path (the `failureConverter` export) both by the worker and inside the workflow
 * sandbox, where failures of workflow code are converted: see data-converter.ts and
 * src/workflow-bundle.ts.
 */
class RedactingFailureConverter extends DefaultFailureConverter {
  override errorToFailureInner(
    ...args: Parameters<DefaultFailureConverter['errorToFailureInner']>
  ): ProtoFailure {
    const failure = super.errorToFailureInner(...args);
    return {
      ...failure,
      ...(failure.message ? { message: redactUrls(failure.message) } : {}),
      ...(failure.stackTrace ? { stackTrace: redactUrls(failure.stackTrace) } : {}),
    };
  }
}

export const failureConverter = new RedactingFailureConverter({ encodeCommonAttributes: true });
