import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export type ImageNode =
  { available: true; version: string; binDir: string; node: string } | { available: false; reason: string };

/**
 * The Node.js of a `node:<major>-…` base image, to run the image's steps with on this machine: the
 * official build of that major, from the npm registry's per-platform package (node-<os>-<arch>,
 * the one npm's own `node` package installs), kept in the system temp dir between runs. This
 * machine's Node when it is of that major. Synchronous, so that a test file can decide at
 * collection whether it can run at all; never throws: `reason` says what is missing.
 */
export function imageNode(baseImage: string): ImageNode {
  const major = /^node:(\d+)(?:[.-]|$)/.exec(baseImage)?.[1];
  if (!major) return { available: false, reason: `the base image ${baseImage} is not node:<major>` };
  if (process.versions.node.split('.')[0] === major) {
    return {
      available: true,
      version: process.version,
      binDir: path.dirname(process.execPath),
      node: process.execPath,
    };
  }
  const pkg = `node-${process.platform}-${process.arch}`;
  const prefix = path.join(os.tmpdir(), `payouts-image-node-${major}`);
  const binDir = path.join(prefix, 'node_modules', pkg, 'bin');
  const node = path.join(binDir, 'node');
  try {
    if (!existsSync(node)) {
      execFileSync(
        'npm',
        [
          'install',
          '--prefix',
          prefix,
          '--no-save',
          '--no-package-lock',
          '--no-audit',
          '--no-fund',
          `${pkg}@${major}`,
        ],
        { stdio: 'pipe' },
      );
    }
    const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
    if (!version.startsWith(`v${major}.`))
      return { available: false, reason: `${node} is ${version}, not ${major}` };
    return { available: true, version, binDir, node };
  } catch (err) {
    const detail = (err as { stderr?: Buffer }).stderr?.toString().trim() || String(err);
    return {
      available: false,
      reason: `Node ${major} (npm package ${pkg}@${major}) could not be installed: ${detail}`,
    };
  }
}
