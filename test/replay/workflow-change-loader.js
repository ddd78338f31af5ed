// A webpack loader for test/replay/patched-change.replay.test.ts: applies an example code change to
// the payout workflow while it is bundled, either guarded by `patched()` (the safe procedure of
// docs/workflow-changes.md) or unguarded (what that procedure forbids). The example change is an
// extra activity call after the payout is opened and before its charge is created, the kind of
// change that breaks the replay of every payout already in flight.
// Inserted right after this line of payoutWorkflow.
const ANCHOR = '  await payout.open();\n';
const CHANGE =
  'await bookkeeping.recordPayout(payout.record, workflowInfo().workflowId, workflowInfo().runId);';

module.exports = function workflowChangeLoader(source) {
  const { guarded } = this.getOptions();
  if (!source.includes(ANCHOR)) {
    throw new Error(
      `workflow-change-loader: anchor ${JSON.stringify(ANCHOR)} not found; update the example change`,
    );
  }
  const change = guarded ? `  if (__patched('example-extra-bookkeeping')) ${CHANGE}\n` : `  ${CHANGE}\n`;
  return (
    "import { patched as __patched } from '@temporalio/workflow';\n" + source.replace(ANCHOR, ANCHOR + change)
  );
};
