import { spawn } from 'node:child_process';
import { chown, cp, mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Replays a Dockerfile without a Docker engine: each stage becomes a directory standing for its
 * filesystem, COPY copies (from the build context, honouring .dockerignore, or from an earlier
 * stage), RUN runs the command in the stage's WORKDIR as an unprivileged user, and independent
 * stages run at once (as BuildKit does). Only the instructions the project's Dockerfile uses are
 * understood; anything else fails loudly rather than being skipped.
 */

export type Instruction =
  | { op: 'WORKDIR'; dir: string }
  | { op: 'ENV'; vars: Record<string, string> }
  | { op: 'COPY'; from?: string; sources: string[]; dest: string }
  | { op: 'RUN'; command: string }
  | { op: 'USER'; user: string }
  | { op: 'EXPOSE'; ports: string[] }
  | { op: 'CMD'; argv: string[] };

export interface Stage {
  name: string;
  base: string;
  instructions: Instruction[];
}

export function parseDockerfile(text: string): Stage[] {
  const lines = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const stages: Stage[] = [];
  for (const line of lines) {
    const [, op, rest = ''] = /^(\w+)\s+(.*)$/.exec(line) ?? [];
    if (!op) throw new Error(`unparsable Dockerfile line: ${line}`);
    if (op === 'FROM') {
      const [, base, name] = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(rest) ?? [];
      stages.push({ name: name ?? String(stages.length), base: base!, instructions: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) throw new Error(`${op} before FROM`);
    stage.instructions.push(parseInstruction(op, rest));
  }
  return stages;
}

function parseInstruction(op: string, rest: string): Instruction {
  switch (op) {
    case 'WORKDIR':
      return { op, dir: rest };
    case 'ENV': {
      const vars: Record<string, string> = {};
      for (const m of rest.matchAll(/(\w+)=("[^"]*"|\S+)/g)) vars[m[1]!] = m[2]!.replace(/^"|"$/g, '');
      return { op, vars };
    }
    case 'COPY': {
      const words = rest.split(/\s+/);
      const from = words[0]?.startsWith('--from=') ? words.shift()!.slice('--from='.length) : undefined;
      if (words.some((w) => w.startsWith('--'))) throw new Error(`COPY flag not supported: ${rest}`);
      return { op, from, sources: words.slice(0, -1), dest: words.at(-1)! };
    }
    case 'RUN':
      return { op, command: rest };
    case 'USER':
      return { op, user: rest };
    case 'EXPOSE':
      return { op, ports: rest.split(/\s+/) };
    case 'CMD':
      return { op, argv: JSON.parse(rest) as string[] };
    default:
      throw new Error(`Dockerfile instruction ${op} is not replayed by test/support/dockerfile.ts`);
  }
}

export interface UnixUser {
  uid: number;
  gid: number;
  home: string;
}

/** `nobody`: the unprivileged user the replay builds as (when we are root). */
export const NOBODY: UnixUser = { uid: 65534, gid: 65534, home: '/nonexistent' };
/** Users the base images define, by name: the official node images add `node` as 1000:1000. */
const IMAGE_USERS: Record<string, UnixUser> = {
  node: { uid: 1000, gid: 1000, home: '/home/node' },
  root: { uid: 0, gid: 0, home: '/root' },
};
export const asRoot = process.getuid?.() === 0;

/** The user a USER instruction names (a name the base image defines, or uid[:gid]). */
export function imageUser(user: string | undefined): UnixUser {
  if (user === undefined) return IMAGE_USERS.root!;
  const numeric = /^(\d+)(?::(\d+))?$/.exec(user);
  if (numeric) return { uid: Number(numeric[1]), gid: Number(numeric[2] ?? numeric[1]), home: '/' };
  const known = IMAGE_USERS[user];
  if (!known) throw new Error(`USER ${user}: not a user the test knows the base image to define`);
  return known;
}

/** argv that runs `argv` as `user` (with no supplementary groups) when we are root, else as we are. */
export function asUser(user: UnixUser, argv: string[]): string[] {
  return asRoot
    ? ['setpriv', `--reuid=${user.uid}`, `--regid=${user.gid}`, '--clear-groups', '--', ...argv]
    : argv;
}

/** argv that runs `argv` as nobody when we are root, else as we are. */
export function asUnprivileged(argv: string[]): string[] {
  return asUser(NOBODY, argv);
}

export interface ReplayOptions {
  context: string;
  scratch: string;
  /** Environment for RUN steps besides the stage's ENV (HOME, npm cache, ...). */
  env: NodeJS.ProcessEnv;
  log?: (line: string) => void;
}

export interface BuiltStage {
  stage: Stage;
  /** The directory standing for the stage's filesystem root. */
  root: string;
  /** The stage's WORKDIR on this machine. */
  workdir: string;
  /** The stage's WORKDIR inside the image. */
  containerWorkdir: string;
  env: Record<string, string>;
  user?: string;
  cmd?: string[];
}

/** Replays every stage; resolves with each stage's result by name. */
export async function replayDockerfile(
  stages: Stage[],
  opts: ReplayOptions,
): Promise<Map<string, BuiltStage>> {
  const ignored = await dockerignore(opts.context);
  const started = new Map<string, Promise<BuiltStage>>();
  const build = (stage: Stage): Promise<BuiltStage> => {
    let p = started.get(stage.name);
    if (!p) {
      p = replayStage(stage, opts, ignored, (name) => {
        const dep = stages.find((s) => s.name === name);
        if (!dep) throw new Error(`COPY --from=${name}: no such stage`);
        return build(dep);
      });
      started.set(stage.name, p);
    }
    return p;
  };
  const results = await Promise.all(stages.map(build));
  return new Map(results.map((r) => [r.stage.name, r]));
}

async function replayStage(
  stage: Stage,
  opts: ReplayOptions,
  ignored: (rel: string) => boolean,
  dependency: (name: string) => Promise<BuiltStage>,
): Promise<BuiltStage> {
  const root = path.join(opts.scratch, stage.name);
  await mkdir(root, { recursive: true });
  const inStage = (dir: string, p: string) => path.join(root, path.posix.resolve(dir, p));
  let workdir = '/';
  const env: Record<string, string> = {};
  let user: string | undefined;
  let cmd: string[] | undefined;
  // RUN steps build as nobody (never root): what they write must be theirs.
  const builderOwnsStage = stage.instructions.some((i) => i.op === 'RUN');

  for (const step of stage.instructions) {
    switch (step.op) {
      case 'WORKDIR':
        workdir = path.posix.resolve(workdir, step.dir);
        await mkdir(inStage('/', workdir), { recursive: true });
        // The builder may write in its WORKDIR (node_modules, dist/), not in what COPY brought.
        if (builderOwnsStage && asRoot) {
          for (let dir = workdir; ; dir = path.posix.dirname(dir)) {
            await chown(inStage('/', dir), NOBODY.uid, NOBODY.gid);
            if (dir === '/') break;
          }
        }
        break;
      case 'ENV':
        Object.assign(env, step.vars);
        break;
      case 'USER':
        user = step.user;
        break;
      case 'EXPOSE':
        break;
      case 'CMD':
        cmd = step.argv;
        break;
      case 'COPY': {
        const from = step.from ? await dependency(step.from) : undefined;
        const destIsDir = step.dest.endsWith('/') || step.sources.length > 1;
        const dest = inStage(workdir, step.dest);
        for (const source of step.sources) {
          const srcPath = from
            ? path.join(from.root, path.posix.resolve(from.containerWorkdir, source))
            : path.join(opts.context, source);
          const target = destIsDir ? path.join(dest, path.basename(source)) : dest;
          await cp(srcPath, target, {
            recursive: true,
            verbatimSymlinks: true,
            filter: from ? undefined : (p) => !ignored(path.relative(opts.context, p)),
          });
        }
        break;
      }
      case 'RUN': {
        const cwd = inStage('/', workdir);
        opts.log?.(`[${stage.name}] RUN ${step.command}`);
        await run(asUnprivileged(['sh', '-c', step.command]), cwd, { ...opts.env, ...env }, opts.log);
        break;
      }
    }
  }
  return { stage, root, workdir: inStage('/', workdir), containerWorkdir: workdir, env, user, cmd };
}

/** .dockerignore's top-level names (the only form the project uses), as a predicate on context paths. */
async function dockerignore(context: string): Promise<(rel: string) => boolean> {
  const text = await readFile(path.join(context, '.dockerignore'), 'utf8').catch(() => '');
  const patterns = text
    .split('\n')
    .map((l) => l.trim().replace(/\/$/, ''))
    .filter((l) => l && !l.startsWith('#'));
  for (const p of patterns)
    // Plain paths only (a name, or a path from the context's root): wildcards and exceptions are not replayed.
    if (/[*?!]/.test(p) || p.startsWith('/'))
      throw new Error(`.dockerignore pattern ${p} is not replayed by the test`);
  return (rel) => patterns.some((p) => rel === p || rel.startsWith(`${p}/`));
}

export function run(
  argv: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  log?: (line: string) => void,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const collect = (chunk: Buffer) => {
      output += chunk.toString();
      for (const line of chunk.toString().split('\n')) if (line.trim()) log?.(line);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      code === 0
        ? resolve(output)
        : reject(new Error(`${argv.join(' ')} failed (${code ?? signal}):\n${output.slice(-4000)}`)),
    );
  });
}
