import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

// The Dockerfile and every shell script through their own linters, hadolint and shellcheck, at
// their default rules (provisioned into .tools/bin from PyPI by dev/provision.sh). A finding is
// fixed, or disabled on its line with the reason beside it.

const ROOT = path.resolve(__dirname, '../..');
const tool = (name: string) => path.join(ROOT, '.tools/bin', name);
const run = promisify(execFile);

/** The shell scripts of the repository: *.sh files and the extension-less ones with a sh shebang. */
async function shellScripts(): Promise<string[]> {
  const { stdout } = await run('git', ['ls-files', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
  });
  return stdout
    .split('\n')
    .filter((file) => file && existsSync(path.join(ROOT, file)))
    .filter(
      (file) =>
        file.endsWith('.sh') ||
        (!path.basename(file).includes('.') &&
          /^#!.*\b(ba)?sh\b/.test(readFileSync(path.join(ROOT, file), 'utf8').split('\n')[0] ?? '')),
    );
}

async function findings(command: string, args: string[]): Promise<string> {
  try {
    await run(command, args, { cwd: ROOT });
    return '';
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: string; stderr?: string };
    return `${stdout ?? ''}${stderr ?? ''}`.trim() || String(err);
  }
}

describe('linters of the build and ops files', () => {
  beforeAll(() => {
    for (const name of ['hadolint', 'shellcheck'])
      if (!existsSync(tool(name))) throw new Error(`${tool(name)} is missing: run 'npm run provision'`);
  });

  it('hadolint finds nothing in the Dockerfile', async () => {
    expect(await findings(tool('hadolint'), ['Dockerfile'])).toBe('');
  });

  it('shellcheck finds nothing in the shell scripts', async () => {
    const scripts = await shellScripts();
    expect(scripts).toEqual(expect.arrayContaining(['.ci/run', 'dev/provision.sh', 'dev/node-line.sh']));
    expect(await findings(tool('shellcheck'), ['--external-sources', ...scripts])).toBe('');
  });

  it('both report what they are there to find', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'payouts-linters-'));
    try {
      await writeFile(path.join(dir, 'Dockerfile'), 'FROM node:latest\nRUN cd /app\n');
      await writeFile(path.join(dir, 'bad.sh'), '#!/bin/sh\nrm -rf $1/*\n');
      expect(await findings(tool('hadolint'), [path.join(dir, 'Dockerfile')])).toMatch(/DL3007/);
      expect(await findings(tool('shellcheck'), [path.join(dir, 'bad.sh')])).toMatch(/SC2086/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
