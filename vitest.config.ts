import { defineConfig } from 'vitest/config'

// Storage and HTTP suites run once per dialect: SQLite always, PostgreSQL when
// TEST_DATABASE_URL is set (.ci/run sets it and requires the server).
const postgres = process.env.TEST_DATABASE_URL
const perDialect = [
  'test/http/**/*.test.ts',
  'test/e2e/sdk.test.ts',
  'test/e2e/crash.test.ts',
  'test/e2e/shutdown.test.ts',
  'test/e2e/slow-clients.test.ts',
  'test/mail/mail.test.ts',
]
// Files that measure time (a revocation reaching every worker within 10 ms): a group of their
// own (sequence.groupOrder), run one at a time once the parallel files are done and before the
// browser files, so that no server or browser of another file takes their cores.
const timed = [
  'test/e2e/workers.test.ts',
  'test/e2e/workers-watchdog.test.ts',
  'test/e2e/workers-children.test.ts',
]

export default defineConfig({
  test: {
    // Generous: a browser test that drives a server, a provider and the CLI took 15 s alone and
    // ran past 30 s while other files loaded both cores (a CI rehearsal).
    testTimeout: 90_000,
    hookTimeout: 60_000,
    // Two files at a time, whatever the machine: most files wait on servers, browsers and
    // child processes, and one worker (Vitest's default on two cores) left a core idle; a run
    // took 1,574 s with one and 1,123 s with two on the CI machine.
    maxWorkers: 2,
    projects: [
      {
        extends: true as const,
        test: {
          name: 'sqlite',
          include: ['test/**/*.test.ts', 'packages/*/test/**/*.test.ts'],
          // test/container: the image and the compose fleet, `npm run test:container` (podman).
          exclude: ['test/scale/**', 'test/container/**', 'test/browser/**', ...timed],
          env: { TEST_DIALECT: 'sqlite' },
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true as const,
        test: {
          name: 'timed',
          include: timed,
          env: { TEST_DIALECT: 'sqlite' },
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true as const,
        test: {
          // A Chromium and a server each: two such files at once took twice as long each and ran
          // past their timeouts on two cores, so one at a time (Vitest runs such files last, in
          // a group of their own).
          name: 'browser',
          include: ['test/browser/**/*.test.ts'],
          env: { TEST_DIALECT: 'sqlite' },
          fileParallelism: false,
          sequence: { groupOrder: 0 },
        },
      },
      ...(postgres
        ? [
            {
              extends: true as const,
              test: {
                name: 'postgres',
                include: [...perDialect, 'test/scale/**/*.test.ts'],
                env: { TEST_DIALECT: 'postgres' },
                sequence: { groupOrder: 0 },
              },
            },
          ]
        : []),
    ],
  },
})
