import { randomBytes } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { payloadKeys } from '../../src/adapters/secrets/payload-keys';
import { createDataConverter } from '../../src/temporal/data-converter';
import { workflowBundleOptions } from '../../src/workflow-bundle';
import { createDevServerEnv } from '../support/temporal';
import { tracingSinks } from '../../src/temporal/tracing';

// Failures in Temporal's history are encrypted like payloads (src/temporal/failure-converter.ts):
// an activity's and a workflow's failure messages and stack traces, on a real dev server, read back
// raw from the history; the service's own data converter decodes them again, and finds the URL an
// error named cut to its host.

const RPC_KEY = randomBytes(12).toString('hex');
const SECRET = `9${randomBytes(5).readUIntBE(0, 5).toString().padStart(10, '0')}`.slice(0, 11);

describe('failure messages and stack traces in the history', () => {
  let env: TestWorkflowEnvironment;
  const dataConverter = createDataConverter(payloadKeys(randomBytes(32).toString('base64')));

  beforeAll(async () => {
    env = await createDevServerEnv({ client: { dataConverter } });
  }, 120_000);
  afterAll(() => env?.teardown());

  it('hold no plain text: the activity failure and the workflow failure are ciphertext, and decode back', async () => {
    const taskQueue = `failures-${randomBytes(4).toString('hex')}`;
    const worker = await Worker.create({
      // The bundle's tracing interceptors export through this sink (off here: it drops them).
      sinks: tracingSinks(),
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue,
      dataConverter,
      workflowBundle: await bundleWorkflowCode({
        ...workflowBundleOptions(),
        workflowsPath: require.resolve('./fixtures/failing.workflow'),
        logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} },
      }),
      activities: {
        async leak(secret: string) {
          // What viem says when a node does not answer: the URL it called, key included.
          throw new Error(
            `charge for ${secret}: HTTP request failed. URL: https://rpc.example/v2/${RPC_KEY}`,
          );
        },
      },
    });
    const workflowId = `${taskQueue}-workflow`;
    const failure = await worker.runUntil(
      env.client.workflow.execute('failingWorkflow', { taskQueue, workflowId, args: [SECRET] }).then(
        () => undefined,
        (err: unknown) => err,
      ),
    );

    // The service's clients read the real messages.
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    const cause = (failure as WorkflowFailedError).cause as ApplicationFailure;
    // The URL's key never reached the history, even encrypted: only its host did.
    expect(cause.message).toBe(
      `payout for PIX key ${SECRET} failed: charge for ${SECRET}: HTTP request failed. URL: https://rpc.example/[redacted]`,
    );
    expect(cause.details).toEqual([{ pixKey: SECRET }]);

    const { history } = await env.client.workflowService.getWorkflowExecutionHistory({
      namespace: env.namespace ?? 'default',
      execution: { workflowId },
    });
    const raw = Buffer.from(temporal.api.history.v1.History.encode(history!).finish());
    expect(raw.includes(Buffer.from(SECRET))).toBe(false);
    expect(raw.includes(Buffer.from('rpc.example'))).toBe(false);
    expect(raw.includes(Buffer.from(Buffer.from(SECRET).toString('base64')))).toBe(false);
    // No stack frame either: neither a file of the service nor a frame's "at ".
    expect(raw.includes(Buffer.from('failing.workflow'))).toBe(false);
    expect(raw.includes(Buffer.from('failure-encoding.test'))).toBe(false);

    const events = history!.events!;
    const activityFailure = events.find((e) => e.activityTaskFailedEventAttributes)!
      .activityTaskFailedEventAttributes!.failure!;
    const workflowFailure = events.find((e) => e.workflowExecutionFailedEventAttributes)!
      .workflowExecutionFailedEventAttributes!.failure!;
    for (const f of [activityFailure, workflowFailure]) {
      expect(f.message).toBe('Encoded failure');
      expect(f.stackTrace ?? '').toBe('');
      expect(Buffer.from(f.encodedAttributes!.metadata!.encoding!).toString()).toBe('binary/encrypted');
    }
  });
});
