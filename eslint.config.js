import js from '@eslint/js';
import regexp from 'eslint-plugin-regexp';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', 'bench/results/**', 'dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.strict,
  // Every pattern may meet outside input (config, form fields, helper lines, headers, LDAP answers): none may
  // take more than linear time on it. The recommended set flags nested and adjacent overlapping quantifiers
  // (no-super-linear-backtracking); no-super-linear-move adds what a search restarted at every position costs.
  regexp.configs['flat/recommended'],
  {
    rules: {
      'regexp/no-super-linear-backtracking': ['error', { report: 'potential' }],
      'regexp/no-super-linear-move': [
        'error',
        { report: 'potential', ignoreSticky: false, ignorePartial: false },
      ],
      // Style, not safety: [A-Za-z0-9_-] names the base64url alphabet and [0-9A-Fa-f] hex digits as the RFCs
      // write them, where \w, \d or an `i` flag (which widens the whole pattern) would hide it.
      'regexp/prefer-d': 'off',
      'regexp/prefer-w': 'off',
      'regexp/use-ignore-case': 'off',
    },
  },
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly' } },
    rules: {
      'no-console': ['error', { allow: ['error', 'warn'] }],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    // Only the CLI and benchmarks own stdout; helpers must never print there (it belongs to Squid).
    files: ['cli/**', 'bench/**', 'test/**'],
    rules: { 'no-console': 'off' },
  },
);
