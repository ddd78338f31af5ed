import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readlinkSync, rmSync, symlinkSync, writeFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { resolveTemporalCliPath } from '../../dev/local/infra/temporal-binaries';

// `npm start` uses a `temporal` CLI the user already has on PATH (right version) before building one.
const ROOT = path.resolve(__dirname, '../..');
const run = promisify(execFile);

function provisionCli(tools: string, pathDirs: string[]) {
  return run(
    'bash',
    ['-c', `source "${ROOT}/dev/provision.sh"; TOOLS="${tools}"; provision_temporal_cli`],
    // No `go` on this PATH: a CLI that is not accepted could not be built, and the script says so.
    { env: { PATH: [...pathDirs, '/usr/bin', '/bin'].join(':'), HOME: tools } },
  );
}

describe('dev/provision.sh: Temporal CLI from PATH', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'provision-cli-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('links a v1.x CLI at least as new as the pinned one instead of building', async () => {
    const real = resolveTemporalCliPath();
    if (!real) throw new Error('no provisioned Temporal CLI to put on PATH (run npm run provision)');
    const bin = path.join(dir, 'path-ok');
    mkdirSync(bin);
    symlinkSync(real, path.join(bin, 'temporal'));
    const tools = path.join(dir, 'tools-ok');
    const { stdout } = await provisionCli(tools, [bin]);
    expect(stdout).toContain('found on PATH');
    expect(readlinkSync(path.join(tools, 'bin', 'temporal'))).toBe(real);
    // A second run keeps it.
    expect((await provisionCli(tools, [bin])).stdout).toContain('from PATH');
  });

  it('ignores a CLI of another version and falls back to building one', async () => {
    const bin = path.join(dir, 'path-old');
    mkdirSync(bin);
    writeFileSync(
      path.join(bin, 'temporal'),
      '#!/bin/sh\necho "temporal version 0.13.2 (Server 1.20.0, UI 2.10.0)"\n',
    );
    chmodSync(path.join(bin, 'temporal'), 0o755);
    const tools = path.join(dir, 'tools-old');
    const { stdout, stderr } = await provisionCli(tools, [bin]);
    expect(stdout).toContain('is not v1.x >=');
    expect(stderr).toContain("'go' not found");
  });
});
