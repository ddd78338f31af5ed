import type { WorkflowService } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { WorkerOptions } from '@temporalio/worker';

/**
 * Worker Versioning (Temporal worker deployments): every worker build is a version
 * `<deployment name>:<build id>`, the server starts new workflows on the deployment's *current*
 * version, and a workflow stays on the version that started it (PINNED) until it ends. So a build
 * with different workflow code never replays another build's histories: old and new workers can
 * poll side by side during a deploy or after a rollback (docs/workflow-changes.md).
 */

/** A worker build id (TEMPORAL_WORKER_BUILD_ID, `admin deploy promote --build-id`): an image tag or git sha. */
export const BUILD_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$/;

/** A worker build: what the server routes pinned workflows to. */
export interface WorkerVersion {
  deploymentName: string;
  buildId: string;
}

/**
 * The worker options of a versioned build. Every workflow type of the service defaults to PINNED:
 * a payout waits hours for its payment and settlement and a partner callback is retried for a day,
 * so an auto-upgrading run would replay its history on newer code, which is exactly the
 * non-determinism this avoids. Without a version (tests on the time-skipping server, which has no
 * worker deployments; local runs without a build id) nothing is set and the worker is unversioned.
 */
export function workerDeploymentOptions(
  version: WorkerVersion | undefined,
): Pick<WorkerOptions, 'workerDeploymentOptions'> {
  if (!version) return {};
  return {
    workerDeploymentOptions: {
      useWorkerVersioning: true,
      version: { deploymentName: version.deploymentName, buildId: version.buildId },
      defaultVersioningBehavior: 'PINNED',
    },
  };
}

/** How the server and `temporal` CLI name a version in queries: `<deployment>:<build id>`. */
export function versionId(version: WorkerVersion): string {
  return `${version.deploymentName}:${version.buildId}`;
}

/**
 * The visibility query of the open workflows pinned to a version: what the server itself counts to
 * report a version DRAINED. Zero means the build's workers can be stopped.
 */
export function pinnedOpenWorkflowsQuery(version: WorkerVersion): string {
  return `BuildIds = "pinned:${versionId(version)}" AND ExecutionStatus = "Running"`;
}

// gRPC status code the server answers while the version has no pollers yet (the version and its
// deployment only exist once a worker of that build has polled).
const FAILED_PRECONDITION = 9;

/**
 * Makes `version` the deployment's current version: new workflows start on it; workflows pinned to
 * other versions stay where they are. With `waitForPollersMs`, a refusal because the version has
 * not polled yet is retried until then (a worker promoting itself right after it started polling).
 * Returns the version that was current before (undefined: none, i.e. unversioned workers).
 */
export async function setCurrentVersion(
  service: WorkflowService,
  namespace: string,
  version: WorkerVersion,
  { waitForPollersMs = 0, identity }: { waitForPollersMs?: number; identity?: string } = {},
): Promise<{ previousBuildId: string | undefined }> {
  const deadline = Date.now() + waitForPollersMs;
  for (;;) {
    try {
      const res = await service.setWorkerDeploymentCurrentVersion({
        namespace,
        deploymentName: version.deploymentName,
        buildId: version.buildId,
        ...(identity ? { identity } : {}),
      });
      return { previousBuildId: res.previousDeploymentVersion?.buildId || undefined };
    } catch (err) {
      const notPolledYet = (err as { code?: unknown }).code === FAILED_PRECONDITION;
      if (!notPolledYet || Date.now() >= deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

const VersionStatus = temporal.api.enums.v1.WorkerDeploymentVersionStatus;

export interface DeploymentStatus {
  deploymentName: string;
  /** Build id new workflows start on; undefined while unversioned workers are current. */
  currentBuildId: string | undefined;
  versions: {
    buildId: string;
    /** The server's view: CURRENT, RAMPING, DRAINING, DRAINED, INACTIVE. */
    status: string;
    /** Open workflows pinned to this build, counted now (the server's drainage status lags minutes). */
    pinnedOpenWorkflows: number;
  }[];
}

/** The deployment's versions and how many open workflows each still holds; undefined if none polled yet. */
export async function describeDeployment(
  service: WorkflowService,
  namespace: string,
  deploymentName: string,
): Promise<DeploymentStatus | undefined> {
  let info;
  try {
    info = (await service.describeWorkerDeployment({ namespace, deploymentName })).workerDeploymentInfo;
  } catch (err) {
    if ((err as { code?: unknown }).code === 5) return undefined; // NOT_FOUND: no worker of it ever polled
    throw err;
  }
  const versions = [];
  for (const summary of info?.versionSummaries ?? []) {
    const buildId = summary.deploymentVersion?.buildId ?? '';
    const { count } = await service.countWorkflowExecutions({
      namespace,
      query: pinnedOpenWorkflowsQuery({ deploymentName, buildId }),
    });
    versions.push({
      buildId,
      status: (VersionStatus[summary.status ?? 0] ?? 'UNSPECIFIED').replace(
        /^WORKER_DEPLOYMENT_VERSION_STATUS_/,
        '',
      ),
      pinnedOpenWorkflows: Number(count ?? 0),
    });
  }
  return {
    deploymentName,
    currentBuildId: info?.routingConfig?.currentDeploymentVersion?.buildId || undefined,
    versions,
  };
}
