import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

// Import rules of the product's layers (docs/architecture.md, "Dependency rules"). A file takes the
// rules of the last block that matches it, so each block lists all of its own.

// The product (src/) ships without the development environment (dev/).
const noDev = { group: ['**/dev/**'], message: 'src/ never imports the development environment (dev/)' };
// Composition roots wire the layers; nothing imports them.
const noRoots = {
  group: ['**/main/*', './worker', '../worker'],
  message: 'nothing imports a composition root (src/main/, src/worker.ts)',
};
const CONFIG_MESSAGE = 'settings are read in src/main/ and handed down as narrow options';
const noConfig = { group: ['**/config'], message: CONFIG_MESSAGE };
// Only a composition root creates adapters, metrics and Temporal connections from settings.
const WIRING_MESSAGE = 'only src/main/ wires adapters, metrics and Temporal: take the object as a parameter';
const noWiring = [
  ['**/adapters/db/pool', ['createPool']],
  ['**/adapters/provider/http-provider', ['createHttpProvider']],
  ['**/adapters/chain/usdt-ledger', ['createUsdtLedger']],
  ['**/adapters/secrets/*', ['createSecretBox', 'payloadKeys']],
  ['**/temporal/connection', ['connectClient', 'connectWorker']],
  ['**/temporal/data-converter', ['createDataConverter', 'createPayloadCodec']],
  ['**/observability/metrics', ['createMetrics']],
  ['**/observability/logger', ['createLogger']],
].map(([module, importNames]) => ({ group: [module], importNames, message: WIRING_MESSAGE }));
const layer = (forbidden, message) => ({ group: forbidden.map((dir) => `**/${dir}/**`), message });

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', '.data/', '.tools/', 'coverage/', 'clients/typescript/dist/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // CommonJS config files (jest) load each other with require().
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: globals.node },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/**/*.ts'],
    // Their own blocks below.
    ignores: [
      'src/main/**',
      'src/worker.ts',
      'src/workflows/**',
      'src/domain/**',
      'src/api/**',
      'src/adapters/**',
      'src/observability/**',
    ],
    rules: {
      'no-restricted-imports': ['error', { patterns: [noDev, noRoots, noConfig, ...noWiring] }],
    },
  },
  {
    // The composition roots and the worker's entry.
    files: ['src/main/**/*.ts', 'src/worker.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [noDev] }] },
  },
  {
    // Adapters stand on the domain alone: no metrics registry, no payload codec, no settings.
    files: ['src/adapters/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            noDev,
            noRoots,
            noConfig,
            ...noWiring,
            layer(
              ['temporal', 'observability', 'activities', 'workflows', 'api', 'cli'],
              'adapters take narrow collaborators as parameters: they import only other adapters and the domain',
            ),
          ],
        },
      ],
    },
  },
  {
    // Logs, metrics and gauges: below Temporal, the api and the workflows.
    files: ['src/observability/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            noDev,
            noRoots,
            noConfig,
            ...noWiring,
            layer(['temporal', 'activities', 'workflows', 'api', 'cli'], 'observability is a lower layer'),
          ],
        },
      ],
    },
  },
  {
    // Workflow code runs in Temporal's deterministic sandbox: no I/O, no adapters, no Node built-ins.
    files: ['src/workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['node:*', 'fs', 'http', 'https', 'crypto', 'net'],
              message: 'workflows must stay deterministic',
            },
            {
              group: ['**/adapters/**', 'pg', 'viem', 'viem/*', 'fastify', 'pino'],
              message: 'workflows do no I/O',
            },
            {
              group: ['**/activities/*', '!**/activities/failure-types'],
              message: 'import activity types only (and the failure types they throw)',
              allowTypeImports: true,
            },
            noDev,
            noRoots,
            noConfig,
          ],
        },
      ],
    },
  },
  {
    files: ['src/domain/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['node:*', '../*', 'pg', 'fastify', 'pino', '@temporalio/*'],
              message: 'domain is pure: no I/O, nothing of the project',
            },
          ],
        },
      ],
    },
  },
  {
    // Every error answer is worded in the one table of src/api/errors.ts (API_ERRORS).
    files: ['src/**/*.ts'],
    ignores: ['src/api/errors.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "NewExpression[callee.name='HttpError']",
          message: 'answer with an entry of API_ERRORS (src/api/errors.ts), the one table of error messages',
        },
      ],
    },
  },
  {
    files: ['dev/sandbox/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/src/api/**', '**/src/workflows/**', '**/src/activities/**', '**/src/adapters/**'],
              message: 'the sandbox plays an outside party: it shares only the pure domain helpers',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/api/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              // Workflow functions are imported to start them by their function (typed arguments and
              // result), as Temporal's samples do; activities and the bundle entry never.
              group: ['**/activities/**', '**/workflows/index'],
              message: 'api talks to Temporal through the client: workflow functions and contracts only',
              allowTypeImports: true,
            },
            noDev,
            noRoots,
            // The app is built from the api's own settings (ApiConfig); src/main/api.ts loads them.
            { group: ['**/config'], message: CONFIG_MESSAGE, allowTypeImports: true },
            ...noWiring,
          ],
        },
      ],
    },
  },
);
