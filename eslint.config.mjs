import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', '.data/', '.tools/', 'coverage/'] },
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
    // The product (src/) ships without the development environment (dev/): never import it.
    files: ['src/**/*.ts'],
    ignores: ['src/workflows/**', 'src/domain/**', 'src/api/**'], // their own blocks below repeat the rule
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['**/dev/**'], message: 'src/ never imports the development environment (dev/)' },
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
              group: ['**/activities/*', '!**/activities/types'],
              message: 'import activity types only',
              allowTypeImports: true,
            },
            { group: ['**/dev/**'], message: 'src/ never imports the development environment (dev/)' },
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
            { group: ['**/dev/**'], message: 'src/ never imports the development environment (dev/)' },
          ],
        },
      ],
    },
  },
);
