import { BUILD_ID_PATTERN, describeDeployment, setCurrentVersion } from '../temporal/worker-versioning';
import { requireOption, str, UsageError, type Commands, type TemporalTarget } from './command';

/** `deploy …`: the worker deployment's builds on Temporal, and which one new payouts start on. */

export const DEPLOY_COMMANDS: Commands = {
  'deploy status': {
    uses: 'temporal',
    args: '',
    summary: "the worker deployment's builds and the open workflows pinned to each",
    details:
      'Prints {"deployment", "current_build_id", "versions": [{"build_id", "status", "pinned_open_workflows"}]}.\n' +
      'New payouts start on current_build_id; every other build keeps the workflows it started until they\n' +
      'end. Stop the workers of a build only once its pinned_open_workflows is 0 (status DRAINED says the\n' +
      'same, minutes later). Deployment: TEMPORAL_WORKER_DEPLOYMENT_NAME; namespace: TEMPORAL_NAMESPACE.',
    options: {},
    plan: () => async (t) => {
      const status = await describeDeployment(t.service, t.namespace, t.deploymentName);
      if (!status) throw noDeployment(t);
      return {
        deployment: status.deploymentName,
        current_build_id: status.currentBuildId ?? null,
        versions: status.versions.map((v) => ({
          build_id: v.buildId,
          status: v.status,
          pinned_open_workflows: v.pinnedOpenWorkflows,
        })),
      };
    },
  },
  'deploy promote': {
    uses: 'temporal',
    args: '--build-id <build_id>',
    summary: 'start new payouts on this build (deploy, or roll back to an older build)',
    details:
      'Prints {"deployment", "current_build_id", "previous_build_id"}. The build\'s workers must be polling\n' +
      'already. Workflows already running stay on the build that started them, so the previous build keeps\n' +
      'running until `deploy status` shows it holds none. A rollback is a promote of the older build.',
    options: { 'build-id': str },
    plan(values) {
      const buildId = requireOption(values, 'build-id');
      if (!BUILD_ID_PATTERN.test(buildId))
        throw new UsageError('--build-id must be a build id (letters, digits, ., _, + or -)');
      return async (t) => {
        const status = await describeDeployment(t.service, t.namespace, t.deploymentName);
        if (!status) throw noDeployment(t);
        // The server would take a version it has never seen and route new payouts to no one.
        if (!status.versions.some((v) => v.buildId === buildId)) {
          throw new Error(
            `build ${buildId} has never polled deployment ${t.deploymentName}; known: ` +
              (status.versions.map((v) => v.buildId).join(', ') || 'none'),
          );
        }
        const { previousBuildId } = await setCurrentVersion(
          t.service,
          t.namespace,
          { deploymentName: t.deploymentName, buildId },
          { identity: 'admin deploy promote' },
        );
        return {
          deployment: t.deploymentName,
          current_build_id: buildId,
          previous_build_id: previousBuildId ?? null,
        };
      };
    },
  },
};

function noDeployment(t: TemporalTarget): Error {
  return new Error(
    `no worker of deployment ${t.deploymentName} has polled namespace ${t.namespace} yet ` +
      '(is TEMPORAL_WORKER_BUILD_ID set on the workers?)',
  );
}
