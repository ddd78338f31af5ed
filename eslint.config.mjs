import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', '.data/', '.tools/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  { files: ['**/*.js', '**/*.cjs'], languageOptions: { sourceType: 'commonjs', globals: globals.node } },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
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
    files: ['src/sandbox/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/api/**', '**/workflows/**', '**/activities/**', '**/adapters/**'],
              message: 'the sandbox plays an outside party',
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
              group: ['**/activities/**', '**/workflows/*.workflow', '**/workflows/index'],
              message: 'api talks to Temporal through the client',
            },
          ],
        },
      ],
    },
  },
);
