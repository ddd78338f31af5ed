import { parseArgs } from 'node:util';
import { UsageError, type AdminResources, type Commands } from './command';
import { DEPLOY_COMMANDS } from './deploy-commands';
import { PARTNER_COMMANDS } from './partner-commands';
import { PAYOUT_COMMANDS } from './payout-commands';
import { PIX_COMMANDS } from './pix-commands';
import { REFUND_COMMANDS } from './refund-commands';
import { SCREENING_COMMANDS } from './screening-commands';

/**
 * Admin CLI for the operator's account managers and deployers. Prints one JSON object on stdout per
 * command; errors go to stderr with exit code 1 (usage errors: 2). Talks to DATABASE_URL (default: the
 * local stack of `npm start`); the `deploy` commands talk to Temporal only (TEMPORAL_* variables).
 * The process (src/main/admin.ts) hands it the database, Temporal and the callback rules, each
 * configured only when a command asks for it.
 *
 * A command is one entry of COMMANDS (command.ts says what one is), each group in a module of its
 * own; this module parses the command line and runs the one it names. The overview help is built
 * from the table, in its order.
 */

const INVOCATION = 'npm run --silent admin --';

const COMMANDS: Commands = {
  ...PARTNER_COMMANDS,
  ...PAYOUT_COMMANDS,
  ...SCREENING_COMMANDS,
  ...REFUND_COMMANDS,
  ...PIX_COMMANDS,
  ...DEPLOY_COMMANDS,
};

function synopsis(name: string): string {
  return `${name} ${COMMANDS[name]!.args}`.trim();
}

const SUMMARY_COLUMN = 52;

function overview(): string {
  const lines = Object.keys(COMMANDS).map((name) => {
    const left = `  ${synopsis(name)}`;
    // A synopsis too long for the column gets its summary on the next line.
    const pad =
      left.length < SUMMARY_COLUMN ? left.padEnd(SUMMARY_COLUMN) : `${left}\n${' '.repeat(SUMMARY_COLUMN)}`;
    return pad + COMMANDS[name]!.summary;
  });
  return [
    `usage: ${INVOCATION} <command> [options]`,
    '',
    'commands:',
    ...lines,
    '',
    'Every command takes --help. Environment: DATABASE_URL (default: the stack of `npm start`);',
    'deploy commands: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_WORKER_DEPLOYMENT_NAME.',
  ].join('\n');
}

function commandHelp(name: string): string {
  const command = COMMANDS[name]!;
  return [`usage: ${INVOCATION} ${synopsis(name)}`, '', command.summary, command.details]
    .filter((l) => l !== undefined)
    .join('\n');
}

/** Leading words up to the first option name the command: "partner create --name x". */
function splitCommand(argv: string[]): { name: string; rest: string[] } {
  const firstOption = argv.findIndex((a) => a.startsWith('-'));
  const words = firstOption === -1 ? argv : argv.slice(0, firstOption);
  return { name: words.join(' '), rest: argv.slice(words.length) };
}

/** Runs one command line; the exit code, or a thrown error (a UsageError: exit code 2). */
export async function runAdmin(argv: string[], resources: AdminResources): Promise<number> {
  const { name, rest } = splitCommand(argv);
  const wantsHelp = rest.includes('--help') || rest.includes('-h');
  const command = COMMANDS[name];
  if (!command) {
    // `--help` alone or after a command group ("partner --help") shows the overview.
    const isGroup = name === '' || Object.keys(COMMANDS).some((n) => n.startsWith(`${name} `));
    if (isGroup && wantsHelp) {
      process.stdout.write(`${overview()}\n`);
      return 0;
    }
    if (name === '') {
      process.stderr.write(`${overview()}\n`);
      return 2;
    }
    throw new UsageError(`unknown command "${name}"\n\n${overview()}`);
  }

  let execute: () => Promise<unknown>;
  try {
    const { values } = parseArgs({
      args: rest,
      strict: true,
      allowPositionals: false,
      options: { ...command.options, help: { type: 'boolean', short: 'h' } },
    });
    if (values.help) {
      process.stdout.write(`${commandHelp(name)}\n`);
      return 0;
    }
    const { withDatabase, withTemporal, withClient, withApiPix, callbacks, network } = resources;
    if (command.uses === 'api-pix') {
      const work = command.plan(values);
      execute = () => withApiPix(work);
    } else if (command.uses === 'temporal') {
      const work = command.plan(values);
      execute = () => withTemporal(work);
    } else if (command.uses === 'database+temporal') {
      const work = command.plan(values);
      execute = () => withDatabase((db) => withClient((client) => work(db, client, { callbacks, network })));
    } else {
      const work = command.plan(values);
      execute = () => withDatabase((db) => work(db, { callbacks, network }));
    }
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\n\n${commandHelp(name)}`);
  }
  process.stdout.write(`${JSON.stringify(await execute(), null, 2)}\n`);
  return 0;
}
